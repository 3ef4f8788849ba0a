/* pyrun — see pyrun.h. GIL held throughout, except around the stray check. Every reference
 * taken is released on every path, a run's once its answer is sent (pyafter.c); the hooks and
 * the cache are owned here for the life of the process. */
#include "pyrun.h"
#include "fdcap.h"
#include "log.h"
#include "pyafter.h"
#include "pyfast.h"
#include "pyjson.h"
#include "pyreq.h"
#include "pyrunset.h"
#include "pychan.h"
#include "pystray.h"
#include "util.h"
#include "wsclient.h"

#include <stdio.h>
#include <string.h>

#define PYR_CACHE_MAX 64

/* What worker_main.main() handed over (new references, kept). */
static struct {
    PyObject *handle;      /* worker_main.handle(text) -> str | None: every other request */
    PyObject *prepare;     /* runner._fast_prepare(code, session, params) */
    PyObject *sessions;    /* runner._sessions (only read: is a namespace there, its dict) */
    PyObject *rs_dict;     /* runstate's module dict: "_current" is set here */
    PyObject *sdk_dict;    /* sdk's module dict: "_current" (the snapshot), "_shapes" */
    PyObject *settle;      /* runner._fast_settle(value, state) -> value */
    PyObject *outcome;     /* runner._fast_outcome(state, params, exc, value, max_result) */
    PyObject *tail;        /* runner._fast_tail(envelope, result_text, state, out, err) -> str */
    PyObject *interrupted; /* RunInterrupted */
    PyObject *stringio;    /* io.StringIO */
    PyObject *pending;     /* pending.Pending: a result that is one is read here */
    PyObject *cache;       /* code -> (body, last, tokens, bound, snap, shapes, opts): private */
} H;

enum {
    K__current,
    K__parts,
    K__cut,
    K__shapes,
    K_code,
    K_early_interrupt,
    K_finished,
    K_interrupted,
    K_interruptible,
    K_made,
    K_mutations,
    K_stdout,
    K_stderr,
    K_stdin,
    K_writes,
    K_result,
    K_add_raw,
    K___builtins__,
    K_COUNT
};
static const char *const KEYS[K_COUNT] = {
    "_current", "_parts",      "_cut",          "_shapes", "code",      "early_interrupt",
    "finished", "interrupted", "interruptible", "made",    "mutations", "stdout",
    "stderr",   "stdin",       "writes",        "result",  "add_raw",   "__builtins__"};
static PyObject *S[K_COUNT];       /* KEYS, interned at serve() */
static PyObject *sysdict;          /* sys.__dict__ */
static long long n_fast, n_python; /* requests answered here / by the Python handler */

/* d[k] borrowed, or NULL (an error in a key's __eq__ is cleared: absent) */
static PyObject *dget(PyObject *d, PyObject *k)
{
    PyObject *v = PyDict_GetItemWithError(d, k);
    if (!v)
        PyErr_Clear();
    return v;
}

/* ---- the plain request ----------------------------------------------------------------- */

struct plain {
    long long id;
    PyObject *text;                    /* borrowed: the request's text */
    PyObject *code, *run_id, *session; /* borrowed from q */
    int reset;
    Py_ssize_t max_output, max_result;
    PyObject *opts;   /* new ref: (validate, dry_run, allow_mutations) */
    PyObject *params; /* new ref, built from text when a Python step needs it (pyr_params) */
    struct pyq_run q;
};

/* The options tuples of a run without allow_mutations, built once: [validate][dry_run]. */
static PyObject *opts_none[2][2];

/* Is text a run request the fast path takes? Fills p and returns 1 (release it with
 * pyr_plain_release); 0 otherwise, with nothing to release. Reads only the text and
 * runner._sessions. */
