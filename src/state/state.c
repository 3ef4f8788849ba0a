/* state — see state.h. Two threads (writer, subscriber) and the loop share `st` under st.mu;
 * replies and messages reach the loop through lp_post only. After state_stop nothing is posted
 * (the loop may be gone). */
#include "state.h"

#include "log.h"
#include "loop.h"
#include "util.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MODULE     "state"
#define QUEUE_MAX  8192 /* commands waiting for the writer; past it state_cmd refuses */
#define CONNECT_MS 1000
#define RETRY_MS   500
#define POLL_MS    200
/* A silent partition (a frozen Redis, a dropped link) sends no FIN: the subscriber PINGs its
 * idle connection and calls it gone when a PING got no reply for PING_DEAD_MS; a command waits at
 * most CMD_MS instead of for ever. */
#define PING_MS      1000
#define PING_DEAD_MS 5000
#define CMD_MS       3000
#define STOP_WAIT_MS 2000
#define MAX_HOOKS    16

struct cmd {
    int argc;
    char **argv;
    size_t *lens;
    state_reply_fn cb;
    void *ud;
    struct cmd *next;
};

struct hook {
    char topic[32];
    void (*fn)(json_t *msg);
};

static struct {
    int on;
    char host[256], password[256];
    int port, db;
    char channel[64];
    char origin[17]; /* this process among the replicas: its own messages are skipped */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct cmd *head, *tail;
    size_t queued;
    int stopping;
    int up;             /* the subscriber is connected (the loop's view, under mu) */
    int64_t down_since; /* ms since the epoch when it went away (0: never up yet) */
    char last_err[192]; /* why, without credentials */
    pthread_t writer, subscriber;
    int threads;
    struct hook hooks[MAX_HOOKS];
    int n_hooks;
    void (*connect_hooks[MAX_HOOKS])(void);
    int n_connect;
    void (*stop_hooks[MAX_HOOKS])(void);
    int n_stop;
    int logged_down; /* the loop logged the outage (once until it is back) */
} st = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* ---- the URL and one connection ------------------------------------------------------------ */

static int parse_url(const char *url)
{
    const char *p = url + strlen("redis://");
    const char *at = strchr(p, '@'), *slash;
    if (strncmp(url, "redis://", 8) != 0)
        return -1;
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *pw = colon ? colon + 1 : p;
        if ((size_t)(at - pw) >= sizeof(st.password))
            return -1;
        memcpy(st.password, pw, (size_t)(at - pw));
        p = at + 1;
    }
    slash = strchr(p, '/');
    size_t hl = slash ? (size_t)(slash - p) : strlen(p);
    const char *colon = memchr(p, ':', hl);
    size_t nl = colon ? (size_t)(colon - p) : hl;
    if (nl == 0 || nl >= sizeof(st.host))
        return -1;
    memcpy(st.host, p, nl);
    st.port = 6379;
    if (colon) {
        char *end;
        long v = strtol(colon + 1, &end, 10);
        if (end != p + hl || v < 1 || v > 65535)
            return -1;
        st.port = (int)v;
    }
    if (slash && slash[1]) {
        char *end;
        long v = strtol(slash + 1, &end, 10);
        if (*end || v < 0 || v > 1000)
            return -1;
        st.db = (int)v;
    }
    return 0;
}

static void note_error(const char *what, const redisContext *c)
{
    pthread_mutex_lock(&st.mu);
    snprintf(st.last_err, sizeof(st.last_err), "%s: %.120s", what,
             c && c->err ? c->errstr : "no reply");
    pthread_mutex_unlock(&st.mu);
}

static int ok_reply(redisReply *r)
{
    return r && r->type != REDIS_REPLY_ERROR;
}

