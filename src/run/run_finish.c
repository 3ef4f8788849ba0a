/* run_finish — the end of a run: its deadline and grace (an interrupt, then the worker's
 * kill), a spent CPU budget, and its answer: the worker's envelope turned into the MCP
 * CallToolResult by run_answer.c, held to the answer cap whatever the worker sends, sent as
 * bytes for the usual success or as a tree, or kept for an input retry (run_input.c). Part of
 * the run table (runs_int.h). */
#include "runs_int.h"
#include "audit.h"
#include "calls.h"
#include "jsonfast.h"
#include "jsonrpc.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "namespaces.h"
#include "run_answer.h"
#include "run_cpu.h"
#include "trace.h"
#include "util.h"
#include "workers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    return run_max_output_bytes > 0 ? 4 * (size_t)run_max_output_bytes + ((size_t)256 << 10) : 0;
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
            kept->until = now_ms() + run_input_wait_ms;
        } else {
            run_send_to(r, rpc_result(r->request_id, result));
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
    struct input_tomb *kept = run_input_end(r, "ended: its run finished before the input came");
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
        runs_hooks.send_text(r->session_id, reply, reply_len, r->request_id);
    } else if (json_is_object(envelope)) {
        answer(r, envelope, kept);
    } else {
        json_t *env = failure_envelope(failure ? failure : "the worker gave no answer", kind);
        answer(r, env, kept);
        json_decref(env);
    }
    run_free(r);
}

void run_finish(struct run *r, json_t *envelope, const char *failure)
{
    finish_with(r, envelope, failure, NULL, 0);
}

void run_on_worker_ended(const char *run_id, json_t *envelope, const char *failure)
{
    struct run *r = run_find(run_id);
    if (r)
        run_finish(r, envelope, failure);
}

void run_on_worker_answered(const char *run_id, const char *env, size_t len)
{
    struct run *r = run_find(run_id);
    if (!r)
        return;
    /* The bytes when the answer goes to a session as it is; a smoke run, a cancelled one, one
     * whose answer waits for an input retry (a tree in a tomb), or an envelope that is not
     * the usual success: the tree, as the frame's decode would have given it. */
    if (!r->smoke_done && !r->silent && !r->awaiting && runs_hooks.send_text) {
        size_t n;
        char *muts = json_array_size(r->mutations) ? jf_dumps(r->mutations) : NULL;
        char *reply = run_answer_text(r->request_id, env, len, r->ns.handle, muts, &n);
        free(muts);
        char why[300];
        if (reply && answer_too_large(n, why, sizeof(why))) {
            free(reply);
            log_warn("runs", "%s: %s", r->id, why);
            run_finish(r, NULL, why);
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
    run_finish(r, tree, tree ? NULL : jerr.text);
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
    run_send_to(r, n);
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

void run_interrupt(struct run *r, enum run_stop stop)
{
    if (r->state != RUN_SENT || r->stop != STOP_NONE)
        return;
    r->stop = stop;
    wk_cancel_run(r->id, stop == STOP_TIMEOUT ? "timeout" : "cancelled");
    calls_cancel_run(r->id, stop == STOP_TIMEOUT ? "the run timed out" : "the run was cancelled");
    lp_timer_start(&r->grace, run_grace_ms, grace_expired, r);
}

/* The run's principal spent a CPU budget while it ran (run_cpu.h): its worker is ended at
 * once (an interrupt would leave its threads and children running through the grace). */
void run_cpu_spent(const char *run_id, const char *why)
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

void run_deadline_expired(void *ud)
{
    struct run *r = ud;
    log_info("runs", "%s: timed out after %lld ms", r->id, (long long)r->timeout_ms);
    run_log(r, LOG_WARN, "%s timed out after %lld ms: interrupting it", r->id,
            (long long)r->timeout_ms);
    run_interrupt(r, STOP_TIMEOUT);
}
