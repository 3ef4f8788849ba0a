/* upstream_http — the Streamable HTTP transport for `type: remote` upstream servers.
 *
 * Each JSON-RPC message upstream.c sends becomes one POST (Accept: JSON and SSE, the
 * configured headers, Mcp-Session-Id once the initialize response gave one,
 * MCP-Protocol-Version once negotiated). Replies come back as one JSON body (or a batch) or
 * as an SSE stream whose `message` events are handed to upstream.c as they arrive; 202 means
 * nothing to deliver. After notifications/initialized a GET stream carries the server's own
 * messages (405: the server has none); it is reopened after the server's `retry` with
 * Last-Event-ID. A POST stream that ends before its response is resumed the same way.
 *
 * Every POST carries the routing headers taken from its body: Mcp-Method, Mcp-Name (tool
 * name or URI) and Mcp-Param-* for the tool's x-mcp-header arguments, base64-sentinel-
 * encoded where not plain ASCII. A message in the 2026-07-28 era (its params carry `_meta`
 * with the protocol version) goes without a session, with that MCP-Protocol-Version. A 4xx whose
 * body is a JSON-RPC error is that request's answer (how modern servers say -32022, -32601 or
 * -32020, and how legacy servers refuse server/discover), so upstream.c can choose the era.
 *
 * Failures: 404 on a request that carried the session id means the session expired: the
 * transport replays the initialize request and notifications/initialized by itself, resends
 * the failed request once, and asks upstream.c to re-list tools (upstream_replay.c). 401/403 mark
 * the server needs_auth. A connection failure fails everything in flight (ToolError kind
 * "transport" through up__transport_failed) and reconnects with exponential backoff (1 s .. 30 s)
 * through up__transport_reopen, which restarts upstream.c's handshake.
 *
 * Connection cap: upstream_http_queue.c.
 *
 * Loop thread only: the network work happens on curl_thread.c's thread. Transfers are
 * referred to by their 64-bit id; events for ids no longer known are dropped. The headers of
 * each transfer are built by upstream_http_hdrs.c. */
#include "curl_lib.h"
#include "curl_thread.h"
#include "codemcp_limits.h"
#include "jsonfast.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp_era.h"
#include "oauth_gw.h"
#include "upstream.h"
#include "upstream_http_int.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CONNECT_TIMEOUT_MS 10000L /* per connection attempt; upstream.c bounds the handshake */
#define DELETE_TIMEOUT_MS  2000L
#define DEFAULT_RETRY_MS   1000L /* reconnect delay for SSE streams without a `retry` */
#define BACKOFF_MIN_MS     1000L
#define BACKOFF_MAX_MS     30000L
#define RESUME_MAX_TRIES   3 /* resumptions of one response stream without any progress */

static struct hx *hxs; /* every exchange of every remote server, oldest first */
static struct hx **hxs_tail = &hxs;
static struct idmap hx_by_xfer; /* current transfer id -> exchange */

/* ---- exchanges ------------------------------------------------------------------------ */

struct hx *hx_new(struct http_tp *tp, enum hx_kind kind)
{
    struct hx *h = xcalloc(1, sizeof(*h));
    h->tp = tp;
    h->kind = kind;
    h->retry_ms = -1;
    DLIST_APPEND(&hxs_tail, h);
    return h;
}

void hx_set_xfer(struct hx *h, uint64_t xfer)
{
    if (h->xfer && idmap_get(&hx_by_xfer, h->xfer) == h)
        idmap_del(&hx_by_xfer, h->xfer);
    h->xfer = xfer;
    if (xfer)
        idmap_put(&hx_by_xfer, xfer, h);
}

struct hx *hx_find(uint64_t xfer)
{
    return xfer ? idmap_get(&hx_by_xfer, xfer) : NULL;
}

void hx_index_request(struct hx *h)
{
    if (h->by_wire || h->kind != HX_MSG || !json_is_integer(h->req_id))
        return;
    uint64_t key = (uint64_t)json_integer_value(h->req_id);
    struct hx *first = idmap_get(&h->tp->by_wire, key);
    h->id_next = NULL;
    h->by_wire = 1;
    if (!first) {
        idmap_put(&h->tp->by_wire, key, h);
        return;
    }
    while (first->id_next) /* one request id rarely has more than one exchange */
        first = first->id_next;
    first->id_next = h;
}

