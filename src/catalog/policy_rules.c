/* policy_rules — the ordered rules of `"policy": {"rules": [...]}`: compiled once when the
 * config is loaded (globs and regexes into linear-time machines, JSON paths into steps, path
 * prefixes normalized), then matched against every call with its final arguments.
 *
 * A value a matcher cannot judge (the argument is missing, has another type, or is a path that
 * climbs above / or is not absolute) is UNKNOWN: it makes an allow rule not match and a deny or
 * dry_run rule match, so a strange value never slips past a rule meant to stop it.
 *
 * Path prefixes (`under`) are judged on the value as text: `.` and empty components are
 * dropped and `..` removes the previous one, so /repo/docs/../../etc is /etc and is not under
 * /repo/docs. Symlinks are NOT resolved: the gateway cannot see the upstream's filesystem, so
 * a symlink inside the allowed tree that points outside it is the upstream's to refuse (run
 * the server confined to that tree, as server-filesystem's allowed directories do). */
#include "policy_int.h"
#include "jsonfast.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD            "policy"
#define MAX_PATH_STEPS 32

struct glob {
    char *text;     /* exact text, or the fixed part of a prefix or suffix glob */
    struct pre *re; /* set: any other glob, run as a pattern */
    size_t len;     /* of text */
    enum { G_EXACT, G_PREFIX, G_SUFFIX, G_PATTERN } kind;
};

struct globs {
    struct glob *v;
    size_t n; /* 0: any */
};

enum mkind { M_EQ, M_GLOB, M_REGEX, M_UNDER, M_RANGE, M_ONE_OF };

struct step {
    char *key; /* NULL: index into an array */
    size_t index;
};

struct matcher {
    char *path; /* as written, for explanations */
    struct step steps[MAX_PATH_STEPS];
    size_t n_steps;
    enum mkind kind;
    json_t *value;  /* eq, one_of */
    struct pre *re; /* glob, regex */
    char *under;    /* normalized, no trailing slash ("" is /) */
    double lo, hi;
    int has_lo, has_hi;
};

struct rule {
    char name[96];
    struct globs principal, server, tool;
    int write, dry_run; /* -1: either */
    struct matcher *m;
    size_t n_m;
    enum policy_effect effect;
    char *message;
    char *invalid;  /* set: the rule denies every call, saying this */
    json_t *source; /* as written, for the worker's pre-flight check (policy_worker_rules) */
};

static struct rule *rules;
static size_t n_rules;

/* Which rules name a tool depends only on (server, tool): kept for the last few tools called,
 * so a call pays the glob matches of its server and tool once, not once per call. */
#define NAMED_KEPT 16
static struct named {
    char *server, *tool;
    unsigned char *rule; /* n_rules flags */
} named_cache[NAMED_KEPT];
static size_t named_next;

static void named_forget(void)
{
    for (size_t i = 0; i < NAMED_KEPT; i++) {
        free(named_cache[i].server);
        free(named_cache[i].tool);
        free(named_cache[i].rule);
        named_cache[i] = (struct named){0};
    }
}

static void globs_free(struct globs *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->v[i].text);
        pre_free(g->v[i].re);
    }
    free(g->v);
    *g = (struct globs){0};
}

static void rule_free(struct rule *r)
{
    globs_free(&r->principal);
    globs_free(&r->server);
    globs_free(&r->tool);
    for (size_t i = 0; i < r->n_m; i++) {
        struct matcher *m = &r->m[i];
        free(m->path);
        for (size_t k = 0; k < m->n_steps; k++)
            free(m->steps[k].key);
        json_decref(m->value);
        pre_free(m->re);
        free(m->under);
    }
    free(r->m);
    free(r->message);
    free(r->invalid);
    json_decref(r->source);
}

/* ---- compile ----------------------------------------------------------------------------- */

