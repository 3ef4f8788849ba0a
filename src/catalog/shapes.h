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
 * to the worker (the answer is sent first) and never touches a run in flight.
 * What a principal's results teach is that principal's (shapes_view), bounded per tool, per
 * principal and in total, and holds only identifier-like keys: a result's key names never
 * reach another principal's describe(), validator or description. */
#ifndef CODEMCP_SHAPES_H
#define CODEMCP_SHAPES_H

#include <jansson.h>
#include <stddef.h>

/* learn: CODEMCP_LEARN_SHAPES; share: CODEMCP_SHARE_LEARNING (main.c: by default, a gateway
 * with one principal shares). */
void shapes_init(int learn, int share);
/* Called after a view changed (to ship it to the workers). */
void shapes_set_listener(void (*on_change)(void));
int shapes_enabled(void);
/* 1 when every principal learns into one shared view (CODEMCP_SHARE_LEARNING); else each
 * principal's results teach only that principal's view, and the shared view (the SDK, the
 * description) holds only what outputSchemas declare. */
int shapes_shared(void);
/* Seeds from the catalog's outputSchemas (call after each catalog rebuild). */
void shapes_seed(void);
/* Learns from a successful CallToolResult (borrowed) of SDK function fn, called by a run of
 * principal (NULL: the shared view). */
void shapes_learn(const char *principal, const char *fn, json_t *call_result);
/* The same from the result's bytes (a canonical JSON object, jsonscan.h): a result whose
 * structure was learned before for fn is skipped without building its tree. */
void shapes_learn_text(const char *principal, const char *fn, const char *raw, size_t len);
/* 0 when shapes_learn_text would learn nothing from the result's bytes (an error, no text, a
 * text longer than shapes learn from), found without reading more than its members. */
int shapes_learnable(const char *raw, size_t len);
/* {"fn": shape} what principal's workers get (NULL: the shared view, the prototype's), a new
 * reference; and a version that changes when it does (never the same for two contents). */
json_t *shapes_view(const char *principal);
/* Whether principal's view has a shape for fn (seeded or learned). O(1). */
int shapes_has(const char *principal, const char *fn);
int shapes_version_for(const char *principal);
/* Exemplar text of one shape (caller frees). */
char *shapes_exemplar(json_t *shape);
/* Merges b into a (both borrowed); returns a new reference. */
json_t *shapes_merge(json_t *a, json_t *b);
/* Shape of a JSON value (new reference). */
json_t *shapes_of_value(json_t *v);
/* Shape from a JSON Schema (new reference). */
json_t *shapes_of_schema(json_t *schema);
void shapes_free(void);

/* ---- a fleet's shared learning (shapes_fleet.c) ---- */
/* With CODEMCP_STATE (after shapes_init): learned shapes travel through the state store. */
void shapes_fleet_init(void);
/* fn(scope, fn, shape) after a result taught this replica something new (shape borrowed: the
 * scope's whole learned shape for fn). */
void shapes_set_share_hook(void (*fn)(const char *scope, const char *fn, json_t *shape));
/* Merges a shape another replica learned for scope ("" shared, else a principal) into this
 * one's, checked and bounded as learned ones are (shape borrowed). 1 when it changed anything
 * (the views are republished); *ours (new reference, or NULL) is the merged shape when this
 * replica knows more than the one given. */
int shapes_absorb_shared(const char *scope, const char *fn, json_t *shape, json_t **ours);
/* {scope: {fn: learned shape}} (borrowed; NULL before anything was learned). */
json_t *shapes_learned(void);

#endif