/* Connects, authenticates and selects the database; NULL when it cannot. */
static redisContext *connect_one(void)
{
    struct timeval tv = {CONNECT_MS / 1000, (CONNECT_MS % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(st.host, st.port, tv);
    redisReply *r = NULL;
    struct timeval cmd_tv = {CMD_MS / 1000, (CMD_MS % 1000) * 1000};
    if (!c || c->err || redisSetTimeout(c, cmd_tv) != REDIS_OK)
        goto fail;
    if (st.password[0]) {
        r = redisCommand(c, "AUTH %s", st.password);
        if (!ok_reply(r))
            goto fail;
        freeReplyObject(r);
        r = NULL;
    }
    if (st.db) {
        r = redisCommand(c, "SELECT %d", st.db);
        if (!ok_reply(r))
            goto fail;
        freeReplyObject(r);
    }
    return c;
fail:
    note_error("connect", c);
    if (r)
        freeReplyObject(r);
    if (c)
        redisFree(c);
    return NULL;
}

static json_t *to_json(redisReply *r)
{
    switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
        return json_stringn_nocheck(r->str, r->len);
    case REDIS_REPLY_INTEGER:
        return json_integer(r->integer);
    case REDIS_REPLY_ARRAY: {
        json_t *a = json_array();
        for (size_t i = 0; i < r->elements; i++)
            json_array_append_new(a, to_json(r->element[i]));
        return a;
    }
    case REDIS_REPLY_ERROR:
        return json_pack("{s:s%}", "error", r->str, r->len);
    default:
        return json_null();
    }
}

/* ---- the writer thread --------------------------------------------------------------------- */

struct delivery {
    state_reply_fn cb;
    void *ud;
    json_t *reply;
    struct delivery *next;
};

/* Replies that came after the loop stopped: state_stop hands them over (on the main thread,
 * the loop's), so that what the callbacks own is freed. Under st.mu. */
static struct delivery *late;

/* After state_stop (the owners may be freed already: lp_destroy runs what is still posted)
 * a callback only gets to free what it owns: NULL. */
static void deliver(void *ud)
{
    struct delivery *d = ud;
    if (!st.on) {
        json_decref(d->reply);
        d->reply = NULL;
    }
    d->cb(d->ud, d->reply);
    free(d);
}

static void cmd_free(struct cmd *c)
{
    for (int i = 0; i < c->argc; i++)
        free(c->argv[i]);
    free(c->argv);
    free(c->lens);
    free(c);
}

static void finish(struct cmd *c, json_t *reply, int post)
{
    if (c->cb) {
        struct delivery *d = xmalloc(sizeof(*d));
        *d = (struct delivery){c->cb, c->ud, reply, NULL};
        if (post) {
            lp_post(deliver, d);
        } else {
            pthread_mutex_lock(&st.mu);
            d->next = late;
            late = d;
            pthread_mutex_unlock(&st.mu);
        }
    } else {
        json_decref(reply);
    }
    cmd_free(c);
}

/* Under st.mu: answers every queued command "unreachable". */
static void fail_queued(int post)
{
    struct cmd *c = st.head;
    st.head = st.tail = NULL;
    st.queued = 0;
    pthread_mutex_unlock(&st.mu);
    for (struct cmd *n; c; c = n) {
        n = c->next;
        finish(c, NULL, post);
    }
    pthread_mutex_lock(&st.mu);
}

static void *writer_main(void *arg)
{
    (void)arg;
    redisContext *conn = NULL;
    int64_t deadline = 0;
    pthread_mutex_lock(&st.mu);
    for (;;) {
        while (!st.head && !st.stopping)
            pthread_cond_wait(&st.cv, &st.mu);
        if (!st.head || (st.stopping && now_ms() > deadline && deadline))
            break;
        if (st.stopping && !deadline)
            deadline = now_ms() + STOP_WAIT_MS;
        struct cmd *c = st.head;
        st.head = c->next;
        if (!st.head)
            st.tail = NULL;
        st.queued--;
        int post = !st.stopping;
        pthread_mutex_unlock(&st.mu);
        if (!conn)
            conn = connect_one();
        redisReply *r =
            conn ? redisCommandArgv(conn, c->argc, (const char **)c->argv, c->lens) : NULL;
        if (!r && conn) { /* a connection from before an outage: one more try on a new one */
            redisFree(conn);
            conn = connect_one();
            r = conn ? redisCommandArgv(conn, c->argc, (const char **)c->argv, c->lens) : NULL;
        }
        if (!r && conn) {
            note_error("write", conn);
            redisFree(conn);
            conn = NULL;
        }
        finish(c, r ? to_json(r) : NULL, post);
        if (r)
            freeReplyObject(r);
        pthread_mutex_lock(&st.mu);
        if (!conn) /* unreachable: what waits fails now (owners resync on reconnect) */
            fail_queued(post);
    }
    fail_queued(0); /* what the deadline left: answered "unreachable" by state_stop */
    pthread_mutex_unlock(&st.mu);
    if (conn)
        redisFree(conn);
    return NULL;
}

int state_cmd(state_reply_fn cb, void *ud, int argc, const char **argv, const size_t *lens)
{
    pthread_mutex_lock(&st.mu);
    int ok = st.on && st.up && !st.stopping && st.queued < QUEUE_MAX;
    pthread_mutex_unlock(&st.mu);
    if (!ok)
        return -1;
    struct cmd *c = xcalloc(1, sizeof(*c));
    c->argc = argc;
    c->argv = xcalloc((size_t)argc, sizeof(char *));
    c->lens = xcalloc((size_t)argc, sizeof(size_t));
    for (int i = 0; i < argc; i++) {
        c->lens[i] = lens ? lens[i] : strlen(argv[i]);
        c->argv[i] = xmalloc(c->lens[i] + 1);
        memcpy(c->argv[i], argv[i], c->lens[i]);
        c->argv[i][c->lens[i]] = 0;
    }
    c->cb = cb;
    c->ud = ud;
    pthread_mutex_lock(&st.mu);
    if (st.tail)
        st.tail->next = c;
    else
        st.head = c;
    st.tail = c;
    st.queued++;
    pthread_cond_signal(&st.cv);
    pthread_mutex_unlock(&st.mu);
    return 0;
}

/* ---- the subscriber thread and what it tells the loop --------------------------------------- */

static void connected(void *ud)
{
    (void)ud;
    if (!st.on)
        return; /* run by lp_destroy after state_stop */
    pthread_mutex_lock(&st.mu);
    st.up = 1;
    st.down_since = 0;
    pthread_mutex_unlock(&st.mu);
    if (st.logged_down)
        log_info(MODULE, "the state store redis://%s:%d is reachable again; catching up", st.host,
                 st.port);
    else
        log_info(MODULE, "shared state in redis://%s:%d/%d", st.host, st.port, st.db);
    st.logged_down = 0;
    for (int i = 0; i < st.n_connect; i++)
        st.connect_hooks[i]();
}

static void disconnected(void *ud)
{
    (void)ud;
    char err[192];
    if (!st.on)
        return;
    pthread_mutex_lock(&st.mu);
    st.up = 0;
    if (!st.down_since)
        st.down_since = (int64_t)time(NULL) * 1000;
    snprintf(err, sizeof(err), "%s", st.last_err);
    pthread_mutex_unlock(&st.mu);
    if (st.logged_down)
        return;
    st.logged_down = 1;
    log_warn(MODULE,
             "the state store redis://%s:%d is unreachable (%s): serving from the last known "
             "state, catching up when it is back",
             st.host, st.port, err[0] ? err : "?");
}

static void message(void *ud)
{
    json_t *msg = ud;
    const char *topic = json_string_value(json_object_get(msg, "topic"));
    const char *origin = json_string_value(json_object_get(msg, "origin"));
    if (st.on && topic && origin && strcmp(origin, st.origin) != 0)
        for (int i = 0; i < st.n_hooks; i++)
            if (strcmp(st.hooks[i].topic, topic) == 0)
                st.hooks[i].fn(msg);
    json_decref(msg);
}

static int stopping(void)
{
    pthread_mutex_lock(&st.mu);
    int s = st.stopping;
    pthread_mutex_unlock(&st.mu);
    return s;
}

/* Reads what arrived on c; posts each message. -1 when the connection is gone. Any reply
 * (a message or a keepalive's pong) proves the link alive: *seen gets the time. */
static int read_messages(redisContext *c, int64_t *seen)
{
    if (redisBufferRead(c) != REDIS_OK)
        return -1;
    void *reply;
    while (redisReaderGetReply(c->reader, &reply) == REDIS_OK && reply) {
        redisReply *r = reply;
        *seen = now_ms();
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
            r->element[2]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[0]->str, "message") == 0) {
            json_t *msg = json_loadb(r->element[2]->str, r->element[2]->len, 0, NULL);
            if (json_is_object(msg) && !stopping())
                lp_post(message, msg);
            else
                json_decref(msg);
        }
        freeReplyObject(r);
    }
    return c->err ? -1 : 0;
}

