/* setup — `codemcp setup opencode`: adopt the MCP servers opencode is configured with.
 *
 * opencode's config ($OPENCODE_CONFIG, else <config dir>/opencode/opencode.json or .jsonc)
 * keeps its servers under `mcp`, in the same format codemcp reads. Setup moves them into
 * codemcp's config (merged with the servers already there; on a name clash opencode's entry
 * wins, with a warning) and replaces opencode's `mcp` with one local server that launches
 * this gateway, so the model sees one tool, execute_python, with every server in its SDK.
 *
 * Nothing is lost: both files are copied to <file>.bak.<UTC time> first, and each is written
 * to a temporary file and renamed over the original (keeping its mode; a new codemcp config
 * is 0600, since headers may hold tokens). codemcp's config is written first, so a failure
 * in between leaves the servers in both places, never in neither. Comments in opencode's
 * file do not survive the rewrite (the backup keeps them). Running setup again finds only
 * codemcp in opencode's `mcp` and changes nothing. `--dry-run` prints the plan only.
 * opencode is told to launch this binary by its absolute path, and its "tools" settings about
 * the moved servers are rewritten (setup_clients.c, which also adopts mcpServers harnesses). */
#include "setup.h"
#include "config.h"
#include "jsonc.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ENTRY_NAME "codemcp"

struct json_file {
    char path[PATH_MAX];
    int exists;
    mode_t mode;
    json_t *root; /* parsed (NULL when the file does not exist) */
};

/* Reads and parses path (JSON with comments). 0, or -1 with the error printed. */
static int load_json_file(struct json_file *f)
{
    struct stat st;
    if (stat(f->path, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        fprintf(stderr, "codemcp setup: %s: %s\n", f->path, strerror(errno));
        return -1;
    }
    size_t len;
    char *text = read_file(f->path, &len);
    if (!text) {
        fprintf(stderr, "codemcp setup: %s: cannot read: %s\n", f->path, strerror(errno));
        return -1;
    }
    f->exists = 1;
    f->mode = st.st_mode & 07777;
    jsonc_strip(text, len);
    json_error_t jerr;
    f->root = len ? json_loadb(text, len, 0, &jerr) : json_object();
    free(text);
    if (!f->root) {
        fprintf(stderr, "codemcp setup: %s:%d:%d: %s (nothing was changed)\n", f->path, jerr.line,
                jerr.column, jerr.text);
        return -1;
    }
    return 0;
}

/* opencode starts a local server with its whole environment ({...process.env,
 * ...environment}); codemcp passes only a minimal set plus the server's own "environment"
 * (upstream_stdio.c). Names the adopted local servers that interpolate no variable: those
 * may have relied on something inherited, such as a token exported in the shell. */
static void note_inherited_env(json_t *moved)
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

/* The opencode config file to adopt from. 0, or -1 with the error printed. */
static int opencode_path(char *out, size_t n)
{
    const char *env = getenv("OPENCODE_CONFIG");
    if (env && *env)
        return snprintf(out, n, "%s", env) < (int)n ? 0 : -1;
    char dir[PATH_MAX];
    if (!cfg_config_dir(dir, sizeof(dir))) {
        fprintf(stderr, "codemcp setup: no HOME: cannot find opencode's config\n");
        return -1;
    }
    static const char *const names[] = {"opencode.json", "opencode.jsonc"};
    for (int i = 0; i < 2; i++)
        if (snprintf(out, n, "%s/opencode/%s", dir, names[i]) < (int)n && access(out, F_OK) == 0)
            return 0;
    fprintf(stderr,
            "codemcp setup: no opencode config at %s/opencode/opencode.json (or .jsonc); set "
            "OPENCODE_CONFIG to its path\n",
            dir);
    return -1;
}

/* Is this opencode `mcp` entry the one setup writes (a local server running codemcp)? */
static int is_our_entry(json_t *e)
{
    json_t *cmd = json_object_get(e, "command");
    const char *c0 = json_string_value(json_array_get(cmd, 0));
    if (!c0)
        return 0;
    const char *base = strrchr(c0, '/');
    return strcmp(base ? base + 1 : c0, ENTRY_NAME) == 0;
}

int setup_backup(const char *path, char *out, size_t n)
{
    char stamp[32];
    time_t now = time(NULL);
    strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", gmtime(&now));
    size_t len;
    char *text = read_file(path, &len);
    if (!text)
        return -1;
    int fd = -1;
    for (int k = 0; k < 100 && fd < 0; k++) {
        if (k)
            snprintf(out, n, "%s.bak.%s-%d", path, stamp, k);
        else
            snprintf(out, n, "%s.bak.%s", path, stamp);
        fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    int rc = fd >= 0 && write(fd, text, len) == (ssize_t)len ? 0 : -1;
    if (fd >= 0 && close(fd) < 0)
        rc = -1;
    free(text);
    return rc;
}

/* Writes root as indented JSON to path through path.tmp.<pid> + rename. */
static int write_json(const char *path, json_t *root, mode_t mode)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    char *text = json_dumps(root, JSON_INDENT(2));
    if (!text)
        return -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    size_t len = strlen(text);
    int rc = fd >= 0 && write(fd, text, len) == (ssize_t)len && write(fd, "\n", 1) == 1 &&
                     fchmod(fd, mode) == 0 && fsync(fd) == 0
                 ? 0
                 : -1;
    if (fd >= 0 && close(fd) < 0)
        rc = -1;
    free(text);
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -1;
    if (rc < 0) {
        fprintf(stderr, "codemcp setup: cannot write %s: %s\n", path, strerror(errno));
        unlink(tmp);
    }
    return rc;
}

/* mkdir -p for the directory part of path (0700 for what it creates). */
static void make_parent_dirs(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0700);
            *p = '/';
        }
}

