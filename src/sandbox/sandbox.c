/* sandbox — see sandbox.h.
 *
 * The root is built the way bubblewrap builds one: a throwaway tmpfs becomes the root
 * (pivot_root), the old root stays reachable under /oldroot just long enough to bind the
 * few paths the interpreter needs into /newroot (read-only, nosuid, nodev, keeping the
 * flags the outer namespace locked), then /newroot becomes the root and the old one is
 * detached. Every source path is resolved (realpath) before the clone, because after the
 * first pivot an absolute symlink would resolve against the throwaway root. */
#include "sandbox.h"
#include "sandbox_int.h"
#include "log.h"
#include "settings.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SBX_ROOT_MAP 65534 /* outer uid/gid the sandbox gets when the gateway is root */
#define SBX_HOSTNAME "codemcp-sandbox"
/* Signals queued to a sandbox's processes at once. The count is per user and namespace and
 * counts again for the gateway's own user in the parent namespaces: without a small cap one
 * sandbox could queue as many as the gateway's user may, and the gateway's user then none. */
#define SBX_SIGPENDING 64

enum sbx_kind { SBX_BIND_RO, SBX_BIND_RW, SBX_SYMLINK, SBX_BIND_DEV };

struct sbx_mount {
    enum sbx_kind kind;
    int is_dir;
    char *src; /* resolved source (bind) or link target (symlink) */
    char *dst; /* path inside the sandbox */
};

struct sbx_plan {
    struct sbx_mount *m;
    size_t n, cap;
    char passwd[256], group[128];
};

/* ---- the plan (built before the clone: allocation allowed) ------------------------------- */

static int plan_covers(const struct sbx_plan *p, const char *path)
{
    for (size_t i = 0; i < p->n; i++) {
        const struct sbx_mount *m = &p->m[i];
        if (m->kind == SBX_SYMLINK || !m->is_dir)
            continue;
        size_t l = strlen(m->dst);
        if (strncmp(path, m->dst, l) == 0 && (path[l] == '/' || path[l] == '\0'))
            return 1;
    }
    return 0;
}

static void plan_add(struct sbx_plan *p, enum sbx_kind kind, int is_dir, const char *src,
                     const char *dst)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 32;
        p->m = xrealloc(p->m, p->cap * sizeof(*p->m));
    }
    p->m[p->n++] = (struct sbx_mount){kind, is_dir, xstrdup(src), xstrdup(dst)};
}

/* Adds path (visible at the same place inside) if it exists and is not covered yet. A
 * top-level symlink such as /lib -> usr/lib is recreated as a symlink. */
static void plan_path(struct sbx_plan *p, const char *path, enum sbx_kind kind)
{
    struct stat st;
    char real[PATH_MAX];
    if (!path || path[0] != '/' || lstat(path, &st) < 0)
        return;
    if (S_ISLNK(st.st_mode) && strchr(path + 1, '/') == NULL) {
        char target[PATH_MAX];
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n > 0) {
            target[n] = '\0';
            for (size_t i = 0; i < p->n; i++)
                if (strcmp(p->m[i].dst, path) == 0)
                    return;
            plan_add(p, SBX_SYMLINK, 0, target, path);
        }
        return;
    }
    if (!realpath(path, real) || stat(real, &st) < 0)
        return;
    if (kind == SBX_BIND_RO && plan_covers(p, path))
        return;
    plan_add(p, kind, S_ISDIR(st.st_mode), real, path);
}

static void plan_list(struct sbx_plan *p, const char *list, enum sbx_kind kind)
{
    if (!list || !*list)
        return;
    char *copy = xstrdup(list), *save = NULL;
    for (char *s = strtok_r(copy, ":", &save); s; s = strtok_r(NULL, ":", &save))
        if (s[0] == '/')
            plan_path(p, s, kind);
    free(copy);
}

/* The directories of every file this process has mapped (libpython, libc, the sanitizer
 * runtime...), for interpreters installed outside /usr/lib. */