static void hx_unindex_request(struct hx *h)
{
    if (!h->by_wire)
        return;
    uint64_t key = (uint64_t)json_integer_value(h->req_id);
    struct hx *first = idmap_get(&h->tp->by_wire, key);
    if (first == h) {
        if (h->id_next)
            idmap_put(&h->tp->by_wire, key, h->id_next);
        else
            idmap_del(&h->tp->by_wire, key);
    } else {
        while (first && first->id_next != h)
            first = first->id_next;
        if (first)
            first->id_next = h->id_next;
    }
    h->id_next = NULL;
    h->by_wire = 0;
}

struct hx *hx_find_request(struct http_tp *tp, int64_t wire_id)
{
    return idmap_get(&tp->by_wire, (uint64_t)wire_id);
}

void hx_abort(struct hx *h)
{
    struct http_tp *tp = h->tp;
    if (h->xfer)
        ct_cancel(h->xfer);
    hx_set_xfer(h, 0);
    lp_timer_stop(&h->timer);
    if (uh_unqueue(h) && tp->q_head) /* not from here: tp's exchanges may be going */
        uh_pump_later(tp);
}

void hx_free(struct hx *h)
{
    DLIST_UNLINK_T(&hxs_tail, h);
    hx_unindex_request(h);
    hx_abort(h);
    if (h->tp->get == h)
        h->tp->get = NULL;
    json_decref(h->req_id);
    free(h->sent_sid);
    free(h->modern_version);
    free(h->mcp_method);
    free(h->mcp_name);
    free(h->traceparent);
    free(h->tracestate);
    buf_free(&h->params);
    free(h->text);
    free(h->last_id);
    free(h);
}

static void hx_free_all(struct http_tp *tp)
{
    struct hx **p = &hxs;
    while (*p) {
        if ((*p)->tp == tp)
            hx_free(*p); /* unlinks *p */
        else
            p = &(*p)->next;
    }
}

struct hx *hx_first_held(struct http_tp *tp)
{
    struct hx *h = hxs;
    while (h && !(h->tp == tp && h->held))
        h = h->next;
    return h;
}

/* ---- requests ------------------------------------------------------------------------- */

static void on_event(const struct ct_event *ev);

int uh_submit_now(struct hx *h, const char *method, int with_session, const char *last_id)
{
    struct http_tp *tp = h->tp;
    struct buf lines = {0};
    int post = strcmp(method, "POST") == 0;
    /* oagw_header may notice changed credentials: oauth_gw.c reports that from the loop
     * (oauth_changed), never from inside this call. Never logged. */
    char *bearer = oagw_header(tp->up->cfg);
    uh_headers(h, method, with_session, last_id, bearer, &lines);
    free(bearer);
    struct ct_request rq = {
        .method = method,
        .url = tp->up->cfg->url,
        .headers = lines.data,
        .headers_len = lines.len,
        .body = post ? h->text : NULL,
        .body_len = post ? h->len : 0,
        .connect_timeout_ms = CONNECT_TIMEOUT_MS,
        .timeout_ms = h->kind == HX_DELETE ? DELETE_TIMEOUT_MS : 0,
        .max_body = LIM_UPSTREAM_MESSAGE_MAX,
        .on_event = on_event,
    };
    if (h->kind == HX_DELETE)
        rq.connect_timeout_ms = DELETE_TIMEOUT_MS / 2;
    hx_set_xfer(h, ct_submit(&rq));
    h->is_sse = h->progress = 0;
    if (h->xfer && h->kind == HX_MSG && !h->uncapped) {
        h->slot = 1;
        tp->active++;
    }
    buf_free(&lines);
    log_trace("upstream", "%s <- %s %.*s", tp->up->name, method,
              post ? (int)(h->len > 500 ? 500 : h->len) : 0, post ? h->text : "");
    return h->xfer ? 0 : -1;
}

