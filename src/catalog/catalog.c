/* catalog — see catalog.h. The generator itself lives in sdkgen/ (pure functions); this
 * file gathers its input from the registry, keeps the latest output, picks each client's
 * description budget (and keeps each budget's built description until the next rebuild), and
 * answers whether a run must wait for a server still connecting. */
#include "catalog.h"
#include "log.h"
#include "loop.h"
#include "sdkgen.h"
#include "settings.h"
#include "toolstate.h"
#include "upstream.h"
#include "util.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static struct sdk_output current;
static int version;
static int source_version;
static void (*listener)(void);
static json_t *exemplars;
static json_t *by_server_tool; /* "server\x1ftool" -> function entry */
static json_t *disabled;       /* SDK names of tools the config disables */
static json_t *servers;        /* [{"server","state","tools"}] as of the last rebuild */
static char *full_description; /* the full listing plus the not-ready note */
static json_t *discovery;      /* {"fn": [signature, summary]} for search_tools/describe */
static json_t *(*priority_source)(const char *principal);
static const char *describe_budget; /* CODEMCP_DESCRIBE_BUDGET */
static long discovery_wait = 5000;  /* CODEMCP_DISCOVERY_WAIT_MS */
static int discovery_tools;         /* CODEMCP_DISCOVERY_TOOLS */

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
    return full_description ? full_description : "";
}

json_t *cat_discovery(void)
{
    return discovery;
}

void cat_set_priority_source(json_t *(*source)(const char *principal))
{
    priority_source = source;
}

/* Clients that cut long descriptions or are known to take more. Matched against the
 * clientInfo.name of initialize, case-insensitively; 0 means the full listing. */
static const struct {
    const char *client;
    long budget;
} client_budgets[] = {
    {"claude-code", 2000}, /* cuts tool descriptions and instructions at 2048 */
    {"opencode", 8000},
    {NULL, 0},
};

long cat_budget_for(const char *client)
{
    const char *knob = describe_budget;
    if (knob && *knob) {
        if (strcmp(knob, "full") == 0)
            return 0;
        char *end;
        long v = strtol(knob, &end, 10);
        if (*end == '\0' && v >= 0)
            return v;
        log_warn("catalog", "CODEMCP_DESCRIBE_BUDGET=%s is not a number or \"full\"; using 2000",
                 knob);
        return 2000;
    }
    for (int i = 0; client && client_budgets[i].client; i++)
        if (strcasecmp(client, client_budgets[i].client) == 0)
            return client_budgets[i].budget;
    return 2000;
}

/* Built descriptions, one per budget: tools/list asks for one on every request and building
 * it is most of that request's cost. An entry holds while its inputs hold: the catalog of
 * the last cat_rebuild (functions, signatures, servers and their states; every rebuild
 * empties the cache), the budget, and the priority list (kept referenced, so an equal
 * pointer is the same unchanged array; otherwise compared by content). */
#define CAT_DESC_SLOTS 4
static struct cat_desc {
    int used;
    long budget;
    json_t *priority; /* the list it was built with (a reference), or NULL */
    char *description, *instructions;
    json_t *description_json; /* the description as a JSON string, made on first use */
} desc_cache[CAT_DESC_SLOTS];
static unsigned desc_next; /* the slot a miss replaces when none is free */

static void desc_cache_clear(void)
{
    for (int i = 0; i < CAT_DESC_SLOTS; i++) {
        json_decref(desc_cache[i].priority);
        free(desc_cache[i].description);
        free(desc_cache[i].instructions);
        json_decref(desc_cache[i].description_json);
        memset(&desc_cache[i], 0, sizeof desc_cache[i]);
    }
    desc_next = 0;
}

/* Builds what a client with this budget gets (0: the full listing) into e. */
static void desc_build(struct cat_desc *e, long budget, json_t *priority)
{
    if (budget == 0) { /* with no limit nothing overflows: the intro and the servers */
        char *unused = NULL;
        sdk_describe_budget(current.functions, current.signatures, servers, NULL, (size_t)1 << 30,
                            2000, &unused, &e->instructions);
        free(unused);
        e->description = xstrdup(cat_description());
    } else {
        sdk_describe_budget(current.functions, current.signatures, servers, priority,
                            (size_t)budget, 2000, &e->description, &e->instructions);
    }
    e->used = 1;
    e->budget = budget;
    e->priority = json_incref(priority);
}

static struct cat_desc *desc_lookup(long budget, const char *principal)
{
    json_t *priority = budget && priority_source ? priority_source(principal) : NULL;
    struct cat_desc *slot = NULL;
    for (int i = 0; i < CAT_DESC_SLOTS; i++) {
        struct cat_desc *e = &desc_cache[i];
        if (!e->used) {
            slot = slot ? slot : e;
            continue;
        }
        if (e->budget != budget)
            continue;
        if (e->priority == priority ||
            (e->priority && priority && json_equal(e->priority, priority))) {
            if (e->priority != priority) { /* the same list again: hold the newer one */
                json_decref(e->priority);
                e->priority = json_incref(priority);
            }
            return e;
        }
        slot = e; /* built with other priorities: stale */
        break;
    }
    if (!slot)
        slot = &desc_cache[desc_next++ % CAT_DESC_SLOTS];
    json_decref(slot->priority);
    free(slot->description);
    free(slot->instructions);
    json_decref(slot->description_json);
    memset(slot, 0, sizeof *slot);
    desc_build(slot, budget, priority);
    return slot;
}

