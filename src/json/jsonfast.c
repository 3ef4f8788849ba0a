/* jsonfast — see jsonfast.h. Recursive descent over a byte range; strings without escapes
 * go to jansson straight from the input (json_stringn_nocheck after our own UTF-8 check);
 * the encoder appends to one growing buffer. Must not keep state between calls. */
#include "jsonfast.h"
#include "json_escape.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (first byte >= 0x80), or 0. */
size_t jf_utf8_seq(const unsigned char *p, const unsigned char *e)
{
    return json_utf8_seq(p, e);
}

/* ---- decoding --------------------------------------------------------------------------- */

struct jp {
    const unsigned char *p, *e, *start;
    json_error_t *err;
    int depth;
    char *tmp; /* decoded string with escapes */
    size_t tmp_cap;
    int allow_nul; /* JF_ALLOW_NUL */
    int big_ints;  /* JF_BIG_INTEGERS */
};

static void fail(struct jp *s, const char *what)
{
    if (!s->err || s->err->text[0])
        return;
    size_t pos = (size_t)(s->p - s->start);
    snprintf(s->err->text, sizeof(s->err->text), "%s at byte %zu", what, pos);
    s->err->position = (int)pos;
    s->err->line = -1;
    s->err->column = -1;
}

static void skip_ws(struct jp *s)
{
    while (s->p < s->e && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

static int hex4(const unsigned char *p, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    *out = v;
    return 0;
}

static void tmp_put(struct jp *s, size_t *n, const void *src, size_t len)
{
    if (!len) /* s->tmp may still be NULL (found by tests/fuzz: UBSan, NULL + 0) */
        return;
    if (*n + len > s->tmp_cap) {
        size_t cap = s->tmp_cap ? s->tmp_cap : 64;
        while (cap < *n + len)
            cap *= 2;
        char *t = realloc(s->tmp, cap);
        if (!t)
            abort();
        s->tmp = t;
        s->tmp_cap = cap;
    }
    memcpy(s->tmp + *n, src, len);
    *n += len;
}

/* Scans the string whose opening quote is at s->p. On success out and len hold the decoded text
 * (pointing into the input when there was no escape, else into s->tmp) and s->p is past the
 * closing quote. */
static int scan_string(struct jp *s, const char **out, size_t *len)
{
    const unsigned char *p = ++s->p, *e = s->e, *run = p;
    size_t n = 0;
    int escaped = 0;
    for (;;) {
        while (p < e && *p >= 0x20 && *p != '"' && *p != '\\' && *p < 0x80)
            p++;
        if (p >= e) {
            s->p = p;
            fail(s, "unterminated string");
            return -1;
        }
        unsigned c = *p;
        if (c == '"')
            break;
        if (c >= 0x80) {
            size_t k = jf_utf8_seq(p, e);
            if (!k) {
                s->p = p;
                fail(s, "invalid UTF-8 in a string");
                return -1;
            }
            p += k;
            continue;
        }
        if (c < 0x20) {
            s->p = p;
            fail(s, "control character in a string");
            return -1;
        }
        /* a backslash */
        tmp_put(s, &n, run, (size_t)(p - run));
        escaped = 1;
        if (e - p < 2) {
            s->p = p;
            fail(s, "unterminated string");
            return -1;
        }
        char ch;
        switch (p[1]) {
        case '"':
            ch = '"';
            break;
        case '\\':
            ch = '\\';
            break;
        case '/':
            ch = '/';
            break;
        case 'b':
            ch = '\b';
            break;
        case 'f':
            ch = '\f';
            break;
        case 'n':
            ch = '\n';
            break;
        case 'r':
            ch = '\r';
            break;
        case 't':
            ch = '\t';
            break;
        case 'u': {
            uint32_t cp, lo;
            if (e - p < 6 || hex4(p + 2, &cp) < 0) {
                s->p = p;
                fail(s, "invalid \\u escape");
                return -1;
            }
            p += 6;
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                s->p = p;
                fail(s, "invalid Unicode escape (lone low surrogate)");
                return -1;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (e - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) < 0 ||
                    lo < 0xDC00 || lo > 0xDFFF) {
                    s->p = p;
                    fail(s, "invalid Unicode escape (high surrogate without a low one)");
                    return -1;
                }
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp == 0 && !s->allow_nul) {
                s->p = p;
                fail(s, "\\u0000 is not allowed");
                return -1;
            }
            unsigned char u[4];
            size_t k;
            if (cp < 0x80) {
                u[0] = (unsigned char)cp;
                k = 1;
            } else if (cp < 0x800) {
                u[0] = (unsigned char)(0xC0 | (cp >> 6));
                u[1] = (unsigned char)(0x80 | (cp & 0x3F));
                k = 2;
            } else if (cp < 0x10000) {
                u[0] = (unsigned char)(0xE0 | (cp >> 12));
                u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                u[2] = (unsigned char)(0x80 | (cp & 0x3F));
                k = 3;
            } else {
                u[0] = (unsigned char)(0xF0 | (cp >> 18));
                u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
                u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                u[3] = (unsigned char)(0x80 | (cp & 0x3F));
                k = 4;
            }
            tmp_put(s, &n, u, k);
            run = p;
            continue;
        }
        default:
            s->p = p;
            fail(s, "invalid escape in a string");
            return -1;
        }
        tmp_put(s, &n, &ch, 1);
        p += 2;
        run = p;
    }
    if (escaped) {
        tmp_put(s, &n, run, (size_t)(p - run));
        *out = s->tmp;
        *len = n;
    } else {
        *out = (const char *)run;
        *len = (size_t)(p - run);
    }
    s->p = p + 1;
    return 0;
}

