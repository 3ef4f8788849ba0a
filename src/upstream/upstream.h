/* upstream — the registry of upstream MCP servers and the MCP client state machine.
 *
 * One `struct upstream` per configured server. This module speaks MCP (initialize,
 * notifications/initialized, paginated tools/list, tools/call with timeouts and
 * cancellation, answering the server's ping and roots/list, re-listing on
 * tools/list_changed); the transports (upstream_stdio.c, upstream_http.c) only move
 * bytes. Runs on the loop thread. Long-lived state elsewhere refers to calls by their
 * 64-bit handle, never by pointer. */
#ifndef CODEMCP_UPSTREAM_H
#define CODEMCP_UPSTREAM_H

#include <jansson.h>
#include <stdint.h>

#include "config.h"
#include "idmap.h"
#include "loop.h"
#include "mcp_era.h"

enum up_state {
    UP_DISABLED,   /* not started: disabled in config or unusable entry */
    UP_CONNECTING, /* spawning / handshaking / first tools/list */
    UP_READY,      /* tools known, calls accepted */
    UP_FAILED,     /* failed to start, timed out, or crashed; `error` says why */
    UP_CLOSED,     /* shut down by us */
};

struct upstream;

/* The lists besides tools an upstream may offer (upstream_extras.c). */
enum up_extra { UP_RESOURCES, UP_TEMPLATES, UP_PROMPTS, UP_EXTRA_KINDS };

/* A transport moves JSON-RPC texts; it reports through the up__transport_* calls. */
struct up_transport_ops {
    const char *name;
    int (*start)(struct upstream *up);                              /* 0 / -1 (error set) */
    int (*send)(struct upstream *up, const char *text, size_t len); /* 0 / -1 */
    void (*shutdown)(struct upstream *up);                          /* graceful, then forceful */
    void (*free)(struct upstream *up);                              /* release transport state */
    /* Optional: request wire_id is given up (timed out or cancelled). 1 when it never left
     * (it was waiting for a connection: dropped, why says so); 0 when it had been sent (the
     * transport stops waiting for its answer). */
    int (*abandon)(struct upstream *up, int64_t wire_id, char *why, size_t n);
};

struct upstream {
    int index;
    char *name;
    struct cfg_server *cfg; /* borrowed from the loaded config, lives as long as the gateway */
    enum up_state state;
    char *error; /* why it is FAILED/DISABLED */
    const struct up_transport_ops *ops;
    void *tp; /* transport state */

    json_t *tools; /* array of MCP Tool objects (owned), NULL until listed */
    json_t *server_info;
    json_t *capabilities;
    char *protocol_version;

    int64_t next_id;
    struct idmap reqs_by_wire; /* upstream.c: wire id -> its listed struct up_req */
    int64_t started_ms;
    int64_t ready_ms;
    struct lp_timer connect_timer;
    struct lp_timer relist_timer;
    struct lp_timer restart_timer; /* a crashed stdio server is started again after backoff */
    int restart_pending;           /* restart once the old process is gone */
    int restarts;                  /* consecutive restart attempts (sets the backoff) */
    int started_once;              /* its first start ended (ready or failed) */
    int listing;                   /* a tools/list chain is in flight */
    int relist_wanted;             /* list_changed arrived while listing */
    json_t *list_acc;              /* tools accumulated across pages */

    /* Protocol era, chosen per server: probed with server/discover, else `initialize`.
     * Cached for the server process (stdio: a restart probes again) or origin (HTTP). */
    enum mcp_era era;
    int era_flips;                /* era switches during one start (bounds a -32022 ping-pong) */
    int listen_open;              /* modern: a subscriptions/listen stream is open */
    int listen_unsupported;       /* modern: the server refused subscriptions/listen */
    int64_t list_ttl_ms;          /* modern: the last tools/list's ttlMs (0: no hint) */
    struct lp_timer listen_timer; /* modern: reopen the listen stream / re-list at ttl */
    int start_when_closed;        /* enabled at run time while the old transport was closing */

    /* upstream_extras.c: resources, resource templates, prompts (owned arrays, NULL until
     * listed), the pages of a listing in flight, and a re-list asked for meanwhile. */
    json_t *extras[UP_EXTRA_KINDS];
    json_t *extra_acc[UP_EXTRA_KINDS];
    unsigned char extra_listing[UP_EXTRA_KINDS], extra_again[UP_EXTRA_KINDS];
    int extras_first; /* lists still out before a connecting server becomes READY */
};

struct up_error {
    const char *kind; /* timeout|auth|transport|not_found|upstream_error|denied|input_required */
    char message[512];
    json_t *rpc_error; /* the server's JSON-RPC error object, if it sent one (borrowed) */
    /* kind input_required: the server's InputRequiredResult (borrowed; inputRequests,
     * requestState), for a caller that can relay it to its own client (runs.c) */
    json_t *input_required;
};

/* A CallToolResult: as a tree (borrowed), or, when the reply came in the form jf_dumps writes
 * (jsonscan.h) and nothing here had to look inside, as its bytes (borrowed, not
 * NUL-terminated; a canonical JSON object with no "resultType"). Exactly one of tree and raw. */
struct up_result {
    json_t *tree;
    const char *raw;
    size_t raw_len;
    int is_error; /* with raw: the result's isError is true (a tree says it itself) */
    /* With raw, when set: the malloc'd buffer raw lies in. A callback that keeps raw past its
     * return takes it (sets *bytes to NULL; it frees it then); else it is freed after. */
    char **bytes;
};