static void plan_mapped(struct sbx_plan *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[PATH_MAX + 128];
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        char *path = strchr(line, '/');
        if (!path)
            continue;
        path[strcspn(path, "\n")] = '\0';
        if (strstr(path, " (deleted)"))
            continue;
        char real[PATH_MAX];
        if (!realpath(path, real))
            continue;
        char *slash = strrchr(real, '/');
        if (!slash || slash == real)
            continue;
        *slash = '\0';
        if (!plan_covers(p, real))
            plan_path(p, real, SBX_BIND_RO);
    }
    fclose(f);
}

static void plan_free(struct sbx_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->m[i].src);
        free(p->m[i].dst);
    }
    free(p->m);
    memset(p, 0, sizeof(*p));
}

static void plan_build(struct sbx_plan *p, const struct sbx_opts *o)
{
    static const char *const libs[] = {"/usr/lib",    "/usr/lib64",     "/usr/lib32",
                                       "/usr/libx32", "/usr/local/lib", "/usr/share/zoneinfo",
                                       NULL};
    static const char *const top[] = {"/lib", "/lib64", "/lib32", "/libx32", NULL};
    /* /etc/alternatives: Debian's libraries chosen by update-alternatives (libblas.so.3, which
     * numpy loads, is a link through it) */
    static const char *const etc[] = {"/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives",
                                      NULL};
    static const char *const net[] = {"/etc/resolv.conf",
                                      "/etc/hosts",
                                      "/etc/nsswitch.conf",
                                      "/etc/gai.conf",
                                      "/etc/host.conf",
                                      "/etc/ssl",
                                      "/etc/ca-certificates",
                                      "/usr/share/ca-certificates",
                                      NULL};
    memset(p, 0, sizeof(*p));
    for (int i = 0; libs[i]; i++)
        plan_path(p, libs[i], SBX_BIND_RO);
#ifdef CODEMCP_PYTHON_STDLIB
    plan_path(p, CODEMCP_PYTHON_STDLIB, SBX_BIND_RO);
#endif
    plan_mapped(p);
    /* search's sentence encoder, mapped read-only by the prototype (codemcp_rt/encoder.py) */
    const char *model = o->encoder_model;
    if (model && model[0] == '/' && access(model, R_OK) == 0)
        plan_path(p, model, SBX_BIND_RO);
    char self[PATH_MAX];
    if (realpath("/proc/self/exe", self))
        plan_path(p, self, SBX_BIND_RO);
    for (int i = 0; etc[i]; i++)
        plan_path(p, etc[i], SBX_BIND_RO);
    if (o->subprocess) {
        plan_path(p, "/usr/bin", SBX_BIND_RO);
        plan_path(p, "/bin", SBX_BIND_RO);
    }
    if (o->net_host)
        for (int i = 0; net[i]; i++)
            plan_path(p, net[i], SBX_BIND_RO);
    plan_list(p, o->dev, SBX_BIND_RO);
    plan_list(p, o->ro, SBX_BIND_RO);
    plan_list(p, o->rw, SBX_BIND_RW);
    for (int i = 0; top[i]; i++) /* after the binds their targets land in */
        plan_path(p, top[i], SBX_BIND_RO);
    snprintf(p->passwd, sizeof(p->passwd), "sandbox:x:%d:%d:codemcp sandbox:/tmp:/bin/sh\n",
             SBX_UID, SBX_UID);
    snprintf(p->group, sizeof(p->group), "sandbox:x:%d:\n", SBX_UID);
}

/* ---- inside: mounts ----------------------------------------------------------------------- */

/* Reports the failing step on stderr and exits (after the clone there is no caller). */
__attribute__((noreturn)) void sbx__die_step(const char *step, const char *path)
{
    int e = errno;
    dprintf(2, "codemcp-worker: sandbox set-up failed: %s%s%s: %s\n", step, path ? " " : "",
            path ? path : "", strerror(e));
    _exit(SBX_EXIT_SETUP);
}

