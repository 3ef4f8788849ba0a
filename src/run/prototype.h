/* prototype — the gateway's side of the prototype ("zygote"): one sandboxed codemcp-worker
 * per gateway, with an initialised interpreter, the runtime and the current SDK loaded and no
 * thread running, which forks a worker per session copy-on-write (src/worker/forksrv.h), as
 * nginx Unit forks application processes from a prototype.
 *
 * Owns the prototype process (spawn, its control socketpair, respawn with back-off, the
 * crash-loop stop after PT_MAX_FAILED_STARTS starts that never became ready), keeping its SDK
 * current (every catalog or shapes change is pushed to it, then frozen for the collector),
 * and fork requests: the caller hands over the new worker's descriptors (its end of the
 * control socketpair, stdout, stderr and a status pipe) and learns the session's pid through
 * the `forked` hook. A prototype that dies leaves the sessions it forked running (they live in
 * namespaces nested in its sandbox, which lingers until the last one ends).
 * Knows nothing of slots' states or sessions (workers.c). Loop thread only. */
#ifndef CODEMCP_PROTOTYPE_H
#define CODEMCP_PROTOTYPE_H

#include <stdint.h>
#include <sys/types.h>

#define PT_MAX_FAILED_STARTS 3

struct pt_hooks {
    /* The prototype can fork (it started, or was replaced). */
    void (*ready)(void);
    /* It cannot start (PT_MAX_FAILED_STARTS in a row): pt_failure() says why. */
    void (*failed)(void);
    /* The fork request `gen` for slot was answered: pid is the session's PID 1 as the
     * gateway sees it (kill it to end the session's whole sandbox), -1 when it failed. */
    void (*forked)(int slot, uint64_t gen, pid_t pid);
};

/* sandboxed: the prototype builds the sandbox (CODEMCP_ISOLATION=sandbox); memory_mb goes
 * into the environment (the forked workers apply it); a prototype not ready within
 * start_timeout_ms (CODEMCP_WORKER_START_TIMEOUT_MS) is killed. */
void pt_init(int sandboxed, long memory_mb, long start_timeout_ms, const struct pt_hooks *h);
/* Starts the prototype if it is down (no-op while starting or ready, or after failure). */
void pt_start(void);
/* The same in the background (SCHED_IDLE), so that its start yields the CPU at once to the
 * upstreams' (which initialize waits for); no-op when we could not raise it back. */
void pt_start_background(void);
/* Raises a background prototype back to the gateway's priority (before any fork). 0, or -1:
 * it could not, and that prototype is replaced by one started normally. */
int pt_foreground(void);
/* 1 when fork requests can be sent now. */
int pt_ready(void);
/* Why the prototype cannot start, or NULL. */
const char *pt_failure(void);
/* Asks for a worker for slot, running as the id range's place ids (sbx_fork_session): fds[4] =
 * control socket, stdout, stderr, status pipe (write ends; the caller closes its copies after
 * the call). token: its first frame. gen is
 * echoed by the `forked` hook. 0 sent, -1 (not ready, or the send failed: the prototype is
 * then replaced). */
int pt_fork(int slot, int ids, uint64_t gen, const char *token, const int fds[4]);
/* The SDK and shapes versions a worker forked now starts with: 1 with both set, 0 while a
 * reload is on its way to the prototype (the worker then gets the SDK after it connects). */
int pt_versions(int *sdk, int *shapes);
/* Catalog or shapes changed: the prototype loads the new SDK (sessions forked later have it). */
void pt_on_catalog_changed(void);
/* Shutdown: kills the prototype and every sandbox it leaves, sessions included; gone() once
 * all of them are reaped (at once when there is none). */
void pt_shutdown(void (*gone)(void));

#endif
