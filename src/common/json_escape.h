/* json_escape — how one byte that JSON must escape (a control character, '"' or '\\') is
 * written. Shared by the gateway's jsonfast.c (upper-case hex, as jansson writes) and the
 * worker's pyfast.c (lower-case, as Python's json module writes), so both encoders escape the
 * same way. Header only: each binary inlines it on its hot path. */
#ifndef CODEMCP_JSON_ESCAPE_H
#define CODEMCP_JSON_ESCAPE_H

#include <stddef.h>

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

#endif
