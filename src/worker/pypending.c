/* pypending — see pypending.h. The semantics are those of pending.py's _PyPendingBase, line for
 * line: state 0 = not yet known, 1 = value, 2 = ToolError (any other number reads as a value,
 * as the Python twin's comparisons make it). Reference ownership is noted where taken. */
#include "pypending.h"

#include <structmember.h>
#include <time.h>

enum { PP_UNSET = 0, PP_DONE = 1, PP_FAILED = 2 };

typedef struct {
    PyObject_HEAD PyObject *wait, *poll, *block, *label, *value, *error,
        *aw; /* owned, each may be NULL */
    PyObject *weakreflist;
    int state;
    int busy;            /* a thread is inside wait() */
    unsigned long owner; /* that thread's ident */
} pp_object;

static PyObject *pp_tool_error; /* codemcp_rt.errors.ToolError, owned once found */

/* ToolError (borrowed), or NULL with an exception set. Looked up once, when first needed. */
static PyObject *pp_tool_error_type(void)
{
    if (pp_tool_error)
        return pp_tool_error;
    PyObject *mod = PyImport_ImportModule("codemcp_rt.errors"); /* new ref */
    if (!mod)
        return NULL;
    PyObject *t = PyObject_GetAttrString(mod, "ToolError"); /* new ref */
    Py_DECREF(mod);
    if (!t)
        return NULL;
    if (!PyExceptionClass_Check(t)) {
        Py_DECREF(t);
        PyErr_SetString(PyExc_TypeError, "codemcp_rt.errors.ToolError is not an exception class");
        return NULL;
    }
    pp_tool_error = t;
    return t;
}

static int pp_traverse(pp_object *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->wait);
    Py_VISIT(self->poll);
    Py_VISIT(self->block);
    Py_VISIT(self->label);
    Py_VISIT(self->value);
    Py_VISIT(self->error);
    Py_VISIT(self->aw);
    return 0;
}

static int pp_clear(pp_object *self)
{
    Py_CLEAR(self->wait);
    Py_CLEAR(self->poll);
    Py_CLEAR(self->block);
    Py_CLEAR(self->label);
    Py_CLEAR(self->value);
    Py_CLEAR(self->error);
    Py_CLEAR(self->aw);
    return 0;
}

static void pp_dealloc(pp_object *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    /* A chain of Pendings holding each other (p._value = q, ...) is freed iteratively, as
     * CPython's containers are: without the trashcan, 100k links overflow the C stack. */
    Py_TRASHCAN_BEGIN(self, pp_dealloc);
    if (self->weakreflist)
        PyObject_ClearWeakRefs((PyObject *)self);
    pp_clear(self);
    tp->tp_free((PyObject *)self);
    if (tp->tp_flags & Py_TPFLAGS_HEAPTYPE)
        Py_DECREF(tp);
    Py_TRASHCAN_END;
}

/* Pending(wait, poll=None, label="call", block=None) */
static int pp_init(pp_object *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"wait", "poll", "label", "block", NULL};
    PyObject *wait, *poll = Py_None, *label = NULL, *block = Py_None; /* borrowed */
    if (kwds == NULL && PyTuple_CheckExact(args) && PyTuple_GET_SIZE(args) >= 1 &&
        PyTuple_GET_SIZE(args) <= 4) {
        Py_ssize_t n = PyTuple_GET_SIZE(args); /* the SDK's call: positional only */
        wait = PyTuple_GET_ITEM(args, 0);
        if (n > 1)
            poll = PyTuple_GET_ITEM(args, 1);
        if (n > 2)
            label = PyTuple_GET_ITEM(args, 2);
        if (n > 3)
            block = PyTuple_GET_ITEM(args, 3);
    } else if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OOO:Pending", kwlist, &wait, &poll,
                                            &label, &block)) {
        return -1;
    }
    if (!label) {
        label = PyUnicode_InternFromString("call"); /* new ref */
        if (!label)
            return -1;
    } else {
        Py_INCREF(label);
    }
    Py_INCREF(wait);
    Py_INCREF(poll);
    Py_INCREF(block);
    Py_XSETREF(self->wait, wait);
    Py_XSETREF(self->poll, poll);
    Py_XSETREF(self->block, block);
    Py_XSETREF(self->label, label);
    Py_XSETREF(self->aw, Py_NewRef(Py_None));
    Py_XSETREF(self->value, Py_NewRef(Py_None));
    Py_XSETREF(self->error, Py_NewRef(Py_None));
    self->state = PP_UNSET;
    return 0;
}

