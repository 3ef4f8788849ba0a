/* trace_export — the OTLP/HTTP exporter: a bounded queue of finished spans filled by the loop
 * and one thread that batches, encodes (otlp.c) and POSTs them to <endpoint>/v1/traces.
 *
 * The loop's side (tx__push) takes a mutex the thread holds only to unlink a batch, never
 * across I/O, so the loop never waits on the collector: a collector that is down or hangs
 * fills the queue, and every span past CODEMCP_OTLP_QUEUE_SPANS is dropped and counted (the
 * count is logged while it grows and at exit). The thread has its own blocking easy handle
 * rather than curl_thread.c's multi handle, which is the upstreams': a hanging collector must
 * not hold connections or a thread turn the calls need. A request is bounded by
 * CODEMCP_OTLP_TIMEOUT_MS, and shutdown aborts one in flight (the progress callback). The
 * thread blocks every signal (they belong to the loop's signalfd). */
#include "curl_lib.h"
#include "log.h"
#include "trace_int.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SHUTDOWN_WAIT_MS 2000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static struct trace_span *head, *tail; /* lock */
static long queued;                    /* lock */
static int quit;                       /* lock */
static atomic_int stopping;            /* read by the progress callback */
static int running;                    /* loop thread */
static pthread_t thread;
static struct trace_config cfg;
static char *url;
static int json;
static atomic_ullong exported, dropped, failed_posts;

int tx__running(void)
{
    return running;
}

uint64_t trace_spans_exported(void)
{
    return atomic_load(&exported);
}

uint64_t trace_spans_dropped(void)
{
    return atomic_load(&dropped);
}

void tx__push(struct trace_span *s)
{
    if (!running) {
        tr__span_free(s);
        return;
    }
    pthread_mutex_lock(&lock);
    if (queued >= cfg.queue_spans) {
        pthread_mutex_unlock(&lock);
        unsigned long long d = atomic_fetch_add(&dropped, 1) + 1;
        if ((d & (d - 1)) == 0) /* once, then at every power of two */
            log_warn("trace", "export queue full (%ld spans): %llu spans dropped so far",
                     cfg.queue_spans, d);
        tr__span_free(s);
        return;
    }
    s->next = NULL;
    if (tail)
        tail->next = s;
    else
        head = s;
    tail = s;
    queued++;
    if (queued == 1 || queued == cfg.batch_spans) /* the delay starts, or a batch is full */
        pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
}

static size_t discard_body(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return size * n;
}

static int abort_on_stop(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)ud, (void)a, (void)b, (void)c, (void)d;
    return atomic_load(&stopping) ? 1 : 0;
}

static void free_list(struct trace_span *s)
{
    while (s) {
        struct trace_span *next = s->next;
        tr__span_free(s);
        s = next;
    }
}

static struct buf body; /* the export thread's: the request being sent, kept for the next */

/* POSTs one batch of n spans; counts them exported or dropped. */
static void post(CURL *easy, const struct trace_span *list, long n)
{
    buf_reset(&body);
    if (json)
        otlp_encode_json(list, &body);
    else
        otlp_encode_proto(list, &body);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body.data ? body.data : "");
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body.len);
    CURLcode rc = curl_easy_perform(easy);
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    if (rc == CURLE_OK && status >= 200 && status < 300) {
        atomic_fetch_add(&exported, (unsigned long long)n);
    } else {
        unsigned long long lost = atomic_fetch_add(&dropped, (unsigned long long)n) + n;
        /* once, then at every power of two: a collector that stays down does not flood */
        unsigned long long f = atomic_fetch_add(&failed_posts, 1) + 1;
        if ((f & (f - 1)) == 0)
            log_warn("trace", "cannot export %ld spans to %s: %s (%llu spans dropped so far)", n,
                     url, rc != CURLE_OK ? curl_easy_strerror(rc) : "collector answered an error",
                     lost);
    }
}

/* Waits until a batch is due (batch_spans queued, delay_ms after the first of them arrived,
 * or quit); returns it unlinked (NULL: quit with nothing left) and its size in *n. */
