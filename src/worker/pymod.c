/* pymod — the `_codemcp` built-in module; see pymod.h and docs/pymod-api.md.
 *
 * Every function here is called with the GIL held and may be called from any Python
 * thread. Blocking waits drop the GIL around one wsclient wait; nothing in wsclient ever
 * calls back into Python. Reference ownership is noted where a reference is taken. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "pymod.h"

#include "fdcap.h"
#include "importer.h"
#include "pycall.h"
#include "pyfast.h"
#include "pyjson.h"
#include "pyreq.h"
#include "pypending.h"
#include "pyrun.h"
#include "pysigwake.h"
#include "util.h"
#include "wsclient.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Frames from this size up are written with the GIL released. */
#define PYM_BIG_SEND 65536

static long pym_worker_id;

/* Parses a timeout in seconds (None = wait forever) into milliseconds; -1 for forever.
 * Returns 0, or -1 with TypeError/ValueError set. */
static int pym_timeout_ms(PyObject *obj /* borrowed, may be NULL */, int64_t *ms)
{
    if (!obj || obj == Py_None) {
        *ms = -1;
        return 0;
    }
    double t = PyFloat_AsDouble(obj);
    if (t == -1.0 && PyErr_Occurred())
        return -1;
    if (isnan(t) || t < 0) {
        PyErr_SetString(PyExc_ValueError, "timeout must be a non-negative number or None");
        return -1;
    }
    *ms = t > 1e12 ? (int64_t)1e15 : (int64_t)ceil(t * 1000.0);
    return 0;
}

/* Wraps received text in a new str reference (frees text). Invalid UTF-8 is replaced
 * rather than raising: the runtime then answers with a parse error. */
static PyObject *pym_text(char *text, size_t len)
{
    PyObject *s = PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "replace"); /* new ref */
    free(text);
    return s;
}

/* The received text as the caller asked: a str (pym_text), or, with keep, the bytes themselves
 * in *keep and Ellipsis (new ref). */
static PyObject *pym_take(char *text, size_t len, struct pym_bytes *keep)
{
    if (!keep)
        return pym_text(text, len);
    keep->text = text;
    keep->len = len;
    return Py_NewRef(Py_Ellipsis);
}

static PyObject *pym_closed_error(void)
{
    PyErr_SetString(PyExc_ConnectionError, "the control connection to the gateway is closed");
    return NULL;
}

/* A reply already received for id, taken with the GIL held: a lookup, and the flush of a
 * cork (the caller is about to wait for it). Returns wsclient's code; *res is set (new
 * reference) only for WSC_OK. */
static int pym_ready_reply(const char *id, PyObject **res, struct pym_bytes *keep)
{
    char *text = NULL;
    size_t len = 0;
    int rc = wsc_wait_reply(id, 0, &text, &len);
    if (rc == WSC_OK)
        *res = pym_take(text, len, keep);
    return rc;
}

/* The shared wait of next_request (id == NULL) and wait_reply: one blocking wsclient wait
 * for the whole timeout, no slices. On the main thread, whatever should end it early wakes
 * it: a cancel or the run's deadline (wsclient sends SIGUSR1 and wakes the wait itself),
 * any other signal with a Python handler (EINTR, or the self-pipe of pysigwake.c if one
 * comes just before the wait blocks), the connection closing (WSC_CLOSED). Handlers
 * run here; the wait goes on unless one raised. Returns a new reference (str or None), or
 * NULL with an exception (ConnectionError, or whatever the signal handler raised, e.g.
 * RunInterrupted). `id` is borrowed from an argument the caller keeps alive. */
static PyObject *pym_wait(const char *id, PyObject *timeout_obj, struct pym_bytes *keep)
{
    int64_t timeout_ms, deadline = 0;
    PyObject *res = NULL;
    if (pym_timeout_ms(timeout_obj, &timeout_ms) < 0)
        return NULL;
    if (timeout_ms >= 0)
        deadline = now_ms() + timeout_ms;
    int on_main = wsc_on_main_thread();
    /* A reply that is here already (the usual case once a burst's replies come in) is taken
     * as take_reply takes it, without dropping the GIL. */
    if (id && pym_ready_reply(id, &res, keep) == WSC_OK)
        return res;

    for (;;) {
        /* The pipe installed just now: a signal caught before it left no byte. */
        if (on_main && psw_begin() && PyErr_CheckSignals() < 0)
            break;
        int ms = -1;
        if (timeout_ms >= 0) {
            int64_t left = deadline - now_ms();
            ms = left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
        }
        char *text = NULL;
        size_t len = 0;
        int rc;
        Py_BEGIN_ALLOW_THREADS;
        rc = id ? wsc_wait_reply(id, ms, &text, &len) : wsc_next_request(ms, &text, &len);
        Py_END_ALLOW_THREADS;
        if (rc == WSC_OK) {
            res = pym_take(text, len, keep);
            break;
        }
        if (rc == WSC_CLOSED) {
            pym_closed_error();
            break;
        }
        if (rc == WSC_SIGNAL && on_main)
            psw_drain();
        if (timeout_ms >= 0 && now_ms() >= deadline) {
            res = Py_NewRef(Py_None);
            break;
        }
        if (PyErr_CheckSignals() < 0)
            break; /* e.g. RunInterrupted raised by the SIGUSR1 handler */
    }
    return res;
}

