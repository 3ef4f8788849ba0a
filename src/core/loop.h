/* loop — the gateway's one event loop, on the main thread: one epoll set, and a libwebsockets
 * context only once something needs one (lp_context: the HTTP front).
 *
 * Owns: the lws context, watched file descriptors (stdin/stdout, child pipes), timers,
 * child processes (spawn, SIGCHLD reaping through a signalfd), shutdown signals, and the
 * one cross-thread entry point (lp_post). Everything here runs on the loop thread except
 * lp_post(), which any thread may call.
 *
 * Nothing registered here may block: callbacks get data that is already read, and writes
 * are buffered and flushed when the descriptor is writable. */
#ifndef CODEMCP_LOOP_H
#define CODEMCP_LOOP_H

#include <libwebsockets.h>

#include "timerheap.h"
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct lp_io;

struct lp_io_ops {
    /* Bytes read from the descriptor (never zero-length). */
    void (*on_read)(void *ud, const char *data, size_t len);
    /* The descriptor reached EOF/error and is closed; the lp_io is freed after this. */
    void (*on_close)(void *ud);
    /* Optional: the descriptor is readable and the loop reads nothing (a listening socket:
     * accept here; what is not taken is reported again). Replaces on_read. */
    void (*on_ready)(void *ud);
};

/* Sets up the epoll set and the signals. 0 / -1. */
int lp_init(void);
/* The lws context for a module's vhost, made on the first call (from then on lws's service is
 * the loop's wait) with room for max_header_bytes of one HTTP request's headers (at most 64000;
 * 0: lws's 4 KiB); NULL if it cannot be made (logged). */
struct lws_context *lp_context(unsigned max_header_bytes);
/* Runs until lp_stop(). */
void lp_run(void);
void lp_stop(void);
void lp_destroy(void);

/* Watches fd (made non-blocking). `readable`: deliver reads; write-only pipes pass 0.
 * The loop owns the fd from now on and closes it. NULL on failure (fd closed). */
struct lp_io *lp_io_watch(int fd, int readable, const struct lp_io_ops *ops, void *ud);
/* Queues a line, data then "\n" (copied): it leaves at the end of this loop iteration,
 * together with whatever else this round queued for the descriptor (a reader woken once per
 * round, not once per line). Never blocks. -1 if closing. */
int lp_io_write_line(struct lp_io *io, const char *data, size_t len);
/* Queues len bytes (copied), as lp_io_write_line without the newline. -1 if closing. */
int lp_io_write(struct lp_io *io, const void *data, size_t len);
/* The buffer queued bytes wait in, for a writer that encodes straight into it instead of
 * making a text of its own to be copied (a 50 MB message held once, not twice): append to it
 * in this iteration (or cut back to where it was). NULL if closing. */
struct buf *lp_io_out(struct lp_io *io);
/* Queues len bytes at p, which lie in block (malloc'd), without copying them: block is the
 * loop's from now on, freed once they are written (or the descriptor closed). -1 if closing
 * (block is still the caller's). Never written nor freed before the caller returns to the
 * loop (writes and closes run at the end of the iteration, or once a descriptor's own
 * dispatch has returned): the caller may still read p until then, as calls_answer.c does to
 * learn a relayed result's shape after queuing it. Keep it so. */
int lp_io_hold(struct lp_io *io, char *block, const char *p, size_t len);
/* The descriptor (for getsockopt and the like; never read, write or close it). */
int lp_io_fd(const struct lp_io *io);
/* Bytes queued and not yet written. */
size_t lp_io_pending(struct lp_io *io);
/* Closes after flushing what is queued (on_close still fires). */
void lp_io_close(struct lp_io *io);
/* Closes at the end of this iteration without waiting for the peer to read: what is queued
 * is written as far as the descriptor takes it then (after this round's other writes), the
 * rest is dropped, so a peer that stops reading cannot keep it open (on_close still fires).
 * Nothing more is read or queued. Also cuts short an lp_io_close that waits to flush. */
void lp_io_close_nowait(struct lp_io *io);
/* Closes it and never calls its ops again (for an owner about to be freed). NULL is a no-op. */
void lp_io_detach(struct lp_io *io);

