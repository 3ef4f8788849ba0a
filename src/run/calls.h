/* calls — the worker's call_tool requests: routing and enforcement.
 *
 * control.c hands every call_tool request of an authenticated worker connection here. This
 * module checks it whatever the worker's Python claims: the run must be live and executing on
 * that worker, the tool must exist and be enabled, policy allows it, a write tool runs only
 * when the run authorized it, and a dry run's writes get a stub instead of going upstream.
 * Then it routes the call to upstream.c and sends the answer back on the connection.
 *
 * It must not know runs.c, workers.c or control.c: what it needs of a run, and how a reply
 * reaches the worker, come through the hooks registered once at start-up (main.c wires
 * them). Calls in flight are kept by connection id and run id, never by pointer.
 * Loop thread only. */
#ifndef CODEMCP_CALLS_H
#define CODEMCP_CALLS_H

#include "metrics.h"

#include <jansson.h>
#include <sys/uio.h>
#include <stdint.h>

/* A tool call (or a resource read) as it ended: filled once, at its one end, by the call path,
 * and handed to every observer registered with calls_observe (main.c registers the audit log
 * and the metrics when they are on; with none, no record is built). Strings are borrowed for
 * the callback only. */
struct call_event {
    const char *principal; /* NULL or "": not known (the run is not active) */
    uint64_t session;
    const char *run, *server, *tool, *fn;
    int listed; /* server/tool are in the catalog: labels a metric may carry */
    int read;   /* a resource read, not a tool call */
    int mutation, dry_run;
    const char *decision; /* "allow", "deny" or "dry_run" */
    const char *rule;     /* the policy rule or engine that decided ("" or NULL: none) */
    const char *reason;   /* why it was refused (NULL when it was not) */
    const char *outcome;  /* "ok", "error" (an isError result), "dry_run", or the error kind */
    enum mx_call_outcome result; /* the outcome as the metrics count it */
    int64_t duration_ms;
    const char *args; /* canonical JSON text of the arguments (NULL: none) */
    size_t args_len;
};

/* At most this many observers (the audit log, the metrics, and room for one more). */
#define CALLS_OBSERVERS 4
/* Registers fn to be handed every call's end. At start-up, before the first call. */
void calls_observe(void (*fn)(const struct call_event *e));

/* What enforcement needs to know of the run a call says it belongs to. */
struct trace_span;

struct calls_run {
    int dry_run;
    int enforce_mutations;
    json_t *allow_mutations; /* borrowed; only valid while the call is being checked */
    const char *principal;   /* who asked for the run (its results teach that one's shapes) */
    uint64_t session;        /* the session that asked for it (for the external policy engine) */
    const struct trace_span *span; /* the run's span, parent of the call's (NULL: untraced);
                                    * only valid while the call is being checked */
};

/* What the reply hooks return for a message longer than the worker reads. */
#define CALLS_TOO_LARGE (-2)