/* An integer beyond json_int_t: with JF_BIG_INTEGERS, JF_BIG_TAG and its digits (see
 * jsonfast.h; jf_dumps writes the digits back), else refused as jansson does. */
static json_t *big_integer(struct jp *s, const unsigned char *b, size_t n)
{
    if (!s->big_ints) {
        fail(s, *b == '-' ? "too big negative integer" : "too big integer");
        return NULL;
    }
    size_t t = sizeof(JF_BIG_TAG) - 1;
    char *buf = malloc(t + n);
    if (!buf)
        abort();
    memcpy(buf, JF_BIG_TAG, t);
    memcpy(buf + t, b, n);
    json_t *v = json_stringn_nocheck(buf, t + n); /* not UTF-8 on purpose */
    free(buf);
    return v;
}

static json_t *parse_number(struct jp *s)
{
    const unsigned char *p = s->p, *e = s->e, *b = p;
    int real = 0;
    if (p < e && *p == '-')
        p++;
    if (p < e && *p == '0') {
        p++;
    } else if (p < e && *p >= '1' && *p <= '9') {
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    } else {
        fail(s, "invalid number");
        return NULL;
    }
    if (p < e && *p == '.') {
        real = 1;
        p++;
        if (p >= e || *p < '0' || *p > '9') {
            s->p = p;
            fail(s, "invalid number");
            return NULL;
        }
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        real = 1;
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            p++;
        if (p >= e || *p < '0' || *p > '9') {
            s->p = p;
            fail(s, "invalid number");
            return NULL;
        }
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    }
    s->p = p;
    size_t n = (size_t)(p - b);
    if (!real && n <= 18) { /* at most 18 digits (and a sign) always fit json_int_t */
        const unsigned char *q = b;
        int neg = *q == '-';
        q += neg;
        json_int_t v = 0;
        for (; q < p; q++)
            v = v * 10 + (*q - '0');
        return json_integer(neg ? -v : v);
    }
    if (!real && n >= 400)
        return big_integer(s, b, n);
    /* A real may have any number of digits ("0.1000…0001"): jansson reads them all. */
    char small[400], *num = n < sizeof(small) ? small : malloc(n + 1);
    if (!num)
        abort();
    memcpy(num, b, n);
    num[n] = '\0';
    errno = 0;
    json_t *v = NULL;
    if (!real) {
        long long i = strtoll(num, NULL, 10);
        v = errno == ERANGE ? big_integer(s, b, n) : json_integer((json_int_t)i);
    } else {
        double d = strtod(num, NULL);
        if (errno == ERANGE && (d > 1 || d < -1))
            fail(s, "real number overflow");
        else
            v = json_real(d);
    }
    if (num != small)
        free(num);
    return v;
}

static json_t *parse_value(struct jp *s);

/* After a member of an object or an array: 1 on ',' (another follows), 0 on `close`, -1
 * (with `what` as the error) on anything else. */
