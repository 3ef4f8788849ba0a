/* forksrv — see forksrv.h. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "forksrv.h"
#include "log.h"
#include "sandbox.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define FSV_MAX_FDS 4
#define FSV_SDK_MAX (256u << 20)
/* How long the channel must stay quiet before idle work starts: the SDK load and the first
 * fork follow `ready` within a few ms, and idle work must not delay them. */
#define FSV_IDLE_MS 100

static void fsv_reply(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fsv_reply(int fd, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > 0)
        (void)!send(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1,
                    MSG_NOSIGNAL);
}

/* One datagram: the message and up to FSV_MAX_FDS descriptors (*nfds). 1, 0 on EOF, -1. */
static int fsv_recv(int fd, struct pw_msg *m, int *fds, int *nfds)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * FSV_MAX_FDS)];
        struct cmsghdr align;
    } u;
    struct iovec iov = {m, sizeof(*m)};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t n;
    *nfds = 0;
    do
        n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return n == 0 ? 0 : -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < k; i++) {
                int x;
                memcpy(&x, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                if (*nfds < FSV_MAX_FDS)
                    fds[(*nfds)++] = x;
                else
                    close(x);
            }
        }
    if (n != (ssize_t)sizeof(*m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
        return 2; /* malformed: dropped by the caller */
    m->token[sizeof(m->token) - 1] = '\0';
    return 1;
}

static void fsv_sdk(int fd, const struct pw_msg *m, int memfd, const struct fsv_ops *ops)
{
    struct stat st;
    char *text = NULL;
    int ok = 0;
    if (fstat(memfd, &st) == 0 && st.st_size > 0 && (size_t)st.st_size < FSV_SDK_MAX) {
        text = malloc((size_t)st.st_size + 1);
        size_t got = 0;
        while (text && got < (size_t)st.st_size) {
            ssize_t n = pread(memfd, text + got, (size_t)st.st_size - got, (off_t)got);
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (text && got == (size_t)st.st_size) {
            text[got] = '\0';
            ok = ops->load(text, got) == 0;
        }
    }
    free(text);
    ops->freeze();
    fsv_reply(fd, "sdk %d %d %s", m->version, m->shapes, ok ? "ok" : "error");
}

/* Forks one session. 1 in the child, 0 in the prototype. */
static int fsv_fork(int fd, struct pw_msg *m, const int fds[4], const struct sbx_opts *o,
                    int sandboxed, struct fsv_child *child)
{
    PyOS_BeforeFork();
    pid_t pid = sbx_fork_session(o, sandboxed, fds, m->ids);
    int e = errno;
    if (pid == 0) {
        PyOS_AfterFork_Child();
        child->slot = m->slot;
        memcpy(child->token, m->token, sizeof(child->token));
        explicit_bzero(m->token, sizeof(m->token));
        return 1;
    }
    PyOS_AfterFork_Parent();
    explicit_bzero(m->token, sizeof(m->token));
    if (pid < 0)
        fsv_reply(fd, "fork-failed %d %s", m->slot, strerror(e));
    else
        fsv_reply(fd, "forked %d %d", m->slot, (int)pid);
    return 0;
}

/* 1 when nothing arrives on fd for FSV_IDLE_MS (a request waiting, or an error: 0). */
static int fsv_quiet(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n;
    do
        n = poll(&p, 1, FSV_IDLE_MS);
    while (n < 0 && errno == EINTR);
    return n == 0;
}

int fsv_serve(int fd, const struct sbx_opts *o, int sandboxed, const struct fsv_ops *ops,
              struct fsv_child *child)
{
    /* Sessions' PID 1s are reaped by the kernel: nothing to wait for here. */
    signal(SIGCHLD, SIG_IGN);
    ops->freeze();
    fsv_reply(fd, "ready %d", (int)getpid());
    int idle_due = 1; /* after ready and after each SDK load */
    for (;;) {
        if (idle_due && fsv_quiet(fd)) {
            ops->idle();
            ops->freeze();
            idle_due = 0;
        }
        struct pw_msg m;
        int fds[FSV_MAX_FDS], nfds = 0, rc = fsv_recv(fd, &m, fds, &nfds), forked = 0;
        if (rc <= 0)
            return rc;
        if (rc == 1 && m.type == PW_FORK && nfds == 4) {
            forked = fsv_fork(fd, &m, fds, o, sandboxed, child);
        } else if (rc == 1 && m.type == PW_SDK && nfds == 1) {
            fsv_sdk(fd, &m, fds[0], ops);
            idle_due = 1;
        } else {
            log_warn("prototype", "malformed request from the gateway: dropped");
        }
        explicit_bzero(&m, sizeof(m));
        if (forked)
            return 1;
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
    }
}
