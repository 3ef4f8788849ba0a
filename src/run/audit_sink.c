/* audit_sink — where the audit log's lines go: a file or syslog, written by a thread of its
 * own so that the loop never waits on a disk.
 *
 * The loop copies each line into a bounded queue (AUDIT_QUEUE_BYTES) and goes on; the writer
 * thread takes everything queued at once, at most AUDIT_FLUSH_MS after the first line of a
 * batch, and writes it with one write. A disk that is slow or full, or a
 * syslog daemon that does not read, therefore costs the loop at most a memcpy: when the queue
 * is full the line is dropped and counted, and a failed write counts the lines it loses. Both
 * counts are reported in the ordinary log (at most every AUDIT_REPORT_MS) and at exit.
 *
 * The file is opened O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC with mode 0600: appends never
 * overwrite what another process (or a rotated copy) holds, and the descriptor is closed in
 * every child at exec, so no worker or upstream ever has it. A write cut short (a full disk)
 * is undone back to the last whole line, so the file never holds half a line. SIGHUP reopens
 * the path (audit_sink_reopen): after `mv audit.log audit.log.1` the next lines start a new
 * file, and every line lands in one of the two. */
#include "audit_sink.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#define MOD "audit"
/* Lines queued and not yet written, at most (an audit line is a few hundred bytes). */
#define AUDIT_QUEUE_BYTES ((size_t)4 << 20)
/* The writer gathers lines for up to AUDIT_FLUSH_MS after the first, or until
 * AUDIT_FLUSH_BYTES are queued, before it writes them: a line reaches the file within that. */
#define AUDIT_FLUSH_MS    20
#define AUDIT_FLUSH_BYTES ((size_t)256 << 10)
/* Lost lines are reported at most this often. */
#define AUDIT_REPORT_MS 10000
/* At exit, how long the writer may take to write what is queued (a disk that does not answer
 * must not keep the gateway from ending: what is left is counted as lost). */
#define AUDIT_CLOSE_MS 3000

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_t thread;
    int running;
    int stop, reopen;
    char *queue; /* lines the loop put, each ending in '\n' */
    size_t queued;
    char *path; /* NULL: syslog */
    int fd;
} sk = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .fd = -1};

static atomic_long lost_full, lost_write;
static atomic_llong reported_ms;
static atomic_long reported_full, reported_write;

static int open_file(const char *path)
{
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
}

/* Logs the lines lost since the last report, at most every AUDIT_REPORT_MS (force: now). */
static void report_lost(int force)
{
    long full = atomic_load(&lost_full), failed = atomic_load(&lost_write);
    if (full == atomic_load(&reported_full) && failed == atomic_load(&reported_write))
        return;
    long long now = now_ms(), last = atomic_load(&reported_ms);
    if (!force && now - last < AUDIT_REPORT_MS)
        return;
    if (!atomic_compare_exchange_strong(&reported_ms, &last, now))
        return; /* another thread reports */
    log_error(MOD,
              "%ld audit lines lost so far: %ld while the queue was full (%zu bytes waiting for "
              "the disk or syslog), %ld in writes that failed",
              full + failed, full, AUDIT_QUEUE_BYTES, failed);
    atomic_store(&reported_full, full);
    atomic_store(&reported_write, failed);
}

static size_t count_lines(const char *p, size_t n)
{
    size_t k = 0;
    for (const char *e = p + n; (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++)
        k++;
    return k;
}

/* Writes the whole lines of p[0..n) to the file. A write cut short or failed loses the lines
 * from the one it cut on; the part of that line already written is taken back. */
static void write_file(int fd, const char *p, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, p + done, n - done);
        if (w > 0) {
            done += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        int e = errno;
        /* back to the end of the last whole line written (O_APPEND: the offset is the end) */
        const char *nl = done ? memrchr(p, '\n', done) : NULL;
        size_t whole = nl ? (size_t)(nl - p) + 1 : 0;
        off_t end = lseek(fd, 0, SEEK_CUR);
        if (whole < done && end >= (off_t)(done - whole) &&
            ftruncate(fd, end - (off_t)(done - whole)) < 0) {
            /* the half line stays: the next line starts after it */
        }
        size_t lost = count_lines(p + whole, n - whole);
        atomic_fetch_add(&lost_write, (long)lost);
        log_debug(MOD, "writing the audit log: %s (%zu lines lost)", strerror(e ? e : EIO), lost);
        return;
    }
}

static void write_syslog(const char *p, size_t n)
{
    for (const char *e = p + n, *nl; p < e; p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(e - p));
        syslog(LOG_INFO, "%.*s", (int)(nl - p), p);
    }
}

static void reopen_file(void)
{
    int fd = open_file(sk.path);
    if (fd < 0) {
        log_error(MOD, "SIGHUP: cannot open %s (%s); audit lines still go to the file open before",
                  sk.path, strerror(errno));
        return;
    }
    close(sk.fd);
    sk.fd = fd;
    log_info(MOD, "SIGHUP: audit log reopened: %s", sk.path);
}

