/* state_lease — a Redis lock that outlives a long holder but not a dead one (state.h).
 *
 * A lock with a fixed expiry must outlast the longest thing done under it (an OAuth refresh
 * waits up to 30 s for its token endpoint), so a holder that dies leaves the others waiting
 * that long. Here the expiry is short and a renewer thread pushes it forward while the
 * holder's process lives: the lock outlives a slow holder, and is free within one lease
 * after its process is killed. The renewer has its own connection (hiredis contexts are not
 * shared between threads) and only extends a lock that still holds its token. */
#include "state.h"

#include "log.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MODULE "state"

struct state_lease {
    char key[700], token[80];
    long lease_ms;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
};

/* 1 renewed, 0 no longer ours, -1 error. */
static int renew(struct state_conn *c, const struct state_lease *l)
{
    static const char script[] =
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], "
        "ARGV[2]) end return 0";
    char ttl[32];
    snprintf(ttl, sizeof(ttl), "%ld", l->lease_ms);
    const char *argv[] = {"EVAL", script, "1", l->key, l->token, ttl};
    json_t *r = state_conn_cmd(c, 6, argv, NULL);
    int rc = !r || !json_is_integer(r) ? -1 : json_integer_value(r) == 1;
    json_decref(r);
    return rc;
}

static void *renewer_main(void *arg)
{
    struct state_lease *l = arg;
    struct state_conn *c = NULL;
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        struct timespec at = ts_after_ms(CLOCK_MONOTONIC, l->lease_ms / 3);
        pthread_cond_timedwait(&l->cv, &l->mu, &at);
        if (l->stop)
            break;
        pthread_mutex_unlock(&l->mu);
        if (!c)
            c = state_conn_open();
        int rc = c ? renew(c, l) : -1;
        if (rc < 0) { /* a new connection next time: this one may be broken */
            state_conn_close(c);
            c = NULL;
        }
        pthread_mutex_lock(&l->mu);
        if (rc == 0) {
            log_warn(MODULE, "a lock lease ran out before its holder finished");
            break;
        }
    }
    pthread_mutex_unlock(&l->mu);
    state_conn_close(c);
    return NULL;
}

int state_lease_take(struct state_conn *c, const char *key, const char *token, long lease_ms,
                     struct state_lease **out)
{
    *out = NULL;
    if (strlen(key) >= sizeof(((struct state_lease *)0)->key) ||
        strlen(token) >= sizeof(((struct state_lease *)0)->token))
        return -1;
    int t = state_lock_take(c, key, token, lease_ms);
    if (t != 1)
        return t;
    struct state_lease *l = xcalloc(1, sizeof(*l));
    snprintf(l->key, sizeof(l->key), "%s", key);
    snprintf(l->token, sizeof(l->token), "%s", token);
    l->lease_ms = lease_ms;
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&l->thread, NULL, renewer_main, l) != 0) {
        /* without a renewer the lease would lapse under a slow holder: do not hold it */
        state_lock_release(c, key, token);
        pthread_cond_destroy(&l->cv);
        pthread_mutex_destroy(&l->mu);
        free(l);
        return -1;
    }
    *out = l;
    return 1;
}

void state_lease_end(struct state_conn *c, struct state_lease *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    state_lock_release(c, l->key, l->token);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}
