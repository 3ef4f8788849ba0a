/* upstream_http_int — what upstream_http.c and upstream_replay.c share: one remote server's
 * transport state (struct http_tp) and its exchanges (struct hx). Internal to those two files;
 * upstream.c and everyone else see only up_http_ops. Loop thread only. */
#ifndef CODEMCP_UPSTREAM_HTTP_INT_H
#define CODEMCP_UPSTREAM_HTTP_INT_H

#include <jansson.h>
#include <stdint.h>

#include "config.h"
#include "curl_thread.h"
#include "idmap.h"
#include "loop.h"
#include "util.h"

enum hx_kind { HX_MSG, HX_GET, HX_DELETE, HX_REINIT };

/* One logical exchange. HX_MSG lives until its request is answered (possibly over several
 * transfers: the POST, then resuming GETs); the others until their transfer ends. */
struct hx {
    struct http_tp *tp;
    enum hx_kind kind;
    uint64_t xfer; /* current transfer, 0 when none (held, or waiting to reconnect) */
    char *text;    /* HX_MSG: the message, kept for a resend after the session expired */
    size_t len;
    json_t *req_id; /* HX_MSG request: its id; NULL for notifications and responses */
    int is_initialize, is_initialized;
    int answered, retried, held, resuming;
    char *sent_sid;       /* the Mcp-Session-Id the current transfer carried, or NULL */
    char *modern_version; /* 2026 era: the body's protocol version (no session then) */
    char *mcp_method;     /* 2026 era: Mcp-Method */
    char *mcp_name;       /* 2026 era: Mcp-Name, already encoded for the header */
    char *traceparent;    /* the W3C trace context of the message's _meta, sent as headers */
    char *tracestate;
    struct buf params; /* 2026 era: "Mcp-Param-X: v" lines (x-mcp-header), NUL-separated */
    size_t n_params;
    int is_sse;      /* the current response is an event stream */
    int progress;    /* the current stream produced an event (or a cursor) */
    int failures;    /* consecutive attempts without progress (streams) */
    int reinit_step; /* HX_REINIT: 0 initialize, 1 notifications/initialized */
    char *last_id;   /* stream cursor for Last-Event-ID */
    long retry_ms;
    struct lp_timer timer;
    /* The connection cap (HX_MSG only): `slot` while its transfer counts in tp->active;
     * `queued` while it waits in tp's queue for one (q_method, q_with_session: the transfer
     * uh_submit was asked for; a GET resumes from last_id). */
    int slot, queued, q_with_session;
    int uncapped; /* the 2026 era's subscriptions/listen: a standing stream, like the GET */
    const char *q_method;
    int64_t queued_ms;
    struct hx *q_next;
    struct hx *next, **pprev; /* the list of all exchanges */
    struct hx *id_next;       /* tp->by_wire's chain of this request id, oldest first */
    int by_wire;              /* on that chain */
};

struct http_tp {
    struct upstream *up;
    char *shown_url; /* the URL without credentials or query, for logs and errors */
    char **headers;  /* configured "Name: value" lines that are safe to send */
    char *session_id;
    char *protocol_version;
    char *init_text; /* upstream.c's initialize request, replayed when the session expires */
    size_t init_len;
    struct hx *get; /* the standalone GET stream, or NULL */
    int get_unsupported, reinit, reinit_streak, down, stopping;
    int auth_wait; /* not opened yet: waiting for oauth_gw.c to refresh an expired token */
    long backoff_ms;
    struct lp_timer reconnect_timer, close_timer;
    /* upstream_http_hdrs.c: name -> tool for the tools of hdr_indexed (up->tools when built,
     * referenced so that its address cannot come back as a newer list) whose input schema
     * mentions x-mcp-header; the other tools' calls carry no Mcp-Param-* headers. */
    json_t *hdr_indexed, *hdr_tools;
    /* At most max_active message transfers at once (0: no cap): each holds an HTTP/1.1
     * connection. The rest wait in order in q_head..q_tail; the standing streams (the GET,
     * the 2026 era's subscriptions/listen), the session replay and the DELETE are not
     * counted (one connection each; a cap a standing stream could fill would starve every
     * request). */
    int max_active, active;
    struct hx *q_head, *q_tail;
    size_t n_queued, queued_total; /* waiting now; waited since the queue was last empty */
    int64_t queue_since_ms;        /* when the queue last became non-empty */
    struct lp_deferred pump;       /* takes queued exchanges after a slot is freed */
    struct idmap by_wire; /* integer request id -> its HX_MSG exchanges (chained by id_next) */
};

