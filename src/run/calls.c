/* calls — see calls.h.
 *
 * A call's life: checked (refused with kind "denied" / "not_found", or a dry-run stub) →
 * routed with up_call_tool → answered when the upstream answers, times out, or the run ends
 * (calls_cancel_run). An answer that asks for input (2026-07-28 InputRequiredResult) is either
 * relayed by the run to its client, the call waiting (no upstream request open) until
 * calls_resume sends it again with the client's inputResponses and the server's requestState,
 * or fails with kind "input_required". A write's result carries _meta.codemcp.mutation for the
 * worker's own report; the run's answer lists the writes this file reports (write_done hook).
 * Learning a result's shape (shapes.c) happens after the answer is queued, so it never delays the
 * call.
 *
 * A run has at most CODEMCP_MAX_CALLS_PER_RUN calls in flight (routed upstream, or waiting for
 * its client's input): more are checked at once but wait in order in the run's gate, each
 * started when one of the run's calls ends, so a program that starts thousands of calls
 * without waiting cannot make the gateway hold thousands of upstream replies at once. The
 * argument bytes the gateway holds for calls in flight or waiting are capped per run and per
 * principal (calls.h); a call past either cap is refused with kind "denied". The result bytes
 * queued to a principal's workers and not yet read by them are capped too: a result past the
 * cap is dropped and its call fails with kind "too_large" (results_room). */
#include "calls.h"
#include "calls_int.h"
#include "audit.h"
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

/* One tool call routed for a worker, waiting for the upstream. Its strings but fn live in
 * `text`, one allocation with the call (50 concurrent calls were ~7 mallocs each). */
