/* gw_harness — see gw_harness.h. The lws callbacks run on the service thread only. */
#include "gw_harness.h"

#include "log.h"
#include "util.h"

#include <jansson.h>
#include <libwebsockets.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct gw_state gw = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

int gw_failures;
const char *gw_extra_env;

static void gw_push(struct gw_msg **head, struct gw_msg **tail, const char *text, size_t len)
{
    struct gw_msg *m = xmalloc(sizeof(*m) + LWS_PRE + len + 1);
    m->next = NULL;
    m->flags = LWS_WRITE_TEXT;
    m->len = len;
    memcpy(m->data + LWS_PRE, text, len);
    m->data[LWS_PRE + len] = '\0';
    if (*tail)
        (*tail)->next = m;
    else
        *head = m;
    *tail = m;
}

static struct gw_msg *gw_pop(struct gw_msg **head, struct gw_msg **tail)
{
    struct gw_msg *m = *head;
    if (m) {
        *head = m->next;
        if (!*head)
            *tail = NULL;
    }
    return m;
}

/* ---- lws side (service thread) ----------------------------------------------------- */

static int gw_http_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                      size_t len)
{
    if (reason == LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION)
        return -1; /* a WS upgrade without our subprotocol lands here: refuse it */
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static void gw_on_frame(struct lws *wsi, const char *text, size_t len)
{
    pthread_mutex_lock(&gw.mu);
    if (!gw.authed) {
        /* The first frame is the raw token: compare in constant time. */
        char *got = xstrndup(text, len);
        if (secure_streq(got, gw.token)) {
            gw.authed = 1;
        } else {
            gw.rejected = 1;
            gw.close_req = 1;
            lws_callback_on_writable(wsi);
        }
        free(got);
    } else {
        gw_push(&gw.in_head, &gw.in_tail, text, len);
    }
    pthread_cond_broadcast(&gw.cond);
    pthread_mutex_unlock(&gw.mu);
}

static int gw_ctl_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                     size_t len)
{
    (void)user;
    switch (reason) {
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: {
        char uri[64];
        if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) < 0 || strcmp(uri, GW_PATH) != 0)
            return -1;
        if (gw.conn)
            return -1; /* one worker connection at a time */
        break;
    }
    case LWS_CALLBACK_ESTABLISHED:
        gw.conn = wsi;
        pthread_mutex_lock(&gw.mu);
        gw.connections++;
        pthread_cond_broadcast(&gw.cond);
        pthread_mutex_unlock(&gw.mu);
        break;
    case LWS_CALLBACK_CLOSED:
        if (gw.conn == wsi)
            gw.conn = NULL;
        pthread_mutex_lock(&gw.mu);
        gw.closed = 1;
        pthread_cond_broadcast(&gw.cond);
        pthread_mutex_unlock(&gw.mu);
        break;
    case LWS_CALLBACK_RECEIVE:
        buf_append(&gw.rx, in, len);
        if (lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi)) {
            gw_on_frame(wsi, gw.rx.data ? gw.rx.data : "", gw.rx.len);
            buf_free(&gw.rx);
        }
        break;
    case LWS_CALLBACK_SERVER_WRITEABLE: {
        pthread_mutex_lock(&gw.mu);
        int close_now = gw.close_req;
        struct gw_msg *m = close_now ? NULL : gw_pop(&gw.out_head, &gw.out_tail);
        int more = gw.out_head != NULL;
        pthread_mutex_unlock(&gw.mu);
        if (close_now) {
            lws_close_reason(wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, NULL, 0);
            return -1;
        }
        if (m) {
            int n = lws_write(wsi, m->data + LWS_PRE, m->len, (enum lws_write_protocol)m->flags);
            free(m);
            if (n < 0)
                return -1;
        }
        if (more)
            lws_callback_on_writable(wsi);
        break;
    }
    case LWS_CALLBACK_RECEIVE_PONG:
        pthread_mutex_lock(&gw.mu);
        gw.pongs++;
        snprintf(gw.last_pong, sizeof(gw.last_pong), "%.*s", (int)(len < 127 ? len : 127),
                 in ? (const char *)in : "");
        pthread_cond_broadcast(&gw.cond);
        pthread_mutex_unlock(&gw.mu);
        break;
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED: {
        const struct lws_protocols *p = lws_get_protocol(wsi);
        if (p && p->name && strcmp(p->name, GW_PROTOCOL) == 0 && gw.conn)
            lws_callback_on_writable(gw.conn);
        break;
    }
    default:
        break;
    }
    return 0;
}

