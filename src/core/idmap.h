/* idmap — a small hash map from 64-bit ids to pointers (open addressing, linear probing,
 * backward-shift deletion), for O(1) per-call lookups by id (wire ids, transfer ids).
 * Values are never NULL (NULL means "absent"). No module state, no I/O; one map belongs to
 * whoever embeds it. */
#ifndef CODEMCP_IDMAP_H
#define CODEMCP_IDMAP_H

#include <stddef.h>
#include <stdint.h>

struct idmap {
    uint64_t *keys;
    void **vals;
    size_t cap; /* a power of two, or 0 before the first put */
    size_t n;
};

/* The value of key, or NULL. */
void *idmap_get(const struct idmap *m, uint64_t key);
/* Sets key to val (not NULL), replacing any value it had. */
void idmap_put(struct idmap *m, uint64_t key, void *val);
/* Removes key; returns the value it had, or NULL. */
void *idmap_del(struct idmap *m, uint64_t key);
/* Frees the table (not the values); the map is empty and usable afterwards. */
void idmap_free(struct idmap *m);

#endif
