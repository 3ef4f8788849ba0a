/* upstream_http_queue — the connection cap of a Streamable HTTP upstream (part of the
 * upstream_http transport; see upstream_http.c's header).
 *
 * At most tp->max_active message transfers (POSTs and the GETs that resume their streams) of
 * one server run at once: its "maxConnections", else CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM
 * (0: no cap). Over HTTP/1.1 each holds a connection, so the server sees at most that many
 * plus its one standing stream (the GET event stream, or the 2026 era's subscriptions/listen
 * POST), the session replay and the DELETE, which are not counted: a cap that a standing
 * stream could fill would starve every request. The rest wait here in order, with no
 * transfer yet; a freed slot (a transfer's end, an abort) starts the next. A request that
 * upstream.c gives up (timeout, cancel) while it waits is dropped unsent, and its error says it
 * was waiting for a connection; one already sent has its transfer closed, so that a server that
 * never answers cannot keep a slot (in the 2026 era that closed stream is the cancellation).
 *
 * Why not libcurl's CURLMOPT_MAX_HOST_CONNECTIONS: it is one value for every host of the multi
 * handle (no per-server value), and it does not say which transfers wait, so a call given up
 * could not tell that it never left, nor be kept from leaving later (no clear error, no log
 * line). Its documentation also warns that the connect timeout "might expire" while a transfer
 * waits, which upstream_http.c would read as an unreachable server (libcurl 7.88.1, measured:
 * a transfer queued 3 s behind a 1 s connect timeout still succeeded).
 *
 * Loop thread only; owns no state of its own (it lives in struct http_tp and struct hx). */
#include "config.h"
#include "log.h"
#include "upstream.h"
#include "upstream_http_int.h"
#include "upstream_int.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

int uh_max_active(const struct cfg_server *cfg)
{
    long cap = cfg->max_connections >= 0 ? cfg->max_connections : up__max_connections;
    return cap > CFG_MAX_CONNECTIONS ? CFG_MAX_CONNECTIONS : (int)cap;
}

static void q_remove(struct http_tp *tp, struct hx *h)
{
    struct hx **p = &tp->q_head, *prev = NULL;
    while (*p && *p != h) {
        prev = *p;
        p = &(*p)->q_next;
    }
    if (!*p)
        return;
    *p = h->q_next;
    if (tp->q_tail == h)
        tp->q_tail = prev;
    h->q_next = NULL;
    h->queued = 0;
    if (--tp->n_queued == 0) {
        log_debug("upstream",
                  "%s: no request waits for a connection any more (%zu waited, "
                  "the queue lasted %lld ms)",
                  tp->up->name, tp->queued_total, (long long)(now_ms() - tp->queue_since_ms));
        tp->queued_total = 0;
    }
}

static void q_append(struct http_tp *tp, struct hx *h, const char *method, int with_session)
{
    h->queued = 1;
    h->q_method = method;
    h->q_with_session = with_session;
    h->queued_ms = now_ms();
    h->q_next = NULL;
    if (tp->q_tail)
        tp->q_tail->q_next = h;
    else
        tp->q_head = h;
    tp->q_tail = h;
    if (tp->n_queued++ == 0) {
        tp->queue_since_ms = h->queued_ms;
        log_debug("upstream",
                  "%s: %d requests in flight, its connection cap; more wait for a "
                  "connection (\"maxConnections\", CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM)",
                  tp->up->name, tp->active);
    }
    tp->queued_total++;
}

static void pump_later(void *ud)
{
    uh_pump(ud);
}

void uh_pump_later(struct http_tp *tp)
{
    lp_defer(&tp->pump, pump_later, tp);
}

/* h leaves the queue or gives its slot back; 1 when a slot was freed. */
int uh_unqueue(struct hx *h)
{
    struct http_tp *tp = h->tp;
    if (h->queued)
        q_remove(tp, h);
    if (!h->slot)
        return 0;
    h->slot = 0;
    tp->active--;
    return 1;
}

/* Starts a transfer for h, or queues it (message exchanges over tp's connection cap). */
int uh_submit(struct hx *h, const char *method, int with_session, const char *last_id)
{
    struct http_tp *tp = h->tp;
    if (h->kind != HX_MSG || h->uncapped || tp->max_active <= 0 ||
        (tp->active < tp->max_active && !tp->q_head))
        return uh_submit_now(h, method, with_session, last_id);
    hx_set_xfer(h, 0);
    h->is_sse = h->progress = 0;
    q_append(tp, h, method, with_session);
    if (tp->active < tp->max_active) /* others wait before it: they go first */
        uh_pump_later(tp);
    log_trace("upstream", "%s: a %s waits for a connection (%zu waiting)", tp->up->name, method,
              tp->n_queued);
    return 0;
}

void uh_pump(struct http_tp *tp)
{
    while (tp->q_head && !tp->stopping && !tp->down && !tp->reinit &&
           (tp->max_active <= 0 || tp->active < tp->max_active)) {
        struct hx *h = tp->q_head;
        q_remove(tp, h);
        const char *method = h->q_method;
        if (uh_submit_now(h, method, h->q_with_session,
                          strcmp(method, "GET") == 0 ? h->last_id : NULL) < 0) {
            uh_lose_connection(tp, 0, "cannot send a request");
            return;
        }
    }
}

/* upstream.c gave request wire_id up (timeout, cancel). Still waiting for a connection: it
 * is dropped unsent (1). Sent: its transfer is closed (0), so that a server that never answers
 * cannot keep a slot of the cap (in the 2026 era that closed stream is the cancellation). */
int uh_abandon(struct upstream *up, int64_t wire_id, char *why, size_t n)
{
    struct http_tp *tp = up->tp;
    struct hx *h = tp ? hx_find_request(tp, wire_id) : NULL;
    if (h) {
        int unsent = h->queued && !h->resuming; /* a resuming GET: the POST went out */
        if (unsent) {
            snprintf(why, n,
                     "the request was still waiting for a connection (%d requests to %s were in "
                     "flight, its cap: \"maxConnections\" or "
                     "CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM; %zu waiting)",
                     tp->active, tp->shown_url, tp->n_queued);
            log_debug("upstream",
                      "%s: request %lld given up after %lld ms waiting for a "
                      "connection",
                      up->name, (long long)wire_id, (long long)(now_ms() - h->queued_ms));
        }
        hx_free(h);
        return unsent;
    }
    return 0;
}
