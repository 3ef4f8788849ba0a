/* cfgedit — changes one value in a JSON-with-comments file and writes it back safely.
 *
 * The edit is made in the text: the rest of the file — other keys, their order, comments,
 * indentation, trailing commas — stays byte for byte. An existing member's value is replaced;
 * a missing member (and any missing objects on the way) is inserted after the last member of
 * the innermost existing object, indented like its siblings. The result is parsed again and
 * must hold the new value, else nothing is written. Writing: a temporary file in the same
 * directory (same mode), fsync, the previous contents kept as <file>.bak (one backup,
 * replaced each time), then rename over the file (a symlink's target is what gets replaced).
 * Blocking file I/O: the gateway calls it for one admin request, on files of a few KiB. */
#ifndef CODEMCP_CFGEDIT_H
#define CODEMCP_CFGEDIT_H

#include <jansson.h>
#include <stddef.h>

/* The text with keys[0..n-1] set to value (borrowed). New string (caller frees), or NULL with
 * why (the path crosses a non-object, the text is not JSONC...). The value is written compact,
 * or with CE_PRETTY indented by 2 under its member's line. Pure: no I/O. */
#define CE_PRETTY 1
char *ce_edit_text(const char *text, const char *const *keys, size_t n, json_t *value, int flags,
                   char *why, size_t wn);
/* Reads path, edits it as above and writes it back. 0 (*changed says whether the text
 * changed), or -1 with why. */
int ce_set_in_file(const char *path, const char *const *keys, size_t n, json_t *value, int *changed,
                   char *why, size_t wn);
/* Writes text over path atomically; with keep_bak, <path>.bak holds the old contents when the
 * file existed (one backup). mode is used for a new file. 0, or -1 with why. */
int ce_write_atomic(const char *path, const char *text, size_t len, unsigned mode, int keep_bak,
                    char *why, size_t wn);
/* The value at keys of a JSONC text equals value. */
int ce_text_holds(const char *text, const char *const *keys, size_t n, json_t *value);

#endif
