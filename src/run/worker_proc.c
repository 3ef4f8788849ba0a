/* worker_proc — see worker_proc.h. */
#include "worker_proc.h"
#include "control.h"
#include "loop.h"
#include "sandbox.h"
#include "settings.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char worker_bin[PATH_MAX + 128];

static int try_bin(const char *path)
{
    if (access(path, X_OK) == 0) {
        snprintf(worker_bin, sizeof(worker_bin), "%s", path);
        return 1;
    }
    return 0;
}

int wkp_find_bin(const char *over)
{
    if (over && *over)
        return try_bin(over);
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *dir = dirname(self);
        char p[PATH_MAX + 64];
        snprintf(p, sizeof(p), "%s/worker/codemcp-worker", dir); /* build tree */
        if (try_bin(p))
            return 1;
        snprintf(p, sizeof(p), "%s/codemcp-worker", dir);
        if (try_bin(p))
            return 1;
        snprintf(p, sizeof(p), "%s/../libexec/codemcp/codemcp-worker", dir);
        if (try_bin(p))
            return 1;
    }
    return try_bin(CODEMCP_LIBEXECDIR "/codemcp-worker");
}

const char *wkp_bin(void)
{
    return worker_bin;
}

char **wkp_env(char *const *extra)
{
    /* A scrubbed environment: nothing of the gateway's secrets or upstream credentials. */
    static const char *const pass[] = {"PATH",
                                       "HOME",
                                       "LANG",
                                       "LC_ALL",
                                       "LC_CTYPE",
                                       "TZ",
                                       "TMPDIR",
                                       "CODEMCP_LOG",
                                       "CODEMCP_PYTHONPATH_DEV",
                                       "ASAN_OPTIONS",
                                       "UBSAN_OPTIONS",
                                       "LSAN_OPTIONS",
                                       "CODEMCP_SANDBOX_NET",
                                       "CODEMCP_SANDBOX_SUBPROCESS",
                                       "CODEMCP_SANDBOX_RO",
                                       "CODEMCP_SANDBOX_RW",
                                       "CODEMCP_SANDBOX_TMP_MB",
                                       "CODEMCP_SANDBOX_NPROC",
                                       "CODEMCP_SANDBOX_NOFILE",
                                       "CODEMCP_ENCODER_MODEL",
                                       "CODEMCP_SEMANTIC_SEARCH",
                                       "CODEMCP_SANDBOX_LANDLOCK_ABI_MAX",
                                       "CODEMCP_SANDBOX_SUBIDS",
                                       "CODEMCP_ROOT_UID_BASE",
                                       NULL};
    size_t n = 0, k = 0;
    for (char *const *e = extra; e && *e; e++)
        k++;
    char **env = xcalloc(sizeof(pass) / sizeof(pass[0]) + k + 2, sizeof(char *));
    for (int i = 0; pass[i]; i++) {
        const char *v = settings_env(pass[i]);
        if (!v)
            continue;
        size_t len = strlen(pass[i]) + strlen(v) + 2;
        env[n] = xmalloc(len);
        snprintf(env[n++], len, "%s=%s", pass[i], v);
    }
    env[n++] = xstrdup(ctl_frame_env());
    for (char *const *e = extra; e && *e; e++)
        env[n++] = xstrdup(*e);
    env[n] = NULL;
    return env;
}

void wkp_env_free(char **env)
{
    for (char **e = env; e && *e; e++) {
        explicit_bzero(*e, strlen(*e)); /* a token may be among them */
        free(*e);
    }
    free(env);
}

pid_t wkp_spawn(char **env, int keep_fd, int fds[3], char *err, size_t errlen)
{
    char *argv[] = {worker_bin, NULL};
    struct lp_spawn_opts o = {.argv = argv,
                              .env = env,
                              .clear_env = 1,
                              .want_stdout = 1,
                              .want_stderr = 1,
                              .keep_fd = keep_fd};
    return lp_spawn(&o, fds, err, errlen);
}

void wkp_kill(pid_t pid, enum wkp_kind kind)
{
    if (pid <= 0)
        return;
    switch (kind) {
    case WKP_EXEC_SANDBOX:
        sbx_kill(pid);
        break;
    case WKP_FORK_SANDBOX: /* PID 1 of its namespace: everything inside dies with it */
        kill(pid, SIGKILL);
        break;
    case WKP_EXEC_HOST:
    case WKP_FORK_HOST: /* its whole process group: what the agent's code started dies too */
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        break;
    }
}

