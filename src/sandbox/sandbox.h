/* sandbox — builds the OS sandbox a codemcp worker runs in (Linux namespaces, a minimal
 * read-only root, a private tmpfs, dropped credentials and capabilities, rlimits).
 *
 * Used by the worker host (src/worker/main.c) on itself, first thing after exec and before
 * any thread starts, and by the gateway once at start-up as a probe (fail closed with a
 * message that says why and what to do). The syscall filter and Landlock are not here: they
 * live in src/worker/seal.c (libseccomp is a worker-only dependency).
 *
 * Process layout after sbx_enter() (the gateway sees only the first one):
 *   waiter   the process the gateway spawned; outside the new PID namespace; waits and exits
 *            with the worker's status (signals re-raised). Its death kills the rest.
 *   init     PID 1 of the new PID namespace; reaps orphans; its death ends every process in
 *            the namespace (a timeout's SIGKILL of the waiter kills the whole sandbox).
 *   worker   PID 2: the caller of sbx_enter(), which returns 0 there.
 * With o->prototype the worker is the prototype (src/worker/forksrv.h): PID 1 then outlives it
 * while sessions forked from it still run, and each session gets a sandbox of its own nested
 * in this one (sbx_fork_session: its PID 1, then its worker), in a process group of its
 * own (what kill(0), killpg and PRIO_PGRP reach).
 * Namespaces: user, PID, mount, IPC, UTS, cgroup, and network (unless net_host). The
 * worker runs as uid/gid 1000 inside, mapped to the gateway's own uid, or to nobody (65534)
 * when the gateway is root, so that RLIMIT_NPROC binds (the kernel exempts real root); a
 * forked session, to an id of its own where there is a range (sandbox_subid.c); a
 * root gateway also maps uid 0 to itself, used only while the root is built (so paths under
 * root-only directories such as /root can be bound) and left before anything else runs.
 * Must not: allocate after the clone in the waiter or init beyond what is already prepared,
 * or leave any capability to the worker. */
#ifndef CODEMCP_SANDBOX_H
#define CODEMCP_SANDBOX_H

#include <stddef.h>
#include <sys/types.h>

/* Settings (settings.def), read by sbx_opts_from_settings: the gateway from its own
 * environment, the worker from the one the gateway passes it. */
struct sbx_opts {
    int net_host;              /* CODEMCP_SANDBOX_NET=host: keep the host network namespace */
    int subprocess;            /* CODEMCP_SANDBOX_SUBPROCESS: /usr/bin visible, execve allowed */
    long tmp_mb;               /* CODEMCP_SANDBOX_TMP_MB: size of /tmp (default 64) */
    long nproc;                /* CODEMCP_SANDBOX_NPROC: processes + threads (default 128) */
    long nofile;               /* CODEMCP_SANDBOX_NOFILE: open files (default 1024) */
    const char *ro;            /* CODEMCP_SANDBOX_RO: colon-separated extra read-only paths */
    const char *rw;            /* CODEMCP_SANDBOX_RW: colon-separated extra read-write paths */
    const char *dev;           /* CODEMCP_PYTHONPATH_DEV (dev only): made visible read-only */
    const char *encoder_model; /* CODEMCP_ENCODER_MODEL: search's sentence encoder, read-only */
    long landlock_abi_max; /* CODEMCP_SANDBOX_LANDLOCK_ABI_MAX (tests): use at most this Landlock
                              ABI, as an older kernel would (-1: what the kernel has) */
    long root_uid_base;    /* CODEMCP_ROOT_UID_BASE: a root gateway's sessions' outer ids */
    int subids;    /* CODEMCP_SANDBOX_SUBIDS: a uid of its own per session from the gateway user's
                      /etc/subuid range (sandbox_subid.c) */
    int prototype; /* set by the caller: this sandbox hosts the prototype (forksrv.h), which
                      forks sessions into sandboxes of their own (sbx_fork_session) */
};

struct settings;
/* Fills o from the settings (o->prototype left 0): the one reading of the sandbox's settings,
 * so the gateway's view and the worker's limits agree. */
void sbx_opts_from_settings(const struct settings *s, struct sbx_opts *o);

/* Turns the calling process into a sandboxed worker (see the layout above). Single-threaded
 * callers only. Returns 0 in the worker; -1 with a message in err when the sandbox cannot be
 * built (nothing was changed in this process then, except when a step after the clone
 * fails: those exit with status SBX_EXIT_SETUP after writing the reason to stderr). */
int sbx_enter(const struct sbx_opts *o, char *err, size_t errlen);

/* The prototype (src/worker/forksrv.c) forks a session's worker with this: a clone into a
 * new user, PID, mount and IPC namespace (sandboxed) or a plain fork (host isolation). In
 * the clone, PID 1 maps its ids (1000 → 1000), mounts a fresh size-capped tmpfs on /tmp
 * (moving the CODEMCP_SANDBOX_RO/RW paths below /tmp onto it) and a /proc of the new PID
 * namespace, forks the worker (PID 2) and then reaps, writing the worker's raw wait status
 * to fds[3] when it ends (its own death ends everything in the namespace). The worker
 * drops every capability, sets no_new_privs and the rlimits, and returns 0; the caller then
 * seals it (seal.h). In the caller, returns the pid of the session's PID 1 (as the caller
 * sees it), or -1 (errno). The caller wraps it in PyOS_BeforeFork/AfterFork. In host
 * isolation the first process only makes a process group and reaps. */
/* fds: the worker's control socket (becomes fd 3), stdout, stderr, and the status pipe. ids:
 * the session's place in the id range (its uid and gid outside are the range's start + ids),
 * chosen by the gateway, unique among live sessions (sbx_session_ids). */
pid_t sbx_fork_session(const struct sbx_opts *o, int sandboxed, const int fds[4], int ids);

/* How sessions' ids map outside, for the gateway's log, written to buf: 1, a uid of its own
 * per session (the range); 0, the gateway's own user (buf says why and what to do). */
int sbx_uid_mode(const struct sbx_opts *o, char *buf, size_t len);

/* How many places the id range has for sessions (at most SBX_SESSION_IDS_MAX), its first uid
 * outside in *start; 0 when sessions keep the gateway's own user. */
unsigned long sbx_session_ids(const struct sbx_opts *o, unsigned long *start);
#define SBX_SESSION_IDS_MAX 65536

/* Exit status of a sandbox whose set-up failed after the clone. */
#define SBX_EXIT_SETUP 125

/* Gateway start-up check: builds the same namespaces and mounts in a throwaway child and
 * reports whether that worked. 0, or -1 with the reason and what to do in err. Only while the
 * process has one thread (refused otherwise: see sandbox.c). */
int sbx_probe(const struct sbx_opts *o, char *err, size_t errlen);

/* Gateway start-up: warns about CODEMCP_SANDBOX_RO/RW paths that cannot be shown. */
void sbx_check_paths(const struct sbx_opts *o);

/* The sandbox's PID 1 as the gateway sees it (the waiter's only child), or -1. */
pid_t sbx_inner_init(pid_t waiter);
/* Kills a sandbox for good: SIGKILL to its PID 1 (everything inside dies, the waiter reaps
 * it and exits with SIGKILL), or to the waiter when PID 1 does not exist (yet). */
void sbx_kill(pid_t waiter);

#endif
