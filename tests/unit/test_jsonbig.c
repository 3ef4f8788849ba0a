/* Big integers outside string values: an integer beyond
 * json_int_t, decoded with JF_BIG_INTEGERS, is a jansson value whose bytes are not UTF-8, so
 * no JSON text, no Python value (the worker sends text) and no checked jansson constructor can
 * make one; every string of the input, whatever its content (the old tag texts included),
 * stays that string byte for byte; the value survives json_copy, json_deep_copy and being
 * moved between trees; jf_dumps and jf_dumps_indented write its digits. */
#include "jsonfast.h"
#include "jsonpretty.h"
#include "redact.h"

#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char BIG[] = "{\"a\":18446744073709551616,\"b\":[-9223372036854775809,1,"
                          "123456789012345678901234567890123456789],\"c\":\"x\"}";

static json_t *load(const char *t, int flags)
{
    return jf_loadb(t, strlen(t), flags, NULL);
}

static int dumps_is(const json_t *v, const char *want)
{
    char *t = jf_dumps(v);
    int ok = t && strcmp(t, want) == 0;
    if (!ok)
        fprintf(stderr, "  got %s, want %s\n", t ? t : "NULL", want);
    free(t);
    return ok;
}

/* The representation: not a string any text or checked constructor can give. */
static void test_representation(void)
{
    json_t *v = load(BIG, JF_ALLOW_NUL | JF_BIG_INTEGERS);
    EXPECT(v && dumps_is(v, BIG));
    json_t *a = json_object_get(v, "a");
    const char *d;
    size_t n;
    EXPECT(jf_big_integer(a, &d, &n) && n == 20 && memcmp(d, "18446744073709551616", 20) == 0);
    /* not UTF-8: json_dumps refuses it (it never writes it as some string) */
    char *j = json_dumps(a, JSON_ENCODE_ANY);
    EXPECT(j == NULL);
    free(j);
    /* its bytes cannot be rebuilt by json_stringn (UTF-8 checked) */
    EXPECT(json_stringn(json_string_value(a), json_string_length(a)) == NULL);
    /* naive C readers see an empty text, as before */
    EXPECT(json_string_value(a) && json_string_value(a)[0] == '\0');
    EXPECT(!jf_big_integer(json_object_get(v, "c"), &d, &n));
    EXPECT(!jf_big_integer(json_array_get(json_object_get(v, "b"), 1), &d, &n));
    json_decref(v);
}

/* Strings equal to the old tag texts (and to the new tag as far as text can express it) are
 * strings, byte for byte, with and without JF_BIG_INTEGERS. */
static void test_tag_texts_are_strings(void)
{
    static const char *texts[] = {
        "\"\\u0000jf-integer:12\"",
        "\"\\u0000jf-integer:-7\"",
        "\"\\u0000jf-string:x\"",
        "\"\\u0000jf-string:\\u0000jf-integer:3\"",
        "\"\\u0000jf-\"",
        "\"\\u0000\"",
        "\"\\u0000\\u00ffjf-integer:12\"", /* U+00FF is C3 BF, not the byte FF */
        "\"\\u0000ÿjf-integer:12\"",
        "\"jf-integer:12\"",
        "\"\\u0000jf-integer:1,\\\"x\\\":2\"",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        for (int f = 0; f < 2; f++) {
            char arr[200];
            snprintf(arr, sizeof(arr), "[%s]", texts[i]);
            json_t *v = load(arr, JF_ALLOW_NUL | (f ? JF_BIG_INTEGERS : 0));
            json_t *ref = json_loadb(arr, strlen(arr), JSON_ALLOW_NUL, NULL);
            json_t *s = json_array_get(v, 0), *r = json_array_get(ref, 0);
            const char *d;
            size_t n;
            /* the same bytes as jansson's own decoder gives, and not a number */
            int same =
                s && r && json_is_string(s) && !jf_big_integer(s, &d, &n) &&
                json_string_length(s) == json_string_length(r) &&
                memcmp(json_string_value(s), json_string_value(r), json_string_length(r)) == 0;
            if (!same)
                fprintf(stderr, "  %s (flags %d) is not kept as the string it was\n", arr, f);
            EXPECT(same);
            char *want = json_dumps(ref, JSON_COMPACT); /* jansson writes it back as a string */
            EXPECT(want && dumps_is(v, want));
            free(want);
            json_decref(v);
            json_decref(ref);
        }
    }
}

/* No string of any content turns into a number: random strings (every byte value a code
 * point can give, NULs and the tags' letters favoured) through jf_append and back. */
