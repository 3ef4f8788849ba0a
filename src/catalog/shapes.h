/* shapes — learns the key structure of each tool's results (CODEMCP_LEARN_SHAPES).
 *
 * Two uses: the full structure (union over every call and entity variant, seeded from
 * the tool's outputSchema) goes to the workers, whose pre-flight validator rejects a
 * literal field access that cannot exist; a small bounded exemplar (depth <= 3, <= 12
 * fields, <= 600 bytes, arrays shown as one element) goes under the tool in the
 * execute_python description. Wire form (shared with python/codemcp_rt/shapes.py):
 *   {"k":"object","fields":{name: shape}[,"open":true]}  {"k":"array","items":shape}
 *   {"k":"leaf","t":"str|int|float|bool|None"}           {"k":"any"}
 * "open" objects (schema allows unknown keys) and "any" are never used to flag code.
 * Learning runs on the loop after a call completed: it never delays the call's answer
 * to the worker (the answer is sent first) and never touches a run in flight. */
#ifndef CODEMCP_SHAPES_H
#define CODEMCP_SHAPES_H

#include <jansson.h>
#include <stddef.h>

void shapes_init(int learn); /* learn: CODEMCP_LEARN_SHAPES */
/* Called after the learned set changed (to ship it to the workers). */
void shapes_set_listener(void (*on_change)(void));
int shapes_enabled(void);
/* Seeds from the catalog's outputSchemas (call after each catalog rebuild). */
void shapes_seed(void);
/* Learns from a successful CallToolResult (borrowed) of SDK function fn. */
void shapes_learn(const char *fn, json_t *call_result);
/* The same from the result's bytes (a canonical JSON object, jsonscan.h): a result whose
 * structure was learned before for fn is skipped without building its tree. */
void shapes_learn_text(const char *fn, const char *raw, size_t len);
/* {"fn": shape} (borrowed) and a version that changes when it does. */
json_t *shapes_all(void);
int shapes_version(void);
/* Exemplar text of one shape (caller frees). */
char *shapes_exemplar(json_t *shape);
/* Merges b into a (both borrowed); returns a new reference. */
json_t *shapes_merge(json_t *a, json_t *b);
/* Shape of a JSON value (new reference). */
json_t *shapes_of_value(json_t *v);
/* Shape from a JSON Schema (new reference). */
json_t *shapes_of_schema(json_t *schema);
void shapes_free(void);

#endif
