/* admin_ops — see admin_ops.h. */
#include "admin_ops.h"
#include "catalog.h"
#include "config.h"
#include "log.h"
#include "mcp_era.h"
#include "metrics.h"
#include "oauth_gw.h"
#include "state.h"
#include "toolstate.h"
#include "upstream.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct cfg *config;
static json_t *instance;
static admops_change_fn on_change; /* admin_fleet's share, when a state store is set */

void admops_init(struct cfg *cfg, json_t *info)
{
    config = cfg;
    json_decref(instance);
    instance = json_deep_copy(info);
}

void admops_on_change(admops_change_fn fn)
{
    on_change = fn;
}

void admops_free(void)
{
    json_decref(instance);
    instance = NULL;
}

static json_t *fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *fail(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

/* ---- reading ----------------------------------------------------------------------------- */

/* A server enabled while its old process is still exiting starts once it is gone: for the
 * admin it is connecting already. */
static const char *state_of(struct upstream *up)
{
    return up->start_when_closed ? "connecting" : up_state_name(up->state);
}

static const char *auth_of(struct upstream *up)
{
    if (up->cfg->type == CFG_LOCAL)
        return "n/a";
    for (char **h = up->cfg->headers; h && *h; h++)
        if (strncasecmp(*h, "authorization:", 14) == 0)
            return "header";
    if (up->state != UP_READY && up->error &&
        (strstr(up->error, "needs_auth") || strstr(up->error, "401") || strstr(up->error, "403")))
        return "needs_auth";
    return oagw_has_token(up->cfg) ? "oauth" : "none";
}

static int effective_tools(struct upstream *up)
{
    if (up->state != UP_READY)
        return 0;
    int n = 0;
    size_t i;
    json_t *t;
    json_array_foreach(up->tools, i, t)
    {
        n += ts_enabled(up->name, json_string_value(json_object_get(t, "name")));
    }
    return n;
}

static json_t *op_list(void)
{
    json_t *servers = json_array();
    for (size_t i = 0; i < up_count(); i++) {
        struct upstream *up = up_at(i);
        json_t *s = json_pack(
            "{s:s, s:s, s:b, s:b, s:s, s:s, s:i, s:i, s:s?, s:s?}", "name", up->name, "type",
            up->cfg->type == CFG_REMOTE ? "remote" : "local", "default", up->cfg->enabled,
            "connected", up->state == UP_READY, "state", state_of(up), "auth", auth_of(up), "tools",
            effective_tools(up), "listed", (int)json_array_size(up->tools), "protocol",
            up->protocol_version, "error", up->state == UP_READY ? NULL : up->error);
        if (up->protocol_version)
            json_object_set_new(s, "era", json_string(mcp_era_name(up->era)));
        if (up->cfg->warnings) /* config settings it cannot act on (config_check.c) */
            json_object_set(s, "warnings", up->cfg->warnings);
        json_array_append_new(servers, s);
    }
    json_t *r = json_pack("{s:b, s:o}", "ok", 1, "servers", servers);
    if (state_enabled()) { /* CODEMCP_STATE: whether this replica reaches the shared store */
        char why[300];
        int ok = state_store_ok(why, sizeof(why));
        json_object_set_new(r, "state_store", json_pack("{s:b, s:s}", "ok", ok, "detail", why));
    }
    return r;
}

static json_t *summary_of(json_t *tool)
{
    const char *d = json_string_value(json_object_get(tool, "description"));
    if (!d)
        return json_string("");
    while (*d == ' ' || *d == '\n')
        d++;
    size_t n = strcspn(d, "\n");
    if (n > 160)
        n = 160;
    return json_stringn(d, n);
}

static json_t *op_tools(void)
{
    json_t *out = json_array();
    for (size_t i = 0; i < up_count(); i++) {
        struct upstream *up = up_at(i);
        size_t j;
        json_t *t;
        json_array_foreach(up->tools, j, t)
        {
            const char *name = json_string_value(json_object_get(t, "name"));
            int session = ts_session(up->name, name);
            json_t *f = cat_find(up->name, name);
            json_t *e = json_pack("{s:s, s:s, s:b, s:b, s:s?, s:o, s:b, s:s?}", "server", up->name,
                                  "tool", name, "on", ts_enabled(up->name, name), "default",
                                  ts_default_on(up->name, name), "session",
                                  session < 0 ? NULL
                                  : session   ? "on"
                                              : "off",
                                  "summary", summary_of(t), "connected", up->state == UP_READY,
                                  "function", json_string_value(json_object_get(f, "function")));
            json_array_append_new(out, e);
        }
    }
    return json_pack("{s:b, s:o}", "ok", 1, "tools", out);
}

/* ---- changing ------------------------------------------------------------------------------ */

static json_t *done_reply(struct upstream *up, const char *tool, int wrote, const char *what)
{
    json_t *r = json_pack("{s:b, s:s, s:s, s:s, s:b, s:s?}", "ok", 1, "server", up->name, "state",
                          state_of(up), "message", what, "wrote", wrote, "config",
                          wrote ? config->path : NULL);
    if (tool)
        json_object_set_new(r, "tool", json_string(tool));
    return r;
}

static json_t *op_server(json_t *params, int on)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    int make_default = json_is_true(json_object_get(params, "make_default"));
    if (!name)
        return fail("%s needs params.name (a server name)", on ? "enable" : "disable");
    struct upstream *up = up_find(name);
    if (!up)
        return fail("no server named %s in %s", name,
                    config && config->path ? config->path : "the config");
    char why[1200];
    int wrote = 0;
    if (on && up->cfg->disabled_reason) /* before anything is written */
        return fail("%s cannot be started: %s", name, up->cfg->disabled_reason);
    if (make_default && cfg_set_server_default(config, up->cfg, on, &wrote, why, sizeof(why)) < 0)
        return fail("%s", why);
    if ((on ? up_enable : up_disable)(name, why, sizeof(why)) < 0)
        return fail("%s", why);
    char what[300];
    snprintf(what, sizeof(what), "%s %s%s", name,
             on ? (up->state == UP_READY ? "is connected" : "is connecting") : "is disconnected",
             make_default ? (wrote ? "; mcp.json updated" : "; mcp.json already says so") : "");
    return done_reply(up, NULL, wrote, what);
}

