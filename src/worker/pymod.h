/* pymod — `_codemcp`, the built-in C module the worker host gives the Python runtime.
 *
 * Implements the API of docs/pymod-api.md: the control channel (send, next_request,
 * wait_reply, take_reply, forget: pychan.h's calls as Python methods), the run's interrupt
 * state (set_current_run, interrupt_reason), worker_id, fd capture and log_fd, and
 * embedded_source(name) for the importer. Blocking calls release the GIL and block in one
 * wait, without slices. On the main thread a signal wakes the wait (pysigwake.c's pipe,
 * Python's wakeup fd): its handler runs (the runtime's SIGUSR1 handler raises
 * RunInterrupted for a cancel or the run's deadline) and the wait goes on unless it raised. */
#ifndef CODEMCP_PYMOD_H
#define CODEMCP_PYMOD_H

/* Registers `_codemcp` with PyImport_AppendInittab. Call before Py_Initialize*.
 * worker_id is what _codemcp.worker_id() returns. 0 or -1. */
int pym_register(long worker_id);
/* A prototype's forked child takes its own slot number (before any Python call). */
void pym_set_worker_id(long worker_id);

#endif
