/* budget_lookup — what finding a principal's budget count costs on every tool call in a fleet
 * (policy_budget_fleet.c) as the replica knows more counts: nanoseconds per lookup with 1 to
 * 60,000 (budget, principal, window) counts known, side by side in one run, so the ratio
 * shows whether a lookup grows with the number of principals. Run: build/bench/budget_lookup
 * [lookups]. No state store (the counts stay local; nothing is sent). Not a test: it asserts
 * nothing; bench/results/budget_lookup.md keeps the figures. */
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

int main(int argc, char **argv)
{
    int lookups = argc > 1 ? atoi(argv[1]) : 200000;
    double base = 0;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        double ns = ns_per_lookup(sizes[k], lookups); /* counts accumulate: sizes ascend */
        if (k == 0)
            base = ns;
        printf("%6d counts known: %9.1f ns per lookup (x%.1f the 1-count case)\n", sizes[k], ns,
               ns / base);
    }
    return 0;
}