/* ---- exchanges (upstream_http.c) ---- */
/* A new exchange of tp, appended to the list of all exchanges (oldest first). */
struct hx *hx_new(struct http_tp *tp, enum hx_kind kind);
/* The exchange whose current transfer is xfer, or NULL (cancelled, or its transport gone). */
struct hx *hx_find(uint64_t xfer);
/* Sets h's current transfer (0: none), keeping the transfer id -> exchange map. */
void hx_set_xfer(struct hx *h, uint64_t xfer);
/* Indexes h by its request id (call once its req_id is set). */
void hx_index_request(struct hx *h);
/* Cancels h's transfer and timer; h stays. */
void hx_abort(struct hx *h);
/* Unlinks and frees h (aborting it first). */
void hx_free(struct hx *h);
/* tp's oldest exchange held for a new session, or NULL. */
struct hx *hx_first_held(struct http_tp *tp);
/* tp's message exchange of request wire_id, or NULL. */
struct hx *hx_find_request(struct http_tp *tp, int64_t wire_id);

/* ---- the connection cap (upstream_http_queue.c) ---- */
/* The cap of a server: its "maxConnections", else CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM. */
int uh_max_active(const struct cfg_server *cfg);
/* Takes h out of the queue or gives its slot back; 1 when a slot was freed (then call
 * uh_pump, or uh_pump_later where tp's exchanges may be going away). */
int uh_unqueue(struct hx *h);
/* Starts queued exchanges while tp has free slots (no-op while down or re-initializing). */
void uh_pump(struct http_tp *tp);
void uh_pump_later(struct http_tp *tp);
/* up_transport_ops.abandon: a request upstream.c gave up (see upstream.h). */
int uh_abandon(struct upstream *up, int64_t wire_id, char *why, size_t n);

/* ---- request headers (upstream_http_hdrs.c) ---- */
/* Notes message msg's routing headers in h (Mcp-Method, Mcp-Name, Mcp-Param-*, and the 2026
 * era's protocol version, which replaces the session). Borrows msg. */
void uh_note_headers(struct hx *h, json_t *msg);
/* Appends to out the header lines of h's next transfer ("Name: value", each NUL-terminated,
 * as struct ct_request wants them; bearer: the OAuth "Authorization: ..." line or NULL) and
 * records in h->sent_sid the session id they carry. */
void uh_headers(struct hx *h, const char *method, int with_session, const char *last_id,
                const char *bearer, struct buf *out);

/* ---- the transport (upstream_http.c) ---- */
/* uh_submit without the cap: the transfer starts now (and takes a slot if h is a message). */
int uh_submit_now(struct hx *h, const char *method, int with_session, const char *last_id);
/* Starts a transfer for h. with_session: send Mcp-Session-Id and MCP-Protocol-Version.
 * last_id: Last-Event-ID (GET) or NULL. A message exchange over tp's connection cap waits in
 * tp's queue instead (h->queued, h->xfer 0). Returns 0, or -1 when nothing could be queued. */
int uh_submit(struct hx *h, const char *method, int with_session, const char *last_id);
/* (Re)sends message exchange h as a POST; a failure takes the connection down. */
void uh_post_msg(struct hx *h);
/* Opens the GET stream unless one is open or it cannot be (down, re-initializing, 405). */
void uh_open_get(struct http_tp *tp);
/* Everything in flight fails (kind "transport"); a reconnect follows with backoff unless
 * `final`. */
void uh_lose_connection(struct http_tp *tp, int final, const char *why);
/* Answers request h with a JSON-RPC error so that upstream.c fails just this call (frees h). */
void uh_fail_request(struct hx *h, int code, const char *why);
/* A short description of an HTTP error answer (the JSON-RPC error in the body, if any). */
void uh_describe(const struct ct_event *ev, const char *url, char *out, size_t n);
/* Hands a body or an event's data read from transfer xfer to upstream.c (one or a batch). */
void uh_deliver(struct http_tp *tp, uint64_t xfer, const char *text, size_t len);

/* ---- session expiry (upstream_replay.c) ---- */
/* Did the server say that the session h's transfer carried is unknown? */
int uh_session_unknown(const struct hx *h, const struct ct_event *ev);
/* h was refused for that reason: resend, hold or fail it, and re-initialize if needed. */
void uh_session_expired(struct http_tp *tp, struct hx *h);
/* The response to the replayed initialize (error: the connection goes down). */
void uh_reinit_answered(struct http_tp *tp, struct hx *h, json_t *msg);
/* A transfer of the replay exchange r ended. */
void uh_reinit_done(struct hx *r, const struct ct_event *ev);

#endif
