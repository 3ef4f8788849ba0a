/* audit — see audit.h. Each line is written straight into one reused buffer: every string
 * JSON-escaped and every character above 0x7F written as \uXXXX (bytes that are not UTF-8 as
 * \ufffd), so a line is plain ASCII and neither a newline, nor an ANSI escape, nor a Unicode
 * line or paragraph separator, nor a C1 control that some terminals act on can come out of a
 * string a program or an upstream chose. No tree is built for a line (one took ~34,000
 * instructions, more than the rest of the gateway's work for a call; bench/audit_line.c).
 * audit_sink.c takes the line from there. */
#include "audit.h"
#include "audit_sink.h"
#include "json_escape.h"
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
/* The line being built (loop thread only): kept between lines, so building one allocates
 * nothing once it has grown. */
static struct buf line;

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
    buf_free(&line);
}

/* s[0..n) as a JSON string, ASCII only: '"', '\\' and control bytes escaped (json_escape.h),
 * every UTF-8 character above 0x7F as \uXXXX (a surrogate pair above U+FFFF), every byte that
 * is not UTF-8 as \ufffd. */
static void put_text_n(const char *s, size_t n)
{
    static const char hexd[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s, *e = p + n;
    buf_append(&line, "\"", 1);
    while (p < e) {
        const unsigned char *q = json_skip_plain(p, e, 1);
        while (q < e && *q >= 0x20 && *q < 0x80 && *q != '"' && *q != '\\')
            q++;
        buf_append(&line, p, (size_t)(q - p));
        if (q == e)
            break;
        char esc[16];
        size_t k = 1, len;
        if (*q < 0x80) {
            len = json_escape_byte(*q, hexd, esc);
        } else if ((k = json_utf8_seq(q, e)) == 0) {
            k = 1;
            len = (size_t)snprintf(esc, sizeof(esc), "\\ufffd");
        } else {
            unsigned long cp = k == 2 ? (q[0] & 0x1Fu) << 6 | (q[1] & 0x3Fu)
                               : k == 3
                                   ? (q[0] & 0x0Fu) << 12 | (q[1] & 0x3Fu) << 6 | (q[2] & 0x3Fu)
                                   : (q[0] & 0x07u) << 18 | (q[1] & 0x3Fu) << 12 |
                                         (q[2] & 0x3Fu) << 6 | (q[3] & 0x3Fu);
            if (cp >= 0x10000)
                len = (size_t)snprintf(esc, sizeof(esc), "\\u%04lx\\u%04lx",
                                       0xD800 + ((cp - 0x10000) >> 10),
                                       0xDC00 + ((cp - 0x10000) & 0x3FF));
            else
                len = (size_t)snprintf(esc, sizeof(esc), "\\u%04lx", cp);
        }
        buf_append(&line, esc, len);
        p = q + k;
    }
    buf_append(&line, "\"", 1);
}

/* ,"name": — the member names are literals, so each is one append of a constant: a line has
 * a dozen of them, and three appends and a strlen each were a tenth of its cost. */
#define MEMBER(name)      ",\"" name "\":"
#define put_name(name)    buf_append(&line, MEMBER(name), sizeof(MEMBER(name)) - 1)
#define put_text(name, s) put_text_at(MEMBER(name), sizeof(MEMBER(name)) - 1, s)
#define put_int(name, v)  put_int_at(MEMBER(name), sizeof(MEMBER(name)) - 1, v)

/* A name (server, tool, run, ...) or null, cut to AUDIT_NAME_BYTES: a program chooses the
 * ones it sends, and a megabyte tool name must not make a megabyte line. */
static void put_text_at(const char *member, size_t member_len, const char *s)
{
    buf_append(&line, member, member_len);
    if (s)
        put_text_n(s, strnlen(s, AUDIT_NAME_BYTES));
    else
        buf_append(&line, "null", 4);
}

/* Free text that may hold a credential, cut to max bytes and redacted. */
static void put_redacted(const char *s, size_t n, size_t max)
{
    if (n > max)
        n = max;
    if (!redact_may_change(s, n)) {
        put_text_n(s, n);
        return;
    }
    char *r = redact_text(s, n);
    put_text_n(r, strlen(r));
    free(r);
}

static void put_int_at(const char *member, size_t member_len, int64_t v)
{
    char num[24];
    buf_append(&line, member, member_len);
    buf_append(&line, num, fmt_i64(num, v));
}

/* JSON text (valid UTF-8, as jf_dumps writes it) with every character above 0x7F, all inside
 * its strings, as \uXXXX. */
static void put_json_ascii(const char *s)
{
    const char *p = s;
    while (*p) {
        const char *q = p;
        while (*q && (unsigned char)*q < 0x80)
            q++;
        buf_append(&line, p, (size_t)(q - p));
        if (!*q)
            break;
        p = q;
        while ((unsigned char)*q >= 0x80)
            q++;
        /* the run of non-ASCII bytes, as the inside of a string */
        size_t at = line.len;
        put_text_n(p, (size_t)(q - p));
        memmove(line.data + at, line.data + at + 1, line.len - at - 2); /* its quotes go */
        line.len -= 2;
        p = q;
    }
}

/* {"time":"2026-07-28T12:34:56.789Z","event":…,"principal":…,"session":…,"run":… */
static void line_head(const char *event, const char *principal, uint64_t session, const char *run)
{
    static time_t second = -1;
    static char day_time[32]; /* "2026-07-28T12:34:56", kept for the second it names */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (ts.tv_sec != second) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        strftime(day_time, sizeof(day_time), "%Y-%m-%dT%H:%M:%S", &tm);
        second = ts.tv_sec;
    }
    /* the milliseconds by hand: snprintf was a tenth of the line's cost */
    long milli = (ts.tv_nsec / 1000000) % 1000;
    char ms[6] = {'.',
                  (char)('0' + milli / 100),
                  (char)('0' + milli / 10 % 10),
                  (char)('0' + milli % 10),
                  'Z',
                  '\0'};
    buf_reset(&line);
    buf_appends(&line, "{\"time\":\"");
    buf_appends(&line, day_time);
    buf_appends(&line, ms);
    buf_append(&line, "\"", 1);
    put_name("event");
    put_text_n(event, strlen(event));
    /* none: a call for a run that is not active (whose it is, is not known) */
    put_text("principal", principal && *principal ? principal : NULL);
    put_int("session", (int64_t)session);
    put_text("run", run);
}

