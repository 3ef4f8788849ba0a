/* setup_harnesses — the harnesses `codemcp setup` knows: where each keeps its MCP servers, in
 * which object, what an entry looks like there, and how one becomes an entry of codemcp's
 * config. Sources of each format (their public docs, checked again for Claude Code against the
 * real `claude mcp list/get` in tests/clients):
 *   claude-code     user ~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json), project ./.mcp.json,
 * local ~/.claude.json's projects.<cwd>; "mcpServers"; entries carry "type": "stdio" | "http" |
 *                   "sse" (what `claude mcp add -s user|project|local` writes)
 *   claude-desktop  ~/.config/Claude/claude_desktop_config.json; "mcpServers"
 *   cursor          ~/.cursor/mcp.json, project ./.cursor/mcp.json; "mcpServers"
 *   vscode          ./.vscode/mcp.json; "servers", entries with "type": "stdio"
 *   windsurf        ~/.codeium/windsurf/mcp_config.json; "mcpServers"; remote: "serverUrl"
 *   gemini-cli      ~/.gemini/settings.json, project ./.gemini/settings.json; "mcpServers";
 *                   remote: "httpUrl" (Streamable HTTP) or "url" (SSE)
 *   cline           ~/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/
 *                   cline_mcp_settings.json; "mcpServers" (+ alwaysAllow, autoApprove)
 *   roo-code        ~/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/
 *                   mcp_settings.json, project ./.roo/mcp.json; "mcpServers"
 *   opencode        $OPENCODE_CONFIG, else <config dir>/opencode/opencode.json(c); "mcp", in
 *                   the format codemcp reads natively */
#include "config.h"
#include "setup_int.h"
#include "settings.h"
#include "util.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum shape {
    SHAPE_PLAIN,    /* {"command", "args", "env"} */
    SHAPE_TYPED,    /* the same with "type": "stdio" */
    SHAPE_OPENCODE, /* {"type": "local", "command": [...], "environment"} */
};

struct harness {
    const char *name;    /* setup target and instance label */
    const char *env;     /* variable naming the file, or NULL */
    const char *user;    /* relative to $HOME, or NULL */
    const char *project; /* relative to the cwd, or NULL */
    const char *key;     /* the servers object */
    enum shape shape;
    int url_is_sse;      /* a bare "url" is an SSE endpoint (gemini-cli) */
    const char *dir_env; /* a variable naming the directory of the user file instead of $HOME */
};

static const struct harness harnesses[] = {
    {.name = "opencode", .env = "OPENCODE_CONFIG", .key = "mcp", .shape = SHAPE_OPENCODE},
    {.name = "claude-desktop",
     .env = "CLAUDE_DESKTOP_CONFIG",
     .user = ".config/Claude/claude_desktop_config.json",
     .key = "mcpServers"},
    {.name = "cursor",
     .env = "CURSOR_MCP_CONFIG",
     .user = ".cursor/mcp.json",
     .project = ".cursor/mcp.json",
     .key = "mcpServers"},
    {.name = "vscode",
     .env = "VSCODE_MCP_CONFIG",
     .project = ".vscode/mcp.json",
     .key = "servers",
     .shape = SHAPE_TYPED},
    {.name = "claude-code",
     .user = ".claude.json",
     .project = ".mcp.json",
     .key = "mcpServers",
     .shape = SHAPE_TYPED,
     .dir_env = "CLAUDE_CONFIG_DIR"},
    {.name = "windsurf", .user = ".codeium/windsurf/mcp_config.json", .key = "mcpServers"},
    {.name = "gemini-cli",
     .user = ".gemini/settings.json",
     .project = ".gemini/settings.json",
     .key = "mcpServers",
     .url_is_sse = 1},
    {.name = "cline",
     .user = ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/"
             "cline_mcp_settings.json",
     .key = "mcpServers"},
    {.name = "roo-code",
     .user = ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/"
             "mcp_settings.json",
     .project = ".roo/mcp.json",
     .key = "mcpServers"},
};
#define N_HARNESSES (sizeof(harnesses) / sizeof(harnesses[0]))