static int compile_globs(json_t *v, const char *what, struct globs *out, char *err, size_t n)
{
    if (!v)
        return 0;
    json_t *one = json_is_string(v) ? json_pack("[O]", v) : json_incref(v);
    if (!json_is_array(one) || json_array_size(one) == 0) {
        json_decref(one);
        snprintf(err, n, "\"%s\" must be a glob or a non-empty list of globs", what);
        return -1;
    }
    out->v = xcalloc(json_array_size(one), sizeof(*out->v));
    size_t i;
    json_t *g;
    json_array_foreach(one, i, g)
    {
        const char *s = json_string_value(g);
        if (!s) {
            snprintf(err, n, "\"%s\" must hold strings", what);
            break;
        }
        struct glob *dst = &out->v[out->n++];
        size_t len = strlen(s), wild = strcspn(s, "*?\\");
        dst->kind = G_EXACT;
        if (wild == len) /* most globs are a name, or a name and one * at an end */
            dst->text = xstrdup(s);
        else if (wild == len - 1 && s[wild] == '*') {
            dst->kind = G_PREFIX;
            dst->text = xstrndup(s, wild);
        } else if (wild == 0 && s[0] == '*' && !strpbrk(s + 1, "*?\\")) {
            dst->kind = G_SUFFIX;
            dst->text = xstrdup(s + 1);
        } else {
            dst->kind = G_PATTERN;
            dst->text = xstrdup(s);
            if (!(dst->re = pre_glob(s, len, err, n)))
                break;
        }
        dst->len = strlen(dst->text);
    }
    json_decref(one);
    return *err ? -1 : 0;
}

static int glob_match(const struct glob *g, const char *s, size_t len)
{
    size_t t = g->len;
    switch (g->kind) {
    case G_EXACT:
        return len == t && memcmp(g->text, s, t) == 0;
    case G_PREFIX:
        return len >= t && memcmp(s, g->text, t) == 0;
    case G_SUFFIX:
        return len >= t && memcmp(s + len - t, g->text, t) == 0;
    case G_PATTERN:
        return pre_match(g->re, s, len);
    }
    return 0;
}

static int globs_match_len(const struct globs *g, const char *s, size_t len)
{
    if (!g->n)
        return 1;
    for (size_t i = 0; i < g->n; i++)
        if (glob_match(&g->v[i], s, len))
            return 1;
    return 0;
}

/* "a.b[0]", "$.a.b", "a[\"odd.key\"]" into steps. */
static int compile_path(const char *p, struct matcher *m, char *err, size_t n)
{
    m->path = xstrdup(p);
    if (p[0] == '$')
        p += p[1] == '.' ? 2 : 1;
    while (*p) {
        if (m->n_steps == MAX_PATH_STEPS) {
            snprintf(err, n, "argument path \"%s\" has more than %d steps", m->path,
                     MAX_PATH_STEPS);
            return -1;
        }
        struct step *st = &m->steps[m->n_steps];
        if (*p == '[' && p[1] == '"') {
            const char *end = strstr(p + 2, "\"]");
            if (!end)
                goto bad;
            st->key = xstrndup(p + 2, (size_t)(end - p - 2));
            p = end + 2;
        } else if (*p == '[') {
            char *end;
            unsigned long long idx = strtoull(p + 1, &end, 10);
            if (end == p + 1 || *end != ']' || idx > 1000000)
                goto bad;
            st->index = (size_t)idx;
            p = end + 1;
        } else {
            size_t len = strcspn(p, ".[");
            if (!len)
                goto bad;
            st->key = xstrndup(p, len);
            p += len;
        }
        m->n_steps++;
        if (*p == '.' && p[1] && p[1] != '.' && p[1] != '[')
            p++;
        else if (*p && *p != '[')
            goto bad;
    }
    if (m->n_steps)
        return 0;
bad:
    snprintf(err, n, "argument path \"%s\" is not of the form a.b[0][\"c.d\"]", m->path);
    return -1;
}

/* Normalizes an absolute path into out (no trailing slash; "" for /): 0, or -1 when it is not
 * absolute, holds a NUL, or climbs above / with "..". */
