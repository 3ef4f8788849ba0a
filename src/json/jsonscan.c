/* jsonscan — see jsonscan.h. One pass over the bytes, no allocation: a value is accepted only
 * when every byte is where jf_dumps would have put it (so the bytes can be forwarded as they
 * are); anything else returns 0 and the caller takes the tree path, which decides (and words
 * the error) exactly as before. Must not keep state between calls (the shape hash's key is
 * the caller's). */
#include "jsonscan.h"
#include "jsonfast.h"
#include "json_escape.h"

#include <string.h>

#define JS_KEYS_PER_OBJECT 64 /* more: the tree path (duplicate check stays O(n^2) small) */
#define JS_KEY_STACK       512
#define JS_MAX_DEPTH       64 /* deeper: the tree path (JSON_PARSER_MAX_DEPTH applies there) */
#define JS_SHORT_RUN       64 /* plain bytes a string is read byte by byte before word by word */

struct sc {
    const unsigned char *p, *e;
    int allow_nul;
    int reals; /* js_scan.reals: fractions and exponents pass (see jsonscan.h) */
    int depth;
    int in_sub;          /* the value being scanned is the top-level member out->sub */
    struct js_scan *out; /* members to record (js_canon_scan), or NULL */
    int nkeys;
    struct {
        const unsigned char *k;
        size_t n;
    } keys[JS_KEY_STACK];
};

/* Bytes that stand for themselves in a JSON string as jf_dumps writes it: printable ASCII
 * but '"' and '\\'. */
