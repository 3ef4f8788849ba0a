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
 * cap is dropped and its call fails with kind "too_large" (calls__results_room). */
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
static struct call *calls; /* in flight */
struct calls_hooks calls__hooks;
static struct lp_deferred pump_later; /* pump() once per loop iteration when calls ended */

void calls_set_hooks(const struct calls_hooks *h)
{
    calls__hooks = *h;
}

/* Every call ends here, so its outcome is counted here, once. */
void calls__call_free(struct call *call)
{
    trace_end(call->t_up);
    trace_end(call->t_call);
    calls__held_release(call);
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

/* Routes call upstream (its gate has room). 0, or -1 when the upstream refused it: the worker
 * got the error and the call is freed. */
/* Routes call upstream with extra params members (NULL: none), in a new span for the
 * upstream request whose context goes with it. 0, or -1 with err filled. */
static int route(struct call *call, json_t *extra, struct up_error *err)
{
    char tp[TRACE_PARENT_LEN + 1];
    trace_end(call->t_up); /* a retry with the client's input is a new request */
    call->t_up = NULL;
    if (call->t_call) {
        call->t_up = trace_start_on("tools/call", call->tool, TRACE_CLIENT, call->t_call, NULL);
        trace_attr_str(call->t_up, "mcp.method.name", "tools/call");
        trace_attr_str(call->t_up, "gen_ai.tool.name", call->tool);
        trace_attr_str(call->t_up, "gen_ai.operation.name", "execute_tool");
        trace_attr_str(call->t_up, "codemcp.server", call->server);
    }
    struct up_trace ctx = {NULL, trace_tracestate(call->t_up)};
    if (trace_traceparent(call->t_up, tp) == 0)
        ctx.traceparent = tp;
    return up_call_tool(call->server, call->tool, call->args, call->args_len, extra, &ctx,
                        call->timeout_ms, calls__on_upstream_result, call, &call->up_handle, err);
}

static int call_start(struct call *call, struct gate *g)
{
    struct up_error err = {0};
    call->sent_us = mx_clock();
    if (route(call, NULL, &err) < 0) {
        call->outcome = calls__outcome_of(err.kind);
        if (calls__write_attempted(err.kind))
            calls__write_done(call, 0, 0);
        calls__fail_call(call, err.kind, err.message, now_ms() - call->started_ms);
        calls__ended(call, err.kind, NULL);
        calls__call_free(call);
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
    for (struct gate *g = calls__gates, *next; g; g = next) {
        next = g->next;
        while (!calls__gate_full(g) && g->head)
            call_start(calls__gate_pop(g), g);
        calls__gate_release(g);
    }
}

/* One of the run's calls in flight ended: the oldest waiting ones take its place, at the end
 * of this loop iteration. */
void calls__gate_done(const char *run_id)
{
    struct gate *g = calls__gate_find(run_id);
    if (!g)
        return;
    g->in_flight--;
    if (g->head && !calls__gate_full(g))
        lp_defer(&pump_later, pump, NULL);
    calls__gate_release(g);
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
        calls__refuse(call, "denied", "this run is not active: tool calls are refused");
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
        call->t_call = trace_start_on("execute_tool", tool, TRACE_INTERNAL, run.span, NULL);
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
        calls__refuse(call, "not_found", off);
        goto refused;
    }
    json_t *f = cat_find(server, tool);
    if (!f) {
        char msg[600];
        snprintf(msg, sizeof(msg), "no enabled tool %s on server %s", tool, server);
        call->outcome = MX_CALL_NOT_FOUND;
        calls__refuse(call, "not_found", msg);
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
        calls__refuse(call, "denied", pd.why);
        goto refused;
    }
    if (budgets_take(&pc, run_id, pd.why, sizeof(pd.why)) < 0) {
        snprintf(call->rule, sizeof(call->rule), "budgets");
        calls__refuse(call, "budget", pd.why);
        goto refused;
    }
    call->effect = effect;
    if ((mutation && run.dry_run) || effect == POLICY_DRY_RUN) {
        call->effect = POLICY_DRY_RUN;
        call->outcome = MX_CALL_DRY_RUN;
        trace_attr_int(call->t_call, "codemcp.dry_run", 1);
        calls__write_done(call, 1, 1);
        calls__reply(conn_id, rpc_result(id, calls__dry_run_stub(fn, server, tool)));
        calls__ended(call, "dry_run", NULL);
        calls__call_done(run_id);
        goto refused;
    }
    if (mutation && !calls_mutation_allowed(&run, fn, server, tool)) {
        char msg[700];
        snprintf(msg, sizeof(msg),
                 "%s is a write tool and this run did not authorize it: re-send with "
                 "\"allow_mutations\": [\"%s\"], or preview with \"dry_run\": true",
                 fn, fn);
        snprintf(call->rule, sizeof(call->rule), "allow_mutations");
        calls__refuse(call, "denied", msg);
        goto refused;
    }
    call->timeout_ms = timeout_ms;
    struct gate *g = calls__gate_get(run_id);
    char full[400];
    if (calls__held_take(call, g, full, sizeof(full)) < 0) {
        calls__refuse(call, "denied", full);
        calls__gate_release(g);
        goto refused;
    }
    call->outcome = MX_CALL_CANCELLED;    /* routed: the answer, or the run's end, says more */
    if (calls__gate_full(g) || g->head) { /* waits in order, behind the run's earlier calls */
        if (g->tail)
            g->tail->next = call;
        else
            g->head = call;
        g->tail = call;
        if (!calls__gate_full(g))
            lp_defer(&pump_later, pump, NULL);
    } else if (call_start(call, g) < 0) {
        calls__gate_release(g);
    }
    return;
refused:
    calls__call_free(call);
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
        call->outcome = calls__outcome_of(err.kind);
        if (calls__write_attempted(err.kind))
            calls__write_done(call, 0, 0);
        calls__fail_call(call, err.kind, err.message, now_ms() - call->started_ms);
        calls__ended(call, err.kind, NULL);
        calls__call_done(call->run_id);
        calls__gate_done(call->run_id);
        calls__call_free(call);
    }
    return 0;
}

