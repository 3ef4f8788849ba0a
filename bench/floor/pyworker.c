/* floor-pyworker — the floor worker plus the Python an embedded-CPython worker cannot avoid
 * (bench/floor.mjs, arm floor-python).
 *
 * Same protocol, transport and topology as floor-worker (worker.c: `run <workload>` from the
 * gateway on fd 3, WebSocket-framed `call <wid> <a> <b>` lines out, `<wid> <reply>` lines
 * back, `done <total>` at the end), but the workload is a Python program run in CPython
 * embedded here, as codemcp-worker does, and nothing else of the product: no codemcp_rt, no
 * validation, no JSON parser, no second thread. Per execute it does only:
 *   - the program text (env FLOOR_PY_<workload>, bench/floor.mjs passes bench/execute.mjs's
 *     programs) becomes a str, is looked up in a code cache keyed by that text (compiled on a
 *     miss, as codemcp's runner caches), and is exec'd in the session's globals dict;
 *   - every SDK call is `everything_get_sum(a=.., b=..)`, a C function: it reads a and b,
 *     sends the call frame at once and returns a Pending (C type) without waiting, so calls
 *     made before any value is read overlap (codemcp's Pending semantics, which conc50 needs);
 *   - str(pending) blocks for that call's reply (replies of other calls that arrive first are
 *     kept for theirs) and returns the reply's text content as a Python str, cut out of the
 *     reply line with the same kind of string search floor-worker uses (no JSON parse);
 *   - after the program (also after a failed one): calls still in flight are waited for;
 *     `result` is read from the globals (an int as is; anything else through str(), the sum
 *     parsed from its text, as floor-worker parses replies) and answered as `done <total>`;
 *     a Python error answers `fail <type>`.
 * It must do no less than that (a run executes the program and gets each reply into Python
 * as an object) and no more. Exits 0 when the gateway closes fd 3. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "lineio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GW_FD     3
#define MAX_CALLS 256 /* calls per execute */

static struct lines in;
static struct wsin raw;
static PyObject *replies[MAX_CALLS]; /* text of each call's reply, by wid, this execute */
static int n_issued;                 /* calls sent this execute */
static long epoch;                   /* which execute a Pending belongs to */

/* ---- replies ----------------------------------------------------------------------------- */

/* Reads one reply line and files its text under its wid. 0, or -1 with a Python error. */
static int read_one_reply(void)
{
    size_t n;
    char *line;
    while (!(line = lines_next(&in, &n)))
        if (ws_fill(&in, &raw, GW_FD) <= 0) {
            PyErr_SetString(PyExc_ConnectionError, "gateway link lost");
            return -1;
        }
    char *end;
    long wid = strtol(line, &end, 10);
    if (end == line || wid < 0 || wid >= n_issued || replies[wid]) {
        PyErr_SetString(PyExc_RuntimeError, "reply for no call in flight");
        return -1;
    }
    PyObject *text;
    const char *t = strstr(end, "\"text\":\"");
    const char *q = t ? strchr(t + 8, '"') : NULL;
    if (strstr(end, "\"isError\":true") || !q)
        text = PyErr_Format(PyExc_RuntimeError, "tool call failed: %.200s", end);
    else
        text = PyUnicode_FromStringAndSize(t + 8, q - (t + 8));
    if (!text)
        return -1;
    replies[wid] = text;
    return 0;
}

/* ---- Pending ----------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD long epoch;
    int wid;
    PyObject *text; /* the reply's text once read */
} Pending;

static PyObject *pending_str(PyObject *self)
{
    Pending *p = (Pending *)self;
    if (!p->text) {
        if (p->epoch != epoch) {
            PyErr_SetString(PyExc_RuntimeError, "call of an earlier run");
            return NULL;
        }
        while (!replies[p->wid])
            if (read_one_reply() < 0)
                return NULL;
        p->text = replies[p->wid];
        Py_INCREF(p->text);
    }
    Py_INCREF(p->text);
    return p->text;
}

static void pending_dealloc(PyObject *self)
{
    Py_XDECREF(((Pending *)self)->text);
    Py_TYPE(self)->tp_free(self);
}

static PyTypeObject PendingType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "floor.Pending",
    .tp_basicsize = sizeof(Pending),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_str = pending_str,
    .tp_dealloc = pending_dealloc,
};

/* everything_get_sum(a=, b=): sends the call, returns its Pending. */
static PyObject *get_sum(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"a", "b", NULL};
    long a, b;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ll", names, &a, &b))
        return NULL;
    if (n_issued >= MAX_CALLS) {
        PyErr_SetString(PyExc_RuntimeError, "too many calls");
        return NULL;
    }
    char line[80];
    int n = snprintf(line, sizeof(line), "call %d %ld %ld\n", n_issued, a, b);
    if (ws_write(GW_FD, line, (size_t)n, 1) < 0) {
        PyErr_SetString(PyExc_ConnectionError, "gateway link lost");
        return NULL;
    }
    Pending *p = PyObject_New(Pending, &PendingType);
    if (!p)
        return NULL;
    p->epoch = epoch;
    p->wid = n_issued++;
    p->text = NULL;
    return (PyObject *)p;
}

static PyMethodDef get_sum_def = {"everything_get_sum", (PyCFunction)(void (*)(void))get_sum,
                                  METH_VARARGS | METH_KEYWORDS,
                                  "get-sum(a, b) of server-everything"};

