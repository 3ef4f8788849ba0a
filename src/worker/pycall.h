/* pycall — `_codemcp.CallBase`, the C core of codemcp_rt.client._Call, and
 * `_codemcp.issue`, client.call()'s usual case. CallBase is the record
 * of one call_tool request (its sixteen fields, set in one C __init__) and take(), which reads
 * the usual reply — one text block, see pyfast.h's text_result — without running Python.
 *
 * client.py subclasses it (every other method, and every unusual case of take(): a reply
 * already polled, a JSON-RPC error, structuredContent, a lost connection, a timeout, a
 * transport that is not the worker's) stays in Python, which also keeps a twin of this class
 * for plain python3. Must not: decide policy (the gateway re-checks every request; issue() only
 * sends what client.call() would), or trust its fields — a program can reach
 * a call through `pending._wait.__self__` and set any of them; a wrong type gets the Python
 * path's exception (or TypeError), never a crash. Called with the GIL held. */
#ifndef CODEMCP_PYCALL_H
#define CODEMCP_PYCALL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* issue(state, server, tool, args, timeout_ms, tools, ids, Call, Pending, transport, check)
 *   -> Pending | None: client.call()'s usual case in one C call — a run is current, no write
 * of it is unanswered, (server, tool) is in client's tool cache and the arguments are flat
 * scalars (pyfast.h's call_frame): the arguments pass argguard (`check`, called only when a
 * value's type is not in the cache entry's certain types), the _Call is made and recorded,
 * the frame sent, the Pending returned. None for anything else (nothing was recorded or
 * sent): the Python path then does it all; check()'s InvalidArguments is raised as it is.
 * Every argument is checked (exact types) before use. */
PyObject *pyc_issue(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char pyc_issue_doc[];

/* Adds CallBase to the module `m`. 0, or -1 with an exception set. */
int pyc_add_type(PyObject *m);

#endif