/* ---- failure paths -------------------------------------------------------------------- */

void uh_open_get(struct http_tp *tp);

static void reconnect_now(void *ud)
{
    struct http_tp *tp = ud;
    if (tp->stopping)
        return;
    log_info("upstream", "%s: reconnecting to %s", tp->up->name, tp->shown_url);
    tp->down = 0;
    up__transport_reopen(tp->up);
}

/* The server is unreachable or the session cannot be recovered: everything in flight fails
 * (kind "transport"), and a reconnect is scheduled with backoff unless `final`. */
void uh_lose_connection(struct http_tp *tp, int final, const char *why)
{
    if (tp->stopping || tp->down)
        return;
    tp->down = 1;
    tp->reinit = 0;
    free(tp->session_id);
    tp->session_id = NULL;
    hx_free_all(tp);
    if (!final) {
        tp->backoff_ms = tp->backoff_ms ? tp->backoff_ms * 2 : BACKOFF_MIN_MS;
        if (tp->backoff_ms > BACKOFF_MAX_MS)
            tp->backoff_ms = BACKOFF_MAX_MS;
        long jitter = (long)(now_us() % (tp->backoff_ms / 5 + 1)); /* spread retries */
        lp_timer_start(&tp->reconnect_timer, tp->backoff_ms + jitter, reconnect_now, tp);
        log_info("upstream", "%s: %s; reconnecting in %ld ms", tp->up->name, why,
                 tp->backoff_ms + jitter);
    }
    /* May re-enter (upstream.c may call shutdown); tp stays valid: closing is asynchronous. */
    up__transport_failed(tp->up, why);
}

/* Answers request h with a JSON-RPC error so that upstream.c fails just this call. */
void uh_fail_request(struct hx *h, int code, const char *why)
{
    struct upstream *up = h->tp->up;
    json_t *id = json_incref(h->req_id);
    hx_free(h);
    json_t *msg = rpc_error(id, code, why, NULL);
    char *text = rpc_dump(msg);
    up__transport_message(up, text, strlen(text));
    free(text);
    json_decref(msg);
    json_decref(id);
}

/* 401/403: oauth_gw.c says whether a refresh is under way, newer credentials exist, or the
 * server needs `codemcp auth` (the message carries the hint). */
static void auth_failed(struct http_tp *tp, const struct ct_event *ev)
{
    char why[512];
    enum oagw_verdict v = oagw_denied(tp->up->cfg, ev->status, ev->www_auth, why, sizeof(why));
    if (v == OAGW_NEEDS_AUTH)
        uh_lose_connection(tp, 1, why);
    else
        uh_lose_connection(tp, v == OAGW_WAIT,
                           "the server refused the access token; refreshing it");
}

/* oauth_gw.c, from the loop: the stored credentials of a server changed (codemcp
 * auth/logout, a refresh). */
static void oauth_changed(const char *name, int removed)
{
    struct upstream *up = up_find(name);
    struct http_tp *tp = up && up->ops == &up_http_ops ? up->tp : NULL;
    if (!tp || tp->stopping)
        return;
    char why[300];
    snprintf(why, sizeof(why), "needs_auth (Run: codemcp auth %s): no valid stored credentials",
             name);
    if (tp->auth_wait) { /* the first connection waited for a refresh */
        tp->auth_wait = tp->down = 0;
        if (removed)
            uh_lose_connection(tp, 1, why);
        else
            up__transport_open(up);
    } else if (removed && !tp->down) {
        uh_lose_connection(tp, 1, why);
    } else if (removed && !(up->error && strncmp(up->error, "needs_auth", 10) == 0)) {
        /* down for another reason (a 401 that came first already said needs_auth) */
        log_warn("upstream", "%s: %s", name, why);
        up__set_error(up, "%s", why);
    } else if (!removed && tp->down) {
        lp_timer_stop(&tp->reconnect_timer);
        tp->backoff_ms = 0;
        reconnect_now(tp);
    }
}

/* A short description of an HTTP error answer: the JSON-RPC error message in the body when
 * there is one, else the start of the body. */
