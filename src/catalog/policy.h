/* policy — fail-closed allow/deny rules for tool calls, checked by the gateway before a
 * call is dispatched (the worker's own checks are courtesy only).
 *
 * Rules, most specific first (within one level, deny beats allow):
 *   1. per tool:   "tools": {"write_file": {"policy": "deny" | "allow"}}
 *   2. per server: "policy": {"allow": ["read_*", ...], "deny": ["write_file", ...]}
 *                  (tool-name globs; an allow list denies everything it does not match)
 *   3. global:     top-level "policy": {"allow": [...], "deny": ["filesystem_write_*"]}
 *                  (globs over SDK function names)
 * A malformed rule denies every tool it could apply to (fail-closed) and is logged once. */
#ifndef CODEMCP_POLICY_H
#define CODEMCP_POLICY_H

#include <stddef.h>

#include "config.h"

/* Reads the rules of a loaded config (borrowed; must outlive the policy). */
void policy_init(const struct cfg *cfg);
/* 1 = allowed; 0 = denied with the rule in why. */
int policy_allows(const char *server, const char *tool, const char *fn, char *why, size_t n);

#endif
