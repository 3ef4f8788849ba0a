/* mcp_server — the MCP server logic, independent of the transport.
 *
 * A transport (serve_stdio.c, serve_http.c) creates a session, feeds it each received
 * JSON-RPC text, and supplies a send function. This module answers initialize, ping,
 * tools/list, tools/call (handing execute_python to runs.c), logging/setLevel (the level
 * filters the notifications/message a session gets about its runs) and the notifications;
 * it sends tools/list_changed once per session per change. Sessions are referred to by their
 * 64-bit id in long-lived state (runs), never by pointer. Below the transports, above runs.c:
 * runs reach a session only through mcp_send_to / mcp_session_log, which main.c registers
 * as runs.c's hooks. */
#ifndef CODEMCP_MCP_SERVER_H
#define CODEMCP_MCP_SERVER_H

#include <jansson.h>

#include "upstream.h"
#include <stdint.h>

#include "log.h"

/* Sends one JSON-RPC message text. `related` is the id of the request the message
 * answers or reports progress for (borrowed, NULL for unsolicited messages). */
typedef void (*mcp_send_fn)(void *tud, const char *text, size_t len, json_t *related);

struct mcp_session;

struct mcp_session *mcp_session_new(mcp_send_fn send, void *tud, const char *label);
/* Handles one received message text (any JSON; errors are answered). */
void mcp_session_receive(struct mcp_session *s, const char *text, size_t len);
/* The same for a message the transport has parsed already (a JSON object, borrowed). */
void mcp_session_receive_msg(struct mcp_session *s, json_t *msg);
/* The same for a modern request the transport has passed through mcp_modern_check already
 * (the HTTP front does, to pick the HTTP status): the check is not repeated. */
void mcp_session_receive_checked(struct mcp_session *s, json_t *msg);
/* The transport is gone: runs of the session are cancelled, the session is freed. */
void mcp_session_close(struct mcp_session *s);
uint64_t mcp_session_id(struct mcp_session *s);
/* The home of the session's runs (namespaces.h): which worker holds the namespaces it
 * creates. Default: the session's own id (stdio, 2025 sessions: one interpreter each). A
 * transport serving session-less (2026) requests sets ns_principal_home(principal), so a
 * principal's handles outlive the request. */
void mcp_session_set_home(struct mcp_session *s, uint64_t home);
const char *mcp_session_protocol(struct mcp_session *s);
/* Sends msg (stolen) on session `id` if it still exists. */
void mcp_send_to(uint64_t session_id, json_t *msg, json_t *related);
/* The same for a message given as its JSON text in jf_dumps' form (len bytes, borrowed; a
 * response, to request `related`): sent as it is, unless `related` is a 2026-era request
 * still open (its result gets the era's members: then through its tree, as mcp_send_to). */
void mcp_send_text_to(uint64_t session_id, const char *text, size_t len, json_t *related);
/* notifications/message to session `id`, if its logging/setLevel lets `level` through. */
void mcp_session_log(uint64_t session_id, enum log_level level, const char *text, json_t *related);
/* Whether mcp_session_log would send a message at `level` to session `id`. */
int mcp_session_log_wanted(uint64_t session_id, enum log_level level);

/* The checks a 2026-07-28 request passes before any method runs (the spec's "ladder"): its
 * `_meta` envelope (-32602, -32022) and methods that era removed (-32601). NULL when it
 * passes, else a new error response carrying id (borrowed). mcp_session_receive applies it
 * to every modern request itself; the HTTP front calls it first to tell these errors (HTTP
 * 400/404) from a method's own (HTTP 200). */
json_t *mcp_modern_check(json_t *id, const char *method, json_t *params);

/* The protocol versions we speak, newest first. */
extern const char *const mcp_protocol_versions[];
int mcp_protocol_supported(const char *v);

/* Registry hooks (called from main's wiring). */
void mcp_on_upstreams_changed(void);
void mcp_on_catalog_changed(void);
/* An upstream's resources (and templates) or prompts were listed anew: initialized sessions
 * get notifications/resources/list_changed or notifications/prompts/list_changed. */
void mcp_on_extras_changed(enum up_extra kind);
/* mcp_tool.c: the execute_python tool object (new reference), its description budgeted for
 * `client` (clientInfo.name, may be NULL) and ordered by what principal (NULL: none in
 * particular) calls most. */
json_t *mcp_execute_python_tool_for(const char *client, const char *principal);
/* MCP sessions open (the metrics' gauge). */
long mcp_session_count(void);
void mcp_free_all(void);
/* CODEMCP_LIST_WAIT_MS: how long the first answer and tools/list wait for connecting
 * upstreams (default 1000). Before the first session. */
void mcp_set_list_wait(long ms);
/* mcp_tool.c: drops the kept tool (at exit, from mcp_free_all). */
void mcp_tool_free(void);

#endif
