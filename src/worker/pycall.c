/* pycall — see pycall.h. take() is client.py's _PyCallBase.take, step for step; every case it
 * does not finish itself goes to a Python method of the subclass (_take_py, _lost, _timed_out,
 * _finish, _json_text), so both paths give the same value, error and record. Reference
 * ownership is noted where taken. */
#include "pycall.h"

#include "pychan.h"
#include "pyfast.h"
#include "pyjson.h"
#include "pyrunset.h"
#include "codemcp_limits.h" /* LIM_CALL_GRACE_S: client.py's grace, from limits.py */

#include <stdio.h>
#include <string.h>
#include <structmember.h>
#include <time.h>

typedef struct {
    PyObject_HEAD
        /* owned, each may be NULL (reads as None) */
        PyObject *id,
        *server, *tool, *args, *args_json, *timeout_ms, *state, *early, *finished, *value, *exc,
        *ok, *elapsed_ms, *kind, *mutation;
    double started; /* time.monotonic() when the call was made */
} pyc_object;

static PyObject *pyc_transport_mod; /* codemcp_rt.transport, owned once found */
static PyObject *pyc_transport_s;   /* "_transport", interned, owned */
/* interned attribute names, owned (set once in pyc_add_type) */
static PyObject *pyc_wait_reply, *pyc_send, *pyc_writes, *pyc_run_id_json, *pyc_made, *pyc_take_s,
    *pyc_poll_s, *pyc_block_s;

static double pyc_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* time.monotonic()'s clock */
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The fields, for traverse/clear/members (clang-format reflows this list on every run). */
/* clang-format off */
#define PYC_FIELDS(X) \
    X(id) X(server) X(tool) X(args) X(args_json) X(timeout_ms) X(state) X(early) \
    X(finished) X(value) X(exc) X(ok) X(elapsed_ms) X(kind) X(mutation)
/* clang-format on */

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
    Py_TRASHCAN_BEGIN(self, pyc_dealloc); /* long chains: freed iteratively (see pypending.c) */
    pyc_clear(self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
    Py_TRASHCAN_END;
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
    if (!pyc_transport_s && !(pyc_transport_s = PyUnicode_InternFromString("_transport")))
        return NULL;
    return PyObject_GetAttr(pyc_transport_mod, pyc_transport_s); /* new ref */
}

/* The raw reply (new ref, a str; or Ellipsis with its bytes in *keep, to be freed), or NULL:
 * either an exception is set (the ToolError the Python methods recorded, or RunInterrupted),
 * or *slow is set (take it in Python). */
static PyObject *pyc_receive(pyc_object *self, int *slow, struct pch_bytes *keep)
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
        timeout = PyFloat_FromDouble(ms / 1000.0 + LIM_CALL_GRACE_S); /* new ref */
        if (!timeout) {
            Py_DECREF(t);
            return NULL;
        }
    }
    /* Our own reference to the id: while wait_reply waits, Python code runs (signal
     * handlers, a transport agent code put in place) and may rebind or delete self.id. */
    PyObject *id = Py_NewRef(self->id);
    int indirect;
    PyObject *raw = pch_wait_reply_direct(t, id, timeout, &indirect, keep); /* new ref */
    if (indirect) {
        PyObject *argv[3] = {t, id, timeout};
        raw = PyObject_VectorcallMethod(pyc_wait_reply, argv, 3, NULL); /* new ref */
    }
    Py_DECREF(id);
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
    if (raw == Py_Ellipsis && keep->text)
        return raw;                   /* the bytes are in *keep */
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

/* Frees a kept reply's bytes (pyj_text_value's release). */
static void pyc_release(void *ud)
{
    struct pch_bytes *kept = ud;
    free(kept->text);
    kept->text = NULL;
}

/* The usual one-text-block reply, from its bytes: *value (a JSON text parsed from them, no str
 * of the whole text first) or *text (a new str), both new refs; else neither: not the usual
 * reply, _finish reads it (or, -1, an exception). kept: raw is its bytes, freed as soon as the
 * text has been copied out of them. */
