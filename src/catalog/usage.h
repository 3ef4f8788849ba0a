/* usage — how often each SDK function was called, kept across sessions and restarts, so the
 * budgeted execute_python description shows the signatures people actually use first.
 *
 * Counts live in $CODEMCP_USAGE_FILE (default $XDG_STATE_HOME/codemcp/usage.json, else
 * ~/.local/state/codemcp/usage.json; "off" keeps them in memory only). Written at most every
 * few seconds from a timer and at shutdown, atomically (temp file + rename, mode 0600).
 * Loop thread only; never blocks on anything but a small local file. */
#ifndef CODEMCP_USAGE_H
#define CODEMCP_USAGE_H

#include <jansson.h>

struct settings;
void use_init(const struct settings *s);
/* One successful call of SDK function fn. */
void use_note(const char *fn);
/* Function names, most called first (borrowed; valid until the next use_note). */
json_t *use_ranked(void);
/* Writes pending counts and frees everything. */
void use_free(void);

#endif
