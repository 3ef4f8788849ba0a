/* Unit tests for src/json/jsonfast.c: jf_loadb accepts exactly what json_loadb accepts and builds
 * equal values; jf_dumps writes the bytes json_dumps(JSON_COMPACT | JSON_ENCODE_ANY) writes.
 * Checked on a hand-written corpus (escapes, surrogates, UTF-8 edge cases, numbers at the
 * json_int_t limits, depth, trailing garbage), on random values, and on random mutations of
 * valid texts. */
#include "check.h"
#include "jsonfast.h"
#include "jsonscan.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ULL;
static unsigned rnd(unsigned n)
{
    return (unsigned)(check_xorshift(&rng) % n);
}

/* 1 when both decoders agree on text (accept with equal values, or both refuse). */
static int same_decode(const char *text, size_t len, int flags)
{
    json_error_t e1, e2;
    json_t *a = json_loadb(text, len, flags ? JSON_DECODE_ANY : 0, &e1);
    json_t *b = jf_loadb(text, len, flags, &e2);
    int ok = (!a && !b) || (a && b && json_equal(a, b));
    if (!ok)
        fprintf(stderr, "  decode differs on [%.*s]: jansson %s, jsonfast %s (%s)\n", (int)len,
                text, a ? "accepts" : e1.text, b ? "accepts" : "refuses", b ? "" : e2.text);
    json_decref(a);
    json_decref(b);
    return ok;
}

static int same_encode(const json_t *v)
{
    char *a = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    char *b = jf_dumps(v);
    int ok = (!a && !b) || (a && b && strcmp(a, b) == 0);
    if (!ok)
        fprintf(stderr, "  encode differs: jansson %s, jsonfast %s\n", a ? a : "(null)",
                b ? b : "(null)");
    free(a);
    free(b);
    return ok;
}

static const char *const corpus[] = {
    "{}",
    "[]",
    " \t\r\n{ } ",
    "[1,2,3]",
    "{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":\"e\"}}",
    ("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"call_tool\",\"params\":{\"run_id\":\"r1\","
     "\"server\":\"everything\",\"tool\":\"get-sum\",\"args\":{\"a\":1,\"b\":2},\"timeout_ms\":"
     "null}"
     "}"),
    ("{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"The sum of 1 and 2 is 3.\"}]},"
     "\"jsonrpc\":\"2.0\",\"id\":5}"),
    "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]",
    "[\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\"]",
    "[\"\\u0000\"]",
    "[\"\\ud800\"]",
    "[\"\\udc00\"]",
    "[\"\\ud800\\u0041\"]",
    "[\"\\uZZZZ\"]",
    "[\"\\x\"]",
    "[\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"]",
    "[\"\xc0\xaf\"]",
    "[\"\xed\xa0\x80\"]",
    "[\"\xf4\x90\x80\x80\"]",
    "[\"\xe2\x82\"]",
    "[\"\x80\"]",
    "[\"\xff\"]",
    "[\"a\tb\"]",
    "[\"a\x01\"]",
    "[\"unterminated",
    "[0]",
    "[-0]",
    "[01]",
    "[-]",
    "[1.]",
    "[.5]",
    "[1e]",
    "[1e+]",
    "[1.5e-3]",
    "[1E10]",
    "[-1.25]",
    "[9223372036854775807]",
    "[-9223372036854775808]",
    "[9223372036854775808]",
    "[-9223372036854775809]",
    "[123456789012345678]",
    "[1234567890123456789]",
    "[1e400]",
    "[1e-400]",
    "[0.1]",
    "[3.141592653589793]",
    "[1x]",
    "[true]",
    "[tru]",
    "[truex]",
    "[nul]",
    "[null,]",
    "{\"a\":1,}",
    "{\"a\" 1}",
    "{a:1}",
    "{\"a\":1 \"b\":2}",
    "[1 2]",
    "{\"a\":1}x",
    "{\"a\":1} ",
    "",
    "   ",
    "1",
    "\"s\"",
    "null",
    "{\"a\":1,\"a\":2}",
    "{\"\":0}",
    "{\"k\\u00e9y\":1}",
    "{\"\\u0000\":1}",
    "[[[[[[[]]]]]]]",
    "[{\"a\":[{\"b\":[{}]}]}]",
    "[\"/\"]",
    "[\"\x7f\"]",
    "{\"a\":\"x\\\"y\",\"a\\\"b\":[]}",
};

