/* run_dispatch — queued runs get a worker and are sent to it: a run waits for its home's
 * worker; a home with none waits in a fair queue (round-robin across principals, arrival order
 * within one); a sent run starts its namespace, its CPU budget watch and its deadline. Part of
 * the run table (runs_int.h). */
#include "runs_int.h"
#include "catalog.h"
#include "log.h"
#include "loop.h"
#include "namespaces.h"
#include "policy.h"
#include "run_cpu.h"
#include "run_params.h"
#include "trace.h"
#include "upstream.h"
#include "util.h"
#include "workers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char served_last[64]; /* the principal whose waiting run got a worker last */
static int dispatching;

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
        run_finish(r, NULL, refused);
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
                           .enforce_mutations = run_enforce_mutations,
                           .max_output_bytes = (int64_t)run_max_output_bytes,
                           .reset = r->reset,
                           .validate = run_validate_programs,
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
    rcpu_start(r->id, r->principal, slot, run_cpu_spent);
    trace_end(r->t_phase);
    r->t_phase = trace_start("execute", TRACE_INTERNAL, r->t_run, NULL);
    trace_attr_int(r->t_phase, "codemcp.worker.slot", slot);
    lp_timer_stop(&r->queue_timer);
    r->started_ms = now_ms();
    r->deadline_at = r->started_ms + r->timeout_ms;
    lp_timer_start(&r->deadline, r->timeout_ms, run_deadline_expired, r);
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
    for (struct run *r = run_list; r; r = r->next)
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
        for (struct run *r = run_list; r; r = r->next) {
            if (r->state != RUN_QUEUED || waits_for_servers(r))
                continue;
            int slot = wk_session_slot(r->home);
            if (slot < 0)
                continue; /* waits its turn for a worker (grant_waiting) */
            const char *failure = wk_start_failure(slot);
            if (failure) {
                run_finish(r, NULL, failure);
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
