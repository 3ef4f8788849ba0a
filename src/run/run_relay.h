/* run_relay — the input relay's pure pieces (runs.c owns the relay itself: the waiting run,
 * its deadline, the tombs): whether a 2026 client can answer what an upstream asks for, and
 * the requestState handed to it. No state, nothing sent.
 *
 * In a fleet (replica.h) a requestState is "rs_" and an id sealed to this replica, so a load
 * balancer routes the retry (which carries it only in its body) to the replica whose run
 * waits for it (contrib/fleet/haproxy.cfg), and a replica that gets another's retry anyway
 * says whose it is instead of "unknown". */
#ifndef CODEMCP_RUN_RELAY_H
#define CODEMCP_RUN_RELAY_H

#include "replica.h"

#include <jansson.h>
#include <stddef.h>

/* Room for a requestState and its NUL: "rs_" and a sealed replica id (the longest). */
#define RUN_RELAY_STATE_MAX (3 + REPLICA_MINTED_MAX)

/* Whether a client with capabilities caps can answer every one of requests (an InputRequests
 * map, borrowed; absent or empty: only a requestState to echo, which any 2026 client can). */
int run_relay_can_answer(json_t *caps, json_t *requests);

/* A fresh requestState, NUL-terminated in out: "rs_" and 32 base64url characters from 24
 * random bytes, or in a fleet "rs_" and an id sealed to this replica. 0, or -1 without
 * randomness. */
int run_relay_mint_state(char out[RUN_RELAY_STATE_MAX]);

/* In a fleet: -1 with the reason in err when state is a real requestState of another replica
 * (or of this replica before it restarted), so its run is not here; 0 otherwise. */
int run_relay_elsewhere(const char *state, char *err, size_t errlen);

#endif
