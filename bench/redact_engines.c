/* The two linear-time matchers side by side on redaction's inputs: redact.c's flat matcher
 * (all of redact_text: every value pattern and the key=value rule, bounds, groups, restarts)
 * against one pass of linear_re.c's Thompson NFA over the same text for each of the same
 * patterns, which only says whether the pattern occurs somewhere (`.*(?:P).*`), no bounds nor
 * groups: a lower bound of what redaction through the NFA would cost. Inputs: 64 KiB of each
 * hostile text of tests/unit/test_redact_bounds.c, and one ordinary log line.
 * Usage: build/bench/redact_engines > bench/results/redact_engines.md */
#include "linear_re.h"
#include "redact.h"
#include "redact_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N_PATTERNS (sizeof(rr_value_patterns) / sizeof(rr_value_patterns[0]) - 1)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static char *repeated(const char *unit, size_t n)
{
    size_t u = strlen(unit);
    char *s = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        s[i] = unit[i % u];
    s[n] = '\0';
    return s;
}

static struct pre *presence(const char *pattern)
{
    char text[512], err[200];
    snprintf(text, sizeof(text), ".*(?:%s).*", pattern);
    struct pre *re = pre_compile(text, strlen(text), 0, err, sizeof(err));
    if (!re) {
        fprintf(stderr, "%s: %s\n", text, err);
        exit(2);
    }
    return re;
}

/* Seconds per round of each: the flat matcher (redact_text), then the NFA passes. */
static void time_both(struct pre **nfa, size_t n_nfa, const char *t, size_t len, int rounds,
                      double *flat, double *thompson)
{
    double a = now_s();
    for (int i = 0; i < rounds; i++)
        free(redact_text(t, len));
    double b = now_s();
    for (int i = 0; i < rounds; i++)
        for (size_t k = 0; k < n_nfa; k++)
            pre_match(nfa[k], t, len);
    *flat = (b - a) / rounds;
    *thompson = (now_s() - b) / rounds;
}

int main(void)
{
    static const char *const units[] = {"a:",          "x",     "eyJ",  "sk-",
                                        "-----BEGIN ", "://a:", "a=b ", "Bearer "};
    struct pre *nfa[N_PATTERNS + 1];
    size_t n_nfa = 0;
    for (size_t i = 0; i < N_PATTERNS; i++)
        nfa[n_nfa++] = presence(rr_value_patterns[i][1]);
    nfa[n_nfa++] = presence(RR_KEY_VALUE_PATTERN);
    printf("| input | flat matcher: all of redact_text | Thompson NFA: one presence pass per "
           "pattern (%zu) | × |\n|---|---|---|---|\n",
           n_nfa);
    size_t n = 1u << 16;
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        char *t = repeated(units[u], n);
        double flat, thompson;
        time_both(nfa, n_nfa, t, n, 3, &flat, &thompson);
        printf("| 64 KiB of `%s` | %.2f ms | %.2f ms | %.1f |\n", units[u], flat * 1e3,
               thompson * 1e3, thompson / flat);
        free(t);
    }
    const char *line = "2026-12-06T21:00:00Z info upstream: github: tools/call create_issue took "
                       "12 ms (owner=acme repo=widgets token=ghp_abcdefghijklmnopqrstuvwxyz0123 "
                       "Authorization: Bearer abcdefghijklmnop1234)";
    double flat, thompson;
    time_both(nfa, n_nfa, line, strlen(line), 20000, &flat, &thompson);
    printf("| a %zu-byte log line | %.2f µs | %.2f µs | %.1f |\n", strlen(line), flat * 1e6,
           thompson * 1e6, thompson / flat);
    for (size_t k = 0; k < n_nfa; k++)
        pre_free(nfa[k]);
    return 0;
}
