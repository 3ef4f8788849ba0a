/* http_modern — the 2026-07-28 era on the Streamable HTTP front: POSTs without
 * Mcp-Session-Id that carry the protocol version in `_meta` (and MCP-Protocol-Version). Loop
 * thread only. serve_http.c reads the request, checks Host/Origin/token and the POST headers
 * exactly as for 2025 sessions, and hands such a POST here; this file checks the routing
 * headers against the body, serves the request through mcp_server (the one MCP layer of
 * both eras: it applies the envelope rules and answers the methods) and picks the HTTP
 * status. It must not know any method: the era rules are mcp_era.c's and mcp_server.c's.
 *
 * Identity and concurrency: a modern request has no session, so each request gets a
 * transient mcp_session of its own, created when the body is complete and closed when the
 * connection that carries its answer is released (answered, or closed by the client, which
 * is how the 2026 era cancels over HTTP). Two clients of one principal may both send id 1 at
 * once: their requests live in different sessions, so their replies cannot cross and no id
 * rewriting is needed. The session is tagged with the request's principal and its home is
 * the principal's (ns_principal_home): its runs go to that principal's worker, and state
 * between requests is a namespace handle the client passes back (namespaces.c), never the
 * transient session. An alternative, one long-lived session per principal with request ids
 * rewritten, would also keep a worker warm, but it shares cancellation, log levels and client
 * names between unrelated clients of one token; per-request sessions keep every answer, log
 * level and cancellation private to its request, and cost ~4.5k instructions (callgrind: about
 * 2 % of a 2026 execute_python, bench/results/modern.md), too little to share them for.
 *
 * Answers: checks that fail before a method runs (the spec's ladder: header mismatch -32020,
 * envelope -32602, unsupported version -32022, removed or unknown method -32601) are JSON
 * with HTTP 400 (404 for -32601); a method's own answer is HTTP 200 (400 for -32021), as
 * JSON when it comes without intermediate messages (at once, or later: nothing is written
 * until the first message, http__reply_deferred, so an execute_python run without progress
 * or log messages is one JSON body too, unless it outlasts DEFER_SSE_MS), else SSE on the
 * POST (runs with progress, subscriptions/listen: acknowledged first, then
 * notifications/tools/list_changed tagged with the subscription, until the client closes).
 * No priming events and no resumption: the 2026 era has none. GET and DELETE from a 2026
 * client get 405: that era has no GET stream and no sessions. */
#include "http_int.h"
#include "jsonrpc.h"
#include "mcp_era.h"
#include "mcp_server.h"
#include "namespaces.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODULE "http"

static struct hsession *reqs; /* transient sessions of requests answered over SSE */

/* ---- headers ------------------------------------------------------------------------------ */

/* A custom header, trimmed of spaces and tabs. 1 when present (too long: present and ""). */
static int routing_header(struct lws *wsi, const char *name, char *out, size_t n)
{
    int nl = (int)strlen(name);
    int len = lws_hdr_custom_length(wsi, name, nl);
    out[0] = '\0';
    if (len <= 0)
        return 0;
    if ((size_t)len >= n || lws_hdr_custom_copy(wsi, out, (int)n, name, nl) < 0) {
        out[0] = '\0';
        return 1;
    }
    size_t a = strspn(out, " \t"), b = strlen(out);
    while (b > a && (out[b - 1] == ' ' || out[b - 1] == '\t'))
        b--;
    memmove(out, out + a, b - a);
    out[b - a] = '\0';
    return 1;
}

void http__modern_headers(struct hconn *c)
{
    c->has_mcp_method = routing_header(c->wsi, "mcp-method:", c->mcp_method, sizeof(c->mcp_method));
    c->has_mcp_name = routing_header(c->wsi, "mcp-name:", c->mcp_name, sizeof(c->mcp_name));
    c->has_param_ns =
        routing_header(c->wsi, "mcp-param-namespace:", c->param_ns, sizeof(c->param_ns));
    if (c->has_proto) { /* serve_http copies it untrimmed */
        size_t a = strspn(c->proto, " \t"), b = strlen(c->proto);
        while (b > a && (c->proto[b - 1] == ' ' || c->proto[b - 1] == '\t'))
            b--;
        memmove(c->proto, c->proto + a, b - a);
        c->proto[b - a] = '\0';
    }
}

