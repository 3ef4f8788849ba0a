/* redact — see redact.h. Applies the generated rules (redact_rules.h); owns no policy of
 * its own beyond the mechanics shared with codemcp_rt/redact.py (word splitting, the
 * left-boundary check, which JSON values a secret key hides). */
#include "redact.h"
#include "jsonfast.h"
#include "linear_re.h"
#include "redact_rules.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS  16
#define N_PATTERNS (sizeof(rr_value_patterns) / sizeof(rr_value_patterns[0]) - 1)

#define secret_words rr_secret_words
#define secret_pairs rr_secret_pairs

/* ---- the patterns, matched in linear time -----------------------------------------------
 *
 * The rules' patterns are parsed by linear_re.c (the syntax policy rules use too) and must be
 * flat: a sequence of byte classes each with a count, and up to two groups around parts of
 * it; no alternation. glibc's regexec costs O(n^2) on a long run of identifier characters
 * (40 kB of "xxx…" took 4.5 s) and every log line and refused call is redacted on the event
 * loop, so they are matched here: each atom is a byte class with a count, taken greedily. An
 * atom whose class cannot start what follows it never gives a byte back (possessive: the
 * match is the same); the others (PEM's "[A-Z ]*PRIVATE KEY") give back at most
 * LM_BACKTRACK bytes. Where each class run ends is remembered per atom, so trying every start
 * position costs O(atoms) each, not the length of the run: linear in the text, the restarts
 * of the key=value rule inside a value included ("a:a:a:…").
 *
 * linear_re.c's Thompson NFA is not used here (bench/redact_engines.c,
 * bench/results/redact_engines.md): one NFA pass over the text per pattern, which finds no
 * bounds nor groups, costs 2-100x all of redact_text on the hostile texts of
 * tests/unit/test_redact_bounds.c and ~10x per ordinary log line; and each restart of the
 * key=value rule inside a value would read the rest of the text again (quadratic). */
#define LM_MAX_ATOMS 48
#define LM_GROUPS    2
#define LM_BACKTRACK 32
#define LM_UNBOUNDED (-1)

struct lm_atom {
    unsigned char cls[32]; /* bit per byte value */
    int min, max;          /* max LM_UNBOUNDED: no upper bound */
    int possessive;
};

struct lm_pat {
    struct lm_atom a[LM_MAX_ATOMS];
    int n;
    int groups;
    int g_from[LM_GROUPS], g_to[LM_GROUPS]; /* atoms [from, to) of each group */
};

/* Where the class run of each atom ends, for starts in [lo, hi]: one per match pass. */
struct lm_runs {
    size_t lo[LM_MAX_ATOMS], hi[LM_MAX_ATOMS];
};

static int lm_has(const unsigned char *cls, unsigned char c)
{
    return (cls[c >> 3] >> (c & 7)) & 1;
}

/* Whether atom k can stop early without changing any match: a fixed count, or a class that
 * shares no byte with what may come right after it. */
static int lm_possessive(const struct lm_pat *pt, int k)
{
    const struct lm_atom *a = &pt->a[k];
    if (a->min == a->max)
        return 1;
    for (int j = k + 1; j < pt->n; j++) {
        for (int i = 0; i < 32; i++)
            if (a->cls[i] & pt->a[j].cls[i])
                return 0;
        if (pt->a[j].min > 0)
            break;
    }
    return 1;
}

/* Appends the atoms of n to pt: 0, or -1 when n is outside the flat form this matcher runs
 * (alternation, a repeat of anything but one byte class, nested groups, too many of either):
 * then the rules' own test fails (tests/python/test_redact.py). */
static int lm_flatten(struct lm_pat *pt, const struct re_node *n, int in_group)
{
    const struct re_node *one = n->kind == RE_REPEAT ? n->a : n;
    switch (n->kind) {
    case RE_EMPTY:
        return 0;
    case RE_CAT:
        return lm_flatten(pt, n->a, in_group) < 0 ? -1 : lm_flatten(pt, n->b, in_group);
    case RE_GROUP: {
        if (in_group || pt->groups == LM_GROUPS)
            return -1;
        int g = pt->groups++;
        pt->g_from[g] = pt->n;
        if (lm_flatten(pt, n->a, 1) < 0)
            return -1;
        pt->g_to[g] = pt->n;
        return 0;
    }
    case RE_SET:
    case RE_REPEAT:
        if (one->kind != RE_SET || pt->n == LM_MAX_ATOMS)
            return -1;
        struct lm_atom *a = &pt->a[pt->n++];
        memcpy(a->cls, one->set, sizeof(a->cls));
        a->min = n->kind == RE_REPEAT ? n->min : 1;
        a->max = n->kind == RE_REPEAT ? n->max : 1; /* the parser's -1 is LM_UNBOUNDED */
        return 0;
    case RE_ALT:
        return -1;
    }
    return -1;
}