static void test_corpus(void)
{
    for (size_t i = 0; i < sizeof(corpus) / sizeof(corpus[0]); i++) {
        EXPECT(same_decode(corpus[i], strlen(corpus[i]), 0));
        EXPECT(same_decode(corpus[i], strlen(corpus[i]), JF_DECODE_ANY));
        json_t *v = json_loads(corpus[i], JSON_DECODE_ANY, NULL);
        if (v)
            EXPECT(same_encode(v));
        json_decref(v);
    }
    /* An embedded NUL byte, outside and inside a string. */
    EXPECT(same_decode("[1]\0", 4, 0));
    EXPECT(same_decode("[\"a\0b\"]", 7, 0));
}

static void test_depth(void)
{
    static char deep[2 * 2100 + 1];
    for (int n = 2046; n <= 2050; n++) {
        memset(deep, '[', (size_t)n);
        memset(deep + n, ']', (size_t)n);
        EXPECT(same_decode(deep, (size_t)(2 * n), 0));
    }
}

static json_t *random_string(void)
{
    static const char *const pieces[] = {"a",
                                         "Z",
                                         " ",
                                         "\"",
                                         "\\",
                                         "/",
                                         "\n",
                                         "\t",
                                         "\b",
                                         "\f",
                                         "\r",
                                         "\x01",
                                         "\x1f",
                                         "\x7f",
                                         "\xc3\xa9",
                                         "\xe2\x82\xac",
                                         "\xf0\x9f\x98\x80",
                                         "0",
                                         "{",
                                         "]"};
    char s[64];
    size_t n = 0, k = rnd(8);
    for (size_t i = 0; i < k; i++) {
        const char *p = pieces[rnd(sizeof(pieces) / sizeof(pieces[0]))];
        memcpy(s + n, p, strlen(p));
        n += strlen(p);
    }
    return json_stringn(s, n);
}

static json_t *random_value(int depth)
{
    unsigned t = rnd(depth > 4 ? 6 : 8);
    switch (t) {
    case 0:
        return json_null();
    case 1:
        return rnd(2) ? json_true() : json_false();
    case 2: {
        static const json_int_t ints[] = {0,
                                          1,
                                          -1,
                                          42,
                                          -123456789,
                                          9223372036854775807LL,
                                          -9223372036854775807LL - 1,
                                          1000000000000000000LL};
        return json_integer(rnd(3) ? (json_int_t)rnd(100000) - 50000 : ints[rnd(8)]);
    }
    case 3: {
        static const double reals[] = {0.5, -2.25, 1e300, 1e-300, 3.141592653589793, 100.0, 0.1};
        return json_real(reals[rnd(7)]);
    }
    case 4:
    case 5:
        return random_string();
    case 6: {
        json_t *a = json_array();
        for (unsigned i = rnd(5); i; i--)
            json_array_append_new(a, random_value(depth + 1));
        return a;
    }
    default: {
        json_t *o = json_object();
        for (unsigned i = rnd(5); i; i--) {
            json_t *k = random_string();
            json_object_set_new(o, json_string_value(k), random_value(depth + 1));
            json_decref(k);
        }
        return o;
    }
    }
}

