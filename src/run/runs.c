/* runs — see runs.h.
 *
 * Life of a run: QUEUED (waiting for its home's worker) → SENT (executing; the
 * deadline timer runs) → at the deadline a cancel goes to the worker and a grace timer
 * starts; past the grace the worker is killed (workers.c restarts it) → DONE. The MCP
 * answer is made from the worker's envelope plus the run's `namespace` handle by
 * run_answer.c (structuredContent and the same envelope as compact JSON text, isError on
 * failure): as a tree, or, for the usual success in jf_dumps' form, as bytes. A run
 * cancelled by the client is stopped and never answered, as MCP asks.
 *
 * Input relay (MCP 2026-07-28 multi round-trip requests, SEP-2322): when a tool call of the
 * run gets an InputRequiredResult and the run's client is a 2026 one that declared what the
 * server asks for (elicitation, sampling, roots), the execute_python request is answered with
 * an InputRequiredResult of our own: the server's inputRequests and a requestState we mint
 * (random, bound to the asking principal and to the request's arguments, one use, expiring
 * after CODEMCP_INPUT_WAIT_MS). The run stays on its worker, its deadline paused, detached from
 * the answered request (a closed HTTP request does not cancel it). The client's retry with
 * that requestState takes the run over: the waiting call goes again with the client's
 * inputResponses (calls.c) and the retry gets the run's answer. A retry with a requestState
 * that is unknown, expired, answered, another principal's or for other arguments gets a clear
 * error; one that never comes cancels the run at the expiry. A run that ends while its state is
 * pending (its program stopped waiting for the call) keeps its answer for the retry. One relayed
 * input per run at a time (a second call asking meanwhile fails with kind "input_required"). */
#include "runs.h"
#include "audit.h"
#include "policy.h"
#include "run_answer.h"
#include "run_cpu.h"
#include "run_relay.h"
#include "run_params.h"
#include "calls.h"
#include "catalog.h"
#include "jsonfast.h"
#include "jsonrpc.h"
#include "log.h"
#include "settings.h"
#include "loop.h"
#include "metrics.h"
#include "namespaces.h"
#include "upstream.h"
#include "util.h"
#include "trace.h"
#include "workers.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static struct input_tomb input_tombs[INPUT_TOMBS];
static size_t next_input_tomb;
static int64_t input_wait_ms;

static struct run *runs; /* in arrival order */
static uint64_t next_run = 1;
static int64_t default_timeout_ms = -1;
static int64_t max_timeout_ms;
static int64_t run_cpu_ms; /* CPU time of a run's worker process; 0: its timeout_ms */
static int64_t grace_ms;
static long max_output_bytes;
static int enforce_mutations;
static int validate_programs;
static long queue_max;        /* CODEMCP_RUN_QUEUE_MAX: runs one principal may have queued */
static int64_t queue_wait_ms; /* CODEMCP_RUN_QUEUE_WAIT_MS: how long one may wait to be sent */
static char served_last[64];  /* the principal whose waiting run got a worker last */
static int dispatching;
static struct run_hooks hooks;

void run_set_hooks(const struct run_hooks *h)
{
    hooks = *h;
}

static void send_to(struct run *r, json_t *msg)
{
    if (hooks.send)
        hooks.send(r->session_id, msg, r->request_id);
    else
        json_decref(msg);
}

