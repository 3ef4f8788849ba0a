/* serve_http — the Streamable HTTP front. See serve_http.h. Loop thread only.
 *
 * This file reads requests and decides the answers: the Host/Origin/token checks, the
 * header checks, sessions (created by initialize, found by Mcp-Session-Id, ended by DELETE
 * or idleness), routing mcp_server's messages to streams, and listening. How an answer goes
 * out on a connection (SSE streams, replay buffers, the writer) is http_stream.c; the objects
 * both files share are described in http_int.h.
 *
 * Answers: JSON when mcp_server answered during mcp_session_receive() without intermediate
 * messages (initialize, ping, most tools/list, errors), SSE otherwise (execute_python runs,
 * a tools/list waiting for upstreams). So POST streams never end in a JSON-RPC error, which
 * matters because the SDK client (1.32) re-opens a stream that ended without a *result*.
 * Batches (JSON arrays) get 400: mcp_server handles single messages, and 2025-06-18 dropped
 * batching; 2025-03-26 clients in practice send single messages.
 *
 * lws 4.1 traps handled here: chunked request bodies are not decoded (411 without
 * Content-Length), Expect: 100-continue is never answered (we write it), custom headers are
 * read with lws_hdr_custom_copy and copied at once, and WebSocket and h2c upgrades are
 * refused. The write-side traps are handled in http_stream.c. */
#include "serve_http.h"
#include "trace.h"
#include "connlimit.h"
#include "health.h"
#include "http_auth.h"
#include "http_int.h"
#include "jsonfast.h"
#include "jsonrpc.h"
#include "log.h"
#include "settings.h"
#include "loop.h"
#include "mcp_server.h"
#include "metrics.h"
#include "http_quota.h"
#include "serve_sse_legacy.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define TICK_MS         1000 /* liveness check of GET streams */
#define KEEPALIVE_TICKS 15   /* SSE comment on idle streams every 15 s (as the SDK) */
#define MODULE          "http"

static struct {
    char path[256];
    size_t max_body;
    long idle_ms;
    long max_sessions, max_per_principal;
    int no_auth;
    char **hosts, **origins;
    size_t n_hosts, n_origins;
    int any_host;
} cfg;

static struct hsession *sessions;
static int closing;
static char url[300];
static struct lp_timer tick_timer;
static unsigned ticks;

const char *http_url(void)
{
    return url;
}

void http_set_no_auth(int on)
{
    cfg.no_auth = on;
}

void http_reload(void)
{
    hauth_reload();
}

int http_print_token(const struct settings *s)
{
    return hauth_print_token(s);
}

/* ---- sessions ----------------------------------------------------------------------------- */

static int session_busy(struct hsession *s)
{
    for (struct hstream *st = s->streams; st; st = st->next)
        if (st->conn || (st->request_id && !st->answered))
            return 1;
    return 0;
}

static void session_end(struct hsession *s, const char *why)
{
    log_info(MODULE, "session %.8s ended (%s)", s->sid, why);
    lp_timer_stop(&s->idle);
    http__session_close(&sessions, s);
}

static void idle_fired(void *ud)
{
    struct hsession *s = ud;
    if (session_busy(s)) /* a request in flight or a reader attached: never expires */
        lp_timer_start(&s->idle, cfg.idle_ms, idle_fired, s);
    else
        session_end(s, "idle");
}

static void session_touch(struct hsession *s)
{
    s->last_used_ms = now_ms();
    lp_timer_start(&s->idle, cfg.idle_ms, idle_fired, s);
}

/* mcp_server's send function: routes each message to the stream of the request it is
 * related to, else to the session's standalone stream. */
static void on_send(void *tud, const char *text, size_t len, json_t *related)
{
    struct hsession *s = tud;
    if (s->ending)
        return;
    struct hstream *st = NULL;
    if (related) {
        for (struct hstream *x = s->streams; x && !st; x = x->next)
            if (x->request_id && !x->answered && json_equal(x->request_id, related))
                st = x;
        if (!st) {
            log_debug(MODULE,
                      "session %.8s: message for a request that is no longer open "
                      "dropped",
                      s->sid);
            return;
        }
    } else {
        st = s->standalone;
    }
    http__stream_push(st, text, len, related && !http__has_method_member(text, len));
}

