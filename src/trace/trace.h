/* trace — OpenTelemetry spans of what the gateway does for a request: the MCP request, its
 * run (and the run's phases), each tool call and each upstream request, exported over OTLP/HTTP
 * (CODEMCP_OTLP_ENDPOINT) by trace_export.c's thread.
 *
 * A span is a heap object made by trace_start and handed over by trace_end; every function
 * takes NULL and does nothing, and trace_start returns NULL while tracing is off, so a caller
 * keeps one pointer and never asks whether tracing is on. Spans are created and ended on the
 * loop thread only; trace_end never waits: it appends to a bounded queue (a full queue drops
 * the span and counts it), and the export thread batches, encodes and posts.
 *
 * Context: a W3C traceparent (and tracestate) from the client, in the request's `_meta`
 * (SEP-414) or in the HTTP request's header, is parsed into a struct trace_remote and becomes
 * the request span's parent; trace_traceparent gives the text passed on to an upstream. A
 * parent that is not sampled (flags bit 0 clear) makes spans that are passed on but never
 * exported. IDs come from getrandom(2). Attributes never hold arguments or results: only
 * names, ids and sizes. */
#ifndef CODEMCP_TRACE_H
#define CODEMCP_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* OTLP's Span.SpanKind values. */
enum trace_kind { TRACE_INTERNAL = 1, TRACE_SERVER = 2, TRACE_CLIENT = 3 };

#define TRACE_STATE_MAX  512 /* W3C: tracestate is at most 512 characters */
#define TRACE_PARENT_LEN 55  /* "00-" 32 hex "-" 16 hex "-" 2 hex */

/* A parent context from outside (the client). valid 0: none. */
struct trace_remote {
    int valid;
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t flags;
    char tracestate[TRACE_STATE_MAX + 1]; /* "" when absent or not well formed */
};

struct trace_span;

struct settings;
/* Starts the export thread when CODEMCP_OTLP_ENDPOINT is set (CODEMCP_OTLP_PROTOCOL,
 * _QUEUE_SPANS, _BATCH_SPANS, _DELAY_MS, _TIMEOUT_MS shape it). 0, or -1 (logged; tracing
 * stays off). Loop thread, at start-up. */
int trace_init(const struct settings *s);
/* Sends what is queued (bounded by the export timeout), stops the thread and logs how many
 * spans were exported and dropped. */
void trace_shutdown(void);
/* How many spans were sent and dropped so far (any thread). */
uint64_t trace_spans_exported(void);
uint64_t trace_spans_dropped(void);

/* Parses a traceparent header value (version 00 form; other versions read by the same
 * prefix, as W3C asks) and a tracestate (kept only when it is printable ASCII without '"' or
 * '\\', at most TRACE_STATE_MAX). Either may be NULL. 0 and out->valid 1, or -1 (out->valid 0). */
int trace_remote_parse(struct trace_remote *out, const char *traceparent, const char *tracestate);

/* A new span named name (copied), child of parent when given, else of remote when valid, else
 * the root of a new trace. NULL while tracing is off. */
struct trace_span *trace_start(const char *name, enum trace_kind kind,
                               const struct trace_span *parent, const struct trace_remote *remote);
/* The same for a span named "op target" (OpenTelemetry's "{method} {target}" names), built
 * in the span without a printf. */
struct trace_span *trace_start_on(const char *op, const char *target, enum trace_kind kind,
                                  const struct trace_span *parent,
                                  const struct trace_remote *remote);
/* Attributes; key must be a string literal (kept as a pointer), value copied. At most
 * TRACE_MAX_ATTRS per span: more are counted as dropped, as OTLP's dropped_attributes_count. */
void trace_attr_str(struct trace_span *s, const char *key, const char *value);
void trace_attr_int(struct trace_span *s, const char *key, int64_t value);
/* Marks the span failed: status ERROR with message why (may be NULL), and error.type. */
void trace_fail(struct trace_span *s, const char *error_type, const char *why);
/* Ends the span now and queues it for export (or drops it, counted). Takes s. */
void trace_end(struct trace_span *s);

/* The context an upstream request is given: the span's as a traceparent value into out
 * (TRACE_PARENT_LEN + 1 bytes); 0, or -1 for NULL and while CODEMCP_OTLP_PROPAGATE is off
 * (the context then stays in the gateway). trace_tracestate: the tracestate it carries on
 * ("" when none, or not passed on). */
int trace_traceparent(const struct trace_span *s, char out[TRACE_PARENT_LEN + 1]);
const char *trace_tracestate(const struct trace_span *s);

/* Whether spans are exported (CODEMCP_OTLP_ENDPOINT set and the exporter running). */
int trace_on(void);

/* The HTTP front's traceparent/tracestate headers of the request being handled, for the spans
 * the MCP layer starts while handling it (_meta wins over them); NULL, NULL clears. */
void trace_http_context(const char *traceparent, const char *tracestate);
/* The parent for an MCP request whose params._meta holds traceparent/tracestate (each may be
 * NULL): those when well formed, else the HTTP front's, else none. */
void trace_request_parent(struct trace_remote *out, const char *traceparent,
                          const char *tracestate);

#endif
