/* audit_line — what one audit line costs the gateway (src/run/audit.c, audit_sink.c), without a
 * gateway around it: the line of an allowed call with three argument keys, built and queued
 * `lines` times, once with keys only and once with CODEMCP_AUDIT_ARGS' redacted values. Prints
 * the loop thread's CPU per line (what a tool call pays on the loop) and the whole process's
 * (the writer thread's writes too), and checks the file holds every line.
 * Usage: build/bench/audit_line [lines=100000] */
#include "audit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double cpu_us(clockid_t clk)
{
    struct timespec t;
    clock_gettime(clk, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static long count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    long n = 0;
    int c;
    while (f && (c = getc(f)) != EOF)
        n += c == '\n';
    if (f)
        fclose(f);
    return n;
}

static void measure(const char *what, int with_args, long n)
{
    char path[] = "/tmp/codemcp-bench-audit-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        exit(2);
    close(fd);
    char err[256];
    if (audit_init(path, with_args, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s\n", err);
        exit(2);
    }
    const char *args = "{\"owner\":\"octo\",\"repo\":\"hello\",\"title\":\"Login crash\"}";
    struct call_event c = {.principal = "alice",
                           .session = 7,
                           .run = "r12",
                           .server = "github",
                           .tool = "create_issue",
                           .fn = "github_create_issue",
                           .listed = 1,
                           .mutation = 1,
                           .decision = "allow",
                           .rule = "ci-issues",
                           .outcome = "ok",
                           .result = MX_CALL_OK,
                           .duration_ms = 83,
                           .args = args,
                           .args_len = strlen(args)};
    double l0 = cpu_us(CLOCK_THREAD_CPUTIME_ID), p0 = cpu_us(CLOCK_PROCESS_CPUTIME_ID);
    for (long i = 0; i < n; i++) {
        audit_tool_call(&c);
        if (i % 1000 == 999)
            usleep(1000); /* calls come in bursts; the writer keeps up */
    }
    double loop = cpu_us(CLOCK_THREAD_CPUTIME_ID) - l0;
    audit_close();
    double proc = cpu_us(CLOCK_PROCESS_CPUTIME_ID) - p0;
    long got = count_lines(path);
    unlink(path);
    printf("| %s | %.2f | %.2f | %ld of %ld |\n", what, loop / (double)n, proc / (double)n, got, n);
    if (got != n)
        exit(1);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    printf("| audit line | loop thread CPU µs/line | process CPU µs/line | lines in the file |\n"
           "|---|---|---|---|\n");
    measure("argument keys (default)", 0, n);
    measure("keys and redacted values (CODEMCP_AUDIT_ARGS=1)", 1, n);
    return 0;
}
