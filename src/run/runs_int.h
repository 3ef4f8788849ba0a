/* runs_int — what the four parts of the run table share (not for other modules): runs.c
 * (admission: arguments, the queue, cancellation, the table itself), run_dispatch.c (giving
 * queued runs a worker, fairly, and sending them), run_finish.c (deadlines, the answer, the
 * end of a run) and run_input.c (the input relay: minted requestStates and their tombs). The
 * settings below are set once by run_init (runs.c). Loop thread only. */
#ifndef CODEMCP_RUNS_INT_H
#define CODEMCP_RUNS_INT_H

#include "loop.h"
#include "namespaces.h"
#include "run_relay.h"
#include "runs.h"

#include <jansson.h>
#include <stdint.h>

enum run_state { RUN_QUEUED, RUN_SENT, RUN_DONE };

/* Why a sent run is being stopped before it answered. */
enum run_stop { STOP_NONE, STOP_TIMEOUT, STOP_CANCEL, STOP_BUDGET };

struct run {
    char id[32];
    uint64_t session_id; /* who gets the answer */
    uint64_t home;       /* whose worker runs it: the home of its namespace (namespaces.h) */
    struct ns_ref ns;    /* its namespace (nid 0: none, a smoke run) */
    json_t *request_id;
    json_t *progress_token;
    char *code;
    int64_t timeout_ms;
    int dry_run;
    int reset;
    json_t *allow_mutations;
    json_t *mutations; /* the writes calls.c routed for it (write_done), for the answer; NULL:
                        * none yet */
    int slot; /* the worker slot given to the run (-1: none yet; its home may own one): never
               * handed to another session before the run ends (run_uses_slot); which run a
               * worker executes is workers.c's to know */
    enum run_state state;
    enum run_stop stop;
    int silent; /* client cancelled: no answer */
    int calls_done;
    int ns_started;               /* counted as running in namespaces.c */
    struct trace_span *t_request; /* the MCP request's span (the caller's), the run's, and the */
    struct trace_span *t_run;     /* phase it is in (queue, then execute): NULL untraced */
    struct trace_span *t_phase;
    int64_t started_ms;
    int64_t queued_ms; /* when it was submitted (catalog's bounded wait for discovery runs) */
    struct lp_timer queue_timer; /* CODEMCP_RUN_QUEUE_WAIT_MS while queued */
    struct run **arrival;        /* runs.c dispatch_new's pointer to it while it dispatches */
    struct lp_timer deadline;
    struct lp_timer grace;
    int64_t deadline_at; /* when the deadline timer fires (paused while awaiting input) */
    void (*smoke_done)(json_t *envelope, int is_error);
    /* the input relay */
    json_t *arguments;   /* of the execute_python request, for matching a retry */
    json_t *client_caps; /* the 2026 client's capabilities (NULL: a 2025 client, no relay) */
    char principal[64];  /* who asked (namespaces.h ns_asker): its fair share, its retries */
    int awaiting;        /* answered input_required; waiting for the retry */
    char input_state[RUN_RELAY_STATE_MAX];
    int64_t time_left; /* of the run's deadline, while awaiting */
    struct lp_timer input_timer;
    struct run *next;
};

/* What a requestState we minted says once it is no longer pending. A run that ended while
 * its state was pending (its program stopped waiting for the call) keeps its answer here for
 * the retry, bound like the state to the principal and the arguments, until the state would
 * have expired: the client was told to retry, so the answer must not go to nobody. */
#define INPUT_TOMBS 64
struct input_tomb {
    char state[RUN_RELAY_STATE_MAX];
    const char *why;
    json_t *answer;    /* the ended run's CallToolResult, or NULL */
    json_t *arguments; /* with answer: of the execute_python request */
    char principal[64];
    int64_t until; /* with answer: when it is dropped */
};

extern struct run *run_list; /* in arrival order */
extern struct run_hooks runs_hooks;
extern int64_t run_cpu_ms; /* CPU time of a run's worker process; 0: its timeout_ms */
extern int64_t run_grace_ms;
extern long run_max_output_bytes;
extern int run_enforce_mutations;
extern int run_validate_programs;
extern int64_t run_input_wait_ms;

/* runs.c */
struct run *run_find(const char *run_id);
void run_free(struct run *r);
void run_send_to(struct run *r, json_t *msg);
void run_log(struct run *r, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* run_finish.c */
void run_finish(struct run *r, json_t *envelope, const char *failure);
void run_interrupt(struct run *r, enum run_stop stop);
void run_deadline_expired(void *ud);
void run_cpu_spent(const char *run_id, const char *why);

/* run_input.c */
struct input_tomb *run_input_end(struct run *r, const char *why);
void run_input_free_all(void);

#endif