const struct harness *harness_find(const char *name)
{
    for (size_t i = 0; i < N_HARNESSES; i++)
        if (strcmp(harnesses[i].name, name) == 0)
            return &harnesses[i];
    return NULL;
}

const struct harness *harness_at(size_t i)
{
    return i < N_HARNESSES ? &harnesses[i] : NULL;
}

const char *harness_name(const struct harness *h)
{
    return h->name;
}

int harness_servers_at(const struct harness *h, enum harness_scope scope, struct servers_at *at)
{
    at->n = 0;
    if (scope != SCOPE_LOCAL) {
        at->keys[at->n++] = h->key;
        return 0;
    }
    if (strcmp(h->name, "claude-code") != 0) {
        fprintf(stderr, "codemcp setup: only claude-code has a local scope\n");
        return -1;
    }
    if (!getcwd(at->cwd, sizeof(at->cwd))) {
        fprintf(stderr, "codemcp setup: cannot name the current directory\n");
        return -1;
    }
    at->keys[at->n++] = "projects"; /* ~/.claude.json: projects.<cwd>.mcpServers */
    at->keys[at->n++] = at->cwd;
    at->keys[at->n++] = h->key;
    return 0;
}

json_t *servers_get(json_t *root, const struct servers_at *at)
{
    for (size_t i = 0; root && i < at->n; i++)
        root = json_object_get(root, at->keys[i]);
    return root;
}

int harness_is_opencode(const struct harness *h)
{
    return h->shape == SHAPE_OPENCODE;
}

/* opencode: <config dir>/opencode/opencode.json, else .jsonc. */
static int opencode_path(char *out, size_t n, char *why, size_t wn)
{
    char dir[PATH_MAX];
    if (!cfg_config_dir(dir, sizeof(dir))) {
        snprintf(why, wn, "no HOME: cannot find opencode's config");
        return -1;
    }
    static const char *const names[] = {"opencode.json", "opencode.jsonc"};
    for (int i = 0; i < 2; i++)
        if (snprintf(out, n, "%s/opencode/%s", dir, names[i]) < (int)n && access(out, F_OK) == 0)
            return 0;
    snprintf(why, wn,
             "no opencode config at %s/opencode/opencode.json (or .jsonc); set OPENCODE_CONFIG to "
             "its path",
             dir);
    return -1;
}

static const struct settings *set; /* harness_use_settings */

void harness_use_settings(const struct settings *s)
{
    set = s;
}

/* The value of a harness's own variable (each is a row of settings.def). */
static const char *harness_env(const char *name)
{
    static const struct {
        const char *name;
        size_t off;
    } vars[] = {
        {"OPENCODE_CONFIG", offsetof(struct settings, opencode_config)},
        {"CLAUDE_DESKTOP_CONFIG", offsetof(struct settings, claude_desktop_config)},
        {"CURSOR_MCP_CONFIG", offsetof(struct settings, cursor_mcp_config)},
        {"VSCODE_MCP_CONFIG", offsetof(struct settings, vscode_mcp_config)},
        {"CLAUDE_CONFIG_DIR", offsetof(struct settings, claude_config_dir)},
    };
    for (size_t i = 0; name && i < sizeof(vars) / sizeof(vars[0]); i++)
        if (strcmp(vars[i].name, name) == 0)
            return *(const char *const *)((const char *)set + vars[i].off);
    return NULL;
}