static void test_random_values(void)
{
    for (int i = 0; i < 3000; i++) {
        json_t *v = random_value(0);
        EXPECT(same_encode(v));
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (text) {
            EXPECT(same_decode(text, strlen(text), JF_DECODE_ANY));
            /* And a mutation of it: one byte replaced, dropped or duplicated. */
            size_t n = strlen(text);
            if (n) {
                size_t at = rnd((unsigned)n);
                static const char subst[] = "{}[]\",:\\0-.eE tfnu\x80\xc3";
                switch (rnd(3)) {
                case 0:
                    text[at] = subst[rnd(sizeof(subst) - 1)];
                    break;
                case 1:
                    memmove(text + at, text + at + 1, n - at);
                    n--;
                    break;
                default:
                    break;
                }
                EXPECT(same_decode(text, n, JF_DECODE_ANY));
                EXPECT(same_decode(text, n, 0));
            }
        }
        free(text);
        json_decref(v);
    }
}

static void test_refusals(void)
{
    json_error_t err;
    EXPECT(jf_loadb("[1,", 3, 0, &err) == NULL && err.text[0]);
    EXPECT(jf_dumps(NULL) == NULL);
    json_t *bad = json_stringn_nocheck("\xff", 1); /* not UTF-8: jansson refuses to write it too */
    EXPECT(jf_dumps(bad) == NULL && json_dumps(bad, JSON_ENCODE_ANY) == NULL);
    json_decref(bad);
    json_t *a = json_array(), *cur = a; /* deeper than jansson writes */
    for (int i = 0; i < 2100; i++) {
        json_t *n = json_array();
        json_array_append_new(cur, n);
        cur = n;
    }
    EXPECT(jf_dumps(a) == NULL);
    json_decref(a);
}

/* JF_ALLOW_NUL: \u0000 in strings as JSON_ALLOW_NUL (the value keeps its length and is
 * written back as \u0000), still refused in keys and without the flag. */
static void test_allow_nul(void)
{
    static const char *const texts[] = {
        "[\"a\\u0000b\"]",
        "{\"k\":\"\\u0000\"}",
        "{\"k\\u0000\":1}",
        "[\"\\u0000\\u0000\"]",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        json_error_t e1, e2;
        json_t *a = json_loadb(texts[i], strlen(texts[i]), JSON_ALLOW_NUL, &e1);
        json_t *b = jf_loadb(texts[i], strlen(texts[i]), JF_ALLOW_NUL, &e2);
        EXPECT((!a && !b) || (a && b && json_equal(a, b)));
        if (b) {
            char *out = jf_dumps(b);
            EXPECT(out && strcmp(out, texts[i]) == 0);
            free(out);
        }
        EXPECT(jf_loadb(texts[i], strlen(texts[i]), 0, NULL) == NULL);
        json_decref(a);
        json_decref(b);
    }
    json_t *v = jf_loadb("[\"a\\u0000b\"]", 12, JF_ALLOW_NUL, NULL);
    EXPECT(v && json_string_length(json_array_get(v, 0)) == 3);
    json_decref(v);
}

#define A150                                                                                       \
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* ---- jsonscan: canonical form only, and exactly jf_dumps' bytes ------------------------------ */

/* js_canon_value(t) => jf_loadb accepts t and jf_dumps writes t back (its contract). Returns
 * whether t was accepted. */
static int canon_sound(const char *t, size_t n, int nul)
{
    int ok = js_canon_value(t, n, nul);
    if (ok) {
        json_t *v = jf_loadb(t, n, JF_DECODE_ANY | (nul ? JF_ALLOW_NUL : 0), NULL);
        char *d = v ? jf_dumps(v) : NULL;
        if (!d || strlen(d) != n || memcmp(d, t, n) != 0) {
            fprintf(stderr, "  js_canon_value accepted [%.*s], jf_dumps gives [%s]\n", (int)n, t,
                    d ? d : "(refused)");
            ok = -1;
        }
        free(d);
        json_decref(v);
    }
    return ok;
}