/* Work run at the end of the current loop iteration: after every event of this poll round
 * is handled, before the next poll. Writers use it to coalesce: the lines or frames one round
 * produces for a descriptor leave in one syscall (50 concurrent tool calls: one write to the
 * upstream, one to the worker, instead of 50 each). Embed it, zero it before first use;
 * deferring one that is already queued does nothing. Cancel it before freeing its owner. */
struct lp_deferred {
    void (*fn)(void *ud);
    void *ud;
    struct lp_deferred *next;
    int queued;
};
void lp_defer(struct lp_deferred *d, void (*fn)(void *ud), void *ud);
void lp_defer_cancel(struct lp_deferred *d);

/* One-shot timer owned by the caller (embed it; zero it before first use; stop it before
 * freeing it). All timers share one min-heap (timerheap.c) and one lws timer for the earliest
 * deadline: start and stop are O(log n) with thousands of calls in flight. Between equal
 * deadlines the timer started first fires first; a timer started (or restarted) from inside a
 * timer callback fires in a later round, never in the one that is running. */
struct lp_timer {
    struct th_node node;
    void (*cb)(void *ud);
    void *ud;
};
void lp_timer_start(struct lp_timer *t, int64_t ms, void (*cb)(void *ud), void *ud);
void lp_timer_stop(struct lp_timer *t);
/* 1 while t is started and has not fired or been stopped: a caller that only ever moves a
 * deadline later can leave an armed timer be and check the real deadline when it fires (a
 * start and a stop per event cost a heap insert, a removal and a clock read). */
static inline int lp_timer_armed(const struct lp_timer *t)
{
    return t->node.pos != 0;
}

/* Spawns argv with extra env ("K=V", may be NULL), cwd (may be NULL), and optionally a
 * fresh environment (clear_env: start from nothing but `env`). Pipes for stdin/stdout/
 * stderr are returned in fds[0..2] (parent ends; -1 where not wanted: want_* = 0 gives
 * /dev/null). SIGPIPE and the signal mask are restored in the child. Returns the pid or -1 (errno
 * set; *err_msg says why). */
struct lp_spawn_opts {
    char *const *argv;
    char *const *env;
    int clear_env;
    const char *cwd;
    int want_stdin, want_stdout, want_stderr;
    int keep_fd; /* > 2: becomes the child's fd 3 (e.g. a socketpair end); 0: none */
};
pid_t lp_spawn(const struct lp_spawn_opts *o, int fds[3], char *err_msg, size_t err_len);
/* Calls cb once when pid exits (status as from waitpid). One watcher per pid. */
void lp_on_child_exit(pid_t pid, void (*cb)(void *ud, pid_t pid, int status), void *ud);
/* Forgets the watcher (the child is still reaped). */
void lp_forget_child(pid_t pid);
/* How many spawned children have not been reaped yet. */
int lp_children_alive(void);

/* Runs fn(ud) on the loop thread soon. Safe from any thread. */
void lp_post(void (*fn)(void *ud), void *ud);

/* Called on SIGTERM/SIGINT (once); default: lp_stop(). */
void lp_on_shutdown_signal(void (*cb)(void));
/* Called on SIGHUP (each time); without one SIGHUP shuts down like SIGTERM. */
void lp_on_reload_signal(void (*cb)(void));
/* Called (inside lws's service, on the loop thread) each time lws fails to accept a
 * connection on any listener, with the errno. lws 4.1 leaves the listener readable, so
 * without a remedy EMFILE/ENFILE turn the loop into a busy loop (connlimit.c drains it). */
void lp_on_accept_failed(void (*cb)(int err));
/* A listener of our own (an lp_io with on_ready) failed to accept with errno err: logged as
 * lws's failures are (the first at once, then a count per 10 s) and passed to that callback.
 * For EMFILE/ENFILE the caller then returns to the loop (the callback has drained it). */
void lp_accept_failed(int err);
/* Raises the soft RLIMIT_NOFILE to the hard limit (call before lp_init: lws sizes its tables
 * from it); spawned children get the original limit back. Children are spawned in their own
 * process group with PR_SET_PDEATHSIG=SIGKILL, so they die with the gateway. */
void lp_raise_nofile(void);

#endif
