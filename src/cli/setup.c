/* setup — the command lines of `codemcp setup` and `codemcp init`.
 *
 * `setup HARNESS` moves a harness's MCP servers behind codemcp and `setup --undo HARNESS` puts
 * them back (setup_move.c; the harnesses and their formats: setup_harnesses.c). `init` writes a
 * commented starter mcp.json from the servers of the harness configs it finds (left where they
 * are: it only reads them), or a small example; it never replaces an existing file. */
#include "setup.h"
#include "settings.h"
#include "setup_int.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TARGETS                                                                                    \
    "opencode|claude-desktop|cursor|vscode|claude-code|windsurf|gemini-cli|cline|roo-code"

static void setup_usage(FILE *f)
{
    fputs("usage: codemcp setup " TARGETS " [--scope user|project|local] [--dry-run] [--undo] "
          "[--file HARNESS_FILE] [-c CODEMCP_CONFIG]\n"
          "\n"
          "move a harness's MCP servers into codemcp's config and point the harness at\n"
          "codemcp (this binary's absolute path). Both files are backed up first as\n"
          "<file>.bak.<UTC time>; running it again finds only codemcp and changes nothing.\n"
          "--undo puts the harness's servers back as they were (refused when they changed since).\n"
          "\n"
          "  opencode         $OPENCODE_CONFIG, else ~/.config/opencode/opencode.json(c)\n"
          "  claude-desktop   $CLAUDE_DESKTOP_CONFIG, else "
          "~/.config/Claude/claude_desktop_config.json\n"
          "  cursor           $CURSOR_MCP_CONFIG, else ~/.cursor/mcp.json (project: "
          "./.cursor/mcp.json)\n"
          "  vscode           $VSCODE_MCP_CONFIG, else ./.vscode/mcp.json\n"
          "  claude-code      ~/.claude.json or $CLAUDE_CONFIG_DIR/.claude.json (project: "
          "./.mcp.json; local: ~/.claude.json's\n"
          "                   entry for this directory), as `claude mcp add -s`\n"
          "  windsurf         ~/.codeium/windsurf/mcp_config.json\n"
          "  gemini-cli       ~/.gemini/settings.json (project: ./.gemini/settings.json)\n"
          "  cline            ~/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/"
          "cline_mcp_settings.json\n"
          "  roo-code         ~/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/"
          "settings/mcp_settings.json (project: ./.roo/mcp.json)\n"
          "\n"
          "options:\n"
          "  -s, --scope SCOPE    user (the default where a harness has one), project, or\n"
          "                       local (claude-code)\n"
          "  -n, --dry-run        print what would change, write nothing\n"
          "      --undo           put back what setup changed\n"
          "      --file PATH      the harness file to edit\n"
          "  -c, --config PATH    codemcp's mcp.json to write\n"
          "  -h, --help           this help\n",
          f);
}

int setup_main(const struct settings *s, int argc, char **argv, const char *codemcp_config)
{
    harness_use_settings(s);
    const char *target = NULL, *file = NULL;
    int dry_run = 0, undo = 0;
    enum harness_scope scope = SCOPE_DEFAULT;
    if (args_ask_help(argc, argv)) {
        setup_usage(stdout);
        return 0;
    }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--dry-run") == 0 || strcmp(a, "-n") == 0) {
            dry_run = 1;
        } else if (strcmp(a, "--undo") == 0) {
            undo = 1;
        } else if (strcmp(a, "--file") == 0 && i + 1 < argc) {
            file = argv[++i];
        } else if ((strcmp(a, "-s") == 0 || strcmp(a, "--scope") == 0) && i + 1 < argc) {
            const char *s = argv[++i];
            scope = strcmp(s, "user") == 0      ? SCOPE_USER
                    : strcmp(s, "project") == 0 ? SCOPE_PROJECT
                    : strcmp(s, "local") == 0   ? SCOPE_LOCAL
                                                : SCOPE_DEFAULT;
            if (scope == SCOPE_DEFAULT) {
                fprintf(stderr, "codemcp setup: --scope is user, project or local, not '%s'\n", s);
                return 2;
            }
        } else if ((strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) && i + 1 < argc) {
            codemcp_config = argv[++i];
        } else if (!target && a[0] != '-') {
            target = a;
        } else {
            fprintf(stderr, "codemcp setup: unexpected argument '%s'\n", a);
            return 2;
        }
    }
    const struct harness *h = target ? harness_find(target) : NULL;
    if (!h) {
        setup_usage(stderr);
        return 2;
    }
    if (undo && dry_run) {
        fprintf(stderr, "codemcp setup: --undo has no --dry-run (it says what it restores)\n");
        return 2;
    }
    return undo ? setup_undo(h, scope, file) : setup_move(h, scope, file, codemcp_config, dry_run);
}

/* ---- init ------------------------------------------------------------------------------------ */

static void init_usage(FILE *f)
{
    fputs("usage: codemcp init [-c CODEMCP_CONFIG]\n"
          "\n"
          "write a commented starter mcp.json (default: $CODEMCP_CONFIG, else\n"
          "~/.config/codemcp/mcp.json) with the MCP servers of the harness configs found\n"
          "(they stay there too: `codemcp setup HARNESS` moves them), or a small example.\n"
          "An existing file is never replaced.\n"
          "\n"
          "options:\n"
          "  -c, --config PATH    the file to write\n"
          "  -h, --help           this help\n",
          f);
}

