/* config_wrap — `codemcp --wrap "<command line>"`: one local server from a shell-like command
 * line (cfg_from_wrap), with its name derived from the command when --name is not given (the
 * rules are in config.h). Also owns the shell-like word splitting that opencode's
 * string-valued "command" uses (cfg__split_words). Kept apart from config.c because it reads
 * a command line, not a file: no formats, no interpolation.
 *
 * Reads only: never spawns or checks that the command exists. Not thread-safe (getenv via
 * the ~ expansion). */
#include "config.h"
#include "config_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- shell-like splitting --------------------------------------------------------------- */

/* Splits s into words like a POSIX shell would, without any expansion. 0, or -1 with *why. */
int cfg__split_words(const char *s, struct strv *out, const char **why)
{
    struct buf w = {0};
    int in_word = 0;
    const char *p = s;
    while (*p) {
        char c = *p;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            if (in_word)
                cfg__strv_push(out, buf_steal(&w));
            in_word = 0;
            p++;
        } else if (c == '\'') {
            const char *end = strchr(p + 1, '\'');
            if (!end) {
                *why = "unterminated single quote";
                goto fail;
            }
            buf_append(&w, p + 1, (size_t)(end - p - 1));
            in_word = 1;
            p = end + 1;
        } else if (c == '"') {
            in_word = 1;
            for (p++; *p != '"'; p++) {
                if (!*p) {
                    *why = "unterminated double quote";
                    goto fail;
                }
                /* Inside double quotes a backslash only escapes these (POSIX). */
                if (*p == '\\' && p[1] && strchr("\"\\$`\n", p[1])) {
                    p++;
                    if (*p == '\n')
                        continue;
                }
                buf_append(&w, p, 1);
            }
            p++;
        } else if (c == '\\') {
            if (!p[1]) {
                *why = "trailing backslash";
                goto fail;
            }
            if (p[1] != '\n') { /* backslash-newline joins lines */
                buf_append(&w, p + 1, 1);
                in_word = 1;
            }
            p += 2;
        } else {
            buf_append(&w, p, 1);
            in_word = 1;
            p++;
        }
    }
    if (in_word)
        cfg__strv_push(out, buf_steal(&w));
    return 0;
fail:
    buf_free(&w);
    return -1;
}

/* ---- --wrap ------------------------------------------------------------------------------- */

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int in_list(const char *s, size_t n, const char *const *list)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return 1;
    return 0;
}

#define IN(s, ...)                                                                                 \
    in_list(s, sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *),                       \
            (const char *[]){__VA_ARGS__})

static int is_launcher(const char *prog)
{
    if (strncmp(prog, "python", 6) == 0 && strspn(prog + 6, "0123456789.") == strlen(prog + 6))
        return 1;
    return IN(prog, "node", "nodejs", "npx", "bun", "bunx", "deno", "pnpx", "uvx", "pipx");
}

/* Name of a launcher's target: a package spec or a script path (rules in config.h). */
static char *target_name(const char *a)
{
    if (a[0] == '@' && strchr(a, '/')) /* @scope/pkg@version */
        a = strchr(a, '/') + 1;
    if (!strchr(a, '/')) { /* pkg@version, or a script in the current directory */
        const char *ver = strchr(a + 1, '@'), *dot = strrchr(a, '.');
        if (ver)
            return xstrndup(a, (size_t)(ver - a));
        if (dot && IN(dot, ".js", ".mjs", ".cjs", ".ts", ".mts", ".py"))
            return xstrndup(a, (size_t)(dot - a));
        return xstrdup(a);
    }
    struct strv comps = {0};
    char *copy = xstrdup(a), *save = NULL, *name;
    for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
        if (strcmp(c, ".") != 0)
            cfg__strv_push(&comps, xstrdup(c));
    free(copy);
    if (comps.n == 0) {
        name = xstrdup(a);
        goto out;
    }
    char *file = comps.v[comps.n - 1];
    char *dot = strrchr(file, '.');
    if (dot && dot != file)
        *dot = '\0'; /* file is now the stem */
    /* The last run of build-output directories is preceded by the package directory. */
    size_t j = comps.n - 1;
    while (j > 0 && !IN(comps.v[j - 1], "dist", "build", "lib", "src", "bin", "out"))
        j--;
    while (j > 0 && IN(comps.v[j - 1], "dist", "build", "lib", "src", "bin", "out"))
        j--;
    if (j > 0 && j < comps.n - 1)
        name = xstrdup(comps.v[j - 1]);
    else if (comps.n > 1 && IN(file, "index", "main", "__main__", "server", "cli", "app") &&
             !IN(comps.v[comps.n - 2], "dist", "build", "lib", "src", "bin", "out"))
        name = xstrdup(comps.v[comps.n - 2]);
    else
        name = xstrdup(file);
out:
    cfg__strv_free(cfg__strv_steal(&comps));
    return name;
}

