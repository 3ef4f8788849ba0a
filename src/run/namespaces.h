/* namespaces — the table of Python namespaces the gateway keeps, their handles, and which
 * are dropped.
 *
 * A namespace is one set of Python variables. Each has an internal id (nid; the worker knows
 * it as "n<nid>") and a handle, a secret the client passes back as execute_python's
 * `namespace` argument (SEP-2567's state handle): "ns_" + 32 base64url characters from
 * getrandom(2) (192 bits), never derived from a session id, never told to a worker. A
 * In a fleet (CODEMCP_REPLICA_ID) a handle is "ns_" + replica_mint("ns"), so a load balancer
 * routes it to the replica holding it, and a replica given another's handle (because that
 * one is gone) says so instead of "unknown". A
 * namespace belongs to the principal of the session that created it and lives in a **home**:
 * the key that picks the worker holding it (workers.c's wk_slot_for_session). A stdio or 2025
 * HTTP session is its own home; session-less (2026) requests of a principal share that
 * principal's home (ns_principal_home). A handle used by another principal is answered as
 * unknown (no oracle: a handle of someone else's is indistinguishable from a made-up one).
 *
 * A namespace lives until it has been idle for CODEMCP_NAMESPACE_IDLE_MS (1800000), its home
 * session ends, its home's worker is ended, or room is needed: at most
 * CODEMCP_MAX_NAMESPACES (256) hold variables, at most CODEMCP_MAX_NAMESPACES_PER_PRINCIPAL (64)
 * of one principal (a session-less client that never passes its handle back cannot crowd the
 * others out). Room is made by dropping the least recently used namespace of the SAME
 * principal that is not running; another principal's is taken only once it has been idle for
 * the idle TTL, and one in use never; else the run is refused. Which home's worker workers.c
 * may end when every worker is taken adds a fair share to that rule (ns_pick_home_victim): a
 * principal holding more workers than the one waiting gives way first. A dropped namespace leaves a
 * tombstone so that its handle gets "namespace expired after N min idle; its variables were
 * discarded" instead of "unknown"; a session's implicit namespace (no handle given) starts over
 * with that note for the NameError instead. Dropping a namespace's variables is the worker's job:
 * the keys to forget are handed to the home's next run (ns_take_drops); a home left with no
 * namespace at all gets the home_empty callback (its worker is ended). Loop thread only. */
#ifndef CODEMCP_NAMESPACES_H
#define CODEMCP_NAMESPACES_H

#include "replica.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define NS_HANDLE_PREFIX "ns_"
#define NS_HANDLE_CHARS  32 /* base64url characters after the prefix (24 random bytes) */
/* A fleet replica's handles are "ns_" + an id naming the replica (replica.h): longer. */
#define NS_HANDLE_SIZE (sizeof(NS_HANDLE_PREFIX) - 1 + REPLICA_MINTED_MAX)

/* Reads the limits; home_empty(home) is called when a home no longer holds any namespace. */
struct settings;
void ns_init(const struct settings *s, void (*home_empty)(uint64_t home));
/* Who a session belongs to (a principal name, or a peer address without authentication);
 * sessions never named belong to "local" (stdio). Copied. */
void ns_set_principal(uint64_t session_id, const char *principal);
/* The home of a principal's session-less runs: a stable key per principal name for the
 * life of the process, with the top bit set, so it never equals an mcp session id (those
 * count up from 1). A transport serving a session-less request calls
 * mcp_session_set_home(s, ns_principal_home(principal)) (and may call ns_set_principal: a
 * session never named counts as its home's principal). */
uint64_t ns_principal_home(const char *principal);
/* Who asks when session session_id (of home `home`) makes a request: its principal, else its
 * home's ("local" when neither was named). Valid until the next ns_ call. */
const char *ns_asker(uint64_t session_id, uint64_t home);

/* Where a run goes. */
struct ns_ref {
    uint64_t nid;  /* the namespace (the worker's key is "n<nid>") */
    uint64_t home; /* the home holding it: the worker to run in */
    char handle[NS_HANDLE_SIZE];
};
/* Which namespace a run of session `session_id` (whose home is `home`) uses. handle: the
 * `namespace` argument, or NULL: then the session's implicit namespace when the session is
 * its own home (stdio, 2025 sessions), else a fresh one. Returns 0 with *out filled, or -1
 * with a message for the model in err (malformed, unknown or foreign, expired handle). */
int ns_resolve(uint64_t session_id, uint64_t home, const char *handle, struct ns_ref *out,
               char *err, size_t errlen);
/* A run in namespace nid starts. Returns 0, sets *note to a message about variables lost
 * since its last run (static storage, "" when none) and *fresh to 1 when the namespace has
 * no variables yet; or -1 with err filled when no room can be made. */
int ns_run_start(uint64_t nid, const char **note, int *fresh, char *err, size_t errlen);
/* The run ended (any way). */
void ns_run_end(uint64_t nid);
/* Worker keys ("n7") of namespaces dropped in `home` since the last call: a new array, or
 * NULL when none. The caller sends them with the home's next run. */
json_t *ns_take_drops(uint64_t home);
/* The session ended: forget it and drop the namespaces it was home of. */
void ns_forget(uint64_t session_id);
/* workers.c: the worker of `home` was ended while the home lives on; the namespaces that
 * had variables there are gone (tombstones). */
void ns_home_lost(uint64_t home);
/* One owned worker slot, as workers.c shows it to ns_pick_home_victim. */
struct ns_holder {
    uint64_t home; /* the home owning the slot */
    int may_go;    /* no run on it, and held past CODEMCP_WORKER_MIN_HOLD_MS */
};
/* workers.c: every worker is owned and a run of `for_home` waits for one; which of the
 * holders[0..n) (every owned slot) loses its worker? The index, or -1 when none may. Fair
 * share first: a home of a principal holding more workers than for_home's principal (the
 * principal holding most, its least recently used home); then for_home's own principal's least
 * recently used home; then another principal's home idle past the idle TTL. Only holders that
 * may_go and whose namespaces are not running are taken. O(n^2 + n * namespaces). */
int ns_pick_home_victim(uint64_t for_home, const struct ns_holder *h, size_t n);
/* Namespaces holding variables now. */
size_t ns_count(void);
void ns_free_all(void);

#endif
