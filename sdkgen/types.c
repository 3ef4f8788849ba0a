/* types — JSON Schema to Python type annotations for sdkgen.
 *
 * string->str, integer->int, number->float, boolean->bool, null->None, array->list[T],
 * object->dict[str, Any], enum/const->Literal[...], anyOf/oneOf/type list->A | B (deduplicated,
 * None last), $ref and anything unknown->Any. The text must evaluate at import time under
 * Python 3.11 (annotations are not deferred in sdk.py), so it only ever uses builtins, Any
 * and Literal, and never writes "None | None". Pure: no I/O. */
#include "sdkgen_int.h"

#include <stdlib.h>
#include <string.h>

/* Deeper schemas are summarised as Any: the annotation is a hint, not a validator, and a
 * hostile schema must not make the description explode. */
#define SDK_TYPE_DEPTH 8
/* An enum longer than this is shown as its base type: a 500-value Literal would be paid on
 * every model turn. */
#define SDK_LITERAL_LIMIT 64

/* The members of one union under construction. */
struct sdk_tlist {
    char **v;
    size_t n;
    int any;  /* some member is Any: the whole union is Any */
    int none; /* None is a member (printed last) */
};

static char *sdk_type_text(json_t *schema, int depth, int *has_none);

static void sdk_tl_add(struct sdk_tlist *t, char *s)
{
    if (strcmp(s, "Any") == 0) {
        t->any = 1;
        free(s);
        return;
    }
    if (strcmp(s, "None") == 0) {
        t->none = 1;
        free(s);
        return;
    }
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->v[i], s) == 0) {
            free(s);
            return;
        }
    }
    t->v = xrealloc(t->v, (t->n + 1) * sizeof *t->v);
    t->v[t->n++] = s;
}

static void sdk_tl_free(struct sdk_tlist *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i]);
    free(t->v);
    memset(t, 0, sizeof *t);
}

/* Moves src's members into dst. */
static void sdk_tl_merge(struct sdk_tlist *dst, struct sdk_tlist *src)
{
    for (size_t i = 0; i < src->n; i++)
        sdk_tl_add(dst, src->v[i]);
    dst->any |= src->any;
    dst->none |= src->none;
    free(src->v);
    memset(src, 0, sizeof *src);
}

/* Literal[...] for enum/const values, or NULL when a value cannot be a Literal (floats,
 * objects, arrays) or there are too many. A null value sets *none instead of appearing in
 * the Literal (the union prints "| None"); only nulls gives "None". */
static char *sdk_literal(json_t *values, int *none)
{
    struct buf b = {0};
    size_t n = json_array_size(values), shown = 0;
    if (n == 0 || n > SDK_LITERAL_LIMIT)
        return NULL;
    buf_appends(&b, "Literal[");
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(values, i);
        if (json_is_null(v)) {
            *none = 1;
            continue;
        }
        if (shown++)
            buf_appends(&b, ", ");
        if (json_is_string(v))
            sdk__py_str(&b, json_string_value(v), json_string_length(v));
        else if (json_is_integer(v))
            buf_printf(&b, "%lld", (long long)json_integer_value(v));
        else if (json_is_true(v))
            buf_appends(&b, "True");
        else if (json_is_false(v))
            buf_appends(&b, "False");
        else {
            buf_free(&b);
            return NULL;
        }
    }
    buf_appends(&b, "]");
    if (shown == 0) {
        buf_free(&b);
        return xstrdup("None");
    }
    return buf_steal(&b);
}

/* Adds the type named by a JSON Schema "type" keyword. */
static void sdk_add_simple(struct sdk_tlist *t, const char *name, json_t *schema, int depth)
{
    if (strcmp(name, "string") == 0) {
        sdk_tl_add(t, xstrdup("str"));
    } else if (strcmp(name, "integer") == 0) {
        sdk_tl_add(t, xstrdup("int"));
    } else if (strcmp(name, "number") == 0) {
        sdk_tl_add(t, xstrdup("float"));
    } else if (strcmp(name, "boolean") == 0) {
        sdk_tl_add(t, xstrdup("bool"));
    } else if (strcmp(name, "null") == 0) {
        t->none = 1;
    } else if (strcmp(name, "object") == 0) {
        sdk_tl_add(t, xstrdup("dict[str, Any]"));
    } else if (strcmp(name, "array") == 0) {
        json_t *items = json_object_get(schema, "items");
        int ignored;
        /* Tuple-form items (an array of schemas) is rare enough to call list[Any]. */
        char *inner =
            json_is_object(items) ? sdk_type_text(items, depth + 1, &ignored) : xstrdup("Any");
        struct buf b = {0};
        buf_printf(&b, "list[%s]", inner);
        free(inner);
        sdk_tl_add(t, buf_steal(&b));
    } else {
        t->any = 1;
    }
}

