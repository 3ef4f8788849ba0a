/* admin_ops — what the admin socket's methods do (admin.c only moves the lines).
 *
 * Methods (request {"method", "params"}; reply {"ok": true, ...} or {"ok": false, "error"}):
 *   info                         the instance record
 *   list                         {"servers": [{name, type, default, connected, state, auth,
 *                                  tools, listed, protocol, era, error}], "state_store"?: {ok,
 *                                  detail} (with CODEMCP_STATE)}
 *   tools                        {"tools": [{server, tool, function, on, default, session,
 *                                  summary}]} (servers whose tools are known)
 *   enable / disable             {name, make_default?}: connect / disconnect now
 *   enable_tool / disable_tool   {server, tool, make_default?}: a session override, or with
 *                                  make_default the new default written into mcp.json
 * A change regenerates the SDK through the catalog (workers reload it, sessions get one
 * tools/list_changed). make_default edits mcp.json with cfgedit (comments and other keys kept).
 * Loop thread; only the mcp.json write blocks, briefly. */
#ifndef CODEMCP_ADMIN_OPS_H
#define CODEMCP_ADMIN_OPS_H

#include <jansson.h>

#include "config.h"

/* cfg is borrowed (the gateway's loaded config; -d updates it in memory too); info is copied. */
void admops_init(struct cfg *cfg, json_t *info);
/* Handles one request (borrowed); returns the reply (new reference). */
json_t *admops_handle(json_t *req);
void admops_free(void);
/* Applies a change another replica made (admin_fleet.c): method enable, disable, enable_tool or
 * disable_tool with params (borrowed; make_default is ignored: mcp.json is this host's own).
 * replay: a change recorded earlier, applied on (re)connecting to the state store: an enable
 * then starts only a server that is disabled (never restarts one that is failing). */
void admops_apply(const char *method, json_t *params, int replay);
/* Called with each change this replica's admin made and applied (method and params borrowed),
 * so it can reach the other replicas: admin_fleet registers it at init. NULL: none. */
typedef void (*admops_change_fn)(const char *method, json_t *params);
void admops_on_change(admops_change_fn fn);

#endif