struct calls_hooks {
    /* Fills *out and returns 0 when run_id is live and executing on worker `slot`; else -1. */
    int (*run_lookup)(const char *run_id, int slot, struct calls_run *out);
    /* One of the run's tool calls completed (answered, failed or stubbed). */
    void (*call_done)(const char *run_id);
    /* A write tool call of the run ended: answered (ok: not an error result), stubbed by a dry
     * run (dry_run 1), or failed or cancelled after it was routed upstream (ok 0). The run's
     * `mutations` are made of these, never of what the worker reports. */
    void (*write_done)(const char *run_id, const char *server, const char *tool, int ok,
                       int dry_run);
    /* Sends msg (stolen) to the worker connection conn_id. -1 if it is gone, CALLS_TOO_LARGE
     * when it is longer than reply_limit() (nothing sent: the call fails with "too_large"). */
    int (*reply)(uint64_t conn_id, json_t *msg);
    /* Sends one message made of the n pieces of JSON text (a result spliced in as bytes);
     * returns as reply. iov[held] lies in *block (malloc'd) when block is set: the sender may
     * keep it until it is written instead of copying it (*block is then NULL: its to free). */
    int (*reply_parts)(uint64_t conn_id, const struct iovec *iov, int n, int held, char **block);
    /* The longest message reply and reply_parts send, named in the "too_large" error. */
    size_t (*reply_limit)(void);
    /* CODEMCP_MAX_CALLS_PER_RUN: a run's calls in flight at once (routed upstream or waiting
     * for its client's input); more wait in order, each started when one of the run's calls
     * ends (their time limit runs from then). 0: no bound. Each may bring back a reply of up to
     * 64 MiB, so the bound is what keeps one program from making the gateway hold thousands. */
    long max_per_run;
    /* CODEMCP_MAX_ARGS_BYTES_PER_RUN, CODEMCP_MAX_ARGS_BYTES_PER_PRINCIPAL: argument bytes of
     * calls in flight or waiting the gateway holds for one run, and for all the runs of one
     * principal; a call past either is refused with kind "denied". A program that starts many
     * calls with big arguments to a tool that does not answer cannot make the gateway hold
     * more. */
    size_t max_run_bytes, max_principal_bytes;
    /* Bytes queued to connection conn_id and not yet written to its worker. */
    size_t (*pending)(uint64_t conn_id);
    /* CODEMCP_MAX_RESULT_BYTES_PER_PRINCIPAL: bytes queued to the workers of one principal and
     * not yet read by them (results relayed to workers that do not read: stopped, or agent
     * code holding their sockets) past which a result of that principal's is dropped and its
     * call fails with kind "too_large" naming the setting (the call was made). Each worker is
     * also ended at CODEMCP_CONTROL_MAX_UNREAD; this bounds a principal's workers together. */
    size_t max_principal_results;
    /* The upstream answered a call of the run with an InputRequiredResult (borrowed): 1 when
     * the run relays it to its own client (the call then waits for calls_resume), 0 when the
     * call fails with kind "input_required" as before. NULL: never relayed. */
    int (*input_required)(const char *run_id, json_t *result);
};

/* Registers the hooks (copied). Call once before the first call_tool arrives. */
void calls_set_hooks(const struct calls_hooks *h);

/* One call_tool request (id and params borrowed) from connection conn_id, whose worker is
 * `slot`. Answers on the connection now (refusals, dry-run stubs) or when the upstream does. */
void calls_handle(uint64_t conn_id, int slot, json_t *id, json_t *params);
/* A worker's read_resource request {run_id, uri, timeout_ms?}: the run must be live on that
 * slot; the read goes to the server that lists the URI (up_resource_server), bounded by
 * timeout_ms (never more than CODEMCP_CALL_TIMEOUT_MS) and given up when the run ends, as its
 * calls are (calls_cancel_run, calls_conn_closed), and its ReadResourceResult back
 * to the worker as the reply, or an error with a kind (denied, not_found, transport...). At
 * most a fixed number of reads are in flight at once. */
void calls_read_resource(uint64_t conn_id, int slot, json_t *id, json_t *params);

/* A frame of connection conn_id (worker `slot`), read from its bytes when it is a call_tool
 * request in the form jf_dumps writes (jsonscan.h: compact, no duplicate key, ...) whose
 * run_id, server, tool and id need no unescaping: then handled as calls_handle would and 1 is
 * returned. 0: the frame was not looked at further; decode it as a tree (calls_handle or an
 * error). The worker is hostile: anything unusual in the frame gives 0. */
int calls_handle_frame(uint64_t conn_id, int slot, const char *text, size_t len);

/* The client answered the input the run's waiting call relayed: the call is sent again with
 * inputResponses (borrowed, may be NULL) and the server's requestState. 0, or -1 when the run
 * has no waiting call (the worker's call then already failed). */
int calls_resume(const char *run_id, json_t *input_responses);

/* Cancels the calls still in flight for a run (run ended or interrupted): the upstream gets
 * notifications/cancelled, the worker an error of kind "timeout" with `reason`. */
void calls_cancel_run(const char *run_id, const char *reason);

/* The connection is gone: its calls are cancelled upstream and never answered. */
void calls_conn_closed(uint64_t conn_id);

/* Whether write tool fn (server/tool) may run: always when enforcement is off; else
 * allow_mutations must name it as "fn", "server/tool", "server.tool", "server:tool",
 * "server/<star>", "server.<star>", "server" or "<star>" (<star> = an asterisk; the forms the
 * validator accepts too). O(len(allow_mutations)). */
int calls_mutation_allowed(const struct calls_run *run, const char *fn, const char *server,
                           const char *tool);

void calls_free_all(void);

#endif
