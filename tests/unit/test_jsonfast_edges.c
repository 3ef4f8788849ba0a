/* Edge cases of src/json/jsonfast.c (docs/review-extensions.md says how they were found): what the
 * libFuzzer run (tests/fuzz, inputs up to 4 KiB) cannot reach — numbers of any length, the
 * depth limit at both ends, strings of megabytes, every truncation of a message — compared
 * with jansson 2.14, and jf_frame_id, which names the id of a frame that did not decode. */
#include "jsonfast.h"
#include "jsonpretty.h"

#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* jf_loadb and json_loadb agree on acceptance and on the value (flags 0 or DECODE_ANY). */
static int same_as_jansson(const char *text, size_t len, int any)
{
    json_error_t e1, e2;
    json_t *a = json_loadb(text, len, any ? JSON_DECODE_ANY : 0, &e1);
    json_t *b = jf_loadb(text, len, any ? JF_DECODE_ANY : 0, &e2);
    int same = !a == !b && (!a || json_equal(a, b));
    if (same && a) {
        char *t1 = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY), *t2 = jf_dumps(a);
        same = t1 && t2 && strcmp(t1, t2) == 0;
        free(t1);
        free(t2);
    }
    if (!same)
        fprintf(stderr, "  differs on %.60s… (%zu bytes): jansson %s, jsonfast %s\n", text, len,
                a ? "accepts" : e1.text, b ? "accepts" : e2.text);
    json_decref(a);
    json_decref(b);
    return same;
}

static char *repeat(const char *head, char fill, size_t n, const char *tail)
{
    size_t h = strlen(head), t = strlen(tail);
    char *s = malloc(h + n + t + 1);
    memcpy(s, head, h);
    memset(s + h, fill, n);
    memcpy(s + h + n, tail, t + 1);
    return s;
}

/* A real of 400 characters or more was refused ("real number too long"); jansson
 * reads any length. Integers that long are too big for both. */
static void test_long_numbers(void)
{
    static const struct {
        const char *head;
        char fill;
        size_t n;
        const char *tail;
    } cases[] = {
        {"[0.", '1', 600, "]"},       {"[0.", '0', 5000, "1]"},   {"[1", '0', 450, ".5]"},
        {"[1.", '0', 1000, "e-3]"},   {"[-0.", '9', 399, "]"},    {"[1", '0', 500, "]"},
        {"[-1", '0', 398, "]"},       {"[1", '0', 17, "]"},       {"[0.", '0', 396, "1]"},
        {"{\"v\":1.", '2', 800, "}"}, {"[1", '0', 400, "e-400]"}, {"[", '9', 399, "]"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *s = repeat(cases[i].head, cases[i].fill, cases[i].n, cases[i].tail);
        EXPECT(same_as_jansson(s, strlen(s), 0));
        EXPECT(same_as_jansson(s + 1, strlen(s) - 2, 1)); /* the bare number */
        free(s);
    }
}

/* Nesting at the limit, one past it, far past it (no stack overflow), and jf_dumps of a
 * value as deep as jansson builds. */
static void test_depth(void)
{
    size_t depths[] = {JSON_PARSER_MAX_DEPTH - 1, JSON_PARSER_MAX_DEPTH, JSON_PARSER_MAX_DEPTH + 1,
                       200000};
    for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
        size_t d = depths[i];
        char *s = malloc(2 * d + 1);
        memset(s, '[', d);
        memset(s + d, ']', d);
        s[2 * d] = '\0';
        EXPECT(same_as_jansson(s, 2 * d, 0));
        free(s);
        size_t n = d < 5000 ? d : 5000; /* objects: {"a":{"a":…1…}} */
        size_t len = n * 5 + 1 + n;
        char *o = malloc(len + 1), *p = o;
        for (size_t k = 0; k < n; k++, p += 5)
            memcpy(p, "{\"a\":", 5);
        *p++ = '1';
        memset(p, '}', n);
        o[len] = '\0';
        EXPECT(same_as_jansson(o, len, 0));
        free(o);
    }
    json_t *v = json_integer(1);
    for (int k = 0; k < JSON_PARSER_MAX_DEPTH + 5; k++) {
        json_t *a = json_array();
        json_array_append_new(a, v);
        v = a;
        /* k + 2 levels: as jansson up to one past the decoder's limit (room for a wrapping
         * level), refused beyond (jsonfast.h: its cycle guard; jansson has none) */
        char *t1 = json_dumps(v, JSON_COMPACT), *t2 = jf_dumps(v);
        if (k + 2 <= JSON_PARSER_MAX_DEPTH + 1)
            EXPECT(t1 && t2 && strcmp(t1, t2) == 0);
        else
            EXPECT(t1 && !t2);
        free(t1);
        free(t2);
    }
    json_decref(v);
}

