/* pymod — the `_codemcp` built-in module; see pymod.h and docs/pymod-api.md.
 *
 * Every function here is called with the GIL held and may be called from any Python
 * thread; the channel's waits and sends are pychan.c's. Reference ownership is noted where
 * a reference is taken. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "pymod.h"

#include "fdcap.h"
#include "importer.h"
#include "pycall.h"
#include "pychan.h"
#include "pyfast.h"
#include "pyjson.h"
#include "pyreq.h"
#include "pypending.h"
#include "pyrun.h"
#include "wsclient.h"

#include <stdlib.h>
#include <string.h>

static long pym_worker_id;

PyDoc_STRVAR(pym_send_doc, "send(text: str) -> None\n--\n\n"
                           "Write one text frame to the gateway (waits only for socket "
                           "buffer space).");

static PyObject *pym_send(PyObject *self, PyObject *arg /* borrowed */)
{
    (void)self;
    return pch_send_text(arg) < 0 ? NULL : Py_NewRef(Py_None);
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
    return pch_wait(NULL, timeout, NULL);
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
    return pch_wait(id, timeout, NULL);
}

PyDoc_STRVAR(pym_take_reply_doc, "take_reply(id: str) -> str | None\n--\n\n"
                                 "Non-blocking wait_reply.");

static PyObject *pym_take_reply(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *id = pch_str_arg(arg, "take_reply");
    if (!id)
        return NULL;
    PyObject *res = NULL;
    int rc = pch_ready_reply(id, &res, NULL);
    if (rc == WSC_OK)
        return res;
    if (rc == WSC_CLOSED)
        return pch_closed_error();
    Py_RETURN_NONE;
}

PyDoc_STRVAR(pym_forget_doc, "forget(id: str) -> None\n--\n\n"
                             "Drop the reply for id now, or when it arrives later.");

static PyObject *pym_forget(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *id = pch_str_arg(arg, "forget");
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
    if (arg != Py_None && !(run_id = pch_str_arg(arg, "set_current_run")))
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
    const char *name = pch_str_arg(arg, "embedded_source");
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
    const char *name = pch_str_arg(arg, "embedded_code");
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
    if (m)
        pch_set_module(m);
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
