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

/* Sets up the control vhost: no listener by default (socketpairs, ctl_adopt), or one on
 * 127.0.0.1 (CODEMCP_CONTROL_TCP) or a private Unix socket (CODEMCP_CONTROL_UNIX). 0 / -1. */
int ctl_init(void);
/* The listener's URL for the worker's environment ("ws://127.0.0.1:PORT/control",
 * "unix:/path"), or "" when workers get a socketpair. */
const char *ctl_url(void);
/* Takes the gateway's end of a worker's socketpair (owned by lws from now on; the worker
 * still shakes hands and sends its token). 0 / -1 (fd not taken: caller closes). */
int ctl_adopt(int fd);
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
