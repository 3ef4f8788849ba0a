/* loop_child — the loop's children: spawning them (pipes, environment, process group, the
 * descriptor limit and signal mask they get back) and reaping them when loop.c's signalfd
 * reports SIGCHLD. Split from loop.c, which owns the descriptors and the wait; see loop.h for
 * the contract. Loop thread only. */
#include "log.h"
#include "loop.h"
#include "loop_int.h"
#include "pgguard.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

struct child_watch {
    pid_t pid;
    void (*cb)(void *ud, pid_t pid, int status);
    void *ud;
};

static struct child_watch *children;
static size_t n_children, cap_children;
static struct rlimit child_nofile; /* the limit we started with, given back to children */
static int have_child_nofile;

static struct child_watch *find_child(pid_t pid)
{
    for (size_t i = 0; i < n_children; i++)
        if (children[i].pid == pid)
            return &children[i];
    return NULL;
}

void lp_on_child_exit(pid_t pid, void (*cb)(void *ud, pid_t pid, int status), void *ud)
{
    struct child_watch *w = find_child(pid);
    if (w) {
        w->cb = cb;
        w->ud = ud;
    }
}

void lp_forget_child(pid_t pid)
{
    struct child_watch *w = find_child(pid);
    if (w)
        w->cb = NULL;
}

int lp_children_alive(void)
{
    return (int)n_children;
}

void lp__reap_children(void)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0)
            break;
        struct child_watch *w = find_child(pid);
        if (!w)
            continue;
        pg_guard_unwatch(pid);
        struct child_watch copy = *w;
        *w = children[--n_children];
        if (copy.cb)
            copy.cb(copy.ud, pid, status);
    }
}

static void child_exec(const struct lp_spawn_opts *o, int in[2], int out[2], int err[2],
                       int report_fd, pid_t parent)
{
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    signal(SIGPIPE, SIG_DFL);
    setpgid(0, 0);
    /* Die with the gateway, even when it is SIGKILLed. The parent may have died between
     * fork and prctl: then nobody would signal us, so check after setting it. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
        _exit(127);
    if (have_child_nofile)
        setrlimit(RLIMIT_NOFILE, &child_nofile);
    int devnull = open("/dev/null", O_RDWR);
    dup2(o->want_stdin ? in[0] : devnull, 0);
    dup2(o->want_stdout ? out[1] : devnull, 1);
    dup2(o->want_stderr ? err[1] : devnull, 2);
    if (o->cwd && chdir(o->cwd) != 0)
        goto fail;
    if (o->clear_env)
        clearenv();
    for (char *const *e = o->env; e && *e; e++)
        putenv(*e);
    /* keep_fd becomes fd 3 (dup2 clears its close-on-exec flag). */
    int first = 3;
    if (o->keep_fd > 2) {
        if (report_fd == 3 && (report_fd = fcntl(3, F_DUPFD_CLOEXEC, 4)) < 0)
            goto fail;
        if (o->keep_fd == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(o->keep_fd, 3) < 0)
            goto fail;
        first = 4;
    }
    /* Close inherited descriptors except the CLOEXEC report pipe, which exec closes. */
    if (report_fd > first)
        close_range((unsigned)first, (unsigned)report_fd - 1, 0);
    close_range((unsigned)report_fd + 1, ~0U, 0);
    execvp(o->argv[0], o->argv);
fail:;
    int e = errno;
    (void)!write(report_fd, &e, sizeof(e));
    _exit(127);
}

pid_t lp_spawn(const struct lp_spawn_opts *o, int fds[3], char *err_msg, size_t err_len)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, rep[2] = {-1, -1};
    pid_t pid = -1;
    fds[0] = fds[1] = fds[2] = -1;
    if ((o->want_stdin && pipe2(in, O_CLOEXEC) < 0) ||
        (o->want_stdout && pipe2(out, O_CLOEXEC) < 0) ||
        (o->want_stderr && pipe2(err, O_CLOEXEC) < 0) || pipe2(rep, O_CLOEXEC) < 0) {
        snprintf(err_msg, err_len, "pipe: %s", strerror(errno));
        goto fail;
    }
    pid_t parent = getpid();
    pid = fork();
    if (pid < 0) {
        snprintf(err_msg, err_len, "fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0) {
        close(rep[0]);
        /* Keep only the report pipe (CLOEXEC) above fd 2 after the dup2s. */
        child_exec(o, in, out, err, rep[1], parent);
    }
    close(rep[1]);
    rep[1] = -1;
    int child_errno = 0;
    ssize_t n;
    do
        n = read(rep[0], &child_errno, sizeof(child_errno));
    while (n < 0 && errno == EINTR);
    close(rep[0]);
    rep[0] = -1;
    if (n == (ssize_t)sizeof(child_errno)) {
        int st;
        waitpid(pid, &st, 0);
        snprintf(err_msg, err_len, "cannot run %s: %s", o->argv[0], strerror(child_errno));
        errno = child_errno;
        pid = -1;
        goto fail;
    }
    if (n_children == cap_children) {
        cap_children = cap_children ? cap_children * 2 : 8;
        children = xrealloc(children, cap_children * sizeof(*children));
    }
    children[n_children++] = (struct child_watch){.pid = pid};
    pg_guard_watch(pid); /* its group dies with us even when we are SIGKILLed */
    if (o->want_stdin) {
        close(in[0]);
        fds[0] = in[1];
    }
    if (o->want_stdout) {
        close(out[1]);
        fds[1] = out[0];
    }
    if (o->want_stderr) {
        close(err[1]);
        fds[2] = err[0];
    }
    return pid;
fail:
    for (int *p = &in[0]; p <= &in[1]; p++)
        if (*p >= 0)
            close(*p);
    for (int *p = &out[0]; p <= &out[1]; p++)
        if (*p >= 0)
            close(*p);
    for (int *p = &err[0]; p <= &err[1]; p++)
        if (*p >= 0)
            close(*p);
    if (rep[0] >= 0)
        close(rep[0]);
    if (rep[1] >= 0)
        close(rep[1]);
    return -1;
}

void lp_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return;
    child_nofile = rl;
    have_child_nofile = 1;
    rlim_t want = rl.rlim_max == RLIM_INFINITY ? (rlim_t)1 << 20 : rl.rlim_max;
    if (rl.rlim_cur >= want)
        return;
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        log_debug("loop", "cannot raise RLIMIT_NOFILE: %s", strerror(errno));
}

void lp__children_free(void)
{
    free(children);
    children = NULL;
    n_children = cap_children = 0;
}
