/* jsonscan — the gateway's call path without jansson trees: checks that a message is in the
 * exact form jf_dumps writes (compact, jansson's escapes, integers only, no duplicate key,
 * keys without escapes, at most 64 levels), so that its parts can be forwarded as bytes,
 * spliced into the next message, instead of parse → tree → dump.
 *
 * Contract: js_canon_value(t, n, nul) accepts t only if jf_loadb(t, n, JF_DECODE_ANY | (nul ?
 * JF_ALLOW_NUL : 0)) accepts it AND jf_dumps of that value is t, byte for byte (tests/unit/
 * test_jsonfast.c checks this on a corpus and on random values, tests/fuzz/fuzz_jsonfast.c
 * on what libFuzzer makes). Anything it refuses is not
 * necessarily invalid: callers then take the tree path, which accepts, refuses and words
 * errors as before. js_members / skip only read bytes js_canon_value accepted. Pure functions.
 * Must not allocate or keep state. */
#ifndef CODEMCP_JSONSCAN_H
#define CODEMCP_JSONSCAN_H

#include <stddef.h>
#include <stdint.h>

struct js_member {
    const char *key; /* raw bytes (no escape in a canonical key) */
    size_t klen;
    const char *val; /* the value's bytes, canonical */
    size_t vlen;
};

/* What js_canon_scan records while it checks: the top-level object's members (room for max)
 * and, when sub names one of them whose value is an object, that object's members (room for
 * smax; sn is -1 when there was no such object). */
struct js_scan {
    struct js_member *m;
    int max, n;
    const char *sub;
    struct js_member *sm;
    int smax, sn;
    /* Set by the caller: reals pass too, in JSON's grammar with an exponent of at most two
     * digits, as they are written (not jf_dumps' %.17g of them: the same double when read, which
     * is all a reader of a relayed result sees). The bytes are then not jf_dumps' form. */
    int reals;
};

/* 1 when text[0..len) is one canonical JSON value (see above), else 0. */
int js_canon_value(const char *text, size_t len, int allow_nul);

/* A canonical object: its top-level members into m (in order; there are no duplicates).
 * Returns their number, or -1 (not a canonical object, or more than max members). */
int js_canon_object(const char *text, size_t len, int allow_nul, struct js_member *m, int max);

/* A canonical object, its members recorded in one pass. 0, or -1 (not a canonical object, or
 * more members than room: the caller takes the tree path). */
int js_canon_scan(const char *text, size_t len, int allow_nul, struct js_scan *out);

/* The top-level members of an object js_canon_value accepted (no checks). -1: more than max. */
int js_members(const char *text, size_t len, struct js_member *m, int max);

/* The elements of an array js_canon_value accepted (key NULL). -1: more than max. */
int js_elements(const char *text, size_t len, struct js_member *m, int max);

/* The member named key (klen bytes), or NULL. js_get: key is a string literal. */
const struct js_member *js_getn(const struct js_member *m, int n, const char *key, size_t klen);
#define js_get(m, n, key) js_getn((m), (n), "" key, sizeof(key) - 1)

/* 1 when v is there and its bytes are exactly text (e.g. "true", "\"2.0\""). */
int js_is(const struct js_member *v, const char *text);

/* A canonical value with every array cut to its first `keep` elements, written to out (room for
 * len bytes; the length is returned): the structure of a big value in a few KB, for learning
 * its shape (shapes merge an array's elements) without reading all of it. Canonical too. */
size_t js_sample(const char *text, size_t len, int keep, char *out);

/* A hash of a canonical value's structure (keys, value types, nesting; not string or number
 * contents), keyed: equal structures hash alike, so shapes.c can skip one it has learned. */
uint64_t js_shape_hash(const char *text, size_t len, uint64_t key);

#endif
