/* toolstate — see toolstate.h. Two small maps keyed "server\x1ftool"; O(1) lookups. */
#include "toolstate.h"
#include "upstream.h"

#include <stdio.h>
#include <string.h>

static json_t *session;  /* key -> true/false */
static json_t *defaults; /* key -> true/false: defaults written this run with -d */

/* "server\x1ftool", cut to n - 1 bytes as snprintf would (not snprintf: this is on every
 * SDK call). */
static void key_of(char *out, size_t n, const char *server, const char *tool)
{
    const char *parts[3] = {server ? server : "", "\x1f", tool ? tool : ""};
    size_t w = 0;
    for (int i = 0; i < 3; i++) {
        size_t l = strlen(parts[i]);
        if (l > n - 1 - w)
            l = n - 1 - w;
        memcpy(out + w, parts[i], l);
        w += l;
    }
    out[w] = '\0';
}

int ts_default_on(const char *server, const char *tool)
{
    if (defaults) {
        char k[1024];
        key_of(k, sizeof(k), server, tool);
        json_t *d = json_object_get(defaults, k);
        if (d)
            return json_is_true(d);
    }
    struct upstream *up = up_find(server);
    json_t *conf = json_object_get(up && up->cfg ? up->cfg->tools : NULL, tool);
    return !json_is_false(json_object_get(conf, "enabled"));
}

int ts_session(const char *server, const char *tool)
{
    if (!session)
        return -1;
    char k[1024];
    key_of(k, sizeof(k), server, tool);
    json_t *s = json_object_get(session, k);
    return s ? json_is_true(s) : -1;
}

int ts_enabled(const char *server, const char *tool)
{
    int s = ts_session(server, tool);
    return s >= 0 ? s : ts_default_on(server, tool);
}

void ts_set_session(const char *server, const char *tool, int on)
{
    char k[1024];
    key_of(k, sizeof(k), server, tool);
    if (!session)
        session = json_object();
    if (on < 0)
        json_object_del(session, k);
    else
        json_object_set_new(session, k, json_boolean(on));
}

void ts_set_default(const char *server, const char *tool, int on)
{
    char k[1024];
    key_of(k, sizeof(k), server, tool);
    if (!defaults)
        defaults = json_object();
    json_object_set_new(defaults, k, json_boolean(on));
    ts_set_session(server, tool, -1);
}

int ts_call_allowed(const char *server, const char *tool, char *why, size_t n)
{
    if (ts_enabled(server, tool))
        return 1;
    snprintf(why, n,
             "%s/%s is disabled in this gateway (turn it on with: codemcp enable-tool %s %s)",
             server, tool, server, tool);
    return 0;
}

json_t *ts_effective_config(const char *server, json_t *cfg_tools, json_t *tools)
{
    json_t *out = json_is_object(cfg_tools) ? json_deep_copy(cfg_tools) : json_object();
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (!name)
            continue;
        int on = ts_enabled(server, name);
        json_t *conf = json_object_get(out, name);
        if (on && !json_is_false(json_object_get(conf, "enabled")))
            continue; /* nothing to say */
        if (!json_is_object(conf)) {
            conf = json_object();
            json_object_set_new(out, name, conf);
        }
        json_object_set_new(conf, "enabled", json_boolean(on));
    }
    if (!json_object_size(out)) {
        json_decref(out);
        return NULL;
    }
    return out;
}

void ts_free(void)
{
    json_decref(session);
    json_decref(defaults);
    session = defaults = NULL;
}
