/* redact — hides secrets in tool arguments before they reach a log, a trace or an error.
 *
 * A key is secret when one of its words (split on non-alphanumerics and camelCase) is a
 * secret word (token, secret, password, passwd, passphrase, apikey, authorization, auth,
 * cookie, credential(s), bearer), or two adjacent words form one (api key, private key,
 * access key, session id). Word-based on purpose: `author` and `tokenizer_mode` are not
 * secrets, `x-api-key` and `accessToken` are. The same rule is implemented for the
 * worker in python/codemcp_rt/redact.py; tests keep both in step. */
#ifndef CODEMCP_REDACT_H
#define CODEMCP_REDACT_H

#include <jansson.h>
#include <stddef.h>

int redact_is_secret_key(const char *key);
/* New reference: a deep copy of v, secret values replaced by "***" at any depth and strings
 * longer than max_str (0 = no limit) shortened with a "…(+N chars)" suffix. */
json_t *redact_json(json_t *v, size_t max_str);
/* Compact JSON of the redacted value, at most max_len bytes (… when cut); caller frees. */
char *redact_dump(json_t *v, size_t max_len);

#endif
