/* http_stream — how serve_http's answers go out on a connection: the SSE event streams and
 * the writer. serve_http.c decides what to answer; this file owns the buffering, the event ids
 * and lws's write rules, so they live in one place. Loop thread only; never blocks.
 *
 * Streams: ids "<stream>-<seq>" (see http_int.h), a bounded replay buffer per stream (the
 * oldest events go; a reader that falls that far behind is dropped and may resume), the
 * priming event with the retry hint, keepalive comments, and trimming of answered POST
 * streams nobody reads. A connection writes its stream's events from a cursor (sent_seq,
 * ev_off), so a client that resumes with Last-Event-ID (looked up by serve_http.c) gets the
 * events after the one it names.
 *
 * lws 4.1 traps handled here: bodies of unknown length are never chunked for us (we frame
 * chunks), one lws_write per WRITEABLE from our own buffers, the 5 s body timeout lws arms
 * after LWS_CALLBACK_HTTP is cleared once an SSE stream starts, and a keep-alive request that
 * arrives before the previous transaction is completed makes lws spin (so a reply is
 * completed in the same callback as its last byte, see http__on_writable). */
#include "health.h"
#include "http_int.h"
#include "http_quota.h"
#include "jsonrpc.h"
#include "mcp_server.h"
#include "metrics.h"
#include "namespaces.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define SLICE             65536 /* bytes per lws_write: bounds what lws buffers for us */
#define STREAM_MAX_EVENTS 1024  /* per stream; the oldest go first */
#define STREAM_MAX_BYTES  (16u << 20)
#define MAX_DETACHED_DONE 16   /* answered POST streams kept per session for a resume */
#define SSE_RETRY_MS      1000 /* reconnect hint in the priming event */
#define MODULE            "http"

static uint64_t next_stream_num = 1;
static size_t replies_writing; /* plain (not SSE) replies decided but not yet fully written */
static unsigned char scratch[LWS_PRE + SLICE + 64];

/* GET streams: lws 4.1 does not read a connection while it serves a GET (state
 * DOING_TRANSACTION) yet keeps polling it for input, so once the client closes, the loop
 * spins on POLLIN. Such a connection has reading paused whenever it has nothing to write
 * (lws then skips its POLLOUT too, so writing resumes it), and its FIN is found by
 * http__peer_closed() on every tick. */
static void want_write(struct hconn *c)
{
    if (c->rx_paused) {
        lws_rx_flow_control(c->wsi, 1);
        c->rx_paused = 0;
    }
    lws_callback_on_writable(c->wsi);
}

static void pause_rx(struct hconn *c)
{
    if ((c->method == M_GET || c->watch_close == 2) && !c->rx_paused) {
        lws_rx_flow_control(c->wsi, 0);
        c->rx_paused = 1;
    }
}

/* ---- streams ------------------------------------------------------------------------------ */

static void detach(struct hconn *c)
{
    if (c->stream)
        c->stream->conn = NULL;
    c->stream = NULL;
}

void http__stream_free(struct hstream *st)
{
    struct hsession *s = st->sess;
    LIST_UNLINK(&s->streams, st);
    if (st->conn) {
        struct hconn *c = st->conn;
        detach(c);
        want_write(c); /* the writer ends the response */
    }
    for (size_t i = 0; i < st->n_ev; i++)
        free(st->ev[i]);
    free(st->ev);
    json_decref(st->request_id);
    free(st);
}

struct hstream *http__stream_new(struct hsession *s, json_t *request_id)
{
    struct hstream *st = xcalloc(1, sizeof(*st));
    st->num = next_stream_num++;
    st->sess = s;
    st->request_id = request_id ? json_incref(request_id) : NULL;
    st->next_seq = 1;
    st->next = s->streams;
    s->streams = st;
    return st;
}

/* Keeps at most MAX_DETACHED_DONE answered POST streams nobody is reading (newest win). */
static void session_trim(struct hsession *s)
{
    int kept = 0;
    struct hstream *st = s->streams;
    while (st) {
        struct hstream *next = st->next;
        if (st->request_id && st->answered && !st->conn && ++kept > MAX_DETACHED_DONE)
            http__stream_free(st);
        st = next;
    }
}

