/* calls_answer — how a tool call ends: the upstream's answer relayed to the worker (its bytes
 * as they came when nothing needs changing, else rebuilt with a write's mark), a refusal or
 * failure answered with its kind, a dry-run stub, and every end's side effects: the run's
 * write record, the spans' status, the audit line, learning the result's shape.
 * Loop thread only. */
#include "calls.h"
#include "calls_int.h"
#include "catalog.h"
#include "ctlreply.h"
#include "jsonfast.h"
#include "jsonrpc.h"
#include "jsonscan.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "policy.h"
#include "redact.h"
#include "shapes.h"
#include "toolstate.h"
#include "trace.h"
#include "upstream.h"
#include "usage.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* What an error of kind says about a call, for the metrics. */
enum mx_call_outcome calls__outcome_of(const char *kind)
{
    return kind && strcmp(kind, "timeout") == 0  ? MX_CALL_TIMEOUT
           : kind && strcmp(kind, "denied") == 0 ? MX_CALL_DENIED
                                                 : MX_CALL_ERROR;
}

int calls__reply(uint64_t conn_id, json_t *msg)
{
    if (calls__hooks.reply)
        return calls__hooks.reply(conn_id, msg);
    json_decref(msg);
    return -1;
}

void calls__reply_error(uint64_t conn_id, json_t *id, const char *kind, const char *message,
                        int64_t elapsed_ms)
{
    calls__reply(conn_id, rpc_error(id, RPC_SERVER_ERROR, message,
                                    json_pack("{s:s, s:I}", "kind", kind, "elapsed_ms",
                                              (json_int_t)elapsed_ms)));
}

/* reply_error for a call that ends refused or failed: its spans say why. */
/* The call's spans end with status ERROR and error.type kind ("tool_error": the MCP
 * conventions' type for an isError result, whichever way its bytes were relayed). */
static void fail_spans(struct call *call, const char *kind, const char *message)
{
    trace_fail(call->t_up, kind, message);
    trace_fail(call->t_call, kind, message);
}

void calls__fail_call(struct call *call, const char *kind, const char *message, int64_t elapsed_ms)
{
    fail_spans(call, kind, message);
    calls__reply_error(call->conn_id, call->id, kind, message, elapsed_ms);
}

void calls__call_done(const char *run_id)
{
    if (calls__hooks.call_done)
        calls__hooks.call_done(run_id);
}

/* A failed write that may have reached the server (the kinds the runtime's report counts). */
int calls__write_attempted(const char *kind)
{
    return kind && (!strcmp(kind, "upstream_error") || !strcmp(kind, "timeout") ||
                    !strcmp(kind, "transport"));
}

void calls__write_done(const struct call *call, int ok, int dry_run)
{
    if (call->mutation && calls__hooks.write_done)
        calls__hooks.write_done(call->run_id, call->server, call->tool, ok, dry_run);
}

static void (*observers[CALLS_OBSERVERS])(const struct call_event *e);
static int n_observers;

void calls_observe(void (*fn)(const struct call_event *e))
{
    if (n_observers < CALLS_OBSERVERS)
        observers[n_observers++] = fn;
}

int calls__observed(void)
{
    return n_observers;
}

void calls__emit(const struct call_event *e)
{
    for (int i = 0; i < n_observers; i++)
        observers[i](e);
}

void calls__ended(const struct call *call, const char *outcome, const char *reason)
{
    if (!n_observers)
        return;
    static const char *const decisions[] = {"deny", "allow", "dry_run"};
    struct call_event e = {.principal = call->principal,
                           .session = call->session,
                           .run = call->run_id,
                           .server = call->server,
                           .tool = call->tool,
                           .fn = call->fn,
                           .listed = call->listed,
                           .mutation = call->mutation,
                           .dry_run = call->dry_run,
                           .decision = decisions[call->effect],
                           .rule = call->rule,
                           .reason = reason,
                           .outcome = outcome,
                           .result = call->outcome,
                           .duration_ms = now_ms() - call->started_ms,
                           .args = call->args,
                           .args_len = call->args_len};
    calls__emit(&e);
}

/* A refused call: answered with kind and why, audited, freed by the caller. */
void calls__refuse(struct call *call, const char *kind, const char *why)
{
    call->effect = POLICY_DENY;
    calls__fail_call(call, kind, why, 0);
    calls__ended(call, kind, why);
}

