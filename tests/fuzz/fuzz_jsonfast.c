/* Differential fuzzer: src/json/jsonfast.c against jansson 2.14 (libFuzzer, clang).
 *
 * For every input: jf_loadb and json_loadb must agree on acceptance (flags 0 and DECODE_ANY;
 * the one allowed difference: jsonfast refuses raw NUL bytes jansson skips) and, when both accept,
 * on the value (json_equal); jf_dumps of the value must be the bytes json_dumps(COMPACT |
 * ENCODE_ANY) writes, and decoding those bytes must give the value back. And src/json/jsonscan.c:
 * whatever js_canon_value accepts, jf_loadb accepts and jf_dumps writes back byte for byte (with
 * and without allow_nul). Any disagreement aborts with both answers printed. Built and run by
 * tests/fuzz/run.sh (a bounded run is the meson test `fuzz_jsonfast` of the clang builds). */
#include "jsonfast.h"
#include "jsonscan.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void differ(const char *what, const uint8_t *data, size_t size)
{
    fprintf(stderr, "jsonfast differs from jansson (%s) on %zu bytes: [%.*s]\n", what, size,
            (int)(size > 400 ? 400 : size), (const char *)data);
    abort();
}

static void check(const uint8_t *data, size_t size, int any)
{
    json_error_t e1, e2;
    json_t *a = json_loadb((const char *)data, size, any ? JSON_DECODE_ANY : 0, &e1);
    json_t *b = jf_loadb((const char *)data, size, any ? JF_DECODE_ANY : 0, &e2);
    /* jansson's reader uses NUL as its "buffer empty" mark, so a raw NUL byte after a
     * number or literal is skipped ("-5827\0" decodes): jsonfast refuses every raw NUL
     * byte (deliberately stricter); only that direction is allowed to differ. */
    if (a && !b && memchr(data, 0, size)) {
        json_decref(a);
        return;
    }
    if (!a != !b)
        differ(a ? "jansson accepts, jsonfast refuses" : "jsonfast accepts, jansson refuses", data,
               size);
    if (a && !json_equal(a, b))
        differ("different values", data, size);
    if (a) {
        char *t1 = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY), *t2 = jf_dumps(a);
        if (!t1 != !t2 || (t1 && strcmp(t1, t2) != 0))
            differ("different encodings", data, size);
        if (t2) {
            json_t *c = jf_loadb(t2, strlen(t2), JF_DECODE_ANY, NULL);
            if (!c || !json_equal(a, c))
                differ("its own encoding does not decode back", data, size);
            json_decref(c);
        }
        free(t1);
        free(t2);
    }
    json_decref(a);
    json_decref(b);
}

static void check_canon(const uint8_t *data, size_t size, int nul)
{
    if (!js_canon_value((const char *)data, size, nul))
        return;
    json_t *v = jf_loadb((const char *)data, size, JF_DECODE_ANY | (nul ? JF_ALLOW_NUL : 0), NULL);
    char *t = v ? jf_dumps(v) : NULL;
    if (!t || strlen(t) != size || memcmp(t, data, size) != 0)
        differ("js_canon_value accepts what jf_dumps does not write back", data, size);
    free(t);
    json_decref(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_canon(data, size, 0);
    check_canon(data, size, 1);
    check(data, size, 0);
    check(data, size, 1);
    return 0;
}
