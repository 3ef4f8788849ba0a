/* sandbox_probe — the gateway's start-up check that the sandbox can be built here: the same
 * namespaces and mounts, made in a throwaway child forked off the gateway. The fork is why it
 * must run before the gateway has a second thread (see sbx_probe). */
#include "sandbox.h"
#include "sandbox_int.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* This process's threads (/proc/self/status), 0 when it cannot be read. */
static long threads_running(void)
{
    char *t = read_file("/proc/self/status", NULL);
    const char *p = t ? strstr(t, "\nThreads:") : NULL;
    long n = p ? strtol(p + strlen("\nThreads:"), NULL, 10) : 0;
    free(t);
    return n;
}

int sbx_probe(const struct sbx_opts *o, char *err, size_t errlen)
{
    int pfd[2];
    /* The child below builds a sandbox with malloc and stdio: forked from a process with other
     * threads it could inherit one of their locks held, and hang the gateway's start for
     * ever. Refused outright, so that an ordering mistake shows at every start, not once in a
     * thousand. */
    long threads = threads_running();
    if (threads > 1) {
        snprintf(err, errlen, "the sandbox probe must run before any thread starts (%ld run)",
                 threads);
        return -1;
    }
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        char msg[1024];
        dup2(pfd[1], 2);
        if (sbx__enter(o, 1, msg, sizeof(msg)) < 0)
            dprintf(2, "%s", msg);
        _exit(SBX_EXIT_SETUP);
    }
    close(pfd[1]);
    char msg[1024];
    size_t got = 0;
    for (;;) {
        ssize_t n = read(pfd[0], msg + got, sizeof(msg) - 1 - got);
        if (n > 0 && (got += (size_t)n) < sizeof(msg) - 1)
            continue;
        if (n < 0 && errno == EINTR)
            continue;
        break;
    }
    msg[got] = '\0';
    close(pfd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    msg[strcspn(msg, "\n")] = '\0';
    snprintf(err, errlen, "%s", got ? msg : "the sandbox probe failed without a message");
    return -1;
}
