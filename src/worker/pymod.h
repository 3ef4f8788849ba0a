/* pymod — `_codemcp`, the built-in C module the worker host gives the Python runtime.
 *
 * Implements exactly the API of notes/pymod-api.md (send, next_request, wait_reply,
 * take_reply, forget, set_current_run, interrupt_reason, worker_id) plus
 * embedded_source(name) for the importer. A thin layer over wsclient: blocking calls
 * release the GIL and wait in slices of at most PYM_SLICE_MS, calling PyErr_CheckSignals()
 * between slices so the runtime's SIGUSR1 handler can raise inside them. */
#ifndef CODEMCP_PYMOD_H
#define CODEMCP_PYMOD_H

#define PYM_SLICE_MS 20

/* Registers `_codemcp` with PyImport_AppendInittab. Call before Py_Initialize*.
 * worker_id is what _codemcp.worker_id() returns. 0 or -1. */
int pym_register(long worker_id);

#endif
