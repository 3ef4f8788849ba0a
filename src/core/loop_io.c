/* loop_io — the loop's raw descriptors (lp_io): stdio, child pipes, sockets served by our own
 * code, each in loop.c's epoll set, with the reads and the queued writes done here. See loop.h
 * for the contract and loop.c for how the set is waited on.
 *
 * Writes are queued and leave at the end of the loop iteration (lp_defer), one gathered write
 * per descriptor per round, held blocks included (sendmsg(MSG_NOSIGNAL) on sockets: a peer
 * gone is an error, never a SIGPIPE); what a full pipe does not take waits for EPOLLOUT, so
 * nothing blocks. A big block can be queued by reference (lp_io_hold) instead of copied. EOF
 * and errors close a descriptor inside its dispatch, lp_io_close at the end of the iteration;
 * it leaves the set before it is closed. Regular files (stdin from a file), which epoll
 * refuses and poll() calls always ready, get a zero-delay timer per round instead. */
#include "log.h"
#include "loop.h"
#include "loop_int.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* At most this much of what a closed descriptor still holds is delivered (io_close_now). */
#define LP_CLOSE_DRAIN_MAX ((size_t)4 << 20)

/* A block queued by reference (lp_io_hold): written from where it lies and freed once written
 * (a 50 MB result is not copied into `out` beside the buffer it was read into). What is queued
 * after it waits in `after`, which becomes `out` once the block is out. */
struct held {
    char *block;
    const char *p;
    size_t len;
    struct buf after;
    struct held *next;
};

struct lp_io {
    int fd;
    int readable;
    int closing;
    int closed;
    int want_out; /* EPOLLOUT is in its interest set */
    int always;   /* a regular file or /dev/null: epoll refuses it, it is always ready */
    int sock;     /* a socket: written with send(MSG_NOSIGNAL) */
    const struct lp_io_ops *ops;
    void *ud;
    struct buf out;
    size_t out_off;                /* bytes of `out` already written (see io_write_out) */
    struct held *held, *held_tail; /* written after `out`, in order */
    struct lp_deferred flush;      /* writes `out` at the end of the iteration */
    struct lp_deferred close_soon; /* closes it at the end of the iteration */
    struct lp_io *next, **pprev;   /* every open one, for lp_destroy */
    struct lp_timer tick;          /* an `always` one: serviced once per round, as poll() saw it */
};

static struct lp_io *all_ios; /* open ones, for lp__io_close_all */

/* Interest in EPOLLIN (readable ones) and EPOLLOUT (while a write waits); EPOLLERR and
 * EPOLLHUP are always reported. */
static void io_tick(void *ud);

static void io_set_interest(struct lp_io *io, int want_out)
{
    if (io->want_out == want_out || io->closed)
        return;
    io->want_out = want_out;
    if (io->always) {
        if (want_out)
            lp_timer_start(&io->tick, 0, io_tick, io);
        return;
    }
    struct epoll_event ev = {.events = (io->readable ? EPOLLIN : 0) | (want_out ? EPOLLOUT : 0),
                             .data.ptr = io};
    if (epoll_ctl(lp__ep_fd, EPOLL_CTL_MOD, io->fd, &ev) < 0)
        log_debug("loop", "epoll_ctl fd %d: %s", io->fd, strerror(errno));
}

/* Takes it out of the epoll set, closes the fd, tells its owner, frees it. What a readable
 * one still holds is delivered first unless it was closed on purpose, up to LP_CLOSE_DRAIN_MAX
 * bytes: a pipe holds less, a source that never ends (stdin from /dev/zero, a growing file)
 * would keep a shutdown reading forever. Inside a dispatch only for the lp_io being dispatched
 * (ep_dispatch holds pointers to the others). */
static void io_close_now(struct lp_io *io)
{
    if (!io->closing && io->readable && !(io->ops && io->ops->on_ready)) {
        char chunk[65536];
        ssize_t n;
        size_t got = 0;
        while (got < LP_CLOSE_DRAIN_MAX && (n = read(io->fd, chunk, sizeof(chunk))) > 0 &&
               io->ops && io->ops->on_read) {
            got += (size_t)n;
            io->ops->on_read(io->ud, chunk, (size_t)n);
        }
    }
    io->closed = 1;
    if (io->always)
        lp_timer_stop(&io->tick);
    else
        epoll_ctl(lp__ep_fd, EPOLL_CTL_DEL, io->fd, NULL);
    close(io->fd);
    DLIST_UNLINK(io);
    lp_defer_cancel(&io->flush);
    lp_defer_cancel(&io->close_soon);
    if (io->ops && io->ops->on_close)
        io->ops->on_close(io->ud);
    buf_free(&io->out);
    while (io->held) {
        struct held *h = io->held;
        io->held = h->next;
        buf_free(&h->after);
        free(h->block);
        free(h);
    }
    free(io);
}

