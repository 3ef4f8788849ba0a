/* wsout — see wsout.h. wmu guards the socket's write side, the cork and the timer's
 * arming; cmu (a leaf, held for a copy only) the stored control frame. */
#include "wsout.h"

#include "log.h"
#include "util.h"
#include "wsconnect.h"
#include "wsproto.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

static struct {
    pthread_mutex_t wmu; /* whole frames on the wire; the cork */
    int fd, tfd;
    atomic_uint_fast64_t rng;
    unsigned char *cork; /* encoded frames not yet written (under wmu) */
    size_t cork_len, cork_cap;
    int timer_armed;      /* under wmu */
    atomic_int corked;    /* cork_len > 0 */
    atomic_int due;       /* the timer fired while wmu was busy: its releaser flushes */
    atomic_llong last_us; /* the last text frame's now_us(), 0 after a wait */

    pthread_mutex_t cmu;
    int ctl_op;
    unsigned char ctl_data[125];
    size_t ctl_len;
    atomic_int ctl_pending;
} wso = {
    .wmu = PTHREAD_MUTEX_INITIALIZER,
    .cmu = PTHREAD_MUTEX_INITIALIZER,
    .fd = -1,
    .tfd = -1,
};

static uint32_t wso_mask(void)
{
    uint64_t s = atomic_fetch_add(&wso.rng, 1);
    return (uint32_t)wsp_rand(&s);
}

static void wso_timer(long us)
{
    struct itimerspec its = {
        .it_value = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000}};
    timerfd_settime(wso.tfd, 0, &its, NULL);
}

/* Writes the cork; wmu held. 0 or -1. */
static int wso_write_cork(void)
{
    if (!wso.cork_len)
        return 0;
    int rc = wcn_send_all(wso.fd, wso.cork, wso.cork_len);
    wso.cork_len = 0;
    atomic_store(&wso.corked, 0);
    atomic_store(&wso.due, 0);
    if (wso.timer_armed) {
        wso_timer(0);
        wso.timer_armed = 0;
    }
    return rc;
}

/* Appends one encoded frame to the cork; wmu held. 0, or -2 (OOM). */
static int wso_append(int opcode, const void *payload, size_t len)
{
    size_t total = wsp_header_len(len) + len;
    if (wso.cork_len + total > wso.cork_cap) {
        size_t cap = wso.cork_cap ? wso.cork_cap : 4096;
        while (cap < wso.cork_len + total)
            cap *= 2;
        unsigned char *p = realloc(wso.cork, cap);
        if (!p)
            return -2;
        wso.cork = p;
        wso.cork_cap = cap;
    }
    wsp_encode(wso.cork + wso.cork_len, opcode, payload, len, wso_mask());
    wso.cork_len += total;
    atomic_store(&wso.corked, 1);
    return 0;
}

/* One frame now, the cork in front of it (one send); wmu held. */
static int wso_write_locked(int opcode, const void *payload, size_t len, int secret)
{
    if (wso.cork_len && !secret && wso.cork_len + wsp_header_len(len) + len <= WSO_CORK_MAX) {
        int rc = wso_append(opcode, payload, len);
        return rc < 0 ? rc : wso_write_cork();
    }
    if (wso_write_cork() < 0)
        return -1;
    return wcn_send_frame(wso.fd, opcode, payload, len, wso_mask(), secret);
}

/* Releases wmu, then does what was left for its holder: a stored control frame, a cork
 * whose timer fired meanwhile. Never waits for wmu. */
static void wso_unlock(void)
{
    pthread_mutex_unlock(&wso.wmu);
    while ((atomic_load(&wso.ctl_pending) || (atomic_load(&wso.due) && atomic_load(&wso.corked))) &&
           pthread_mutex_trylock(&wso.wmu) == 0) {
        unsigned char data[125];
        size_t len = 0;
        int op = 0;
        pthread_mutex_lock(&wso.cmu);
        if (wso.ctl_pending) {
            op = wso.ctl_op;
            len = wso.ctl_len;
            memcpy(data, wso.ctl_data, len);
            wso.ctl_pending = 0;
        }
        pthread_mutex_unlock(&wso.cmu);
        if (atomic_exchange(&wso.due, 0))
            wso_write_cork(); /* a failure shows as the reader's end of stream */
        if (op)
            wso_write_locked(op, data, len, 0);
        pthread_mutex_unlock(&wso.wmu);
    }
}

