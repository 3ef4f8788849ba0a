/* serve_http — the MCP front over Streamable HTTP (MCP 2025-11-25 down to 2025-03-26).
 *
 * One path (CODEMCP_HTTP_PATH, default /mcp) on a libwebsockets vhost of the gateway's one
 * event loop. POST carries one JSON-RPC message; a request is answered with
 * application/json when mcp_server answers it at once, otherwise with an SSE stream that
 * carries its progress and then its response. GET opens the session's stream for
 * unsolicited messages; DELETE ends the session. Sessions are created by initialize and named
 * by a random 256-bit Mcp-Session-Id. Host/Origin allow-lists, a bearer token (required
 * by default, http_auth.h), connection limits (connlimit.h) and optional TLS guard the door. Loop
 * thread only; nothing here blocks.
 *
 * Environment: CODEMCP_HTTP_BIND (127.0.0.1:3388), CODEMCP_HTTP_PATH (/mcp),
 * CODEMCP_HTTP_MAX_BODY (4194304), CODEMCP_HTTP_MAX_HEADERS (16384),
 * CODEMCP_HTTP_SESSION_IDLE_MS (1800000),
 * CODEMCP_HTTP_MAX_SESSIONS (1024), CODEMCP_HTTP_ALLOWED_HOSTS, CODEMCP_HTTP_ALLOWED_ORIGINS,
 * CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL (64), CODEMCP_HTTP_AUTH, CODEMCP_HTTP_TOKEN,
 * CODEMCP_HTTP_TOKENS_FILE (http_auth.h), the connection limits (connlimit.h),
 * CODEMCP_TLS_CERT + CODEMCP_TLS_KEY. */
#ifndef CODEMCP_SERVE_HTTP_H
#define CODEMCP_SERVE_HTTP_H

#include <stddef.h>

/* Starts listening. `host` (NULL: from CODEMCP_HTTP_BIND) is an IP address, "localhost" or
 * an interface name; `port` < 0 takes the port from CODEMCP_HTTP_BIND, 0 lets the kernel
 * choose. Prints "codemcp: serving MCP over Streamable HTTP at <url>" on stderr. Returns 0,
 * or -1 after printing why on stderr (e.g. "port 3388 is already in use"); there is no
 * fallback port. Call after lp_init(). */
struct settings;
int http_serve(const struct settings *s, const char *host, int port);
/* --no-auth (before http_serve): serve without a token; refused unless the bind is loopback. */
void http_set_no_auth(int on);
/* `codemcp start --print-token`: prints the token on stdout; returns the exit status. */
int http_print_token(const struct settings *s);
/* SIGHUP: re-reads CODEMCP_HTTP_TOKENS_FILE. */
void http_reload(void);
/* The URL being served ("http://127.0.0.1:3388/mcp"); "" before http_serve(). */
const char *http_url(void);
/* Ends every session (their runs are cancelled) and answers later requests with 503.
 * Idempotent; the listener itself goes away with the loop's context. */
void http_close(void);
/* Requests being answered: 2025 POST streams not yet answered or still being written, 2026
 * answers and plain replies still being written. What a drain waits for besides runs: an answer
 * must get out before the process ends. */
size_t http_busy(void);

#endif
