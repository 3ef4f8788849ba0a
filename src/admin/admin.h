/* admin — the gateway's admin socket: a Unix stream socket (mode 0600) served inside the one
 * event loop, and the instance record beside it (see admin_paths.h for where both live).
 *
 * Protocol: the client sends one JSON object line {"method": ..., "params": {...}} and gets
 * one JSON object line back ({"ok": true, ...} or {"ok": false, "error": "..."}), then the
 * gateway closes the connection. Peers are checked with SO_PEERCRED: only the gateway's own
 * user, or root. The listening socket and each connection are adopted by the loop (raw file
 * descriptors); nothing here blocks: a connection that sends no full line within 10 s, or more
 * than 1 MiB, is closed. What the methods do lives in admin_ops.c. */
#ifndef CODEMCP_ADMIN_H
#define CODEMCP_ADMIN_H

#include "config.h"

/* Creates the socket and the record after lp_init(). transport "stdio" or "http" (url: the
 * served URL, NULL for stdio). A gateway without an admin socket still serves: -1 is logged,
 * not fatal. */
/* instance_label: CODEMCP_INSTANCE_LABEL (NULL: the parent process's name). */
int adm_start(struct cfg *cfg, const char *transport, const char *url, const char *instance_label);
/* Removes the socket and the record (at exit). */
void adm_stop(void);

#endif
