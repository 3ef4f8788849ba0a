/* Unit tests for src/catalog/redact.c: which keys are secrets, deep redaction, shortening. */
#include "redact.h"

#include "check.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
    const char *secret[] = {"token",       "api_key",     "apiKey",      "x-api-key",
                            "APIKey",      "password",    "db_passwd",   "Authorization",
                            "auth",        "auth_header", "cookie",      "client_secret",
                            "accessToken", "privateKey",  "private_key", "credentials",
                            "SESSION_ID",  "Bearer",      NULL};
    const char *plain[] = {"author", "authors", "tokenizer", "keyword", "key",      "name", "query",
                           "monkey", "passage", "secretary", "path",    "cookbook", NULL};
    for (int i = 0; secret[i]; i++)
        CHECK(redact_is_secret_key(secret[i]), "%s should be secret", secret[i]);
    for (int i = 0; plain[i]; i++)
        CHECK(!redact_is_secret_key(plain[i]), "%s should not be secret", plain[i]);

    json_t *args = json_loads("{\"q\":\"x\",\"auth\":{\"user\":\"u\"},\"author\":\"ann\","
                              "\"nested\":[{\"apiKey\":\"k\",\"ok\":1}],\"long\":\""
                              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
                              0, NULL);
    json_t *r = redact_json(args, 10);
    char *text = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
    CHECK(strcmp(text, "{\"auth\":\"***\",\"author\":\"ann\",\"long\":\"aaaaaaaaaa…(+40 "
                       "chars)\",\"nested\":[{\"apiKey\":\"***\",\"ok\":1}],\"q\":\"x\"}") == 0,
          "deep redaction gave %s", text);
    free(text);
    /* The input is untouched. */
    CHECK(json_is_object(json_object_get(args, "auth")), "input modified");
    char *d = redact_dump(args, 20);
    CHECK(strlen(d) <= 20, "dump not capped: %s", d);
    free(d);
    json_decref(r);
    json_decref(args);
    return CHECK_DONE();
}