/* Megabyte strings, with and without escapes, valid and broken at the end. */
static void test_huge_strings(void)
{
    size_t n = 1u << 20;
    char *s = repeat("[\"", 'x', n, "\"]");
    EXPECT(same_as_jansson(s, strlen(s), 0));
    for (size_t k = 2; k < n; k += 4099)
        s[k] = k % 3 ? '\t' : '\\'; /* raw tabs are refused, "\\x" escapes too */
    EXPECT(same_as_jansson(s, strlen(s), 0));
    free(s);
    s = repeat("[\"", 'a', n, "\\u00e9\\ud83d\\ude00\"]");
    for (size_t k = 2; k + 6 < n; k += 1000)
        memcpy(s + k, "\\u20ac", 6);
    EXPECT(same_as_jansson(s, strlen(s), 0));
    s[strlen(s) - 4] = 'Z'; /* "\ude00" -> "\udeZ0": a broken escape at the very end */
    EXPECT(same_as_jansson(s, strlen(s), 0));
    free(s);
}

/* Every prefix of a realistic frame is refused by both (truncated input), and bytes that
 * are not UTF-8 at every position of a string. */
static void test_truncations_and_bytes(void)
{
    const char *msg =
        "{\"jsonrpc\":\"2.0\",\"id\":\"c17\",\"method\":\"call_tool\",\"params\":"
        "{\"run_id\":\"r-1\",\"server\":\"s\",\"tool\":\"t\",\"args\":{\"q\":\"caf\\u00e9 "
        "\xc3\xa9\",\"n\":-12.5e3,\"l\":[true,false,null,{}],\"e\":\"\\\"\\\\\\/\"},"
        "\"timeout_ms\":2500}}";
    size_t len = strlen(msg);
    for (size_t k = 0; k <= len; k++)
        EXPECT(same_as_jansson(msg, k, 0));
    static const char *bad[] = {"\xc0\x80",     "\xed\xa0\x80",    "\xf4\x90\x80\x80", "\xff",
                                "\x80",         "\xe2\x82",        "\xf0\x9f\x98",     "\xc3",
                                "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char buf[64];
        int n = snprintf(buf, sizeof(buf), "[\"a%sb\"]", bad[i]);
        EXPECT(same_as_jansson(buf, (size_t)n, 0));
        n = snprintf(buf, sizeof(buf), "{\"k%s\":1}", bad[i]);
        EXPECT(same_as_jansson(buf, (size_t)n, 0));
    }
    /* duplicate keys, the last one wins, also through escapes that spell the same key */
    const char *dup = "{\"id\":1,\"\\u0069d\":2,\"id\":{\"id\":3,\"id\":[4]}}";
    EXPECT(same_as_jansson(dup, strlen(dup), 0));
    /* \u0000: refused without JF_ALLOW_NUL, kept (with its length) with it, never in a key */
    const char *nul = "[\"a\\u0000b\"]";
    EXPECT(same_as_jansson(nul, strlen(nul), 0));
    json_t *v = jf_loadb(nul, strlen(nul), JF_ALLOW_NUL, NULL);
    EXPECT(v && json_string_length(json_array_get(v, 0)) == 3);
    json_decref(v);
    const char *nulkey = "{\"a\\u0000b\":1}";
    EXPECT(jf_loadb(nulkey, strlen(nulkey), JF_ALLOW_NUL, NULL) == NULL);
}

