/* wsproto — RFC 6455 client pieces; see wsproto.h. Pure functions: no I/O, no state. */
#include "wsproto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WSP_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

/* ---- SHA-1 and base64, for the handshake only ----------------------------------------
 * Written out here rather than taken from OpenSSL: the first EVP call loads OpenSSL 3's
 * configuration and default provider, which costs the worker about 1.9 MB of RSS for one
 * 60-byte digest at connect time. (SHA-1's weakness does not matter: the accept key only
 * proves the peer speaks WebSocket.) */

static uint32_t wsp_rol(uint32_t x, int n)
{
    return (x << n) | (x >> (32 - n));
}

static void wsp_sha1_block(uint32_t h[5], const unsigned char *p)
{
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = wsp_rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5A827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ED9EBA1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8F1BBCDC;
        } else {
            f = b ^ c ^ d;
            k = 0xCA62C1D6;
        }
        uint32_t t = wsp_rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = wsp_rol(b, 30);
        b = a;
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

/* SHA-1 of msg[0..len) into out[20]. */
static void wsp_sha1(const void *msg, size_t len, unsigned char out[20])
{
    uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    const unsigned char *p = msg;
    unsigned char block[64];
    size_t i = 0;
    for (; i + 64 <= len; i += 64)
        wsp_sha1_block(h, p + i);
    size_t rest = len - i;
    memset(block, 0, sizeof(block));
    memcpy(block, p + i, rest);
    block[rest] = 0x80;
    if (rest >= 56) {
        wsp_sha1_block(h, block);
        memset(block, 0, sizeof(block));
    }
    uint64_t bits = (uint64_t)len * 8;
    for (int j = 0; j < 8; j++)
        block[63 - j] = (unsigned char)(bits >> (8 * j));
    wsp_sha1_block(h, block);
    for (int j = 0; j < 5; j++) {
        out[4 * j] = (unsigned char)(h[j] >> 24);
        out[4 * j + 1] = (unsigned char)(h[j] >> 16);
        out[4 * j + 2] = (unsigned char)(h[j] >> 8);
        out[4 * j + 3] = (unsigned char)h[j];
    }
}

/* Standard base64 with padding of in[0..len) into out (4 * ceil(len / 3) + 1 bytes). */
static void wsp_base64(const unsigned char *in, size_t len, char *out)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < len)
            v |= in[i + 2];
        out[o++] = tab[v >> 18 & 63];
        out[o++] = tab[v >> 12 & 63];
        out[o++] = i + 1 < len ? tab[v >> 6 & 63] : '=';
        out[o++] = i + 2 < len ? tab[v & 63] : '=';
    }
    out[o] = '\0';
}

uint64_t wsp_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void wsp_make_key(char key[WSP_KEY_LEN + 1], uint64_t *rng)
{
    unsigned char nonce[16];
    uint64_t a = wsp_rand(rng), b = wsp_rand(rng);
    memcpy(nonce, &a, 8);
    memcpy(nonce + 8, &b, 8);
    wsp_base64(nonce, sizeof(nonce), key); /* 24 chars + NUL */
}

