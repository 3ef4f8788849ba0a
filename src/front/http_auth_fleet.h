/* http_auth_fleet — the HTTP front's bearer tokens shared by a fleet of replicas through the
 * state store (state.h), when CODEMCP_STATE is set. Tokens travel as SHA-256 digests only.
 *
 * Redis holds codemcp:tokens {hex digest: principal} and the set codemcp:revoked (digests).
 * Each replica adds its own tokens (CODEMCP_HTTP_TOKEN, the tokens file, the owner token);
 * a token that a SIGHUP reload of one replica's tokens file dropped is revoked for the whole
 * fleet, one that a reload added is un-revoked. A replica accepts its own tokens and the
 * fleet's, and refuses a revoked one even when its own (stale) file still lists it; a restart
 * never brings a revoked token back (only a reload that adds it does). The loop keeps the last
 * copy it read (refreshed on each change message and on reconnect), so checking a token never
 * waits for Redis, and a Redis outage keeps the last known tokens and revocations. Loop thread. */
#ifndef CODEMCP_HTTP_AUTH_FLEET_H
#define CODEMCP_HTTP_AUTH_FLEET_H

#include <stddef.h>

#define HAF_DIGEST_LEN 32

/* This replica's tokens: at start (reload 0) and after each SIGHUP reload (reload 1: the
 * differences to the previous set are revoked / un-revoked fleet-wide). */
void haf_local(const char *const *names, const unsigned char (*digests)[HAF_DIGEST_LEN], size_t n,
               int reload);
/* Looks a digest up in the fleet's copy: the principal (valid until exit) or NULL; *revoked
 * is 1 when the fleet revoked it. Compares with every entry (no early exit). */
const char *haf_check(const unsigned char d[HAF_DIGEST_LEN], int *revoked);

#endif