static int pyr_plain(PyObject *text, struct plain *p)
{
    memset(p, 0, sizeof(*p));
    if (!pyq_scan_run(text, &p->q))
        return 0;
    struct pyq_run *q = &p->q;
    if (!q->fresh) {
        int known = PyDict_Contains(H.sessions, q->session);
        if (known <= 0) { /* the Python path adds the "variables were lost" note */
            PyErr_Clear();
            pyq_release(q);
            return 0;
        }
    }
    p->id = q->id;
    p->text = text;
    p->code = q->code;
    p->run_id = q->run_id;
    p->session = q->session;
    p->reset = q->reset;
    p->max_output = q->max_output;
    p->max_result = q->max_result;
    if (q->allow == Py_None)
        p->opts = Py_NewRef(opts_none[q->validate][q->dry]);
    else
        p->opts = PyTuple_Pack(3, q->validate ? Py_True : Py_False, q->dry ? Py_True : Py_False,
                               q->allow); /* new ref */
    if (!p->opts) {
        PyErr_Clear();
        pyq_release(q);
        return 0;
    }
    return 1;
}

/* p's references are released after the answer (pyafter.c). */
static void pyr_plain_release(struct plain *p)
{
    PyObject *refs[] = {p->opts, p->params, p->q.code, p->q.run_id, p->q.session, p->q.allow};
    for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
        pya_keep(refs[i]);
    p->opts = p->params = p->q.code = p->q.run_id = p->q.session = p->q.allow = NULL;
}

/* The request's params dict (borrowed from p), parsed on first use; NULL with an exception. */
static PyObject *pyr_params(struct plain *p)
{
    if (!p->params)
        p->params = pyq_params(p->text);
    return p->params;
}

/* ---- the cache -------------------------------------------------------------------------- */

/* The SDK snapshot and shapes table the runner validates against now (borrowed). */
static void pyr_snap(PyObject **snap, PyObject **shapes)
{
    *snap = dget(H.sdk_dict, S[K__current]);
    *shapes = dget(H.sdk_dict, S[K__shapes]);
    if (!*snap)
        *snap = Py_None;
    if (!*shapes || (PyDict_Check(*shapes) && PyDict_GET_SIZE(*shapes) == 0))
        *shapes = Py_None; /* `sdk.shapes() or None`, as runner._validate keys it */
}

/* Does the cached verdict hold for this run: same snapshot, shapes, options, and each of the
 * program's identifiers bound in the namespace as when it was validated? 1, 0, -1 error. */
static int pyr_entry_holds(PyObject *e, struct plain *p, PyObject *snap, PyObject *shapes)
{
    if (PyTuple_GET_ITEM(e, 4) != snap || PyTuple_GET_ITEM(e, 5) != shapes)
        return 0;
    int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(e, 6), p->opts, Py_EQ);
    if (same <= 0)
        return same;
    PyObject *tokens = PyTuple_GET_ITEM(e, 2), *bound = PyTuple_GET_ITEM(e, 3);
    /* A strong reference: a key's __eq__ in the namespace (agent code) may drop it from
     * runner._sessions while we look. */
    PyObject *ns = p->reset ? NULL : Py_XNewRef(PyDict_GetItemWithError(H.sessions, p->session));
    if (!ns && PyErr_Occurred())
        return -1;
    int rc = 1;
    if (ns && !PyDict_CheckExact(ns))
        rc = 0;
    const char *b = PyBytes_AS_STRING(bound);
    for (Py_ssize_t i = 0; rc == 1 && i < PyTuple_GET_SIZE(tokens); i++) {
        int has = ns ? PyDict_Contains(ns, PyTuple_GET_ITEM(tokens, i)) : 0;
        if (has < 0)
            rc = -1;
        else if (has != (b[i] == '1'))
            rc = 0;
    }
    Py_XDECREF(ns);
    return rc;
}

/* The cache entry for this run (new ref), or NULL: the Python path takes it (no exception)
 * or an error (exception set). */