void uh_describe(const struct ct_event *ev, const char *url, char *out, size_t n)
{
    if (ev->status >= 300 && ev->status < 400) {
        snprintf(out, n, "%s redirects (HTTP %ld) to %s; put that URL in the config", url,
                 ev->status, ev->location ? ev->location : "(no Location)");
        return;
    }
    json_t *body = ev->body ? json_loadb(ev->body, ev->body_len, JSON_ALLOW_NUL, NULL) : NULL;
    json_t *m = json_object_get(json_object_get(body, "error"), "message");
    if (json_is_string(m))
        snprintf(out, n, "HTTP %ld from %s: %s", ev->status, url, json_string_value(m));
    else if (ev->body_len > 0)
        snprintf(out, n, "HTTP %ld from %s: %.200s", ev->status, url, ev->body);
    else
        snprintf(out, n, "HTTP %ld from %s", ev->status, url);
    json_decref(body);
}

/* ---- delivering messages -------------------------------------------------------------- */

static void mark_answered(struct http_tp *tp, json_t *id)
{
    /* An integer id (all of upstream.c's requests): its chain; any other: every exchange. */
    int by_wire = json_is_integer(id);
    struct hx *h = by_wire ? idmap_get(&tp->by_wire, (uint64_t)json_integer_value(id)) : hxs;
    while (h) {
        struct hx *next = by_wire ? h->id_next : h->next;
        if (h->tp == tp && h->kind == HX_MSG && h->req_id && json_equal(h->req_id, id)) {
            h->answered = 1;
            if (h->resuming || !h->xfer)
                hx_free(h); /* a resume stream or a pending resume: no longer needed */
        }
        h = next;
    }
}

/* One message (text of len bytes, or msg when text is NULL) read from transfer xfer. */
static void deliver_one(struct http_tp *tp, uint64_t xfer, json_t *msg, const char *text,
                        size_t len)
{
    struct hx *h = hx_find(xfer);
    json_t *id = json_object_get(msg, "id");
    int response = id && !json_object_get(msg, "method");
    if (response && h && h->kind == HX_REINIT) {
        uh_reinit_answered(tp, h, msg); /* ours, not upstream.c's */
        return;
    }
    if (response) {
        if (h && h->is_initialize && json_equal(id, h->req_id)) {
            json_t *v = json_object_get(json_object_get(msg, "result"), "protocolVersion");
            free(tp->protocol_version);
            tp->protocol_version = json_is_string(v) ? xstrdup(json_string_value(v)) : NULL;
        }
        mark_answered(tp, id);
    }
    char *owned = NULL;
    if (!text) { /* one message of a batch */
        owned = jf_dumps(msg);
        text = owned;
        len = owned ? strlen(owned) : 0;
    }
    if (text) {
        log_trace("upstream", "%s -> %.*s", tp->up->name, (int)(len > 500 ? 500 : len), text);
        /* The text, not msg: upstream.c reads a reply its own way (and may not build a tree). */
        up__transport_message(tp->up, text, len);
    }
    free(owned);
}

/* Hands a body or an event's data to upstream.c: one message or a batch of them. */
void uh_deliver(struct http_tp *tp, uint64_t xfer, const char *text, size_t len)
{
    json_t *msg = jf_loadb(text, len, JF_ALLOW_NUL, NULL);
    if (!msg) {
        up__transport_message(tp->up, text, len); /* upstream.c reports what is wrong */
        return;
    }
    if (json_is_array(msg)) {
        size_t i;
        json_t *m;
        json_array_foreach(msg, i, m)
        {
            if (tp->stopping || tp->down)
                break;
            deliver_one(tp, xfer, m, NULL, 0);
        }
    } else {
        deliver_one(tp, xfer, msg, text, len);
    }
    json_decref(msg);
}

/* ---- streams: the GET stream, resumption ---------------------------------------------- */