/* Seconds until the principal's least recently used idle session expires (Retry-After). */
static long retry_after_s(const char *principal)
{
    int64_t oldest = -1;
    for (struct hsession *s = sessions; s; s = s->next)
        if (strcmp(s->principal, principal) == 0 && !session_busy(s) &&
            (oldest < 0 || s->last_used_ms < oldest))
            oldest = s->last_used_ms;
    long left = oldest < 0 ? cfg.idle_ms : (long)(oldest + cfg.idle_ms - now_ms());
    return left < 1000 ? 1 : left / 1000;
}

static struct hsession *session_new(const char *principal)
{
    struct hsession *s = http__session_open(&sessions, principal, "http", on_send);
    if (!s)
        return NULL;
    log_info(MODULE, "session %.8s opened for %s", s->sid, principal);
    session_touch(s);
    return s;
}

static struct hsession *session_find(const char *sid)
{
    for (struct hsession *s = sessions; s; s = s->next)
        if (secure_streq(s->sid, sid))
            return s;
    return NULL;
}

/* Once a second: every attached stream's liveness check, and keepalives every
 * KEEPALIVE_TICKS (see http__stream_tick). */
static void tick(void *ud)
{
    (void)ud;
    int keepalive = ++ticks % KEEPALIVE_TICKS == 0;
    for (struct hsession *s = sessions; s; s = s->next)
        for (struct hstream *st = s->streams; st; st = st->next)
            http__stream_tick(st, keepalive);
    http__modern_tick(keepalive);
    lp_timer_start(&tick_timer, TICK_MS, tick, NULL);
}

/* ---- requests ----------------------------------------------------------------------------- */

/* Copies a header (NUL-terminated). Returns its length, -1 when absent or empty, -2 when it
 * does not fit. `name` is a custom header ("mcp-session-id:") or NULL to use `token`. */
static int header(struct lws *wsi, enum lws_token_indexes token, const char *name, char *out,
                  size_t n)
{
    int nl = name ? (int)strlen(name) : 0;
    int len = name ? lws_hdr_custom_length(wsi, name, nl) : lws_hdr_total_length(wsi, token);
    out[0] = '\0';
    if (len <= 0)
        return -1;
    if ((size_t)len >= n)
        return -2;
    int got = name ? lws_hdr_custom_copy(wsi, out, (int)n, name, nl)
                   : lws_hdr_copy(wsi, out, (int)n, token);
    return got < 0 ? -2 : got;
}

/* The request's principal (copied into c->principal), or 0 after answering 401 as RFC 6750
 * says: WWW-Authenticate with error and error_description, and an OAuth-style JSON body
 * (clients that parse a 401 as an OAuth answer then show the real cause). With
 * authentication off, the principal is the peer's address. */
static int authenticate(struct hconn *c)
{
    char auth[1024];
    const char *why;
    int n = header(c->wsi, WSI_TOKEN_HTTP_AUTHORIZATION, NULL, auth, sizeof(auth));
    const char *who = hauth_check(n == -1 ? NULL : auth, &why);
    if (n == -2) {
        who = NULL;
        why = "the Authorization header is too long";
    }
    if (who && !hauth_required()) {
        lws_get_peer_simple(c->wsi, c->principal, sizeof(c->principal));
        return 1;
    }
    if (who) {
        snprintf(c->principal, sizeof(c->principal), "%s", who);
        return 1;
    }
    snprintf(c->www_auth, sizeof(c->www_auth),
             "Bearer realm=\"codemcp\", error=\"invalid_token\", error_description=\"%s\"", why);
    c->extra_name = "www-authenticate:";
    c->extra_value = c->www_auth;
    char desc[400];
    snprintf(desc, sizeof(desc),
             "codemcp needs a bearer token (%s): add Authorization: Bearer <token>; see codemcp "
             "start --print-token",
             why);
    http__reply_oauth_error(c, 401, "invalid_token", desc);
    return 0;
}

/* The session named by the request, or NULL after replying 400 / 404. Also checks
 * MCP-Protocol-Version (absent means 2025-03-26, which we speak). */