char *cat_describe_for(const char *client, const char *principal, char **instructions)
{
    struct cat_desc *e = desc_lookup(cat_budget_for(client), principal);
    if (instructions)
        *instructions = xstrdup(e->instructions);
    return xstrdup(e->description);
}

json_t *cat_describe_json_for(const char *client, const char *principal)
{
    struct cat_desc *e = desc_lookup(cat_budget_for(client), principal);
    if (!e->description_json)
        e->description_json = json_string(e->description);
    return json_incref(e->description_json);
}

json_t *cat_functions(void)
{
    return current.functions;
}

json_t *cat_find(const char *server, const char *tool)
{
    char key[1024]; /* "server\x1ftool", cut as the snprintf that builds the index cuts it */
    size_t sl = strlen(server), tl = strlen(tool);
    if (sl > sizeof(key) - 1)
        sl = sizeof(key) - 1;
    memcpy(key, server, sl);
    size_t w = sl;
    if (w < sizeof(key) - 1)
        key[w++] = '\x1f';
    if (tl > sizeof(key) - 1 - w)
        tl = sizeof(key) - 1 - w;
    memcpy(key + w, tool, tl);
    key[w + tl] = '\0';
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

json_t *cat_discovery_tools(void)
{
    if (!discovery_tools)
        return NULL;
    return json_pack(
        "[{s:s, s:s, s:{s:s, s:{s:{s:[s,s], s:s}, s:{s:s, s:i, s:i}, s:{s:s}}, s:[s]}},"
        " {s:s, s:s, s:{s:s, s:{s:{s:s, s:s}}, s:[s]}}]",
        "name", "search_tools", "description",
        "Find functions of the connected MCP servers for a task in plain words, best first: "
        "[{name, signature, summary, server}]. query: the task, or a list of phrasings of it "
        "(use the API's own words too when you know them). Call the functions with "
        "execute_python.",
        "inputSchema", "type", "object", "properties", "query", "type", "string", "array",
        "description", "a task in plain words, or a list of up to 8 phrasings of it", "limit",
        "type", "integer", "minimum", 1, "maximum", 200, "server", "type", "string", "required",
        "query", "name", "describe", "description",
        "Full documentation of one function (signature, argument docs, learned result shape), "
        "or the functions of a server or a name prefix (a big server by groups).",
        "inputSchema", "type", "object", "properties", "name", "type", "string", "description",
        "a function, server or name prefix", "required", "name");
}

char *cat_discovery_code(const char *tool, json_t *arguments)
{
    static const char *const calls[][2] = {
        {"search_tools",
         "result = search_tools(_a.get('query'), _a.get('limit', 10), _a.get('server'))"},
        {"describe", "result = describe(_a.get('name'))"}};
    const char *call = NULL;
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
        if (strcmp(tool, calls[i][0]) == 0)
            call = calls[i][1];
    if (!call || !discovery_tools)
        return NULL;
    /* The arguments reach Python as base64 of their JSON: no quoting of model text in code. */
    char *js = json_is_object(arguments) ? json_dumps(arguments, JSON_COMPACT) : xstrdup("{}");
    size_t n = strlen(js);
    unsigned char *b64 = xmalloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock(b64, (const unsigned char *)js, (int)n);
    struct buf code = {0};
    buf_printf(&code,
               "import base64 as _b, json as _j\n"
               "_a = _j.loads(_b.b64decode('%s'))\n"
               "%s\n",
               (const char *)b64, call);
    free(b64);
    free(js);
    return buf_steal(&code);
}

static struct lp_timer wake_timer;
static int64_t wake_at; /* when wake_timer fires (0: not armed) */
static void (*wake_hook)(void);

void cat_set_wake_hook(void (*fn)(void))
{
    wake_hook = fn;
}

static void on_wake(void *ud)
{
    (void)ud;
    wake_at = 0;
    if (wake_hook)
        wake_hook();
}

/* Arms the wake-up for `at` (ms, now_ms clock) unless an earlier one is pending. */
static void wake_at_ms(int64_t at)
{
    if (wake_at && wake_at <= at)
        return;
    wake_at = at;
    int64_t in = at - now_ms();
    lp_timer_start(&wake_timer, in > 0 ? in : 1, on_wake, NULL);
}

int cat_code_waits(const char *code, int64_t queued_ms)
{
    int connecting = 0;
    for (size_t i = 0; i < up_count(); i++) {
        struct upstream *up = up_at(i);
        if (up->started_once || up->state != UP_CONNECTING)
            continue;
        connecting = 1;
        char *prefix = sdk_identifier(up->name);
        size_t plen = strlen(prefix);
        for (const char *p = strstr(code, prefix); p; p = strstr(p + 1, prefix)) {
            int starts = p == code || !(p[-1] == '_' || (p[-1] >= '0' && p[-1] <= '9') ||
                                        ((p[-1] | 0x20) >= 'a' && (p[-1] | 0x20) <= 'z'));
            if (starts && p[plen] == '_') {
                free(prefix);
                return 1;
            }
        }
        free(prefix);
    }
    if (!connecting || !(strstr(code, "search_tools") || strstr(code, "describe")))
        return 0;
    /* Searching only: a short wait, then the run goes and search_tools / describe name the
     * servers still connecting (cat_unavailable reaches the worker with the run). */
    int64_t until = queued_ms + discovery_wait;
    if (now_ms() >= until)
        return 0;
    wake_at_ms(until);
    return 1;
}

json_t *cat_unavailable(void)
{
    json_t *out = json_array();
    for (size_t i = 0; i < up_count(); i++) {
        struct upstream *up = up_at(i);
        if (up->tools || up->state == UP_READY)
            continue;
        char *prefix = sdk_identifier(up->name);
        json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:s}", "server", up->name, "prefix",
                                             prefix, "state", up_state_name(up->state), "error",
                                             up->error ? up->error : ""));
        free(prefix);
    }
    return out;
}

