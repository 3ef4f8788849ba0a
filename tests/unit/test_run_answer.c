/* Unit test for src/run/run_answer.c: the reply run_answer_text splices from an envelope's bytes
 * is byte for byte the one the tree path writes (rpc_dump(rpc_result(id, run_answer_result(
 * run_answer_envelope(tree))))) for the tree jf_loadb makes of the same bytes, on chosen and
 * on random envelopes; and it refuses what only the tree path may answer. Also fmt_i64. */
#include "check.h"
#include "jsonfast.h"
#include "jsonrpc.h"
#include "jsonscan.h"
#include "run_answer.h"
#include "util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static unsigned rnd(unsigned n)
{
    return (unsigned)(check_xorshift(&rng) % n);
}

static int spliced; /* how many envelopes took the byte path */

/* The tree path's reply for env text (NULL when it does not decode). */
static char *tree_reply(json_t *id, const char *env, size_t len, const char *handle)
{
    json_t *t = jf_loadb(env, len, JF_ALLOW_NUL | JF_BIG_INTEGERS, NULL);
    if (!t)
        return NULL;
    int is_error = !json_is_true(json_object_get(t, "ok"));
    json_t *e = run_answer_envelope(t, handle, NULL);
    json_t *msg = rpc_result(id, run_answer_result(e, json_object_get(t, "content"), is_error));
    char *s = rpc_dump(msg);
    json_decref(msg);
    json_decref(e);
    json_decref(t);
    return s;
}

/* 1 when the byte path refuses env or gives exactly the tree path's bytes. */
static int agrees(json_t *id, const char *env, const char *handle)
{
    size_t len = strlen(env), n = 0;
    if (!js_canon_value(env, len, 1))
        return 1; /* callers only pass what the scan accepted */
    char *fast = run_answer_text(id, env, len, handle, NULL, &n);
    if (!fast)
        return 1;
    spliced++;
    char *tree = tree_reply(id, env, len, handle);
    int ok = tree && strlen(fast) == n && strcmp(fast, tree) == 0;
    if (!ok)
        fprintf(stderr, "  env  %s\n  fast %s\n  tree %s\n", env, fast, tree ? tree : "(null)");
    free(fast);
    free(tree);
    return ok;
}

static int refused(const char *env, const char *handle)
{
    size_t n;
    char *fast = run_answer_text(NULL, env, strlen(env), handle, NULL, &n);
    free(fast);
    return fast == NULL;
}

static void test_chosen(void)
{
    json_t *ids[] = {json_integer(7), json_integer(-123456789012345678), json_string("a\"b"),
                     json_string("caf\xc3\xa9"), NULL};
    static const char *const envs[] = {
        "{\"ok\":true,\"result\":1,\"calls\":0}",
        "{\"ok\":true}",
        "{\"calls\":2,\"ok\":true,\"result\":[1,{\"a\":null}]}",
        "{\"ok\":true,\"result\":\"q\\\"uote \\\\ \\n\\t\\u0001\\u001F caf\xc3\xa9 \xe2\x80\xa8\"}",
        "{\"ok\":true,\"result\":\"a\\u0000b\",\"stdout\":\"x\\n\",\"stderr\":\"\"}",
        "{\"ok\":true,\"result\":{\"k\":{\"k\":{\"k\":[[[]]]}}},\"mutations\":[]}",
        "{\"ok\":true,\"result\":-999999999999999999,\"notice\":\"n\"}",
    };
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
        for (size_t e = 0; e < sizeof(envs) / sizeof(envs[0]); e++) {
            EXPECT(agrees(ids[i], envs[e], "ns_handle-1_x"));
            EXPECT(agrees(ids[i], envs[e], ""));
        }
    EXPECT(spliced == 2 * 5 * 7); /* every one of them took the byte path */
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
        json_decref(ids[i]);
    /* Only the tree path answers these. */
    EXPECT(refused("{\"ok\":false,\"error\":\"x\"}", "h"));
    EXPECT(refused("{\"result\":1}", "h"));
    EXPECT(refused("{\"ok\":1}", "h"));
    EXPECT(refused("{\"ok\":true,\"recycle\":false}", "h"));
    EXPECT(refused("{\"ok\":true,\"namespace\":\"mine\"}", "h"));
    EXPECT(!refused("{\"ok\":true,\"namespace\":\"mine\"}", "")); /* kept as it is */
    EXPECT(refused("[1]", "h"));
    EXPECT(refused("{\"ok\":true,\"result\":\"\xff\"}", "\xc3")); /* a handle not UTF-8 */
}

static void random_string(char *s, size_t *n)
{
    static const char *const pieces[] = {
        "a",   "Z",       " ",       "\\\"", "\\\\",     "/", "\\n",
        "\\t", "\\u0000", "\\u001F", "\x7f", "\xc3\xa9", "{", "\xf0\x9f\x98\x80",
        "]"};
    size_t k = rnd(6);
    s[(*n)++] = '"';
    for (size_t i = 0; i < k; i++) {
        const char *p = pieces[rnd(sizeof(pieces) / sizeof(pieces[0]))];
        memcpy(s + *n, p, strlen(p));
        *n += strlen(p);
    }
    s[(*n)++] = '"';
}

