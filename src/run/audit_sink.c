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
 * file, and every line lands in one of the two.
 *
 * Syslog is spoken here, not through syslog(3): each line is one datagram in the BSD syslog
 * form ("<PRI>Mmm dd hh:mm:ss codemcp-audit[pid]: line", facility authpriv, severity info) to
 * /dev/log, or to the unix socket "syslog:PATH" names (a relay, a container's socket, a test).
 * syslog(3) knows only /dev/log and drops what it cannot send without saying so; here a line
 * the socket refuses (after one reconnect) is counted as lost like a failed file write. */
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
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
/* Where "syslog" sends its datagrams (syslog(3)'s _PATH_LOG). */
#define AUDIT_SYSLOG_PATH "/dev/log"

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
    struct sockaddr_un log_addr; /* syslog: the socket the datagrams go to */
    int log_sock;                /* syslog: connected datagram socket (-1: not connected) */
} sk = {
    .mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .fd = -1, .log_sock = -1};

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

/* The syslog socket, connected now if it is not (writer thread). -1 when it cannot be. */
static int syslog_socket(void)
{
    if (sk.log_sock >= 0)
        return sk.log_sock;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sk.log_addr, sizeof(sk.log_addr)) < 0) {
        close(fd);
        fd = -1;
    }
    return sk.log_sock = fd;
}

/* One datagram: head then line. 0, or -1 (the socket is closed; the caller may retry). */
static int send_line(const char *head, size_t head_len, const char *line, size_t len)
{
    int fd = syslog_socket();
    if (fd < 0)
        return -1;
    struct iovec iov[2] = {{(void *)head, head_len}, {(void *)line, len}};
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
    ssize_t w;
    do
        w = sendmsg(fd, &msg, MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    if (w == (ssize_t)(head_len + len))
        return 0;
    close(fd); /* the daemon restarted, or the socket went: the next send connects again */
    sk.log_sock = -1;
    return -1;
}

/* Each line of p[0..n) as one syslog datagram; a line the socket refuses twice is lost. */
static void write_syslog(const char *p, size_t n)
{
    char head[96];
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    char stamp[32];
    strftime(stamp, sizeof(stamp), "%b %e %H:%M:%S", &tm);
    int hl = snprintf(head, sizeof(head), "<%d>%s codemcp-audit[%ld]: ", LOG_AUTHPRIV | LOG_INFO,
                      stamp, (long)getpid());
    for (const char *e = p + n, *nl; p < e; p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(e - p));
        size_t len = (size_t)(nl - p);
        if (send_line(head, (size_t)hl, p, len) < 0 && send_line(head, (size_t)hl, p, len) < 0)
            atomic_fetch_add(&lost_write, 1);
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
    if (strcmp(dest, "syslog") == 0 || strncmp(dest, "syslog:", 7) == 0) {
        const char *to = dest[6] ? dest + 7 : AUDIT_SYSLOG_PATH;
        if (!*to || strlen(to) >= sizeof(sk.log_addr.sun_path)) {
            snprintf(err, errlen, "CODEMCP_AUDIT_LOG: %s: not a unix socket path", dest);
            return -1;
        }
        sk.log_addr.sun_family = AF_UNIX;
        memcpy(sk.log_addr.sun_path, to, strlen(to) + 1);
        syslog_socket(); /* before any worker starts; a daemon not up yet: at the first line */
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
    } else if (sk.log_sock >= 0) {
        close(sk.log_sock);
        sk.log_sock = -1;
    }
    free(sk.path);
    free(sk.queue);
    sk.path = sk.queue = NULL;
}