static PyObject *pyr_entry(struct plain *p)
{
    PyObject *snap, *shapes, *got = NULL, *e = PyDict_GetItemWithError(H.cache, p->code);
    pyr_snap(&snap, &shapes);
    if (e) {
        Py_INCREF(e); /* agent code runs in the check (a namespace key's __eq__) */
        int ok = pyr_entry_holds(e, p, snap, shapes);
        if (ok)
            return ok < 0 ? (Py_DECREF(e), NULL) : e;
        Py_DECREF(e);
    } else if (PyErr_Occurred()) {
        return NULL;
    }
    PyObject *params = pyr_params(p); /* borrowed */
    got =
        params ? PyObject_CallFunctionObjArgs(H.prepare, p->code, p->session, params, NULL) : NULL;
    if (!got || got == Py_None || !PyTuple_CheckExact(got) || PyTuple_GET_SIZE(got) != 4 ||
        !PyCode_Check(PyTuple_GET_ITEM(got, 0)) ||
        (PyTuple_GET_ITEM(got, 1) != Py_None && !PyCode_Check(PyTuple_GET_ITEM(got, 1))) ||
        !PyTuple_CheckExact(PyTuple_GET_ITEM(got, 2)) ||
        !PyBytes_CheckExact(PyTuple_GET_ITEM(got, 3)) ||
        PyBytes_GET_SIZE(PyTuple_GET_ITEM(got, 3)) != PyTuple_GET_SIZE(PyTuple_GET_ITEM(got, 2))) {
        Py_XDECREF(got);
        return NULL; /* an exception from prepare stays set: the caller answers with it */
    }
    pyr_snap(&snap, &shapes); /* prepare may have installed the SDK the verdict is for */
    e = Py_BuildValue("(OOOOOOO)", PyTuple_GET_ITEM(got, 0), PyTuple_GET_ITEM(got, 1),
                      PyTuple_GET_ITEM(got, 2), PyTuple_GET_ITEM(got, 3), snap, shapes, p->opts);
    Py_DECREF(got);
    if (!e)
        return NULL;
    if (PyDict_GET_SIZE(H.cache) >= PYR_CACHE_MAX) { /* drop the oldest */
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        if (PyDict_Next(H.cache, &pos, &k, &v)) {
            Py_INCREF(k);
            int rc = PyDict_DelItem(H.cache, k);
            Py_DECREF(k);
            if (rc < 0) {
                Py_DECREF(e);
                return NULL;
            }
        }
    }
    if (PyDict_SetItem(H.cache, p->code, e) < 0)
        Py_CLEAR(e);
    return e;
}

/* ---- one run ---------------------------------------------------------------------------- */

/* Runs the program's code objects in ns. Returns the value (new ref) or NULL with the
 * exception the code raised. SystemExit with code None or 0 ends the run normally. */
/* PyEval_EvalCode(co, ns, ns) as exec()/eval() call it: they first put the builtins back
 * into a namespace without "__builtins__" (one a run cleared). */
static PyObject *pyr_eval(PyObject *co, PyObject *ns)
{
    int has = PyDict_Contains(ns, S[K___builtins__]);
    if (has < 0 || (!has && PyDict_SetItem(ns, S[K___builtins__], PyEval_GetBuiltins()) < 0))
        return NULL;
    return PyEval_EvalCode(co, ns, ns);
}

static PyObject *pyr_exec(PyObject *body, PyObject *last, PyObject *ns)
{
    PyObject *v = pyr_eval(body, ns); /* new ref */
    if (!v) {
        if (!PyErr_ExceptionMatches(PyExc_SystemExit))
            return NULL;
        PyObject *type, *val, *tb;
        PyErr_Fetch(&type, &val, &tb);
        PyErr_NormalizeException(&type, &val, &tb);
        PyObject *code = val ? PyObject_GetAttr(val, S[K_code]) : NULL; /* new ref */
        PyObject *zero = PyLong_FromLong(0);
        int normal =
            code && zero && (code == Py_None || PyObject_RichCompareBool(code, zero, Py_EQ) == 1);
        Py_XDECREF(zero);
        Py_XDECREF(code);
        if (!normal) {
            PyErr_Clear();
            PyErr_Restore(type, val, tb);
            return NULL;
        }
        Py_XDECREF(type);
        Py_XDECREF(val);
        Py_XDECREF(tb);
        PyErr_Clear();
        last = NULL; /* exit() skips the final expression, as runner._run_body */
    } else {
        Py_DECREF(v);
        v = NULL;
    }
    if (last) {
        v = pyr_eval(last, ns);
        if (!v || v != Py_None)
            return v;
        Py_DECREF(v);
    }
    v = PyDict_GetItemWithError(ns, S[K_result]); /* borrowed */
    if (!v && PyErr_Occurred())
        return NULL;
    return Py_NewRef(v ? v : Py_None);
}

