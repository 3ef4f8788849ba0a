/* pyrun — the worker's request loop and its usual `run` request in C (`_codemcp.serve`).
 *
 * worker_main.main() hands over once, at start, before any agent code runs: the loop then
 * reads every gateway request, answers the usual run itself and gives anything else to the
 * Python handler it was given (worker_main.handle). What it owns, out of reach of agent code
 * (no Python name leads to it): the loop itself, the run cache (program text -> code objects
 * and the validator's verdict, with the identifiers the verdict depends on), the verdict
 * check against the namespace, the interpreter-state swap of a run (runstate's current run,
 * sys.stdout/stderr/stdin, the fd capture, the interrupt target), the success envelope and
 * the reply frame, and the end-of-run stray-process check (pystray.c) after every request,
 * before its reply goes out. What the reply does not need waits until it is sent (pyafter.h).
 *
 * The fast path takes a run only when the request is plain (see pyr_plain in pyrun.c; its
 * text is read by pyreq.c); it decides before anything has happened, so a request it leaves
 * goes whole to the Python handler. Once it started a run it finishes it: failures, non-scalar
 * results, output and mutations are given to runner.py's _fast_* functions (the same code the
 * Python path uses). Never call into it from anywhere but worker_main.main(): serve() runs once per
 * process. */
#ifndef CODEMCP_PYRUN_H
#define CODEMCP_PYRUN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* serve(hooks: dict) -> int: the request loop; returns 0 when the connection closed. */
PyObject *pyr_serve(PyObject *self, PyObject *hooks);
extern const char pyr_serve_doc[];
/* serve_stats() -> {"fast": n, "python": n}: requests answered in C / by the Python handler
 * (a test's way to see which path a run took). */
PyObject *pyr_serve_stats(PyObject *self, PyObject *unused);
extern const char pyr_serve_stats_doc[];

#endif