/* The event after `seq`, or NULL. Events are consecutive, so this is O(1). */
static struct hevent *stream_after(struct hstream *st, uint64_t seq)
{
    if (!st->n_ev)
        return NULL;
    uint64_t first = st->ev[0]->seq;
    size_t i = seq + 1 <= first ? 0 : (size_t)(seq + 1 - first);
    return i < st->n_ev ? st->ev[i] : NULL;
}

/* Ends a connection from our side; its stream stays and can be resumed. */
void http__conn_drop(struct hconn *c, enum log_level level, const char *why)
{
    log_write(level, MODULE, "dropping an SSE connection: %s", why);
    detach(c);
    lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

void http__stream_push(struct hstream *st, const char *json, size_t len, int is_response)
{
    char head[80];
    uint64_t seq = st->next_seq++;
    int hl = snprintf(head, sizeof(head),
                      "id: %llu-%llu\nevent: message\ndata: ", (unsigned long long)st->num,
                      (unsigned long long)seq);
    struct hevent *ev = xmalloc(sizeof(*ev) + (size_t)hl + len + 3);
    ev->seq = seq;
    ev->data_off = (size_t)hl;
    ev->len = (size_t)hl + len + 2;
    memcpy(ev->text, head, (size_t)hl);
    memcpy(ev->text + hl, json, len);
    memcpy(ev->text + hl + len, "\n\n", 3);
    if (st->n_ev == st->cap_ev) {
        st->cap_ev = st->cap_ev ? st->cap_ev * 2 : 4;
        st->ev = xrealloc(st->ev, st->cap_ev * sizeof(*st->ev));
    }
    st->ev[st->n_ev++] = ev;
    st->bytes += ev->len;
    if (is_response)
        st->answered = 1;
    /* Bounded: the oldest events go; a reader that has not got them yet is too slow. */
    while (st->n_ev > 1 && (st->n_ev > STREAM_MAX_EVENTS || st->bytes > STREAM_MAX_BYTES)) {
        struct hevent *old = st->ev[0];
        if (st->conn && st->conn->sent_seq < old->seq)
            http__conn_drop(st->conn, LOG_WARN,
                            "the client reads slower than messages arrive (it may resume with "
                            "Last-Event-ID)");
        st->bytes -= old->len;
        memmove(st->ev, st->ev + 1, (st->n_ev - 1) * sizeof(*st->ev));
        st->n_ev--;
        free(old);
    }
    if (st->conn)
        want_write(st->conn);
    else if (st->answered)
        session_trim(st->sess);
}

/* The kind of a JSON-RPC message text by its first top-level "method", "result" or "error"
 * member: 'm' (a request or notification), 'r', 'e', or 0 when it has none. A scan, not a
 * parse: results can be megabytes, and ours name their kind in the first bytes (jsonrpc.c and
 * mcp_era.c build "jsonrpc", "id", then the rest), so the scan stops there. (Scanning a whole
 * tools/list result for "method" was ~35k instructions, 7 % of that request.) */
int http__message_kind(const char *t, size_t n)
{
    int depth = 0, in_str = 0, key = 0, expect_key = 0;
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = t[i];
        if (in_str) {
            if (ch == '\\') {
                i++;
            } else if (ch == '"') {
                in_str = 0;
                size_t kl = i - start;
                if (key && kl == 6 && memcmp(t + start, "method", 6) == 0)
                    return 'm';
                if (key && kl == 6 && memcmp(t + start, "result", 6) == 0)
                    return 'r';
                if (key && kl == 5 && memcmp(t + start, "error", 5) == 0)
                    return 'e';
            }
            continue;
        }
        switch (ch) {
        case '"':
            in_str = 1;
            key = depth == 1 && expect_key;
            start = i + 1;
            break;
        case '{':
        case '[':
            expect_key = ++depth == 1;
            break;
        case '}':
        case ']':
            depth--;
            break;
        case ',':
            expect_key = depth == 1;
            break;
        case ':':
            if (depth == 1)
                expect_key = 0;
            break;
        default:
            break;
        }
    }
    return 0;
}

int http__has_method_member(const char *t, size_t n)
{
    return http__message_kind(t, n) == 'm';
}

/* ---- sessions ----------------------------------------------------------------------------- */

