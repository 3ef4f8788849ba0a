/* lineio — newline-delimited I/O shared by the floor relays (bench/floor): a read buffer
 * that yields whole lines and a write that puts one line out in one write(2); and the same
 * over WebSocket framing (RFC 6455) for the gateway <-> worker link, framed as codemcp's
 * control channel is: the worker sends masked frames, the gateway unmasked ones, one frame
 * per message, each frame in one write(2). */
#ifndef FLOOR_LINEIO_H
#define FLOOR_LINEIO_H

#include <stddef.h>
#include <sys/types.h>

struct lines {
    char *data;
    size_t start; /* first unconsumed byte */
    size_t len;   /* bytes held, from 0 */
    size_t cap;
};

/* One read(2) into the buffer: bytes read, 0 at end of file, -1 on error (errno set). */
ssize_t lines_fill(struct lines *l, int fd);
/* The next complete line, NUL-terminated in place (no '\n'), with its length; NULL if none. */
char *lines_next(struct lines *l, size_t *n);
void lines_free(struct lines *l);

/* Writes all n bytes (one write(2) unless the kernel takes fewer). 0 or -1. */
int write_full(int fd, const char *p, size_t n);

/* Raw bytes of a WebSocket link not yet decoded into lines. */
struct wsin {
    unsigned char *raw;
    size_t len, cap;
};
/* Set by the floor workers from FLOOR_POLL_WAIT=1: ws_fill waits in poll() before its read
 * instead of blocking in the read. A reader blocked in read on a unix stream socket is woken,
 * for nothing, whenever the peer consumes what it sent (the write-space wake-up); a poll entry
 * filters that out. To tell whether the floor's blocking reads cost it more than they save
 * (results/percall.md, seventh pass). The floor gateway polls before it reads anyway. */
extern int ws_fill_polls;
/* One read(2) from a WebSocket link: whole frames are decoded (unmasked when masked) and
 * their payloads appended to l, a partial frame waits in w. Bytes read, 0 at end of file,
 * -1 on error or a frame this relay does not speak (not a final text frame). */
ssize_t ws_fill(struct lines *l, struct wsin *w, int fd);
/* Sends p[0..n) as one text frame (masked with a fresh key when `masked`), one write(2). */
int ws_write(int fd, const char *p, size_t n, int masked);
void ws_free(struct wsin *w);

#endif
