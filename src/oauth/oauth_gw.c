/* oauth_gw — see oauth_gw.h.
 *
 * The store is read on the loop (a small local file, read only when its stat changes, at
 * most once a second); every HTTP request (refresh, client credentials) runs on a detached
 * helper thread holding the store's lock, which makes refresh single-flight per credential
 * across threads and processes: the loser of the race rereads and finds the winner's token
 * instead of spending the (rotated) refresh token again. A failed refresh keeps the entry
 * unless the server clearly rejected the grant (invalid_grant / invalid_client). With a state
 * store (CODEMCP_STATE) the refresh also holds the fleet's lock and shares its result
 * (oauth_state.h); the file stays what this module reads. */
#include "oauth_gw.h"

#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "oauth.h"
#include "oauth_state.h"
#include "state.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#define WATCH_MS          1000
#define REFRESH_AHEAD_S   60
#define STEP_UP_LIMIT     3 /* re-authorizations for a scope already asked for */
#define REFRESH_MAX_TRIES 2 /* refreshes in a row that the server still answers with 401 */

struct gw_server {
    char *name;
    int in_flight;
    int tries;       /* refreshes answered by another 401 (reset after a minute) */
    int64_t last_ms; /* when the last refresh started */
    char *handed;    /* the token last put into a request */
    int changed;     /* a change to report from the loop: 1 new token, 2 removed */
    struct gw_server *next;
};

/* Refresh threads still running; at exit the gateway waits for them (oagw_drain) so that a
 * rotated refresh token is stored, not lost with the process. */
static pthread_mutex_t threads_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t threads_cv = PTHREAD_COND_INITIALIZER;
static int threads_running, draining;

static struct gw_server *servers;
static json_t *cache; /* the store as last read */
static struct stat cache_st;
static int64_t cache_checked_ms;
static int watching;
static struct lp_timer watch_timer;
static oagw_reconnect_fn reconnect_fn;
static struct lp_deferred report_later;

void oagw_set_reconnect(oagw_reconnect_fn fn)
{
    reconnect_fn = fn;
}

static struct gw_server *server(const char *name)
{
    for (struct gw_server *g = servers; g; g = g->next)
        if (strcmp(g->name, name) == 0)
            return g;
    struct gw_server *g = xcalloc(1, sizeof(*g));
    g->name = xstrdup(name);
    g->next = servers;
    servers = g;
    return g;
}

static const char *token_of(json_t *store, const char *name)
{
    json_t *e = json_object_get(json_object_get(store, "servers"), name);
    return json_string_value(json_object_get(e, "access_token"));
}

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Seconds before expiry at which a token is refreshed: a minute, or a third of its life for
 * short-lived tokens. */
static int64_t ahead_s(json_t *e)
{
    json_t *exp = json_object_get(e, "expires_at"), *got = json_object_get(e, "obtained_at");
    int64_t life = json_is_integer(exp) && json_is_integer(got)
                       ? json_integer_value(exp) - json_integer_value(got)
                       : 0;
    return life > 0 && life / 3 < REFRESH_AHEAD_S ? life / 3 : REFRESH_AHEAD_S;
}

/* The entry's token expires (or expired) within the refresh window. */
static int due(json_t *e)
{
    json_t *exp = json_object_get(e, "expires_at");
    return json_is_integer(exp) && json_integer_value(exp) - oa_now() <= ahead_s(e);
}

/* The changes reload() noticed, told to the transport from the loop: reload runs inside the
 * transport's own calls (oagw_header while it builds a request, oagw_denied while it handles
 * a 401), where acting on a change could free what that call is using. */
static void report_changes(void *ud)
{
    (void)ud;
    for (struct gw_server *g = servers; g; g = g->next) {
        int c = g->changed;
        g->changed = 0;
        if (c && !g->in_flight && reconnect_fn)
            reconnect_fn(g->name, c == 2);
    }
}

/* Rereads the store when it changed on disk; servers whose token changed (a new one:
 * reconnect if it was down; none any more: disconnect) are reported from the loop. */