static int setup_opencode(const char *codemcp_config, int dry_run)
{
    struct json_file oc = {0}, cm = {0};
    json_t *moved = json_object(), *entry = NULL;
    int rc = 1, clashes = 0;

    if (opencode_path(oc.path, sizeof(oc.path)) < 0 || load_json_file(&oc) < 0)
        goto out;
    if (!oc.exists) {
        fprintf(stderr, "codemcp setup: %s does not exist\n", oc.path);
        goto out;
    }
    if (!json_is_object(oc.root)) {
        fprintf(stderr, "codemcp setup: %s: the top level is not an object\n", oc.path);
        goto out;
    }
    json_t *mcp = json_object_get(oc.root, "mcp");
    if (mcp && !json_is_object(mcp)) {
        fprintf(stderr, "codemcp setup: %s: \"mcp\" is not an object\n", oc.path);
        goto out;
    }
    const char *name;
    json_t *e;
    json_object_foreach(mcp, name, e)
    {
        if (strcmp(name, ENTRY_NAME) != 0) {
            json_object_set(moved, name, e);
        } else if (!is_our_entry(e)) {
            fprintf(stderr,
                    "codemcp setup: %s: opencode already has a server named \"%s\" that does "
                    "not run codemcp: rename it, then run setup again\n",
                    oc.path, ENTRY_NAME);
            goto out;
        }
    }
    int have_entry = json_object_get(mcp, ENTRY_NAME) != NULL;
    if (have_entry && json_object_size(moved) == 0) {
        printf("opencode already launches codemcp (%s): nothing to do\n", oc.path);
        rc = 0;
        goto out;
    }

    if (codemcp_config && *codemcp_config)
        snprintf(cm.path, sizeof(cm.path), "%s", codemcp_config);
    else if (!cfg_default_path(cm.path, sizeof(cm.path))) {
        fprintf(stderr, "codemcp setup: no HOME: cannot place codemcp's config (use -c)\n");
        goto out;
    }
    if (cm.path[0] != '/') { /* opencode may start us anywhere: store an absolute path */
        char cwd[PATH_MAX], rel[PATH_MAX];
        snprintf(rel, sizeof(rel), "%s", cm.path);
        if (!getcwd(cwd, sizeof(cwd)) ||
            snprintf(cm.path, sizeof(cm.path), "%s/%s", cwd, rel) >= (int)sizeof(cm.path)) {
            fprintf(stderr, "codemcp setup: cannot make %s absolute\n", rel);
            goto out;
        }
    }
    if (load_json_file(&cm) < 0)
        goto out;
    if (!cm.root)
        cm.root = json_object();
    if (!json_is_object(cm.root)) {
        fprintf(stderr, "codemcp setup: %s: the top level is not an object\n", cm.path);
        goto out;
    }
    if (json_object_get(cm.root, "mcpServers")) {
        fprintf(stderr,
                "codemcp setup: %s uses the \"mcpServers\" format; opencode's servers need the "
                "\"mcp\" format: move that file aside (or pass -c with another path) and run "
                "setup again\n",
                cm.path);
        goto out;
    }
    json_t *servers = json_object_get(cm.root, "mcp");
    if (!json_is_object(servers)) {
        servers = json_object();
        json_object_set_new(cm.root, "mcp", servers);
    }
    json_object_foreach(moved, name, e)
    {
        json_t *old = json_object_get(servers, name);
        if (old && !json_equal(old, e)) {
            printf("warning: codemcp already had a server \"%s\": opencode's entry replaces it\n",
                   name);
            clashes++;
        }
        json_object_set(servers, name, e);
    }

    /* opencode's "tools" settings that name the moved servers' tools point at nothing now. */
    setup_fix_opencode_tools(oc.root, moved);
    entry = json_pack("{s:s, s:o, s:{s:s, s:s}, s:b}", "type", "local", "command",
                      setup_launch_command("opencode"), "environment", "CODEMCP_CONFIG", cm.path,
                      "CODEMCP_INSTANCE_LABEL", "opencode", "enabled", 1);
    printf("%s %zu server%s from %s into %s:", dry_run ? "would move" : "moving",
           json_object_size(moved), json_object_size(moved) == 1 ? "" : "s", oc.path, cm.path);
    json_object_foreach(moved, name, e) printf(" %s", name);
    printf("\n");
    note_inherited_env(moved);
    if (dry_run) {
        char *shown = json_dumps(entry, JSON_INDENT(2));
        printf("would set opencode's \"mcp\" to {\"%s\": %s}\n(dry run: nothing written)\n",
               ENTRY_NAME, shown ? shown : "?");
        free(shown);
        rc = 0;
        goto out;
    }

    char bak[PATH_MAX + 64];
    if (cm.exists) {
        if (setup_backup(cm.path, bak, sizeof(bak)) < 0) {
            fprintf(stderr, "codemcp setup: cannot back up %s: %s (nothing was changed)\n", cm.path,
                    strerror(errno));
            goto out;
        }
        printf("backed up %s to %s\n", cm.path, bak);
    }
    if (setup_backup(oc.path, bak, sizeof(bak)) < 0) {
        fprintf(stderr, "codemcp setup: cannot back up %s: %s (nothing was changed)\n", oc.path,
                strerror(errno));
        goto out;
    }
    printf("backed up %s to %s\n", oc.path, bak);

    make_parent_dirs(cm.path);
    if (write_json(cm.path, cm.root, cm.exists ? cm.mode : 0600) < 0)
        goto out;
    json_t *new_mcp = json_object();
    json_object_set(new_mcp, ENTRY_NAME, entry);
    json_object_set_new(oc.root, "mcp", new_mcp);
    if (write_json(oc.path, oc.root, oc.mode) < 0) {
        fprintf(stderr,
                "codemcp setup: the servers are in %s already; opencode's own file is "
                "unchanged\n",
                cm.path);
        goto out;
    }
    printf("opencode now launches codemcp with every server%s; restart opencode\n",
           clashes ? " (see the warnings above)" : "");
    rc = 0;
out:
    json_decref(entry);
    json_decref(moved);
    json_decref(oc.root);
    json_decref(cm.root);
    return rc;
}