/* The file for scope, or -1 with why. */
static int locate(const struct harness *h, enum harness_scope scope, const char *file, char *out,
                  size_t n, char *why, size_t wn)
{
    const char *env = harness_env(h->env), *home = set->home;
    const char *dir = harness_env(h->dir_env);
    char cwd[PATH_MAX];
    if (file && *file)
        snprintf(out, n, "%s", file);
    else if (env && *env && scope == SCOPE_DEFAULT)
        snprintf(out, n, "%s", env);
    else if (h->shape == SHAPE_OPENCODE)
        return scope == SCOPE_PROJECT ? (snprintf(why, wn, "opencode: no project scope here"), -1)
                                      : opencode_path(out, n, why, wn);
    else if (scope == SCOPE_PROJECT || (scope == SCOPE_DEFAULT && !h->user)) { /* ./file */
        if (!h->project)
            return snprintf(why, wn, "%s has no project scope", h->name), -1;
        if (!getcwd(cwd, sizeof(cwd)) || snprintf(out, n, "%s/%s", cwd, h->project) >= (int)n)
            return snprintf(why, wn, "cannot name %s in the current directory", h->project), -1;
    } else if (!h->user) { /* user and local scope: the file under $HOME */
        return snprintf(why, wn, "%s has no user scope", h->name), -1;
    } else if (dir && *dir) {
        if (snprintf(out, n, "%s/%s", dir, h->user) >= (int)n)
            return snprintf(why, wn, "$%s is too long", h->dir_env), -1;
    } else if (!home || !*home || snprintf(out, n, "%s/%s", home, h->user) >= (int)n) {
        return snprintf(why, wn, "no HOME: cannot find %s's config (pass --file)", h->name), -1;
    }
    return 0;
}

int harness_path(const struct harness *h, enum harness_scope scope, const char *file, char *out,
                 size_t n)
{
    char why[PATH_MAX + 200];
    if (locate(h, scope, file, out, n, why, sizeof(why)) < 0) {
        fprintf(stderr, "codemcp setup: %s\n", why);
        return -1;
    }
    return sf_absolute(out, n);
}

int harness_found(const struct harness *h, enum harness_scope scope, char *out, size_t n)
{
    char why[PATH_MAX + 200];
    return locate(h, scope, NULL, out, n, why, sizeof(why)) == 0 && out[0] == '/' &&
           access(out, F_OK) == 0;
}

int harness_is_ours(const struct harness *h, json_t *e)
{
    json_t *cmd = json_object_get(e, "command");
    const char *c = h->shape == SHAPE_OPENCODE ? json_string_value(json_array_get(cmd, 0))
                                               : json_string_value(cmd);
    const char *base = c ? strrchr(c, '/') : NULL;
    return c && strcmp(base ? base + 1 : c, SETUP_ENTRY) == 0;
}

/* The command a harness should run: this binary's absolute path (harnesses started from a
 * desktop may not have its directory on PATH). */
static json_t *launch_command(const char *harness)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return json_string(SETUP_ENTRY);
    self[n] = '\0';
    printf("note: %s will launch %s by its absolute path (harnesses started from a desktop may "
           "not have its directory on PATH)\n",
           harness, self);
    return json_string(self);
}

json_t *harness_entry(const struct harness *h, const char *cm_path)
{
    json_t *cmd = launch_command(h->name);
    json_t *env =
        json_pack("{s:s, s:s}", "CODEMCP_CONFIG", cm_path, "CODEMCP_INSTANCE_LABEL", h->name);
    if (h->shape == SHAPE_OPENCODE)
        return json_pack("{s:s, s:[o], s:o, s:b}", "type", "local", "command", cmd, "environment",
                         env, "enabled", 1);
    json_t *e = json_pack("{s:o, s:[], s:o}", "command", cmd, "args", "env", env);
    if (h->shape == SHAPE_TYPED) {
        json_t *typed = json_pack("{s:s}", "type", "stdio");
        json_object_update(typed, e);
        json_decref(e);
        e = typed;
    }
    return e;
}

/* ---- entries into codemcp's format ----------------------------------------------------------- */

/* A harness's mcpServers entry as codemcp's mcpServers entry (new reference): its own keys
 * (alwaysAllow, autoApprove, trust, includeTools...) are dropped, and said. */
