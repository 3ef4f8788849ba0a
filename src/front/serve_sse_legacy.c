/* serve_sse_legacy — the 2024-11-05 HTTP+SSE transport. See serve_sse_legacy.h.
 * Loop thread only; never blocks.
 *
 * What it reuses: serve_http.c's door (Host/Origin/token, principal), the session quotas both
 * transports share (http_quota.c), opening and ending a session as serve_http.c does
 * (http__session_open/close: mcp_server.c sessions), and http_stream.c's SSE writer, replay
 * buffer bounds and keep-alive comments. What it owns: the legacy sessions (a list of its own,
 * so serve_http.c's routing never sees them), the `endpoint` event, the sessionId lookup of
 * POST /messages, and ending a session when its one stream closes.
 *
 * Every message of a legacy session goes out on its single stream (the standalone stream of
 * an hsession, never marked answered, so the writer keeps it open). A stream whose client
 * reads too slowly is dropped by http_stream.c's bounds; as the transport cannot resume, the
 * session then ends like any other closed stream. Must not touch Streamable HTTP sessions. */
#include "serve_sse_legacy.h"
#include "http_quota.h"
#include "jsonrpc.h"
#include "log.h"
#include "loop.h"
#include "mcp_server.h"
#include "replica.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SSE_PATH      "/sse"
#define MESSAGES_PATH "/messages"
#define MODULE        "http-sse"

static struct hsession *lsessions;
static struct lp_timer tick_timer;
static int ticking;
static unsigned ticks;
static long tick_ms, keepalive_ticks;

static void session_end(struct hsession *s, const char *why)
{
    log_info(MODULE, "legacy SSE session %.8s ended (%s)", s->sid, why);
    http__session_close(&lsessions, s);
}

/* Once per tick: http_stream.c's liveness check (a GET stream's closed client is found by a
 * peek) and keep-alives; a session whose stream has no reader any more is over. */
static void tick(void *ud)
{
    (void)ud;
    int keepalive = ++ticks % (unsigned)keepalive_ticks == 0;
    struct hsession *s = lsessions;
    while (s) {
        struct hsession *next = s->next;
        http__stream_tick(s->standalone, keepalive);
        if (!s->standalone->conn)
            session_end(s, "its stream closed");
        s = next;
    }
    ticking = lsessions != NULL;
    if (ticking)
        lp_timer_start(&tick_timer, tick_ms, tick, NULL);
}

void http__sse_configure(long keepalive_ms)
{
    long ka = keepalive_ms < 100 ? 100 : keepalive_ms;
    tick_ms = ka < 1000 ? ka : 1000;
    keepalive_ticks = (ka + tick_ms - 1) / tick_ms;
}

static void arm_tick(void)
{
    if (ticking)
        return;
    ticking = 1;
    lp_timer_start(&tick_timer, tick_ms, tick, NULL);
}

/* mcp_server's send function: everything goes out on the session's one stream. */
static void on_send(void *tud, const char *text, size_t len, json_t *related)
{
    (void)related;
    struct hsession *s = tud;
    if (!s->ending)
        http__stream_push(s->standalone, text, len, 0);
}

/* The first event of a fresh stream: `event: endpoint` with the URI to POST to. Built here
 * because http__stream_push only makes `message` events; it keeps http_int.h's invariants
 * (consecutive seqs from 1, bytes counted). */
static void push_endpoint(struct hstream *st, const char *sid)
{
    static const char head[] = "event: endpoint\ndata: ";
    char text[200];
    int n = snprintf(text, sizeof(text), "%s%s?sessionId=%s\n\n", head, MESSAGES_PATH, sid);
    struct hevent *ev = xmalloc(sizeof(*ev) + (size_t)n + 1);
    ev->seq = st->next_seq++;
    ev->data_off = sizeof(head) - 1;
    ev->len = (size_t)n;
    memcpy(ev->text, text, (size_t)n + 1);
    st->cap_ev = 4;
    st->ev = xmalloc(st->cap_ev * sizeof(*st->ev));
    st->ev[0] = ev;
    st->n_ev = 1;
    st->bytes = ev->len;
}