int wsp_request(char *out, size_t cap, const char *host, const char *path, const char *protocol,
                const char *key)
{
    int n = snprintf(out, cap,
                     "GET %s HTTP/1.1\r\n"
                     "Host: %s\r\n"
                     "Upgrade: websocket\r\n"
                     "Connection: Upgrade\r\n"
                     "Sec-WebSocket-Key: %s\r\n"
                     "Sec-WebSocket-Version: 13\r\n"
                     "Sec-WebSocket-Protocol: %s\r\n"
                     "\r\n",
                     path, host, key, protocol);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

size_t wsp_head_len(const char *buf, size_t len)
{
    for (size_t i = 3; i < len; i++)
        if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
            return i + 1;
    return 0;
}

int wsp_find_header(const char *head, size_t len, const char *name, const char **val, size_t *vlen)
{
    size_t nlen = strlen(name);
    const char *end = head + len;
    const char *line = memchr(head, '\n', len); /* skip the status line */
    while (line && line + 1 < end) {
        line++;
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            break;
        if ((size_t)(eol - line) > nlen && line[nlen] == ':' &&
            strncasecmp(line, name, nlen) == 0) {
            const char *v = line + nlen + 1, *e = eol;
            while (v < e && (*v == ' ' || *v == '\t'))
                v++;
            while (e > v && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
                e--;
            *val = v;
            *vlen = (size_t)(e - v);
            return 1;
        }
        line = eol;
    }
    return 0;
}

int wsp_has_token(const char *v, size_t n, const char *token)
{
    size_t tlen = strlen(token);
    size_t i = 0;
    while (i < n) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t s = i;
        while (i < n && v[i] != ',')
            i++;
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e - s == tlen && strncasecmp(v + s, token, tlen) == 0)
            return 1;
    }
    return 0;
}

int wsp_accept_key(const char *key, size_t key_len, char out[29])
{
    char src[64 + sizeof(WSP_GUID)];
    unsigned char digest[20];
    if (key_len > 64)
        return -1;
    memcpy(src, key, key_len);
    memcpy(src + key_len, WSP_GUID, sizeof(WSP_GUID) - 1);
    wsp_sha1(src, key_len + sizeof(WSP_GUID) - 1, digest);
    wsp_base64(digest, sizeof(digest), out); /* 28 chars + NUL */
    return 0;
}

int wsp_check_response(const char *head, size_t len, const char *key, const char *protocol,
                       const char **why)
{
    const char *v;
    size_t vlen;
    char expect[29];

    if (len < 12 || strncmp(head, "HTTP/1.1 101", 12) != 0) {
        *why = "the server did not switch protocols (expected HTTP/1.1 101)";
        return -1;
    }
    if (!wsp_find_header(head, len, "upgrade", &v, &vlen) || vlen != 9 ||
        strncasecmp(v, "websocket", 9) != 0) {
        *why = "missing 'Upgrade: websocket'";
        return -1;
    }
    if (!wsp_find_header(head, len, "connection", &v, &vlen) ||
        !wsp_has_token(v, vlen, "upgrade")) {
        *why = "missing 'Connection: upgrade'";
        return -1;
    }
    if (wsp_accept_key(key, strlen(key), expect) < 0) {
        *why = "the handshake key is too long";
        return -1;
    }
    if (!wsp_find_header(head, len, "sec-websocket-accept", &v, &vlen) || vlen != strlen(expect) ||
        memcmp(v, expect, vlen) != 0) {
        *why = "wrong Sec-WebSocket-Accept";
        return -1;
    }
    if (wsp_find_header(head, len, "sec-websocket-protocol", &v, &vlen) &&
        (vlen != strlen(protocol) || memcmp(v, protocol, vlen) != 0)) {
        *why = "the server chose another subprotocol";
        return -1;
    }
    if (wsp_find_header(head, len, "sec-websocket-extensions", &v, &vlen) && vlen) {
        *why = "the server enabled an extension we did not offer";
        return -1;
    }
    return 0;
}

size_t wsp_header_len(size_t len)
{
    return (len < 126 ? 2 : len <= 0xFFFF ? 4 : 10) + 4;
}

size_t wsp_put_header(unsigned char *out, int opcode, size_t len, int masked)
{
    unsigned char *p = out;
    unsigned char mbit = masked ? 0x80 : 0;
    *p++ = (unsigned char)(0x80 | (opcode & 0x0F));
    if (len < 126) {
        *p++ = (unsigned char)(mbit | len);
    } else if (len <= 0xFFFF) {
        *p++ = mbit | 126;
        *p++ = (unsigned char)(len >> 8);
        *p++ = (unsigned char)len;
    } else {
        *p++ = mbit | 127;
        for (int i = 7; i >= 0; i--)
            *p++ = (unsigned char)((uint64_t)len >> (8 * i));
    }
    return (size_t)(p - out);
}

