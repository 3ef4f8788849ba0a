/* types — JSON Schema to the compact type text of sdkgen's signatures.
 *
 * string->str, integer->int, number->float, boolean->bool, null->None, array->list[T],
 * object with properties->{key: T, opt?: T} (a key marked "?" is optional; ", ..." after
 * the keys: other keys are allowed too), object without properties->dict[str, T],
 * enum/const->Literal[...] (long enums show their first values and "…"), anyOf/oneOf/type
 * list->A | B (deduplicated, None last), allOf->its members merged, $ref->the schema it
 * points to inside the same document ("#/$defs/X", "#/definitions/X", any "#/..." pointer),
 * anything unknown->Any. Recursion (a $ref met again inside itself) and whatever lies
 * deeper than the depth budget or makes the text longer than SDK_TYPE_MAX are cut with the
 * marker "…" ({…} for an object). The text is for readers (the model): sdk.py quotes it
 * whenever it is not a plain Python expression (sdk__type_needs_quotes). Pure: no I/O. */
#include "sdkgen_int.h"

#include <stdlib.h>
#include <string.h>

/* Nesting rendered in full; deeper objects become {…}. Retried shallower until the text
 * fits SDK_TYPE_MAX. */
#define SDK_TYPE_DEPTH 6
/* An enum with more values than this shows its first SDK_LITERAL_SHOWN and "…": a
 * 500-value Literal would be paid on every model turn (the validator still checks all). */
#define SDK_LITERAL_LIMIT 16
#define SDK_LITERAL_SHOWN 8
/* A string enum value longer than this makes the enum render as its base type. */
#define SDK_LITERAL_CHARS 80
/* Keys shown per object; the rest is "…". */
#define SDK_KEYS_MAX 24
/* $ref hops followed per type (a chain of refs to refs is a hostile schema). */
#define SDK_REF_HOPS 64

struct sdk_tctx {
    json_t *root; /* the document $refs point into (borrowed, may be NULL) */
    const char *refs[SDK_TYPE_DEPTH * 4 + 8]; /* refs being expanded (recursion check) */
    int nrefs;
    int hops;
    int max_depth;
};

/* The members of one union under construction. */
struct sdk_tlist {
    char **v;
    size_t n;
    int any;  /* some member is Any: the whole union is Any */
    int none; /* None is a member (printed last) */
};

static char *sdk_type_text(json_t *schema, struct sdk_tctx *cx, int depth, int *has_none);

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
 * objects, arrays). A null value sets *none instead of appearing in the Literal (the union
 * prints "| None"); only nulls gives "None". More than SDK_LITERAL_LIMIT values: the first
 * SDK_LITERAL_SHOWN and "…". */
static char *sdk_literal(json_t *values, int *none)
{
    struct buf b = {0};
    size_t n = json_array_size(values), shown = 0;
    if (n == 0)
        return NULL;
    buf_appends(&b, "Literal[");
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(values, i);
        if (json_is_null(v)) {
            *none = 1;
            continue;
        }
        if (n > SDK_LITERAL_LIMIT && shown == SDK_LITERAL_SHOWN) {
            buf_appends(&b, ", …");
            shown++;
            continue;
        }
        if (shown > SDK_LITERAL_SHOWN)
            continue;
        if (shown++)
            buf_appends(&b, ", ");
        if (json_is_string(v) && json_string_length(v) > SDK_LITERAL_CHARS) {
            buf_free(&b);
            return NULL;
        }
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

/* Follows a "#/..." JSON pointer inside root; NULL when it does not resolve. */
static json_t *sdk_resolve_ref(json_t *root, const char *ref)
{
    if (!root || ref[0] != '#')
        return NULL;
    json_t *cur = root;
    const char *p = ref + 1;
    while (*p == '/') {
        p++;
        struct buf tok = {0};
        while (*p && *p != '/') {
            if (p[0] == '~' && p[1] == '0') {
                buf_appends(&tok, "~");
                p += 2;
            } else if (p[0] == '~' && p[1] == '1') {
                buf_appends(&tok, "/");
                p += 2;
            } else {
                buf_append(&tok, p, 1);
                p++;
            }
        }
        const char *key = tok.data ? tok.data : "";
        if (json_is_object(cur)) {
            cur = json_object_get(cur, key);
        } else if (json_is_array(cur)) {
            char *end;
            long i = strtol(key, &end, 10);
            cur = (*key && !*end && i >= 0) ? json_array_get(cur, (size_t)i) : NULL;
        } else {
            cur = NULL;
        }
        buf_free(&tok);
        if (!cur)
            return NULL;
    }
    return *p ? NULL : cur;
}

static int sdk_is_identifier(const char *s, size_t n)
{
    if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '$' || c == '@' || c == '-'))
            return 0;
    }
    return 1;
}

