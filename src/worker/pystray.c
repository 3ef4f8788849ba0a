/* pystray — see pystray.h. */
#include "pystray.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#define PYS_REAP_MS 500

static int sandboxed; /* 1: the check; 2: no subreaper flag, so every request kills */

void pys_init(void)
{
    const char *iso = getenv("CODEMCP_ISOLATION");
    /* The sandbox's worker is PID 2 of its namespace; a container's (docker isolation) is
     * its PID 1, which every orphan of the namespace reaches by itself. */
    sandboxed = iso && ((strcmp(iso, "sandbox") == 0 && getpid() == 2) ||
                        (strcmp(iso, "container") == 0 && getpid() == 1));
    if (!sandboxed)
        return;
    /* fork() does not pass the flag on, and an exec'd worker was forked by its PID 1. */
    int on = 0;
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 || prctl(PR_GET_CHILD_SUBREAPER, &on) < 0 || !on) {
        log_warn("worker",
                 "cannot become a child subreaper (%s): orphans of a run would go to PID 1, so "
                 "every request ends with a kill of the sandbox's processes",
                 strerror(errno));
        sandboxed = 2;
    }
}

/* Any child at all, running or dead, of any kind (__WALL: also clone children whose exit
 * signal is not SIGCHLD)? WNOWAIT leaves a dead one's status for its waiter. Any answer but
 * ECHILD counts as yes. */
static int any_child(void)
{
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    int rc;
    do
        rc = waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL);
    while (rc < 0 && errno == EINTR);
    return !(rc < 0 && errno == ECHILD);
}

int pys_strays(void)
{
    return sandboxed == 2 || (sandboxed == 1 && any_child());
}

void pys_end_strays(void)
{
    if (!sandboxed || (sandboxed == 1 && !any_child()))
        return;
    /* Killed again each round: an agent thread may still be forking (the GIL is released). */
    int64_t deadline = now_ms() + PYS_REAP_MS;
    do {
        kill(-1, SIGKILL); /* every process of the namespace but PID 1 and this one */
        while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
            ;
        if (!any_child())
            return;
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    } while (now_ms() < deadline);
    log_warn("worker", "processes of the run were still alive %d ms after SIGKILL", PYS_REAP_MS);
}
