/* config_int — helpers shared by config.c (the file) and config_wrap.c (--wrap and
 * shell-like word splitting). Internal to the config module: nothing else includes it. Not
 * thread-safe, like the rest of config. */
#ifndef CODEMCP_CONFIG_INT_H
#define CODEMCP_CONFIG_INT_H

#include "config.h"

#include <stddef.h>

/* A growable NULL-terminated string vector; items are owned. */
struct strv {
    char **v;
    size_t n, cap;
};

/* Parse state of one entry: the server being filled, its place in the file, and a scratch
 * buffer for key paths such as "mcp.github.headers.Authorization". */
struct ent {
    struct cfg_server *s;
    const char *rk; /* "mcp" or "mcpServers" */
    int ms;         /* mcpServers format */
    char where[512];
};

/* The file being loaded, for line numbers (comments blanked: positions are the file's). */
struct cfg_text {
    const char *path, *text;
};

/* ---- config_check.c ------------------------------------------------------------------------ */

/* The line of `"key"` after `"rk"` and `"server"` in t's text (after `"tools"` too when tool
 * is set, for tools.<tool>); 0: not found, or t NULL. */
int cfg__line(const struct cfg_text *t, const char *rk, const char *server, const char *key,
              const char *tool);
/* Logs a warning about s ("<path> line <line>: ..." when known) and keeps it in s->warnings. */
void cfg__warn(struct cfg_server *s, const char *path, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* 1 when an entry of the "mcp" format is written as an mcpServers one (args or env, a string
 * command, no environment): config.c then reads it in that format, with a warning. */
int cfg__looks_mcpservers(json_t *v);
/* Warns about keys of entry v no format knows and tool settings other than enabled/mutation;
 * records the line of each `tools` key (cfg_check_tools names it later). */
void cfg__check_keys(struct ent *e, json_t *v, const struct cfg_text *t);

/* ---- config.c ------------------------------------------------------------------------------ */

/* Replaces *err (when err is not NULL) with the formatted message; the caller frees it. */
void cfg__set_err(char **err, const char *f, ...) __attribute__((format(printf, 2, 3)));
/* Appends item (taken) to s, keeping s NULL-terminated. */
void cfg__strv_push(struct strv *s, char *item);
/* Hands the vector to the caller (never NULL, even when empty) and empties s. */
char **cfg__strv_steal(struct strv *s);
/* Frees a NULL-terminated vector and its items; NULL is fine. */
void cfg__strv_free(char **v);
/* [A-Za-z0-9_]: the characters of a variable name after the first. */
int cfg__name_char(char c);
/* An empty cfg of the given format (a static string). */
void cfg__init(struct cfg *c, const char *format);
/* Drops argv/env/cwd/url/headers of an unusable server. */
void cfg__drop_runtime(struct cfg_server *s);
/* "~" or "~/..." at the start of *p (replaced) becomes the home directory; -1 (reason set on
 * e->s) when there is no home directory. `key` names the field in the reason. */
int cfg__expand_tilde(struct ent *e, char **p, const char *key);

/* ---- config_wrap.c ------------------------------------------------------------------------- */

/* Splits s into words like a POSIX shell would, without any expansion, appending them to
 * out. 0, or -1 with *why (static text) for unbalanced quotes or a trailing backslash. */
int cfg__split_words(const char *s, struct strv *out, const char **why);

#endif