static json_t *normalize(const struct harness *h, const char *name, json_t *e)
{
    json_t *o = json_object();
    struct buf dropped = {0};
    const char *k;
    json_t *v;
    json_object_foreach(e, k, v)
    {
        if (strcmp(k, "serverUrl") == 0) /* windsurf */
            json_object_set(o, "url", v);
        else if (strcmp(k, "httpUrl") == 0) { /* gemini-cli: Streamable HTTP */
            json_object_set(o, "url", v);
            json_object_set_new(o, "type", json_string("http"));
        } else if (strcmp(k, "url") == 0 && h->url_is_sse && !json_object_get(e, "httpUrl")) {
            json_object_set(o, "url", v);
            json_object_set_new(o, "type", json_string("sse"));
        } else if (cfg_entry_key_known(k) && !json_object_get(o, k))
            json_object_set(o, k, v);
        else if (!cfg_entry_key_known(k))
            buf_printf(&dropped, " %s", k);
    }
    if (dropped.len)
        printf("note: %s's server \"%s\": left out what codemcp has no use for:%s\n", h->name, name,
               dropped.data);
    buf_free(&dropped);
    return o;
}

/* An mcpServers entry in opencode's format (new reference). */
static json_t *to_opencode(json_t *e)
{
    json_t *o = json_object();
    const char *url = json_string_value(json_object_get(e, "url"));
    json_object_set_new(o, "type", json_string(url ? "remote" : "local"));
    if (url) {
        json_object_set(o, "url", json_object_get(e, "url"));
        if (json_object_get(e, "headers"))
            json_object_set(o, "headers", json_object_get(e, "headers"));
    } else {
        json_t *cmd = json_array();
        if (json_object_get(e, "command"))
            json_array_append(cmd, json_object_get(e, "command"));
        size_t i;
        json_t *a;
        json_array_foreach(json_object_get(e, "args"), i, a) json_array_append(cmd, a);
        json_object_set_new(o, "command", cmd);
        if (json_object_get(e, "env"))
            json_object_set(o, "environment", json_object_get(e, "env"));
        if (json_object_get(e, "cwd"))
            json_object_set(o, "cwd", json_object_get(e, "cwd"));
    }
    if (json_is_true(json_object_get(e, "disabled")))
        json_object_set_new(o, "enabled", json_false());
    return o;
}

json_t *harness_to_codemcp(const struct harness *h, const char *name, json_t *e, int opencode_fmt)
{
    if (h->shape == SHAPE_OPENCODE) /* the caller refuses an mcpServers codemcp config */
        return json_incref(e);
    json_t *n = normalize(h, name, e);
    if (!opencode_fmt)
        return n;
    json_t *o = to_opencode(n);
    json_decref(n);
    return o;
}

/* ---- opencode's "tools" settings ------------------------------------------------------------ */

