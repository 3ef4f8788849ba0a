/* util — small shared pieces: a growable byte buffer, monotonic time, random tokens,
 * constant-time comparison, checked allocation, unlinking from a singly linked list, O(1)
 * doubly linked list macros, and
 * splitting identifiers into words. No module state, no I/O. */
#ifndef CODEMCP_UTIL_H
#define CODEMCP_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* A growable byte buffer, always NUL-terminated after `len` bytes when `data` is set. */
struct buf {
    char *data;
    size_t len;
    size_t cap;
};

/* Appends n bytes. Inline for the common case (room already there): the gateway appends a
 * few bytes at a time, dozens of times per tool call (an audit line: ~55), and a call into
 * util.c plus libc's memcpy for each was ~45 instructions where an inlined copy of a known
 * size is a few. */
void buf__grow_append(struct buf *b, const void *data, size_t n);
static inline void buf_append(struct buf *b, const void *data, size_t n)
{
    if (b->cap - b->len > n) { /* len < cap whenever cap is set: room for n and the NUL */
        if (n)
            memcpy(b->data + b->len, data, n);
        b->len += n;
        b->data[b->len] = '\0';
        return;
    }
    buf__grow_append(b, data, n);
}
static inline void buf_appends(struct buf *b, const char *s)
{
    buf_append(b, s, strlen(s));
}
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Removes the first n bytes (O(len)); an emptied buffer over 64 KiB gives its memory back. */
void buf_consume(struct buf *b, size_t n);
void buf_reset(struct buf *b);
void buf_free(struct buf *b);
/* Hands the bytes to the caller (who frees them) and leaves the buffer empty. */
char *buf_steal(struct buf *b);

/* Allocation that aborts on out-of-memory: the gateway has no sane way to continue. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* FNV-1a of data[0..n), started from the offset basis xor seed (0: the standard basis). The one
 * hash of the project's string-keyed tables and names; inline, as the worker's JSON reader hashes
 * every object key with it. */
static inline uint64_t fnv1a(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = (const unsigned char *)data;
    uint64_t h = 14695981039346656037ULL ^ seed;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

/* Writes v in decimal (as "%lld" does) and a NUL into out; returns the length. No snprintf:
 * its format parsing is ~600 instructions, paid several times per execute. */
size_t fmt_i64(char out[24], int64_t v);

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t now_ms(void);
/* The time ms milliseconds from now on clock clk, as pthread_cond_timedwait takes it. */
struct timespec ts_after_ms(clockid_t clk, int64_t ms);
/* Microseconds on CLOCK_MONOTONIC. */
int64_t now_us(void);

/* Fills out with 2*nbytes hex characters of OpenSSL randomness plus a NUL. 0 or -1. */
int random_hex(char *out, size_t nbytes);
/* Constant-time equality of two strings (length leaks, content does not). */
int secure_streq(const char *a, const char *b);
/* Cuts s before a UTF-8 sequence broken off at its end (snprintf leaves one when its buffer
 * ends in the middle of a character), so text that was UTF-8 before its cut is UTF-8 again:
 * jansson refuses anything else, and a message built from it would be lost. O(strlen(s)). */
void utf8_trim_cut(char *s);

/* Reads a whole file; caller frees. NULL with errno set on failure. */
char *read_file(const char *path, size_t *len_out);

/* Removes node from the singly linked list whose head pointer is *headp, the list being
 * threaded through the nodes' `next` member; a no-op when node is not on it. O(length).
 * The sizeof line only makes the compiler check that headp and node agree in type. */
#define LIST_UNLINK(headp, node)                                                                   \
    do {                                                                                           \
        (void)sizeof(*(headp) == (node));                                                          \
        list_unlink_((headp), (node), (size_t)((char *)&(node)->next - (char *)(node)));           \
    } while (0)
void list_unlink_(void *headp, const void *node, size_t next_offset);

/* Doubly linked lists for the per-call bookkeeping (thousands of nodes in flight): threaded
 * through the nodes' `next` and `pprev` members, pprev being the address of the pointer that
 * points at the node (the head or the previous node's next), so unlinking is O(1). pprev is
 * NULL while a node is on no list (xcalloc'd nodes start so); DLIST_UNLINK of such a node is a
 * no-op and leaves next as it was (callers walking a list keep their saved next).
 * DLIST_PUSH adds at the head (newest first). For oldest-first lists keep a tail: a `T **`
 * variable holding the address of the last node's next (the head's address when empty), and
 * use DLIST_APPEND / DLIST_UNLINK_T on that list only. */
#define DLIST_PUSH(headp, node)                                                                    \
    do {                                                                                           \
        (node)->next = *(headp);                                                                   \
        if ((node)->next)                                                                          \
            (node)->next->pprev = &(node)->next;                                                   \
        *(headp) = (node);                                                                         \
        (node)->pprev = (headp);                                                                   \
    } while (0)
#define DLIST_UNLINK(node)                                                                         \
    do {                                                                                           \
        if ((node)->pprev) {                                                                       \
            *(node)->pprev = (node)->next;                                                         \
            if ((node)->next)                                                                      \
                (node)->next->pprev = (node)->pprev;                                               \
            (node)->pprev = NULL;                                                                  \
        }                                                                                          \
    } while (0)
#define DLIST_APPEND(tailpp, node)                                                                 \
    do {                                                                                           \
        (node)->next = NULL;                                                                       \
        (node)->pprev = *(tailpp);                                                                 \
        **(tailpp) = (node);                                                                       \
        *(tailpp) = &(node)->next;                                                                 \
    } while (0)
#define DLIST_UNLINK_T(tailpp, node)                                                               \
    do {                                                                                           \
        if ((node)->pprev && !(node)->next)                                                        \
            *(tailpp) = (node)->pprev;                                                             \
        DLIST_UNLINK(node);                                                                        \
    } while (0)

/* Splits an identifier into lowercase words: at every ASCII character that is not a letter or
 * digit ("_ - . space" and friends) and at camelCase humps ("deleteFile" -> delete file,
 * "HTTPServer" -> http server, "v2Api" -> v2 api). Non-ASCII bytes stay inside words. The words
 * are appended to out, each followed by a NUL byte; returns how many. */
size_t words_split(const char *name, struct buf *out);

/* A command's arguments ask for its usage: -h or --help anywhere among them. */
int args_ask_help(int argc, char **argv);

#endif
