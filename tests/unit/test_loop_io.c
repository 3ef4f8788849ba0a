/* test_loop_io — the loop's queued writes (loop_io.c) through the real loop: what one round
 * queues for a descriptor, held blocks included, leaves in one write (its reader wakes once for
 * a frame, not once per piece), and a stream that takes a little at a time still gets every
 * byte in order, across partial writes, empty blocks and more pieces than one gathered write
 * carries. */
#include "check.h"
#include "loop.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int closed_ios;
static struct lp_timer t_guard;

static void on_io_close(void *ud)
{
    (void)ud;
    if (++closed_ios == 2)
        lp_stop();
}
static const struct lp_io_ops close_ops = {.on_close = on_io_close};

static void on_guard(void *ud)
{
    (void)ud;
    lp_stop(); /* a write that never finishes must not hang the suite */
}

/* Queues the bytes of s held by reference (a malloc'd copy the loop frees). */
static int holds_refused;
static void hold_copy(struct lp_io *io, const char *s, size_t n)
{
    char *block = xmalloc(n + 1);
    memcpy(block, s, n);
    if (lp_io_hold(io, block, block, n) < 0) {
        holds_refused++;
        free(block);
    }
}

/* The stream's reader: everything until EOF. */
static struct buf got;
static int stream_peer;
static void *read_all(void *arg)
{
    (void)arg;
    char chunk[4096];
    for (;;) {
        usleep(200); /* a slow reader: the writer meets a full socket again and again */
        ssize_t n = read(stream_peer, chunk, sizeof(chunk));
        if (n > 0)
            buf_append(&got, chunk, (size_t)n);
        else if (n == 0 || errno != EINTR)
            break;
    }
    return NULL;
}

int main(void)
{
    if (lp_init() < 0)
        return 1;

    /* A record socket keeps each write's boundary: a frame written in three writes is read
     * as three records. */
    int rec[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, rec) < 0)
        return 1;
    struct lp_io *frame = lp_io_watch(rec[0], 0, &close_ops, NULL);
    lp_io_write(frame, "HEAD:", 5);
    hold_copy(frame, "the held result", 15);
    lp_io_write(frame, ":TAIL", 5);
    lp_io_close(frame);

    /* A stream with a small send buffer and a slow reader: many partial writes. */
    int st[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, st) < 0)
        return 1;
    int small = 4096;
    setsockopt(st[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    stream_peer = st[1];
    struct lp_io *stream = lp_io_watch(st[0], 0, &close_ops, NULL);
    struct buf want = {0};
    size_t big = 300000;
    char *pattern = xmalloc(big + 150); /* piece i starts at pattern + i */
    for (size_t i = 0; i < big + 150; i++)
        pattern[i] = (char)('a' + (i * 7 + i / 251) % 26);
    /* more held pieces than one gathered write carries, some empty, some with nothing after */
    for (int i = 0; i < 150; i++) {
        char head[32];
        int hn = snprintf(head, sizeof(head), "<%d>", i);
        lp_io_write(stream, head, (size_t)hn);
        buf_append(&want, head, (size_t)hn);
        size_t n = i % 10 == 3 ? 0 : i % 50 == 7 ? big : (size_t)(i * 37 % 997);
        hold_copy(stream, pattern + i, n);
        buf_append(&want, pattern + i, n);
        if (i % 4 != 1) {
            lp_io_write(stream, "|", 1);
            buf_append(&want, "|", 1);
        }
    }
    lp_io_close(stream);
    pthread_t reader;
    pthread_create(&reader, NULL, read_all, NULL);

    lp_timer_start(&t_guard, 20000, on_guard, NULL);
    lp_run();
    lp_timer_stop(&t_guard);
    pthread_join(reader, NULL);

    char rbuf[256];
    ssize_t n = recv(rec[1], rbuf, sizeof(rbuf) - 1, MSG_DONTWAIT);
    rbuf[n > 0 ? n : 0] = '\0';
    CHECK(n > 0 && strcmp(rbuf, "HEAD:the held result:TAIL") == 0,
          "a frame with a held block leaves in one write (first record: \"%s\")", rbuf);
    n = recv(rec[1], rbuf, sizeof(rbuf), MSG_DONTWAIT);
    CHECK(n == 0, "and nothing follows it but the close (%zd)", n);

    CHECK(holds_refused == 0, "every block was taken (%d refused)", holds_refused);
    CHECK(closed_ios == 2, "both descriptors closed once all was written (%d)", closed_ios);
    CHECK(got.len == want.len && memcmp(got.data, want.data, want.len) == 0,
          "a slow stream gets every byte in order: %zu of %zu bytes", got.len, want.len);

    free(pattern);
    buf_free(&want);
    buf_free(&got);
    close(rec[1]);
    close(st[1]);
    lp_destroy();
    return CHECK_DONE();
}
