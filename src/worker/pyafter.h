/* pyafter — the work of a request that can wait until its answer has been sent.
 *
 * Between the run frame and the answer frame the worker should do only what the answer needs.
 * Three things that are not needed for it are done here instead, right after the answer went
 * out, while the worker would otherwise wait for its next request:
 *  - releasing the run's objects (its value, exception, state, streams, the request's strings)
 *    and a plain run's state.release() (the state is then the next run's, pyrunset.c):
 *    the deallocations (and whatever __del__ code of agent objects they run) come after the
 *    answer; a big result is sent before it is freed;
 *  - dropping `result` from a plain run's namespace (the next run would first thing), and
 *    the proof that the run's namespace still holds the SDK's injected names
 *    (pyrs_check_namespace, pyrunset.c), which the next run of the session then takes in O(1)
 *    while neither dict changed;
 *  - the next run's empty sys.stdin (an io.StringIO), made ready and kept out of reach.
 * Then output the release wrote to fds 1 and 2 is drained to the log and the sandbox's stray
 * check runs again (a __del__ may have forked).
 *
 * Only the request loop (pyrun.c) calls it, on the main thread, GIL held. Nothing kept here is
 * reachable from Python. */
#ifndef CODEMCP_PYAFTER_H
#define CODEMCP_PYAFTER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Keeps o until pya_after_answer() (steals the reference; NULL is ignored). When the list is
 * full, o is released at once. */
void pya_keep(PyObject *o);
/* After the answer, pyrs_state_done(state): a plain run's state released (its call records
 * dropped) and kept for the next run (steals the reference). */
void pya_state(PyObject *state);
/* After the answer, pyrs_check_namespace(session, ns) (both borrowed; new references are
 * kept until then). One namespace per request: a second call replaces the first. */
void pya_namespace(PyObject *session, PyObject *ns);
/* The run's sys.stdin: the StringIO made after the last answer, or a new one (new ref; NULL
 * with an exception). stringio is io.StringIO. */
PyObject *pya_stdin(PyObject *stringio);
/* Once the answer was sent (or could not be): releases what was kept, then checks the
 * namespace, makes the next stdin, drains fds 1/2 to the log and ends strays (GIL released
 * for that). A pending exception is kept as it was. */
void pya_after_answer(PyObject *stringio);

#endif