static struct hsession *session_for(struct hconn *c)
{
    if (!c->has_sid) {
        http__reply_error(c, 400, RPC_SERVER_ERROR,
                          "Bad Request: Mcp-Session-Id header is required (send initialize first)");
        return NULL;
    }
    struct hsession *s = c->bad_sid ? NULL : session_find(c->sid);
    if (s && strcmp(s->principal, c->principal) != 0) /* another principal's: not yours */
        s = NULL;
    if (!s) {
        http__reply_session_lost(c, "initialize a new session");
        return NULL;
    }
    if (c->has_proto && !mcp_protocol_supported(c->proto)) {
        char msg[200];
        snprintf(msg, sizeof(msg),
                 "Bad Request: unsupported MCP-Protocol-Version '%s' (supported: 2025-11-25, "
                 "2025-06-18, 2025-03-26, 2024-11-05)",
                 c->proto);
        http__reply_error(c, 400, RPC_SERVER_ERROR, msg);
        return NULL;
    }
    snprintf(c->reply_sid, sizeof(c->reply_sid), "%s", s->sid);
    session_touch(s);
    return s;
}

/* Priming events have empty data, which clients before 2025-11-25 cannot handle. */
static int wants_priming(struct hconn *c, struct hsession *s)
{
    const char *v = c->has_proto ? c->proto : mcp_session_protocol(s->mcp);
    return strcmp(v, "2025-11-25") >= 0;
}

/* Hands a request to mcp_server; the reply is JSON when it was answered at once. */
static void dispatch_request(struct hconn *c, struct hsession *s, json_t *msg, int is_init)
{
    struct hstream *st = http__stream_new(s, json_object_get(msg, "id"));
    mcp_session_receive_msg(s->mcp, msg); /* parsed once, by handle_post */
    if (!(st->answered && st->n_ev == 1)) {
        http__reply_sse(c, st, 0, wants_priming(c, s));
        return;
    }
    struct hevent *ev = st->ev[0];
    http__reply_json(c, ev->text + ev->data_off, ev->len - ev->data_off - 2);
    http__stream_free(st);
    if (is_init) {
        json_t *r = json_loadb(c->out.data, c->out.len, 0, NULL);
        if (!json_object_get(r, "result")) { /* a failed initialize creates no session */
            c->reply_sid[0] = '\0';
            session_end(s, "initialize failed");
        }
        json_decref(r);
    }
}

static void handle_post(struct hconn *c)
{
    json_error_t jerr;
    json_t *msg = jf_loadb(c->body.data ? c->body.data : "", c->body.len, 0, &jerr);
    const char *why = NULL;
    char text[300];
    if (!msg) {
        snprintf(text, sizeof(text), "Parse error: %s", jerr.text);
        http__reply_error(c, 400, RPC_PARSE_ERROR, text);
        return;
    }
    json_t *rid = json_is_object(msg) ? json_object_get(msg, "id") : NULL;
    c->req_id = json_is_string(rid) || json_is_integer(rid) ? rid : NULL; /* echoed on errors */
    enum rpc_kind kind = json_is_array(msg) ? RPC_INVALID : rpc_classify(msg, &why);
    if (kind == RPC_INVALID) {
        snprintf(text, sizeof(text), "Invalid Request: %s",
                 json_is_array(msg) ? "JSON-RPC batches are not supported; POST one message" : why);
        http__reply_error(c, 400, RPC_INVALID_REQUEST, text);
        c->req_id = NULL;
        json_decref(msg);
        return;
    }
    /* Draining: refused with 503 (retry elsewhere) or 404 (the session ends here). */
    if (http__drain_refused(c, msg, 0) || http__modern_wanted(c, msg)) {
        if (!c->ready) /* 2026-07-28: no session (http_modern.c) */
            http__modern_post(c, msg, cfg.max_per_principal);
        c->req_id = NULL;
        json_decref(msg);
        return;
    }
    const char *method = json_string_value(json_object_get(msg, "method"));
    int is_init = kind == RPC_REQUEST && strcmp(method, "initialize") == 0;
    struct hsession *s = NULL;
    if (is_init && c->has_sid) {
        http__reply_error(c, 400, RPC_INVALID_REQUEST,
                          "Invalid Request: this session is already initialized (send initialize "
                          "without Mcp-Session-Id to start a new one)");
    } else if (is_init && hq_refused(c)) {
        /* answered 429 or 503 */
    } else if (is_init) {
        s = session_new(c->principal);
        if (!s)
            http__reply_error(c, 500, RPC_INTERNAL_ERROR, "cannot generate a session id");
        else
            snprintf(c->reply_sid, sizeof(c->reply_sid), "%s", s->sid);
    } else {
        s = session_for(c);
    }
    if (s && kind == RPC_REQUEST) {
        dispatch_request(c, s, msg, is_init);
    } else if (s) { /* notifications and responses are accepted, never answered */
        mcp_session_receive_msg(s->mcp, msg);
        http__reply_ready(c, 202);
    }
    c->req_id = NULL;
    json_decref(msg);
}