static void test_no_string_is_a_number(void)
{
    static const char alphabet[] = "\0\0\377jf-integer:0123456789-";
    uint32_t seed = 12345;
    for (int round = 0; round < 20000; round++) {
        char cp[32];
        size_t len = 0, want = (size_t)(round % 24);
        for (size_t i = 0; i < want; i++) {
            seed = seed * 1103515245u + 12345u;
            unsigned char c = (unsigned char)alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
            if (c >= 0x80) { /* as UTF-8: no text holds the byte FF itself */
                cp[len++] = (char)0xC3;
                cp[len++] = (char)0xBF;
            } else {
                cp[len++] = (char)c;
            }
        }
        char *txt = NULL;
        size_t tl = 0, tc = 0;
        EXPECT(jf_append(&txt, &tl, &tc, NULL, cp, len) == 0);
        json_t *v = jf_loadb(txt, tl, JF_DECODE_ANY | JF_ALLOW_NUL | JF_BIG_INTEGERS, NULL);
        const char *d;
        size_t n;
        int ok = v && json_is_string(v) && !jf_big_integer(v, &d, &n) &&
                 json_string_length(v) == len && memcmp(json_string_value(v), cp, len) == 0;
        if (!ok) {
            fprintf(stderr, "  %s did not stay a string\n", txt);
            round = 1 << 30;
        }
        EXPECT(ok);
        free(txt);
        json_decref(v);
    }
}

/* json_copy, json_deep_copy and moving values between trees keep big integers. */
static void test_copies(void)
{
    json_t *v = load(BIG, JF_ALLOW_NUL | JF_BIG_INTEGERS);
    json_t *shallow = json_copy(v), *deep = json_deep_copy(v);
    EXPECT(dumps_is(shallow, BIG) && dumps_is(deep, BIG));
    EXPECT(json_equal(v, deep));
    json_t *arr = json_array(); /* as the gateway wraps a result: {"result": …} and appends */
    json_array_append(arr, json_object_get(deep, "a"));
    json_array_append_new(arr, json_deep_copy(json_array_get(json_object_get(v, "b"), 0)));
    json_t *wrap = json_pack("{s:O, s:o}", "result", deep, "list", arr);
    EXPECT(dumps_is(wrap, "{\"result\":{\"a\":18446744073709551616,\"b\":[-9223372036854775809,1,"
                          "123456789012345678901234567890123456789],\"c\":\"x\"},"
                          "\"list\":[18446744073709551616,-9223372036854775809]}"));
    json_decref(wrap);
    json_decref(shallow);
    json_decref(deep);
    json_decref(v);
}

/* jf_dumps_indented: the bytes of json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS) (the smoke
 * output), with big integers as their digits. */
static void test_indented(void)
{
    static const char *corpus[] = {
        "{}",
        "[]",
        "{\"b\":1,\"a\":[1,2,{}],\"c\":{\"z\":null,\"y\":[true,false,[]]}}",
        "[1.5,-0.0,1e300,\"\\u0001\\\"\\\\x/\",{\"\\u00e9\":\"\\ud83d\\ude00\"}]",
        "{\"content\":[{\"type\":\"text\",\"text\":\"hi\\nthere\"}],\"isError\":false}",
        "[[[[[]]]],{\"k\":{\"k\":{\"k\":{}}}}]",
    };
    for (size_t i = 0; i < sizeof(corpus) / sizeof(corpus[0]); i++) {
        json_t *v = json_loads(corpus[i], 0, NULL);
        char *want = json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS), *got = jf_dumps_indented(v);
        int ok = want && got && strcmp(want, got) == 0;
        if (!ok)
            fprintf(stderr, "  %s:\n%s\nvs\n%s\n", corpus[i], want, got ? got : "NULL");
        EXPECT(ok);
        free(want);
        free(got);
        json_decref(v);
    }
    json_t *v = load(BIG, JF_ALLOW_NUL | JF_BIG_INTEGERS);
    char *got = jf_dumps_indented(v);
    EXPECT(got && strcmp(got, "{\n  \"a\": 18446744073709551616,\n  \"b\": [\n"
                              "    -9223372036854775809,\n    1,\n"
                              "    123456789012345678901234567890123456789\n  ],\n"
                              "  \"c\": \"x\"\n}") == 0);
    free(got);
    /* redaction (what the gateway logs) keeps them as numbers too */
    char *shown = redact_dump(v, 300);
    EXPECT(shown && strstr(shown, "18446744073709551616") && !strstr(shown, "\"18446"));
    free(shown);
    json_decref(v);
    /* a string that is not UTF-8 is refused, as json_dumps refuses it */
    json_t *bad = json_pack("[o]", json_stringn_nocheck("\377x", 2));
    EXPECT(jf_dumps_indented(bad) == NULL);
    json_decref(bad);
}

int main(void)
{
    check_case("big integers are a value no text or checked constructor makes",
               test_representation);
    check_case("strings equal to the old tag texts stay those strings", test_tag_texts_are_strings);
    check_case("no string of any content turns into a number", test_no_string_is_a_number);
    check_case("big integers survive json_copy, json_deep_copy and moves", test_copies);
    check_case("jf_dumps_indented is json_dumps(INDENT(2)|SORT_KEYS) with digits", test_indented);
    return CHECK_DONE();
}
