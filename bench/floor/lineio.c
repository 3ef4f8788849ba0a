/* lineio — see lineio.h. */
#include "lineio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ssize_t lines_fill(struct lines *l, int fd)
{
    if (l->start > 0 && l->start == l->len) {
        l->start = l->len = 0;
    } else if (l->start > l->cap / 2) {
        memmove(l->data, l->data + l->start, l->len - l->start);
        l->len -= l->start;
        l->start = 0;
    }
    if (l->cap - l->len < 4096) {
        size_t cap = l->cap ? l->cap * 2 : 65536;
        char *d = realloc(l->data, cap);
        if (!d) {
            errno = ENOMEM;
            return -1;
        }
        l->data = d;
        l->cap = cap;
    }
    ssize_t n;
    do
        n = read(fd, l->data + l->len, l->cap - l->len - 1);
    while (n < 0 && errno == EINTR);
    if (n > 0)
        l->len += (size_t)n;
    return n;
}

char *lines_next(struct lines *l, size_t *n)
{
    if (!l->data)
        return NULL;
    char *p = l->data + l->start;
    char *nl = memchr(p, '\n', l->len - l->start);
    if (!nl)
        return NULL;
    *nl = '\0';
    *n = (size_t)(nl - p);
    l->start += *n + 1;
    return p;
}

void lines_free(struct lines *l)
{
    free(l->data);
    *l = (struct lines){0};
}

int write_full(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}
