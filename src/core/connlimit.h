/* connlimit — bounds on the connections a listener keeps open, so no peer can exhaust the
 * gateway's descriptors or starve other clients.
 *
 * Each listener is a pool. A connection is PENDING from accept until it proves itself (the
 * HTTP front: its request headers arrived; the control channel: its worker token was
 * accepted), REQUEST while an HTTP body is being read, and ACTIVE afterwards. Rules:
 *   - pending connections have a deadline (HTTP headers: CODEMCP_HTTP_HEADER_TIMEOUT_MS,
 *     10000; control token: CODEMCP_CONTROL_AUTH_TIMEOUT_MS, 1000); a body has
 *     CODEMCP_HTTP_BODY_TIMEOUT_MS (30000);
 *   - making room: a new connection from a peer that already has
 *     CODEMCP_HTTP_MAX_PENDING_PER_PEER (32) pending ones closes one of that peer's pending
 *     connections past the grace period (CODEMCP_HTTP_PENDING_GRACE_MS, 1000; 0 on the control
 *     listener); when CODEMCP_HTTP_MAX_PENDING (1024, at most half the descriptors) are
 *     pending in all
 *     (CODEMCP_CONTROL_MAX_PENDING, 8, on the control listener), one pending connection is
 *     closed whatever its age, the new one's peer's first when that peer is over its share.
 *     The victim: past the grace period before within it; among those, ones that never sent a
 *     byte, then ones stuck mid-request; young ones mid-request before young ones that have
 *     not spoken yet; oldest first in each class; a connection whose request head is already
 *     readable is passed over. So slowloris holders (old) go first, and a client that connects
 *     and sends its request within the grace period is not closed unless the flood opens more
 *     than CODEMCP_HTTP_MAX_PENDING connections within that period (all local clients share
 *     127.0.0.1, so the per-peer share does not shield them from each other);
 *   - at most CODEMCP_HTTP_MAX_CONN_PER_PEER (512) HTTP connections per peer in any phase: a
 *     new one closes one of the peer's pending connections (chosen as above), or is refused
 *     at accept when none is pending.
 * Out of descriptors (accept fails with EMFILE/ENFILE, which lws 4.1 would retry in a busy
 * loop, and so would any listener that just returns to the loop): a reserved descriptor is
 * freed, every listener's queue is accepted and closed at once, and the reserve is taken again
 * (logged at most every 10 s with a count). lws reports its failures through the loop; our own
 * listeners (the control channel's) call lp_accept_failed() (loop.h), which gets here too.
 * Hitting a limit is logged at once, then at most once per 10 s with a count. Connections
 * are keyed by an opaque handle: an lws one (the HTTP front) between
 * SERVER_NEW_CLIENT_INSTANTIATED and WSI_DESTROY (the only window in which lws guarantees it),
 * or one of the owner's (the control channel: its connection, between cl_add and cl_remove)
 * with the ops that reach it; nothing outside this file keeps them. Loop thread only. */
#ifndef CODEMCP_CONNLIMIT_H
#define CODEMCP_CONNLIMIT_H

#include <sys/types.h>

struct lws;

enum cl_pool { CL_HTTP, CL_CONTROL, CL_NPOOLS };
enum cl_phase { CL_PENDING, CL_REQUEST, CL_ACTIVE };

/* A pool's limits (from the settings, chosen by the listener's owner). */
struct cl_limits {
    long max_pending;          /* connections not yet past their request head (-1: 1024, at
                                  most half the descriptors) */
    long max_pending_per_peer; /* of those, one address's */
    long max_conn_per_peer;    /* one address's in any state (0: no cap) */
    long pending_ms;           /* the head must be complete within this */
    long body_ms;              /* a request body must arrive within this */
    long grace_ms;             /* a new connection is not closed to make room during this */
};
/* Keeps the pool's limits (copied). Call once before it accepts. */
void cl_init(enum cl_pool pool, const struct cl_limits *lim);
/* Unix-socket peers for which is_ours(pid) (SO_PEERCRED) says yes are the gateway's own
 * children (workers): they are never closed to make room and get trusted_ms, not the pending
 * deadline, to prove themselves (their token is still checked). */
void cl_trust_peers(enum cl_pool pool, int (*is_ours)(pid_t pid), long trusted_ms);
/* How the pool reaches a connection that is not an lws one (its owner's handle). */
struct cl_conn_ops {
    /* Its socket: only peeked (MSG_PEEK) and asked for SO_PEERCRED, never read or closed. */
    int (*fd)(void *h);
    /* Close it (it is being pushed out or is past its deadline): the owner stops serving it
     * and calls cl_remove, now or later (until then it is no longer counted). Never called
     * from inside the owner's own cl_add or cl_set_phase. */
    void (*close)(void *h);
    /* 1 when it has sent part of its request (ranks it as a slow sender, not an idle one).
     * May be NULL (never). */
    int (*mid_request)(void *h);
};

/* A new connection of the pool (h: the owner's handle, unique while tracked; ops static;
 * peer: the address other connections from the same client share, or ""). 0 keeps it, -1
 * refuses it (the owner closes it; it is not tracked). May close older ones to make room. */
int cl_add(enum cl_pool pool, void *h, const struct cl_conn_ops *ops, const char *peer);
/* The connection is gone (unknown handles are ignored). */
void cl_remove(enum cl_pool pool, const void *h);
/* LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED: cl_add with the lws ops. 0 keeps, -1 refuses. */
int cl_on_accept(enum cl_pool pool, struct lws *wsi);
/* LWS_CALLBACK_WSI_DESTROY (any wsi of the vhost; unknown ones are ignored): cl_remove. */
void cl_on_destroy(enum cl_pool pool, struct lws *wsi);
/* h: the wsi or the owner's handle. */
void cl_set_phase(enum cl_pool pool, const void *h, enum cl_phase phase);
void cl_free_all(void);

#endif
