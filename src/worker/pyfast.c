/* pyfast — see pyfast.h. Called with the GIL held; every reference taken is released on
 * every path; a case we do not handle returns None (never an exception, except for a wrong
 * number of arguments). */
#include "pyfast.h"
#include "ctlreply.h"
#include "json_escape.h"

#include <math.h>
#include <string.h>

struct pbuf {
    char *d;
    size_t n, cap;
    int oom;
    int wide; /* a byte >= 0x80 went in: the str needs a UTF-8 decode */
};

static void pb_put(struct pbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + n)
            cap *= 2;
        char *d = PyMem_Realloc(b->d, cap);
        if (!d) {
            b->oom = 1;
            return;
        }
        b->d = d;
        b->cap = cap;
    }
    memcpy(b->d + b->n, s, n);
    b->n += n;
}

static void pb_puts(struct pbuf *b, const char *s)
{
    pb_put(b, s, strlen(s));
}

/* A str as json.encoder.c_encode_basestring writes it (ensure_ascii=False): '"', '\\' and
 * control characters escaped, \u00XX in lower case, everything else as is. -1 when the
 * str is not valid UTF-8 (lone surrogates): the caller falls back. */
static int pb_json_str(struct pbuf *b, PyObject *s /* borrowed */)
{
    Py_ssize_t len;
    const char *u = PyUnicode_AsUTF8AndSize(s, &len);
    if (!u) {
        PyErr_Clear();
        return -1;
    }
    if (!PyUnicode_IS_ASCII(s))
        b->wide = 1;
    static const char hexd[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)u, *e = p + len, *run = p;
    pb_put(b, "\"", 1);
    for (; p < e; p++) {
        unsigned c = *p;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        pb_put(b, (const char *)run, (size_t)(p - run));
        char esc[6];
        size_t k = json_escape_byte(c, hexd, esc);
        pb_put(b, esc, k);
        run = p + 1;
    }
    pb_put(b, (const char *)run, (size_t)(p - run));
    pb_put(b, "\"", 1);
    return 0;
}

/* One argument value; -1 for a type the fast path leaves to Python. */
static int pb_json_scalar(struct pbuf *b, PyObject *v /* borrowed */)
{
    if (PyUnicode_CheckExact(v))
        return pb_json_str(b, v);
    if (v == Py_None) {
        pb_puts(b, "null");
        return 0;
    }
    if (v == Py_True || v == Py_False) {
        pb_puts(b, v == Py_True ? "true" : "false");
        return 0;
    }
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return -1;
        }
        char num[24], *q = num + sizeof(num);
        unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
        do
            *--q = (char)('0' + u % 10);
        while (u /= 10);
        if (x < 0)
            *--q = '-';
        pb_put(b, q, (size_t)(num + sizeof(num) - q));
        return 0;
    }
    if (PyFloat_CheckExact(v)) {
        double d = PyFloat_AS_DOUBLE(v);
        if (!isfinite(d))
            return -1; /* NaN/Infinity: jsonsafe's conversion decides */
        /* float.__repr__, which the json module writes */
        char *r = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
        if (!r) {
            PyErr_Clear();
            return -1;
        }
        pb_puts(b, r);
        PyMem_Free(r);
        return 0;
    }
    return -1;
}

const char pyf_call_frame_doc[] =
    "call_frame(call_id, run_id_json, fragment, args, timeout_ms) -> str | None\n--\n\n"
    "The call_tool frame for flat scalar args (see client.py), else None.";

/* *sure stays 1 while value's exact type is in its key's set of `certain` (or the key is not
 * in it); 0 otherwise. -1 with an exception set (a key's __eq__ raised). */
static int pyf_note_certain(PyObject *certain, PyObject *k, PyObject *v, int *sure)
{
    PyObject *ok = PyDict_GetItemWithError(certain, k); /* borrowed */
    if (!ok)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyFrozenSet_CheckExact(ok)) {
        *sure = 0;
        return 0;
    }
    int in = PySet_Contains(ok, (PyObject *)Py_TYPE(v));
    if (in < 0)
        return -1;
    *sure = in;
    return 0;
}

PyObject *pyf_call_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "call_frame() takes 5 arguments");
        return NULL;
    }
    int sure;
    return pyf_call_frame_certain(args, NULL, &sure);
}

