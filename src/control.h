/* control — the gateway side of the control channel to workers.
 *
 * A WebSocket server on loopback (subprotocol "codemcp-control", path /control) inside
 * the gateway's event loop. A worker's first frame must be its per-start token (checked
 * in constant time by workers.c); then JSON-RPC 2.0 flows both ways. This module owns
 * connections and framing, and the routing and enforcement of the worker's call_tool
 * requests: the run must be live and belong to that worker, the tool must exist and be
 * enabled, policy and mutation rules hold, dry-run writes are stubbed — whatever the
 * worker's Python claims. Loop thread only. */
#ifndef CODEMCP_CONTROL_H
#define CODEMCP_CONTROL_H

#include <jansson.h>
#include <stdint.h>

/* Listens on 127.0.0.1 (ephemeral port). 0 / -1. */
int ctl_init(void);
/* "ws://127.0.0.1:PORT/control" for the worker's environment. */
const char *ctl_url(void);
/* Sends msg (stolen) to the connection. -1 if it is gone. */
int ctl_send(uint64_t conn_id, json_t *msg);
/* Closes a connection (e.g. its worker is being killed). */
void ctl_close(uint64_t conn_id);
/* Cancels the upstream calls still in flight for a run (run ended or cancelled). */
void ctl_cancel_run_calls(const char *run_id, const char *reason);
/* Tool calls in flight through the control channel. */
size_t ctl_calls_in_flight(void);
void ctl_free_all(void);

#endif
