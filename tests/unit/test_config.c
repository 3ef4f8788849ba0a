/* test_config — cfg_load / cfg_from_wrap / cfg_interpolate against the fixture files in
 * $CODEMCP_TEST_DATA/config and against config trees written to temp dirs (resolution order).
 * One output line per case; exit status is the number of failed cases. */
#include "check.h"
#include "config.h"
#include "settings.h"
#include "jsonc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The config reads CODEMCP_CONFIG, XDG_CONFIG_HOME and HOME from the settings: after each
 * change of the environment, load them again as main.c does at start. */
static void reload_settings(void)
{
    static struct settings s;
    settings_load(&s);
    cfg_use_settings(&s);
}

static char home[256];

#define EXPECT_STR(got, want) expect_str(__LINE__, #got, (got), (want))

static void expect_str(int line, const char *what, const char *got, const char *want)
{
    if ((!got && !want) || (got && want && strcmp(got, want) == 0))
        return;
    fprintf(stderr, "  line %d: %s = %s%s%s, want %s%s%s\n", line, what, got ? "\"" : "",
            got ? got : "NULL", got ? "\"" : "", want ? "\"" : "", want ? want : "NULL",
            want ? "\"" : "");
    case_failed = 1;
}

/* Compares a NULL-terminated vector with the expected items (terminated by NULL). */
#define EXPECT_STRV(got, ...)                                                                      \
    expect_strv(__LINE__, #got, (got), (const char *[]){__VA_ARGS__, NULL})

static void expect_strv(int line, const char *what, char **got, const char **want)
{
    size_t i = 0;
    for (; got && got[i] && want[i]; i++)
        if (strcmp(got[i], want[i]) != 0)
            break;
    if (got && !got[i] && !want[i])
        return;
    fprintf(stderr, "  line %d: %s differs at item %zu: got %s, want %s\n", line, what, i,
            got ? (got[i] ? got[i] : "(end)") : "NULL vector", want[i] ? want[i] : "(end)");
    case_failed = 1;
}

static const char *data(const char *file)
{
    static char path[1024];
    const char *dir = getenv("CODEMCP_TEST_DATA");
    snprintf(path, sizeof(path), "%s/config/%s", dir ? dir : "../data", file);
    return path;
}

static char *home_path(const char *rest)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s%s", home, rest);
    return path;
}

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

/* Loads a fixture and expects success. */
static int load(const char *file, struct cfg *c)
{
    char *err = NULL;
    int rc = cfg_load(data(file), c, &err);
    if (rc != 0) {
        fprintf(stderr, "  load %s failed: %s\n", file, err ? err : "(no message)");
        case_failed = 1;
    }
    free(err);
    return rc;
}

static const struct cfg_server *must_find(const struct cfg *c, const char *name)
{
    static const struct cfg_server empty = {0};
    const struct cfg_server *s = cfg_find(c, name);
    if (!s) {
        fprintf(stderr, "  server %s not found\n", name);
        case_failed = 1;
        return &empty;
    }
    return s;
}

/* ---- cases ---------------------------------------------------------------------------------- */