static int normalize_path(const char *p, size_t len, struct buf *out)
{
    buf_reset(out);
    buf_appends(out, "");
    if (!len || p[0] != '/' || memchr(p, 0, len))
        return -1;
    size_t i = 0;
    while (i < len) {
        while (i < len && p[i] == '/')
            i++;
        size_t start = i;
        while (i < len && p[i] != '/')
            i++;
        size_t n = i - start;
        if (n == 0 || (n == 1 && p[start] == '.'))
            continue;
        if (n == 2 && p[start] == '.' && p[start + 1] == '.') {
            char *slash = out->len ? strrchr(out->data, '/') : NULL;
            if (!slash)
                return -1;
            out->len = (size_t)(slash - out->data);
            out->data[out->len] = 0;
            continue;
        }
        buf_append(out, "/", 1);
        buf_append(out, p + start, n);
    }
    return 0;
}

static const char *const kinds[] = {"eq", "glob", "regex", "under", "range", "one_of"};

static int compile_matcher(const char *path, json_t *spec, struct matcher *m, char *err, size_t n)
{
    if (compile_path(path, m, err, n) < 0)
        return -1;
    if (!json_is_object(spec)) {
        snprintf(err, n, "args.%s must be an object like {\"eq\": ...}", path);
        return -1;
    }
    const char *key;
    json_t *v;
    int found = 0, icase = 0;
    json_object_foreach(spec, key, v)
    {
        if (strcmp(key, "ignore_case") == 0) {
            icase = json_is_true(v);
            continue;
        }
        size_t k = 0;
        while (k < 6 && strcmp(kinds[k], key) != 0)
            k++;
        if (k == 6 || found++) {
            snprintf(err, n, "args.%s: %s (one of eq, glob, regex, under, range, one_of)", path,
                     k == 6 ? "unknown matcher" : "more than one matcher");
            return -1;
        }
        m->kind = (enum mkind)k;
        m->value = json_incref(v);
    }
    if (!found) {
        snprintf(err, n, "args.%s has no matcher (eq, glob, regex, under, range, one_of)", path);
        return -1;
    }
    v = m->value;
    const char *s = json_string_value(v);
    char rerr[200] = "";
    switch (m->kind) {
    case M_EQ:
        return 0;
    case M_GLOB:
    case M_REGEX:
        if (!s) {
            snprintf(err, n, "args.%s.%s must be a string", path, kinds[m->kind]);
            return -1;
        }
        m->re = m->kind == M_GLOB ? pre_glob(s, strlen(s), rerr, sizeof(rerr))
                                  : pre_compile(s, strlen(s), icase, rerr, sizeof(rerr));
        if (!m->re)
            snprintf(err, n, "args.%s.%s \"%.100s\": %s", path, kinds[m->kind], s, rerr);
        return m->re ? 0 : -1;
    case M_UNDER: {
        struct buf b = {0};
        int bad = !s || normalize_path(s, strlen(s), &b) < 0;
        m->under = buf_steal(&b);
        if (bad)
            snprintf(err, n, "args.%s.under must be an absolute path", path);
        return bad ? -1 : 0;
    }
    case M_RANGE:
        if (!json_is_array(v) || json_array_size(v) != 2) {
            snprintf(err, n, "args.%s.range must be [min, max] (null: open)", path);
            return -1;
        }
        for (int i = 0; i < 2; i++) {
            json_t *b = json_array_get(v, (size_t)i);
            if (!json_is_null(b) && !json_is_number(b)) {
                snprintf(err, n, "args.%s.range must hold numbers or null", path);
                return -1;
            }
            double d = json_number_value(b);
            if (i == 0)
                m->has_lo = !json_is_null(b), m->lo = d;
            else
                m->has_hi = !json_is_null(b), m->hi = d;
        }
        return 0;
    case M_ONE_OF:
        if (!json_is_array(v)) {
            snprintf(err, n, "args.%s.one_of must be a list", path);
            return -1;
        }
        return 0;
    }
    return -1;
}

static int compile_effect(json_t *r, struct rule *dst, char *err, size_t n)
{
    const char *e = json_string_value(json_object_get(r, "effect"));
    if (e && !strcmp(e, "allow"))
        dst->effect = POLICY_ALLOW;
    else if (e && !strcmp(e, "deny"))
        dst->effect = POLICY_DENY;
    else if (e && !strcmp(e, "dry_run"))
        dst->effect = POLICY_DRY_RUN;
    else {
        snprintf(err, n, "\"effect\" must be \"allow\", \"deny\" or \"dry_run\"");
        return -1;
    }
    json_t *msg = json_object_get(r, "message");
    if (msg && !json_is_string(msg)) {
        snprintf(err, n, "\"message\" must be a string");
        return -1;
    }
    dst->message = msg ? xstrdup(json_string_value(msg)) : NULL;
    return 0;
}