/* One pass over pid's threads, then (after them: a child forked later inherits the new policy)
 * their children. *moved counts the threads changed. */
static int foreground_pass(pid_t pid, int depth, int *moved)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    int rc = 0;
    if (!d)
        return 0; /* gone: nothing left to move */
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || sched_getscheduler(tid) != SCHED_IDLE)
            continue;
        if (sched_setscheduler(tid, SCHED_OTHER, &(struct sched_param){0}) < 0)
            rc = errno == ESRCH ? 0 : -1;
        else
            (*moved)++;
    }
    rewinddir(d);
    for (struct dirent *e; rc == 0 && depth < 16 && (e = readdir(d));) {
        int tid = atoi(e->d_name);
        if (tid <= 0)
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, tid);
        char *kids = read_file(path, NULL);
        for (char *p = kids, *end; rc == 0 && p && *p; p = end) {
            long c = strtol(p, &end, 10);
            if (end == p)
                break;
            rc = foreground_pass((pid_t)c, depth + 1, moved);
        }
        free(kids);
    }
    int e = errno;
    closedir(d);
    errno = e;
    return rc;
}

int wkp_foreground_tree(pid_t pid)
{
    /* Until a pass finds nothing left: a thread may have been started, or a process forked,
     * by one not moved yet while we walked. */
    for (int pass = 0; pass < 8; pass++) {
        int moved = 0;
        if (foreground_pass(pid, 0, &moved) < 0)
            return -1;
        if (!moved)
            return 0;
    }
    errno = EAGAIN;
    return -1;
}

/* The NSpid fields of pid (up to max), their count, or -1. */
static int nspids(pid_t pid, long *out, int max)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    int n = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "NSpid:", 6) == 0) {
            char *p = line + 6, *end;
            n = 0;
            for (long v = strtol(p, &end, 10); end != p && n < max; v = strtol(p, &end, 10)) {
                out[n++] = v;
                p = end;
            }
            break;
        }
    fclose(f);
    return n;
}

int wkp_ns_level(pid_t pid)
{
    long f[16];
    int n = nspids(pid, f, 16);
    return n > 0 ? n - 1 : -1;
}

pid_t wkp_child_by_nspid(pid_t parent, int level, pid_t inner)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)parent, (int)parent);
    char *t = read_file(path, NULL);
    pid_t found = -1;
    if (!t)
        return -1;
    /* Children are listed oldest first: the one asked about is usually the last. */
    for (char *p = t + strlen(t); found < 0 && p > t;) {
        while (p > t && (p[-1] < '0' || p[-1] > '9'))
            p--;
        char *e = p;
        while (p > t && p[-1] >= '0' && p[-1] <= '9')
            p--;
        if (e == p)
            break;
        long c = strtol(p, NULL, 10), f[16];
        int n = nspids((pid_t)c, f, 16);
        if (n > level && f[level] == inner)
            found = (pid_t)c;
    }
    free(t);
    return found;
}

/* The only child of pid's main thread, or -1 (none, or more than one). */
static pid_t only_child(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
    char *t = read_file(path, NULL), *end = NULL;
    long c = t ? strtol(t, &end, 10) : 0;
    int one = c > 0 && end && strspn(end, " \n") == strlen(end);
    free(t);
    return one ? (pid_t)c : -1;
}

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* Linux 6.9 */
#endif

/* A pidfd of one of the watched threads in the loop: readable once the thread has exited. */
struct wkp_exit {
    struct wkp_watch *wt; /* NULL once the watch is closed */
    unsigned gen;
    int i; /* its place in wt->exits */
    struct lp_io *io;
};

static void exit_ready(void *ud)
{
    struct wkp_exit *x = ud;
    if (x->wt && x->wt->gen == x->gen) {
        x->wt->lost = 1;
        x->wt->exits[x->i] = NULL; /* freed once closed */
    }
    x->wt = NULL;
    lp_io_close(x->io);
}

/* Closed by exit_ready, wkp_watch_close, or the loop's end (lp_destroy closes every io before
 * the workers hear of their exits): the watch must not keep a pointer to it. */