/* The id of a frame that does not decode, from the members before the error. */
static void test_frame_id(void)
{
    static const struct {
        const char *text;
        const char *id; /* as JSON; NULL: none */
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":\"c5\",\"params\":{\"args\":{\"a\\u0000b\":1}}}", "\"c5\""},
        {"{\"jsonrpc\":\"2.0\",\"id\":42,\"params\":{\"args\":{\"x\":\"yyyy", "42"},
        {"{\"id\":\"c\\u00e9\", \"x\": tru", "\"c\xc3\xa9\""},
        {"{\"id\":\"c1\",\"id\":\"c2\",\"params\":[1,}", "\"c2\""},
        {"{\"params\":{\"id\":\"inner\"},\"id\":\"outer\",garbage", "\"outer\""},
        {"{\"params\":{\"id\":\"inner\",garbage", NULL},
        {"{\"id\":null,\"x\":[", NULL},
        {"{\"id\":1.5,\"x\":[", NULL},
        {"{\"id\":[\"c1\"],\"x\":[", NULL},
        {"{\"id\":\"c1\"", "\"c1\""},
        {"{\"id\":\"c", NULL},
        {"[\"id\",\"c1\"]", NULL},
        {"", NULL},
        {"{", NULL},
        {"{\"i\\u0064\":\"c9\",\"x\":}", "\"c9\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *id = jf_frame_id(cases[i].text, strlen(cases[i].text), NULL);
        char *got = id ? jf_dumps(id) : NULL;
        int ok = cases[i].id ? got && strcmp(got, cases[i].id) == 0 : id == NULL;
        if (!ok)
            fprintf(stderr, "  jf_frame_id(%s) = %s\n", cases[i].text, got ? got : "NULL");
        EXPECT(ok);
        free(got);
        json_decref(id);
    }
    /* a frame cut at any byte never reads past its end (ASan) and never names a wrong id */
    const char *msg = "{\"jsonrpc\":\"2.0\",\"id\":\"c77\",\"method\":\"call_tool\",\"params\":{}}";
    for (size_t k = 0; k <= strlen(msg); k++) {
        char *cut = malloc(k ? k : 1);
        memcpy(cut, msg, k);
        json_t *id = jf_frame_id(cut, k, NULL);
        EXPECT(!id || (json_is_string(id) && strcmp(json_string_value(id), "c77") == 0));
        json_decref(id);
        free(cut);
    }
}

/* Members after one that does not decode still count, so a request
 * whose "method" comes last is known as one; a cut frame without "method" may be either. */
static void test_frame_kind(void)
{
    static const struct {
        const char *text;
        const char *id; /* as JSON; NULL: none */
        int kind;       /* *is_request */
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":\"h1\",\"params\":{\"args\":{\"a\\u0000b\":1}},"
         "\"method\":\"call_tool\"}",
         "\"h1\"", 1},
        {"{\"params\":{\"x\":1e999},\"id\":\"h2\",\"method\":\"call_tool\"}", "\"h2\"", 1},
        {"{\"params\":[[[\"]]]\\\"\",{\"a\":1e999}]]],\"id\":7 , \"method\" : \"x\" }", "7", 1},
        {"{\"params\":{\"x\":\"\\q\"},\"id\":\"h3\",\"method\":\"call_tool\"}", "\"h3\"", 1},
        {"{\"\xff\":1,\"id\":\"h4\",\"method\":\"call_tool\"}", "\"h4\"", 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"a\\u0000\":1}}", "9", 0},
        {"{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"ok\":tru", "9", -1},
        {"{\"id\":9,\"result\":1e999,\"x\":\"unterminated", "9", -1},
        {"{}", NULL, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int kind = 5;
        json_t *id = jf_frame_id(cases[i].text, strlen(cases[i].text), &kind);
        char *got = id ? jf_dumps(id) : NULL;
        int ok = (cases[i].id ? got && strcmp(got, cases[i].id) == 0 : id == NULL) &&
                 kind == cases[i].kind;
        if (!ok)
            fprintf(stderr, "  jf_frame_id(%s) = %s, kind %d\n", cases[i].text, got ? got : "NULL",
                    kind);
        EXPECT(ok);
        free(got);
        json_decref(id);
    }
}

/* The lead's 16:33 finding: Python's 2**64 in a worker frame was refused (jansson's
 * json_int_t), the run's answer was dropped and the run timed out. JF_BIG_INTEGERS keeps such
 * integers digit for digit through jf_dumps; forged tags never write anything but digits. */
