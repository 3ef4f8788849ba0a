/* settings — see settings.h. The one place the gateway reads its environment: each entry of
 * settings.def becomes a row of a table (variable, type, default, range, field offset) that
 * settings_load walks once. Parsing is strict (a whole number, in range; a boolean word) and
 * never fatal: a bad value keeps the default and says so. */
#include "settings.h"
#include "log.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum kind { K_LONG, K_BOOL, K_STR, K_SECRET };

struct row {
    const char *env, *doc;
    enum kind kind;
    long def, lo, hi;
    const char *def_str;
    size_t off;
};

static const struct row rows[] = {
#define S_LONG(field, env, dflt, min, max, doc)                                                    \
    {env, doc, K_LONG, dflt, min, max, NULL, offsetof(struct settings, field)},
#define S_BOOL(field, env, dflt, doc)                                                              \
    {env, doc, K_BOOL, dflt, 0, 1, NULL, offsetof(struct settings, field)},
#define S_STR(field, env, dflt, doc)                                                               \
    {env, doc, K_STR, 0, 0, 0, dflt, offsetof(struct settings, field)},
#define S_SECRET(field, env, doc)                                                                  \
    {env, doc, K_SECRET, 0, 0, 0, NULL, offsetof(struct settings, field)},
#include "settings.def"
#undef S_LONG
#undef S_BOOL
#undef S_STR
#undef S_SECRET
};
#define N_ROWS (sizeof(rows) / sizeof(rows[0]))

_Static_assert(N_ROWS == sizeof(((struct settings *)0)->source) /
                             sizeof(((struct settings *)0)->source[0]),
               "every settings.def row has a source slot");

static int parse_long(const char *v, long lo, long hi, long *out)
{
    if (!((*v >= '0' && *v <= '9') || *v == '-'))
        return -1; /* strtol would skip spaces and take a sign of '+' */
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < lo || n > hi)
        return -1;
    *out = n;
    return 0;
}

static int parse_bool(const char *v, int *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no",
                                                                                "off"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i]))
            return *out = 1, 0;
        if (!strcasecmp(v, no[i]))
            return *out = 0, 0;
    }
    return -1;
}

void settings_load(struct settings *s)
{
    memset(s, 0, sizeof(*s));
    for (size_t i = 0; i < N_ROWS; i++) {
        const struct row *r = &rows[i];
        char *field = (char *)s + r->off;
        const char *v = getenv(r->env);
        int set = v && *v;
        s->source[i] = set ? SET_ENV : SET_DEFAULT;
        switch (r->kind) {
        case K_STR:
        case K_SECRET:
            *(const char **)field = set ? v : r->def_str;
            break;
        case K_LONG:
            *(long *)field = r->def;
            if (set && parse_long(v, r->lo, r->hi, (long *)field) < 0) {
                s->source[i] = SET_BAD_ENV;
                log_warn("config", "%s=%s is not a whole number from %ld to %ld; using the default",
                         r->env, v, r->lo, r->hi);
            }
            break;
        case K_BOOL:
            *(int *)field = (int)r->def;
            if (set && parse_bool(v, (int *)field) < 0) {
                s->source[i] = SET_BAD_ENV;
                log_warn("config", "%s=%s is not true/false (1/0, yes/no, on/off); using %s",
                         r->env, v, r->def ? "true" : "false");
            }
            break;
        }
    }
}

const char *settings_env(const char *name)
{
    return getenv(name);
}

/* A text setting as printed: a URL's user:password@ (CODEMCP_AUTHZ_URL, DOCKER_HOST may carry
 * one) is shown as "(credentials hidden)@", the rest as it is. */
static void print_text(const char *v, FILE *out)
{
    const char *scheme = v ? strstr(v, "://") : NULL;
    const char *host = scheme ? scheme + 3 : NULL;
    const char *at = host ? host + strcspn(host, "@/?#") : NULL;
    if (!at || *at != '@') {
        fputs(v ? v : "", out);
        return;
    }
    fprintf(out, "%.*s(credentials hidden)%s", (int)(host - v), v, at);
}

void settings_print(const struct settings *s, FILE *out)
{
    static const char *const from[] = {"default", "environment", "default (bad value ignored)"};
    for (size_t i = 0; i < N_ROWS; i++) {
        const struct row *r = &rows[i];
        const char *field = (const char *)s + r->off;
        fprintf(out, "%s=", r->env);
        if (r->kind == K_SECRET) {
            fputs(*(const char *const *)field ? "(set, not shown)" : "", out);
        } else if (r->kind == K_STR) {
            print_text(*(const char *const *)field, out);
        } else if (r->kind == K_BOOL) {
            int v = *(const int *)field;
            fputs(v < 0 ? "(decided at start)" : v ? "true" : "false", out);
        } else if (*(const long *)field == -1 && r->def == -1) {
            fputs("(decided at start)", out);
        } else {
            fprintf(out, "%ld", *(const long *)field);
        }
        fprintf(out, "\t# %s; %s\n", from[s->source[i]], r->doc);
    }
}
