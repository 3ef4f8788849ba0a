/* pychan — see pychan.h. Every function here is called with the GIL held and may be called
 * from any Python thread. Blocking waits drop the GIL around one wsclient wait; nothing in
 * wsclient ever calls back into Python. Reference ownership is noted where a reference is
 * taken. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "pychan.h"

#include "pysigwake.h"
#include "util.h"
#include "wsclient.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Frames from this size up are written with the GIL released. */
#define PCH_BIG_SEND 65536

/* Parses a timeout in seconds (None = wait forever) into milliseconds; -1 for forever.
 * Returns 0, or -1 with TypeError/ValueError set. */
static int pch_timeout_ms(PyObject *obj /* borrowed, may be NULL */, int64_t *ms)
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
static PyObject *pch_text(char *text, size_t len)
{
    PyObject *s = PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "replace"); /* new ref */
    free(text);
    return s;
}

/* The received text as the caller asked: a str (pch_text), or, with keep, the bytes themselves
 * in *keep and Ellipsis (new ref). */
static PyObject *pch_take(char *text, size_t len, struct pch_bytes *keep)
{
    if (!keep)
        return pch_text(text, len);
    keep->text = text;
    keep->len = len;
    return Py_NewRef(Py_Ellipsis);
}

PyObject *pch_closed_error(void)
{
    PyErr_SetString(PyExc_ConnectionError, "the control connection to the gateway is closed");
    return NULL;
}

/* A reply already received for id, taken with the GIL held: a lookup, and the flush of a
 * cork (the caller is about to wait for it). Returns wsclient's code; *res is set (new
 * reference) only for WSC_OK. */
int pch_ready_reply(const char *id, PyObject **res, struct pch_bytes *keep)
{
    char *text = NULL;
    size_t len = 0;
    int rc = wsc_wait_reply(id, 0, &text, &len);
    if (rc == WSC_OK)
        *res = pch_take(text, len, keep);
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
PyObject *pch_wait(const char *id, PyObject *timeout_obj, struct pch_bytes *keep)
{
    int64_t timeout_ms, deadline = 0;
    PyObject *res = NULL;
    if (pch_timeout_ms(timeout_obj, &timeout_ms) < 0)
        return NULL;
    if (timeout_ms >= 0)
        deadline = now_ms() + timeout_ms;
    int on_main = wsc_on_main_thread();
    /* A reply that is here already (the usual case once a burst's replies come in) is taken
     * as take_reply takes it, without dropping the GIL. */
    if (id && pch_ready_reply(id, &res, keep) == WSC_OK)
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
            res = pch_take(text, len, keep);
            break;
        }
        if (rc == WSC_CLOSED) {
            pch_closed_error();
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

PyObject *pch_next_text(void)
{
    return pch_wait(NULL, NULL, NULL);
}

/* Borrowed UTF-8 of a str argument, or NULL with TypeError, or ValueError for an embedded NUL
 * (as PyArg_Parse's "s" refuses it: the C side would see only the part before it, so an id
 * "c1\0x" would match call c1's reply). */
const char *pch_str_arg(PyObject *arg, const char *fn)
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
static PyObject *pch_self, *pch_orig_wait_reply, *pch_orig_send, *pch_wait_reply_s, *pch_send_s;

/* Whether `t.name` is certain to be this module's own function: t is the module, still of
 * the plain module type (agent code may assign its __class__ a subclass whose descriptor
 * answers for `name`), and the module's dict still holds the original (agent code may
 * replace it). Otherwise the caller goes through the attribute, as Python would. */
static int pch_is_self(PyObject *t, PyObject *name, PyObject *orig)
{
    if (!pch_self || t != pch_self || !Py_IS_TYPE(t, &PyModule_Type))
        return 0;
    PyObject *f = PyDict_GetItemWithError(PyModule_GetDict(t), name); /* borrowed */
    if (!f)
        PyErr_Clear();
    return f == orig;
}

PyObject *pch_wait_reply_direct(PyObject *t, PyObject *id, PyObject *timeout, int *indirect,
                                struct pch_bytes *keep)
{
    *indirect = 0;
    if (!PyUnicode_CheckExact(id) || !pch_is_self(t, pch_wait_reply_s, pch_orig_wait_reply)) {
        *indirect = 1;
        return NULL;
    }
    const char *s = pch_str_arg(id, "wait_reply"); /* borrowed: the caller keeps id alive */
    return s ? pch_wait(s, timeout, keep) : NULL;
}

int pch_send_direct(PyObject *t, PyObject *text)
{
    if (!pch_is_self(t, pch_send_s, pch_orig_send))
        return -2;
    return pch_send_text(text);
}

int pch_send_text(PyObject *arg /* borrowed */)
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
    if (len < PCH_BIG_SEND) {
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
        pch_closed_error();
        return -1;
    }
    return 0;
}

void pch_set_module(PyObject *m)
{
    if (pch_self) /* once: the module lives as long as the interpreter */
        return;
    pch_wait_reply_s = PyUnicode_InternFromString("wait_reply");
    pch_send_s = PyUnicode_InternFromString("send");
    pch_orig_wait_reply = PyObject_GetAttrString(m, "wait_reply"); /* new refs, kept */
    pch_orig_send = PyObject_GetAttrString(m, "send");
    if (pch_wait_reply_s && pch_send_s && pch_orig_wait_reply && pch_orig_send)
        pch_self = m; /* borrowed */
    else
        PyErr_Clear(); /* no direct calls: every call goes through the attributes */
}