static int compile_flag(json_t *r, const char *key, int *out, char *err, size_t n)
{
    json_t *v = json_object_get(r, key);
    *out = v ? json_is_true(v) : -1;
    if (v && !json_is_boolean(v)) {
        snprintf(err, n, "\"%s\" must be true or false", key);
        return -1;
    }
    return 0;
}

static const char *const rule_keys[] = {"name",    "principal", "server", "tool",    "write",
                                        "dry_run", "args",      "effect", "message", NULL};

static int compile_rule(json_t *r, struct rule *dst, char *err, size_t n)
{
    if (!json_is_object(r)) {
        snprintf(err, n, "a rule must be an object");
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach(r, key, v)
    {
        size_t k = 0;
        while (rule_keys[k] && strcmp(rule_keys[k], key) != 0)
            k++;
        if (!rule_keys[k] && key[0] != '_') {
            snprintf(err, n,
                     "unknown key \"%s\" (name, principal, server, tool, write, dry_run, "
                     "args, effect, message)",
                     key);
            return -1;
        }
    }
    const char *name = json_string_value(json_object_get(r, "name"));
    if (name)
        snprintf(dst->name, sizeof(dst->name), "%s", name);
    json_t *args = json_object_get(r, "args");
    if (compile_globs(json_object_get(r, "principal"), "principal", &dst->principal, err, n) ||
        compile_globs(json_object_get(r, "server"), "server", &dst->server, err, n) ||
        compile_globs(json_object_get(r, "tool"), "tool", &dst->tool, err, n) ||
        compile_flag(r, "write", &dst->write, err, n) ||
        compile_flag(r, "dry_run", &dst->dry_run, err, n) || compile_effect(r, dst, err, n))
        return -1;
    if (args && !json_is_object(args)) {
        snprintf(err, n, "\"args\" must be an object of argument path -> matcher");
        return -1;
    }
    dst->m = xcalloc(json_object_size(args) + 1, sizeof(*dst->m));
    json_object_foreach(args, key, v)
    {
        if (compile_matcher(key, v, &dst->m[dst->n_m++], err, n) < 0)
            return -1;
    }
    return 0;
}

/* The line of the i-th element of policy.rules in the file: 0 when it cannot be found. */
static int rule_line(const char *path, size_t index)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return 0;
    struct buf b = {0};
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len < (8u << 20))
        buf_append(&b, chunk, got);
    fclose(f);
    const char *p = b.data ? strstr(b.data, "\"rules\"") : NULL;
    p = p ? strchr(p, '[') : NULL;
    int line = 0, depth = 0, in_str = 0;
    size_t seen = 0;
    for (const char *c = p ? p + 1 : NULL; c && *c && !line; c++) {
        if (in_str) {
            c += *c == '\\' && c[1];
            in_str = *c != '"';
        } else if (*c == '"' || *c == '{' || *c == '[' || (*c > ' ' && *c != ',' && !depth)) {
            if (depth == 0 && *c != ']' && *c != '}' && seen++ == index) {
                line = 1;
                for (const char *q = b.data; q < c; q++)
                    line += *q == '\n';
            }
            in_str = *c == '"';
            depth += *c == '{' || *c == '[';
            if (!depth && *c == ']')
                break;
        } else if (*c == '}' || *c == ']') {
            if (depth-- == 0)
                break;
        }
    }
    buf_free(&b);
    return line;
}