/* handle_post with the request's W3C trace context headers in force: the spans its MCP
 * message starts continue the caller's trace (a traceparent in the message's _meta wins). */
static void handle_post_traced(struct hconn *c)
{
    char tp[64], ts[TRACE_STATE_MAX + 1];
    int traced = trace_on() && header(c->wsi, 0, "traceparent:", tp, sizeof(tp)) > 0;
    if (traced) {
        header(c->wsi, 0, "tracestate:", ts, sizeof(ts));
        trace_http_context(tp, ts);
    }
    handle_post(c);
    if (traced)
        trace_http_context(NULL, NULL);
}

static void handle_get(struct hconn *c, const char *accept)
{
    if (!strcasestr(accept, "text/event-stream")) {
        c->extra_name = "allow:";
        c->extra_value = "GET, POST, DELETE";
        http__reply_error(c, 405, RPC_SERVER_ERROR,
                          "Method Not Allowed: GET opens the session's SSE stream and needs "
                          "Accept: text/event-stream");
        return;
    }
    struct hsession *s = session_for(c);
    if (!s)
        return;
    struct hstream *st = s->standalone;
    uint64_t from = st->next_seq - 1;
    if (c->last_event_id[0]) { /* resume "<stream>-<seq>" of this session */
        unsigned long long num = 0, seq = 0;
        char tail;
        st = NULL;
        if (sscanf(c->last_event_id, "%llu-%llu%c", &num, &seq, &tail) == 2)
            for (struct hstream *x = s->streams; x && !st; x = x->next)
                if (x->num == num)
                    st = x;
        if (!st || seq >= st->next_seq) {
            http__reply_error(c, 400, RPC_SERVER_ERROR,
                              "Bad Request: unknown or expired Last-Event-ID for this session");
            return;
        }
        from = seq;
    }
    if (st->conn && st->conn->method == M_GET && http__peer_closed(st->conn))
        http__conn_drop(st->conn, LOG_DEBUG, "the client closed it");
    else if (st->conn && c->last_event_id[0]) /* a resuming client has lost the old one */
        http__conn_drop(st->conn, LOG_DEBUG, "replaced by a resuming connection");
    if (st->conn) {
        http__reply_error(c, 409, RPC_SERVER_ERROR,
                          "Conflict: this session already has a GET stream (one per session)");
        return;
    }
    http__reply_sse(c, st, from, !c->last_event_id[0] && wants_priming(c, s));
}

static void handle_delete(struct hconn *c)
{
    struct hsession *s = session_for(c);
    if (!s)
        return;
    c->reply_sid[0] = '\0';
    session_end(s, "deleted by the client");
    http__reply_ready(c, 200);
}

