/* config — reads mcp.json (opencode's {"mcp": ...} or the common {"mcpServers": ...} format)
 * and `--wrap "<command line>"` into a flat list of upstream server descriptions.
 *
 * It only reads and validates: it never connects, spawns or writes the file. A bad server entry
 * or a missing environment variable disables that one server (disabled_reason says why, naming
 * the key or variable); only a file that cannot be used at all fails the load. The whole JSON
 * document is kept (root, entry) so that later write-backs preserve the user's other keys.
 *
 * File rules (also documented in mcp.json.example and the README):
 * - opencode entry: type "local"|"remote" (inferred from command/url when absent), command
 *   (array, or a string split like a shell would), environment {}, cwd, url, headers {},
 *   enabled, timeout (ms), oauth (false|{...}), tools {name: {enabled, mutation}}.
 * - mcpServers entry: command (string, the executable as-is) + args [], env {}, cwd, url,
 *   headers {}, type "stdio"|"http"|"streamable-http"|"sse" (optional), disabled/enabled,
 *   timeout (ms; a value below 1000 is read as seconds, as Cline writes it), tools, oauth.
 * - Interpolation in command items, args, environment/env values, cwd, url and header values:
 *   {env:VAR}, ${VAR}, ${VAR:-default} (default when unset or empty). No escapes; text that
 *   does not match these forms is copied literally. A leading "~/" in the command (argv[0])
 *   and in cwd becomes $HOME. */
#ifndef CODEMCP_CONFIG_H
#define CODEMCP_CONFIG_H

#include <stddef.h>

#include <jansson.h>

#define CFG_DEFAULT_TIMEOUT_MS 30000
#define CFG_MAX_CONNECTIONS    4096 /* the largest "maxConnections" accepted */

enum cfg_type { CFG_LOCAL, CFG_REMOTE };

struct cfg_server {
    char *name;
    enum cfg_type type;
    int enabled;           /* the file's "enabled" (default 1); "disabled": true sets 0 */
    char *disabled_reason; /* non-NULL: entry unusable; says why, naming the variable/key.
                              argv/env/cwd/url/headers are then all NULL. */
    char **argv;           /* local: NULL-terminated, argv[0] is the command */
    char **env;            /* local: "KEY=VALUE", NULL-terminated (never NULL when usable);
                              added on top of the minimal inherited environment */
    int inherit_env;       /* local: "inheritEnv": true passes the gateway's whole
                              environment (default: only the minimal set, upstream_stdio.c) */
    char *cwd;             /* local, may be NULL */
    char *url;             /* remote */
    char **headers;        /* remote: "Name: value", NULL-terminated (never NULL when usable) */
    int max_connections;   /* remote: "maxConnections" (0: no cap), -1 when not set (then
                              CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM) */
    int timeout_ms;        /* "timeout", default CFG_DEFAULT_TIMEOUT_MS */
    json_t *tools;         /* owned ref to the entry's "tools" object, or NULL (validated:
                              every value is an object whose enabled/mutation are booleans) */
    json_t *oauth;         /* owned ref to "oauth" (false or an object, uninterpolated) or NULL */
    json_t *entry;         /* owned ref to the raw entry inside root (uninterpolated) */
    json_t *warnings;      /* what the entry says that codemcp cannot act on: strings, each
                              "<file> line N: ...", said once (config_check.c); or NULL */
    json_t *tool_lines;    /* the line of each `tools` key in the file, for cfg_check_tools */
    int tools_checked;     /* cfg_check_tools ran for this server */
    const char *file;      /* the config file it came from (borrowed from struct cfg), or NULL */
};

struct cfg {
    char *path;         /* file used, or NULL when none exists (or for --wrap) */
    const char *format; /* static: "opencode", "mcpServers", "wrap" or "none" */
    json_t *root;       /* whole document as loaded (unknown keys kept), owned; for
                           "none" an empty object, for "wrap" {"mcp": {name: entry}} */
    size_t n_servers;
    struct cfg_server *servers; /* in file order */
};

