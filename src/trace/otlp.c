/* otlp — one batch of spans as an OTLP ExportTraceServiceRequest, in protobuf (the
 * opentelemetry-proto messages collector/trace/v1, trace/v1, common/v1, resource/v1, written
 * field by field: varints, fixed64 and length-delimited fields are all it needs) or in
 * OTLP/JSON (lowerCamelCase names, ids as hex, 64-bit integers as strings, enums as numbers).
 * Pure functions, run on the export thread. A protobuf request is sized first and then
 * written into one scratch block of exactly that size, appended to the output once. */
#include "json_escape.h"
#include "trace_int.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCOPE_NAME   "codemcp"
#define SERVICE_NAME "codemcp"
#define WIRE_VARINT  0
#define WIRE_FIXED64 1
#define WIRE_LEN     2
#define WIRE_FIXED32 5

/* ---- protobuf ---------------------------------------------------------------------------- */

/* Where encoded bytes go: written at p (room for them reserved beforehand), or only counted
 * (p NULL), so that one function per message both sizes it (for its length prefix) and writes
 * it, and the request is written once, front to back, into one block of its exact size: no
 * nested buffers and no per-field append. */
struct pbw {
    uint8_t *p;
    size_t n;
};

static void pb_raw(struct pbw *w, const void *p, size_t n)
{
    if (w->p) {
        memcpy(w->p, p, n);
        w->p += n;
    }
    w->n += n;
}

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v > 0x7f) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Bytes of a length-delimited field of n bytes (field numbers here are below 16: one byte). */
static size_t field_len(size_t n)
{
    return 1 + varint_len(n) + n;
}

