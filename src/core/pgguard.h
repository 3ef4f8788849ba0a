/* pgguard — the gateway's children's process groups die with it, even when it is SIGKILLed.
 *
 * PR_SET_PDEATHSIG (set by loop.c on every spawned child) reaches direct children only: the
 * `node` that `npx` or `sh -c` starts would be reparented to init and live on. So a small
 * guard process, forked before anything secret is loaded (and, like the gateway, not
 * dumpable), holds the read end of a pipe and the list of process groups the gateway has
 * spawned (every lp_spawn child leads its own group). When the pipe reaches end-of-file —
 * the gateway exited, however it died — the guard sends SIGKILL to every group still on the
 * list and exits. Limits: a grandchild that leaves its group (setsid, setpgid) escapes, and
 * so do a group's members still running after its leader was reaped; a SIGKILL of the guard
 * itself (e.g. of the gateway's whole process group) disarms it. Loop thread only. */
#ifndef CODEMCP_PGGUARD_H
#define CODEMCP_PGGUARD_H

#include <sys/types.h>

/* Forks the guard. Call once, early (before threads and before secrets are read). 0, or -1
 * (logged; the gateway then runs without it). */
int pg_guard_start(void);
/* Adds / removes a process group (its leader's pid). No-ops without a guard. */
void pg_guard_watch(pid_t pgid);
void pg_guard_unwatch(pid_t pgid);
/* Normal exit: closes the pipe (the guard kills what is still listed, normally nothing) and
 * reaps the guard, waiting at most ~200 ms. */
void pg_guard_stop(void);

#endif
