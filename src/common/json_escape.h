/* json_escape — how one byte that JSON must escape (a control character, '"' or '\\') is
 * written, and which bytes are UTF-8. Shared by the gateway's jsonfast.c (upper-case hex, as
 * jansson writes), the worker's pyfast.c (lower-case, as Python's json module writes) and
 * log.c's JSON lines, so every encoder escapes the same way. Header only: each binary inlines
 * it on its hot path. */
#ifndef CODEMCP_JSON_ESCAPE_H
#define CODEMCP_JSON_ESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Past the bytes at p that stand for themselves in a JSON string: not '"', '\\', a control
 * character, nor (when high) a byte >= 0x80. Eight at a time: it stops at the start of the
 * first eight that hold another byte (the caller's byte loop finds which), so a big text is
 * scanned at word speed (a byte loop was a quarter of the gateway's time on a 50 MB result). */
static inline const unsigned char *json_skip_plain(const unsigned char *p, const unsigned char *e,
                                                   int high)
{
    const uint64_t ones = 0x0101010101010101ULL, tops = 0x8080808080808080ULL;
    while (e - p >= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
        uint64_t special = ((q - ones) & ~q) | ((b - ones) & ~b) | ((x - ones * 0x20) & ~x);
        if (high)
            special |= x;
        if (special & tops)
            break;
        p += 8;
    }
    return p;
}

/* Writes the escape of byte c (< 0x20, '"' or '\\') into esc; returns its length (2 or 6). */
static inline size_t json_escape_byte(unsigned c, const char hexd[16], char esc[6])
{
    esc[0] = '\\';
    switch (c) {
    case '"':
        esc[1] = '"';
        return 2;
    case '\\':
        esc[1] = '\\';
        return 2;
    case '\b':
        esc[1] = 'b';
        return 2;
    case '\f':
        esc[1] = 'f';
        return 2;
    case '\n':
        esc[1] = 'n';
        return 2;
    case '\r':
        esc[1] = 'r';
        return 2;
    case '\t':
        esc[1] = 't';
        return 2;
    default:
        esc[1] = 'u';
        esc[2] = '0';
        esc[3] = '0';
        esc[4] = hexd[(c >> 4) & 15];
        esc[5] = hexd[c & 15];
        return 6;
    }
}

/* Length of the valid UTF-8 sequence at p (its first byte >= 0x80), or 0. The rules of
 * jansson's utf8_check_full: no overlong form, no surrogate, at most U+10FFFF. */
static inline size_t json_utf8_seq(const unsigned char *p, const unsigned char *e)
{
    unsigned c = p[0];
    size_t n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if ((size_t)(e - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

#endif
