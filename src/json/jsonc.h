/* jsonc — JSON with comments (opencode's config dialect) turned into plain JSON in place.
 *
 * `//` line comments and block comments become spaces, and a comma directly before a closing
 * `}` or `]` (whitespace and comments between them allowed) becomes a space. Newlines stay
 * where they were, so a parser's line:column positions still point into the original file.
 * Strings are left alone (a "//" inside a URL is not a comment). */
#ifndef CODEMCP_JSONC_H
#define CODEMCP_JSONC_H

#include <jansson.h>
#include <stddef.h>

void jsonc_strip(char *text, size_t len);
/* The one JSONC loader (codemcp's config, setup's harness files, cfgedit's check): strips text
 * in place as above, then parses it with jansson's flags. A new reference, or NULL with err
 * filled; err's line:column point into the original text. */
json_t *jsonc_parse(char *text, size_t len, size_t flags, json_error_t *err);

#endif
