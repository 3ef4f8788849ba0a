/* admin_fleet — see admin_fleet.h. */
#include "admin_fleet.h"

#include "admin_ops.h"
#include "log.h"
#include "state.h"
#include "util.h"

#include <string.h>

#define MODULE "admin"

static json_t *pending; /* field -> change, made while Redis was away (shared on reconnect) */

/* The hash field a change is kept under: its latest change replaces the one before. */
static char *field_of(const char *method, json_t *params)
{
    struct buf b = {0};
    if (strstr(method, "_tool"))
        buf_printf(&b, "tool:%s/%s", json_string_value(json_object_get(params, "server")),
                   json_string_value(json_object_get(params, "tool")));
    else
        buf_printf(&b, "server:%s", json_string_value(json_object_get(params, "name")));
    return buf_steal(&b);
}

static int send_change(const char *field, json_t *change)
{
    char key[64], *text = json_dumps(change, JSON_COMPACT);
    const char *argv[] = {"HSET", state_key(key, sizeof(key), "admin"), field, text};
    int rc = text ? state_cmd(NULL, NULL, 4, argv, NULL) : -1;
    free(text);
    return rc < 0 ? -1 : state_publish("admin", change);
}

static void share(const char *method, json_t *params)
{
    if (!state_enabled())
        return;
    json_t *p = json_deep_copy(params);
    json_object_del(p, "make_default");
    char *field = field_of(method, p);
    json_t *change = json_pack("{s:s, s:o}", "method", method, "params", p);
    if (send_change(field, change) < 0) {
        if (!pending)
            pending = json_object();
        json_object_set(pending, field, change);
        log_warn(MODULE, "%s: applied here; the other replicas get it when the state store is back",
                 method);
    }
    free(field);
    json_decref(change);
}

static void apply(json_t *change, int replay)
{
    const char *method = json_string_value(json_object_get(change, "method"));
    json_t *params = json_object_get(change, "params");
    if (!method || !json_is_object(params))
        return;
    admops_apply(method, params, replay);
}

static void on_message(json_t *msg)
{
    apply(msg, 0);
}

static void on_admin_hash(void *ud, json_t *reply)
{
    (void)ud;
    for (size_t i = 0; i + 1 < json_array_size(reply); i += 2) {
        json_t *change = json_loads(json_string_value(json_array_get(reply, i + 1)), 0, NULL);
        if (json_is_object(change))
            apply(change, 1);
        json_decref(change);
    }
    json_decref(reply);
}

/* Shares what changed here meanwhile, then applies what the fleet decided (in the writer's
 * order: ours first, so the hash read back already holds them). */
static void on_connect(void)
{
    const char *field;
    json_t *change, *left = json_object();
    json_object_foreach(pending, field, change)
    {
        if (send_change(field, change) < 0)
            json_object_set(left, field, change);
    }
    json_decref(pending);
    pending = left;
    char key[64];
    const char *argv[] = {"HGETALL", state_key(key, sizeof(key), "admin")};
    state_cmd(on_admin_hash, NULL, 2, argv, NULL);
}

void admfleet_init(void)
{
    if (!state_enabled())
        return;
    state_on_message("admin", on_message);
    state_on_connect(on_connect);
    admops_on_change(share);
}
