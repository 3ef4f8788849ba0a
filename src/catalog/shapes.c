/* shapes — see shapes.h. */
#include "shapes.h"
#include "catalog.h"
#include "jsonfast.h"
#include "jsonscan.h"
#include "log.h"
#include "util.h"

#include <string.h>
#include <sys/random.h>

#define EXEMPLAR_DEPTH  3
#define EXEMPLAR_FIELDS 12
#define EXEMPLAR_BYTES  600
#define LEARN_MAX_TEXT  (256 * 1024)
#define SHAPE_MAX_DEPTH 24
/* What is learned from results is bounded (agent code decides what its tools return when it
 * calls a server it controls): a learned shape keeps objects to SHAPE_LEARN_DEPTH levels, and
 * a tool whose learned shape would hold more than SHAPE_TOOL_KEYS fields becomes "any"
 * (never flags code, shows no exemplar). A principal learns at most SHAPE_SCOPE_KEYS fields
 * over all its tools, and all of them together SHAPE_TOTAL_KEYS; past that nothing more is
 * learned. Keys are identifier-like and at most SHAPE_KEY_MAX bytes, so bytes are bounded
 * with them (a few hundred bytes a field in memory). */
#define SHAPE_LEARN_DEPTH 8
#define SHAPE_TOOL_KEYS   256
#define SHAPE_SCOPE_KEYS  4096
#define SHAPE_TOTAL_KEYS  32768
#define SHAPE_KEY_MAX     64

static int enabled = -1;
static int shared;             /* CODEMCP_SHARE_LEARNING: one scope for every principal */
static json_t *seeds;          /* fn -> shape from the tool's outputSchema: for everyone */
static json_t *scopes;         /* scope ("" shared, else a principal) -> {fn -> learned shape} */
static json_t *scope_versions; /* principal -> int: the version of its view */
static size_t total_keys;
static int version;        /* counts every change: a version is never reused */
static int shared_version; /* of the shared view (seeds + scope "") */
static void (*listener)(void);
static void (*share_hook)(const char *scope, const char *fn, json_t *shape);

void shapes_set_share_hook(void (*fn)(const char *scope, const char *fn, json_t *shape))
{
    share_hook = fn;
}

void shapes_set_listener(void (*on_change)(void))
{
    listener = on_change;
}

/* Structures already absorbed, per scope and function (shapes_learn_text): hash(scope, fn,
 * js_shape_hash) | 1, open addressing, emptied when 3/4 full. Absorbing a structure again
 * never changes what was learned (shapes_merge is a join: idempotent, commutative,
 * associative), so a result whose structure is in here is skipped without building its tree.
 * Keyed per process (getrandom): a collision, which would only leave one structure
 * unlearned, cannot be aimed at offline. */
#define SEEN_SLOTS 4096
static uint64_t seen[SEEN_SLOTS];
static size_t n_seen;
static uint64_t seen_key = 0x6A09E667F3BCC909ULL;

void shapes_init(int learn, int share)
{
    enabled = learn;
    shared = share;
    seeds = json_object();
    scopes = json_object();
    scope_versions = json_object();
    total_keys = 0;
    uint64_t k;
    if (getrandom(&k, sizeof(k), GRND_NONBLOCK) == (ssize_t)sizeof(k))
        seen_key ^= k;
    memset(seen, 0, sizeof(seen));
    n_seen = 0;
}

int shapes_enabled(void)
{
    return enabled > 0;
}

int shapes_shared(void)
{
    return shared;
}

/* Where what a principal's results teach goes. */
static const char *scope_of(const char *principal)
{
    return shared || !principal ? "" : principal;
}

static const char *kind(json_t *s);

json_t *shapes_view(const char *principal)
{
    json_t *view = json_copy(seeds);
    const char *fn;
    json_t *s;
    json_object_foreach(json_object_get(scopes, scope_of(principal)), fn, s)
    {
        json_t *seed = json_object_get(seeds, fn);
        json_object_set_new(view, fn, seed ? shapes_merge(seed, s) : json_incref(s));
    }
    return view;
}

int shapes_has(const char *principal, const char *fn)
{
    return json_object_get(seeds, fn) ||
           json_object_get(json_object_get(scopes, scope_of(principal)), fn);
}

int shapes_version_for(const char *principal)
{
    if (shared || !principal)
        return shared_version;
    json_t *v = json_object_get(scope_versions, principal);
    return v ? (int)json_integer_value(v) : shared_version;
}

