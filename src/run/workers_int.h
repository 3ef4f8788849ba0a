/* workers_int — what the three parts of the worker pool share (not for other modules):
 * workers.c (slots' lifecycle, runs, control-channel events, shutdown), worker_spawn.c
 * (starting a slot's process: exec'd, or forked by the prototype; killing it) and
 * worker_sessions.c (which session owns which slot). The short names below are the pool's
 * globals (defined in workers.c). Loop thread only. */
#ifndef CODEMCP_WORKERS_INT_H
#define CODEMCP_WORKERS_INT_H

#include "jsonrpc.h"
#include "log.h"
#include "loop.h"
#include "workers.h"
#include "worker_proc.h"

#include <stdint.h>
#include <sys/types.h>

enum wk_state { WK_DOWN, WK_STARTING, WK_READY, WK_BUSY };

struct worker {
    int slot;
    int ids;     /* its process's place in the sandbox id range (next_ids) */
    int id_turn; /* which of the slot's places that is */
    enum wk_state state;
    pid_t pid;
    char token[65];
    uint64_t conn_id;
    int sdk_sent;    /* catalog source version last sent */
    int shapes_sent; /* shapes version last sent */
    char run_id[32]; /* the run executing (BUSY), "" when none: the one record of where a run is */
    int64_t run_rpc_id;
    char *kill_reason; /* set when we kill it on purpose */
    int failed_starts;
    int runs_done; /* runs completed by the current process */
    char *start_failure;
    struct lp_timer start_timer;
    int64_t start_ms;  /* when the current start was asked for (the connected line says how long) */
    int64_t launch_ms; /* when it left the start queue (the start timeout runs from here) */
    uint64_t start_queued; /* STARTING but waiting for a start place: its queue order, else 0 */
    struct lp_timer restart_timer;
    struct lp_io *out_io, *err_io;
    struct rpc_lines out_lines, err_lines;
    int owned;          /* a session owns this slot (its one interpreter) */
    uint64_t session;   /* the owner, when owned */
    int64_t granted_ms; /* when the owner got it (CODEMCP_WORKER_MIN_HOLD_MS runs from here) */
    int ended_idle;     /* its process is being ended on purpose (evicted, idle, its session
                         * closed): its exit is not a failed start */
    int64_t last_used_ms;
    struct lp_timer idle_timer;
    char *notice;           /* for the owner's next answer (variables discarded) */
    int forked;             /* forked by the prototype (else exec'd) */
    int awaiting_pt;        /* STARTING, waiting for the prototype to be ready */
    uint64_t fork_gen;      /* the fork request in flight (answers for older ones are stale) */
    struct wkp_watch watch; /* sandboxed: the worker process itself, once known */
    int64_t cpu_budget_ms;  /* the running run's CPU time */
    int64_t cpu_until_ms;   /* where on the worker's CPU clock it ends (-1: not looked yet) */
    int cpu_limited;        /* its RLIMIT_CPU soft limit is set (lifted before the next run) */
    int64_t cpu_look_ms;    /* when the running run's first look is due (it has lasted a second) */
    struct lp_timer cpu_timer;      /* armed for the first look or earlier (worker_guard.c) */
    int64_t checked_rpc;            /* the run whose answer was last noted */
    int64_t answered_ms;            /* when: what a run leaves gets a grace from then (workers.c) */
    struct lp_timer leftover_timer; /* armed for answered_ms + the grace, or earlier */
    struct lp_io *st_io;
    unsigned char st_raw[sizeof(int)];
    int st_len;
    struct log_budget log_budget; /* its messages and output in the gateway's log */
};

#define hooks            wk__hooks
#define workers          wk__workers
#define n_workers        wk__n_workers
#define memory_mb        wk__memory_mb
#define sandboxed        wk__sandboxed
#define dockered         wk__dockered
#define use_prototype    wk__use_prototype
#define session_idle_ms  wk__session_idle_ms
#define min_hold_ms      wk__min_hold_ms
#define shutting_down    wk__shutting_down
#define next_rpc_id      wk__next_rpc_id
#define became_idle      wk__became_idle
#define end_current_run  wk__end_current_run
#define other_spare      wk__other_spare
#define id_count         wk__id_count
#define id_start         wk__id_start
#define idblock_claim    wk__idblock_claim
#define next_ids         wk__next_ids
#define on_worker_exit   wk__on_worker_exit
#define spawn            wk__spawn
#define hard_kill        wk__hard_kill
#define has_process      wk__has_process
#define start_queued_now wk__start_queued_now
#define arm_start_timer  wk__arm_start_timer
#define touch            wk__touch
#define pt_hooks_of_pool wk__pt_hooks
#define docker_init      wk__docker_init

