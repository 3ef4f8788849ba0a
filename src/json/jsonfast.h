/* jsonfast — the hot path's JSON text codec for jansson values: one pass each way, no
 * per-character stream, no printf for integers.
 *
 * Why it exists: on every SDK call the gateway decodes two messages (the worker's call_tool
 * frame, the upstream's reply) and encodes two (the upstream request, the worker's reply).
 * With jansson's json_loadb/json_dumps that was ~75 % of the gateway's instructions per call
 * (callgrind: ~27k instructions to decode and ~21k to encode a 150-byte message; see
 * bench/results/percall.md). These functions build and read the same jansson trees
 * (json_t), so callers keep jansson for everything else.
 *
 * Contract: same accepted language and the same values as jansson 2.14 with flags 0 (decode:
 * an object or array at the top, RFC 8259, UTF-8 checked, no \u0000, integers that fit
 * json_int_t, at most JSON_PARSER_MAX_DEPTH levels, duplicate keys: the last one wins) and the
 * same bytes as json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) (insertion order, \uXXXX in
 * upper case for control characters, reals as jansson prints them). tests/unit/test_jsonfast.c
 * checks both against jansson on a corpus and on random values, tests/fuzz/ with libFuzzer.
 * Error texts differ from jansson's (they name the byte offset). One deliberate difference:
 * a raw NUL byte is refused wherever it is; jansson skips one after a number or literal
 * (its reader uses NUL as a "buffer empty" mark, so "[1]\0" fails there but "-5827\0" with
 * DECODE_ANY decodes). Pure functions, no module state. */
#ifndef CODEMCP_JSONFAST_H
#define CODEMCP_JSONFAST_H

#include <jansson.h>
#include <stddef.h>

/* Decodes len bytes (need not be NUL-terminated). Returns a new reference, or NULL with
 * err->text (and err->position) set when err is given. JF_DECODE_ANY also accepts a scalar
 * at the top, as JSON_DECODE_ANY does. */
#define JF_DECODE_ANY 1
/* JF_ALLOW_NUL accepts \u0000 in strings, as JSON_ALLOW_NUL does (the string keeps its length;
 * json_string_value() callers see it cut at the NUL). */
#define JF_ALLOW_NUL 2
/* JF_BIG_INTEGERS keeps an integer beyond json_int_t (Python's 2**64, refused by jansson)
 * instead of refusing the text, digit for digit, as a value of its own kind: a jansson string
 * of JF_BIG_TAG and the digits. Its bytes are not UTF-8 (the byte FF is never in UTF-8), so no
 * JSON text can decode to it (jf_loadb and jansson check UTF-8), no Python value can (the
 * worker sends text) and no checked constructor (json_string, json_stringn) builds it; every
 * string of the input comes out as the string it was, whatever its content. It survives
 * json_copy and json_deep_copy (jansson copies string bytes unchecked). jf_dumps,
 * jf_append and jsonpretty.h write it as the number; json_dumps refuses it (NULL) rather than
 * write it as some string. C code reading it as a string sees an empty text (it starts with
 * a NUL byte). Only jsonfast.c may build one. */
#define JF_BIG_INTEGERS 4
#define JF_BIG_TAG      "\0\377jf-integer:"
json_t *jf_loadb(const char *text, size_t len, int flags, json_error_t *err);

/* 1 (with the digits, not NUL-terminated) when v is such a big integer, else 0. */
int jf_big_integer(const json_t *v, const char **digits, size_t *len);

/* The top-level "id" member of a JSON-RPC message that did not decode (a NUL in a key, a
 * frame cut at the size cap, garbage after a good head): members are read as jf_loadb reads
 * them, one that does not decode is stepped over as tokens (the members after it still
 * count), and the id is returned (a new reference) when one of them was "id" with a string
 * or integer value; NULL otherwise. *is_request (if given): 1 when a "method" member was
 * among them, 0 when there was none and the object was read to its end (an answer), -1 when
 * there was none but the text stops or breaks before the end (cut at the size cap: it may be
 * either). So the sender of a malformed request can still be told which of its requests
 * failed, and a malformed answer still ends what it answers. */
json_t *jf_frame_id(const char *text, size_t len, int *is_request);

/* Encodes v compactly; caller frees. NULL when v is NULL, holds a string that is not UTF-8
 * (as json_dumps), or nests more than JSON_PARSER_MAX_DEPTH + 1 levels (a cycle guard, one
 * level of room for wrapping what jf_loadb decoded; json_dumps has no limit). */
char *jf_dumps(const json_t *v);

/* Appends the compact text of v (or, when v is NULL, of the string str, str_len bytes) to the
 * growing buffer data/len/cap (util.h's struct buf fields: NUL-terminated, realloc'd). 0, or
 * -1 with len unchanged where jf_dumps would give NULL (not UTF-8, too deep). */
int jf_append(char **data, size_t *len, size_t *cap, const json_t *v, const char *str,
              size_t str_len);

/* Length of the valid UTF-8 sequence at p (its first byte >= 0x80; jansson's rules: no
 * overlong form, no surrogate, at most U+10FFFF), or 0. */
size_t jf_utf8_seq(const unsigned char *p, const unsigned char *e);

#endif