static int after_member(struct jp *s, char close, const char *what)
{
    skip_ws(s);
    if (s->p < s->e && (*s->p == ',' || *s->p == close))
        return *s->p++ == ',';
    fail(s, what);
    return -1;
}

/* Past the opening '{' or '[': 1 when `close` follows at once (an empty container). */
static int opens_empty(struct jp *s, char close)
{
    s->p++;
    skip_ws(s);
    if (s->p < s->e && *s->p == close) {
        s->p++;
        return 1;
    }
    return 0;
}

static json_t *parse_object(struct jp *s)
{
    json_t *obj = json_object();
    if (opens_empty(s, '}'))
        return obj;
    for (;;) {
        skip_ws(s);
        if (s->p >= s->e || *s->p != '"') {
            fail(s, "string or '}' expected");
            goto fail;
        }
        const char *key;
        size_t klen;
        if (scan_string(s, &key, &klen) < 0)
            goto fail;
        if (memchr(key, 0, klen)) { /* only with JF_ALLOW_NUL; jansson refuses it too */
            fail(s, "NUL byte in object key not supported");
            goto fail;
        }
        /* The key may sit in s->tmp, which the value's strings reuse: copy it then. */
        char small[128], *kcopy = NULL;
        if (key == s->tmp) {
            kcopy = klen < sizeof(small) ? small : malloc(klen);
            if (!kcopy)
                abort();
            memcpy(kcopy, key, klen);
            key = kcopy;
        }
        skip_ws(s);
        if (s->p >= s->e || *s->p != ':') {
            fail(s, "':' expected");
            if (kcopy && kcopy != small)
                free(kcopy);
            goto fail;
        }
        s->p++;
        json_t *v = parse_value(s);
        if (v)
            json_object_setn_new_nocheck(obj, key, klen, v);
        if (kcopy && kcopy != small)
            free(kcopy);
        if (!v)
            goto fail;
        int more = after_member(s, '}', "',' or '}' expected");
        if (more == 0)
            return obj;
        if (more < 0)
            goto fail;
    }
fail:
    json_decref(obj);
    return NULL;
}

static json_t *parse_array(struct jp *s)
{
    json_t *arr = json_array();
    if (opens_empty(s, ']'))
        return arr;
    for (;;) {
        json_t *v = parse_value(s);
        if (!v)
            goto fail;
        json_array_append_new(arr, v);
        int more = after_member(s, ']', "',' or ']' expected");
        if (more == 0)
            return arr;
        if (more < 0)
            goto fail;
    }
fail:
    json_decref(arr);
    return NULL;
}

static int literal(struct jp *s, const char *word, size_t n)
{
    if ((size_t)(s->e - s->p) < n || memcmp(s->p, word, n) != 0) {
        fail(s, "invalid token");
        return -1;
    }
    s->p += n;
    return 0;
}

static json_t *parse_value(struct jp *s)
{
    json_t *v = NULL;
    skip_ws(s);
    if (++s->depth > JSON_PARSER_MAX_DEPTH) {
        fail(s, "maximum parsing depth reached");
        return NULL;
    }
    if (s->p >= s->e) {
        fail(s, "unexpected end of input");
        s->depth--;
        return NULL;
    }
    switch (*s->p) {
    case '{':
        v = parse_object(s);
        break;
    case '[':
        v = parse_array(s);
        break;
    case '"': {
        const char *str;
        size_t len;
        if (scan_string(s, &str, &len) == 0)
            v = json_stringn_nocheck(str, len); /* checked UTF-8 */
        break;
    }
    case 't':
        v = literal(s, "true", 4) == 0 ? json_true() : NULL;
        break;
    case 'f':
        v = literal(s, "false", 5) == 0 ? json_false() : NULL;
        break;
    case 'n':
        v = literal(s, "null", 4) == 0 ? json_null() : NULL;
        break;
    default:
        if (*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))
            v = parse_number(s);
        else
            fail(s, "invalid token");
    }
    s->depth--;
    return v;
}

