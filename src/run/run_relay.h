/* run_relay — the input relay's pure pieces (runs.c owns the relay itself: the waiting run,
 * its deadline, the tombs): whether a 2026 client can answer what an upstream asks for, and
 * the requestState handed to it. No state, nothing sent. */
#ifndef CODEMCP_RUN_RELAY_H
#define CODEMCP_RUN_RELAY_H

#include <jansson.h>

/* Whether a client with capabilities caps can answer every one of requests (an InputRequests
 * map, borrowed; absent or empty: only a requestState to echo, which any 2026 client can). */
int run_relay_can_answer(json_t *caps, json_t *requests);

/* A fresh requestState: "rs_" and 32 base64url characters from 24 random bytes, NUL-terminated
 * in out. 0, or -1 without randomness. */
int run_relay_mint_state(char out[48]);

#endif
