/* fdcap — see fdcap.h. One mutex guards the buffers and every read of the pipes, so the
 * drain thread and fdcap_end() never split a chunk between a run and the log. */
#include "fdcap.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct stream {
    int rd; /* read end of the pipe now on fd 1 or 2 */
    struct buf kept;
    size_t cut;
};

static struct {
    pthread_mutex_t mu;
    int started;
    int log_fd;
    int capturing;
    int ran; /* fdcap_begin() has run once */
    size_t limit;
    struct stream s[2]; /* stdout, stderr */
} fc = {.mu = PTHREAD_MUTEX_INITIALIZER, .log_fd = 2};

/* Reads what one pipe holds right now (non-blocking) into the run or the log. mu held.
 * Returns 0 when the pipe is empty, -1 when every writer is gone or on error. */
static int drain(struct stream *s)
{
    char chunk[65536];
    for (;;) {
        ssize_t n = read(s->rd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == EAGAIN ? 0 : -1;
        if (n == 0)
            return -1;
        if (!fc.capturing) {
            if (write(fc.log_fd, chunk, (size_t)n) < 0) {
                /* the log is gone too: nothing else to do with it */
            }
            continue;
        }
        size_t room = fc.limit > s->kept.len ? fc.limit - s->kept.len : 0;
        size_t take = (size_t)n < room ? (size_t)n : room;
        if (take)
            buf_append(&s->kept, chunk, take);
        s->cut += (size_t)n - take;
    }
}

static void *drain_main(void *arg)
{
    (void)arg;
    struct pollfd p[2] = {{.fd = fc.s[0].rd, .events = POLLIN},
                          {.fd = fc.s[1].rd, .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            return NULL;
        pthread_mutex_lock(&fc.mu);
        for (int i = 0; i < 2; i++)
            if (p[i].fd >= 0 && p[i].revents && drain(&fc.s[i]) < 0)
                p[i].fd = -1; /* all write ends closed: nothing more will come */
        pthread_mutex_unlock(&fc.mu);
        if (p[0].fd < 0 && p[1].fd < 0)
            return NULL;
    }
}

int fdcap_start(void)
{
    int pipes[2][2] = {{-1, -1}, {-1, -1}};
    int log_fd = fcntl(2, F_DUPFD_CLOEXEC, 10);
    sigset_t all, old;
    pthread_t t;
    if (log_fd < 0)
        goto fail;
    for (int i = 0; i < 2; i++)
        if (pipe2(pipes[i], O_CLOEXEC) < 0)
            goto fail;
    for (int i = 0; i < 2; i++)
        fcntl(pipes[i][0], F_SETFL, O_NONBLOCK);
    /* The drain thread takes no signals: SIGUSR1 must reach the Python thread. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    fc.s[0].rd = pipes[0][0];
    fc.s[1].rd = pipes[1][0];
    int rc = pthread_create(&t, NULL, drain_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        goto fail;
    pthread_detach(t);
    /* From here on the log has its own descriptor; fds 1 and 2 are the pipes (dup2 leaves
     * them inheritable, as stdout and stderr must be for subprocesses). */
    pthread_mutex_lock(&fc.mu);
    fc.log_fd = log_fd;
    log_set_fd(log_fd);
    dup2(pipes[0][1], 1);
    dup2(pipes[1][1], 2);
    close(pipes[0][1]);
    close(pipes[1][1]);
    fc.started = 1;
    pthread_mutex_unlock(&fc.mu);
    return 0;
fail:
    log_warn("worker", "output written to fds 1/2 will not be captured per run: %s",
             strerror(errno));
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            if (pipes[i][j] >= 0)
                close(pipes[i][j]);
    if (log_fd >= 0)
        close(log_fd);
    fc.s[0].rd = fc.s[1].rd = -1;
    return -1;
}

int fdcap_log_fd(void)
{
    return fc.log_fd;
}

/* Drains whatever the pipes hold right now: one poll() finds the non-empty ones (the usual
 * run writes nothing to fds 1 and 2: one syscall instead of a read per pipe). mu held. */
static void drain_ready(void)
{
    struct pollfd p[2] = {{.fd = fc.s[0].rd, .events = POLLIN},
                          {.fd = fc.s[1].rd, .events = POLLIN}};
    int n;
    do
        n = poll(p, 2, 0);
    while (n < 0 && errno == EINTR);
    for (int i = 0; i < 2; i++)
        if (n != 0 && (n < 0 || p[i].revents)) /* poll failed: read both, as before */
            drain(&fc.s[i]);
}

void fdcap_begin(size_t limit)
{
    if (!fc.started)
        return;
    pthread_mutex_lock(&fc.mu);
    /* No drain here (a poll on the way into every run): fdcap_end() emptied the pipes, so
     * all they can hold is what a leftover thread or process wrote since, in the last
     * instant before the drain thread would have logged it; like output that comes later
     * during the run, it is this run's (see fdcap.h). The first run drains, for the
     * start-up's output. */
    if (!fc.ran) {
        drain_ready();
        fc.ran = 1;
    }
    fc.limit = limit;
    fc.capturing = 1;
    pthread_mutex_unlock(&fc.mu);
}

static void hand_over(struct stream *s, char **data, size_t *len, size_t *cut)
{
    *len = s->kept.len;
    *cut = s->cut;
    *data = s->kept.len ? buf_steal(&s->kept) : NULL;
    buf_free(&s->kept);
    s->cut = 0;
}

void fdcap_end(char **out, size_t *out_len, size_t *out_cut, char **err, size_t *err_len,
               size_t *err_cut)
{
    *out = *err = NULL;
    *out_len = *out_cut = *err_len = *err_cut = 0;
    if (!fc.started)
        return;
    pthread_mutex_lock(&fc.mu);
    drain_ready();
    hand_over(&fc.s[0], out, out_len, out_cut);
    hand_over(&fc.s[1], err, err_len, err_cut);
    fc.capturing = 0;
    pthread_mutex_unlock(&fc.mu);
}

void fdcap_settle(void)
{
    if (!fc.started)
        return;
    pthread_mutex_lock(&fc.mu);
    if (!fc.capturing)
        drain_ready();
    pthread_mutex_unlock(&fc.mu);
}