/* A value the envelope can carry without resolving: None, bool, exact int/float/str. */
static int pyr_scalar(PyObject *v)
{
    return v == Py_None || PyBool_Check(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v) ||
           PyUnicode_CheckExact(v);
}

/* 1 when every call the run made is finished (and the list is a list), 0 otherwise. */
static int pyr_calls_done(PyObject *state, Py_ssize_t *count)
{
    PyObject *made = pyrs_get(state, PYRS_MADE); /* new ref */
    int done = made && PyList_CheckExact(made);
    *count = done ? PyList_GET_SIZE(made) : 0;
    for (Py_ssize_t i = 0; done && i < *count; i++) {
        PyObject *f = PyObject_GetAttr(PyList_GET_ITEM(made, i), S[K_finished]);
        done = f == Py_True;
        Py_XDECREF(f);
    }
    Py_XDECREF(made);
    PyErr_Clear();
    return done;
}

/* The run's exception as one normalized value with its traceback (new ref). */
static PyObject *pyr_fetch(void)
{
    PyObject *type, *val, *tb;
    PyErr_Fetch(&type, &val, &tb);
    PyErr_NormalizeException(&type, &val, &tb);
    if (val && tb)
        PyException_SetTraceback(val, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return val;
}

/* Executes the code, between the swap of the interpreter state in and out. Returns the
 * value (new ref) or NULL with *exc the exception (new ref). State flags as runner._execute. */
static PyObject *pyr_execute(PyObject *e, PyObject *ns, PyObject *state, PyObject **exc)
{
    PyObject *value = NULL, *early = NULL, *was = NULL;
    *exc = NULL;
    if (pyrs_set(state, PYRS_INTERRUPTIBLE, Py_True) < 0)
        goto fail;
    early = pyrs_get(state, PYRS_EARLY); /* new refs */
    was = early ? pyrs_get(state, PYRS_INTERRUPTED) : NULL;
    if (!was)
        goto fail;
    if (early != Py_None && was != Py_True) { /* a cancel came while the run was starting */
        PyObject *inst = NULL, *reason = PyObject_Str(early);
        if (reason && pyrs_set(state, PYRS_INTERRUPTED, Py_True) == 0)
            inst = PyObject_CallOneArg(H.interrupted, reason);
        Py_XDECREF(reason);
        if (inst)
            PyErr_SetObject((PyObject *)Py_TYPE(inst), inst);
        Py_XDECREF(inst);
        goto fail;
    }
    PyObject *last = PyTuple_GET_ITEM(e, 1);
    value = pyr_exec(PyTuple_GET_ITEM(e, 0), last == Py_None ? NULL : last, ns);
    Py_ssize_t n;
    if (value && Py_TYPE(value) == (PyTypeObject *)H.pending) /* resolve()'s first step */
        Py_SETREF(value, PyObject_CallMethodNoArgs(value, S[K_result]));
    if (value && (!pyr_scalar(value) || !pyr_calls_done(state, &n)))
        Py_SETREF(value, PyObject_CallFunctionObjArgs(H.settle, value, state, NULL));
    if (!value)
        goto fail;
    goto done;
fail:
    *exc = pyr_fetch();
    if (!*exc) /* a failure that set nothing: report it as such rather than lose the run */
        *exc = PyObject_CallOneArg(PyExc_SystemError, S[K_result]);
done:
    Py_XDECREF(early);
    Py_XDECREF(was);
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb); /* the flags are set whatever happens (a signal, an error) */
    if (pyrs_set(state, PYRS_INTERRUPTIBLE, Py_False) < 0 ||
        pyrs_set(state, PYRS_FINISHED, Py_True) < 0)
        PyErr_Clear();
    PyErr_Restore(et, ev, etb);
    return value;
}