/* Holds the subscription until it fails, goes silent or the gateway stops: -1 when silent.
 * Silence is counted from a PING that went unanswered, never from the last reply: a thread
 * the machine did not run for seconds asked nothing meanwhile, so Redis owed it nothing. The
 * clock is read before poll: a reply that came while this thread waited for the CPU is seen
 * by poll, not counted as silence. */
static int watch(redisContext *c)
{
    int64_t seen = now_ms(), pinged = seen; /* pinged > seen: a PING awaits its reply */
    for (;;) {
        int64_t before = now_ms();
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        int n = poll(&p, 1, POLL_MS);
        if (stopping() || (n > 0 && read_messages(c, &seen) < 0) || (n < 0 && errno != EINTR))
            return 0;
        if (n == 0 && pinged > seen && before - pinged > PING_DEAD_MS)
            return -1;
        int64_t now = now_ms();
        if (pinged <= seen && now - seen >= PING_MS) { /* idle: ask for a pong */
            int done = 0;
            if (redisAppendCommand(c, "PING") != REDIS_OK || redisBufferWrite(c, &done) != REDIS_OK)
                return 0;
            pinged = now;
        }
    }
}

static void *subscriber_main(void *arg)
{
    (void)arg;
    int reported_down = 0;
    while (!stopping()) {
        redisContext *c = connect_one();
        redisReply *r = c ? redisCommand(c, "SUBSCRIBE %s", st.channel) : NULL;
        if (!ok_reply(r)) {
            if (c)
                note_error("subscribe", c);
            if (r)
                freeReplyObject(r);
            if (c)
                redisFree(c);
            if (!reported_down && !stopping())
                lp_post(disconnected, NULL);
            reported_down = 1;
            struct timespec ts = {0, RETRY_MS * 1000000L};
            nanosleep(&ts, NULL);
            continue;
        }
        freeReplyObject(r);
        reported_down = 0;
        if (!stopping())
            lp_post(connected, NULL);
        if (watch(c) < 0 && !stopping())
            log_warn(MODULE, "the state store stopped answering its keepalive within %d ms",
                     PING_DEAD_MS);
        if (!stopping()) {
            note_error("subscription", c);
            lp_post(disconnected, NULL);
            reported_down = 1;
        }
        redisFree(c);
    }
    return NULL;
}