static void io_close_deferred(void *ud)
{
    io_close_now(ud);
}

static void io_close_soon(struct lp_io *io)
{
    lp_defer(&io->close_soon, io_close_deferred, io);
}

/* Bytes queued and not written yet. */
static size_t io_unsent(const struct lp_io *io)
{
    size_t n = io->out.len - io->out_off;
    for (const struct held *h = io->held; h; h = h->next)
        n += h->len + h->after.len;
    return n;
}

/* One write of what the descriptor takes, gathered from iov[0..n): bytes written, 0 when it
 * would block, -1 on error. */
static ssize_t io_send(struct lp_io *io, struct iovec *iov, int n)
{
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    ssize_t w = io->sock ? sendmsg(io->fd, &msg, MSG_NOSIGNAL) : writev(io->fd, iov, n);
    if (w >= 0 || errno == EAGAIN || errno == EINTR)
        return w < 0 ? 0 : w;
    log_debug("loop", "write fd %d: %s", io->fd, strerror(errno));
    return -1;
}

/* `out` is all written: a one-off big buffer is freed, and the first held block, if any, is
 * next. */
static void io_out_written(struct lp_io *io)
{
    buf_consume(&io->out, io->out.len);
    io->out_off = 0;
}

/* The first held block is all written: what was queued after it becomes `out`. */
static void io_held_written(struct lp_io *io)
{
    struct held *h = io->held;
    buf_free(&io->out);
    io->out = h->after;
    io->out_off = 0;
    io->held = h->next;
    if (!io->held)
        io->held_tail = NULL;
    free(h->block);
    free(h);
}

/* Writes what `out` and the held blocks behind it hold until the descriptor would block, each
 * round one gathered write (writev, sendmsg on sockets) of up to LP_IO_IOV pieces: a frame
 * whose result is held goes out in one write, not three, so its reader wakes once for it, not
 * once for its head and again for the rest. A partial write advances out_off instead of moving
 * the rest to the front: a big frame written ~300 KB at a time would otherwise be moved once
 * per write (quadratic; it was half of the gateway's time relaying a 50 MB result). -1 on a
 * write error. */
static int io_write_out(struct lp_io *io)
{
    enum { LP_IO_IOV = 64 };
    for (;;) {
        struct iovec iov[LP_IO_IOV];
        int n = 0;
        if (io->out.len > io->out_off)
            iov[n++] = (struct iovec){io->out.data + io->out_off, io->out.len - io->out_off};
        for (const struct held *h = io->held; h && n < LP_IO_IOV - 1; h = h->next) {
            if (h->len)
                iov[n++] = (struct iovec){(void *)h->p, h->len};
            if (h->after.len)
                iov[n++] = (struct iovec){h->after.data, h->after.len};
        }
        if (n == 0) { /* everything is out (empty blocks too) */
            io_out_written(io);
            while (io->held)
                io_held_written(io);
            return 0;
        }
        ssize_t w = io_send(io, iov, n);
        if (w <= 0)
            return (int)w;
        /* the bytes written, taken off in the order they were gathered */
        size_t left = (size_t)w, k = io->out.len - io->out_off;
        k = left < k ? left : k;
        io->out_off += k;
        left -= k;
        if (io->out_off < io->out.len)
            continue;
        io_out_written(io);
        while (io->held) {
            struct held *h = io->held;
            k = left < h->len ? left : h->len;
            h->p += k;
            h->len -= k;
            left -= k;
            if (h->len)
                break;
            io_held_written(io);
            k = left < io->out.len ? left : io->out.len;
            io->out_off = k;
            left -= k;
            if (io->out_off < io->out.len)
                break;
            io_out_written(io);
        }
    }
}

/* Before more is queued: the written head goes once it is most of the buffer, so a
 * descriptor that always has something waiting does not grow without bound, and each byte is
 * moved at most about once. */
static void io_compact(struct lp_io *io)
{
    if (io->out_off >= 65536 && io->out_off >= io->out.len / 2) {
        buf_consume(&io->out, io->out_off);
        io->out_off = 0;
    }
}

/* End of the iteration: one write for everything this round queued. What the descriptor
 * does not take waits for EPOLLOUT. */
static void io_flush(void *ud)
{
    struct lp_io *io = ud;
    if (io_write_out(io) < 0 || (!io_unsent(io) && io->closing)) {
        io_close_soon(io);
        return;
    }
    io_set_interest(io, io_unsent(io) > 0);
}

/* One ready descriptor (the signalfd is loop.c's own): at most one read (64 KiB), as lws would, and
 * what a waiting write can take. EOF, a read or write error, an error/hang-up on a write-only one,
 * or the last queued byte of one being closed closes it here and now, as lws closed its raw files
 * inside their service (only this lp_io is freed: the rest of the dispatch stays valid). */
