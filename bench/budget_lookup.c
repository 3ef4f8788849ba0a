/* budget_lookup — what finding a principal's budget counts costs on every tool call as more
 * principals are known: in a fleet (policy_budget_fleet.c: one lookup of a count) and on one
 * host (policy_budget.c: budgets_take, the check and the count of one call), with 1 to 60,000
 * principals known, side by side in one run, so the ratio shows whether a call's cost grows
 * with the number of principals. Run: build/bench/budget_lookup [lookups]. No state store (the
 * fleet's counts stay local; nothing is sent). Not a test: it asserts nothing;
 * bench/results/budget_lookup.md keeps the figures. */
#include "policy.h"
#include "policy_int.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

static const int sizes[] = {1, 100, 10000, 60000};

static void principal(int i, char *out, size_t n)
{
    snprintf(out, n, "user-%d@example.com", i);
}

static double ns_per_lookup(int known, int lookups)
{
    char who[64];
    int64_t left;
    for (int i = 0; i < known; i++) { /* the counts a busy replica would know */
        principal(i, who, sizeof(who));
        budget_fleet_used("daily", 'c', 86400, who, &left);
    }
    long sink = 0;
    int64_t t0 = now_us();
    for (int i = 0; i < lookups; i++) {
        principal((int)((unsigned)i * 2654435761u % (unsigned)known), who, sizeof(who));
        sink += budget_fleet_used("daily", 'c', 86400, who, &left);
    }
    double ns = (double)(now_us() - t0) * 1e3 / lookups;
    return sink < 0 ? -1 : ns;
}

/* One host: budgets_take for a call of a random known principal (one "calls" budget). */
static double ns_per_call(int known, int calls)
{
    char who[64], why[256];
    struct policy_call c = {.principal = who, .server = "s", .tool = "t", .fn = "s_t"};
    for (int i = 0; i < known; i++) {
        principal(i, who, sizeof(who));
        budgets_take(&c, "run", why, sizeof(why));
    }
    int refused = 0;
    int64_t t0 = now_us();
    for (int i = 0; i < calls; i++) {
        principal((int)((unsigned)i * 2654435761u % (unsigned)known), who, sizeof(who));
        refused += budgets_take(&c, "run", why, sizeof(why)) < 0;
    }
    double ns = (double)(now_us() - t0) * 1e3 / calls;
    return refused ? -1 : ns;
}

static void series(const char *what, double (*fn)(int, int), int n)
{
    double base = 0;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        double ns = fn(sizes[k], n); /* counts accumulate: sizes ascend */
        if (k == 0)
            base = ns;
        printf("%s: %6d principals known: %9.1f ns (x%.1f the 1-principal case)\n", what, sizes[k],
               ns, ns / base);
    }
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200000;
    series("fleet, one count looked up", ns_per_lookup, n);
    json_t *list =
        json_loads("[{\"name\": \"daily\", \"window_s\": 86400, \"calls\": 1000000000}]", 0, NULL);
    budgets_load(list, "bench");
    json_decref(list);
    series("one host, budgets_take of a call", ns_per_call, n);
    return 0;
}