static void t_opencode_format(void)
{
    struct cfg c;
    if (load("opencode.json", &c) < 0)
        return;
    EXPECT_STR(c.format, "opencode");
    EXPECT_STR(c.path, data("opencode.json"));
    EXPECT(c.n_servers == 5);
    const char *order[] = {"everything", "split", "github", "sentry", "inferred"};
    for (size_t i = 0; i < 5 && i < c.n_servers; i++)
        EXPECT_STR(c.servers[i].name, order[i]);
    const struct cfg_server *s = must_find(&c, "everything");
    EXPECT(s->type == CFG_LOCAL && s->enabled && !s->disabled_reason);
    EXPECT_STRV(s->argv, "node",
                "tests/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    EXPECT_STRV(s->env, "LOG_LEVEL=debug", "TOKEN=tok123");
    EXPECT_STR(s->cwd, home_path("/work"));
    EXPECT(s->timeout_ms == 5000);
    EXPECT(s->tools && json_is_false(json_object_get(
                           json_object_get(s->tools, "longRunningOperation"), "enabled")));
    EXPECT(json_is_false(json_object_get(json_object_get(s->tools, "echo"), "mutation")));
    EXPECT(!s->oauth && !s->url && !s->headers);
    s = must_find(&c, "inferred");
    EXPECT(s->type == CFG_REMOTE && !s->disabled_reason);
    EXPECT_STR(s->url, "http://127.0.0.1:9/mcp");
    EXPECT_STRV(s->headers, NULL);
    EXPECT(s->timeout_ms == CFG_DEFAULT_TIMEOUT_MS);
    cfg_free(&c);
}

static void t_opencode_string_command(void)
{
    struct cfg c;
    if (load("opencode.json", &c) < 0)
        return;
    const struct cfg_server *s = must_find(&c, "split");
    EXPECT(!s->disabled_reason);
    EXPECT_STRV(s->argv, home_path("/bin/server"), "--flag", "two words", "quoted \"x\"", "argval");
    EXPECT_STRV(s->env, NULL);
    EXPECT(!s->cwd);
    cfg_free(&c);
}

static void t_missing_var_disables_one(void)
{
    struct cfg c;
    if (load("opencode.json", &c) < 0)
        return;
    const struct cfg_server *s = must_find(&c, "github");
    EXPECT_STR(s->disabled_reason, "environment variable CFGT_UNSET_GITHUB_TOKEN is not set "
                                   "(used in mcp.github.headers.Authorization)");
    EXPECT(s->type == CFG_REMOTE && !s->url && !s->headers);
    EXPECT(json_is_false(s->oauth));
    EXPECT(s->entry && json_object_get(s->entry, "headers"));
    size_t unusable = 0;
    for (size_t i = 0; i < c.n_servers; i++)
        unusable += c.servers[i].disabled_reason != NULL;
    EXPECT(unusable == 1);
    cfg_free(&c);
}

static void t_interpolation_defaults(void)
{
    struct cfg c;
    unsetenv("CFGT_HOST");
    if (load("opencode.json", &c) < 0)
        return;
    const struct cfg_server *s = must_find(&c, "sentry");
    EXPECT_STR(s->url, "https://mcp.sentry.example/mcp");
    EXPECT_STRV(s->headers, "X-Api-Key: tok123", "X-Static: v");
    EXPECT(!s->enabled && !s->disabled_reason);
    EXPECT_STR(json_string_value(json_object_get(s->oauth, "clientId")), "abc");
    cfg_free(&c);

    setenv("CFGT_HOST", "", 1); /* :- also replaces an empty value */
    if (load("opencode.json", &c) < 0)
        return;
    EXPECT_STR(must_find(&c, "sentry")->url, "https://mcp.sentry.example/mcp");
    cfg_free(&c);

    setenv("CFGT_HOST", "http://h:1", 1);
    if (load("opencode.json", &c) < 0)
        return;
    EXPECT_STR(must_find(&c, "sentry")->url, "http://h:1/mcp");
    cfg_free(&c);
    unsetenv("CFGT_HOST");
}

static void t_interpolate_function(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"a{env:CFGT_TOKEN}b", "atok123b"},
        {"${CFGT_TOKEN}/${CFGT_ARG}", "tok123/argval"},
        {"${CFGT_NOPE:-x y}", "x y"},
        {"${CFGT_EMPTY:-d}", "d"},
        {"[${CFGT_EMPTY}]", "[]"},
        {"${CFGT_TOKEN:-d}", "tok123"},
        {"$CFGT_TOKEN $ {env:} ${1X} ${CFGT_TOKEN", "$CFGT_TOKEN $ {env:} ${1X} ${CFGT_TOKEN"},
        {"{env:CFGT_TOKEN", "{env:CFGT_TOKEN"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char *missing = NULL;
        char *r = cfg_interpolate(cases[i].in, &missing);
        EXPECT_STR(r, cases[i].out);
        EXPECT(!missing);
        free(r);
    }
    char *missing = NULL;
    EXPECT(cfg_interpolate("x {env:CFGT_NOPE} ${CFGT_NOPE2}", &missing) == NULL);
    EXPECT_STR(missing, "CFGT_NOPE");
    free(missing);
    missing = NULL;
    EXPECT(cfg_interpolate("${CFGT_NOPE2}", &missing) == NULL);
    EXPECT_STR(missing, "CFGT_NOPE2");
    free(missing);
}

