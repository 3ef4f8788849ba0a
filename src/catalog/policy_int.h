/* policy_int — what the files of the policy engine share (policy.c, policy_rules.c,
 * policy_ext.c, policy_budget.c, policy_budget_fleet.c); nothing outside src/catalog/policy*.c
 * includes it. */
#ifndef CODEMCP_POLICY_INT_H
#define CODEMCP_POLICY_INT_H

#include <jansson.h>
#include <stddef.h>

#include "linear_re.h"
#include "policy.h"

/* Compiles policy.rules of a config root (NULL: none) in place of the current rules. A rule
 * that does not compile is kept as one that denies every call (fail-closed); its error is
 * logged with the rule's line in the file at `path` (may be NULL). Returns the rule count. */
size_t rules_load(json_t *policy, const char *path);
/* The first rule that decides the call: 1 with d filled, 0 when no rule names its
 * server/tool (then it is allowed: policy_decide has checked the allow/deny lists before). */
int rules_decide(const struct policy_call *c, struct policy_decision *d);

/* Reads the top-level "budgets" list (NULL: none), replacing the current budgets and counts. */
void budgets_load(json_t *list, const char *path);

/* ---- budgets counted across a fleet (policy_budget_fleet.c) ---- */
/* 1 when a state store is configured: the per-principal windows are then counted there. */
int budget_fleet_on(void);
/* The fleet's count of budget's slot ('c' calls, 'r' runs, 'p' CPU ms) for principal in the
 * current wall-clock window of window_s (as this replica knows it: never waits for Redis);
 * *left_ms: until the window ends. */
long budget_fleet_used(const char *budget, char slot, long window_s, const char *principal,
                       int64_t *left_ms);
/* Counts n more there (sent to Redis soon after; limit decides how soon). */
void budget_fleet_add(const char *budget, char slot, long window_s, const char *principal, long n,
                      long limit);

#endif
