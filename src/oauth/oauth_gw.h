/* oauth_gw — the gateway's side of OAuth: the bearer token for each remote
 * server's requests, what a 401/403 means, refresh (before expiry and on 401) on a helper
 * thread with the store's compare-and-swap, and a watcher that notices when `codemcp auth` or
 * `codemcp logout` (or another gateway's refresh) changed the store.
 *
 * Loop thread only (the refresh threads post back through lp_post). Tokens stay in this
 * module and the HTTP transport's headers: never in logs, traces, errors or worker data. */
#ifndef CODEMCP_OAUTH_GW_H
#define CODEMCP_OAUTH_GW_H

#include <stddef.h>

#include "config.h"

enum oagw_verdict {
    OAGW_NEEDS_AUTH, /* give up on the server: why says so (with the hint) */
    OAGW_WAIT,       /* a refresh is under way: its end calls the reconnect callback */
    OAGW_RETRY,      /* newer credentials exist already: reconnect now */
};

/* The transport's callback: the credentials of `name` changed (new token, or removed). */
typedef void (*oagw_reconnect_fn)(const char *name, int removed);
void oagw_set_reconnect(oagw_reconnect_fn fn);

/* "Authorization: Bearer ..." for s (caller frees), or NULL when the server has no stored
 * token, has "oauth": false or configures its own Authorization header. Starts a refresh
 * when the token expires within a minute. */
char *oagw_header(const struct cfg_server *s);
/* Before connecting: 1 when s's stored token has expired and a refresh was started (the
 * transport waits for the reconnect callback instead of sending a dead token), else 0. */
int oagw_prepare(const struct cfg_server *s);
/* What a 401/403 answer (with its WWW-Authenticate, may be NULL) means for s. */
enum oagw_verdict oagw_denied(const struct cfg_server *s, long status, const char *www_auth,
                              char *why, size_t n);
/* s has a stored OAuth access token (for status displays). */
int oagw_has_token(const struct cfg_server *s);
/* At exit (after the loop stopped): waits up to timeout_ms for refreshes still running, so
 * that what they obtained is stored; their results are no longer posted to the loop. */
void oagw_drain(int timeout_ms);
/* Stops the watcher (shutdown). */
void oagw_stop(void);

#endif
