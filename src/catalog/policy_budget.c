/* policy_budget — how much a principal may do: `"budgets": [...]` at the top level of
 * mcp.json, each {"name", "principal": glob(s), "window_s", "calls", "runs", "cpu_s",
 * "writes_per_run"}. "calls" and "runs" are the tool calls and the programs each matching
 * principal may start per window (a fixed window that starts at its first use and ends
 * window_s later); "cpu_s" the CPU seconds its runs' workers may use per window, measured by
 * the gateway from outside (run_cpu.c charges them here; a run is refused once they are spent,
 * and stopped when they run out during it);
 * "writes_per_run" the write calls one run may make. Counted by the gateway when a call is allowed,
 * so every session of a principal draws on the same count. A call past a budget fails with kind
 * "budget", naming the budget and when it resets. Counts live in this process (a restart starts
 * them afresh), or, for calls, runs and CPU seconds, in the fleet's state store when
 * CODEMCP_STATE is set (policy_budget_fleet.c: the windows are then fixed on the wall clock);
 * writes per run always stay here. Loop thread only. */
#include "policy_int.h"
#include "hashchain.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD           "policy"
#define MAX_RUNS_KEPT 4096 /* write counts of this many runs at most (the oldest forgotten) */

struct budget {
    char name[96];
    struct pre **principal; /* NULL-terminated; NULL list: every principal */
    long window_s, calls, runs, cpu_s, writes_per_run;
};

/* Counts kept per principal and budget: its tool calls, runs and CPU milliseconds. */
enum { SLOT_CALLS, SLOT_RUNS, SLOT_CPU, SLOTS };

struct count {
    struct hashchain_link link; /* first: a link found is the count */
    int budget;
    char *who; /* a principal, or a run id for writes_per_run */
    long n;
    int64_t window_end_ms;
    struct count *next;
};

static struct budget *budgets;
static size_t n_budgets;
/* principals' call counts (as many as there are principals: never forgotten, or a principal
 * could flush its own count) and runs' write counts (the oldest forgotten past MAX_RUNS_KEPT) */
static struct count *by_principal, *by_run;
static size_t n_by_run;
/* both lists indexed by (budget, who): every tool call looks its principal's counts up */
static struct hashchain principal_index, run_index;

static void budgets_free(void)
{
    for (size_t i = 0; i < n_budgets; i++) {
        for (struct pre **p = budgets[i].principal; p && *p; p++)
            pre_free(*p);
        free(budgets[i].principal);
    }
    free(budgets);
    budgets = NULL;
    n_budgets = 0;
    for (struct count **list = &by_principal; list; list = list == &by_principal ? &by_run : NULL)
        while (*list) {
            struct count *c = *list;
            *list = c->next;
            free(c->who);
            free(c);
        }
    n_by_run = 0;
    hashchain_clear(&principal_index);
    hashchain_clear(&run_index);
}

static long positive(json_t *b, const char *key, int *bad)
{
    json_t *v = json_object_get(b, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) <= 0) {
        *bad = 1;
        return 0;
    }
    return (long)json_integer_value(v);
}

static int compile_budget(json_t *b, struct budget *dst, char *err, size_t n)
{
    if (!json_is_object(b)) {
        snprintf(err, n, "a budget must be an object");
        return -1;
    }
    const char *name = json_string_value(json_object_get(b, "name"));
    if (name)
        snprintf(dst->name, sizeof(dst->name), "%s", name);
    int bad = 0;
    dst->window_s = positive(b, "window_s", &bad);
    dst->calls = positive(b, "calls", &bad);
    dst->runs = positive(b, "runs", &bad);
    dst->cpu_s = positive(b, "cpu_s", &bad);
    dst->writes_per_run = positive(b, "writes_per_run", &bad);
    if (bad || ((dst->calls || dst->runs || dst->cpu_s) && !dst->window_s) ||
        (!dst->calls && !dst->runs && !dst->cpu_s && !dst->writes_per_run)) {
        snprintf(err, n,
                 "needs \"calls\", \"runs\" or \"cpu_s\" with \"window_s\", or "
                 "\"writes_per_run\" (positive integers)");
        return -1;
    }
    json_t *p = json_object_get(b, "principal");
    json_t *list = json_is_string(p) ? json_pack("[O]", p) : json_incref(p);
    if (p && !json_is_array(list)) {
        json_decref(list);
        snprintf(err, n, "\"principal\" must be a glob or a list of globs");
        return -1;
    }
    dst->principal = p ? xcalloc(json_array_size(list) + 1, sizeof(*dst->principal)) : NULL;
    size_t i;
    json_t *g;
    json_array_foreach(list, i, g)
    {
        const char *s = json_string_value(g);
        if (!s || !(dst->principal[i] = pre_glob(s, strlen(s), err, n))) {
            if (!s)
                snprintf(err, n, "\"principal\" must hold strings");
            json_decref(list);
            return -1;
        }
    }
    json_decref(list);
    return 0;
}