static json_t *leaf(const char *t)
{
    return json_pack("{s:s, s:s}", "k", "leaf", "t", t);
}

static json_t *any(void)
{
    return json_pack("{s:s}", "k", "any");
}

static const char *kind(json_t *s)
{
    const char *k = json_string_value(json_object_get(s, "k"));
    return k ? k : "any";
}

/* A key that may reach a description, describe() or the validator: an identifier of at most
 * SHAPE_KEY_MAX bytes. Anything else (prose, markup, an instruction to the model) is never
 * kept: its object is marked open, so code reading it is not flagged either. */
static int identifier_key(const char *key)
{
    if (!((key[0] >= 'A' && key[0] <= 'Z') || (key[0] >= 'a' && key[0] <= 'z') || key[0] == '_'))
        return 0;
    size_t n = 0;
    for (const char *p = key; *p; p++, n++)
        if (n >= SHAPE_KEY_MAX || !((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                                    (*p >= '0' && *p <= '9') || *p == '_'))
            return 0;
    return 1;
}

/* The shape of an object whose fields are members' identifier keys, each shaped by shape_of
 * one level deeper; open when `open` or when a key was left out (code reading it is then not
 * flagged). */
static json_t *object_shape(json_t *members, json_t *(*shape_of)(json_t *, int, int), int depth,
                            int max_depth, int open)
{
    json_t *fields = json_object();
    const char *key;
    json_t *m;
    json_object_foreach(members, key, m)
    {
        if (identifier_key(key))
            json_object_set_new(fields, key, shape_of(m, depth + 1, max_depth));
        else
            open = 1;
    }
    json_t *out = json_pack("{s:s, s:o}", "k", "object", "fields", fields);
    if (open)
        json_object_set_new(out, "open", json_true());
    return out;
}

static json_t *value_shape(json_t *v, int depth, int max_depth)
{
    if (depth > max_depth)
        return any();
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return object_shape(v, value_shape, depth, max_depth, 0);
    case JSON_ARRAY: {
        json_t *items = NULL;
        size_t i;
        json_t *val;
        json_array_foreach(v, i, val)
        {
            json_t *s = value_shape(val, depth + 1, max_depth);
            json_t *m = items ? shapes_merge(items, s) : json_incref(s);
            json_decref(items);
            json_decref(s);
            items = m;
        }
        return items ? json_pack("{s:s, s:o}", "k", "array", "items", items)
                     : json_pack("{s:s}", "k", "array");
    }
    case JSON_STRING:
        return leaf("str");
    case JSON_INTEGER:
        return leaf("int");
    case JSON_REAL:
        return leaf("float");
    case JSON_TRUE:
    case JSON_FALSE:
        return leaf("bool");
    case JSON_NULL:
        return leaf("None");
    }
    return any();
}

json_t *shapes_of_value(json_t *v)
{
    return value_shape(v, 0, SHAPE_MAX_DEPTH);
}

json_t *shapes_merge(json_t *a, json_t *b)
{
    const char *ka = kind(a), *kb = kind(b);
    /* null merges into anything: optional values are common. */
    if (!strcmp(ka, "leaf") && !strcmp(json_string_value(json_object_get(a, "t")), "None"))
        return json_incref(b);
    if (!strcmp(kb, "leaf") && !strcmp(json_string_value(json_object_get(b, "t")), "None"))
        return json_incref(a);
    if (strcmp(ka, kb) != 0 || !strcmp(ka, "any"))
        return any();
    if (!strcmp(ka, "leaf")) {
        const char *ta = json_string_value(json_object_get(a, "t"));
        const char *tb = json_string_value(json_object_get(b, "t"));
        if (ta && tb && !strcmp(ta, tb))
            return json_incref(a);
        if (ta && tb &&
            ((!strcmp(ta, "int") && !strcmp(tb, "float")) ||
             (!strcmp(ta, "float") && !strcmp(tb, "int"))))
            return leaf("float");
        return leaf("Any");
    }
    if (!strcmp(ka, "array")) {
        json_t *ia = json_object_get(a, "items"), *ib = json_object_get(b, "items");
        if (!ia || !ib)
            return json_incref(ia ? a : b);
        return json_pack("{s:s, s:o}", "k", "array", "items", shapes_merge(ia, ib));
    }
    /* objects: union of fields */
    json_t *fields = json_deep_copy(json_object_get(a, "fields"));
    if (!fields)
        fields = json_object();
    const char *key;
    json_t *fb;
    json_object_foreach(json_object_get(b, "fields"), key, fb)
    {
        json_t *fa = json_object_get(fields, key);
        json_object_set_new(fields, key, fa ? shapes_merge(fa, fb) : json_incref(fb));
    }
    json_t *out = json_pack("{s:s, s:o}", "k", "object", "fields", fields);
    if (json_is_true(json_object_get(a, "open")) || json_is_true(json_object_get(b, "open")))
        json_object_set_new(out, "open", json_true());
    return out;
}

