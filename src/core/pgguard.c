/* pgguard — see pgguard.h. The guard side is a plain blocking read loop in a forked process
 * that never returns into the gateway's code; the gateway side only writes 5-byte records
 * ('+' or '-' and a pid) to a non-blocking pipe, so it never blocks the loop. */
#include "pgguard.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define REC 5 /* op, then the pid in host byte order */

static int guard_fd = -1;
static pid_t guard_pid = -1;

static void send_rec(char op, pid_t pgid)
{
    if (guard_fd < 0 || pgid <= 0)
        return;
    unsigned char rec[REC];
    int32_t v = (int32_t)pgid;
    rec[0] = (unsigned char)op;
    memcpy(rec + 1, &v, sizeof(v));
    /* Atomic (< PIPE_BUF). A full pipe (the guard stalled) loses this record: logged. */
    if (write(guard_fd, rec, REC) != REC && errno != EINTR)
        log_debug("pgguard", "cannot tell the guard about group %d: %s", (int)pgid,
                  strerror(errno));
}

void pg_guard_watch(pid_t pgid)
{
    send_rec('+', pgid);
}

void pg_guard_unwatch(pid_t pgid)
{
    send_rec('-', pgid);
}

/* The guard: collects groups until end-of-file, then kills those left. Never returns. */
static void guard_main(int fd)
{
    static const int quiet[] = {SIGINT, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE};
    for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
        signal(quiet[i], SIG_IGN); /* a terminal's Ctrl-C is the gateway's to handle */
    prctl(PR_SET_NAME, "codemcp-guard");
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
    }
    if (fd != 3 && dup2(fd, 3) == 3)
        fd = 3;
    close_range(4, ~0U, 0);
    pid_t *groups = NULL;
    size_t n = 0, cap = 0;
    unsigned char rec[REC];
    size_t have = 0;
    for (;;) {
        ssize_t r = read(fd, rec + have, REC - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
        if (have < REC)
            continue;
        have = 0;
        int32_t v;
        memcpy(&v, rec + 1, sizeof(v));
        if (rec[0] == '+') {
            if (n == cap) {
                cap = cap ? cap * 2 : 32;
                pid_t *g = realloc(groups, cap * sizeof(*g));
                if (!g)
                    continue;
                groups = g;
            }
            groups[n++] = (pid_t)v;
        } else {
            for (size_t i = 0; i < n; i++)
                if (groups[i] == (pid_t)v) {
                    groups[i] = groups[--n];
                    break;
                }
        }
    }
    for (size_t i = 0; i < n; i++)
        kill(-groups[i], SIGKILL);
    _exit(0);
}

int pg_guard_start(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        log_warn("pgguard", "pipe: %s (children of children may outlive a killed gateway)",
                 strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        log_warn("pgguard", "fork: %s (children of children may outlive a killed gateway)",
                 strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        close(p[1]);
        guard_main(p[0]);
    }
    close(p[0]);
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    guard_fd = p[1];
    guard_pid = pid;
    return 0;
}

void pg_guard_stop(void)
{
    if (guard_fd < 0)
        return;
    close(guard_fd);
    guard_fd = -1;
    for (int i = 0; i < 200; i++) { /* it exits as soon as it reads end-of-file */
        pid_t r = waitpid(guard_pid, NULL, WNOHANG);
        if (r == guard_pid || (r < 0 && errno != EINTR))
            break;
        usleep(1000);
    }
    guard_pid = -1;
}
