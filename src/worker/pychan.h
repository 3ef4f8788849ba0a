/* pychan — the control channel as the worker's Python code sees it: one request or reply as
 * a str, one text frame sent, with the GIL released around every wait and signal handlers
 * run when a signal comes.
 *
 * The `_codemcp` module (pymod.c) exposes these to the runtime as send / next_request /
 * wait_reply / take_reply; the request loop (pyrun.c) and the SDK call path (pycall.c) call
 * them directly. A layer over wsclient that knows nothing of who calls it, so those three
 * include it and it includes none of them. GIL held, Python.h included first. */
#ifndef CODEMCP_PYCHAN_H
#define CODEMCP_PYCHAN_H

#include <stddef.h>

/* A reply kept as bytes (see pch_wait): the caller frees text. */
struct pch_bytes {
    char *text;
    size_t len;
};

/* One blocking wait for the next gateway request (id NULL) or for the reply to id (borrowed
 * from something the caller keeps alive), up to timeout (seconds, a float or None for ever).
 * On the main thread a signal wakes it: its handler runs, and the wait goes on unless it
 * raised. Returns a new reference: the text as a str (invalid UTF-8 replaced), None on
 * timeout, or with keep the bytes in *keep and Ellipsis (a big reply is parsed from them
 * without a copy as a str); NULL with the exception (ConnectionError once the connection is
 * gone, or what a handler raised). */
PyObject *pch_wait(const char *id, PyObject *timeout, struct pch_bytes *keep);
/* pch_wait(NULL, None, NULL): the request loop's next request. */
PyObject *pch_next_text(void);
/* A reply already here for id, without waiting or dropping the GIL: wsclient's code (WSC_*,
 * wsclient.h); *res (new reference, as pch_wait) only for WSC_OK. */
int pch_ready_reply(const char *id, PyObject **res, struct pch_bytes *keep);
/* One text frame (a str, borrowed) to the gateway: 0, or -1 with the exception. */
int pch_send_text(PyObject *text);
/* Sets ConnectionError (the connection is closed) and returns NULL. */
PyObject *pch_closed_error(void);
/* The UTF-8 of a str argument of fn (borrowed), or NULL with TypeError, or ValueError for an
 * embedded NUL (the C side would see only the part before it). */
const char *pch_str_arg(PyObject *arg, const char *fn);

/* The SDK call path's direct calls (pycall.c), for a transport `t` that is `_codemcp` itself
 * with its own wait_reply / send in place: t.wait_reply(id, timeout) without the attribute
 * lookup and the argument tuple (*indirect set, NULL returned, no exception: t is something
 * else, call the attribute), and t.send(text) (0, -1 with the exception, or -2: call the
 * attribute). All arguments borrowed. */
PyObject *pch_wait_reply_direct(PyObject *t, PyObject *id, PyObject *timeout, int *indirect,
                                struct pch_bytes *keep);
int pch_send_direct(PyObject *t, PyObject *text);
/* The `_codemcp` module, once created (pymod.c), so the direct calls can tell it is `t`. */
void pch_set_module(PyObject *m);

#endif