/* Result callback: exactly one of res and err is set. */
typedef void (*up_call_cb)(void *ud, const struct up_result *res, const struct up_error *err);

/* Creates every server of the config and starts the enabled ones concurrently. */
struct settings;
void up_start_all(struct cfg *cfg, const struct settings *set);
/* Called (on the loop) whenever a server's state or tool list changes. */
void up_set_listener(void (*on_change)(void));
/* True when every server's first start has ended, ready or failed (the first tools/list and
 * runs wait for this; restarts and reconnects do not count). */
int up_all_settled(void);
size_t up_count(void);
struct upstream *up_at(size_t i);
struct upstream *up_find(const char *name);
const char *up_state_name(enum up_state s);

/* Sends tools/call with arguments args (args_len bytes of a canonical JSON object, as
 * jf_dumps writes one or js_canon_value accepted; NULL: {}) and, when extra (borrowed) is
 * given, its other members of params: a multi round-trip retry's inputResponses and
 * requestState (MCP 2026-07-28, SEP-2322), and trace (may be NULL) in its _meta. Returns 0 and a
 * handle, or -1 with *err filled (no callback then). timeout_ms <= 0 means the default
 * (CODEMCP_CALL_TIMEOUT_MS). On expiry the upstream gets notifications/cancelled and cb gets kind
 * "timeout". Borrows everything. */
/* W3C trace context passed on with a request (SEP-414: in params._meta; over HTTP also as
 * the traceparent/tracestate headers). traceparent is a well-formed value, tracestate "" or
 * one already checked to need no JSON escape (trace.h gives both). */
struct up_trace {
    const char *traceparent;
    const char *tracestate;
};
int up_call_tool(const char *server, const char *tool, const char *args, size_t args_len,
                 json_t *extra, const struct up_trace *trace, int64_t timeout_ms, up_call_cb cb,
                 void *ud, uint64_t *handle, struct up_error *err);
/* Cancels a call: notifications/cancelled upstream; its callback is never called. */
void up_cancel_call(uint64_t handle, const char *reason);
/* Calls in flight (all servers). */
size_t up_calls_in_flight(void);

/* Run-time control (the admin socket). up_enable starts a server that is off, failed or
 * disabled (in the config too, unless the entry is unusable); up_disable shuts one down and
 * fails its calls in flight (UP_DISABLED; its last tool list is kept for display). Both notify the
 * listener. 0, or -1 with why. */
int up_enable(const char *name, char *why, size_t n);
int up_disable(const char *name, char *why, size_t n);

/* Resources, templates, prompts (upstream_extras.c). on_change(kind) runs when a server's
 * list of that kind was listed anew (ready, or its list_changed). up_has_extra: the server's
 * capabilities offer that kind. up_request sends method with params (stolen) to a ready
 * server, bounded by timeout_ms, never more than CODEMCP_CALL_TIMEOUT_MS (<= 0: that); cb gets
 * the result (borrowed) or an error, exactly once, unless up_cancel_request gives it up first
 * (*handle, when handle is not NULL, names it). -1 with *err filled when nothing was sent (no
 * callback then). */
typedef void (*up_request_cb)(void *ud, json_t *result, const struct up_error *err);
void up_set_extras_listener(void (*on_change)(enum up_extra kind));
int up_has_extra(struct upstream *up, enum up_extra kind);
/* The ready server uri belongs to: the one that lists it, else whose resource template's fixed
 * head begins it, else that lists a resource of the same origin (scheme://authority: a resource
 * made since the last listing), else the only server offering resources; NULL: none. */
struct upstream *up_resource_server(const char *uri);
int up_request(const char *server, const char *method, json_t *params, int64_t timeout_ms,
               up_request_cb cb, void *ud, uint64_t *handle, struct up_error *err);
/* Gives up a request up_request sent: the server is told (notifications/cancelled), cb is never
 * called. A handle no longer in flight is ignored. */
void up_cancel_request(uint64_t handle, const char *reason);

/* Graceful shutdown of every server; done() once all are gone (children reaped). */
void up_shutdown_all(void (*done)(void));
/* A signal-driven shutdown (before up_shutdown_all): stdio servers get stdin EOF and SIGTERM
 * at once and SIGKILL after ms, instead of the graceful stdin → SIGTERM → SIGKILL steps. */
void up_set_shutdown_deadline(int ms);
void up_free_all(void);

/* ---- for transports only ---- */
void up__transport_open(struct upstream *up); /* ready to send initialize */
void up__transport_message(struct upstream *up, const char *text, size_t len);
/* The same for a line the transport hands over (malloc'd): freed once its tree is made, or
 * kept by whoever relays the result in it (up_result.bytes). */
void up__transport_line(struct upstream *up, char *text, size_t len);
void up__transport_failed(struct upstream *up, const char *why); /* connection lost/failed */
void up__transport_closed(struct upstream *up);                  /* fully gone after shutdown */
extern int up__shutdown_deadline_ms; /* 0: graceful; else see up_set_shutdown_deadline */
/* After up__transport_failed, a transport that reconnects by itself (HTTP) calls this when it
 * is ready to try again: the handshake restarts (CONNECTING, a fresh `timeout` budget) and
 * up__transport_open follows. No-op unless FAILED. */
void up__transport_reopen(struct upstream *up);
void up__set_error(struct upstream *up, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

extern const struct up_transport_ops up_stdio_ops;
extern const struct up_transport_ops up_http_ops; /* defined by upstream_http.c when built */

#endif
