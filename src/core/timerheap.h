/* timerheap — a binary min-heap of deadlines for loop.c's timers: O(log n) start and stop,
 * earliest deadline first and, between equal deadlines, the one started first. Knows nothing
 * of lws or clocks (the caller passes times); no module state, no I/O. */
#ifndef CODEMCP_TIMERHEAP_H
#define CODEMCP_TIMERHEAP_H

#include <stddef.h>
#include <stdint.h>

/* Embedded in each timer; zeroed means "not armed". */
struct th_node {
    int64_t due;
    uint64_t seq; /* start order, for ties */
    size_t pos;   /* 1-based place in the heap; 0 while not armed */
};

struct th_heap {
    struct th_node **a; /* a[1..n] */
    size_t n, cap;
    uint64_t seq;
};

/* Arms x for due (re-arming it when armed). */
void th_add(struct th_heap *h, struct th_node *x, int64_t due);
/* Disarms x; a no-op when not armed. */
void th_remove(struct th_heap *h, struct th_node *x);
/* The earliest armed node, or NULL. */
struct th_node *th_peek(const struct th_heap *h);
/* Disarms and calls fire for every node due at `now` that was armed before this call began,
 * earliest first. fire may add, remove or free any node (a node re-armed by fire waits for the
 * next call, even with a deadline already past: a timer re-armed for 0 ms cannot spin). */
void th_run_due(struct th_heap *h, int64_t now, void (*fire)(struct th_node *x));
void th_free(struct th_heap *h);

#endif