/* Marks a result as a write for the worker's mutation report. Steals result. */
static json_t *mark_mutation(json_t *result, int dry_run)
{
    json_t *meta = json_object_get(result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(result, "_meta", meta);
    }
    json_object_set_new(meta, "codemcp",
                        json_pack("{s:b, s:b}", "mutation", 1, "dry_run", dry_run));
    return result;
}

/* The answer written around the result's bytes: the frame rpc_result(id, result) gives.
 * Returns as the reply hooks do. */
static int reply_raw(struct call *call, const char *raw, size_t len, char **block)
{
    static const char head[] = CTL_REPLY_HEAD, mid[] = CTL_REPLY_MID;
    struct iovec iov[5] = {{(void *)head, sizeof(head) - 1},
                           {call->id_text, strlen(call->id_text)},
                           {(void *)mid, sizeof(mid) - 1},
                           {(void *)raw, len},
                           {"}", 1}};
    return calls__hooks.reply_parts ? calls__hooks.reply_parts(call->conn_id, iov, 5, 3, block)
                                    : -1;
}

/* A result longer than the worker reads (what: whose result): the request fails with kind
 * "too_large" naming the limit, and the worker (its variables) lives on. */
void calls__reply_too_large(uint64_t conn_id, json_t *id, const char *what, size_t len,
                            int64_t elapsed_ms)
{
    size_t limit = calls__hooks.reply_limit ? calls__hooks.reply_limit() : 0;
    char msg[512], size[48] = "";
    if (len)
        snprintf(size, sizeof(size), " (%zu bytes)", len);
    snprintf(msg, sizeof(msg),
             "the result of %.300s%s is over the limit of one message to the worker: %zu bytes "
             "(CODEMCP_CONTROL_MAX_FRAME)",
             what, size, limit);
    calls__reply_error(conn_id, id, "too_large", msg, elapsed_ms);
}

/* Results longer than this are learned from (shapes_learn_text parses them whole) only while
 * big results learned stay under 1/LEARN_BIG_SHARE of the big result bytes relayed, or when
 * the function has no shape yet: a shape is the same from one big result to the next, and
 * re-parsing each was a quarter of the gateway's time relaying 50 MB results. Texts longer
 * than this are not learned at all (shapes.c); a structured result up to 1 MiB was hashed
 * whole on every call, 1.4 ms of loop CPU for 1 MB, which made it 1.27x the same records as
 * a text (bench/structured_text.mjs). */
#define LEARN_BIG_BYTES ((size_t)256 << 10)
#define LEARN_BIG_SHARE 16
static uint64_t big_relayed, big_learned;

/* Arrays of a big result are learned from their first elements (js_sample): a structured
 * result's records all have the shape the first ones show, and parsing all of them into a tree
 * took 4x the payload in memory. A text block is a string: still read whole. */
#define LEARN_SAMPLE_ELEMENTS 32

static void learn_raw(const char *principal, const char *fn, const char *raw, size_t len)
{
    if (len <= LEARN_BIG_BYTES) {
        shapes_learn_text(principal, fn, raw, len);
        return;
    }
    if (!shapes_learnable(raw, len))
        return; /* e.g. a long text: a sample keeps strings whole (one more copy of it) */
    char *sample = xmalloc(len); /* only what is written is touched */
    size_t n = js_sample(raw, len, LEARN_SAMPLE_ELEMENTS, sample);
    shapes_learn_text(principal, fn, sample, n);
    free(sample);
}

static int learn_this(const char *principal, const char *fn, size_t len)
{
    if (len <= LEARN_BIG_BYTES)
        return 1;
    big_relayed += len;
    int learn = !shapes_has(principal, fn) || (big_learned + len) * LEARN_BIG_SHARE <= big_relayed;
    if (learn)
        big_learned += len;
    return learn;
}

/* Which functions a principal uses orders the description it is shown (usage.h). */
static void note_use(const struct call *call)
{
    use_note(call->principal, call->fn);
}