int http__modern_wanted(struct hconn *c, json_t *msg)
{
    if (c->has_sid)
        return 0;
    if (mcp_era_is_modern_request(json_object_get(msg, "params")))
        return 1;
    return c->has_proto && !mcp_era_is_legacy_version(c->proto);
}

int http__modern_refuse_method(struct hconn *c)
{
    if (c->has_sid || !c->has_proto || mcp_era_is_legacy_version(c->proto))
        return 0;
    c->extra_name = "allow:";
    c->extra_value = "POST";
    http__reply_error(c, 405, RPC_SERVER_ERROR,
                      c->method == M_GET
                          ? "Method Not Allowed: protocol " MCP_MODERN_VERSION
                            " has no GET stream; POST subscriptions/listen to hear of list changes"
                          : "Method Not Allowed: protocol " MCP_MODERN_VERSION
                            " has no sessions to DELETE");
    return 1;
}

/* ---- transient sessions ------------------------------------------------------------------- */

static struct hsession *find(uint64_t id)
{
    for (struct hsession *r = reqs; r; r = r->next)
        if (mcp_session_id(r->mcp) == id)
            return r;
    return NULL;
}

/* mcp_server's send function: only messages related to the request have somewhere to go. */
static void on_send(void *tud, const char *text, size_t len, json_t *related)
{
    struct hsession *r = tud;
    if (r->ending || !related)
        return;
    for (struct hstream *st = r->streams; st; st = st->next)
        if (st->request_id && !st->answered && json_equal(st->request_id, related)) {
            http__stream_push(st, text, len, !http__has_method_member(text, len));
            return;
        }
}

static struct hsession *req_new(const char *principal)
{
    struct hsession *r = xcalloc(1, sizeof(*r));
    size_t n = strnlen(principal, sizeof(r->principal) - 1);
    memcpy(r->principal, principal, n); /* zero-terminated by xcalloc */
    r->mcp = mcp_session_new(on_send, r, "http 2026");
    ns_set_principal(mcp_session_id(r->mcp), principal);
    mcp_session_set_home(r->mcp, ns_principal_home(principal)); /* runs in the principal's worker */
    r->last_used_ms = now_ms();
    return r;
}

/* Closes the session (its runs are cancelled) and frees r; r must not be in reqs. */
static void req_free(struct hsession *r)
{
    r->ending = 1;
    mcp_session_close(r->mcp);
    while (r->streams)
        http__stream_free(r->streams);
    free(r);
}

static long open_of(const char *principal)
{
    long n = 0;
    for (struct hsession *r = reqs; r; r = r->next)
        n += strcmp(r->principal, principal) == 0;
    return n;
}

/* A connection ends (http__conn_release): the transient session of its request goes with
 * it (runs cancelled, subscriptions closed). */
static void conn_gone(struct hconn *c)
{
    struct hsession *r = c->modern_id ? find(c->modern_id) : NULL;
    c->modern_id = 0;
    if (!r)
        return;
    LIST_UNLINK(&reqs, r);
    req_free(r);
}

void http__modern_tick(int keepalive)
{
    for (struct hsession *r = reqs; r; r = r->next)
        for (struct hstream *st = r->streams; st; st = st->next)
            http__stream_tick(st, keepalive);
}

size_t http__modern_writing(void)
{
    size_t n = 0;
    for (struct hsession *r = reqs; r; r = r->next)
        for (struct hstream *st = r->streams; st; st = st->next)
            n += st->request_id && st->answered; /* freed once written (conn_gone) */
    return n;
}

void http__modern_close_all(void)
{
    while (reqs) {
        struct hsession *r = reqs;
        reqs = r->next;
        req_free(r); /* a reader is detached and its response ended */
    }
}

/* ---- requests ----------------------------------------------------------------------------- */

static int error_code(json_t *reply)
{
    return (int)json_integer_value(json_object_get(json_object_get(reply, "error"), "code"));
}

/* A method's own answer: HTTP 200, except an unknown method (404) and a missing client
 * capability (400). Only error answers are parsed (a result can be megabytes). */
static int answer_status(const char *text, size_t len)
{
    if (http__message_kind(text, len) != 'e')
        return 200;
    json_t *m = json_loadb(text, len, 0, NULL);
    int code = json_object_get(m, "result") ? 0 : error_code(m);
    json_decref(m);
    return code == RPC_METHOD_NOT_FOUND ? 404 : code == MCP_MISSING_CAPABILITY ? 400 : 200;
}

