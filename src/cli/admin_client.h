/* admin_client — the client side of the admin socket, for the admin commands and the TUI:
 * picking a running gateway (-i LABEL|CONFIG-SUBSTRING|PID) and one request/reply exchange.
 * Blocking I/O with a deadline; never used inside the gateway. */
#ifndef CODEMCP_ADMIN_CLIENT_H
#define CODEMCP_ADMIN_CLIENT_H

#include <jansson.h>
#include <stddef.h>

/* Picks the gateway to talk to. selector NULL: over (CODEMCP_ADMIN_SOCKET) when set, else the only
 * running gateway. Otherwise a record whose pid equals it, else whose label equals it, else
 * whose config path contains it. Returns the instance record (new reference; "socket" is the
 * path) or NULL with why: none running, or several (the list, to pick one with -i). */
json_t *admc_select(const char *over, const char *selector, char *why, size_t n);
/* Sends {"method": method, "params": params} (params stolen, may be NULL) and waits up to
 * timeout_ms for the reply line. The reply (new reference) or NULL with why (the gateway is
 * gone, refused, timed out...). An {"ok": false} reply is returned as is. */
json_t *admc_call(const char *socket_path, const char *method, json_t *params, int timeout_ms,
                  char *why, size_t n);
/* A table of instances (LAUNCHER PID CONFIG TRANSPORT STARTED) into buf (caller frees). */
char *admc_format_instances(json_t *instances);

#endif
