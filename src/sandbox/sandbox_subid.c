/* sandbox_subid — each session's own outer uid and gid: from the gateway user's subordinate
 * id range (/etc/subuid, /etc/subgid) when the gateway is not root, from CODEMCP_ROOT_UID_BASE
 * when it is (root writes any map itself).
 *
 * Why: without it every session's worker runs as the gateway's own user outside (its user
 * namespace maps uid 1000 to the gateway's uid, or nobody for root), and the kernel keeps some
 * budgets per user (struct user_struct, by the uid outside every namespace): pipe buffer pages
 * (fs.pipe-user-pages-soft), epoll watches (fs.epoll.max_user_watches), locked memory. One
 * session filling them shrinks them for the gateway and for every other session. Mapped the
 * way rootless podman maps a container, each live session has a uid of its own outside and
 * those budgets are its own. Counters the kernel keeps per user namespace and charges to every
 * namespace's creator up the chain (inotify, fanotify, user namespaces, RLIMIT_NPROC) still
 * reach the gateway's user whatever the mapping: those are refused or capped by the sandbox
 * itself (seal.c's filter, sbx__apply_limits).
 *
 * How: the sandbox's user namespace (the prototype's) maps, besides 1000 to the gateway's uid
 * (nobody for root), SBX_SUBID_BASE.. to the whole range; only the setuid helpers
 * newuidmap/newgidmap (Debian package uidmap) may write such a map for an unprivileged user,
 * so its waiter runs them (a root waiter writes it). The
 * prototype keeps CAP_SETUID and CAP_SETGID in its own namespace (nothing else, and no agent
 * code ever runs in it) to write each session's map, 1000 to SBX_SUBID_BASE + the session's
 * place in the range, which the gateway picks: one id per live session, and a slot's next
 * session gets another (workers.c, next_ids). The session's PID 1 then becomes 1000 inside,
 * so that its processes carry that uid outside.
 * Must not: run a helper other than the two at their fixed paths, or map an id the range does
 * not hold. */
#include "sandbox.h"
#include "sandbox_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SBX_NEWUIDMAP  "/usr/bin/newuidmap"
#define SBX_NEWGIDMAP  "/usr/bin/newgidmap"
#define SBX_SUBID_BASE 100000 /* first id of the range inside the sandbox's namespace */

struct subid_range {
    unsigned long start, count;
};

/* Filled before the clone (sbx__subid_prepare), read after it in the waiter and the prototype,
 * which inherit this process's memory. */
static struct {
    int active;
    struct subid_range uid, gid;
    char why[160]; /* when not active: why not */
} sub;

/* The first "owner:start:count" line of file whose owner is name or the number id. */
static int subid_find(const char *file, const char *name, unsigned long id, struct subid_range *r)
{
    char line[512], num[32];
    int found = 0;
    FILE *f = fopen(file, "re");
    if (!f)
        return 0;
    snprintf(num, sizeof(num), "%lu", id);
    while (!found && fgets(line, sizeof(line), f)) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = '\0';
        if (strcmp(line, name) != 0 && strcmp(line, num) != 0)
            continue;
        char *end1, *end2;
        errno = 0;
        r->start = strtoul(c1 + 1, &end1, 10);
        r->count = strtoul(c2 + 1, &end2, 10);
        found = errno == 0 && end1 == c2 && end2 != c2 + 1 && r->count > 0;
    }
    fclose(f);
    return found;
}

int sbx__subid_prepare(const struct sbx_opts *o)
{
    uid_t uid = geteuid();
    struct passwd *pw = getpwuid(uid);
    memset(&sub, 0, sizeof(sub));
    if (!o->subids)
        snprintf(sub.why, sizeof(sub.why), "CODEMCP_SANDBOX_SUBIDS=false");
    else if (uid == 0 && o->root_uid_base <= 0)
        snprintf(sub.why, sizeof(sub.why), "root with CODEMCP_ROOT_UID_BASE=0: as nobody");
    else if (uid == 0) {
        /* root maps any ids itself: no range file, no helper */
        sub.uid.start = sub.gid.start = (unsigned long)o->root_uid_base;
        sub.uid.count = sub.gid.count = SBX_SESSION_IDS_MAX;
        sub.active = 1;
    } else if (!pw)
        snprintf(sub.why, sizeof(sub.why), "uid %d has no name in the user database", (int)uid);
    else if (!subid_find("/etc/subuid", pw->pw_name, uid, &sub.uid) ||
             !subid_find("/etc/subgid", pw->pw_name, uid, &sub.gid))
        snprintf(sub.why, sizeof(sub.why), "%s has no range in /etc/subuid and /etc/subgid",
                 pw->pw_name);
    else if (access(SBX_NEWUIDMAP, X_OK) < 0 || access(SBX_NEWGIDMAP, X_OK) < 0)
        snprintf(sub.why, sizeof(sub.why),
                 "newuidmap/newgidmap are not installed (package uidmap)");
    else
        sub.active = 1;
    if (sub.active) {
        unsigned long n = sub.uid.count < sub.gid.count ? sub.uid.count : sub.gid.count;
        sub.uid.count = sub.gid.count = n < SBX_SESSION_IDS_MAX ? n : SBX_SESSION_IDS_MAX;
    }
    return sub.active;
}

unsigned long sbx_session_ids(const struct sbx_opts *o, unsigned long *start)
{
    if (!sbx__subid_prepare(o))
        return 0;
    *start = sub.uid.start;
    return sub.uid.count;
}

