/* shapes_fleet — learned shapes shared by a fleet of replicas through the state store
 * (state.h), when CODEMCP_STATE is set.
 *
 * Each scope (a principal, or "" when learning is shared) is a hash codemcp:shapes:s<scope>
 * {fn: shape}, the scopes listed in the set codemcp:shapes:scopes; every new thing a replica
 * learns is written there and published. A receiver merges it into the same scope only
 * (shapes_absorb_shared: checked and bounded like its own learning), so what alice's results
 * taught one replica reaches alice's workers on every replica and never bob's. Merging is a
 * join (shapes.h), so copies converge in any order: a replica that knows more than what it
 * received shares its merge back. On (re)connecting a replica first reads every scope, then
 * writes what it knows beyond it. Learning never waits for Redis (it happens after the call
 * was answered; the commands are queued). Loop thread only. */
#include "shapes.h"

#include "state.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static void scope_key(char *buf, size_t n, const char *scope)
{
    char s[200];
    snprintf(s, sizeof(s), "shapes:s%s", scope);
    state_key(buf, n, s);
}

/* Writes one learned shape to Redis and tells the others (publish: 0 on resync). */
static void share(const char *scope, const char *fn, json_t *shape, int publish)
{
    char key[256], scopes[64], member[200], *text = json_dumps(shape, JSON_COMPACT);
    if (!text)
        return;
    scope_key(key, sizeof(key), scope);
    snprintf(member, sizeof(member), "s%s", scope);
    const char *hset[] = {"HSET", key, fn, text};
    const char *sadd[] = {"SADD", state_key(scopes, sizeof(scopes), "shapes:scopes"), member};
    if (state_cmd(NULL, NULL, 4, hset, NULL) == 0 && state_cmd(NULL, NULL, 3, sadd, NULL) == 0 &&
        publish) {
        json_t *msg = json_pack("{s:s, s:s, s:O}", "scope", scope, "fn", fn, "shape", shape);
        state_publish("shapes", msg);
        json_decref(msg);
    }
    free(text);
}

static void on_learned(const char *scope, const char *fn, json_t *shape)
{
    share(scope, fn, shape, 1);
}

/* Merges theirs; when ours holds more, shares it (publish as given). */
static void merge(const char *scope, const char *fn, json_t *theirs, int publish)
{
    json_t *ours = NULL;
    shapes_absorb_shared(scope, fn, theirs, &ours);
    if (ours)
        share(scope, fn, ours, publish);
    json_decref(ours);
}

static void on_message(json_t *msg)
{
    const char *scope = json_string_value(json_object_get(msg, "scope"));
    const char *fn = json_string_value(json_object_get(msg, "fn"));
    if (scope && fn && strlen(scope) < 128)
        merge(scope, fn, json_object_get(msg, "shape"), 1);
}

/* One scope's hash read back on resync: merge it, then write what only this replica knows. */
static void on_scope(void *ud, json_t *reply)
{
    char *scope = ud;
    json_t *seen = json_object();
    for (size_t i = 0; i + 1 < json_array_size(reply); i += 2) {
        const char *fn = json_string_value(json_array_get(reply, i));
        json_t *shape = json_loads(json_string_value(json_array_get(reply, i + 1)), 0, NULL);
        if (fn && shape) {
            merge(scope, fn, shape, 0);
            json_object_set_new(seen, fn, json_true());
        }
        json_decref(shape);
    }
    const char *fn;
    json_t *shape;
    json_object_foreach(json_object_get(shapes_learned(), scope), fn, shape)
    {
        if (!json_object_get(seen, fn))
            share(scope, fn, shape, 0);
    }
    json_decref(seen);
    json_decref(reply);
    free(scope);
}

static void read_scope(const char *scope)
{
    char key[256];
    scope_key(key, sizeof(key), scope);
    const char *argv[] = {"HGETALL", key};
    char *ud = xstrdup(scope);
    if (state_cmd(on_scope, ud, 2, argv, NULL) < 0)
        free(ud);
}

static void on_scopes(void *ud, json_t *reply)
{
    (void)ud;
    json_t *todo = json_object();
    const char *scope;
    json_t *v;
    json_object_foreach(shapes_learned(), scope, v) json_object_set_new(todo, scope, json_true());
    size_t i;
    json_array_foreach(json_is_array(reply) ? reply : NULL, i, v)
    {
        const char *m = json_string_value(v);
        if (m && m[0] == 's' && strlen(m) < 129)
            json_object_set_new(todo, m + 1, json_true());
    }
    json_object_foreach(todo, scope, v) read_scope(scope);
    json_decref(todo);
    json_decref(reply);
}

static void on_connect(void)
{
    char key[64];
    const char *argv[] = {"SMEMBERS", state_key(key, sizeof(key), "shapes:scopes")};
    state_cmd(on_scopes, NULL, 2, argv, NULL);
}

void shapes_fleet_init(void)
{
    if (!state_enabled() || !shapes_enabled())
        return;
    shapes_set_share_hook(on_learned);
    state_on_message("shapes", on_message);
    state_on_connect(on_connect);
}