static void *writer_main(void *arg)
{
    (void)arg;
    char *batch = xmalloc(AUDIT_QUEUE_BYTES);
    pthread_mutex_lock(&sk.mu);
    for (;;) {
        while (!sk.queued && !sk.stop && !sk.reopen)
            pthread_cond_wait(&sk.wake, &sk.mu);
        /* lines come in bursts (a program's calls): gather them for a while, so the loop's
         * lines cost one wake-up and one write per AUDIT_FLUSH_MS, not one each */
        struct timespec until = ts_after_ms(CLOCK_REALTIME, AUDIT_FLUSH_MS);
        while (!sk.stop && !sk.reopen && sk.queued < AUDIT_FLUSH_BYTES &&
               pthread_cond_timedwait(&sk.wake, &sk.mu, &until) == 0) {
        }
        int reopen = sk.reopen, stop = sk.stop;
        sk.reopen = 0;
        /* the two buffers trade places: the loop never waits on a copy */
        char *full = sk.queue;
        size_t n = sk.queued;
        sk.queue = batch;
        sk.queued = 0;
        batch = full;
        pthread_mutex_unlock(&sk.mu);
        if (reopen && sk.path)
            reopen_file();
        if (n && sk.path)
            write_file(sk.fd, batch, n);
        else if (n)
            write_syslog(batch, n);
        report_lost(0);
        pthread_mutex_lock(&sk.mu);
        if (stop && !sk.queued)
            break;
    }
    pthread_mutex_unlock(&sk.mu);
    free(batch);
    return NULL;
}

int audit_sink_open(const char *dest, char *err, size_t errlen)
{
    if (strcmp(dest, "syslog") == 0) {
        openlog("codemcp-audit", LOG_PID | LOG_NDELAY, LOG_AUTHPRIV);
    } else {
        sk.fd = open_file(dest);
        if (sk.fd < 0) {
            snprintf(err, errlen, "CODEMCP_AUDIT_LOG: cannot open %s: %s", dest, strerror(errno));
            return -1;
        }
        sk.path = xstrdup(dest);
    }
    sk.queue = xmalloc(AUDIT_QUEUE_BYTES);
    sk.queued = 0;
    sk.stop = sk.reopen = 0;
    /* The loop's signals are blocked in this thread as in every other (lp_init ran before). */
    if (pthread_create(&sk.thread, NULL, writer_main, NULL) != 0) {
        snprintf(err, errlen, "CODEMCP_AUDIT_LOG: cannot start its writer thread");
        free(sk.queue);
        sk.queue = NULL;
        return -1;
    }
    sk.running = 1;
    return 0;
}

void audit_sink_put(const char *line, size_t len)
{
    if (!sk.running)
        return;
    pthread_mutex_lock(&sk.mu);
    int room = sk.queued + len + 1 <= AUDIT_QUEUE_BYTES;
    if (room) {
        /* the writer waits for a first line, then for AUDIT_FLUSH_BYTES or its time */
        int wake = sk.queued == 0 ||
                   (sk.queued < AUDIT_FLUSH_BYTES && sk.queued + len + 1 >= AUDIT_FLUSH_BYTES);
        memcpy(sk.queue + sk.queued, line, len);
        sk.queue[sk.queued + len] = '\n';
        sk.queued += len + 1;
        if (wake)
            pthread_cond_signal(&sk.wake);
    }
    pthread_mutex_unlock(&sk.mu);
    if (!room) {
        atomic_fetch_add(&lost_full, 1);
        report_lost(0);
    }
}

void audit_sink_reopen(void)
{
    if (!sk.running)
        return;
    pthread_mutex_lock(&sk.mu);
    sk.reopen = 1;
    pthread_cond_signal(&sk.wake);
    pthread_mutex_unlock(&sk.mu);
}

void audit_sink_close(void)
{
    if (!sk.running)
        return;
    pthread_mutex_lock(&sk.mu);
    sk.stop = 1;
    pthread_cond_signal(&sk.wake);
    pthread_mutex_unlock(&sk.mu);
    struct timespec until = ts_after_ms(CLOCK_REALTIME, AUDIT_CLOSE_MS);
    if (pthread_timedjoin_np(sk.thread, NULL, &until) != 0) {
        /* stuck in a write: it keeps its buffers and the descriptor, the process ends anyway */
        pthread_mutex_lock(&sk.mu);
        atomic_fetch_add(&lost_full, (long)count_lines(sk.queue, sk.queued));
        sk.queued = 0;
        pthread_mutex_unlock(&sk.mu);
        sk.running = 0;
        log_error(MOD,
                  "the audit log's writer did not finish within %d ms (a disk that does not "
                  "answer?); not waiting for it",
                  AUDIT_CLOSE_MS);
        report_lost(1);
        return;
    }
    sk.running = 0;
    report_lost(1);
    if (sk.path) {
        close(sk.fd);
        sk.fd = -1;
    } else {
        closelog();
    }
    free(sk.path);
    free(sk.queue);
    sk.path = sk.queue = NULL;
}
