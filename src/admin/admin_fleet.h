/* admin_fleet — admin changes (enable/disable a server, a tool on/off) reaching every replica
 * of a fleet through the state store (state.h), when CODEMCP_STATE is set.
 *
 * A change made on one replica's admin socket is published; every other replica applies it as
 * if its own admin had asked (without make_default: mcp.json is each host's own), so its
 * catalog rebuilds and its sessions get tools/list_changed. The latest change per server and
 * per tool is also kept in the hash codemcp:admin, which a replica applies when it (re)connects:
 * one started later, or cut off while the change was made, catches up. A change made while
 * Redis is away is applied locally at once and shared when it is back. Loop thread only. */
#ifndef CODEMCP_ADMIN_FLEET_H
#define CODEMCP_ADMIN_FLEET_H

#include <jansson.h>

/* Registers the hooks (no-op without a state store): the state store's, and admin_ops'
 * change callback, through which a change this replica's admin made and applied (method
 * "enable", "disable", "enable_tool" or "disable_tool", params borrowed) is shared. */
void admfleet_init(void);

#endif