/* Parses re with the shared syntax (linear_re.h) into pt: 0, or -1 outside the flat form. */
static int lm_compile(struct lm_pat *pt, const char *re)
{
    memset(pt, 0, sizeof(*pt));
    struct re_node *tree = re_parse(re, strlen(re), 0, NULL, 0);
    int rc = tree ? lm_flatten(pt, tree, 0) : -1;
    re_free(tree);
    for (int k = 0; rc == 0 && k < pt->n; k++)
        pt->a[k].possessive = lm_possessive(pt, k);
    return rc;
}

/* End of atom k's class run from p (remembered in r). */
static size_t lm_run_end(struct lm_runs *r, int k, const struct lm_atom *a, const char *t,
                         size_t len, size_t p)
{
    if (p >= r->lo[k] && p <= r->hi[k])
        return r->hi[k];
    size_t e = p;
    while (e < len && lm_has(a->cls, (unsigned char)t[e]))
        e++;
    r->lo[k] = p;
    r->hi[k] = e;
    return e;
}

/* Matches atoms k.. at p; on success *end and the group bounds g[2i], g[2i+1] are set. */
static int lm_at(const struct lm_pat *pt, struct lm_runs *r, const char *t, size_t len, int k,
                 size_t p, size_t *g, size_t *end)
{
    if (k == pt->n) {
        *end = p;
        return 1;
    }
    const struct lm_atom *a = &pt->a[k];
    for (int i = 0; i < pt->groups; i++)
        if (pt->g_from[i] == k)
            g[2 * i] = p;
    size_t most = lm_run_end(r, k, a, t, len, p) - p;
    if (a->max != LM_UNBOUNDED && most > (size_t)a->max)
        most = (size_t)a->max;
    if (most < (size_t)a->min)
        return 0;
    size_t least = a->possessive                          ? most
                   : most - (size_t)a->min > LM_BACKTRACK ? most - LM_BACKTRACK
                                                          : (size_t)a->min;
    for (size_t n = most;; n--) {
        for (int i = 0; i < pt->groups; i++)
            if (pt->g_to[i] == k + 1)
                g[2 * i + 1] = p + n;
        if (lm_at(pt, r, t, len, k + 1, p + n, g, end))
            return 1;
        if (n == least)
            return 0;
    }
}

/* The leftmost match at or after from: 1 with its start, end and groups, else 0. */
static int lm_search(const struct lm_pat *pt, struct lm_runs *r, const char *t, size_t len,
                     size_t from, size_t *start, size_t *end, size_t *g)
{
    for (size_t s = from; s < len; s++) {
        if (pt->a[0].min > 0 && !lm_has(pt->a[0].cls, (unsigned char)t[s]))
            continue;
        if (lm_at(pt, r, t, len, 0, s, g, end)) {
            *start = s;
            return 1;
        }
    }
    return 0;
}

static void lm_runs_reset(struct lm_runs *r)
{
    memset(r->lo, 0xFF, sizeof(r->lo)); /* lo > hi: nothing remembered */
    memset(r->hi, 0, sizeof(r->hi));
}

/* ---- the rules ---------------------------------------------------------------------------- */

static struct lm_pat value_pat[N_PATTERNS], kv_pat;
static int compiled;     /* -1: a pattern is outside the subset (then text is left as is) */
static size_t value_min; /* the fewest bytes any value pattern matches: shorter texts skip them */
static pthread_once_t compile_once = PTHREAD_ONCE_INIT;

static void compile_all(void)
{
    compiled = 1;
    value_min = (size_t)-1;
    for (size_t i = 0; i < N_PATTERNS; i++) {
        if (lm_compile(&value_pat[i], rr_value_patterns[i][1]) < 0)
            compiled = -1;
        size_t min = 0;
        for (int k = 0; k < value_pat[i].n; k++)
            min += (size_t)value_pat[i].a[k].min;
        value_min = min < value_min ? min : value_min;
    }
    if (lm_compile(&kv_pat, RR_KEY_VALUE_PATTERN) < 0)
        compiled = -1;
}