struct hsession *http__session_open(struct hsession **list, const char *principal, const char *kind,
                                    mcp_send_fn send)
{
    struct hsession *s = xcalloc(1, sizeof(*s));
    snprintf(s->principal, sizeof(s->principal), "%s", principal);
    int bad = replica_id() ? replica_mint("sid", s->sid, sizeof(s->sid)) /* routable */
                           : random_hex(s->sid, SID_BYTES);
    if (bad < 0) {
        free(s);
        return NULL;
    }
    char label[40];
    snprintf(label, sizeof(label), "%s %.8s", kind, s->sid);
    s->mcp = mcp_session_new(send, s, label);
    ns_set_principal(mcp_session_id(s->mcp), principal); /* whose variables, for eviction */
    s->standalone = http__stream_new(s, NULL);
    s->last_used_ms = now_ms();
    s->next = *list;
    *list = s;
    hq_opened(principal);
    return s;
}

void http__session_close(struct hsession **list, struct hsession *s)
{
    s->ending = 1;
    LIST_UNLINK(list, s);
    hq_closed(s->principal);
    mcp_session_close(s->mcp); /* cancels its runs, releases its worker and namespace */
    while (s->streams)
        http__stream_free(s->streams); /* a reader still attached ends its response */
    free(s);
}

/* ---- replies ------------------------------------------------------------------------------ */

size_t http__replies_writing(void)
{
    return replies_writing;
}

void http__reply_ready(struct hconn *c, int status)
{
    if (!c->sse && !c->writing) {
        c->writing = 1;
        replies_writing++;
    }
    c->status = status;
    c->ready = 1;
    want_write(c);
}

/* An HTTP error with a JSON-RPC error body (as the SDK sends them). */
void http__reply_error(struct hconn *c, int status, int code, const char *message)
{
    json_t *e = rpc_error(c->req_id, code, message, NULL); /* the request's id, when readable */
    char *t = rpc_dump(e);
    json_decref(e);
    buf_reset(&c->out);
    buf_appends(&c->out, t ? t : "{}");
    free(t);
    /* A body we have not read stays unread: end the connection rather than resync. */
    if (c->method == M_POST && c->body.len == 0)
        c->close_after = 1;
    if (status == 401 || status == 403) /* worth seeing when a client is misconfigured */
        log_info(MODULE, "%d: %s", status, message);
    else
        log_debug(MODULE, "%d: %s", status, message);
    http__reply_ready(c, status);
}

void http__reply_oauth_error(struct hconn *c, int status, const char *error,
                             const char *description)
{
    json_t *e = json_pack("{s:s, s:s}", "error", error, "error_description", description);
    char *t = json_dumps(e, JSON_COMPACT);
    json_decref(e);
    buf_reset(&c->out);
    buf_appends(&c->out, t ? t : "{}");
    free(t);
    c->close_after = 1;
    log_info(MODULE, "%d %s: %s", status, error, description);
    http__reply_ready(c, status);
}

void http__reply_json(struct hconn *c, const char *json, size_t len)
{
    buf_reset(&c->out);
    buf_append(&c->out, json, len);
    http__reply_ready(c, 200);
}

void http__reply_sse(struct hconn *c, struct hstream *st, uint64_t from_seq, int prime)
{
    c->sse = 1;
    c->stream = st;
    st->conn = c;
    c->sent_seq = from_seq;
    c->prime = prime;
    http__reply_ready(c, 200);
}

void http__reply_deferred(struct hconn *c, struct hstream *st,
                          int (*answer_status)(const char *text, size_t len))
{
    c->answer_status = answer_status;
    c->defer = 1;
    c->defer_ms = now_ms();
    http__reply_sse(c, st, 0, 0);
}

/* A deferred reply (see http__reply_deferred) on a writable connection: 0 while there is
 * nothing to say (reading paused as on an idle SSE stream), 1 once the headers may go, as
 * JSON when the stream holds just its answer, else as SSE. */
static int deferred_ready(struct hconn *c)
{
    struct hstream *st = c->stream;
    struct hevent *ev = st ? stream_after(st, 0) : NULL;
    if (c->defer == 1) { /* lws armed a 5 s content timeout after LWS_CALLBACK_HTTP */
        lws_set_timeout(c->wsi, NO_PENDING_TIMEOUT, 0);
        c->defer = 2;
    }
    if (st && !ev) {
        pause_rx(c);
        return 0;
    }
    c->defer = 0;
    if (ev && st->answered && st->n_ev == 1 && ev->seq == 1) {
        const char *text = ev->text + ev->data_off;
        size_t len = ev->len - ev->data_off - 2;
        buf_reset(&c->out);
        buf_append(&c->out, text, len);
        c->status = c->answer_status ? c->answer_status(text, len) : 200;
        c->sse = 0;
        detach(c); /* the stream goes with the request (its owner's on_release) */
    }
    return 1;
}

