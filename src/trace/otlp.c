/* otlp — one batch of spans as an OTLP ExportTraceServiceRequest, in protobuf (the
 * opentelemetry-proto messages collector/trace/v1, trace/v1, common/v1, resource/v1, written
 * field by field: varints, fixed64 and length-delimited fields are all it needs) or in
 * OTLP/JSON (lowerCamelCase names, ids as hex, 64-bit integers as strings, enums as numbers).
 * Pure functions, run on the export thread; no allocation beyond the output buffers. */
#include "json_escape.h"
#include "trace_int.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

#define SCOPE_NAME   "codemcp"
#define SERVICE_NAME "codemcp"
#define WIRE_VARINT  0
#define WIRE_FIXED64 1
#define WIRE_LEN     2
#define WIRE_FIXED32 5

/* ---- protobuf ---------------------------------------------------------------------------- */

static void pb_varint(struct buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    do {
        tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    buf_append(b, tmp, n);
}

static void pb_tag(struct buf *b, unsigned field, unsigned wire)
{
    pb_varint(b, (uint64_t)field << 3 | wire);
}

static void pb_bytes(struct buf *b, unsigned field, const void *p, size_t n)
{
    pb_tag(b, field, WIRE_LEN);
    pb_varint(b, n);
    if (n)
        buf_append(b, p, n);
}

static void pb_str(struct buf *b, unsigned field, const char *s)
{
    pb_bytes(b, field, s, strlen(s));
}

static void pb_fixed(struct buf *b, unsigned field, uint64_t v, unsigned wire)
{
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(v >> (8 * i));
    pb_tag(b, field, wire);
    buf_append(b, le, wire == WIRE_FIXED64 ? 8 : 4);
}

/* A sub-message already encoded in inner, as field `field` of b; inner is emptied. */
static void pb_sub(struct buf *b, unsigned field, struct buf *inner)
{
    pb_bytes(b, field, inner->data, inner->len);
    buf_reset(inner);
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

/* KeyValue{key=1, value=AnyValue{string_value=1 | int_value=3}} as field `field` of b, its
 * sizes counted first so that nothing is encoded twice. */
static void pb_attr(struct buf *b, unsigned field, const char *key, const char *str, int64_t num)
{
    size_t kl = strlen(key), sl = str ? strlen(str) : 0;
    size_t any = str ? 1 + varint_len(sl) + sl : 1 + varint_len((uint64_t)num);
    pb_tag(b, field, WIRE_LEN);
    pb_varint(b, 1 + varint_len(kl) + kl + 1 + varint_len(any) + any);
    pb_str(b, 1, key);
    pb_tag(b, 2, WIRE_LEN);
    pb_varint(b, any);
    if (str) {
        pb_bytes(b, 1, str, sl);
    } else {
        pb_tag(b, 3, WIRE_VARINT);
        pb_varint(b, (uint64_t)num);
    }
}

static void pb_span(struct buf *b, const struct trace_span *s, struct buf *tmp)
{
    pb_bytes(b, 1, s->trace_id, 16);
    pb_bytes(b, 2, s->span_id, 8);
    if (s->tracestate)
        pb_str(b, 3, s->tracestate);
    static const uint8_t zero[8];
    if (memcmp(s->parent_id, zero, 8))
        pb_bytes(b, 4, s->parent_id, 8);
    pb_str(b, 5, s->name);
    pb_tag(b, 6, WIRE_VARINT);
    pb_varint(b, (uint64_t)s->kind);
    pb_fixed(b, 7, s->start_ns, WIRE_FIXED64);
    pb_fixed(b, 8, s->end_ns, WIRE_FIXED64);
    for (int i = 0; i < s->n_attrs; i++)
        pb_attr(b, 9, s->attrs[i].key, s->attrs[i].str, s->attrs[i].num);
    if (s->dropped_attrs) {
        pb_tag(b, 10, WIRE_VARINT);
        pb_varint(b, s->dropped_attrs);
    }
    if (s->failed) { /* Status{message=2, code=3 (STATUS_CODE_ERROR = 2)} */
        if (s->status_msg)
            pb_str(tmp, 2, s->status_msg);
        pb_tag(tmp, 3, WIRE_VARINT);
        pb_varint(tmp, 2);
        pb_sub(b, 15, tmp);
    }
    pb_fixed(b, 16, s->flags, WIRE_FIXED32); /* W3C trace flags in the low byte */
}

void otlp_encode_proto(const struct trace_span *list, struct buf *out)
{
    struct buf spans = {0}, one = {0}, tmp = {0}, res = {0}, rs = {0};
    /* ScopeSpans{scope=1 InstrumentationScope{name=1, version=2}, spans=2} */
    pb_str(&tmp, 1, SCOPE_NAME);
    pb_str(&tmp, 2, CODEMCP_VERSION);
    pb_sub(&spans, 1, &tmp);
    for (const struct trace_span *s = list; s; s = s->next) {
        pb_span(&one, s, &tmp);
        pb_sub(&spans, 2, &one);
    }
    /* ResourceSpans{resource=1 Resource{attributes=1}, scope_spans=2} */
    pb_attr(&res, 1, "service.name", SERVICE_NAME, 0);
    pb_attr(&res, 1, "service.version", CODEMCP_VERSION, 0);
    pb_sub(&rs, 1, &res);
    pb_sub(&rs, 2, &spans);
    /* ExportTraceServiceRequest{resource_spans=1} */
    pb_sub(out, 1, &rs);
    buf_free(&spans);
    buf_free(&one);
    buf_free(&tmp);
    buf_free(&res);
    buf_free(&rs);
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
