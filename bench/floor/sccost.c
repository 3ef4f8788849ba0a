/* floor-sccost — what the worker's seccomp filter and Landlock cost per syscall.
 * Usage: floor-sccost none|trivial|codemcp|landlock   (one configuration per process; run
 * them alternately, pinned to one CPU). Loads, on itself, nothing / a one-rule filter / the
 * worker's own filter (src/worker/seal.c seal_seccomp, default sbx options) / Landlock plus
 * that filter, then times getppid(), poll() over two empty pipes with a zero timeout and a
 * 64-byte send+recv on a socketpair: the minimum over 40 blocks of 50,000, ns per syscall (per
 * pair for send+recv), so a busy phase of the shared machine does not count. Bench only. */
#include "sandbox.h"
#include "seal.h"

#include <poll.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "none";
    struct sbx_opts o;
    char err[256];
    memset(&o, 0, sizeof(o));
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (strcmp(mode, "trivial") == 0) {
        scmp_filter_ctx c = seccomp_init(SCMP_ACT_ALLOW);
        if (!c || seccomp_rule_add(c, SCMP_ACT_ERRNO(1), SCMP_SYS(acct), 0) != 0 ||
            seccomp_load(c) != 0)
            return 1;
        seccomp_release(c);
    } else if (strcmp(mode, "landlock") == 0 && seal_landlock(&o) <= 0) {
        fprintf(stderr, "floor-sccost: Landlock not available\n");
        return 1;
    }
    if ((strcmp(mode, "codemcp") == 0 || strcmp(mode, "landlock") == 0) &&
        seal_seccomp(&o, err, sizeof(err)) != 0) {
        fprintf(stderr, "floor-sccost: %s\n", err);
        return 1;
    }
    int p[2][2], s[2];
    if (pipe(p[0]) || pipe(p[1]) || socketpair(AF_UNIX, SOCK_STREAM, 0, s))
        return 1;
    struct pollfd f[2] = {{.fd = p[0][0], .events = POLLIN}, {.fd = p[1][0], .events = POLLIN}};
    char b[64] = {0};
    double best[3] = {1e12, 1e12, 1e12};
    const int n = 50000;
    for (int r = 0; r < 40; r++) {
        double t0 = now_ns();
        for (int i = 0; i < n; i++)
            syscall(SYS_getppid);
        double t1 = now_ns();
        for (int i = 0; i < n; i++)
            poll(f, 2, 0);
        double t2 = now_ns();
        for (int i = 0; i < n; i++) {
            if (send(s[0], b, sizeof(b), MSG_DONTWAIT) < 0 || recv(s[1], b, sizeof(b), 0) < 0)
                return 1;
        }
        double t3 = now_ns(), d[3] = {t1 - t0, t2 - t1, t3 - t2};
        for (int k = 0; k < 3; k++)
            if (d[k] / n < best[k])
                best[k] = d[k] / n;
    }
    printf("| %s | %.0f | %.0f | %.0f |\n", mode, best[0], best[1], best[2]);
    fflush(stdout); /* under ASan, LeakSanitizer dies at exit: its ptrace is denied here */
    return 0;
}