int http__post_body_ok(struct hconn *c, int need_body)
{
    char ctype[128], clen[32], te[64], expect[64];
    header(c->wsi, WSI_TOKEN_HTTP_CONTENT_TYPE, NULL, ctype, sizeof(ctype));
    ctype[strcspn(ctype, "; \t")] = '\0';
    if (strcasecmp(ctype, "application/json") != 0) {
        http__reply_error(c, 415, RPC_SERVER_ERROR,
                          "Unsupported Media Type: Content-Type must be application/json");
        return 0;
    }
    int has_len = header(c->wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH, NULL, clen, sizeof(clen)) > 0;
    /* present at all, even too long to copy: the body is not ours to frame */
    int chunked = header(c->wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING, NULL, te, sizeof(te)) != -1;
    if (has_len && !chunked && (!clen[0] || clen[strspn(clen, "0123456789")] != '\0')) {
        http__reply_error(c, 400, RPC_SERVER_ERROR,
                          "Bad Request: Content-Length must be a decimal number of bytes");
        return 0;
    }
    if (!has_len || chunked) {
        http__reply_error(c, 411, RPC_SERVER_ERROR,
                          "Length Required: send the body with Content-Length (chunked request "
                          "bodies are not accepted)");
        return 0;
    }
    unsigned long long n = strtoull(clen, NULL, 10);
    if (need_body && n == 0) {
        http__reply_error(c, 400, RPC_SERVER_ERROR,
                          "Bad Request: the body is empty (send one JSON-RPC message)");
        return 0;
    }
    if (n > cfg.max_body) {
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "Payload Too Large: the body limit is %zu bytes "
                 "(CODEMCP_HTTP_MAX_BODY)",
                 cfg.max_body);
        http__reply_error(c, 413, RPC_SERVER_ERROR, msg);
        return 0;
    }
    /* curl and others wait up to a second for this before sending a large body. */
    if (header(c->wsi, WSI_TOKEN_HTTP_EXPECT, NULL, expect, sizeof(expect)) > 0 &&
        strcasecmp(expect, "100-continue") == 0) {
        http__write_continue(c);
    }
    return 1;
}

/* POST: everything that can be decided from the headers, before the body is read. */
static void check_post_headers(struct hconn *c, const char *accept)
{
    if (!strcasestr(accept, "application/json") || !strcasestr(accept, "text/event-stream")) {
        http__reply_error(
            c, 406, RPC_SERVER_ERROR,
            "Not Acceptable: Accept must list application/json and text/event-stream");
        return;
    }
    http__post_body_ok(c, 0);
}

/* 403 for a Host or Origin outside the allow-list, naming the variable that extends it. */
static void forbid(struct hconn *c, const char *what, const char *value, const char *setting)
{
    char msg[400];
    snprintf(msg, sizeof(msg), "Forbidden: %s '%s' is not allowed (%s)", what, value, setting);
    http__reply_error(c, 403, RPC_SERVER_ERROR, msg);
}

/* GET /metrics: the Prometheus text format, for the same principals as /mcp. */
static void serve_metrics(struct hconn *c)
{
    if (!authenticate(c))
        return; /* answered 401 */
    if (c->method != M_GET) {
        c->extra_name = "allow:";
        c->extra_value = "GET";
        http__reply_error(c, 405, RPC_SERVER_ERROR, "Method Not Allowed: GET /metrics");
        return;
    }
    char *text = mx_render();
    buf_reset(&c->out);
    buf_appends(&c->out, text);
    free(text);
    c->content_type = MX_CONTENT_TYPE;
    http__reply_ready(c, 200);
}

