/* pyjson — see pyjson.h. Called with the GIL held; every reference taken is released on every
 * path; a case it does not handle (or a failed allocation) gives Ellipsis and clears the error,
 * so the caller's json.loads decides. */
#include "pyjson.h"
#include "json_escape.h"
#include "util.h"

#include <string.h>

#define PYJ_MAX_DEPTH 64
/* Texts longer than this are parsed with the cyclic GC paused (see pyj_parse). */
#define PYJ_GC_PAUSE_FROM 65536

static PyObject *pyj_value(struct pyj *j, int depth);

/* Object keys seen first (ASCII, short, no escape), kept with their hash computed: the
 * requests' keys recur ("jsonrpc", "id", "params", "run_id", ...) and so do a big result's
 * (every record repeats its keys), and a cached key costs a hash of its bytes and one compare
 * instead of a decode, an allocation and a hash. Found by that hash in an open-addressed table
 * that holds the key's bytes beside it: a linear scan of the cached keys was ~9 % of the worker's
 * time parsing a 10 MB structured result. Bounded; first come, first kept. */
#define PYJ_KEY_SLOTS 256 /* a power of two */
#define PYJ_KEYS      192 /* kept at most: the table stays at most 3/4 full */
#define PYJ_KEY_MAX   24
struct pyj_key_slot {
    PyObject *key; /* NULL: free */
    uint8_t len;
    char bytes[PYJ_KEY_MAX];
};
static struct pyj_key_slot pyj_key_table[PYJ_KEY_SLOTS];
static int pyj_nkeys;

/* A key the table does not keep, made one str per parse as json.loads does (its memo): a big
 * result's records repeat their keys, and a str per occurrence is ~50 bytes or more each. Takes
 * k (a new reference, or NULL); returns a new reference. */
static PyObject *pyj_memo(struct pyj *j, PyObject *k)
{
    if (!k)
        return NULL;
    if (!j->memo && !(j->memo = PyDict_New())) {
        Py_DECREF(k);
        return NULL;
    }
    PyObject *kept = PyDict_SetDefault(j->memo, k, k); /* borrowed */
    Py_XINCREF(kept);
    Py_DECREF(k);
    return kept;
}

static PyObject *pyj_key(struct pyj *j, const char *s, size_t n)
{
    struct pyj_key_slot *slot = NULL;
    if (n <= PYJ_KEY_MAX) {
        uint32_t i = (uint32_t)fnv1a(s, n, 0) & (PYJ_KEY_SLOTS - 1);
        for (;; i = (i + 1) & (PYJ_KEY_SLOTS - 1)) {
            slot = &pyj_key_table[i];
            if (!slot->key)
                break;
            if (slot->len == n && !memcmp(slot->bytes, s, n))
                return Py_NewRef(slot->key);
        }
    }
    PyObject *k = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "strict");
    if (!k)
        return NULL;
    if (!slot || pyj_nkeys >= PYJ_KEYS || !PyUnicode_IS_ASCII(k))
        return pyj_memo(j, k);
    if (PyObject_Hash(k) == -1) {
        Py_DECREF(k);
        return NULL;
    }
    slot->key = Py_NewRef(k);
    slot->len = (uint8_t)n;
    memcpy(slot->bytes, s, n);
    pyj_nkeys++;
    return k;
}

void pyj_ws(struct pyj *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
        j->p++;
}