static long stream_delay(struct hx *h)
{
    long delay = h->retry_ms >= 0 ? h->retry_ms : DEFAULT_RETRY_MS;
    if (h->progress) {
        h->failures = 0;
        return delay;
    }
    h->failures++;
    long backoff = BACKOFF_MIN_MS << (h->failures < 6 ? h->failures - 1 : 5);
    if (backoff > BACKOFF_MAX_MS)
        backoff = BACKOFF_MAX_MS;
    return delay > backoff ? delay : backoff;
}

static void get_connect(void *ud)
{
    struct hx *h = ud;
    if (uh_submit(h, "GET", 1, h->last_id) < 0)
        uh_lose_connection(h->tp, 0, "cannot open the event stream");
}

void uh_open_get(struct http_tp *tp)
{
    if (tp->stopping || tp->down || tp->reinit || tp->get_unsupported || tp->get)
        return;
    tp->get = hx_new(tp, HX_GET);
    get_connect(tp->get);
}

static void get_done(struct hx *h, const struct ct_event *ev)
{
    struct http_tp *tp = h->tp;
    hx_set_xfer(h, 0);
    if (ev->curl_code && ev->connect_failed) {
        char why[400];
        snprintf(why, sizeof(why), "cannot reach %s: %s", tp->shown_url, ev->error);
        uh_lose_connection(tp, 0, why);
    } else if (!ev->curl_code && uh_session_unknown(h, ev)) {
        uh_session_expired(tp, h);
    } else if (ev->status == 401 || ev->status == 403) {
        auth_failed(tp, ev);
    } else if (ev->status >= 400 && ev->status < 500 && ev->status != 408 && ev->status != 409 &&
               ev->status != 429) {
        /* 405 is the specified "no stream here"; other client errors will not go away. */
        log_debug("upstream", "%s: no server-initiated stream (GET answered %ld)", tp->up->name,
                  ev->status);
        tp->get_unsupported = 1;
        hx_free(h);
    } else {
        /* Ended (cleanly or not) or refused for now (409, 5xx): reopen after `retry`, with
         * backoff while it yields nothing. */
        long delay = stream_delay(h);
        log_debug("upstream", "%s: event stream ended (HTTP %ld%s%s); reopening in %ld ms",
                  tp->up->name, ev->status, ev->curl_code ? ", " : "",
                  ev->curl_code ? ev->error : "", delay);
        lp_timer_start(&h->timer, delay, get_connect, h);
    }
}

static void resume_now(void *ud)
{
    struct hx *h = ud;
    h->resuming = 1;
    if (uh_submit(h, "GET", 1, h->last_id) < 0)
        uh_lose_connection(h->tp, 0, "cannot resume a response stream");
}

/* The response stream of request h ended before its response: resume it with Last-Event-ID
 * after the server's `retry` (SEP-1699), or fail the request if that cannot work. */
static void resume_later(struct hx *h)
{
    if (!h->progress && ++h->failures >= RESUME_MAX_TRIES) {
        uh_fail_request(h, RPC_SERVER_ERROR,
                        "the server's response stream kept ending without the response");
        return;
    }
    if (h->progress)
        h->failures = 0;
    long delay = h->retry_ms >= 0 ? h->retry_ms : DEFAULT_RETRY_MS;
    log_debug("upstream", "%s: response stream ended early; resuming after event %s in %ld ms",
              h->tp->up->name, h->last_id, delay);
    lp_timer_start(&h->timer, delay, resume_now, h);
}

/* ---- message exchanges ---------------------------------------------------------------- */

void uh_post_msg(struct hx *h)
{
    h->held = 0;
    h->resuming = 0;
    if (uh_submit(h, "POST", !h->is_initialize, NULL) < 0)
        uh_lose_connection(h->tp, 0, "cannot send a request");
}

static int answer_with_error_body(struct hx *h, const struct ct_event *ev);

