/* setup_clients — `codemcp setup claude-desktop | cursor | vscode`: adopt the MCP servers of a
 * harness that keeps them in an `mcpServers` file (VS Code: `servers`), and the pieces setup
 * opencode shares with them (the command the harness should launch, stale `tools` settings).
 *
 * The harness file ($CLAUDE_DESKTOP_CONFIG / ~/.config/Claude/claude_desktop_config.json,
 * $CURSOR_MCP_CONFIG / ~/.cursor/mcp.json, $VSCODE_MCP_CONFIG / ./.vscode/mcp.json, or --file)
 * keeps everything but its servers object, which becomes one entry launching this gateway by
 * its absolute path. The servers move into codemcp's config: verbatim into an `mcpServers`
 * file, converted into an opencode-format (`mcp`) one. Both files are edited in place with
 * cfgedit (comments, other keys and order kept), each backed up first as <file>.bak.<UTC time>;
 * codemcp's config is written first, so a failure in between leaves the servers in both places,
 * never in neither. Running it again finds only codemcp and changes nothing. --dry-run prints
 * the plan. Blocking file I/O; a command-line tool, never inside the gateway. */
#include "cfgedit.h"
#include "config.h"
#include "jsonc.h"
#include "setup.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ENTRY_NAME "codemcp"

struct harness {
    const char *name;     /* setup target and instance label */
    const char *env;      /* variable naming the file */
    const char *home_rel; /* default, relative to $HOME ("" = relative to the cwd) */
    const char *cwd_rel;
    const char *key; /* the servers object */
};

static const struct harness harnesses[] = {
    {"claude-desktop", "CLAUDE_DESKTOP_CONFIG", ".config/Claude/claude_desktop_config.json", NULL,
     "mcpServers"},
    {"cursor", "CURSOR_MCP_CONFIG", ".cursor/mcp.json", NULL, "mcpServers"},
    {"vscode", "VSCODE_MCP_CONFIG", NULL, ".vscode/mcp.json", "servers"},
};

json_t *setup_launch_command(const char *harness)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return json_pack("[s]", ENTRY_NAME);
    self[n] = '\0';
    printf("note: %s will launch %s by its absolute path (harnesses started from a desktop may "
           "not have its directory on PATH)\n",
           harness, self);
    return json_pack("[s]", self);
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

int setup_fix_opencode_tools(json_t *oc_root, json_t *moved)
{
    int changed = 0;
    json_t *tools = json_object_get(oc_root, "tools");
    if (json_is_object(tools))
        changed |= fix_tools_object(tools, "opencode \"tools\"", moved, 1);
    const char *name;
    json_t *agent;
    json_object_foreach(json_object_get(oc_root, "agent"), name, agent)
    {
        json_t *t = json_object_get(agent, "tools");
        char where[300];
        snprintf(where, sizeof(where), "opencode agent \"%s\" tools", name);
        if (json_is_object(t))
            changed |= fix_tools_object(t, where, moved, 0);
    }
    return changed;
}

/* ---- mcpServers harnesses -------------------------------------------------------------------- */

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

struct text_file {
    char path[PATH_MAX];
    int exists;
    char *text; /* as on disk ("" when missing) */
    json_t *root;
};

static int load(struct text_file *f)
{
    size_t len;
    f->text = read_file(f->path, &len);
    if (!f->text) {
        if (errno != ENOENT) {
            fprintf(stderr, "codemcp setup: %s: %s\n", f->path, strerror(errno));
            return -1;
        }
        f->text = xstrdup("");
        f->root = json_object();
        return 0;
    }
    f->exists = 1;
    char *copy = xstrndup(f->text, len);
    jsonc_strip(copy, len);
    json_error_t jerr;
    int blank = strspn(copy, " \t\r\n") == len;
    f->root = blank ? json_object() : json_loadb(copy, len, 0, &jerr);
    free(copy);
    if (!json_is_object(f->root)) {
        if (f->root)
            fprintf(stderr, "codemcp setup: %s: the top level is not an object\n", f->path);
        else
            fprintf(stderr, "codemcp setup: %s:%d:%d: %s (nothing was changed)\n", f->path,
                    jerr.line, jerr.column, jerr.text);
        return -1;
    }
    return 0;
}

