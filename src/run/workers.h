/* workers — the pool of Python worker processes (codemcp-worker).
 *
 * Spawns workers with a scrubbed environment and a fresh random token each start,
 * tracks their control connection, keeps their SDK current (load_sdk on every catalog
 * change; a worker handles requests in order, so a reload never lands inside a run),
 * and restarts them after a crash or a kill. Sessions own workers here too: one
 * interpreter per session, never shared (see the sessions section of workers.c), ended
 * when the session closes, idles (CODEMCP_SESSION_IDLE_MS) or is evicted. This module is the
 * one owner of "which run is on which worker": it keeps the executing run's id (never a
 * pointer) for as long as the worker runs it.
 *
 * Below runs.c, above control.c: it never includes runs.h. A run's end, a worker becoming
 * free, and the question whether a slot is still promised to a run go through the hooks
 * registered at init (main.c wires them to runs.c). Loop thread only. */
#ifndef CODEMCP_WORKERS_H
#define CODEMCP_WORKERS_H

#include <jansson.h>
#include <sys/types.h>
#include <stdint.h>

struct wk_hooks {
    /* The run run_id ended on its worker: envelope (borrowed) is the worker's answer, or
     * NULL and `failure` says why (the worker crashed, was killed, or answered an error).
     * The worker no longer counts the run as its own when this is called. */
    void (*run_ended)(const char *run_id, json_t *envelope, const char *failure);
    /* The same for an answer read as bytes (wk_on_frame): env/len is the envelope's text,
     * in jf_dumps' form (borrowed). */
    void (*run_answered)(const char *run_id, const char *env, size_t len);
    /* A worker can take a run now (it connected, finished a run, or a slot changed state):
     * queued runs may be dispatched. */
    void (*idle)(void);
    /* True while a run not yet finished was given this slot (the slot is then never handed
     * to another session). */
    int (*slot_in_use)(int slot);
};

struct settings;
/* CODEMCP_ISOLATION: sandbox (the default: probed now, failing closed), docker (the daemon
 * must answer) or host (warned). 0, or -2 when it cannot be had (logged). Call it before any
 * thread starts: the probe forks the gateway, and its child builds a sandbox with malloc and
 * stdio, which a lock held by another thread at the fork would hang for ever. */
int wk_choose_isolation(const struct settings *s);
/* max_workers >= 1; after wk_choose_isolation. Keeps the pool's settings. 0, or -1 (no worker
 * binary). */
int wk_init(const struct settings *s, int max_workers);
/* Registers the hooks (copied). */
void wk_set_hooks(const struct wk_hooks *h);
/* Starts worker 0 ahead of the first run (called once upstreams settled, so a worker's own
 * start does not compete with theirs for the CPU); a background prototype gets our priority. */
void wk_prewarm(void);
/* Starts the prototype workers are forked from (when they are, and CODEMCP_PROTOTYPE_EARLY is
 * on), at the gateway's start and in the background: its interpreter start-up runs beside the
 * upstreams' on what CPU they leave. */
void wk_prestart(void);
/* The default of CODEMCP_WORKER_MIN_HOLD_MS: how long a session keeps the slot it was given
 * before an idle one may be taken from it for a waiting run (bounds process starts per second
 * under saturation: at most CODEMCP_WORKERS per hold). */
#define WK_MIN_HOLD_MS_DEFAULT 1000
/* The worker slot a session's runs go to: its own (owned from the first use), else a free one,
 * else one taken from an idle session (namespaces.c's rule: fair share between principals);
 * -1 when none can be had now: the run waits, and the idle hook fires when that may change (a
 * run ends, a worker exits, a minimum hold ends). Callers ask in the order runs are to be
 * served (runs.c: round-robin across principals). */
int wk_slot_for_session(uint64_t session_id);
/* The slot the session owns now, or -1 (no side effect). */
int wk_session_slot(uint64_t session_id);
/* The session is gone: its worker is ended (its namespace with it). */
void wk_session_closed(uint64_t session_id);
/* Worker processes alive (a pid known), the prototype not counted. */
long wk_alive(void);
/* True when the slot can take a run now; otherwise makes sure it is starting. */
int wk_ready(int slot);
/* Sends the run request (params: the JSON text of its params object, len bytes, borrowed); the
 * slot then runs run_id (< 32 bytes), its worker process allowed cpu_ms of CPU time for it
 * (sandboxed workers: RLIMIT_CPU set from outside). 0 / -1 (not sent: try again later). */
int wk_start_run(int slot, const char *run_id, const char *params, size_t len, int64_t cpu_ms);
/* The id of the run executing on slot, NULL if none. */
const char *wk_running(int slot);
/* CPU time in ms that slot's worker and every process below it (what its runs started) have
 * used, read from outside (worker_proc.h wkp_tree_cpu_ms): -1 when not known (no process,
 * docker isolation), WKP_TREE_TOO_BIG when they are too many to measure. */
int64_t wk_cpu_ms(int slot);
/* Sends a cancel to the worker executing run_id (no-op if none). */
void wk_cancel_run(const char *run_id, const char *reason);
/* Kills the worker executing run_id (hard deadline passed); the run ends with `why`. */
void wk_kill_run(const char *run_id, const char *why);
/* A start problem that makes the slot's queued runs fail (NULL when fine). */
const char *wk_start_failure(int slot);

/* The control-channel hooks (main.c registers them with ctl_set_hooks): token check of a
 * new connection → slot, or -1; a worker's reply or notification; its connection closed. */
int wk_authenticate(const char *token, uint64_t conn_id);
void wk_on_message(int slot, json_t *msg);
/* A frame of slot's worker, before any decode: when it is the answer to the slot's run in
 * jf_dumps' form ({"jsonrpc":"2.0","id":<the run request's>,"result":{...}}, no `recycle`, no
 * notice to add), handles it as wk_on_message would and returns 1; otherwise 0 (decode it). */
int wk_on_frame(int slot, const char *text, size_t len);
void wk_on_disconnect(int slot, uint64_t conn_id);
/* ctl_hooks.broken: the run of this connection ends with why (the close follows). */
void wk_on_broken(int slot, uint64_t conn_id, const char *why);
/* Catalog or shapes changed: push the new SDK to connected workers. */
void wk_on_catalog_changed(void);
/* Kills every worker (shutdown). done() when all are reaped. */
void wk_shutdown_all(void (*done)(void));

/* 1 when pid is a worker that has not connected yet (it runs no agent code): the control
 * listener lets its connection through a flood (connlimit.h; a socketpair's peer, this
 * process, is trusted there). */
int wk_is_starting(pid_t pid);

#endif
