/* timerheap — see timerheap.h. Owns the heap array only, never the nodes. */
#include "timerheap.h"

#include "util.h"

#include <stdlib.h>

static int before(const struct th_node *x, const struct th_node *y)
{
    return x->due < y->due || (x->due == y->due && x->seq < y->seq);
}

static void place(struct th_heap *h, size_t i, struct th_node *x)
{
    h->a[i] = x;
    x->pos = i;
}

static void sift_up(struct th_heap *h, size_t i)
{
    struct th_node *x = h->a[i];
    while (i > 1 && before(x, h->a[i / 2])) {
        place(h, i, h->a[i / 2]);
        i /= 2;
    }
    place(h, i, x);
}

static void sift_down(struct th_heap *h, size_t i)
{
    struct th_node *x = h->a[i];
    for (;;) {
        size_t c = 2 * i;
        if (c > h->n)
            break;
        if (c + 1 <= h->n && before(h->a[c + 1], h->a[c]))
            c++;
        if (!before(h->a[c], x))
            break;
        place(h, i, h->a[c]);
        i = c;
    }
    place(h, i, x);
}

void th_remove(struct th_heap *h, struct th_node *x)
{
    size_t i = x->pos;
    if (!i || i > h->n || h->a[i] != x)
        return;
    x->pos = 0;
    struct th_node *last = h->a[h->n--];
    if (i > h->n)
        return; /* x was the last one */
    place(h, i, last);
    if (i > 1 && before(last, h->a[i / 2]))
        sift_up(h, i);
    else
        sift_down(h, i);
}

void th_add(struct th_heap *h, struct th_node *x, int64_t due)
{
    th_remove(h, x);
    if (h->n + 1 >= h->cap) {
        h->cap = h->cap ? h->cap * 2 : 64;
        h->a = xrealloc(h->a, h->cap * sizeof(*h->a));
    }
    x->due = due;
    x->seq = ++h->seq;
    place(h, ++h->n, x);
    sift_up(h, h->n);
}

struct th_node *th_peek(const struct th_heap *h)
{
    return h->n ? h->a[1] : NULL;
}

void th_run_due(struct th_heap *h, int64_t now, void (*fire)(struct th_node *x))
{
    uint64_t armed_before = h->seq;
    struct th_node *x;
    while ((x = th_peek(h)) != NULL && x->due <= now && x->seq <= armed_before) {
        th_remove(h, x);
        fire(x);
    }
}

void th_free(struct th_heap *h)
{
    for (size_t i = 1; i <= h->n; i++)
        h->a[i]->pos = 0;
    free(h->a);
    h->a = NULL;
    h->n = h->cap = 0;
}
