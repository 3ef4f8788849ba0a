/* runs — execute_python requests from MCP sessions, from acceptance to the answer.
 *
 * A run belongs to a session (which gets the answer) and to a namespace (namespaces.h: the
 * `namespace` handle, the session's implicit one, or a fresh one), whose home picks the
 * worker. It waits in that worker's queue (runs of one home are serialized, like notebook
 * cells: one interpreter); when its home has no worker yet and all are taken, it waits for one
 * in a fair queue (round-robin across principals, arrival order within one; bounded by
 * CODEMCP_RUN_QUEUE_MAX runs per principal and CODEMCP_RUN_QUEUE_WAIT_MS), is sent to the worker,
 * may make tool calls (calls.c routes and enforces them, asking run_call_rules), and ends with an
 * envelope turned into the MCP CallToolResult. The run timeout is owned here: at the deadline the
 * worker gets a cancel; past a grace period the worker is killed and respawned (workers.c). Runs
 * are referred to by their id ("r12") outside the run table (runs.c and its parts, runs_int.h).
 *
 * Below mcp_server.c, above workers.c and calls.c: answers, progress and log messages for a
 * session go up through the hooks registered at init (main.c wires them to mcp_server.c).
 * Loop thread only. */
#ifndef CODEMCP_RUNS_H
#define CODEMCP_RUNS_H

#include <jansson.h>
#include <stdint.h>

#include "calls.h"
#include "log.h"

struct trace_span;

struct run_hooks {
    /* Sends msg (stolen) on session session_id if it still exists; `related` is the id of
     * the request it answers or reports progress for (borrowed). */
    void (*send)(uint64_t session_id, json_t *msg, json_t *related);
    /* The same for a message given as its JSON text (len bytes, borrowed): a run's answer
     * spliced from the worker's bytes (run_answer.h). */
    void (*send_text)(uint64_t session_id, const char *text, size_t len, json_t *related);
    /* A log message about one of the session's runs (for MCP notifications/message; the
     * session decides whether its logging/setLevel lets it through). related as for send. */
    void (*log)(uint64_t session_id, enum log_level level, const char *text, json_t *related);
    /* Whether the session would take a log message at `level` (nothing is formatted if not). */
    int (*log_wanted)(uint64_t session_id, enum log_level level);
};
void run_set_hooks(const struct run_hooks *h);
struct settings;
/* Keeps the run limits (CODEMCP_EXEC_TIMEOUT_MS, CODEMCP_MAX_OUTPUT_BYTES, ...). Before the
 * first run. */
void run_init(const struct settings *s);

/* Validates `arguments` of tools/call execute_python and queues the run. session_id gets
 * the answer; home is the session's home (namespaces.h: itself for stdio and 2025 sessions,
 * the principal's for session-less requests); the run's namespace (the `namespace` handle,
 * or the implicit/fresh one) decides which worker runs it. client_caps: a 2026 request's
 * clientCapabilities (input a tool asks for is relayed to such a client, see runs.c), NULL
 * for 2025 clients. span: the MCP request's span (trace.h; may be NULL), taken on success
 * (the run's spans are its children and it ends with the answer), left to the caller on -1.
 * Returns 0, or -1 with a message in err for invalid arguments or a bad handle (the caller
 * answers with a tool error). Borrows the rest. */
int run_submit(uint64_t session_id, uint64_t home, json_t *request_id, json_t *arguments,
               json_t *progress_token, json_t *client_caps, struct trace_span *span, char *err,
               size_t errlen);
/* A retry of an execute_python request that got input_required: request_state is the
 * requestState it returned, input_responses (may be NULL) the client's answers. The waiting
 * run continues and answers request_id. Returns 0, or -1 with a message in err (unknown,
 * expired, answered, another principal's, other arguments; the caller answers with a
 * JSON-RPC error). Borrows. */
int run_resume(uint64_t session_id, uint64_t home, json_t *request_id, json_t *arguments,
               json_t *request_state, json_t *input_responses, json_t *progress_token,
               json_t *client_caps, char *err, size_t errlen);
/* notifications/cancelled from the client. */
void run_cancel_request(uint64_t session_id, json_t *request_id, const char *reason);
/* The session is gone: cancel its runs, forget its namespace. */
void run_session_closed(uint64_t session_id);
/* Gives idle workers their next queued runs, once every upstream has settled (a hook of
 * workers.c, and called by main.c when the upstreams change). */
void run_dispatch(void);
void run_free_all(void);
/* Runs not yet answered (queued, running or waiting for input): what a drain waits for. */
size_t run_count(void);

/* For CODEMCP_SMOKE: runs code in a private session and calls done(envelope) (borrowed). */
int run_smoke(const char *code, void (*done)(json_t *envelope, int is_error));

/* ---- hooks for the modules below (main.c registers them) ---- */
/* workers.c: the run ended on its worker (envelope borrowed, or NULL and why). */
void run_on_worker_ended(const char *run_id, json_t *envelope, const char *failure);
/* The same for a worker's answer given as the bytes of its envelope (env/len, borrowed;
 * checked by js_canon_value, NUL escapes allowed): answered from the bytes when it can be,
 * else from their tree, exactly as run_on_worker_ended would. */
void run_on_worker_answered(const char *run_id, const char *env, size_t len);
/* calls.c: 0 and the run's rules when run_id is live and executing on worker `slot`. */
int run_call_rules(const char *run_id, int slot, struct calls_run *out);
/* calls.c: a tool call of the run got an InputRequiredResult (borrowed): 1 when relayed to
 * the run's client (see runs.c), 0 when the call is to fail as before. */
int run_on_input_required(const char *run_id, json_t *result);
/* calls.c: one of the run's tool calls completed (for progress notifications). */
void run_on_call_done(const char *run_id);
/* calls_hooks.write_done: a write of the run ended (calls.h); listed in its answer. */
void run_on_write_done(const char *run_id, const char *server, const char *tool, int ok,
                       int dry_run);
/* workers.c: true while a run not yet finished was given this worker slot (workers.c never
 * hands the slot to another session before that). */
int run_uses_slot(int slot);

#endif