static void msg_done(struct hx *h, const struct ct_event *ev)
{
    struct http_tp *tp = h->tp;
    uint64_t xfer = h->xfer;
    char why[512];
    if (ev->curl_code) {
        int streamed = h->is_sse || h->resuming;
        /* 2026 era: streams are not resumable; the request fails (and may be re-issued). */
        if (h->req_id && !h->answered && streamed && h->last_id && !ev->connect_failed &&
            !h->modern_version) {
            hx_set_xfer(h, 0);
            resume_later(h); /* the stream broke after it gave a cursor */
        } else if (ev->too_large && h->req_id) {
            uh_fail_request(h, RPC_SERVER_ERROR, ev->error);
        } else {
            snprintf(why, sizeof(why), "%s %s failed: %s", h->resuming ? "GET" : "POST",
                     tp->shown_url, ev->error);
            uh_lose_connection(tp, 0, why);
        }
        return;
    }
    if (ev->status >= 200 && ev->status < 300) {
        tp->backoff_ms = 0;
        if (h->sent_sid)
            tp->reinit_streak = 0;
        if (h->req_id && !ev->is_sse && ev->body && ev->body_len > 0)
            uh_deliver(tp, xfer, ev->body, ev->body_len);
        if ((h = hx_find(xfer)) == NULL)
            return; /* answered by a resume, or the transport went down meanwhile */
        if (h->is_initialized)
            uh_open_get(tp);
        if (h->req_id && !h->answered) {
            if ((h->is_sse || h->resuming) && h->last_id && !h->modern_version) {
                hx_set_xfer(h, 0);
                resume_later(h);
            } else {
                uh_fail_request(h, RPC_SERVER_ERROR,
                                ev->status == 202
                                    ? "the server accepted the request but did not answer it"
                                    : "the server's reply did not contain the response");
            }
            return;
        }
        hx_free(h);
        return;
    }
    if (uh_session_unknown(h, ev)) {
        uh_session_expired(tp, h);
        return;
    }
    if (ev->status == 401 || ev->status == 403) {
        auth_failed(tp, ev);
        return;
    }
    if (h->req_id && ev->status >= 400 && ev->status < 500 && answer_with_error_body(h, ev))
        return;
    uh_describe(ev, tp->shown_url, why, sizeof(why));
    if (h->resuming && ev->status == 405)
        snprintf(why, sizeof(why), "the response stream was cut and %s cannot resume it",
                 tp->shown_url);
    if (h->req_id) {
        uh_fail_request(h, RPC_SERVER_ERROR, why);
    } else {
        log_warn("upstream", "%s: %s", tp->up->name, why);
        hx_free(h);
    }
}

/* A 4xx whose body is one JSON-RPC error response: hand it to upstream.c as the answer to
 * h's request (with h's id when the server sent "id": null). 1 when delivered (h is freed). */
static int answer_with_error_body(struct hx *h, const struct ct_event *ev)
{
    if (!ev->body || ev->body_len == 0)
        return 0;
    json_t *msg = jf_loadb(ev->body, ev->body_len, JF_ALLOW_NUL, NULL);
    json_t *error = json_object_get(msg, "error");
    if (!json_is_object(error) || !json_is_integer(json_object_get(error, "code"))) {
        json_decref(msg);
        return 0;
    }
    struct upstream *up = h->tp->up;
    json_t *answer = rpc_error(h->req_id, (int)json_integer_value(json_object_get(error, "code")),
                               json_is_string(json_object_get(error, "message"))
                                   ? json_string_value(json_object_get(error, "message"))
                                   : "error",
                               json_incref(json_object_get(error, "data")));
    json_decref(msg);
    hx_free(h);
    char *text = rpc_dump(answer);
    json_decref(answer);
    up__transport_message(up, text, strlen(text));
    free(text);
    return 1;
}

static void on_sse(struct hx *h, const struct ct_event *ev)
{
    free(h->last_id);
    h->last_id = ev->last_id ? xstrdup(ev->last_id) : NULL;
    if (ev->retry_ms >= 0)
        h->retry_ms = ev->retry_ms;
    h->progress = 1;
    if (!ev->data)
        return;
    if (strcmp(ev->type, "message") != 0) {
        log_debug("upstream", "%s: ignoring an SSE event of type %s", h->tp->up->name, ev->type);
        return;
    }
    size_t i = 0;
    while (i < ev->len && strchr(" \t\r\n", ev->data[i]))
        i++;
    if (i == ev->len)
        return; /* a priming event: only its id matters */
    uh_deliver(h->tp, h->xfer, ev->data, ev->len);
}