PyObject *pym_next_text(void)
{
    return pym_wait(NULL, NULL, NULL);
}

/* Borrowed UTF-8 of a str argument, or NULL with TypeError, or ValueError for an embedded NUL
 * (as PyArg_Parse's "s" refuses it: the C side would see only the part before it, so an id
 * "c1\0x" would match call c1's reply). */
static const char *pym_str_arg(PyObject *arg, const char *fn)
{
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "%s() takes a str, not %.100s", fn, Py_TYPE(arg)->tp_name);
        return NULL;
    }
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(arg, &n);
    if (s && strlen(s) != (size_t)n) {
        PyErr_SetString(PyExc_ValueError, "embedded null character");
        return NULL;
    }
    return s;
}

/* The module and its own wait_reply and send (strong references: compared by address, so
 * they must not be freed and their addresses reused), for the SDK call path's direct calls. */
static PyObject *pym_self, *pym_orig_wait_reply, *pym_orig_send, *pym_wait_reply_s, *pym_send_s;

/* Whether `t.name` is certain to be this module's own function: t is the module, still of
 * the plain module type (agent code may assign its __class__ a subclass whose descriptor
 * answers for `name`), and the module's dict still holds the original (agent code may
 * replace it). Otherwise the caller goes through the attribute, as Python would. */
static int pym_is_self(PyObject *t, PyObject *name, PyObject *orig)
{
    if (!pym_self || t != pym_self || !Py_IS_TYPE(t, &PyModule_Type))
        return 0;
    PyObject *f = PyDict_GetItemWithError(PyModule_GetDict(t), name); /* borrowed */
    if (!f)
        PyErr_Clear();
    return f == orig;
}

PyObject *pym_wait_reply_direct(PyObject *t, PyObject *id, PyObject *timeout, int *indirect,
                                struct pym_bytes *keep)
{
    *indirect = 0;
    if (!PyUnicode_CheckExact(id) || !pym_is_self(t, pym_wait_reply_s, pym_orig_wait_reply)) {
        *indirect = 1;
        return NULL;
    }
    const char *s = pym_str_arg(id, "wait_reply"); /* borrowed: the caller keeps id alive */
    return s ? pym_wait(s, timeout, keep) : NULL;
}

int pym_send_direct(PyObject *t, PyObject *text)
{
    if (!pym_is_self(t, pym_send_s, pym_orig_send))
        return -2;
    return pym_send_text(text);
}

PyDoc_STRVAR(pym_send_doc, "send(text: str) -> None\n--\n\n"
                           "Write one text frame to the gateway (waits only for socket "
                           "buffer space).");

static PyObject *pym_send(PyObject *self, PyObject *arg /* borrowed */)
{
    (void)self;
    return pym_send_text(arg) < 0 ? NULL : Py_NewRef(Py_None);
}

int pym_send_text(PyObject *arg /* borrowed */)
{
    Py_ssize_t len;
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "send() takes a str, not %.100s", Py_TYPE(arg)->tp_name);
        return -1;
    }
    const char *utf8 = PyUnicode_AsUTF8AndSize(arg, &len); /* borrowed from arg */
    if (!utf8)
        return -1;
    /* Small frames are written with the GIL held: releasing it costs more than the write,
     * and a GIL-holding writer never waits for anything that needs the GIL. A large frame
     * may wait for socket buffer space: let other threads run (arg, which the caller keeps
     * alive, is immutable, so its buffer stays valid). */
    int rc;
    if (len < PYM_BIG_SEND) {
        rc = wsc_send(utf8, (size_t)len);
    } else {
        Py_BEGIN_ALLOW_THREADS;
        rc = wsc_send(utf8, (size_t)len);
        Py_END_ALLOW_THREADS;
    }
    if (rc == -2) {
        PyErr_NoMemory();
        return -1;
    }
    if (rc < 0) {
        pym_closed_error();
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(pym_next_request_doc,
             "next_request(timeout: float | None = None) -> str | None\n--\n\n"
             "Next gateway request as raw JSON text; None on timeout.\n"
             "Raises ConnectionError once the control connection is gone.");

static PyObject *pym_next_request(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"timeout", NULL};
    PyObject *timeout = NULL; /* borrowed */
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:next_request", kwlist, &timeout))
        return NULL;
    return pym_wait(NULL, timeout, NULL);
}

