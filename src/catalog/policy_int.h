/* policy_int — what the files of the policy engine share (policy.c, policy_rules.c,
 * policy_re.c); nothing outside src/catalog/policy*.c includes it. */
#ifndef CODEMCP_POLICY_INT_H
#define CODEMCP_POLICY_INT_H

#include <jansson.h>
#include <stddef.h>

#include "policy.h"

/* A linear-time pattern (policy_re.c): Thompson NFA, whole-value match, never backtracks. */
struct pre;
/* NULL with err filled when the pattern is not in the supported subset. */
struct pre *pre_compile(const char *pattern, size_t len, int icase, char *err, size_t errlen);
/* A glob (`*`, `?`, `\` quotes) as a pattern. */
struct pre *pre_glob(const char *glob, size_t len, char *err, size_t errlen);
/* 1 when the whole of s[0..len) matches. O(len * pattern size). */
int pre_match(const struct pre *re, const char *s, size_t len);
void pre_free(struct pre *re);

/* Compiles policy.rules of a config root (NULL: none) in place of the current rules. A rule
 * that does not compile is kept as one that denies every call (fail-closed); its error is
 * logged with the rule's line in the file at `path` (may be NULL). Returns the rule count. */
size_t rules_load(json_t *policy, const char *path);
/* The first rule that decides the call: 1 with d filled, 0 when no rule names its
 * server/tool (the call is left to the older allow/deny lists). */
int rules_decide(const struct policy_call *c, struct policy_decision *d);

/* Reads the top-level "budgets" list (NULL: none), replacing the current budgets and counts. */
void budgets_load(json_t *list, const char *path);

#endif