/* How many of up's tools are on (the count the description and instructions show). */
static size_t enabled_tools(struct upstream *up)
{
    size_t i, n = 0;
    json_t *t;
    json_array_foreach(up->tools, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        n += name && ts_enabled(up->name, name);
    }
    return n;
}

static json_t *gather_input(void)
{
    json_t *input = json_array();
    json_decref(disabled);
    disabled = json_array();
    json_decref(servers);
    servers = json_array();
    for (size_t i = 0; i < up_count(); i++) {
        struct upstream *up = up_at(i);
        if (up->state != UP_DISABLED || up->tools)
            json_array_append_new(servers, json_pack("{s:s, s:s, s:I}", "server", up->name, "state",
                                                     up_state_name(up->state), "tools",
                                                     (json_int_t)enabled_tools(up)));
        /* A crashed server keeps its functions: calls then fail with a clear ToolError
         * instead of a NameError in the agent's code. */
        if (!up->tools || up->state == UP_DISABLED) /* turned off at run time */
            continue;
        note_disabled(up);
        cfg_check_tools(up->cfg, up->tools); /* once: settings naming no tool of it */
        json_t *entry = json_pack("{s:s, s:O}", "server", up->name, "tools", up->tools);
        /* Defaults from the config, overridden at run time by the admin (toolstate). */
        json_t *conf = ts_effective_config(up->name, up->cfg ? up->cfg->tools : NULL, up->tools);
        if (conf)
            json_object_set_new(entry, "config", conf);
        json_array_append_new(input, entry);
    }
    return input;
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
    desc_cache_clear(); /* gather_input replaces servers even when nothing else changes */
    json_t *input = gather_input();
    struct sdk_output next = {0};
    int rc = sdk_generate(input, exemplars, &next);
    json_decref(input);
    if (rc < 0) {
        log_error("catalog", "SDK generation failed; keeping the previous SDK");
        sdk_output_free(&next);
        return;
    }
    char *note = sdk_servers_note(servers);
    struct buf full = {0};
    buf_printf(&full, "%s%s", next.description, note);
    free(note);
    int changed = !current.source || strcmp(current.source, next.source) != 0 ||
                  strcmp(full_description, full.data) != 0;
    free(full_description);
    full_description = buf_steal(&full);
    if (!changed) {
        sdk_output_free(&next);
        return;
    }
    if (!current.source || strcmp(current.source, next.source) != 0)
        source_version++;
    sdk_output_free(&current);
    current = next;
    index_functions();
    json_decref(discovery);
    discovery = json_object();
    const char *fn;
    json_t *f;
    json_object_foreach(current.functions, fn, f)
    {
        json_t *sig = json_object_get(current.signatures, fn);
        json_object_set_new(discovery, fn,
                            json_pack("[o,s]", sig ? json_incref(sig) : json_string(fn),
                                      json_string_value(json_object_get(f, "summary"))
                                          ? json_string_value(json_object_get(f, "summary"))
                                          : ""));
    }
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

void cat_init(const struct settings *s)
{
    describe_budget = s->describe_budget;
    discovery_wait = s->discovery_wait_ms;
    discovery_tools = s->discovery_tools;
    if (!current.source)
        cat_rebuild();
}

void cat_free(void)
{
    ts_free(); /* the tool states the catalog is built from (toolstate.c, this module's) */
    sdk_output_free(&current);
    memset(&current, 0, sizeof(current));
    json_decref(by_server_tool);
    by_server_tool = NULL;
    json_decref(exemplars);
    exemplars = NULL;
    json_decref(disabled);
    disabled = NULL;
    json_decref(servers);
    servers = NULL;
    free(full_description);
    full_description = NULL;
    desc_cache_clear();
    json_decref(discovery);
    discovery = NULL;
    if (wake_at)
        lp_timer_stop(&wake_timer);
    wake_at = 0;
}
