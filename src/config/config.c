/* config — turns mcp.json into struct cfg: finding the file, its two formats, interpolation
 * of environment variables, and validation of every entry. See config.h for the accepted
 * formats and rules. `--wrap` (one server from a command line) is config_wrap.c; the helpers
 * both files use are cfg__* in config_int.h.
 *
 * Reads and validates only: never connects, spawns or writes. One bad entry or one missing
 * environment variable disables that server alone (first problem found wins the reason);
 * only an unusable file fails cfg_load. Not thread-safe (getenv, getpwuid): call it from the
 * thread that owns configuration. */
#include "config.h"
#include "jsonc.h"
#include "config_int.h"
#include "settings.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#define MOD "config"

/* ---- small helpers ---------------------------------------------------------------------- */

static char *vfmt(const char *f, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, f, ap2);
    va_end(ap2);
    if (n < 0)
        return xstrdup(f);
    char *s = xmalloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, f, ap);
    return s;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *s = vfmt(f, ap);
    va_end(ap);
    return s;
}

void cfg__set_err(char **err, const char *f, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, f);
    free(*err);
    *err = vfmt(f, ap);
    va_end(ap);
}

void cfg__strv_push(struct strv *s, char *item)
{
    if (s->n + 2 > s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = item;
    s->v[s->n] = NULL;
}

/* Hands the vector to the caller: never NULL, even when empty. */
char **cfg__strv_steal(struct strv *s)
{
    char **v = s->v ? s->v : xcalloc(1, sizeof(*v));
    memset(s, 0, sizeof(*s));
    return v;
}

void cfg__strv_free(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

/* A key whose value is null counts as absent ("cwd": null is common in generated files). */
static json_t *get(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

static const char *jtype(const json_t *v)
{
    static const char *names[] = {
        [JSON_OBJECT] = "an object", [JSON_ARRAY] = "an array", [JSON_STRING] = "a string",
        [JSON_INTEGER] = "a number", [JSON_REAL] = "a number",  [JSON_TRUE] = "a boolean",
        [JSON_FALSE] = "a boolean",  [JSON_NULL] = "null",
    };
    return names[json_typeof(v)];
}

static const struct settings *set; /* cfg_use_settings */

void cfg_use_settings(const struct settings *s)
{
    set = s;
}

const struct settings *cfg__settings(void)
{
    return set;
}

/* $HOME, else the password database; NULL when neither knows. Borrowed. */
static const char *home_dir(void)
{
    const char *h = set ? set->home : NULL;
    if (h && *h)
        return h;
    struct passwd *pw = getpwuid(getuid());
    return pw && pw->pw_dir && *pw->pw_dir ? pw->pw_dir : NULL;
}

/* ---- interpolation ---------------------------------------------------------------------- */

static int name_start(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

int cfg__name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

char *cfg_interpolate(const char *s, char **missing)
{
    struct buf b = {0};
    buf_appends(&b, "");
    for (const char *p = s; *p;) {
        const char *name = NULL, *def = NULL, *next = NULL;
        size_t nlen = 0, dlen = 0;
        if (strncmp(p, "{env:", 5) == 0) {
            /* opencode's form: any name up to the closing brace. */
            const char *end = strchr(p + 5, '}');
            if (end && end > p + 5 && !memchr(p + 5, '{', (size_t)(end - p - 5))) {
                name = p + 5;
                nlen = (size_t)(end - name);
                next = end + 1;
            }
        } else if (p[0] == '$' && p[1] == '{' && name_start(p[2])) {
            const char *q = p + 2;
            while (cfg__name_char(*q))
                q++;
            if (*q == '}') {
                name = p + 2;
                nlen = (size_t)(q - name);
                next = q + 1;
            } else if (q[0] == ':' && q[1] == '-' && strchr(q + 2, '}')) {
                name = p + 2;
                nlen = (size_t)(q - name);
                def = q + 2;
                dlen = (size_t)(strchr(def, '}') - def);
                next = def + dlen + 1;
            }
        }
        if (!name) { /* not a reference: copied literally */
            buf_append(&b, p, 1);
            p++;
            continue;
        }
        char *var = xstrndup(name, nlen);
        const char *val = settings_env(var);
        if (def && (!val || !*val)) {
            buf_append(&b, def, dlen);
        } else if (val) {
            buf_appends(&b, val);
        } else {
            if (missing)
                *missing = var;
            else
                free(var);
            buf_free(&b);
            return NULL;
        }
        free(var);
        p = next;
    }
    return buf_steal(&b);
}

/* ---- one server entry ------------------------------------------------------------------- */

/* Formats "<rk>.<name>[.<suffix>]" into e->where (truncated if huge; it is only a message). */
static const char *at(struct ent *e, const char *f, ...) __attribute__((format(printf, 2, 3)));
static const char *at(struct ent *e, const char *f, ...)
{
    char suffix[256];
    va_list ap;
    va_start(ap, f);
    vsnprintf(suffix, sizeof(suffix), f, ap);
    va_end(ap);
    snprintf(e->where, sizeof(e->where), "%s.%s%s%s", e->rk, e->s->name, *suffix ? "." : "",
             suffix);
    return e->where;
}

/* Records why the server is unusable; the first reason wins. Always returns -1. */
static int bad(struct ent *e, const char *f, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct ent *e, const char *f, ...)
{
    if (e->s->disabled_reason)
        return -1;
    va_list ap;
    va_start(ap, f);
    e->s->disabled_reason = vfmt(f, ap);
    va_end(ap);
    return -1;
}

/* Interpolates s found at `where`; NULL (reason set) when a variable is missing. */
static char *interp(struct ent *e, const char *s, const char *where)
{
    char *missing = NULL;
    char *r = cfg_interpolate(s, &missing);
    if (!r) {
        bad(e, "environment variable %s is not set (used in %s)", missing, where);
        free(missing);
    }
    return r;
}

/* "~" or "~/..." at the start of *p becomes the home directory. */
int cfg__expand_tilde(struct ent *e, char **p, const char *key)
{
    const char *s = *p;
    if (s[0] != '~' || (s[1] != '/' && s[1] != '\0'))
        return 0;
    const char *home = home_dir();
    if (!home)
        return bad(e, "%s starts with ~ but HOME is not set", at(e, "%s", key));
    char *n = fmt("%s%s", home, s + 1);
    free(*p);
    *p = n;
    return 0;
}

static int opt_string(struct ent *e, json_t *obj, const char *key, char **out)
{
    json_t *v = get(obj, key);
    if (!v)
        return 0;
    if (!json_is_string(v))
        return bad(e, "%s must be a string, not %s", at(e, "%s", key), jtype(v));
    *out = interp(e, json_string_value(v), at(e, "%s", key));
    return *out ? 0 : -1;
}

static int add_items(struct ent *e, json_t *arr, const char *key, struct strv *out)
{
    size_t i;
    json_t *it;
    json_array_foreach(arr, i, it)
    {
        if (!json_is_string(it))
            return bad(e, "%s must be a string, not %s", at(e, "%s[%zu]", key, i), jtype(it));
        char *s = interp(e, json_string_value(it), at(e, "%s[%zu]", key, i));
        if (!s)
            return -1;
        cfg__strv_push(out, s);
    }
    return 0;
}

static int header_name_ok(const char *k)
{
    if (!*k)
        return 0;
    for (; *k; k++)
        if (!cfg__name_char(*k) && !strchr("!#$%&'*+-.^`|~", *k))
            return 0;
    return 1;
}

/* Reads an object of strings into "K=V" (env) or "K: V" (headers) items. Absent: empty. */
static int string_map(struct ent *e, json_t *obj, const char *key, int headers, char ***out)
{
    json_t *m = get(obj, key), *v;
    const char *k;
    struct strv items = {0};
    if (m && !json_is_object(m)) {
        bad(e, "%s must be an object of strings, not %s", at(e, "%s", key), jtype(m));
        goto fail;
    }
    json_object_foreach(m, k, v)
    {
        if (!json_is_string(v)) {
            bad(e, "%s must be a string, not %s", at(e, "%s.%s", key, k), jtype(v));
            goto fail;
        }
        if (headers ? !header_name_ok(k) : (!*k || strchr(k, '='))) {
            bad(e, "%s: \"%s\" is not a valid %s name", at(e, "%s", key), k,
                headers ? "header" : "environment variable");
            goto fail;
        }
        char *val = interp(e, json_string_value(v), at(e, "%s.%s", key, k));
        if (!val)
            goto fail;
        /* A line break in a header value would let a variable inject headers. */
        if (headers && strpbrk(val, "\r\n")) {
            free(val);
            bad(e, "%s contains a line break", at(e, "%s.%s", key, k));
            goto fail;
        }
        cfg__strv_push(&items, headers ? fmt("%s: %s", k, val) : fmt("%s=%s", k, val));
        free(val);
    }
    *out = cfg__strv_steal(&items);
    return 0;
fail:
    cfg__strv_free(items.v);
    return -1;
}

static int parse_type(struct ent *e, json_t *v)
{
    json_t *t = get(v, "type"), *cmd = get(v, "command"), *url = get(v, "url");
    if (!t) {
        if (cmd && url)
            return bad(e, "%s has both \"command\" and \"url\": set \"type\"", at(e, "%s", ""));
        if (!cmd && !url)
            return bad(e, "%s needs \"command\" (local) or \"url\" (remote)", at(e, "%s", ""));
        e->s->type = url ? CFG_REMOTE : CFG_LOCAL;
        return 0;
    }
    const char *ts = json_string_value(t);
    static const char *local[] = {"local", "stdio"};
    static const char *remote[] = {"remote", "http", "streamable-http", "streamableHttp", "sse"};
    for (size_t i = 0; ts && i < sizeof(local) / sizeof(*local); i++)
        if (strcmp(ts, local[i]) == 0) {
            e->s->type = CFG_LOCAL;
            return 0;
        }
    for (size_t i = 0; ts && i < sizeof(remote) / sizeof(*remote); i++)
        if (strcmp(ts, remote[i]) == 0) {
            e->s->type = CFG_REMOTE;
            return 0;
        }
    return bad(e, "%s must be %s", at(e, "type"),
               e->ms ? "\"stdio\", \"http\", \"streamable-http\" or \"sse\""
                     : "\"local\" or \"remote\"");
}

static int parse_common(struct ent *e, json_t *v)
{
    struct cfg_server *s = e->s;
    json_t *x;
    if ((x = get(v, "enabled"))) {
        if (!json_is_boolean(x))
            return bad(e, "%s must be true or false, not %s", at(e, "enabled"), jtype(x));
        s->enabled = json_is_true(x);
    }
    if ((x = get(v, "disabled"))) {
        if (!json_is_boolean(x))
            return bad(e, "%s must be true or false, not %s", at(e, "disabled"), jtype(x));
        if (json_is_true(x))
            s->enabled = 0;
    }
    if ((x = get(v, "timeout"))) {
        double ms = json_number_value(x);
        /* Cline and friends write seconds; nobody means a sub-second connect timeout. */
        if (e->ms && ms > 0 && ms < 1000)
            ms *= 1000;
        if (!json_is_number(x) || !(ms >= 1 && ms <= INT_MAX))
            return bad(e, "%s must be a positive number of milliseconds", at(e, "timeout"));
        s->timeout_ms = (int)ms;
    }
    if ((x = get(v, "oauth"))) {
        if (!json_is_boolean(x) && !json_is_object(x))
            return bad(e, "%s must be false or an object, not %s", at(e, "oauth"), jtype(x));
        s->oauth = json_incref(x);
    }
    if ((x = get(v, "tools"))) {
        const char *tn, *k;
        json_t *tv, *f;
        if (!json_is_object(x))
            return bad(e, "%s must be an object, not %s", at(e, "tools"), jtype(x));
        /* Fail closed: a mistyped "enabled": "false" must not leave a tool switched on. */
        json_object_foreach(x, tn, tv)
        {
            if (!json_is_object(tv))
                return bad(e, "%s must be an object, not %s", at(e, "tools.%s", tn), jtype(tv));
            json_object_foreach(tv, k, f)
            {
                if ((!strcmp(k, "enabled") || !strcmp(k, "mutation")) && !json_is_boolean(f))
                    return bad(e, "%s must be true or false, not %s", at(e, "tools.%s.%s", tn, k),
                               jtype(f));
            }
        }
        s->tools = json_incref(x);
    }
    return 0;
}

/* Keys of the other format are a likely mix-up: say so instead of silently ignoring them. */
static void hint_foreign_keys(struct ent *e, json_t *v)
{
    static const char *oc[][2] = {{"args", "command"}, {"env", "environment"}};
    static const char *ms[][2] = {{"environment", "env"}};
    size_t n = e->ms ? 1 : 2;
    for (size_t i = 0; i < n; i++) {
        const char *const *kv = e->ms ? ms[i] : oc[i];
        if (json_object_get(v, kv[0]))
            log_warn(MOD, "%s is not read in this format (use \"%s\"); ignored", at(e, "%s", kv[0]),
                     kv[1]);
    }
}

static int parse_local(struct ent *e, json_t *v)
{
    struct cfg_server *s = e->s;
    struct strv argv = {0};
    json_t *cmd = get(v, "command"), *args = get(v, "args");
    if (!cmd) {
        bad(e, "%s is missing (a local server needs a command)", at(e, "command"));
        goto fail;
    }
    if (json_is_string(cmd) && e->ms) { /* mcpServers: the executable as-is */
        char *c = interp(e, json_string_value(cmd), at(e, "command"));
        if (!c)
            goto fail;
        cfg__strv_push(&argv, c);
    } else if (json_is_string(cmd)) { /* opencode: split first, so values are never split */
        const char *why = NULL;
        if (cfg__split_words(json_string_value(cmd), &argv, &why) < 0) {
            bad(e, "%s: %s", at(e, "command"), why);
            goto fail;
        }
        for (size_t i = 0; i < argv.n; i++) {
            char *w = interp(e, argv.v[i], at(e, "command"));
            if (!w)
                goto fail;
            free(argv.v[i]);
            argv.v[i] = w;
        }
    } else if (json_is_array(cmd)) {
        if (add_items(e, cmd, "command", &argv) < 0)
            goto fail;
    } else {
        bad(e, "%s must be %s, not %s", at(e, "command"),
            e->ms ? "a string" : "an array of strings", jtype(cmd));
        goto fail;
    }
    if (e->ms && args) {
        if (!json_is_array(args)) {
            bad(e, "%s must be an array of strings, not %s", at(e, "args"), jtype(args));
            goto fail;
        }
        if (add_items(e, args, "args", &argv) < 0)
            goto fail;
    }
    if (argv.n == 0 || !argv.v[0][0]) {
        bad(e, "%s is empty", at(e, "command"));
        goto fail;
    }
    if (cfg__expand_tilde(e, &argv.v[0], "command") < 0)
        goto fail;
    if (string_map(e, v, e->ms ? "env" : "environment", 0, &s->env) < 0)
        goto fail;
    json_t *inherit = get(v, "inheritEnv");
    if (inherit && !json_is_boolean(inherit)) {
        bad(e, "%s must be true or false, not %s", at(e, "inheritEnv"), jtype(inherit));
        goto fail;
    }
    s->inherit_env = json_is_true(inherit);
    if (opt_string(e, v, "cwd", &s->cwd) < 0 ||
        (s->cwd && cfg__expand_tilde(e, &s->cwd, "cwd") < 0))
        goto fail;
    s->argv = cfg__strv_steal(&argv);
    return 0;
fail:
    cfg__strv_free(argv.v);
    return -1;
}

static int parse_remote(struct ent *e, json_t *v)
{
    struct cfg_server *s = e->s;
    if (!get(v, "url"))
        return bad(e, "%s is missing (a remote server needs a url)", at(e, "url"));
    if (opt_string(e, v, "url", &s->url) < 0)
        return -1;
    /* The value is not echoed: it may carry a token. */
    if (strncasecmp(s->url, "http://", 7) != 0 && strncasecmp(s->url, "https://", 8) != 0)
        return bad(e, "%s must start with http:// or https://", at(e, "url"));
    json_t *mc = get(v, "maxConnections");
    if (mc && (!json_is_integer(mc) || json_integer_value(mc) < 0 ||
               json_integer_value(mc) > CFG_MAX_CONNECTIONS))
        return bad(e, "%s must be an integer from 0 (no cap) to %d", at(e, "maxConnections"),
                   CFG_MAX_CONNECTIONS);
    if (mc)
        s->max_connections = (int)json_integer_value(mc);
    return string_map(e, v, "headers", 1, &s->headers);
}

/* Runtime fields of an unusable server are dropped so nobody half-uses them. */
void cfg__drop_runtime(struct cfg_server *s)
{
    cfg__strv_free(s->argv);
    cfg__strv_free(s->env);
    cfg__strv_free(s->headers);
    free(s->cwd);
    free(s->url);
    s->argv = s->env = s->headers = NULL;
    s->cwd = s->url = NULL;
}

static const struct cfg_text *loading; /* the file cfg_load is reading, for line numbers */

static void parse_entry(struct cfg_server *s, const char *rk, int ms, const char *name, json_t *v)
{
    struct ent e = {.s = s, .rk = rk, .ms = ms};
    s->name = xstrdup(name);
    s->enabled = 1;
    s->timeout_ms = CFG_DEFAULT_TIMEOUT_MS;
    s->max_connections = -1;
    s->entry = json_incref(v);
    if (!*name) {
        bad(&e, "%s has a server with an empty name", rk);
    } else if (!json_is_object(v)) {
        bad(&e, "%s must be an object, not %s", at(&e, "%s", ""), jtype(v));
    } else {
        if (loading)
            cfg__check_keys(&e, v, loading);
        if (!ms && cfg__looks_mcpservers(v)) {
            /* A common paste: read it as written instead of running a bare command. */
            e.ms = 1;
            cfg__warn(
                s, loading ? loading->path : NULL,
                cfg__line(loading, rk, name, json_object_get(v, "args") ? "args" : "env", NULL),
                "%s.%s is written in the mcpServers format (\"command\" with \"args\"/"
                "\"env\"); read as such. In \"mcp\" write \"command\": [\"cmd\", \"arg\", "
                "...] and \"environment\", or move it under \"mcpServers\"",
                rk, name);
        }
    }
    if (json_is_object(v) && *name && parse_type(&e, v) == 0 && parse_common(&e, v) == 0) {
        hint_foreign_keys(&e, v);
        if (s->type == CFG_LOCAL)
            parse_local(&e, v);
        else
            parse_remote(&e, v);
    }
    if (s->disabled_reason)
        cfg__drop_runtime(s);
}

/* ---- files -------------------------------------------------------------------------------- */

const char *cfg_config_dir(char *buf, size_t n)
{
    const char *v = set ? set->xdg_config_home : NULL;
    int r;
    if (v && v[0] == '/') { /* XDG: a relative path is invalid and ignored */
        r = snprintf(buf, n, "%s", v);
    } else {
        const char *home = home_dir();
        if (!home)
            return NULL;
        r = snprintf(buf, n, "%s/.config", home);
    }
    return r < 0 || (size_t)r >= n ? NULL : buf;
}

const char *cfg_default_path(char *buf, size_t n)
{
    const char *v = set ? set->config : NULL;
    char dir[4096];
    int r;
    if (v && *v)
        r = snprintf(buf, n, "%s", v);
    else if (cfg_config_dir(dir, sizeof(dir)))
        r = snprintf(buf, n, "%s/codemcp/mcp.json", dir);
    else
        return NULL;
    return r < 0 || (size_t)r >= n ? NULL : buf;
}

void cfg__init(struct cfg *c, const char *format)
{
    memset(c, 0, sizeof(*c));
    c->format = format;
}

/* Picks the servers object of root; NULL with *err when there is none. */
static json_t *servers_of(const char *path, json_t *root, struct cfg *out, char **err)
{
    json_t *mcp = json_object_get(root, "mcp"), *ms = json_object_get(root, "mcpServers");
    if (mcp) {
        if (!json_is_object(mcp)) {
            cfg__set_err(err, "%s: \"mcp\" must be an object of servers, not %s", path, jtype(mcp));
            return NULL;
        }
        if (ms)
            log_warn(MOD,
                     "%s has both \"mcp\" and \"mcpServers\": using \"mcp\", ignoring "
                     "\"mcpServers\"",
                     path);
        out->format = "opencode";
        return mcp;
    }
    if (ms) {
        if (!json_is_object(ms)) {
            cfg__set_err(err, "%s: \"mcpServers\" must be an object of servers, not %s", path,
                         jtype(ms));
            return NULL;
        }
        out->format = "mcpServers";
        return ms;
    }
    cfg__set_err(err,
                 "%s: no \"mcp\" or \"mcpServers\" object (expected {\"mcp\": {\"name\": {...}}})",
                 path);
    return NULL;
}

int cfg_load(const char *explicit_path, struct cfg *out, char **err)
{
    char defbuf[PATH_MAX];
    char *text = NULL;
    json_t *root = NULL, *servers;
    json_error_t jerr;
    struct stat st;
    size_t len = 0;

    cfg__init(out, "none");
    if (err)
        *err = NULL;
    const char *path =
        explicit_path && *explicit_path ? explicit_path : cfg_default_path(defbuf, sizeof(defbuf));
    if (!path) {
        log_warn(MOD, "no HOME and no CODEMCP_CONFIG: starting with no servers");
        goto none;
    }
    if (stat(path, &st) < 0) {
        if (errno == ENOENT) {
            log_warn(MOD,
                     "no config file at %s: serving no MCP servers (copy mcp.json.example "
                     "there, run `codemcp setup opencode`, or pass -c PATH or --wrap)",
                     path);
            goto none;
        }
        cfg__set_err(err, "%s: cannot read: %s", path, strerror(errno));
        goto fail;
    }
    if (S_ISDIR(st.st_mode)) {
        cfg__set_err(err, "%s: is a directory, not a config file", path);
        goto fail;
    }
    if (!(text = read_file(path, &len))) {
        cfg__set_err(err, "%s: cannot read: %s", path, strerror(errno));
        goto fail;
    }
    /* Comments and trailing commas as opencode allows them; positions are kept. DECODE_ANY
     * so a top-level scalar gets our clearer message below. */
    if (!(root = jsonc_parse(text, len, JSON_DECODE_ANY, &jerr))) {
        cfg__set_err(err, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
        goto fail;
    }
    if (!json_is_object(root)) {
        cfg__set_err(err, "%s: the top level must be a JSON object, not %s", path, jtype(root));
        goto fail;
    }
    if (!(servers = servers_of(path, root, out, err)))
        goto fail;

    out->path = xstrdup(path);
    out->root = root;
    out->n_servers = json_object_size(servers);
    out->servers = xcalloc(out->n_servers ? out->n_servers : 1, sizeof(*out->servers));
    const char *name;
    json_t *v;
    size_t i = 0;
    int ms = strcmp(out->format, "mcpServers") == 0;
    struct cfg_text ft = {path, text};
    loading = &ft;
    json_object_foreach(servers, name, v) /* insertion order = file order (jansson >= 2.8) */
    {
        out->servers[i].file = out->path;
        parse_entry(&out->servers[i++], ms ? "mcpServers" : "mcp", ms, name, v);
    }
    loading = NULL;
    free(text);
    return 0;
none:
    out->root = json_object();
    return 0;
fail:
    free(text);
    json_decref(root);
    cfg__init(out, "none");
    return -1;
}

/* ---- lifetime ----------------------------------------------------------------------------- */

void cfg_free(struct cfg *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_servers; i++) {
        struct cfg_server *s = &c->servers[i];
        cfg__drop_runtime(s);
        free(s->name);
        free(s->disabled_reason);
        json_decref(s->tools);
        json_decref(s->oauth);
        json_decref(s->entry);
        json_decref(s->warnings);
        json_decref(s->tool_lines);
    }
    free(c->servers);
    free(c->path);
    json_decref(c->root);
    cfg__init(c, "none");
}

const struct cfg_server *cfg_find(const struct cfg *c, const char *name)
{
    for (size_t i = 0; c && name && i < c->n_servers; i++)
        if (strcmp(c->servers[i].name, name) == 0)
            return &c->servers[i];
    return NULL;
}