static const unsigned char plain_byte[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

static int is_hex_upper(unsigned c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

/* How many of the eight bytes at p stand for themselves, up to the first that does not:
 * written out, one test each, so a short string costs no loop counter. */
static inline int plain_prefix8(const unsigned char *p)
{
    if (!plain_byte[p[0]])
        return 0;
    if (!plain_byte[p[1]])
        return 1;
    if (!plain_byte[p[2]])
        return 2;
    if (!plain_byte[p[3]])
        return 3;
    if (!plain_byte[p[4]])
        return 4;
    if (!plain_byte[p[5]])
        return 5;
    if (!plain_byte[p[6]])
        return 6;
    if (!plain_byte[p[7]])
        return 7;
    return 8;
}

/* A string at s->p (its opening quote) written as jf_dumps writes one: raw UTF-8, the short
 * escapes json_escape_byte uses, \u00XX (upper case) only for the other control characters
 * (\u0000 only with allow_nul, and never first: a string that starts with NUL may be a
 * jsonfast big-integer tag, which jf_dumps writes as a number). key: no escape at all (keys
 * with one take the tree path). */
static int canon_string(struct sc *s, int key)
{
    const unsigned char *p = s->p + 1, *e = s->e;
    for (;;) {
        /* Most strings of a call (keys, names, ids) end within a few bytes: a byte test finds
         * that end at once, eight tests to one bound check (a check per byte was a third of
         * this function); a run past JS_SHORT_RUN goes on eight bytes at a time
         * (json_skip_plain: a big text is scanned at word speed), which would cost every short
         * string a word test. */
        const unsigned char *stop = e - p > JS_SHORT_RUN ? p + JS_SHORT_RUN : e;
        int n = 8;
        while (n == 8 && stop - p >= 8) {
            n = plain_prefix8(p);
            p += n;
        }
        while (n == 8 && p < stop && plain_byte[*p])
            p++;
        if (p == stop) {
            p = json_skip_plain(p, e, 1);
            while (p < e && plain_byte[*p])
                p++;
        }
        if (p >= e)
            return -1;
        unsigned c = *p;
        if (c == '"')
            break;
        if (c >= 0x80) {
            size_t k = jf_utf8_seq(p, e);
            if (!k)
                return -1;
            p += k;
            continue;
        }
        if (c < 0x20 || key || e - p < 2)
            return -1;
        switch (p[1]) { /* a backslash */
        case '"':
        case '\\':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            p += 2;
            continue;
        case 'u': {
            if (e - p < 6 || p[2] != '0' || p[3] != '0' || !is_hex_upper(p[4]) ||
                !is_hex_upper(p[5]))
                return -1;
            unsigned v = (unsigned)((p[4] <= '9' ? p[4] - '0' : p[4] - 'A' + 10) << 4) |
                         (unsigned)(p[5] <= '9' ? p[5] - '0' : p[5] - 'A' + 10);
            /* jf_dumps writes \u00XX only below 0x20 and never for the short-escape bytes */
            if (v >= 0x20 || v == '\b' || v == '\f' || v == '\n' || v == '\r' || v == '\t' ||
                (v == 0 && (!s->allow_nul || p == s->p + 1)))
                return -1;
            p += 6;
            continue;
        }
        default:
            return -1;
        }
    }
    s->p = p + 1;
    return 0;
}

/* Digits at p: past them. */
static const unsigned char *digits(const unsigned char *p, const unsigned char *e)
{
    while (p < e && *p >= '0' && *p <= '9')
        p++;
    return p;
}

/* A real's fraction and exponent in JSON's grammar at p, the exponent at most two digits (so
 * the value is finite: no more than 18 integer digits, jansson refuses an overflow that Python
 * would read as inf). Past them, or NULL. */
static const unsigned char *real_tail(const unsigned char *p, const unsigned char *e)
{
    if (p < e && *p == '.') {
        const unsigned char *d = p + 1;
        p = digits(d, e);
        if (p == d)
            return NULL;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            p++;
        const unsigned char *d = p;
        p = digits(d, e);
        if (p == d || p - d > 2)
            return NULL;
    }
    return p;
}

/* An integer as jf_dumps writes one: no "-0", at most 18 digits (always fits json_int_t);
 * reals take the tree path (their text is jansson's %.17g) unless s->reals. */
static int canon_number(struct sc *s)
{
    const unsigned char *p = s->p, *e = s->e;
    int neg = *p == '-';
    p += neg;
    const unsigned char *d = p;
    if (p < e && *p == '0')
        p++;
    else
        p = digits(p, e);
    if (p == d || p - d > 18)
        return -1;
    if (p < e && (*p == '.' || *p == 'e' || *p == 'E')) {
        if (!s->reals || !(p = real_tail(p, e)))
            return -1;
    } else if (neg && *d == '0') {
        return -1; /* "-0": jf_dumps writes 0 */
    }
    s->p = p;
    return 0;
}

static int canon_value(struct sc *s);

static int canon_object(struct sc *s)
{
    s->p++;
    if (s->p < s->e && *s->p == '}') {
        s->p++;
        if (s->out && s->depth == 1)
            s->out->n = 0;
        else if (s->in_sub)
            s->out->sn = 0;
        s->in_sub = 0;
        return 0;
    }
    int base = s->nkeys, rc = -1, top = s->out && s->depth == 1, sub = s->in_sub;
    s->in_sub = 0;
    struct js_member *rec = top ? s->out->m : sub ? s->out->sm : NULL;
    int rmax = top ? s->out->max : sub ? s->out->smax : 0, rn = 0;
    for (;;) {
        if (s->p >= s->e || *s->p != '"')
            goto out;
        const unsigned char *k = s->p + 1;
        if (canon_string(s, 1) < 0)
            goto out;
        size_t n = (size_t)(s->p - 1 - k);
        for (int i = base; i < s->nkeys; i++) /* duplicates: the tree path (last one wins) */
            if (s->keys[i].n == n && memcmp(s->keys[i].k, k, n) == 0)
                goto out;
        if (s->nkeys >= JS_KEY_STACK || s->nkeys - base >= JS_KEYS_PER_OBJECT)
            goto out;
        s->keys[s->nkeys].k = k;
        s->keys[s->nkeys].n = n;
        s->nkeys++;
        if (s->p >= s->e || *s->p != ':')
            goto out;
        s->p++;
        const unsigned char *v = s->p;
        s->in_sub =
            top && s->out->sub && strlen(s->out->sub) == n && memcmp(s->out->sub, k, n) == 0;
        if (canon_value(s) < 0)
            goto out;
        s->in_sub = 0;
        if (rec) {
            if (rn >= rmax)
                goto out; /* more members than the caller has room for: the tree path */
            rec[rn].key = (const char *)k;
            rec[rn].klen = n;
            rec[rn].val = (const char *)v;
            rec[rn].vlen = (size_t)(s->p - v);
            rn++;
        }
        if (s->p < s->e && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->e && *s->p == '}') {
            s->p++;
            rc = 0;
        }
        goto out;
    }
out:
    s->nkeys = base;
    if (rc == 0 && top)
        s->out->n = rn;
    else if (rc == 0 && sub)
        s->out->sn = rn;
    return rc;
}

static int canon_array(struct sc *s)
{
    s->in_sub = 0;
    s->p++;
    if (s->p < s->e && *s->p == ']') {
        s->p++;
        return 0;
    }
    for (;;) {
        if (canon_value(s) < 0)
            return -1;
        if (s->p < s->e && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->e && *s->p == ']') {
            s->p++;
            return 0;
        }
        return -1;
    }
}

static int word(struct sc *s, const char *w, size_t n)
{
    if ((size_t)(s->e - s->p) < n || memcmp(s->p, w, n) != 0)
        return -1;
    s->p += n;
    return 0;
}

static int canon_value(struct sc *s)
{
    if (s->p >= s->e || ++s->depth > JS_MAX_DEPTH)
        return -1;
    int rc;
    switch (*s->p) {
    case '{':
        rc = canon_object(s);
        break;
    case '[':
        rc = canon_array(s);
        break;
    case '"':
        rc = canon_string(s, 0);
        break;
    case 't':
        rc = word(s, "true", 4);
        break;
    case 'f':
        rc = word(s, "false", 5);
        break;
    case 'n':
        rc = word(s, "null", 4);
        break;
    default:
        rc = *s->p == '-' || (*s->p >= '0' && *s->p <= '9') ? canon_number(s) : -1;
    }
    s->depth--;
    return rc;
}

static int scan(const char *text, size_t len, int allow_nul, struct js_scan *out)
{
    struct sc s;
    s.p = (const unsigned char *)text;
    s.e = s.p + len;
    s.allow_nul = allow_nul;
    s.reals = out && out->reals;
    s.depth = 0;
    s.in_sub = 0;
    s.out = out;
    s.nkeys = 0;
    return canon_value(&s) == 0 && s.p == s.e;
}

int js_canon_value(const char *text, size_t len, int allow_nul)
{
    return scan(text, len, allow_nul, NULL);
}

int js_canon_scan(const char *text, size_t len, int allow_nul, struct js_scan *out)
{
    out->n = 0;
    out->sn = -1;
    if (!len || text[0] != '{' || !scan(text, len, allow_nul, out))
        return -1;
    return 0;
}

int js_canon_object(const char *text, size_t len, int allow_nul, struct js_member *m, int max)
{
    struct js_scan sc = {.m = m, .max = max};
    return js_canon_scan(text, len, allow_nul, &sc) < 0 ? -1 : sc.n;
}

/* ---- on bytes js_canon_value accepted ------------------------------------------------------ */

/* Past the value at p (canonical: no white space, strings end at the first unescaped quote). */
static const char *skip_value(const char *p, const char *e)
{
    int depth = 0;
    while (p < e) {
        char c = *p;
        if (c == '"') {
            p++;
            while (p < e && *p != '"')
                p += *p == '\\' ? 2 : 1;
            p++;
            if (!depth)
                return p;
        } else if (c == '{' || c == '[') {
            depth++;
            p++;
        } else if (c == '}' || c == ']') {
            if (!depth)
                return p;
            p++;
            if (!--depth)
                return p;
        } else if (c == ',' && !depth) {
            return p;
        } else {
            p++;
        }
    }
    return p;
}

/* The members of an object (keyed) or the elements of an array of canonical text: one walk,
 * a key read first when keyed. */
static int list(const char *text, size_t len, struct js_member *m, int max, int keyed)
{
    const char *p = text + 1, *e = text + len;
    int n = 0;
    if (p < e && *p == (keyed ? '}' : ']'))
        return 0;
    while (p < e && (!keyed || *p == '"')) {
        if (n >= max)
            return -1;
        m[n].key = NULL;
        m[n].klen = 0;
        if (keyed) {
            const char *k = ++p;
            while (p < e && *p != '"')
                p++; /* keys have no escape (js_canon_value) */
            m[n].key = k;
            m[n].klen = (size_t)(p - k);
            p += 2; /* the quote and ':' */
        }
        m[n].val = p;
        p = skip_value(p, e);
        m[n].vlen = (size_t)(p - m[n].val);
        n++;
        if (p < e && *p == ',')
            p++;
        else
            break;
    }
    return n;
}

int js_members(const char *text, size_t len, struct js_member *m, int max)
{
    return list(text, len, m, max, 1);
}

int js_elements(const char *text, size_t len, struct js_member *m, int max)
{
    return list(text, len, m, max, 0);
}

const struct js_member *js_getn(const struct js_member *m, int n, const char *key, size_t kl)
{
    for (int i = 0; i < n; i++)
        if (m[i].klen == kl && memcmp(m[i].key, key, kl) == 0)
            return &m[i];
    return NULL;
}

int js_is(const struct js_member *v, const char *text)
{
    size_t n = strlen(text);
    return v && v->vlen == n && memcmp(v->val, text, n) == 0;
}

/* ---- a sample of a big value -------------------------------------------------------------- */

static void put(char **w, const char *p, size_t n)
{
    memcpy(*w, p, n);
    *w += n;
}

/* The value at p written to *w with its arrays cut to their first `keep` elements: past it. */
static const char *sample_value(const char *p, const char *e, int keep, char **w)
{
    if (p < e && (*p == '[' || *p == '{')) {
        char close = *p == '[' ? ']' : '}';
        int keyed = *p == '{', n = 0;
        put(w, p++, 1);
        while (p < e && *p != close) {
            const char *k = p;
            if (keyed) /* the key and its colon stay with every member */
                p = skip_value(p, e) + 1;
            if (!keyed && n >= keep) {
                p = skip_value(p, e);
            } else {
                if (n)
                    put(w, ",", 1);
                put(w, k, (size_t)(p - k));
                p = sample_value(p, e, keep, w);
            }
            n++;
            if (p < e && *p == ',')
                p++;
        }
        put(w, &close, 1);
        return p + 1;
    }
    const char *q = skip_value(p, e);
    put(w, p, (size_t)(q - p));
    return q;
}

size_t js_sample(const char *text, size_t len, int keep, char *out)
{
    char *w = out;
    sample_value(text, text + len, keep, &w);
    return (size_t)(w - out);
}

/* ---- the shape hash -------------------------------------------------------------------------- */

static inline uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    h *= 0xFF51AFD7ED558CCDULL;
    return h ^ (h >> 33);
}

uint64_t js_shape_hash(const char *text, size_t len, uint64_t key)
{
    const char *p = text, *e = text + len;
    uint64_t h = key;
    while (p < e) {
        char c = *p;
        if (c == '"') {
            const char *b = ++p;
            while (p < e && *p != '"')
                p += *p == '\\' ? 2 : 1;
            if (p + 1 < e && p[1] == ':') { /* a key: its bytes are the shape */
                for (const char *q = b; q < p; q++)
                    h = mix(h, (unsigned char)*q);
                h = mix(h, ':');
            } else {
                h = mix(h, 's');
            }
            p++;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            int real = 0;
            for (; p < e && (*p == '-' || *p == '+' || *p == '.' || *p == 'e' || *p == 'E' ||
                             (*p >= '0' && *p <= '9'));
                 p++)
                real |= *p == '.' || *p == 'e' || *p == 'E';
            h = mix(h, real ? 'r' : 'i');
        } else if (c == 't' || c == 'f') {
            p += c == 't' ? 4 : 5;
            h = mix(h, 'b');
        } else if (c == 'n') {
            p += 4;
            h = mix(h, 'n');
        } else {
            h = mix(h, (unsigned char)c);
            p++;
        }
    }
    return h;
}