/* Runs wait() once (this thread owns the Pending meanwhile) and records its outcome. 0, or -1
 * with the exception wait() raised when it was not a ToolError (the state stays unknown). */
static int pp_run_wait(pp_object *self)
{
    PyObject *tool_error = pp_tool_error_type(); /* borrowed */
    if (!tool_error)
        return -1;
    PyObject *wait = self->wait; /* a new ref below: wait() may rebind self->wait */
    if (!wait || wait == Py_None) {
        PyErr_SetString(PyExc_TypeError, "this Pending has nothing to wait for");
        return -1;
    }
    Py_INCREF(wait);
    self->busy = 1;
    self->owner = PyThread_get_thread_ident();
    PyObject *value = PyObject_CallNoArgs(wait); /* new ref */
    Py_DECREF(wait);
    self->busy = 0;
    if (!value) {
        if (!PyErr_ExceptionMatches(tool_error))
            return -1;
        PyObject *type, *exc, *tb; /* new refs */
        PyErr_Fetch(&type, &exc, &tb);
        PyErr_NormalizeException(&type, &exc, &tb);
        if (tb && exc)
            PyException_SetTraceback(exc, tb);
        Py_XDECREF(type);
        Py_XDECREF(tb);
        Py_XSETREF(self->error, exc ? exc : Py_NewRef(Py_None));
        Py_XSETREF(self->value, Py_NewRef(Py_None));
        self->state = PP_FAILED;
    } else {
        Py_XSETREF(self->value, value);
        self->state = PP_DONE;
    }
    /* drop the closure and its reply */
    Py_XSETREF(self->wait, Py_NewRef(Py_None));
    Py_XSETREF(self->poll, Py_NewRef(Py_None));
    Py_XSETREF(self->block, Py_NewRef(Py_None));
    return 0;
}

/* Another thread is inside wait(): let it finish, with the GIL dropped between looks. -1 with
 * an exception when a signal handler raised (a run's timeout or cancel). */
static int pp_wait_for_owner(pp_object *self, long *sleep_us)
{
    struct timespec ts = {0, *sleep_us * 1000L};
    Py_BEGIN_ALLOW_THREADS nanosleep(&ts, NULL);
    Py_END_ALLOW_THREADS if (*sleep_us < 5000) *sleep_us *= 2;
    (void)self;
    return PyErr_CheckSignals();
}

static PyObject *pp_result(pp_object *self, PyObject *unused)
{
    (void)unused;
    long sleep_us = 50;
    while (self->state == PP_UNSET) {
        if (!self->busy) {
            if (pp_run_wait(self) < 0)
                return NULL;
            break;
        }
        if (self->owner == PyThread_get_thread_ident()) {
            PyErr_SetString(PyExc_RuntimeError,
                            "a Pending's value was read from inside its own wait()");
            return NULL;
        }
        if (pp_wait_for_owner(self, &sleep_us) < 0)
            return NULL;
    }
    if (self->state == PP_FAILED) {
        PyObject *err = self->error; /* borrowed */
        if (err && PyExceptionInstance_Check(err))
            PyErr_SetObject((PyObject *)Py_TYPE(err), err);
        else if (err && PyExceptionClass_Check(err))
            PyErr_SetNone(err);
        else
            PyErr_SetString(PyExc_TypeError, "exceptions must derive from BaseException");
        return NULL;
    }
    return Py_NewRef(self->value ? self->value : Py_None);
}

/* A step of done() failed: an Exception reads as "not done" (as in the twin's `except
 * Exception`), anything else (RunInterrupted, KeyboardInterrupt) goes on. */
static PyObject *pp_done_failed(void)
{
    if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    return NULL;
}