/* The top-level keys of args (JSON text as jf_dumps writes it) as "arg_keys", each cut to
 * AUDIT_KEY_BYTES and redacted as free text is (a key can hold a credential as well as a value
 * can); how many past AUDIT_MAX_KEYS as "arg_keys_more". */
static void put_keys(const char *args, size_t len)
{
    struct js_member m[AUDIT_MAX_KEYS];
    /* js_members reads keys as written, which holds only when none has an escape */
    int n = memchr(args, '\\', len) ? -1 : js_members(args, len, m, AUDIT_MAX_KEYS);
    json_t *a = NULL;
    size_t total = (size_t)n;
    if (n < 0) { /* an escape, or more than AUDIT_MAX_KEYS: the tree has them all */
        a = jf_loadb(args, len, JF_ALLOW_NUL | JF_BIG_INTEGERS, NULL);
        const char *key;
        json_t *v;
        n = 0;
        json_object_foreach(a, key, v)
        {
            if (n < AUDIT_MAX_KEYS)
                m[n++] = (struct js_member){.key = key, .klen = strlen(key)};
        }
        total = json_object_size(a);
    }
    put_name("arg_keys");
    buf_append(&line, "[", 1);
    for (int i = 0; i < n; i++) {
        if (i)
            buf_append(&line, ",", 1);
        put_redacted(m[i].key, m[i].klen, AUDIT_KEY_BYTES);
    }
    buf_append(&line, "]", 1);
    json_decref(a); /* the keys lived in it */
    if (total > AUDIT_MAX_KEYS)
        put_int("arg_keys_more", (int64_t)(total - AUDIT_MAX_KEYS));
}

/* CODEMCP_AUDIT_ARGS: the values, redacted (secret keys hide their values, credential-shaped
 * text is replaced, long strings cut), unless even that is longer than AUDIT_ARGS_TEXT. */
static void put_values(const char *args, size_t len)
{
    put_int("arg_bytes", (int64_t)len);
    if (len > 64 * AUDIT_ARGS_TEXT)
        return; /* not worth parsing: it cannot be shown */
    json_t *a = jf_loadb(args, len, JF_ALLOW_NUL | JF_BIG_INTEGERS, NULL);
    json_t *r = a ? redact_json(a, AUDIT_ARG_STR) : NULL;
    char *shown = r ? jf_dumps(r) : NULL;
    if (shown && strlen(shown) <= AUDIT_ARGS_TEXT) {
        put_name("args");
        put_json_ascii(shown);
    }
    free(shown);
    json_decref(r);
    json_decref(a);
}

static void emit(void)
{
    buf_append(&line, "}", 1);
    audit_sink_put(line.data, line.len);
}

void audit_tool_call(const struct call_event *c)
{
    if (!enabled)
        return;
    line_head("tool_call", c->principal, c->session, c->run);
    put_text("server", c->server);
    put_text("tool", c->tool);
    put_text("function", c->fn);
    put_text("access", c->mutation ? "write" : "read");
    put_text("decision", c->decision ? c->decision : "deny");
    put_text("rule", c->rule && *c->rule ? c->rule : NULL);
    if (c->reason) {
        put_name("reason");
        put_redacted(c->reason, strlen(c->reason), AUDIT_MESSAGE);
    }
    put_name("dry_run");
    buf_appends(&line, c->dry_run ? "true" : "false");
    put_text("outcome", c->outcome);
    put_int("duration_ms", c->duration_ms);
    if (c->args) {
        put_keys(c->args, c->args_len);
        if (with_args)
            put_values(c->args, c->args_len);
    } else {
        put_name("arg_keys");
        buf_append(&line, "[]", 2);
    }
    emit();
}

void audit_validation(const char *principal, uint64_t session, const char *run, const char *kind,
                      const char *error)
{
    if (!enabled)
        return;
    line_head("validation", principal, session, run);
    put_text("decision", "deny");
    put_text("outcome", kind);
    put_name("reason");
    put_redacted(error ? error : "", error ? strlen(error) : 0, AUDIT_MESSAGE);
    emit();
}