static int pyc_text_value(pyc_object *self, const char *raw, size_t len, struct pch_bytes *kept,
                          PyObject **value, PyObject **text)
{
    Py_ssize_t idn = 0;
    const char *id =
        self->id && PyUnicode_CheckExact(self->id) ? PyUnicode_AsUTF8AndSize(self->id, &idn) : NULL;
    const char *span;
    size_t span_len;
    *value = *text = NULL;
    if (!id) {
        PyErr_Clear();
        return 0;
    }
    if (!pyf_text_span_bytes(raw, len, id, (size_t)idn, &span, &span_len))
        return 0;
    int as_json = span_len && (span[0] == '{' || span[0] == '[');
    return pyj_text_value(span, span_len, as_json, kept ? pyc_release : NULL, kept, value, text) ==
                   -2
               ? -1
               : 0;
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
    struct pch_bytes kept = {0};
    PyObject *raw = pyc_receive(self, &slow, &kept); /* new ref */
    if (slow == 2)
        return raw; /* already the value */
    if (!raw)
        return slow ? PyObject_CallMethod((PyObject *)self, "_take_py", NULL) : NULL;
    /* self->id may be gone by now (see above): then not the usual answer, _finish decides */
    PyObject *value = NULL, *text = NULL; /* new refs */
    if (kept.text) {
        Py_DECREF(raw); /* Ellipsis */
        raw = NULL;
        int rc = pyc_text_value(self, kept.text, kept.len, &kept, &value, &text);
        /* not the usual reply: a str for _finish (invalid UTF-8 replaced, as pychan.c does) */
        if (rc == 0 && !value && !text)
            raw = PyUnicode_DecodeUTF8(kept.text, (Py_ssize_t)kept.len, "replace");
        free(kept.text);
        if (!raw && !value && !text)
            return NULL;
    } else {
        Py_ssize_t n;
        const char *b = PyUnicode_AsUTF8AndSize(raw, &n); /* borrowed from raw */
        if (!b)
            PyErr_Clear();
        else if (pyc_text_value(self, b, (size_t)n, NULL, &value, &text) < 0) {
            Py_DECREF(raw);
            return NULL;
        }
    }
    if (!value && !text) { /* not the usual answer: _finish reads it */
        PyObject *v = PyObject_CallMethod((PyObject *)self, "_finish", "O", raw); /* new ref */
        Py_DECREF(raw);
        if (v)
            pyc_set(&self->value, Py_None);
        return v;
    }
    Py_XDECREF(raw);
    pyc_set(&self->ok, Py_True);
    pyc_set(&self->finished, Py_True);
    pyc_set(&self->early, Py_None);
    PyObject *ms = PyLong_FromDouble((pyc_monotonic() - self->started) * 1000.0); /* new ref */
    if (!ms) {
        Py_XDECREF(value);
        Py_XDECREF(text);
        return NULL;
    }
    Py_XSETREF(self->elapsed_ms, ms);
    if (value)
        return value;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_UCS4 c = n ? PyUnicode_READ_CHAR(text, 0) : 0;
    if (!n || c == 0 || c >= 128 || !strchr("{[\"-0123456789tfnNI \t\r\n", (int)c))
        return text; /* prose: what _text_value gives without looking further */
    PyObject *v = PyObject_CallMethod((PyObject *)self, "_json_text", "O", text); /* new ref */
    Py_DECREF(text);
    return v;
}

/* ---- issue(): client.call()'s usual case in one C call ------------------------------------ */

/* A new reference to attribute `name` of o when it has exactly type `type`, else NULL (with
 * any lookup error cleared: the caller takes the Python path). */
