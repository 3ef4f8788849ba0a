/* usage — how often each SDK function was called, kept across sessions and restarts, so the
 * budgeted execute_python description shows the signatures people actually use first.
 *
 * Counts live in $CODEMCP_USAGE_FILE (default $XDG_STATE_HOME/codemcp/usage.json, else
 * ~/.local/state/codemcp/usage.json; "off" keeps them in memory only), per principal unless
 * learning is shared. Written at most every
 * few seconds from a timer and at shutdown, atomically (temp file + rename, mode 0600).
 * Loop thread only; never blocks on anything but a small local file. */
#ifndef CODEMCP_USAGE_H
#define CODEMCP_USAGE_H

#include <jansson.h>

/* shared_scope: every principal's calls count together (CODEMCP_SHARE_LEARNING, shapes.h);
 * else each principal has counts of its own, so the order one is shown never tells what
 * another calls. */
struct settings;
/* s: CODEMCP_USAGE_FILE, XDG_STATE_HOME, HOME (where the counts are kept). */
void use_init(const struct settings *s, int shared_scope);
/* One successful call of SDK function fn by a run of principal (NULL: the shared counts). */
void use_note(const char *principal, const char *fn);
/* Function names, most called first by principal (borrowed; valid until the next use_note),
 * or NULL. */
json_t *use_ranked(const char *principal);
/* ---- a fleet's shared counts (usage_fleet.c) ---- */
/* With CODEMCP_STATE (after use_init): counts are summed across the replicas in Redis. */
void use_fleet_init(void);
/* fn(scope, fn) after each counted call (scope "" shared, else the principal). */
void use_set_fleet_hook(void (*fn)(const char *scope, const char *fn));
/* Replaces scope's counts with the fleet's (borrowed {fn: n}). */
void use_set_counts(const char *scope, json_t *counts);
/* Writes pending counts and frees everything. */
void use_free(void);

#endif
