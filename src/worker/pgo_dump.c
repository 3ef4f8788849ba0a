/* pgo_dump — compiled into codemcp-worker only by a profile-generating build
 * (meson -Db_pgo=generate, which install.sh makes on its way to the profile-guided release
 * build; see bench/pgo_train.py). Never part of an installed binary.
 *
 * Why it exists: the gcov runtime writes its counters at exit(), but a worker never exits
 * that way — the gateway ends it with SIGKILL. So a generating build gives the worker a
 * SIGUSR2 handler that writes the counters (__gcov_dump) and zeroes them (__gcov_reset), so
 * a second signal adds only what ran since. The trainer sends it to every codemcp-worker
 * while they are idle, before it closes the gateway. SIGUSR2 is free: the worker uses SIGUSR1
 * (a run's interrupt) and Python installs no handler for SIGUSR2. */
#include <signal.h>
#include <string.h>

void __gcov_dump(void);
void __gcov_reset(void);

static void pgo_on_usr2(int sig)
{
    (void)sig;
    __gcov_dump();
    __gcov_reset();
}

__attribute__((constructor)) static void pgo_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = pgo_on_usr2;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &sa, NULL);
}