int sbx_uid_mode(const struct sbx_opts *o, char *buf, size_t len)
{
    if (sbx__subid_prepare(o))
        snprintf(buf, len, "a uid of its own per session: %lu-%lu (gids %lu-%lu) from %s",
                 sub.uid.start, sub.uid.start + sub.uid.count - 1, sub.gid.start,
                 sub.gid.start + sub.gid.count - 1,
                 geteuid() == 0 ? "CODEMCP_ROOT_UID_BASE" : "the subordinate id range");
    else
        snprintf(buf, len,
                 "every session runs as the gateway's own user outside (%s): per-user kernel "
                 "budgets (pipe buffers, epoll watches) are shared with the gateway and "
                 "between sessions; give the user a range in /etc/subuid and /etc/subgid and "
                 "install uidmap to separate them",
                 sub.why);
    return sub.active;
}

/* Runs helper PID 1000 OUTER 1 BASE START COUNT; 0 when it exited 0. */
static int subid_run(const char *helper, pid_t pid, unsigned long outer,
                     const struct subid_range *r)
{
    char a[6][24];
    snprintf(a[0], sizeof(a[0]), "%d", (int)pid);
    snprintf(a[1], sizeof(a[1]), "%d", SBX_UID);
    snprintf(a[2], sizeof(a[2]), "%lu", outer);
    snprintf(a[3], sizeof(a[3]), "%d", SBX_SUBID_BASE);
    snprintf(a[4], sizeof(a[4]), "%lu", r->start);
    snprintf(a[5], sizeof(a[5]), "%lu", r->count);
    char *argv[] = {(char *)helper, a[0], a[1], a[2], (char *)"1", a[3], a[4], a[5], NULL};
    char *envp[] = {NULL};
    int st;
    pid_t h = fork();
    if (h < 0)
        return -1;
    if (h == 0) {
        execve(helper, argv, envp);
        _exit(127);
    }
    while (waitpid(h, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int sbx__subid_map_sandbox(pid_t child, uid_t uid, gid_t gid, char *err, size_t errlen)
{
    const char *failed = subid_run(SBX_NEWUIDMAP, child, uid, &sub.uid) < 0   ? SBX_NEWUIDMAP
                         : subid_run(SBX_NEWGIDMAP, child, gid, &sub.gid) < 0 ? SBX_NEWGIDMAP
                                                                              : NULL;
    if (failed)
        snprintf(err, errlen,
                 "cannot map the sandbox's ids: %s failed (its message is above). Check the "
                 "user's ranges in /etc/subuid and /etc/subgid, or set "
                 "CODEMCP_SANDBOX_SUBIDS=false (every session then runs as the gateway's user)",
                 failed);
    return failed ? -1 : 0;
}

void sbx__subid_root_extent(char *out, size_t len)
{
    if (sub.active)
        snprintf(out, len, "%d %lu %lu\n", SBX_SUBID_BASE, sub.uid.start, sub.uid.count);
    else if (len)
        out[0] = '\0';
}

int sbx__subid_active(void)
{
    return sub.active;
}

unsigned long sbx__subid_keep_caps(void)
{
    return sub.active ? (1UL << CAP_SETUID) | (1UL << CAP_SETGID) : 0;
}

#if defined(__x86_64__)
#define SBX_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SBX_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* A root gateway's sandbox maps uid 0 to root itself (for the set-up), and the prototype keeps
 * CAP_SETUID/SETGID there to map sessions: it (and what it forks) must never take id 0 or a
 * group list. A filter of its own, before any Python runs: setresuid/setresgid with no 0
 * argument pass (a session's PID 1 becomes 1000), every other id change answers EPERM. */
void sbx__subid_guard(void)
{
#ifdef SBX_AUDIT_ARCH
    static const int deny[] = {SYS_setuid,   SYS_setgid,   SYS_setreuid, SYS_setregid,
                               SYS_setfsuid, SYS_setfsgid, SYS_setgroups};
    enum { N_DENY = sizeof(deny) / sizeof(deny[0]) };
    const unsigned low = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 0 : 4;
    struct sock_filter f[5 + N_DENY + 2 + 6 + 2];
    unsigned n = 0;
    f[n++] =
        (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SBX_AUDIT_ARCH, 1, 0);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    f[n++] =
        (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    const unsigned allow = 5 + N_DENY + 2 + 6, eperm = allow + 1;
    /* x32's numbers (x86_64 with bit 30) are other numbers for the same calls */
    f[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000,
                                        (unsigned char)(eperm - n - 1), 0);
    n++;
    for (unsigned i = 0; i < N_DENY; i++, n++)
        f[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)deny[i],
                                            (unsigned char)(eperm - n - 1), 0);
    f[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_setresuid, 1, 0);
    n++;
    f[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_setresgid, 0,
                                        (unsigned char)(allow - n - 1));
    n++;
    for (unsigned a = 0; a < 3; a++) {
        f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                              offsetof(struct seccomp_data, args) + a * 8 + low);
        f[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0,
                                            (unsigned char)(eperm - n - 1), 0);
        n++;
    }
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    struct sock_fprog prog = {(unsigned short)n, f};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
        sbx__die_step("seccomp (the prototype's id guard)", NULL);
#endif
}

static int subid_write(pid_t pid, const char *file, const char *text)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    int e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

int sbx__subid_map_session(pid_t child, int ids)
{
    char map[64];
    if (ids < 0 || (unsigned long)ids >= sub.uid.count) {
        errno = ENOSPC; /* more live sessions than the range has ids */
        return -1;
    }
    snprintf(map, sizeof(map), "%d %d 1\n", SBX_UID, SBX_SUBID_BASE + ids);
    if (subid_write(child, "uid_map", map) < 0 || subid_write(child, "setgroups", "deny") < 0 ||
        subid_write(child, "gid_map", map) < 0)
        return -1;
    return 0;
}
