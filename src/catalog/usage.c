/* usage — see usage.h. */
#include "usage.h"
#include "log.h"
#include "settings.h"
#include "loop.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define USE_MAX_ENTRIES    2000 /* per scope: the least used are dropped beyond this */
#define USE_MAX_PRINCIPALS 1024 /* principals with counts of their own; more are not counted */
#define USE_SAVE_DELAY_MS  3000

static int shared;     /* one scope for every principal (use_init) */
static json_t *scopes; /* {"" or principal: {"fn": n}} */
static json_t *ranked; /* {scope: [fn...]}: cache, an entry is dropped when stale */
static char *path;     /* NULL: memory only */
static int dirty;
static int timer_armed;
static struct lp_timer save_timer;
static void (*fleet_hook)(const char *scope, const char *fn);
static json_t *valid_counts(json_t *c);
/* The counts use_note found last and their scope: an SDK call after another of the same
 * principal skips the hash lookup in scopes. Borrowed from scopes; forgotten wherever a
 * scope's counts are replaced or freed (hot_forget). */
static json_t *hot;
static char hot_scope[64];

static void hot_forget(void)
{
    hot = NULL;
}

void use_set_fleet_hook(void (*fn)(const char *scope, const char *fn))
{
    fleet_hook = fn;
}

void use_set_counts(const char *scope, json_t *counts)
{
    json_t *c = scopes ? valid_counts(counts) : NULL;
    if (!c || (!json_object_get(scopes, scope) && json_object_size(scopes) > USE_MAX_PRINCIPALS)) {
        json_decref(c);
        return;
    }
    hot_forget(); /* the scope's counts object is replaced */
    json_object_set_new(scopes, scope, c);
    json_object_del(ranked, scope);
    dirty = 1;
}

static const char *scope_of(const char *principal)
{
    return shared || !principal ? "" : principal;
}

static char *use_default_path(const struct settings *s)
{
    const char *knob = s->usage_file;
    struct buf b = {0};
    if (knob && strcmp(knob, "off") == 0)
        return NULL;
    if (knob && *knob)
        return xstrdup(knob);
    const char *state = s->xdg_state_home, *home = s->home;
    if (state && *state)
        buf_printf(&b, "%s/codemcp/usage.json", state);
    else if (home && *home)
        buf_printf(&b, "%s/.local/state/codemcp/usage.json", home);
    else
        return NULL;
    return buf_steal(&b);
}

/* mkdir -p of the directory part of p (mode 0700). */
static void use_make_dirs(const char *p)
{
    char *d = xstrdup(p);
    for (char *s = d + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(d, 0700) < 0 && errno != EEXIST)
            break;
        *s = '/';
    }
    free(d);
}

static void use_save(void)
{
    if (!path || !dirty)
        return;
    dirty = 0;
    use_make_dirs(path);
    struct buf tmp = {0};
    buf_printf(&tmp, "%s.%d.tmp", path, (int)getpid());
    json_t *principals = json_copy(scopes), *counts = json_object_get(scopes, "");
    json_object_del(principals, "");
    json_t *doc =
        json_pack("{s:i, s:O?, s:o}", "version", 2, "counts", counts, "principals", principals);
    int fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int ok = fd >= 0 && json_dumpfd(doc, fd, JSON_COMPACT) == 0;
    if (fd >= 0 && close(fd) < 0)
        ok = 0;
    if (ok && rename(tmp.data, path) == 0)
        log_debug("usage", "saved the counts of %zu scopes to %s", json_object_size(scopes), path);
    else {
        log_warn("usage", "cannot write %s: %s (usage counts stay in memory)", path,
                 strerror(errno));
        unlink(tmp.data);
    }
    json_decref(doc);
    buf_free(&tmp);
}

static void use_on_timer(void *ud)
{
    (void)ud;
    timer_armed = 0;
    use_save();
}

