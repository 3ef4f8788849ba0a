/* pycall — `_codemcp.CallBase`, the C core of codemcp_rt.client._Call (issue 17): the record
 * of one call_tool request (its sixteen fields, set in one C __init__) and take(), which reads
 * the usual reply — one text block, see pyfast.h's text_result — without running Python.
 *
 * client.py subclasses it (every other method, and every unusual case of take(): a reply
 * already polled, a JSON-RPC error, structuredContent, a lost connection, a timeout, a
 * transport that is not the worker's) stays in Python, which also keeps a twin of this class
 * for plain python3. Must not: send, decide policy, or trust its fields — a program can reach
 * a call through `pending._wait.__self__` and set any of them; a wrong type gets the Python
 * path's exception (or TypeError), never a crash. Called with the GIL held. */
#ifndef CODEMCP_PYCALL_H
#define CODEMCP_PYCALL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds CallBase to the module `m`. 0, or -1 with an exception set. */
int pyc_add_type(PyObject *m);

#endif
