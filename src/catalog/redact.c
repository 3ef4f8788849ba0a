/* redact — see redact.h. Applies the generated rules (redact_rules.h); owns no policy of
 * its own beyond the mechanics shared with codemcp_rt/redact.py (word splitting, the
 * left-boundary check, which JSON values a secret key hides). */
#include "redact.h"
#include "jsonfast.h"
#include "redact_rules.h"
#include "util.h"

#include <ctype.h>
#include <pthread.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS  16
#define N_PATTERNS (sizeof(rr_value_patterns) / sizeof(rr_value_patterns[0]) - 1)

#define secret_words rr_secret_words
#define secret_pairs rr_secret_pairs

static regex_t value_re[N_PATTERNS], kv_re, plain_re, prose_re;
static int value_groups[N_PATTERNS];
static int compiled; /* -1: a pattern failed to compile (then text is left as is) */
static pthread_once_t compile_once = PTHREAD_ONCE_INIT;

static void compile_all(void)
{
    compiled = 1;
    for (size_t i = 0; i < N_PATTERNS; i++) {
        if (regcomp(&value_re[i], rr_value_patterns[i][1], REG_EXTENDED) != 0)
            compiled = -1;
        else
            value_groups[i] = (int)value_re[i].re_nsub;
    }
    if (regcomp(&kv_re, RR_KEY_VALUE_PATTERN, REG_EXTENDED) != 0 ||
        regcomp(&plain_re, "^(-?[0-9][0-9.]*|true|false|null|None|True|False)$", REG_EXTENDED) !=
            0 ||
        regcomp(&prose_re, "^[a-z]{1,7}$", REG_EXTENDED) != 0)
        compiled = -1;
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
    struct buf out = {0};
    const char *p = text, *search = text;
    regmatch_t m[2];
    while (*search && regexec(&value_re[k], search, 2, m, search == text ? 0 : REG_NOTBOL) == 0) {
        const char *start = search + m[0].rm_so, *end = search + m[0].rm_eo;
        if (start > text && is_alnum(*start) && is_alnum(start[-1])) {
            search = start + 1;
            continue;
        }
        const char *a = start, *b = end;
        if (value_groups[k] >= 1 && m[1].rm_so >= 0) {
            a = search + m[1].rm_so;
            b = search + m[1].rm_eo;
        }
        buf_append(&out, p, (size_t)(a - p));
        buf_appends(&out, RR_REDACTED);
        buf_append(&out, b, (size_t)(end - b));
        p = search = end; /* no pattern matches the empty string */
    }
    buf_appends(&out, p);
    return buf_steal(&out);
}

static char *apply_key_values(const char *text)
{
    struct buf out = {0};
    const char *p = text, *search = text;
    regmatch_t m[3];
    while (*search && regexec(&kv_re, search, 3, m, search == text ? 0 : REG_NOTBOL) == 0) {
        char key[128], val[64];
        size_t kl = (size_t)(m[1].rm_eo - m[1].rm_so), vl = (size_t)(m[2].rm_eo - m[2].rm_so);
        snprintf(key, sizeof(key), "%.*s", (int)kl, search + m[1].rm_so);
        snprintf(val, sizeof(val), "%.*s", (int)(vl < sizeof(val) ? vl : sizeof(val) - 1),
                 search + m[2].rm_so);
        const char *vstart = search + m[2].rm_so, *vend = search + m[2].rm_eo;
        const char *kend = search + m[1].rm_eo;
        /* "needs_auth: the server ..." is a sentence: a short lowercase word after ": " */
        int sep_strict = memchr(kend, '=', (size_t)(vstart - kend)) != NULL ||
                         memchr(kend, '"', (size_t)(vstart - kend)) != NULL;
        int prose = !sep_strict && vl < sizeof(val) && regexec(&prose_re, val, 0, NULL, 0) == 0;
        if (!redact_is_secret_key(key) ||
            (vl < sizeof(val) && regexec(&plain_re, val, 0, NULL, 0) == 0) ||
            strcmp(val, RR_REDACTED) == 0 || prose) {
            search = vstart;
            continue;
        }
        buf_append(&out, p, (size_t)(vstart - p));
        buf_appends(&out, RR_REDACTED);
        p = search = vend;
    }
    buf_appends(&out, p);
    return buf_steal(&out);
}

char *redact_text(const char *text, size_t len)
{
    pthread_once(&compile_once, compile_all);
    char *cur = xstrndup(text, len);
    if (compiled < 0 || !*cur)
        return cur;
    for (size_t k = 0; k < N_PATTERNS; k++) {
        char *next = apply_value(k, cur);
        free(cur);
        cur = next;
    }
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
 * is found. Never the whole of a long string: the patterns cost O(n^2) on a long run of
 * identifier characters (regexec took 4.5 s for 40 kB of "xxx…", ~45 min for 1 MB), and a
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
     * worker's refused call may hold 64 MB of them (each costs its regexec passes). */
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