#define die_step sbx__die_step

/* The kernel refuses a new /proc in a user namespace (EPERM) while the /proc it would stand
 * beside has paths mounted over it, which is what container runtimes do to /proc/kcore,
 * /proc/keys, /proc/sys... by default: say which option lifts that. */
__attribute__((noreturn)) void sbx__die_mount_proc(const char *where)
{
    int e = errno;
    dprintf(2, "codemcp-worker: sandbox set-up failed: mount %s: %s%s\n", where, strerror(e),
            e != EPERM ? ""
                       : ". A container whose /proc has masked paths (Docker's and Podman's "
                         "default) keeps the sandbox from mounting its own: run the container "
                         "with --security-opt systempaths=unconfined (Podman: --security-opt "
                         "unmask=ALL) besides --security-opt seccomp=" SBX_DOCKER_SECCOMP);
    _exit(SBX_EXIT_SETUP);
}

static void mkdir_p(const char *path, mode_t mode)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *s = tmp + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(tmp, mode) < 0 && errno != EEXIST)
                die_step("mkdir", tmp);
            *s = '/';
        }
    if (mkdir(tmp, mode) < 0 && errno != EEXIST)
        die_step("mkdir", tmp);
}

static void write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        die_step("write", path);
    close(fd);
}

/* Flags the outer namespace set on a mount cannot be cleared from inside: keep them. */
static unsigned long locked_flags(const char *path)
{
    struct statvfs sv;
    unsigned long f = 0;
    if (statvfs(path, &sv) < 0)
        return 0;
    if (sv.f_flag & ST_NOSUID)
        f |= MS_NOSUID;
    if (sv.f_flag & ST_NODEV)
        f |= MS_NODEV;
    if (sv.f_flag & ST_NOEXEC)
        f |= MS_NOEXEC;
    if (sv.f_flag & ST_NOATIME)
        f |= MS_NOATIME;
    if (sv.f_flag & ST_NODIRATIME)
        f |= MS_NODIRATIME;
    if (sv.f_flag & ST_RELATIME)
        f |= MS_RELATIME;
    return f;
}

static void bind_one(const struct sbx_mount *m)
{
    char src[PATH_MAX + 16], dst[PATH_MAX + 16];
    snprintf(src, sizeof(src), "/oldroot%s", m->src);
    snprintf(dst, sizeof(dst), "/newroot%s", m->dst);
    if (m->kind == SBX_SYMLINK) {
        char *slash = strrchr(dst, '/');
        *slash = '\0';
        mkdir_p(dst, 0755);
        *slash = '/';
        if (symlink(m->src, dst) < 0 && errno != EEXIST)
            die_step("symlink", m->dst);
        return;
    }
    if (m->is_dir) {
        mkdir_p(dst, 0755);
    } else {
        char *slash = strrchr(dst, '/');
        *slash = '\0';
        mkdir_p(dst, 0755);
        *slash = '/';
        int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST && errno != EISDIR)
            die_step("create", m->dst);
        if (fd >= 0)
            close(fd);
    }
    if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
        die_step("bind", m->src);
    unsigned long f = MS_BIND | MS_REMOUNT | MS_NOSUID | locked_flags(dst);
    if (m->kind == SBX_BIND_DEV)
        f &= ~(unsigned long)MS_NODEV;
    else
        f |= MS_NODEV;
    if (m->kind != SBX_BIND_RW)
        f |= MS_RDONLY;
    if (mount(NULL, dst, NULL, f, NULL) < 0)
        die_step("remount", m->dst);
}