static PyObject *pyc_attr_of(PyObject *o, PyObject *name, PyTypeObject *type)
{
    PyObject *v = PyObject_GetAttr(o, name); /* new ref */
    if (!v) {
        PyErr_Clear();
        return NULL;
    }
    if (Py_TYPE(v) != type) {
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

/* pyc_attr_of for the run's state: a RunState's slot read directly (pyrunset.c). */
static PyObject *pyc_state_attr(PyObject *state, int slot, PyObject *name, PyTypeObject *type)
{
    if (Py_TYPE(state) != pyrs_state_type())
        return pyc_attr_of(state, name, type);
    PyObject *v = pyrs_get(state, slot); /* new ref */
    if (!v || Py_TYPE(v) != type) {
        PyErr_Clear();
        Py_XDECREF(v);
        return NULL;
    }
    return v;
}

/* argguard's check of the arguments before anything is sent, when the frame builder's
 * certain-type test was not sure: 0 when they may go, -1 with the exception check() raised
 * (InvalidArguments). */
static int pyc_guard(int sure, PyObject *check, PyObject *server, PyObject *tool, PyObject *a)
{
    if (sure)
        return 0;
    PyObject *cargs[3] = {server, tool, a};
    PyObject *r = PyObject_Vectorcall(check, cargs, 3, NULL); /* new ref */
    if (!r)
        return -1;
    Py_DECREF(r);
    return 0;
}

PyObject *pyc_issue(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "issue() takes 11 arguments");
        return NULL;
    }
    /* all borrowed */
    PyObject *state = args[0], *server = args[1], *tool = args[2], *a = args[3], *tmo = args[4],
             *tools = args[5], *ids = args[6], *call_cls = args[7], *pending_cls = args[8],
             *t = args[9], *check = args[10];
    PyObject *fragment = NULL, *label = NULL,
             *certain = NULL; /* owned: the cache entry may go meanwhile */
    PyObject *key = NULL, *writes = NULL, *rid = NULL, *num = NULL, *cid = NULL, *frame = NULL,
             *plain = NULL, *c = NULL, *made = NULL, *take = NULL, *poll = NULL, *block = NULL,
             *out = NULL; /* owned */
    int mutation = 0;
    if (state == Py_None || t == Py_None || !PyDict_CheckExact(a) || !PyDict_CheckExact(tools) ||
        (tmo != Py_None && !PyLong_CheckExact(tmo)) || !PyIter_Check(ids))
        goto none;
    key = PyTuple_Pack(2, server, tool); /* new ref */
    if (!key)
        goto fail;
    PyObject *info = PyDict_GetItemWithError(tools, key); /* borrowed */
    if (!info) {
        PyErr_Clear(); /* not cached yet, or unhashable names: the Python path */
        goto none;
    }
    if (!PyTuple_CheckExact(info) || PyTuple_GET_SIZE(info) != 4 ||
        !PyUnicode_CheckExact(PyTuple_GET_ITEM(info, 0)))
        goto none;
    fragment = Py_NewRef(PyTuple_GET_ITEM(info, 0));
    label = Py_NewRef(PyTuple_GET_ITEM(info, 1));
    certain = Py_NewRef(PyTuple_GET_ITEM(info, 3));
    PyObject *is_write = Py_NewRef(PyTuple_GET_ITEM(info, 2)); /* info may go in __bool__ */
    mutation = PyObject_IsTrue(is_write);
    Py_DECREF(is_write);
    if (mutation < 0) {
        PyErr_Clear();
        goto none;
    }
    /* writes still unanswered order the calls after them: the Python path does that */
    writes = pyc_state_attr(state, PYRS_WRITES, pyc_writes, &PyDict_Type);
    rid = pyc_state_attr(state, PYRS_RUN_ID_JSON, pyc_run_id_json, &PyUnicode_Type);
    made = pyc_state_attr(state, PYRS_MADE, pyc_made, &PyList_Type);
    if (!writes || PyDict_GET_SIZE(writes) || !rid || !made)
        goto none;
    num = PyIter_Next(ids); /* new ref */
    if (!num) {
        if (PyErr_Occurred())
            goto fail;
        goto none;
    }
    long long n = PyLong_CheckExact(num) ? PyLong_AsLongLong(num) : -1;
    if (n < 0) { /* not what itertools.count gives: the Python path */
        PyErr_Clear();
        goto none;
    }
    char idbuf[32], digits[24]; /* "c%lld" without snprintf's ~700 instructions */
    int idlen = 0, k = 0;
    do
        digits[k++] = (char)('0' + n % 10);
    while ((n /= 10) != 0);
    idbuf[idlen++] = 'c';
    while (k)
        idbuf[idlen++] = digits[--k];
    cid = PyUnicode_FromStringAndSize(idbuf, idlen); /* new ref */
    if (!cid)
        goto fail;
    PyObject *fargs[5] = {cid, rid, fragment, a, tmo};
    int sure;
    frame = pyf_call_frame_certain(fargs, certain, &sure); /* new ref: str or None */
    if (!frame)
        goto fail;
    if (frame == Py_None) /* not flat scalar arguments: the Python path (another id) */
        goto none;
    plain = PyDict_Copy(a); /* what a ToolError reports, as sent */
    if (!plain)
        goto fail;
    if (pyc_guard(sure, check, server, tool, a) < 0)
        goto fail; /* InvalidArguments: nothing was recorded or sent */
    PyObject *cargs[8] = {cid,     server, tool,  plain,
                          Py_None, tmo,    state, mutation ? Py_True : Py_False};
    c = PyObject_Vectorcall(call_cls, cargs, 8, NULL); /* new ref */
    if (!c || PyList_Append(made, c) < 0)
        goto fail;
    if (mutation && PyDict_SetItem(writes, server, c) < 0)
        goto fail;
    int direct = pch_send_direct(t, frame);
    PyObject *sent = NULL; /* new ref */
    if (direct == -2) {
        PyObject *sargs[2] = {t, frame};
        sent = PyObject_VectorcallMethod(pyc_send, sargs, 2, NULL);
    } else if (direct == 0) {
        sent = Py_NewRef(Py_None);
    }
    if (sent) {
        Py_DECREF(sent);
    } else if (PyErr_ExceptionMatches(PyExc_Exception)) { /* connection gone: fails on use */
        PyObject *type, *exc, *tb;                        /* new refs */
        PyErr_Fetch(&type, &exc, &tb);
        PyErr_NormalizeException(&type, &exc, &tb);
        PyObject *r = PyObject_CallMethod(c, "_send_failed", "O", exc ? exc : Py_None);
        Py_XDECREF(type);
        Py_XDECREF(exc);
        Py_XDECREF(tb);
        if (!r)
            goto fail;
        Py_DECREF(r);
    } else {
        goto fail; /* RunInterrupted, KeyboardInterrupt: as the Python path, they go on */
    }
    take = PyObject_GetAttr(c, pyc_take_s); /* new refs: the bound methods */
    poll = PyObject_GetAttr(c, pyc_poll_s);
    block = PyObject_GetAttr(c, pyc_block_s);
    if (!take || !poll || !block)
        goto fail;
    PyObject *pargs[4] = {take, poll, label, block};
    out = PyObject_Vectorcall(pending_cls, pargs, 4, NULL); /* new ref */
    goto done;
none:
    out = Py_NewRef(Py_None);
    goto done;
fail:
    out = NULL;
done:
    Py_XDECREF(fragment);
    Py_XDECREF(label);
    Py_XDECREF(certain);
    Py_XDECREF(key);
    Py_XDECREF(writes);
    Py_XDECREF(rid);
    Py_XDECREF(num);
    Py_XDECREF(cid);
    Py_XDECREF(frame);
    Py_XDECREF(plain);
    Py_XDECREF(c);
    Py_XDECREF(made);
    Py_XDECREF(take);
    Py_XDECREF(poll);
    Py_XDECREF(block);
    return out;
}

const char pyc_issue_doc[] =
    "issue(state, server, tool, args, timeout_ms, tools, ids, Call, Pending, transport, check)\n"
    "--\n\n"
    "client.call()'s usual case: the Pending of a sent call, or None (take the Python path).";

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
    struct {
        PyObject **slot;
        const char *name;
    } names[] = {{&pyc_wait_reply, "wait_reply"},
                 {&pyc_send, "send"},
                 {&pyc_writes, "writes"},
                 {&pyc_run_id_json, "run_id_json"},
                 {&pyc_made, "made"},
                 {&pyc_take_s, "take"},
                 {&pyc_poll_s, "poll"},
                 {&pyc_block_s, "block"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!*names[i].slot && !(*names[i].slot = PyUnicode_InternFromString(names[i].name)))
            return -1;
    PyObject *t = PyType_FromSpec(&pyc_spec); /* new ref */
    if (!t)
        return -1;
    int rc = PyModule_AddObjectRef(m, "CallBase", t);
    Py_DECREF(t);
    return rc;
}
