/* jsonpretty — see jsonpretty.h. Layout as jansson 2.14's dump.c with JSON_INDENT(2) |
 * JSON_SORT_KEYS: "{}"/"[]" when empty, else a newline and 2 spaces per level before each
 * member, "," after all but the last, ": " between key and value, keys sorted by their bytes
 * (shorter first on a tie). */
#include "jsonpretty.h"

#include "jsonfast.h"

#include <stdlib.h>
#include <string.h>

#define JP_INDENT    2
#define JP_MAX_DEPTH (JSON_PARSER_MAX_DEPTH + 1) /* jf_dumps' cycle guard */

struct jpo {
    char *d;
    size_t n, cap;
};

static void put(struct jpo *o, const char *s, size_t n)
{
    if (o->n + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 256;
        while (cap < o->n + n + 1)
            cap *= 2;
        char *d = realloc(o->d, cap);
        if (!d)
            abort();
        o->d = d;
        o->cap = cap;
    }
    memcpy(o->d + o->n, s, n);
    o->n += n;
    o->d[o->n] = '\0';
}

static void newline(struct jpo *o, int depth)
{
    static const char spaces[] = "                                ";
    put(o, "\n", 1);
    for (size_t left = (size_t)depth * JP_INDENT; left;) {
        size_t k = left < sizeof(spaces) - 1 ? left : sizeof(spaces) - 1;
        put(o, spaces, k);
        left -= k;
    }
}

struct jp_key {
    const char *key;
    size_t len;
    json_t *val;
};

static int key_cmp(const void *a, const void *b)
{
    const struct jp_key *x = a, *y = b;
    int r = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);
    return r ? r : (x->len > y->len) - (x->len < y->len);
}

static int pretty(struct jpo *o, const json_t *v, int depth)
{
    if (depth > JP_MAX_DEPTH)
        return -1;
    if (json_is_array(v)) {
        size_t n = json_array_size(v);
        put(o, "[", 1);
        for (size_t i = 0; i < n; i++) {
            newline(o, depth + 1);
            if (pretty(o, json_array_get(v, i), depth + 1) < 0)
                return -1;
            if (i + 1 < n)
                put(o, ",", 1);
        }
        if (n)
            newline(o, depth);
        put(o, "]", 1);
        return 0;
    }
    if (!json_is_object(v))
        return jf_append(&o->d, &o->n, &o->cap, v, NULL, 0);
    size_t n = json_object_size(v), i = 0;
    struct jp_key *keys = n ? malloc(n * sizeof(*keys)) : NULL;
    const char *key;
    size_t klen;
    json_t *val;
    int rc = 0;
    if (n && !keys)
        abort();
    json_object_keylen_foreach((json_t *)v, key, klen, val)
    {
        keys[i++] = (struct jp_key){key, klen, val};
    }
    if (n)
        qsort(keys, n, sizeof(*keys), key_cmp);
    put(o, "{", 1);
    for (i = 0; i < n && rc == 0; i++) {
        newline(o, depth + 1);
        rc = jf_append(&o->d, &o->n, &o->cap, NULL, keys[i].key, keys[i].len);
        put(o, ": ", 2);
        if (rc == 0)
            rc = pretty(o, keys[i].val, depth + 1);
        if (i + 1 < n)
            put(o, ",", 1);
    }
    if (n)
        newline(o, depth);
    put(o, "}", 1);
    free(keys);
    return rc;
}

char *jf_dumps_indented(const json_t *v)
{
    struct jpo o = {0};
    if (!v)
        return NULL;
    put(&o, "", 0);
    if (pretty(&o, v, 0) < 0) {
        free(o.d);
        return NULL;
    }
    return o.d;
}
