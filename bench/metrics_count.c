/* metrics_count — what the metrics (src/metrics/) cost in the gateway's own terms: the counting
 * one SDK tool call makes (its outcome by server and tool, its upstream latency, the client
 * bytes of its run's answer) with metrics on and off, side by side, and one render of the
 * text with 1,000 tool series. Run: build/bench/metrics_count [calls]. Prints nanoseconds per
 * call and microseconds per render; bench/results/observe.md keeps the figures next to the
 * gateway's CPU per call. Not a test: it asserts nothing. */
#include "metrics.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERVERS 4
#define TOOLS   25

static char names[SERVERS * TOOLS][32];

/* The counting of one call, as calls.c and the transports do it. */
static void one_call(int i)
{
    int k = i % (SERVERS * TOOLS);
    static const char *const servers[SERVERS] = {"github", "linear", "everything", "filesystem"};
    /* the clock read when the call is sent (the one when it is answered is calls.c's own,
     * read with the metrics off too) */
    int64_t sent = mx_clock();
    mx_upstream_latency(servers[k % SERVERS], sent, sent);
    mx_tool_call(servers[k % SERVERS], names[k], (enum mx_call_outcome)(i % 3 == 0));
}

static double ns_per_call(int on, int calls)
{
    mx_init(on);
    int64_t t0 = now_us();
    for (int i = 0; i < calls; i++)
        one_call(i);
    double ns = (double)(now_us() - t0) * 1e3 / calls;
    mx_free();
    return ns;
}

int main(int argc, char **argv)
{
    int calls = argc > 1 ? atoi(argv[1]) : 5000000;
    for (int k = 0; k < SERVERS * TOOLS; k++)
        snprintf(names[k], sizeof(names[k]), "tool_number_%d_of_the_server", k);
    double on = 0, off = 0;
    for (int round = 0; round < 5; round++) { /* alternate: a slow phase hits both */
        double a = ns_per_call(1, calls), b = ns_per_call(0, calls);
        on = round == 0 || a < on ? a : on;
        off = round == 0 || b < off ? b : off;
    }
    printf("counting one tool call: %.1f ns with metrics on, %.1f ns off (best of 5 x %d calls)\n",
           on, off, calls);

    mx_init(1);
    char tool[32];
    for (int k = 0; k < 1000; k++) {
        snprintf(tool, sizeof(tool), "t%d", k);
        mx_tool_call("fake", tool, MX_CALL_OK);
    }
    int renders = 200;
    size_t bytes = 0;
    int64_t t0 = now_us();
    for (int r = 0; r < renders; r++) {
        char *text = mx_render();
        bytes = strlen(text);
        free(text);
    }
    printf("rendering 1,000 tool series (%zu bytes): %.1f us per render\n", bytes,
           (double)(now_us() - t0) / renders);
    mx_free();
    return 0;
}
