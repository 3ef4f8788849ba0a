/* audit — see audit.h. Builds each line as a JSON object, encodes it with jf_dumps (big
 * integers as digits, control characters escaped) and then escapes every byte above 0x7F as
 * \uXXXX: a line is plain ASCII, so neither a newline, nor an ANSI escape, nor a Unicode line
 * or paragraph separator, nor a C1 control that some terminals act on can come out of a
 * string a program or an upstream chose. audit_sink.c takes the line from there. */
#include "audit.h"
#include "audit_sink.h"
#include "jsonfast.h"
#include "jsonscan.h"
#include "redact.h"
#include "util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Argument keys listed, at most (a program may send thousands), each cut to AUDIT_KEY_BYTES:
 * a program must not be able to make one line megabytes long. */
#define AUDIT_MAX_KEYS  64
#define AUDIT_KEY_BYTES 128
/* With CODEMCP_AUDIT_ARGS: each string value cut to this many characters, and the arguments
 * left out (arg_bytes says how many there were) when their redacted text is longer. */
#define AUDIT_ARG_STR   256
#define AUDIT_ARGS_TEXT (16 << 10)
/* Names cut to this many bytes. */
#define AUDIT_NAME_BYTES 256
/* Messages (a refusal's reason, a validator's error) cut to this many bytes. */
#define AUDIT_MESSAGE 1000

static int enabled, with_args;

int audit_init(const char *dest, int args, char *err, size_t errlen)
{
    if (!dest || !*dest)
        return 0;
    if (audit_sink_open(dest, err, errlen) < 0)
        return -1;
    enabled = 1;
    with_args = args;
    return 0;
}

int audit_enabled(void)
{
    return enabled;
}

void audit_reopen(void)
{
    if (enabled)
        audit_sink_reopen();
}

void audit_close(void)
{
    if (enabled)
        audit_sink_close();
    enabled = 0;
}

/* A JSON string of s[0..n): bytes that are not UTF-8 become U+FFFD (json_stringn refuses
 * them). */
static json_t *text_n(const char *s, size_t n)
{
    json_t *v = json_stringn(s, n);
    if (v)
        return v;
    struct buf b = {0};
    const unsigned char *p = (const unsigned char *)s, *e = p + n;
    while (p < e) {
        size_t k = *p < 0x80 ? 1 : jf_utf8_seq(p, e);
        if (k)
            buf_append(&b, p, k);
        else
            buf_appends(&b, "\xEF\xBF\xBD");
        p += k ? k : 1;
    }
    v = json_stringn(b.data ? b.data : "", b.len);
    buf_free(&b);
    return v;
}

/* A name (server, tool, run, ...), cut to AUDIT_NAME_BYTES: a program chooses the ones it
 * sends, and a megabyte tool name must not make a megabyte line. */
static json_t *text(const char *s)
{
    return s ? text_n(s, strnlen(s, AUDIT_NAME_BYTES)) : json_null();
}

/* A message, redacted and cut to AUDIT_MESSAGE bytes. */
static json_t *message(const char *s)
{
    char *r = redact_text(s, strnlen(s, AUDIT_MESSAGE));
    json_t *v = text_n(r, strlen(r));
    free(r);
    return v;
}