size_t rules_load(json_t *policy, const char *path)
{
    named_forget();
    for (size_t i = 0; i < n_rules; i++)
        rule_free(&rules[i]);
    free(rules);
    rules = NULL;
    n_rules = 0;
    json_t *list = json_object_get(policy, "rules");
    if (!list)
        return 0;
    if (!json_is_array(list)) {
        log_warn(MOD, "%s: policy.rules must be a list: every call is denied (fail-closed)",
                 path ? path : "config");
        list = json_pack("[n]");
    } else
        json_incref(list);
    rules = xcalloc(json_array_size(list), sizeof(*rules));
    size_t i;
    json_t *r;
    json_array_foreach(list, i, r)
    {
        struct rule *dst = &rules[n_rules++];
        snprintf(dst->name, sizeof(dst->name), "policy.rules[%zu]", i);
        char err[400] = "";
        if (compile_rule(r, dst, err, sizeof(err)) == 0) {
            dst->source = json_deep_copy(r);
            json_object_set_new(dst->source, "name", json_string(dst->name));
            json_object_del(dst->source, "principal");
            continue;
        }
        int line = rule_line(path, i);
        char where[64] = "";
        if (line)
            snprintf(where, sizeof(where), " line %d", line);
        log_warn(MOD, "%s%s: %s: %s; this rule denies every call until it is fixed",
                 path ? path : "config", where, dst->name, err);
        rule_free(dst);
        *dst = (struct rule){0};
        snprintf(dst->name, sizeof(dst->name), "policy.rules[%zu]", i);
        dst->effect = POLICY_DENY;
        dst->write = dst->dry_run = -1;
        struct buf b = {0};
        buf_printf(&b, "the policy rule %s is invalid (%s%s): every call is denied", dst->name, err,
                   where);
        dst->invalid = buf_steal(&b);
        dst->source = json_pack("{s:s, s:s, s:s}", "name", dst->name, "effect", "deny", "message",
                                dst->invalid);
    }
    json_decref(list);
    return n_rules;
}

/* ---- match ------------------------------------------------------------------------------- */

enum verdict { V_NO, V_YES, V_UNKNOWN };

static json_t *walk(json_t *v, const struct matcher *m)
{
    for (size_t i = 0; v && i < m->n_steps; i++)
        v = m->steps[i].key ? json_object_get(v, m->steps[i].key)
                            : json_array_get(v, m->steps[i].index);
    return v;
}

static enum verdict judge(const struct matcher *m, json_t *args)
{
    json_t *v = walk(args, m);
    const char *digits;
    size_t n_digits;
    if (!v || jf_big_integer(v, &digits, &n_digits)) /* past 64 bits: no matcher reads it */
        return V_UNKNOWN;
    const char *s = json_string_value(v);
    size_t len = s ? json_string_length(v) : 0;
    switch (m->kind) {
    case M_EQ:
        return json_equal(v, m->value) ? V_YES : V_NO;
    case M_ONE_OF: {
        size_t i;
        json_t *o;
        json_array_foreach(m->value, i, o) if (json_equal(v, o)) return V_YES;
        return V_NO;
    }
    case M_GLOB:
    case M_REGEX:
        if (!s)
            return V_UNKNOWN;
        return pre_match(m->re, s, len) ? V_YES : V_NO;
    case M_UNDER: {
        struct buf b = {0};
        enum verdict r = V_UNKNOWN;
        if (s && normalize_path(s, len, &b) == 0) {
            size_t u = strlen(m->under);
            r = strncmp(b.data, m->under, u) == 0 && (b.data[u] == 0 || b.data[u] == '/') ? V_YES
                                                                                          : V_NO;
        }
        buf_free(&b);
        return r;
    }
    case M_RANGE:
        if (!json_is_number(v))
            return V_UNKNOWN;
        double d = json_number_value(v);
        return (m->has_lo && !(d >= m->lo)) || (m->has_hi && !(d <= m->hi)) ? V_NO : V_YES;
    }
    return V_UNKNOWN;
}

/* Whether r's argument matchers hold for the call (args parsed once, on first need). */
static int args_match(const struct rule *r, const struct policy_call *c, json_t **args, int *parsed,
                      const char **unknown)
{
    *unknown = NULL;
    for (size_t i = 0; i < r->n_m; i++) {
        if (!*parsed) {
            *parsed = 1;
            *args = c->args ? jf_loadb(c->args, c->args_len, JF_ALLOW_NUL | JF_BIG_INTEGERS, NULL)
                            : NULL;
        }
        enum verdict v = judge(&r->m[i], *args);
        if (v == V_NO)
            return 0;
        if (v == V_UNKNOWN) {
            if (r->effect == POLICY_ALLOW)
                return 0;
            *unknown = r->m[i].path;
        }
    }
    return 1;
}

