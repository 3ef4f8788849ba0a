/* replica — which replica of a fleet this gateway is, and the ids it mints that say so.
 *
 * Behind a load balancer, state lives in one replica: a 2025 session (Mcp-Session-Id, the
 * legacy /sse sessionId) and a namespace handle (execute_python's `namespace`). The balancer
 * routes a request to the replica holding its state by reading the replica id at the head
 * of what it carries ("<replica>." for session ids, "ns_<replica>." for handles), without
 * reading bodies. Such an id is
 *
 *     <replica>.<random: 48 hex><boot: 8 hex>.<mac: 32 hex>
 *
 * boot is drawn once per process, so a replica that restarted under the same name knows an
 * id of its previous life; mac is HMAC-SHA256 (truncated to 128 bits) under the fleet
 * secret over the kind of id ("sid", "ns") and everything before it: a client cannot make
 * an id that names another replica (or reuse a session id as a handle), and every replica
 * can tell a real id of a lost replica ("its state is gone") from a made-up one. Without
 * CODEMCP_REPLICA_ID nothing changes: ids are the single-host ones (random only). Loop
 * thread only (the boot id and the secret are set once at start). */
#ifndef CODEMCP_REPLICA_H
#define CODEMCP_REPLICA_H

#include <stddef.h>

#define REPLICA_ID_MAX 63 /* characters of a replica id: [a-z0-9-], as a Kubernetes pod name */
/* Longest minted id: replica "." boot+random "." mac, plus the NUL. */
#define REPLICA_MINTED_MAX (REPLICA_ID_MAX + 1 + 8 + 48 + 1 + 32 + 1)

/* Sets the replica id and the fleet secret (both may be NULL or "": not a fleet). Returns 0,
 * or -1 with a message for stderr in err (a bad id, an id without a secret, a short secret). */
int replica_init(const char *id, const char *secret, char *err, size_t errlen);
/* The replica id, or NULL when this gateway is not part of a fleet. */
const char *replica_id(void);
/* Writes a new id of `kind` ("sid" or "ns") into out (at least REPLICA_MINTED_MAX bytes).
 * 0, or -1 when no randomness could be had. Only in a fleet (replica_id() != NULL). */
int replica_mint(const char *kind, char *out, size_t n);

enum replica_verdict {
    REPLICA_MINE,    /* minted by this process */
    REPLICA_EARLIER, /* minted by this replica before it restarted: its state is gone */
    REPLICA_OTHER,   /* minted by another replica of the fleet (named in *who) */
    REPLICA_FORGED,  /* not an id of this fleet (bad form or mac) */
};
/* What an id of `kind` is; who (REPLICA_ID_MAX + 1 bytes) receives the replica it names for
 * REPLICA_OTHER and REPLICA_EARLIER. Only in a fleet. */
enum replica_verdict replica_check(const char *kind, const char *id, char *who);

#endif
