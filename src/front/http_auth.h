/* http_auth — who may use the HTTP front: bearer tokens and the principals they name.
 *
 * Modes, decided once at start (hauth_init):
 *   - tokens:  Authorization: Bearer <token> is required. Tokens come from CODEMCP_HTTP_TOKEN
 *              (principal "default"), from CODEMCP_HTTP_TOKENS_FILE (one "name token" per
 *              line, mode 0600, re-read by hauth_reload() on SIGHUP), or, when neither is set,
 *              from $XDG_CONFIG_HOME/codemcp/http-token (principal "owner"), generated on
 *              first start with 256 random bits, mode 0600, and reused afterwards.
 *   - none:    --no-auth or CODEMCP_HTTP_AUTH=none; refused unless the bind address is
 *              loopback; logs a warning. The principal of a request is then its peer address.
 * Tokens are compared as SHA-256 digests with CRYPTO_memcmp against every principal, so
 * neither the content nor the length of a token leaks through timing. Loop thread only
 * (hauth_token_for_print may run before the loop exists). Never logs a token. */
#ifndef CODEMCP_HTTP_AUTH_H
#define CODEMCP_HTTP_AUTH_H

#include <stddef.h>

/* Sets the mode. `loopback` says whether the bind address is loopback-only; `no_auth` is
 * --no-auth. Returns 0, or -1 after printing why on stderr (no token can be read or
 * created, a bad tokens file, no-auth on a non-loopback bind). */
struct settings;
/* Keeps s (it must outlive the gateway: main.c's) for SIGHUP reloads. */
int hauth_init(const struct settings *s, int loopback, int no_auth);
/* 1 when requests need a token. */
int hauth_required(void);
/* Checks an Authorization header value (NULL when absent). Returns the principal's name
 * (static storage, valid until the next hauth_reload) or NULL; *why is set to a short
 * reason for the 401 ("no Authorization header", "not a Bearer credential", "unknown
 * token") when NULL is returned. */
const char *hauth_check(const char *authorization, const char **why);
/* Re-reads CODEMCP_HTTP_TOKENS_FILE (SIGHUP). On error the previous set stays; logged. */
void hauth_reload(void);
/* Prints on stderr how to configure clients for `url` (opencode, Claude Code/Desktop,
 * mcp-remote), with the single token when there is one. */
void hauth_print_snippet(const char *url);
/* `codemcp start --print-token`: prints the token (creating the file when needed) on
 * stdout. Returns the exit status. */
int hauth_print_token(const struct settings *s);
void hauth_free(void);

#endif
