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
#include "runs_int.h"
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

struct run *run_list; /* in arrival order */
static uint64_t next_run = 1;
static int64_t default_timeout_ms = -1;
static int64_t max_timeout_ms;
int64_t run_cpu_ms; /* CPU time of a run's worker process; 0: its timeout_ms */
int64_t run_grace_ms;
long run_max_output_bytes;
int run_enforce_mutations;
int run_validate_programs;
static long queue_max;            /* CODEMCP_RUN_QUEUE_MAX: runs one principal may have queued */
static int64_t run_queue_wait_ms; /* CODEMCP_RUN_QUEUE_WAIT_MS: how long one may wait to be sent */
struct run_hooks runs_hooks;
int64_t run_input_wait_ms;

void run_set_hooks(const struct run_hooks *h)
{
    runs_hooks = *h;
}

void run_send_to(struct run *r, json_t *msg)
{
    if (runs_hooks.send)
        runs_hooks.send(r->session_id, msg, r->request_id);
    else
        json_decref(msg);
}

void run_log(struct run *r, enum log_level level, const char *fmt, ...)
{
    if (!runs_hooks.log || r->smoke_done ||
        (runs_hooks.log_wanted && !runs_hooks.log_wanted(r->session_id, level)))
        return;
    char text[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    runs_hooks.log(r->session_id, level, text, r->request_id);
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
    run_grace_ms = s->kill_grace_ms;
    run_max_output_bytes = s->max_output_bytes;
    run_enforce_mutations = s->enforce_mutations;
    run_validate_programs = s->validate;
    run_input_wait_ms = s->input_wait_ms;
    queue_max = s->run_queue_max;
    run_queue_wait_ms = s->run_queue_wait_ms;
    if (queue_max < 1)
        queue_max = 1;
    if (run_queue_wait_ms < 1)
        run_queue_wait_ms = 1;
    if (run_input_wait_ms < 100)
        run_input_wait_ms = 100;
}

struct run *run_find(const char *run_id)
{
    for (struct run *r = run_list; r; r = r->next)
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
    out->enforce_mutations = run_enforce_mutations;
    out->allow_mutations = r->allow_mutations;
    out->principal = r->principal;
    out->session = r->session_id;
    out->span = r->t_run;
    return 0;
}

void run_free(struct run *r)
{
    if (r->state != RUN_DONE) /* given up before it was sent (finish_with counts the rest) */
        mx_run_finished(r->principal, "cancelled", now_ms() - r->queued_ms);
    LIST_UNLINK(&run_list, r);
    if (r->arrival)
        *r->arrival = NULL;
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
             (long long)run_queue_wait_ms);
    log_warn("runs", "%s: not sent within %lld ms (CODEMCP_RUN_QUEUE_WAIT_MS)", r->id,
             (long long)run_queue_wait_ms);
    run_finish(r, NULL, why);
}

/* Dispatches the run r just queued. One not sent at once (its home's worker or every worker
 * busy) gets its CODEMCP_RUN_QUEUE_WAIT_MS timer, counted from its arrival: most runs are sent
 * at once and never arm one. */
static void dispatch_new(struct run *r)
{
    struct run *still = r;
    r->arrival = &still; /* run_free clears it: r may be finished and freed by the dispatch */
    run_dispatch();
    if (!still)
        return;
    still->arrival = NULL;
    if (still->state != RUN_QUEUED)
        return;
    int64_t waited = now_ms() - still->queued_ms;
    lp_timer_start(&still->queue_timer, waited < run_queue_wait_ms ? run_queue_wait_ms - waited : 0,
                   queue_wait_over, still);
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
    struct run **tail = &run_list;
    while (*tail)
        tail = &(*tail)->next;
    *tail = r;
    return r;
}

/* True when principal p has CODEMCP_RUN_QUEUE_MAX runs queued already. O(runs). */
static int queue_full(const char *p)
{
    long n = 0;
    for (struct run *r = run_list; r; r = r->next)
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
    dispatch_new(r);
    return 0;
}

int run_smoke(const char *code, void (*done)(json_t *envelope, int is_error))
{
    struct run *r = new_run(0, 0);
    r->code = xstrdup(code);
    r->smoke_done = done;
    dispatch_new(r);
    return 0;
}

static int same_id(json_t *a, json_t *b)
{
    return a && b && json_equal(a, b);
}

void run_cancel_request(uint64_t session_id, json_t *request_id, const char *reason)
{
    for (struct run *r = run_list; r; r = r->next) {
        if (r->session_id != session_id || !same_id(r->request_id, request_id) ||
            r->state == RUN_DONE)
            continue;
        log_info("runs", "%s cancelled by the client: %s", r->id, reason);
        r->silent = 1;
        if (r->state == RUN_QUEUED) {
            run_free(r);
            return;
        }
        run_interrupt(r, STOP_CANCEL);
        return;
    }
}

int run_uses_slot(int slot)
{
    for (struct run *r = run_list; r; r = r->next)
        if (r->slot == slot && r->state != RUN_DONE)
            return 1;
    return 0;
}

void run_session_closed(uint64_t session_id)
{
    struct run *r = run_list;
    while (r) {
        struct run *next = r->next;
        if (r->session_id == session_id && r->state != RUN_DONE && !r->smoke_done) {
            r->silent = 1;
            if (r->state == RUN_QUEUED)
                run_free(r);
            else
                run_interrupt(r, STOP_CANCEL);
        }
        r = next;
    }
    ns_forget(session_id);
    wk_session_closed(session_id);
}

size_t run_count(void)
{
    size_t n = 0;
    for (struct run *r = run_list; r; r = r->next)
        n++;
    return n;
}

void run_free_all(void)
{
    rcpu_free_all();
    while (run_list)
        run_free(run_list);
    run_input_free_all();
}