static int pyj_hex4(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static int pyj_reserve(struct pyj *j, size_t n)
{
    if (n <= j->cap)
        return 0;
    size_t cap = j->cap ? j->cap : 256;
    while (cap < n)
        cap *= 2;
    char *b = PyMem_Realloc(j->buf, cap);
    if (!b)
        return -1;
    j->buf = b;
    j->cap = cap;
    return 0;
}

/* Past the bytes at q that stand for themselves in a JSON string. */
static const char *pyj_plain(const char *q, const char *end)
{
    q = (const char *)json_skip_plain((const unsigned char *)q, (const unsigned char *)end, 0);
    while (q < end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
        q++;
    return q;
}

/* One escape at q (its backslash) written as UTF-8 at *w: past it, or NULL when loads_fast
 * would not take it (a lone surrogate: json.loads keeps it). */
static const char *pyj_escape(const char *q, const char *end, char **w)
{
    char *o = *w;
    if (q + 1 >= end)
        return NULL;
    char e = q[1];
    q += 2;
    switch (e) {
    case '"':
    case '\\':
    case '/':
        *o++ = e;
        break;
    case 'b':
        *o++ = '\b';
        break;
    case 'f':
        *o++ = '\f';
        break;
    case 'n':
        *o++ = '\n';
        break;
    case 'r':
        *o++ = '\r';
        break;
    case 't':
        *o++ = '\t';
        break;
    case 'u': {
        unsigned cp, lo;
        if (end - q < 4 || pyj_hex4(q, &cp))
            return NULL;
        q += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return NULL; /* lone low surrogate: json.loads keeps it */
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end - q < 6 || q[0] != '\\' || q[1] != 'u' || pyj_hex4(q + 2, &lo) || lo < 0xDC00 ||
                lo > 0xDFFF)
                return NULL;
            q += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        /* \uXXXX is 6 source bytes for at most 3 UTF-8 bytes; a pair 12 for 4 */
        if (cp < 0x80) {
            *o++ = (char)cp;
        } else if (cp < 0x800) {
            *o++ = (char)(0xC0 | (cp >> 6));
            *o++ = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            *o++ = (char)(0xE0 | (cp >> 12));
            *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
            *o++ = (char)(0x80 | (cp & 0x3F));
        } else {
            *o++ = (char)(0xF0 | (cp >> 18));
            *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
            *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
            *o++ = (char)(0x80 | (cp & 0x3F));
        }
        break;
    }
    default:
        return NULL;
    }
    *w = o;
    return q;
}

/* At the opening quote: the string's UTF-8 in *out (the source itself when it has no escape,
 * else decoded into the scratch buffer, never longer than the source), the cursor past the
 * closing quote. -1 when loads_fast would not take it. The input is the UTF-8 of a str, so
 * raw bytes are valid UTF-8. */
static int pyj_unescape(struct pyj *j, const char **out, size_t *len)
{
    const char *s = ++j->p, *q = pyj_plain(s, j->end);
    if (q >= j->end || (unsigned char)*q < 0x20)
        return -1;
    if (*q == '"') {
        j->p = q + 1;
        *out = s;
        *len = (size_t)(q - s);
        return 0;
    }
    if (pyj_reserve(j, (size_t)(j->end - s)))
        return -1;
    memcpy(j->buf, s, (size_t)(q - s));
    char *w = j->buf + (q - s);
    const char *end = j->end;
    while (q < end) {
        /* Plain bytes eight at a time; a JSON text inside a string has an escape every few
         * bytes (each quote of it), so runs are short: no call per run. */
        while (end - q >= 8 &&
               json_skip_plain((const unsigned char *)q, (const unsigned char *)q + 8, 0) ==
                   (const unsigned char *)q + 8) {
            memcpy(w, q, 8);
            w += 8;
            q += 8;
        }
        /* then byte by byte up to the one that stopped it (no eight-byte check per byte) */
        while (q < end && (unsigned char)*q >= 0x20 && *q != '"' && *q != '\\')
            *w++ = *q++;
        if (q >= end)
            return -1;
        unsigned char c = (unsigned char)*q;
        if (c < 0x20)
            return -1;
        if (c == '"') {
            j->p = q + 1;
            *out = j->buf;
            *len = (size_t)(w - j->buf);
            return 0;
        }
        if (q + 1 < end && (q[1] == '"' || q[1] == '\\')) { /* the usual escapes, inline */
            *w++ = q[1];
            q += 2;
            continue;
        }
        if (!(q = pyj_escape(q, end, &w)))
            return -1;
    }
    return -1;
}

/* At the opening quote. is_key: an object key (the key table's, or the parse's memo's). */
static PyObject *pyj_string(struct pyj *j, int is_key)
{
    const char *s;
    size_t n;
    if (pyj_unescape(j, &s, &n) < 0)
        return NULL;
    if (is_key && s != j->buf) /* no escape: the source's bytes */
        return pyj_key(j, s, n);
    PyObject *v = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "strict");
    return is_key ? pyj_memo(j, v) : v;
}

