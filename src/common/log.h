/* log — the one logging facility of codemcp.
 *
 * Everything goes to stderr (stdout belongs to MCP in stdio mode). Each line carries the
 * level and the module name. The level comes from CODEMCP_LOG (error|warn|info|debug|trace,
 * default "warn"); an MCP client's logging/setLevel does not change it (it filters that
 * session's notifications/message, mcp_server.c). Safe to call from any thread. */
#ifndef CODEMCP_LOG_H
#define CODEMCP_LOG_H

#include <stddef.h>

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG, LOG_TRACE };

/* Sets the level from CODEMCP_LOG's value (NULL or empty: warn). Unknown values keep the
 * default and say so. */
void log_init(const char *level);
/* CODEMCP_LOG_FORMAT: "text" (NULL or empty too) or "json", one object a line:
 * {"time": "…Z", "level", "subsystem", "message"} (the message redacted and escaped as a text
 * line's is; bytes that are not UTF-8 become U+FFFD). Unknown values keep text and say so. */
void log_set_format(const char *format);
/* Lines go to fd instead of stderr (the worker keeps its log apart from agent output). */
void log_set_fd(int fd);
enum log_level log_get_level(void);

void log_write(enum log_level level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_error(mod, ...) log_write(LOG_ERROR, mod, __VA_ARGS__)
#define log_warn(mod, ...)  log_write(LOG_WARN, mod, __VA_ARGS__)
#define log_info(mod, ...)  log_write(LOG_INFO, mod, __VA_ARGS__)
#define log_debug(mod, ...)                                                                        \
    do {                                                                                           \
        if (log_get_level() >= LOG_DEBUG)                                                          \
            log_write(LOG_DEBUG, mod, __VA_ARGS__);                                                \
    } while (0)
#define log_trace(mod, ...)                                                                        \
    do {                                                                                           \
        if (log_get_level() >= LOG_TRACE)                                                          \
            log_write(LOG_TRACE, mod, __VA_ARGS__);                                                \
    } while (0)

/* A budget for lines whose text or rate someone else decides (a worker's messages and output):
 * at most per_second lines a second each, so a flood cannot fill the operator's disk or keep
 * the loop writing. Zero-initialised but for per_second, which its owner sets. */
struct log_budget {
    long per_second;     /* lines a second at most */
    long long window_ms; /* start of the current second */
    int lines;           /* written in it */
    long dropped;        /* not written since the last note */
};
/* 1 when one more line may be written under b; else 0 (the line is counted as dropped). A
 * new second first logs, under module, how many were dropped in the ones before. */
int log_budget_take(struct log_budget *b, const char *module);

/* Every message (after the "time codemcp level [module] " prefix) passes through fn before it
 * is written; the gateway sets redaction here (redact_log_line). Set it before threads log. */
void log_set_filter(void (*fn)(const char *line, char *out, size_t cap));

#endif
