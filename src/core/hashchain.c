/* hashchain — see hashchain.h. */
#include "hashchain.h"
#include "util.h"

#include <stddef.h>
#include <string.h>

uint64_t hashchain_hash(const char *s, uint64_t seed)
{
    return fnv1a(s, strlen(s), seed);
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