/* worker_guard.c: the gateway's own limits on what a run leaves behind and the CPU it takes.
 * guard_before_run: 0 when the slot may take a run now (its worker watched, nothing of the last
 * run left, its CPU budget set), -1 not now. guard_answered: at the answer to its run.
 * guard_worker_died: the connection closed because the worker died (its exit says why).
 * guard_stop: its timers, when the process is gone. */
#define guard_before_run  wk__guard_before_run
#define guard_answered    wk__guard_answered
#define guard_worker_died wk__guard_worker_died
#define guard_stop        wk__guard_stop
int guard_before_run(struct worker *w, int64_t cpu_ms);
void guard_answered(struct worker *w);
int guard_worker_died(struct worker *w);
void guard_stop(struct worker *w);

extern struct wk_hooks hooks;
extern struct worker *workers;
extern int n_workers;
extern long memory_mb;
extern int sandboxed;     /* CODEMCP_ISOLATION=sandbox */
extern int dockered;      /* CODEMCP_ISOLATION=docker (worker_docker.h) */
extern int use_prototype; /* CODEMCP_PROTOTYPE (default on): fork workers from a prototype */
extern long session_idle_ms;
extern unsigned long id_count; /* places in the sandbox id range this gateway uses (0: none) */
extern unsigned long id_start; /* the range's first uid outside */
extern long min_hold_ms;       /* CODEMCP_WORKER_MIN_HOLD_MS */
extern long start_timeout_ms;  /* CODEMCP_WORKER_START_TIMEOUT_MS */
extern long start_concurrency; /* CODEMCP_WORKER_START_CONCURRENCY (-1: per CPU) */
extern int shutting_down;
extern int64_t next_rpc_id;

/* workers.c */
void became_idle(void);        /* hooks.idle: queued runs may be dispatched */
int wk__slot_in_use(int slot); /* runs.c's answer through hooks.slot_in_use */
/* Forgets the slot's run, then reports its end through hooks.run_ended. */
void end_current_run(struct worker *w, json_t *envelope, const char *failure);
int other_spare(const struct worker *w); /* another unowned slot is up or coming up */
/* The id range's place for the slot's next process (w->ids, w->id_turn advance). */
int next_ids(struct worker *w);

/* worker_idblock.c: the block of the id range [start, start + count) this gateway's sessions
 * use, apart from the blocks other gateways of the same user hold; its first place in *base.
 * Returns the block's size (count itself when the range is not shared out). */
unsigned long idblock_claim(unsigned long start, unsigned long count, unsigned long n_workers,
                            unsigned long *base);
/* The slot's process ended (status as from waitpid): its run fails, restart or back off. */
void on_worker_exit(void *ud, pid_t pid, int status);

/* worker_spawn.c */
struct settings;
/* CODEMCP_ISOLATION=docker, at start: the daemon answers, stale containers are gone
 * (worker_docker.h, which only the spawn side includes). 0, or -1 (logged). */
int docker_init(const struct settings *s);
int spawn(struct worker *w);      /* DOWN → STARTING: 0, -1 (start_failure says why) */
void hard_kill(struct worker *w); /* SIGKILL of the worker's whole sandbox or group */
/* The slot has a worker for hard_kill to end: a process, or in docker isolation (pid 0) a
 * container being made or running. */
int has_process(const struct worker *w);
/* (Re)starts the slot's CODEMCP_WORKER_START_TIMEOUT_MS: not connected by then, it is killed. */
void arm_start_timer(struct worker *w);
/* Launches queued starts while fewer than CODEMCP_WORKER_START_CONCURRENCY are under way
 * (became_idle calls it: every start that ends passes there). */
void start_queued_now(void);
struct pt_hooks;
extern const struct pt_hooks pt_hooks_of_pool; /* the prototype's hooks into the pool */

/* worker_sessions.c */
void touch(struct worker *w); /* the owner used it: restarts its idle timer */

#endif
