/* test_oauth — the pure parts of OAuth (src/oauth/oauth_disc.c, src/oauth/oauth_store.c): the
 * Bearer challenge parser, the "oauth" settings in both spellings, form escaping, and the token
 * store (0600, compare-and-swap under the lock, an entry for another URL ignored); and
 * src/oauth/oauth_gw.c's report of changed credentials, which comes from the loop, never from
 * inside the transport's own call. */
#include "check.h"
#include "config.h"
#include "loop.h"
#include "oauth.h"
#include "oauth_gw.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int streq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static void challenges(void)
{
    struct oa_challenge c;
    oa_challenge_parse("Bearer resource_metadata=\"https://x/.well-known/oauth-protected-"
                       "resource/mcp\", scope=\"a b\", error=\"insufficient_scope\"",
                       &c);
    CHECK(streq(c.resource_metadata, "https://x/.well-known/oauth-protected-resource/mcp") &&
              streq(c.scope, "a b") && streq(c.error, "insufficient_scope"),
          "quoted params");
    oa_challenge_free(&c);
    oa_challenge_parse("bearer error=invalid_token,scope=\"x\\\"y\"", &c);
    CHECK(streq(c.error, "invalid_token") && streq(c.scope, "x\"y") && !c.resource_metadata,
          "token params, escapes, lower-case scheme");
    oa_challenge_free(&c);
    oa_challenge_parse(NULL, &c);
    CHECK(!c.scope && !c.error && !c.resource_metadata, "no header");
    oa_challenge_parse("Bearer realm=\"x\", =, scope", &c);
    CHECK(!c.scope, "junk does not crash and sets nothing");
    oa_challenge_free(&c);
}

static void settings(void)
{
    setenv("OA_TEST_SECRET", "s3cret", 1);
    struct cfg_server s = {.name = "x", .type = CFG_REMOTE, .url = "https://x/mcp"};
    struct oa_settings st;
    char *err = NULL;
    s.oauth = json_loads("{\"clientId\": \"id1\", \"clientSecret\": \"{env:OA_TEST_SECRET}\", "
                         "\"callbackPort\": 19876, \"grant\": \"client_credentials\"}",
                         0, NULL);
    CHECK(oa_settings_load(&s, &st, &err) == 0 && streq(st.client_id, "id1") &&
              streq(st.client_secret, "s3cret") && st.callback_port == 19876 &&
              st.client_credentials,
          "camelCase keys, interpolation");
    oa_settings_free(&st);
    json_decref(s.oauth);
    s.oauth = json_loads("{\"client_id\": \"id2\", \"client_secret\": \"z\", \"callback_port\": 1, "
                         "\"redirect_uri\": \"http://127.0.0.1:1/cb\"}",
                         0, NULL);
    CHECK(oa_settings_load(&s, &st, &err) == 0 && streq(st.client_id, "id2") &&
              streq(st.client_secret, "z") && st.callback_port == 1 &&
              streq(st.redirect_uri, "http://127.0.0.1:1/cb"),
          "snake_case keys");
    oa_settings_free(&st);
    json_decref(s.oauth);
    s.oauth = json_false();
    CHECK(oa_settings_load(&s, &st, &err) == 0 && st.disabled, "oauth: false");
    json_decref(s.oauth);
    s.oauth = json_loads("{\"callbackPort\": \"x\"}", 0, NULL);
    CHECK(oa_settings_load(&s, &st, &err) < 0 && err && strstr(err, "callbackPort"),
          "bad callbackPort is named (%s)", err ? err : "");
    free(err);
    err = NULL;
    json_decref(s.oauth);
    s.oauth = json_loads("{\"clientSecret\": \"{env:OA_TEST_UNSET_VAR}\"}", 0, NULL);
    CHECK(oa_settings_load(&s, &st, &err) < 0 && err && strstr(err, "OA_TEST_UNSET_VAR"),
          "unset variable is named (%s)", err ? err : "");
    free(err);
    json_decref(s.oauth);
}

static int put(json_t *store, void *ud)
{
    json_object_set_new(json_object_get(store, "servers"), "x",
                        json_pack("{s:s, s:s}", "url", "https://x/mcp", "access_token", ud));
    return 1;
}

