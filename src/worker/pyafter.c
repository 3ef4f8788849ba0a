/* pyafter — see pyafter.h. Its own file because pyrun.c, which would otherwise hold it, is at
 * its size limit; it owns only what waits for the answer, never anything the answer needs.
 *
 * What moves after the answer, and why that is safe:
 *  - A __del__ run by the release is agent code running outside any run, as one run by a
 *    thread the run left behind: sys.stdout/stderr/stdin are what they were before the run
 *    (pyrun.c restored them: the worker's own), no run is current (the gateway refuses an SDK
 *    call, "this run is not active"; a late cancel is dropped), the fd capture is off. It was
 *    already so before: pyrun.c released the same objects after that restore, only before the
 *    answer, and the value bound to `result` at the next run's start (now here, for a plain
 *    run: it is dropped from the namespace before the namespace's proof, so the next run only
 *    looks it up). Its print() goes through fd 1 (unbuffered) to the log; the drain below takes
 *    it there before the next run's capture could start, so it cannot land in that run's
 *    output. An exception in a __del__ is CPython's unraisable report (on the worker's stderr:
 *    the log).
 *  - What changes: such a __del__ now runs after the gateway has the answer, so one that blocks
 *    holds up the next request instead of its own run (a `result` value's __del__ did already).
 *  - pys_end_strays() stays before the answer (pyrun.c); it runs here again, after the release,
 *    so a process a __del__ forked does not live on until the next request's check.
 *  - The next run's StringIO is made here by the worker itself and kept untracked by the
 *    garbage collector until the run takes it: gc.get_objects() cannot hand it to an agent
 *    thread meanwhile (nothing else refers to it), so the run gets it as new. It holds no
 *    references, so untracked it cannot be part of a cycle; it is tracked again before any
 *    use (its dealloc expects a tracked object). */
#include "pyafter.h"
#include "fdcap.h"
#include "pyrunset.h"
#include "pystray.h"

#include <stdio.h>
#include <string.h>

#define PYA_KEEP_MAX 32 /* a fast run keeps ~20 references */

static PyObject *kept[PYA_KEEP_MAX];
static int n_kept;
static PyObject *ns_session, *ns_dict; /* for pyrs_check_namespace (owned) */
static PyObject *spare_in;             /* the next run's stdin, untracked (owned) */
static PyObject *done_state;           /* a plain run's RunState, to release (owned) */

void pya_keep(PyObject *o)
{
    if (!o)
        return;
    if (n_kept == PYA_KEEP_MAX) {
        Py_DECREF(o);
        return;
    }
    kept[n_kept++] = o;
}

void pya_state(PyObject *state)
{
    Py_XSETREF(done_state, state);
}

void pya_namespace(PyObject *session, PyObject *ns)
{
    Py_XSETREF(ns_session, Py_NewRef(session));
    Py_XSETREF(ns_dict, Py_NewRef(ns));
}

PyObject *pya_stdin(PyObject *stringio)
{
    PyObject *in = spare_in;
    spare_in = NULL;
    if (!in)
        return PyObject_CallNoArgs(stringio);
    if (!PyObject_GC_IsTracked(in))
        PyObject_GC_Track(in);
    return in;
}

/* The kept references, released in the order they were kept (the list is emptied first:
 * whatever a __del__ does, nothing is released twice). */
static void release_kept(void)
{
    PyObject *now[PYA_KEEP_MAX];
    int n = n_kept;
    memcpy(now, kept, (size_t)n * sizeof(*now));
    n_kept = 0;
    for (int i = 0; i < n; i++)
        Py_DECREF(now[i]);
}

void pya_after_answer(PyObject *stringio)
{
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    release_kept();
    PyErr_Clear();
    PyObject *state = done_state;
    done_state = NULL;
    if (state)
        pyrs_state_done(state); /* its release (pyrunset.c) */
    /* After the release: a __del__ that changed the namespace is in the proof. */
    PyObject *session = ns_session, *ns = ns_dict;
    ns_session = ns_dict = NULL;
    if (session && ns) {
        if (pyrs_drop_result(ns) < 0) /* the next run would drop it first thing */
            PyErr_Clear();
        pyrs_check_namespace(session, ns); /* after the drop: its note holds for the next run */
    }
    Py_XDECREF(session);
    Py_XDECREF(ns);
    PyErr_Clear();
    if (!spare_in && stringio) {
        spare_in = PyObject_CallNoArgs(stringio); /* new ref */
        if (spare_in && PyObject_GC_IsTracked(spare_in))
            PyObject_GC_UnTrack(spare_in);
        PyErr_Clear();
    }
    fflush(stdout); /* C code's buffered output, as pyrun.c does at a run's end */
    fdcap_settle();
    if (pys_strays()) {
        Py_BEGIN_ALLOW_THREADS;
        pys_end_strays();
        Py_END_ALLOW_THREADS;
    }
    PyErr_Restore(et, ev, etb);
}