static void on_event(const struct ct_event *ev)
{
    struct hx *h = hx_find(ev->xfer);
    if (!h)
        return; /* cancelled, or its transport is gone */
    struct http_tp *tp = h->tp;
    switch (ev->kind) {
    case CT_HEAD:
        h->is_sse = ev->is_sse;
        if ((h->is_initialize || (h->kind == HX_REINIT && h->reinit_step == 0)) &&
            ev->status >= 200 && ev->status < 300 && ev->session_id) {
            free(tp->session_id);
            tp->session_id = xstrdup(ev->session_id);
        }
        break;
    case CT_SSE:
        on_sse(h, ev);
        break;
    case CT_DONE:
        if (h->kind == HX_MSG) {
            int freed = uh_unqueue(h);
            msg_done(h, ev);
            if (freed && tp->q_head) /* tp outlives msg_done: closing is asynchronous */
                uh_pump(tp);
        } else if (h->kind == HX_GET)
            get_done(h, ev);
        else if (h->kind == HX_REINIT)
            uh_reinit_done(h, ev);
        else {
            hx_free(h); /* HX_DELETE: best effort, whatever the answer */
            up__transport_closed(tp->up);
        }
        break;
    }
}

/* ---- the transport -------------------------------------------------------------------- */

/* scheme://host[:port]/path of url: user:password@ and ?query#fragment (where tokens often
 * live) are left out. Caller frees. */
static char *shown_url(const char *url)
{
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    size_t auth_len = strcspn(host, "/?#");
    const char *at = memchr(host, '@', auth_len);
    const char *start = at ? at + 1 : host;
    size_t path_len = strcspn(host + auth_len, "?#");
    struct buf b = {0};
    buf_append(&b, url, (size_t)(host - url));
    buf_append(&b, start, (size_t)(host + auth_len - start) + path_len);
    return buf_steal(&b);
}

/* Transfers of a server outside its connection cap, at most one of each at once: the standing
 * stream (the GET, or the 2026 era's subscriptions/listen), the session replay, the DELETE. */
#define UNCAPPED_TRANSFERS 3

/* The connections this server's transfers may hold at once, which the connection cache keeps
 * for reuse (curl_thread's keep_idle): its cap, or the largest one when it has none, and the
 * transfers outside it. libcurl counts the connections in use in its cache too: with the cap's
 * worth alone, a saturated server's standing stream put the cache one over, and every transfer
 * that ended closed its connection for the next queued one to open another. */
static long idle_share(int max_active)
{
    return (max_active ? max_active : CFG_MAX_CONNECTIONS) + UNCAPPED_TRANSFERS;
}

static int http_start(struct upstream *up)
{
    const char *url = up->cfg->url;
    if (!url || (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0)) {
        up__set_error(up, "\"url\" must start with http:// or https:// (got \"%s\")",
                      url ? url : "");
        return -1;
    }
    int max_active = uh_max_active(up->cfg);
    if (ct_start(idle_share(max_active)) < 0) {
        char why[300];
        if (curl_lib_load(why, sizeof(why)) == 0) /* else why says libcurl is missing */
            snprintf(why, sizeof(why), "cannot start the HTTP client thread");
        up__set_error(up, "%s", why);
        return -1;
    }
    struct http_tp *tp = xcalloc(1, sizeof(*tp));
    tp->up = up;
    tp->shown_url = shown_url(url);
    tp->max_active = max_active;
    size_t n = 0;
    for (char **h = up->cfg->headers; h && *h; h++)
        n++;
    tp->headers = xcalloc(n + 1, sizeof(char *));
    n = 0;
    for (char **h = up->cfg->headers; h && *h; h++) {
        if (strpbrk(*h, "\r\n") || !strchr(*h, ':')) {
            log_warn("upstream", "%s: ignoring a header that is not one \"Name: value\" line",
                     up->name);
            continue;
        }
        tp->headers[n++] = xstrdup(*h);
    }
    up->tp = tp;
    oagw_set_reconnect(oauth_changed);
    if (oagw_prepare(up->cfg)) { /* expired token: connect once it is refreshed */
        log_info("upstream", "%s: refreshing its expired access token first", up->name);
        tp->auth_wait = tp->down = 1;
        return 0;
    }
    log_info("upstream", "%s: connecting to %s", up->name, tp->shown_url);
    up__transport_open(up);
    return 0;
}

