/* lineio — newline-delimited I/O shared by the floor relays (bench/floor): a read buffer
 * that yields whole lines and a write that puts one line out in one write(2). */
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

#endif