void calls__on_upstream_result(void *ud, const struct up_result *res, const struct up_error *err)
{
    struct call *call = ud;
    if (err && err->input_required && calls__hooks.input_required &&
        calls__hooks.input_required(call->run_id, err->input_required)) {
        json_t *rs = json_object_get(err->input_required, "requestState");
        call->request_state = json_is_string(rs) ? json_incref(rs) : NULL;
        call->waiting = 1;
        call->up_handle = 0;
        return; /* stays listed: answered after calls_resume, or cancelled with the run */
    }
    DLIST_UNLINK(call);
    int64_t now = now_us(); /* one clock read for both (now_ms is the same clock, in ms) */
    int64_t elapsed = now / 1000 - call->started_ms;
    mx_upstream_latency(call->server, call->sent_us, now);
    calls__call_done(call->run_id);
    char full[512];
    if (!err && calls__results_room(call, res->raw_len, full, sizeof(full)) < 0) {
        call->outcome = MX_CALL_ERROR; /* answered, but the result could not be given */
        calls__write_done(call, 1, 0); /* made: the server may have acted on it */
        calls__fail_call(call, "too_large", full, elapsed);
        calls__ended(call, "too_large", full);
    } else if (err) {
        call->outcome = calls__outcome_of(err->kind);
        if (calls__write_attempted(err->kind))
            calls__write_done(call, 0, 0);
        calls__fail_call(call, err->kind, err->message, elapsed);
        calls__ended(call, err->kind, NULL);
    } else if (res->raw && !call->mutation && calls__hooks.reply_parts) {
        /* Nothing to change in it: its bytes go to the worker as they came. */
        call->outcome = res->is_error ? MX_CALL_IS_ERROR : MX_CALL_OK;
        if (res->is_error)
            fail_spans(call, "tool_error", NULL);
        /* learn_raw reads raw after: a block kept by the sender is freed once written, after
         * this callback (lp_io_hold's promise in loop.h: nothing is written or freed before
         * the loop runs again). */
        int too_large = reply_raw(call, res->raw, res->raw_len, res->bytes) == CALLS_TOO_LARGE;
        calls__ended(call, too_large ? "too_large" : res->is_error ? "error" : "ok", NULL);
        if (too_large)
            calls__reply_too_large(call->conn_id, call->id, call->fn ? call->fn : call->tool,
                                   res->raw_len, elapsed);
        else if (learn_this(call->principal, call->fn, res->raw_len))
            learn_raw(call->principal, call->fn, res->raw, res->raw_len);
        note_use(call);
    } else {
        json_t *result =
            res->tree ? json_incref(res->tree)
                      : jf_loadb(res->raw, res->raw_len, JF_ALLOW_NUL | JF_BIG_INTEGERS, NULL);
        /* Shared, not copied: only a write's result is changed (its _meta mark). */
        int is_error = json_is_true(json_object_get(result, "isError"));
        call->outcome = is_error ? MX_CALL_IS_ERROR : MX_CALL_OK;
        calls__write_done(call, !is_error, 0);
        if (is_error)
            fail_spans(call, "tool_error", NULL);
        json_t *out =
            call->mutation ? mark_mutation(json_deep_copy(result), 0) : json_incref(result);
        int too_large = calls__reply(call->conn_id, rpc_result(call->id, out)) == CALLS_TOO_LARGE;
        calls__ended(call, too_large ? "too_large" : is_error ? "error" : "ok", NULL);
        if (too_large)
            calls__reply_too_large(call->conn_id, call->id, call->fn ? call->fn : call->tool,
                                   res->raw_len, elapsed);
        /* After the answer is queued: learning never delays the call. */
        if (learn_this(call->principal, call->fn, res->raw_len))
            shapes_learn(call->principal, call->fn, result);
        note_use(call);
        json_decref(result);
    }
    calls__gate_done(call->run_id);
    calls__call_free(call);
}

/* A dry-run write: a deterministic stub with the keys dependent code usually reads. */
json_t *calls__dry_run_stub(const char *fn, const char *server, const char *tool)
{
    char id[512];
    snprintf(id, sizeof(id), "dry-run:%s/%s", server, tool);
    json_t *stub = json_pack("{s:b, s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:s}", "_dry_run", 1,
                             "function", fn, "server", server, "tool", tool, "id", id, "number", 0,
                             "name", id, "url", "https://dry-run.invalid/", "sha",
                             "0000000000000000000000000000000000000000", "key", id);
    /* the arguments are never echoed: they may hold secrets */
    char *text = json_dumps(stub, JSON_COMPACT);
    json_t *result = json_pack("{s:[{s:s, s:s}], s:o}", "content", "type", "text", "text", text,
                               "structuredContent", stub);
    free(text);
    return mark_mutation(result, 1);
}