static int backup(const char *path)
{
    char out[PATH_MAX + 64];
    if (setup_backup(path, out, sizeof(out)) < 0) {
        fprintf(stderr, "codemcp setup: cannot back up %s: %s (nothing more was changed)\n", path,
                strerror(errno));
        return -1;
    }
    printf("backed up %s to %s\n", path, out);
    return 0;
}

/* Applies keys = value to f->text (in memory); -1 with the error printed. */
static int edit(struct text_file *f, const char *k1, const char *k2, json_t *value)
{
    const char *keys[] = {k1, k2};
    char why[600];
    char *next = ce_edit_text(f->text, keys, k2 ? 2 : 1, value, CE_PRETTY, why, sizeof(why));
    if (!next || !ce_text_holds(next, keys, k2 ? 2 : 1, value)) {
        fprintf(stderr, "codemcp setup: cannot edit %s: %s (nothing was changed)\n", f->path,
                next ? "the edit did not check out" : why);
        free(next);
        return -1;
    }
    free(f->text);
    f->text = next;
    return 0;
}

static int write_back(struct text_file *f, unsigned mode)
{
    char why[600], dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", f->path);
    for (char *p = dir + 1; *p; p++) /* mkdir -p of the parent */
        if (*p == '/') {
            *p = 0;
            mkdir(dir, 0700);
            *p = '/';
        }
    if (f->exists && backup(f->path) < 0)
        return -1;
    if (ce_write_atomic(f->path, f->text, strlen(f->text), mode, 0, why, sizeof(why)) < 0) {
        fprintf(stderr, "codemcp setup: %s\n", why);
        return -1;
    }
    return 0;
}

static int harness_path(const struct harness *h, const char *file, char *out, size_t n)
{
    const char *env = getenv(h->env);
    const char *home = getenv("HOME");
    if (file && *file)
        snprintf(out, n, "%s", file);
    else if (env && *env)
        snprintf(out, n, "%s", env);
    else if (h->cwd_rel) {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof(cwd)))
            return -1;
        return snprintf(out, n, "%s/%s", cwd, h->cwd_rel) < (int)n ? 0 : -1;
    } else if (home && *home)
        return snprintf(out, n, "%s/%s", home, h->home_rel) < (int)n ? 0 : -1;
    else
        return -1;
    return 0;
}

static int is_ours(json_t *e)
{
    const char *c = json_string_value(json_object_get(e, "command"));
    const char *base = c ? strrchr(c, '/') : NULL;
    return c && strcmp(base ? base + 1 : c, ENTRY_NAME) == 0;
}

