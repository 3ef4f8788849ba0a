/* catalog — see catalog.h. The generator itself lives in sdkgen/ (pure functions); this
 * file only gathers its input from the registry and keeps the latest output. */
#include "catalog.h"
#include "log.h"
#include "sdkgen.h"
#include "toolstate.h"
#include "upstream.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static struct sdk_output current;
static int version;
static int source_version;
static void (*listener)(void);
static json_t *exemplars;
static json_t *by_server_tool; /* "server\x1ftool" -> function entry */
static json_t *disabled;       /* SDK names of tools the config disables */

void cat_set_listener(void (*on_change)(void))
{
    listener = on_change;
}

int cat_version(void)
{
    return version;
}

int cat_source_version(void)
{
    return source_version;
}

const char *cat_source(void)
{
    return current.source ? current.source : "";
}

const char *cat_description(void)
{
    return current.description ? current.description : "";
}

json_t *cat_functions(void)
{
    return current.functions;
}

json_t *cat_find(const char *server, const char *tool)
{
    char key[1024];
    snprintf(key, sizeof(key), "%s\x1f%s", server, tool);
    return json_object_get(by_server_tool, key);
}

json_t *cat_disabled(void)
{
    return disabled;
}

static void note_disabled(struct upstream *up)
{
    size_t i;
    json_t *t;
    json_array_foreach(up->tools, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (!name || ts_enabled(up->name, name))
            continue;
        char *a = sdk_identifier(up->name), *b = sdk_identifier(name);
        char fn[1024];
        snprintf(fn, sizeof(fn), "%s_%s", a, b);
        json_array_append_new(disabled, json_string(fn));
        free(a);
        free(b);
    }
}

static json_t *gather_input(void)
{
    json_t *servers = json_array();
    json_decref(disabled);
    disabled = json_array();
    for (size_t i = 0; i < up_count(); i++) {
        struct upstream *up = up_at(i);
        /* A crashed server keeps its functions: calls then fail with a clear ToolError
         * instead of a NameError in the agent's code. */
        if (!up->tools || up->state == UP_DISABLED) /* turned off at run time */
            continue;
        note_disabled(up);
        json_t *entry = json_pack("{s:s, s:O}", "server", up->name, "tools", up->tools);
        /* Defaults from the config, overridden at run time by the admin (toolstate). */
        json_t *conf = ts_effective_config(up->name, up->cfg ? up->cfg->tools : NULL, up->tools);
        if (conf)
            json_object_set_new(entry, "config", conf);
        json_array_append_new(servers, entry);
    }
    return servers;
}

/* The outputSchema the upstream declared for a tool (borrowed) or NULL. */
static json_t *tool_output_schema(const char *server, const char *tool)
{
    struct upstream *up = up_find(server);
    size_t i;
    json_t *t;
    json_array_foreach(up ? up->tools : NULL, i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "name")), tool) == 0)
            return json_object_get(t, "outputSchema");
    }
    return NULL;
}

static void index_functions(void)
{
    json_decref(by_server_tool);
    by_server_tool = json_object();
    const char *fn;
    json_t *f;
    json_object_foreach(current.functions, fn, f)
    {
        char key[1024];
        snprintf(key, sizeof(key), "%s\x1f%s", json_string_value(json_object_get(f, "server")),
                 json_string_value(json_object_get(f, "tool")));
        json_object_set(by_server_tool, key, f);
        json_object_set_new(f, "function", json_string(fn));
        json_t *schema = tool_output_schema(json_string_value(json_object_get(f, "server")),
                                            json_string_value(json_object_get(f, "tool")));
        if (schema)
            json_object_set(f, "output_schema", schema);
    }
}

void cat_rebuild(void)
{
    json_t *input = gather_input();
    struct sdk_output next = {0};
    int rc = sdk_generate(input, exemplars, &next);
    json_decref(input);
    if (rc < 0) {
        log_error("catalog", "SDK generation failed; keeping the previous SDK");
        sdk_output_free(&next);
        return;
    }
    int changed = !current.source || strcmp(current.source, next.source) != 0 ||
                  strcmp(current.description, next.description) != 0;
    if (!changed) {
        sdk_output_free(&next);
        return;
    }
    if (!current.source || strcmp(current.source, next.source) != 0)
        source_version++;
    sdk_output_free(&current);
    current = next;
    index_functions();
    version++;
    log_debug("catalog", "SDK version %d: %zu functions", version,
              json_object_size(current.functions));
    if (listener)
        listener();
}

void cat_set_exemplars(json_t *ex)
{
    if (ex && exemplars && json_equal(ex, exemplars))
        return;
    json_decref(exemplars);
    exemplars = json_incref(ex);
    cat_rebuild();
}

void cat_init(void)
{
    if (!current.source)
        cat_rebuild();
}

void cat_free(void)
{
    sdk_output_free(&current);
    memset(&current, 0, sizeof(current));
    json_decref(by_server_tool);
    by_server_tool = NULL;
    json_decref(exemplars);
    exemplars = NULL;
    json_decref(disabled);
    disabled = NULL;
}
