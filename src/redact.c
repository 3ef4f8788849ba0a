/* redact — see redact.h. */
#include "redact.h"
#include "util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 16

static const char *const secret_words[] = {
    "token",      "tokens",      "secret",  "secrets",       "password", "passwords", "passwd",
    "passphrase", "apikey",      "apikeys", "authorization", "auth",     "cookie",    "cookies",
    "credential", "credentials", "bearer",  "privatekey",    "pwd",      NULL,
};

static const char *const secret_pairs[][2] = {
    {"api", "key"},    {"private", "key"},   {"access", "key"},  {"secret", "key"},
    {"session", "id"}, {"client", "secret"}, {"signing", "key"}, {NULL, NULL},
};

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

static json_t *shorten(json_t *s, size_t max_str)
{
    size_t len = json_string_length(s);
    if (!max_str || len <= max_str)
        return json_incref(s);
    /* Cut on a UTF-8 boundary. */
    const char *text = json_string_value(s);
    size_t cut = max_str;
    while (cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
        cut--;
    struct buf b = {0};
    buf_append(&b, text, cut);
    buf_printf(&b, "…(+%zu chars)", len - cut);
    json_t *out = json_stringn(b.data, b.len);
    buf_free(&b);
    return out ? out : json_string("…");
}

json_t *redact_json(json_t *v, size_t max_str)
{
    if (json_is_object(v)) {
        json_t *out = json_object();
        const char *key;
        json_t *val;
        json_object_foreach(v, key, val)
        {
            if (redact_is_secret_key(key))
                json_object_set_new(out, key, json_string("***"));
            else
                json_object_set_new(out, key, redact_json(val, max_str));
        }
        return out;
    }
    if (json_is_array(v)) {
        json_t *out = json_array();
        size_t i;
        json_t *val;
        json_array_foreach(v, i, val) json_array_append_new(out, redact_json(val, max_str));
        return out;
    }
    if (json_is_string(v))
        return shorten(v, max_str);
    return v ? json_incref(v) : json_null();
}

char *redact_dump(json_t *v, size_t max_len)
{
    json_t *r = redact_json(v, 200);
    char *text = json_dumps(r, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(r);
    if (text && max_len > 4 && strlen(text) > max_len) {
        size_t cut = max_len - 3;
        while (cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
            cut--;
        memcpy(text + cut, "…", 4);
    }
    return text ? text : xstrdup("?");
}
