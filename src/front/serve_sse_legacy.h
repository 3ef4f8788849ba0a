/* serve_sse_legacy — the 2024-11-05 "HTTP with SSE" transport, for clients that speak only it
 * (SDK 1.x SSEClientTransport, mcp-remote and Claude Code in their `sse` modes, MCP
 * Inspector's SSE option). Part of the HTTP front: same port, and serve_http.c has already
 * applied the Host/Origin/token checks and set the request's principal before it asks here.
 *
 *   GET  /sse                      opens a session; its event stream starts with an `endpoint`
 *                                  event naming /messages?sessionId=<64 hex>, then carries every
 *                                  message of the session (`message` events) and a keep-alive
 *                                  comment every CODEMCP_HTTP_SSE_KEEPALIVE_MS (15000).
 *   POST /messages?sessionId=ID    one JSON-RPC message; 202 Accepted, the reply goes out on
 *                                  the stream. Unknown id, or another principal's: 404.
 * Sessions count against the same quotas as Streamable HTTP sessions
 * (CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: 429, CODEMCP_HTTP_MAX_SESSIONS: 503). A session
 * lives exactly as long as its GET stream: when the stream closes (either side), its runs are
 * cancelled and its worker and namespace released, as a Streamable session's DELETE does.
 * Loop thread only. Internal to the HTTP front (takes struct hconn). */
#ifndef CODEMCP_SERVE_SSE_LEGACY_H
#define CODEMCP_SERVE_SSE_LEGACY_H

#include "http_int.h"

/* 1 when uri is one of this transport's paths (/sse, /messages). */
int lsse_path(const char *uri);
/* LWS_CALLBACK_HTTP, after the door checks: 1 when `uri` is /sse or /messages and this file
 * has answered c (or, for a POST, will answer it in lsse_body); 0 when the path is not ours. */
int lsse_request(struct hconn *c, const char *uri);
/* LWS_CALLBACK_HTTP_BODY_COMPLETION of a request lsse_request took (c->legacy is set). */
void lsse_body(struct hconn *c);
/* Ends every legacy session (the gateway is shutting down). */
void lsse_close_all(void);

#endif