/* Output that went to fds 1 and 2 during the run, appended to the streams. */
static void pyr_fd_output(PyObject *streams)
{
    char *data[2];
    size_t len[2], cut[2];
    fflush(stdout);
    fdcap_end(&data[0], &len[0], &cut[0], &data[1], &len[1], &cut[1]);
    for (int i = 0; i < 2; i++) {
        if (len[i] || cut[i]) {
            PyObject *r =
                PyObject_CallMethod(PyTuple_GET_ITEM(streams, i), "add_raw", "y#n",
                                    data[i] ? data[i] : "", (Py_ssize_t)len[i], (Py_ssize_t)cut[i]);
            if (!r)
                PyErr_Clear();
            Py_XDECREF(r);
        }
        free(data[i]);
    }
}

/* a + decimal(n) + b into out (room for a, b and 20 digits): snprintf's
 * "%s%lld%s" without its ~700 instructions. */
static void pyr_fmt(char *out, const char *a, long long n, const char *b)
{
    char digits[24];
    int k = 0;
    unsigned long long u = n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
    do
        digits[k++] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    size_t la = strlen(a);
    memcpy(out, a, la);
    out += la;
    if (n < 0)
        *out++ = '-';
    while (k)
        *out++ = digits[--k];
    strcpy(out, b);
}

/* head + s + tail as a new str (head and tail ASCII); NULL with an exception. */
static PyObject *pyr_wrap(const char *head, PyObject *s, const char *tail)
{
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n); /* borrowed from s */
    if (!u)
        return NULL;
    size_t h = strlen(head), t = strlen(tail), len = h + (size_t)n + t;
    int ascii = PyUnicode_IS_ASCII(s);
    PyObject *out = ascii ? PyUnicode_New((Py_ssize_t)len, 127) : NULL; /* new ref */
    char *d = ascii ? (out ? (char *)PyUnicode_DATA(out) : NULL) : PyMem_Malloc(len);
    if (!d) {
        Py_XDECREF(out);
        return ascii ? NULL : PyErr_NoMemory();
    }
    memcpy(d, head, h);
    memcpy(d + h, u, (size_t)n);
    memcpy(d + h + (size_t)n, tail, t);
    if (!ascii) {
        out = PyUnicode_DecodeUTF8(d, (Py_ssize_t)len, "strict");
        PyMem_Free(d);
    }
    return out;
}

/* One plain run with its cache entry e (borrowed). Returns the reply (new ref), or NULL with
 * an exception when the runtime itself failed (the caller answers with an error). */