static void t_mcpservers_format(void)
{
    struct cfg c;
    if (load("mcpservers.json", &c) < 0)
        return;
    EXPECT_STR(c.format, "mcpServers");
    EXPECT(c.n_servers == 4);
    const struct cfg_server *s = must_find(&c, "memory");
    EXPECT(s->type == CFG_LOCAL && s->enabled && !s->disabled_reason);
    EXPECT_STRV(s->argv, "node",
                "tests/node_modules/@modelcontextprotocol/server-memory/dist/index.js",
                "--x=argval");
    EXPECT_STRV(s->env, "MEMORY_FILE_PATH=/tmp/mem.json");
    EXPECT_STR(s->cwd, "/tmp");
    s = must_find(&c, "fs");
    EXPECT(s->type == CFG_LOCAL && !s->enabled && !s->disabled_reason);
    EXPECT_STRV(s->argv, "/usr/bin/my server"); /* the executable as-is, not split */
    s = must_find(&c, "web");
    EXPECT(s->type == CFG_REMOTE && !s->disabled_reason);
    EXPECT_STR(s->url, "https://example.com/mcp");
    EXPECT_STRV(s->headers, "Authorization: Bearer tok123");
    EXPECT(s->timeout_ms == 60000);   /* below 1000: seconds */
    EXPECT(s->max_connections == -1); /* not set: CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM */
    s = must_find(&c, "legacy");
    EXPECT(s->type == CFG_REMOTE && s->timeout_ms == 2500);
    cfg_free(&c);
}

static void t_bad_entries(void)
{
    static const struct {
        const char *name, *reason;
    } cases[] = {
        {"notobj", "mcp.notobj must be an object, not a number"},
        {"nocmd", "mcp.nocmd.command is missing (a local server needs a command)"},
        {"nourl", "mcp.nourl.url is missing (a remote server needs a url)"},
        {"cmd5", "mcp.cmd5.command must be an array of strings, not a number"},
        {"cmditem", "mcp.cmditem.command[1] must be a string, not a number"},
        {"emptycmd", "mcp.emptycmd.command is empty"},
        {"badtype", "mcp.badtype.type must be \"local\" or \"remote\""},
        {"both", "mcp.both has both \"command\" and \"url\": set \"type\""},
        {"neither", "mcp.neither needs \"command\" (local) or \"url\" (remote)"},
        {"badenabled", "mcp.badenabled.enabled must be true or false, not a string"},
        {"badenv", "mcp.badenv.environment.A must be a string, not a number"},
        {"badenvname",
         "mcp.badenvname.environment: \"A=B\" is not a valid environment variable name"},
        {"badheaders", "mcp.badheaders.headers must be an object of strings, not an array"},
        {"badheadername", "mcp.badheadername.headers: \"Bad Name\" is not a valid header name"},
        {"badurl", "mcp.badurl.url must start with http:// or https://"},
        {"badtimeout", "mcp.badtimeout.timeout must be a positive number of milliseconds"},
        {"badtools", "mcp.badtools.tools.t.enabled must be true or false, not a string"},
        {"badoauth", "mcp.badoauth.oauth must be false or an object, not a string"},
        {"badmaxconn", "mcp.badmaxconn.maxConnections must be an integer from 0 (no cap) to 4096"},
        {"badmaxconn2",
         "mcp.badmaxconn2.maxConnections must be an integer from 0 (no cap) to 4096"},
        {"", "mcp has a server with an empty name"},
    };
    struct cfg c;
    if (load("bad_entries.json", &c) < 0)
        return;
    EXPECT(c.n_servers == sizeof(cases) / sizeof(*cases) + 1);
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        const struct cfg_server *s = must_find(&c, cases[i].name);
        EXPECT_STR(s->disabled_reason, cases[i].reason);
        EXPECT(!s->argv && !s->env && !s->url && !s->headers && !s->cwd && s->entry);
    }
    const struct cfg_server *ok = must_find(&c, "ok");
    EXPECT(!ok->disabled_reason);
    EXPECT_STRV(ok->argv, "true");
    cfg_free(&c);
}

