/* jsonpretty — see jsonpretty.h. Layout as jansson 2.14's json_dumps with JSON_INDENT(2) |
 * JSON_SORT_KEYS: "{}"/"[]" when empty, else a newline and 2 spaces per level before each
 * member, "," after all but the last, ": " between key and value, keys sorted by their bytes
 * (shorter first on a tie). */
#include "jsonpretty.h"

#include "jsonfast.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define JP_INDENT    2
#define JP_MAX_DEPTH (JSON_PARSER_MAX_DEPTH + 1) /* jf_dumps' cycle guard */

static void newline(struct buf *o, int depth)
{
    static const char spaces[] = "                                ";
    buf_append(o, "\n", 1);
    for (size_t left = (size_t)depth * JP_INDENT; left;) {
        size_t k = left < sizeof(spaces) - 1 ? left : sizeof(spaces) - 1;
        buf_append(o, spaces, k);
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

static int pretty(struct buf *o, const json_t *v, int depth)
{
    if (depth > JP_MAX_DEPTH)
        return -1;
    if (json_is_array(v)) {
        size_t n = json_array_size(v);
        buf_append(o, "[", 1);
        for (size_t i = 0; i < n; i++) {
            newline(o, depth + 1);
            if (pretty(o, json_array_get(v, i), depth + 1) < 0)
                return -1;
            if (i + 1 < n)
                buf_append(o, ",", 1);
        }
        if (n)
            newline(o, depth);
        buf_append(o, "]", 1);
        return 0;
    }
    if (!json_is_object(v))
        return jf_append(&o->data, &o->len, &o->cap, v, NULL, 0);
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
    buf_append(o, "{", 1);
    for (i = 0; i < n && rc == 0; i++) {
        newline(o, depth + 1);
        rc = jf_append(&o->data, &o->len, &o->cap, NULL, keys[i].key, keys[i].len);
        buf_append(o, ": ", 2);
        if (rc == 0)
            rc = pretty(o, keys[i].val, depth + 1);
        if (i + 1 < n)
            buf_append(o, ",", 1);
    }
    if (n)
        newline(o, depth);
    buf_append(o, "}", 1);
    free(keys);
    return rc;
}

char *jf_dumps_indented(const json_t *v)
{
    struct buf o = {0};
    if (!v)
        return NULL;
    buf_append(&o, "", 0);
    if (pretty(&o, v, 0) < 0) {
        buf_free(&o);
        return NULL;
    }
    return buf_steal(&o);
}
