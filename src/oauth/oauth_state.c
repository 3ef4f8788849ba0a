/* oauth_state — see oauth_state.h. Everything that touches Redis or the file runs on helper
 * threads (the refresh thread, or a resync thread started from the loop); the loop only
 * starts them. Never logs an entry (they hold secrets). */
#include "oauth_state.h"

#include "log.h"
#include "oauth.h"
#include "state.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MODULE "oauth"
/* The refresh lock is a lease (state.h): renewed while its holder lives, so a replica killed
 * mid-refresh frees it within REFRESH_LEASE_MS; the others wait for a living holder for as
 * long as one token request may take (30 s, oauth_disc.c) and a lease more. */
#define REFRESH_LEASE_MS 5000L
#define WAIT_STEP_MS     150
#define WAIT_MAX_MS      (30000 + REFRESH_LEASE_MS + 2000)

/* SET KEYS[1] = ARGV[1] (and the name ARGV[2] into the set KEYS[2]) unless the stored copy is
 * as new or newer: (obtained_at, generation) compared in that order. */
static const char set_if_newer[] =
    "local cur = redis.call('GET', KEYS[1]) "
    "if cur then "
    "  local c, n = cjson.decode(cur), cjson.decode(ARGV[1]) "
    "  local co, no = tonumber(c.obtained_at) or 0, tonumber(n.obtained_at) or 0 "
    "  if co > no or (co == no and (tonumber(c.generation) or 0) >= "
    "      (tonumber(n.generation) or 0)) then return 0 end "
    "end "
    "redis.call('SET', KEYS[1], ARGV[1]) redis.call('SADD', KEYS[2], ARGV[2]) return 1";

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int running;

static int64_t num(json_t *e, const char *k)
{
    return json_integer_value(json_object_get(e, k));
}

/* a is a newer copy than b (b may be NULL). */
static int newer(json_t *a, json_t *b)
{
    if (!json_is_object(b))
        return 1;
    if (num(a, "obtained_at") != num(b, "obtained_at"))
        return num(a, "obtained_at") > num(b, "obtained_at");
    return num(a, "generation") > num(b, "generation");
}

static void key_of(char *buf, size_t n, const char *name, const char *tail)
{
    char s[600];
    snprintf(s, sizeof(s), "oauth:%s%s", name, tail);
    state_key(buf, n, s);
}

/* Redis's copy of name's entry (new reference), or NULL (none, or unreachable: *gone). */
static json_t *shared_entry(struct state_conn *c, const char *name, int *gone)
{
    char key[700];
    key_of(key, sizeof(key), name, "");
    const char *argv[] = {"GET", key};
    json_t *r = state_conn_cmd(c, 2, argv, NULL);
    *gone = !r;
    json_t *e = json_is_string(r) ? json_loads(json_string_value(r), 0, NULL) : NULL;
    json_decref(r);
    if (!json_is_object(e)) {
        json_decref(e);
        return NULL;
    }
    return e;
}

/* An entry worth sharing: one holding a token (a logged-out one, its 401's challenge recorded,
 * must not come back to the others). */
static int has_token(json_t *e)
{
    return json_object_get(e, "access_token") || json_object_get(e, "refresh_token");
}

static int share(struct state_conn *c, const char *name, json_t *e)
{
    if (!has_token(e))
        return 0;
    char key[700], names[700];
    key_of(key, sizeof(key), name, "");
    state_key(names, sizeof(names), "oauth:names");
    char *text = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS);
    const char *argv[] = {"EVAL", set_if_newer, "2", key, names, text, name};
    json_t *r = state_conn_cmd(c, 7, argv, NULL);
    if (text)
        memset(text, 0, strlen(text));
    free(text);
    int ok = r && !json_is_object(r);
    if (json_integer_value(r) == 1) {
        json_t *msg = json_pack("{s:s}", "name", name);
        state_publish("oauth", msg); /* the others import it from Redis */
        json_decref(msg);
    }
    json_decref(r);
    return ok ? 0 : -1;
}

/* ---- the file side ------------------------------------------------------------------------- */

struct merge {
    const char *name;
    json_t *shared;                     /* borrowed; may be NULL */
    int (*fn)(json_t *store, void *ud); /* NULL: only merge */
    void *ud;
    int fn_rc;
    json_t *final; /* the entry afterwards (new reference) */
};

/* Under the file's lock: a newer shared copy replaces the local entry (one for another URL
 * stays: oa_store_entry ignores mismatches, and the config decides which is right), then fn. */