/* "-?[0-9][0-9.]*|true|false|null|None|True|False", the whole of v. */
static int is_plain(const char *v)
{
    static const char *const words[] = {"true", "false", "null", "None", "True", "False"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (!strcmp(v, words[i]))
            return 1;
    if (*v == '-')
        v++;
    if (*v < '0' || *v > '9')
        return 0;
    while ((*v >= '0' && *v <= '9') || *v == '.')
        v++;
    return *v == '\0';
}

/* "[a-z]{1,7}", the whole of v. */
static int is_prose_word(const char *v)
{
    size_t n = 0;
    while (v[n] >= 'a' && v[n] <= 'z')
        n++;
    return n >= 1 && n <= 7 && v[n] == '\0';
}

/* Splits key into lowercase words: on non-alphanumerics, at lower→Upper, and before the
 * last capital of a run followed by a lowercase letter ("APIKey" → api, key). */
static int split_words(const char *key, char words[MAX_WORDS][32])
{
    int n = 0, len = 0;
    size_t klen = strlen(key);
    for (size_t i = 0; i <= klen && n < MAX_WORDS; i++) {
        unsigned char c = (unsigned char)key[i];
        int boundary = !isalnum(c);
        if (!boundary && len > 0) {
            unsigned char prev = (unsigned char)key[i - 1];
            unsigned char next = i + 1 < klen ? (unsigned char)key[i + 1] : 0;
            if ((islower(prev) || isdigit(prev)) && isupper(c))
                boundary = 2;
            else if (isupper(prev) && isupper(c) && islower(next))
                boundary = 2;
        }
        if (boundary && len > 0) {
            words[n][len < 31 ? len : 31] = '\0';
            n++;
            len = 0;
        }
        if (isalnum(c) && n < MAX_WORDS) {
            if (len < 31)
                words[n][len] = (char)tolower(c);
            len++;
        }
    }
    return n;
}

int redact_is_secret_key(const char *key)
{
    char words[MAX_WORDS][32];
    int n = split_words(key, words);
    for (int i = 0; i < n; i++) {
        for (int k = 0; secret_words[k]; k++)
            if (strcmp(words[i], secret_words[k]) == 0)
                return 1;
        for (int k = 0; secret_pairs[k][0] && i + 1 < n; k++)
            if (strcmp(words[i], secret_pairs[k][0]) == 0 &&
                strcmp(words[i + 1], secret_pairs[k][1]) == 0)
                return 1;
    }
    return 0;
}

/* s cut to max_str bytes; `unread` more bytes of the original were never redacted (see
 * redact_string) and count as cut. */
static json_t *shorten(json_t *s, size_t max_str, size_t unread)
{
    size_t len = json_string_length(s);
    if (unread)
        max_str = max_str < len ? max_str : len;
    if (!max_str || (len <= max_str && !unread))
        return json_incref(s);
    /* Cut on a UTF-8 boundary. */
    const char *text = json_string_value(s);
    size_t cut = max_str;
    while (cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
        cut--;
    struct buf b = {0};
    buf_append(&b, text, cut);
    buf_printf(&b, "…(+%zu chars)", len - cut + unread);
    json_t *out = json_stringn(b.data, b.len);
    buf_free(&b);
    return out ? out : json_string("…");
}

static int is_alnum(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* One value pattern over text: a new string (caller frees). */
static char *apply_value(size_t k, const char *text)
{
    const struct lm_pat *pt = &value_pat[k];
    struct lm_runs runs;
    lm_runs_reset(&runs);
    struct buf out = {0};
    size_t len = strlen(text), p = 0, search = 0, start, end, g[2 * LM_GROUPS];
    while (search < len && lm_search(pt, &runs, text, len, search, &start, &end, g)) {
        if (start > 0 && is_alnum(text[start]) && is_alnum(text[start - 1])) {
            search = start + 1;
            continue;
        }
        size_t a = start, b = end;
        if (pt->groups >= 1) {
            a = g[0];
            b = g[1];
        }
        buf_append(&out, text + p, a - p);
        buf_appends(&out, RR_REDACTED);
        buf_append(&out, text + b, end - b);
        p = search = end; /* no pattern matches the empty string */
    }
    buf_appends(&out, text + p);
    return buf_steal(&out);
}

static char *apply_key_values(const char *text)
{
    struct lm_runs runs;
    lm_runs_reset(&runs);
    struct buf out = {0};
    size_t len = strlen(text), p = 0, search = 0, start, end, g[2 * LM_GROUPS];
    while (search < len && lm_search(&kv_pat, &runs, text, len, search, &start, &end, g)) {
        char key[128], val[64];
        size_t kl = g[1] - g[0], vl = g[3] - g[2];
        snprintf(key, sizeof(key), "%.*s", (int)(kl < sizeof(key) ? kl : sizeof(key) - 1),
                 text + g[0]);
        snprintf(val, sizeof(val), "%.*s", (int)(vl < sizeof(val) ? vl : sizeof(val) - 1),
                 text + g[2]);
        const char *vstart = text + g[2], *kend = text + g[1];
        /* "needs_auth: the server ..." is a sentence: a short lowercase word after ": " */
        int sep_strict = memchr(kend, '=', (size_t)(vstart - kend)) != NULL ||
                         memchr(kend, '"', (size_t)(vstart - kend)) != NULL;
        int prose = !sep_strict && vl < sizeof(val) && is_prose_word(val);
        if (!redact_is_secret_key(key) || (vl < sizeof(val) && is_plain(val)) ||
            strcmp(val, RR_REDACTED) == 0 || prose) {
            search = g[2];
            continue;
        }
        buf_append(&out, text + p, g[2] - p);
        buf_appends(&out, RR_REDACTED);
        p = search = g[3];
    }
    buf_appends(&out, text + p);
    return buf_steal(&out);
}

int redact_may_change(const char *text, size_t len)
{
    pthread_once(&compile_once, compile_all);
    return compiled >= 0 && (len >= value_min || memchr(text, '=', len) || memchr(text, ':', len));
}

char *redact_text(const char *text, size_t len)
{
    pthread_once(&compile_once, compile_all);
    char *cur = xstrndup(text, len);
    if (compiled < 0 || !*cur)
        return cur;
    /* Short texts (an argument's key, a word) are most of what is redacted: no value pattern
     * can match fewer than value_min bytes, and key=value needs its '=' or ':'. */
    for (size_t k = 0; k < N_PATTERNS && strlen(cur) >= value_min; k++) {
        char *next = apply_value(k, cur);
        free(cur);
        cur = next;
    }
    if (!strchr(cur, '=') && !strchr(cur, ':'))
        return cur;
    char *next = apply_key_values(cur);
    free(cur);
    return next;
}

void redact_log_line(const char *line, char *out, size_t cap)
{
    char *r = redact_text(line, strlen(line));
    snprintf(out, cap, "%s", r);
    free(r);
}

static int keep_under_secret_key(json_t *v)
{
    return json_is_number(v) || json_is_boolean(v) || json_is_null(v);
}

/* Bytes past the shown max_str that are still redacted, so that a secret across the cut
 * is found. Never the whole of a long string: what is not shown need not be read, and a
 * worker's call_tool arguments are redacted on the event loop when a call is refused. */
#define REDACT_MARGIN 512

/* Value rules on a string, then shortening. New reference. */
static json_t *redact_string(json_t *s, size_t max_str)
{
    const char *text = json_string_value(s);
    size_t len = json_string_length(s), n = len;
    if (max_str && n > max_str + REDACT_MARGIN) {
        n = max_str + REDACT_MARGIN;
        while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
            n--;
    }
    char *r = redact_text(text, n);
    json_t *red = json_string(r);
    free(r);
    if (!red)
        return json_string(RR_REDACTED); /* not UTF-8 after a cut: hide it all */
    json_t *out = shorten(red, max_str, len - n);
    json_decref(red);
    return out;
}

/* redact_json with a budget of string bytes: once it is spent, strings become "…" unread. */
static json_t *redact_walk(json_t *v, size_t max_str, size_t *budget)
{
    if (json_is_object(v)) {
        json_t *out = json_object();
        const char *key;
        json_t *val;
        json_object_foreach(v, key, val)
        {
            if (redact_is_secret_key(key) && !keep_under_secret_key(val))
                json_object_set_new(out, key, json_string(RR_REDACTED));
            else
                json_object_set_new(out, key, redact_walk(val, max_str, budget));
        }
        return out;
    }
    if (json_is_array(v)) {
        json_t *out = json_array();
        size_t i;
        json_t *val;
        json_array_foreach(v, i, val) json_array_append_new(out, redact_walk(val, max_str, budget));
        return out;
    }
    const char *digits;
    size_t dn;
    if (jf_big_integer(v, &digits, &dn))
        return json_incref(v); /* a number (jsonfast.h), not text to redact or cut */
    if (json_is_string(v)) {
        size_t n = json_string_length(v);
        if (!*budget)
            return json_string("…");
        *budget -= n < *budget ? n : *budget;
        return redact_string(v, max_str);
    }
    return v ? json_incref(v) : json_null();
}

json_t *redact_json(json_t *v, size_t max_str)
{
    size_t unlimited = (size_t)-1;
    return redact_walk(v, max_str, &unlimited);
}

char *redact_dump(json_t *v, size_t max_len)
{
    /* Its text is cut to max_len: a few times that in strings is all it can show, and a
     * worker's refused call may hold 64 MB of them (each costs its pattern passes). */
    size_t budget = 4 * max_len + 1024;
    json_t *r = redact_walk(v, 200, &budget);
    char *text = jf_dumps(r); /* json_dumps' compact bytes, big integers as digits */
    json_decref(r);
    if (text && max_len > 4 && strlen(text) > max_len) {
        size_t cut = max_len - 3;
        while (cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
            cut--;
        memcpy(text + cut, "…", 4);
    }
    return text ? text : xstrdup("?");
}