void budgets_load(json_t *list, const char *path)
{
    budgets_free();
    if (!list)
        return;
    if (!json_is_array(list)) {
        log_warn(MOD, "%s: \"budgets\" must be a list: ignored", path ? path : "config");
        return;
    }
    budgets = xcalloc(json_array_size(list), sizeof(*budgets));
    size_t i;
    json_t *b;
    json_array_foreach(list, i, b)
    {
        struct budget *dst = &budgets[n_budgets];
        snprintf(dst->name, sizeof(dst->name), "budgets[%zu]", i);
        char err[300] = "";
        if (compile_budget(b, dst, err, sizeof(err)) == 0) {
            n_budgets++;
            continue;
        }
        /* a budget that cannot be read limits everyone to nothing: fail-closed */
        log_warn(MOD, "%s: %s: %s; every call is refused until it is fixed", path ? path : "config",
                 dst->name, err);
        for (struct pre **p = dst->principal; p && *p; p++)
            pre_free(*p);
        free(dst->principal);
        *dst = (struct budget){.window_s = 1, .calls = 0, .writes_per_run = 0};
        snprintf(dst->name, sizeof(dst->name), "budgets[%zu] (invalid)", i);
        dst->calls = -1;
        n_budgets++;
    }
}

static int applies(const struct budget *b, const char *principal)
{
    if (!b->principal)
        return 1;
    for (struct pre **p = b->principal; *p; p++)
        if (pre_match(*p, principal, strlen(principal)))
            return 1;
    return 0;
}

static struct count *find(struct hashchain *index, uint64_t hash, int budget, const char *who)
{
    for (struct hashchain_link *l = hashchain_first(index, hash); l; l = l->next) {
        struct count *c = (struct count *)l;
        if (c->budget == budget && strcmp(c->who, who) == 0)
            return c;
    }
    return NULL;
}

/* Forgets the oldest run's count (the tail of by_run). */
static void drop_oldest_run(void)
{
    struct count **q = &by_run;
    while (*q && (*q)->next)
        q = &(*q)->next;
    struct count *last = *q;
    if (!last)
        return;
    *q = NULL;
    hashchain_remove(&run_index, &last->link);
    free(last->who);
    free(last);
    n_by_run--;
}

static struct count *count_of(struct count **list, int budget, const char *who, int64_t window_ms)
{
    struct hashchain *index = list == &by_run ? &run_index : &principal_index;
    uint64_t hash = hashchain_hash(who, (uint64_t)budget);
    int64_t now = now_ms();
    struct count *c = find(index, hash, budget, who);
    if (c) {
        if (window_ms && now >= c->window_end_ms) {
            c->n = 0;
            c->window_end_ms = now + window_ms;
        }
        return c;
    }
    if (list == &by_run && n_by_run >= MAX_RUNS_KEPT)
        drop_oldest_run();
    c = xcalloc(1, sizeof(*c));
    *c = (struct count){.budget = budget,
                        .who = xstrdup(who),
                        .window_end_ms = window_ms ? now + window_ms : 0,
                        .next = *list};
    hashchain_add(index, &c->link, hash);
    *list = c;
    n_by_run += list == &by_run;
    return c;
}

static long limit_of(const struct budget *b, int slot)
{
    return slot == SLOT_CALLS ? b->calls : slot == SLOT_RUNS ? b->runs : b->cpu_s * 1000;
}

/* principal's count in budget i's slot (CPU in ms) and, in *left_ms, when its window ends:
 * the fleet's count when a state store is configured (policy_budget_fleet.c), else this
 * process's. */
static long used(size_t i, int slot, const char *principal, int64_t *left_ms)
{
    const struct budget *b = &budgets[i];
    if (budget_fleet_on())
        return budget_fleet_used(b->name, "crp"[slot], b -> window_s, principal, left_ms);
    struct count *k =
        count_of(&by_principal, (int)i * SLOTS + slot, principal, (int64_t)b->window_s * 1000);
    *left_ms = k->window_end_ms - now_ms();
    return k->n;
}

static void spend(size_t i, int slot, const char *principal, long n)
{
    const struct budget *b = &budgets[i];
    if (budget_fleet_on()) {
        budget_fleet_add(b->name, "crp"[slot], b -> window_s, principal, n, limit_of(b, slot));
        return;
    }
    count_of(&by_principal, (int)i * SLOTS + slot, principal, (int64_t)b->window_s * 1000)->n += n;
}

/* 0 when principal has room left in budget i's slot, or -1 with why filled: why names the
 * budget and when the window ends. */