static void test_canon_refusals(void)
{
    static const char *const refused[] = {
        "{ }",
        "{\"a\":1 }",
        "[1, 2]",
        "{\"a\":1,\"a\":2}",
        "{\"a\":{\"b\":1,\"b\":1}}",
        "{\"\\u0061\":1}",
        "{\"a\\n\":1}",
        "[\"\\u0041\"]",
        "[\"\\/\"]",
        "[\"\\u001f\"]",
        "[\"\\u000A\"]",
        "[\"\\u0000\"]",
        "[-0]",
        "[1.5]",
        "[1e3]",
        "[1E3]",
        "[1234567890123456789]",
        "[01]",
        "[\"a",
        "[1]x",
        "[\"\x01\"]",
        "[\"\xff\"]",
        "[\"\xed\xa0\x80\"]",
        "[tru]",
        "{\"a\"1}",
        "{\"a\":}",
        "[,]",
        "[1,]",
        "",
        "{\"k\\u0000\":1}",
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        int r = canon_sound(refused[i], strlen(refused[i]), 0);
        if (r != 0)
            fprintf(stderr, "  accepted: %s\n", refused[i]);
        EXPECT(r == 0);
    }
    /* a raw NUL byte anywhere, with or without allow_nul */
    EXPECT(canon_sound("[\"a\0b\"]", 7, 1) == 0 && canon_sound("[1]\0", 4, 1) == 0);
    EXPECT(canon_sound("[\"a\\u0000\"]", 11, 1) == 1); /* \u0000 only when NUL is allowed */
    /* never first (the old big-integer tag started so; kept: the tree path decides then) */
    EXPECT(canon_sound("[\"\\u0000\"]", 10, 1) == 0);
    EXPECT(canon_sound("[\"\\u0000jf-integer:5\"]", 22, 1) == 0);
    EXPECT(canon_sound("[\"\\u001F\\n\\\"\\\\\"]", 16, 0) == 1);
    static char deep[200];
    memset(deep, '[', 64);
    memset(deep + 64, ']', 64);
    EXPECT(canon_sound(deep, 128, 0) == 1);
    memset(deep, '[', 65);
    memset(deep + 65, ']', 65);
    EXPECT(canon_sound(deep, 130, 0) == 0); /* deeper: the tree path */
    /* more than 64 keys in one object: the tree path */
    char big[2000];
    size_t n = 0;
    big[n++] = '{';
    for (int i = 0; i < 65; i++)
        n += (size_t)snprintf(big + n, sizeof(big) - n, "%s\"k%d\":%d", i ? "," : "", i, i);
    big[n++] = '}';
    EXPECT(canon_sound(big, n, 0) == 0);
}

static void test_canon_members(void)
{
    const char *t = "{\"jsonrpc\":\"2.0\",\"id\":\"c1\",\"params\":{\"a\":[1,{\"x\":\"}\"}],"
                    "\"b\":\"q\\\"\"},\"z\":null}";
    struct js_member m[8], p[8];
    int n = js_canon_object(t, strlen(t), 0, m, 8);
    EXPECT(n == 4);
    EXPECT(js_is(js_get(m, n, "jsonrpc"), "\"2.0\"") && js_is(js_get(m, n, "z"), "null"));
    const struct js_member *pp = js_get(m, n, "params");
    EXPECT(pp && js_members(pp->val, pp->vlen, p, 8) == 2);
    EXPECT(js_is(js_get(p, 2, "a"), "[1,{\"x\":\"}\"}]") && js_is(js_get(p, 2, "b"), "\"q\\\"\""));
    EXPECT(js_canon_object(t, strlen(t), 0, m, 3) == -1); /* more members than room */
    EXPECT(js_canon_object("[1]", 3, 0, m, 8) == -1);
    struct js_member e[4];
    EXPECT(js_elements("[1,\"a,b\",{\"k\":[2]},[]]", 22, e, 4) == 4 &&
           js_is(&e[2], "{\"k\":[2]}") && js_is(&e[3], "[]"));
    /* structure hash: contents do not count, keys and types do */
    EXPECT(js_shape_hash("{\"a\":1,\"b\":\"x\"}", 15, 7) ==
           js_shape_hash("{\"a\":9,\"b\":\"yy\"}", 16, 7));
    EXPECT(js_shape_hash("{\"a\":1}", 7, 7) != js_shape_hash("{\"b\":1}", 7, 7));
    EXPECT(js_shape_hash("{\"a\":1}", 7, 7) != js_shape_hash("{\"a\":\"1\"}", 9, 7));
    EXPECT(js_shape_hash("[1]", 3, 7) != js_shape_hash("[1,1]", 5, 7));
}

