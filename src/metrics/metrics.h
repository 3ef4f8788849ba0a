/* metrics — the gateway's Prometheus metrics: counters, gauges and histograms kept in plain
 * arrays, and their text exposition (GET /metrics on the HTTP front, `codemcp metrics` through
 * the admin socket).
 *
 * Every mx_* counter function is called on the loop thread only and costs a few additions: no
 * allocation on the call path (a label value gets its slot, and its one copy, the first time
 * it is seen). Label cardinality is bounded: servers (the config's), principals (the
 * operator's) and server/tool pairs (the upstreams' lists) each get a fixed number of slots,
 * and what comes after them is counted under the value "other"; no argument value and no run,
 * session or request id is ever a label. With mx_init(0) (CODEMCP_METRICS=off) every counter
 * call returns at once and nothing is served.
 *
 * This module sits under everything that counts (front, run, upstream, oauth) and includes
 * only common/: what it shows of the others' state (sessions, workers, upstream connections)
 * comes through struct mx_sources, registered by main.c. */
#ifndef CODEMCP_METRICS_H
#define CODEMCP_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* What became of one tool call a program made (codemcp_tool_calls_total's outcome label). */
enum mx_call_outcome {
    MX_CALL_OK,        /* the server answered, not isError */
    MX_CALL_IS_ERROR,  /* the server answered with isError: true */
    MX_CALL_ERROR,     /* transport or upstream error, a result too large, a budget */
    MX_CALL_TIMEOUT,   /* the call's time limit passed */
    MX_CALL_DENIED,    /* refused by policy, mutation rules, a cap, or an inactive run */
    MX_CALL_DRY_RUN,   /* a write answered with a dry-run stub */
    MX_CALL_NOT_FOUND, /* no such enabled tool (server and tool are labelled "unknown") */
    MX_CALL_CANCELLED, /* still in flight when its run ended */
    MX_CALL_N
};

/* Why a program or a request was refused before it ran (codemcp_validation_rejections_total). */
enum mx_reject {
    MX_REJECT_PROGRAM,   /* the pre-flight validator (error_kind "validation") */
    MX_REJECT_SYNTAX,    /* the program does not compile (error_kind "syntax") */
    MX_REJECT_ARGUMENTS, /* execute_python arguments that are not valid */
    MX_REJECT_CALL,      /* a call_tool request from a worker without its required params */
    MX_REJECT_N
};

enum mx_worker_event {
    MX_WORKER_SPAWN,   /* a worker process start began */
    MX_WORKER_CRASH,   /* a worker ended without the gateway asking */
    MX_WORKER_RECYCLE, /* replaced after a run left threads behind */
    MX_WORKER_N
};

enum mx_transport { MX_TRANSPORT_STDIO, MX_TRANSPORT_HTTP, MX_TRANSPORT_N };

/* What is read from other modules when the metrics are rendered (loop thread). Any member may
 * be NULL. upstream_at fills the i-th server's name and state name (borrowed, valid until the
 * function returns) and returns 0, or -1 past the last one. */
struct mx_sources {
    long (*sessions)(void);
    long (*namespaces)(void);
    long (*workers_alive)(void);
    int (*upstream_at)(size_t i, const char **name, const char **state);
    /* Spans handed to the OTLP exporter and spans it dropped (queue full, collector down or
     * failing): counters since start; rendered only when tracing is on (traces_on). */
    int (*traces_on)(void);
    uint64_t (*spans_exported)(void);
    uint64_t (*spans_dropped)(void);
};

/* on: 0 turns every counter call into a return and mx_enabled() false. */
void mx_init(int on);
int mx_enabled(void);
void mx_set_sources(const struct mx_sources *s);
/* Frees the label copies (at exit). */
void mx_free(void);

/* ---- counting (loop thread) ---------------------------------------------------------------- */

/* A tool call's outcome. server and tool: as the worker named them; with MX_CALL_NOT_FOUND they
 * are not used (a program can name anything). */
void mx_tool_call(const char *server, const char *tool, enum mx_call_outcome outcome);
/* A time for mx_upstream_latency (now; 0 with metrics off: no clock is read). */
int64_t mx_clock(void);
/* One upstream tools/call answered (or failed); sent: mx_clock() when it was sent, now:
 * now_us() when it was answered (the caller reads the clock for its own use too). */
void mx_upstream_latency(const char *server, int64_t sent, int64_t now);
void mx_run_started(const char *principal);
/* A run ended: kind is "ok" or its envelope's error_kind (exception, tool_error, timeout,
 * cancelled, validation, syntax, worker, ...; anything else counts as "error"); ms its wall
 * time. validation and syntax also count a rejection. */
void mx_run_finished(const char *principal, const char *kind, int64_t ms);
void mx_rejected(enum mx_reject kind);
void mx_worker(enum mx_worker_event e);
/* Bytes of MCP messages read from (in) and written to (out) clients. */
void mx_client_bytes(enum mx_transport t, size_t in, size_t out);
/* An HTTP response's status as written on the front. */
void mx_http_status(int status);
/* An OAuth token refresh for a remote upstream ended (ok: a new token was stored). */
void mx_oauth_refresh(int ok);

/* ---- exposition ----------------------------------------------------------------------------- */

/* The content type of the text format, for an HTTP answer. */
#define MX_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
/* Every metric in the Prometheus text exposition format (HELP and TYPE lines, one line per
 * series), as a new string (caller frees); NULL when metrics are off. Cost: O(series). */
char *mx_render(void);

#endif
