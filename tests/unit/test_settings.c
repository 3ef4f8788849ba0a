/* test_settings — the settings table (src/config/settings.def) as the gateway loads it:
 * defaults when unset, strict whole numbers in range, boolean words, strings, a bad value
 * keeping the default with its source marked, and `codemcp settings` never printing a
 * secret. */
#include "check.h"
#include "settings.h"

#include <stdlib.h>
#include <string.h>

static char *printed(const struct settings *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    settings_print(s, f);
    fclose(f);
    return text;
}

int main(void)
{
    struct settings s;
    unsetenv("CODEMCP_EXEC_TIMEOUT_MS");
    unsetenv("CODEMCP_VALIDATE");
    unsetenv("CODEMCP_HTTP_PATH");
    unsetenv("CODEMCP_WORKERS");
    settings_load(&s);
    CHECK(s.exec_timeout_ms == 30000, "unset: the default (%ld)", s.exec_timeout_ms);
    CHECK(s.validate == 1, "unset boolean: its default");
    CHECK(s.http_path == NULL, "unset string: NULL");
    CHECK(s.workers == -1, "unset with a module-decided default: -1");

    setenv("CODEMCP_EXEC_TIMEOUT_MS", "1234", 1);
    setenv("CODEMCP_VALIDATE", "off", 1);
    setenv("CODEMCP_HTTP_PATH", "/x", 1);
    settings_load(&s);
    CHECK(s.exec_timeout_ms == 1234, "a whole number in range is taken");
    CHECK(s.validate == 0, "off is false");
    CHECK(s.http_path && strcmp(s.http_path, "/x") == 0, "a string is taken as it is");

    const char *bad[] = {"12ms", "", "-5", "99999999999999999999", "0x10", " 7"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("CODEMCP_EXEC_TIMEOUT_MS", bad[i], 1);
        settings_load(&s);
        CHECK(s.exec_timeout_ms == 30000, "'%s' keeps the default", bad[i]);
    }
    setenv("CODEMCP_HTTP_MAX_HEADERS", "100", 1);
    settings_load(&s);
    CHECK(s.http_max_headers == 16384, "below the range keeps the default");
    setenv("CODEMCP_VALIDATE", "maybe", 1);
    settings_load(&s);
    CHECK(s.validate == 1, "a word that is not a boolean keeps the default");

    setenv("CODEMCP_HTTP_TOKEN", "s3cret-token-value", 1);
    settings_load(&s);
    CHECK(s.http_token && strcmp(s.http_token, "s3cret-token-value") == 0, "the secret is loaded");
    char *text = printed(&s);
    CHECK(text && !strstr(text, "s3cret"), "codemcp settings never prints a secret");
    CHECK(text && strstr(text, "CODEMCP_HTTP_TOKEN=(set, not shown)"), "but says it is set");
    CHECK(text && strstr(text, "CODEMCP_HTTP_MAX_HEADERS=16384\t# default (bad value ignored)"),
          "a bad value is shown as ignored");
    CHECK(text && strstr(text, "CODEMCP_VALIDATE=true"), "booleans print as words");
    free(text);
    return CHECK_DONE();
}