static void setup_usage(FILE *f)
{
    fputs("usage: codemcp setup opencode|claude-desktop|cursor|vscode [--dry-run] "
          "[--file HARNESS_FILE] [-c CODEMCP_CONFIG]\n"
          "\n"
          "move a harness's MCP servers into codemcp's config and point the harness at\n"
          "codemcp (this binary's absolute path). Both files are backed up first as\n"
          "<file>.bak.<UTC time>; running it again finds only codemcp and changes nothing.\n"
          "\n"
          "  opencode         $OPENCODE_CONFIG, else ~/.config/opencode/opencode.json(c)\n"
          "  claude-desktop   $CLAUDE_DESKTOP_CONFIG, else "
          "~/.config/Claude/claude_desktop_config.json\n"
          "  cursor           $CURSOR_MCP_CONFIG, else ~/.cursor/mcp.json\n"
          "  vscode           $VSCODE_MCP_CONFIG, else ./.vscode/mcp.json\n"
          "\n"
          "options:\n"
          "  -n, --dry-run        print what would change, write nothing\n"
          "      --file PATH      the harness file to edit (not for opencode)\n"
          "  -c, --config PATH    codemcp's mcp.json to write\n"
          "  -h, --help           this help\n",
          f);
}

int setup_main(int argc, char **argv, const char *codemcp_config)
{
    const char *target = NULL, *file = NULL;
    int dry_run = 0;
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            setup_usage(stdout);
            return 0;
        }
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--dry-run") == 0 || strcmp(argv[i], "-n") == 0) {
            dry_run = 1;
        } else if (strcmp(argv[i], "--file") == 0 && i + 1 < argc) {
            file = argv[++i];
        } else if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) &&
                   i + 1 < argc) {
            codemcp_config = argv[++i];
        } else if (!target && argv[i][0] != '-') {
            target = argv[i];
        } else {
            fprintf(stderr, "codemcp setup: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (target && strcmp(target, "opencode") == 0 && !file)
        return setup_opencode(codemcp_config, dry_run);
    int rc = target ? setup_clients_main(target, file, codemcp_config, dry_run) : -1;
    if (rc < 0) {
        setup_usage(stderr);
        return 2;
    }
    return rc;
}