/* Whether key (key_len bytes, not NUL-terminated) is listed in a schema's `required` array. */
int sdk__is_required(json_t *required, const char *key, size_t key_len)
{
    size_t i;
    json_t *r;
    json_array_foreach(required, i, r)
    {
        if (json_is_string(r) && json_string_length(r) == key_len &&
            memcmp(json_string_value(r), key, key_len) == 0)
            return 1;
    }
    return 0;
}

/* {key: T, opt?: T, ...} for an object schema with properties; dict[str, T] without. */
static char *sdk_object_text(json_t *schema, struct sdk_tctx *cx, int depth)
{
    json_t *props = json_object_get(schema, "properties");
    json_t *ap = json_object_get(schema, "additionalProperties");
    if (!json_is_object(props) || json_object_size(props) == 0) {
        if (json_is_object(ap) && json_object_size(ap) > 0) {
            int ignored;
            char *inner = sdk_type_text(ap, cx, depth + 1, &ignored);
            struct buf b = {0};
            buf_printf(&b, "dict[str, %s]", inner);
            free(inner);
            return buf_steal(&b);
        }
        return xstrdup("dict[str, Any]");
    }
    if (depth >= cx->max_depth)
        return xstrdup("{…}");
    json_t *required = json_object_get(schema, "required");
    struct buf b = {0};
    const char *key;
    size_t key_len, shown = 0;
    json_t *prop;
    buf_appends(&b, "{");
    /* Required keys first, in properties order, then the optional ones. */
    for (int pass = 0; pass < 2; pass++) {
        json_object_keylen_foreach(props, key, key_len, prop)
        {
            int req = sdk__is_required(required, key, key_len);
            if (req != (pass == 0))
                continue;
            if (shown == SDK_KEYS_MAX) {
                buf_appends(&b, ", …");
                shown++;
            }
            if (shown > SDK_KEYS_MAX)
                continue;
            if (shown++)
                buf_appends(&b, ", ");
            if (sdk_is_identifier(key, key_len))
                buf_append(&b, key, key_len);
            else
                sdk__py_str(&b, key, key_len);
            int ignored;
            char *inner = sdk_type_text(prop, cx, depth + 1, &ignored);
            buf_printf(&b, "%s: %s", req ? "" : "?", inner);
            free(inner);
        }
    }
    if (shown <= SDK_KEYS_MAX && (json_is_true(ap) || (json_is_object(ap))))
        buf_appends(&b, ", ...");
    buf_appends(&b, "}");
    return buf_steal(&b);
}

/* Adds the type named by a JSON Schema "type" keyword. */
static void sdk_add_simple(struct sdk_tlist *t, const char *name, json_t *schema,
                           struct sdk_tctx *cx, int depth)
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
        sdk_tl_add(t, sdk_object_text(schema, cx, depth));
    } else if (strcmp(name, "array") == 0) {
        json_t *items = json_object_get(schema, "items");
        int ignored;
        /* Tuple-form items (an array of schemas) is rare enough to call list[Any]. */
        char *inner = (json_is_object(items) || json_is_boolean(items))
                          ? sdk_type_text(items, cx, depth + 1, &ignored)
                          : xstrdup("Any");
        struct buf b = {0};
        buf_printf(&b, "list[%s]", inner);
        free(inner);
        sdk_tl_add(t, buf_steal(&b));
    } else {
        t->any = 1;
    }
}

static void sdk_collect(json_t *schema, struct sdk_tctx *cx, int depth, struct sdk_tlist *t);

/* allOf with several members: their properties and required lists merged into one object
 * schema (refs followed), collected as that object; 0 when a member is not an object. */