/* Positive counts of c into a new object (NULL when c holds none). */
static json_t *valid_counts(json_t *c)
{
    json_t *out = NULL;
    const char *fn;
    json_t *v;
    json_object_foreach(c, fn, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) <= 0 || strlen(fn) >= 512)
            continue;
        if (!out)
            out = json_object();
        json_object_set(out, fn, v);
    }
    return out;
}

void use_init(const struct settings *s, int shared_scope)
{
    shared = shared_scope;
    hot_forget();
    scopes = json_object();
    ranked = json_object();
    path = use_default_path(s);
    if (!path)
        return;
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    json_t *c = valid_counts(json_object_get(doc, "counts"));
    if (c)
        json_object_set_new(scopes, "", c);
    const char *p;
    json_t *pc;
    json_object_foreach(json_object_get(doc, "principals"), p, pc)
    {
        if (!*p || json_object_size(scopes) > USE_MAX_PRINCIPALS || !(c = valid_counts(pc)))
            continue;
        json_object_set_new(scopes, p, c);
    }
    if (!doc && access(path, F_OK) == 0)
        log_warn("usage", "%s is not valid JSON (%s): starting with no counts", path, err.text);
    json_decref(doc);
}

void use_note(const char *principal, const char *fn)
{
    if (!scopes || !fn)
        return;
    const char *scope = scope_of(principal);
    json_t *counts = hot && strcmp(hot_scope, scope) == 0 ? hot : json_object_get(scopes, scope);
    if (!counts) {
        if (json_object_size(scopes) > USE_MAX_PRINCIPALS)
            return;
        counts = json_object();
        json_object_set_new(scopes, scope, counts);
    }
    if (counts != hot && strlen(scope) < sizeof(hot_scope)) {
        hot = counts;
        memcpy(hot_scope, scope, strlen(scope) + 1);
    }
    json_t *v = json_object_get(counts, fn);
    if (json_is_integer(v)) /* in place: no new value per SDK call */
        json_integer_set(v, json_integer_value(v) + 1);
    else
        json_object_set_new(counts, fn, json_integer(1));
    if (fleet_hook)
        fleet_hook(scope, fn);
    if (json_object_size(ranked)) /* mostly empty: no hash per SDK call then */
        json_object_del(ranked, scope);
    dirty = 1;
    if (path && !timer_armed) {
        timer_armed = 1;
        lp_timer_start(&save_timer, USE_SAVE_DELAY_MS, use_on_timer, NULL);
    }
}

struct use_entry {
    const char *fn;
    json_int_t n;
};

static int use_cmp(const void *pa, const void *pb)
{
    const struct use_entry *a = pa, *b = pb;
    if (a->n != b->n)
        return a->n > b->n ? -1 : 1;
    return strcmp(a->fn, b->fn);
}

json_t *use_ranked(const char *principal)
{
    const char *scope = scope_of(principal);
    json_t *counts = json_object_get(scopes, scope);
    json_t *r = json_object_get(ranked, scope);
    if (r || !counts)
        return r;
    size_t n = json_object_size(counts), k = 0;
    struct use_entry *e = xcalloc(n ? n : 1, sizeof *e);
    const char *fn;
    json_t *v;
    json_object_foreach(counts, fn, v)
    {
        e[k].fn = fn;
        e[k++].n = json_integer_value(v);
    }
    qsort(e, k, sizeof *e, use_cmp);
    r = json_array();
    for (size_t i = 0; i < k; i++)
        json_array_append_new(r, json_string(e[i].fn));
    if (k > USE_MAX_ENTRIES) /* forget the tail so the file stays small */
        for (size_t i = USE_MAX_ENTRIES; i < k; i++)
            json_object_del(counts, json_string_value(json_array_get(r, i)));
    free(e);
    json_object_set_new(ranked, scope, r);
    return r;
}

void use_free(void)
{
    if (timer_armed)
        lp_timer_stop(&save_timer);
    timer_armed = 0;
    use_save();
    json_decref(ranked);
    ranked = NULL;
    hot_forget();
    json_decref(scopes);
    scopes = NULL;
    free(path);
    path = NULL;
}