/* A random value as text (may be non-canonical: keys can repeat, numbers can be reals). */
static void random_value(char *s, size_t *n, int depth)
{
    switch (rnd(depth > 3 ? 5 : 7)) {
    case 0:
        memcpy(s + *n, "null", 4), *n += 4;
        return;
    case 1:
        *n += (size_t)sprintf(s + *n, "%s", rnd(2) ? "true" : "false");
        return;
    case 2:
        *n += (size_t)sprintf(s + *n, "%d", (int)rnd(200000) - 100000);
        return;
    case 3:
        *n += (size_t)sprintf(s + *n, rnd(4) ? "%d" : "%d.5", (int)rnd(10));
        return;
    case 4:
        random_string(s, n);
        return;
    case 5: {
        s[(*n)++] = '[';
        for (unsigned i = rnd(4); i; i--) {
            random_value(s, n, depth + 1);
            if (i > 1)
                s[(*n)++] = ',';
        }
        s[(*n)++] = ']';
        return;
    }
    default: {
        static const char *const keys[] = {"ok",      "result",    "calls", "stdout",
                                           "recycle", "namespace", "x",     "caf\xc3\xa9"};
        s[(*n)++] = '{';
        for (unsigned i = rnd(5); i; i--) {
            *n += (size_t)sprintf(s + *n, "\"%s\":", keys[rnd(8)]);
            random_value(s, n, depth + 1);
            if (i > 1)
                s[(*n)++] = ',';
        }
        s[(*n)++] = '}';
        return;
    }
    }
}

static void test_random(void)
{
    static const char *const keys[] = {"ok",      "result",    "calls", "stdout",
                                       "recycle", "namespace", "x",     "caf\xc3\xa9"};
    static char s[1 << 16];
    json_t *id = json_integer(42);
    int before = spliced;
    for (int i = 0; i < 20000; i++) {
        size_t n = 0;
        if (rnd(8)) { /* an envelope: `"ok":true` first most of the time, random members */
            s[n++] = '{';
            if (rnd(4))
                memcpy(s + n, "\"ok\":true", 9), n += 9;
            for (unsigned k = rnd(6); k; k--) {
                if (n > 1)
                    s[n++] = ',';
                n += (size_t)sprintf(s + n, "\"%s\":", keys[rnd(8)]);
                random_value(s, &n, 1);
            }
            s[n++] = '}';
        } else {
            random_value(s, &n, 0);
        }
        s[n] = '\0';
        EXPECT(agrees(id, s, rnd(2) ? "ns_x" : ""));
    }
    json_decref(id);
    fprintf(stderr, "  %d of 20000 random envelopes took the byte path\n", spliced - before);
    EXPECT(spliced - before > 2000);
}

static void test_fmt_i64(void)
{
    static const int64_t v[] = {0, 1, -1, 9, 10, -10, 1234567890, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char a[24], b[32];
        size_t n = fmt_i64(a, v[i]);
        snprintf(b, sizeof(b), "%" PRId64, v[i]);
        EXPECT(strcmp(a, b) == 0 && n == strlen(b));
    }
}

/* The program's content blocks (the worker's `content`, untrusted): MCP blocks are appended
 * after the text block, anything else becomes a note; structuredContent never holds them. */
static void test_content_blocks(void)
{
    json_t *t = json_loads("{\"ok\":true,\"result\":\"<image>\",\"calls\":0,\"content\":["
                           "{\"type\":\"image\",\"data\":\"iVBO\",\"mimeType\":\"image/png\"},"
                           "{\"type\":\"resource\",\"resource\":{\"uri\":\"u:x\",\"text\":\"t\"}},"
                           "{\"type\":\"resource_link\",\"uri\":\"u:y\",\"name\":\"y\"},"
                           "{\"type\":\"image\",\"data\":5,\"mimeType\":\"image/png\"},"
                           "{\"type\":\"text\",\"text\":\"spoofed\"},"
                           "{\"type\":\"resource\",\"resource\":{\"uri\":\"u:z\"}},"
                           "7]}",
                           0, NULL);
    EXPECT(t != NULL);
    size_t n = 0;
    char *text =
        run_answer_text(NULL, "{\"ok\":true,\"result\":1,\"content\":[]}", 36, "", NULL, &n);
    EXPECT(text == NULL); /* the byte path leaves blocks to the tree path */
    json_t *e = run_answer_envelope(t, "", NULL);
    json_t *r = run_answer_result(e, json_object_get(t, "content"), 0);
    json_t *c = json_object_get(r, "content");
    EXPECT(json_array_size(c) == 8);
    EXPECT(!json_object_get(json_object_get(r, "structuredContent"), "content"));
    static const char *const types[] = {"text", "image", "resource", "resource_link",
                                        "text", "text",  "text",     "text"};
    for (size_t i = 0; i < 8; i++)
        EXPECT(strcmp(json_string_value(json_object_get(json_array_get(c, i), "type")), types[i]) ==
               0);
    for (size_t i = 4; i < 8; i++)
        EXPECT(strstr(json_string_value(json_object_get(json_array_get(c, i), "text")),
                      "was not passed on") != NULL);
    json_decref(r);
    json_decref(e);
    json_decref(t);
}

int main(void)
{
    check_case("run answer: chosen envelopes spliced as the tree path writes them", test_chosen);
    check_case("run answer: random envelopes agree with the tree path", test_random);
    check_case("fmt_i64 writes what %lld writes", test_fmt_i64);
    check_case("run answer: the program's content blocks checked, appended", test_content_blocks);
    return CHECK_DONE();
}
