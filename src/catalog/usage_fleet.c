/* usage_fleet — call counts summed across a fleet of replicas in Redis (state.h), when
 * CODEMCP_STATE is set: each replica counts locally (no Redis per call), adds what it counted
 * to the hash codemcp:usage:s<scope> every FLUSH_MS (HINCRBY), reads the sum back into its own
 * counts and tells the others to read it too. A scope is a principal ("" when learning is
 * shared), so one principal's order never tells what another calls. Counts Redis did not take
 * (away, or lost on the way) are kept and added at the next flush. Loop thread only. */
#include "usage.h"

#include "loop.h"
#include "state.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define FLUSH_MS 2000

static json_t *unsent; /* scope -> {fn: n} counted here and not yet in Redis */
static struct lp_timer flush_timer;
static int armed;

static void key_of(char *buf, size_t n, const char *scope)
{
    char s[200];
    snprintf(s, sizeof(s), "usage:s%s", scope);
    state_key(buf, n, s);
}

static void add(const char *scope, const char *fn, json_int_t n)
{
    json_t *c = json_object_get(unsent, scope);
    if (!c) {
        c = json_object();
        json_object_set_new(unsent, scope, c);
    }
    json_t *v = json_object_get(c, fn);
    if (v)
        json_integer_set(v, json_integer_value(v) + n);
    else
        json_object_set_new(c, fn, json_integer(n));
}

static void flush(void *ud);

static void arm(void)
{
    if (!armed) {
        armed = 1;
        lp_timer_start(&flush_timer, FLUSH_MS, flush, NULL);
    }
}

static void on_note(const char *scope, const char *fn)
{
    add(scope, fn, 1);
    arm();
}

/* One increment's reply: lost on the way, it is added again next time. */
struct incr {
    char *scope, *fn;
    json_int_t n;
};

static void on_incr(void *ud, json_t *reply)
{
    struct incr *i = ud;
    if (!reply || json_is_object(reply)) {
        add(i->scope, i->fn, i->n);
        if (state_enabled()) /* not at exit (state_stop answers what was left) */
            arm();
    }
    json_decref(reply);
    free(i->scope);
    free(i->fn);
    free(i);
}

static void on_sum(void *ud, json_t *reply)
{
    char *scope = ud;
    json_t *counts = json_object();
    for (size_t i = 0; i + 1 < json_array_size(reply); i += 2) {
        const char *fn = json_string_value(json_array_get(reply, i));
        const char *n = json_string_value(json_array_get(reply, i + 1));
        if (fn && n)
            json_object_set_new(counts, fn, json_integer(strtoll(n, NULL, 10)));
    }
    /* what was counted here since is not in the sum yet */
    const char *fn;
    json_t *v;
    json_object_foreach(json_object_get(unsent, scope), fn, v)
    {
        json_object_set_new(
            counts, fn,
            json_integer(json_integer_value(json_object_get(counts, fn)) + json_integer_value(v)));
    }
    if (json_is_array(reply))
        use_set_counts(scope, counts);
    json_decref(counts);
    json_decref(reply);
    free(scope);
}

static void read_sum(const char *scope)
{
    char key[256];
    key_of(key, sizeof(key), scope);
    const char *argv[] = {"HGETALL", key};
    char *ud = xstrdup(scope);
    if (state_cmd(on_sum, ud, 2, argv, NULL) < 0)
        free(ud);
}

static void flush(void *ud)
{
    (void)ud;
    armed = 0;
    json_t *left = json_object();
    const char *scope, *fn;
    json_t *c, *v;
    json_object_foreach(unsent, scope, c)
    {
        char key[256], n[32];
        key_of(key, sizeof(key), scope);
        json_object_foreach(c, fn, v)
        {
            snprintf(n, sizeof(n), "%lld", (long long)json_integer_value(v));
            struct incr *i = xcalloc(1, sizeof(*i));
            *i = (struct incr){xstrdup(scope), xstrdup(fn), json_integer_value(v)};
            const char *argv[] = {"HINCRBY", key, fn, n};
            if (state_cmd(on_incr, i, 4, argv, NULL) < 0) {
                free(i->scope);
                free(i->fn);
                free(i);
                json_t *lc = json_object_get(left, scope);
                if (!lc)
                    json_object_set_new(left, scope, lc = json_object());
                json_object_set(lc, fn, v);
            }
        }
        if (!json_object_get(left, scope)) {
            read_sum(scope);
            json_t *msg = json_pack("{s:s}", "scope", scope);
            state_publish("usage", msg);
            json_decref(msg);
        }
    }
    json_decref(unsent);
    unsent = left; /* Redis away: kept for the next flush (on reconnect) */
}

static void on_message(json_t *msg)
{
    const char *scope = json_string_value(json_object_get(msg, "scope"));
    if (scope && strlen(scope) < 128)
        read_sum(scope);
}

static void on_connect(void)
{
    flush(NULL);
}

static void on_stop(void) /* what was counted since the last flush */
{
    if (armed)
        lp_timer_stop(&flush_timer);
    flush(NULL);
}

void use_fleet_init(void)
{
    if (!state_enabled())
        return;
    unsent = json_object();
    use_set_fleet_hook(on_note);
    state_on_message("usage", on_message);
    state_on_connect(on_connect);
    state_on_stop(on_stop);
}
