/* Unit tests for src/config/cfgedit.c: one value changed in a JSONC text, everything else byte for
 * byte; the atomic write with its one backup. Each case gives the input, the key path, the
 * value and the exact expected text. */
#include "cfgedit.h"
#include "util.h"

#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void edit_case(const char *what, const char *in, const char *k1, const char *k2,
                      const char *k3, const char *value, const char *want)
{
    const char *keys[3] = {k1, k2, k3};
    size_t n = k3 ? 3 : k2 ? 2 : 1;
    json_t *v = json_loads(value, JSON_DECODE_ANY, NULL);
    char why[300] = "";
    char *out = ce_edit_text(in, keys, n, v, 0, why, sizeof(why));
    int ok = out && want && strcmp(out, want) == 0 && ce_text_holds(out, keys, n, v);
    if (!want)
        ok = out == NULL && why[0];
    CHECK(ok, "%s", what);
    if (!ok)
        printf("  got:\n%s\n  want:\n%s\n  why: %s\n", out ? out : "(null)", want ? want : "(null)",
               why);
    free(out);
    json_decref(v);
}

int main(void)
{
    edit_case("replace a value, keep the comment after it",
              "{\n  \"a\": 1, // one\n  \"b\": true\n}\n", "b", NULL, NULL, "false",
              "{\n  \"a\": 1, // one\n  \"b\": false\n}\n");
    edit_case("insert after the last member (no trailing comma)", "{\n  \"a\": 1\n}\n", "b", NULL,
              NULL, "false", "{\n  \"a\": 1,\n  \"b\": false\n}\n");
    edit_case("insert after a trailing comma", "{\n  \"a\": 1,\n}\n", "b", NULL, NULL, "2",
              "{\n  \"a\": 1,\n  \"b\": 2\n}\n");
    edit_case("insert after a line comment: the comma goes before the comment",
              "{\n    \"a\": 1 // keep me\n}\n", "b", NULL, NULL, "2",
              "{\n    \"a\": 1, // keep me\n    \"b\": 2\n}\n");
    edit_case("insert after a trailing comma and a comment", "{\n  \"a\": [1, 2], // c\n}\n", "b",
              NULL, NULL, "2", "{\n  \"a\": [1, 2], // c\n  \"b\": 2\n}\n");
    edit_case("one-line object: inline insert", "{\"mcp\": {\"x\": {\"type\": \"local\"}}}", "mcp",
              "x", "enabled", "false",
              "{\"mcp\": {\"x\": {\"type\": \"local\", \"enabled\": false}}}");
    edit_case("missing intermediate objects are created",
              "{\n  \"mcp\": {\n    \"m\": {\n      \"type\": \"local\"\n    }\n  }\n}\n", "mcp",
              "m", "tools", "{\"t\": {\"enabled\": false}}",
              "{\n  \"mcp\": {\n    \"m\": {\n      \"type\": \"local\",\n      \"tools\": "
              "{\"t\": {\"enabled\": false}}\n    }\n  }\n}\n");
    edit_case("empty object", "{\"mcp\": {}}", "mcp", "a", NULL, "1", "{\"mcp\": {\"a\": 1}}");
    edit_case("a // inside a string is not a comment; block comments are kept",
              "{\n  /* head */ \"u\": \"http://x//y\",\n  \"e\": false\n}", "e", NULL, NULL, "true",
              "{\n  /* head */ \"u\": \"http://x//y\",\n  \"e\": true\n}");
    edit_case("escaped key names match", "{\"a\\u0062\": 1}", "ab", NULL, NULL, "2",
              "{\"a\\u0062\": 2}");
    edit_case("empty file becomes a document", "  \n", "mcp", "a", NULL, "true",
              "{\"mcp\": {\"a\": true}}\n");
    edit_case("path through a non-object is refused", "{\"mcp\": [1]}", "mcp", "a", NULL, "1",
              NULL);
    edit_case("a top level that is not an object is refused", "[1, 2]", "a", NULL, NULL, "1", NULL);
    edit_case("broken JSONC is refused", "{\"a\": 1, \"b\": }", "c", NULL, NULL, "1", NULL);
    edit_case("unterminated string is refused", "{\"a\": \"x}", "b", NULL, NULL, "1", NULL);

    /* The file round trip: backup holds the previous text, the mode is kept. */
    char dir[] = "/tmp/codemcp-cfgedit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    char path[256], bak[300];
    snprintf(path, sizeof(path), "%s/mcp.json", dir);
    snprintf(bak, sizeof(bak), "%s.bak", path);
    const char *orig = "{\n  // c\n  \"mcp\": {\"a\": {\"command\": [\"x\"]}}\n}\n";
    FILE *f = fopen(path, "w");
    fputs(orig, f);
    fclose(f);
    chmod(path, 0640);
    const char *keys[] = {"mcp", "a", "enabled"};
    int changed = 0;
    char why[300] = "";
    int rc = ce_set_in_file(path, keys, 3, json_false(), &changed, why, sizeof(why));
    CHECK(rc == 0 && changed, "ce_set_in_file writes (%s)", why);
    size_t len;
    char *now = read_file(path, &len), *old = read_file(bak, &len);
    CHECK(now && strstr(now, "// c") && strstr(now, "\"enabled\": false"), "new text");
    CHECK(old && strcmp(old, orig) == 0, "backup holds the previous text");
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0640, "mode kept");
    free(now);
    free(old);
    rc = ce_set_in_file(path, keys, 3, json_false(), &changed, why, sizeof(why));
    CHECK(rc == 0 && !changed, "the same value again changes nothing");
    unlink(path);
    unlink(bak);
    rmdir(dir);
    return CHECK_DONE();
}
