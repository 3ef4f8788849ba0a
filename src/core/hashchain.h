/* hashchain — entries looked up by a 64-bit hash of their key in O(1): an idmap (idmap.h) from
 * each hash to the first entry of that hash, the others chained behind it. For tables keyed
 * by strings (a principal, a Redis key) that a hot path searches. An entry embeds a struct
 * hashchain_link as its FIRST member, so a link found is the entry; the caller compares keys
 * along the chain (hashes may collide). No module state, no I/O. */
#ifndef CODEMCP_HASHCHAIN_H
#define CODEMCP_HASHCHAIN_H

#include "idmap.h"

#include <stdint.h>

struct hashchain_link {
    struct hashchain_link *next; /* the next entry of the same hash */
    uint64_t hash;
};

struct hashchain {
    struct idmap heads; /* hash -> its first link */
};

/* FNV-1a of s, started from seed (0: the standard offset basis). */
uint64_t hashchain_hash(const char *s, uint64_t seed);
/* The first entry of hash (walk ->next, comparing keys), or NULL. */
struct hashchain_link *hashchain_first(const struct hashchain *t, uint64_t hash);
/* Adds l (not already in t) under hash. */
void hashchain_add(struct hashchain *t, struct hashchain_link *l, uint64_t hash);
/* Removes l (in t). */
void hashchain_remove(struct hashchain *t, struct hashchain_link *l);
/* Forgets every entry (the entries are the caller's); t is empty and usable afterwards. */
void hashchain_clear(struct hashchain *t);

#endif
