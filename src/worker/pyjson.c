/* pyjson — see pyjson.h. Called with the GIL held; every reference taken is released on every
 * path; a case it does not handle (or a failed allocation) gives Ellipsis and clears the error,
 * so the caller's json.loads decides. */
#include "pyjson.h"

#include <string.h>

#define PYJ_MAX_DEPTH 64

static PyObject *pyj_value(struct pyj *j, int depth);

/* Object keys seen first (ASCII, short, no escape), kept with their hash computed: the
 * requests' keys recur ("jsonrpc", "id", "params", "run_id", ...) and a cached key costs a
 * compare instead of a decode, an allocation and a hash. Bounded; first come, first kept. */
#define PYJ_KEYS    48
#define PYJ_KEY_MAX 24
static PyObject *pyj_keys[PYJ_KEYS];
static int pyj_nkeys;

static PyObject *pyj_key(const char *s, size_t n)
{
    for (int i = 0; i < pyj_nkeys; i++) {
        PyObject *k = pyj_keys[i];
        if ((size_t)PyUnicode_GET_LENGTH(k) == n && !memcmp(PyUnicode_DATA(k), s, n))
            return Py_NewRef(k);
    }
    PyObject *k = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "strict");
    if (!k || n > PYJ_KEY_MAX || pyj_nkeys >= PYJ_KEYS || !PyUnicode_IS_ASCII(k))
        return k;
    if (PyObject_Hash(k) == -1) {
        Py_DECREF(k);
        return NULL;
    }
    pyj_keys[pyj_nkeys++] = Py_NewRef(k);
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

/* At the opening quote. The input is the UTF-8 of a str, so raw bytes are valid UTF-8.
 * is_key: an object key (looked up in pyj_keys when it has no escape). */
static PyObject *pyj_string(struct pyj *j, int is_key)
{
    const char *s = ++j->p, *q = s;
    while (q < j->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
        q++;
    if (q >= j->end || (unsigned char)*q < 0x20)
        return NULL;
    if (*q == '"') {
        j->p = q + 1;
        if (is_key)
            return pyj_key(s, (size_t)(q - s));
        return PyUnicode_DecodeUTF8(s, q - s, "strict");
    }
    /* escapes: decode into the scratch buffer (never longer than the source) */
    size_t n = 0;
    if (pyj_reserve(j, (size_t)(j->end - s)))
        return NULL;
    memcpy(j->buf, s, (size_t)(q - s));
    n = (size_t)(q - s);
    while (q < j->end) {
        unsigned char c = (unsigned char)*q;
        if (c == '"') {
            j->p = q + 1;
            return PyUnicode_DecodeUTF8(j->buf, (Py_ssize_t)n, "strict");
        }
        if (c < 0x20)
            return NULL;
        if (c != '\\') {
            j->buf[n++] = (char)c;
            q++;
            continue;
        }
        if (q + 1 >= j->end)
            return NULL;
        char e = q[1];
        q += 2;
        switch (e) {
        case '"':
            j->buf[n++] = '"';
            break;
        case '\\':
            j->buf[n++] = '\\';
            break;
        case '/':
            j->buf[n++] = '/';
            break;
        case 'b':
            j->buf[n++] = '\b';
            break;
        case 'f':
            j->buf[n++] = '\f';
            break;
        case 'n':
            j->buf[n++] = '\n';
            break;
        case 'r':
            j->buf[n++] = '\r';
            break;
        case 't':
            j->buf[n++] = '\t';
            break;
        case 'u': {
            unsigned cp, lo;
            if (j->end - q < 4 || pyj_hex4(q, &cp))
                return NULL;
            q += 4;
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return NULL; /* lone low surrogate: json.loads keeps it */
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (j->end - q < 6 || q[0] != '\\' || q[1] != 'u' || pyj_hex4(q + 2, &lo) ||
                    lo < 0xDC00 || lo > 0xDFFF)
                    return NULL;
                q += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            /* \uXXXX is 6 source bytes for at most 3 UTF-8 bytes; a pair 12 for 4 */
            if (cp < 0x80) {
                j->buf[n++] = (char)cp;
            } else if (cp < 0x800) {
                j->buf[n++] = (char)(0xC0 | (cp >> 6));
                j->buf[n++] = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                j->buf[n++] = (char)(0xE0 | (cp >> 12));
                j->buf[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                j->buf[n++] = (char)(0x80 | (cp & 0x3F));
            } else {
                j->buf[n++] = (char)(0xF0 | (cp >> 18));
                j->buf[n++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                j->buf[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                j->buf[n++] = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default:
            return NULL;
        }
    }
    return NULL;
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
        return -1; /* a float: json.loads */
    j->p = q;
    *out = neg ? -v : v;
    return 0;
}

static PyObject *pyj_int(struct pyj *j)
{
    long long v;
    return pyj_ll(j, &v) < 0 ? NULL : PyLong_FromLongLong(v);
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

PyObject *pyj_loads_fast(PyObject *self, PyObject *text)
{
    (void)self;
    Py_ssize_t n;
    const char *s = PyUnicode_Check(text) ? PyUnicode_AsUTF8AndSize(text, &n) : NULL;
    if (!s) {
        PyErr_Clear();
        return Py_NewRef(Py_Ellipsis);
    }
    struct pyj j = {.p = s, .end = s + n};
    pyj_ws(&j);
    PyObject *v = pyj_value(&j, 0);
    if (v) {
        pyj_ws(&j);
        if (j.p != j.end)
            Py_CLEAR(v);
    }
    PyMem_Free(j.buf);
    if (!v) {
        PyErr_Clear();
        return Py_NewRef(Py_Ellipsis);
    }
    return v;
}