static struct trace_span *next_batch(long *n)
{
    pthread_mutex_lock(&lock);
    while (!quit && queued == 0)
        pthread_cond_wait(&wake, &lock);
    if (!quit && queued < cfg.batch_spans) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += cfg.delay_ms / 1000;
        until.tv_nsec += (cfg.delay_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!quit && queued < cfg.batch_spans)
            if (pthread_cond_timedwait(&wake, &lock, &until) == ETIMEDOUT)
                break;
    }
    struct trace_span *batch = head, *last = NULL;
    long k = 0;
    for (struct trace_span *s = head; s && k < cfg.batch_spans; s = s->next, k++)
        last = s;
    if (last) {
        head = last->next;
        if (!head)
            tail = NULL;
        last->next = NULL;
    } else {
        batch = NULL;
    }
    queued -= k;
    *n = k;
    pthread_mutex_unlock(&lock);
    return batch;
}

static void *thread_main(void *ud)
{
    (void)ud;
    CURL *easy = curl_easy_init();
    struct curl_slist *hdrs = curl_slist_append(
        NULL, json ? "Content-Type: application/json" : "Content-Type: application/x-protobuf");
    if (easy) {
        curl_easy_setopt(easy, CURLOPT_URL, url);
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, cfg.timeout_ms);
        curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, cfg.timeout_ms);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard_body);
        curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, abort_on_stop);
        curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    }
    for (;;) {
        long n;
        struct trace_span *batch = next_batch(&n);
        if (!batch)
            break;
        if (easy && !atomic_load(&stopping))
            post(easy, batch, n);
        else
            atomic_fetch_add(&dropped, (unsigned long long)n);
        free_list(batch);
    }
    curl_slist_free_all(hdrs);
    if (easy)
        curl_easy_cleanup(easy);
    buf_free(&body);
    return NULL;
}

int tx__start(const struct trace_config *c)
{
    cfg = *c;
    const char *proto = cfg.protocol ? cfg.protocol : "http/protobuf";
    if (strcmp(proto, "http/json") == 0) {
        json = 1;
    } else if (strcmp(proto, "http/protobuf") != 0) {
        log_error("trace", "CODEMCP_OTLP_PROTOCOL=%s: use http/protobuf or http/json; tracing off",
                  proto);
        return -1;
    }
    if (strncmp(cfg.endpoint, "http://", 7) != 0 && strncmp(cfg.endpoint, "https://", 8) != 0) {
        log_error("trace",
                  "CODEMCP_OTLP_ENDPOINT must start with http:// or https://; tracing off");
        return -1;
    }
    size_t el = strlen(cfg.endpoint);
    while (el && cfg.endpoint[el - 1] == '/')
        el--;
    struct buf u = {0};
    buf_append(&u, cfg.endpoint, el);
    buf_appends(&u, "/v1/traces");
    url = buf_steal(&u);
    char why[300];
    if (curl_lib_load(why, sizeof(why)) < 0) {
        log_error("trace", "%s; tracing off", why);
        goto fail;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        log_error("trace", "libcurl failed to initialise; tracing off");
        goto fail;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wake, &ca);
    pthread_condattr_destroy(&ca);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&thread, NULL, thread_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        log_error("trace", "cannot start the trace export thread: %s", strerror(rc));
        curl_global_cleanup();
        goto fail;
    }
    running = 1;
    log_info("trace", "exporting spans to %s (%s)", url, json ? "http/json" : "http/protobuf");
    return 0;
fail:
    free(url);
    url = NULL;
    return -1;
}

void tx__stop(void)
{
    if (!running)
        return;
    running = 0;
    pthread_mutex_lock(&lock);
    quit = 1;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    /* What is queued gets one last try, for at most SHUTDOWN_WAIT_MS (or the export timeout):
     * then the request in flight is aborted and the rest dropped (counted). */
    long wait_ms = cfg.timeout_ms < SHUTDOWN_WAIT_MS ? cfg.timeout_ms : SHUTDOWN_WAIT_MS;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += wait_ms / 1000;
    deadline.tv_nsec += (wait_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    if (pthread_timedjoin_np(thread, NULL, &deadline) != 0) {
        atomic_store(&stopping, 1);
        pthread_join(thread, NULL);
    }
    curl_global_cleanup();
    unsigned long long d = atomic_load(&dropped);
    if (d)
        log_warn("trace", "spans exported: %llu, dropped: %llu", atomic_load(&exported), d);
    else
        log_info("trace", "spans exported: %llu, dropped: 0", atomic_load(&exported));
    free(url);
    url = NULL;
}
