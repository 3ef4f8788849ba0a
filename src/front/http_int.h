/* http_int — the objects serve_http.c and http_stream.c share, and their cross-file http__
 * functions. Internal to the HTTP front: nothing else includes it. Loop thread only.
 *
 * Objects. A session (struct hsession) owns one mcp_session and its SSE streams. A stream
 * (struct hstream) is an ordered, bounded buffer of events with ids "<stream>-<seq>"; stream
 * numbers are global, so ids never repeat across sessions. Each request that is not
 * answered at once gets a POST stream; each session has one standalone stream for messages
 * that answer nothing (tools/list_changed, logging). A connection (struct hconn, the lws
 * per-transaction memory) is attached to at most one stream and writes its events from a
 * cursor; stream->conn and conn->stream are set and cleared together, so neither outlives
 * the other. Events stay buffered after a connection drops, so a client that comes back with
 * Last-Event-ID gets what it missed on that stream and nothing from any other. */
#ifndef CODEMCP_HTTP_INT_H
#define CODEMCP_HTTP_INT_H

#include "log.h"
#include "loop.h"
#include "replica.h"
#include "util.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define SID_BYTES 32 /* Mcp-Session-Id of a single gateway: 64 hex characters */
/* Room for any session id: a fleet replica's are longer (replica.h). */
#define SID_SIZE (REPLICA_MINTED_MAX > 2 * SID_BYTES + 1 ? REPLICA_MINTED_MAX : 2 * SID_BYTES + 1)

struct hevent {
    uint64_t seq;
    size_t len;      /* whole SSE frame */
    size_t data_off; /* where the JSON text starts */
    char text[];     /* "id: N-S\nevent: message\ndata: <json>\n\n" */
};

struct hsession;
struct hconn;
struct mcp_session;

struct hstream {
    uint64_t num;
    struct hsession *sess;
    json_t *request_id; /* POST streams: the request this stream answers; NULL: standalone */
    struct hevent **ev; /* consecutive seqs, oldest first */
    size_t n_ev, cap_ev, bytes;
    uint64_t next_seq; /* starts at 1; the priming event is "N-0" */
    int answered;      /* the response is in ev[] */
    struct hconn *conn;
    struct hstream *next;
};

struct hsession {
    char sid[SID_SIZE];
    struct mcp_session *mcp;
    struct hstream *streams; /* newest first; includes the standalone stream */
    struct hstream *standalone;
    struct lp_timer idle;
    int ending;
    char principal[64]; /* who created it (http_auth.c), or the peer address without auth */
    int64_t last_used_ms;
    struct hsession *next;
};

enum method { M_OTHER, M_GET, M_POST, M_DELETE };

/* Per-transaction state in lws's per-connection memory (zeroed by lws for each request). */
struct hconn {
    struct lws *wsi;
    int live;
    enum method method;
    char sid[SID_SIZE];
    int has_sid, bad_sid;
    char proto[32];
    int has_proto;
    char last_event_id[64];
    char mcp_method[64], mcp_name[512]; /* 2026 routing headers, trimmed (http_modern.c) */
    int has_mcp_method, has_mcp_name;
    char param_ns[256]; /* Mcp-Param-Namespace as sent (x-mcp-header of execute_python) */
    int has_param_ns;
    json_t *req_id;     /* borrowed while a POST body is handled: echoed in error replies */
    uint64_t modern_id; /* the transient session of a 2026 request answered over SSE, or 0 */
    int watch_close;    /* a 2026 POST stream: 1 peeked for a closed peer on each tick, 2 (from its
                         * second tick) also paused when idle, as GET streams always are */
    int http10;
    char principal[64];
    char www_auth[400], retry_after[24]; /* storage for extra_value */
    struct buf body;
    /* the reply */
    int ready, headers_sent, close_after, sse, prime;
    int status;
    const char *content_type; /* of c->out; NULL: application/json */
    const char *extra_name, *extra_value;
    char reply_sid[SID_SIZE];
    struct buf out;
    size_t out_off;
    /* SSE */
    struct hstream *stream;
    uint64_t sent_seq; /* last event fully written */
    size_t ev_off;     /* bytes of event sent_seq + 1 already written */
    int keepalive;
    int rx_paused; /* see want_write() in http_stream.c */
    int defer;     /* a 2026 reply waiting for its first message (http__reply_deferred) */
    int64_t defer_ms;
    int legacy; /* a POST /messages of serve_sse_legacy.c: its body goes there */
    /* Set by the module that ties state of its own to the connection (http_modern.c: a 2026
     * request's transient session): called once when the connection is released, so the
     * writer frees nothing it does not own. */
    void (*on_release)(struct hconn *c);
    int (*answer_status)(const char *text, size_t len); /* a deferred reply's status rule */
    int body_done; /* LWS_CALLBACK_HTTP_BODY_COMPLETION came (again: pipelined input) */
    int writing;   /* a plain reply counted by http__replies_writing until released */
};