void calls_cancel_run(const char *run_id, const char *reason)
{
    calls__reads_cancel(run_id, 0, reason);
    struct gate *g = calls__gate_find(run_id);
    if (!g)
        return;
    struct call *call;
    while ((call = calls__gate_pop(g))) { /* first: none of them may start */
        calls__fail_call(call, "timeout", reason, now_ms() - call->started_ms);
        calls__ended(call, "timeout", NULL);
        calls__call_free(call);
    }
    call = calls;
    while (call) {
        struct call *next = call->next;
        if (strcmp(call->run_id, run_id) == 0) {
            DLIST_UNLINK(call);
            g->in_flight--;
            up_cancel_call(call->up_handle, reason);
            calls__write_done(call, 0, 0); /* routed: the server may have acted on it */
            calls__fail_call(call, "timeout", reason, now_ms() - call->started_ms);
            calls__ended(call, "timeout", NULL);
            calls__call_free(call);
        }
        call = next;
    }
    calls__gate_release(g);
}

void calls_conn_closed(uint64_t conn_id)
{
    calls__reads_cancel(NULL, conn_id, "the worker went away");
    for (struct gate *g = calls__gates; g; g = g->next) { /* its waiting calls go first */
        struct call **pp = &g->head, *prev = NULL;
        while (*pp) {
            struct call *c = *pp;
            if (c->conn_id == conn_id) {
                *pp = c->next;
                calls__ended(c, "worker_gone", NULL);
                calls__call_free(c);
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
            calls__write_done(call, 0, 0);
            calls__ended(call, "worker_gone", NULL);
            calls__gate_done(
                call->run_id); /* another connection's waiting calls of the run may start */
            calls__call_free(call);
        }
        call = next;
    }
    for (struct gate *g = calls__gates, *next; g; g = next) { /* the ones left with nothing */
        next = g->next;
        calls__gate_release(g);
    }
}

void calls_free_all(void)
{
    lp_defer_cancel(&pump_later);
    calls__held_free_all();
    while (calls__gates) {
        struct gate *g = calls__gates;
        struct call *c;
        while ((c = calls__gate_pop(g))) {
            calls__ended(c, "shutdown", NULL);
            calls__call_free(c);
        }
        calls__gates = g->next;
        free(g->run_id);
        free(g);
    }
    while (calls) {
        struct call *c = calls;
        DLIST_UNLINK(c);
        calls__ended(c, "shutdown", NULL);
        calls__call_free(c);
    }
    calls__reads_free_all();
}