static PyObject *pyr_run(struct plain *p, PyObject *e)
{
    PyObject *snap, *shapes, *ns = NULL, *state = NULL, *streams = NULL, *in = NULL;
    PyObject *saved[3] = {NULL, NULL, NULL}, *value = NULL, *exc = NULL, *text = NULL;
    PyObject *outcome = NULL, *envelope = NULL, *env_json = NULL, *reply = NULL;
    Py_ssize_t calls = 0; /* here, not after the first goto, which would jump its initializer */
    int swapped = 0, failed = 0, recycle = 0;
    pyr_snap(&snap, &shapes);
    ns = pyrs_namespace(p->session, p->reset, snap);
    if (!ns || !PyDict_Check(ns))
        goto fail;
    state = pyrs_state(p->run_id);
    streams = state ? pyrs_streams(p->max_output) : NULL;
    if (!streams || !PyTuple_CheckExact(streams) || PyTuple_GET_SIZE(streams) != 2)
        goto fail;
    in = pya_stdin(H.stringio); /* input() ends at once instead of reading stdin */
    const char *rid = in ? PyUnicode_AsUTF8(p->run_id) : NULL;
    if (!rid || PyDict_SetItem(H.rs_dict, S[K__current], state) < 0)
        goto fail;
    for (int i = 0; i < 3; i++)
        saved[i] = Py_XNewRef(dget(sysdict, S[K_stdout + i])); /* borrowed -> new */
    swapped = 1;
    wsc_set_current_run(rid);
    if (PyDict_SetItem(sysdict, S[K_stdout], PyTuple_GET_ITEM(streams, 0)) < 0 ||
        PyDict_SetItem(sysdict, S[K_stderr], PyTuple_GET_ITEM(streams, 1)) < 0 ||
        PyDict_SetItem(sysdict, S[K_stdin], in) < 0)
        goto fail;
    fdcap_begin(p->max_output < 0 ? 0 : (size_t)p->max_output);

    value = pyr_execute(e, ns, state, &exc);
    if (!exc && pyr_calls_done(state, &calls))
        text = pyf_scalar_json(value, p->max_result > 0 ? (size_t)p->max_result : 0);
    if (!text) {
        PyObject *params = pyr_params(p); /* borrowed */
        outcome =
            params ? PyObject_CallFunction(H.outcome, "OOOOn", state, params, exc ? exc : Py_None,
                                           value ? value : Py_None, p->max_result)
                   : NULL;
        if (!outcome || !PyTuple_CheckExact(outcome) || PyTuple_GET_SIZE(outcome) != 2)
            failed = 1;
    }
    goto restore;
fail:
    failed = 1;
restore:
    if (swapped) {
        PyObject *et, *ev, *etb;
        PyErr_Fetch(&et, &ev, &etb);
        for (int i = 0; i < 3; i++)
            if (saved[i] && PyDict_SetItem(sysdict, S[K_stdout + i], saved[i]) < 0)
                PyErr_Clear();
        if (streams && PyTuple_CheckExact(streams) && PyTuple_GET_SIZE(streams) == 2)
            pyr_fd_output(streams);
        wsc_set_current_run(NULL);
        if (PyDict_SetItem(H.rs_dict, S[K__current], Py_None) < 0)
            PyErr_Clear();
        PyErr_Restore(et, ev, etb);
    }
    if (failed) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "the run's runtime hooks returned bad values");
        goto done;
    }
    if (text) {
        PyObject *mut = pyrs_get(state, PYRS_MUTATIONS); /* new ref */
        int plain = mut && PyList_CheckExact(mut) && PyList_GET_SIZE(mut) == 0 &&
                    pyrs_silent(PyTuple_GET_ITEM(streams, 0)) &&
                    pyrs_silent(PyTuple_GET_ITEM(streams, 1));
        Py_XDECREF(mut);
        PyErr_Clear();
        if (plain) { /* state.release() comes after the answer (pyrs_state_done) */
            recycle = 1;
            char head[96], tail[48];
            pyr_fmt(head, "{\"jsonrpc\":\"2.0\",\"id\":", p->id,
                    ",\"result\":{\"ok\":true,\"result\":");
            pyr_fmt(tail, ",\"calls\":", calls, "}}");
            reply = pyr_wrap(head, text, tail);
            goto done;
        } else {
            envelope =
                Py_BuildValue("{s:O,s:O,s:n}", "ok", Py_True, "result", value, "calls", calls);
            if (envelope)
                env_json = PyObject_CallFunctionObjArgs(H.tail, envelope, text, state,
                                                        PyTuple_GET_ITEM(streams, 0),
                                                        PyTuple_GET_ITEM(streams, 1), NULL);
        }
    } else {
        env_json = PyObject_CallFunctionObjArgs(
            H.tail, PyTuple_GET_ITEM(outcome, 0), PyTuple_GET_ITEM(outcome, 1), state,
            PyTuple_GET_ITEM(streams, 0), PyTuple_GET_ITEM(streams, 1), NULL);
    }
    if (env_json && PyUnicode_Check(env_json)) {
        char head[64];
        pyr_fmt(head, "{\"jsonrpc\":\"2.0\",\"id\":", p->id, ",\"result\":");
        reply = pyr_wrap(head, env_json, "}");
    } else if (env_json)
        PyErr_SetString(PyExc_TypeError, "the envelope is not a str");
