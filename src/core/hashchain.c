/* hashchain — see hashchain.h. */
#include "hashchain.h"

#include <stddef.h>

#define FNV_BASIS 14695981039346656037ULL
#define FNV_PRIME 1099511628211ULL

uint64_t hashchain_hash(const char *s, uint64_t seed)
{
    uint64_t h = FNV_BASIS ^ seed;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * FNV_PRIME;
    return h;
}

struct hashchain_link *hashchain_first(const struct hashchain *t, uint64_t hash)
{
    return idmap_get(&t->heads, hash);
}

void hashchain_add(struct hashchain *t, struct hashchain_link *l, uint64_t hash)
{
    l->hash = hash;
    l->next = idmap_get(&t->heads, hash);
    idmap_put(&t->heads, hash, l);
}

void hashchain_remove(struct hashchain *t, struct hashchain_link *l)
{
    struct hashchain_link *head = idmap_get(&t->heads, l->hash);
    if (head == l) {
        if (l->next)
            idmap_put(&t->heads, l->hash, l->next);
        else
            idmap_del(&t->heads, l->hash);
    } else {
        while (head && head->next != l)
            head = head->next;
        if (head)
            head->next = l->next;
    }
    l->next = NULL;
}

void hashchain_clear(struct hashchain *t)
{
    idmap_free(&t->heads);
}
