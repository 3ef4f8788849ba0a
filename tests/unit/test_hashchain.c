/* test_hashchain — the hash -> chain of entries index (hashchain.c) against a naive model
 * under a long random sequence of adds and removes, with hashes forced to collide (seven
 * hashes for 500 keys) so removal from the head, the middle and the tail of a chain all
 * happen; and the string hash's seed keeps keys of different budgets apart. */
#include "check.h"
#include "hashchain.h"

#include <stdio.h>
#include <string.h>

#define NKEYS 500
#define NHASH 7

struct entry {
    struct hashchain_link link; /* first */
    int id;
    int in;
};

static struct entry entries[NKEYS];
static uint64_t rng = 88172645463325252ULL;

static uint64_t hash_of(int id)
{
    return (uint64_t)(id % NHASH) * 0x9e3779b97f4a7c15ULL; /* collisions by design */
}

static struct entry *find(struct hashchain *t, int id)
{
    for (struct hashchain_link *l = hashchain_first(t, hash_of(id)); l; l = l->next)
        if (((struct entry *)l)->id == id)
            return (struct entry *)l;
    return NULL;
}

static void index_vs_model(void)
{
    struct hashchain t = {0};
    for (int i = 0; i < NKEYS; i++)
        entries[i] = (struct entry){.id = i};
    int bad = 0;
    for (int op = 0; op < 200000 && !bad; op++) {
        int id = (int)(check_xorshift(&rng) % NKEYS);
        struct entry *e = &entries[id];
        if (e->in)
            hashchain_remove(&t, &e->link);
        else
            hashchain_add(&t, &e->link, hash_of(id));
        e->in = !e->in;
        int probe = (int)(check_xorshift(&rng) % NKEYS);
        if ((find(&t, probe) != NULL) != entries[probe].in || (find(&t, id) != NULL) != e->in)
            bad = op + 1;
    }
    CHECK(!bad, "lookups agree with the model through adds and removes (first miss at op %d)", bad);
    int found = 0, want = 0;
    for (int i = 0; i < NKEYS; i++) {
        found += find(&t, i) == &entries[i];
        want += entries[i].in;
    }
    CHECK(found == want, "every entry in is found as itself (%d of %d)", found, want);
    hashchain_clear(&t);
    CHECK(!find(&t, 0) && !find(&t, 1), "clear empties the index");
    hashchain_add(&t, &entries[3].link, hash_of(3));
    CHECK(find(&t, 3) == &entries[3], "usable after clear");
    hashchain_clear(&t);
}

static void string_hash(void)
{
    CHECK(hashchain_hash("alice", 0) == hashchain_hash("alice", 0), "the hash is stable");
    CHECK(hashchain_hash("alice", 0) != hashchain_hash("alicf", 0), "one character apart");
    CHECK(hashchain_hash("alice", 1) != hashchain_hash("alice", 2),
          "the seed (a budget) tells the same principal's counts apart");
    CHECK(hashchain_hash("", 0) == 14695981039346656037ULL, "FNV-1a's offset basis for \"\"");
}

int main(void)
{
    index_vs_model();
    string_hash();
    return CHECK_DONE();
}