static void exit_closed(void *ud)
{
    struct wkp_exit *x = ud;
    if (x->wt && x->wt->gen == x->gen && x->wt->exits[x->i] == x)
        x->wt->exits[x->i] = NULL;
    free(x);
}

static const struct lp_io_ops exit_ops = {.on_ready = exit_ready, .on_close = exit_closed};

/* Asks the kernel to tell when thread i (tid) exits; then its comm file need not be read. */
static void watch_exit(struct wkp_watch *wt, int i, pid_t tid)
{
    int fd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);
    if (fd < 0)
        return; /* before Linux 6.9: read before each run */
    struct wkp_exit *x = xcalloc(1, sizeof(*x));
    x->wt = wt;
    x->gen = wt->gen;
    x->i = i;
    x->io = lp_io_watch(fd, 1, &exit_ops, x);
    if (!x->io) {
        close(fd);
        free(x);
        return;
    }
    wt->exits[i] = x;
}

/* Opens the comm file of each of pid's threads (at most WKP_WATCH_THREADS). */
static int open_threads(struct wkp_watch *wt)
{
    int dup = fcntl(wt->task_fd, F_DUPFD_CLOEXEC, 0);
    DIR *d = dup < 0 ? NULL : fdopendir(dup);
    if (!d) {
        if (dup >= 0)
            close(dup);
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        char comm[48];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(comm, sizeof(comm), "%.16s/comm", e->d_name);
        int fd =
            wt->n_base < WKP_WATCH_THREADS ? openat(wt->task_fd, comm, O_RDONLY | O_CLOEXEC) : -1;
        if (fd < 0)
            rc = -1;
        else
            wt->base_fd[wt->n_base++] = fd;
        long tid = strtol(e->d_name, NULL, 10);
        if (fd >= 0 && tid == (long)wt->pid) {
            wt->main_fd = fd;
        } else if (fd >= 0) {
            watch_exit(wt, wt->n_base - 1, (pid_t)tid);
            if (wt->exits[wt->n_base - 1]) { /* the pidfd tells: its comm file is not read */
                close(fd);
                wt->base_fd[wt->n_base - 1] = -1;
            }
        }
    }
    closedir(d);
    return rc;
}

int wkp_watch_open(struct wkp_watch *wt, pid_t pid, int forked)
{
    char path[64];
    pid_t init = pid <= 0 ? -1 : forked ? pid : only_child(pid); /* exec'd: waiter -> PID 1 */
    pid_t worker = init > 0 ? only_child(init) : -1;
    wkp_watch_close(wt);
    if (worker <= 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/%d/task", (int)worker);
    wt->task_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)worker, (int)worker);
    wt->children_fd = open(path, O_RDONLY | O_CLOEXEC);
    wt->pid = worker;
    if (wt->task_fd < 0 || wt->children_fd < 0 || open_threads(wt) < 0) {
        wkp_watch_close(wt);
        return -1;
    }
    return 0;
}

void wkp_watch_close(struct wkp_watch *wt)
{
    if (wt->pid > 0) {
        if (wt->task_fd >= 0)
            close(wt->task_fd);
        if (wt->children_fd >= 0)
            close(wt->children_fd);
        for (int i = 0; i < wt->n_base; i++) {
            if (wt->base_fd[i] >= 0)
                close(wt->base_fd[i]);
            if (wt->exits[i]) {
                wt->exits[i]->wt = NULL;
                lp_io_close(wt->exits[i]->io);
            }
            wt->exits[i] = NULL;
        }
    }
    wt->gen++;
    wt->lost = 0;
    wt->pid = 0;
    wt->task_fd = wt->children_fd = wt->main_fd = -1;
    wt->n_base = 0;
}

/* A task's flags while it exits (PF_EXITING, the kernel's linux/sched.h). */
#define WKP_PF_EXITING 0x4