static void reload(int force)
{
    char path[4200];
    struct stat st;
    memset(&st, 0, sizeof(st));
    if (!oa_store_path(path, sizeof(path)))
        return;
    int exists = stat(path, &st) == 0;
    if (!force && cache && st.st_ino == cache_st.st_ino && st.st_size == cache_st.st_size &&
        st.st_mtim.tv_sec == cache_st.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == cache_st.st_mtim.tv_nsec)
        return;
    if (!exists)
        memset(&st, 0, sizeof(st));
    json_t *fresh = oa_store_read(), *old = cache;
    cache = fresh;
    cache_st = st;
    if (!old)
        return;
    for (struct gw_server *g = servers; g; g = g->next) {
        const char *was = token_of(old, g->name), *now = token_of(fresh, g->name);
        if (same(was, now) || g->in_flight)
            continue;
        log_info("oauth", "%s: stored credentials %s", g->name, now ? "changed" : "removed");
        oast_file_changed(g->name, !now); /* `codemcp auth`/`logout` here: the fleet too */
        g->tries = 0;
        g->changed = now ? 1 : 2;
        lp_defer(&report_later, report_changes, NULL);
    }
    json_decref(old);
}

static void watch(void *ud)
{
    (void)ud;
    reload(0);
    lp_timer_start(&watch_timer, WATCH_MS, watch, NULL);
}

static void ensure_cache(void)
{
    if (!watching) {
        watching = 1;
        lp_timer_start(&watch_timer, WATCH_MS, watch, NULL);
    }
    if (!cache || now_ms() - cache_checked_ms >= WATCH_MS) {
        cache_checked_ms = now_ms();
        reload(0);
    }
}

void oagw_stop(void)
{
    if (watching)
        lp_timer_stop(&watch_timer);
    watching = 0;
    lp_defer_cancel(&report_later);
}

static int oauth_applies(const struct cfg_server *s)
{
    if (s->type != CFG_REMOTE || !s->url || json_is_false(s->oauth))
        return 0;
    for (char **h = s->headers; h && *h; h++)
        if (strncasecmp(*h, "Authorization:", 14) == 0)
            return 0;
    return 1;
}

/* ---- refresh on a helper thread ----------------------------------------------------------- */

struct refresh {
    char *name, *url;
    char *stale; /* the token that failed or is about to expire */
    int client_credentials;
    int login;             /* no stored token: a whole client-credentials login */
    struct oa_settings st; /* login: the server's settings (owned) */
    char *www_auth;        /* login: the 401's challenge */
    /* results */
    int outcome; /* 0 new token stored, 1 someone else's token found, -1 transient, -2 rejected */
    char *why;
};

static int refresh_cas(json_t *store, void *ud)
{
    struct refresh *r = ud;
    json_t *e = oa_store_entry(store, r->name, r->url);
    const char *tok = json_string_value(json_object_get(e, "access_token"));
    json_t *exp = json_object_get(e, "expires_at");
    int alive = !json_is_integer(exp) || json_integer_value(exp) > oa_now();
    if (tok && !same(tok, r->stale) && alive) {
        r->outcome = 1; /* another thread or process refreshed first: use its token */
        return 0;
    }
    const char *rt = json_string_value(json_object_get(e, "refresh_token"));
    const char *ep = json_string_value(json_object_get(e, "token_endpoint"));
    json_t *client = json_object_get(e, "client");
    if (!ep || !client || (!rt && !r->client_credentials)) {
        r->outcome = -2;
        r->why = xstrdup("no refresh token");
        return 0;
    }
    struct buf f = {0};
    char *v = oa_form_escape(rt ? rt : "");
    if (r->client_credentials && !rt)
        buf_printf(&f, "grant_type=client_credentials");
    else
        buf_printf(&f, "grant_type=refresh_token&refresh_token=%s", v);
    free(v);
    const char *res = json_string_value(json_object_get(e, "resource"));
    if (res && json_is_true(json_object_get(e, "send_resource"))) {
        v = oa_form_escape(res);
        buf_printf(&f, "&resource=%s", v);
        free(v);
    }
    const char *scope = json_string_value(json_object_get(e, "scope"));
    if (scope && r->client_credentials && !rt) {
        v = oa_form_escape(scope);
        buf_printf(&f, "&scope=%s", v);
        free(v);
    }
    buf_append(&f, "", 1);
    json_t *tr = NULL;
    char *oerr = NULL;
    int rc = oa_token_request(ep, client, f.data, &tr, &oerr, &r->why);
    memset(f.data, 0, f.len);
    buf_free(&f);
    if (rc == 0) {
        json_object_set(e, "access_token", json_object_get(tr, "access_token"));
        json_t *nrt = json_object_get(tr, "refresh_token");
        if (json_is_string(nrt))
            json_object_set(e, "refresh_token", nrt); /* rotated */
        json_t *ei = json_object_get(tr, "expires_in");
        if (json_is_integer(ei))
            json_object_set_new(e, "expires_at", json_integer(oa_now() + json_integer_value(ei)));
        else
            json_object_del(e, "expires_at");
        json_object_set_new(e, "obtained_at", json_integer(oa_now()));
        json_object_set_new(e, "generation",
                            json_integer(json_integer_value(json_object_get(e, "generation")) + 1));
        json_decref(tr);
        r->outcome = 0;
        free(oerr);
        return 1;
    }
    int rejected =
        oerr && (strcmp(oerr, "invalid_grant") == 0 || strcmp(oerr, "invalid_client") == 0 ||
                 strcmp(oerr, "unauthorized_client") == 0);
    free(oerr);
    if (!rejected) {
        r->outcome = -1; /* the network or the server failed: keep everything */
        return 0;
    }
    r->outcome = -2; /* clearly rejected: the tokens are dead, the client stays */
    json_object_del(e, "access_token");
    json_object_del(e, "refresh_token");
    json_object_del(e, "expires_at");
    json_object_set_new(e, "challenge", json_pack("{s:i}", "status", 401));
    return 1;
}

