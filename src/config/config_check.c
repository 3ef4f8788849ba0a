/* config_check — what config.c reads but would otherwise pass over in silence: keys no format
 * knows, an entry written in the mcpServers format inside "mcp" (read as such), and, once a
 * server has listed its tools, `tools` settings that name no tool of it (with the nearest
 * name). Each is said once, with its line in the file: logged as a warning and kept in the
 * server's `warnings` for `codemcp list` and `--describe-budget`. */
#include "config_int.h"
#include "log.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "config"

/* Keys an entry may have, in either format ("_..." keys are comments). */
static const char *const known_keys[] = {
    "type",       "command",        "args",    "env",      "environment", "cwd",
    "url",        "headers",        "enabled", "disabled", "timeout",     "oauth",
    "inheritEnv", "maxConnections", "tools",   "policy",   "protocol",    NULL,
};
#define TOOL_KEYS "enabled, mutation, policy"

int cfg__line(const struct cfg_text *t, const char *rk, const char *server, const char *key,
              const char *tool)
{
    const char *steps[] = {rk, server, key, tool};
    const char *text = t ? t->text : NULL, *p = text;
    for (size_t i = 0; p && i < 4 && steps[i]; i++) {
        struct buf q = {0};
        buf_printf(&q, "\"%s\"", steps[i]);
        const char *hit = strstr(p, q.data);
        buf_free(&q);
        p = hit ? hit + 1 : NULL;
    }
    if (!p)
        return 0;
    int line = 1;
    for (const char *c = text; c < p; c++)
        line += *c == '\n';
    return line;
}

void cfg__warn(struct cfg_server *s, const char *path, int line, const char *fmt, ...)
{
    struct buf b = {0};
    if (path && line)
        buf_printf(&b, "%s line %d: ", path, line);
    else if (path)
        buf_printf(&b, "%s: ", path);
    va_list ap;
    va_start(ap, fmt);
    char tmp[600];
    vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    buf_appends(&b, tmp);
    log_warn(MOD, "%s", b.data);
    if (!s->warnings)
        s->warnings = json_array();
    json_array_append_new(s->warnings, json_string(b.data));
    buf_free(&b);
}

int cfg__looks_mcpservers(json_t *v)
{
    json_t *cmd = json_object_get(v, "command");
    return (json_is_array(json_object_get(v, "args")) ||
            json_is_object(json_object_get(v, "env"))) &&
           !json_object_get(v, "environment") && (!cmd || json_is_string(cmd));
}

int cfg_entry_key_known(const char *key)
{
    for (size_t i = 0; known_keys[i]; i++)
        if (strcmp(key, known_keys[i]) == 0)
            return 1;
    return key[0] == '_';
}

void cfg__check_keys(struct ent *e, json_t *v, const struct cfg_text *t)
{
    const char *k;
    json_t *x;
    struct buf names = {0};
    for (size_t i = 0; known_keys[i]; i++)
        buf_printf(&names, "%s%s", i ? ", " : "", known_keys[i]);
    json_object_foreach(v, k, x)
    {
        if (!cfg_entry_key_known(k))
            cfg__warn(e->s, t->path, cfg__line(t, e->rk, e->s->name, k, NULL),
                      "%s.%s.%s is not a setting codemcp knows (%s); ignored", e->rk, e->s->name, k,
                      names.data);
    }
    buf_free(&names);
    json_t *tools = json_object_get(v, "tools");
    const char *tn;
    json_t *tv;
    json_object_foreach(tools, tn, tv)
    {
        if (e->s->tool_lines || (e->s->tool_lines = json_object()))
            json_object_set_new(e->s->tool_lines, tn,
                                json_integer(cfg__line(t, e->rk, e->s->name, "tools", tn)));
        json_object_foreach(tv, k, x)
        {
            if (k[0] != '_' && strcmp(k, "enabled") && strcmp(k, "mutation") && strcmp(k, "policy"))
                cfg__warn(e->s, t->path, cfg__line(t, e->rk, e->s->name, "tools", tn),
                          "%s.%s.tools.%s.%s is not a tool setting (" TOOL_KEYS "); ignored", e->rk,
                          e->s->name, tn, k);
        }
    }
}

/* Edit distance of a and b (short names: a row of 128 is plenty; longer ones count as far). */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[128];
    if (lb >= 128 || la >= 128)
        return (size_t)-1;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            if (up + 1 < best)
                best = up + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

void cfg_check_tools(struct cfg_server *s, json_t *tools)
{
    if (!s || !s->tools || s->tools_checked)
        return;
    s->tools_checked = 1;
    const char *tn;
    json_t *tv;
    json_object_foreach(s->tools, tn, tv)
    {
        const char *nearest = NULL;
        size_t best = (size_t)-1, i;
        json_t *t;
        int found = 0;
        json_array_foreach(tools, i, t)
        {
            const char *name = json_string_value(json_object_get(t, "name"));
            if (!name)
                continue;
            if (strcmp(name, tn) == 0) {
                found = 1;
                break;
            }
            size_t d = distance(tn, name);
            if (d < best) {
                best = d;
                nearest = name;
            }
        }
        if (found)
            continue;
        int line = (int)json_integer_value(json_object_get(s->tool_lines, tn));
        if (nearest && best <= 3)
            cfg__warn(s, s->file, line,
                      "tools.%s: server %s has no tool of that name (did you mean %s?); the "
                      "setting does nothing",
                      tn, s->name, nearest);
        else
            cfg__warn(s, s->file, line,
                      "tools.%s: server %s has no tool of that name; the setting does nothing", tn,
                      s->name);
    }
}
