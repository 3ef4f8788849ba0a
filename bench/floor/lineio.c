/* lineio — see lineio.h. */
#include "lineio.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
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

/* Room for n more bytes at the end of l (compacting first). 0 or -1. */
static int lines_room(struct lines *l, size_t n)
{
    if (l->start > 0 && l->start == l->len) {
        l->start = l->len = 0;
    } else if (l->start > l->cap / 2) {
        memmove(l->data, l->data + l->start, l->len - l->start);
        l->len -= l->start;
        l->start = 0;
    }
    if (l->cap - l->len < n + 1) {
        size_t cap = l->cap ? l->cap : 65536;
        while (cap - l->len < n + 1)
            cap *= 2;
        char *d = realloc(l->data, cap);
        if (!d) {
            errno = ENOMEM;
            return -1;
        }
        l->data = d;
        l->cap = cap;
    }
    return 0;
}

int ws_fill_polls;

ssize_t ws_fill(struct lines *l, struct wsin *w, int fd)
{
    if (ws_fill_polls) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        while (poll(&p, 1, -1) < 0 && errno == EINTR)
            ;
    }
    if (w->cap - w->len < 4096) {
        size_t cap = w->cap ? w->cap * 2 : 65536;
        unsigned char *d = realloc(w->raw, cap);
        if (!d)
            return -1;
        w->raw = d;
        w->cap = cap;
    }
    ssize_t n;
    do
        n = read(fd, w->raw + w->len, w->cap - w->len);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return n;
    w->len += (size_t)n;
    size_t at = 0;
    while (w->len - at >= 2) {
        unsigned char *f = w->raw + at;
        if (f[0] != 0x81) /* FIN + text: all this relay sends */
            return -1;
        int masked = f[1] & 0x80;
        uint64_t plen = f[1] & 0x7f;
        size_t h = 2;
        if (plen == 126) {
            if (w->len - at < 4)
                break;
            plen = (uint64_t)f[2] << 8 | f[3];
            h = 4;
        } else if (plen == 127) {
            if (w->len - at < 10)
                break;
            plen = 0;
            for (int i = 0; i < 8; i++)
                plen = plen << 8 | f[2 + i];
            h = 10;
        }
        size_t key = h;
        h += masked ? 4 : 0;
        if (w->len - at < h + plen)
            break;
        if (lines_room(l, (size_t)plen) < 0)
            return -1;
        unsigned char *dst = (unsigned char *)l->data + l->len;
        if (masked)
            for (uint64_t i = 0; i < plen; i++)
                dst[i] = f[h + i] ^ f[key + (i & 3)];
        else
            memcpy(dst, f + h, (size_t)plen);
        l->len += (size_t)plen;
        at += h + (size_t)plen;
    }
    memmove(w->raw, w->raw + at, w->len - at);
    w->len -= at;
    return n;
}

int ws_write(int fd, const char *p, size_t n, int masked)
{
    static uint32_t seed = 0x9e3779b9u;
    unsigned char stack[4096], *out = n + 14 <= sizeof(stack) ? stack : malloc(n + 14);
    if (!out)
        return -1;
    size_t h = 0;
    out[h++] = 0x81;
    unsigned char mbit = masked ? 0x80 : 0;
    if (n < 126) {
        out[h++] = mbit | (unsigned char)n;
    } else if (n < 65536) {
        out[h++] = mbit | 126;
        out[h++] = (unsigned char)(n >> 8);
        out[h++] = (unsigned char)n;
    } else {
        out[h++] = mbit | 127;
        for (int i = 7; i >= 0; i--)
            out[h++] = (unsigned char)((uint64_t)n >> (8 * i));
    }
    if (masked) {
        seed ^= seed << 13; /* a fresh key per frame (xorshift), as a client must */
        seed ^= seed >> 17;
        seed ^= seed << 5;
        unsigned char *k = out + h;
        memcpy(k, &seed, 4);
        h += 4;
        for (size_t i = 0; i < n; i++)
            out[h + i] = (unsigned char)p[i] ^ k[i & 3];
    } else {
        memcpy(out + h, p, n);
    }
    int rc = write_full(fd, (const char *)out, h + n);
    if (out != stack)
        free(out);
    return rc;
}

void ws_free(struct wsin *w)
{
    free(w->raw);
    *w = (struct wsin){0};
}