/* ---- http_stream.c: streams ---------------------------------------------------------------- */

/* A new stream of session s, newest first in s->streams. request_id (borrowed; a reference is
 * taken) names the request a POST stream answers; NULL makes the standalone stream. */
struct hstream *http__stream_new(struct hsession *s, json_t *request_id);
/* Unlinks and frees st; a connection reading it is detached and ends its response. */
void http__stream_free(struct hstream *st);
/* Appends one message (json, len bytes, copied) as an SSE event; is_response marks the
 * stream answered. The oldest events go beyond the bounds, dropping a reader that lags. */
void http__stream_push(struct hstream *st, const char *json, size_t len, int is_response);
/* The kind of a JSON-RPC message text, by its first top-level "method" ('m': a request or
 * notification), "result" ('r') or "error" ('e') member; 0 when it has none. */
int http__message_kind(const char *t, size_t n);
/* 1 when that kind is 'm'. */
int http__has_method_member(const char *t, size_t n);
/* Called for every stream once a second: drops a GET stream's connection whose client has
 * closed; with keepalive set, wakes idle readers to send an SSE comment. */
void http__stream_tick(struct hstream *st, int keepalive);

/* ---- http_stream.c: sessions (both transports) ---------------------------------------------- */

/* A new session of principal on *list (newest first), labelled "<kind> <sid head>" in the
 * logs: a random id, its mcp_session (messages to send), its standalone stream, counted by
 * http_quota.c. NULL when no random id could be made. */
struct hsession *http__session_open(struct hsession **list, const char *principal, const char *kind,
                                    void (*send)(void *tud, const char *text, size_t len,
                                                 json_t *related));
/* Ends s: off *list and the count, its mcp_session closed (its runs cancelled), its streams
 * freed (a reader still attached ends its response), s freed. */
void http__session_close(struct hsession **list, struct hsession *s);

/* ---- http_stream.c: connections and replies ------------------------------------------------ */

/* Ends a connection from our side (logged at level); its stream stays and can be resumed. */
void http__conn_drop(struct hconn *c, enum log_level level, const char *why);
/* 1 when a GET stream's client has closed (a peek: reading is paused on such connections). */
int http__peer_closed(struct hconn *c);
/* Frees what c holds and detaches it from its stream. Idempotent. */
void http__conn_release(struct hconn *c);
/* LWS_CALLBACK_HTTP_WRITEABLE: writes the next piece of c's reply. -1 closes the connection. */
int http__on_writable(struct hconn *c);
/* Writes the interim "HTTP/1.1 100 Continue" (lws 4.1 never answers Expect itself). */
void http__write_continue(struct hconn *c);
/* Replies: the status and body are set and writing starts. reply_ready sends c->out as is
 * (empty for 202/200 without a body); reply_error a JSON-RPC error body; reply_json the given
 * JSON (copied); reply_sse attaches c to st and streams its events after from_seq, with a
 * priming event first when prime is set. */
void http__reply_ready(struct hconn *c, int status);
/* Plain (not SSE) replies decided but not yet fully written: a drain waits for them. */
size_t http__replies_writing(void);
void http__reply_error(struct hconn *c, int status, int code, const char *message);
void http__reply_json(struct hconn *c, const char *json, size_t len);
/* An OAuth/RFC 6750-style error body {"error": error, "error_description": description};
 * the connection closes after it (an unauthenticated peer gets no keep-alive). */
void http__reply_oauth_error(struct hconn *c, int status, const char *error,
                             const char *description);
void http__reply_sse(struct hconn *c, struct hstream *st, uint64_t from_seq, int prime);
/* The reply to a request answered later (a 2026 POST): nothing is written until st's first
 * message; when that is the answer alone, it goes as one JSON body (its HTTP status from
 * answer_status(text, len), the caller's rule), else as SSE from that message on. A request
 * still waiting after DEFER_SSE_MS starts its SSE stream, so keepalive comments can flow. */