static int sdk_collect_allof(json_t *all, struct sdk_tctx *cx, int depth, struct sdk_tlist *t)
{
    json_t *merged = json_pack("{s:s,s:{},s:[]}", "type", "object", "properties", "required");
    json_t *props = json_object_get(merged, "properties");
    json_t *req = json_object_get(merged, "required");
    size_t i;
    json_t *m;
    int ok = 1;
    json_array_foreach(all, i, m)
    {
        for (int hop = 0; hop < 8 && json_is_string(json_object_get(m, "$ref")); hop++)
            m = sdk_resolve_ref(cx->root, json_string_value(json_object_get(m, "$ref")));
        json_t *mp = json_object_get(m, "properties");
        if (!json_is_object(m) || !json_is_object(mp)) {
            ok = 0;
            break;
        }
        json_object_update(props, mp);
        if (json_is_array(json_object_get(m, "required")))
            json_array_extend(req, json_object_get(m, "required"));
    }
    if (ok)
        sdk_collect(merged, cx, depth, t);
    json_decref(merged);
    return ok;
}

static void sdk_collect(json_t *schema, struct sdk_tctx *cx, int depth, struct sdk_tlist *t)
{
    if (depth > cx->max_depth + 2 || !json_is_object(schema)) {
        t->any = 1; /* true/false schemas, garbage, or too deep */
        return;
    }
    json_t *ref = json_object_get(schema, "$ref");
    if (json_is_string(ref)) {
        const char *r = json_string_value(ref);
        json_t *target = sdk_resolve_ref(cx->root, r);
        int seen = 0;
        for (int i = 0; i < cx->nrefs; i++)
            seen |= strcmp(cx->refs[i], r) == 0;
        if (!target || cx->hops >= SDK_REF_HOPS ||
            cx->nrefs >= (int)(sizeof cx->refs / sizeof cx->refs[0])) {
            t->any = 1;
        } else if (seen) {
            /* Recursion: the marker says "the same shape again". */
            json_t *tt = json_object_get(target, "type");
            int obj = json_is_object(json_object_get(target, "properties")) ||
                      (json_is_string(tt) && strcmp(json_string_value(tt), "object") == 0);
            if (obj)
                sdk_tl_add(t, xstrdup("{…}"));
            else
                t->any = 1;
        } else {
            cx->hops++;
            cx->refs[cx->nrefs++] = r;
            sdk_collect(target, cx, depth, t);
            cx->nrefs--;
        }
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
        json_array_foreach(alts, i, alt) sdk_collect(alt, cx, depth, &sub);
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
        sdk_collect(json_array_get(all, 0), cx, depth, t);
        return;
    }
    if (!type && json_is_array(all) && json_array_size(all) > 1 &&
        sdk_collect_allof(all, cx, depth, t))
        return;
    if (json_is_true(json_object_get(schema, "nullable")))
        t->none = 1; /* OpenAPI 3.0 spelling, common in generated schemas */
    if (json_is_string(type)) {
        sdk_add_simple(t, json_string_value(type), schema, cx, depth);
    } else if (json_is_array(type) && json_array_size(type) > 0) {
        size_t i;
        json_t *one;
        json_array_foreach(type, i, one)
        {
            if (json_is_string(one))
                sdk_add_simple(t, json_string_value(one), schema, cx, depth);
            else
                t->any = 1;
        }
    } else if (json_object_get(schema, "properties") ||
               json_object_get(schema, "additionalProperties")) {
        sdk_add_simple(t, "object", schema, cx, depth);
    } else if (json_object_get(schema, "items")) {
        sdk_add_simple(t, "array", schema, cx, depth);
    } else {
        t->any = 1; /* {}, or a schema we do not understand */
    }
}

static char *sdk_type_text(json_t *schema, struct sdk_tctx *cx, int depth, int *has_none)
{
    struct sdk_tlist t = {0};
    struct buf b = {0};
    if (json_is_true(schema) || (json_is_object(schema) && json_object_size(schema) == 0)) {
        *has_none = 1;
        return xstrdup("Any");
    }
    sdk_collect(schema, cx, depth, &t);
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

char *sdk__py_type(json_t *schema, json_t *root, int *has_none)
{
    int ignored;
    if (!has_none)
        has_none = &ignored;
    /* Shallower and shallower until the text fits; depth 0 still says list[{…}]. */
    for (int max_depth = SDK_TYPE_DEPTH;; max_depth--) {
        struct sdk_tctx cx = {.root = root, .max_depth = max_depth};
        char *text = sdk_type_text(schema, &cx, 0, has_none);
        if (strlen(text) <= SDK_TYPE_MAX || max_depth == 0)
            return text;
        free(text);
    }
}

int sdk__type_needs_quotes(const char *type)
{
    return strchr(type, '{') != NULL || strstr(type, "\xE2\x80\xA6") != NULL;
}