static json_t *schema_shape(json_t *s, int depth, int max_depth)
{
    if (!json_is_object(s) || depth > max_depth)
        return any();
    json_t *type = json_object_get(s, "type");
    const char *t = json_string_value(type);
    json_t *props = json_object_get(s, "properties");
    if ((t && !strcmp(t, "object")) || (!t && json_is_object(props))) {
        if (!json_is_object(props))
            return any();
        /* Unknown keys are possible unless the schema says otherwise. */
        int open = !json_is_false(json_object_get(s, "additionalProperties"));
        return object_shape(props, schema_shape, depth, max_depth, open);
    }
    if (t && !strcmp(t, "array")) {
        json_t *items = json_object_get(s, "items");
        return json_is_object(items) ? json_pack("{s:s, s:o}", "k", "array", "items",
                                                 schema_shape(items, depth + 1, max_depth))
                                     : json_pack("{s:s}", "k", "array");
    }
    if (t && !strcmp(t, "string"))
        return leaf("str");
    if (t && !strcmp(t, "integer"))
        return leaf("int");
    if (t && !strcmp(t, "number"))
        return leaf("float");
    if (t && !strcmp(t, "boolean"))
        return leaf("bool");
    if (t && !strcmp(t, "null"))
        return leaf("None");
    return any();
}

json_t *shapes_of_schema(json_t *schema)
{
    return schema_shape(schema, 0, SHAPE_MAX_DEPTH);
}

/* ---- exemplars ------------------------------------------------------------------------- */

static int compare_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void exemplar(struct buf *b, json_t *s, int depth)
{
    const char *k = kind(s);
    if (!strcmp(k, "leaf")) {
        buf_appends(b, json_string_value(json_object_get(s, "t")));
    } else if (!strcmp(k, "array")) {
        json_t *items = json_object_get(s, "items");
        buf_appends(b, "[");
        if (items && (depth < EXEMPLAR_DEPTH || !strcmp(kind(items), "leaf")))
            exemplar(b, items, depth + 1);
        else if (items)
            buf_appends(b, "...");
        buf_appends(b, "]");
    } else if (!strcmp(k, "object")) {
        if (depth >= EXEMPLAR_DEPTH) {
            buf_appends(b, "{...}");
            return;
        }
        /* Sorted keys: a stable description, whatever order calls taught us. */
        json_t *fields = json_object_get(s, "fields");
        size_t n = json_object_size(fields);
        const char **keys = xcalloc(n ? n : 1, sizeof(*keys));
        size_t i = 0;
        const char *key;
        json_t *v;
        json_object_foreach(fields, key, v) keys[i++] = key;
        qsort(keys, n, sizeof(*keys), compare_keys);
        buf_appends(b, "{");
        for (i = 0; i < n && i < EXEMPLAR_FIELDS; i++) {
            buf_printf(b, "%s%s: ", i ? ", " : "", keys[i]);
            exemplar(b, json_object_get(fields, keys[i]), depth + 1);
        }
        if (n > EXEMPLAR_FIELDS)
            buf_appends(b, ", ...");
        buf_appends(b, "}");
        free(keys);
    } else {
        buf_appends(b, "Any");
    }
}

char *shapes_exemplar(json_t *shape)
{
    struct buf b = {0};
    exemplar(&b, shape, 0);
    if (b.len > EXEMPLAR_BYTES) {
        size_t cut = EXEMPLAR_BYTES - 4;
        while (cut > 0 && ((unsigned char)b.data[cut] & 0xC0) == 0x80)
            cut--;
        b.len = cut;
        b.data[cut] = '\0';
        buf_appends(&b, " ...");
    }
    return buf_steal(&b);
}

/* ---- learning --------------------------------------------------------------------------- */

