/* wsout — the worker's writes to the control connection: whole masked frames, one writer at
 * a time (wso.wmu), the reader's control frames (pong, close echo), and the cork that lets a
 * burst of frames leave in one send.
 *
 * The cork: a text frame sent less than WSO_CORK_US after the previous one, with no wait in
 * between (a program issuing call after call, each returning a pending result), is appended
 * to a buffer instead of written. The buffer goes out, in one send, ahead of the next frame
 * written at once, when any thread starts to wait (wso_flush, from wsclient's waits), or when
 * the cork timer fires (the watcher, wso_on_timer): so a frame waits at most WSO_CORK_US
 * even if agent code computes without waiting. The first frame of a burst is always written
 * at once: a single call is not delayed. Locks: wmu serialises frames on the wire; it is
 * taken before wsclient's mu, never after. A thread holding wmu never waits for the GIL.
 * Never calls Python. */
#ifndef CODEMCP_WORKER_WSOUT_H
#define CODEMCP_WORKER_WSOUT_H

#include <stddef.h>
#include <stdint.h>

#define WSO_CORK_US  500   /* the longest a corked frame waits */
#define WSO_CORK_MAX 65536 /* a burst's buffer: beyond this it is written */

/* Creates the cork timer (close-on-exec, non-blocking); seed seeds the frame masks. Returns
 * the timer's descriptor, for the watcher's epoll, or -1 (logged). */
int wso_init(uint64_t seed);
/* The connected socket; frames are written to it from now on. */
void wso_set_fd(int fd);
/* Writes one frame now, behind whatever is corked (one send for both). `secret`: wipe the
 * masked copy. 0, -1 (the connection is gone) or -2 (OOM). */
int wso_frame(int opcode, const void *payload, size_t len, int secret);
/* A text frame that may be corked (see above). Same returns as wso_frame. */
int wso_text(const char *text, size_t len);
/* A thread is about to wait: writes what is corked, and the next frame is written at once.
 * 0, or -1 when the connection is gone. */
int wso_flush(void);
/* The cork timer's descriptor was readable (watcher): writes what is corked unless another
 * thread is writing (it writes the cork with its frame). 0, or -1 (connection gone). */
int wso_on_timer(void);
/* The reader's control frame: stored (a newer one replaces an older one) and written when
 * wmu is free, by whoever frees it: the reader never waits for wmu (its holder may be
 * waiting for socket space that only our reading makes). */
void wso_control(int opcode, const void *payload, size_t len);
/* Writes a close frame (1000) unless another thread is writing; at shutdown. */
void wso_close(void);
/* Closes the timer and frees the cork. */
void wso_free(void);

#endif
