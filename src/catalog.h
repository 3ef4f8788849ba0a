/* catalog — the current generated SDK: source, description and function map.
 *
 * Rebuilt from the upstream registry whenever a server's tools or state change (and,
 * later, when learned shapes change). Consumers (MCP front, workers, control channel)
 * read the current version; a version number tells them whether they are stale.
 * Loop thread only. */
#ifndef CODEMCP_CATALOG_H
#define CODEMCP_CATALOG_H

#include <jansson.h>

void cat_init(void);
/* Regenerates from the upstreams; calls the listener if source or description changed. */
void cat_rebuild(void);
void cat_set_listener(void (*on_change)(void));
int cat_version(void);
/* Changes only when the SDK source changes (the description may change alone). */
int cat_source_version(void);
const char *cat_source(void);
const char *cat_description(void);
/* {"<fn>": {"server","tool","mutation",...}} borrowed; never NULL. */
json_t *cat_functions(void);
/* SDK names of tools disabled in the config (borrowed array): the validator names them. */
json_t *cat_disabled(void);
/* The function entry for (server, tool), borrowed, or NULL when not in the SDK. */
json_t *cat_find(const char *server, const char *tool);
/* Learned/seeded shape exemplars for the description: {"<fn>": "<exemplar>"} (borrowed,
 * may be NULL). Set by the shapes module; triggers a rebuild when it differs. */
void cat_set_exemplars(json_t *exemplars);
void cat_free(void);

#endif