/* js_scan.reals: reals in JSON's grammar pass as written, with an exponent of at most two digits
 * (finite: jansson reads them as the worker does); everything else as without it. The structure
 * hash tells a real from an integer. */
static void test_canon_reals(void)
{
    static const char *const passed[] = {
        "1.5", "-0.25", "0.5e-10", "12E+99", "3e7", "-0e0", "123456789012345678.125"};
    static const char *const refused[] = {
        "1.",    ".5",       "01.5",  "1e",    "1e+",
        "1e100", "1.5e-300", "--1.5", "1.5.2", "1234567890123456789.5",
        "-0"};
    struct js_member m[4];
    char t[64];
    for (size_t i = 0; i < sizeof(passed) / sizeof(passed[0]); i++) {
        int n = snprintf(t, sizeof(t), "{\"r\":[%s]}", passed[i]);
        struct js_scan with = {.m = m, .max = 4, .reals = 1}, without = {.m = m, .max = 4};
        if (js_canon_scan(t, (size_t)n, 0, &with) < 0)
            fprintf(stderr, "  refused: %s\n", passed[i]);
        EXPECT(js_canon_scan(t, (size_t)n, 0, &with) == 0);
        EXPECT(js_canon_scan(t, (size_t)n, 0, &without) < 0);
        json_t *v = jf_loadb(t, (size_t)n, 0, NULL); /* the tree path reads it too */
        EXPECT(v != NULL);
        json_decref(v);
    }
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        int n = snprintf(t, sizeof(t), "{\"r\":[%s]}", refused[i]);
        struct js_scan with = {.m = m, .max = 4, .reals = 1};
        if (js_canon_scan(t, (size_t)n, 0, &with) == 0)
            fprintf(stderr, "  accepted: %s\n", refused[i]);
        EXPECT(js_canon_scan(t, (size_t)n, 0, &with) < 0);
    }
    EXPECT(js_shape_hash("[1.5]", 5, 7) == js_shape_hash("[2e-3]", 6, 7));
    EXPECT(js_shape_hash("[1.5]", 5, 7) != js_shape_hash("[15]", 4, 7));
}

/* js_sample: arrays cut to their first elements at every depth, everything else as it was;
 * the sample is canonical too. */
static void test_canon_sample(void)
{
    static const char *const cases[][2] = {
        {"[1,2,3,4]", "[1,2]"},
        {"[]", "[]"},
        {"{}", "{}"},
        {"[[1,2,3],[4,5,6],[7]]", "[[1,2],[4,5]]"},
        {"{\"a\":[1,2,3],\"b\":{\"c\":[\"x,]\",\"y\",\"z\"]},\"d\":\"[1,2,3]\"}",
         "{\"a\":[1,2],\"b\":{\"c\":[\"x,]\",\"y\"]},\"d\":\"[1,2,3]\"}"},
        {"{\"r\":[{\"k\":[true,false,null]},{\"k\":[]},{\"k\":[1]}],\"n\":-5}",
         "{\"r\":[{\"k\":[true,false]},{\"k\":[]}],\"n\":-5}"},
        {"\"q\\\"[1,2,3]\"", "\"q\\\"[1,2,3]\""},
        {"42", "42"},
    };
    char out[256];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *in = cases[i][0], *want = cases[i][1];
        EXPECT(js_canon_value(in, strlen(in), 0));
        size_t n = js_sample(in, strlen(in), 2, out);
        if (n != strlen(want) || memcmp(out, want, n) != 0)
            fprintf(stderr, "  js_sample(%s) = %.*s, want %s\n", in, (int)n, out, want);
        EXPECT(n == strlen(want) && memcmp(out, want, n) == 0);
        EXPECT(js_canon_value(out, n, 0));
    }
}