static void decided(const struct rule *r, const struct policy_call *c, const char *principal,
                    const char *unknown, struct policy_decision *d)
{
    d->effect = r->effect;
    snprintf(d->rule, sizeof(d->rule), "%s", r->name);
    if (r->invalid)
        snprintf(d->why, sizeof(d->why), "%s", r->invalid);
    else if (r->effect == POLICY_DENY && r->message)
        snprintf(d->why, sizeof(d->why), "%s (policy rule %s)", r->message, r->name);
    else if (unknown)
        snprintf(d->why, sizeof(d->why),
                 "%s %s/%s for %s: the argument %s could not be judged (missing, another type, "
                 "or a path that is not absolute or climbs above /) so the rule %s applies",
                 r->effect == POLICY_DENY ? "denied" : "dry run of", c->server, c->tool, principal,
                 unknown, r->name);
    else
        snprintf(d->why, sizeof(d->why), "%s %s/%s for principal %s by policy rule %s",
                 r->effect == POLICY_ALLOW  ? "allowed"
                 : r->effect == POLICY_DENY ? "denied"
                                            : "dry run of",
                 c->server, c->tool, principal, r->name);
}

static int globs_match(const struct globs *g, const char *s)
{
    return globs_match_len(g, s, strlen(s));
}

static const unsigned char *rules_naming(const char *server, const char *tool)
{
    for (size_t i = 0; i < NAMED_KEPT; i++)
        if (named_cache[i].rule && !strcmp(named_cache[i].server, server) &&
            !strcmp(named_cache[i].tool, tool))
            return named_cache[i].rule;
    struct named *e = &named_cache[named_next++ % NAMED_KEPT];
    free(e->server);
    free(e->tool);
    free(e->rule);
    e->server = xstrdup(server);
    e->tool = xstrdup(tool);
    e->rule = xmalloc(n_rules ? n_rules : 1);
    for (size_t i = 0; i < n_rules; i++)
        e->rule[i] = rules[i].invalid ||
                     (globs_match(&rules[i].server, server) && globs_match(&rules[i].tool, tool));
    return e->rule;
}

int rules_decide(const struct policy_call *c, struct policy_decision *d)
{
    if (!n_rules) /* no rules: nothing to name the tool (and no principal to measure) */
        return 0;
    const char *principal = c->principal && *c->principal ? c->principal : "local";
    json_t *args = NULL;
    int parsed = 0, named = 0, done = 0;
    size_t principal_len = strlen(principal);
    const unsigned char *naming = rules_naming(c->server, c->tool);
    for (size_t i = 0; i < n_rules && !done; i++) {
        const struct rule *r = &rules[i];
        if (!naming[i])
            continue;
        named = 1;
        const char *unknown = NULL;
        if (r->invalid || (globs_match_len(&r->principal, principal, principal_len) &&
                           (r->write < 0 || r->write == !!c->mutation) &&
                           (r->dry_run < 0 || r->dry_run == !!c->dry_run) &&
                           args_match(r, c, &args, &parsed, &unknown))) {
            decided(r, c, principal, unknown, d);
            done = 1;
        }
    }
    json_decref(args);
    if (named && !done) {
        d->effect = POLICY_DENY;
        d->rule[0] = 0;
        snprintf(d->why, sizeof(d->why),
                 "no policy rule allows %s/%s for principal %s with these arguments (rules name "
                 "this tool, so anything they do not allow is denied)",
                 c->server, c->tool, principal);
    }
    return named;
}

json_t *policy_worker_rules(const char *principal)
{
    if (!n_rules)
        return NULL;
    const char *p = principal && *principal ? principal : "local";
    json_t *out = json_array();
    for (size_t i = 0; i < n_rules; i++)
        if (rules[i].invalid || globs_match(&rules[i].principal, p))
            json_array_append(out, rules[i].source);
    return out;
}