/* ---- the loop's API ------------------------------------------------------------------------ */

int state_init(const char *url)
{
    if (!url || !*url || strcmp(url, "files") == 0)
        return 0;
    if (parse_url(url) < 0) {
        log_error(MODULE,
                  "CODEMCP_STATE must be redis://[:password@]host[:port][/db] (or unset for "
                  "files)");
        return -1;
    }
    snprintf(st.channel, sizeof(st.channel), "codemcp:%d:events", st.db);
    if (random_hex(st.origin, 8) < 0)
        return -1;
    st.on = 1;
    if (pthread_create(&st.writer, NULL, writer_main, NULL) != 0)
        return -1;
    if (pthread_create(&st.subscriber, NULL, subscriber_main, NULL) != 0) {
        state_stop();
        return -1;
    }
    st.threads = 2;
    return 0;
}

int state_enabled(void)
{
    return st.on;
}

int state_store_ok(char *why, size_t n)
{
    pthread_mutex_lock(&st.mu);
    int ok = !st.on || st.up;
    if (!why || !n)
        ;
    else if (ok)
        snprintf(why, n, st.on ? "state store reachable" : "state in local files");
    else
        snprintf(
            why, n, "state store redis://%s:%d unreachable for %llds (%s)", st.host, st.port,
            (long long)(st.down_since ? ((int64_t)time(NULL) * 1000 - st.down_since) / 1000 : 0),
            st.last_err[0] ? st.last_err : "not connected yet");
    pthread_mutex_unlock(&st.mu);
    return ok;
}