static void open_session(struct hconn *c)
{
    if (http__drain_refused(c, NULL, 1) || hq_refused(c)) /* 503, or 429 as for an initialize */
        return;
    struct hsession *s = http__session_open(&lsessions, c->principal, "sse", on_send);
    if (!s) {
        http__reply_error(c, 500, RPC_INTERNAL_ERROR, "cannot generate a session id");
        return;
    }
    push_endpoint(s->standalone, s->sid);
    log_info(MODULE, "legacy SSE session %.8s opened for %s", s->sid, s->principal);
    http__reply_sse(c, s->standalone, 0, 0);
    arm_tick();
}

/* The session c->sid names, if it is the caller's; else NULL after answering 404. */
static struct hsession *session_for(struct hconn *c)
{
    struct hsession *s = NULL;
    if (!c->bad_sid && c->sid[0])
        for (struct hsession *x = lsessions; x && !s; x = x->next)
            if (secure_streq(x->sid, c->sid))
                s = x;
    if (s && strcmp(s->principal, c->principal) != 0) /* another principal's: not yours */
        s = NULL;
    if (!s)
        http__reply_session_lost(c, "open a new session with GET " SSE_PATH
                                    " (a session ends when its GET stream closes)");
    return s;
}

/* POST /messages: what the headers decide; the body is read by serve_http.c into c->body. */
static void check_post(struct hconn *c)
{
    char arg[SID_SIZE + 16];
    const char *id = lws_get_urlarg_by_name(c->wsi, "sessionId=", arg, (int)sizeof(arg));
    if (!id) { /* (id points into arg, after the name) */
        http__reply_error(c, 400, RPC_SERVER_ERROR,
                          "Bad Request: POST " MESSAGES_PATH "?sessionId=<id from the endpoint "
                          "event of GET " SSE_PATH ">");
        return;
    }
    c->sid[0] = '\0';                          /* an Mcp-Session-Id header means nothing here */
    c->bad_sid = strlen(id) >= sizeof(c->sid); /* not an id of ours: 404 */
    c->has_sid = !c->bad_sid;
    if (!c->bad_sid)
        memcpy(c->sid, id, strlen(id) + 1);
    if (!session_for(c))
        return;
    if (http__post_body_ok(c, 1))
        c->legacy = 1; /* serve_http.c hands the completed body to lsse_body */
}

void lsse_body(struct hconn *c)
{
    struct hsession *s = session_for(c); /* it may have ended while the body came */
    if (!s)
        return;
    json_error_t jerr;
    json_t *msg = json_loadb(c->body.data ? c->body.data : "", c->body.len, 0, &jerr);
    char text[300];
    if (!msg) {
        snprintf(text, sizeof(text), "Parse error: %s", jerr.text);
        http__reply_error(c, 400, RPC_PARSE_ERROR, text);
        return;
    }
    int batch = json_is_array(msg);
    int refused = !batch && http__drain_refused(c, msg, 0);
    json_decref(msg);
    if (refused)
        return;
    if (batch) {
        http__reply_error(c, 400, RPC_INVALID_REQUEST,
                          "Invalid Request: JSON-RPC batches are not supported; POST one message");
        return;
    }
    s->last_used_ms = now_ms();
    http__reply_ready(c, 202); /* the answer, if any, goes out on the stream */
    mcp_session_receive(s->mcp, c->body.data, c->body.len);
}

int lsse_path(const char *uri)
{
    return strcmp(uri, SSE_PATH) == 0 || strcmp(uri, MESSAGES_PATH) == 0;
}

int lsse_request(struct hconn *c, const char *uri)
{
    int sse = strcmp(uri, SSE_PATH) == 0, messages = strcmp(uri, MESSAGES_PATH) == 0;
    if (!sse && !messages)
        return 0;
    if (sse && c->method == M_GET) {
        open_session(c);
    } else if (messages && c->method == M_POST) {
        check_post(c);
    } else {
        c->extra_name = "allow:";
        c->extra_value = sse ? "GET" : "POST";
        http__reply_error(c, 405, RPC_SERVER_ERROR,
                          sse ? "Method Not Allowed: GET " SSE_PATH " opens an HTTP+SSE session"
                              : "Method Not Allowed: POST one JSON-RPC message to " MESSAGES_PATH
                                "?sessionId=<id>");
    }
    return 1;
}

void lsse_close_all(void)
{
    while (lsessions)
        session_end(lsessions, "the gateway is shutting down");
    lp_timer_stop(&tick_timer);
    ticking = 0;
}
