/* util — see util.h. */
#include "util.h"
#include "log.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>
#include <time.h>

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("codemcp: out of memory\n", stderr);
        abort();
    }
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fputs("codemcp: out of memory\n", stderr);
        abort();
    }
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("codemcp: out of memory\n", stderr);
        abort();
    }
    return q;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    char *d = xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

size_t fmt_i64(char out[24], int64_t v)
{
    char t[24], *d = t + sizeof(t);
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do
        *--d = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--d = '-';
    size_t n = (size_t)(t + sizeof(t) - d);
    memcpy(out, d, n);
    out[n] = '\0';
    return n;
}

static void buf_reserve(struct buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
}

void buf__grow_append(struct buf *b, const void *data, size_t n)
{
    buf_reserve(b, n);
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    char probe[1];
    int n = vsnprintf(probe, sizeof(probe), fmt, ap); /* sizing pass */
    va_end(ap);
    if (n > 0) {
        buf_reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

void buf_consume(struct buf *b, size_t n)
{
    if (n >= b->len) {
        if (b->cap > 65536) { /* a one-off big message must not pin its size */
            buf_free(b);
            return;
        }
        b->len = 0;
        if (b->data)
            b->data[0] = '\0';
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void buf_free(struct buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *buf_steal(struct buf *b)
{
    char *d = b->data ? b->data : xstrdup("");
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec ts_after_ms(clockid_t clk, int64_t ms)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int random_hex(char *out, size_t nbytes)
{
    unsigned char raw[64];
    static const char hex[] = "0123456789abcdef";
    if (nbytes > sizeof(raw) || RAND_bytes(raw, (int)nbytes) != 1)
        return -1;
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * nbytes] = '\0';
    return 0;
}

int secure_streq(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb)
        return 0;
    return CRYPTO_memcmp(a, b, la) == 0;
}

void utf8_trim_cut(char *s)
{
    size_t n = strlen(s), lead = n;
    while (lead > 0 && n - lead < 4 && ((unsigned char)s[lead - 1] & 0xC0) == 0x80)
        lead--;
    if (lead == 0)
        return;
    unsigned char c = (unsigned char)s[--lead];
    size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (n - lead < want)
        s[lead] = '\0';
}

char *read_file(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct buf b = {0};
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        buf_append(&b, chunk, n);
    int err = ferror(f);
    fclose(f);
    if (err) {
        buf_free(&b);
        errno = EIO;
        return NULL;
    }
    if (len_out)
        *len_out = b.len;
    return buf_steal(&b);
}

void list_unlink_(void *headp, const void *node, size_t next_offset)
{
    /* The links are read and written with memcpy: the list's own pointer type is unknown here. */
    unsigned char *link = headp;
    void *cur;
    memcpy(&cur, link, sizeof(cur));
    while (cur) {
        if (cur == node) {
            memcpy(link, (const unsigned char *)node + next_offset, sizeof(cur));
            return;
        }
        link = (unsigned char *)cur + next_offset;
        memcpy(&cur, link, sizeof(cur));
    }
}

size_t words_split(const char *name, struct buf *out)
{
    size_t words = 0, n = strlen(name);
    int in_word = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x80 && !isalnum(c)) {
            if (in_word)
                buf_append(out, "", 1);
            in_word = 0;
            continue;
        }
        if (in_word && c < 0x80 && isupper(c)) {
            unsigned char prev = (unsigned char)name[i - 1];
            unsigned char next = i + 1 < n ? (unsigned char)name[i + 1] : 0;
            if (islower(prev) || isdigit(prev) || (isupper(prev) && next < 0x80 && islower(next))) {
                buf_append(out, "", 1);
                in_word = 0;
            }
        }
        if (!in_word)
            words++;
        in_word = 1;
        char lc = (char)(c < 0x80 ? tolower(c) : c);
        buf_append(out, &lc, 1);
    }
    if (in_word)
        buf_append(out, "", 1);
    return words;
}

int args_ask_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
    return 0;
}
