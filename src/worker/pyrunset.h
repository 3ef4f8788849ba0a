/* pyrunset — the per-run objects pyrun.c needs, built in C in the usual case: the run's
 * namespace (runner._namespace's work when the namespace exists and has this SDK's names
 * already; the injected names are checked in place and put back only when one moved, see
 * "the injected names' places" in pyrunset.c; the check is made after the last run's answer
 * and taken as it was while nothing changed since, "the proof after the answer"), its RunState
 * (runstate.RunState without its __init__, its slots read and stored directly while the class
 * is unchanged; the last plain run's, reset, when nothing can tell it from a new one: "the run
 * state, reused") and its two capture streams (capture._stream's reuse of an unheld stream,
 * left as it is when the last run printed nothing).
 * Anything unusual is handed to the Python function that does the same (kept at init). GIL
 * held; functions returning an object give a new reference or NULL with an exception. */
#ifndef CODEMCP_PYRUNSET_H
#define CODEMCP_PYRUNSET_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* hooks: the dict serve() got ("namespace", "rn_dict", "sessions", "runstate", "streams",
 * "stream", "last", "capped"). 0, or -1 with an exception. */
int pyrs_init(PyObject *hooks /* borrowed */);

PyObject *pyrs_namespace(PyObject *session, int reset, PyObject *snap);
/* Drops `result` from ns (an exact dict or a subclass, borrowed). 1 when its value went with
 * it (its __del__, agent code, may have written to fds 1/2: the caller drains them), 0 when
 * there was none or it lives on elsewhere, -1 with an exception. */
int pyrs_drop_result(PyObject *ns);
/* After a run's answer: whether ns (the namespace pyrs_namespace gave it, borrowed) still has
 * the SDK's injected names in place, noted for the next pyrs_namespace of session (borrowed),
 * which takes it without the O(names) walk while ns and the injected names are unchanged.
 * Runs no Python code but a dict lookup's key __eq__; leaves no exception. */
void pyrs_check_namespace(PyObject *session, PyObject *ns);
/* RunState's slots, in runstate.py's order. */
enum {
    PYRS_RUN_ID,
    PYRS_RUN_ID_JSON,
    PYRS_MADE,
    PYRS_MUTATIONS,
    PYRS_WRITES,
    PYRS_INTERRUPTIBLE,
    PYRS_EARLY,
    PYRS_FINISHED,
    PYRS_INTERRUPTED,
    PYRS_NSLOTS
};
/* RunState(run_id): the spare (see pyrs_state_done) when nothing can tell it from a new one,
 * else a new one. */
PyObject *pyrs_state(PyObject *run_id);
/* After a plain run's answer: the state's call records dropped (release()) and the state kept
 * as the spare for the next run (steals st). A __del__ the release runs is agent code outside
 * any run (see pyafter.h). Leaves no exception; one pending is kept. */
void pyrs_state_done(PyObject *st);
/* getattr(state, slot) (new ref) and setattr(state, slot, v) (0/-1), read or stored in the
 * slot directly while RunState still resolves the name to its slot (see pyrs_init). Any
 * object may be given (before serve() and for another type: getattr/setattr). */
PyObject *pyrs_get(PyObject *state, int which);
/* The RunState class serve() was given (borrowed; NULL before). */
PyTypeObject *pyrs_state_type(void);
int pyrs_set(PyObject *state, int which, PyObject *v /* borrowed */);
/* 1 when nothing was written to a capture stream (no output, no count of cut bytes). */
int pyrs_silent(PyObject *stream);
/* (stdout, stderr) for a run capped at limit bytes each */
PyObject *pyrs_streams(Py_ssize_t limit);

#endif