static void test_big_integers(void)
{
    const char *in = "{\"r\":[18446744073709551616,-9223372036854775809,9223372036854775807,"
                     "-9223372036854775808,0,-0,1e400000000000000000000000000000000000000000000"
                     "0000000000000000000000]}";
    EXPECT(jf_loadb(in, strlen(in), 0, NULL) == NULL); /* as jansson without the flag */
    json_t *v = jf_loadb(in, strlen(in), JF_BIG_INTEGERS, NULL);
    EXPECT(v == NULL); /* the real still overflows */
    const char *ok = "{\"r\":[18446744073709551616,-9223372036854775809,9223372036854775807,"
                     "-9223372036854775808,0,123456789012345678901234567890123456789]}";
    v = jf_loadb(ok, strlen(ok), JF_BIG_INTEGERS, NULL);
    char *t = jf_dumps(v);
    EXPECT(t && strcmp(t, ok) == 0);
    const char *digits;
    size_t n;
    EXPECT(jf_big_integer(json_array_get(json_object_get(v, "r"), 0), &digits, &n) && n == 20);
    EXPECT(json_is_integer(json_array_get(json_object_get(v, "r"), 2)));
    char *j = jf_dumps_indented(v);
    EXPECT(j && strstr(j, "18446744073709551616,") && strstr(j, "-9223372036854775809,") &&
           !strstr(j, "jf-integer"));
    free(j);
    free(t);
    json_decref(v);
    char *big = repeat("[1", '0', 5000, "]");
    v = jf_loadb(big, strlen(big), JF_BIG_INTEGERS, NULL);
    t = jf_dumps(v);
    EXPECT(t && strcmp(t, big) == 0);
    free(t);
    json_decref(v);
    free(big);
    /* a tag forged in a string (JF_ALLOW_NUL) stays that string (it
     * was written as the number 12) */
    static const char *forged[][2] = {
        {"[\"\\u0000jf-integer:12\"]", "[\"\\u0000jf-integer:12\"]"},
        {"[\"\\u0000jf-integer:-7\"]", "[\"\\u0000jf-integer:-7\"]"},
        {"[\"\\u0000jf-string:x\"]", "[\"\\u0000jf-string:x\"]"},
        {"[\"\\u0000jf-string:\\u0000jf-integer:3\"]",
         "[\"\\u0000jf-string:\\u0000jf-integer:3\"]"},
        {"[\"\\u0000jf-\",\"\\u0000jf\",\"\\u0000\"]",
         "[\"\\u0000jf-\",\"\\u0000jf\",\"\\u0000\"]"},
        {"[\"\\u0000jf-integer:1,\\\"x\\\":2\"]", "[\"\\u0000jf-integer:1,\\\"x\\\":2\"]"},
        {"[\"\\u0000jf-integer:\"]", "[\"\\u0000jf-integer:\"]"},
        {"[\"\\u0000jf-integer:-\"]", "[\"\\u0000jf-integer:-\"]"},
        {"[\"\\u0000jf-integer:007\"]", "[\"\\u0000jf-integer:007\"]"},
        {"[\"\\u0000jf-integer:1e5\"]", "[\"\\u0000jf-integer:1e5\"]"},
    };
    for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
        for (int f = 0; f < 2; f++) {
            v = jf_loadb(forged[i][0], strlen(forged[i][0]),
                         JF_ALLOW_NUL | (f ? JF_BIG_INTEGERS : 0), NULL);
            t = jf_dumps(v);
            if (!t || strcmp(t, forged[i][1]) != 0)
                fprintf(stderr, "  forged %s -> %s\n", forged[i][0], t ? t : "NULL");
            EXPECT(t && strcmp(t, forged[i][1]) == 0);
            /* and json_dumps (a string of the input is a string for jansson too) */
            char *u = json_dumps(v, JSON_COMPACT);
            EXPECT(u && strcmp(u, forged[i][1]) == 0);
            free(u);
            free(t);
            json_decref(v);
        }
    }
}

int main(void)
{
    check_case("big integers kept digit for digit with JF_BIG_INTEGERS", test_big_integers);
    check_case("reals of any length as jansson; long integers refused by both", test_long_numbers);
    check_case("depth limit at both ends, far past it, and in jf_dumps", test_depth);
    check_case("megabyte strings, escapes, a broken escape at the end", test_huge_strings);
    check_case("every truncation, invalid UTF-8, duplicate keys, \\u0000",
               test_truncations_and_bytes);
    check_case("jf_frame_id names the id of a frame that does not decode", test_frame_id);
    check_case("jf_frame_id reads past a member that does not decode", test_frame_kind);
    return CHECK_DONE();
}
