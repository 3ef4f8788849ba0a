/* run_cpu — see run_cpu.h.
 *
 * A measured run keeps the last CPU reading of its worker's process tree; each look charges
 * what was used since (never less than nothing: a child reaped between two reads shows in its
 * parent's time only at the next one). The next look comes in a second, or when the budget
 * left would be spent by one process running flat out, if sooner (RCPU_MIN_MS at least), so a
 * run overshoots its principal's budget by at most one look's time on each CPU it keeps busy.
 * A tree too big to measure counts as over the budget: a program cannot hide its CPU time in
 * more processes than the gateway reads. */
#include "run_cpu.h"
#include "log.h"
#include "loop.h"
#include "policy.h"
#include "util.h"
#include "workers.h"
#include "worker_proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RCPU_EVERY_MS 1000
#define RCPU_MIN_MS   50

struct rcpu {
    char run_id[32];
    char principal[64];
    int slot;
    int64_t last; /* the tree's CPU ms at the last look */
    void (*over)(const char *run_id, const char *why);
    struct lp_timer timer;
    struct rcpu *next, **pprev;
};

static struct rcpu *measured;

static struct rcpu *find(const char *run_id)
{
    struct rcpu *m = measured;
    while (m && strcmp(m->run_id, run_id) != 0)
        m = m->next;
    return m;
}

static void drop(struct rcpu *m)
{
    lp_timer_stop(&m->timer);
    DLIST_UNLINK(m);
    free(m);
}

/* Charges what the run used since the last look: 0, or -1 with why when a budget is spent
 * (or the tree cannot be measured). */
static int charge(struct rcpu *m, char *why, size_t n)
{
    int64_t now = wk_cpu_ms(m->slot);
    if (now == WKP_TREE_TOO_BIG) {
        snprintf(why, n,
                 "execute_python: the run started more than %d processes: their CPU time cannot "
                 "be measured against this principal's CPU budget",
                 WKP_TREE_MAX);
        return -1;
    }
    if (now < 0 || now <= m->last)
        return 0;
    int64_t used = now - m->last;
    m->last = now;
    return budgets_cpu_spend(m->principal, used, why, n);
}

static void look(void *ud);

static void arm(struct rcpu *m)
{
    int64_t left = budgets_cpu_left(m->principal);
    int64_t next = left >= 0 && left < RCPU_EVERY_MS ? left : RCPU_EVERY_MS;
    lp_timer_start(&m->timer, next > RCPU_MIN_MS ? next : RCPU_MIN_MS, look, m);
}

static void look(void *ud)
{
    struct rcpu *m = ud;
    char why[400];
    if (charge(m, why, sizeof(why)) < 0) {
        void (*over)(const char *, const char *) = m->over;
        char run_id[32];
        memcpy(run_id, m->run_id, sizeof(run_id));
        log_info("runs", "%s: %s", run_id, why);
        drop(m); /* before over: the run's end comes back through rcpu_end */
        over(run_id, why);
        return;
    }
    arm(m);
}

void rcpu_start(const char *run_id, const char *principal, int slot,
                void (*over)(const char *run_id, const char *why))
{
    if (budgets_cpu_left(principal) < 0)
        return;
    struct rcpu *m = xcalloc(1, sizeof(*m));
    snprintf(m->run_id, sizeof(m->run_id), "%s", run_id);
    snprintf(m->principal, sizeof(m->principal), "%s", principal ? principal : "");
    m->slot = slot;
    m->over = over;
    int64_t now = wk_cpu_ms(slot);
    m->last = now > 0 ? now : 0;
    DLIST_PUSH(&measured, m);
    arm(m);
}

void rcpu_end(const char *run_id)
{
    struct rcpu *m = find(run_id);
    if (!m)
        return;
    char why[400];
    charge(m, why, sizeof(why)); /* spent or not, the run is over: the next one is refused */
    drop(m);
}

void rcpu_free_all(void)
{
    while (measured)
        drop(measured);
}