/* Fields in shape s, counting s itself: what a learned shape costs. */
static size_t shape_keys(json_t *s)
{
    size_t n = 1;
    const char *key;
    json_t *f;
    json_object_foreach(json_object_get(s, "fields"), key, f) n += shape_keys(f);
    json_t *items = json_object_get(s, "items");
    return items ? n + shape_keys(items) : n;
}

/* The exemplars of the shared view go into the SDK and the description every principal gets. */
static void publish_exemplars(void)
{
    json_t *view = shapes_view(NULL), *ex = json_object();
    const char *fn;
    json_t *s;
    json_object_foreach(view, fn, s)
    {
        if (!strcmp(kind(s), "any"))
            continue;
        char *text = shapes_exemplar(s);
        json_object_set_new(ex, fn, json_string(text));
        free(text);
    }
    cat_set_exemplars(ex);
    json_decref(ex);
    json_decref(view);
}

/* A change to the seeds (scope NULL: every view), the shared scope "" or a principal's. Each
 * view that changed gets a version of its own: a worker holding one view is never taken for
 * holding another. */
static void publish(const char *scope)
{
    if (!scope) {
        const char *name;
        json_t *v;
        json_object_foreach(scope_versions, name, v) json_integer_set(v, ++version);
    } else if (*scope) {
        json_object_set_new(scope_versions, scope, json_integer(++version));
    }
    if (!scope || !*scope) {
        shared_version = ++version;
        publish_exemplars();
    }
    if (listener)
        listener();
}

/* Adds learned shape s (stolen) for fn to scope, within the bounds; 1 if anything changed. */
static int absorb(const char *scope, const char *fn, json_t *s)
{
    json_t *learned = json_object_get(scopes, scope);
    json_t *old = json_object_get(learned, fn);
    json_t *merged = old ? shapes_merge(old, s) : json_incref(s);
    json_decref(s);
    if (old && json_equal(old, merged)) {
        json_decref(merged);
        return 0;
    }
    size_t was = old ? shape_keys(old) : 0, now = shape_keys(merged);
    if (now > SHAPE_TOOL_KEYS) { /* too wide to be a record type: never flag, never show */
        json_decref(merged);
        if (old && !strcmp(kind(old), "any"))
            return 0;
        merged = any();
        now = 1;
    }
    size_t in_scope = 0;
    const char *f;
    json_t *v;
    json_object_foreach(learned, f, v) in_scope += shape_keys(v);
    if (now > was &&
        (in_scope + now - was > SHAPE_SCOPE_KEYS || total_keys + now - was > SHAPE_TOTAL_KEYS)) {
        log_debug("shapes", "not learning more for %s: the bound on learned shapes is reached", fn);
        json_decref(merged);
        return 0;
    }
    if (!learned) {
        learned = json_object();
        json_object_set_new(scopes, scope, learned);
    }
    total_keys = total_keys + now - was;
    json_object_set_new(learned, fn, merged);
    return 1;
}

void shapes_seed(void)
{
    if (!shapes_enabled())
        return;
    int changed = 0;
    const char *fn;
    json_t *f;
    json_object_foreach(cat_functions(), fn, f)
    {
        json_t *schema = json_object_get(f, "output_schema");
        if (!schema || json_object_get(seeds, fn))
            continue;
        json_object_set_new(seeds, fn, shapes_of_schema(schema));
        changed = 1;
    }
    if (changed)
        publish(NULL);
}

/* The value the worker will see: structuredContent, else text parsed as JSON, else (text
 * that is not JSON) the string "" standing for "some text". */
static json_t *unwrapped(json_t *result)
{
    json_t *sc = json_object_get(result, "structuredContent");
    if (sc)
        return json_incref(sc);
    struct buf text = {0};
    size_t i;
    json_t *block;
    json_array_foreach(json_object_get(result, "content"), i, block)
    {
        json_t *t = json_object_get(block, "text");
        if (!json_is_string(t))
            continue;
        size_t add = (text.len ? 1 : 0) + json_string_length(t);
        if (text.len + add > LEARN_MAX_TEXT) { /* checked first: a 50 MB text is not copied */
            buf_free(&text);
            return NULL;
        }
        if (text.len)
            buf_append(&text, "\n", 1);
        buf_append(&text, json_string_value(t), json_string_length(t));
    }
    json_t *v = NULL;
    if (text.len)
        v = jf_loadb(text.data, text.len, JF_DECODE_ANY, NULL);
    if (!v && text.len)
        v = json_string(""); /* the worker hands the program a str */
    buf_free(&text);
    return v;
}

