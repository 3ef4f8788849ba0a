/* oauth_state — OAuth credentials shared by a fleet of gateways through the state store
 * (state.h), when CODEMCP_STATE is set.
 *
 * Redis holds one copy of each server's store entry (key codemcp:oauth:<name>, the names in
 * codemcp:oauth:names); each replica's mcp-auth.json stays its local copy, the last known
 * state it serves from while Redis is away (oauth_gw.c reads only the file, and notices when
 * this module changes it). A copy replaces another only when it is newer (obtained_at, then
 * generation): an older one never overwrites a refreshed one, in Redis (a Lua compare) or in
 * the file.
 *
 * One refresh in flight across the fleet: the refresh thread takes codemcp:oauth:<name>:lock
 * (SET NX PX with a random token, released only by its owner) as a lease of REFRESH_LEASE_MS
 * that a thread renews while the holder lives (state.h, state_lease_take): a token request may
 * take longer than a lease, a replica killed mid-refresh frees the lock within one. A replica that
 * finds it taken waits for the holder's result in Redis and uses that, so a rotating refresh token
 * is spent once. Redis unreachable: no refresh is started (the current token is used until it
 * expires; the transport retries), since another replica could be spending the same refresh token.
 */
#ifndef CODEMCP_OAUTH_STATE_H
#define CODEMCP_OAUTH_STATE_H

#include <jansson.h>

#define OAST_IMPORTED 2 /* oast_update: another replica refreshed; its entry is in the file */

/* Loop thread, at start: registers the resync on (re)connect and the messages of other
 * replicas' refreshes. No-op without a state store. */
void oast_init(void);
/* Helper threads only (blocks on Redis and the file). Runs fn (as oa_store_update would) under
 * the fleet's lock on name, after merging a newer shared copy into the file, and shares the
 * result. stale: the access token the caller saw fail or expire (when the shared copy holds
 * another live one, fn is not run: OAST_IMPORTED). Returns fn's result or OAST_IMPORTED, or
 * -1 with *why (caller frees) when Redis or the file cannot be used. */
int oast_update(const char *name, int (*fn)(json_t *store, void *ud), void *ud, const char *stale,
                char **why);
/* Helper threads: shares name's entry from the file when it is newer than Redis's copy. */
void oast_push(const char *name);
/* Loop thread: name's entry in the file changed (a login here, or an import): its two copies
 * are brought together on a helper thread (the newer wins). removed: its token is gone; with
 * no token left (`codemcp logout`) it is removed from Redis and every replica's file. */
void oast_file_changed(const char *name, int removed);
/* At exit: waits up to timeout_ms for resyncs still running. */
void oast_drain(int timeout_ms);

#endif