static int window_room(size_t i, int slot, const char *principal, const char *prefix,
                       const char *did, const char *what, char *why, size_t n)
{
    const struct budget *b = &budgets[i];
    int64_t left_ms;
    if (used(i, slot, principal, &left_ms) < limit_of(b, slot))
        return 0;
    long limit = slot == SLOT_CPU ? b->cpu_s : limit_of(b, slot);
    snprintf(why, n,
             "%sbudget %s exceeded: principal %s %s %ld %s of this %ld s window; it resets in "
             "%ld s",
             prefix, b->name, principal, did, limit, what, b->window_s,
             (long)((left_ms + 999) / 1000));
    return -1;
}

/* Checks (take 0) or counts (take 1) call c against every budget of its principal: 0, or
 * -1 with why when one has no room. Counting only after a check of all of them passes means a
 * refused call counts against none. */
static int calls_pass(const struct policy_call *c, const char *principal, const char *run_id,
                      int take, char *why, size_t n)
{
    for (size_t i = 0; i < n_budgets; i++) {
        const struct budget *b = &budgets[i];
        if (!applies(b, principal))
            continue;
        if (b->calls < 0) {
            snprintf(why, n, "the budget %s cannot be read: every call is refused", b->name);
            return -1;
        }
        if (b->calls) {
            if (window_room(i, SLOT_CALLS, principal, "", "made its", "tool calls", why, n) < 0)
                return -1;
            if (take)
                spend(i, SLOT_CALLS, principal, 1);
        }
        if (b->writes_per_run && c->mutation && run_id) {
            struct count *k = count_of(&by_run, (int)i, run_id, 0);
            if (k->n >= b->writes_per_run) {
                snprintf(why, n,
                         "budget %s exceeded: this run made its %ld write calls; it resets "
                         "with the next run",
                         b->name, b->writes_per_run);
                return -1;
            }
            k->n += take;
        }
    }
    return 0;
}

int budgets_take(const struct policy_call *c, const char *run_id, char *why, size_t n)
{
    if (!n_budgets) /* the common case: no per-call work (two passes over nothing) */
        return 0;
    const char *principal = c->principal && *c->principal ? c->principal : "local";
    if (calls_pass(c, principal, run_id, 0, why, n) < 0)
        return -1;
    return calls_pass(c, principal, run_id, 1, why, n);
}

/* As calls_pass, for a run the principal starts (its CPU seconds must be left too). */
static int runs_pass(const char *principal, int take, char *why, size_t n)
{
    for (size_t i = 0; i < n_budgets; i++) {
        const struct budget *b = &budgets[i];
        if (!applies(b, principal) || (!b->runs && !b->cpu_s && b->calls >= 0))
            continue;
        if (b->calls < 0) {
            snprintf(why, n, "execute_python: the budget %s cannot be read: every run is refused",
                     b->name);
            return -1;
        }
        if (b->cpu_s && window_room(i, SLOT_CPU, principal, "execute_python: ", "used its",
                                    "CPU seconds", why, n) < 0)
            return -1;
        if (!b->runs)
            continue;
        if (window_room(i, SLOT_RUNS, principal, "execute_python: ", "started its", "runs", why,
                        n) < 0)
            return -1;
        if (take)
            spend(i, SLOT_RUNS, principal, 1);
    }
    return 0;
}

int budgets_take_run(const char *principal, char *why, size_t n)
{
    if (!n_budgets)
        return 0;
    if (!principal || !*principal)
        principal = "local";
    if (runs_pass(principal, 0, why, n) < 0)
        return -1;
    return runs_pass(principal, 1, why, n);
}

/* Adds ms to principal's CPU count of every "cpu_s" budget it has: the least CPU ms left of
 * them (-1: none applies), with why filled when one is spent (0 left). */
static int64_t cpu_counts(const char *principal, int64_t ms, char *why, size_t n)
{
    if (!principal || !*principal)
        principal = "local";
    int64_t least = -1;
    for (size_t i = 0; i < n_budgets; i++) {
        const struct budget *b = &budgets[i];
        if (!b->cpu_s || !applies(b, principal))
            continue;
        spend(i, SLOT_CPU, principal, (long)ms);
        int64_t left_ms, left = limit_of(b, SLOT_CPU) - used(i, SLOT_CPU, principal, &left_ms);
        left = left > 0 ? left : 0;
        if (left == 0 && least != 0 && why)
            window_room(i, SLOT_CPU, principal, "execute_python: ", "used its", "CPU seconds", why,
                        n);
        least = least < 0 || left < least ? left : least;
    }
    return least;
}

int64_t budgets_cpu_left(const char *principal)
{
    return cpu_counts(principal, 0, NULL, 0);
}

int budgets_cpu_spend(const char *principal, int64_t ms, char *why, size_t n)
{
    return cpu_counts(principal, ms, why, n) == 0 ? -1 : 0;
}
