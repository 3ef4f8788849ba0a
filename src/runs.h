/* runs — execute_python requests from MCP sessions, from acceptance to the answer.
 *
 * A run belongs to a session and waits in its worker's queue (runs of one session are
 * serialized, like notebook cells: they share a namespace), is sent to the worker, may
 * make tool calls (control.c routes them), and ends with an envelope turned into the
 * MCP CallToolResult. The run timeout is owned here: at the deadline the worker gets a
 * cancel; past a grace period the worker is killed and respawned (workers.c).
 * Loop thread only. */
#ifndef CODEMCP_RUNS_H
#define CODEMCP_RUNS_H

#include <jansson.h>
#include <stdint.h>

struct run;

/* Validates `arguments` of tools/call execute_python and queues the run. Returns 0, or
 * -1 with a message in err for invalid params (the caller answers -32602). Borrows. */
int run_submit(uint64_t session_id, json_t *request_id, json_t *arguments, json_t *progress_token,
               char *err, size_t errlen);
/* notifications/cancelled from the client. */
void run_cancel_request(uint64_t session_id, json_t *request_id, const char *reason);
/* The session is gone: cancel its runs, forget its namespace. */
void run_session_closed(uint64_t session_id);
size_t run_active_count(void);
void run_free_all(void);

/* For CODEMCP_SMOKE: runs code in a private session and calls done(envelope) (borrowed). */
int run_smoke(const char *code, void (*done)(json_t *envelope, int is_error));

/* ---- for workers.c / control.c ---- */
struct run *run_find(const char *run_id);
uint64_t run_session(struct run *r);
int run_dry(struct run *r);
/* Whether the run may call write tool fn (server/tool): always when enforcement is off;
 * else allow_mutations must name it as "fn", "server/tool", "server.tool", "server:tool",
 * "server/<star>", "server.<star>", "server" or "<star>" (<star> = an asterisk; the forms the
 * validator accepts too). */
int run_mutation_allowed(struct run *r, const char *fn, const char *server, const char *tool);
/* Reports that one of the run's tool calls completed (for progress notifications). */
void run_call_done(struct run *r);
/* The worker answered the run (envelope borrowed) or died while running it (NULL, why). */
void run_finished(struct run *r, json_t *envelope, const char *failure);
/* A worker became idle: give it the next queued run, if any. */
void run_dispatch(void);
/* True while a run not yet finished was given this worker slot (workers.c never hands the
 * slot to another session before that). */
int run_uses_slot(int slot);

#endif
