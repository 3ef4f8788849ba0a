/* log — stderr logging with a level and a module name per line. See log.h. */
#include "log.h"
#include "json_escape.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>
#include <time.h>

static atomic_int current_level = LOG_WARN;
static atomic_int out_fd = -1; /* -1: stderr */
static int json_lines;         /* CODEMCP_LOG_FORMAT=json */
static void (*filter)(const char *line, char *out, size_t cap);

void log_set_filter(void (*fn)(const char *line, char *out, size_t cap))
{
    filter = fn;
}

static const char *level_names[] = {"error", "warn", "info", "debug", "trace"};

/* Parses "error", "warning", "info", "debug", ... (also MCP/syslog names). -1 if unknown. */
static int log_level_parse(const char *name)
{
    static const struct {
        const char *name;
        int level;
    } names[] = {
        {"error", LOG_ERROR},     {"critical", LOG_ERROR}, {"alert", LOG_ERROR},
        {"emergency", LOG_ERROR}, {"warn", LOG_WARN},      {"warning", LOG_WARN},
        {"notice", LOG_INFO},     {"info", LOG_INFO},      {"debug", LOG_DEBUG},
        {"trace", LOG_TRACE},
    };
    if (!name)
        return -1;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcasecmp(name, names[i].name) == 0)
            return names[i].level;
    return -1;
}

void log_init(const char *v)
{
    if (!v || !*v)
        return;
    int level = log_level_parse(v);
    if (level < 0) {
        log_warn("log", "CODEMCP_LOG=%s is not a level (error|warn|info|debug|trace); using warn",
                 v);
        return;
    }
    current_level = level;
}

void log_set_format(const char *format)
{
    if (!format || !*format || strcasecmp(format, "text") == 0)
        json_lines = 0;
    else if (strcasecmp(format, "json") == 0)
        json_lines = 1;
    else
        log_warn("log", "CODEMCP_LOG_FORMAT=%s is not text or json; using text", format);
}

/* The message as a JSON string's contents: '"', '\\' and control bytes escaped, bytes that are
 * not UTF-8 written as U+FFFD (the line must parse whatever an upstream sent); cut, at a
 * character, where it would not fit in cap (NUL included). Returns the length written. */
static size_t json_text(const char *msg, char *out, size_t cap)
{
    static const char hexd[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)msg, *e = p + strlen(msg);
    size_t w = 0;
    while (p < e) {
        char esc[6];
        size_t k = 1, n;
        const char *from = esc;
        if (*p < 0x20 || *p == '"' || *p == '\\') {
            n = json_escape_byte(*p, hexd, esc);
        } else if (*p < 0x80) {
            n = 1;
            from = (const char *)p;
        } else if ((k = json_utf8_seq(p, e)) != 0) {
            n = k;
            from = (const char *)p;
        } else {
            k = 1;
            n = 6;
            from = "\\ufffd";
        }
        if (w + n + 1 > cap)
            break;
        memcpy(out + w, from, n);
        w += n;
        p += k;
    }
    out[w] = '\0';
    return w;
}

/* {"time":"…Z","level":"…","subsystem":"…","message":"…"} of one message into line. */
static size_t json_line(char *line, size_t cap, const struct timespec *ts, const struct tm *tm,
                        enum log_level level, const char *module, const char *msg)
{
    char sub[128];
    json_text(module, sub, sizeof(sub));
    int n = snprintf(line, cap,
                     "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"level\":\"%s\","
                     "\"subsystem\":\"%s\",\"message\":\"",
                     tm->tm_year + 1900, tm->tm_mon + 1, tm->tm_mday, tm->tm_hour, tm->tm_min,
                     tm->tm_sec, ts->tv_nsec / 1000000, level_names[level], sub);
    if (n < 0 || (size_t)n + 3 >= cap)
        return 0;
    size_t len = (size_t)n + json_text(msg, line + n, cap - (size_t)n - 2);
    memcpy(line + len, "\"}", 3);
    return len + 2;
}

void log_set_fd(int fd)
{
    out_fd = fd;
}

enum log_level log_get_level(void)
{
    return (enum log_level)current_level;
}

/* One line stays one line: a message may quote what a worker or an upstream sent, and a
 * newline in it could forge a line of its own. Control bytes (and DEL) become "\n", "\r",
 * "\t" or "\xHH"; what no longer fits is cut. In place, linear in the line. */
static void escape_controls(char *line, size_t *len, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < *len; i++) {
        unsigned char c = (unsigned char)line[i];
        n += c < 0x20 || c == 0x7F ? (c == '\n' || c == '\r' || c == '\t' ? 2 : 4) : 1;
    }
    if (n == *len)
        return;
    char out[4096];
    size_t w = 0;
    for (size_t i = 0; i < *len && w + 5 < sizeof(out) && w + 5 < cap; i++) {
        unsigned char c = (unsigned char)line[i];
        if (c >= 0x20 && c != 0x7F)
            out[w++] = (char)c;
        else if (c == '\n' || c == '\r' || c == '\t')
            w += (size_t)snprintf(out + w, 3, "\\%c", c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
        else
            w += (size_t)snprintf(out + w, 5, "\\x%02X", c);
    }
    memcpy(line, out, w);
    line[w] = '\0';
    *len = w;
}

void log_write(enum log_level level, const char *module, const char *fmt, ...)
{
    if ((int)level > current_level)
        return;
    char line[4096];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof(line), "%02d:%02d:%02d.%03ld codemcp %s [%s] ", tm.tm_hour,
                     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, level_names[level], module);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    if (filter && n > 0 && (size_t)n < sizeof(line)) {
        char text[sizeof(line)];
        filter(line + n, text, sizeof(line) - (size_t)n);
        memcpy(line + n, text, strlen(text) + 1);
    }
    size_t len = strlen(line);
    if (len > 0 && line[len - 1] == '\n')
        line[--len] = '\0';
    if (json_lines && n > 0 && (size_t)n < sizeof(line)) {
        char msg[sizeof(line)];
        memcpy(msg, line + n, len - (size_t)n + 1);
        size_t j = json_line(line, sizeof(line) - 1, &ts, &tm, level, module, msg);
        if (j)
            len = j;
    }
    escape_controls(line, &len, sizeof(line));
    int fd = out_fd;
    if (fd >= 0) { /* one write per line: lines of concurrent threads do not interleave */
        if (len + 1 >= sizeof(line))
            len = sizeof(line) - 2;
        line[len] = '\n';
        if (write(fd, line, len + 1) < 0) {
            /* nowhere left to report it */
        }
        return;
    }
    /* One fputs per line so concurrent threads do not interleave within a line. */
    flockfile(stderr);
    fputs(line, stderr);
    fputc('\n', stderr);
    funlockfile(stderr);
}

int log_budget_take(struct log_budget *b, const char *module)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (now - b->window_ms >= 1000) {
        b->window_ms = now;
        b->lines = 0;
        if (b->dropped) {
            log_write(LOG_WARN, module, "%ld more lines were not logged (over %ld a second)",
                      b->dropped, b->per_second);
            b->dropped = 0;
        }
    }
    if (b->lines >= b->per_second) {
        b->dropped++;
        return 0;
    }
    b->lines++;
    return 1;
}