static int on_request(struct hconn *c, struct lws *wsi, const char *uri)
{
    char host[256], origin[256], accept[512], version[16];
    memset(c, 0, sizeof(*c));
    c->wsi = wsi;
    c->live = 1;
    c->method = lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI)     ? M_POST
                : lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI)    ? M_GET
                : lws_hdr_total_length(wsi, WSI_TOKEN_DELETE_URI) ? M_DELETE
                                                                  : M_OTHER;
    int n = header(wsi, 0, "mcp-session-id:", c->sid, sizeof(c->sid));
    c->has_sid = n != -1;
    c->bad_sid = n == -2;
    c->has_proto = header(wsi, 0, "mcp-protocol-version:", c->proto, sizeof(c->proto)) != -1;
    header(wsi, 0, "last-event-id:", c->last_event_id, sizeof(c->last_event_id));
    http__modern_headers(c);
    header(wsi, WSI_TOKEN_HTTP_ACCEPT, NULL, accept, sizeof(accept));
    header(wsi, WSI_TOKEN_HTTP, NULL, version, sizeof(version));
    c->http10 = strcmp(version, "HTTP/1.0") == 0;

    if (http__health_request(c, uri)) {
        /* /healthz, /readyz: for probes, before the doors (they reveal nothing) */
    } else if (closing) {
        http__reply_shutting_down(c);
    } else if (header(wsi, WSI_TOKEN_HOST, NULL, host, sizeof(host)) < 0 ||
               !http__host_allowed(host, cfg.hosts, cfg.n_hosts, cfg.any_host)) {
        forbid(c, "Host", host, "CODEMCP_HTTP_ALLOWED_HOSTS");
    } else if (header(wsi, WSI_TOKEN_ORIGIN, NULL, origin, sizeof(origin)) != -1 &&
               !http__origin_allowed(origin, cfg.origins, cfg.n_origins)) {
        forbid(c, "Origin", origin, "CODEMCP_HTTP_ALLOWED_ORIGINS");
    } else if (strcmp(uri, "/metrics") == 0 && strcmp(uri, cfg.path) != 0 && mx_enabled()) {
        serve_metrics(c);
    } else if (strcmp(uri, cfg.path) != 0 && !lsse_path(uri)) {
        /* Before authentication: a path codemcp does not serve is 404 for everyone, so the
         * OAuth discovery an OAuth-aware client tries first (/.well-known/oauth-*,
         * /register) says "no OAuth here" instead of a 401 that starts an OAuth flow. */
        char msg[480];
        snprintf(msg, sizeof(msg), "Not Found: MCP is served at %s%s", cfg.path,
                 hauth_required() ? "; codemcp does not serve OAuth, it needs a bearer token: "
                                    "add Authorization: Bearer <token>; see codemcp start "
                                    "--print-token"
                                  : "");
        http__reply_error(c, 404, RPC_SERVER_ERROR, msg);
    } else if (!authenticate(c)) {
        /* answered 401 */
    } else if (strcmp(uri, cfg.path) != 0 && lsse_request(c, uri)) {
        /* the 2024-11-05 HTTP+SSE transport (serve_sse_legacy.c) took it */
    } else if (c->method == M_POST) {
        check_post_headers(c, accept);
    } else if ((c->method == M_GET || c->method == M_DELETE) && http__modern_refuse_method(c)) {
        /* a 2026-07-28 client: 405 */
    } else if (c->method == M_GET) {
        handle_get(c, accept);
    } else if (c->method == M_DELETE) {
        handle_delete(c);
    } else {
        c->extra_name = "allow:";
        c->extra_value = "GET, POST, DELETE";
        http__reply_error(c, 405, RPC_SERVER_ERROR, "Method Not Allowed");
    }
    return 0;
}

/* Half-open peers: TCP keepalive and a bound on unacknowledged data let the kernel report
 * them, so their streams detach (and stay resumable) instead of lingering. */
static void tune_socket(int fd)
{
    int on = 1, idle = 60, intvl = 10, cnt = 3;
    unsigned int user_timeout = 120000;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));
}

/* Input after a complete request body, while that request is still being answered (a
 * pipelining client). lws 4.1 mishandles it: it re-delivers the body completion on every loop
 * pass without consuming the buffered bytes, hands the next request's headers over as that
 * request's body, and from then on spins at 100 % CPU, answering nobody and ignoring SIGTERM.
 * So a request pipelined behind one with a body is not served: the answer in progress goes
 * out with "Connection: close" and the connection ends after it (RFC 9112 9.6: the client
 * retries what was not answered); a streamed answer ends at once instead (a 2025 stream stays
 * resumable). Returns what the lws callback returns. */
static int pipelined(struct hconn *c)
{
    if (!c->close_after)
        log_info(MODULE, "a request was pipelined behind one still being answered: the "
                         "connection closes after the answer (send requests one at a time)");
    c->close_after = 1;
    if (c->sse || c->defer || !c->ready) {
        http__conn_release(c);
        return -1;
    }
    return 0;
}

