/* policy — fail-closed allow/deny rules for tool calls, checked by the gateway before a
 * call is dispatched (the worker's own checks are courtesy only).
 *
 * Rules, most specific first (within one level, deny beats allow):
 *   1. per tool:   "tools": {"write_file": {"policy": "deny" | "allow"}}
 *   2. per server: "policy": {"allow": ["read_*", ...], "deny": ["write_file", ...]}
 *                  (tool-name globs; an allow list denies everything it does not match)
 *   3. global:     top-level "policy": {"allow": [...], "deny": ["filesystem_write_*"]}
 *                  (globs over SDK function names)
 * A malformed rule denies every tool it could apply to (fail-closed) and is logged once.
 *
 * Then the ordered rules, `"policy": {"rules": [...]}` at the top level (policy_rules.c):
 * they see who asks (the run's principal: the HTTP bearer principal, `local` for stdio and
 * the admin socket), the server, the tool, read or write, dry run, and the final argument
 * values; the first rule that matches decides (allow, deny with a message, or dry_run: the
 * call is stubbed as in a dry run), and when rules name a tool but none matches, the call is
 * denied. The lists above are checked first: a call must pass both. docs/policy.md has the
 * format and worked examples. */
#ifndef CODEMCP_POLICY_H
#define CODEMCP_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* Reads the rules of a loaded config (borrowed; must outlive the policy). */
void policy_init(const struct cfg *cfg);

enum policy_effect { POLICY_DENY = 0, POLICY_ALLOW = 1, POLICY_DRY_RUN = 2 };

/* One call as the gateway is about to route it. */
struct policy_call {
    const char *principal; /* NULL: "local" */
    const char *server, *tool, *fn;
    int mutation, dry_run;
    const char *args; /* the final arguments as JSON text (NULL: none) */
    size_t args_len;
};

struct policy_decision {
    enum policy_effect effect;
    char rule[128]; /* the rule that decided ("" when none did: no rule names the tool) */
    char why[600];  /* for a deny: the message the model sees; else how it was decided ("" when no
                       rule or engine decided: allowed by default) */
};

/* Decides one call with its final arguments. Never fails open: a rule that cannot be read
 * denies. */
enum policy_effect policy_decide(const struct policy_call *c, struct policy_decision *d);

/* Budgets (policy_budget.c, top-level "budgets"): counts an allowed call c of run run_id
 * against every budget of its principal. 0, or -1 when one is spent (nothing counted): why
 * names the budget and when it resets; the call fails with kind "budget". */
int budgets_take(const struct policy_call *c, const char *run_id, char *why, size_t n);
/* Counts a run principal asks for against its "runs" budgets: 0, or -1 with why. */
int budgets_take_run(const char *principal, char *why, size_t n);
/* The CPU milliseconds principal has left of its tightest "cpu_s" budget this window, or -1
 * when none applies to it (its runs' CPU time then need not be measured). */
int64_t budgets_cpu_left(const char *principal);
/* Charges ms of CPU time its runs used to principal's "cpu_s" budgets: 0, or -1 with why
 * (naming the budget and when it resets) when one is now spent. */
int budgets_cpu_spend(const char *principal, int64_t ms, char *why, size_t n);
/* With CODEMCP_STATE (after state_init): the per-principal budget windows are counted across
 * the fleet in Redis (policy_budget_fleet.c). */
void budget_fleet_init(void);

/* The external engine (policy_ext.c), opt-in with CODEMCP_AUTHZ_URL: a call the rules allow
 * (or stub) is also put to it, in OPA's Data API form; no answer, an error or a malformed
 * answer denies. Keeps url (CODEMCP_AUTHZ_URL; NULL or empty: no engine) and timeout_ms
 * (CODEMCP_AUTHZ_TIMEOUT_MS) and starts the HTTP thread; -1 when it cannot (then every call it
 * would be asked about is denied). Call once at start-up. */
int policy_engine_init(const char *url, long timeout_ms);
typedef void (*policy_done_fn)(void *ud, const struct policy_decision *d);
/* Puts c (allowed or stubbed by the rules in *d) to the engine. 1: decided now (no engine,
 * *d a deny already, a cached answer, or the engine cannot be asked): *d holds the decision.
 * 0: the answer comes later through done(ud, d) on the loop; nothing blocks meanwhile. */
int policy_engine_ask(const struct policy_call *c, const char *run, uint64_t session,
                      struct policy_decision *d, policy_done_fn done, void *ud);

/* The rules that can apply to principal's calls (principal filter left out), as written, for
 * the worker's pre-flight check (a courtesy: the gateway still decides every call); NULL when
 * there are no rules. New reference. */
json_t *policy_worker_rules(const char *principal);

#endif