static int http_send(struct upstream *up, const char *text, size_t len)
{
    struct http_tp *tp = up->tp;
    if (!tp || tp->stopping)
        return -1;
    json_t *msg = jf_loadb(text, len, JF_ALLOW_NUL, NULL);
    json_t *method = json_object_get(msg, "method");
    json_t *id = json_object_get(msg, "id");
    int is_init = json_is_string(method) && strcmp(json_string_value(method), "initialize") == 0;
    if (tp->down && !is_init) {
        json_decref(msg);
        return -1; /* nothing gets through until upstream.c starts over */
    }
    struct hx *h = hx_new(tp, HX_MSG);
    h->text = xstrndup(text, len);
    h->len = len;
    if (json_is_string(method) && id && !json_is_null(id))
        h->req_id = json_incref(id);
    hx_index_request(h);
    h->is_initialize = is_init;
    uh_note_headers(h, msg);
    h->uncapped = h->mcp_method && strcmp(h->mcp_method, "subscriptions/listen") == 0;
    h->is_initialized = json_is_string(method) &&
                        strcmp(json_string_value(method), "notifications/initialized") == 0;
    json_decref(msg);
    if (is_init) {
        /* A (re)start of the handshake: a new session. */
        tp->down = 0;
        tp->reinit = 0;
        free(tp->session_id);
        tp->session_id = NULL;
        free(tp->protocol_version);
        tp->protocol_version = NULL;
        tp->get_unsupported = 0;
        if (tp->get)
            hx_free(tp->get); /* it belongs to the old session */
        free(tp->init_text);
        tp->init_text = xstrndup(text, len);
        tp->init_len = len;
    }
    if (tp->reinit) {
        h->held = 1;
        return 0;
    }
    h->held = 0;
    if (uh_submit(h, "POST", !is_init, NULL) < 0) {
        hx_free(h);
        return -1;
    }
    return 0;
}

static void close_now(void *ud)
{
    struct http_tp *tp = ud;
    up__transport_closed(tp->up);
}

static void http_shutdown(struct upstream *up)
{
    struct http_tp *tp = up->tp;
    if (!tp || tp->stopping)
        return;
    tp->stopping = 1;
    lp_timer_stop(&tp->reconnect_timer);
    hx_free_all(tp);
    if (tp->session_id) {
        /* Best effort: tell the server the session is over (405 is a fine answer). */
        struct hx *d = hx_new(tp, HX_DELETE);
        if (uh_submit(d, "DELETE", 1, NULL) == 0)
            return;
        hx_free(d);
    }
    lp_timer_start(&tp->close_timer, 0, close_now, tp);
}

static void http_free(struct upstream *up)
{
    struct http_tp *tp = up->tp;
    if (!tp)
        return;
    hx_free_all(tp);
    lp_defer_cancel(&tp->pump);
    lp_timer_stop(&tp->reconnect_timer);
    lp_timer_stop(&tp->close_timer);
    for (char **h = tp->headers; h && *h; h++)
        free(*h);
    free(tp->headers);
    free(tp->session_id);
    free(tp->protocol_version);
    free(tp->init_text);
    free(tp->shown_url);
    json_decref(tp->hdr_indexed);
    json_decref(tp->hdr_tools);
    idmap_free(&tp->by_wire);
    int max_active = tp->max_active;
    free(tp);
    up->tp = NULL;
    ct_stop(idle_share(max_active));
}

const struct up_transport_ops up_http_ops = {
    .name = "http",
    .start = http_start,
    .send = http_send,
    .shutdown = http_shutdown,
    .free = http_free,
    .abandon = uh_abandon,
};