static int merge_then(json_t *store, void *ud)
{
    struct merge *m = ud;
    json_t *servers = json_object_get(store, "servers");
    json_t *local = json_object_get(servers, m->name);
    const char *lu = json_string_value(json_object_get(local, "url"));
    const char *su = json_string_value(json_object_get(m->shared, "url"));
    int merged = 0;
    if (m->shared && (!local || (lu && su && strcmp(lu, su) == 0)) && newer(m->shared, local)) {
        json_object_set_new(servers, m->name, json_deep_copy(m->shared));
        merged = 1;
    }
    m->fn_rc = m->fn ? m->fn(store, m->ud) : 0;
    json_t *e = json_object_get(servers, m->name);
    m->final = e ? json_deep_copy(e) : NULL;
    return merged || m->fn_rc == 1 ? 1 : m->fn_rc;
}

static const char *access_of(json_t *e)
{
    return json_string_value(json_object_get(e, "access_token"));
}

static int live_other(json_t *e, const char *stale)
{
    const char *tok = access_of(e);
    json_t *exp = json_object_get(e, "expires_at");
    return tok && (!stale || strcmp(tok, stale) != 0) &&
           (!json_is_integer(exp) || json_integer_value(exp) > oa_now());
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int oast_update(const char *name, int (*fn)(json_t *store, void *ud), void *ud, const char *stale,
                char **why)
{
    char lock[700], token[33];
    struct state_conn *c = state_conn_open();
    json_t *shared = NULL;
    struct merge m = {.name = name};
    struct state_lease *lease = NULL;
    int rc = -1, gone = 0;
    key_of(lock, sizeof(lock), name, ":lock");
    if (!c || random_hex(token, 16) < 0)
        goto unreachable;
    for (int64_t until = now_ms() + WAIT_MAX_MS;;) {
        int t = state_lease_take(c, lock, token, REFRESH_LEASE_MS, &lease);
        if (t < 0)
            goto unreachable;
        if (t == 1)
            break;
        /* another replica refreshes: its result, once in Redis, is ours too */
        shared = shared_entry(c, name, &gone);
        if (gone)
            goto unreachable;
        if (shared && live_other(shared, stale)) {
            m.shared = shared;
            rc = oa_store_update(merge_then, &m) < 0 ? -1 : OAST_IMPORTED;
            if (rc < 0)
                *why = xstrdup("cannot write the token store");
            goto out;
        }
        json_decref(shared);
        shared = NULL;
        if (now_ms() > until) {
            *why = xstrdup("another replica holds the refresh lock");
            goto out;
        }
        pause_ms(WAIT_STEP_MS);
    }
    shared = shared_entry(c, name, &gone);
    if (gone)
        goto unreachable;
    m.shared = shared;
    m.fn = fn;
    m.ud = ud;
    if (oa_store_update(merge_then, &m) < 0) {
        *why = xstrdup("cannot write the token store");
        goto out;
    }
    rc = m.fn_rc;
    /* A refresh that Redis did not take (it went away just now) stays in the file: the
     * resync on reconnect shares it, as it is newer than Redis's copy. */
    if (m.final && newer(m.final, shared) && share(c, name, m.final) < 0)
        log_warn(MODULE,
                 "%s: the refreshed credentials are kept locally until the state store "
                 "is back",
                 name);
    goto out;
unreachable:
    *why = xstrdup("the state store is unreachable: no refresh while another replica could "
                   "spend the same refresh token");
out:
    state_lease_end(c, lease);
    state_conn_close(c);
    json_decref(shared);
    json_decref(m.final);
    return rc;
}

/* ---- resync -------------------------------------------------------------------------------- */

/* Brings name's two copies together: the newer wins, in the file or in Redis. */
static void sync_one(struct state_conn *c, const char *name)
{
    int gone = 0;
    json_t *shared = shared_entry(c, name, &gone);
    struct merge m = {.name = name, .shared = shared};
    if (!gone && oa_store_update(merge_then, &m) >= 0 && m.final && newer(m.final, shared))
        share(c, name, m.final);
    json_decref(shared);
    json_decref(m.final);
}

void oast_push(const char *name)
{
    struct state_conn *c = state_conn_open();
    if (c)
        sync_one(c, name);
    state_conn_close(c);
}

enum sync_kind {
    SYNC_ONE,          /* bring name's copies together */
    SYNC_LOGGED_OUT,   /* name's token left the file here: with no token left (a logout; the
                          401's challenge may already be recorded), from Redis too */
    SYNC_REMOVED_THERE /* another replica removed name: from the file too, unless Redis has it */
};

struct sync {
    char *name; /* NULL: every name in the file and in Redis */
    enum sync_kind kind;
};

static int drop_entry(json_t *store, void *ud)
{
    return json_object_del(json_object_get(store, "servers"), ud) == 0 ? 1 : 0;
}

/* A logout here (no token left in the entry) or there reaches every copy; 1 when it did, 0
 * when name is to be synced as usual. */
static int sync_removal(struct state_conn *c, const char *name, enum sync_kind kind)
{
    char key[700], names[100];
    key_of(key, sizeof(key), name, "");
    state_key(names, sizeof(names), "oauth:names");
    if (kind == SYNC_LOGGED_OUT) {
        json_t *store = oa_store_read();
        int gone = !has_token(json_object_get(json_object_get(store, "servers"), name));
        json_decref(store);
        if (!gone)
            return 0;
        const char *del[] = {"DEL", key};
        const char *srem[] = {"SREM", names, name};
        json_t *r = state_conn_cmd(c, 2, del, NULL);
        json_decref(state_conn_cmd(c, 3, srem, NULL));
        if (json_integer_value(r) == 1) {
            json_t *msg = json_pack("{s:s, s:b}", "name", name, "removed", 1);
            state_publish("oauth", msg);
            json_decref(msg);
        }
        json_decref(r);
        return 1;
    }
    int unreachable = 0;
    json_t *shared = shared_entry(c, name, &unreachable);
    int again = shared != NULL; /* logged in again since: sync as usual */
    json_decref(shared);
    if (again || unreachable)
        return !again;
    oa_store_update(drop_entry, (void *)name);
    return 1;
}

/* The names to resync: the one given, or every one in the file and in Redis. */
static void *sync_thread(void *ud)
{
    struct sync *job = ud;
    char *only = job->name;
    struct state_conn *c = state_conn_open();
    json_t *names = json_object();
    if (only && c && job->kind != SYNC_ONE && sync_removal(c, only, job->kind)) {
        ; /* done */
    } else if (only) {
        json_object_set_new(names, only, json_true());
    } else if (c) {
        json_t *store = oa_store_read();
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(store, "servers"), k, v)
        {
            json_object_set_new(names, k, json_true());
        }
        json_decref(store);
        char key[100];
        const char *argv[] = {"SMEMBERS", state_key(key, sizeof(key), "oauth:names")};
        json_t *r = state_conn_cmd(c, 2, argv, NULL);
        size_t i;
        json_array_foreach(json_is_array(r) ? r : NULL, i, v)
        {
            json_object_set_new(names, json_string_value(v), json_true());
        }
        json_decref(r);
    }
    const char *k;
    json_t *v;
    json_object_foreach(c ? names : NULL, k, v)
    {
        sync_one(c, k);
    }
    json_decref(names);
    state_conn_close(c);
    free(only);
    free(job);
    pthread_mutex_lock(&mu);
    running--;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void start_sync(const char *name, enum sync_kind kind)
{
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_mutex_lock(&mu);
    running++;
    pthread_mutex_unlock(&mu);
    struct sync *job = xcalloc(1, sizeof(*job));
    job->name = name ? xstrdup(name) : NULL;
    job->kind = kind;
    if (pthread_create(&t, &a, sync_thread, job) != 0) {
        free(job->name);
        free(job);
        pthread_mutex_lock(&mu);
        running--;
        pthread_mutex_unlock(&mu);
        log_warn(MODULE, "cannot start a thread to share OAuth credentials");
    }
    pthread_attr_destroy(&a);
}

void oast_file_changed(const char *name, int removed)
{
    if (state_enabled())
        start_sync(name, removed ? SYNC_LOGGED_OUT : SYNC_ONE);
}

static void on_connect(void)
{
    start_sync(NULL, SYNC_ONE);
}

static void on_message(json_t *msg)
{
    const char *name = json_string_value(json_object_get(msg, "name"));
    int removed = json_is_true(json_object_get(msg, "removed"));
    if (name && strlen(name) < 256)
        start_sync(name, removed ? SYNC_REMOVED_THERE : SYNC_ONE);
}

void oast_init(void)
{
    if (!state_enabled())
        return;
    state_on_connect(on_connect);
    state_on_message("oauth", on_message);
}

void oast_drain(int timeout_ms)
{
    struct timespec until = ts_after_ms(CLOCK_REALTIME, timeout_ms);
    pthread_mutex_lock(&mu);
    while (running > 0)
        if (pthread_cond_timedwait(&cv, &mu, &until) != 0)
            break;
    pthread_mutex_unlock(&mu);
}
