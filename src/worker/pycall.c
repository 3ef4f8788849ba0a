/* pycall — see pycall.h. take() is client.py's _PyCallBase.take, step for step; every case it
 * does not finish itself goes to a Python method of the subclass (_take_py, _lost, _timed_out,
 * _finish, _json_text), so both paths give the same value, error and record. Reference
 * ownership is noted where taken. */
#include "pycall.h"
#include "pyfast.h"

#include <string.h>
#include <structmember.h>
#include <time.h>

/* client.py's _GRACE_S: extra seconds beyond a call's timeout_ms before giving up locally
 * (tests/e2e/pending_c.test.mjs checks the two agree). */
#define PYC_GRACE_S 10.0

typedef struct {
    PyObject_HEAD
        /* owned, each may be NULL (reads as None) */
        PyObject *id,
        *server, *tool, *args, *args_json, *timeout_ms, *state, *early, *finished, *value, *exc,
        *ok, *elapsed_ms, *kind, *mutation;
    double started; /* time.monotonic() when the call was made */
} pyc_object;

static PyObject *pyc_transport_mod; /* codemcp_rt.transport, owned once found */
static PyObject *pyc_wait_reply;    /* the interned method name, owned */

static double pyc_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* time.monotonic()'s clock */
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define PYC_FIELDS(X)                                                                              \
    X(id)                                                                                          \
    X(server) X(tool) X(args) X(args_json) X(timeout_ms) X(state) X(early) X(finished) X(value)    \
        X(exc) X(ok) X(elapsed_ms) X(kind) X(mutation)

static int pyc_traverse(pyc_object *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
#define PYC_VISIT(f) Py_VISIT(self->f);
    PYC_FIELDS(PYC_VISIT)
#undef PYC_VISIT
    return 0;
}

static int pyc_clear(pyc_object *self)
{
#define PYC_CLEAR(f) Py_CLEAR(self->f);
    PYC_FIELDS(PYC_CLEAR)
#undef PYC_CLEAR
    return 0;
}

static void pyc_dealloc(pyc_object *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    pyc_clear(self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static void pyc_set(PyObject **slot, PyObject *v /* borrowed */)
{
    Py_XSETREF(*slot, Py_NewRef(v));
}

/* _Call(call_id, server, tool, args, args_json, timeout_ms, state, mutation), positional */
static int pyc_init(pyc_object *self, PyObject *args, PyObject *kwds)
{
    if ((kwds && PyDict_GET_SIZE(kwds)) || !PyTuple_Check(args) || PyTuple_GET_SIZE(args) != 8) {
        PyErr_SetString(PyExc_TypeError, "_Call() takes exactly 8 positional arguments");
        return -1;
    }
    PyObject **a = &PyTuple_GET_ITEM(args, 0); /* borrowed */
    pyc_set(&self->id, a[0]);
    pyc_set(&self->server, a[1]);
    pyc_set(&self->tool, a[2]);
    pyc_set(&self->args, a[3]);
    pyc_set(&self->args_json, a[4]);
    pyc_set(&self->timeout_ms, a[5]);
    pyc_set(&self->state, a[6]);
    pyc_set(&self->mutation, a[7]);
    self->started = pyc_monotonic();
    pyc_set(&self->early, Py_None);
    pyc_set(&self->finished, Py_False);
    pyc_set(&self->value, Py_None);
    pyc_set(&self->exc, Py_None);
    pyc_set(&self->ok, Py_None);
    pyc_set(&self->elapsed_ms, Py_None);
    pyc_set(&self->kind, Py_None);
    return 0;
}

/* transport._transport (new ref, None when unset), or NULL with an exception. */
static PyObject *pyc_transport(void)
{
    if (!pyc_transport_mod) {
        pyc_transport_mod = PyImport_ImportModule("codemcp_rt.transport"); /* new ref, kept */
        if (!pyc_transport_mod)
            return NULL;
    }
    return PyObject_GetAttrString(pyc_transport_mod, "_transport"); /* new ref */
}

/* The raw reply (new ref, a str), or NULL: either an exception is set (the ToolError the
 * Python methods recorded, or RunInterrupted), or *slow is set (take it in Python). */
static PyObject *pyc_receive(pyc_object *self, int *slow)
{
    PyObject *t = pyc_transport(); /* new ref */
    if (!t)
        return NULL;
    PyObject *timeout = NULL; /* new ref */
    if (t == Py_None || !self->id || !PyUnicode_CheckExact(self->id) || !self->timeout_ms ||
        (self->timeout_ms != Py_None && !PyLong_CheckExact(self->timeout_ms))) {
        *slow = 1;
        Py_DECREF(t);
        return NULL;
    }
    if (self->timeout_ms == Py_None) {
        timeout = Py_NewRef(Py_None);
    } else {
        double ms = PyLong_AsDouble(self->timeout_ms);
        if (ms == -1.0 && PyErr_Occurred()) {
            PyErr_Clear(); /* a huge int: the Python path says what it makes of it */
            *slow = 1;
            Py_DECREF(t);
            return NULL;
        }
        timeout = PyFloat_FromDouble(ms / 1000.0 + PYC_GRACE_S); /* new ref */
        if (!timeout) {
            Py_DECREF(t);
            return NULL;
        }
    }
    PyObject *argv[3] = {t, self->id, timeout};
    PyObject *raw = PyObject_VectorcallMethod(pyc_wait_reply, argv, 3, NULL); /* new ref */
    Py_DECREF(timeout);
    Py_DECREF(t);
    if (!raw) {
        if (!PyErr_ExceptionMatches(PyExc_ConnectionError))
            return NULL;
        PyObject *type, *exc, *tb; /* new refs */
        PyErr_Fetch(&type, &exc, &tb);
        PyErr_NormalizeException(&type, &exc, &tb);
        PyObject *r = PyObject_CallMethod((PyObject *)self, "_lost", "O",
                                          exc ? exc : Py_None); /* new ref; raises */
        Py_XDECREF(type);
        Py_XDECREF(exc);
        Py_XDECREF(tb);
        Py_XDECREF(r);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "_Call._lost() returned");
        return NULL;
    }
    if (raw == Py_None) {
        Py_DECREF(raw);
        PyObject *r = PyObject_CallMethod((PyObject *)self, "_timed_out", NULL); /* raises */
        Py_XDECREF(r);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "_Call._timed_out() returned");
        return NULL;
    }
    if (!PyUnicode_CheckExact(raw)) { /* another transport's answer: _finish judges it */
        PyObject *v = PyObject_CallMethod((PyObject *)self, "_finish", "O", raw); /* new ref */
        Py_DECREF(raw);
        if (v)
            pyc_set(&self->value, Py_None);
        *slow = v ? 2 : 0;
        return v;
    }
    return raw;
}

