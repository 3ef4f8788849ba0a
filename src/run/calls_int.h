/* calls_int.h — what the files of calls share (calls.c routes, calls_answer.c ends a call,
 * calls_gate.c counts what calls hold, calls_read.c reads resources): the call and gate records,
 * the hooks, the replies to a worker and the per-principal holds. Not for other modules. */
#ifndef CODEMCP_CALLS_INT_H
#define CODEMCP_CALLS_INT_H

#include "calls.h"
#include "metrics.h"
#include "policy.h"
#include "upstream.h"

#include <stddef.h>
#include <stdint.h>

extern struct calls_hooks calls__hooks;

/* One tool call routed for a worker, waiting for the upstream. Its strings but fn live in
 * `text`, one allocation with the call (50 concurrent calls were ~7 mallocs each). */
struct call {
    uint64_t conn_id;
    size_t held; /* argument bytes counted against its run and principal (calls__held_take) */
    json_t *id;
    char *id_text; /* id as JSON text, for the reply written around the result's bytes */
    char *run_id;
    char *server, *tool;
    char *fn;   /* its own allocation: known once the call is checked */
    char *args; /* canonical JSON text of the arguments (NULL: none), kept for a retry */
    size_t args_len;
    json_t *request_state; /* the server's, while waiting for input (may be NULL) */
    int waiting;           /* relayed input_required: waiting for calls_resume */
    int mutation;
    int slot;           /* the worker's, while the external policy engine is asked */
    int64_t timeout_ms; /* the program's own for this call (0: the server's default) */
    uint64_t up_handle;
    int64_t started_ms;
    int64_t sent_us;              /* when it went upstream, for the latency metric */
    enum mx_call_outcome outcome; /* counted when the call is freed */
    int listed;                   /* server/tool are in the catalog: labels the metrics may carry */
    char principal[64];           /* the run's: whose shapes and counts its result teaches */
    /* for its audit line (audit.h) */
    uint64_t session;
    int dry_run;
    enum policy_effect effect;
    char rule[128];
    struct trace_span *t_call; /* the tool call's span, and its upstream request's (NULL: */
    struct trace_span *t_up;   /* untraced, or none open) */
    struct call *next, **pprev;
    char text[]; /* id_text, run_id, server, tool, args: each NUL-terminated */
};

/* A byte string the call is made from, borrowed. */
struct slice {
    const char *p;
    size_t n;
};

/* A run with calls: how many are in flight and the ones waiting for a place, oldest first. */
struct gate {
    char *run_id;
    int in_flight;
    size_t held;              /* argument bytes of its calls in flight and waiting */
    struct call *head, *tail; /* linked by next */
    struct gate *next;
};

/* What a principal's calls hold: argument bytes (in flight or waiting), resource reads in
 * flight, and the worker connections its results were queued to that had not written them
 * all yet when last looked at (their unwritten bytes are what its results hold). One entry
 * per such connection, so as many as the principal has workers: only the bytes are capped. */
struct principal_hold {
    char *principal;
    size_t bytes;
    int reads;
    size_t n_conns, cap_conns;
    uint64_t *conns;
    struct principal_hold *next;
};
struct principal_hold *calls__held_find(const char *principal);
struct principal_hold *calls__held_get(const char *principal);
/* Frees h when it holds nothing and enough others are kept. */
void calls__held_drop_idle(struct principal_hold *h);

/* msg (stolen) to the worker on conn_id: as the reply hooks return (CALLS_TOO_LARGE...). */
int calls__reply(uint64_t conn_id, json_t *msg);
void calls__reply_error(uint64_t conn_id, json_t *id, const char *kind, const char *message,
                        int64_t elapsed_ms);
/* A result longer than the worker reads (what: whose result): kind "too_large". */
void calls__reply_too_large(uint64_t conn_id, json_t *id, const char *what, size_t len,
                            int64_t elapsed_ms);

/* calls_gate.c: the runs with calls (a gate each). */
extern struct gate *calls__gates;
struct gate *calls__gate_find(const char *run_id);
struct gate *calls__gate_get(const char *run_id);
/* Frees g once nothing of its run is in flight or waiting. */
void calls__gate_release(struct gate *g);
struct call *calls__gate_pop(struct gate *g);
int calls__gate_full(const struct gate *g);
/* Returns call's bytes to its run and principal. */
void calls__held_release(struct call *call);
/* Counts call's argument bytes against its run (g) and principal: 0, or -1 with why when
 * either would pass its cap (calls_hooks.max_run_bytes, max_principal_bytes). */
int calls__held_take(struct call *call, struct gate *g, char *why, size_t cap);
/* Whether a result of len bytes of call may be queued to its worker: 0, or -1 with why. */
int calls__results_room(const struct call *call, size_t len, char *why, size_t cap);
void calls__held_free_all(void);

/* calls.c: every call ends in calls__call_free (its outcome counted there, once); a call in
 * flight that ended frees its gate's place (the oldest waiting ones start at the end of the
 * loop iteration). */
void calls__call_free(struct call *call);
void calls__gate_done(const char *run_id);

/* calls_answer.c: the ends of a call. */
enum mx_call_outcome calls__outcome_of(const char *kind);
/* reply_error for a call that ends refused or failed: its spans say why. */
void calls__fail_call(struct call *call, const char *kind, const char *message, int64_t elapsed_ms);
void calls__call_done(const char *run_id);
/* A failed write that may have reached the server (the kinds the runtime's report counts). */
int calls__write_attempted(const char *kind);
void calls__write_done(const struct call *call, int ok, int dry_run);
/* The call ended with outcome (an error kind, "ok", "error" for an isError result,
 * "dry_run"); reason: why it was refused, NULL when it was not. Its one call_event, to the
 * observers; every call passes here exactly once, just before calls__call_free. */
void calls__ended(const struct call *call, const char *outcome, const char *reason);
/* Whether any observer is registered (none: no event is built), and the hand-off. */
int calls__observed(void);
void calls__emit(const struct call_event *e);
/* A refused call: answered with kind and why, audited, freed by the caller. */
void calls__refuse(struct call *call, const char *kind, const char *why);
/* A dry-run write: a deterministic stub with the keys dependent code usually reads. */
json_t *calls__dry_run_stub(const char *fn, const char *server, const char *tool);
/* up_call_tool's callback for every routed call (ud: the call). */
void calls__on_upstream_result(void *ud, const struct up_result *res, const struct up_error *err);

/* calls_read.c: the reads of run run_id (else of connection conn_id) are given up; the run's
 * are answered with kind "timeout" and reason. */
void calls__reads_cancel(const char *run_id, uint64_t conn_id, const char *reason);
void calls__reads_free_all(void);

#endif
