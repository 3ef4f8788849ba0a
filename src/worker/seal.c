/* seal — see seal.h. Landlock constants and structures are spelled out here (by ABI
 * version) so that an older linux-libc-dev still builds the newest rules the running kernel
 * understands. */
#include "seal.h"

#include "log.h"
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- Landlock ------------------------------------------------------------------------------ */

#define LL_CREATE_VERSION (1U << 0)
#define LL_RULE_PATH      1
#define LL_FS_EXECUTE     (1ULL << 0)
#define LL_FS_WRITE_FILE  (1ULL << 1)
#define LL_FS_READ_FILE   (1ULL << 2)
#define LL_FS_READ_DIR    (1ULL << 3)
#define LL_FS_V1_ALL      ((1ULL << 13) - 1)
#define LL_FS_REFER       (1ULL << 13) /* ABI 2 */
#define LL_FS_TRUNCATE    (1ULL << 14) /* ABI 3 */
#define LL_FS_IOCTL_DEV   (1ULL << 15) /* ABI 5 */
#define LL_NET_BIND_TCP   (1ULL << 0)  /* ABI 4 */
#define LL_NET_CONN_TCP   (1ULL << 1)
#define LL_SCOPE_ABSTRACT (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL   (1ULL << 1)

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

struct ll_path_beneath {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule       445
#define SYS_landlock_restrict_self  446
#endif

static void ll_allow(int ruleset, const char *path, uint64_t access)
{
    struct ll_path_beneath pb = {.allowed_access = access};
    pb.parent_fd = open(path, O_PATH | O_CLOEXEC);
    if (pb.parent_fd < 0)
        return;
    if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH, &pb, 0) < 0)
        log_warn("sandbox", "landlock: rule for %s refused: %s", path, strerror(errno));
    close(pb.parent_fd);
}

int seal_landlock(const struct sbx_opts *o)
{
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_VERSION);
    /* The test knob: behave as an older kernel would (Linux 6.1 has ABI 2, no scoping), so
     * that the walls that must hold without Landlock are tested here too. */
    if (o->landlock_abi_max >= 0 && abi > o->landlock_abi_max)
        abi = o->landlock_abi_max;
    if (abi < 1) {
        log_info("sandbox", "Landlock is not available on this kernel (%s): skipped",
                 strerror(errno));
        return 0;
    }
    struct ll_ruleset_attr attr = {.handled_access_fs = LL_FS_V1_ALL};
    size_t size = sizeof(uint64_t);
    if (abi >= 2)
        attr.handled_access_fs |= LL_FS_REFER;
    if (abi >= 3)
        attr.handled_access_fs |= LL_FS_TRUNCATE;
    if (abi >= 5)
        attr.handled_access_fs |= LL_FS_IOCTL_DEV;
    if (abi >= 4) {
        size = 2 * sizeof(uint64_t);
        if (!o->net_host)
            attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONN_TCP;
    }
    if (abi >= 6) {
        size = sizeof(attr);
        attr.scoped = LL_SCOPE_ABSTRACT | LL_SCOPE_SIGNAL;
    }
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (rs < 0) {
        log_warn("sandbox", "landlock: cannot create a ruleset (ABI %ld): %s", abi,
                 strerror(errno));
        return 0;
    }
    uint64_t all = attr.handled_access_fs;
    uint64_t ro = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
    ll_allow(rs, "/", ro);
    ll_allow(rs, "/tmp", all);
    ll_allow(rs, "/dev", ro | LL_FS_WRITE_FILE | (all & (LL_FS_IOCTL_DEV | LL_FS_TRUNCATE)));
    if (o->rw && *o->rw) {
        char *copy = strdup(o->rw), *save = NULL;
        for (char *s = copy ? strtok_r(copy, ":", &save) : NULL; s; s = strtok_r(NULL, ":", &save))
            ll_allow(rs, s, all);
        free(copy);
    }
    int abi_used = (int)abi;
    if (syscall(SYS_landlock_restrict_self, rs, 0) < 0) {
        log_warn("sandbox", "landlock: restrict_self failed: %s", strerror(errno));
        abi_used = 0;
    }
    close(rs);
    return abi_used;
}

/* ---- seccomp ------------------------------------------------------------------------------- */

