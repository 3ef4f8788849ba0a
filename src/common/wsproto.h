/* wsproto — the client half of RFC 6455 that the worker needs, without I/O.
 *
 * The opening handshake (request text, response check), client frame encoding (always
 * masked), and a reader that turns the server's byte stream into complete messages. No
 * I/O, no threads, no globals: wsclient does the I/O and owns the state; the reader
 * allocates only message buffers. Only what the control channel uses is supported: no
 * extensions; text, binary and continuation data frames; close, ping and pong. */
#ifndef CODEMCP_WSPROTO_H
#define CODEMCP_WSPROTO_H

#include <stddef.h>
#include <stdint.h>

enum {
    WSP_OP_CONT = 0x0,
    WSP_OP_TEXT = 0x1,
    WSP_OP_BINARY = 0x2,
    WSP_OP_CLOSE = 0x8,
    WSP_OP_PING = 0x9,
    WSP_OP_PONG = 0xA,
};

#define WSP_KEY_LEN       24   /* base64 of the 16-byte nonce */
#define WSP_MAX_HEADER    14   /* 2 + 8 (length) + 4 (mask) */
#define WSP_MAX_HEAD_TEXT 8192 /* a longer handshake response is refused */

/* A small non-cryptographic generator (splitmix64) for masking keys and the handshake
 * nonce; seed the state once from getrandom(). Masking only stops a proxy from mistaking
 * frame bytes for HTTP, so per-frame unpredictability from a random seed is enough and
 * saves a syscall per frame. */
uint64_t wsp_rand(uint64_t *state);

/* Writes the handshake nonce (WSP_KEY_LEN base64 characters + NUL). */
void wsp_make_key(char key[WSP_KEY_LEN + 1], uint64_t *rng);

/* Writes the HTTP upgrade request into out. Returns its length, or -1 if cap is too small. */
int wsp_request(char *out, size_t cap, const char *host, const char *path, const char *protocol,
                const char *key);

/* Length of the response head including the blank line, or 0 while it is incomplete. */
size_t wsp_head_len(const char *buf, size_t len);

/* Finds header `name` (case-insensitive) in an HTTP head's header lines (the first line, the
 * request or status line, is skipped); *val / *vlen: its value, trimmed. 1 if found (the first
 * one). Shared with the gateway's server half (src/wire/wsserver.c). */
int wsp_find_header(const char *head, size_t len, const char *name, const char **val, size_t *vlen);
/* 1 if the comma-separated list v[0..n) holds token (case-insensitive). */
int wsp_has_token(const char *v, size_t n, const char *token);
/* The Sec-WebSocket-Accept value for key (RFC 6455 4.2.2: base64 of the SHA-1 of key + the
 * GUID) into out: 28 characters + NUL. -1 when key is over 64 bytes. */
int wsp_accept_key(const char *key, size_t key_len, char out[29]);

/* Checks a complete response head (wsp_head_len bytes) for our request: status 101,
 * `Upgrade: websocket`, `Connection: upgrade`, the Sec-WebSocket-Accept derived from key,
 * and no subprotocol other than ours. Returns 0, or -1 with *why set to a static string. */
int wsp_check_response(const char *head, size_t len, const char *key, const char *protocol,
                       const char **why);

/* Writes the header of one final frame with a len-byte payload into out (10 bytes at most)
 * and returns its length: with the mask bit set for a client frame (the 4 key bytes are the
 * caller's to append), without for a server frame (the gateway's control channel). */
size_t wsp_put_header(unsigned char *out, int opcode, size_t len, int masked);

/* Header length of a client (masked) frame with a payload of len bytes. */
size_t wsp_header_len(size_t len);

/* dst[i] = src[i] ^ key[(off + i) % 4] for n bytes (masking and unmasking; dst may be src). */
void wsp_xor(void *dst, const void *src, size_t n, const unsigned char key[4], unsigned off);
/* Encodes one final client frame: wsp_header_len(len) header bytes, then payload XORed with
 * mask, into out (which must hold both). payload may not overlap out. */
void wsp_encode(unsigned char *out, int opcode, const void *payload, size_t len, uint32_t mask);

/* A parsed server frame header. */
struct wsp_frame {
    int fin;
    int opcode;
    size_t header_len;
    uint64_t payload_len;
};

/* Parses the frame header at buf[0..len). Returns 1 with *f filled, 0 when more bytes are
 * needed, -1 on a protocol violation (*why set): reserved bits, unknown opcode, a masked
 * server frame, a fragmented or oversized (> 125 bytes) control frame, a length with the
 * top bit set. */
int wsp_parse_header(const unsigned char *buf, size_t len, struct wsp_frame *f, const char **why);

/* Turns the server's byte stream into messages. Bytes are received into the space that
 * wsp_reader_space() names (a fixed buffer, or straight into the message being assembled
 * when a large payload is pending), then wsp_reader_feed() parses them. */
struct wsp_reader {
    unsigned char *buf; /* raw bytes [start, end) not parsed yet */
    size_t start, end, cap;
    size_t max_message;
    struct wsp_frame cur; /* frame being received, if in_frame */
    int in_frame;
    uint64_t left; /* its payload bytes still to come */
    char *msg;     /* data message being assembled */
    size_t mlen, mcap;
    int mop; /* its opcode, or -1 */
    unsigned char ctl[128];
    size_t ctl_len;
    const char *error; /* why feed failed (static string) */
};

/* What the reader hands over, one call per complete message or control frame. */
enum { WSP_EV_TEXT, WSP_EV_BINARY, WSP_EV_PING, WSP_EV_PONG, WSP_EV_CLOSE };
/* TEXT: data is a malloc'd, NUL-terminated copy the callee owns. BINARY: data is NULL.
 * PING/PONG/CLOSE: data is the payload, borrowed for the call. Returning -1 stops the
 * feed, which then fails with r->error = "stopped". */
typedef int (*wsp_event_fn)(void *ud, int event, char *data, size_t len);

/* bufsize: the raw buffer (>= 256); max_message: the cap on one message. 0, or -1 (OOM). */
int wsp_reader_init(struct wsp_reader *r, size_t bufsize, size_t max_message);
void wsp_reader_free(struct wsp_reader *r);
/* Where the next read may put up to *cap bytes (never 0). */
void wsp_reader_space(struct wsp_reader *r, void **dst, size_t *cap);
/* n bytes were put into that space: parses them, calling fn for each complete message or
 * control frame. 0, or -1 with r->error set (protocol violation, a message over the cap,
 * out of memory, or fn refused); the stream is unusable after -1. */
int wsp_reader_feed(struct wsp_reader *r, size_t n, wsp_event_fn fn, void *ud);

#endif
