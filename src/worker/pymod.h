/* pymod — `_codemcp`, the built-in C module the worker host gives the Python runtime.
 *
 * Implements the API of docs/pymod-api.md: the control channel (send, next_request,
 * wait_reply, take_reply, forget), the run's interrupt state (set_current_run,
 * interrupt_reason), worker_id, fd capture and log_fd, and embedded_source(name) for the
 * importer. A thin layer over wsclient: blocking calls release the GIL and block in one
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

/* For pyrun.c (GIL held, Python.h included first): the next gateway request as a str (new
 * reference; waits, running signal handlers when a signal comes), or NULL with the exception
 * (ConnectionError, or what a handler raised); one text frame to the gateway, 0 or -1 with
 * the exception. */
PyObject *pym_next_text(void);
int pym_send_text(PyObject *text /* borrowed */);
/* The SDK call path's direct calls (pycall.c), for a transport `t` that is `_codemcp` itself
 * with its own wait_reply / send in place: t.wait_reply(id, timeout) without the attribute
 * lookup and the argument tuple (*indirect set, NULL returned, no exception: t is something
 * else, call the attribute), and t.send(text) (0, -1 with the exception, or -2: call the
 * attribute). All arguments borrowed. */
/* With keep (pym_wait_reply_direct), a reply that arrives is not made a str: its bytes go to
 * *keep (the caller frees keep->text) and Ellipsis is returned, so a big reply is parsed from
 * them without a copy of it as a str. */
struct pym_bytes {
    char *text;
    size_t len;
};
PyObject *pym_wait_reply_direct(PyObject *t, PyObject *id, PyObject *timeout, int *indirect,
                                struct pym_bytes *keep);
int pym_send_direct(PyObject *t, PyObject *text);

#endif