PyObject *pyj_str(struct pyj *j)
{
    return pyj_string(j, 0);
}

int pyj_ll(struct pyj *j, long long *out)
{
    const char *q = j->p;
    int neg = 0;
    if (*q == '-') {
        neg = 1;
        q++;
    }
    const char *d = q;
    long long v = 0;
    while (q < j->end && *q >= '0' && *q <= '9') {
        if (q - d >= 18)
            return -1; /* may not fit: json.loads */
        v = v * 10 + (*q - '0');
        q++;
    }
    if (q == d || (*d == '0' && q - d > 1))
        return -1;
    if (q < j->end && (*q == '.' || *q == 'e' || *q == 'E'))
        return -1; /* a real, not an integer */
    j->p = q;
    *out = neg ? -v : v;
    return 0;
}

/* Past the digits at q. */
static const char *pyj_digits(const char *q, const char *end)
{
    while (q < end && *q >= '0' && *q <= '9')
        q++;
    return q;
}

/* A number with a fraction or an exponent (JSON's grammar): the float json.loads makes of it
 * (float() of its text: PyOS_string_to_double, inf past the range as json.loads gives). */
static PyObject *pyj_real(struct pyj *j)
{
    const char *q = j->p + (*j->p == '-'), *d = q;
    q = pyj_digits(q, j->end);
    if (q == d || (*d == '0' && q - d > 1))
        return NULL;
    if (q < j->end && *q == '.') {
        const char *f = q + 1;
        q = pyj_digits(f, j->end);
        if (q == f)
            return NULL;
    }
    if (q < j->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < j->end && (*q == '+' || *q == '-'))
            q++;
        const char *x = q;
        q = pyj_digits(x, j->end);
        if (q == x)
            return NULL;
    }
    char tmp[64];
    size_t n = (size_t)(q - j->p);
    if (n >= sizeof(tmp))
        return NULL; /* a long one: json.loads */
    memcpy(tmp, j->p, n);
    tmp[n] = '\0';
    char *stop;
    double v = PyOS_string_to_double(tmp, &stop, NULL);
    if (v == -1.0 && PyErr_Occurred())
        return NULL;
    if (stop != tmp + n)
        return NULL;
    j->p = q;
    return PyFloat_FromDouble(v);
}

static PyObject *pyj_int(struct pyj *j)
{
    long long v;
    if (pyj_ll(j, &v) == 0)
        return PyLong_FromLongLong(v);
    const char *q = pyj_digits(j->p + (*j->p == '-'), j->end);
    if (q < j->end && (*q == '.' || *q == 'e' || *q == 'E'))
        return pyj_real(j);
    return NULL;
}

static PyObject *pyj_word(struct pyj *j, const char *w, size_t n, PyObject *v)
{
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n))
        return NULL;
    j->p += n;
    return Py_NewRef(v);
}

/* After a member of an object or an array: 1 on ',' (another follows), 0 on `close`, -1 on
 * anything else (not this parser's JSON: the caller falls back). */
static int pyj_after_member(struct pyj *j, char close)
{
    pyj_ws(j);
    if (j->p < j->end && (*j->p == ',' || *j->p == close))
        return *j->p++ == ',';
    return -1;
}

/* Past the opening '{' or '[': 1 when `close` follows at once (an empty container). */
static int pyj_opens_empty(struct pyj *j, char close)
{
    j->p++;
    pyj_ws(j);
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return 1;
    }
    return 0;
}

static PyObject *pyj_object(struct pyj *j, int depth)
{
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    if (pyj_opens_empty(j, '}'))
        return d;
    for (;;) {
        pyj_ws(j);
        if (j->p >= j->end || *j->p != '"')
            goto fail;
        PyObject *k = pyj_string(j, 1);
        if (!k)
            goto fail;
        pyj_ws(j);
        if (j->p >= j->end || *j->p != ':') {
            Py_DECREF(k);
            goto fail;
        }
        j->p++;
        pyj_ws(j);
        PyObject *v = pyj_value(j, depth + 1);
        if (!v) {
            Py_DECREF(k);
            goto fail;
        }
        int rc = PyDict_SetItem(d, k, v);
        Py_DECREF(k);
        Py_DECREF(v);
        if (rc)
            goto fail;
        int more = pyj_after_member(j, '}');
        if (more == 0)
            return d;
        if (more < 0)
            goto fail;
    }
fail:
    Py_DECREF(d);
    return NULL;
}