static int setup_harness(const struct harness *h, const char *file, const char *codemcp_config,
                         int dry_run)
{
    struct text_file hf = {0}, cm = {0};
    json_t *entry = NULL, *moved = json_object();
    int rc = 1;
    if (harness_path(h, file, hf.path, sizeof(hf.path)) < 0 || load(&hf) < 0)
        goto out;
    if (!hf.exists) {
        fprintf(stderr, "codemcp setup: %s does not exist (set %s or pass --file PATH)\n", hf.path,
                h->env);
        goto out;
    }
    json_t *servers = json_object_get(hf.root, h->key);
    if (servers && !json_is_object(servers)) {
        fprintf(stderr, "codemcp setup: %s: \"%s\" is not an object\n", hf.path, h->key);
        goto out;
    }
    const char *name;
    json_t *e;
    json_object_foreach(servers, name, e)
    {
        if (strcmp(name, ENTRY_NAME) != 0)
            json_object_set(moved, name, e);
        else if (!is_ours(e)) {
            fprintf(stderr,
                    "codemcp setup: %s already has a server named \"%s\" that does not run "
                    "codemcp: rename it, then run setup again\n",
                    hf.path, ENTRY_NAME);
            goto out;
        }
    }
    if (json_object_get(servers, ENTRY_NAME) && !json_object_size(moved)) {
        printf("%s already launches codemcp (%s): nothing to do\n", h->name, hf.path);
        rc = 0;
        goto out;
    }
    if (codemcp_config && *codemcp_config)
        snprintf(cm.path, sizeof(cm.path), "%s", codemcp_config);
    else if (!cfg_default_path(cm.path, sizeof(cm.path))) {
        fprintf(stderr, "codemcp setup: no HOME: cannot place codemcp's config (use -c)\n");
        goto out;
    }
    if (cm.path[0] != '/') {
        char cwd[PATH_MAX], rel[PATH_MAX];
        snprintf(rel, sizeof(rel), "%s", cm.path);
        if (!getcwd(cwd, sizeof(cwd)) ||
            snprintf(cm.path, sizeof(cm.path), "%s/%s", cwd, rel) >= (int)sizeof(cm.path))
            goto out;
    }
    if (load(&cm) < 0)
        goto out;
    int opencode_fmt = json_object_get(cm.root, "mcp") != NULL;
    const char *root_key = opencode_fmt ? "mcp" : "mcpServers";
    int fresh = !json_object_size(cm.root);
    if (fresh) { /* a new (or empty) config: written out whole, indented */
        json_t *doc = json_pack("{s:O}", root_key, moved);
        char *t = json_dumps(doc, JSON_INDENT(2));
        json_decref(doc);
        free(cm.text);
        cm.text = xmalloc(strlen(t) + 2);
        sprintf(cm.text, "%s\n", t);
        free(t);
    }
    if (!fresh && !json_object_get(cm.root, root_key)) {
        json_t *empty = json_object();
        int erc = edit(&cm, root_key, NULL, empty);
        json_decref(empty);
        if (erc < 0)
            goto out;
    }
    json_object_foreach(fresh ? NULL : moved, name, e)
    {
        json_t *conv = opencode_fmt ? to_opencode(e) : json_incref(e);
        json_t *old = json_object_get(json_object_get(cm.root, root_key), name);
        if (old && !json_equal(old, conv))
            printf("warning: codemcp already had a server \"%s\": %s's entry replaces it\n", name,
                   h->name);
        int erc = edit(&cm, root_key, name, conv);
        json_decref(conv);
        if (erc < 0)
            goto out;
    }
    json_t *cmd = setup_launch_command(h->name);
    entry = json_pack("{s:o, s:[], s:{s:s, s:s}}", "command", json_incref(json_array_get(cmd, 0)),
                      "args", "env", "CODEMCP_CONFIG", cm.path, "CODEMCP_INSTANCE_LABEL", h->name);
    json_decref(cmd);
    if (strcmp(h->name, "vscode") == 0)
        json_object_set_new(entry, "type", json_string("stdio"));
    json_t *ours = json_pack("{s:O}", ENTRY_NAME, entry);
    int erc = edit(&hf, h->key, NULL, ours);
    json_decref(ours);
    if (erc < 0)
        goto out;
    printf("%s %zu server%s from %s into %s:", dry_run ? "would move" : "moving",
           json_object_size(moved), json_object_size(moved) == 1 ? "" : "s", hf.path, cm.path);
    json_object_foreach(moved, name, e) printf(" %s", name);
    printf("\n");
    if (dry_run) {
        printf("would write %s:\n%s\n(dry run: nothing written)\n", hf.path, hf.text);
        rc = 0;
        goto out;
    }
    if (write_back(&cm, 0600) < 0 || write_back(&hf, 0600) < 0)
        goto out;
    printf("%s now launches codemcp with every server; restart %s\n", h->name, h->name);
    rc = 0;
out:
    json_decref(entry);
    json_decref(moved);
    json_decref(hf.root);
    json_decref(cm.root);
    free(hf.text);
    free(cm.text);
    return rc;
}

int setup_clients_main(const char *target, const char *file, const char *codemcp_config,
                       int dry_run)
{
    for (size_t i = 0; i < sizeof(harnesses) / sizeof(harnesses[0]); i++)
        if (strcmp(harnesses[i].name, target) == 0)
            return setup_harness(&harnesses[i], file, codemcp_config, dry_run);
    return -1;
}