int lp__io_event(struct lp_io *io, uint32_t ev)
{
    if (io->closed)
        return 0;
    if (ev & EPOLLOUT) {
        if (io_write_out(io) < 0) {
            io_close_now(io);
            return 1;
        }
        if (!io_unsent(io)) {
            io_set_interest(io, 0);
            if (io->closing) {
                io_close_now(io);
                return 1;
            }
        }
    }
    if (io->readable && io->ops && io->ops->on_ready && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
        if (!io->closing)
            io->ops->on_ready(io->ud);
        return 0;
    }
    if (io->readable && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
        char chunk[65536];
        ssize_t n = read(io->fd, chunk, sizeof(chunk));
        if (n > 0) {
            if (io->ops && io->ops->on_read && !io->closing)
                io->ops->on_read(io->ud, chunk, (size_t)n);
            return 0;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        io_close_now(io); /* EOF or error */
        return 1;
    }
    if (!io->readable && (ev & (EPOLLHUP | EPOLLERR))) {
        io_close_now(io); /* the reader went away */
        return 1;
    }
    return 0;
}

/* An `always` descriptor's round: what poll() would have reported for it (readable, and
 * writable while a write waits), then the next round, until it is closed. */
static void io_tick(void *ud)
{
    struct lp_io *io = ud;
    if (lp__io_event(io, (io->readable ? EPOLLIN : 0) | (io->want_out ? EPOLLOUT : 0)))
        return; /* freed */
    if (!io->closed && (io->readable || io->want_out))
        lp_timer_start(&io->tick, 0, io_tick, io); /* the next round, not this one */
}

struct lp_io *lp_io_watch(int fd, int readable, const struct lp_io_ops *ops, void *ud)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    struct lp_io *io = xcalloc(1, sizeof(*io));
    io->fd = fd;
    io->ops = ops;
    io->ud = ud;
    io->readable = readable;
    struct stat st;
    io->sock = fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
    struct epoll_event ev = {.events = readable ? EPOLLIN : 0, .data.ptr = io};
    int rc = lp__ep_fd < 0 ? -1 : epoll_ctl(lp__ep_fd, EPOLL_CTL_ADD, fd, &ev);
    if (rc < 0 && lp__ep_fd >= 0 && errno == EPERM) {
        io->always = 1; /* stdin from a file, stdout to one: poll() calls it always ready */
        if (readable)
            lp_timer_start(&io->tick, 0, io_tick, io);
    } else if (rc < 0) {
        log_error("loop", "cannot watch fd %d: %s", fd, strerror(errno));
        close(fd);
        free(io);
        return NULL;
    }
    DLIST_PUSH(&all_ios, io);
    return io;
}

struct buf *lp_io_out(struct lp_io *io)
{
    if (!io || io->closing || io->closed)
        return NULL;
    if (!io_unsent(io))
        lp_defer(&io->flush, io_flush, io);
    if (io->held_tail)
        return &io->held_tail->after;
    io_compact(io);
    return &io->out;
}

int lp_io_hold(struct lp_io *io, char *block, const char *p, size_t len)
{
    if (!lp_io_out(io))
        return -1;
    struct held *h = xcalloc(1, sizeof(*h));
    h->block = block;
    h->p = p;
    h->len = len;
    if (io->held_tail)
        io->held_tail->next = h;
    else
        io->held = h;
    io->held_tail = h;
    return 0;
}

int lp_io_write(struct lp_io *io, const void *data, size_t len)
{
    struct buf *out = lp_io_out(io);
    if (!out)
        return -1;
    buf_append(out, data, len);
    return 0;
}

int lp_io_write_line(struct lp_io *io, const char *data, size_t len)
{
    return lp_io_write(io, data, len) < 0 ? -1 : lp_io_write(io, "\n", 1);
}

int lp_io_fd(const struct lp_io *io)
{
    return io ? io->fd : -1;
}

size_t lp_io_pending(struct lp_io *io)
{
    return io ? io_unsent(io) : 0;
}

void lp_io_detach(struct lp_io *io)
{
    if (!io)
        return;
    io->ops = NULL;
    io->ud = NULL;
    lp_io_close(io);
}

void lp_io_close(struct lp_io *io)
{
    if (!io || io->closing)
        return;
    io->closing = 1;
    if (io_unsent(io))
        io_set_interest(io, 1); /* closed once the rest is out (or a write fails) */
    else
        io_close_soon(io);
}

/* The last write of a descriptor closed without waiting: what it takes now, then the close. */
static void io_close_last_write(void *ud)
{
    struct lp_io *io = ud;
    if (io_unsent(io))
        (void)io_write_out(io);
    io_close_now(io);
}

void lp_io_close_nowait(struct lp_io *io)
{
    if (!io || io->closed)
        return;
    io->closing = 1;
    lp_defer_cancel(&io->close_soon);
    lp_defer(&io->close_soon, io_close_last_write, io);
}

void lp__io_close_all(void)
{
    while (all_ios)
        io_close_now(all_ios);
}