void wsp_xor(void *dst, const void *src, size_t n, const unsigned char key[4], unsigned off)
{
    /* Eight bytes at a time: m repeats the key from `off`, so byte i of a word gets its byte. */
    unsigned char m[8], *d = dst;
    const unsigned char *in = src;
    for (int i = 0; i < 8; i++)
        m[i] = key[(off + (unsigned)i) & 3];
    uint64_t m64;
    memcpy(&m64, m, 8);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, in + i, 8);
        w ^= m64;
        memcpy(d + i, &w, 8);
    }
    for (; i < n; i++)
        d[i] = in[i] ^ m[i & 7];
}

void wsp_encode(unsigned char *out, int opcode, const void *payload, size_t len, uint32_t mask)
{
    unsigned char *p = out + wsp_put_header(out, opcode, len, 1);
    memcpy(p, &mask, 4);
    wsp_xor(p + 4, payload, len, p, 0);
}

int wsp_parse_header(const unsigned char *buf, size_t len, struct wsp_frame *f, const char **why)
{
    if (len < 2)
        return 0;
    int fin = buf[0] & 0x80, opcode = buf[0] & 0x0F;
    if (buf[0] & 0x70) {
        *why = "reserved bits set (no extension was negotiated)";
        return -1;
    }
    if (opcode != WSP_OP_CONT && opcode != WSP_OP_TEXT && opcode != WSP_OP_BINARY &&
        opcode != WSP_OP_CLOSE && opcode != WSP_OP_PING && opcode != WSP_OP_PONG) {
        *why = "unknown opcode";
        return -1;
    }
    if (buf[1] & 0x80) {
        *why = "masked frame from the server";
        return -1;
    }
    uint64_t plen = buf[1] & 0x7F;
    size_t hlen = 2;
    if (plen == 126) {
        if (len < 4)
            return 0;
        plen = (uint64_t)buf[2] << 8 | buf[3];
        hlen = 4;
    } else if (plen == 127) {
        if (len < 10)
            return 0;
        plen = 0;
        for (int i = 0; i < 8; i++)
            plen = plen << 8 | buf[2 + i];
        if (plen >> 63) {
            *why = "frame length with the top bit set";
            return -1;
        }
        hlen = 10;
    }
    if (opcode >= WSP_OP_CLOSE && (!fin || plen > 125)) {
        *why = "fragmented or oversized control frame";
        return -1;
    }
    f->fin = fin != 0;
    f->opcode = opcode;
    f->header_len = hlen;
    f->payload_len = plen;
    return 1;
}

/* ---- reader -------------------------------------------------------------------------- */

/* Payloads with at least this much left, and nothing buffered, are received in place. */
#define WSP_DIRECT 4096

int wsp_reader_init(struct wsp_reader *r, size_t bufsize, size_t max_message)
{
    memset(r, 0, sizeof(*r));
    r->buf = malloc(bufsize < 256 ? 256 : bufsize);
    if (!r->buf)
        return -1;
    r->cap = bufsize < 256 ? 256 : bufsize;
    r->max_message = max_message;
    r->mop = -1;
    return 0;
}

void wsp_reader_free(struct wsp_reader *r)
{
    free(r->buf);
    free(r->msg);
    memset(r, 0, sizeof(*r));
    r->mop = -1;
}

static int wsp_direct(const struct wsp_reader *r)
{
    return r->in_frame && r->cur.opcode < WSP_OP_CLOSE && r->left >= WSP_DIRECT &&
           r->start == r->end;
}

void wsp_reader_space(struct wsp_reader *r, void **dst, size_t *cap)
{
    if (wsp_direct(r)) {
        *dst = r->msg + r->mlen;
        *cap = (size_t)r->left;
        return;
    }
    if (r->start == r->end)
        r->start = r->end = 0;
    *dst = r->buf + r->end;
    *cap = r->cap - r->end; /* feed leaves at most a partial header, moved to the front */
}

