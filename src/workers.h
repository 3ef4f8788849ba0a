/* workers — the pool of Python worker processes (codemcp-worker).
 *
 * Spawns workers with a scrubbed environment and a fresh random token each start,
 * tracks their control connection, keeps their SDK current (load_sdk on every catalog
 * change; a worker handles requests in order, so a reload never lands inside a run),
 * and restarts them after a crash or a kill. Sessions own workers here too: one
 * interpreter per session, never shared (see the sessions section of workers.c), ended
 * when the session closes, idles (CODEMCP_SESSION_IDLE_MS) or is evicted. Loop thread only. */
#ifndef CODEMCP_WORKERS_H
#define CODEMCP_WORKERS_H

#include <jansson.h>
#include <sys/types.h>
#include <stdint.h>

struct run;

/* max_workers >= 1. Chooses the isolation (CODEMCP_ISOLATION, probing the sandbox).
 * 0, -1 (no worker binary), -2 (the sandbox cannot be built: fail closed, logged). */
int wk_init(int max_workers);
/* Starts worker 0 ahead of the first run (called once upstreams settled, so Python's
 * start-up does not compete with theirs for the CPU). */
void wk_prewarm(void);
/* False when no worker binary was found (execute_python then fails clearly). */
int wk_available(void);
/* The worker slot a session's runs go to (owned by it from the first use), or -1 when every
 * slot runs another session's program (wk_start_failure(-1) says so). */
int wk_slot_for_session(uint64_t session_id);
void wk_session_closed(uint64_t session_id);
/* True when the slot can take a run now; otherwise makes sure it is starting. */
int wk_ready(int slot);
/* Sends the run request (params stolen). 0 / -1. */
int wk_start_run(int slot, struct run *r, json_t *params);
/* Sends a cancel for the run now executing on slot. */
void wk_cancel(int slot, const char *run_id, const char *reason);
/* Kills the worker (hard deadline passed); its run fails with `why`. */
void wk_kill(int slot, const char *why);
/* A start problem that makes queued runs fail (NULL when fine). */
const char *wk_start_failure(int slot);

/* From control.c: token check of a new connection → slot, or -1. */
int wk_authenticate(const char *token, uint64_t conn_id);
void wk_on_message(int slot, json_t *msg);
void wk_on_disconnect(int slot, uint64_t conn_id);
/* The run currently executing on slot (NULL if none). */
struct run *wk_current_run(int slot);
/* Catalog changed: push the new SDK to connected workers. */
void wk_on_catalog_changed(void);
/* Kills every worker (shutdown). done() when all are reaped. */
void wk_shutdown_all(void (*done)(void));
/* Resident set of the worker processes, in KiB (for bench/status). */
long wk_rss_kib(int slot);
int wk_pid(int slot);

/* 1 when pid is a worker that has not connected yet (it runs no agent code): the control
 * listener lets its connection through a flood (connlimit.h). */
int wk_is_starting(pid_t pid);

#endif
