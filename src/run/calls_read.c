/* calls_read — a program's read_resource(uri): checked and routed by the gateway like a tool
 * call, so the run's principal meets the same walls.
 *
 * A read is decided by policy (policy.h) as a read-only call of the tool "resources/read" (the
 * MCP method: no listed tool can have a name with a slash) of the server that lists the URI,
 * with the arguments {"uri": URI}; for the global lists (globs over SDK function names) it is
 * "<server>_read_resource". So an allow list that does not name it, a deny of the server's
 * functions, or an ordered rule for the principal refuses reads as it refuses calls, and
 * the external engine, when there is one, is asked too. A rule whose effect is dry_run refuses
 * the read (there is nothing to preview). Reads do not count against call budgets.
 *
 * Then: at most CALLS_MAX_READS in flight per principal, bounded by the program's timeout_ms
 * (never more than CODEMCP_CALL_TIMEOUT_MS), given up when the run ends or its worker goes.
 * Each read's end is an audit line (audit.h), as a call's is. */
#include "calls.h"
#include "calls_int.h"
#include "jsonfast.h"
#include "jsonrpc.h"
#include "log.h"
#include "policy.h"
#include "upstream.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads in flight per principal: a program that starts reads without waiting cannot make the
 * gateway hold more than this many upstream requests for its principal (principals are the
 * operator's), and one principal's reads never refuse another's. Each ends by the upstream's
 * call timeout at the latest. */
#define CALLS_MAX_READS 64

#define READ_TOOL "resources/read"

struct read {
    uint64_t conn_id, up_handle;
    json_t *id;
    char principal[64]; /* the run's, whose count it is in */
    char *run_id, *uri;
    int slot;           /* the worker's, while the external policy engine is asked */
    int64_t timeout_ms; /* the program's (0: the server's default) */
    /* for its audit line */
    uint64_t session;
    int dry_run;
    int64_t started_ms;
    char server[128]; /* the one that lists the URI ("" until known) */
    const char *decision;
    char rule[128];
    struct read *next, **pprev;
};
static struct read *reads; /* in flight, newest first */

static struct read *read_new(uint64_t conn_id, int slot, json_t *id, const char *run_id,
                             const char *uri, int64_t timeout_ms)
{
    struct read *rd = xcalloc(1, sizeof(*rd));
    rd->conn_id = conn_id;
    rd->slot = slot;
    rd->id = json_incref(id);
    rd->run_id = xstrdup(run_id);
    rd->uri = xstrdup(uri);
    rd->timeout_ms = timeout_ms;
    rd->started_ms = now_ms();
    rd->decision = "deny";
    return rd;
}

/* The read's end, to the observers (its audit line): it ended with outcome ("ok" or an error
 * kind); reason: why it was refused, NULL when it was not. */
static void read_audit(const struct read *rd, const char *outcome, const char *reason)
{
    if (!calls__observed())
        return;
    json_t *a = json_pack("{s:s}", "uri", rd->uri);
    char *args = jf_dumps(a);
    json_decref(a);
    char fn[160];
    snprintf(fn, sizeof(fn), "%s_read_resource", rd->server);
    struct call_event c = {.principal = rd->principal,
                           .session = rd->session,
                           .run = rd->run_id,
                           .server = rd->server[0] ? rd->server : NULL,
                           .tool = READ_TOOL,
                           .fn = rd->server[0] ? fn : NULL,
                           .read = 1,
                           .dry_run = rd->dry_run,
                           .decision = rd->decision,
                           .rule = rd->rule,
                           .reason = reason,
                           .outcome = outcome,
                           .duration_ms = now_ms() - rd->started_ms,
                           .args = args,
                           .args_len = args ? strlen(args) : 0};
    calls__emit(&c);
    free(args);
}

/* A refused read: answered with kind and why, audited (the caller drops it). */
static void read_refuse(struct read *rd, const char *kind, const char *why)
{
    rd->decision = "deny";
    calls__reply_error(rd->conn_id, rd->id, kind, why, 0);
    read_audit(rd, kind, why);
}

static void read_drop(struct read *rd)
{
    json_decref(rd->id);
    free(rd->run_id);
    free(rd->uri);
    free(rd);
}

/* Ends a read in flight: out of the list and out of its principal's count. */
static void read_free(struct read *rd)
{
    struct principal_hold *h = calls__held_find(rd->principal);
    if (h) {
        h->reads--;
        calls__held_drop_idle(h);
    }
    DLIST_UNLINK(rd);
    read_drop(rd);
}

void calls__reads_cancel(const char *run_id, uint64_t conn_id, const char *reason)
{
    struct read *rd = reads;
    while (rd) {
        struct read *next = rd->next;
        if (run_id ? strcmp(rd->run_id, run_id) == 0 : rd->conn_id == conn_id) {
            up_cancel_request(rd->up_handle, reason);
            if (run_id)
                calls__reply_error(rd->conn_id, rd->id, "timeout", reason, 0);
            read_audit(rd, run_id ? "timeout" : "worker_gone", NULL);
            read_free(rd);
        }
        rd = next;
    }
}

void calls__reads_free_all(void)
{
    while (reads) { /* their requests go with the upstreams (up_free_all), never answered */
        read_audit(reads, "shutdown", NULL);
        read_free(reads);
    }
}

static void on_read(void *ud, json_t *result, const struct up_error *err)
{
    struct read *rd = ud;
    if (result) {
        if (calls__reply(rd->conn_id, rpc_result(rd->id, json_incref(result))) == CALLS_TOO_LARGE)
            calls__reply_too_large(rd->conn_id, rd->id, "read_resource", 0, 0);
    } else
        calls__reply_error(rd->conn_id, rd->id, err->kind, err->message, 0);
    read_audit(rd, result ? "ok" : err->kind, NULL);
    read_free(rd);
}

static void on_engine_answer(void *ud, const struct policy_decision *d);

/* The checks and the routing of read rd (taken). asked: the external engine's answer (NULL
 * until it has one); while the engine is asked, the read is in no list and every check is
 * made again when the answer comes, as for a call. */
static void read_handle(struct read *rd, const struct policy_decision *asked)
{
    uint64_t conn_id = rd->conn_id;
    json_t *id = rd->id;
    struct calls_run run = {0};
    char msg[300];
    if (!calls__hooks.run_lookup || calls__hooks.run_lookup(rd->run_id, rd->slot, &run) < 0) {
        read_refuse(rd, "denied", "this run is not active: reads are refused");
        goto refused;
    }
    /* keyed as calls are: a principal's name cut to the char[64] a call keeps */
    snprintf(rd->principal, sizeof(rd->principal), "%s", run.principal ? run.principal : "");
    rd->session = run.session;
    rd->dry_run = run.dry_run;
    struct upstream *up = up_resource_server(rd->uri);
    if (!up) {
        read_refuse(rd, "not_found", "no connected server lists this resource URI");
        goto refused;
    }
    snprintf(rd->server, sizeof(rd->server), "%s", up->name);
    json_t *a = json_pack("{s:s}", "uri", rd->uri);
    char *args = jf_dumps(a);
    json_decref(a);
    char fn[300];
    snprintf(fn, sizeof(fn), "%s_read_resource", up->name);
    struct policy_call pc = {run.principal,          up->name, READ_TOOL, fn, 0, run.dry_run, args,
                             args ? strlen(args) : 0};
    struct policy_decision pd;
    enum policy_effect effect = policy_decide(&pc, &pd);
    if (effect != POLICY_DENY && asked) {
        effect = asked->effect == POLICY_DENY ? POLICY_DENY : effect;
        pd = *asked;
    } else if (effect != POLICY_DENY &&
               !policy_engine_ask(&pc, rd->run_id, run.session, &pd, on_engine_answer, rd)) {
        free(args);
        return; /* waits for the engine */
    } else if (effect != POLICY_DENY) {
        effect = pd.effect;
    }
    free(args);
    snprintf(rd->rule, sizeof(rd->rule), "%s", pd.rule);
    if (effect == POLICY_DRY_RUN) {
        effect = POLICY_DENY;
        snprintf(pd.why, sizeof(pd.why),
                 "rule %.100s previews %s's calls (dry_run): a resource read is not made",
                 pd.rule[0] ? pd.rule : "(unnamed)", up->name);
    }
    if (effect == POLICY_DENY) {
        log_info("calls", "read_resource of %s refused: %s", up->name, pd.why);
        read_refuse(rd, "denied", pd.why);
        goto refused;
    }
    rd->decision = "allow";
    struct principal_hold *h = calls__held_get(rd->principal);
    if (h->reads >= CALLS_MAX_READS) {
        snprintf(msg, sizeof(msg),
                 "%d resource reads of yours are in flight already: wait for some first",
                 CALLS_MAX_READS);
        read_refuse(rd, "denied", msg);
        goto refused;
    }
    struct up_error err = {0};
    if (up_request(up->name, "resources/read", json_pack("{s:s}", "uri", rd->uri), rd->timeout_ms,
                   on_read, rd, &rd->up_handle, &err) < 0) {
        calls__reply_error(conn_id, id, err.kind, err.message, 0);
        read_audit(rd, err.kind, NULL);
        calls__held_drop_idle(h);
        goto refused;
    }
    h->reads++;
    DLIST_PUSH(&reads, rd);
    return;
refused:
    read_drop(rd);
}

static void on_engine_answer(void *ud, const struct policy_decision *d)
{
    read_handle(ud, d);
}

void calls_read_resource(uint64_t conn_id, int slot, json_t *id, json_t *params)
{
    const char *run_id = json_string_value(json_object_get(params, "run_id"));
    const char *uri = json_string_value(json_object_get(params, "uri"));
    json_t *tmo = json_object_get(params, "timeout_ms");
    if (!run_id || !uri) {
        calls__reply(conn_id,
                     rpc_error(id, RPC_INVALID_PARAMS, "read_resource needs run_id and uri", NULL));
        return;
    }
    read_handle(read_new(conn_id, slot, id, run_id, uri,
                         json_is_integer(tmo) ? json_integer_value(tmo) : 0),
                NULL);
}