static void pb_varint(struct pbw *w, uint64_t v)
{
    if (!w->p) {
        w->n += varint_len(v);
        return;
    }
    uint8_t *at = w->p;
    while (v > 0x7f) {
        *at++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *at++ = (uint8_t)v;
    w->n += (size_t)(at - w->p);
    w->p = at;
}

static void pb_tag(struct pbw *w, unsigned field, unsigned wire)
{
    pb_varint(w, (uint64_t)field << 3 | wire);
}

/* The head of a length-delimited field of n bytes; its bytes follow. */
static void pb_len(struct pbw *w, unsigned field, size_t n)
{
    pb_tag(w, field, WIRE_LEN);
    pb_varint(w, n);
}

static void pb_bytes(struct pbw *w, unsigned field, const void *p, size_t n)
{
    pb_len(w, field, n);
    pb_raw(w, p, n);
}

static void pb_str(struct pbw *w, unsigned field, const char *s)
{
    pb_bytes(w, field, s, strlen(s));
}

static void pb_fixed(struct pbw *w, unsigned field, uint64_t v, unsigned wire)
{
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(v >> (8 * i));
    pb_tag(w, field, wire);
    pb_raw(w, le, wire == WIRE_FIXED64 ? 8 : 4);
}

/* KeyValue{key=1, value=AnyValue{string_value=1 | int_value=3}} as field `field`. */
static void pb_attr(struct pbw *w, unsigned field, const char *key, const char *str, size_t sl,
                    int64_t num)
{
    size_t kl = strlen(key);
    size_t any = str ? field_len(sl) : 1 + varint_len((uint64_t)num);
    pb_len(w, field, field_len(kl) + field_len(any));
    pb_bytes(w, 1, key, kl);
    pb_len(w, 2, any);
    if (str) {
        pb_bytes(w, 1, str, sl);
    } else {
        pb_tag(w, 3, WIRE_VARINT);
        pb_varint(w, (uint64_t)num);
    }
}

/* Span's fields (trace/v1/trace.proto). */
static void pb_span(struct pbw *w, const struct trace_span *s)
{
    static const uint8_t zero[8];
    pb_bytes(w, 1, s->trace_id, 16);
    pb_bytes(w, 2, s->span_id, 8);
    if (s->tracestate)
        pb_str(w, 3, s->tracestate);
    if (memcmp(s->parent_id, zero, 8))
        pb_bytes(w, 4, s->parent_id, 8);
    pb_bytes(w, 5, s->name, s->name_len);
    pb_tag(w, 6, WIRE_VARINT);
    pb_varint(w, (uint64_t)s->kind);
    pb_fixed(w, 7, s->start_ns, WIRE_FIXED64);
    pb_fixed(w, 8, s->end_ns, WIRE_FIXED64);
    for (int i = 0; i < s->n_attrs; i++)
        pb_attr(w, 9, s->attrs[i].key, s->attrs[i].str, s->attrs[i].len, s->attrs[i].num);
    if (s->dropped_attrs) {
        pb_tag(w, 10, WIRE_VARINT);
        pb_varint(w, s->dropped_attrs);
    }
    if (s->failed) { /* Status{message=2, code=3 (STATUS_CODE_ERROR = 2)} */
        size_t ml = s->status_msg ? strlen(s->status_msg) : 0;
        pb_len(w, 15, (ml ? field_len(ml) : 0) + 2);
        if (ml)
            pb_bytes(w, 2, s->status_msg, ml);
        pb_tag(w, 3, WIRE_VARINT);
        pb_varint(w, 2);
    }
    pb_fixed(w, 16, s->flags, WIRE_FIXED32); /* W3C trace flags in the low byte */
}

static size_t span_len(const struct trace_span *s)
{
    struct pbw count = {NULL, 0};
    pb_span(&count, s);
    return count.n;
}

/* Resource{attributes=1}: the service. */
static void pb_resource(struct pbw *w)
{
    pb_attr(w, 1, "service.name", SERVICE_NAME, strlen(SERVICE_NAME), 0);
    pb_attr(w, 1, "service.version", CODEMCP_VERSION, strlen(CODEMCP_VERSION), 0);
}

void otlp_encode_proto(const struct trace_span *list, struct buf *out)
{
    struct pbw count = {NULL, 0};
    size_t spans = 0, n = 0, i = 0;
    for (const struct trace_span *s = list; s; s = s->next)
        n++;
    /* each span's length, measured once: a span is walked once to size it, once to write it */
    size_t *lens = xmalloc((n ? n : 1) * sizeof(*lens));
    for (const struct trace_span *s = list; s; s = s->next, i++) {
        lens[i] = span_len(s);
        spans += field_len(lens[i]);
    }
    size_t scope = field_len(strlen(SCOPE_NAME)) + field_len(strlen(CODEMCP_VERSION));
    size_t scope_spans = field_len(scope) + spans;
    pb_resource(&count);
    size_t resource = count.n;
    /* ExportTraceServiceRequest{resource_spans=1 ResourceSpans{resource=1, scope_spans=2
     * ScopeSpans{scope=1 InstrumentationScope{name=1, version=2}, spans=2}}} */
    size_t resource_spans = field_len(resource) + field_len(scope_spans);
    size_t total = field_len(resource_spans);
    uint8_t *req = xmalloc(total);
    struct pbw w = {req, 0};
    pb_len(&w, 1, resource_spans);
    pb_len(&w, 1, resource);
    pb_resource(&w);
    pb_len(&w, 2, scope_spans);
    pb_len(&w, 1, scope);
    pb_str(&w, 1, SCOPE_NAME);
    pb_str(&w, 2, CODEMCP_VERSION);
    i = 0;
    for (const struct trace_span *s = list; s; s = s->next, i++) {
        pb_len(&w, 2, lens[i]);
        pb_span(&w, s);
    }
    free(lens);
    if (w.n != total)
        abort(); /* a sizing function disagrees with its writer: a bug, never input */
    buf_append(out, req, total);
    free(req);
}

/* ---- OTLP/JSON --------------------------------------------------------------------------- */

static void js_str(struct buf *b, const char *s)
{
    static const char hexd[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s, *e = p + strlen(s);
    buf_append(b, "\"", 1);
    while (p < e) {
        const unsigned char *q = json_skip_plain(p, e, 0);
        while (q < e && *q >= 0x20 && *q != '"' && *q != '\\')
            q++;
        buf_append(b, p, (size_t)(q - p));
        if (q < e) {
            char esc[6];
            buf_append(b, esc, json_escape_byte(*q, hexd, esc));
            q++;
        }
        p = q;
    }
    buf_append(b, "\"", 1);
}

static void js_hex(struct buf *b, const uint8_t *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    buf_append(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        char two[2] = {digits[p[i] >> 4], digits[p[i] & 15]};
        buf_append(b, two, 2);
    }
    buf_append(b, "\"", 1);
}

static void js_attr(struct buf *b, const char *key, const char *str, int64_t num)
{
    buf_appends(b, "{\"key\":");
    js_str(b, key);
    if (str) {
        buf_appends(b, ",\"value\":{\"stringValue\":");
        js_str(b, str);
        buf_appends(b, "}}");
    } else {
        buf_printf(b, ",\"value\":{\"intValue\":\"%lld\"}}", (long long)num);
    }
}

static void js_span(struct buf *b, const struct trace_span *s)
{
    buf_appends(b, "{\"traceId\":");
    js_hex(b, s->trace_id, 16);
    buf_appends(b, ",\"spanId\":");
    js_hex(b, s->span_id, 8);
    if (s->tracestate) {
        buf_appends(b, ",\"traceState\":");
        js_str(b, s->tracestate);
    }
    static const uint8_t zero[8];
    if (memcmp(s->parent_id, zero, 8)) {
        buf_appends(b, ",\"parentSpanId\":");
        js_hex(b, s->parent_id, 8);
    }
    buf_appends(b, ",\"name\":");
    js_str(b, s->name);
    buf_printf(b, ",\"kind\":%d,\"startTimeUnixNano\":\"%llu\",\"endTimeUnixNano\":\"%llu\"",
               (int)s->kind, (unsigned long long)s->start_ns, (unsigned long long)s->end_ns);
    buf_appends(b, ",\"attributes\":[");
    for (int i = 0; i < s->n_attrs; i++) {
        if (i)
            buf_append(b, ",", 1);
        js_attr(b, s->attrs[i].key, s->attrs[i].str, s->attrs[i].num);
    }
    buf_append(b, "]", 1);
    if (s->dropped_attrs)
        buf_printf(b, ",\"droppedAttributesCount\":%u", s->dropped_attrs);
    if (s->failed) {
        buf_appends(b, ",\"status\":{\"code\":2");
        if (s->status_msg) {
            buf_appends(b, ",\"message\":");
            js_str(b, s->status_msg);
        }
        buf_append(b, "}", 1);
    }
    buf_printf(b, ",\"flags\":%u}", (unsigned)s->flags);
}

void otlp_encode_json(const struct trace_span *list, struct buf *out)
{
    buf_appends(out, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
    js_attr(out, "service.name", SERVICE_NAME, 0);
    buf_append(out, ",", 1);
    js_attr(out, "service.version", CODEMCP_VERSION, 0);
    buf_appends(out, "]},\"scopeSpans\":[{\"scope\":{\"name\":");
    js_str(out, SCOPE_NAME);
    buf_appends(out, ",\"version\":");
    js_str(out, CODEMCP_VERSION);
    buf_appends(out, "},\"spans\":[");
    for (const struct trace_span *s = list; s; s = s->next) {
        js_span(out, s);
        if (s->next)
            buf_append(out, ",", 1);
    }
    buf_appends(out, "]}]}]}");
}
