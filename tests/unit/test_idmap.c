/* test_idmap — the id -> pointer map (idmap.c) and the O(1) doubly linked list macros
 * (util.h) against naive models under long random sequences of operations. */
#include "check.h"
#include "idmap.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>

#define NKEYS 3000

static uint64_t rng = 88172645463325252ULL;
static uint64_t rnd(void)
{
    return check_xorshift(&rng);
}

/* Keys drawn from a small range (collisions, re-puts, deletes of absent keys) plus a few
 * extreme values (0, all ones) that a hash or a "0 means empty" slip would mishandle. */
static uint64_t key_of(size_t i)
{
    if (i == 0)
        return 0;
    if (i == 1)
        return UINT64_MAX;
    return (uint64_t)i * 0x10000ULL + (i & 3); /* patterned ids, as wire ids are */
}

static void map_vs_model(void)
{
    struct idmap m = {0};
    static void *model[NKEYS];
    size_t n = 0;
    int bad = 0;
    for (int round = 0; round < 400000 && !bad; round++) {
        size_t i = (size_t)(rnd() % NKEYS);
        uint64_t op = rnd() % 10;
        /* phases: fill up to thousands, then drain, so the table grows and shrinks */
        int draining = (round / 50000) % 2 == 1;
        if (op < (draining ? 3u : 6u)) {
            void *v = (void *)(uintptr_t)(rnd() | 1);
            n += model[i] == NULL;
            model[i] = v;
            idmap_put(&m, key_of(i), v);
        } else if (op < 9) {
            void *old = idmap_del(&m, key_of(i));
            if (old != model[i])
                bad = 1;
            n -= model[i] != NULL;
            model[i] = NULL;
        } else {
            if (idmap_get(&m, key_of(i)) != model[i])
                bad = 1;
        }
        if (m.n != n)
            bad = 1;
        if (round % 997 == 0)
            for (size_t k = 0; k < NKEYS; k++)
                if (idmap_get(&m, key_of(k)) != model[k])
                    bad = 1;
    }
    CHECK(!bad, "idmap agrees with a plain array under 400k random put/del/get (n=%zu)", n);
    CHECK(m.cap == 0 || m.n * 2 <= m.cap, "the table stays at most half full (%zu of %zu)", m.n,
          m.cap);
    for (size_t k = 0; k < NKEYS; k++)
        idmap_del(&m, key_of(k));
    CHECK(m.n == 0 && m.cap <= 256, "emptied, it shrinks back (cap %zu)", m.cap);
    CHECK(idmap_get(&m, 0) == NULL && idmap_del(&m, 5) == NULL, "an empty map answers NULL");
    idmap_free(&m);
    /* A burst of 50 (a run's concurrent calls) grows the table to 128 and leaves it there:
     * no resize per burst. */
    for (uint64_t k = 1; k <= 50; k++)
        idmap_put(&m, k, &m);
    size_t grown = m.cap;
    for (uint64_t k = 1; k <= 50; k++)
        idmap_del(&m, k);
    CHECK(grown == 128 && m.cap == 128 && m.n == 0, "a burst of 50 keeps its table (%zu -> %zu)",
          grown, m.cap);
    idmap_free(&m);
}

struct node {
    int id, on;
    struct node *next, **pprev;
};

/* The list from head must equal the model order (ids in order[0..n)); every pprev must point
 * at the pointer that points at its node; tail must be the address of the last next. */
static int list_ok(struct node *head, struct node **headp, struct node ***tailp, const int *order,
                   size_t n)
{
    struct node **expect_pprev = headp;
    size_t k = 0;
    for (struct node *x = head; x; x = x->next, k++) {
        if (k >= n || x->id != order[k] || x->pprev != expect_pprev)
            return 0;
        expect_pprev = &x->next;
    }
    return k == n && (!tailp || *tailp == expect_pprev);
}

static void dlist_vs_model(void)
{
    enum { N = 200 };
    static struct node nodes[N];
    static int order[N];
    for (int mode = 0; mode < 2; mode++) { /* 0: push (newest first); 1: append (oldest first) */
        struct node *head = NULL, **tail = &head;
        size_t n = 0;
        int bad = 0;
        for (int i = 0; i < N; i++)
            nodes[i] = (struct node){.id = i};
        for (int round = 0; round < 200000 && !bad; round++) {
            int i = (int)(rnd() % N);
            struct node *x = &nodes[i];
            if (!x->on && rnd() % 2) {
                if (mode == 0) {
                    DLIST_PUSH(&head, x);
                    for (size_t k = n; k > 0; k--)
                        order[k] = order[k - 1];
                    order[0] = i;
                } else {
                    DLIST_APPEND(&tail, x);
                    order[n] = i;
                }
                n++;
                x->on = 1;
            } else {
                struct node *saved = x->next;
                if (mode == 0)
                    DLIST_UNLINK(x);
                else
                    DLIST_UNLINK_T(&tail, x);
                if (x->next != saved || x->pprev)
                    bad = 1; /* next is left for walkers; pprev marks "on no list" */
                if (x->on) {
                    size_t k = 0;
                    while (order[k] != i)
                        k++;
                    for (; k + 1 < n; k++)
                        order[k] = order[k + 1];
                    n--;
                    x->on = 0;
                }
            }
            if (!list_ok(head, &head, mode ? &tail : NULL, order, n))
                bad = 1;
        }
        CHECK(!bad, "DLIST_%s/UNLINK keep order, pprev links%s under 200k random ops",
              mode ? "APPEND" : "PUSH", mode ? " and the tail" : "");
    }
}

int main(void)
{
    map_vs_model();
    dlist_vs_model();
    return CHECK_DONE();
}