static int http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                         size_t len)
{
    struct hconn *c = user;
    switch (reason) {
    case LWS_CALLBACK_FILTER_NETWORK_CONNECTION: /* user is lws's struct, not ours */
        tune_socket((int)(lws_intptr_t)in);
        return 0;
    case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
        return cl_on_accept(CL_HTTP, wsi);
    case LWS_CALLBACK_WSI_DESTROY:
        cl_on_destroy(CL_HTTP, wsi);
        return 0;
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: /* WebSocket and h2c are not served here */
        if (lws_return_http_status(wsi, HTTP_STATUS_BAD_REQUEST,
                                   "connection upgrades are not served; use HTTP/1.1"))
            return -1;
        return 1;
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        return -1;
    case LWS_CALLBACK_HTTP:
        cl_set_phase(CL_HTTP, wsi,
                     lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) ? CL_REQUEST : CL_ACTIVE);
        return on_request(c, wsi, in ? (const char *)in : "");
    case LWS_CALLBACK_HTTP_BODY:
        mx_client_bytes(MX_TRANSPORT_HTTP, len, 0);
        if (c && c->live && !c->ready && c->body.len + len <= cfg.max_body)
            buf_append(&c->body, in, len);
        return 0;
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
        if (c && c->live && c->body_done) /* again: lws holds input past the body */
            return pipelined(c);
        if (c)
            c->body_done = 1;
        cl_set_phase(CL_HTTP, wsi, CL_ACTIVE);
        if (c && c->live && !c->ready && c->legacy)
            lsse_body(c);
        else if (c && c->live && !c->ready)
            handle_post_traced(c);
        return 0;
    case LWS_CALLBACK_HTTP_WRITEABLE:
        return c ? http__on_writable(c) : 0;
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
    case LWS_CALLBACK_CLOSED_HTTP:
        if (c)
            http__conn_release(c);
        return 0;
    default:
        return 0;
    }
}

