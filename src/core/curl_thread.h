/* curl_thread — the one helper thread that runs every outgoing HTTP transfer (remote
 * upstreams) on a libcurl multi handle, so that DNS, connects, TLS and slow servers never
 * block the gateway's loop.
 *
 * The loop submits transfers and cancellations through a locked queue (an eventfd wakes the
 * thread out of its epoll_wait); results come back to the loop through lp_post(),
 * in this order per transfer: one CT_HEAD when the final response headers are complete, then
 * (for 2xx text/event-stream responses) one CT_SSE per event as it arrives, then one CT_DONE.
 * Non-streaming bodies are collected (capped) and delivered with CT_DONE. A cancelled
 * transfer gets no CT_DONE; events already queued for it may still arrive, so callers look
 * transfers up by id and ignore unknown ones. Redirects are not followed (the caller reports
 * them with their Location). All functions are for the loop thread. */
#ifndef CODEMCP_CURL_THREAD_H
#define CODEMCP_CURL_THREAD_H

#include <stddef.h>
#include <stdint.h>

enum ct_kind { CT_HEAD, CT_SSE, CT_DONE };

struct ct_event {
    enum ct_kind kind;
    uint64_t xfer;
    long status; /* final HTTP status; 0 when no response arrived (CT_DONE) */
    /* CT_HEAD (also repeated in CT_DONE when a response arrived) */
    char *content_type; /* media type, lowercased, without parameters; or NULL */
    char *session_id;   /* Mcp-Session-Id, or NULL */
    char *location;     /* Location, or NULL */
    char *www_auth;     /* WWW-Authenticate, or NULL */
    int is_sse;         /* 2xx text/event-stream: the body arrives as CT_SSE events */
    /* CT_SSE */
    char *type;    /* event type ("message" by default) */
    char *data;    /* event data, NUL-terminated; NULL for a cursor-only update */
    size_t len;    /* bytes of data */
    char *last_id; /* the stream's last event id after this event, or NULL */
    long retry_ms; /* the stream's retry field, -1 while unset */
    /* CT_DONE */
    int curl_code;      /* 0 when the transfer completed (whatever the HTTP status) */
    char error[256];    /* what went wrong when curl_code != 0 */
    int connect_failed; /* curl_code means no connection could be made at all */
    int too_large;      /* aborted: the body or one event exceeded max_body */
    char *body;         /* non-SSE body, NUL-terminated (may contain NULs), or NULL */
    size_t body_len;
};

/* Called on the loop thread; the event is freed after the call returns. */
typedef void (*ct_event_fn)(const struct ct_event *ev);

struct ct_request {
    const char *method;  /* "GET", "POST" or "DELETE" */
    const char *url;     /* http:// or https:// */
    const char *headers; /* "Name: value" lines back to back, each ending in a NUL; copied */
    size_t headers_len;  /* bytes of headers, the NULs included; 0: none */
    const char *body;    /* POST body (copied) */
    size_t body_len;
    long connect_timeout_ms; /* 0: libcurl's default (300 s) */
    long timeout_ms;         /* whole transfer; 0: none (streams, long tool calls) */
    size_t max_body;         /* cap on a collected body and on one SSE event; 0: 64 MiB */
    ct_event_fn on_event;
};

/* Takes a reference on the thread, starting it (and libcurl) on first use. keep_idle: how
 * many connections the caller may have in flight at once (0: no wish of its own); the
 * connection cache keeps that many more open for reuse once idle. 0 / -1. */
int ct_start(long keep_idle);
/* Drops a reference taken with that keep_idle; the last one aborts what is left (no events)
 * and joins the thread. */
void ct_stop(long keep_idle);
/* Queues a transfer. Returns its id (never 0), or 0 when the thread is not running or the
 * request cannot be built (logged). */
uint64_t ct_submit(const struct ct_request *rq);
/* Aborts a transfer (quietly: no CT_DONE). Unknown or finished ids are ignored. */
void ct_cancel(uint64_t xfer);

#endif