/* ---- runs -------------------------------------------------------------------------------- */

static PyObject *globals; /* the session's namespace */
static PyObject *codes;   /* program text -> code object */

/* The total of a result: an int as is, else the number after the last " is " of str(). */
static int result_total(PyObject *res, long *total)
{
    if (PyLong_Check(res)) {
        *total = PyLong_AsLong(res);
        return *total == -1 && PyErr_Occurred() ? -1 : 0;
    }
    PyObject *s = PyObject_Str(res);
    const char *c = s ? PyUnicode_AsUTF8(s) : NULL;
    const char *is = c ? strstr(c, " is ") : NULL;
    char *end = NULL;
    if (is)
        *total = strtol(is + 4, &end, 10);
    int rc = is && end != is + 4 ? 0 : -1;
    if (c && rc < 0)
        PyErr_SetString(PyExc_ValueError, "result is not a sum");
    Py_XDECREF(s);
    return rc;
}

/* Waits for the replies of calls the program never read (also when it failed, so that no
 * reply of this run is left for the next); keeps the program's error if it has one. */
static int drain_calls(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int rc = 0;
    for (int i = 0; i < n_issued && rc == 0; i++)
        while (!replies[i] && (rc = read_one_reply()) == 0)
            ;
    if (type) {
        PyErr_Clear();
        PyErr_Restore(type, value, tb);
    }
    return rc;
}

/* Runs one program. 0 with its total, -1 with a Python error set. */
static int run_program(const char *text, long *total)
{
    int rc = -1;
    PyObject *src = NULL, *code, *out = NULL, *res;
    epoch++;
    n_issued = 0;
    if (!(src = PyUnicode_FromString(text)))
        goto cleanup;
    code = PyDict_GetItemWithError(codes, src); /* borrowed */
    if (!code) {
        if (PyErr_Occurred() || !(code = Py_CompileString(text, "<agent>", Py_file_input)))
            goto cleanup;
        int bad = PyDict_SetItem(codes, src, code);
        Py_DECREF(code); /* the cache holds it */
        if (bad < 0)
            goto cleanup;
    }
    out = PyEval_EvalCode(code, globals, globals);
    if (drain_calls() < 0 || !out)
        goto cleanup;
    res = PyDict_GetItemString(globals, "result"); /* borrowed */
    if (!res) {
        PyErr_SetString(PyExc_NameError, "no result");
        goto cleanup;
    }
    rc = result_total(res, total);
cleanup:
    for (int i = 0; i < n_issued; i++)
        Py_CLEAR(replies[i]);
    if (PyDict_GetItemString(globals, "result") && PyDict_DelItemString(globals, "result") < 0)
        rc = -1;
    Py_XDECREF(out);
    Py_XDECREF(src);
    return rc;
}

static int init_python(void)
{
    PyPreConfig pre;
    PyConfig config;
    PyPreConfig_InitIsolatedConfig(&pre);
    pre.utf8_mode = 1;
    PyStatus st = Py_PreInitialize(&pre);
    if (PyStatus_Exception(st))
        return -1;
    PyConfig_InitIsolatedConfig(&config);
    config.write_bytecode = 0;
    st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st) || PyType_Ready(&PendingType) < 0)
        return -1;
    PyObject *fn = PyCFunction_New(&get_sum_def, NULL);
    globals = PyDict_New();
    codes = PyDict_New();
    int rc = fn && globals && codes &&
                     PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) == 0 &&
                     PyDict_SetItemString(globals, "everything_get_sum", fn) == 0
                 ? 0
                 : -1;
    Py_XDECREF(fn);
    return rc;
}

int main(void)
{
    int status = 1;
    ws_fill_polls = getenv("FLOOR_POLL_WAIT") && *getenv("FLOOR_POLL_WAIT") == '1';
    if (init_python() < 0) {
        fprintf(stderr, "floor-pyworker: cannot start Python\n");
        return 1;
    }
    for (;;) {
        size_t n;
        char *line;
        while (!(line = lines_next(&in, &n))) {
            ssize_t r = ws_fill(&in, &raw, GW_FD);
            if (r == 0)
                status = 0;
            if (r <= 0)
                goto cleanup;
        }
        if (strncmp(line, "run ", 4) != 0) {
            fprintf(stderr, "floor-pyworker: unexpected line: %s\n", line);
            goto cleanup;
        }
        char var[40];
        snprintf(var, sizeof(var), "FLOOR_PY_%s", line + 4);
        const char *text = getenv(var);
        long total = 0;
        char out[128];
        int len;
        if (!text) {
            len = snprintf(out, sizeof(out), "fail unknown workload\n");
        } else if (run_program(text, &total) == 0) {
            len = snprintf(out, sizeof(out), "done %ld\n", total);
        } else {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            len = snprintf(out, sizeof(out), "fail %s\n",
                           type ? ((PyTypeObject *)type)->tp_name : "error");
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        }
        if (ws_write(GW_FD, out, (size_t)len, 1) < 0)
            goto cleanup;
    }
cleanup:
    Py_CLEAR(globals);
    Py_CLEAR(codes);
    if (Py_FinalizeEx() < 0)
        status = 1;
    lines_free(&in);
    ws_free(&raw);
    return status;
}