static const struct lws_protocols http_protocols[] = {
    {"codemcp-http", http_callback, sizeof(struct hconn), 0, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* ---- listening ---------------------------------------------------------------------------- */

static int load_config(const struct settings *s)
{
    const char *path = s->http_path;
    if (!path || !*path)
        path = "/mcp";
    if (path[0] != '/' || strlen(path) >= sizeof(cfg.path)) {
        fprintf(stderr, "codemcp: CODEMCP_HTTP_PATH must start with '/' (got '%s')\n", path);
        return -1;
    }
    snprintf(cfg.path, sizeof(cfg.path), "%s", path);
    cfg.max_body = (size_t)s->http_max_body;
    http__sse_configure(s->http_sse_keepalive_ms);
    cfg.idle_ms = s->http_session_idle_ms;
    if (cfg.idle_ms < 1)
        cfg.idle_ms = 1;
    cfg.max_sessions = s->http_max_sessions;
    cfg.max_per_principal = s->http_max_sessions_per_principal;
    hq_init(cfg.max_sessions, cfg.max_per_principal, retry_after_s);
    cfg.hosts = http__split_list(s->http_allowed_hosts, &cfg.n_hosts);
    cfg.origins = http__split_list(s->http_allowed_origins, &cfg.n_origins);
    for (size_t i = 0; i < cfg.n_hosts; i++)
        if (strcmp(cfg.hosts[i], "*") == 0)
            cfg.any_host = 1;
    return 0;
}

int http_serve(const struct settings *s, const char *host, int port)
{
    char bind_host[256] = "127.0.0.1";
    int bind_port = 3388;
    const char *bind_env = s->http_bind;
    if (bind_env && *bind_env &&
        http__parse_bind(bind_env, bind_host, sizeof(bind_host), &bind_port)) {
        fprintf(stderr, "codemcp: CODEMCP_HTTP_BIND='%s' is not HOST:PORT (e.g. 127.0.0.1:3388)\n",
                bind_env);
        return -1;
    }
    if (host && *host) {
        const char *h = host[0] == '[' ? host + 1 : host;
        snprintf(bind_host, sizeof(bind_host), "%.*s", (int)strcspn(h, "]"), h);
    }
    if (port >= 0)
        bind_port = port;
    int no_auth = cfg.no_auth;
    if (load_config(s) < 0)
        return -1;

    /* Which socket: an IPv4/IPv6 literal, a wildcard, or an interface name for lws. */
    struct in6_addr a6;
    struct in_addr a4;
    const char *iface = bind_host;
    if (strcmp(bind_host, "localhost") == 0)
        iface = "127.0.0.1";
    int v6 = inet_pton(AF_INET6, iface, &a6) == 1, v4 = inet_pton(AF_INET, iface, &a4) == 1;
    int any = strcmp(iface, "0.0.0.0") == 0 || strcmp(iface, "::") == 0 || !*iface;
    if ((v4 || v6) && bind_port && http__probe_bind(any ? NULL : iface, v6, bind_port) < 0)
        return -1;
    int loopback = (v4 && ntohl(a4.s_addr) >> 24 == 127) || (v6 && IN6_IS_ADDR_LOOPBACK(&a6));
    if (hauth_init(s, loopback, no_auth) < 0)
        return -1;

    const char *cert = s->tls_cert, *key = s->tls_key;
    int tls = cert && *cert && key && *key;
    if (!tls && ((cert && *cert) || (key && *key))) {
        fprintf(stderr, "codemcp: TLS needs both CODEMCP_TLS_CERT and CODEMCP_TLS_KEY\n");
        return -1;
    }
    struct lws_context_creation_info vi;
    memset(&vi, 0, sizeof(vi));
    vi.port = bind_port;
    vi.iface = any ? NULL : iface;
    vi.protocols = http_protocols;
    vi.vhost_name = "codemcp-http";
    /* An idle keep-alive connection is closed after CODEMCP_HTTP_IDLE_TIMEOUT_MS (lws: seconds). */
    long idle_s = (s->http_idle_timeout_ms + 999) / 1000;
    vi.keepalive_timeout = idle_s < 1 ? 1 : (int)idle_s;
    if (!v6)
        vi.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
    if (tls) {
        vi.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        vi.ssl_cert_filepath = cert;
        vi.ssl_private_key_filepath = key;
        vi.alpn = "http/1.1"; /* custom headers do not work on HTTP/2 streams in lws 4.1 */
    }
    /* Room for one request's headers: at lws's default of 4 KiB a request with a long bearer
     * token or cookie was closed unanswered. Held only while a request's headers are. */
    long hb = s->http_max_headers;
    struct lws_context *lc = lp_context(hb < 4096 ? 4096 : hb > 64000 ? 64000 : (unsigned)hb);
    struct lws_vhost *vhost = lc ? lws_create_vhost(lc, &vi) : NULL;
    int actual = vhost ? lws_get_vhost_listen_port(vhost) : -1;
    if (actual <= 0) {
        fprintf(stderr, "codemcp: cannot listen on %s port %d%s (see the log above)\n", bind_host,
                bind_port, tls ? " with TLS" : "");
        return -1;
    }
    const char *shown = any ? "127.0.0.1" : iface;
    int bracket = strchr(shown, ':') != NULL;
    snprintf(url, sizeof(url), "%s://%s%s%s:%d%s", tls ? "https" : "http", bracket ? "[" : "",
             shown, bracket ? "]" : "", actual, cfg.path);
    fprintf(stderr, "codemcp: serving MCP over Streamable HTTP at %s\n", url);
    hauth_print_snippet(url);
    cl_init(CL_HTTP, &(struct cl_limits){.max_pending = s->http_max_pending,
                                         .max_pending_per_peer = s->http_max_pending_per_peer,
                                         .max_conn_per_peer = s->http_max_conn_per_peer,
                                         .pending_ms = s->http_header_timeout_ms,
                                         .body_ms = s->http_body_timeout_ms,
                                         .grace_ms = s->http_pending_grace_ms});
    if (cfg.n_hosts || !(http__is_loopback_name(iface) || strcmp(iface, "127.0.0.1") == 0))
        log_info(MODULE, "allowed Host names: loopback%s%s", cfg.n_hosts ? " + " : "",
                 cfg.n_hosts ? s->http_allowed_hosts : "");
    lp_timer_start(&tick_timer, TICK_MS, tick, NULL);
    return 0;
}

size_t http_busy(void)
{
    size_t n = http__modern_writing() + http__replies_writing();
    for (struct hsession *s = sessions; s; s = s->next)
        for (struct hstream *st = s->streams; st; st = st->next)
            n += st->request_id && (!st->answered || st->conn);
    return n;
}

void http_close(void)
{
    if (closing)
        return;
    closing = 1;
    health_stopping(); /* /readyz answers until the last moment: not ready */
    lp_timer_stop(&tick_timer);
    http__modern_close_all();
    lsse_close_all();
    while (sessions)
        session_end(sessions, "the gateway is shutting down");
    hauth_free();
    http__free_list(cfg.hosts, cfg.n_hosts);
    http__free_list(cfg.origins, cfg.n_origins);
    memset(&cfg, 0, sizeof(cfg));
}
