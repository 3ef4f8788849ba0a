/* idmap — see idmap.h. Owns only the table memory of each map; never the values. The table
 * stays at most half full, so a probe is a few slots; it grows by doubling and shrinks when
 * an eighth full, so a burst of 2,000 calls does not keep its table forever. It never shrinks
 * below KEEP_CAP slots (4 KiB): a run of 50 concurrent calls grew and shrank each of its maps
 * three times per run (16 -> 128 -> 16), 12 resizes per run for nothing. */
#include "idmap.h"

#include "util.h"

#include <stdlib.h>

#define MIN_CAP  16
#define KEEP_CAP 256 /* not shrunk below this: see above */

static size_t slot_of(uint64_t key, size_t cap)
{
    /* splitmix64's finalizer: consecutive ids spread over the table. */
    key ^= key >> 30;
    key *= 0xbf58476d1ce4e5b9ULL;
    key ^= key >> 27;
    key *= 0x94d049bb133111ebULL;
    key ^= key >> 31;
    return (size_t)key & (cap - 1);
}

static void resize(struct idmap *m, size_t cap)
{
    uint64_t *keys = m->keys;
    void **vals = m->vals;
    size_t old = m->cap;
    m->keys = xcalloc(cap, sizeof(*m->keys));
    m->vals = xcalloc(cap, sizeof(*m->vals));
    m->cap = cap;
    for (size_t i = 0; i < old; i++) {
        if (!vals[i])
            continue;
        size_t j = slot_of(keys[i], cap);
        while (m->vals[j])
            j = (j + 1) & (cap - 1);
        m->keys[j] = keys[i];
        m->vals[j] = vals[i];
    }
    free(keys);
    free(vals);
}

void *idmap_get(const struct idmap *m, uint64_t key)
{
    if (!m->n)
        return NULL;
    for (size_t i = slot_of(key, m->cap); m->vals[i]; i = (i + 1) & (m->cap - 1))
        if (m->keys[i] == key)
            return m->vals[i];
    return NULL;
}

void idmap_put(struct idmap *m, uint64_t key, void *val)
{
    if (!val)
        return;
    if ((m->n + 1) * 2 > m->cap)
        resize(m, m->cap ? m->cap * 2 : MIN_CAP);
    size_t i = slot_of(key, m->cap);
    while (m->vals[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->vals[i])
        m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
}

void *idmap_del(struct idmap *m, uint64_t key)
{
    if (!m->n)
        return NULL;
    size_t mask = m->cap - 1, i = slot_of(key, m->cap);
    while (m->vals[i] && m->keys[i] != key)
        i = (i + 1) & mask;
    void *val = m->vals[i];
    if (!val)
        return NULL;
    /* Backward shift: move later entries of the probe run into the hole when their home
     * slot does not lie (cyclically) after the hole. */
    size_t hole = i;
    for (size_t j = (i + 1) & mask; m->vals[j]; j = (j + 1) & mask) {
        size_t home = slot_of(m->keys[j], m->cap);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            m->keys[hole] = m->keys[j];
            m->vals[hole] = m->vals[j];
            hole = j;
        }
    }
    m->vals[hole] = NULL;
    m->keys[hole] = 0;
    m->n--;
    if (m->cap > KEEP_CAP && m->n * 8 < m->cap)
        resize(m, m->cap / 2);
    return val;
}

void idmap_free(struct idmap *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}