/* A string is read byte by byte for its first bytes, then eight at a time: whatever byte ends
 * a run of plain ones (an escape, UTF-8, a raw control byte, the closing quote, the end of the
 * text), wherever it falls, is seen. */
static void test_canon_long_strings(void)
{
    static const struct {
        const char *at; /* put at position k of a run of 'a' */
        int ok;
    } cases[] = {{"\\n", 1}, {"\xc3\xa9", 1}, {"\x01", 0}, {"\xff", 0}, {"\\u0041", 0}};
    char t[256];
    for (int len = 0; len < 150; len++)
        for (int k = 0; k <= len; k += len > 20 ? 7 : 1)
            for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
                size_t w = (size_t)snprintf(t, sizeof(t), "[\"%.*s%s%.*s\"]", k, A150, cases[c].at,
                                            len - k, A150);
                int r = canon_sound(t, w, 0);
                if (r != cases[c].ok)
                    fprintf(stderr, "  [%.*s]: %d\n", (int)w, t, r);
                EXPECT(r == cases[c].ok);
                EXPECT(canon_sound(t, w - 2, 0) == 0); /* no closing quote */
            }
}

/* jf_dumps of random values (reals and keys needing escapes aside) is accepted, so the fast
 * path is taken for what the gateway writes; and mutations are refused or still sound. */
static void test_canon_random(void)
{
    int accepted = 0, eligible = 0;
    for (int i = 0; i < 3000; i++) {
        json_t *v = random_value(0);
        char *t = jf_dumps(v);
        if (t) {
            size_t n = strlen(t);
            int r = canon_sound(t, n, 1);
            EXPECT(r >= 0);
            int plain = !strchr(t, '.') && !strstr(t, "e+") && !strstr(t, "e-") && !strstr(t, "E");
            /* 19-digit integers (json_int_t's limits) take the tree path too */
            if (plain && !strstr(t, "\\") && !strstr(t, "922337203685477580") &&
                !strstr(t, "1000000000000000000")) {
                eligible++;
                accepted += r == 1;
                if (r != 1)
                    fprintf(stderr, "  refused: %s\n", t);
            }
            for (int k = 0; k < 4 && n; k++) {
                char *m = strdup(t);
                static const char subst[] = "{}[]\",:\\0-.eE tfnu\x80\xc3\x01"
                                            "Aa";
                m[rnd((unsigned)n)] = subst[rnd(sizeof(subst) - 1)];
                EXPECT(canon_sound(m, n, 1) >= 0);
                EXPECT(canon_sound(m, n, 0) >= 0);
                free(m);
            }
        }
        free(t);
        json_decref(v);
    }
    /* eligible texts are all accepted unless they had a duplicate... (jf_dumps has none) */
    EXPECT(eligible > 200 && accepted == eligible);
}

int main(void)
{
    check_case("corpus: same decoding and encoding as jansson", test_corpus);
    check_case("nesting depth limit as jansson's", test_depth);
    check_case("random values and mutated texts: same as jansson", test_random_values);
    check_case("refusals: truncated text, NULL, invalid UTF-8, too deep", test_refusals);
    check_case("JF_ALLOW_NUL: \\u0000 in strings as JSON_ALLOW_NUL, never in keys", test_allow_nul);
    check_case("jsonscan: refuses what is not jf_dumps' form (the tree path decides)",
               test_canon_refusals);
    check_case("jsonscan: members, elements and the structure hash", test_canon_members);
    check_case("jsonscan: jf_dumps' output accepted, mutations refused or sound",
               test_canon_random);
    check_case("jsonscan: reals as written when the caller asks", test_canon_reals);
    check_case("jsonscan: a string's end found wherever it falls in a long run",
               test_canon_long_strings);
    check_case("jsonscan: a sample keeps the first elements of every array", test_canon_sample);
    return CHECK_DONE();
}
