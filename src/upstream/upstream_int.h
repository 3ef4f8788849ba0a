/* upstream_int — what upstream.c shares with upstream_handshake.c and upstream_call.c, and
 * nobody else.
 *
 * upstream.c owns the request list, listing and the state machine; upstream_handshake.c
 * owns how a server is opened (era probe, initialize or server/discover) and the modern
 * era's change stream. Loop thread only. */
#ifndef CODEMCP_UPSTREAM_INT_H
#define CODEMCP_UPSTREAM_INT_H

#include "upstream.h"

typedef void (*up__req_cb)(struct upstream *up, void *ud, json_t *result,
                           const struct up_error *err);

struct up_req {
    uint64_t handle;
    struct upstream *up;
    int64_t wire_id;
    int64_t started_ms;
    up__req_cb cb;
    void *ud;
    up_call_cb call_cb; /* tools/call requests */
    void *call_ud;
    struct lp_timer timer;
    struct up_req *next, **pprev;
};

/* The request list (upstream.c) as upstream_call.c uses it. up__req_new: a request with
 * the next wire id, not yet listed; up__req_send sends text for it and lists it (timer when
 * timeout_ms > 0), or frees it and returns NULL; up__send_request builds the JSON-RPC
 * request (steals params; the modern era's _meta added) and does both. */
struct up_req *up__req_new(struct upstream *up, up__req_cb cb, void *ud);
struct up_req *up__req_send(struct upstream *up, struct up_req *r, const char *text, size_t len,
                            int64_t timeout_ms);
struct up_req *up__send_request(struct upstream *up, const char *method, json_t *params,
                                int64_t timeout_ms, up__req_cb cb, void *ud);
struct up_req *up__find_wire(struct upstream *up, int64_t wire);
struct up_req *up__reqs(void);
/* The listed request of handle, or NULL. */
struct up_req *up__find_handle(uint64_t handle);
/* Off the list, timer stopped (the caller frees it). */
void up__req_detach(struct up_req *r);
void up__send_cancelled(struct upstream *up, int64_t wire_id, const char *reason);
/* Request wire_id is given up (timeout, cancel): the transport drops it when it never left
 * (returns 1, why (may be NULL) says what it was waiting for); else notifications/cancelled. */
int up__abandon(struct upstream *up, int64_t wire_id, const char *reason, char *why, size_t n);
int64_t up__default_call_timeout(void);
/* upstream_call.c: the usual tools/call answer in jf_dumps' form (jsonscan.h) goes to its
 * caller as bytes: 1. 0: anything else or unusual (an error, a resultType, another request's
 * id, not canonical): the tree path decides as before. */
int up__try_raw_result(struct upstream *up, const char *text, size_t len, char **bytes);

/* Sends a request (steals params, may be NULL); a modern-era server's requests (and the
 * server/discover probe) get the `_meta` envelope. timeout_ms <= 0: no timer. Returns 0,
 * or -1 when nothing was sent (cb not called then). */
int up__request(struct upstream *up, const char *method, json_t *params, int64_t timeout_ms,
                up__req_cb cb, void *ud);
/* Sends a notification (steals params, may be NULL). */
void up__notify(struct upstream *up, const char *method, json_t *params);
/* Starts the paginated tools/list chain that ends in READY (or a re-list). */
void up__list_tools(struct upstream *up);
/* What is left of the server's `timeout` for its start (>= 1 ms). */
int64_t up__handshake_budget(struct upstream *up);
/* The handshake failed for good: log, shut the transport down, FAILED. */
void up__handshake_failed(struct upstream *up, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* From upstream_handshake.c: the server became READY / left READY (modern: opens or
 * drops the subscriptions/listen stream, or re-lists when the tools' ttlMs runs out). */
void up__era_ready(struct upstream *up);
void up__era_stop(struct upstream *up);

/* upstream_extras.c: a connecting server's tools are listed: list every other kind it offers
 * and return 1 (up__became_ready follows when they are listed, or failed), or 0 when it offers
 * none. List one kind again; 1 when method is one of their list_changed notifications
 * (handled); free them. */
int up__extras_first(struct upstream *up);
void up__became_ready(struct upstream *up);
void up__extras_list(struct upstream *up, enum up_extra kind);
int up__extras_notification(struct upstream *up, const char *method);
void up__extras_free(struct upstream *up);

/* For upstream_admin.c (run-time enable/disable). */
/* Starts the transport and the handshake of a server that has none running. */
void up__start(struct upstream *up);
/* Fails every request in flight to up with kind "transport". */
void up__fail_requests(struct upstream *up, const char *why);
/* Tells the registry's listener that a state or tool list changed. */
void up__changed(void);
int up__shutting_down(void);

/* Settings kept by up_start_all. */
extern long up__discover_probe_ms; /* CODEMCP_DISCOVER_PROBE_MS */
extern long up__max_connections;   /* CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM */

#endif
