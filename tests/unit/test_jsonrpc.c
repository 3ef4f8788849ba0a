/* Unit tests for src/wire/jsonrpc.c: message classification and the newline framer (split
 * lines across chunks, CRLF, empty lines, oversized lines dropped and reported). */
#include "check.h"
#include "jsonrpc.h"
#include "util.h"

#include <string.h>

struct seen {
    char lines[8][64];
    int n, oversized;
};

static void on_line(void *ud, const char *line, size_t len)
{
    struct seen *s = ud;
    if (!line) {
        s->oversized++;
        return;
    }
    if (s->n < 8 && len < 64) {
        memcpy(s->lines[s->n], line, len);
        s->lines[s->n][len] = '\0';
    }
    s->n++;
}

static enum rpc_kind kind_of(const char *text)
{
    json_t *m = json_loads(text, JSON_DECODE_ANY, NULL);
    const char *why;
    enum rpc_kind k = rpc_classify(m, &why);
    json_decref(m);
    return k;
}

int main(void)
{
    CHECK(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}") == RPC_REQUEST, "request");
    CHECK(kind_of("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}") == RPC_NOTIFICATION,
          "notification");
    CHECK(kind_of("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}") == RPC_RESPONSE, "response");
    CHECK(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1}}") == RPC_RESPONSE,
          "error response");
    CHECK(kind_of("{\"id\":1,\"method\":\"ping\"}") == RPC_INVALID, "missing jsonrpc");
    CHECK(kind_of("{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}") == RPC_INVALID,
          "array id");
    CHECK(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}") == RPC_INVALID, "numeric method");
    CHECK(kind_of("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":3}") == RPC_INVALID,
          "scalar params");
    CHECK(kind_of("42") == RPC_INVALID, "a number is not a message");

    json_t *id = json_integer(7);
    json_t *e = rpc_error(id, RPC_INVALID_PARAMS, "bad", json_pack("{s:s}", "k", "v"));
    char *text = rpc_dump(e);
    CHECK(strcmp(text, "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32602,\"message\":"
                       "\"bad\",\"data\":{\"k\":\"v\"}}}") == 0,
          "error shape: %s", text);
    free(text);
    json_decref(e);
    json_decref(id);

    /* A message cut mid-character (client text quoted into a fixed buffer) is not UTF-8:
     * the error still goes out, its non-ASCII bytes as '?'. */
    e = rpc_error(NULL, RPC_INVALID_PARAMS, "unknown tool \xc3\xa9\xc3", NULL);
    CHECK(e != NULL, "an error whose message is not UTF-8 is still built");
    text = e ? rpc_dump(e) : NULL;
    CHECK(text && strstr(text, "\"message\":\"unknown tool ???\"") != NULL, "scrubbed: %s",
          text ? text : "(none)");
    free(text);
    json_decref(e);

    /* utf8_trim_cut: a sequence broken off at the end goes, whole ones stay. */
    const struct {
        const char *in, *out;
    } cuts[] = {
        {"ab\xc3", "ab"},       {"ab\xc3\xa9", "ab\xc3\xa9"},
        {"a\xe2\x82", "a"},     {"a\xe2\x82\xac", "a\xe2\x82\xac"},
        {"a\xf0\x9f\x98", "a"}, {"a\xf0\x9f\x98\x80", "a\xf0\x9f\x98\x80"},
        {"plain", "plain"},     {"", ""},
    };
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%s", cuts[i].in);
        utf8_trim_cut(buf);
        CHECK(strcmp(buf, cuts[i].out) == 0, "utf8_trim_cut case %zu: got [%s]", i, buf);
    }

    struct rpc_lines l = {.max_line = 16};
    struct seen s = {0};
    const char *chunks[] = {"ab", "c\r\n\n{\"x\"", ":1}\n", "0123456789abcdefXYZ\nok\n"};
    for (size_t i = 0; i < 4; i++)
        rpc_lines_feed(&l, chunks[i], strlen(chunks[i]), on_line, &s);
    CHECK(s.n == 3, "three lines delivered (%d)", s.n);
    CHECK(strcmp(s.lines[0], "abc") == 0, "a line split across chunks, CR stripped (%s)",
          s.lines[0]);
    CHECK(strcmp(s.lines[1], "{\"x\":1}") == 0, "empty lines skipped (%s)", s.lines[1]);
    CHECK(s.oversized == 1, "an oversized line is dropped and reported (%d)", s.oversized);
    CHECK(strcmp(s.lines[2], "ok") == 0, "the stream goes on after it (%s)", s.lines[2]);
    rpc_lines_free(&l);
    return CHECK_DONE();
}
