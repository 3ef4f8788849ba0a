/* mcp_era — what tells the two MCP protocol eras apart, as pure functions.
 *
 * The 2025 ("legacy") era opens with `initialize` and keeps a session; the 2026-07-28
 * ("modern") era carries protocol version, client identity and capabilities in every
 * request's `_meta` and has no handshake (versioning.mdx of that revision). This module
 * knows the version lists, builds and reads the per-request envelope, and reads the
 * modern errors (-32022 UnsupportedProtocolVersion) and results (`resultType`,
 * `input_required`). No I/O, no state (one constant, our serverInfo, is built once, on the
 * loop thread): the upstream client and the MCP front share it. */
#ifndef CODEMCP_MCP_ERA_H
#define CODEMCP_MCP_ERA_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define MCP_MODERN_VERSION      "2026-07-28"
#define MCP_LEGACY_LATEST       "2025-11-25"
#define MCP_UNSUPPORTED_VERSION -32022 /* data: {"supported": [...], "requested": "..."} */
#define MCP_MISSING_CAPABILITY  -32021 /* the request's client capabilities lack one needed */
#define MCP_HEADER_MISMATCH     -32020 /* HTTP routing headers missing or not matching the body */

#define MCP_META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_META_CLIENT_INFO      "io.modelcontextprotocol/clientInfo"
#define MCP_META_CLIENT_CAPS      "io.modelcontextprotocol/clientCapabilities"
#define MCP_META_SERVER_INFO      "io.modelcontextprotocol/serverInfo"
#define MCP_META_SUBSCRIPTION_ID  "io.modelcontextprotocol/subscriptionId"
#define MCP_META_LOG_LEVEL        "io.modelcontextprotocol/logLevel"

enum mcp_era { MCP_ERA_UNKNOWN, MCP_ERA_LEGACY, MCP_ERA_MODERN };

const char *mcp_era_name(enum mcp_era era); /* "unknown" | "2025 (legacy)" | "2026 (modern)" */
/* True for a version this build speaks in the legacy era (2025-11-25 … 2024-11-05). */
int mcp_era_is_legacy_version(const char *v);
int mcp_era_is_modern_version(const char *v);

/* New reference: the `_meta` object a modern request carries (version, client info,
 * client capabilities; capabilities borrowed and copied, NULL → {}). */
json_t *mcp_era_request_meta(const char *version, const char *client_name,
                             const char *client_version, json_t *capabilities);
/* Adds `_meta` (stolen) to params (borrowed), merging into an existing `_meta`. */
void mcp_era_attach_meta(json_t *params, json_t *meta);

/* Reads a JSON-RPC error object (borrowed). For -32022 returns 1 and fills *supported
 * (borrowed array or NULL); 0 for any other error. */
int mcp_era_unsupported(json_t *error, json_t **supported);
/* The best legacy version in a `supported` list (borrowed), or NULL when none is ours. */
const char *mcp_era_pick_legacy(json_t *supported);
/* Whether `list` (array of strings, borrowed) contains v. */
int mcp_era_list_has(json_t *list, const char *v);

/* A modern result (borrowed) that is not final: `resultType: "input_required"`. */
int mcp_era_is_input_required(json_t *result);
/* Describes what an input_required result asks for, for a ToolError message: the kinds of
 * input (elicitation/create, sampling/createMessage, roots/list) and any elicitation
 * message, e.g. `asks for input: elicitation/create "Delete 3 files?"`. */
void mcp_era_describe_input_required(json_t *result, char *out, size_t n);

#endif

/* ---- Streamable HTTP routing headers (2026-07-28 transports/streamable-http) ------------- */

/* A header value as the binding wants it: as is when it is plain, trimmed ASCII; else the
 * base64 sentinel `=?base64?…?=` (also for a value that looks like one). Caller frees. */
char *mcp_era_header_value(const char *v);
/* Checks a tool's `x-mcp-header` annotations (inputSchema borrowed): only on string, integer
 * or boolean properties reached through `properties` alone, valid and case-insensitively
 * unique names. 0, or -1 with why filled. A tool that fails must not be offered. */
int mcp_era_check_param_headers(json_t *input_schema, char *why, size_t n);
/* Calls emit(name, value) for each annotated property present in args (both borrowed): the
 * `Mcp-Param-{name}` headers of a tools/call. Values are encoded; null and absent skipped. */
void mcp_era_param_headers(json_t *input_schema, json_t *args,
                           void (*emit)(void *ud, const char *name, const char *value), void *ud);

/* ---- serving the 2026 era (the MCP front) ------------------------------------------------- */

/* A request (params borrowed, may be NULL) of the modern era: its `_meta` names a protocol
 * version. Requests without one are legacy (they belong to an `initialize`d session). */
int mcp_era_is_modern_request(json_t *params);
/* Checks a modern request's envelope: a version we serve (else -32022 with the supported
 * list and the requested one), client capabilities an object, client info (if present) an
 * object with a string name, log level (if present) a known level (else -32602). Returns
 * NULL when fine, else a new error response carrying id (borrowed). */
json_t *mcp_era_check_request(json_t *id, json_t *params);
/* Methods the modern era removed (ping, logging/setLevel, initialize,
 * notifications/initialized): a modern request for one gets -32601. */
int mcp_era_removed_method(const char *method);
/* The versions codemcp serves, newest first (new reference), for discover and -32022. */
json_t *mcp_era_supported_versions(void);
/* server/discover's result (new reference): versions, capabilities (stolen), instructions,
 * server info in `_meta`, resultType and cache hints. */
json_t *mcp_era_discover_result(json_t *capabilities, const char *instructions);
/* Makes a result (borrowed, changed in place) a modern one: resultType "complete" unless
 * set, server info in `_meta`; ttl_ms >= 0 adds the cache hints (cacheScope "private": the
 * description depends on who asks). The values added are shared, read-only objects: encode
 * the result and free it, do not change it afterwards. */
void mcp_era_finish_result(json_t *result, int64_t ttl_ms);
/* The request's `io.modelcontextprotocol/logLevel` as a syslog severity 0..7 (emergency ..
 * debug), or -1 when absent: a modern server sends notifications/message only when asked. */
int mcp_era_request_log_level(json_t *params);

/* A header value as sent: the base64 sentinel decoded, anything else as is. NULL when the
 * sentinel's payload is not valid base64 or decodes to a NUL. Caller frees. */
char *mcp_era_header_decode(const char *v);
/* Streamable HTTP, 2026 era: the routing headers of a POST (NULL when absent) against its
 * body msg (borrowed). NULL when they agree; else a new error response (id echoed) with
 * *status set: 400 + -32020 HeaderMismatch for a missing or mismatching header, 400 +
 * -32022 for a version we do not serve. */
json_t *mcp_era_check_http_headers(json_t *msg, const char *version, const char *method,
                                   const char *name, int *status);
