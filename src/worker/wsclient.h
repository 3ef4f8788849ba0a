/* wsclient — the worker's end of the control channel (WebSocket client, libwebsockets).
 *
 * Runs libwebsockets on its own service thread, which blocks every signal and never touches
 * Python. Other threads talk to it only through locked queues and lws_cancel_service():
 *   - wsc_send() queues one outgoing text frame (the first frame on the wire is the token);
 *   - incoming frames are routed on the service thread: JSON-RPC responses go to a reply
 *     table keyed by id, `cancel` notifications interrupt the current run (SIGUSR1 to the
 *     main thread), everything else goes to the request queue read by wsc_next_request().
 * All wait functions take a timeout in milliseconds (< 0 waits forever, 0 polls) and are
 * meant to be called in short slices by code that must also look at signals.
 * When the connection closes, every waiter is woken and the process is guaranteed to exit
 * within WSC_CLOSE_GRACE_MS even if the main thread is stuck (the gateway respawns us). */
#ifndef CODEMCP_WSCLIENT_H
#define CODEMCP_WSCLIENT_H

#include <pthread.h>
#include <stddef.h>

/* Incoming frames larger than this drop the connection (the contract's 64 MiB cap). */
#define WSC_MAX_FRAME (64u * 1024u * 1024u)
/* After the connection is gone, the service thread _exit()s the process after this delay
 * if the main thread has not called wsc_stop() by then. */
#define WSC_CLOSE_GRACE_MS 3000
/* Exit status used when the connection could never be established. */
#define WSC_EXIT_NO_CONNECT 3

/* Wait results. */
enum { WSC_CLOSED = -1, WSC_TIMEOUT = 0, WSC_OK = 1 };

/* Starts the service thread and begins connecting to url ("ws://host:port/path" or
 * "unix:/path/to.sock"). token is copied and wiped after it is sent. Signals that
 * interrupt a run go to `main_thread`. Returns 0, or -1 on a bad URL or lws failure
 * (logged). Call once. */
int wsc_start(const char *url, const char *token, pthread_t main_thread);

/* Stops the service thread, closes the connection and frees everything. Safe if
 * wsc_start() failed or was never called. */
void wsc_stop(void);

/* Queues a copy of text[0..len) as one text frame. Never blocks on the network.
 * Returns 0, -1 when the connection is closed (or was never started), -2 when out of
 * memory. The outgoing queue itself is not capped: RLIMIT_AS bounds it. */
int wsc_send(const char *text, size_t len);

/* Next gateway request (anything that is not a reply to us and not a cancel).
 * On WSC_OK *out and *out_len receive a malloc'd NUL-terminated copy (caller frees). */
int wsc_next_request(int timeout_ms, char **out, size_t *out_len);

/* The reply whose id is `id`; removes it from the table. Same conventions as above.
 * A reply that is already there is returned even if the connection has closed since. */
int wsc_wait_reply(const char *id, int timeout_ms, char **out, size_t *out_len);

/* Drops the reply for id now, or when it arrives later. */
void wsc_forget(const char *id);

/* Sets which run executes on the main thread (NULL: none). Clears any pending interrupt
 * reason. A cancel for a run that is not current is remembered (last 16): if that run
 * becomes current later, it is interrupted at once; otherwise it is ignored. */
void wsc_set_current_run(const char *run_id);

/* Returns the pending interrupt reason (malloc'd, caller frees) and clears it, or NULL. */
char *wsc_interrupt_reason(void);

/* 1 once the connection has closed or failed. */
int wsc_is_closed(void);
/* 1 if the WebSocket handshake ever completed. */
int wsc_was_connected(void);

#endif