PyDoc_STRVAR(pym_wait_reply_doc,
             "wait_reply(id: str, timeout: float | None = None) -> str | None\n--\n\n"
             "The JSON-RPC response with this id (raw text, then forgotten); None on\n"
             "timeout. Raises ConnectionError if the connection is gone.");

static PyObject *pym_wait_reply(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"id", "timeout", NULL};
    const char *id;           /* borrowed from the argument tuple */
    PyObject *timeout = NULL; /* borrowed */
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|O:wait_reply", kwlist, &id, &timeout))
        return NULL;
    return pym_wait(id, timeout, NULL);
}

PyDoc_STRVAR(pym_take_reply_doc, "take_reply(id: str) -> str | None\n--\n\n"
                                 "Non-blocking wait_reply.");

static PyObject *pym_take_reply(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *id = pym_str_arg(arg, "take_reply");
    if (!id)
        return NULL;
    PyObject *res = NULL;
    int rc = pym_ready_reply(id, &res, NULL);
    if (rc == WSC_OK)
        return res;
    if (rc == WSC_CLOSED)
        return pym_closed_error();
    Py_RETURN_NONE;
}

PyDoc_STRVAR(pym_forget_doc, "forget(id: str) -> None\n--\n\n"
                             "Drop the reply for id now, or when it arrives later.");