/* "2026-07-28T12:34:56.789Z" */
static json_t *timestamp(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char out[64];
    snprintf(out, sizeof(out), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
    return json_string(out);
}

static json_t *line_head(const char *event, const char *principal, uint64_t session,
                         const char *run)
{
    json_t *o = json_object();
    json_object_set_new(o, "time", timestamp());
    json_object_set_new(o, "event", json_string(event));
    /* none: a call for a run that is not active (whose it is, is not known) */
    json_object_set_new(o, "principal", principal && *principal ? text(principal) : json_null());
    json_object_set_new(o, "session", json_integer((json_int_t)session));
    json_object_set_new(o, "run", text(run));
    return o;
}

/* The first AUDIT_MAX_KEYS of m[0..n) into keys, each cut to AUDIT_KEY_BYTES and redacted
 * as free text is (a key can hold a credential as well as a value can). */
static void add_keys(json_t *keys, const struct js_member *m, int n)
{
    for (int i = 0; i < n && i < AUDIT_MAX_KEYS; i++) {
        char *r = redact_text(m[i].key, m[i].klen < AUDIT_KEY_BYTES ? m[i].klen : AUDIT_KEY_BYTES);
        json_array_append_new(keys, text(r));
        free(r);
    }
}

/* The top-level keys of args (JSON text as jf_dumps writes it) as "arg_keys"; how many more
 * there were as "arg_keys_more". */
static void put_keys(json_t *o, const char *args, size_t len)
{
    json_t *keys = json_array();
    struct js_member m[AUDIT_MAX_KEYS];
    /* js_members reads keys as written, which holds only when none has an escape */
    int n = memchr(args, '\\', len) ? -1 : js_members(args, len, m, AUDIT_MAX_KEYS);
    size_t total = (size_t)n;
    if (n >= 0) {
        add_keys(keys, m, n);
    } else { /* an escape, or more than AUDIT_MAX_KEYS: the tree has them all */
        json_t *a = jf_loadb(args, len, JF_ALLOW_NUL | JF_BIG_INTEGERS, NULL);
        const char *key;
        json_t *v;
        n = 0;
        json_object_foreach(a, key, v)
        {
            if (n < AUDIT_MAX_KEYS)
                m[n++] = (struct js_member){.key = key, .klen = strlen(key)};
        }
        total = json_object_size(a);
        add_keys(keys, m, n); /* the keys live in a: before it goes */
        json_decref(a);
    }
    json_object_set_new(o, "arg_keys", keys);
    if (total > AUDIT_MAX_KEYS)
        json_object_set_new(o, "arg_keys_more", json_integer((json_int_t)(total - AUDIT_MAX_KEYS)));
}

/* CODEMCP_AUDIT_ARGS: the values, redacted (secret keys hide their values, credential-shaped
 * text is replaced, long strings cut), unless even that is longer than AUDIT_ARGS_TEXT. */
static void put_values(json_t *o, const char *args, size_t len)
{
    json_object_set_new(o, "arg_bytes", json_integer((json_int_t)len));
    if (len > 64 * AUDIT_ARGS_TEXT)
        return; /* not worth parsing: it cannot be shown */
    json_t *a = jf_loadb(args, len, JF_ALLOW_NUL | JF_BIG_INTEGERS, NULL);
    json_t *r = a ? redact_json(a, AUDIT_ARG_STR) : NULL;
    char *shown = r ? jf_dumps(r) : NULL;
    if (shown && strlen(shown) <= AUDIT_ARGS_TEXT)
        json_object_set(o, "args", r);
    free(shown);
    json_decref(r);
    json_decref(a);
}

/* Writes o (stolen) as one ASCII line. */
static void emit(json_t *o)
{
    char *s = jf_dumps(o);
    json_decref(o);
    if (!s)
        return;
    struct buf b = {0};
    const unsigned char *p = (const unsigned char *)s, *e = p + strlen(s);
    while (p < e) {
        const unsigned char *q = p;
        while (q < e && *q < 0x80)
            q++;
        buf_append(&b, p, (size_t)(q - p));
        if (q == e)
            break;
        /* jf_dumps wrote valid UTF-8, and only inside strings */
        size_t k = jf_utf8_seq(q, e);
        unsigned long cp = k == 2   ? (q[0] & 0x1Fu) << 6 | (q[1] & 0x3Fu)
                           : k == 3 ? (q[0] & 0x0Fu) << 12 | (q[1] & 0x3Fu) << 6 | (q[2] & 0x3Fu)
                           : k == 4 ? (q[0] & 0x07u) << 18 | (q[1] & 0x3Fu) << 12 |
                                          (q[2] & 0x3Fu) << 6 | (q[3] & 0x3Fu)
                                    : 0xFFFD;
        if (cp >= 0x10000)
            buf_printf(&b, "\\u%04lx\\u%04lx", 0xD800 + ((cp - 0x10000) >> 10),
                       0xDC00 + ((cp - 0x10000) & 0x3FF));
        else
            buf_printf(&b, "\\u%04lx", cp);
        p = q + (k ? k : 1);
    }
    audit_sink_put(b.data ? b.data : "", b.len);
    buf_free(&b);
    free(s);
}

void audit_tool_call(const struct audit_call *c)
{
    if (!enabled)
        return;
    json_t *o = line_head("tool_call", c->principal, c->session, c->run);
    json_object_set_new(o, "server", text(c->server));
    json_object_set_new(o, "tool", text(c->tool));
    json_object_set_new(o, "function", text(c->fn));
    json_object_set_new(o, "access", json_string(c->mutation ? "write" : "read"));
    json_object_set_new(o, "decision", json_string(c->decision ? c->decision : "deny"));
    json_object_set_new(o, "rule", c->rule && *c->rule ? text(c->rule) : json_null());
    if (c->reason)
        json_object_set_new(o, "reason", message(c->reason));
    json_object_set_new(o, "dry_run", json_boolean(c->dry_run));
    json_object_set_new(o, "outcome", text(c->outcome));
    json_object_set_new(o, "duration_ms", json_integer((json_int_t)c->duration_ms));
    if (c->args) {
        put_keys(o, c->args, c->args_len);
        if (with_args)
            put_values(o, c->args, c->args_len);
    } else {
        json_object_set_new(o, "arg_keys", json_array());
    }
    emit(o);
}

void audit_validation(const char *principal, uint64_t session, const char *run, const char *error)
{
    if (!enabled)
        return;
    json_t *o = line_head("validation", principal, session, run);
    json_object_set_new(o, "decision", json_string("deny"));
    json_object_set_new(o, "outcome", json_string("validation"));
    json_object_set_new(o, "reason", message(error ? error : ""));
    emit(o);
}