json_t *jf_loadb(const char *text, size_t len, int flags, json_error_t *err)
{
    struct jp s = {(const unsigned char *)text,
                   (const unsigned char *)text + len,
                   (const unsigned char *)text,
                   err,
                   0,
                   NULL,
                   0,
                   (flags & JF_ALLOW_NUL) != 0,
                   (flags & JF_BIG_INTEGERS) != 0};
    if (err)
        memset(err, 0, sizeof(*err));
    json_t *v = NULL;
    skip_ws(&s);
    if (!(flags & JF_DECODE_ANY) && (s.p >= s.e || (*s.p != '{' && *s.p != '['))) {
        fail(&s, "'[' or '{' expected");
        goto out;
    }
    v = parse_value(&s);
    if (!v)
        goto out;
    skip_ws(&s);
    if (s.p != s.e) {
        fail(&s, "end of file expected");
        json_decref(v);
        v = NULL;
    }
out:
    free(s.tmp);
    if (!v && err && !err->text[0])
        snprintf(err->text, sizeof(err->text), "invalid JSON");
    return v;
}

/* Past one value at p read as tokens only (strings, brackets, anything else up to a
 * delimiter), so a member the parser refused (a NUL in a key, a real out of range, too deep)
 * can be stepped over and the members after it still read. e when it does not end. */
static const unsigned char *lex_skip(const unsigned char *p, const unsigned char *e)
{
    size_t depth = 0;
    while (p < e) {
        unsigned c = *p;
        if (c == '"') {
            for (p++; p < e && *p != '"'; p++)
                if (*p == '\\' && ++p >= e)
                    return e;
            if (p >= e)
                return e;
            p++;
        } else if (c == '{' || c == '[') {
            depth++;
            p++;
            continue;
        } else if (c == '}' || c == ']') {
            if (!depth)
                return p;
            p++;
            depth--;
        } else if (!depth && (c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
            return p;
        } else {
            p++;
            continue;
        }
        if (!depth)
            return p;
    }
    return e;
}

json_t *jf_frame_id(const char *text, size_t len, int *is_request)
{
    struct jp s = {(const unsigned char *)text,
                   (const unsigned char *)text + len,
                   (const unsigned char *)text,
                   NULL,
                   0,
                   NULL,
                   0,
                   1,
                   1};
    json_t *id = NULL;
    int method = 0, complete = 0;
    skip_ws(&s);
    if (s.p >= s.e || *s.p != '{')
        goto out;
    s.p++;
    skip_ws(&s);
    if (s.p < s.e && *s.p == '}') {
        complete = 1;
        goto out;
    }
    for (;;) {
        skip_ws(&s);
        const char *key;
        size_t klen = 0;
        if (s.p >= s.e || *s.p != '"')
            break;
        const unsigned char *at = s.p;
        if (scan_string(&s, &key, &klen) < 0) { /* a key that does not decode: step over it */
            s.p = lex_skip(at, s.e);
            key = "";
            klen = 0;
        }
        int is_id = klen == 2 && memcmp(key, "id", 2) == 0;
        if (klen == 6 && memcmp(key, "method", 6) == 0)
            method = 1;
        skip_ws(&s);
        if (s.p >= s.e || *s.p != ':')
            break;
        s.p++;
        skip_ws(&s);
        at = s.p;
        json_t *v = parse_value(&s);
        if (!v) { /* a member that does not decode: the ones after it still count */
            s.depth = 0;
            s.p = lex_skip(at, s.e);
        } else if (is_id) { /* the last one wins, as in jf_loadb */
            json_decref(id);
            id = json_is_string(v) || json_is_integer(v) ? json_incref(v) : NULL;
        }
        json_decref(v);
        skip_ws(&s);
        if (s.p < s.e && *s.p == '}')
            complete = 1;
        if (s.p >= s.e || *s.p != ',')
            break;
        s.p++;
    }
out:
    free(s.tmp);
    if (is_request)
        *is_request = method ? 1 : complete ? 0 : -1;
    return id;
}

/* ---- encoding --------------------------------------------------------------------------- */

struct out {
    char *d;
    size_t n, cap;
};

static void grow(struct out *o, size_t need)
{
    size_t cap = o->cap ? o->cap : 256;
    while (cap < o->n + need + 1)
        cap *= 2;
    char *d = realloc(o->d, cap);
    if (!d)
        abort();
    o->d = d;
    o->cap = cap;
}

static inline void put(struct out *o, const void *src, size_t n)
{
    if (o->n + n + 1 > o->cap)
        grow(o, n);
    memcpy(o->d + o->n, src, n);
    o->n += n;
}

static inline void put1(struct out *o, char c)
{
    if (o->n + 2 > o->cap)
        grow(o, 1);
    o->d[o->n++] = c;
}

static int enc_string(struct out *o, const char *str, size_t len)
{
    const unsigned char *p = (const unsigned char *)str, *e = p + len, *run = p;
    static const char hexd[] = "0123456789ABCDEF";
    put1(o, '"');
    while (p < e) {
        unsigned c = *p;
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            p++;
            continue;
        }
        if (c >= 0x80) {
            size_t k = jf_utf8_seq(p, e);
            if (!k)
                return -1;
            p += k;
            continue;
        }
        put(o, run, (size_t)(p - run));
        char esc[6];
        size_t k = json_escape_byte(c, hexd, esc);
        put(o, esc, k);
        run = ++p;
    }
    put(o, run, (size_t)(p - run));
    put1(o, '"');
    return 0;
}

