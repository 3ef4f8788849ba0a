/* trace — spans and W3C trace context; see trace.h. Loop thread only: the export thread
 * (trace_export.c) only ever sees spans already ended and handed over.
 *
 * IDs are drawn from getrandom(2) through a buffer refilled 4 KiB at a time (one system call
 * per ~170 spans); a span costs one allocation plus its copied strings. */
#include "trace.h"
#include "log.h"
#include "settings.h"
#include "trace_int.h"
#include "util.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static struct trace_remote http_ctx; /* the HTTP request being handled (trace_http_context) */
static int propagate;                /* CODEMCP_OTLP_PROPAGATE */

static uint8_t pool[4096];
static size_t pool_left;

/* n random bytes, never all zero (W3C: an all-zero id is invalid). */
static void random_id(uint8_t *out, size_t n)
{
    do {
        if (pool_left < n) {
            size_t got = 0;
            while (got < sizeof(pool)) {
                ssize_t r = getrandom(pool + got, sizeof(pool) - got, 0);
                if (r > 0)
                    got += (size_t)r;
                else if (r < 0 && errno != EINTR) {
                    log_error("trace", "getrandom: %s", strerror(errno));
                    abort(); /* no kernel this runs on lacks it */
                }
            }
            pool_left = sizeof(pool);
        }
        memcpy(out, pool + sizeof(pool) - pool_left, n);
        pool_left -= n;
    } while (!memcmp(out, (const uint8_t[16]){0}, n));
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* n bytes from 2n lower-case hex digits at s; -1 on anything else. */
static int unhex(const char *s, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(s[2 * i]), lo = hi < 0 ? -1 : hexval(s[2 * i + 1]);
        if (lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

static int all_zero(const uint8_t *p, size_t n)
{
    while (n--)
        if (*p++)
            return 0;
    return 1;
}

/* A tracestate kept as it came: printable ASCII, none of '"' and '\\' (so it goes into JSON
 * and headers unescaped), at most TRACE_STATE_MAX characters. */
static int plain_state(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (n >= TRACE_STATE_MAX || s[n] < 0x20 || s[n] > 0x7e || s[n] == '"' || s[n] == '\\')
            return 0;
    return 1;
}

int trace_remote_parse(struct trace_remote *out, const char *traceparent, const char *tracestate)
{
    memset(out, 0, sizeof(*out));
    const char *t = traceparent;
    /* version "-" trace-id "-" parent-id "-" flags; a later version may append "-..." */
    if (!t || strlen(t) < TRACE_PARENT_LEN || t[2] != '-' || t[35] != '-' || t[52] != '-')
        return -1;
    if (t[55] && (memcmp(t, "00", 2) == 0 || t[55] != '-'))
        return -1; /* version 00 is exactly this long */
    uint8_t ver;
    if (unhex(t, &ver, 1) < 0 || ver == 0xff || unhex(t + 3, out->trace_id, 16) < 0 ||
        unhex(t + 36, out->span_id, 8) < 0 || unhex(t + 53, &out->flags, 1) < 0 ||
        all_zero(out->trace_id, 16) || all_zero(out->span_id, 8)) {
        memset(out, 0, sizeof(*out));
        return -1;
    }
    if (tracestate && plain_state(tracestate))
        strcpy(out->tracestate, tracestate);
    out->valid = 1;
    return 0;
}

int trace_on(void)
{
    return tx__running();
}

void trace_http_context(const char *traceparent, const char *tracestate)
{
    if (!tx__running())
        return;
    trace_remote_parse(&http_ctx, traceparent, tracestate);
}

void trace_request_parent(struct trace_remote *out, const char *traceparent, const char *tracestate)
{
    if (trace_remote_parse(out, traceparent, tracestate) < 0)
        *out = http_ctx;
}

/* A copy of str, then " " and tail when tail is not NULL, owned by s: inside it while there
 * is room, else its own allocation. Its length goes to *len (NULL: not wanted), so that the
 * encoder never measures it again. */
static char *keep_join(struct trace_span *s, const char *str, const char *tail, size_t *len)
{
    size_t n = strlen(str), t = tail ? strlen(tail) + 1 : 0;
    char *at = s->text + s->text_used;
    if (n + t + 1 > sizeof(s->text) - s->text_used)
        at = xmalloc(n + t + 1);
    else
        s->text_used += n + t + 1;
    memcpy(at, str, n);
    if (tail) {
        at[n] = ' ';
        memcpy(at + n + 1, tail, t - 1);
    }
    at[n + t] = '\0';
    if (len)
        *len = n + t;
    return at;
}

static char *keep(struct trace_span *s, const char *str)
{
    return keep_join(s, str, NULL, NULL);
}

/* Frees p unless keep put it inside s. */
static void unkeep(struct trace_span *s, char *p)
{
    if (p && (p < s->text || p >= s->text + sizeof(s->text)))
        free(p);
}

struct trace_span *trace_start_on(const char *op, const char *target, enum trace_kind kind,
                                  const struct trace_span *parent,
                                  const struct trace_remote *remote)
{
    if (!tx__running())
        return NULL;
    struct trace_span *s = xmalloc(sizeof(*s));
    memset(s, 0, offsetof(struct trace_span, text));
    s->name = keep_join(s, op, target, &s->name_len);
    s->kind = kind;
    random_id(s->span_id, 8);
    if (parent) {
        memcpy(s->trace_id, parent->trace_id, 16);
        memcpy(s->parent_id, parent->span_id, 8);
        s->flags = parent->flags;
        s->tracestate = parent->tracestate ? keep(s, parent->tracestate) : NULL;
    } else if (remote && remote->valid) {
        memcpy(s->trace_id, remote->trace_id, 16);
        memcpy(s->parent_id, remote->span_id, 8);
        s->flags = remote->flags;
        s->tracestate = remote->tracestate[0] ? keep(s, remote->tracestate) : NULL;
    } else {
        random_id(s->trace_id, 16);
        s->flags = 1; /* a new trace is sampled */
    }
    s->start_ns = now_ns();
    return s;
}

struct trace_span *trace_start(const char *name, enum trace_kind kind,
                               const struct trace_span *parent, const struct trace_remote *remote)
{
    return trace_start_on(name, NULL, kind, parent, remote);
}

static struct trace_attr *attr_slot(struct trace_span *s)
{
    if (s->n_attrs == TRACE_MAX_ATTRS) {
        s->dropped_attrs++;
        return NULL;
    }
    return &s->attrs[s->n_attrs++];
}

void trace_attr_str(struct trace_span *s, const char *key, const char *value)
{
    struct trace_attr *a = s && value ? attr_slot(s) : NULL;
    if (a) {
        a->key = key;
        a->str = keep_join(s, value, NULL, &a->len);
    }
}

void trace_attr_int(struct trace_span *s, const char *key, int64_t value)
{
    struct trace_attr *a = s ? attr_slot(s) : NULL;
    if (a) {
        a->key = key;
        a->str = NULL;
        a->num = value;
    }
}

void trace_fail(struct trace_span *s, const char *error_type, const char *why)
{
    if (!s || s->failed)
        return;
    s->failed = 1;
    if (why)
        s->status_msg = keep(s, why);
    trace_attr_str(s, "error.type", error_type);
}

void tr__span_free(struct trace_span *s)
{
    for (int i = 0; i < s->n_attrs; i++)
        unkeep(s, s->attrs[i].str);
    unkeep(s, s->tracestate);
    unkeep(s, s->name);
    unkeep(s, s->status_msg);
    free(s);
}

void trace_end(struct trace_span *s)
{
    if (!s)
        return;
    s->end_ns = now_ns();
    if (!(s->flags & 1)) { /* the client's trace is not sampled: passed on, never exported */
        tr__span_free(s);
        return;
    }
    tx__push(s);
}

static void hex(char *out, const uint8_t *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
}

int trace_traceparent(const struct trace_span *s, char out[TRACE_PARENT_LEN + 1])
{
    if (!s || !propagate)
        return -1;
    memcpy(out, "00-", 3);
    hex(out + 3, s->trace_id, 16);
    out[35] = '-';
    hex(out + 36, s->span_id, 8);
    out[52] = '-';
    hex(out + 53, &s->flags, 1);
    out[55] = '\0';
    return 0;
}

const char *trace_tracestate(const struct trace_span *s)
{
    return s && s->tracestate && propagate ? s->tracestate : "";
}

int trace_init(const struct settings *s)
{
    if (!s->otlp_endpoint || !*s->otlp_endpoint)
        return 0;
    struct trace_config cfg = {s->otlp_endpoint,    s->otlp_protocol, s->otlp_queue_spans,
                               s->otlp_batch_spans, s->otlp_delay_ms, s->otlp_timeout_ms};
    propagate = s->otlp_propagate > 0;
    return tx__start(&cfg);
}

void trace_shutdown(void)
{
    tx__stop();
}