static json_t *find_tool(struct upstream *up, const char *tool)
{
    size_t i;
    json_t *t;
    json_array_foreach(up->tools, i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "name")), tool) == 0)
            return t;
    }
    return NULL;
}

static json_t *op_tool(json_t *params, int on)
{
    const char *server = json_string_value(json_object_get(params, "server"));
    const char *tool = json_string_value(json_object_get(params, "tool"));
    int make_default = json_is_true(json_object_get(params, "make_default"));
    if (!server || !tool)
        return fail("%s needs params.server and params.tool", on ? "enable_tool" : "disable_tool");
    struct upstream *up = up_find(server);
    if (!up)
        return fail("no server named %s in the config", server);
    if (up->tools && !find_tool(up, tool)) {
        struct buf names = {0};
        size_t i;
        json_t *t;
        json_array_foreach(up->tools, i, t)
        {
            if (i < 12)
                buf_printf(&names, "%s%s", i ? ", " : "",
                           json_string_value(json_object_get(t, "name")));
        }
        json_t *r =
            fail("server %s has no tool %s (its tools: %s%s)", server, tool,
                 names.data ? names.data : "none", json_array_size(up->tools) > 12 ? ", …" : "");
        buf_free(&names);
        return r;
    }
    char why[1200];
    int wrote = 0;
    if (make_default) {
        if (cfg_set_tool_default(config, up->cfg, tool, on, &wrote, why, sizeof(why)) < 0)
            return fail("%s", why);
        ts_set_default(server, tool, on);
    } else {
        ts_set_session(server, tool, on);
    }
    /* Enabling a tool of a disconnected server connects it; disabling never disconnects. */
    if (on && up->state != UP_READY && up->state != UP_CONNECTING &&
        up_enable(server, why, sizeof(why)) < 0)
        return fail("%s", why);
    cat_rebuild();
    char what[600];
    snprintf(what, sizeof(what), "%s/%s %s %s", server, tool, on ? "enabled" : "disabled",
             make_default ? (wrote ? "[default, mcp.json updated]" : "[default]") : "[session]");
    log_info("admin", "%s", what);
    return done_reply(up, tool, wrote, what);
}

/* A change that succeeded here reaches the other replicas (through admops_on_change). */
static json_t *shared(const char *method, json_t *params, json_t *reply)
{
    if (on_change && json_is_true(json_object_get(reply, "ok")))
        on_change(method, params);
    return reply;
}

void admops_apply(const char *method, json_t *params, int replay)
{
    int on = method[0] == 'e', tool = strstr(method, "_tool") != NULL;
    if ((on ? strcmp(method, tool ? "enable_tool" : "enable")
            : strcmp(method, tool ? "disable_tool" : "disable")) != 0)
        return;
    json_t *p = json_deep_copy(params);
    json_object_del(p, "make_default");
    struct upstream *up = tool ? NULL : up_find(json_string_value(json_object_get(p, "name")));
    json_t *r = NULL;
    const char *server = json_string_value(json_object_get(p, "server"));
    const char *tname = json_string_value(json_object_get(p, "tool"));
    if (tool && replay && server && tname && ts_enabled(server, tname) == on)
        ; /* already so: no rebuild, no tools/list_changed */
    else if (tool)
        r = op_tool(p, on);
    else if (up && !(replay && on && up->state != UP_DISABLED))
        r = op_server(p, on);
    if (r && !json_is_true(json_object_get(r, "ok")))
        log_warn("admin", "a change from another replica (%s) failed here: %s", method,
                 json_string_value(json_object_get(r, "error")));
    else if (r && !replay)
        log_info("admin", "applied %s from another replica", method);
    json_decref(r);
    json_decref(p);
}

/* The Prometheus text GET /metrics serves, for gateways without an HTTP front. */
static json_t *op_metrics(void)
{
    char *text = mx_render();
    if (!text)
        return fail("metrics are off in this gateway (CODEMCP_METRICS=off)");
    json_t *reply = json_pack("{s:b, s:s}", "ok", 1, "text", text);
    free(text);
    return reply;
}

json_t *admops_handle(json_t *req)
{
    const char *m = json_string_value(json_object_get(req, "method"));
    json_t *params = json_object_get(req, "params");
    if (!m)
        return fail("the request needs a \"method\"");
    if (strcmp(m, "info") == 0)
        return json_pack("{s:b, s:O}", "ok", 1, "instance", instance ? instance : json_null());
    if (strcmp(m, "list") == 0)
        return op_list();
    if (strcmp(m, "tools") == 0)
        return op_tools();
    if (strcmp(m, "metrics") == 0)
        return op_metrics();
    if (strcmp(m, "enable") == 0 || strcmp(m, "disable") == 0)
        return shared(m, params, op_server(params, m[0] == 'e'));
    if (strcmp(m, "enable_tool") == 0 || strcmp(m, "disable_tool") == 0)
        return shared(m, params, op_tool(params, m[0] == 'e'));
    return fail("unknown method %s (info, list, tools, metrics, enable, disable, enable_tool, "
                "disable_tool)",
                m);
}
