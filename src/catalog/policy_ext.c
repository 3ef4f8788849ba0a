/* policy_ext — the external policy engine, opt-in with CODEMCP_AUTHZ_URL: a call the local
 * rules allow is also put to the engine in OPA's Data API form, so a real OPA server works
 * unchanged:
 *
 *   POST CODEMCP_AUTHZ_URL  {"input": {"principal", "server", "tool", "mutation", "dry_run",
 *                                      "arguments", "run", "session"}}
 *   200                     {"result": true | false | {"allow": bool, "reason": "...",
 *                                                      "cache_ttl_ms": n}}
 *
 * Anything else denies: no answer within CODEMCP_AUTHZ_TIMEOUT_MS, no connection, an HTTP
 * status other than 200, a body that is not that shape (OPA answers {} for an undefined
 * decision). The transfer runs on curl_thread.c's thread, never on the loop: the call waits
 * (nothing is sent upstream) until the answer comes back through lp_post. When the answer
 * carries cache_ttl_ms, it is kept for that long (at most AUTHZ_CACHE_MAX_MS) by (principal,
 * server, tool, read/write, dry run, the exact argument bytes), in a table of AUTHZ_CACHE_N
 * entries (the oldest is replaced). Loop thread only. */
#include "policy_int.h"
#include "curl_thread.h"
#include "jsonfast.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD                "policy"
#define AUTHZ_CACHE_N      1024
#define AUTHZ_CACHE_MAX_MS (10 * 60 * 1000)
#define AUTHZ_KEY_MAX      8192 /* longer calls are asked every time */
#define AUTHZ_MAX_BODY     65536
/* Questions waiting for the engine: each holds its call (arguments included) until the
 * answer or the timeout, so a program that starts calls faster than the engine answers gets
 * refusals past its principal's share, not a gateway that holds them all; and one principal's
 * flood leaves the others their share (all principals together: AUTHZ_MAX_ASKING). */
#define AUTHZ_MAX_ASKING_PER_PRINCIPAL 256
#define AUTHZ_MAX_ASKING               1024

struct cached {
    uint64_t hash;
    char *key;
    size_t key_len;
    int64_t expires_ms, stored_ms;
    enum policy_effect effect;
    char why[sizeof(((struct policy_decision *)0)->why)];
};

struct asking {
    uint64_t xfer;
    char *principal;
    policy_done_fn done;
    void *ud;
    enum policy_effect local; /* ALLOW or DRY_RUN: what the rules said */
    char *key;                /* NULL: not cacheable */
    size_t key_len;
    struct asking *next;
};

static const char *url;
static long timeout_ms;
static struct cached cache[AUTHZ_CACHE_N];
static struct asking *asking;
static size_t n_asking;

int policy_engine_init(const char *engine_url, long engine_timeout_ms)
{
    url = engine_url;
    if (url && !*url)
        url = NULL;
    timeout_ms = engine_timeout_ms; /* settings.def: its default, never below 1 */
    /* The connection cache keeps one for every question that may wait at once: a smaller one
     * closed the connections a burst of questions opened as it ended, for the next to open
     * them again. */
    if (url && ct_start(AUTHZ_MAX_ASKING) < 0) {
        log_error(MOD, "CODEMCP_AUTHZ_URL is set but HTTP cannot start: every call is denied");
        return -1;
    }
    if (url)
        log_info(MOD, "every call the rules allow is also put to %s (timeout %ld ms)", url,
                 timeout_ms);
    return 0;
}

/* principal NUL server NUL tool NUL flags NUL args: the cache key (NULL when too long). */
static char *cache_key(const struct policy_call *c, const char *principal, size_t *len)
{
    size_t n = strlen(principal) + strlen(c->server) + strlen(c->tool) + c->args_len + 8;
    if (n > AUTHZ_KEY_MAX)
        return NULL;
    struct buf b = {0};
    buf_append(&b, principal, strlen(principal) + 1);
    buf_append(&b, c->server, strlen(c->server) + 1);
    buf_append(&b, c->tool, strlen(c->tool) + 1);
    char flags[3] = {c->mutation ? 'w' : 'r', c->dry_run ? 'd' : 'x', 0};
    buf_append(&b, flags, 3);
    if (c->args)
        buf_append(&b, c->args, c->args_len);
    *len = b.len;
    return buf_steal(&b);
}