void state_stop(void)
{
    if (!st.on)
        return;
    for (int i = 0; i < st.n_stop; i++) /* their last writes, run below within the deadline */
        st.stop_hooks[i]();
    pthread_mutex_lock(&st.mu);
    st.stopping = 1;
    pthread_cond_broadcast(&st.cv);
    pthread_mutex_unlock(&st.mu);
    pthread_join(st.writer, NULL);
    if (st.threads == 2)
        pthread_join(st.subscriber, NULL);
    st.threads = 0;
    st.on = 0;
    for (struct delivery *d = late, *n; d; d = n) { /* the loop has stopped: run them here */
        n = d->next;
        deliver(d);
    }
    late = NULL;
}

const char *state_key(char *buf, size_t n, const char *suffix)
{
    snprintf(buf, n, "codemcp:%s", suffix);
    return buf;
}

int state_publish(const char *topic, json_t *msg)
{
    json_t *m = json_copy(msg);
    json_object_set_new(m, "topic", json_string(topic));
    json_object_set_new(m, "origin", json_string(st.origin));
    char *text = json_dumps(m, JSON_COMPACT);
    json_decref(m);
    if (!text)
        return -1;
    const char *argv[] = {"PUBLISH", st.channel, text};
    int rc = state_cmd(NULL, NULL, 3, argv, NULL);
    free(text);
    return rc;
}

void state_on_message(const char *topic, void (*fn)(json_t *msg))
{
    if (st.n_hooks == MAX_HOOKS)
        abort(); /* a fixed set of owners registers at init */
    snprintf(st.hooks[st.n_hooks].topic, sizeof(st.hooks[0].topic), "%s", topic);
    st.hooks[st.n_hooks++].fn = fn;
}

void state_on_stop(void (*fn)(void))
{
    if (st.n_stop == MAX_HOOKS)
        abort();
    st.stop_hooks[st.n_stop++] = fn;
}

void state_on_connect(void (*fn)(void))
{
    if (st.n_connect == MAX_HOOKS)
        abort();
    st.connect_hooks[st.n_connect++] = fn;
}

/* ---- blocking connections for helper threads ------------------------------------------------ */

struct state_conn {
    redisContext *c;
};

struct state_conn *state_conn_open(void)
{
    if (!st.on)
        return NULL;
    redisContext *c = connect_one();
    if (!c)
        return NULL;
    struct state_conn *sc = xcalloc(1, sizeof(*sc));
    sc->c = c;
    return sc;
}

json_t *state_conn_cmd(struct state_conn *c, int argc, const char **argv, const size_t *lens)
{
    if (!c || !c->c)
        return NULL;
    redisReply *r = redisCommandArgv(c->c, argc, argv, lens);
    if (!r) {
        note_error("command", c->c);
        redisFree(c->c);
        c->c = NULL;
        return NULL;
    }
    json_t *j = to_json(r);
    freeReplyObject(r);
    return j;
}

int state_lock_take(struct state_conn *c, const char *key, const char *token, long ttl_ms)
{
    char ttl[32];
    snprintf(ttl, sizeof(ttl), "%ld", ttl_ms);
    const char *argv[] = {"SET", key, token, "NX", "PX", ttl};
    json_t *r = state_conn_cmd(c, 6, argv, NULL);
    int rc = !r || json_is_object(r) ? -1 : json_is_string(r) ? 1 : 0;
    json_decref(r);
    return rc;
}

void state_lock_release(struct state_conn *c, const char *key, const char *token)
{
    static const char script[] =
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
        "return 0";
    const char *argv[] = {"EVAL", script, "1", key, token};
    json_decref(state_conn_cmd(c, 5, argv, NULL));
}

void state_conn_close(struct state_conn *c)
{
    if (!c)
        return;
    if (c->c)
        redisFree(c->c);
    free(c);
}