static void build_dev(void)
{
    static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", NULL};
    if (mkdir("/newroot/dev", 0755) < 0 && errno != EEXIST)
        die_step("mkdir", "/dev");
    if (mount("tmpfs", "/newroot/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") < 0)
        die_step("mount tmpfs", "/dev");
    for (int i = 0; nodes[i]; i++) {
        char path[32];
        snprintf(path, sizeof(path), "/dev/%s", nodes[i]);
        struct sbx_mount m = {SBX_BIND_DEV, 0, path, path};
        bind_one(&m);
    }
    static const char *const links[][2] = {{"/proc/self/fd", "/newroot/dev/fd"},
                                           {"/proc/self/fd/0", "/newroot/dev/stdin"},
                                           {"/proc/self/fd/1", "/newroot/dev/stdout"},
                                           {"/proc/self/fd/2", "/newroot/dev/stderr"},
                                           {"/tmp", "/newroot/dev/shm"}};
    for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
        if (symlink(links[i][0], links[i][1]) < 0)
            die_step("symlink", links[i][1]);
    if (mount(NULL, "/newroot/dev", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
              "mode=0755,size=64k") < 0)
        die_step("remount", "/dev");
}

static void build_root(const struct sbx_plan *p, const struct sbx_opts *o)
{
    char opt[96];
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        die_step("make / private", NULL);
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=64k") < 0)
        die_step("mount tmpfs", "(base)");
    if (mkdir("/tmp/newroot", 0755) < 0 || mkdir("/tmp/oldroot", 0755) < 0)
        die_step("mkdir", "(base)");
    if (chdir("/tmp") < 0 || syscall(SYS_pivot_root, ".", "oldroot") < 0 || chdir("/") < 0)
        die_step("pivot_root", "(base)");
    if (mount("tmpfs", "/newroot", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=256k") < 0)
        die_step("mount tmpfs", "(root)");
    /* /tmp first: paths bound below it (CODEMCP_SANDBOX_RO/RW under the host's /tmp) land on
     * top of it instead of being hidden by it. */
    mkdir_p("/newroot/tmp", 01777);
    snprintf(opt, sizeof(opt), "mode=1777,size=%ldm,nr_inodes=16384", o->tmp_mb);
    if (mount("tmpfs", "/newroot/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opt) < 0)
        die_step("mount tmpfs", "/tmp");
    for (size_t i = 0; i < p->n; i++)
        if (p->m[i].kind != SBX_SYMLINK)
            bind_one(&p->m[i]);
    for (size_t i = 0; i < p->n; i++)
        if (p->m[i].kind == SBX_SYMLINK)
            bind_one(&p->m[i]);
    mkdir_p("/newroot/proc", 0555);
    if (mount("proc", "/newroot/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        sbx__die_mount_proc("/proc");
    build_dev();
    mkdir_p("/newroot/etc", 0755);
    write_file("/newroot/etc/passwd", p->passwd);
    write_file("/newroot/etc/group", p->group);
    write_file("/newroot/etc/hostname", SBX_HOSTNAME "\n");
    if (umount2("/oldroot", MNT_DETACH) < 0)
        die_step("umount", "/oldroot");
    if (mount(NULL, "/newroot", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
              "mode=0755,size=256k") < 0)
        die_step("remount read-only", "/");
    if (chdir("/newroot") < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
        umount2(".", MNT_DETACH) < 0 || chdir("/tmp") < 0)
        die_step("pivot_root", "(root)");
}

/* ---- inside: network, identity, capabilities, limits ------------------------------------ */

/* The new network namespace has a loopback of its own, down: bring it up. */
static void loopback_up(void)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr;
    if (s < 0)
        return;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        (void)ioctl(s, SIOCSIFFLAGS, &ifr);
    }
    close(s);
}

/* After the root is built, before the capabilities go: the worker's identity (1000 inside;
 * nobody outside when the gateway is root, which maps uid 0 to itself only for the set-up).
 * drop_groups: leave the supplementary groups inherited from the gateway, which are kernel ids
 * honoured outside every namespace (its own group among them when it was started by login, su
 * or systemd). A root gateway's sandbox, and the prototype of a subordinate id range (its
 * sessions are other users, and must not read what the gateway's groups may), can: setgroups
 * is allowed where the map was written by root or by newgidmap from /etc/subgid. */
static void become_sandbox_user(int drop_groups)
{
    if (drop_groups && setgroups(0, NULL) < 0)
        die_step("setgroups", NULL);
    if (setresgid(SBX_UID, SBX_UID, SBX_UID) < 0)
        die_step("setresgid", NULL);
    if (setresuid(SBX_UID, SBX_UID, SBX_UID) < 0)
        die_step("setresuid", NULL);
}

/* Capabilities: the bounding set goes while CAP_SETPCAP is still held (before the uid
 * change, which clears the rest when uid 0 was mapped), then the sets themselves. */
void sbx__drop_privileges(int outer_root, int change_uid, unsigned long keep)
{
    int last = 40;
    char *t = read_file("/proc/sys/kernel/cap_last_cap", NULL);
    if (t) {
        last = atoi(t);
        free(t);
    }
    for (int c = 0; c <= last; c++)
        if (!(c < 64 && (keep >> c) & 1) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 &&
            errno != EINVAL)
            die_step("drop the capability bounding set", NULL);
    (void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    /* Leaving uid 0 clears every capability unless asked to keep them (then capset trims). */
    if (keep && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
        die_step("keepcaps", NULL);
    if (change_uid)
        become_sandbox_user(outer_root || keep);
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof(data));
    data[0].permitted = data[0].effective = (uint32_t)keep;
    data[1].permitted = data[1].effective = (uint32_t)(keep >> 32);
    if (syscall(SYS_capset, &hdr, data) < 0)
        die_step("capset", NULL);
    (void)prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        die_step("no_new_privs", NULL);
}

static void set_limit(int res, rlim_t v)
{
    struct rlimit rl;
    if (getrlimit(res, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && rl.rlim_max < v)
        v = rl.rlim_max;
    rl.rlim_cur = rl.rlim_max = v;
    (void)setrlimit(res, &rl);
}

void sbx_opts_from_settings(const struct settings *s, struct sbx_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->net_host = s->sandbox_net && strcmp(s->sandbox_net, "host") == 0;
    o->subprocess = s->sandbox_subprocess;
    o->tmp_mb = s->sandbox_tmp_mb;
    o->nproc = s->sandbox_nproc;
    o->nofile = s->sandbox_nofile;
    o->ro = s->sandbox_ro;
    o->rw = s->sandbox_rw;
    o->dev = s->pythonpath_dev;
    o->encoder_model = s->encoder_model;
    o->landlock_abi_max = s->sandbox_landlock_abi_max;
    o->subids = s->sandbox_subids;
    o->root_uid_base = s->root_uid_base;
}

void sbx__apply_limits(const struct sbx_opts *o)
{
    /* Not in the prototype: a user namespace created later (one per session) takes its
     * creator's RLIMIT_NPROC as the cap of all its processes together, at every level. */
    if (!o->prototype)
        set_limit(RLIMIT_NPROC, (rlim_t)o->nproc);
    set_limit(RLIMIT_NOFILE, (rlim_t)o->nofile);
    set_limit(RLIMIT_FSIZE, (rlim_t)o->tmp_mb << 20);
    set_limit(RLIMIT_CORE, 0);
    set_limit(RLIMIT_MSGQUEUE, 0);
    set_limit(RLIMIT_SIGPENDING, SBX_SIGPENDING);
    /* RLIMIT_AS: CODEMCP_WORKER_MEMORY_MB, applied by the worker host (sanitizer-aware). */
}

/* ---- process layout ------------------------------------------------------------------------ */

/* PID 1: reaps everything, exits when the worker does, hands its raw status to status_fd.
 * linger (the prototype's sandbox): the namespace lives on after the worker (the prototype)
 * while sessions forked from it still run; the status goes out when the last one is gone. */
__attribute__((noreturn)) void sbx__init_main(pid_t worker, int status_fd, int linger)
{
    int wst = 0, seen = 0;
    prctl(PR_SET_DUMPABLE, 0); /* the worker may not read or trace its PID 1 */
    signal(SIGCHLD, SIG_DFL);
    close_range(0, (unsigned)status_fd - 1, 0);
    close_range((unsigned)status_fd + 1, ~0U, 0);
    for (;;) {
        int st;
        pid_t p = waitpid(-1, &st, 0);
        if (p == worker) {
            wst = st;
            seen = 1;
            if (!linger) {
                (void)!write(status_fd, &st, sizeof(st));
                _exit(0);
            }
        }
        if (p < 0 && errno == ECHILD) {
            if (seen)
                (void)!write(status_fd, &wst, sizeof(wst));
            _exit(seen ? 0 : SBX_EXIT_SETUP);
        }
    }
}

static volatile pid_t waiter_child;

/* A catchable termination request ends the sandbox through its PID 1, so that the waiter
 * still reaps it (dying first would leave PID 1 to whoever inherits orphans). */
static void waiter_on_signal(int sig)
{
    (void)sig;
    if (waiter_child > 0)
        kill(waiter_child, SIGKILL);
}

/* The waiter: exits as the sandbox's worker did. */
__attribute__((noreturn)) static void waiter_main(pid_t child, int status_fd)
{
    close_range(0, (unsigned)status_fd - 1, 0);
    close_range((unsigned)status_fd + 1, ~0U, 0);
    waiter_child = child;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = waiter_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* the gateway died */
    int st = 0, wst = 0;
    while (waitpid(child, &st, 0) < 0 && errno == EINTR)
        ;
    ssize_t n = read(status_fd, &wst, sizeof(wst));
    if (n != (ssize_t)sizeof(wst)) {
        if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
            _exit(WEXITSTATUS(st));
        wst = SIGKILL; /* init was killed: report the worker as killed */
    }
    if (WIFEXITED(wst))
        _exit(WEXITSTATUS(wst));
    int sig = WTERMSIG(wst);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* the worker's crash is not ours to dump */
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    kill(getpid(), sig);
    _exit(128 + sig);
}

static int write_map(pid_t pid, const char *file, const char *text, char *err, size_t errlen)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : write(fd, text, strlen(text));
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (n != (ssize_t)strlen(text)) {
        snprintf(err, errlen, "cannot write %s (%s): %s", path, text, strerror(e));
        return -1;
    }
    return 0;
}

/* Docker makes /.dockerenv, Podman /run/.containerenv: there an EPERM comes from the runtime's
 * seccomp profile, and the options to pass are known (a kernel limit on user namespaces
 * answers ENOSPC, and gets the kernel's hints). */
static int in_container(void)
{
    return access("/.dockerenv", F_OK) == 0 || access("/run/.containerenv", F_OK) == 0;
}

static void userns_hint(int e, char *err, size_t errlen)
{
    if (e == EPERM && in_container()) {
        snprintf(err, errlen,
                 "cannot create the worker sandbox: clone(CLONE_NEWUSER|CLONE_NEWPID|"
                 "CLONE_NEWNS...) failed: %s. This container's seccomp profile refuses the "
                 "namespaces the sandbox is built from (Docker's default does): run the "
                 "container with --security-opt seccomp=" SBX_DOCKER_SECCOMP
                 " --security-opt systempaths=unconfined. Or run workers without a sandbox "
                 "with CODEMCP_ISOLATION=host (not recommended: agent code then runs with the "
                 "container's rights, network and files)",
                 strerror(e));
        return;
    }
    snprintf(err, errlen,
             "cannot create the worker sandbox: clone(CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNS|"
             "CLONE_NEWNET...) failed: %s. This kernel refuses user namespaces to codemcp: "
             "check `sysctl user.max_user_namespaces` (must be > 0), on Debian "
             "`sysctl kernel.unprivileged_userns_clone=1`, on Ubuntu 23.10+ "
             "`sysctl kernel.apparmor_restrict_unprivileged_userns=0` (or an AppArmor "
             "profile allowing userns for codemcp), and in a container a seccomp profile that "
             "allows clone/unshare of namespaces. Or run workers without a sandbox with "
             "CODEMCP_ISOLATION=host (not recommended: agent code then runs with your user's "
             "rights, network and files)",
             strerror(e));
}

int sbx__enter(const struct sbx_opts *o, int probe, char *err, size_t errlen)
{
    struct sbx_plan plan;
    int go[2] = {-1, -1}, status[2] = {-1, -1};
    uid_t uid = geteuid();
    gid_t gid = getegid();
    int outer_root = uid == 0;
    char map[96];

    plan_build(&plan, o);
    sbx__subid_prepare(o);
    if (pipe2(go, O_CLOEXEC) < 0 || pipe2(status, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    unsigned long flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS |
                          CLONE_NEWCGROUP | (o->net_host ? 0 : CLONE_NEWNET);
    fflush(NULL);
    /* The gateway is not dumpable (main.c) and a clone inherits that, which makes the child's
     * /proc/<pid>/uid_map root-owned: an unprivileged waiter could not write it. This process
     * (already forked off the gateway) becomes the sandbox's waiter. The window: from here to
     * the prctl(PR_SET_DUMPABLE, 0) after the maps (a few syscalls) the same user's other
     * processes may ptrace it or read its /proc files: it holds this worker's fd 3 (the
     * prototype's channel, or an exec'd worker's control socket) and an exec'd worker's token
     * (the prototype has none: tokens reach it later, one per fork). Not closed yet; the escape
     * suite asserts what is promised, "not dumpable once the maps are written". */
    prctl(PR_SET_DUMPABLE, 1);
    pid_t child = (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0);
    if (child < 0) {
        userns_hint(errno, err, errlen);
        goto fail;
    }
    if (child == 0) {
        /* init (PID 1): wait until the waiter wrote our id maps. */
        char c;
        close(go[1]);
        close(status[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (read(go[0], &c, 1) != 1)
            _exit(SBX_EXIT_SETUP); /* the waiter failed or died */
        close(go[0]);
        if (sethostname(SBX_HOSTNAME, strlen(SBX_HOSTNAME)) < 0)
            die_step("sethostname", NULL);
        if (!o->net_host)
            loopback_up();
        build_root(&plan, o);
        unsigned long keep = o->prototype ? sbx__subid_keep_caps() : 0;
        sbx__drop_privileges(outer_root, 1, keep);
        if (keep && outer_root)
            sbx__subid_guard();
        if (probe) {
            int zero = 0;
            (void)!write(status[1], &zero, sizeof(zero));
            _exit(0);
        }
        pid_t worker = fork();
        if (worker < 0)
            die_step("fork", NULL);
        if (worker > 0)
            sbx__init_main(worker, status[1], o->prototype);
        close(status[1]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != 1)
            _exit(SBX_EXIT_SETUP);
        sbx__apply_limits(o);
        setenv("HOME", "/tmp", 1);
        setenv("TMPDIR", "/tmp", 1);
        setenv("USER", "sandbox", 1);
        setenv("LOGNAME", "sandbox", 1);
        plan_free(&plan);
        return 0;
    }
    /* The waiter. */
    close(go[0]);
    close(status[1]);
    go[0] = status[1] = -1;
    if (outer_root) {
        /* uid 0 stays itself for the set-up (binding paths under a root-only directory such
         * as /root needs root's own permission bits), then the worker becomes 1000 = nobody;
         * sessions get ids of their own from CODEMCP_ROOT_UID_BASE (sandbox_subid.c). */
        size_t len = (size_t)snprintf(map, sizeof(map), "0 0 1\n%d %d 1\n", SBX_UID, SBX_ROOT_MAP);
        sbx__subid_root_extent(map + len, sizeof(map) - len);
        if (write_map(child, "uid_map", map, err, errlen) < 0 ||
            write_map(child, "gid_map", map, err, errlen) < 0)
            goto fail_child;
    } else if (sbx__subid_active()) {
        if (sbx__subid_map_sandbox(child, uid, gid, err, errlen) < 0)
            goto fail_child;
    } else {
        snprintf(map, sizeof(map), "%d %d 1\n", SBX_UID, (int)uid);
        if (write_map(child, "uid_map", map, err, errlen) < 0 ||
            write_map(child, "setgroups", "deny", err, errlen) < 0)
            goto fail_child;
        snprintf(map, sizeof(map), "%d %d 1\n", SBX_UID, (int)gid);
        if (write_map(child, "gid_map", map, err, errlen) < 0)
            goto fail_child;
    }
    /* The maps are written: the waiter need not be dumpable any longer, and must not be (it
     * lives as long as the worker, outside the sandbox, and the same user could otherwise
     * ptrace it or read its /proc files as the gateway's cannot be). */
    prctl(PR_SET_DUMPABLE, 0);
    if (write(go[1], "g", 1) != 1) {
        snprintf(err, errlen, "cannot start the sandbox: %s", strerror(errno));
        goto fail_child;
    }
    close(go[1]);
    plan_free(&plan);
    waiter_main(child, status[0]);
fail_child:
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
fail:
    for (int i = 0; i < 2; i++) {
        if (go[i] >= 0)
            close(go[i]);
        if (status[i] >= 0)
            close(status[i]);
    }
    plan_free(&plan);
    return -1;
}

int sbx_enter(const struct sbx_opts *o, char *err, size_t errlen)
{
    return sbx__enter(o, 0, err, errlen);
}

pid_t sbx_inner_init(pid_t waiter)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)waiter, (int)waiter);
    char *t = read_file(path, NULL);
    long pid = t ? strtol(t, NULL, 10) : 0;
    free(t);
    return pid > 0 ? (pid_t)pid : -1;
}

void sbx_kill(pid_t waiter)
{
    pid_t init = sbx_inner_init(waiter);
    if (init <= 0 || kill(init, SIGKILL) < 0)
        kill(waiter, SIGKILL);
}

/* Warns about the paths of list the sandbox will not show; returns how many are below /tmp. */
static size_t check_list(const char *knob, const char *list)
{
    size_t below_tmp = 0;
    if (!list || !*list)
        return 0;
    char *copy = xstrdup(list), *save = NULL;
    for (char *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
        struct stat st;
        below_tmp += sbx__below_tmp(p, strlen(p));
        if (p[0] != '/')
            log_warn("sandbox", "%s: %s is not an absolute path: ignored", knob, p);
        else if (stat(p, &st) < 0)
            log_warn("sandbox", "%s: %s: %s: it will not be visible in the sandbox", knob, p,
                     strerror(errno));
        else if (geteuid() == 0 && access(p, R_OK) == 0 && !(st.st_mode & S_IROTH))
            log_warn("sandbox",
                     "%s: %s is not readable by others: as root the sandbox runs as "
                     "nobody and cannot read it",
                     knob, p);
    }
    free(copy);
    return below_tmp;
}

void sbx_check_paths(const struct sbx_opts *o)
{
    size_t below_tmp = check_list("CODEMCP_SANDBOX_RO", o->ro);
    below_tmp += check_list("CODEMCP_SANDBOX_RW", o->rw);
    if (below_tmp > SBX_TMP_KEEP_MAX)
        log_warn("sandbox",
                 "CODEMCP_SANDBOX_RO and _RW name %zu paths below /tmp: a session keeps at "
                 "most %d of them visible (the first that exist, _RO's first), its own /tmp "
                 "hides the rest; name a directory that holds them instead",
                 below_tmp, SBX_TMP_KEEP_MAX);
}
