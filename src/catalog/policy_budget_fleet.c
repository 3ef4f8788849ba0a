/* policy_budget_fleet — budgets per principal counted across a fleet of replicas in Redis
 * (state.h) when CODEMCP_STATE is set, so N replicas give a principal one budget, not N.
 *
 * A window is then fixed on the wall clock (it starts at a multiple of window_s since the
 * epoch) so that every replica agrees on it, and its count lives at
 * codemcp:budget:<name length>:<name>:<c|r|p>:<window start s>:<principal>, which expires a
 * minute after the window ends. The call path never waits for Redis: a replica checks its view
 * of the total (the fleet's total Redis last told it + what it counted since), counts locally,
 * and sends what it counted with INCRBY at most SYNC_MS later, or at once when it holds a
 * SYNC_SHARE-th of the limit unsent. INCRBY answers the fleet's total, which the replica
 * publishes so that the others learn it without asking; a replica asks (GET) the first time it
 * meets a (budget, principal, window). So a principal can overshoot by what the other replicas
 * admit before they hear of it: per other replica, what it counts between two syncs (at most
 * SYNC_MS of its calls, and under limit/SYNC_SHARE plus what arrives during one round trip).
 * Redis away: each replica keeps enforcing its own view (never more than counting alone
 * allows); what it could not send is sent on reconnect, and every known total is read again.
 * A batch whose answer was lost (a command timeout on a Redis that was only slow) may still
 * have been counted, so each batch carries a random id and is counted once however often it
 * is sent (COUNT_ONCE: a marker codemcp:budget-batch:<id> that lives as long as the count).
 * Every tool call looks its counts up by key: they are indexed by a hash of the key
 * (hashchain.h), as a fleet may know up to MAX_COUNTS of them. Loop thread only. */
#include "policy_int.h"

#include "hashchain.h"
#include "loop.h"
#include "state.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SYNC_MS    1000
#define SYNC_SHARE 8
#define MAX_COUNTS 65536 /* windows known at once; more only from messages are not kept */
#define KEEP_MS    60000 /* a key outlives its window by this much (clocks a little apart) */
#define BATCH_HEX  32    /* hex characters of a batch id */

/* KEYS: the count, the batch's marker; ARGV: n, when both expire (ms since the epoch). The
 * fleet's total either way: a batch already counted is not counted again. */
static const char COUNT_ONCE[] = "if redis.call('SET', KEYS[2], '1', 'NX') then "
                                 "redis.call('PEXPIREAT', KEYS[2], ARGV[2]) "
                                 "local n = redis.call('INCRBY', KEYS[1], ARGV[1]) "
                                 "redis.call('PEXPIREAT', KEYS[1], ARGV[2]) return n end "
                                 "return tonumber(redis.call('GET', KEYS[1]) or '0')";

struct incr;

struct shared_count {
    struct hashchain_link link; /* first: a link found is the count */
    char *key;
    long shared;   /* the fleet's total as Redis last said (it may include what is in flight) */
    long inflight; /* sent, no answer yet (with the batches in resend) */
    long unsent;   /* counted here since */
    long limit;
    int64_t end_ms;      /* wall clock */
    struct incr *resend; /* batches whose answer was lost: sent again with their ids */
    struct shared_count *next;
};

struct incr {
    char *key;
    char id[BATCH_HEX + 1];
    long n;
    int64_t end_ms;
    struct incr *next; /* in its count's resend list */
};

static void incr_free(struct incr *i)
{
    free(i->key);
    free(i);
}

static struct shared_count *counts;
static size_t n_counts;
static struct hashchain by_key;
static struct lp_timer sync_timer;
static int armed;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int budget_fleet_on(void)
{
    return state_enabled();
}

static struct shared_count *find(const char *key)
{
    for (struct hashchain_link *l = hashchain_first(&by_key, hashchain_hash(key, 0)); l;
         l = l->next)
        if (strcmp(((struct shared_count *)l)->key, key) == 0)
            return (struct shared_count *)l;
    return NULL;
}

/* Forgets the windows that are over. */
static void sweep(int64_t now)
{
    for (struct shared_count **pp = &counts; *pp;) {
        struct shared_count *c = *pp;
        if (c->end_ms > now) {
            pp = &c->next;
            continue;
        }
        *pp = c->next;
        hashchain_remove(&by_key, &c->link);
        for (struct incr *i = c->resend, *n; i; i = n) {
            n = i->next;
            incr_free(i);
        }
        free(c->key);
        free(c);
        n_counts--;
    }
}

static struct shared_count *make(const char *key, int64_t end_ms)
{
    struct shared_count *c = xcalloc(1, sizeof(*c));
    c->key = xstrdup(key);
    c->end_ms = end_ms;
    hashchain_add(&by_key, &c->link, hashchain_hash(key, 0));
    c->next = counts;
    counts = c;
    n_counts++;
    return c;
}

static void learn(const char *key, long total)
{
    struct shared_count *c = find(key);
    if (c && total > c->shared)
        c->shared = total;
}

static void on_get(void *ud, json_t *reply)
{
    const char *n = json_string_value(reply);
    if (n)
        learn(ud, strtol(n, NULL, 10));
    json_decref(reply);
    free(ud);
}

static void ask(const struct shared_count *c)
{
    const char *argv[] = {"GET", c->key};
    char *ud = xstrdup(c->key);
    if (state_cmd(on_get, ud, 2, argv, NULL) < 0)
        free(ud);
}

static void arm(void);