/* Grows the message buffer for `more` bytes plus a NUL. */
static int wsp_reserve(struct wsp_reader *r, uint64_t more)
{
    if (r->mlen + more > r->max_message) {
        r->error = "message over the size cap";
        return -1;
    }
    size_t need = r->mlen + (size_t)more + 1;
    if (need <= r->mcap)
        return 0;
    char *p = realloc(r->msg, need); /* exact: a large frame is allocated once */
    if (!p) {
        r->error = "out of memory for a message";
        return -1;
    }
    r->msg = p;
    r->mcap = need;
    return 0;
}

/* Starts the frame whose header is at buf[start]. 1 started, 0 need more, -1 error. */
static int wsp_frame_start(struct wsp_reader *r)
{
    int rc = wsp_parse_header(r->buf + r->start, r->end - r->start, &r->cur, &r->error);
    if (rc <= 0)
        return rc;
    r->start += r->cur.header_len;
    r->in_frame = 1;
    r->left = r->cur.payload_len;
    if (r->cur.opcode >= WSP_OP_CLOSE) {
        r->ctl_len = 0;
        return 1;
    }
    if (r->cur.opcode == WSP_OP_CONT && r->mop < 0) {
        r->error = "continuation frame without a message";
        return -1;
    }
    if (r->cur.opcode != WSP_OP_CONT) {
        if (r->mop >= 0) {
            r->error = "new message inside a fragmented one";
            return -1;
        }
        r->mop = r->cur.opcode;
        r->mlen = 0;
    }
    return wsp_reserve(r, r->left) < 0 ? -1 : 1;
}

/* The current frame's payload is complete: hand over what it finished. */
static int wsp_frame_done(struct wsp_reader *r, wsp_event_fn fn, void *ud)
{
    int rc = 0;
    r->in_frame = 0;
    if (r->cur.opcode >= WSP_OP_CLOSE) {
        int ev = r->cur.opcode == WSP_OP_PING   ? WSP_EV_PING
                 : r->cur.opcode == WSP_OP_PONG ? WSP_EV_PONG
                                                : WSP_EV_CLOSE;
        rc = fn(ud, ev, (char *)r->ctl, r->ctl_len);
    } else if (r->cur.fin) {
        if (r->mop == WSP_OP_BINARY) {
            rc = fn(ud, WSP_EV_BINARY, NULL, r->mlen);
        } else {
            char *text = r->msg;
            size_t len = r->mlen;
            text[len] = '\0';
            r->msg = NULL;
            r->mlen = r->mcap = 0;
            rc = fn(ud, WSP_EV_TEXT, text, len);
        }
        r->mop = -1;
        r->mlen = 0;
    }
    if (rc < 0)
        r->error = "stopped";
    return rc < 0 ? -1 : 0;
}

int wsp_reader_feed(struct wsp_reader *r, size_t n, wsp_event_fn fn, void *ud)
{
    if (wsp_direct(r)) {
        r->mlen += n;
        r->left -= n;
        return r->left ? 0 : wsp_frame_done(r, fn, ud);
    }
    r->end += n;
    for (;;) {
        if (!r->in_frame) {
            int rc = wsp_frame_start(r);
            if (rc < 0)
                return -1;
            if (rc == 0)
                break;
        }
        size_t avail = r->end - r->start;
        size_t k = avail < r->left ? avail : (size_t)r->left;
        if (r->cur.opcode >= WSP_OP_CLOSE) {
            memcpy(r->ctl + r->ctl_len, r->buf + r->start, k);
            r->ctl_len += k;
        } else {
            memcpy(r->msg + r->mlen, r->buf + r->start, k);
            r->mlen += k;
        }
        r->start += k;
        r->left -= k;
        if (r->left)
            break; /* everything buffered was consumed */
        if (wsp_frame_done(r, fn, ud) < 0)
            return -1;
    }
    if (r->start == r->end) {
        r->start = r->end = 0;
    } else if (r->start > 0) { /* a partial header: move it to the front */
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    return 0;
}