static struct cached *cache_find(const char *key, size_t len)
{
    uint64_t h = fnv1a(key, len, 0);
    int64_t now = now_ms();
    for (size_t i = 0; i < AUTHZ_CACHE_N; i++) {
        struct cached *e = &cache[i];
        if (e->key && e->hash == h && e->key_len == len && e->expires_ms > now &&
            memcmp(e->key, key, len) == 0)
            return e;
    }
    return NULL;
}

static void cache_put(const char *key, size_t len, int64_t ttl, const struct policy_decision *d)
{
    struct cached *slot = &cache[0];
    int64_t now = now_ms();
    for (size_t i = 0; i < AUTHZ_CACHE_N; i++) {
        struct cached *e = &cache[i];
        if (!e->key || e->expires_ms <= now) {
            slot = e;
            break;
        }
        if (e->stored_ms < slot->stored_ms)
            slot = e;
    }
    free(slot->key);
    *slot = (struct cached){fnv1a(key, len, 0),
                            xmalloc(len),
                            len,
                            now + (ttl < AUTHZ_CACHE_MAX_MS ? ttl : AUTHZ_CACHE_MAX_MS),
                            now,
                            d->effect,
                            ""};
    memcpy(slot->key, key, len); /* the key holds NULs: not a string */
    snprintf(slot->why, sizeof(slot->why), "%s", d->why);
}

/* The engine's answer into d: the effect, and how long it may be kept (0: not at all). */
static int64_t read_answer(const struct ct_event *ev, enum policy_effect local,
                           struct policy_decision *d)
{
    d->effect = POLICY_DENY;
    snprintf(d->rule, sizeof(d->rule), "external engine");
    if (ev->curl_code) {
        snprintf(d->why, sizeof(d->why),
                 "the authorization engine did not answer (%s): denied (fail-closed)", ev->error);
        return 0;
    }
    if (ev->status != 200) {
        snprintf(d->why, sizeof(d->why),
                 "the authorization engine answered HTTP %ld: denied (fail-closed)", ev->status);
        return 0;
    }
    json_t *doc = ev->body ? json_loadb(ev->body, ev->body_len, 0, NULL) : NULL;
    json_t *res = json_object_get(doc, "result");
    json_t *allow = json_is_object(res) ? json_object_get(res, "allow") : res;
    const char *reason = json_string_value(json_object_get(res, "reason"));
    json_t *ttl = json_object_get(res, "cache_ttl_ms");
    int64_t keep =
        json_is_integer(ttl) && json_integer_value(ttl) > 0 ? json_integer_value(ttl) : 0;
    if (!json_is_boolean(allow) ||
        (json_is_object(res) && json_object_get(res, "reason") && !reason)) {
        snprintf(d->why, sizeof(d->why),
                 "the authorization engine's answer is not {\"result\": true|false|{\"allow\": "
                 "bool, \"reason\": \"...\"}}%s: denied (fail-closed)",
                 res ? "" : " (no result: the decision is undefined)");
        keep = 0;
    } else if (json_is_true(allow)) {
        d->effect = local;
        snprintf(d->why, sizeof(d->why), "allowed by the authorization engine%s%s",
                 reason ? ": " : "", reason ? reason : "");
    } else
        snprintf(d->why, sizeof(d->why), "%s (the authorization engine)",
                 reason ? reason : "denied by the authorization engine");
    json_decref(doc);
    return keep;
}

static void on_answer(const struct ct_event *ev)
{
    if (ev->kind != CT_DONE)
        return;
    struct asking **pp = &asking, *a;
    while ((a = *pp) && a->xfer != ev->xfer)
        pp = &a->next;
    if (!a)
        return;
    *pp = a->next;
    n_asking--;
    struct policy_decision d = {0};
    int64_t keep = read_answer(ev, a->local, &d);
    if (keep && a->key)
        cache_put(a->key, a->key_len, keep, &d);
    log_debug(MOD, "engine: %s", d.why);
    a->done(a->ud, &d);
    free(a->principal);
    free(a->key);
    free(a);
}