static void sdk_collect(json_t *schema, int depth, struct sdk_tlist *t)
{
    if (depth > SDK_TYPE_DEPTH || !json_is_object(schema)) {
        t->any = 1; /* true/false schemas, garbage, or too deep */
        return;
    }
    json_t *type = json_object_get(schema, "type");
    json_t *values = json_object_get(schema, "enum");
    if (json_is_array(values)) {
        int none = 0;
        char *lit = sdk_literal(values, &none);
        if (lit) {
            sdk_tl_add(t, lit);
            t->none |= none;
            return;
        }
    }
    if (json_object_get(schema, "const")) {
        json_t *one = json_pack("[O]", json_object_get(schema, "const"));
        int none = 0;
        char *lit = sdk_literal(one, &none);
        json_decref(one);
        if (lit) {
            sdk_tl_add(t, lit);
            t->none |= none;
            return;
        }
    }
    json_t *alts = json_object_get(schema, "anyOf");
    if (!json_is_array(alts) || json_array_size(alts) == 0)
        alts = json_object_get(schema, "oneOf");
    if (json_is_array(alts) && json_array_size(alts) > 0) {
        struct sdk_tlist sub = {0};
        size_t i;
        json_t *alt;
        json_array_foreach(alts, i, alt) sdk_collect(alt, depth + 1, &sub);
        /* {"type": "object", "anyOf": [{"required": ["a"]}, ...]} constrains an object; the
         * alternatives alone would say Any, the type says more. */
        if (!(sub.any && type)) {
            sdk_tl_merge(t, &sub);
            return;
        }
        sdk_tl_free(&sub);
    }
    json_t *all = json_object_get(schema, "allOf");
    if (!type && json_is_array(all) && json_array_size(all) == 1) {
        sdk_collect(json_array_get(all, 0), depth + 1, t);
        return;
    }
    if (json_is_true(json_object_get(schema, "nullable")))
        t->none = 1; /* OpenAPI 3.0 spelling, common in generated schemas */
    if (json_is_string(type)) {
        sdk_add_simple(t, json_string_value(type), schema, depth);
    } else if (json_is_array(type) && json_array_size(type) > 0) {
        size_t i;
        json_t *one;
        json_array_foreach(type, i, one)
        {
            if (json_is_string(one))
                sdk_add_simple(t, json_string_value(one), schema, depth);
            else
                t->any = 1;
        }
    } else if (json_object_get(schema, "properties") ||
               json_object_get(schema, "additionalProperties")) {
        sdk_add_simple(t, "object", schema, depth);
    } else if (json_object_get(schema, "items")) {
        sdk_add_simple(t, "array", schema, depth);
    } else {
        t->any = 1; /* $ref, {}, or a schema we do not understand */
    }
}

static char *sdk_type_text(json_t *schema, int depth, int *has_none)
{
    struct sdk_tlist t = {0};
    struct buf b = {0};
    sdk_collect(schema, depth, &t);
    *has_none = t.any || t.none;
    if (t.any || (t.n == 0 && !t.none)) {
        sdk_tl_free(&t);
        return xstrdup("Any");
    }
    for (size_t i = 0; i < t.n; i++)
        buf_printf(&b, "%s%s", i ? " | " : "", t.v[i]);
    if (t.none)
        buf_appends(&b, t.n ? " | None" : "None");
    sdk_tl_free(&t);
    return buf_steal(&b);
}

char *sdk__py_type(json_t *schema, int *has_none)
{
    int ignored;
    return sdk_type_text(schema, 0, has_none ? has_none : &ignored);
}