static PyObject *pp_done(pp_object *self, PyObject *unused)
{
    (void)unused;
    if (self->state != PP_UNSET)
        Py_RETURN_TRUE;
    PyObject *poll = self->poll; /* new ref below: poll() may rebind self->poll */
    if (!poll)
        Py_RETURN_FALSE;
    Py_INCREF(poll);
    PyObject *out = NULL;
    int truth = PyObject_IsTrue(poll);
    if (truth < 0) {
        out = pp_done_failed();
    } else if (truth == 0) {
        out = Py_NewRef(Py_False);
    } else {
        PyObject *r = PyObject_CallNoArgs(poll); /* new ref */
        truth = r ? PyObject_IsTrue(r) : -1;
        Py_XDECREF(r);
        out = truth < 0 ? pp_done_failed() : Py_NewRef(truth ? Py_True : Py_False);
    }
    Py_DECREF(poll);
    return out;
}

/* str(p) and format(p, spec): the value's (the twin's __str__ and __format__); reading the
 * value this way is what most programs do with a call's text, so no Python frame for it. */
static PyObject *pp_str(pp_object *self)
{
    PyObject *v = pp_result(self, NULL); /* new ref */
    if (!v)
        return NULL;
    PyObject *s = PyObject_Str(v);
    Py_DECREF(v);
    return s;
}

static PyObject *pp_format(pp_object *self, PyObject *spec)
{
    PyObject *v = pp_result(self, NULL); /* new ref */
    if (!v)
        return NULL;
    PyObject *s = NULL;
    if (PyUnicode_Check(spec)) /* format()'s own check, after the value as in the twin */
        s = PyObject_Format(v, spec);
    else
        PyErr_Format(PyExc_TypeError, "format() argument 2 must be str, not %.200s",
                     Py_TYPE(spec)->tp_name);
    Py_DECREF(v);
    return s;
}

static PyMethodDef pp_methods[] = {
    {"result", (PyCFunction)pp_result, METH_NOARGS,
     "Wait for the value and return it; raise ToolError if the call failed.\n\n"
     "Raising is repeatable: every later use raises the same ToolError."},
    {"done", (PyCFunction)pp_done, METH_NOARGS,
     "True when the value (or the error) is available without waiting."},
    {"__format__", (PyCFunction)pp_format, METH_O, "format() of the value."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef pp_members[] = {
    {"_wait", T_OBJECT, offsetof(pp_object, wait), 0, NULL},
    {"_poll", T_OBJECT, offsetof(pp_object, poll), 0, NULL},
    {"_block", T_OBJECT, offsetof(pp_object, block), 0, NULL},
    {"_label", T_OBJECT, offsetof(pp_object, label), 0, NULL},
    {"_value", T_OBJECT, offsetof(pp_object, value), 0, NULL},
    {"_error", T_OBJECT, offsetof(pp_object, error), 0, NULL},
    {"_aw", T_OBJECT, offsetof(pp_object, aw), 0, NULL},
    {"_state", T_INT, offsetof(pp_object, state), 0, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(pp_object, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot pp_slots[] = {
    {Py_tp_doc, (void *)"The C core of codemcp_rt.pending.Pending (state, result(), done())."},
    {Py_tp_init, (void *)pp_init},
    {Py_tp_new, (void *)PyType_GenericNew},
    {Py_tp_dealloc, (void *)pp_dealloc},
    {Py_tp_traverse, (void *)pp_traverse},
    {Py_tp_clear, (void *)pp_clear},
    {Py_tp_methods, (void *)pp_methods},
    {Py_tp_members, (void *)pp_members},
    {Py_tp_str, (void *)pp_str},
    {0, NULL},
};

static PyType_Spec pp_spec = {
    .name = "_codemcp.PendingBase",
    .basicsize = sizeof(pp_object),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = pp_slots,
};

int pyp_add_type(PyObject *m)
{
    PyObject *t = PyType_FromSpec(&pp_spec); /* new ref */
    if (!t)
        return -1;
    int rc = PyModule_AddObjectRef(m, "PendingBase", t);
    Py_DECREF(t);
    return rc;
}