done:
    /* Released after the answer, and the namespace checked then (pyafter.c). */
    if (ns && PyDict_Check(ns))
        pya_namespace(p->session, ns);
    PyObject *refs[] = {env_json, envelope, outcome,  text, exc,     value,
                        saved[0], saved[1], saved[2], in,   streams, ns};
    for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
        pya_keep(refs[i]);
    if (recycle)
        pya_state(state); /* released, then the next run's if nothing else holds it */
    else
        pya_keep(state);
    return reply;
}

/* ---- the loop --------------------------------------------------------------------------- */

/* The error reply for a run the runtime failed to carry out (the exception is consumed), as
 * worker_main.handle words it; NULL (exception kept) for one that must end the loop. */
static PyObject *pyr_failed(long long id)
{
    PyObject *exc = pyr_fetch(), *msg = NULL, *js = NULL, *reply = NULL;
    if (exc && !PyObject_IsInstance(exc, PyExc_Exception) &&
        !PyObject_IsInstance(exc, H.interrupted)) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
        return NULL;
    }
    if (exc && PyObject_IsInstance(exc, H.interrupted))
        msg = PyUnicode_FromString("interrupted while handling run");
    else if (exc)
        msg = PyUnicode_FromFormat("run failed: %s: %S", Py_TYPE(exc)->tp_name, exc);
    PyErr_Clear();
    js = msg ? pyf_scalar_json(msg, 0) : NULL;
    if (msg)
        log_warn("worker", "%s", PyUnicode_AsUTF8(msg) ? PyUnicode_AsUTF8(msg) : "run failed");
    PyErr_Clear();
    reply = PyUnicode_FromFormat("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32603,"
                                 "\"message\":%s}}",
                                 id, js ? PyUnicode_AsUTF8(js) : "\"run failed\"");
    Py_XDECREF(js);
    Py_XDECREF(msg);
    Py_XDECREF(exc);
    return reply;
}

/* One request: the reply (new ref; None for a notification) or NULL with an exception. */
static PyObject *pyr_request(PyObject *text)
{
    PyObject *reply = NULL;
    struct plain p;
    if (pyr_plain(text, &p)) {
        PyObject *e = pyr_entry(&p); /* new ref */
        if (e || PyErr_Occurred()) {
            reply = e ? pyr_run(&p, e) : NULL;
            n_fast += e != NULL;
            if (!reply)
                reply = pyr_failed(p.id);
            pya_keep(e);
            pyr_plain_release(&p);
            return reply;
        }
        pyr_plain_release(&p);
    }
    /* Anything else may change what a cached verdict assumed (an SDK, shapes, unavailable
     * servers): the Python path answers it and the cache starts over. */
    PyDict_Clear(H.cache);
    n_python++;
    return PyObject_CallOneArg(H.handle, text);
}

/* What the loop does with an exception from a request: 1 go on, 0 the connection is gone,
 * -1 stop (exception kept), as worker_main.serve did. */
static int pyr_after_error(void)
{
    if (PyErr_ExceptionMatches(PyExc_ConnectionError)) {
        PyErr_Clear();
        return 0;
    }
    if ((PyErr_ExceptionMatches(PyExc_SystemExit) ||
         PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) &&
        !PyErr_ExceptionMatches(H.interrupted)) {
        log_warn("worker", "stopping: %s", Py_TYPE(PyErr_Occurred())->tp_name);
        return -1;
    }
    PyObject *exc = pyr_fetch();
    PyObject *s = exc ? PyObject_Str(exc) : NULL;
    log_warn("worker", "request loop: %s: %s", exc ? Py_TYPE(exc)->tp_name : "?",
             s && PyUnicode_AsUTF8(s) ? PyUnicode_AsUTF8(s) : "");
    PyErr_Clear();
    Py_XDECREF(s);
    Py_XDECREF(exc);
    return 1;
}

static int pyr_hook(PyObject *hooks, const char *name, PyObject **out)
{
    PyObject *v = PyDict_GetItemString(hooks, name); /* borrowed */
    if (!v) {
        PyErr_Format(PyExc_KeyError, "serve(): hook %s missing", name);
        return -1;
    }
    *out = Py_NewRef(v);
    return 0;
}