int wso_init(uint64_t seed)
{
    atomic_store(&wso.rng, seed);
    wso.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (wso.tfd < 0)
        log_error("worker", "cannot create the send timer: %s", strerror(errno));
    return wso.tfd;
}

void wso_set_fd(int fd)
{
    wso.fd = fd;
}

int wso_frame(int opcode, const void *payload, size_t len, int secret)
{
    pthread_mutex_lock(&wso.wmu);
    int rc = wso_write_locked(opcode, payload, len, secret);
    atomic_store(&wso.last_us, 0);
    wso_unlock();
    return rc;
}

int wso_text(const char *text, size_t len)
{
    int64_t now = now_us();
    int rc;
    pthread_mutex_lock(&wso.wmu);
    int64_t last = atomic_load(&wso.last_us);
    size_t total = wsp_header_len(len) + len;
    if ((wso.cork_len || (last && now - last < WSO_CORK_US)) && wso.tfd >= 0 &&
        wso.cork_len + total <= WSO_CORK_MAX) {
        if (!wso.cork_len)
            atomic_store(&wso.due, 0); /* a fire whose releaser found nothing corked */
        rc = wso_append(WSP_OP_TEXT, text, len);
        if (rc == 0 && !wso.timer_armed) {
            wso_timer(WSO_CORK_US);
            wso.timer_armed = 1;
        }
    } else {
        rc = wso_write_locked(WSP_OP_TEXT, text, len, 0);
    }
    atomic_store(&wso.last_us, now);
    wso_unlock();
    return rc;
}

int wso_flush(void)
{
    if (!atomic_load(&wso.corked)) {
        if (atomic_load(&wso.last_us))
            atomic_store(&wso.last_us, 0);
        return 0;
    }
    pthread_mutex_lock(&wso.wmu);
    int rc = wso_write_cork();
    atomic_store(&wso.last_us, 0);
    wso_unlock();
    return rc;
}

int wso_on_timer(void)
{
    uint64_t ticks;
    if (read(wso.tfd, &ticks, sizeof(ticks)) < 0)
        return 0; /* disarmed meanwhile */
    atomic_store(&wso.due, 1);
    if (pthread_mutex_trylock(&wso.wmu) != 0)
        return 0; /* its holder writes the cork when it releases wmu */
    int rc = 0;
    if (atomic_exchange(&wso.due, 0)) {
        wso.timer_armed = 0; /* fired: a write need not disarm it */
        rc = wso_write_cork();
    }
    wso_unlock();
    return rc;
}

void wso_control(int opcode, const void *payload, size_t len)
{
    pthread_mutex_lock(&wso.cmu);
    wso.ctl_op = opcode;
    wso.ctl_len = len > sizeof(wso.ctl_data) ? sizeof(wso.ctl_data) : len;
    memcpy(wso.ctl_data, payload, wso.ctl_len);
    atomic_store(&wso.ctl_pending, 1);
    pthread_mutex_unlock(&wso.cmu);
    if (pthread_mutex_trylock(&wso.wmu) == 0)
        wso_unlock(); /* writes it, unless someone else holds wmu: then they do */
}

void wso_close(void)
{
    static const unsigned char normal[2] = {0x03, 0xE8}; /* 1000: normal closure */
    if (pthread_mutex_trylock(&wso.wmu) == 0) {
        wso_write_locked(WSP_OP_CLOSE, normal, sizeof(normal), 0);
        pthread_mutex_unlock(&wso.wmu);
    }
}

void wso_free(void)
{
    if (wso.tfd >= 0)
        close(wso.tfd);
    wso.tfd = wso.fd = -1;
    free(wso.cork);
    wso.cork = NULL;
    wso.cork_len = wso.cork_cap = 0;
    atomic_store(&wso.corked, 0);
}