static const char *const deny_names[] = {"ptrace",
                                         "process_vm_readv",
                                         "process_vm_writev",
                                         "process_madvise",
                                         "pidfd_getfd",
                                         "kcmp",
                                         "mount",
                                         "umount2",
                                         "pivot_root",
                                         "chroot",
                                         "unshare",
                                         "setns",
                                         "mount_setattr",
                                         "fsopen",
                                         "fsconfig",
                                         "fsmount",
                                         "fspick",
                                         "move_mount",
                                         "open_tree",
                                         "keyctl",
                                         "add_key",
                                         "request_key",
                                         "bpf",
                                         "perf_event_open",
                                         "userfaultfd",
                                         "io_uring_setup",
                                         "io_uring_enter",
                                         "io_uring_register",
                                         "kexec_load",
                                         "kexec_file_load",
                                         "init_module",
                                         "finit_module",
                                         "delete_module",
                                         "clock_settime",
                                         "clock_adjtime",
                                         "settimeofday",
                                         "adjtimex",
                                         "swapon",
                                         "swapoff",
                                         "reboot",
                                         "acct",
                                         "quotactl",
                                         "quotactl_fd",
                                         "open_by_handle_at",
                                         "name_to_handle_at",
                                         "iopl",
                                         "ioperm",
                                         "syslog",
                                         "lookup_dcookie",
                                         "vhangup",
                                         "nfsservctl",
                                         "uselib",
                                         "personality",
                                         "fanotify_init",
                                         "socket",
                                         NULL};

/* Refused with ENOSYS, as if the kernel lacked them (callers fall back), because they share
 * or hold what the sandbox's limits do not see: inotify watches a shared file's opens (the
 * host's and other sessions') and its instances count against the gateway's own user (the
 * per-user limit counts through user namespaces); memfd and SysV shared memory, message
 * queues and semaphores hold memory RLIMIT_AS does not count (IPC objects live on after
 * detaching, in kernel memory). POSIX shared memory and files live in the size-capped /tmp. */
static const char *const absent_names[] = {
    "inotify_init", "inotify_init1", "memfd_create", "memfd_secret",
    "shmget",       "msgget",        "semget",       NULL};

/* File locks are a channel between sessions: the read-only binds (libraries, ld.so.cache,
 * /dev/null) are the same files in every sandbox, and a lock one session takes (or tests
 * with F_GETLK) another sees. seccomp cannot tell a shared file from a private one, so every
 * lock is refused (ENOLCK, as a file system without locks answers), and so are directory
 * notifications (F_NOTIFY) and leases. */
static const unsigned int lock_cmds[] = {F_GETLK,
                                         F_SETLK,
                                         F_SETLKW,
                                         36 /* F_OFD_GETLK */,
                                         37 /* F_OFD_SETLK */,
                                         38 /* F_OFD_SETLKW */,
                                         F_SETLEASE,
                                         F_GETLEASE,
                                         F_NOTIFY};

/* An int argument equals v. The kernel reads only the low 32 bits of an int argument, so a
 * plain 64-bit comparison is passed by a caller that sets the high ones. */
static struct scmp_arg_cmp arg32_eq(unsigned arg, uint32_t v)
{
    return (struct scmp_arg_cmp){
        .arg = arg, .op = SCMP_CMP_MASKED_EQ, .datum_a = 0xffffffffULL, .datum_b = v};
}