static int write_chunk(struct hconn *c, const char *data, size_t n)
{
    mx_client_bytes(MX_TRANSPORT_HTTP, 0, n);
    unsigned char *p = scratch + LWS_PRE;
    size_t len = 0;
    if (!c->http10)
        len = (size_t)sprintf((char *)p, "%zx\r\n", n);
    memcpy(p + len, data, n);
    len += n;
    if (!c->http10) {
        memcpy(p + len, "\r\n", 2);
        len += 2;
    }
    return lws_write(c->wsi, p, len, LWS_WRITE_HTTP) < (int)len ? -1 : 0;
}

static int write_headers(struct hconn *c)
{
    struct lws *wsi = c->wsi;
    unsigned char *start = scratch + LWS_PRE, *p = start, *end = scratch + sizeof(scratch) - 1;
    mx_http_status(c->status);
    int bad = lws_add_http_header_status(wsi, (unsigned)c->status, &p, end);
    /* A draining gateway closes every connection after its answer, and says so: a client or a
     * balancer that kept it for its next request would send that to a process about to exit
     * (HAProxy then closes the client's connection without an answer). */
    if (health_draining())
        c->close_after = 1;
#define ADD(name, value)                                                                           \
    (bad = bad || lws_add_http_header_by_name(wsi, (const unsigned char *)name,                    \
                                              (const unsigned char *)(value), (int)strlen(value),  \
                                              &p, end))
    if (c->sse) {
        ADD("content-type:", "text/event-stream");
        ADD("cache-control:", "no-cache, no-transform");
        ADD("x-accel-buffering:", "no");
        if (c->http10 || c->close_after)
            ADD("connection:", "close");
        if (!c->http10)
            ADD("transfer-encoding:", "chunked");
    } else {
        if (c->out.len)
            ADD("content-type:", c->content_type ? c->content_type : "application/json");
        bad = bad || lws_add_http_header_content_length(wsi, c->out.len, &p, end);
        if (c->close_after)
            ADD("connection:", "close");
    }
    if (c->reply_sid[0])
        ADD("mcp-session-id:", c->reply_sid);
    if (c->extra_name)
        ADD(c->extra_name, c->extra_value);
#undef ADD
    if (bad || lws_finalize_write_http_header(wsi, start, &p, end))
        return -1;
    return 0;
}

void http__conn_release(struct hconn *c)
{
    if (!c->live)
        return;
    c->live = 0;
    if (c->writing)
        replies_writing--;
    c->writing = 0;
    detach(c);
    void (*on_release)(struct hconn *) = c->on_release;
    c->on_release = NULL;
    if (on_release)
        on_release(c); /* e.g. a 2026 request's session ends with its connection */
    buf_free(&c->body);
    buf_free(&c->out);
}