#define DEFER_SSE_MS 15000
void http__reply_deferred(struct hconn *c, struct hstream *st,
                          int (*answer_status)(const char *text, size_t len));

/* ---- serve_http.c: what both transports' POSTs share ---------------------------------------- */

/* A POST body's headers, before the body is read: JSON, a decimal Content-Length (no chunked
 * body), not empty when need_body, at most CODEMCP_HTTP_MAX_BODY; Expect: 100-continue is
 * answered. 1, or 0 after replying with the error. */
int http__post_body_ok(struct hconn *c, int need_body);

/* ---- http_modern.c: the 2026-07-28 era (session-less POSTs) ------------------------------- */

/* Copies the routing headers (Mcp-Method, Mcp-Name) into c, trimmed; in LWS_CALLBACK_HTTP. */
void http__modern_headers(struct hconn *c);
/* 1 when a POST (msg borrowed) belongs to the 2026 era: no Mcp-Session-Id, and the body's
 * `_meta` or the MCP-Protocol-Version header names a version that is not a 2025 one. */
int http__modern_wanted(struct hconn *c, json_t *msg);
/* A GET or DELETE without Mcp-Session-Id from a client announcing a version that is not a
 * 2025 one: answered 405 (the 2026-07-28 era has no GET stream and no sessions; its
 * streamable-http.mdx, "Backward Compatibility"). 1 when answered, else 0. */
int http__modern_refuse_method(struct hconn *c);
/* Serves a 2026 POST: header and envelope checks, then one transient mcp_session for the
 * request (see http_modern.c); JSON when answered at once, else SSE. `principal` limits. */
void http__modern_post(struct hconn *c, json_t *msg, long max_per_principal);
/* serve_http's tick for the transient sessions' streams; and ending them all at shutdown. */
void http__modern_tick(int keepalive);
void http__modern_close_all(void);
/* 2026 requests answered whose answer is still being written (a subscription never is). */
size_t http__modern_writing(void);
/* The legacy /sse transport's keep-alive interval (from the settings). */
void http__sse_configure(long keepalive_ms);

/* ---- http_fleet.c: one replica of a fleet (health, drain, lost sessions) ------------------ */

/* 404 -32001 for a session id that names no session here, saying what was lost when the id
 * is a real one of another replica or of this replica's previous run; start_over tells the
 * client what to do ("initialize a new session"). */
void http__reply_session_lost(struct hconn *c, const char *start_over);
/* GET /healthz and /readyz (health.h): 1 when uri is one of them and it was answered. */
int http__health_request(struct hconn *c, const char *uri);
/* During a drain: refuses a message (borrowed) that would start something (a new session
 * when starts_session, else a request) — 404 on an existing 2025 session, 503 otherwise. 1
 * when refused (answered). */
int http__drain_refused(struct hconn *c, json_t *msg, int starts_session);
/* 503 with Retry-After: this replica is shutting down (draining, or closing). */
void http__reply_shutting_down(struct hconn *c);

/* ---- http_addr.c: addresses and allow-lists --------------------------------------------- */

int http__is_loopback_name(const char *h);
/* Splits "name[:port]" or "[v6][:port]" into a lowercase name without brackets and the port
 * ("" when absent); a bare IPv6 address is all name. -1 when malformed. */
int http__split_authority(const char *a, char *name, size_t n, char *port, size_t pn);
/* Host header allowed: loopback names with any port, or an entry of hosts ("name[:port]"). */
int http__host_allowed(const char *host, char **hosts, size_t n_hosts, int any_host);
/* Origin allowed: a loopback origin, or one of origins (trailing slashes ignored). */
int http__origin_allowed(const char *origin, char **origins, size_t n_origins);
/* The comma-separated list in the environment variable env, trimmed (caller frees with
 * http__free_list). */
char **http__split_list(const char *list, size_t *n);
void http__free_list(char **l, size_t n);
/* "HOST:PORT", "[V6]:PORT", ":PORT", "PORT" or "HOST" into host / *port. 0 or -1. */
int http__parse_bind(const char *s, char *host, size_t n, int *port);
/* Binds once to turn a failure into a message on stderr naming the port. 0 or -1. */
int http__probe_bind(const char *ip, int v6, int port);

#endif