static void refresh_free(struct refresh *r)
{
    free(r->name);
    free(r->url);
    if (r->stale)
        memset(r->stale, 0, strlen(r->stale));
    free(r->stale);
    free(r->why);
    free(r->www_auth);
    oa_settings_free(&r->st);
    free(r);
}

static void refresh_done(void *ud)
{
    struct refresh *r = ud;
    struct gw_server *g = server(r->name);
    mx_oauth_refresh(r->outcome >= 0);
    if (r->outcome >= 0)
        log_info("oauth", "%s: %s", r->name,
                 r->outcome == 0 ? "access token refreshed"
                                 : "using the token another process refreshed");
    else if (r->outcome == -1 && !state_store_ok(NULL, 0)) /* the state module said so once */
        log_debug("oauth", "%s: refreshing the access token waits for the state store", r->name);
    else
        log_warn("oauth", "%s: refreshing the access token failed: %s", r->name,
                 r->why ? r->why : "?");
    reload(1); /* skips this server: still in flight */
    g->in_flight = 0;
    g->changed = 0; /* reported just below */
    if (reconnect_fn && r->outcome != -1)
        reconnect_fn(r->name, r->outcome == -2);
    else if (reconnect_fn)
        reconnect_fn(r->name, 0); /* transient: the transport retries with backoff */
    refresh_free(r);
}

static void *refresh_thread(void *ud)
{
    struct refresh *r = ud;
    if (r->login) {
        r->outcome =
            oa_login_client_credentials(r->name, r->url, &r->st, r->www_auth, &r->why) ? -2 : 0;
        if (r->outcome == 0 && state_enabled())
            oast_push(r->name);
    } else if (state_enabled()) { /* a fleet: one refresh in flight across every replica */
        int rc = oast_update(r->name, refresh_cas, r, r->stale, &r->why);
        if (rc == OAST_IMPORTED)
            r->outcome = 1;
        else if (rc < 0 && r->outcome == 0)
            r->outcome = -1;
    } else if (oa_store_update(refresh_cas, r) < 0 && r->outcome == 0 && !r->why) {
        r->outcome = -1;
        r->why = xstrdup("cannot write the token store");
    }
    pthread_mutex_lock(&threads_mu);
    int post = !draining; /* after oagw_drain the loop may be gone */
    threads_running--;
    pthread_cond_broadcast(&threads_cv);
    pthread_mutex_unlock(&threads_mu);
    if (post)
        lp_post(refresh_done, r);
    else
        refresh_free(r);
    return NULL;
}

void oagw_drain(int timeout_ms)
{
    struct timespec until = ts_after_ms(CLOCK_REALTIME, timeout_ms);
    pthread_mutex_lock(&threads_mu);
    draining = 1;
    while (threads_running > 0)
        if (pthread_cond_timedwait(&threads_cv, &threads_mu, &until) != 0)
            break;
    pthread_mutex_unlock(&threads_mu);
    oast_drain(timeout_ms);
}