static PyObject *pym_forget(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *id = pym_str_arg(arg, "forget");
    if (!id)
        return NULL;
    wsc_forget(id);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(pym_set_current_run_doc,
             "set_current_run(run_id: str | None) -> None\n--\n\n"
             "Which run executes on the main thread; clears any pending interrupt.");

static PyObject *pym_set_current_run(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *run_id = NULL;
    if (arg != Py_None && !(run_id = pym_str_arg(arg, "set_current_run")))
        return NULL;
    wsc_set_current_run(run_id);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(pym_interrupt_reason_doc,
             "interrupt_reason() -> str | None\n--\n\n"
             "The pending interrupt reason ('timeout' or 'cancelled'), cleared on read.");

static PyObject *pym_interrupt_reason(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    char *reason = wsc_interrupt_reason();
    if (!reason)
        Py_RETURN_NONE;
    PyObject *s = PyUnicode_FromString(reason); /* new ref */
    free(reason);
    return s;
}

PyDoc_STRVAR(pym_worker_id_doc, "worker_id() -> int\n--\n\n"
                                "This worker's slot number (CODEMCP_WORKER_ID).");

static PyObject *pym_worker_id_fn(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLong(pym_worker_id);
}

PyDoc_STRVAR(pym_embedded_source_doc,
             "embedded_source(name: str) -> tuple[str, bool] | None\n--\n\n"
             "Source and is-package flag of a module compiled into the worker, or None.");

static PyObject *pym_embedded_source(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *name = pym_str_arg(arg, "embedded_source");
    const char *source;
    int is_package;
    if (!name)
        return NULL;
    if (imp_lookup(name, &source, &is_package) < 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(sO)", source, is_package ? Py_True : Py_False); /* new ref */
}

PyDoc_STRVAR(pym_embedded_code_doc,
             "embedded_code(name: str) -> bytes | None\n--\n\n"
             "The marshalled code object of a module compiled into the worker, or None (not "
             "embedded, or built by a Python with another magic number).");

static PyObject *pym_embedded_code(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *name = pym_str_arg(arg, "embedded_code");
    const unsigned char *code;
    size_t len;
    if (!name)
        return NULL;
    if (imp_code(name, &code, &len) < 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)code, (Py_ssize_t)len); /* new ref */
}

PyDoc_STRVAR(pym_fd_capture_begin_doc,
             "fd_capture_begin(limit: int) -> None\n--\n\n"
             "A run starts: what reaches fds 1 and 2 is kept for it, up to limit bytes each.");

static PyObject *pym_fd_capture_begin(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_ssize_t limit = PyLong_AsSsize_t(arg);
    if (limit < 0 && PyErr_Occurred())
        return NULL;
    fdcap_begin(limit < 0 ? 0 : (size_t)limit);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(pym_fd_capture_end_doc,
             "fd_capture_end() -> tuple[bytes, int, bytes, int]\n--\n\n"
             "The run ended: (stdout bytes, bytes cut, stderr bytes, bytes cut) written to fds "
             "1 and 2 during it.");

static PyObject *pym_fd_capture_end(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    char *out, *err;
    size_t out_len, out_cut, err_len, err_cut;
    fflush(stdout); /* C code's buffered printf output belongs to the run too */
    fdcap_end(&out, &out_len, &out_cut, &err, &err_len, &err_cut); /* never waits on Python */
    PyObject *r =
        Py_BuildValue("(y#ny#n)", out ? out : "", (Py_ssize_t)out_len, (Py_ssize_t)out_cut,
                      err ? err : "", (Py_ssize_t)err_len, (Py_ssize_t)err_cut); /* new ref */
    free(out);
    free(err);
    return r;
}

PyDoc_STRVAR(pym_log_fd_doc, "log_fd() -> int\n--\n\n"
                             "The descriptor of the worker's log (the gateway's log pipe).");

static PyObject *pym_log_fd(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLong(fdcap_log_fd());
}

static PyMethodDef pym_methods[] = {
    {"fd_capture_begin", pym_fd_capture_begin, METH_O, pym_fd_capture_begin_doc},
    {"fd_capture_end", pym_fd_capture_end, METH_NOARGS, pym_fd_capture_end_doc},
    {"log_fd", pym_log_fd, METH_NOARGS, pym_log_fd_doc},
    {"send", pym_send, METH_O, pym_send_doc},
    {"next_request", (PyCFunction)(void (*)(void))pym_next_request, METH_VARARGS | METH_KEYWORDS,
     pym_next_request_doc},
    {"wait_reply", (PyCFunction)(void (*)(void))pym_wait_reply, METH_VARARGS | METH_KEYWORDS,
     pym_wait_reply_doc},
    {"take_reply", pym_take_reply, METH_O, pym_take_reply_doc},
    {"forget", pym_forget, METH_O, pym_forget_doc},
    {"set_current_run", pym_set_current_run, METH_O, pym_set_current_run_doc},
    {"interrupt_reason", pym_interrupt_reason, METH_NOARGS, pym_interrupt_reason_doc},
    {"worker_id", pym_worker_id_fn, METH_NOARGS, pym_worker_id_doc},
    {"embedded_source", pym_embedded_source, METH_O, pym_embedded_source_doc},
    {"embedded_code", pym_embedded_code, METH_O, pym_embedded_code_doc},
    /* the SDK call path's shortcuts (pyfast.c) */
    {"call_frame", (PyCFunction)(void (*)(void))pyf_call_frame, METH_FASTCALL, pyf_call_frame_doc},
    {"text_result", (PyCFunction)(void (*)(void))pyf_text_result, METH_FASTCALL,
     pyf_text_result_doc},
    {"issue", (PyCFunction)(void (*)(void))pyc_issue, METH_FASTCALL, pyc_issue_doc},
    {"loads_fast", pyj_loads_fast, METH_O, pyj_loads_fast_doc}, /* pyjson.c */
    {"scan_run", pyq_scan_run_py, METH_O, pyq_scan_run_doc},    /* pyreq.c */
    {"serve", pyr_serve, METH_O, pyr_serve_doc},                /* pyrun.c */
    {"serve_stats", pyr_serve_stats, METH_NOARGS, pyr_serve_stats_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef pym_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_codemcp",
    .m_doc = "The codemcp worker host: control channel to the gateway, run interrupts and "
             "the embedded runtime sources.",
    .m_size = -1,
    .m_methods = pym_methods,
};

static PyObject *pym_init(void)
{
    PyObject *m = PyModule_Create(&pym_module); /* new ref */
    if (m && (pyp_add_type(m) < 0 || pyc_add_type(m) < 0))
        Py_CLEAR(m);
    if (m && !pym_self) { /* once: the module lives as long as the interpreter */
        pym_wait_reply_s = PyUnicode_InternFromString("wait_reply");
        pym_send_s = PyUnicode_InternFromString("send");
        pym_orig_wait_reply = PyObject_GetAttrString(m, "wait_reply"); /* new refs, kept */
        pym_orig_send = PyObject_GetAttrString(m, "send");
        if (pym_wait_reply_s && pym_send_s && pym_orig_wait_reply && pym_orig_send)
            pym_self = m; /* borrowed */
        else
            PyErr_Clear(); /* no direct calls: every call goes through the attributes */
    }
    return m;
}

int pym_register(long worker_id)
{
    pym_worker_id = worker_id;
    return PyImport_AppendInittab("_codemcp", pym_init) == 0 ? 0 : -1;
}

void pym_set_worker_id(long worker_id)
{
    pym_worker_id = worker_id;
}