static PyObject *pyc_take(pyc_object *self, PyObject *unused)
{
    (void)unused;
    int finished = self->finished ? PyObject_IsTrue(self->finished) : 0;
    if (finished < 0)
        return NULL;
    if (finished || (self->early && self->early != Py_None))
        return PyObject_CallMethod((PyObject *)self, "_take_py", NULL);
    int slow = 0;
    PyObject *raw = pyc_receive(self, &slow); /* new ref */
    if (slow == 2)
        return raw; /* already the value */
    if (!raw)
        return slow ? PyObject_CallMethod((PyObject *)self, "_take_py", NULL) : NULL;
    PyObject *argv[2] = {raw, self->id};
    PyObject *text = pyf_text_result(NULL, argv, 2); /* new ref: str or None */
    if (!text) {
        Py_DECREF(raw);
        return NULL;
    }
    if (text == Py_None) { /* not the usual answer: _finish reads it */
        Py_DECREF(text);
        PyObject *v = PyObject_CallMethod((PyObject *)self, "_finish", "O", raw); /* new ref */
        Py_DECREF(raw);
        if (v)
            pyc_set(&self->value, Py_None);
        return v;
    }
    Py_DECREF(raw);
    pyc_set(&self->ok, Py_True);
    pyc_set(&self->finished, Py_True);
    pyc_set(&self->early, Py_None);
    PyObject *ms = PyLong_FromDouble((pyc_monotonic() - self->started) * 1000.0); /* new ref */
    if (!ms) {
        Py_DECREF(text);
        return NULL;
    }
    Py_XSETREF(self->elapsed_ms, ms);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_UCS4 c = n ? PyUnicode_READ_CHAR(text, 0) : 0;
    if (!n || c == 0 || c >= 128 || !strchr("{[\"-0123456789tfnNI \t\r\n", (int)c))
        return text; /* prose: what _text_value gives without looking further */
    PyObject *v = PyObject_CallMethod((PyObject *)self, "_json_text", "O", text); /* new ref */
    Py_DECREF(text);
    return v;
}

static PyMethodDef pyc_methods[] = {
    {"take", (PyCFunction)pyc_take, METH_NOARGS,
     "wait() for the Pending, which keeps the value itself: this call forgets it."},
    {NULL, NULL, 0, NULL},
};

#define PYC_MEMBER(f) {#f, T_OBJECT, offsetof(pyc_object, f), 0, NULL},
static PyMemberDef pyc_members[] = {
    PYC_FIELDS(PYC_MEMBER){"started", T_DOUBLE, offsetof(pyc_object, started), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};
#undef PYC_MEMBER

static PyType_Slot pyc_slots[] = {
    {Py_tp_doc, (void *)"The C core of codemcp_rt.client._Call (its fields and take())."},
    {Py_tp_init, (void *)pyc_init},
    {Py_tp_new, (void *)PyType_GenericNew},
    {Py_tp_dealloc, (void *)pyc_dealloc},
    {Py_tp_traverse, (void *)pyc_traverse},
    {Py_tp_clear, (void *)pyc_clear},
    {Py_tp_methods, (void *)pyc_methods},
    {Py_tp_members, (void *)pyc_members},
    {0, NULL},
};

static PyType_Spec pyc_spec = {
    .name = "_codemcp.CallBase",
    .basicsize = sizeof(pyc_object),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = pyc_slots,
};

int pyc_add_type(PyObject *m)
{
    if (!pyc_wait_reply && !(pyc_wait_reply = PyUnicode_InternFromString("wait_reply")))
        return -1;
    PyObject *t = PyType_FromSpec(&pyc_spec); /* new ref */
    if (!t)
        return -1;
    int rc = PyModule_AddObjectRef(m, "CallBase", t);
    Py_DECREF(t);
    return rc;
}