static int start_thread(const struct cfg_server *s, struct gw_server *g, const char *stale,
                        int client_credentials, int login, const char *www_auth)
{
    if (g->in_flight)
        return 0;
    struct refresh *r = xcalloc(1, sizeof(*r));
    if (login) { /* needs the settings (read here, on the loop) */
        char *err = NULL;
        if (oa_settings_load(s, &r->st, &err) < 0 || !r->st.client_credentials ||
            !r->st.client_id) {
            free(err);
            oa_settings_free(&r->st);
            free(r);
            return -1;
        }
        r->login = 1;
        r->www_auth = www_auth ? xstrdup(www_auth) : NULL;
    }
    r->name = xstrdup(s->name);
    r->url = xstrdup(s->url);
    r->stale = stale ? xstrdup(stale) : NULL;
    r->client_credentials = client_credentials;
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_mutex_lock(&threads_mu);
    threads_running++;
    pthread_mutex_unlock(&threads_mu);
    int rc = pthread_create(&t, &a, refresh_thread, r);
    pthread_attr_destroy(&a);
    if (rc != 0) {
        pthread_mutex_lock(&threads_mu);
        threads_running--;
        pthread_mutex_unlock(&threads_mu);
    }
    if (rc != 0) {
        free(r->name);
        free(r->url);
        free(r->stale);
        free(r->www_auth);
        oa_settings_free(&r->st);
        free(r);
        return -1;
    }
    g->in_flight = 1;
    g->last_ms = now_ms();
    log_debug("oauth", "%s: refreshing the access token", s->name);
    return 0;
}

static int start_refresh(const struct cfg_server *s, struct gw_server *g, const char *stale,
                         int client_credentials)
{
    return start_thread(s, g, stale, client_credentials, 0, NULL);
}

/* ---- the transport's questions ------------------------------------------------------------- */

char *oagw_header(const struct cfg_server *s)
{
    if (!oauth_applies(s))
        return NULL;
    ensure_cache();
    json_t *e = oa_store_entry(cache, s->name, s->url);
    const char *tok = json_string_value(json_object_get(e, "access_token"));
    struct gw_server *g = server(s->name);
    if (!tok)
        return NULL;
    int cc = same(json_string_value(json_object_get(e, "grant")), "client_credentials");
    if (due(e) && (json_is_string(json_object_get(e, "refresh_token")) || cc))
        start_refresh(s, g, tok, cc);
    free(g->handed);
    g->handed = xstrdup(tok);
    struct buf b = {0};
    buf_printf(&b, "Authorization: Bearer %s", tok);
    return buf_steal(&b);
}

int oagw_has_token(const struct cfg_server *s)
{
    if (!oauth_applies(s))
        return 0;
    ensure_cache();
    return json_is_string(json_object_get(oa_store_entry(cache, s->name, s->url), "access_token"));
}

int oagw_prepare(const struct cfg_server *s)
{
    if (!oauth_applies(s))
        return 0;
    ensure_cache();
    json_t *e = oa_store_entry(cache, s->name, s->url);
    const char *tok = json_string_value(json_object_get(e, "access_token"));
    json_t *exp = json_object_get(e, "expires_at");
    int cc = same(json_string_value(json_object_get(e, "grant")), "client_credentials");
    if (!tok && !json_is_object(json_object_get(e, "challenge"))) {
        /* machine-to-machine (oauth.grant client_credentials): log in before connecting */
        struct gw_server *g = server(s->name);
        if (g->in_flight)
            return 1;
        if (start_thread(s, g, NULL, 1, 1, NULL) == 0) {
            g->tries++;
            g->last_ms = now_ms();
            return 1;
        }
        return 0;
    }
    if (!tok || !json_is_integer(exp) || json_integer_value(exp) > oa_now() ||
        !(json_is_string(json_object_get(e, "refresh_token")) || cc))
        return 0;
    struct gw_server *g = server(s->name);
    free(g->handed);
    g->handed = xstrdup(tok);
    return g->in_flight || start_refresh(s, g, tok, cc) == 0;
}

struct note {
    const char *name, *url;
    const struct oa_challenge *ch;
    long status;
    int step_ups; /* out */
};

