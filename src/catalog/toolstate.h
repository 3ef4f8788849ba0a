/* toolstate — which upstream tools are on: the config's default (`tools.<t>.enabled`), a
 * default changed at run time by `--make-default`, and this gateway run's session overrides
 * (`codemcp enable-tool` / `disable-tool`).
 *
 * Effective state = session override, else default, else on. The catalog reads it to build
 * the SDK; the call-enforcement path asks ts_call_allowed() before routing a worker's
 * call_tool, so a disabled tool is refused by the gateway whatever the worker holds (a run in
 * flight keeps its SDK snapshot). Pure bookkeeping: never connects, writes files or notifies.
 * Loop thread only. */
#ifndef CODEMCP_TOOLSTATE_H
#define CODEMCP_TOOLSTATE_H

#include <jansson.h>
#include <stddef.h>

/* The default of (server, tool): 1 on, 0 off (config, or a --make-default made this run). */
int ts_default_on(const char *server, const char *tool);
/* The session override: 1 on, 0 off, -1 none. */
int ts_session(const char *server, const char *tool);
/* The effective state (1 on / 0 off). */
int ts_enabled(const char *server, const char *tool);
/* Sets (on 0/1) or clears (on -1) the session override. */
void ts_set_session(const char *server, const char *tool, int on);
/* Records a new default (after mcp.json was written) and clears the session override. */
void ts_set_default(const char *server, const char *tool, int on);

/* The enforcement predicate: 1 = the tool may be called; 0 = disabled, with a message
 * (naming the command that turns it back on) in why. */
int ts_call_allowed(const char *server, const char *tool, char *why, size_t n);

/* The server's `tools` config as sdkgen reads it, with each listed tool's "enabled" set to
 * its effective state (new reference; NULL when there is nothing to say). Borrows both. */
json_t *ts_effective_config(const char *server, json_t *cfg_tools, json_t *tools);

/* Frees every record; cat_free() calls it (the catalog is built from these states). */
void ts_free(void);

#endif
