/* health — whether this gateway is alive and ready for new work, and its drain.
 *
 * A load balancer or Kubernetes asks GET /healthz (the process answers: alive) and GET
 * /readyz (send new sessions here) on the HTTP port, without a token (serve_http.c answers
 * both before the Host and token doors). Ready means every registered check passes and the
 * gateway is not draining. Checks are registered at start (main.c: the upstreams, and the
 * shared state store, reported but not required); their names and short reasons are all
 * /readyz reveals.
 *
 * The drain (SIGTERM on `codemcp start`): /readyz fails at once, the fronts refuse new
 * sessions and new requests (health_draining()), runs in flight finish until none is left or
 * CODEMCP_DRAIN_MS has passed, then done() is called (main.c shuts down). Loop thread only. */
#ifndef CODEMCP_HEALTH_H
#define CODEMCP_HEALTH_H

#include <stddef.h>

struct buf;

/* A check: 1 when fine, else 0 with a short reason for /readyz in why (no secrets). */
typedef int (*health_check_fn)(void *ud, char *why, size_t n);
/* Registers a check under name (copied); at most HEALTH_MAX_CHECKS. A required check that
 * fails makes the gateway not ready; one that is not required is only reported ("degraded"):
 * for what every replica would lose at once (the shared state store), where failing them
 * all would turn a degraded fleet into no fleet. */
#define HEALTH_MAX_CHECKS 8
void health_add_check(const char *name, health_check_fn fn, void *ud, int required);
/* Writes /readyz's JSON body into out; 1 when ready (HTTP 200), 0 when not (503). */
int health_ready(struct buf *out);
/* 1 once a drain has begun. */
int health_draining(void);
/* Begins the drain: busy() says how much work is still in flight; done() is called once it
 * says 0 or after drain_ms. A second call changes nothing. */
void health_drain(long drain_ms, size_t (*busy)(void), void (*done)(void));
/* The gateway is shutting down (with or without a drain): /readyz fails from now on. */
void health_stopping(void);
void health_free(void);

#endif
