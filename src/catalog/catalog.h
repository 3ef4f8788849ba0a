/* catalog — the current generated SDK: source, description and function map.
 *
 * Rebuilt from the upstream registry whenever a server's tools or state change (and,
 * later, when learned shapes change). Consumers (MCP front, workers, control channel)
 * read the current version; a version number tells them whether they are stale.
 * Loop thread only. */
#ifndef CODEMCP_CATALOG_H
#define CODEMCP_CATALOG_H

#include <jansson.h>

struct settings;
void cat_init(const struct settings *s);
/* Regenerates from the upstreams; calls the listener if source or description changed. */
void cat_rebuild(void);
void cat_set_listener(void (*on_change)(void));
int cat_version(void);
/* Changes only when the SDK source changes (the description may change alone). */
int cat_source_version(void);
const char *cat_source(void);
/* The full listing (every signature), plus a line naming servers not ready yet. */
const char *cat_description(void);
/* The description budget for a client (clientInfo.name, may be NULL): bytes, 0 = the full
 * listing. CODEMCP_DESCRIBE_BUDGET (a number, or "full") overrides the per-client table. */
long cat_budget_for(const char *client);
/* What `client` of principal (NULL: none in particular) gets as the execute_python description (new
 * string, caller frees) and, when instructions is not NULL, the server instructions that carry the
 * overflow (new string). */
char *cat_describe_for(const char *client, const char *principal, char **instructions);
/* The same description as a JSON string (new reference; NULL only if it is not UTF-8). Both
 * are built once per budget and kept until the next rebuild or a different usage order, so
 * a caller holding the reference it got last time may compare pointers: equal pointer,
 * unchanged description. */
json_t *cat_describe_json_for(const char *client, const char *principal);
/* {"<fn>": ["<signature>", "<summary>"]} for the worker's search_tools/describe (borrowed,
 * NULL before the first build). */
json_t *cat_discovery(void);
/* Where the budgeted description takes its preferred functions from (most used first by the
 * principal asking): returns a borrowed array of function names, or NULL. */
void cat_set_priority_source(json_t *(*source)(const char *principal));
/* With CODEMCP_DISCOVERY_TOOLS=1, search_tools and describe are MCP tools too, beside
 * execute_python: their definitions (new reference to an array), or NULL when off. */
json_t *cat_discovery_tools(void);
/* The Python a tools/call of one of those runs (new string: a program calling the SDK helper
 * of the same name with the call's arguments), or NULL when `tool` is not one of them or
 * they are off. */
char *cat_discovery_code(const char *tool, json_t *arguments);
/* {"<fn>": {"server","tool","mutation",...}} borrowed; never NULL. */
json_t *cat_functions(void);
/* SDK names of tools disabled in the config (borrowed array): the validator names them. */
json_t *cat_disabled(void);
/* The function entry for (server, tool), borrowed, or NULL when not in the SDK. */
json_t *cat_find(const char *server, const char *tool);
/* Learned/seeded shape exemplars for the description: {"<fn>": "<exemplar>"} (borrowed,
 * may be NULL). Set by the shapes module; triggers a rebuild when it differs. */
void cat_set_exemplars(json_t *exemplars);
/* 1 when a run of `code`, queued at `queued_ms` (now_ms clock), must wait before it starts:
 * - it names a function of a server still making its first connection (a word starting
 *   "<server>_"): until that server is ready or gives up (its own `timeout`);
 * - it uses search_tools / describe while a server is making its first connection: at most
 *   CODEMCP_DISCOVERY_WAIT_MS (default 5000) after it was queued; then it runs, and its
 *   search results say which servers are still connecting (the worker gets cat_unavailable).
 *   The wake hook is called when that bound passes, so the caller can look again.
 * A substring test: a false positive only delays the run. */
int cat_code_waits(const char *code, int64_t queued_ms);
/* Called (on the loop) when a wait of cat_code_waits may have ended without an upstream
 * change: main.c wires the run dispatcher. */
void cat_set_wake_hook(void (*fn)(void));
/* [{"server","prefix","state","error"}] of configured servers without tools (connecting,
 * failed, disabled): the worker explains calls to them instead of "unknown function".
 * New reference. */
json_t *cat_unavailable(void);
void cat_free(void);

#endif