/* Once s's tools are known (its first tools/list; borrowed): each `tools` setting that names
 * no tool of the server is warned about once (log, s->warnings), with the nearest tool name. */
void cfg_check_tools(struct cfg_server *s, json_t *tools);

/* Resolves the file (explicit_path, else $CODEMCP_CONFIG, else
 * $XDG_CONFIG_HOME/codemcp/mcp.json, else $HOME/.config/codemcp/mcp.json) and loads it.
 * A missing file is not an error: 0 servers, path NULL, format "none".
 * Returns -1 only for a file that exists but cannot be used at all (unreadable, JSON syntax
 * error, top level not an object, no usable "mcp"/"mcpServers" object); *err (caller frees)
 * then says what happened, "<file>:<line>:<col>: <jansson message>" for syntax errors.
 * Bad entries never fail the load: they get disabled_reason. *out is always initialised
 * (cfg_free is safe after either result). err may be NULL. */
int cfg_load(const char *explicit_path, struct cfg *out, char **err);

/* One local server from a shell-like command line (whitespace splits words; '...' is literal;
 * "..." allows \" \\ \$ \`; a backslash outside quotes escapes the next character; no
 * variable or glob expansion). The name is `name` when given, else derived:
 * - argv[0] a launcher (node, nodejs, npx, bun, bunx, deno, python*, uvx, pipx): its target,
 *   the first non-option argument (`python -m mod` -> mod). A package spec loses its
 *   "@scope/" and "@version" (npx -y @modelcontextprotocol/server-memory -> server-memory).
 *   A path names the directory before its last run of dist/build/lib/src/bin/out components
 *   (node /x/server-everything/dist/index.js -> server-everything), else the parent
 *   directory when the file is index/main/__main__/server/cli/app.*, else the file stem.
 * - otherwise the basename of argv[0].
 * Derived names keep [A-Za-z0-9_-]; other characters become '-'.
 * Returns -1 (with *err) for an empty command or unbalanced quotes. */
int cfg_from_wrap(const char *cmdline, const char *name, struct cfg *out, char **err);

void cfg_free(struct cfg *c);
/* `--make-default`: writes s's default (on 0/1) into c's file and into the loaded entry
 * (s->entry, s->enabled), keeping the entry's spelling ("enabled" or "disabled"). 0 (*wrote:
 * the file changed; nothing is written when on is the default already), or -1 with why (no
 * file to write, or the write failed). config_default.c. */
int cfg_set_server_default(struct cfg *c, struct cfg_server *s, int on, int *wrote, char *why,
                           size_t wn);
/* The same for one tool of s: `tools.<tool>.enabled`. */
int cfg_set_tool_default(struct cfg *c, struct cfg_server *s, const char *tool, int on, int *wrote,
                         char *why, size_t wn);

/* The server called name, or NULL. Borrowed pointer into c. O(n). */
const struct cfg_server *cfg_find(const struct cfg *c, const char *name);

/* The path cfg_load(NULL, ...) would read, written into buf. Returns buf, or NULL when no
 * path can be formed (no HOME and no password entry) or it does not fit. */
const char *cfg_default_path(char *buf, size_t n);
struct settings;
/* The settings path resolution and "~" use (CODEMCP_CONFIG, XDG_CONFIG_HOME, HOME); kept, so
 * s must outlive every cfg_* call (main.c's). Before the first cfg_* call. */
void cfg_use_settings(const struct settings *s);
/* For the config module's own files (admin_paths.c): the settings kept above, or NULL. */
const struct settings *cfg__settings(void);
/* A server entry may carry key (either format; "_..." keys are comments). */
int cfg_entry_key_known(const char *key);
/* The user's config directory: $XDG_CONFIG_HOME when absolute, else ~/.config. buf or NULL. */
const char *cfg_config_dir(char *buf, size_t n);

/* Expands {env:VAR}, ${VAR} and ${VAR:-default} in s. Returns a new string (caller frees), or
 * NULL when a variable is unset and has no default; *missing (caller frees) then names it.
 * Exposed for modules that read raw entry parts later (e.g. oauth settings). */
char *cfg_interpolate(const char *s, char **missing);

#endif
