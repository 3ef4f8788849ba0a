/* trace_int — what trace.c, trace_export.c and otlp.c share: the span itself and the export
 * queue. Not for other modules (they use trace.h). */
#ifndef CODEMCP_TRACE_INT_H
#define CODEMCP_TRACE_INT_H

#include "trace.h"
#include "util.h"

#include <stdint.h>

#define TRACE_MAX_ATTRS 12

/* The exporter's settings (from CODEMCP_OTLP_*). */
struct trace_config {
    const char *endpoint; /* http(s)://host:port; spans go to <endpoint>/v1/traces */
    const char *protocol; /* "http/protobuf" (NULL: that) or "http/json" */
    long queue_spans;     /* finished spans waiting for export; more are dropped */
    long batch_spans;     /* spans per export request */
    long delay_ms;        /* the longest a span waits before its batch is sent */
    long timeout_ms;      /* one export request, connection included */
};

#define TRACE_TEXT 384 /* bytes of a span's strings kept inside it (more: allocated) */

struct trace_attr {
    const char *key; /* a string literal */
    char *str;       /* the span's (tr__keep); NULL: the value is num */
    size_t len;      /* strlen(str), measured once when it was copied */
    int64_t num;
};

struct trace_span {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t parent_id[8]; /* all zero: a root span */
    uint8_t flags;        /* bit 0: sampled (exported) */
    char *tracestate;     /* the span's (tr__keep); NULL: none */
    char *name;           /* the span's (tr__keep) */
    size_t name_len;
    enum trace_kind kind;
    uint64_t start_ns, end_ns; /* UNIX epoch nanoseconds */
    int failed;
    char *status_msg; /* the span's (tr__keep); NULL: none */
    int n_attrs;
    unsigned dropped_attrs;
    struct trace_attr attrs[TRACE_MAX_ATTRS];
    struct trace_span *next; /* in the export queue or a batch */
    size_t text_used;
    char text[TRACE_TEXT]; /* its strings, one allocation with it while they fit */
};

void tr__span_free(struct trace_span *s);

/* trace_export.c: starts the thread (0 / -1); queues a finished span (taken; dropped and
 * counted when the queue is full); stops. Loop thread. */
int tx__start(const struct trace_config *cfg);
void tx__push(struct trace_span *s);
void tx__stop(void);
int tx__running(void);

/* otlp.c: an ExportTraceServiceRequest holding the spans of list (linked by next), appended
 * to out as protobuf or as OTLP/JSON. Pure functions. */
void otlp_encode_proto(const struct trace_span *list, struct buf *out);
void otlp_encode_json(const struct trace_span *list, struct buf *out);

#endif