static void t_syntax_error_position(void)
{
    struct cfg c;
    char *err = NULL;
    char want[1200];
    EXPECT(cfg_load(data("broken.json"), &c, &err) == -1);
    /* Line 4 is `    "b": {"type": "local" "command": ["y"]}`; jansson's column is the
     * 1-based position of the last character of the unexpected token "command" (cols 27-35). */
    snprintf(want, sizeof(want), "%s:4:35: '}' expected near '\"command\"'", data("broken.json"));
    EXPECT_STR(err, want);
    EXPECT(c.n_servers == 0 && !c.root && !c.path);
    free(err);
    cfg_free(&c);
}

/* jsonc_strip: comments and trailing commas go, strings stay, line:col positions hold. */
static void t_jsonc(void)
{
    char text[] = "{ // a comment with \"quotes\" and a , before }\n"
                  "  \"url\": \"http://x/*y*/z//w\", /* block\n comment */\n"
                  "  \"esc\": \"a\\\" // not a comment\",\n"
                  "  \"list\": [1, 2, /* c */ ],\n"
                  "}\n";
    jsonc_strip(text, strlen(text));
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    EXPECT(v != NULL);
    EXPECT_STR(json_string_value(json_object_get(v, "url")), "http://x/*y*/z//w");
    EXPECT_STR(json_string_value(json_object_get(v, "esc")), "a\" // not a comment");
    EXPECT(json_array_size(json_object_get(v, "list")) == 2);
    json_decref(v);

    char bad[] = "{ /* one\n two */ \"a\": 1,\n  \"b\" 2 }";
    jsonc_strip(bad, strlen(bad));
    EXPECT(json_loads(bad, 0, &jerr) == NULL);
    EXPECT(jerr.line == 3); /* the error is still reported on the line it is on */

    char unterminated[] = "{\"a\": 1} /* never closed";
    jsonc_strip(unterminated, strlen(unterminated));
    v = json_loads(unterminated, 0, &jerr);
    EXPECT(v != NULL);
    json_decref(v);
}