/* opencode names an MCP tool <server>_<tool> with [^A-Za-z0-9_-] replaced by '_'. */
static void opencode_prefix(const char *server, char *out, size_t n)
{
    size_t i = 0;
    for (; server[i] && i + 2 < n; i++) {
        char c = server[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-';
        out[i] = ok ? c : '_';
    }
    out[i++] = '_';
    out[i] = 0;
}

/* One tools object (opencode's top level or an agent's): settings about moved servers leave it.
 * At the top level (translate) "<server>_<tool>": false becomes tools.<tool>.enabled = false in
 * codemcp's entry for that server and "<server>_*": false turns the server off; an agent's
 * settings cannot be scoped to one agent in codemcp, so they are only reported. */
static int fix_tools_object(json_t *tools, const char *where, json_t *moved, int translate)
{
    int changed = 0;
    const char *key, *server;
    json_t *v, *entry;
    void *tmp;
    json_object_foreach_safe(tools, tmp, key, v)
    {
        json_object_foreach(moved, server, entry)
        {
            char prefix[300];
            opencode_prefix(server, prefix, sizeof(prefix));
            if (strncmp(key, prefix, strlen(prefix)) != 0)
                continue;
            const char *rest = key + strlen(prefix);
            if (!translate) {
                printf("warning: %s: \"%s\" removed: it applied to one agent, and codemcp's "
                       "enable/disable apply to every agent (see `codemcp disable-tool`)\n",
                       where, key);
            } else if (json_is_false(v) && strcmp(rest, "*") == 0) {
                json_object_set_new(entry, "enabled", json_false());
                printf("%s: \"%s\": false -> server %s disabled in codemcp's config\n", where, key,
                       server);
            } else if (json_is_false(v) && !strpbrk(rest, "*?[")) {
                json_t *t = json_object_get(entry, "tools");
                if (!json_is_object(t)) {
                    t = json_object();
                    json_object_set_new(entry, "tools", t);
                }
                json_object_set_new(t, rest, json_pack("{s:b}", "enabled", 0));
                printf("%s: \"%s\": false -> %s.tools.%s.enabled = false in codemcp's config\n",
                       where, key, server, rest);
            } else if (json_is_false(v)) {
                printf("warning: %s: \"%s\": false names tools of %s by a pattern codemcp does "
                       "not translate; disable them with `codemcp disable-tool %s TOOL -d`\n",
                       where, key, server, server);
            } else {
                printf("%s: \"%s\" removed (those tools are reached through execute_python now)\n",
                       where, key);
            }
            json_object_del(tools, key);
            changed = 1;
            break;
        }
    }
    return changed;
}

int harness_fix_opencode_tools(struct setup_file *f, json_t *moved)
{
    json_t *tools = json_object_get(f->root, "tools");
    const char *top[] = {"tools"};
    if (json_is_object(tools) && fix_tools_object(tools, "opencode \"tools\"", moved, 1) &&
        sf_edit(f, top, 1, tools) < 0)
        return -1;
    const char *name;
    json_t *agent;
    json_object_foreach(json_object_get(f->root, "agent"), name, agent)
    {
        json_t *t = json_object_get(agent, "tools");
        char where[300];
        snprintf(where, sizeof(where), "opencode agent \"%s\" tools", name);
        const char *keys[] = {"agent", name, "tools"};
        if (json_is_object(t) && fix_tools_object(t, where, moved, 0) && sf_edit(f, keys, 3, t) < 0)
            return -1;
    }
    return 0;
}

/* opencode starts a local server with its whole environment ({...process.env,
 * ...environment}); codemcp passes only a minimal set plus the server's own "environment"
 * (upstream_stdio.c). Names the adopted local servers that interpolate no variable: those
 * may have relied on something inherited, such as a token exported in the shell. */
void harness_note_inherited_env(json_t *moved)
{
    const char *name;
    json_t *e;
    struct buf list = {0};
    json_object_foreach(moved, name, e)
    {
        json_t *type = json_object_get(e, "type");
        if ((type && (!json_is_string(type) || strcmp(json_string_value(type), "local"))) ||
            !json_object_get(e, "command") || json_is_true(json_object_get(e, "inheritEnv")))
            continue;
        char *text = json_dumps(e, JSON_COMPACT);
        if (text && !strstr(text, "{env:") && !strstr(text, "${"))
            buf_printf(&list, " %s", name);
        free(text);
    }
    if (list.len)
        printf("note: opencode gave local servers its whole environment; codemcp gives them only "
               "HOME, LOGNAME, PATH, SHELL, TERM, USER, LANG, LC_*, TZ, TMPDIR, XDG_* and their "
               "own \"environment\". These name no {env:VAR} and may have relied on an inherited "
               "variable (a token exported in your shell):%s. If one does, add \"environment\": "
               "{\"VAR\": \"{env:VAR}\"} or \"inheritEnv\": true to it in codemcp's config.\n",
               list.data);
    buf_free(&list);
}