int seal_seccomp(const struct sbx_opts *o, char *err, size_t errlen)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    int rc = 0;
    const char *what = "seccomp_init";
    if (!ctx) {
        snprintf(err, errlen, "seccomp_init failed");
        return -1;
    }
    /* The default for a foreign ABI (int 0x80, x32) is to kill: nothing here uses one. */
    for (int i = 0; deny_names[i] && rc == 0; i++) {
        int nr = seccomp_syscall_resolve_name(deny_names[i]);
        if (nr == __NR_SCMP_ERROR)
            continue; /* not on this architecture */
        if (o->net_host && strcmp(deny_names[i], "socket") == 0)
            continue; /* CODEMCP_SANDBOX_NET=host: sockets are the point */
        int action =
            strcmp(deny_names[i], "socket") == 0 ? SCMP_ACT_ERRNO(EACCES) : SCMP_ACT_ERRNO(EPERM);
        what = deny_names[i];
        rc = seccomp_rule_add(ctx, action, nr, 0);
    }
    for (int i = 0; absent_names[i] && rc == 0; i++) {
        int nr = seccomp_syscall_resolve_name(absent_names[i]);
        if (nr == __NR_SCMP_ERROR)
            continue;
        what = absent_names[i];
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
    }
    if (rc == 0) {
        what = "flock";
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOLCK), SCMP_SYS(flock), 0);
    }
    for (size_t i = 0; i < sizeof(lock_cmds) / sizeof(lock_cmds[0]) && rc == 0; i++) {
        what = "fcntl";
        struct scmp_arg_cmp cmd = arg32_eq(1, lock_cmds[i]);
        int err_no = lock_cmds[i] == F_NOTIFY ? EPERM : ENOLCK;
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err_no), SCMP_SYS(fcntl), 1, cmd);
    }
    /* The CPU time a run may use is set from outside (RLIMIT_CPU, workers.c): not raised from
     * inside, by setrlimit or prlimit on any process. */
    if (rc == 0) {
        what = "setrlimit(RLIMIT_CPU)";
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setrlimit), 1,
                              arg32_eq(0, RLIMIT_CPU));
    }
    if (rc == 0) {
        what = "prlimit64(RLIMIT_CPU)";
        struct scmp_arg_cmp set = {.arg = 2, .op = SCMP_CMP_NE, .datum_a = 0};
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64), 2,
                              arg32_eq(1, RLIMIT_CPU), set);
    }
    /* A name for a socket: every session's socketpair lives in the prototype's network
     * namespace, whose abstract Unix names they share; a named datagram socket, once
     * disconnected (connect(AF_UNSPEC)), takes datagrams from any session. Landlock's scoping
     * (Linux 6.12+) stops that too; this holds on older kernels. So no bind(), and no
     * SO_PASSCRED / SO_PASSPIDFD (they bind an automatic name on the next send). */
    if (rc == 0 && !o->net_host) {
        what = "bind";
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(bind), 0);
    }
    static const uint32_t autobind_opts[] = {16 /* SO_PASSCRED */, 76 /* SO_PASSPIDFD */};
    for (size_t i = 0; i < sizeof(autobind_opts) / sizeof(autobind_opts[0]) && rc == 0; i++) {
        if (o->net_host)
            break;
        what = "setsockopt";
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setsockopt), 2,
                              arg32_eq(1, SOL_SOCKET), arg32_eq(2, autobind_opts[i]));
    }
    /* socketpair: AF_UNIX only. */
    if (rc == 0 && !o->net_host) {
        what = "socketpair";
        struct scmp_arg_cmp not_unix = {.arg = 0, .op = SCMP_CMP_NE, .datum_a = AF_UNIX};
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socketpair), 1, not_unix);
    }
    /* clone with a namespace flag; clone3 cannot be inspected (its flags are behind a
     * pointer): ENOSYS makes glibc fall back to clone. */
    static const unsigned long ns_flags[] = {CLONE_NEWUSER,   CLONE_NEWPID, CLONE_NEWNS,
                                             CLONE_NEWNET,    CLONE_NEWIPC, CLONE_NEWUTS,
                                             CLONE_NEWCGROUP, 0x00000080 /* NEWTIME */};
    for (size_t i = 0; i < sizeof(ns_flags) / sizeof(ns_flags[0]) && rc == 0; i++) {
        what = "clone";
        struct scmp_arg_cmp has_flag = {
            .arg = 0, .op = SCMP_CMP_MASKED_EQ, .datum_a = ns_flags[i], .datum_b = ns_flags[i]};
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, has_flag);
    }
    if (rc == 0) {
        what = "clone3";
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    }
    /* What the end-of-run stray check (pystray.h) rests on: every process of the namespace
     * but PID 1 descends from the worker, whose subreaper flag stays on. A CLONE_PARENT child
     * would be PID 1's; a filter of agent code's own could answer the check's waitid. */
    if (rc == 0) {
        what = "clone(CLONE_PARENT)";
        struct scmp_arg_cmp parent = {
            .arg = 0, .op = SCMP_CMP_MASKED_EQ, .datum_a = CLONE_PARENT, .datum_b = CLONE_PARENT};
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, parent);
    }
    if (rc == 0) {
        what = "prctl(PR_SET_CHILD_SUBREAPER, 0)";
        struct scmp_arg_cmp opt = arg32_eq(0, PR_SET_CHILD_SUBREAPER);
        struct scmp_arg_cmp off = {.arg = 1, .op = SCMP_CMP_EQ, .datum_a = 0};
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prctl), 2, opt, off);
    }
    if (rc == 0) {
        what = "prctl(PR_SET_SECCOMP)";
        struct scmp_arg_cmp opt = arg32_eq(0, PR_SET_SECCOMP);
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prctl), 1, opt);
    }
    if (rc == 0) {
        what = "seccomp";
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(seccomp), 0);
    }
    if (rc == 0 && !o->subprocess) {
        what = "execve";
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(execve), 0);
        if (rc == 0)
            rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(execveat), 0);
    }
    /* A binary tree instead of a linear list of rules (libseccomp >= 2.5; best effort). The
     * kernel also caches the verdict of syscalls allowed whatever their arguments. */
    if (rc == 0)
        (void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    /* All threads (there are none yet; TSYNC is a guarantee, not a need). */
    if (rc == 0) {
        what = "seccomp_attr_set";
        rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
    }
    if (rc == 0) {
        what = "seccomp_load";
        rc = seccomp_load(ctx);
    }
    seccomp_release(ctx);
    if (rc != 0) {
        snprintf(err, errlen, "seccomp: %s: %s", what, strerror(-rc));
        return -1;
    }
    return 0;
}