/* Keeps [A-Za-z0-9_-], turns the rest into '-', trims '-' at both ends. Takes s. */
static char *sanitize_name(char *s)
{
    for (char *p = s; *p; p++)
        if (!cfg__name_char(*p) && *p != '-')
            *p = '-';
    size_t lead = strspn(s, "-"), n = strlen(s);
    while (n > lead && s[n - 1] == '-')
        n--;
    char *r = n > lead ? xstrndup(s + lead, n - lead) : xstrdup("server");
    free(s);
    return r;
}

static char *wrap_name(char **argv)
{
    const char *prog = base_name(argv[0]);
    if (is_launcher(prog)) {
        int run_sub = IN(prog, "deno", "bun"); /* deno run x.ts, bun run x.ts */
        for (size_t i = 1; argv[i]; i++) {
            if (strcmp(argv[i], "-m") == 0 && argv[i + 1])
                return sanitize_name(xstrdup(argv[i + 1]));
            if (argv[i][0] == '-' || (run_sub && strcmp(argv[i], "run") == 0))
                continue;
            return sanitize_name(target_name(argv[i]));
        }
    }
    return sanitize_name(xstrdup(prog));
}

int cfg_from_wrap(const char *cmdline, const char *name, struct cfg *out, char **err)
{
    struct strv argv = {0};
    const char *why = NULL;
    cfg__init(out, "wrap");
    if (err)
        *err = NULL;
    if (cfg__split_words(cmdline ? cmdline : "", &argv, &why) < 0) {
        cfg__set_err(err, "--wrap: %s in the command line", why);
        goto fail;
    }
    if (argv.n == 0 || !argv.v[0][0]) {
        cfg__set_err(err, "--wrap: the command is empty");
        goto fail;
    }
    if (name && !*name) {
        cfg__set_err(err, "--wrap: --name must not be empty");
        goto fail;
    }
    /* The entry records the command as the user wrote it, like a file entry would. */
    json_t *cmd = json_array();
    for (size_t i = 0; i < argv.n; i++)
        if (json_array_append_new(cmd, json_string(argv.v[i])) < 0)
            break;
    char *nm = name ? xstrdup(name) : wrap_name(argv.v);
    json_t *entry = json_pack("{s:s, s:o}", "type", "local", "command", cmd);
    if (!entry || json_array_size(cmd) != argv.n ||
        !(out->root = json_pack("{s:{s:O}}", "mcp", nm, entry))) {
        cfg__set_err(err, "--wrap: the command line or name is not valid UTF-8");
        json_decref(entry);
        free(nm);
        goto fail;
    }
    struct cfg_server *s = xcalloc(1, sizeof(*s));
    struct ent e = {.s = s, .rk = "wrap"};
    s->name = nm;
    s->type = CFG_LOCAL;
    s->enabled = 1;
    s->timeout_ms = CFG_DEFAULT_TIMEOUT_MS;
    s->max_connections = -1;
    s->entry = entry;
    cfg__expand_tilde(&e, &argv.v[0], "command");
    s->argv = cfg__strv_steal(&argv);
    s->env = xcalloc(1, sizeof(char *));
    s->inherit_env = 1; /* the one server the harness launched us for: it gets our environment */
    if (s->disabled_reason)
        cfg__drop_runtime(s);
    out->servers = s;
    out->n_servers = 1;
    return 0;
fail:
    cfg__strv_free(argv.v);
    return -1;
}