/* The response is complete: keep the connection for the next request, or close it. */
static int finish(struct hconn *c)
{
    struct lws *wsi = c->wsi;
    if (c->close_after || c->http10) {
        if (lws_partial_buffered(wsi)) { /* lws still holds bytes: close once they are out */
            want_write(c);
            return 0;
        }
        http__conn_release(c);
        return -1;
    }
    if (c->rx_paused)
        lws_rx_flow_control(wsi, 1);
    http__conn_release(c);
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static int write_body_step(struct hconn *c)
{
    size_t left = c->out.len - c->out_off;
    if (left) {
        size_t n = left > SLICE ? SLICE : left;
        memcpy(scratch + LWS_PRE, c->out.data + c->out_off, n);
        mx_client_bytes(MX_TRANSPORT_HTTP, 0, n);
        int final = n == left;
        if (lws_write(c->wsi, scratch + LWS_PRE, n, final ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) <
            (int)n)
            return -1;
        c->out_off += n;
        if (!final) {
            want_write(c);
            return 0;
        }
    }
    return finish(c);
}

static int write_sse_step(struct hconn *c)
{
    struct hstream *st = c->stream;
    if (c->prime && st) { /* an id to resume from before anything else, and the retry hint */
        char frame[96];
        int n =
            snprintf(frame, sizeof(frame), "id: %llu-%llu\nretry: %d\ndata: \n\n",
                     (unsigned long long)st->num, (unsigned long long)c->sent_seq, SSE_RETRY_MS);
        c->prime = 0;
        want_write(c);
        return write_chunk(c, frame, (size_t)n);
    }
    struct hevent *ev = st ? stream_after(st, c->sent_seq) : NULL;
    if (ev) {
        size_t left = ev->len - c->ev_off, n = left > SLICE ? SLICE : left;
        if (write_chunk(c, ev->text + c->ev_off, n) < 0)
            return -1;
        c->ev_off += n;
        if (c->ev_off == ev->len) {
            c->sent_seq = ev->seq;
            c->ev_off = 0;
        }
        want_write(c);
        return 0;
    }
    if (st && !(st->answered && c->sent_seq + 1 == st->next_seq)) {
        if (c->keepalive) {
            c->keepalive = 0;
            want_write(c); /* to pause reading again */
            return write_chunk(c, ": keepalive\n\n", 13);
        }
        pause_rx(c);
        return 0; /* nothing to say yet */
    }
    /* The stream is complete (or its session ended): end the response. */
    if (st && st->request_id)
        http__stream_free(st); /* fully delivered: nothing left to resume */
    if (c->http10)
        return finish(c);
    unsigned char *p = scratch + LWS_PRE;
    memcpy(p, "0\r\n\r\n", 5);
    if (lws_write(c->wsi, p, 5, LWS_WRITE_HTTP_FINAL) < 5)
        return -1;
    return finish(c);
}

int http__on_writable(struct hconn *c)
{
    if (!c->live || !c->ready)
        return 0;
    if (!c->headers_sent && c->defer && !deferred_ready(c))
        return 0;
    if (!c->headers_sent) {
        if (write_headers(c) < 0)
            return -1;
        c->headers_sent = 1;
        if (c->sse) /* lws armed a 5 s content timeout after LWS_CALLBACK_HTTP */
            lws_set_timeout(c->wsi, NO_PENDING_TIMEOUT, 0);
        /* No body (202, an empty 200): the response is complete with its headers, so the
         * client may send its next request at once. Ending the transaction in a later
         * callback let that request reach lws while the old one was still open; lws 4.1
         * then parked it and spun in lws_service_do_ripe_rxflow forever (no answer, SIGTERM
         * ignored, the socket left in CLOSE-WAIT with 1 byte unread). */
        if (!c->sse && !c->out.len)
            return finish(c);
        want_write(c);
        return 0;
    }
    return c->sse ? write_sse_step(c) : write_body_step(c);
}

/* A GET stream's client has closed (see want_write): checked on every tick and before
 * refusing a second GET with 409. */
int http__peer_closed(struct hconn *c)
{
    char b;
    ssize_t n = recv(lws_get_socket_fd(c->wsi), &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* The per-stream half of serve_http's tick (see want_write for why GET streams are peeked). */
void http__stream_tick(struct hstream *st, int keepalive)
{
    struct hconn *c = st->conn;
    if (c && (c->method == M_GET || c->watch_close) && http__peer_closed(c)) {
        http__conn_drop(c, LOG_DEBUG, "the client closed it");
    } else if (c && c->watch_close == 1) { /* a POST stream open a second: treat it as a GET */
        c->watch_close = 2;
        if ((c->headers_sent || c->defer) && !stream_after(st, c->sent_seq))
            pause_rx(c);
    } else if (c && c->defer && now_ms() - c->defer_ms >= DEFER_SSE_MS) {
        c->defer = 0; /* a long wait: the SSE stream starts, for its keepalive comments */
        want_write(c);
    } else if (c && keepalive && c->headers_sent && !stream_after(st, c->sent_seq)) {
        c->keepalive = 1;
        want_write(c);
    }
}

void http__write_continue(struct hconn *c)
{
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    memcpy(scratch + LWS_PRE, cont, sizeof(cont) - 1);
    lws_write(c->wsi, scratch + LWS_PRE, sizeof(cont) - 1, LWS_WRITE_RAW);
}