void shapes_learn(const char *principal, const char *fn, json_t *call_result)
{
    if (!shapes_enabled() || !fn || json_is_true(json_object_get(call_result, "isError")))
        return;
    json_t *v = unwrapped(call_result);
    if (!v)
        return; /* images, resources: nothing the validator can use */
    const char *scope = scope_of(principal);
    int changed = absorb(scope, fn, value_shape(v, 0, SHAPE_LEARN_DEPTH));
    json_decref(v);
    if (changed) {
        log_debug("shapes", "learned a new shape for %s", fn);
        publish(scope);
        if (share_hook)
            share_hook(scope, fn, json_object_get(json_object_get(scopes, scope), fn));
    }
}

/* A shape from elsewhere in wire form, rebuilt from what it may hold (kinds, leaf types,
 * identifier keys, SHAPE_LEARN_DEPTH levels), as a learned one would be; NULL if it is none. */
static json_t *checked_shape(json_t *s, int depth)
{
    const char *k = json_string_value(json_object_get(s, "k"));
    if (!k || depth > SHAPE_LEARN_DEPTH)
        return NULL;
    if (strcmp(k, "any") == 0)
        return any();
    if (strcmp(k, "leaf") == 0) {
        const char *t = json_string_value(json_object_get(s, "t"));
        static const char *const types[] = {"str", "int", "float", "bool", "None"};
        for (size_t i = 0; t && i < sizeof(types) / sizeof(types[0]); i++)
            if (strcmp(t, types[i]) == 0)
                return leaf(types[i]);
        return NULL;
    }
    if (strcmp(k, "array") == 0) {
        json_t *items = checked_shape(json_object_get(s, "items"), depth + 1);
        return items ? json_pack("{s:s, s:o}", "k", "array", "items", items) : NULL;
    }
    json_t *fields = json_object_get(s, "fields");
    if (strcmp(k, "object") != 0 || !json_is_object(fields))
        return NULL;
    json_t *out = json_object(), *f;
    const char *key;
    json_object_foreach(fields, key, f)
    {
        json_t *c = identifier_key(key) ? checked_shape(f, depth + 1) : NULL;
        if (!c) {
            json_decref(out);
            return NULL;
        }
        json_object_set_new(out, key, c);
    }
    json_t *r = json_pack("{s:s, s:o}", "k", "object", "fields", out);
    if (json_is_true(json_object_get(s, "open")))
        json_object_set_new(r, "open", json_true());
    return r;
}

int shapes_absorb_shared(const char *scope, const char *fn, json_t *shape, json_t **ours)
{
    *ours = NULL;
    json_t *c = shapes_enabled() && scope && fn ? checked_shape(shape, 0) : NULL;
    if (!c)
        return 0;
    json_t *theirs = json_incref(c);
    int changed = absorb(scope, fn, c);
    json_t *mine = json_object_get(json_object_get(scopes, scope), fn);
    if (mine && !json_equal(mine, theirs))
        *ours = json_incref(mine); /* we know more: the others should too */
    json_decref(theirs);
    if (changed)
        publish(scope);
    return changed;
}

json_t *shapes_learned(void)
{
    return scopes;
}

static uint64_t seen_slot_key(const char *scope, const char *fn, uint64_t structure)
{
    uint64_t h = seen_key ^ 0xCBF29CE484222325ULL;
    for (const unsigned char *p = (const unsigned char *)scope; *p; p++)
        h = (h ^ *p) * 0x100000001B3ULL;
    h = (h ^ 0x1F) * 0x100000001B3ULL; /* "a"+"bc" is not "ab"+"c" */
    for (const unsigned char *p = (const unsigned char *)fn; *p; p++)
        h = (h ^ *p) * 0x100000001B3ULL;
    h ^= structure + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    h *= 0xFF51AFD7ED558CCDULL;
    return (h ^ (h >> 33)) | 1;
}

/* 1 when k is listed; else lists it (when add) and returns 0. */
static int seen_check(uint64_t k, int add)
{
    size_t i = (size_t)(k >> 7) % SEEN_SLOTS;
    while (seen[i]) {
        if (seen[i] == k)
            return 1;
        i = (i + 1) % SEEN_SLOTS;
    }
    if (add) {
        if (n_seen >= SEEN_SLOTS * 3 / 4) {
            memset(seen, 0, sizeof(seen));
            n_seen = 0;
            i = (size_t)(k >> 7) % SEEN_SLOTS;
        }
        seen[i] = k;
        n_seen++;
    }
    return 0;
}