static int cas(json_t *store, void *ud)
{
    json_t *e = oa_store_entry(store, "x", "https://x/mcp");
    if (!streq(json_string_value(json_object_get(e, "access_token")), ud))
        return 0; /* someone else changed it: no write */
    json_object_set_new(e, "access_token", json_string("t3"));
    return 1;
}

static void store(void)
{
    char dir[] = "/tmp/codemcp-oauth-unit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    setenv("XDG_CONFIG_HOME", dir, 1);
    char path[4200];
    CHECK(oa_store_path(path, sizeof(path)) && strstr(path, "/codemcp/mcp-auth.json"), "path");
    CHECK(oa_store_update(put, "t1") == 1, "first write creates the file");
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "mode 0600");
    json_t *s = oa_store_read();
    CHECK(oa_store_entry(s, "x", "https://x/mcp") && !oa_store_entry(s, "x", "https://y/mcp"),
          "an entry for another URL is ignored");
    json_decref(s);
    CHECK(oa_store_update(cas, "t0") == 0, "CAS with a stale value does not write");
    CHECK(oa_store_update(cas, "t1") == 1, "CAS with the current value writes");
    s = oa_store_read();
    CHECK(streq(json_string_value(json_object_get(oa_store_entry(s, "x", NULL), "access_token")),
                "t3"),
          "the swapped value is stored");
    json_decref(s);
    char *e = oa_form_escape("a b&c=d/é");
    CHECK(streq(e, "a%20b%26c%3Dd%2F%C3%A9"), "form escape (%s)", e);
    free(e);
    char cmd[4300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
}

/* ---- oauth_gw: credential changes reported from the loop ----------------------------------- */

static int inside; /* 1 while a transport's call into oauth_gw runs */
static int changes, changes_inside, last_removed;
static struct lp_timer stop_timer;

static void on_change(const char *name, int removed)
{
    changes++;
    changes_inside += inside;
    last_removed = removed;
    CHECK(streq(name, "x"), "the change names its server (%s)", name);
}

static void stop_loop(void *ud)
{
    (void)ud;
    lp_stop();
}

static int drop(json_t *store, void *ud)
{
    (void)ud;
    json_object_del(json_object_get(store, "servers"), "x");
    return 1;
}

/* Lets the loop run for ms (timers, deferred work). */
static void spin(int ms)
{
    lp_timer_start(&stop_timer, ms, stop_loop, NULL);
    lp_run();
}

static void changes_from_loop(void)
{
    char dir[] = "/tmp/codemcp-oauth-unit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    setenv("XDG_CONFIG_HOME", dir, 1);
    CHECK(lp_init() == 0, "loop");
    CHECK(oa_store_update(put, "t1") == 1, "store t1");
    struct cfg_server s = {.name = "x", .type = CFG_REMOTE, .enabled = 1, .url = "https://x/mcp"};
    oagw_set_reconnect(on_change);
    char *h = oagw_header(&s);
    CHECK(streq(h, "Authorization: Bearer t1"), "header (%s)", h ? "set" : "NULL");
    free(h);
    /* `codemcp auth` stores another token; the transport's next request notices it. */
    CHECK(oa_store_update(put, "t2-longer") == 1, "store t2");
    usleep(1100 * 1000); /* the store is looked at again after a second */
    inside = 1;
    h = oagw_header(&s);
    inside = 0;
    CHECK(streq(h, "Authorization: Bearer t2-longer"), "the new token is used");
    free(h);
    CHECK(changes_inside == 0, "oagw_header did not report the change from inside (%d)",
          changes_inside);
    spin(100);
    CHECK(changes == 1 && !last_removed, "the change came from the loop (%d)", changes);
    /* `codemcp logout`: noticed by oagw_has_token (admin status) and by oagw_denied (a 401) */
    CHECK(oa_store_update(drop, NULL) == 1, "logout");
    usleep(1100 * 1000);
    inside = 1;
    CHECK(!oagw_has_token(&s), "no token after logout");
    char why[300];
    oagw_denied(&s, 401, NULL, why, sizeof(why));
    inside = 0;
    CHECK(changes_inside == 0, "no change reported from inside a caller (%d)", changes_inside);
    spin(100);
    CHECK(changes == 2 && last_removed, "the removal came from the loop (%d)", changes);
    oagw_stop();
    lp_destroy();
    char cmd[4300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
}

int main(void)
{
    challenges();
    settings();
    store();
    changes_from_loop();
    return CHECK_DONE();
}
