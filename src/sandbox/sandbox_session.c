/* sandbox_session — a session's own sandbox, forked from the prototype (see
 * sbx_fork_session in sandbox.h).
 *
 * Why a nested user namespace per session and not one shared PID namespace with
 * non-dumpable siblings: siblings that share a PID, mount and user namespace share /tmp,
 * see each other in /proc (and a same-uid process can signal them; a seccomp rule cannot
 * tell a sibling's pid from a run's own child), and one RLIMIT_NPROC count for them all.
 * A user namespace of its own costs no capability in the prototype (an unprivileged
 * process may create one and map its own uid), lets the session's PID 1 mount a fresh
 * /proc and /tmp, and gives every session its own process count. What it costs, measured on
 * the 2-core test machine (a C loop, 200 sessions started and ended): 4.5 ms per session for
 * clone(NEWUSER|NEWPID|NEWNS|NEWIPC) + id maps + tmpfs + proc + fork, against 1.7 ms for the
 * two plain forks the shared-namespace design needs — 2.8 ms, against a budget of 25 ms; the
 * whole first run of a new session is ~4 ms over an existing session's empty run
 * (bench/results/sandbox.md). The network and UTS namespaces stay the prototype's (empty:
 * socket() is refused by seccomp anyway; hostname not settable).
 * Must not: touch Python (PID 1 is a raw clone: glibc's cached thread id is stale there,
 * so only the worker, a real fork(), may), or leave a capability to the worker. */
#include "sandbox.h"
#include "sandbox_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

struct ss_keep {
    int fd; /* a detached copy of the mount (open_tree) */
    int is_dir;
    char path[PATH_MAX];
};

static void ss_write(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        sbx__die_step("open", path);
    if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        sbx__die_step("write", path);
    close(fd);
}

static void ss_mkdirs(const char *path, int leaf_dir)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *s = tmp + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
                sbx__die_step("mkdir", tmp);
            *s = '/';
        }
    if (leaf_dir) {
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
            sbx__die_step("mkdir", tmp);
    } else {
        int fd = open(tmp, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            sbx__die_step("create", tmp);
        close(fd);
    }
}

/* The CODEMCP_SANDBOX_RO/RW (and dev) paths below /tmp are mounts on the prototype's /tmp:
 * detached copies are taken before the fresh /tmp hides them. */
static size_t ss_keep_list(const char *list, struct ss_keep *k, size_t n)
{
    if (!list)
        return n;
    const char *p = list;
    while (*p && n < SBX_TMP_KEEP_MAX) {
        size_t len = strcspn(p, ":");
        if (len < PATH_MAX && sbx__below_tmp(p, len)) {
            struct stat st;
            memcpy(k[n].path, p, len);
            k[n].path[len] = '\0';
            k[n].fd = (int)syscall(SYS_open_tree, AT_FDCWD, k[n].path,
                                   OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
            if (k[n].fd >= 0 && fstat(k[n].fd, &st) == 0) {
                k[n].is_dir = S_ISDIR(st.st_mode);
                n++;
            } else if (k[n].fd >= 0) {
                close(k[n].fd);
            }
        }
        p += len;
        if (*p == ':')
            p++;
    }
    return n;
}

/* PID 1 of the session, right after the clone: ids, a fresh /tmp and /proc. */
static void ss_build(const struct sbx_opts *o, uid_t uid, gid_t gid, int mapped)
{
    char map[64], opt[96];
    struct ss_keep keep[SBX_TMP_KEEP_MAX];
    size_t n = 0;
    if (mapped) /* the prototype wrote the maps (ss_await_maps) */
        goto mounts;
    /* Maps are written by this process: its /proc files must belong to it meanwhile (the
     * prototype is not dumpable). sbx__init_main makes it non-dumpable again. The window (the
     * maps, two mounts and a fork): the same user's processes outside could ptrace it and take
     * the new worker's descriptors and the token in its copy of the request. Closing it needs
     * the token and descriptors handed over only after the maps (a private socketpair from
     * the prototype): not done yet. */
    prctl(PR_SET_DUMPABLE, 1);
    ss_write("/proc/self/setgroups", "deny");
    snprintf(map, sizeof(map), "%d %d 1\n", SBX_UID, (int)uid);
    ss_write("/proc/self/uid_map", map);
    snprintf(map, sizeof(map), "%d %d 1\n", SBX_UID, (int)gid);
    ss_write("/proc/self/gid_map", map);
mounts:
    n = ss_keep_list(o->ro, keep, n);
    n = ss_keep_list(o->rw, keep, n);
    n = ss_keep_list(o->dev, keep, n);
    snprintf(opt, sizeof(opt), "mode=1777,size=%ldm,nr_inodes=16384", o->tmp_mb);
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opt) < 0)
        sbx__die_step("mount tmpfs", "/tmp");
    for (size_t i = 0; i < n; i++) {
        ss_mkdirs(keep[i].path, keep[i].is_dir);
        if (syscall(SYS_move_mount, keep[i].fd, "", AT_FDCWD, keep[i].path,
                    MOVE_MOUNT_F_EMPTY_PATH) < 0)
            sbx__die_step("move_mount", keep[i].path);
        close(keep[i].fd);
    }
    if (chdir("/tmp") < 0)
        sbx__die_step("chdir", "/tmp");
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        sbx__die_mount_proc("/proc");
}