/* The "text" member of a content block, from its bytes (b: room for 8 members), or NULL;
 * *unread is set when the block has more members than that (it is not read here). */
static const struct js_member *block_text(const struct js_member *block, struct js_member b[8],
                                          int *unread)
{
    if (block->val[0] != '{')
        return NULL;
    int nm = js_members(block->val, block->vlen, b, 8);
    if (nm < 0)
        *unread = 1;
    return nm < 0 ? NULL : js_get(b, nm, "text");
}

/* The fewest bytes the text blocks' texts can have once unescaped and joined as unwrapped()
 * joins them (a character is at most 6 bytes escaped), or 0 when a block is not read here. */
static size_t text_at_least(const struct js_member *blocks, int nb)
{
    struct js_member b[8];
    size_t total = 0;
    int unread = 0;
    for (int i = 0; i < nb; i++) {
        const struct js_member *t = block_text(&blocks[i], b, &unread);
        if (unread)
            return 0;
        if (t && t->val[0] == '"')
            total += (total ? 1 : 0) + (t->vlen - 2) / 6;
    }
    return total;
}

/* What unwrapped() would make of the result, from its bytes: the structure hash of its
 * structuredContent; for text blocks that cannot be JSON (the first text's first byte starts
 * no JSON value, all of it within LEARN_MAX_TEXT) the hash of "some text". 0: not decided
 * here (the tree decides), -1: nothing to learn (an error, no text, a text over LEARN_MAX_TEXT). */
static int text_structure(const char *raw, size_t len, uint64_t *out)
{
    struct js_member m[16], blocks[16], b[8];
    int n = js_members(raw, len, m, 16);
    if (n < 0)
        return 0;
    if (js_is(js_get(m, n, "isError"), "true"))
        return -1;
    const struct js_member *sc = js_get(m, n, "structuredContent"), *content;
    if (sc) {
        *out = js_shape_hash(sc->val, sc->vlen, seen_key);
        return 1;
    }
    content = js_get(m, n, "content");
    if (!content || content->val[0] != '[')
        return -1; /* no text: unwrapped() gives NULL */
    int nb = js_elements(content->val, content->vlen, blocks, 16);
    if (nb >= 0 && content->vlen > LEARN_MAX_TEXT && text_at_least(blocks, nb) > LEARN_MAX_TEXT)
        return -1; /* too long to learn from: unwrapped() gives NULL, so no tree of it is made */
    if (nb < 0 || content->vlen > LEARN_MAX_TEXT)
        return 0;
    int unread = 0;
    for (int i = 0; i < nb; i++) {
        const struct js_member *t = block_text(&blocks[i], b, &unread);
        if (unread)
            return 0;
        if (!t || t->val[0] != '"' || t->vlen == 2)
            continue; /* not a string, or empty: adds nothing to the text */
        unsigned c = (unsigned char)t->val[1];
        if (c == '\\' || c == ' ' || strchr("{[-0123456789tfn", (int)c))
            return 0; /* could be JSON (or white space before it): the tree decides */
        *out = 0x7465787400000000ULL; /* "text": the worker hands the program a str */
        return 1;
    }
    return -1;
}

int shapes_learnable(const char *raw, size_t len)
{
    uint64_t structure;
    return text_structure(raw, len, &structure) >= 0;
}

void shapes_learn_text(const char *principal, const char *fn, const char *raw, size_t len)
{
    if (!shapes_enabled() || !fn)
        return;
    uint64_t structure = 0;
    int known = text_structure(raw, len, &structure);
    if (known < 0)
        return;
    uint64_t k = known ? seen_slot_key(scope_of(principal), fn, structure) : 0;
    if (known && seen_check(k, 0))
        return; /* absorbed before: nothing can change */
    json_t *result = jf_loadb(raw, len, JF_ALLOW_NUL | JF_BIG_INTEGERS, NULL);
    shapes_learn(principal, fn, result);
    json_decref(result);
    if (known)
        seen_check(k, 1);
}

void shapes_free(void)
{
    json_decref(seeds);
    json_decref(scopes);
    json_decref(scope_versions);
    seeds = scopes = scope_versions = NULL;
}
