/* pyreq — see pyreq.h. Every reference taken is released on every path; a frame it does not
 * take leaves no exception set. */
#include "pyreq.h"
#include "codemcp_limits.h"
#include "pyjson.h"

#include <string.h>

/* What a params member holds, and what this reader accepts for it. */
enum {
    V_STR,   /* a string (kept: code, run_id, namespace; checked: namespace_note) */
    V_INT,   /* an integer (timeout_ms: only the Python steps read it, from pyq_params) */
    V_BOOL,  /* true or false */
    V_SIZE,  /* null or an integer */
    V_EMPTY, /* null or [] */
    V_ALLOW  /* null or a list of strings */
};

enum {
    P_RUN_ID,
    P_NAMESPACE,
    P_CODE,
    P_TIMEOUT,
    P_DRY_RUN,
    P_ALLOW,
    P_ENFORCE,
    P_MAX_OUTPUT,
    P_MAX_RESULT,
    P_RESET,
    P_VALIDATE,
    P_DISABLED,
    P_UNAVAILABLE,
    P_NOTE,
    P_FRESH,
    P_DROP,
    P_COUNT
};

static const struct {
    const char *name;
    size_t len;
    int kind;
} PK[P_COUNT] = {
#define M(name, kind)                                                                              \
    {                                                                                              \
        name, sizeof(name) - 1, kind                                                               \
    }
    M("run_id", V_STR),
    M("namespace", V_STR),
    M("code", V_STR),
    M("timeout_ms", V_INT),
    M("dry_run", V_BOOL),
    M("allow_mutations", V_ALLOW),
    M("enforce_mutations", V_BOOL),
    M("max_output_bytes", V_SIZE),
    M("max_result_bytes", V_SIZE),
    M("reset", V_BOOL),
    M("validate", V_BOOL),
    M("disabled", V_EMPTY),
    M("unavailable", V_EMPTY),
    M("namespace_note", V_STR),
    M("namespace_fresh", V_BOOL),
    M("drop_namespaces", V_EMPTY),
#undef M
};

/* At a key's opening quote: its bytes (no escape) and the cursor past the ':'; NULL when the
 * key has an escape or the text is not an object member here. */
static const char *pyq_key(struct pyj *j, size_t *n)
{
    const char *s = j->p + 1, *q = s;
    while (q < j->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
        q++;
    if (q >= j->end || *q != '"')
        return NULL;
    j->p = q + 1;
    pyj_ws(j);
    if (j->p >= j->end || *j->p != ':')
        return NULL;
    j->p++;
    pyj_ws(j);
    *n = (size_t)(q - s);
    return s;
}

#define pyq_word(j, w) pyq_bytes(j, w, sizeof(w) - 1)
static int pyq_bytes(struct pyj *j, const char *w, size_t n)
{
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n))
        return 0;
    j->p += n;
    return 1;
}

/* After a member: 1 when another follows, 0 at `close`, -1 otherwise (as pyjson). */
static int pyq_next(struct pyj *j, char close)
{
    pyj_ws(j);
    if (j->p < j->end && (*j->p == ',' || *j->p == close))
        return *j->p++ == ',';
    return -1;
}