static void run_log(struct run *r, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void run_log(struct run *r, enum log_level level, const char *fmt, ...)
{
    if (!hooks.log || r->smoke_done ||
        (hooks.log_wanted && !hooks.log_wanted(r->session_id, level)))
        return;
    char text[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    hooks.log(r->session_id, level, text, r->request_id);
}

void run_init(const struct settings *s)
{
    default_timeout_ms = s->exec_timeout_ms;
    max_timeout_ms = s->max_timeout_ms;
    run_cpu_ms = s->run_cpu_ms;
    if (max_timeout_ms < 1)
        max_timeout_ms = 1;
    if (default_timeout_ms > max_timeout_ms)
        default_timeout_ms = max_timeout_ms;
    grace_ms = s->kill_grace_ms;
    max_output_bytes = s->max_output_bytes;
    enforce_mutations = s->enforce_mutations;
    validate_programs = s->validate;
    input_wait_ms = s->input_wait_ms;
    queue_max = s->run_queue_max;
    queue_wait_ms = s->run_queue_wait_ms;
    if (queue_max < 1)
        queue_max = 1;
    if (queue_wait_ms < 1)
        queue_wait_ms = 1;
    if (input_wait_ms < 100)
        input_wait_ms = 100;
}

static struct run *run_find(const char *run_id)
{
    for (struct run *r = runs; r; r = r->next)
        if (strcmp(r->id, run_id) == 0 && r->state != RUN_DONE)
            return r;
    return NULL;
}

int run_call_rules(const char *run_id, int slot, struct calls_run *out)
{
    struct run *r = run_find(run_id);
    const char *on_slot = wk_running(slot);
    if (!r || r->state != RUN_SENT || !on_slot || strcmp(on_slot, run_id) != 0)
        return -1;
    out->dry_run = r->dry_run;
    out->enforce_mutations = enforce_mutations;
    out->allow_mutations = r->allow_mutations;
    out->principal = r->principal;
    out->session = r->session_id;
    out->span = r->t_run;
    return 0;
}

static void run_free(struct run *r)
{
    if (r->state != RUN_DONE) /* given up before it was sent (finish_with counts the rest) */
        mx_run_finished(r->principal, "cancelled", now_ms() - r->queued_ms);
    LIST_UNLINK(&runs, r);
    lp_timer_stop(&r->queue_timer);
    lp_timer_stop(&r->deadline);
    lp_timer_stop(&r->grace);
    lp_timer_stop(&r->input_timer);
    json_decref(r->request_id);
    json_decref(r->progress_token);
    json_decref(r->allow_mutations);
    json_decref(r->mutations);
    json_decref(r->arguments);
    json_decref(r->client_caps);
    explicit_bzero(r->input_state, sizeof(r->input_state));
    trace_end(r->t_phase);
    trace_end(r->t_run);
    trace_end(r->t_request);
    free(r->code);
    free(r);
}

/* The run's spans end with its outcome: kind NULL for a success, else its error kind (the
 * request span's error.type is tool_error, as the MCP conventions ask for isError). */
static void trace_finish(struct run *r, const char *kind)
{
    trace_fail(r->t_phase, kind, NULL);
    trace_fail(r->t_run, kind, NULL);
    trace_fail(r->t_request, kind ? "tool_error" : NULL, kind);
    trace_end(r->t_phase);
    trace_end(r->t_run);
    trace_end(r->t_request);
    r->t_phase = r->t_run = r->t_request = NULL;
}

static void tomb_drop_answer(struct input_tomb *t)
{
    json_decref(t->answer);
    json_decref(t->arguments);
    t->answer = t->arguments = NULL;
}

/* The pending requestState goes (why: what a retry with it is told). Returns its tomb (to
 * keep the run's answer in), or NULL when none was pending. */
static struct input_tomb *input_state_end(struct run *r, const char *why)
{
    if (!r->awaiting)
        return NULL;
    r->awaiting = 0;
    lp_timer_stop(&r->input_timer);
    int64_t now = now_ms();
    for (size_t k = 0; k < INPUT_TOMBS; k++) /* kept answers nobody came for */
        if (input_tombs[k].answer && now >= input_tombs[k].until) {
            tomb_drop_answer(&input_tombs[k]);
            input_tombs[k].why = "expired: nobody came for its run's answer within "
                                 "CODEMCP_INPUT_WAIT_MS";
        }
    struct input_tomb *t = &input_tombs[next_input_tomb++ % INPUT_TOMBS];
    tomb_drop_answer(t);
    memcpy(t->state, r->input_state, sizeof(t->state));
    t->why = why;
    explicit_bzero(r->input_state, sizeof(r->input_state));
    return t;
}

/* ---- answering ------------------------------------------------------------------------------ */

static json_t *failure_envelope(const char *why, const char *kind)
{
    return json_pack("{s:b, s:s, s:s}", "ok", 0, "error", why, "error_kind", kind);
}

/* Answers r (envelope borrowed); kept: the tomb of a requestState that was pending when the
 * run ended, where the answer waits for the client's retry instead. */
/* Bytes a run's answer may have: the runtime caps result, stdout and stderr at
 * CODEMCP_MAX_OUTPUT_BYTES each, and the gateway holds it to that whatever the worker sends
 * (the rest is room for JSON escapes, the trace and the error). 0: no cap. */
static size_t answer_cap(void)
{
    return max_output_bytes > 0 ? 4 * (size_t)max_output_bytes + ((size_t)256 << 10) : 0;
}

/* Why an answer of len bytes is refused, in why; 0 when it may go out. */
static int answer_too_large(size_t len, char *why, size_t cap)
{
    size_t max = answer_cap();
    if (!max || len <= max)
        return 0;
    snprintf(why, cap,
             "the worker's answer was %zu bytes, more than a run may answer (%zu: 4 x "
             "CODEMCP_MAX_OUTPUT_BYTES + 256 KiB); it was not sent",
             len, max);
    return 1;
}

static void answer(struct run *r, json_t *envelope, struct input_tomb *kept)
{
    int is_error = !json_is_true(json_object_get(envelope, "ok"));
    json_t *env = run_answer_envelope(envelope, r->ns.handle, r->mutations);
    json_t *blocks = json_object_get(envelope, "content");
    char *text = answer_cap() ? jf_dumps(env) : NULL;
    char *more = text && blocks ? jf_dumps(blocks) : NULL; /* they go out beside it */
    char why[300];
    if (text && answer_too_large(strlen(text) + (more ? strlen(more) : 0), why, sizeof(why))) {
        log_warn("runs", "%s: %s", r->id, why);
        json_t *failed = failure_envelope(why, "worker");
        json_decref(env);
        env = run_answer_envelope(failed, r->ns.handle, r->mutations);
        json_decref(failed);
        blocks = NULL;
        is_error = 1;
    }
    free(text);
    free(more);
    if (r->smoke_done) {
        r->smoke_done(env, is_error);
    } else if (!r->silent) {
        json_t *result = run_answer_result(env, blocks, is_error);
        if (kept) {
            kept->answer = result;
            kept->arguments = json_incref(r->arguments);
            memcpy(kept->principal, r->principal, sizeof(kept->principal));
            kept->until = now_ms() + input_wait_ms;
        } else {
            send_to(r, rpc_result(r->request_id, result));
        }
    }
    json_decref(env);
}

/* An envelope the client can read: a success, or a failure that says why (a string error,
 * as the runtime always writes it). Agent code answering its own run can send any object. */
static int readable_envelope(json_t *envelope)
{
    return json_is_object(envelope) && (json_is_true(json_object_get(envelope, "ok")) ||
                                        json_is_string(json_object_get(envelope, "error")));
}

/* The run ended: answer it (envelope borrowed, or NULL and why; or reply: the bytes of the
 * whole answer for a successful envelope, run_answer_text's) and free it. */
static void finish_with(struct run *r, json_t *envelope, const char *failure, const char *reply,
                        size_t reply_len)
{
    if (r->state == RUN_DONE)
        return;
    if (envelope && !readable_envelope(envelope)) {
        envelope = NULL;
        if (!failure)
            failure = "the worker's answer was neither a result nor an error";
    }
    r->state = RUN_DONE;
    rcpu_end(r->id);
    if (r->ns_started)
        ns_run_end(r->ns.nid);
    lp_timer_stop(&r->deadline);
    lp_timer_stop(&r->grace);
    struct input_tomb *kept = input_state_end(r, "ended: its run finished before the input came");
    calls_cancel_run(r->id, "the run ended");
    int64_t elapsed = now_ms() - r->started_ms;
    log_info("runs", "%s finished in %lld ms%s%s", r->id, (long long)elapsed, failure ? ": " : "",
             failure ? failure : "");
    const char *kind = r->stop == STOP_TIMEOUT  ? "timeout"
                       : r->stop == STOP_CANCEL ? "cancelled"
                       : r->stop == STOP_BUDGET ? "budget"
                                                : "worker";
    int ok = reply || json_is_true(json_object_get(envelope, "ok"));
    mx_run_finished(r->principal,
                    ok ? "ok"
                    : json_is_object(envelope)
                        ? json_string_value(json_object_get(envelope, "error_kind"))
                        : kind,
                    now_ms() - r->queued_ms);
    if (ok) {
        run_log(r, LOG_INFO, "%s finished in %lld ms (%d tool call%s)", r->id, (long long)elapsed,
                r->calls_done, r->calls_done == 1 ? "" : "s");
    } else if (json_is_object(envelope)) {
        const char *k = json_string_value(json_object_get(envelope, "error_kind"));
        run_log(r, LOG_WARN, "%s failed after %lld ms (%s)", r->id, (long long)elapsed,
                k ? k : "error");
        if (k && strcmp(k, "validation") == 0)
            audit_validation(r->principal, r->session_id, r->id, "validation",
                             json_string_value(json_object_get(envelope, "error")));
    } else {
        run_log(r, r->stop == STOP_NONE ? LOG_ERROR : LOG_WARN, "%s failed after %lld ms (%s): %s",
                r->id, (long long)elapsed, kind, failure ? failure : "the worker gave no answer");
    }
    const char *ekind = json_is_object(envelope)
                            ? json_string_value(json_object_get(envelope, "error_kind"))
                            : NULL;
    trace_finish(r, reply || json_is_true(json_object_get(envelope, "ok")) ? NULL
                    : ekind                                                ? ekind
                                                                           : kind);
    if (reply) { /* only taken when nothing above could need the tree (run_on_worker_answered) */
        hooks.send_text(r->session_id, reply, reply_len, r->request_id);
    } else if (json_is_object(envelope)) {
        answer(r, envelope, kept);
    } else {
        json_t *env = failure_envelope(failure ? failure : "the worker gave no answer", kind);
        answer(r, env, kept);
        json_decref(env);
    }
    run_free(r);
}

static void finish(struct run *r, json_t *envelope, const char *failure)
{
    finish_with(r, envelope, failure, NULL, 0);
}

void run_on_worker_ended(const char *run_id, json_t *envelope, const char *failure)
{
    struct run *r = run_find(run_id);
    if (r)
        finish(r, envelope, failure);
}

void run_on_worker_answered(const char *run_id, const char *env, size_t len)
{
    struct run *r = run_find(run_id);
    if (!r)
        return;
    /* The bytes when the answer goes to a session as it is; a smoke run, a cancelled one, one
     * whose answer waits for an input retry (a tree in a tomb), or an envelope that is not
     * the usual success: the tree, as the frame's decode would have given it. */
    if (!r->smoke_done && !r->silent && !r->awaiting && hooks.send_text) {
        size_t n;
        char *muts = json_array_size(r->mutations) ? jf_dumps(r->mutations) : NULL;
        char *reply = run_answer_text(r->request_id, env, len, r->ns.handle, muts, &n);
        free(muts);
        char why[300];
        if (reply && answer_too_large(n, why, sizeof(why))) {
            free(reply);
            log_warn("runs", "%s: %s", r->id, why);
            finish(r, NULL, why);
            return;
        }
        if (reply) {
            finish_with(r, NULL, NULL, reply, n);
            free(reply);
            return;
        }
    }
    json_error_t jerr;
    json_t *tree = jf_loadb(env, len, JF_ALLOW_NUL | JF_BIG_INTEGERS, &jerr);
    finish(r, tree, tree ? NULL : jerr.text);
    json_decref(tree);
}

void run_on_write_done(const char *run_id, const char *server, const char *tool, int ok,
                       int dry_run)
{
    struct run *r = run_find(run_id);
    if (!r)
        return;
    json_t *item = json_pack("{s:s, s:s, s:b}", "server", server, "tool", tool, "ok", ok);
    if (dry_run)
        json_object_set_new(item, "dry_run", json_true());
    if (!r->mutations)
        r->mutations = json_array();
    json_array_append_new(r->mutations, item);
}

void run_on_call_done(const char *run_id)
{
    struct run *r = run_find(run_id);
    if (!r)
        return;
    r->calls_done++;
    if (!r->progress_token || r->silent)
        return;
    char msg[64];
    snprintf(msg, sizeof(msg), "%d tool call%s completed", r->calls_done,
             r->calls_done == 1 ? "" : "s");
    json_t *n = rpc_request(NULL, "notifications/progress",
                            json_pack("{s:O, s:i, s:s}", "progressToken", r->progress_token,
                                      "progress", r->calls_done, "message", msg));
    send_to(r, n);
}

/* ---- deadlines ---------------------------------------------------------------------------- */

static void grace_expired(void *ud)
{
    struct run *r = ud;
    char why[256];
    snprintf(why, sizeof(why),
             "execution %s after %lld ms and the code did not stop when interrupted; the "
             "worker was restarted and this session's variables were lost",
             r->stop == STOP_CANCEL ? "was cancelled" : "timed out",
             (long long)(now_ms() - r->started_ms));
    wk_kill_run(r->id, why);
}

static void interrupt_run(struct run *r, enum run_stop stop)
{
    if (r->state != RUN_SENT || r->stop != STOP_NONE)
        return;
    r->stop = stop;
    wk_cancel_run(r->id, stop == STOP_TIMEOUT ? "timeout" : "cancelled");
    calls_cancel_run(r->id, stop == STOP_TIMEOUT ? "the run timed out" : "the run was cancelled");
    lp_timer_start(&r->grace, grace_ms, grace_expired, r);
}

/* The run's principal spent a CPU budget while it ran (run_cpu.h): its worker is ended at
 * once (an interrupt would leave its threads and children running through the grace). */
static void cpu_spent(const char *run_id, const char *why)
{
    struct run *r = run_find(run_id);
    if (!r || r->state != RUN_SENT || r->stop == STOP_BUDGET)
        return;
    r->stop = STOP_BUDGET;
    char msg[600];
    snprintf(msg, sizeof(msg),
             "%s: the run was stopped and its Python worker ended (this session's variables "
             "were lost)",
             why);
    run_log(r, LOG_WARN, "%s: CPU budget spent: stopping it", r->id);
    calls_cancel_run(r->id, "the run's principal spent its CPU budget");
    wk_kill_run(r->id, msg);
}

static void deadline_expired(void *ud)
{
    struct run *r = ud;
    log_info("runs", "%s: timed out after %lld ms", r->id, (long long)r->timeout_ms);
    run_log(r, LOG_WARN, "%s timed out after %lld ms: interrupting it", r->id,
            (long long)r->timeout_ms);
    interrupt_run(r, STOP_TIMEOUT);
}

/* ---- dispatch ---------------------------------------------------------------------------- */

/* ns_run_start for r. A run that named no namespace and whose implicit one went with its
 * home's worker while it waited (evicted for another session) starts in a fresh one instead,
 * as if it had come after the eviction: the note tells the program. */
static int start_namespace(struct run *r, const char **note, int *fresh, char *err, size_t errlen)
{
    if (ns_run_start(r->ns.nid, note, fresh, err, errlen) == 0)
        return 0;
    struct ns_ref again;
    if (json_is_string(json_object_get(r->arguments, "namespace")) ||
        ns_resolve(r->session_id, r->home, NULL, &again, err, errlen) < 0 || again.nid == r->ns.nid)
        return -1;
    r->ns = again;
    return ns_run_start(r->ns.nid, note, fresh, err, errlen);
}

/* Sends r to worker slot. Returns 1 when r was refused and is gone (finished and freed). */
static int send_run(struct run *r, int slot)
{
    const char *note = "";
    char refused[400];
    int fresh = 1;
    if (!r->smoke_done && start_namespace(r, &note, &fresh, refused, sizeof(refused)) < 0) {
        finish(r, NULL, refused);
        return 1;
    }
    /* The worker's name of the namespace, never the handle: "smoke" or "n<nid>" (nid is a
     * counter, never past 2^63; no snprintf, see fmt_i64). */
    char key[32] = "smoke";
    if (!r->smoke_done) {
        key[0] = 'n';
        fmt_i64(key + 1, (int64_t)r->ns.nid);
    }
    json_t *missing = cat_unavailable(); /* params as text: run_params.c */
    struct run_params p = {.run_id = r->id,
                           .ns_key = key,
                           .code = r->code,
                           .timeout_ms = r->timeout_ms,
                           .dry_run = r->dry_run,
                           .allow_mutations = r->allow_mutations,
                           .enforce_mutations = enforce_mutations,
                           .max_output_bytes = (int64_t)max_output_bytes,
                           .reset = r->reset,
                           .validate = validate_programs,
                           .disabled = cat_disabled(),
                           .unavailable = missing};
    p.namespace_note = note;   /* the runtime adds it to a NameError */
    p.namespace_fresh = fresh; /* not fresh but unknown to the worker: it was replaced */
    p.drop_namespaces = ns_take_drops(r->home); /* namespaces of this worker to forget first */
    p.policy = policy_worker_rules(r->principal);
    size_t len;
    char *params = run_params_text(&p, &len);
    json_decref(missing);
    json_decref(p.drop_namespaces);
    json_decref(p.policy);
    r->ns_started = !r->smoke_done;
    int sent = wk_start_run(slot, r->id, params, len, run_cpu_ms > 0 ? run_cpu_ms : r->timeout_ms);
    free(params);
    if (sent < 0) {
        if (r->ns_started) /* not sent after all: it is counted again when it is */
            ns_run_end(r->ns.nid);
        r->ns_started = 0;
        return 0;
    }
    r->state = RUN_SENT;
    r->slot = slot;
    rcpu_start(r->id, r->principal, slot, cpu_spent);
    trace_end(r->t_phase);
    r->t_phase = trace_start("execute", TRACE_INTERNAL, r->t_run, NULL);
    trace_attr_int(r->t_phase, "codemcp.worker.slot", slot);
    lp_timer_stop(&r->queue_timer);
    r->started_ms = now_ms();
    r->deadline_at = r->started_ms + r->timeout_ms;
    lp_timer_start(&r->deadline, r->timeout_ms, deadline_expired, r);
    log_debug("runs", "%s sent to worker %d", r->id, slot);
    run_log(r, LOG_DEBUG, "%s sent to worker %d", r->id, slot);
    return 0;
}

/* A program that calls a server still making its first connection waits for it (bounded by
 * that server's `timeout`) instead of meeting a NameError; a smoke run waits for them all. */
static int waits_for_servers(const struct run *r)
{
    return !r->smoke_done ? cat_code_waits(r->code, r->queued_ms) : !up_all_settled();
}

/* A queued run whose home owns no worker yet: it asks for one in the fair order. */
static int needs_slot(const struct run *r)
{
    return r->state == RUN_QUEUED && wk_session_slot(r->home) < 0 && !waits_for_servers(r);
}

/* The first of w[0..n) whose principal follows `after` in the cycle of their principals (names
 * in byte order, wrapping round), or NULL when n is 0. w is in arrival order, so that run is
 * its principal's oldest (FIFO within a principal). O(n). */
static struct run *next_turn(struct run **w, size_t n, const char *after)
{
    struct run *next = NULL, *first = NULL;
    for (size_t k = 0; k < n; k++) {
        const char *p = w[k]->principal;
        if (!first || strcmp(p, first->principal) < 0)
            first = w[k];
        if (strcmp(p, after) > 0 && (!next || strcmp(p, next->principal) < 0))
            next = w[k];
    }
    return next ? next : first;
}

/* Gives a worker to waiting runs, one principal at a time in turn (round-robin across
 * principals, so one principal's many sessions cannot starve another's). Returns 1 when a run
 * got one (the caller looks again). O(runs) checks of a run, then O(principals * waiting). */
static int grant_waiting(void)
{
    size_t n = 0, cap = 0;
    struct run **w = NULL;
    for (struct run *r = runs; r; r = r->next)
        if (needs_slot(r)) {
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                w = xrealloc(w, cap * sizeof(*w));
            }
            w[n++] = r;
        }
    int granted = 0;
    const char *at = served_last, *first_asked = NULL;
    for (struct run *r; !granted && (r = next_turn(w, n, at)) != NULL; at = r->principal) {
        if (first_asked && strcmp(r->principal, first_asked) == 0)
            break; /* every waiting principal asked once */
        if (!first_asked)
            first_asked = r->principal;
        if ((r->slot = wk_slot_for_session(r->home)) >= 0) { /* kept until r ends */
            snprintf(served_last, sizeof(served_last), "%s", r->principal);
            log_debug("runs", "%s got a worker (principal %s's turn)", r->id, r->principal);
            granted = 1;
        }
    }
    free(w);
    return granted;
}

void run_dispatch(void)
{
    if (dispatching)
        return; /* finish → run_dispatch recursion: the outer loop continues */
    dispatching = 1;
    int progress = 1;
    while (progress) {
        progress = grant_waiting();
        for (struct run *r = runs; r; r = r->next) {
            if (r->state != RUN_QUEUED || waits_for_servers(r))
                continue;
            int slot = wk_session_slot(r->home);
            if (slot < 0)
                continue; /* waits its turn for a worker (grant_waiting) */
            const char *failure = wk_start_failure(slot);
            if (failure) {
                finish(r, NULL, failure);
                progress = 1;
                break;
            }
            if (!wk_ready(slot))
                continue;
            if (wk_running(slot))
                continue;
            if (send_run(r, slot)) { /* refused and freed: the list changed */
                progress = 1;
                break;
            }
            if (r->state == RUN_SENT)
                progress = 1;
        }
    }
    dispatching = 0;
}

/* The run waited CODEMCP_RUN_QUEUE_WAIT_MS without being sent. */
static void queue_wait_over(void *ud)
{
    struct run *r = ud;
    if (r->state != RUN_QUEUED)
        return;
    char why[400];
    snprintf(why, sizeof(why),
             "this program waited %lld ms for a Python worker without getting one "
             "(CODEMCP_RUN_QUEUE_WAIT_MS): every worker (CODEMCP_WORKERS) was running other "
             "programs; try again later, or ask the operator to raise CODEMCP_WORKERS",
             (long long)queue_wait_ms);
    log_warn("runs", "%s: not sent within %lld ms (CODEMCP_RUN_QUEUE_WAIT_MS)", r->id,
             (long long)queue_wait_ms);
    finish(r, NULL, why);
}

static struct run *new_run(uint64_t session_id, uint64_t home)
{
    struct run *r = xcalloc(1, sizeof(*r));
    r->id[0] = 'r';
    fmt_i64(r->id + 1, (int64_t)next_run++); /* "r%llu" */
    r->session_id = session_id;
    r->home = home;
    r->queued_ms = now_ms();
    r->timeout_ms = default_timeout_ms;
    r->allow_mutations = json_array();
    r->slot = -1;
    /* A bounded copy: snprintf("%s") runs stdio's formatting machinery for it, once per run. */
    const char *asker = ns_asker(session_id, home);
    size_t n = strnlen(asker, sizeof(r->principal) - 1);
    memcpy(r->principal, asker, n);
    r->principal[n] = '\0';
    mx_run_started(r->principal);
    lp_timer_start(&r->queue_timer, queue_wait_ms, queue_wait_over, r);
    struct run **tail = &runs;
    while (*tail)
        tail = &(*tail)->next;
    *tail = r;
    return r;
}

/* True when principal p has CODEMCP_RUN_QUEUE_MAX runs queued already. O(runs). */
static int queue_full(const char *p)
{
    long n = 0;
    for (struct run *r = runs; r; r = r->next)
        n += r->state == RUN_QUEUED && strcmp(r->principal, p) == 0;
    return n >= queue_max;
}

/* run_submit's checks and the queued run, or NULL with err filled. */
static struct run *submit(uint64_t session_id, uint64_t home, json_t *request_id, json_t *arguments,
                          json_t *progress_token, json_t *client_caps, char *err, size_t errlen)
{
    if (!json_is_object(arguments)) {
        snprintf(err, errlen, "execute_python needs arguments {\"code\": \"...\"}");
        goto bad_arguments;
    }
    json_t *code = json_object_get(arguments, "code");
    json_t *timeout = json_object_get(arguments, "timeout_ms");
    json_t *dry = json_object_get(arguments, "dry_run");
    json_t *allow = json_object_get(arguments, "allow_mutations");
    json_t *reset = json_object_get(arguments, "reset");
    json_t *ns = json_object_get(arguments, "namespace");
    if (!json_is_string(code)) {
        snprintf(err, errlen, "execute_python: \"code\" (a string of Python) is required");
        goto bad_arguments;
    }
    if (timeout && !(json_is_integer(timeout) && json_integer_value(timeout) > 0) &&
        !(json_is_real(timeout) && json_real_value(timeout) >= 1)) {
        snprintf(err, errlen, "execute_python: \"timeout_ms\" must be a positive integer");
        goto bad_arguments;
    }
    if (timeout && (json_is_integer(timeout) ? json_integer_value(timeout) > max_timeout_ms
                                             : json_real_value(timeout) > (double)max_timeout_ms)) {
        snprintf(err, errlen,
                 "execute_python: \"timeout_ms\" is above this gateway's maximum of %lld ms "
                 "(CODEMCP_MAX_TIMEOUT_MS): ask for at most that",
                 (long long)max_timeout_ms);
        goto bad_arguments;
    }
    if (dry && !json_is_boolean(dry)) {
        snprintf(err, errlen, "execute_python: \"dry_run\" must be true or false");
        goto bad_arguments;
    }
    if (reset && !json_is_boolean(reset)) {
        snprintf(err, errlen, "execute_python: \"reset\" must be true or false");
        goto bad_arguments;
    }
    if (ns && !json_is_null(ns) && !json_is_string(ns)) {
        snprintf(err, errlen,
                 "execute_python: \"namespace\" must be the handle string an earlier result "
                 "returned (leave it out to start a new namespace)");
        goto bad_arguments;
    }
    if (allow) {
        size_t i;
        json_t *v;
        int ok = json_is_array(allow);
        json_array_foreach(allow, i, v) ok = ok && json_is_string(v);
        if (!ok) {
            snprintf(err, errlen,
                     "execute_python: \"allow_mutations\" must be a list of SDK function names");
            goto bad_arguments;
        }
    }
    const char *key;
    json_t *v;
    json_object_foreach(arguments, key, v)
    {
        if (strcmp(key, "code") && strcmp(key, "timeout_ms") && strcmp(key, "dry_run") &&
            strcmp(key, "allow_mutations") && strcmp(key, "reset") && strcmp(key, "namespace")) {
            snprintf(err, errlen,
                     "execute_python: unknown argument \"%s\" (valid: code, timeout_ms, dry_run, "
                     "allow_mutations, reset, namespace)",
                     key);
            goto bad_arguments;
        }
    }
    struct ns_ref where;
    if (ns_resolve(session_id, home, json_string_value(ns), &where, err, errlen) < 0)
        return NULL;
    const char *who = ns_asker(session_id, where.home);
    if (queue_full(who)) {
        snprintf(err, errlen,
                 "execute_python: %ld programs of yours are already waiting for a Python worker "
                 "(CODEMCP_RUN_QUEUE_MAX): wait for their answers before sending more",
                 queue_max);
        return NULL;
    }
    if (budgets_take_run(who, err, errlen) < 0)
        return NULL;
    struct run *r = new_run(session_id, where.home);
    r->ns = where;
    r->request_id = json_incref(request_id);
    r->progress_token = json_incref(progress_token);
    r->code = xstrdup(json_string_value(code));
    if (timeout)
        r->timeout_ms = json_is_integer(timeout)             ? json_integer_value(timeout)
                        : json_real_value(timeout) >= 9.2e18 ? INT64_MAX /* 1e308: no UB */
                                                             : (int64_t)json_real_value(timeout);
    r->dry_run = json_is_true(dry);
    r->reset = json_is_true(reset);
    r->arguments = json_incref(arguments);
    r->client_caps = json_is_object(client_caps) ? json_incref(client_caps) : NULL;
    if (allow) {
        json_decref(r->allow_mutations);
        r->allow_mutations = json_incref(allow);
    }
    log_debug("runs", "%s queued for session %llu", r->id, (unsigned long long)session_id);
    return r;
bad_arguments:
    mx_rejected(MX_REJECT_ARGUMENTS);
    audit_validation(ns_asker(session_id, home), session_id, NULL, "invalid_arguments", err);
    return NULL;
}

int run_submit(uint64_t session_id, uint64_t home, json_t *request_id, json_t *arguments,
               json_t *progress_token, json_t *client_caps, struct trace_span *span, char *err,
               size_t errlen)
{
    struct trace_span *t_run = trace_start("codemcp.run", TRACE_INTERNAL, span, NULL);
    struct trace_span *pre = trace_start("preflight", TRACE_INTERNAL, t_run, NULL);
    struct run *r =
        submit(session_id, home, request_id, arguments, progress_token, client_caps, err, errlen);
    if (!r) {
        trace_fail(pre, "invalid_arguments", err);
        trace_fail(t_run, "invalid_arguments", NULL);
        trace_end(pre);
        trace_end(t_run);
        return -1;
    }
    trace_end(pre);
    r->t_request = span;
    r->t_run = t_run;
    trace_attr_str(t_run, "codemcp.run.id", r->id);
    trace_attr_int(t_run, "codemcp.code.size", (int64_t)strlen(r->code));
    if (r->dry_run)
        trace_attr_int(t_run, "codemcp.run.dry_run", 1);
    r->t_phase = trace_start("queue", TRACE_INTERNAL, t_run, NULL);
    run_dispatch();
    return 0;
}

int run_smoke(const char *code, void (*done)(json_t *envelope, int is_error))
{
    struct run *r = new_run(0, 0);
    r->code = xstrdup(code);
    r->smoke_done = done;
    run_dispatch();
    return 0;
}

static int same_id(json_t *a, json_t *b)
{
    return a && b && json_equal(a, b);
}

void run_cancel_request(uint64_t session_id, json_t *request_id, const char *reason)
{
    for (struct run *r = runs; r; r = r->next) {
        if (r->session_id != session_id || !same_id(r->request_id, request_id) ||
            r->state == RUN_DONE)
            continue;
        log_info("runs", "%s cancelled by the client: %s", r->id, reason);
        r->silent = 1;
        if (r->state == RUN_QUEUED) {
            run_free(r);
            return;
        }
        interrupt_run(r, STOP_CANCEL);
        return;
    }
}

/* ---- the input relay ---------------------------------------------------------------------- */

static void input_wait_over(void *ud)
{
    struct run *r = ud;
    log_info("runs", "%s: no input within %lld ms: cancelled", r->id, (long long)input_wait_ms);
    input_state_end(r, "expired: nobody answered within CODEMCP_INPUT_WAIT_MS, and its run was "
                       "cancelled");
    r->silent = 1;
    interrupt_run(r, STOP_CANCEL);
}

int run_on_input_required(const char *run_id, json_t *result)
{
    struct run *r = run_find(run_id);
    json_t *requests = json_object_get(result, "inputRequests");
    json_t *rs = json_object_get(result, "requestState");
    if (!r || r->state != RUN_SENT || r->stop != STOP_NONE || r->silent || r->awaiting ||
        r->smoke_done || !r->client_caps || !hooks.send)
        return 0;
    if (requests ? !json_is_object(requests) : !json_is_string(rs))
        return 0;
    if (!run_relay_can_answer(r->client_caps, requests) || run_relay_mint_state(r->input_state) < 0)
        return 0;
    r->awaiting = 1;
    int64_t now = now_ms();
    r->time_left = r->deadline_at > now ? r->deadline_at - now : 1;
    lp_timer_stop(&r->deadline);
    lp_timer_start(&r->input_timer, input_wait_ms, input_wait_over, r);
    json_t *answer =
        json_pack("{s:s, s:s}", "resultType", "input_required", "requestState", r->input_state);
    if (json_object_size(requests))
        json_object_set(answer, "inputRequests", requests);
    /* Detached before the answer goes: the answered request's end must not cancel the run. */
    uint64_t sid = r->session_id;
    json_t *rid = r->request_id;
    r->session_id = 0;
    r->request_id = NULL;
    json_decref(r->progress_token);
    r->progress_token = NULL;
    log_info("runs", "%s: a tool asked for input; relayed to the client", r->id);
    hooks.send(sid, rpc_result(rid, answer), rid);
    json_decref(rid);
    return 1;
}

/* -1 (with the reason in err) when a retry from session_id/home with arguments may not take
 * a requestState issued to principal for want_args. */
static int retry_refused(const char *principal, json_t *want_args, uint64_t session_id,
                         uint64_t home, json_t *arguments, char *err, size_t errlen)
{
    if (strcmp(principal, ns_asker(session_id, home)) != 0) {
        snprintf(err, errlen, "requestState was issued to another principal: it is not yours");
        return -1;
    }
    if (!json_equal(want_args, arguments)) {
        snprintf(err, errlen,
                 "requestState belongs to an execute_python call with other arguments: retry "
                 "that call unchanged, adding inputResponses and requestState");
        return -1;
    }
    return 0;
}

int run_resume(uint64_t session_id, uint64_t home, json_t *request_id, json_t *arguments,
               json_t *request_state, json_t *input_responses, json_t *progress_token,
               json_t *client_caps, char *err, size_t errlen)
{
    const char *st = json_string_value(request_state);
    if (!st || strlen(st) >= sizeof(((struct run *)0)->input_state)) {
        snprintf(err, errlen,
                 "requestState must be the string an input_required result of this "
                 "gateway returned");
        return -1;
    }
    if (input_responses && !json_is_object(input_responses)) {
        snprintf(err, errlen, "inputResponses must be an object (keys of the inputRequests)");
        return -1;
    }
    if (run_relay_elsewhere(st, err, errlen) < 0)
        return -1;
    struct run *r = runs;
    while (r && !(r->awaiting && secure_streq(r->input_state, st)))
        r = r->next;
    if (!r) {
        struct input_tomb *t = NULL;
        for (size_t i = 0; i < INPUT_TOMBS && !t; i++)
            if (input_tombs[i].why && secure_streq(input_tombs[i].state, st))
                t = &input_tombs[i];
        if (t && t->answer && now_ms() >= t->until) {
            tomb_drop_answer(t);
            t->why = "expired: nobody came for its run's answer within CODEMCP_INPUT_WAIT_MS";
        }
        if (t && t->answer) { /* the run ended meanwhile: its answer was kept for this retry */
            if (retry_refused(t->principal, t->arguments, session_id, home, arguments, err,
                              errlen) < 0)
                return -1;
            json_t *result = t->answer;
            t->answer = NULL;
            tomb_drop_answer(t);
            t->why = "was already answered (each one is good for one retry)";
            log_info("runs", "a retry got the answer its run left when it ended");
            if (hooks.send)
                hooks.send(session_id, rpc_result(request_id, result), request_id);
            else
                json_decref(result);
            return 0;
        }
        snprintf(err, errlen, "requestState %s; send the request again without requestState",
                 t ? t->why
                   : "is unknown: not issued by this gateway (or it restarted since, or it was "
                     "answered long ago)");
        return -1;
    }
    if (retry_refused(r->principal, r->arguments, session_id, home, arguments, err, errlen) < 0)
        return -1;
    input_state_end(r, "was already answered (each one is good for one retry)");
    r->session_id = session_id;
    r->request_id = json_incref(request_id);
    r->progress_token = json_incref(progress_token);
    json_decref(r->client_caps);
    r->client_caps = json_is_object(client_caps) ? json_incref(client_caps) : NULL;
    r->deadline_at = now_ms() + r->time_left;
    lp_timer_start(&r->deadline, r->time_left, deadline_expired, r);
    log_info("runs", "%s: input answered; the call goes again", r->id);
    calls_resume(r->id, input_responses);
    return 0;
}

int run_uses_slot(int slot)
{
    for (struct run *r = runs; r; r = r->next)
        if (r->slot == slot && r->state != RUN_DONE)
            return 1;
    return 0;
}

void run_session_closed(uint64_t session_id)
{
    struct run *r = runs;
    while (r) {
        struct run *next = r->next;
        if (r->session_id == session_id && r->state != RUN_DONE && !r->smoke_done) {
            r->silent = 1;
            if (r->state == RUN_QUEUED)
                run_free(r);
            else
                interrupt_run(r, STOP_CANCEL);
        }
        r = next;
    }
    ns_forget(session_id);
    wk_session_closed(session_id);
}

size_t run_count(void)
{
    size_t n = 0;
    for (struct run *r = runs; r; r = r->next)
        n++;
    return n;
}

void run_free_all(void)
{
    rcpu_free_all();
    while (runs)
        run_free(runs);
    for (size_t i = 0; i < INPUT_TOMBS; i++)
        tomb_drop_answer(&input_tombs[i]);
}