static void enc_integer(struct out *o, json_int_t v)
{
    char tmp[24], *q = tmp + sizeof(tmp);
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        *--q = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--q = '-';
    put(o, q, (size_t)(tmp + sizeof(tmp) - q));
}

static int enc(struct out *o, const json_t *v, int depth)
{
    if (depth > JSON_PARSER_MAX_DEPTH)
        return -1;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        size_t klen;
        json_t *val;
        int first = 1;
        put1(o, '{');
        json_object_keylen_foreach((json_t *)v, key, klen, val)
        {
            if (!first)
                put1(o, ',');
            first = 0;
            if (enc_string(o, key, klen) < 0)
                return -1;
            put1(o, ':');
            if (enc(o, val, depth + 1) < 0)
                return -1;
        }
        put1(o, '}');
        return 0;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        put1(o, '[');
        for (size_t i = 0; i < n; i++) {
            if (i)
                put1(o, ',');
            if (enc(o, json_array_get(v, i), depth + 1) < 0)
                return -1;
        }
        put1(o, ']');
        return 0;
    }
    case JSON_STRING: {
        const char *digits;
        size_t n;
        if (jf_big_integer(v, &digits, &n)) {
            put(o, digits, n);
            return 0;
        }
        return enc_string(o, json_string_value(v), json_string_length(v));
    }
    case JSON_INTEGER:
        enc_integer(o, json_integer_value(v));
        return 0;
    case JSON_REAL: { /* rare on the hot path: jansson's own formatting, byte for byte */
        char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!t)
            return -1;
        put(o, t, strlen(t));
        free(t);
        return 0;
    }
    case JSON_TRUE:
        put(o, "true", 4);
        return 0;
    case JSON_FALSE:
        put(o, "false", 5);
        return 0;
    case JSON_NULL:
        put(o, "null", 4);
        return 0;
    }
    return -1;
}

int jf_big_integer(const json_t *v, const char **digits, size_t *len)
{
    size_t t = sizeof(JF_BIG_TAG) - 1, n = json_string_length(v);
    const char *str = json_string_value(v);
    if (!str || n <= t || memcmp(str, JF_BIG_TAG, t) != 0)
        return 0;
    const char *d = str + t, *e = str + n, *q = d + (*d == '-');
    if (q >= e || (*q == '0' && e - q > 1)) /* an integer literal and nothing else */
        return 0;
    for (; q < e; q++)
        if (*q < '0' || *q > '9')
            return 0;
    *digits = d;
    *len = (size_t)(e - d);
    return 1;
}

char *jf_dumps(const json_t *v)
{
    if (!v)
        return NULL;
    struct out o = {0};
    grow(&o, 0);
    if (enc(&o, v, 0) < 0) {
        free(o.d);
        return NULL;
    }
    o.d[o.n] = '\0';
    return o.d;
}

int jf_append(char **data, size_t *len, size_t *cap, const json_t *v, const char *str,
              size_t str_len)
{
    struct out o = {*data, *len, *cap};
    if (!o.d || o.n + 2 > o.cap)
        grow(&o, 1);
    int rc = v ? enc(&o, v, 0) : enc_string(&o, str, str_len);
    o.d[o.n] = '\0';
    *data = o.d;
    *cap = o.cap;
    if (rc == 0)
        *len = o.n; /* on failure the partial text is dropped */
    else
        o.d[*len] = '\0';
    return rc;
}
