/* test_timers — the timer min-heap (timerheap.c) against a naive model under random
 * operations, and loop.c's timers on it through the real loop: order, a timer stopped inside
 * another's callback, restarted from its own, freed from its own, and thousands at once. */
#include "check.h"
#include "loop.h"
#include "timerheap.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
    return check_xorshift(&rng);
}

/* ---- the heap vs a model: armed flags, deadlines and start order in plain arrays ---- */

enum { N = 500 };
static struct th_node nodes[N];
static int armed[N];
static int64_t due[N];
static uint64_t order[N], order_seq;
static int fired[N], nfired, fire_bad;
static int64_t last_due;
static uint64_t last_order;

static void model_fire(struct th_node *x)
{
    size_t i = (size_t)(x - nodes);
    /* earliest first, ties by start order */
    if (!armed[i] || x->pos || due[i] < last_due || (due[i] == last_due && order[i] < last_order))
        fire_bad = 1;
    last_due = due[i];
    last_order = order[i];
    armed[i] = 0;
    fired[nfired++] = (int)i;
}

static void heap_vs_model(void)
{
    struct th_heap h = {0};
    int bad = 0;
    int64_t now = 0;
    for (int round = 0; round < 300000 && !bad && !fire_bad; round++) {
        size_t i = (size_t)(rnd() % N);
        uint64_t op = rnd() % 8;
        if (op < 4) {
            due[i] = now + (int64_t)(rnd() % 50); /* small range: many equal deadlines */
            th_add(&h, &nodes[i], due[i]);
            armed[i] = 1;
            order[i] = ++order_seq;
        } else if (op < 7) {
            th_remove(&h, &nodes[i]);
            armed[i] = 0;
        } else {
            now += (int64_t)(rnd() % 20);
            last_due = INT64_MIN;
            last_order = 0;
            nfired = 0;
            th_run_due(&h, now, model_fire);
            for (size_t k = 0; k < N; k++) /* everything due has fired */
                if (armed[k] && due[k] <= now)
                    bad = 1;
        }
        /* the peek is the model's minimum; the count matches */
        size_t n = 0, best = N;
        for (size_t k = 0; k < N; k++)
            if (armed[k]) {
                n++;
                if (best == N || due[k] < due[best] ||
                    (due[k] == due[best] && order[k] < order[best]))
                    best = k;
            }
        struct th_node *top = th_peek(&h);
        if (h.n != n || (n ? top != &nodes[best] : top != NULL))
            bad = 1;
        for (size_t k = 0; k < N; k++)
            if ((nodes[k].pos != 0) != armed[k])
                bad = 1;
    }
    CHECK(!bad && !fire_bad, "the heap agrees with a naive model under 300k random add/remove/run");
    th_free(&h);
}

/* ---- loop.c's timers through the real loop ---- */

static struct lp_timer ta, tb, tc, tdone, tlate;
static char trace[64];
static size_t ntrace;
static int c_runs;

static void note(char c)
{
    if (ntrace + 1 < sizeof(trace))
        trace[ntrace++] = c;
}

static void on_a(void *ud)
{
    (void)ud;
    note('a');
    lp_timer_stop(&tb); /* due at the same moment, started after a: must not fire */
}

static void on_b(void *ud)
{
    (void)ud;
    note('b');
}

static void on_c(void *ud)
{
    (void)ud;
    note('c');
    if (++c_runs < 3)
        lp_timer_start(&tc, 0, on_c, NULL); /* restarted from its own callback */
}

struct owner {
    struct lp_timer self, other;
};

static void on_never(void *ud)
{
    (void)ud;
    note('X');
}

static void on_owner(void *ud)
{
    struct owner *o = ud;
    note('o');
    lp_timer_stop(&o->other);
    free(o); /* freed from inside its own callback (ASan checks nothing touches it after) */
}

static void on_late(void *ud)
{
    (void)ud;
    note('l');
}

static void on_done(void *ud)
{
    (void)ud;
    lp_stop();
}

static struct lp_timer many[3000];
static int many_fired, many_bad;
static int64_t many_last;

static void on_many(void *ud)
{
    struct lp_timer *t = ud;
    size_t i = (size_t)(t - many);
    int64_t d = t->node.due; /* earliest deadline first (ties: started first) */
    if (d < many_last)
        many_bad = 1;
    many_last = d;
    many_fired++;
    if (i % 2 == 0 && i + 1 < 3000)
        lp_timer_stop(&many[i + 1]); /* each even one cancels the next */
}

static void loop_timers(void)
{
    lp_timer_start(&tlate, 60, on_late, NULL);
    lp_timer_start(&ta, 20, on_a, NULL);
    lp_timer_start(&tb, 20, on_b, NULL);
    lp_timer_start(&tc, 30, on_c, NULL);
    struct owner *o = xcalloc(1, sizeof(*o));
    lp_timer_start(&o->self, 40, on_owner, o);
    lp_timer_start(&o->other, 40, on_never, NULL);
    struct lp_timer stopped = {0};
    lp_timer_stop(&stopped); /* a never-started timer stops cleanly */
    lp_timer_start(&stopped, 10, on_never, NULL);
    lp_timer_stop(&stopped);
    lp_timer_start(&tlate, 50, on_late, NULL); /* re-armed: fires once, at the new time */
    for (size_t i = 0; i < 3000; i++)
        lp_timer_start(&many[i], 100 + (int64_t)(i % 7), on_many, &many[i]);
    many_last = -1;
    lp_timer_start(&tdone, 400, on_done, NULL);
    lp_run(); /* once: lp_stop ends the loop for good */
    trace[ntrace] = '\0';
    CHECK(strcmp(trace, "acccol") == 0,
          "stop inside another's callback, restart inside its own, free inside its own (%s)",
          trace);

    /* 3000 timers: each of the 7 deadlines has ~429; the even ones cancel their odd
     * successor, which is of the next deadline class (i+1) % 7 and may fire before it. */
    CHECK(!many_bad && many_fired >= 1500 && many_fired < 3000,
          "3000 timers fire in deadline order, stops from callbacks hold (%d fired)", many_fired);
    for (size_t i = 0; i < 3000; i++)
        lp_timer_stop(&many[i]);
}

int main(void)
{
    heap_vs_model();
    if (lp_init() < 0)
        return 1;
    loop_timers();
    lp_destroy();
    return CHECK_DONE();
}