const char pyr_serve_doc[] =
    "serve(hooks: dict) -> int\n--\n\n"
    "The worker's request loop (worker_main.main calls it once); 0 when the connection closed.";

PyObject *pyr_serve(PyObject *self, PyObject *hooks)
{
    (void)self;
    static int served;
    if (served) {
        PyErr_SetString(PyExc_RuntimeError, "serve() runs once per worker");
        return NULL;
    }
    if (!PyDict_Check(hooks)) {
        PyErr_SetString(PyExc_TypeError, "serve() takes a dict of hooks");
        return NULL;
    }
    if (pyr_hook(hooks, "handle", &H.handle) < 0 || pyr_hook(hooks, "prepare", &H.prepare) < 0 ||
        pyr_hook(hooks, "sessions", &H.sessions) < 0 ||
        pyr_hook(hooks, "rs_dict", &H.rs_dict) < 0 ||
        pyr_hook(hooks, "sdk_dict", &H.sdk_dict) < 0 || pyr_hook(hooks, "settle", &H.settle) < 0 ||
        pyr_hook(hooks, "outcome", &H.outcome) < 0 || pyr_hook(hooks, "tail", &H.tail) < 0 ||
        pyr_hook(hooks, "interrupted", &H.interrupted) < 0 ||
        pyr_hook(hooks, "stringio", &H.stringio) < 0 || pyr_hook(hooks, "pending", &H.pending) < 0)
        return NULL;
    if (!PyDict_Check(H.sessions) || !PyDict_Check(H.rs_dict) || !PyDict_Check(H.sdk_dict)) {
        PyErr_SetString(PyExc_TypeError, "serve(): sessions, rs_dict and sdk_dict are dicts");
        return NULL;
    }
    for (int i = 0; i < K_COUNT; i++)
        if (!(S[i] = PyUnicode_InternFromString(KEYS[i])))
            return NULL;
    PyObject *sys = PyImport_AddModule("sys"); /* borrowed */
    if (!sys || !(sysdict = Py_NewRef(PyModule_GetDict(sys))) || !(H.cache = PyDict_New()) ||
        pyrs_init(hooks) < 0)
        return NULL;
    for (int v = 0; v < 2; v++)
        for (int d = 0; d < 2; d++)
            if (!(opts_none[v][d] =
                      PyTuple_Pack(3, v ? Py_True : Py_False, d ? Py_True : Py_False, Py_None)))
                return NULL;
    served = 1;
    pys_init();
    for (;;) {
        PyObject *text = pch_next_text(); /* new ref */
        if (!text) {
            if (PyErr_ExceptionMatches(H.interrupted)) { /* a late cancel between runs */
                PyErr_Clear();
                continue;
            }
            if (PyErr_ExceptionMatches(PyExc_ConnectionError)) {
                PyErr_Clear();
                return PyLong_FromLong(0);
            }
            return NULL;
        }
        if (text == Py_None) {
            Py_DECREF(text);
            continue;
        }
        PyObject *reply = pyr_request(text); /* new ref */
        pya_keep(text);
        if (pys_strays()) {
            Py_BEGIN_ALLOW_THREADS;
            pys_end_strays(); /* after every request, before its reply goes out */
            Py_END_ALLOW_THREADS;
        }
        int rc = 1;
        if (!reply)
            rc = pyr_after_error();
        else if (reply != Py_None && pch_send_text(reply) < 0)
            rc = pyr_after_error();
        Py_XDECREF(reply);
        pya_after_answer(H.stringio); /* what could wait for the answer (see pyafter.h) */
        if (rc == 0)
            return PyLong_FromLong(0);
        if (rc < 0)
            return NULL;
    }
}

const char pyr_serve_stats_doc[] = "serve_stats() -> dict\n--\n\n"
                                   "How many requests the C loop answered itself (fast) and how "
                                   "many it gave to the Python handler (python).";

PyObject *pyr_serve_stats(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return Py_BuildValue("{s:L,s:L}", "fast", n_fast, "python", n_python);
}