/* A task (its /proc stat file, relative to dir) alive and not on its way out. */
static int task_live(int dir, const char *stat_path)
{
    char buf[512], state;
    unsigned long flags;
    int fd = openat(dir, stat_path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
    char *p = strrchr(buf, ')');
    if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
        return 0;
    return state != 'Z' && state != 'X' && !(flags & WKP_PF_EXITING);
}

int wkp_extra_threads(const struct wkp_watch *wt)
{
    struct stat st;
    char c[20];
    if (wt->pid <= 0 || fstat(wt->task_fd, &st) < 0 || st.st_nlink < 3)
        return -1; /* gone */
    /* The main thread is the process: its end shows in the link count. */
    if (wt->lost)
        return WKP_LOST;
    for (int i = 0; i < wt->n_base; i++)
        if (wt->base_fd[i] != wt->main_fd && !wt->exits[i] &&
            pread(wt->base_fd[i], c, sizeof(c), 0) <= 0)
            return WKP_LOST;
    int n = (int)st.st_nlink - 2;
    if (n <= wt->n_base)
        return 0;
    int dup = fcntl(wt->task_fd, F_DUPFD_CLOEXEC, 0);
    DIR *d = dup < 0 ? NULL : fdopendir(dup);
    if (!d) {
        if (dup >= 0)
            close(dup);
        return n - wt->n_base;
    }
    rewinddir(d);
    int live = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9') {
            char sp[64];
            snprintf(sp, sizeof(sp), "%.16s/stat", e->d_name);
            live += task_live(wt->task_fd, sp);
        }
    closedir(d);
    return live > wt->n_base ? live - wt->n_base : 0;
}

int wkp_alive(const struct wkp_watch *wt)
{
    char sp[32];
    snprintf(sp, sizeof(sp), "%d/stat", (int)wt->pid);
    return wt->pid > 0 && task_live(wt->task_fd, sp);
}

int wkp_has_children(const struct wkp_watch *wt)
{
    char c[4];
    return wt->pid > 0 && pread(wt->children_fd, c, sizeof(c), 0) > 0;
}

int64_t wkp_cpu_ms(const struct wkp_watch *wt)
{
    clockid_t clk;
    struct timespec ts;
    if (wt->pid <= 0 || clock_getcpuclockid(wt->pid, &clk) != 0 || clock_gettime(clk, &ts) < 0)
        return -1;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* user + system time of pid, and of the children it waited for, in clock ticks; -1 when gone.
 * A zombie still reports its own. */
static int64_t proc_ticks(pid_t pid)
{
    char path[48], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the name may hold anything but ends at the last ')' */
    long long ut, st, cut, cst;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld %lld %lld", &ut,
                     &st, &cut, &cst) != 4)
        return -1;
    return ut + st + cut + cst;
}

/* Pushes the children of every thread of pid onto stack (n entries, WKP_TREE_MAX room): 0,
 * or -1 when they do not fit. */
static int push_children(pid_t pid, pid_t *stack, int *n)
{
    char path[48];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return 0; /* gone since its stat was read: its time went to its parent */
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char cp[80], buf[4096];
        snprintf(cp, sizeof(cp), "/proc/%d/task/%.16s/children", (int)pid, e->d_name);
        int fd = open(cp, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        /* one read: the kernel writes the list at once; a list longer than buf (over 500
         * children of one thread) counts as too many */
        ssize_t got = read(fd, buf, sizeof(buf) - 1);
        if (got >= (ssize_t)sizeof(buf) - 1)
            rc = -1;
        buf[got > 0 ? got : 0] = '\0';
        char *q = buf, *end;
        for (long v; rc == 0 && (v = strtol(q, &end, 10)) > 0 && end != q; q = end) {
            if (*n >= WKP_TREE_MAX)
                rc = -1;
            else
                stack[(*n)++] = (pid_t)v;
        }
        close(fd);
    }
    closedir(d);
    return rc;
}

int64_t wkp_tree_cpu_ms(pid_t root)
{
    static long hz;
    if (!hz)
        hz = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
    pid_t *stack = xmalloc(WKP_TREE_MAX * sizeof(*stack));
    int n = 0, seen = 0;
    int64_t ticks = 0, rc = -1;
    stack[n++] = root;
    while (n > 0) {
        pid_t p = stack[--n];
        int64_t t = proc_ticks(p);
        if (t < 0) {
            if (p == root)
                goto out;
            continue; /* reaped meanwhile: its time is its parent's now */
        }
        ticks += t;
        if (++seen > WKP_TREE_MAX || push_children(p, stack, &n) < 0) {
            rc = WKP_TREE_TOO_BIG;
            goto out;
        }
    }
    rc = ticks * 1000 / hz;
out:
    free(stack);
    return rc;
}
