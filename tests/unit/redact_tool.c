/* redact_tool — the gateway's redaction (src/catalog/redact.c) as a filter, for the shared corpus
 * test (tests/python/test_redact.py), which runs the same inputs through codemcp_rt.redact.
 *
 * stdin: one JSON request per line, {"json": <value>} or {"text": "<string>"}; stdout: one line
 * each, {"out": <redact_json(value, 0)>} or {"out": "<redact_text(string)>"}. */
#include "redact.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        json_t *req = json_loadb(line, (size_t)n, 0, NULL), *out = NULL;
        json_t *text = json_object_get(req, "text");
        if (json_is_string(text)) {
            char *r = redact_text(json_string_value(text), json_string_length(text));
            out = json_string(r);
            free(r);
        } else if (json_object_get(req, "json")) {
            out = redact_json(json_object_get(req, "json"), 0);
        }
        json_t *reply = json_pack("{s:o?}", "out", out);
        char *dump = json_dumps(reply, JSON_COMPACT | JSON_ENCODE_ANY);
        printf("%s\n", dump ? dump : "{}");
        fflush(stdout);
        free(dump);
        json_decref(reply);
        json_decref(req);
    }
    free(line);
    return 0;
}