/* Questions of principal waiting, or all principals' when they are too few to fill its share
 * (then an upper bound that passes: the list is walked under pressure, not on every call). */
static size_t asking_of(const char *principal)
{
    if (n_asking < AUTHZ_MAX_ASKING_PER_PRINCIPAL)
        return n_asking;
    size_t n = 0;
    for (const struct asking *a = asking; a; a = a->next)
        n += strcmp(a->principal, principal) == 0;
    return n;
}

/* The question, or NULL when the arguments cannot be read back (then the call is denied:
 * the engine must never judge a call on fewer arguments than it has). Integers past 64 bits
 * stay digits (jsonfast.h), as the upstream will get them. */
static char *request_body(const struct policy_call *c, const char *principal, const char *run,
                          uint64_t session)
{
    json_t *args =
        c->args ? jf_loadb(c->args, c->args_len, JF_ALLOW_NUL | JF_BIG_INTEGERS, NULL) : NULL;
    if (c->args && !args)
        return NULL;
    json_t *in = json_pack("{s:s, s:s, s:s, s:b, s:b, s:o, s:s?, s:I}", "principal", principal,
                           "server", c->server, "tool", c->tool, "mutation", c->mutation, "dry_run",
                           c->dry_run, "arguments", args ? args : json_object(), "run", run,
                           "session", (json_int_t)session);
    json_t *doc = json_pack("{s:o}", "input", in);
    char *text = jf_dumps(doc);
    json_decref(doc);
    return text;
}

int policy_engine_ask(const struct policy_call *c, const char *run, uint64_t session,
                      struct policy_decision *d, policy_done_fn done, void *ud)
{
    if (!url || d->effect == POLICY_DENY)
        return 1;
    const char *principal = c->principal && *c->principal ? c->principal : "local";
    size_t key_len = 0;
    char *key = cache_key(c, principal, &key_len);
    struct cached *hit = key ? cache_find(key, key_len) : NULL;
    if (hit) {
        free(key);
        enum policy_effect local = d->effect;
        d->effect = hit->effect == POLICY_DENY ? POLICY_DENY : local;
        snprintf(d->rule, sizeof(d->rule), "external engine (cached)");
        snprintf(d->why, sizeof(d->why), "%s", hit->why);
        return 1;
    }
    size_t mine = asking_of(principal);
    if (mine >= AUTHZ_MAX_ASKING_PER_PRINCIPAL || n_asking >= AUTHZ_MAX_ASKING) {
        free(key);
        d->effect = POLICY_DENY;
        snprintf(d->rule, sizeof(d->rule), "external engine");
        snprintf(d->why, sizeof(d->why),
                 "%zu calls of yours (%zu of everyone's) are already waiting for the "
                 "authorization engine, at most %d (%d): denied; wait for earlier calls before "
                 "starting more",
                 mine, n_asking, AUTHZ_MAX_ASKING_PER_PRINCIPAL, AUTHZ_MAX_ASKING);
        return 1;
    }
    char *body = request_body(c, principal, run, session);
    static const char hdrs[] = "Content-Type: application/json\0Accept: application/json";
    struct ct_request rq = {.method = "POST",
                            .url = url,
                            .headers = hdrs,
                            .headers_len = sizeof(hdrs),
                            .body = body,
                            .body_len = body ? strlen(body) : 0,
                            .connect_timeout_ms = timeout_ms,
                            .timeout_ms = timeout_ms,
                            .max_body = AUTHZ_MAX_BODY,
                            .on_event = on_answer};
    uint64_t xfer = body ? ct_submit(&rq) : 0;
    free(body);
    if (!xfer) {
        free(key);
        d->effect = POLICY_DENY;
        snprintf(d->rule, sizeof(d->rule), "external engine");
        snprintf(d->why, sizeof(d->why),
                 "the authorization engine cannot be asked: denied (fail-closed)");
        return 1;
    }
    struct asking *a = xcalloc(1, sizeof(*a));
    *a = (struct asking){xfer, xstrdup(principal), done, ud, d->effect, key, key_len, asking};
    asking = a;
    n_asking++;
    return 0;
}
