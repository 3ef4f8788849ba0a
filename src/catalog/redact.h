/* redact — hides secrets before they reach a log, a trace or an error: by key and by value.
 *
 * The rules (secret words and word pairs for keys, credential-shaped value patterns, the
 * key=value pattern for free text) live in python/codemcp_rt/redact_rules.py, the one list
 * the worker's Python runtime (codemcp_rt.redact) applies too; the build generates
 * redact_rules.h from it (src/catalog/gen_redact_rules.py), and tests/python/test_redact.py runs
 * one corpus through both sides. Word-based keys on purpose: `author`, `tokenizer_mode` and
 * `max_tokens` are not secrets, `x-api-key`, `sessionKey` and `accessToken` are. Thread-safe
 * (the curl thread logs too); the patterns are compiled once. */
#ifndef CODEMCP_REDACT_H
#define CODEMCP_REDACT_H

#include <jansson.h>
#include <stddef.h>

int redact_is_secret_key(const char *key);
/* New reference: a deep copy of v; under a secret key strings, objects and arrays become
 * "***" (numbers, booleans and null stay), every other string has credential-shaped text
 * replaced (redact_text), and strings longer than max_str (0 = no limit) are shortened with
 * a "…(+N chars)" suffix. */
json_t *redact_json(json_t *v, size_t max_str);
/* Compact JSON of the redacted value, at most max_len bytes (… when cut); caller frees. */
char *redact_dump(json_t *v, size_t max_len);
/* A copy of text (len bytes) with credential-shaped values and secret key=value pairs
 * replaced by "***". Caller frees. */
char *redact_text(const char *text, size_t len);
/* 0 when redact_text(text, len) would give text back unchanged, decided without a copy: it is
 * shorter than any credential pattern matches and has no '=' or ':' for key=value (an
 * argument's name, a word). 1: it may change. */
int redact_may_change(const char *text, size_t len);
/* For log_set_filter(): redacts the NUL-terminated line into out (at most cap bytes, NUL
 * included; cut when longer). */
void redact_log_line(const char *line, char *out, size_t cap);

#endif