/* At '[': the list of strings (new ref), or NULL. */
static PyObject *pyq_strings(struct pyj *j)
{
    PyObject *l = PyList_New(0);
    if (!l)
        return NULL;
    j->p++;
    pyj_ws(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        return l;
    }
    for (;;) {
        pyj_ws(j);
        PyObject *s = j->p < j->end && *j->p == '"' ? pyj_str(j) : NULL;
        if (!s || PyList_Append(l, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(l);
            return NULL;
        }
        Py_DECREF(s);
        int more = pyq_next(j, ']');
        if (more == 0)
            return l;
        if (more < 0) {
            Py_DECREF(l);
            return NULL;
        }
    }
}

/* One params member's value, at its first byte. 0, or -1: not a plain run. */
static int pyq_value(struct pyj *j, int which, struct pyq_run *q, PyObject **keep)
{
    long long v;
    if (j->p >= j->end)
        return -1;
    switch (PK[which].kind) {
    case V_STR:
        if (*j->p != '"' || !(*keep = pyj_str(j)))
            return -1;
        if (which == P_NOTE)
            Py_CLEAR(*keep);
        return 0;
    case V_INT:
        return pyj_ll(j, &v);
    case V_BOOL: {
        int b = pyq_word(j, "true") ? 1 : pyq_word(j, "false") ? 0 : -1;
        int *to[P_COUNT] = {[P_DRY_RUN] = &q->dry,
                            [P_RESET] = &q->reset,
                            [P_VALIDATE] = &q->validate,
                            [P_FRESH] = &q->fresh};
        if (b < 0 || (which == P_ENFORCE && b))
            return -1; /* enforce_mutations: the Python path compares the threads */
        if (to[which])
            *to[which] = b;
        return 0;
    }
    case V_SIZE:
        if (pyq_word(j, "null"))
            return 0;
        if (pyj_ll(j, &v) < 0 || v > PY_SSIZE_T_MAX || v < PY_SSIZE_T_MIN)
            return -1;
        *(which == P_MAX_OUTPUT ? &q->max_output : &q->max_result) = (Py_ssize_t)v;
        return 0;
    case V_EMPTY:
        if (pyq_word(j, "null"))
            return 0;
        if (*j->p != '[')
            return -1;
        j->p++;
        pyj_ws(j);
        return pyq_word(j, "]") ? 0 : -1;
    default: /* V_ALLOW */
        if (pyq_word(j, "null"))
            return 0;
        if (*j->p != '[' || !(*keep = pyq_strings(j)))
            return -1;
        Py_SETREF(q->allow, *keep);
        *keep = NULL;
        return 0;
    }
}

/* At params' '{'. 0, or -1: not a plain run. */
static int pyq_params_scan(struct pyj *j, struct pyq_run *q)
{
    unsigned seen = 0;
    int guess = 0;
    j->p++;
    pyj_ws(j);
    if (j->p < j->end && *j->p == '}')
        return -1; /* no code */
    for (;;) {
        size_t n;
        int which = -1;
        pyj_ws(j);
        /* the gateway writes the members in PK's order: try the next one's bytes first */
        if (guess < P_COUNT && (size_t)(j->end - j->p) > PK[guess].len + 1 && j->p[0] == '"' &&
            j->p[PK[guess].len + 1] == '"' && !memcmp(j->p + 1, PK[guess].name, PK[guess].len)) {
            j->p += PK[guess].len + 2;
            pyj_ws(j);
            if (j->p >= j->end || *j->p != ':')
                return -1;
            j->p++;
            pyj_ws(j);
            which = guess;
        } else {
            const char *k = j->p < j->end && *j->p == '"' ? pyq_key(j, &n) : NULL;
            for (int i = 0; k && i < P_COUNT && which < 0; i++)
                if (PK[i].len == n && !memcmp(PK[i].name, k, n))
                    which = i;
        }
        guess = which + 1;
        if (which < 0 || (seen & (1u << which)))
            return -1; /* an unknown member or a duplicate */
        seen |= 1u << which;
        PyObject *got = NULL;
        if (pyq_value(j, which, q, &got) < 0) {
            Py_XDECREF(got);
            return -1;
        }
        if (which == P_RUN_ID)
            q->run_id = got;
        else if (which == P_NAMESPACE)
            q->session = got;
        else if (which == P_CODE)
            q->code = got;
        int more = pyq_next(j, '}');
        if (more == 0)
            break;
        if (more < 0)
            return -1;
    }
    if (!q->code || !q->run_id || !q->session || PyUnicode_GET_LENGTH(q->session) == 0)
        return -1;
    return 0;
}

/* The frame's top level. 0, or -1: not a plain run. */
static int pyq_top(struct pyj *j, struct pyq_run *q)
{
    enum { T_JSONRPC = 1, T_ID = 2, T_METHOD = 4, T_PARAMS = 8 };
    unsigned seen = 0;
    pyj_ws(j);
    if (j->p >= j->end || *j->p != '{')
        return -1;
    j->p++;
    for (;;) {
        size_t n;
        pyj_ws(j);
        const char *k = j->p < j->end && *j->p == '"' ? pyq_key(j, &n) : NULL;
        unsigned t = !k                                   ? 0
                     : n == 7 && !memcmp(k, "jsonrpc", 7) ? T_JSONRPC
                     : n == 2 && !memcmp(k, "id", 2)      ? T_ID
                     : n == 6 && !memcmp(k, "method", 6)  ? T_METHOD
                     : n == 6 && !memcmp(k, "params", 6)  ? T_PARAMS
                                                          : 0;
        if (!t || (seen & t) || j->p >= j->end)
            return -1;
        seen |= t;
        if (t == T_JSONRPC) {
            if (!pyq_word(j, "\"2.0\""))
                return -1;
        } else if (t == T_ID) {
            if (pyj_ll(j, &q->id) < 0)
                return -1;
        } else if (t == T_METHOD) {
            if (!pyq_word(j, "\"run\""))
                return -1;
        } else if (*j->p != '{' || pyq_params_scan(j, q) < 0) {
            return -1;
        }
        int more = pyq_next(j, '}');
        if (more == 0)
            break;
        if (more < 0)
            return -1;
    }
    pyj_ws(j);
    return j->p == j->end && (seen & (T_ID | T_METHOD | T_PARAMS)) == (T_ID | T_METHOD | T_PARAMS)
               ? 0
               : -1;
}

int pyq_scan_run(PyObject *text, struct pyq_run *q)
{
    Py_ssize_t n;
    memset(q, 0, sizeof(*q));
    const char *s = PyUnicode_CheckExact(text) ? PyUnicode_AsUTF8AndSize(text, &n) : NULL;
    if (!s) {
        PyErr_Clear();
        return 0;
    }
    struct pyj j = {.p = s, .end = s + n};
    q->allow = Py_NewRef(Py_None);
    q->fresh = 1;
    q->max_output = q->max_result = LIM_RUN_DEFAULT_MAX_BYTES;
    int rc = pyq_top(&j, q);
    PyMem_Free(j.buf);
    Py_XDECREF(j.memo);
    if (rc < 0) {
        PyErr_Clear();
        pyq_release(q);
        return 0;
    }
    return 1;
}

void pyq_release(struct pyq_run *q)
{
    Py_CLEAR(q->code);
    Py_CLEAR(q->run_id);
    Py_CLEAR(q->session);
    Py_CLEAR(q->allow);
}

PyObject *pyq_params(PyObject *text)
{
    PyObject *msg = pyj_loads_fast(NULL, text), *params = NULL; /* new ref */
    if (msg && PyDict_CheckExact(msg))
        params = PyDict_GetItemString(msg, "params"); /* borrowed */
    if (params && PyDict_CheckExact(params))
        Py_INCREF(params);
    else
        params = NULL;
    Py_XDECREF(msg);
    if (!params && !PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "the run request has no params object");
    return params;
}

const char pyq_scan_run_doc[] =
    "scan_run(text: str) -> dict | None: the plain run request's fields as the C loop reads them.";

PyObject *pyq_scan_run_py(PyObject *self, PyObject *text)
{
    (void)self;
    struct pyq_run q;
    if (!pyq_scan_run(text, &q))
        Py_RETURN_NONE;
    PyObject *d = Py_BuildValue(
        "{s:L,s:O,s:O,s:O,s:O,s:N,s:N,s:N,s:N,s:n,s:n}", "id", q.id, "code", q.code, "run_id",
        q.run_id, "namespace", q.session, "allow_mutations", q.allow, "validate",
        PyBool_FromLong(q.validate), "dry_run", PyBool_FromLong(q.dry), "reset",
        PyBool_FromLong(q.reset), "namespace_fresh", PyBool_FromLong(q.fresh), "max_output_bytes",
        q.max_output, "max_result_bytes", q.max_result);
    pyq_release(&q);
    return d;
}
