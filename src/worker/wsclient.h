/* wsclient — the worker's end of the control channel (a WebSocket client, RFC 6455 by hand).
 *
 * No thread owns the socket. A Python thread blocked in wsc_next_request()/wsc_wait_reply()
 * reads it itself (GIL released), and wsc_send() writes from the calling thread, so a tool
 * call costs no thread hand-off inside the worker. A watcher thread connects, then sleeps:
 * it wakes for a hang-up, or when Python has not waited for ½–1 × WSC_WATCH_DELAY_MS (agent code
 * computing), and only then reads, so that a `cancel` still interrupts the run.
 * Incoming messages are routed by whoever reads: JSON-RPC responses to a reply table keyed
 * by id, `cancel` notifications to the run interrupt (SIGUSR1 to the main thread),
 * everything else to the request queue read by wsc_next_request() (see inbox.h).
 * All wait functions take a timeout in milliseconds (< 0 waits forever, 0 polls) and block
 * for all of it: nothing needs slices. On the main thread a signal ends a wait early
 * (WSC_SIGNAL): one caught while the thread polls (EINTR), and one whose handler wrote to
 * the descriptor given to wsc_set_signal_fd() at any time before or during the wait, so a
 * signal that lands just before the wait blocks is not lost. One exception: a main-thread
 * wait with no timeout that reads the socket itself blocks in recv (one syscall per frame,
 * not poll + recv), so a signal caught in the instant before it blocks is only seen when
 * the next frame comes; cancels and the run's deadline come as frames, so they are not
 * delayed (a request wait while a run is current keeps the poll).
 * When the connection closes, every waiter is woken and the process is guaranteed to exit
 * within WSC_CLOSE_GRACE_MS even if the main thread is stuck (the gateway respawns us). */
#ifndef CODEMCP_WSCLIENT_H
#define CODEMCP_WSCLIENT_H

#include "wsproto.h"

#include <pthread.h>
#include <stddef.h>

/* After the connection is gone, the watcher thread _exit()s the process after this delay
 * if the main thread has not called wsc_stop() by then. */
#define WSC_CLOSE_GRACE_MS 3000
/* How long Python may go without waiting before the watcher starts reading for it: the
 * extra latency of a `cancel` that arrives while agent code computes. Shorter compute
 * phases (the usual case between tool calls) never wake the watcher. */
#define WSC_WATCH_DELAY_MS 10
/* Connecting and the opening handshake must finish within this. */
#define WSC_CONNECT_TIMEOUT_MS 30000
/* Exit status used when the connection could never be established. */
#define WSC_EXIT_NO_CONNECT 3

/* Wait results. */
enum { WSC_CLOSED = -1, WSC_TIMEOUT = 0, WSC_OK = 1, WSC_SIGNAL = 2 };

/* Starts the watcher thread, which connects to url ("ws://host:port/path" or
 * "unix:/path/to.sock") and sends token (copied, wiped after use) as the first frame.
 * Calls made before the connection is up wait for it. An incoming frame longer than
 * max_frame (the gateway's CODEMCP_CONTROL_MAX_FRAME) drops the connection. Signals that
 * interrupt a run go to `main_thread`. Returns 0, or -1 on a bad URL or a system error
 * (logged). Call once. */
int wsc_start(const char *url, const char *token, size_t max_frame, pthread_t main_thread);

/* Stops the watcher thread, closes the connection and frees everything. Safe if
 * wsc_start() failed or was never called. */
void wsc_stop(void);

/* Writes text[0..len) as one text frame from the calling thread. Blocks only while the
 * socket buffer is full (a frame of hundreds of KiB; the gateway reads continuously) or
 * another thread is writing, and while the connection is still being set up. Returns 0,
 * -1 when the connection is closed (or was never started), -2 when out of memory. */
int wsc_send(const char *text, size_t len);

/* Next gateway request (anything that is not a reply to us and not a cancel).
 * On WSC_OK *out and *out_len receive a malloc'd NUL-terminated copy (caller frees). */
int wsc_next_request(int timeout_ms, char **out, size_t *out_len);

/* The reply whose id is `id`; removes it from the table. Same conventions as above; with
 * timeout 0 it only looks at replies already read (no I/O). A reply that is already there
 * is returned even if the connection has closed since. */
int wsc_wait_reply(const char *id, int timeout_ms, char **out, size_t *out_len);

/* Drops the reply for id now, or when it arrives later. */
void wsc_forget(const char *id);

/* Sets which run executes on the main thread (NULL: none). Clears any pending interrupt
 * reason. A cancel for a run that is not current is remembered (last 16): if that run
 * becomes current later, it is interrupted at once; otherwise it is ignored. */
void wsc_set_current_run(const char *run_id);

/* Returns the pending interrupt reason (malloc'd, caller frees) and clears it, or NULL. */
char *wsc_interrupt_reason(void);

/* The read end of the pipe Python's C signal handler writes to (its wakeup fd; -1: none).
 * Waits on the main thread also end (WSC_SIGNAL) when it is readable; the caller drains
 * it. Call from the main thread. */
void wsc_set_signal_fd(int fd);
/* 1 when called on the main thread given to wsc_start(), the one signals interrupt. */
int wsc_on_main_thread(void);

/* 1 once the connection has closed or failed. */
int wsc_is_closed(void);
/* 1 if the WebSocket handshake ever completed. */
int wsc_was_connected(void);

#endif
