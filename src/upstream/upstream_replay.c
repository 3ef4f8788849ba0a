/* upstream_replay — session expiry of a Streamable HTTP upstream: noticing it and replaying
 * the handshake (part of the upstream_http transport; see upstream_http.c's header).
 *
 * A 404 (or the SDK examples' 400 "No valid session ID") on a transfer that carried our
 * Mcp-Session-Id means the server forgot the session. If it is still the current one, the
 * stored initialize request is replayed, then notifications/initialized; requests that met the
 * refusal are resent once, requests sent meanwhile are held until the new session is up, and
 * upstream.c is told to re-list tools (the server may have restarted with other tools). More
 * than REINIT_MAX_STREAK expiries without a successful request in between take the connection
 * down. Loop thread only; it owns no state of its own (it lives in struct http_tp). */
#include "jsonrpc.h"
#include "log.h"
#include "upstream.h"
#include "upstream_http_int.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define REINIT_MAX_STREAK 3 /* session expiries in a row without a successful request */

static void begin_reinit(struct http_tp *tp);

/* Did the server say that our session id is unknown? 404 is the specified answer; the SDK's
 * example servers (copied widely) answer 400 "No valid session ID provided" instead. */
int uh_session_unknown(const struct hx *h, const struct ct_event *ev)
{
    if (!h->sent_sid)
        return 0;
    if (ev->status == 404)
        return 1;
    return ev->status == 400 && ev->body && strcasestr(ev->body, "session");
}

/* h's transfer was refused because the server does not know the session it carried. If that
 * is still our session, re-initialize; if the session was already replaced (h was sent before
 * a re-initialize), only h needs resending. A request is resent at most once. */
void uh_session_expired(struct http_tp *tp, struct hx *h)
{
    int stale = !tp->session_id || strcmp(h->sent_sid, tp->session_id) != 0;
    if (!stale) {
        log_info("upstream", "%s: the server no longer knows session %s; re-initializing",
                 tp->up->name, tp->session_id);
        free(tp->session_id);
        tp->session_id = NULL;
    }
    if (h->kind == HX_MSG && h->req_id && !h->retried) {
        hx_abort(h);
        h->retried = 1;
        h->resuming = 0;
        free(h->last_id);
        h->last_id = NULL;
        if (stale && !tp->reinit)
            uh_post_msg(h);
        else
            h->held = 1; /* resent once the new session is up */
    } else if (h->kind == HX_MSG && h->req_id) {
        uh_fail_request(h, RPC_SERVER_ERROR,
                        "the server lost the session again after a re-initialize");
    } else {
        hx_free(h); /* notifications, responses, the old session's GET stream */
    }
    if (!stale)
        begin_reinit(tp);
    else
        uh_open_get(tp); /* no-op while re-initializing or when a GET stream is open */
}

void uh_reinit_answered(struct http_tp *tp, struct hx *h, json_t *msg)
{
    json_t *err = json_object_get(msg, "error");
    if (err) {
        json_t *m = json_object_get(err, "message");
        char why[512];
        snprintf(why, sizeof(why), "re-initializing after the session expired failed: %s",
                 json_is_string(m) ? json_string_value(m) : "error");
        uh_lose_connection(tp, 0, why);
        return;
    }
    json_t *v = json_object_get(json_object_get(msg, "result"), "protocolVersion");
    if (json_is_string(v)) {
        free(tp->protocol_version);
        tp->protocol_version = xstrdup(json_string_value(v));
    }
    h->answered = 1;
}

static void begin_reinit(struct http_tp *tp)
{
    if (tp->reinit)
        return;
    if (++tp->reinit_streak > REINIT_MAX_STREAK) {
        uh_lose_connection(tp, 0, "the server keeps forgetting its sessions");
        return;
    }
    tp->reinit = 1;
    if (tp->get)
        hx_free(tp->get); /* it belongs to the old session */
    if (!tp->init_text) {
        uh_lose_connection(tp, 0, "the session expired before it was initialized");
        return;
    }
    struct hx *r = hx_new(tp, HX_REINIT);
    r->text = xstrndup(tp->init_text, tp->init_len);
    r->len = tp->init_len;
    if (uh_submit(r, "POST", 0, NULL) < 0)
        uh_lose_connection(tp, 0, "cannot re-initialize");
}

static void reinit_finished(struct http_tp *tp)
{
    tp->reinit = 0;
    log_info("upstream", "%s: new session %s", tp->up->name,
             tp->session_id ? tp->session_id : "(none)");
    /* Resend in order; post_msg may take the transport down (and free the list). */
    for (;;) {
        struct hx *h = hx_first_held(tp);
        if (!h || tp->down)
            break;
        uh_post_msg(h);
    }
    uh_pump(tp); /* slots freed while re-initializing */
    uh_open_get(tp);
    /* The server may have restarted with other tools: let upstream.c re-list them. */
    static const char changed[] =
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}";
    up__transport_message(tp->up, changed, sizeof(changed) - 1);
}

void uh_reinit_done(struct hx *r, const struct ct_event *ev)
{
    struct http_tp *tp = r->tp;
    char why[512];
    if (ev->curl_code) {
        snprintf(why, sizeof(why), "re-initializing failed: %s", ev->error);
        uh_lose_connection(tp, 0, why);
        return;
    }
    if (ev->status < 200 || ev->status >= 300) {
        char d[400];
        uh_describe(ev, tp->shown_url, d, sizeof(d));
        snprintf(why, sizeof(why), "re-initializing failed: %s", d);
        uh_lose_connection(tp, 0, why);
        return;
    }
    uint64_t xfer = r->xfer;
    if (r->reinit_step == 0 && !ev->is_sse && ev->body)
        uh_deliver(tp, xfer, ev->body, ev->body_len);
    if (hx_find(xfer) != r)
        return; /* the answer was an error: already handled */
    if (r->reinit_step == 0) {
        if (!r->answered) {
            uh_lose_connection(tp, 0, "re-initializing failed: no initialize response");
            return;
        }
        r->reinit_step = 1;
        free(r->text);
        r->text = xstrdup("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        r->len = strlen(r->text);
        if (uh_submit(r, "POST", 1, NULL) < 0)
            uh_lose_connection(tp, 0, "cannot re-initialize");
        return;
    }
    hx_free(r);
    reinit_finished(tp);
}