/* Records the challenge (for `codemcp auth`) and counts step-ups for scopes already asked. */
static int note_challenge(json_t *store, void *ud)
{
    struct note *n = ud;
    json_t *servers = json_object_get(store, "servers");
    json_t *e = oa_store_entry(store, n->name, n->url);
    if (!e) {
        e = json_pack("{s:s}", "url", n->url);
        json_object_set_new(servers, n->name, e);
    }
    json_t *c = json_pack("{s:i}", "status", (json_int_t)n->status);
    if (n->ch->scope)
        json_object_set_new(c, "scope", json_string(n->ch->scope));
    if (n->ch->error)
        json_object_set_new(c, "error", json_string(n->ch->error));
    if (n->ch->resource_metadata)
        json_object_set_new(c, "resource_metadata", json_string(n->ch->resource_metadata));
    json_object_set_new(e, "challenge", c);
    int steps = (int)json_integer_value(json_object_get(e, "step_ups"));
    if (n->status == 403) {
        const char *asked = json_string_value(json_object_get(e, "scope"));
        int covered = asked && n->ch->scope;
        if (covered) {
            char *want = xstrdup(n->ch->scope), *sv = NULL;
            for (char *w = strtok_r(want, " ", &sv); w && covered; w = strtok_r(NULL, " ", &sv)) {
                char pat[300];
                snprintf(pat, sizeof(pat), " %s ", w);
                struct buf a = {0};
                buf_printf(&a, " %s ", asked);
                covered = strstr(a.data, pat) != NULL;
                buf_free(&a);
            }
            free(want);
        }
        steps = covered ? steps + 1 : 1;
    }
    json_object_set_new(e, "step_ups", json_integer(steps));
    if (n->status == 403 && steps >= STEP_UP_LIMIT)
        json_object_set_new(c, "gave_up", json_true()); /* `codemcp auth` stops suggesting it */
    n->step_ups = steps;
    return 1;
}

enum oagw_verdict oagw_denied(const struct cfg_server *s, long status, const char *www_auth,
                              char *why, size_t n)
{
    struct oa_challenge ch;
    oa_challenge_parse(www_auth, &ch);
    enum oagw_verdict v = OAGW_NEEDS_AUTH;
    if (!oauth_applies(s)) {
        snprintf(why, n,
                 status == 401 ? "needs_auth: the server answered 401 (check the credentials in "
                                 "\"headers\", or remove them to use OAuth)"
                               : "needs_auth: the server answered 403 (forbidden)");
        goto out;
    }
    ensure_cache();
    reload(0); /* the store may have changed within the last second (logout, another login) */
    struct gw_server *g = server(s->name);
    json_t *e = oa_store_entry(cache, s->name, s->url);
    const char *tok = json_string_value(json_object_get(e, "access_token"));
    int cc = same(json_string_value(json_object_get(e, "grant")), "client_credentials");
    int insufficient = status == 403 && ch.error && strcmp(ch.error, "insufficient_scope") == 0;
    if (status == 401 && tok) {
        if (g->in_flight) {
            v = OAGW_WAIT;
            goto out;
        }
        if (!same(tok, g->handed)) {
            v = OAGW_RETRY;
            goto out;
        }
        if (now_ms() - g->last_ms > 60000)
            g->tries = 0;
        if ((json_is_string(json_object_get(e, "refresh_token")) || cc) &&
            g->tries < REFRESH_MAX_TRIES && start_refresh(s, g, tok, cc) == 0) {
            g->tries++;
            v = OAGW_WAIT;
            goto out;
        }
    }
    if (status == 401 && !tok && g->tries < REFRESH_MAX_TRIES && !g->in_flight &&
        start_thread(s, g, NULL, 1, 1, www_auth) == 0) {
        g->tries++; /* machine-to-machine: the gateway logs in by itself */
        v = OAGW_WAIT;
        goto out;
    }
    if (status == 403 && !insufficient) {
        snprintf(why, n, "forbidden: the server answered 403%s%s", ch.error ? " " : "",
                 ch.error ? ch.error : "");
        goto out;
    }
    struct note note = {s->name, s->url, &ch, status, 0};
    /* On the loop: never wait for the lock (the challenge is advice for `codemcp auth`, which
     * probes the server itself when none was recorded). */
    if (oa_store_try_update(note_challenge, &note) < 0)
        log_debug("oauth", "%s: the token store is busy; the challenge is not recorded", s->name);
    reload(1);
    if (insufficient && note.step_ups >= STEP_UP_LIMIT)
        snprintf(why, n,
                 "forbidden: the server still answers 403 insufficient_scope (scope \"%s\") "
                 "after %d authorizations; not asking again",
                 ch.scope ? ch.scope : "", note.step_ups - 1);
    else if (insufficient)
        snprintf(why, n, "needs_auth (Run: codemcp auth %s): the server needs scope \"%s\"",
                 s->name, ch.scope ? ch.scope : "");
    else
        snprintf(why, n, "needs_auth (Run: codemcp auth %s): the server answered 401%s%s", s->name,
                 tok ? " to the stored token" : "", ch.error ? "" : "");
out:
    oa_challenge_free(&ch);
    return v;
}