static const struct lws_protocols gw_protocols[] = {
    {"http", gw_http_cb, 0, 0, 0, NULL, 0},
    {GW_PROTOCOL, gw_ctl_cb, 0, 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static void *gw_service(void *arg)
{
    (void)arg;
    while (!gw.stop)
        lws_service(gw.ctx, 0);
    return NULL;
}

/* ---- test side (main thread) ------------------------------------------------------- */

static void gw_deadline(int ms, struct timespec *ts)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

void gw_send_text(const char *text)
{
    pthread_mutex_lock(&gw.mu);
    gw_push(&gw.out_head, &gw.out_tail, text, strlen(text));
    pthread_mutex_unlock(&gw.mu);
    lws_cancel_service(gw.ctx);
}

void gw_send_frame(const char *data, size_t len, int flags)
{
    pthread_mutex_lock(&gw.mu);
    gw_push(&gw.out_head, &gw.out_tail, data, len);
    gw.out_tail->flags = flags;
    pthread_mutex_unlock(&gw.mu);
    lws_cancel_service(gw.ctx);
}

/* Sends and decrefs msg. */
void gw_send(json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    gw_send_text(text);
    free(text);
    json_decref(msg);
}

void gw_close_conn(void)
{
    pthread_mutex_lock(&gw.mu);
    gw.close_req = 1;
    pthread_mutex_unlock(&gw.mu);
    lws_cancel_service(gw.ctx);
}

/* Waits until *flag is set (under the lock). 0 or -1 on timeout. */
int gw_wait_flag(int *flag, int ms)
{
    struct timespec ts;
    int rc = 0;
    gw_deadline(ms, &ts);
    pthread_mutex_lock(&gw.mu);
    while (!*flag && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&gw.cond, &gw.mu, &ts);
    int ok = *flag;
    pthread_mutex_unlock(&gw.mu);
    return ok ? 0 : -1;
}

/* Next JSON frame from the worker (new reference), skipping `log` notifications; NULL on
 * timeout or when the connection closed with nothing left. */
json_t *gw_recv(int ms)
{
    struct timespec ts;
    gw_deadline(ms, &ts);
    pthread_mutex_lock(&gw.mu);
    for (;;) {
        struct gw_msg *m = gw_pop(&gw.in_head, &gw.in_tail);
        if (m) {
            pthread_mutex_unlock(&gw.mu);
            json_t *j = json_loadb((char *)m->data + LWS_PRE, m->len, 0, NULL);
            if (!j)
                fprintf(stderr, "fake_gateway: worker sent non-JSON: %.200s\n",
                        (char *)m->data + LWS_PRE);
            free(m);
            const char *method = json_string_value(json_object_get(j, "method"));
            if (method && strcmp(method, "log") == 0) {
                json_decref(j);
                pthread_mutex_lock(&gw.mu);
                continue;
            }
            return j;
        }
        if (gw.closed)
            break;
        if (pthread_cond_timedwait(&gw.cond, &gw.mu, &ts) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&gw.mu);
    return NULL;
}

/* The response with integer id `id` (new reference); fails on any other frame. */
json_t *gw_recv_response(long id, int ms)
{
    json_t *j = gw_recv(ms);
    if (!j) {
        fprintf(stderr, "fake_gateway: no response to request %ld within %d ms\n", id, ms);
        return NULL;
    }
    if (json_integer_value(json_object_get(j, "id")) != id || json_object_get(j, "method")) {
        char *t = json_dumps(j, JSON_COMPACT);
        fprintf(stderr, "fake_gateway: expected response %ld, got %.300s\n", id, t);
        free(t);
        json_decref(j);
        return NULL;
    }
    return j;
}

void gw_dump(const char *what, json_t *j)
{
    char *t = json_dumps(j, JSON_COMPACT);
    fprintf(stderr, "%s: %.2000s\n", what, t ? t : "(null)");
    free(t);
}

pid_t gw_spawn(const char *url, const char *token)
{
    static const char *pass[] = {"PATH",
                                 "HOME",
                                 "LANG",
                                 "CODEMCP_LOG",
                                 "ASAN_OPTIONS",
                                 "LSAN_OPTIONS",
                                 "UBSAN_OPTIONS",
                                 "CODEMCP_PYTHONPATH_DEV",
                                 "CODEMCP_WORKER_MEMORY_MB"};
    char *envp[32];
    int n = 0;
    struct buf b[4] = {{0}};
    buf_printf(&b[0], "CODEMCP_CONTROL_URL=%s", url);
    buf_printf(&b[1], "CODEMCP_WORKER_TOKEN=%s", token);
    buf_printf(&b[2], "CODEMCP_WORKER_ID=7");
    for (int i = 0; i < 3; i++)
        envp[n++] = b[i].data;
    for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]); i++) {
        const char *v = getenv(pass[i]);
        if (v) {
            char *e = xmalloc(strlen(pass[i]) + strlen(v) + 2);
            sprintf(e, "%s=%s", pass[i], v);
            envp[n++] = e;
        }
    }
    if (gw_extra_env)
        envp[n++] = xstrdup(gw_extra_env);
    envp[n] = NULL;

    /* lws set SIGPIPE to SIG_IGN, which exec would pass on: restore defaults. */
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t fa;
    sigset_t none, def;
    sigemptyset(&none);
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &def);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);

    const char *bin = getenv("CODEMCP_WORKER_BIN");
    char *argv[] = {(char *)bin, NULL};
    pid_t pid = -1;
    int rc = posix_spawn(&pid, bin, &fa, &attr, argv, envp);
    if (rc != 0) {
        fprintf(stderr, "fake_gateway: cannot spawn %s: %s\n", bin, strerror(rc));
        pid = -1;
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    for (int i = 0; i < n; i++)
        free(envp[i]);
    return pid;
}