PyObject *pyf_call_frame_certain(PyObject *const *args, PyObject *certain, int *sure)
{
    PyObject *call_id = args[0], *run_id_json = args[1], *fragment = args[2], *a = args[3],
             *tmo = args[4]; /* all borrowed */
    *sure = certain && PyDict_CheckExact(certain);
    if (!*sure)
        certain = NULL;
    if (!PyUnicode_CheckExact(call_id) || !PyUnicode_CheckExact(run_id_json) ||
        !PyUnicode_CheckExact(fragment) || !PyDict_CheckExact(a) ||
        (tmo != Py_None && !PyLong_CheckExact(tmo)))
        Py_RETURN_NONE;
    const char *cid = PyUnicode_AsUTF8(call_id), *rid = PyUnicode_AsUTF8(run_id_json),
               *frag = PyUnicode_AsUTF8(fragment);
    if (!cid || !rid || !frag) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    struct pbuf b = {0};
    PyObject *out = NULL;
    pb_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":\"");
    pb_puts(&b, cid);
    pb_puts(&b, "\",\"method\":\"call_tool\",\"params\":{\"run_id\":");
    pb_puts(&b, rid);
    pb_puts(&b, ",");
    pb_puts(&b, frag);
    pb_puts(&b, ",\"args\":{");
    Py_ssize_t pos = 0;
    PyObject *k, *v; /* borrowed */
    int first = 1;
    while (PyDict_Next(a, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k))
            goto none;
        if (!first)
            pb_put(&b, ",", 1);
        first = 0;
        if (pb_json_str(&b, k) < 0)
            goto none;
        pb_put(&b, ":", 1);
        if (pb_json_scalar(&b, v) < 0)
            goto none;
        if (*sure && pyf_note_certain(certain, k, v, sure) < 0) {
            PyMem_Free(b.d);
            return NULL;
        }
    }
    if (PyDict_GET_SIZE(a) == 0)
        *sure = 1; /* nothing to check */
    pb_puts(&b, "},\"timeout_ms\":");
    if (tmo == Py_None) {
        pb_puts(&b, "null");
    } else if (pb_json_scalar(&b, tmo) < 0) {
        goto none;
    }
    pb_puts(&b, "}}");
    if (b.oom) {
        PyMem_Free(b.d);
        return PyErr_NoMemory();
    }
    if (!b.wide && PyUnicode_IS_ASCII(run_id_json) && PyUnicode_IS_ASCII(fragment) &&
        PyUnicode_IS_ASCII(call_id)) {
        out = PyUnicode_New((Py_ssize_t)b.n, 127); /* new ref; ASCII: a copy, no decode */
        if (out)
            memcpy(PyUnicode_DATA(out), b.d, b.n);
    } else {
        out = PyUnicode_DecodeUTF8(b.d, (Py_ssize_t)b.n, "strict"); /* new ref */
    }
    PyMem_Free(b.d);
    return out;
none:
    PyMem_Free(b.d);
    Py_RETURN_NONE;
}

const char pyf_text_result_doc[] =
    "text_result(raw, call_id) -> str | None\n--\n\n"
    "The text of the usual one-text-block reply to call_id, else None.";

static int pyf_text_span(PyObject *raw_obj, PyObject *id_obj, const char **text, size_t *text_len);

static const char TR_HEAD[] = CTL_REPLY_HEAD "\"";
static const char TR_MID[] = "\"" CTL_REPLY_MID "{\"content\":[{\"type\":\"text\",\"text\":\"";
static const char TR_TAIL[] = "\"}]}}";

PyObject *pyf_text_result(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "text_result() takes 2 arguments");
        return NULL;
    }
    const char *s;
    size_t n;
    if (!pyf_text_span(args[0], args[1], &s, &n))
        Py_RETURN_NONE;
    const char *p = s, *e = s + n;
    while ((p = (const char *)json_skip_plain((const unsigned char *)p, (const unsigned char *)e,
                                              0)) < e) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\' || c < 0x20)
            Py_RETURN_NONE;
        p++;
    }
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "strict"); /* new ref */
}

/* pyf_text_span_bytes on two exact str (0 for anything else). */
static int pyf_text_span(PyObject *raw_obj, PyObject *id_obj, const char **text, size_t *text_len)
{
    if (!PyUnicode_CheckExact(raw_obj) || !PyUnicode_CheckExact(id_obj))
        return 0;
    Py_ssize_t n, idn;
    const char *raw = PyUnicode_AsUTF8AndSize(raw_obj, &n);
    const char *id = PyUnicode_AsUTF8AndSize(id_obj, &idn);
    if (!raw || !id) {
        PyErr_Clear();
        return 0;
    }
    return pyf_text_span_bytes(raw, (size_t)n, id, (size_t)idn, text, text_len);
}

int pyf_text_span_bytes(const char *raw, size_t len, const char *id, size_t il, const char **text,
                        size_t *text_len)
{
    size_t h = sizeof(TR_HEAD) - 1, m = sizeof(TR_MID) - 1, t = sizeof(TR_TAIL) - 1;
    if (len < h + il + m + t || memcmp(raw, TR_HEAD, h) != 0 || memcmp(raw + h, id, il) != 0 ||
        memcmp(raw + h + il, TR_MID, m) != 0 || memcmp(raw + len - t, TR_TAIL, t) != 0)
        return 0;
    const char *s = raw + h + il + m, *e = raw + len - t;
    *text = s;
    *text_len = (size_t)(e - s);
    return 1;
}

PyObject *pyf_scalar_json(PyObject *v, size_t limit)
{
    struct pbuf b = {0};
    PyObject *out = NULL;
    if (pb_json_scalar(&b, v) < 0 || b.oom || (limit && b.n > limit))
        goto done;
    out = b.wide ? PyUnicode_DecodeUTF8(b.d, (Py_ssize_t)b.n, "strict") /* new ref */
                 : PyUnicode_New((Py_ssize_t)b.n, 127);
    if (!out)
        PyErr_Clear();
    else if (!b.wide)
        memcpy(PyUnicode_DATA(out), b.d, b.n);
done:
    PyMem_Free(b.d);
    return out;
}