struct call {
    uint64_t conn_id;
    size_t held; /* argument bytes counted against its run and principal (held_take) */
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

/* A principal_hold at zero is kept (a principal calling one tool after another would
 * allocate one per call) unless more than HELD_KEPT principals have one. */
#define HELD_KEPT 16

static struct call *calls; /* in flight */
static struct principal_hold *held_by;
static size_t n_held_by;
static struct gate *gates;
struct calls_hooks calls__hooks;
static struct lp_deferred pump_later; /* pump() once per loop iteration when calls ended */

void calls_set_hooks(const struct calls_hooks *h)
{
    calls__hooks = *h;
}

static struct gate *gate_find(const char *run_id);

struct principal_hold *calls__held_find(const char *principal)
{
    struct principal_hold *h = held_by;
    while (h && strcmp(h->principal, principal) != 0)
        h = h->next;
    return h;
}

struct principal_hold *calls__held_get(const char *principal)
{
    struct principal_hold *h = calls__held_find(principal);
    if (!h) {
        h = xcalloc(1, sizeof(*h));
        h->principal = xstrdup(principal);
        h->next = held_by;
        held_by = h;
        n_held_by++;
    }
    return h;
}

/* Frees h when it holds nothing and enough others are kept. */
void calls__held_drop_idle(struct principal_hold *h)
{
    if (h->bytes || h->reads || h->n_conns || n_held_by <= HELD_KEPT)
        return;
    LIST_UNLINK(&held_by, h);
    free(h->principal);
    free(h);
    n_held_by--;
}

/* Returns call's bytes to its run and principal. */
static void held_release(struct call *call)
{
    if (!call->held)
        return;
    struct gate *g = gate_find(call->run_id);
    if (g)
        g->held -= call->held < g->held ? call->held : g->held;
    struct principal_hold *h = calls__held_find(call->principal);
    if (h) {
        h->bytes -= call->held < h->bytes ? call->held : h->bytes;
        calls__held_drop_idle(h);
    }
    call->held = 0;
}

/* Counts call's argument bytes against its run (g) and principal: 0, or -1 with why when
 * either would pass its cap (calls_hooks.max_run_bytes, max_principal_bytes). */
static int held_take(struct call *call, struct gate *g, char *why, size_t cap)
{
    size_t n = call->args_len;
    const char *p = call->principal;
    struct principal_hold *h = calls__held_find(p);
    size_t mine = h ? h->bytes : 0;
    if (g->held + n > calls__hooks.max_run_bytes || mine + n > calls__hooks.max_principal_bytes) {
        snprintf(why, cap,
                 "the gateway holds %zu bytes of arguments of this run's calls and %zu of its "
                 "principal's (CODEMCP_MAX_ARGS_BYTES_PER_RUN %zu, _PER_PRINCIPAL %zu): wait for "
                 "earlier calls before starting more",
                 g->held, mine, calls__hooks.max_run_bytes, calls__hooks.max_principal_bytes);
        return -1;
    }
    if (!h) /* one list walk when the principal has a hold already (the usual case) */
        h = calls__held_get(p);
    h->bytes += n;
    g->held += n;
    call->held = n;
    return 0;
}

/* Bytes queued to h's worker connections and not yet written; connections that wrote all
 * theirs are forgotten. */
static size_t results_held(struct principal_hold *h)
{
    size_t sum = 0;
    for (int i = 0; i < h->n_conns;) {
        size_t n = calls__hooks.pending(h->conns[i]);
        if (n) {
            sum += n;
            i++;
        } else {
            h->conns[i] = h->conns[--h->n_conns];
        }
    }
    return sum;
}

/* Whether a result of len bytes of call may be queued to its worker: 0 (its connection now
 * counted for its principal), or -1 with why when the principal's workers have not read
 * calls__hooks.max_principal_results bytes queued to them (or HELD_CONNS of them have some). */
static int results_room(const struct call *call, size_t len, char *why, size_t cap)
{
    if (!calls__hooks.pending || !calls__hooks.max_principal_results)
        return 0;
    struct principal_hold *h = calls__held_get(call->principal);
    size_t held = results_held(h);
    int known = 0;
    for (int i = 0; i < h->n_conns && !known; i++)
        known = h->conns[i] == call->conn_id;
    if (held + len <= calls__hooks.max_principal_results && (known || h->n_conns < HELD_CONNS)) {
        if (!known)
            h->conns[h->n_conns++] = call->conn_id;
        return 0;
    }
    snprintf(why, cap,
             "the result of %.200s was dropped: this principal's Python workers have not read "
             "%zu bytes the gateway queued to them (CODEMCP_MAX_RESULT_BYTES_PER_PRINCIPAL %zu); "
             "the call itself was made",
             call->fn ? call->fn : call->tool, held, calls__hooks.max_principal_results);
    calls__held_drop_idle(h);
    return -1;
}

/* What an error of kind says about a call, for the metrics. */
static enum mx_call_outcome outcome_of(const char *kind)
{
    return kind && strcmp(kind, "timeout") == 0  ? MX_CALL_TIMEOUT
           : kind && strcmp(kind, "denied") == 0 ? MX_CALL_DENIED
                                                 : MX_CALL_ERROR;
}

/* Every call ends here, so its outcome is counted here, once. */
static void call_free(struct call *call)
{
    trace_end(call->t_up);
    trace_end(call->t_call);
    /* A name the catalog does not list came from the program: it is no label. */
    mx_tool_call(call->listed ? call->server : NULL, call->tool, call->outcome);
    held_release(call);
    json_decref(call->id);
    json_decref(call->request_state);
    free(call->fn);
    free(call);
}

static char *put_text(char **w, struct slice s)
{
    char *at = *w;
    memcpy(at, s.p, s.n);
    at[s.n] = '\0';
    *w += s.n + 1;
    return at;
}

/* A call holding copies of the strings (args.p NULL: none) and a reference to id. */
static struct call *call_new(uint64_t conn_id, json_t *id, struct slice id_text,
                             struct slice run_id, struct slice server, struct slice tool,
                             struct slice args)
{
    size_t len = id_text.n + run_id.n + server.n + tool.n + args.n + 5;
    struct call *call = xcalloc(1, sizeof(*call) + len);
    char *w = call->text;
    call->conn_id = conn_id;
    call->outcome = MX_CALL_CANCELLED; /* until something else is known */
    call->id = json_incref(id);
    call->id_text = put_text(&w, id_text);
    call->run_id = put_text(&w, run_id);
    call->server = put_text(&w, server);
    call->tool = put_text(&w, tool);
    if (args.p) {
        call->args = put_text(&w, args);
        call->args_len = args.n;
    }
    return call;
}

static struct gate *gate_find(const char *run_id)
{
    struct gate *g = gates;
    while (g && strcmp(g->run_id, run_id) != 0)
        g = g->next;
    return g;
}

static struct gate *gate_get(const char *run_id)
{
    struct gate *g = gate_find(run_id);
    if (!g) {
        g = xcalloc(1, sizeof(*g));
        g->run_id = xstrdup(run_id);
        g->next = gates;
        gates = g;
    }
    return g;
}

/* Frees g once nothing of its run is in flight or waiting. */
static void gate_release(struct gate *g)
{
    if (g->in_flight > 0 || g->head)
        return;
    LIST_UNLINK(&gates, g);
    free(g->run_id);
    free(g);
}

static struct call *gate_pop(struct gate *g)
{
    struct call *c = g->head;
    if (c) {
        g->head = c->next;
        if (!g->head)
            g->tail = NULL;
        c->next = NULL;
    }
    return c;
}

static int gate_full(const struct gate *g)
{
    return calls__hooks.max_per_run > 0 && g->in_flight >= calls__hooks.max_per_run;
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
static void fail_call(struct call *call, const char *kind, const char *message, int64_t elapsed_ms)
{
    trace_fail(call->t_up, kind, message);
    trace_fail(call->t_call, kind, message);
    calls__reply_error(call->conn_id, call->id, kind, message, elapsed_ms);
}

static void call_done(const char *run_id)
{
    if (calls__hooks.call_done)
        calls__hooks.call_done(run_id);
}

/* A failed write that may have reached the server (the kinds the runtime's report counts). */
static int write_attempted(const char *kind)
{
    return kind && (!strcmp(kind, "upstream_error") || !strcmp(kind, "timeout") ||
                    !strcmp(kind, "transport"));
}

static void write_done(const struct call *call, int ok, int dry_run)
{
    if (call->mutation && calls__hooks.write_done)
        calls__hooks.write_done(call->run_id, call->server, call->tool, ok, dry_run);
}

/* The call's audit line: it ended with outcome (an error kind, "ok", "error" for an isError
 * result, "dry_run"); reason: why it was refused, NULL when it was not. */
static void audit_end(const struct call *call, const char *outcome, const char *reason)
{
    if (!audit_enabled())
        return;
    static const char *const decisions[] = {"deny", "allow", "dry_run"};
    struct audit_call a = {call->principal,
                           call->session,
                           call->run_id,
                           call->server,
                           call->tool,
                           call->fn,
                           call->mutation,
                           call->dry_run,
                           decisions[call->effect],
                           call->rule,
                           reason,
                           outcome,
                           now_ms() - call->started_ms,
                           call->args,
                           call->args_len};
    audit_tool_call(&a);
}

/* A refused call: answered with kind and why, audited, freed by the caller. */
static void refuse(struct call *call, const char *kind, const char *why)
{
    call->effect = POLICY_DENY;
    fail_call(call, kind, why, 0);
    audit_end(call, kind, why);
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
 * re-parsing each was a quarter of the gateway's time relaying 50 MB results. */
#define LEARN_BIG_BYTES ((size_t)1 << 20)
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

static void gate_done(const char *run_id);

/* Which functions a principal uses orders the description it is shown (usage.h). */
static void note_use(const struct call *call)
{
    use_note(call->principal, call->fn);
}

static void on_upstream_result(void *ud, const struct up_result *res, const struct up_error *err)
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
    call_done(call->run_id);
    char full[512];
    if (!err && results_room(call, res->raw_len, full, sizeof(full)) < 0) {
        call->outcome = MX_CALL_ERROR; /* answered, but the result could not be given */
        write_done(call, 1, 0);        /* made: the server may have acted on it */
        fail_call(call, "too_large", full, elapsed);
        audit_end(call, "too_large", full);
    } else if (err) {
        call->outcome = outcome_of(err->kind);
        if (write_attempted(err->kind))
            write_done(call, 0, 0);
        fail_call(call, err->kind, err->message, elapsed);
        audit_end(call, err->kind, NULL);
    } else if (res->raw && !call->mutation && calls__hooks.reply_parts) {
        /* Nothing to change in it: its bytes go to the worker as they came. */
        call->outcome = res->is_error ? MX_CALL_IS_ERROR : MX_CALL_OK;
        /* learn_raw reads raw after: a block kept by the sender is freed once written, after
         * this callback (writes happen at the end of the loop's iteration). */
        int too_large = reply_raw(call, res->raw, res->raw_len, res->bytes) == CALLS_TOO_LARGE;
        audit_end(call, too_large ? "too_large" : res->is_error ? "error" : "ok", NULL);
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
        write_done(call, !is_error, 0);
        if (is_error) { /* the MCP conventions' error.type for an isError result */
            trace_fail(call->t_up, "tool_error", NULL);
            trace_fail(call->t_call, "tool_error", NULL);
        }
        json_t *out =
            call->mutation ? mark_mutation(json_deep_copy(result), 0) : json_incref(result);
        int too_large = calls__reply(call->conn_id, rpc_result(call->id, out)) == CALLS_TOO_LARGE;
        audit_end(call, too_large ? "too_large" : is_error ? "error" : "ok", NULL);
        if (too_large)
            calls__reply_too_large(call->conn_id, call->id, call->fn ? call->fn : call->tool,
                                   res->raw_len, elapsed);
        /* After the answer is queued: learning never delays the call. */
        if (learn_this(call->principal, call->fn, res->raw_len))
            shapes_learn(call->principal, call->fn, result);
        note_use(call);
        json_decref(result);
    }
    gate_done(call->run_id);
    call_free(call);
}

/* Routes call upstream (its gate has room). 0, or -1 when the upstream refused it: the worker
 * got the error and the call is freed. */
/* Routes call upstream with extra params members (NULL: none), in a new span for the
 * upstream request whose context goes with it. 0, or -1 with err filled. */
static int route(struct call *call, json_t *extra, struct up_error *err)
{
    char name[300], tp[TRACE_PARENT_LEN + 1];
    trace_end(call->t_up); /* a retry with the client's input is a new request */
    call->t_up = NULL;
    if (call->t_call) {
        snprintf(name, sizeof(name), "tools/call %s", call->tool);
        call->t_up = trace_start(name, TRACE_CLIENT, call->t_call, NULL);
        trace_attr_str(call->t_up, "mcp.method.name", "tools/call");
        trace_attr_str(call->t_up, "gen_ai.tool.name", call->tool);
        trace_attr_str(call->t_up, "gen_ai.operation.name", "execute_tool");
        trace_attr_str(call->t_up, "codemcp.server", call->server);
    }
    struct up_trace ctx = {NULL, trace_tracestate(call->t_up)};
    if (trace_traceparent(call->t_up, tp) == 0)
        ctx.traceparent = tp;
    return up_call_tool(call->server, call->tool, call->args, call->args_len, extra, &ctx,
                        call->timeout_ms, on_upstream_result, call, &call->up_handle, err);
}

static int call_start(struct call *call, struct gate *g)
{
    struct up_error err = {0};
    call->sent_us = mx_clock();
    if (route(call, NULL, &err) < 0) {
        call->outcome = outcome_of(err.kind);
        if (write_attempted(err.kind))
            write_done(call, 0, 0);
        fail_call(call, err.kind, err.message, now_ms() - call->started_ms);
        audit_end(call, err.kind, NULL);
        call_free(call);
        return -1;
    }
    g->in_flight++;
    DLIST_PUSH(&calls, call);
    return 0;
}

/* Starts the oldest waiting calls of every gate with room. Run from the loop (pump_later),
 * never from inside an upstream's callback: up_call_tool is not called re-entrantly. */
static void pump(void *ud)
{
    (void)ud;
    for (struct gate *g = gates, *next; g; g = next) {
        next = g->next;
        while (!gate_full(g) && g->head)
            call_start(gate_pop(g), g);
        gate_release(g);
    }
}

/* One of the run's calls in flight ended: the oldest waiting ones take its place, at the end
 * of this loop iteration. */
static void gate_done(const char *run_id)
{
    struct gate *g = gate_find(run_id);
    if (!g)
        return;
    g->in_flight--;
    if (g->head && !gate_full(g))
        lp_defer(&pump_later, pump, NULL);
    gate_release(g);
}

/* A dry-run write: a deterministic stub with the keys dependent code usually reads. */
static json_t *dry_run_stub(const char *fn, const char *server, const char *tool)
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

int calls_mutation_allowed(const struct calls_run *run, const char *fn, const char *server,
                           const char *tool)
{
    if (!run->enforce_mutations)
        return 1;
    static const char *const forms[] = {"%s/%s", "%s.%s", "%s:%s", "%s/*", "%s.*", "%s"};
    size_t i;
    json_t *v;
    json_array_foreach(run->allow_mutations, i, v)
    {
        const char *a = json_string_value(v);
        if (!a)
            continue;
        if (strcmp(a, fn) == 0 || strcmp(a, "*") == 0)
            return 1;
        for (size_t k = 0; k < sizeof(forms) / sizeof(forms[0]); k++) {
            char form[600];
            snprintf(form, sizeof(form), forms[k], server, tool);
            if (strcmp(a, form) == 0)
                return 1;
        }
    }
    return 0;
}

static void on_engine_answer(void *ud, const struct policy_decision *d);

/* The checks and the routing of one call, whichever way its frame was read. Takes call
 * (its strings copied, args canonical JSON text or NULL). asked: the external policy engine's
 * answer about it (NULL until it has one); while the engine is asked, the call waits outside
 * any gate, and every check is made again when the answer comes. */
static void handle_call(struct call *call, int slot, int64_t timeout_ms, int64_t t0,
                        const struct policy_decision *asked)
{
    uint64_t conn_id = call->conn_id;
    json_t *id = call->id;
    const char *run_id = call->run_id, *server = call->server, *tool = call->tool;
    const char *args = call->args;
    size_t args_len = call->args_len;
    struct calls_run run = {0};
    call->started_ms = t0;
    call->outcome = MX_CALL_DENIED; /* what most refusals below are */
    if (!calls__hooks.run_lookup || calls__hooks.run_lookup(run_id, slot, &run) < 0) {
        refuse(call, "denied", "this run is not active: tool calls are refused");
        goto refused;
    }
    if (run.principal) { /* a run's principal is a NUL-terminated char[64] too */
        size_t n = strnlen(run.principal, sizeof(call->principal) - 1);
        memcpy(call->principal, run.principal, n);
        call->principal[n] = '\0';
    }
    call->session = run.session;
    call->dry_run = run.dry_run;
    if (!call->t_call && run.span) {
        char name[300];
        snprintf(name, sizeof(name), "execute_tool %s", tool);
        call->t_call = trace_start(name, TRACE_INTERNAL, run.span, NULL);
        trace_attr_str(call->t_call, "gen_ai.operation.name", "execute_tool");
        trace_attr_str(call->t_call, "gen_ai.tool.name", tool);
        trace_attr_str(call->t_call, "codemcp.server", server);
        trace_attr_int(call->t_call, "codemcp.arguments.size", (int64_t)args_len);
    }
    /* Tools turned off (config, or `codemcp disable-tool` at run time): refused here, whatever
     * SDK the worker holds. Same kind as a tool that is not in the catalog. */
    char off[600];
    if (!ts_call_allowed(server, tool, off, sizeof(off))) {
        call->outcome = MX_CALL_NOT_FOUND;
        refuse(call, "not_found", off);
        goto refused;
    }
    json_t *f = cat_find(server, tool);
    if (!f) {
        char msg[600];
        snprintf(msg, sizeof(msg), "no enabled tool %s on server %s", tool, server);
        call->outcome = MX_CALL_NOT_FOUND;
        refuse(call, "not_found", msg);
        goto refused;
    }
    call->listed = 1;
    const char *fn = json_string_value(json_object_get(f, "function"));
    int mutation = json_is_true(json_object_get(f, "mutation"));
    free(call->fn); /* set already when the external engine was asked */
    call->fn = xstrdup(fn);
    call->mutation = mutation;
    struct policy_decision pd;
    struct policy_call pc = {run.principal, server,      tool, fn,
                             mutation,      run.dry_run, args, args_len};
    enum policy_effect effect = policy_decide(&pc, &pd);
    if (effect != POLICY_DENY && asked) {
        effect = asked->effect == POLICY_DENY ? POLICY_DENY : effect;
        pd = *asked;
    } else if (effect != POLICY_DENY) {
        call->slot = slot;
        call->timeout_ms = timeout_ms;
        if (!policy_engine_ask(&pc, run_id, run.session, &pd, on_engine_answer, call))
            return; /* waits for the engine */
        effect = pd.effect;
    }
    memcpy(call->rule, pd.rule, sizeof(call->rule));
    if (effect == POLICY_DENY) {
        json_t *a = args ? jf_loadb(args, args_len, JF_ALLOW_NUL | JF_BIG_INTEGERS, NULL) : NULL;
        char *shown = redact_dump(a, 300);
        log_info("calls", "%s refused: %s (args %s)", fn, pd.why, shown);
        free(shown);
        json_decref(a);
        refuse(call, "denied", pd.why);
        goto refused;
    }
    if (budgets_take(&pc, run_id, pd.why, sizeof(pd.why)) < 0) {
        snprintf(call->rule, sizeof(call->rule), "budgets");
        refuse(call, "budget", pd.why);
        goto refused;
    }
    call->effect = effect;
    if ((mutation && run.dry_run) || effect == POLICY_DRY_RUN) {
        call->effect = POLICY_DRY_RUN;
        call->outcome = MX_CALL_DRY_RUN;
        trace_attr_int(call->t_call, "codemcp.dry_run", 1);
        write_done(call, 1, 1);
        calls__reply(conn_id, rpc_result(id, dry_run_stub(fn, server, tool)));
        audit_end(call, "dry_run", NULL);
        call_done(run_id);
        goto refused;
    }
    if (mutation && !calls_mutation_allowed(&run, fn, server, tool)) {
        char msg[700];
        snprintf(msg, sizeof(msg),
                 "%s is a write tool and this run did not authorize it: re-send with "
                 "\"allow_mutations\": [\"%s\"], or preview with \"dry_run\": true",
                 fn, fn);
        snprintf(call->rule, sizeof(call->rule), "allow_mutations");
        refuse(call, "denied", msg);
        goto refused;
    }
    call->timeout_ms = timeout_ms;
    struct gate *g = gate_get(run_id);
    char full[400];
    if (held_take(call, g, full, sizeof(full)) < 0) {
        refuse(call, "denied", full);
        gate_release(g);
        goto refused;
    }
    call->outcome = MX_CALL_CANCELLED; /* routed: the answer, or the run's end, says more */
    if (gate_full(g) || g->head) {     /* waits in order, behind the run's earlier calls */
        if (g->tail)
            g->tail->next = call;
        else
            g->head = call;
        g->tail = call;
        if (!gate_full(g))
            lp_defer(&pump_later, pump, NULL);
    } else if (call_start(call, g) < 0) {
        gate_release(g);
    }
    return;
refused:
    call_free(call);
}

static void on_engine_answer(void *ud, const struct policy_decision *d)
{
    struct call *call = ud;
    handle_call(call, call->slot, call->timeout_ms, call->started_ms, d);
}

void calls_handle(uint64_t conn_id, int slot, json_t *id, json_t *params)
{
    int64_t t0 = now_ms();
    const char *run_id = json_string_value(json_object_get(params, "run_id"));
    const char *server = json_string_value(json_object_get(params, "server"));
    const char *tool = json_string_value(json_object_get(params, "tool"));
    json_t *args = json_object_get(params, "args");
    json_t *tmo = json_object_get(params, "timeout_ms");
    if (!run_id || !server || !tool || (args && !json_is_object(args))) {
        mx_rejected(MX_REJECT_CALL);
        calls__reply(conn_id,
                     rpc_error(id, RPC_INVALID_PARAMS,
                               "call_tool needs run_id, server, tool and object args", NULL));
        return;
    }
    char *args_text = args ? jf_dumps(args) : NULL;
    char *id_text = jf_dumps(id);
    if ((args && !args_text) || !id_text) { /* not UTF-8, too deep: as a tree would fail */
        free(args_text);
        free(id_text);
        calls__reply(conn_id,
                     rpc_error(id, RPC_INVALID_PARAMS, "call_tool args cannot be encoded", NULL));
        return;
    }
    struct slice none = {NULL, 0};
    struct call *call =
        call_new(conn_id, id, (struct slice){id_text, strlen(id_text)},
                 (struct slice){run_id, strlen(run_id)}, (struct slice){server, strlen(server)},
                 (struct slice){tool, strlen(tool)},
                 args_text ? (struct slice){args_text, strlen(args_text)} : none);
    free(args_text);
    free(id_text);
    handle_call(call, slot, json_is_integer(tmo) ? json_integer_value(tmo) : 0, t0, NULL);
}

/* A string member's bytes (between the quotes) when it needs no decoding (no escape: then no
 * NUL either): 1, else 0. */
static int plain_string(const struct js_member *v, struct slice *out)
{
    if (!v || v->vlen < 2 || v->val[0] != '"' || memchr(v->val, '\\', v->vlen))
        return 0;
    *out = (struct slice){v->val + 1, v->vlen - 2};
    return 1;
}

int calls_handle_frame(uint64_t conn_id, int slot, const char *text, size_t len)
{
    /* The worker writes method near the start: other frames (a run's envelope may be
     * megabytes) go straight to the tree, without a scan first. */
    static const char method[] = "\"method\":\"call_tool\"";
    if (!memmem(text, len < 160 ? len : 160, method, sizeof(method) - 1))
        return 0;
    struct js_member m[8], p[8];
    struct js_scan sc = {.m = m, .max = 8, .sub = "params", .sm = p, .smax = 8};
    if (js_canon_scan(text, len, 1, &sc) < 0)
        return 0;
    int n = sc.n, np = sc.sn;
    const struct js_member *id = js_get(m, n, "id"), *params = js_get(m, n, "params");
    if (!js_is(js_get(m, n, "jsonrpc"), "\"2.0\"") ||
        !js_is(js_get(m, n, "method"), "\"call_tool\"") || !id || !params || np < 0)
        return 0;
    const struct js_member *args = js_get(p, np, "args"), *tmo = js_get(p, np, "timeout_ms");
    if (args && args->val[0] != '{')
        return 0; /* the tree path refuses it */
    json_t *idv = rpc_canon_id(id->val, id->vlen);
    if (!idv)
        return 0; /* null (a notification), an escape, or not an id: the tree path */
    int64_t t0 = now_ms();
    struct slice run_id, server, tool;
    int taken = plain_string(js_get(p, np, "run_id"), &run_id) &&
                plain_string(js_get(p, np, "server"), &server) &&
                plain_string(js_get(p, np, "tool"), &tool);
    if (taken) {
        int64_t timeout_ms = 0;
        if (tmo && (tmo->val[0] == '-' || (tmo->val[0] >= '0' && tmo->val[0] <= '9')))
            timeout_ms = strtoll(tmo->val, NULL, 10);
        struct slice a = args ? (struct slice){args->val, args->vlen} : (struct slice){NULL, 0};
        handle_call(
            call_new(conn_id, idv, (struct slice){id->val, id->vlen}, run_id, server, tool, a),
            slot, timeout_ms, t0, NULL);
    }
    json_decref(idv);
    return taken;
}

int calls_resume(const char *run_id, json_t *input_responses)
{
    struct call *call = calls;
    while (call && !(call->waiting && strcmp(call->run_id, run_id) == 0))
        call = call->next;
    if (!call)
        return -1;
    json_t *extra = json_object();
    if (json_is_object(input_responses))
        json_object_set(extra, "inputResponses", input_responses);
    if (call->request_state)
        json_object_set(extra, "requestState", call->request_state);
    call->waiting = 0;
    json_decref(call->request_state);
    call->request_state = NULL;
    struct up_error err = {0};
    int rc = route(call, extra, &err);
    json_decref(extra);
    if (rc < 0) {
        DLIST_UNLINK(call);
        call->outcome = outcome_of(err.kind);
        if (write_attempted(err.kind))
            write_done(call, 0, 0);
        fail_call(call, err.kind, err.message, now_ms() - call->started_ms);
        audit_end(call, err.kind, NULL);
        call_done(call->run_id);
        gate_done(call->run_id);
        call_free(call);
    }
    return 0;
}

void calls_cancel_run(const char *run_id, const char *reason)
{
    calls__reads_cancel(run_id, 0, reason);
    struct gate *g = gate_find(run_id);
    if (!g)
        return;
    struct call *call;
    while ((call = gate_pop(g))) { /* first: none of them may start */
        fail_call(call, "timeout", reason, now_ms() - call->started_ms);
        audit_end(call, "timeout", NULL);
        call_free(call);
    }
    call = calls;
    while (call) {
        struct call *next = call->next;
        if (strcmp(call->run_id, run_id) == 0) {
            DLIST_UNLINK(call);
            g->in_flight--;
            up_cancel_call(call->up_handle, reason);
            write_done(call, 0, 0); /* routed: the server may have acted on it */
            fail_call(call, "timeout", reason, now_ms() - call->started_ms);
            audit_end(call, "timeout", NULL);
            call_free(call);
        }
        call = next;
    }
    gate_release(g);
}

void calls_conn_closed(uint64_t conn_id)
{
    calls__reads_cancel(NULL, conn_id, "the worker went away");
    for (struct gate *g = gates; g; g = g->next) { /* its waiting calls go first */
        struct call **pp = &g->head, *prev = NULL;
        while (*pp) {
            struct call *c = *pp;
            if (c->conn_id == conn_id) {
                *pp = c->next;
                audit_end(c, "worker_gone", NULL);
                call_free(c);
            } else {
                prev = c;
                pp = &c->next;
            }
        }
        g->tail = prev;
    }
    struct call *call = calls;
    while (call) {
        struct call *next = call->next;
        if (call->conn_id == conn_id) {
            DLIST_UNLINK(call);
            up_cancel_call(call->up_handle, "the worker went away");
            write_done(call, 0, 0);
            audit_end(call, "worker_gone", NULL);
            gate_done(call->run_id); /* another connection's waiting calls of the run may start */
            call_free(call);
        }
        call = next;
    }
    for (struct gate *g = gates, *next; g; g = next) { /* the ones left with nothing */
        next = g->next;
        gate_release(g);
    }
}

void calls_free_all(void)
{
    lp_defer_cancel(&pump_later);
    while (held_by) {
        struct principal_hold *h = held_by;
        held_by = h->next;
        free(h->principal);
        free(h);
    }
    n_held_by = 0;
    while (gates) {
        struct gate *g = gates;
        struct call *c;
        while ((c = gate_pop(g))) {
            audit_end(c, "shutdown", NULL);
            call_free(c);
        }
        gates = g->next;
        free(g->run_id);
        free(g);
    }
    while (calls) {
        struct call *c = calls;
        DLIST_UNLINK(c);
        audit_end(c, "shutdown", NULL);
        call_free(c);
    }
    calls__reads_free_all();
}