/* The descriptors a session starts with: /dev/null, its stdout and stderr pipes, its control
 * socket as fd 3. Returns the status descriptor, moved above them. */
static int ss_place_fds(const int fds[4])
{
    int st = fcntl(fds[3], F_DUPFD_CLOEXEC, 16);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (st < 0 || null < 0 || dup2(null, 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[2], 2) < 0 ||
        dup2(fds[0], 3) < 0)
        sbx__die_step("dup2", NULL);
    return st;
}

/* PID 1 with a subordinate id range (sandbox_subid.c): only the prototype may write a map
 * that names another id, so PID 1 makes its /proc files its own (it inherits the prototype's
 * non-dumpable state), says so on ready, waits for the maps on go, and becomes 1000 inside:
 * its kernel uid is then the session's own, and so is every process it starts. */
static void ss_await_maps(int ready, int go)
{
    char c = 'r';
    prctl(PR_SET_DUMPABLE, 1);
    if (write(ready, &c, 1) != 1 || read(go, &c, 1) != 1)
        _exit(SBX_EXIT_SETUP); /* the prototype could not map us: it reports why */
    close(ready);
    close(go);
    if (setresgid(SBX_UID, SBX_UID, SBX_UID) < 0)
        sbx__die_step("setresgid", NULL);
    if (setresuid(SBX_UID, SBX_UID, SBX_UID) < 0)
        sbx__die_step("setresuid", NULL);
}

/* The prototype's side: waits for PID 1's ready, maps it to its own ids, lets it go.
 * Returns pid, or -1 (errno) after killing it. */
static pid_t ss_map_child(pid_t pid, int ids, int ready, int go)
{
    char c;
    int e = 0;
    if (read(ready, &c, 1) != 1)
        e = EIO;
    else if (sbx__subid_map_session(pid, ids) < 0)
        e = errno;
    else if (write(go, "g", 1) != 1)
        e = errno;
    if (e == 0)
        return pid;
    kill(pid, SIGKILL); /* reaped by the kernel: the prototype ignores SIGCHLD */
    errno = e;
    return -1;
}

pid_t sbx_fork_session(const struct sbx_opts *o, int sandboxed, const int fds[4], int ids)
{
    /* Host isolation: the session's PID 1 becomes the gateway's child (CLONE_PARENT), so that
     * it dies with the gateway (PDEATHSIG) but not with the prototype. Sandboxed, it is nested
     * in the prototype's sandbox, which the gateway's death ends as a whole. */
    unsigned long flags =
        sandboxed ? (unsigned long)(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC)
                  : (unsigned long)CLONE_PARENT;
    uid_t uid = getuid(); /* the ids in the prototype's namespace: unmapped after the clone */
    gid_t gid = getgid();
    int mapped = sandboxed && sbx__subid_active();
    int ready[2] = {-1, -1}, go[2] = {-1, -1};
    if (mapped && (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0)) {
        int e = errno;
        for (int i = 0; i < 2; i++)
            if (ready[i] >= 0)
                close(ready[i]);
        errno = e;
        return -1;
    }
    pid_t pid = (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0);
    if (pid != 0 && mapped) {
        int e = errno;
        close(ready[1]);
        close(go[0]);
        if (pid > 0)
            pid = ss_map_child(pid, ids, ready[0], go[1]);
        else
            errno = e;
        e = errno;
        close(ready[0]);
        close(go[1]);
        errno = e;
    }
    if (pid != 0)
        return pid;
    if (mapped) {
        close(ready[0]);
        close(go[1]);
        ss_await_maps(ready[1], go[0]);
    }
    /* PID 1 of the session. Not tied to the prototype's life: a prototype that crashes
     * leaves live sessions alone (the gateway's death still ends them). */
    signal(SIGCHLD, SIG_DFL);
    /* A session and process group of its own: otherwise the session shares the prototype's
     * group, and kill(0, ...), killpg and setpriority(PRIO_PGRP, 0, ...) in one session reach
     * every other session and the prototype, whatever the PID namespaces (a process group is not
     * confined by them; Landlock's signal scoping, Linux 6.12+, is the only other wall, and it
     * does not cover priorities). No session can join another's group: setpgid names a group by
     * a pid of the caller's own namespace. setsid also detaches it from any controlling terminal
     * the gateway was started from. */
    if (setsid() < 0)
        sbx__die_step("setsid", NULL);
    if (!sandboxed)
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* host isolation: the gateway kills its group */
    int status_fd = ss_place_fds(fds);
    if (sandboxed)
        ss_build(o, uid, gid, mapped);
    pid_t worker = fork();
    if (worker < 0)
        sbx__die_step("fork", NULL);
    if (worker > 0)
        sbx__init_main(worker, status_fd, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (sandboxed && getppid() != 1)
        _exit(SBX_EXIT_SETUP);
    close_range(4, ~0U, 0);
    if (sandboxed) {
        struct sbx_opts lim = *o;
        lim.prototype = 0;
        sbx__drop_privileges(0, 0, 0);
        sbx__apply_limits(&lim);
        /* As an exec'd worker's: its own environ and memory stay closed to /proc readers
         * (it was dumpable only so that PID 1 could write the id maps). */
        prctl(PR_SET_DUMPABLE, 0);
    }
    return 0;
}