/* Waits for pid to exit; returns its wait status, or -1 after killing it on timeout. */
int gw_wait_exit(pid_t pid, int ms)
{
    int64_t end = now_ms() + ms;
    int st;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (now_ms() > end)
            break;
        usleep(10000);
    }
    fprintf(stderr, "fake_gateway: worker %d still running after %d ms: killing it\n", (int)pid,
            ms);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

int gw_start_server(const char *unix_path)
{
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof(info));
    info.protocols = gw_protocols;
    info.gid = (gid_t)-1;
    info.uid = (uid_t)-1;
    info.fd_limit_per_thread = 1024;
    if (unix_path) {
        info.options = LWS_SERVER_OPTION_UNIX_SOCK;
        info.iface = unix_path;
        info.port = 0;
    } else {
        info.iface = "127.0.0.1";
        info.port = 0;
    }
    lws_set_log_level(LLL_ERR | LLL_WARN, NULL);
    gw.ctx = lws_create_context(&info);
    if (!gw.ctx)
        return -1;
    pthread_t t;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_create(&t, NULL, gw_service, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_detach(t);
    return 0;
}

/* Spawns a worker that connects to url with `token` (the gateway expects gw.token) and
 * waits for the handshake. Returns the pid, or -1 (the caller fails the test). */
pid_t gw_worker(const char *url, const char *token)
{
    pid_t pid = gw_spawn(url, token);
    if (pid < 0)
        return -1;
    /* 30 s: ASan builds start CPython slowly on a loaded machine. */
    int authed = gw_wait_flag(&gw.authed, 30000) == 0;
    if (!authed) {
        fprintf(stderr, "fake_gateway: worker never authenticated (rejected=%d)\n", gw.rejected);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}