static PyObject *pyj_array(struct pyj *j, int depth)
{
    PyObject *l = PyList_New(0);
    if (!l)
        return NULL;
    if (pyj_opens_empty(j, ']'))
        return l;
    for (;;) {
        pyj_ws(j);
        PyObject *v = pyj_value(j, depth + 1);
        if (!v)
            goto fail;
        int rc = PyList_Append(l, v);
        Py_DECREF(v);
        if (rc)
            goto fail;
        int more = pyj_after_member(j, ']');
        if (more == 0)
            return l;
        if (more < 0)
            goto fail;
    }
fail:
    Py_DECREF(l);
    return NULL;
}

static PyObject *pyj_value(struct pyj *j, int depth)
{
    if (depth > PYJ_MAX_DEPTH || j->p >= j->end)
        return NULL;
    switch (*j->p) {
    case '{':
        return pyj_object(j, depth);
    case '[':
        return pyj_array(j, depth);
    case '"':
        return pyj_string(j, 0);
    case 't':
        return pyj_word(j, "true", 4, Py_True);
    case 'f':
        return pyj_word(j, "false", 5, Py_False);
    case 'n':
        return pyj_word(j, "null", 4, Py_None);
    default:
        if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))
            return pyj_int(j);
        return NULL;
    }
}

const char pyj_loads_fast_doc[] =
    "loads_fast(text: str) -> object | Ellipsis: json.loads for the common case (see pyjson.h).";

/* One whole JSON value in s[0..n), white space around it allowed: a new reference, or NULL (no
 * exception) when loads_fast would not take it. A big one is parsed with the cyclic GC paused:
 * it makes many containers at once, which the collector would walk again and again (json.loads
 * of 50 MB of records was 1.55x faster without it); no cycle is made here. */
static PyObject *pyj_parse(const char *s, size_t n)
{
    struct pyj j = {.p = s, .end = s + n};
    pyj_ws(&j);
    int gc_was = n > PYJ_GC_PAUSE_FROM ? PyGC_Disable() : 0;
    PyObject *v = pyj_value(&j, 0);
    if (v) {
        pyj_ws(&j);
        if (j.p != j.end)
            Py_CLEAR(v);
    }
    if (gc_was)
        PyGC_Enable();
    PyMem_Free(j.buf);
    Py_XDECREF(j.memo);
    if (!v)
        PyErr_Clear();
    return v;
}

PyObject *pyj_loads_fast(PyObject *self, PyObject *text)
{
    (void)self;
    Py_ssize_t n;
    const char *s = PyUnicode_Check(text) ? PyUnicode_AsUTF8AndSize(text, &n) : NULL;
    if (!s) {
        PyErr_Clear();
        return Py_NewRef(Py_Ellipsis);
    }
    PyObject *v = pyj_parse(s, (size_t)n);
    return v ? v : Py_NewRef(Py_Ellipsis);
}

int pyj_text_value(const char *s, size_t n, int as_json, void (*release)(void *), void *ud,
                   PyObject **value, PyObject **text)
{
    struct pyj t = {.p = s - 1, .end = s + n + 1}; /* the string, quotes included */
    const char *u;
    size_t len;
    *value = *text = NULL;
    if (pyj_unescape(&t, &u, &len) < 0 || t.p != t.end) { /* it ends at s[n] */
        PyMem_Free(t.buf);
        PyErr_Clear();
        return -1;
    }
    if (release && u == t.buf)
        release(ud); /* the text is out of s: its buffer goes before the objects are made */
    if (as_json)
        *value = pyj_parse(u, len);
    if (!*value)
        *text = PyUnicode_DecodeUTF8(u, (Py_ssize_t)len, "replace"); /* as pym_text decodes */
    PyMem_Free(t.buf);
    if (*value)
        return 1;
    return *text ? 0 : -2;
}
