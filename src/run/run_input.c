/* run_input — the input relay's state in the run table: the requestState a run's client was
 * given (one use, bound to the principal and the arguments, expiring after
 * CODEMCP_INPUT_WAIT_MS), the retry that takes the run over, and the tombs that say what an
 * ended state was (and keep the answer of a run that ended while its state was pending). The
 * protocol is described in runs.c; run_relay.c holds the pure pieces. Part of the run table
 * (runs_int.h). */
#include "runs_int.h"
#include "calls.h"
#include "jsonrpc.h"
#include "log.h"
#include "loop.h"
#include "namespaces.h"
#include "run_relay.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

static struct input_tomb input_tombs[INPUT_TOMBS];
static size_t next_input_tomb;

static void tomb_drop_answer(struct input_tomb *t)
{
    json_decref(t->answer);
    json_decref(t->arguments);
    t->answer = t->arguments = NULL;
}

/* The pending requestState goes (why: what a retry with it is told). Returns its tomb (to
 * keep the run's answer in), or NULL when none was pending. */
struct input_tomb *run_input_end(struct run *r, const char *why)
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

/* ---- the input relay ---------------------------------------------------------------------- */

static void input_wait_over(void *ud)
{
    struct run *r = ud;
    log_info("runs", "%s: no input within %lld ms: cancelled", r->id, (long long)run_input_wait_ms);
    run_input_end(r, "expired: nobody answered within CODEMCP_INPUT_WAIT_MS, and its run was "
                     "cancelled");
    r->silent = 1;
    run_interrupt(r, STOP_CANCEL);
}

int run_on_input_required(const char *run_id, json_t *result)
{
    struct run *r = run_find(run_id);
    json_t *requests = json_object_get(result, "inputRequests");
    json_t *rs = json_object_get(result, "requestState");
    if (!r || r->state != RUN_SENT || r->stop != STOP_NONE || r->silent || r->awaiting ||
        r->smoke_done || !r->client_caps || !runs_hooks.send)
        return 0;
    if (requests ? !json_is_object(requests) : !json_is_string(rs))
        return 0;
    if (!run_relay_can_answer(r->client_caps, requests) || run_relay_mint_state(r->input_state) < 0)
        return 0;
    r->awaiting = 1;
    int64_t now = now_ms();
    r->time_left = r->deadline_at > now ? r->deadline_at - now : 1;
    lp_timer_stop(&r->deadline);
    lp_timer_start(&r->input_timer, run_input_wait_ms, input_wait_over, r);
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
    runs_hooks.send(sid, rpc_result(rid, answer), rid);
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
    struct run *r = run_list;
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
            if (runs_hooks.send)
                runs_hooks.send(session_id, rpc_result(request_id, result), request_id);
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
    run_input_end(r, "was already answered (each one is good for one retry)");
    r->session_id = session_id;
    r->request_id = json_incref(request_id);
    r->progress_token = json_incref(progress_token);
    json_decref(r->client_caps);
    r->client_caps = json_is_object(client_caps) ? json_incref(client_caps) : NULL;
    r->deadline_at = now_ms() + r->time_left;
    lp_timer_start(&r->deadline, r->time_left, run_deadline_expired, r);
    log_info("runs", "%s: input answered; the call goes again", r->id);
    calls_resume(r->id, input_responses);
    return 0;
}

void run_input_free_all(void)
{
    for (size_t i = 0; i < INPUT_TOMBS; i++)
        tomb_drop_answer(&input_tombs[i]);
}