static void reply_object(struct hconn *c, int status, json_t *msg)
{
    char *t = rpc_dump(msg);
    buf_reset(&c->out);
    buf_appends(&c->out, t ? t : "{}");
    free(t);
    log_debug(MODULE, "2026 request answered %d", status);
    http__reply_ready(c, status);
}

/* execute_python declares `namespace` with x-mcp-header (mcp_tool.c), so a load balancer
 * routes on Mcp-Param-Namespace: a header that disagrees with the body would run the
 * request where the body's handle does not live, so it is refused (-32020). A request
 * without the header is served (the replica's handle check then says where the state is). */
static json_t *check_param_namespace(struct hconn *c, json_t *msg)
{
    json_t *params = json_object_get(msg, "params");
    const char *method = json_string_value(json_object_get(msg, "method"));
    const char *tool = json_string_value(json_object_get(params, "name"));
    if (!c->has_param_ns || !method || strcmp(method, "tools/call") != 0 || !tool ||
        strcmp(tool, "execute_python") != 0)
        return NULL;
    json_t *v = json_object_get(json_object_get(params, "arguments"), "namespace");
    char *sent = mcp_era_header_decode(c->param_ns);
    int same = sent && json_is_string(v) && strcmp(sent, json_string_value(v)) == 0;
    free(sent);
    if (same)
        return NULL;
    return rpc_error(json_object_get(msg, "id"), MCP_HEADER_MISMATCH,
                     "Header mismatch: Mcp-Param-Namespace does not match the `namespace` "
                     "argument of execute_python",
                     NULL);
}

/* The checks before a method runs, in the order the spec's ladder has them: an envelope
 * without a version is invalid params; then the headers against the body (-32020, and
 * -32022 for a version we do not serve); then the rest of the envelope and removed methods. */
static json_t *ladder(struct hconn *c, json_t *msg, int *status)
{
    json_t *id = json_object_get(msg, "id");
    json_t *params = json_object_get(msg, "params");
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *bad = NULL;
    *status = 400;
    if (mcp_era_is_modern_request(params))
        bad = mcp_era_check_http_headers(msg, c->has_proto ? c->proto : NULL,
                                         c->has_mcp_method ? c->mcp_method : NULL,
                                         c->has_mcp_name ? c->mcp_name : NULL, status);
    if (!bad)
        bad = check_param_namespace(c, msg);
    if (!bad)
        bad = mcp_modern_check(id, method, params);
    if (bad) /* SEP-2575's mapping: -32601 is 404, every other ladder error 400 */
        *status = error_code(bad) == RPC_METHOD_NOT_FOUND ? 404 : 400;
    return bad;
}

void http__modern_post(struct hconn *c, json_t *msg, long max_per_principal)
{
    json_t *id = json_object_get(msg, "id");
    if (!id || !json_object_get(msg, "method")) { /* a notification or a response */
        http__reply_ready(c, 202); /* nothing of a session to act on; never answered */
        return;
    }
    int status;
    json_t *bad = ladder(c, msg, &status);
    if (bad) {
        reply_object(c, status, bad);
        json_decref(bad);
        return;
    }
    if (open_of(c->principal) >= max_per_principal) {
        char why[240];
        snprintf(why, sizeof(why),
                 "Too Many Requests: %s already has %ld open 2026 requests "
                 "(CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL); close streams you no longer read",
                 c->principal, max_per_principal);
        json_t *e = rpc_error(id, RPC_SERVER_ERROR, why, NULL);
        reply_object(c, 429, e);
        json_decref(e);
        return;
    }
    struct hsession *r = req_new(c->principal);
    struct hstream *st = http__stream_new(r, id);
    mcp_session_receive_checked(r->mcp, msg); /* parsed once, by serve_http; ladder passed */
    if (st->answered && st->n_ev == 1) {
        struct hevent *ev = st->ev[0];
        const char *text = ev->text + ev->data_off;
        size_t len = ev->len - ev->data_off - 2;
        buf_reset(&c->out);
        buf_append(&c->out, text, len);
        http__reply_ready(c, answer_status(text, len));
        req_free(r);
        return;
    }
    r->next = reqs;
    reqs = r;
    c->modern_id = mcp_session_id(r->mcp);
    c->on_release = conn_gone;
    c->watch_close = 1;
    http__reply_deferred(c, st, answer_status); /* JSON when the answer comes alone, else SSE */
}
