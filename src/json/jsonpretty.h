/* jsonpretty — indented JSON text for people (the smoke output, --smoke's envelope), with the
 * big integers of jsonfast.h written as their digits, which json_dumps cannot do (their
 * bytes are not UTF-8 on purpose, so json_dumps refuses them). Owns only formatting: leaves
 * (strings, numbers) are written by jf_append, so their bytes are jf_dumps' bytes. Must not
 * be used on the hot path (it sorts keys). */
#ifndef CODEMCP_JSONPRETTY_H
#define CODEMCP_JSONPRETTY_H

#include <jansson.h>

/* The bytes of json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS), big integers as digits;
 * caller frees. NULL where jf_dumps gives NULL (not UTF-8, too deep) or v is NULL. */
char *jf_dumps_indented(const json_t *v);

#endif