static void on_incr(void *ud, json_t *reply)
{
    struct incr *i = ud;
    struct shared_count *c = find(i->key);
    if (c && !json_is_integer(reply)) { /* maybe not counted in Redis: sent again next time */
        i->next = c->resend;
        c->resend = i;
        if (state_enabled()) /* not at exit (state_stop answers what was left) */
            arm();
        json_decref(reply);
        return;
    }
    if (c)
        c->inflight = c->inflight > i->n ? c->inflight - i->n : 0;
    if (json_is_integer(reply)) {
        learn(i->key, (long)json_integer_value(reply));
        json_t *msg = json_pack("{s:s, s:I, s:I}", "key", i->key, "n", json_integer_value(reply),
                                "end", (json_int_t)i->end_ms);
        state_publish("budget", msg);
        json_decref(msg);
    }
    json_decref(reply);
    incr_free(i);
}

/* Sends batch i of count c; -1 when Redis is away (i stays the caller's). */
static int send_batch(const struct shared_count *c, struct incr *i)
{
    char n[32], at[32], marker[200], suffix[64];
    snprintf(n, sizeof(n), "%ld", i->n);
    snprintf(at, sizeof(at), "%lld", (long long)(c->end_ms + KEEP_MS));
    snprintf(suffix, sizeof(suffix), "budget-batch:%s", i->id);
    state_key(marker, sizeof(marker), suffix);
    const char *argv[] = {"EVAL", COUNT_ONCE, "2", c->key, marker, n, at};
    return state_cmd(on_incr, i, 7, argv, NULL);
}

static void send_unsent(struct shared_count *c)
{
    while (c->resend) {
        struct incr *i = c->resend;
        c->resend = i->next;
        if (send_batch(c, i) < 0) { /* Redis away: kept for the reconnect */
            c->resend = i;
            return;
        }
    }
    if (c->unsent <= 0)
        return;
    struct incr *i = xcalloc(1, sizeof(*i));
    *i = (struct incr){.key = xstrdup(c->key), .n = c->unsent, .end_ms = c->end_ms};
    if (random_hex(i->id, BATCH_HEX / 2) < 0 || send_batch(c, i) < 0) {
        incr_free(i); /* kept in unsent for the next sync */
        return;
    }
    c->inflight += c->unsent;
    c->unsent = 0;
}

static void sync_all(void *ud)
{
    (void)ud;
    armed = 0;
    sweep(wall_ms());
    for (struct shared_count *c = counts; c; c = c->next)
        send_unsent(c);
}

static void arm(void)
{
    if (!armed) {
        armed = 1;
        lp_timer_start(&sync_timer, SYNC_MS, sync_all, NULL);
    }
}

/* The count of budget's slot for principal in the current window, made (and asked of Redis)
 * the first time; *end_ms: when the window ends (wall clock). */
static struct shared_count *count_of(const char *budget, char slot, long window_s,
                                     const char *principal, int64_t *end_ms)
{
    int64_t now = wall_ms(), w = (int64_t)window_s * 1000, start = now / w * w;
    char suffix[700], key[760];
    snprintf(suffix, sizeof(suffix), "budget:%zu:%s:%c:%lld:%s", strlen(budget), budget, slot,
             (long long)(start / 1000), principal);
    state_key(key, sizeof(key), suffix);
    *end_ms = start + w;
    struct shared_count *c = find(key);
    if (c)
        return c;
    sweep(now);
    c = make(key, start + w);
    ask(c);
    return c;
}

long budget_fleet_used(const char *budget, char slot, long window_s, const char *principal,
                       int64_t *left_ms)
{
    int64_t end;
    struct shared_count *c = count_of(budget, slot, window_s, principal, &end);
    *left_ms = end - wall_ms();
    return c->shared + c->inflight + c->unsent;
}

void budget_fleet_add(const char *budget, char slot, long window_s, const char *principal, long n,
                      long limit)
{
    if (n <= 0)
        return;
    int64_t end;
    struct shared_count *c = count_of(budget, slot, window_s, principal, &end);
    c->unsent += n;
    c->limit = limit;
    if (c->unsent * SYNC_SHARE >= limit)
        send_unsent(c);
    if (c->unsent)
        arm();
}

/* Another replica's total: kept for a window not seen here yet too, so that a principal's
 * first call here already knows it. */
static void on_message(json_t *msg)
{
    const char *key = json_string_value(json_object_get(msg, "key"));
    json_t *n = json_object_get(msg, "n"), *end = json_object_get(msg, "end");
    char prefix[64];
    state_key(prefix, sizeof(prefix), "budget:");
    if (!key || strncmp(key, prefix, strlen(prefix)) != 0 || strlen(key) >= 760 ||
        !json_is_integer(n) || !json_is_integer(end))
        return;
    int64_t now = wall_ms();
    if (!find(key) && json_integer_value(end) > now && n_counts < MAX_COUNTS)
        make(key, json_integer_value(end));
    learn(key, (long)json_integer_value(n));
}

static void on_connect(void) /* sends what was counted meanwhile, reads what the others did */
{
    sync_all(NULL);
    for (struct shared_count *c = counts; c; c = c->next)
        ask(c);
}

static void on_stop(void)
{
    if (armed)
        lp_timer_stop(&sync_timer);
    sync_all(NULL);
}

void budget_fleet_init(void)
{
    if (!state_enabled())
        return;
    state_on_message("budget", on_message);
    state_on_connect(on_connect);
    state_on_stop(on_stop);
}