static void t_unusable_files(void)
{
    static const struct {
        const char *file, *msg;
    } cases[] = {
        {"toplevel_array.json", "the top level must be a JSON object, not an array"},
        {"no_servers.json", "no \"mcp\" or \"mcpServers\" object"},
        {"mcp_not_object.json", "\"mcp\" must be an object of servers, not an array"},
        {".", "is a directory"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        struct cfg c;
        char *err = NULL;
        EXPECT(cfg_load(data(cases[i].file), &c, &err) == -1);
        EXPECT(err && strstr(err, data(cases[i].file)) == err && strstr(err, cases[i].msg));
        if (err && !strstr(err, cases[i].msg))
            fprintf(stderr, "  got: %s\n", err);
        free(err);
        cfg_free(&c);
    }
}

static void t_missing_file(void)
{
    struct cfg c;
    char *err = NULL;
    EXPECT(cfg_load(data("does-not-exist.json"), &c, &err) == 0);
    EXPECT(!err && c.n_servers == 0 && !c.path && json_is_object(c.root));
    EXPECT_STR(c.format, "none");
    cfg_free(&c);
}

static void t_both_keys(void)
{
    struct cfg c;
    if (load("both.json", &c) < 0)
        return;
    EXPECT_STR(c.format, "opencode");
    EXPECT(c.n_servers == 1);
    EXPECT(cfg_find(&c, "used") && !cfg_find(&c, "ignored"));
    EXPECT(json_object_get(c.root, "mcpServers")); /* ignored but kept */
    cfg_free(&c);
}

static void t_unknown_keys_preserved(void)
{
    struct cfg c;
    if (load("opencode.json", &c) < 0)
        return;
    json_error_t jerr;
    json_t *raw = json_load_file(data("opencode.json"), 0, &jerr);
    EXPECT(raw && json_equal(raw, c.root)); /* nothing added, dropped or interpolated */
    EXPECT_STR(json_string_value(json_object_get(c.root, "theme")), "dark");
    const struct cfg_server *s = must_find(&c, "everything");
    EXPECT_STR(json_string_value(json_object_get(s->entry, "x-note")), "kept as-is");
    EXPECT(json_object_get(json_object_get(s->tools, "echo"), "x-extra"));
    /* entry is the node inside root, so a write-back edit through it lands in root. */
    EXPECT(s->entry == json_object_get(json_object_get(c.root, "mcp"), "everything"));
    json_decref(raw);
    cfg_free(&c);

    if (load("mcpservers.json", &c) < 0)
        return;
    EXPECT(json_object_get(c.root, "otherTool"));
    cfg_free(&c);
}

/* The shipped example must load, and its one secret must be the only thing that can fail. */
static void t_example_file(void)
{
    char path[1024];
    const char *dir = getenv("CODEMCP_TEST_DATA");
    snprintf(path, sizeof(path), "%s/../../mcp.json.example", dir ? dir : "../data");
    for (int with_token = 0; with_token < 2; with_token++) {
        struct cfg c;
        char *err = NULL;
        if (with_token)
            setenv("GITHUB_TOKEN", "ghp_x", 1);
        else
            unsetenv("GITHUB_TOKEN");
        unsetenv("NODE_ENV");
        EXPECT(cfg_load(path, &c, &err) == 0);
        if (err)
            fprintf(stderr, "  %s\n", err);
        free(err);
        EXPECT(c.n_servers == 4);
        for (size_t i = 0; i < c.n_servers; i++) {
            const struct cfg_server *s = &c.servers[i];
            if (strcmp(s->name, "github") == 0 && !with_token)
                EXPECT_STR(s->disabled_reason, "environment variable GITHUB_TOKEN is not set "
                                               "(used in mcp.github.headers.Authorization)");
            else
                EXPECT_STR(s->disabled_reason, NULL);
        }
        const struct cfg_server *fs = must_find(&c, "filesystem");
        EXPECT_STR(fs->cwd, home_path("/projects"));
        EXPECT_STRV(fs->env, "NODE_ENV=production");
        if (with_token)
            EXPECT_STRV(must_find(&c, "github")->headers, "Authorization: Bearer ghp_x");
        cfg_free(&c);
    }
    unsetenv("GITHUB_TOKEN");
}

/* Writes {"mcp": {<name>: {...}}} to path, creating dir first. */
static void write_cfg(const char *dir, const char *file, const char *name)
{
    char path[700], text[200];
    snprintf(path, sizeof(path), "mkdir -p '%s'", dir);
    EXPECT(system(path) == 0);
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    snprintf(text, sizeof(text), "{\"mcp\": {\"%s\": {\"command\": [\"true\"]}}}\n", name);
    EXPECT(write_text(path, text) == 0);
}

/* Loads with no explicit path and returns the single server's name (static), or "". */
static const char *resolved(char *pathbuf, size_t n)
{
    static char name[64];
    struct cfg c;
    char *err = NULL;
    name[0] = '\0';
    if (cfg_load(NULL, &c, &err) == 0 && c.n_servers == 1)
        snprintf(name, sizeof(name), "%s", c.servers[0].name);
    snprintf(pathbuf, n, "%s", c.path ? c.path : "(null)");
    free(err);
    cfg_free(&c);
    return name;
}

static void t_resolution_order(void)
{
    char tmpl[] = "/tmp/cfgtest-XXXXXX", d[300], p[300], buf[512];
    char *root = mkdtemp(tmpl);
    EXPECT(root != NULL);
    if (!root)
        return;
    snprintf(d, sizeof(d), "%s/explicit", root);
    write_cfg(d, "custom.json", "from_env");
    snprintf(d, sizeof(d), "%s/xdg/codemcp", root);
    write_cfg(d, "mcp.json", "from_xdg");
    snprintf(d, sizeof(d), "%s/home/.config/codemcp", root);
    write_cfg(d, "mcp.json", "from_home");

    snprintf(d, sizeof(d), "%s/explicit/custom.json", root);
    setenv("CODEMCP_CONFIG", d, 1);
    reload_settings();
    snprintf(d, sizeof(d), "%s/xdg", root);
    setenv("XDG_CONFIG_HOME", d, 1);
    reload_settings();
    snprintf(d, sizeof(d), "%s/home", root);
    setenv("HOME", d, 1);
    reload_settings();

    EXPECT_STR(resolved(p, sizeof(p)), "from_env");
    snprintf(d, sizeof(d), "%s/explicit/custom.json", root);
    EXPECT_STR(p, d);
    EXPECT_STR(cfg_default_path(buf, sizeof(buf)), d);

    setenv("CODEMCP_CONFIG", "", 1); /* empty counts as unset */

    reload_settings();
    EXPECT_STR(resolved(p, sizeof(p)), "from_xdg");
    snprintf(d, sizeof(d), "%s/xdg/codemcp/mcp.json", root);
    EXPECT_STR(p, d);
    EXPECT_STR(cfg_default_path(buf, sizeof(buf)), d);

    unsetenv("CODEMCP_CONFIG");

    reload_settings();
    setenv("XDG_CONFIG_HOME", "relative/dir", 1); /* XDG says: ignore relative paths */
    reload_settings();
    EXPECT_STR(resolved(p, sizeof(p)), "from_home");
    unsetenv("XDG_CONFIG_HOME");
    reload_settings();
    EXPECT_STR(resolved(p, sizeof(p)), "from_home");
    snprintf(d, sizeof(d), "%s/home/.config/codemcp/mcp.json", root);
    EXPECT_STR(p, d);
    EXPECT_STR(cfg_default_path(buf, sizeof(buf)), d);

    /* An explicit path beats every variable. */
    snprintf(d, sizeof(d), "%s/xdg", root);
    setenv("XDG_CONFIG_HOME", d, 1);
    reload_settings();
    struct cfg c;
    snprintf(d, sizeof(d), "%s/explicit/custom.json", root);
    EXPECT(cfg_load(d, &c, NULL) == 0 && c.n_servers == 1 &&
           strcmp(c.servers[0].name, "from_env") == 0);
    cfg_free(&c);

    /* Nothing at the resolved place: zero servers. */
    snprintf(d, sizeof(d), "%s/empty", root);
    setenv("XDG_CONFIG_HOME", d, 1);
    reload_settings();
    EXPECT_STR(resolved(p, sizeof(p)), "");
    EXPECT_STR(p, "(null)");

    EXPECT(cfg_default_path(buf, 10) == NULL); /* does not fit */

    unsetenv("XDG_CONFIG_HOME");

    reload_settings();
    setenv("HOME", home, 1);
    reload_settings();
    snprintf(buf, sizeof(buf), "rm -rf '%s'", root);
    EXPECT(system(buf) == 0);
}

static void t_wrap_split(void)
{
    struct cfg c;
    char *err = NULL;
    const char *cmd = "node '/x y/server-everything/dist/index.js' --opt \"a b \\\"q\\\" \\n\" "
                      "c\\ d \"\" 'it'\\''s'";
    EXPECT(cfg_from_wrap(cmd, NULL, &c, &err) == 0);
    EXPECT(!err && c.n_servers == 1);
    if (c.n_servers == 1) {
        const struct cfg_server *s = &c.servers[0];
        EXPECT_STRV(s->argv, "node", "/x y/server-everything/dist/index.js", "--opt",
                    "a b \"q\" \\n", "c d", "", "it's");
        EXPECT_STR(s->name, "server-everything");
        EXPECT(s->type == CFG_LOCAL && s->enabled && !s->disabled_reason && !s->url);
        EXPECT_STRV(s->env, NULL);
        EXPECT_STR(c.format, "wrap");
        json_t *e = json_object_get(json_object_get(c.root, "mcp"), "server-everything");
        EXPECT(e && e == s->entry && json_array_size(json_object_get(e, "command")) == 7);
    }
    cfg_free(&c);

    EXPECT(cfg_from_wrap("~/bin/srv  --a", "mine", &c, NULL) == 0);
    EXPECT(c.n_servers == 1);
    if (c.n_servers == 1) {
        EXPECT_STR(c.servers[0].name, "mine");
        EXPECT_STRV(c.servers[0].argv, home_path("/bin/srv"), "--a");
    }
    cfg_free(&c);

    static const struct {
        const char *cmd, *err;
    } bad[] = {
        {"node 'x", "--wrap: unterminated single quote in the command line"},
        {"node \"x", "--wrap: unterminated double quote in the command line"},
        {"node x\\", "--wrap: trailing backslash in the command line"},
        {"   ", "--wrap: the command is empty"},
        {"'' x", "--wrap: the command is empty"},
        {"node \xff", "--wrap: the command line or name is not valid UTF-8"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        err = NULL;
        EXPECT(cfg_from_wrap(bad[i].cmd, NULL, &c, &err) == -1);
        EXPECT_STR(err, bad[i].err);
        EXPECT(c.n_servers == 0);
        free(err);
        cfg_free(&c);
    }
    err = NULL;
    EXPECT(cfg_from_wrap("x", "", &c, &err) == -1);
    EXPECT_STR(err, "--wrap: --name must not be empty");
    free(err);
}

static void t_wrap_names(void)
{
    static const struct {
        const char *cmd, *name;
    } cases[] = {
        {"npx -y @modelcontextprotocol/server-memory", "server-memory"},
        {"npx -y @modelcontextprotocol/server-everything@2025.1.1", "server-everything"},
        {"node tests/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js /tmp",
         "server-filesystem"},
        {"node /usr/lib/node_modules/foo/build/lib/index.js", "foo"},
        {"/usr/bin/python3.11 -m mcp_server_git --repo .", "mcp_server_git"},
        {"python /opt/tools/weather/main.py", "weather"},
        {"python server.py", "server"},
        {"node dist/index.js", "index"},
        {"uvx mcp-server-time", "mcp-server-time"},
        {"/usr/local/bin/mcp-server-fetch --x", "mcp-server-fetch"},
        {"./my.server", "my-server"},
        {"docker run -i --rm mcp/github", "docker"},
        {"deno run -A ./tools/weather.ts", "weather"},
        {"node", "node"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        struct cfg c;
        EXPECT(cfg_from_wrap(cases[i].cmd, NULL, &c, NULL) == 0);
        EXPECT_STR(c.n_servers == 1 ? c.servers[0].name : NULL, cases[i].name);
        cfg_free(&c);
    }
}

int main(void)
{
    /* A known HOME so "~" expansion is checkable; no outside config can leak in. */
    snprintf(home, sizeof(home), "/tmp/cfgtest-home-%ld", (long)getpid());
    setenv("HOME", home, 1);
    reload_settings();
    unsetenv("CODEMCP_CONFIG");
    reload_settings();
    unsetenv("XDG_CONFIG_HOME");
    reload_settings();
    setenv("CFGT_TOKEN", "tok123", 1);
    setenv("CFGT_ARG", "argval", 1);
    setenv("CFGT_EMPTY", "", 1);
    unsetenv("CFGT_UNSET_GITHUB_TOKEN");
    unsetenv("CFGT_NOPE");
    unsetenv("CFGT_NOPE2");

    check_case("opencode format: local, remote, inferred type, tools", t_opencode_format);
    check_case("opencode string command is split like a shell", t_opencode_string_command);
    check_case("missing variable disables only that server, naming it", t_missing_var_disables_one);
    check_case("${VAR:-default} when unset, empty and set", t_interpolation_defaults);
    check_case("cfg_interpolate: both syntaxes, defaults, literals", t_interpolate_function);
    check_case("mcpServers format: command+args, env, disabled, seconds", t_mcpservers_format);
    check_case("bad entries disable only themselves, naming the key", t_bad_entries);
    check_case("syntax error reports file:line:col", t_syntax_error_position);
    check_case("JSON with comments and trailing commas (jsonc_strip)", t_jsonc);
    check_case("unusable files fail the load with a message", t_unusable_files);
    check_case("missing file gives zero servers", t_missing_file);
    check_case("both mcp and mcpServers: mcp wins", t_both_keys);
    check_case("unknown keys preserved in root and entries", t_unknown_keys_preserved);
    check_case("mcp.json.example loads", t_example_file);
    check_case("resolution: CODEMCP_CONFIG, XDG_CONFIG_HOME, HOME", t_resolution_order);
    check_case("--wrap splitting and errors", t_wrap_split);
    check_case("--wrap derived names", t_wrap_names);

    return CHECK_DONE();
}
