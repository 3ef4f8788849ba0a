/* policy_decide's own cost per call (src/catalog/policy_rules.c), without a gateway around it:
 * the 100 rules of bench/policy.mjs (a third fail on the principal, a third on argument
 * values, a third on a regex over a number; the last allows), every one naming the tool, so
 * every one is evaluated, against no rules at all. Prints microseconds per decision.
 * Usage: build/bench/policy_decide [decisions=200000] */
#include "config.h"
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double per_decision(const char *doc, long n)
{
    char path[] = "/tmp/codemcp-bench-policy-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, doc, strlen(doc)) != (ssize_t)strlen(doc))
        exit(2);
    close(fd);
    struct cfg cfg;
    char *err = NULL;
    if (cfg_load(path, &cfg, &err) < 0)
        exit(2);
    unlink(path);
    policy_init(&cfg);
    const char *args = "{\"a\":17,\"b\":1}";
    struct policy_call c = {"local", "everything", "get_sum",   "everything_get_sum", 0,
                            0,       args,         strlen(args)};
    struct policy_decision d;
    struct timespec t0, t1;
    long allowed = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++)
        allowed += policy_decide(&c, &d) == POLICY_ALLOW;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (allowed != n) {
        fprintf(stderr, "not allowed: %s\n", d.why);
        exit(1);
    }
    cfg_free(&cfg);
    free(err);
    return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / n / 1e3;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    char *doc = malloc(64 * 1024);
    size_t at = (size_t)sprintf(doc, "{\"policy\": {\"rules\": [");
    for (int i = 0; i < 99; i++) {
        const char *base = "\"server\": \"everything\", \"tool\": [\"get_*\", \"echo\"]";
        if (i % 3 == 0)
            at += (size_t)sprintf(doc + at,
                                  "{\"name\": \"r%d\", %s, \"principal\": [\"svc-%d-*\", \"ci\"], "
                                  "\"effect\": \"deny\"},",
                                  i, base, i);
        else if (i % 3 == 1)
            at += (size_t)sprintf(doc + at,
                                  "{\"name\": \"r%d\", %s, \"args\": {\"b\": {\"one_of\": [1]}, "
                                  "\"a\": {\"range\": [-1e9, -1]}}, \"effect\": \"deny\"},",
                                  i, base);
        else
            at += (size_t)sprintf(doc + at,
                                  "{\"name\": \"r%d\", %s, \"args\": {\"a\": {\"regex\": "
                                  "\"(\\\\d+|x{1,9})*%d\"}}, \"effect\": \"allow\"},",
                                  i, base, i);
    }
    sprintf(doc + at, "{\"name\": \"sums\", \"server\": \"everything\", \"tool\": \"get_sum\", "
                      "\"args\": {\"a\": {\"range\": [0, null]}}, \"effect\": \"allow\"}]}, "
                      "\"mcp\": {\"everything\": {\"type\": \"local\", \"command\": [\"x\"]}}}");
    const char *none = "{\"mcp\": {\"everything\": {\"type\": \"local\", \"command\": [\"x\"]}}}";
    double base = per_decision(none, n), hundred = per_decision(doc, n);
    printf("| rules | µs per decision |\n|---|---|\n| none | %.3f |\n| 100 | %.3f |\n", base,
           hundred);
    free(doc);
    return 0;
}