/* Appends "name": entry, indented by 4, after a comment naming where it came from. */
static void add_server(struct buf *out, const char *name, json_t *e, const char *from, int first)
{
    json_t *k = json_string(name);
    char *key = json_dumps(k, JSON_ENCODE_ANY);
    json_decref(k);
    char *val = json_dumps(e, JSON_INDENT(2));
    buf_printf(out, "%s    // from %s\n    %s: ", first ? "" : ",\n", from, key);
    for (const char *p = val; p && *p; p++)
        buf_printf(out, *p == '\n' ? "\n    " : "%c", *p);
    free(key);
    free(val);
}

/* Servers of every harness file found, each once (files: places read; seen: names taken; not
 * codemcp's own entries), in codemcp's mcpServers format, as text. Returns how many. */
static int collect_servers(struct buf *out, json_t *seen, json_t *files)
{
    int n = 0;
    const struct harness *h;
    for (size_t i = 0; (h = harness_at(i)); i++) {
        for (int scope = SCOPE_USER; scope <= SCOPE_LOCAL; scope++) {
            struct servers_at at;
            struct setup_file f = {0};
            if ((scope == SCOPE_LOCAL && strcmp(harness_name(h), "claude-code") != 0) ||
                !harness_found(h, scope, f.path, sizeof(f.path)) ||
                harness_servers_at(h, scope, &at) < 0) {
                sf_free(&f);
                continue;
            }
            struct buf place = {0}; /* a file and a servers object in it, read once */
            buf_printf(&place, "%s", f.path);
            for (size_t k = 0; k < at.n; k++)
                buf_printf(&place, "#%s", at.keys[k]);
            int again = json_object_get(files, place.data) != NULL;
            json_object_set_new(files, place.data, json_true());
            buf_free(&place);
            if (again || sf_load(&f) < 0) {
                sf_free(&f);
                continue;
            }
            const char *name;
            json_t *e;
            json_object_foreach(servers_get(f.root, &at), name, e)
            {
                if (strcmp(name, SETUP_ENTRY) == 0 || json_object_get(seen, name))
                    continue;
                if (harness_is_opencode(h)) {
                    printf("note: %s: opencode's server \"%s\" left out (its format is \"mcp\"; "
                           "`codemcp setup opencode` moves it)\n",
                           f.path, name);
                    continue;
                }
                json_t *conv = harness_to_codemcp(h, name, e, 0);
                add_server(out, name, conv, f.path, n == 0);
                json_decref(conv);
                json_object_set_new(seen, name, json_true());
                n++;
            }
            sf_free(&f);
        }
    }
    return n;
}

int init_main(const struct settings *s, int argc, char **argv, const char *codemcp_config)
{
    harness_use_settings(s);
    if (args_ask_help(argc, argv)) {
        init_usage(stdout);
        return 0;
    }
    for (int i = 0; i < argc; i++) {
        if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) && i + 1 < argc) {
            codemcp_config = argv[++i];
        } else {
            fprintf(stderr, "codemcp init: unexpected argument '%s'\n", argv[i]);
            init_usage(stderr);
            return 2;
        }
    }
    char path[PATH_MAX];
    if (sf_codemcp_path(codemcp_config ? codemcp_config : s->config, path, sizeof(path)) < 0)
        return 1;
    if (access(path, F_OK) == 0) {
        fprintf(stderr,
                "codemcp init: %s exists: nothing was written (edit it, or move it aside)\n", path);
        return 1;
    }
    struct buf servers = {0}, text = {0};
    json_t *seen = json_object(), *files = json_object();
    int n = collect_servers(&servers, seen, files);
    json_decref(seen);
    json_decref(files);
    buf_printf(
        &text,
        "// codemcp's config: the MCP servers codemcp serves to a harness through one tool,\n"
        "// execute_python. Written by `codemcp init`. Comments and trailing commas are\n"
        "// allowed; each entry: \"command\", \"args\", \"env\", \"cwd\" (local) or \"url\",\n"
        "// \"headers\" (remote), \"disabled\": true to keep it off. See the README.\n");
    if (n)
        buf_printf(&text,
                   "// These servers were found in your harness configs and are still there:\n"
                   "// `codemcp setup HARNESS` moves them and points the harness at codemcp.\n"
                   "{\n  \"mcpServers\": {\n%s\n  }\n}\n",
                   servers.data);
    else
        buf_printf(&text,
                   "{\n  \"mcpServers\": {\n"
                   "    // An example (no harness config was found): the reference server\n"
                   "    // \"everything\", run with npx. Remove \"disabled\" to use it, or put\n"
                   "    // your own servers here.\n"
                   "    \"everything\": {\n"
                   "      \"command\": \"npx\",\n"
                   "      \"args\": [\"-y\", \"@modelcontextprotocol/server-everything\"],\n"
                   "      \"disabled\": true\n"
                   "    }\n  }\n}\n");
    struct setup_file f = {0};
    snprintf(f.path, sizeof(f.path), "%s", path);
    f.text = xstrdup(text.data);
    int rc = 1;
    if (sf_load_text(&f) < 0) /* what init writes must load */
        goto out;
    sf_make_parent_dirs(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600); /* never over a file */
    size_t len = strlen(f.text);
    if (fd < 0 || write(fd, f.text, len) != (ssize_t)len) {
        fprintf(stderr, "codemcp init: cannot write %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        goto out;
    }
    close(fd);
    printf("wrote %s with %d server%s%s\n", path, n, n == 1 ? "" : "s",
           n ? " found in your harness configs" : " (an example, disabled)");
    rc = 0;
out:
    sf_free(&f);
    buf_free(&servers);
    buf_free(&text);
    return rc;
}
