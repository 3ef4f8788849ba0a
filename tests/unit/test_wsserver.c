/* test_wsserver — the server half of RFC 6455 (src/wire/wsserver.c) the gateway's control channel
 * runs on: the upgrade handshake (checked by the worker's own client check, wsp_check_response,
 * so both halves agree), masked and unmasked frames, fragmentation with control frames between
 * the fragments, ping/pong, close, every protocol violation, the size cap and the give-up
 * rule, and the same stream fed whole, byte at a time and in random cuts. Numbered cases. */
#include "check.h"
#include "util.h"
#include "wsproto.h"
#include "wsserver.h"

#include <stdlib.h>
#include <string.h>

#define KEY "dGhlIHNhbXBsZSBub25jZQ=="

/* What a connection did: bytes it sent, and one line per event. */
struct rec {
    struct buf sent;
    struct buf ev;
    int stop_after; /* a message callback returns -1 once this many were delivered (0: never) */
    int messages;
    int opened;
};

static void r_send(void *ud, const void *d, size_t n)
{
    buf_append(&((struct rec *)ud)->sent, d, n);
}

static void r_open(void *ud)
{
    ((struct rec *)ud)->opened++;
}

static int r_message(void *ud, const char *d, size_t n, int binary)
{
    struct rec *r = ud;
    buf_printf(&r->ev, "%c%zu:", binary ? 'B' : 'M', n);
    buf_append(&r->ev, d, n);
    buf_appends(&r->ev, d[n] == '\0' ? "\n" : "!nonul\n");
    r->messages++;
    return r->stop_after && r->messages >= r->stop_after ? -1 : 0;
}

static int r_oversized(void *ud, const char *head, size_t n, uint64_t total)
{
    struct rec *r = ud;
    buf_printf(&r->ev, "O%zu/%llu:", n, (unsigned long long)total);
    buf_append(&r->ev, head, n);
    buf_appends(&r->ev, "\n");
    return 0;
}

static void r_give_up(void *ud, const char *head, size_t n, uint64_t total)
{
    struct rec *r = ud;
    buf_printf(&r->ev, "G%zu/%llu:", n, (unsigned long long)total);
    buf_append(&r->ev, head, n);
    buf_appends(&r->ev, "\n");
}

static const struct wss_ops ops = {r_send, r_open, r_message, r_oversized, r_give_up};

static struct wss_config cfg(size_t max, size_t kept, uint64_t give_up)
{
    return (struct wss_config){"/control", "codemcp-control", max, kept, give_up};
}

static void rec_free(struct rec *r)
{
    buf_free(&r->sent);
    buf_free(&r->ev);
}

static const char *ev(struct rec *r)
{
    buf_append(&r->ev, "", 1);
    r->ev.len--;
    return r->ev.data;
}

/* A client frame: rsv bits, masked or not, any length encoding the payload needs. */
static size_t frame(unsigned char *out, int fin, int op, const void *payload, size_t len,
                    int masked, int rsv)
{
    static const unsigned char mask[4] = {0x37, 0xfa, 0x21, 0x3d};
    size_t h = 0;
    out[h++] = (unsigned char)((fin ? 0x80 : 0) | rsv | op);
    unsigned char m = masked ? 0x80 : 0;
    if (len < 126) {
        out[h++] = (unsigned char)(m | len);
    } else if (len <= 0xFFFF) {
        out[h++] = m | 126;
        out[h++] = (unsigned char)(len >> 8);
        out[h++] = (unsigned char)len;
    } else {
        out[h++] = m | 127;
        for (int i = 7; i >= 0; i--)
            out[h++] = (unsigned char)((uint64_t)len >> (8 * i));
    }
    if (masked) {
        memcpy(out + h, mask, 4);
        h += 4;
    }
    const unsigned char *p = payload;
    for (size_t i = 0; i < len; i++)
        out[h + i] = masked ? p[i] ^ mask[i & 3] : p[i];
    return h + len;
}

/* A header alone, declaring len bytes (64-bit form), masked. */
static size_t header64(unsigned char *out, int op, uint64_t len)
{
    size_t h = 0;
    out[h++] = (unsigned char)(0x80 | op);
    out[h++] = 0x80 | 127;
    for (int i = 7; i >= 0; i--)
        out[h++] = (unsigned char)(len >> (8 * i));
    memcpy(out + h, "\1\2\3\4", 4);
    return h + 4;
}

static char request[1024];

static const char *good_request(void)
{
    wsp_request(request, sizeof(request), "localhost", "/control", "codemcp-control", KEY);
    return request;
}

/* A server past its handshake (the 101 dropped from r->sent). */
static void open_server(struct wss *s, struct rec *r, struct wss_config c)
{
    wss_init(s, &c);
    const char *req = good_request();
    EXPECT(wss_feed(s, req, strlen(req), &ops, r) == 0);
    EXPECT(s->open && r->opened == 1);
    buf_reset(&r->sent);
}

/* ---- handshake ------------------------------------------------------------------------- */

static void t01_sample_key(void)
{
    char out[29];
    EXPECT(wsp_accept_key(KEY, strlen(KEY), out) == 0);
    EXPECT(strcmp(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") == 0);
}

static void t02_accept_checked_by_the_worker(void)
{
    struct wss s;
    struct rec r = {0};
    struct wss_config c = cfg(1 << 20, 4096, 1 << 30);
    wss_init(&s, &c);
    const char *req = good_request();
    EXPECT(wss_feed(&s, req, strlen(req), &ops, &r) == 0);
    EXPECT(s.open && r.opened == 1);
    const char *why = NULL;
    size_t hl = wsp_head_len(r.sent.data, r.sent.len);
    EXPECT(hl == r.sent.len);
    EXPECT(wsp_check_response(r.sent.data, hl, KEY, "codemcp-control", &why) == 0);
    EXPECT(memmem(r.sent.data, r.sent.len, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", 28) != NULL);
    wss_free(&s);
    rec_free(&r);
}

/* Feeds req whole; expects a refusal with `status` and the stream over. */
static void refused(const char *req, const char *status)
{
    struct wss s;
    struct rec r = {0};
    struct wss_config c = cfg(1 << 20, 4096, 1 << 30);
    wss_init(&s, &c);
    EXPECT(wss_feed(&s, req, strlen(req), &ops, &r) == 1);
    EXPECT(s.end == WSS_END_REFUSED && s.error && !s.open && !r.opened);
    buf_append(&r.sent, "", 1);
    EXPECT(strncmp(r.sent.data, status, strlen(status)) == 0);
    EXPECT(wss_feed(&s, "x", 1, &ops, &r) == 1); /* over: nothing more is read */
    wss_free(&s);
    rec_free(&r);
}

#define HDRS(up, conn, ver, key, proto)                                                            \
    "Host: x\r\nUpgrade: " up "\r\nConnection: " conn "\r\nSec-WebSocket-Version: " ver            \
    "\r\nSec-WebSocket-Key: " key "\r\nSec-WebSocket-Protocol: " proto "\r\n\r\n"
#define OK_HDRS HDRS("websocket", "Upgrade", "13", KEY, "codemcp-control")

static void t03_refusals(void)
{
    refused("GET /other HTTP/1.1\r\n" OK_HDRS, "HTTP/1.1 404");
    refused("GET /control/x HTTP/1.1\r\n" OK_HDRS, "HTTP/1.1 404");
    refused("POST /control HTTP/1.1\r\n" OK_HDRS, "HTTP/1.1 400");
    refused("GET /control HTTP/1.0\r\n" OK_HDRS, "HTTP/1.1 400");
    refused("GET /control\r\n" OK_HDRS, "HTTP/1.1 400");
    refused("GET /control HTTP/1.1\r\n" HDRS("h2c", "Upgrade", "13", KEY, "codemcp-control"),
            "HTTP/1.1 400");
    refused(
        "GET /control HTTP/1.1\r\n" HDRS("websocket", "keep-alive", "13", KEY, "codemcp-control"),
        "HTTP/1.1 400");
    refused("GET /control HTTP/1.1\r\n" HDRS("websocket", "Upgrade", "8", KEY, "codemcp-control"),
            "HTTP/1.1 400");
    refused("GET /control HTTP/1.1\r\n" HDRS("websocket", "Upgrade", "13",
                                             "dGhlIHNhbXBsZSBub25jZQ=", "codemcp-control"),
            "HTTP/1.1 400");
    refused("GET /control HTTP/1.1\r\n" HDRS("websocket", "Upgrade", "13",
                                             "dGhlIHNhbXBsZSBub25j!!==", "codemcp-control"),
            "HTTP/1.1 400");
    refused("GET /control HTTP/1.1\r\n" HDRS("websocket", "Upgrade", "13", KEY, "chat, superchat"),
            "HTTP/1.1 400");
    refused("GET /control HTTP/1.1\r\n" HDRS("websocket", "Upgrade", "13", KEY, "codemcp-controlx"),
            "HTTP/1.1 400");
    refused("GET /control HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " KEY "\r\n\r\n",
            "HTTP/1.1 400");
}

static void t04_accept_variants(void)
{
    const char *reqs[] = {
        "GET /control HTTP/1.1\r\n" HDRS("WebSocket", "keep-alive, Upgrade", "13", KEY,
                                         "chat, codemcp-control"),
        "GET /control HTTP/1.1\r\nhost: x\r\nupgrade:websocket\r\nCONNECTION:  upgrade \r\n"
        "sec-websocket-version: 13\r\nsec-websocket-key: " KEY "\r\n"
        "sec-websocket-protocol: codemcp-control\r\nsec-websocket-extensions: "
        "permessage-deflate\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
        struct wss s;
        struct rec r = {0};
        struct wss_config c = cfg(1 << 20, 4096, 1 << 30);
        wss_init(&s, &c);
        EXPECT(wss_feed(&s, reqs[i], strlen(reqs[i]), &ops, &r) == 0 && s.open);
        const char *why;
        EXPECT(wsp_check_response(r.sent.data, r.sent.len, KEY, "codemcp-control", &why) == 0);
        /* no extension is ever negotiated */
        EXPECT(!memmem(r.sent.data, r.sent.len, "Extensions", 10));
        wss_free(&s);
        rec_free(&r);
    }
}

static void t05_incomplete_and_oversized_head(void)
{
    struct wss s;
    struct rec r = {0};
    struct wss_config c = cfg(1 << 20, 4096, 1 << 30);
    wss_init(&s, &c);
    const char *req = good_request();
    size_t n = strlen(req);
    EXPECT(wss_feed(&s, req, n - 1, &ops, &r) == 0); /* all but the last \n: waits */
    EXPECT(!s.open && r.sent.len == 0 && wss_mid_handshake(&s));
    EXPECT(wss_feed(&s, req + n - 1, 1, &ops, &r) == 0 && s.open && !wss_mid_handshake(&s));
    wss_free(&s);
    rec_free(&r);

    memset(&r, 0, sizeof(r));
    wss_init(&s, &c);
    char big[WSS_MAX_HEAD + 100];
    memcpy(big, "GET /control HTTP/1.1\r\nX: ", 26);
    memset(big + 26, 'a', sizeof(big) - 26);
    int rc = 0;
    for (size_t i = 0; i < sizeof(big) && !rc; i += 1000)
        rc = wss_feed(&s, big + i, sizeof(big) - i < 1000 ? sizeof(big) - i : 1000, &ops, &r);
    EXPECT(rc == 1 && s.end == WSS_END_REFUSED);
    EXPECT(r.sent.len > 12 && memcmp(r.sent.data, "HTTP/1.1 400", 12) == 0);
    wss_free(&s);
    rec_free(&r);
}

/* ---- frames ----------------------------------------------------------------------------- */

/* The close frame the server sent last: its code, or -1 when none was sent. */
static int close_code(struct rec *r)
{
    const unsigned char *p = (const unsigned char *)r->sent.data;
    size_t at = 0, last = (size_t)-1;
    while (at + 2 <= r->sent.len) {
        size_t len = p[at + 1] & 0x7F, h = 2;
        if (len == 126) {
            len = (size_t)p[at + 2] << 8 | p[at + 3];
            h = 4;
        }
        if ((p[at] & 0x0F) == WSP_OP_CLOSE)
            last = at;
        at += h + len;
    }
    if (last == (size_t)-1)
        return -1;
    return (p[last + 1] & 0x7F) >= 2 ? p[last + 2] << 8 | p[last + 3] : 0;
}

static void t06_masked_text(void)
{
    struct wss s;
    struct rec r = {0};
    open_server(&s, &r, cfg(1 << 20, 4096, 1 << 30));
    unsigned char f[256];
    size_t n = frame(f, 1, WSP_OP_TEXT, "{\"jsonrpc\":\"2.0\"}", 17, 1, 0);
    n += frame(f + n, 1, WSP_OP_TEXT, "", 0, 1, 0);
    n += frame(f + n, 1, WSP_OP_BINARY, "\x01\x02", 2, 1, 0);
    EXPECT(wss_feed(&s, (char *)f, n, &ops, &r) == 0);
    EXPECT(strcmp(ev(&r), "M17:{\"jsonrpc\":\"2.0\"}\nM0:\nB2:\x01\x02\n") == 0);
    EXPECT(r.sent.len == 0);
    wss_free(&s);
    rec_free(&r);
}

static void t07_unmasked_is_1002(void)
{
    struct wss s;
    struct rec r = {0};
    open_server(&s, &r, cfg(1 << 20, 4096, 1 << 30));
    unsigned char f[64];
    size_t n = frame(f, 1, WSP_OP_TEXT, "{}", 2, 0, 0);
    EXPECT(wss_feed(&s, (char *)f, n, &ops, &r) == 1);
    EXPECT(s.end == WSS_END_PROTOCOL && strstr(s.error, "not masked"));
    EXPECT(close_code(&r) == 1002 && r.ev.len == 0);
    wss_free(&s);
    rec_free(&r);
}

static void t08_fragments_with_pings_between(void)
{
    struct wss s;
    struct rec r = {0};
    open_server(&s, &r, cfg(1 << 20, 4096, 1 << 30));
    unsigned char f[512];
    size_t n = frame(f, 0, WSP_OP_TEXT, "{\"a\":", 5, 1, 0);
    n += frame(f + n, 1, WSP_OP_PING, "hi", 2, 1, 0);
    n += frame(f + n, 0, WSP_OP_CONT, "[1,", 3, 1, 0);
    n += frame(f + n, 1, WSP_OP_PONG, "x", 1, 1, 0);
    n += frame(f + n, 1, WSP_OP_CONT, "2]}", 3, 1, 0);
    EXPECT(wss_feed(&s, (char *)f, n, &ops, &r) == 0);
    EXPECT(strcmp(ev(&r), "M11:{\"a\":[1,2]}\n") == 0);
    /* one pong, unmasked, carrying the ping's payload; nothing for the pong */
    EXPECT(r.sent.len == 4 && memcmp(r.sent.data, "\x8a\x02hi", 4) == 0);
    wss_free(&s);
    rec_free(&r);
}

static void t09_close_answered(void)
{
    struct wss s;
    struct rec r = {0};
    open_server(&s, &r, cfg(1 << 20, 4096, 1 << 30));
    unsigned char f[64];
    size_t n = frame(f, 1, WSP_OP_CLOSE,
                     "\x03\xe8"
                     "bye",
                     5, 1, 0);
    n += frame(f + n, 1, WSP_OP_TEXT, "after", 5, 1, 0);
    EXPECT(wss_feed(&s, (char *)f, n, &ops, &r) == 1 && s.end == WSS_END_CLOSED);
    EXPECT(r.sent.len == 4 && memcmp(r.sent.data, "\x88\x02\x03\xe8", 4) == 0);
    EXPECT(r.ev.len == 0); /* nothing after the close is read */
    wss_free(&s);
    rec_free(&r);
}

/* Feeds one violation after the handshake (a good message first); expects 1002. */
static void violates(const unsigned char *bad, size_t n, const char *why)
{
    struct wss s;
    struct rec r = {0};
    open_server(&s, &r, cfg(1 << 20, 4096, 1 << 30));
    unsigned char f[512];
    size_t m = frame(f, 1, WSP_OP_TEXT, "ok", 2, 1, 0);
    memcpy(f + m, bad, n);
    EXPECT(wss_feed(&s, (char *)f, m + n, &ops, &r) == 1);
    EXPECT(s.end == WSS_END_PROTOCOL && s.error && strstr(s.error, why));
    EXPECT(close_code(&r) == 1002);
    EXPECT(strcmp(ev(&r), "M2:ok\n") == 0);
    wss_free(&s);
    rec_free(&r);
}

static void t10_violations(void)
{
    unsigned char f[512];
    size_t n;
    for (int rsv = 0x10; rsv <= 0x40; rsv <<= 1) {
        n = frame(f, 1, WSP_OP_TEXT, "{}", 2, 1, rsv);
        violates(f, n, "reserved bits");
    }
    int bad_ops[] = {3, 4, 5, 6, 7, 11, 12, 13, 14, 15};
    for (size_t i = 0; i < sizeof(bad_ops) / sizeof(bad_ops[0]); i++) {
        n = frame(f, 1, bad_ops[i], "x", 1, 1, 0);
        violates(f, n, "unknown opcode");
    }
    n = frame(f, 1, WSP_OP_CONT, "{}", 2, 1, 0);
    violates(f, n, "continuation frame without a message");
    n = frame(f, 0, WSP_OP_TEXT, "{", 1, 1, 0);
    n += frame(f + n, 1, WSP_OP_TEXT, "}", 1, 1, 0);
    violates(f, n, "new message inside a fragmented one");
    n = frame(f, 0, WSP_OP_TEXT, "{", 1, 1, 0);
    n += frame(f + n, 1, WSP_OP_BINARY, "}", 1, 1, 0);
    violates(f, n, "new message inside a fragmented one");
    unsigned char p126[126];
    memset(p126, 'p', sizeof(p126));
    n = frame(f, 1, WSP_OP_PING, p126, 126, 1, 0);
    violates(f, n, "control frame");
    n = frame(f, 0, WSP_OP_PING, "p", 1, 1, 0);
    violates(f, n, "control frame");
    n = header64(f, WSP_OP_TEXT, (uint64_t)1 << 63);
    violates(f, n, "top bit");
    n = frame(f, 1, WSP_OP_PONG, "p", 1, 0, 0);
    violates(f, n, "not masked");
}

static void t11_cap_keeps_the_head(void)
{
    struct wss s;
    struct rec r = {0};
    open_server(&s, &r, cfg(100, 16, 1 << 30));
    unsigned char f[1024], p[300];
    for (size_t i = 0; i < sizeof(p); i++)
        p[i] = (unsigned char)('a' + i % 26);
    size_t n = frame(f, 1, WSP_OP_TEXT, p, 100, 1, 0); /* exactly the cap: delivered */
    n += frame(f + n, 1, WSP_OP_TEXT, p, 101, 1, 0);   /* over it: its head */
    n += frame(f + n, 0, WSP_OP_TEXT, p, 60, 1, 0);    /* over it in fragments */
    n += frame(f + n, 1, WSP_OP_PING, "", 0, 1, 0);
    n += frame(f + n, 1, WSP_OP_CONT, p + 60, 60, 1, 0);
    n += frame(f + n, 1, WSP_OP_TEXT, "next", 4, 1, 0); /* and the stream goes on */
    EXPECT(wss_feed(&s, (char *)f, n, &ops, &r) == 0);
    struct buf want = {0};
    buf_appends(&want, "M100:");
    buf_append(&want, p, 100);
    buf_appends(&want, "\nO16/101:abcdefghijklmnop\nO16/120:abcdefghijklmnop\nM4:next\n");
    buf_append(&want, "", 1);
    EXPECT(strcmp(ev(&r), want.data) == 0);
    EXPECT(r.sent.len == 2); /* the pong */
    buf_free(&want);
    wss_free(&s);
    rec_free(&r);
}

static void t12_give_up(void)
{
    /* 2^63 - 1 declared: given up at once (no payload byte needed), close 1009 */
    struct wss s;
    struct rec r = {0};
    open_server(&s, &r, cfg(64 << 20, 4096, (uint64_t)1 << 30));
    unsigned char f[4096];
    size_t n = header64(f, WSP_OP_TEXT, ((uint64_t)1 << 63) - 1);
    EXPECT(wss_feed(&s, (char *)f, n, &ops, &r) == 1 && s.end == WSS_END_GIVE_UP);
    EXPECT(strcmp(ev(&r), "G0/9223372036854775807:\n") == 0);
    EXPECT(close_code(&r) == 1009);
    wss_free(&s);
    rec_free(&r);

    /* exactly give_up is still read (and refused as over the cap); one more is given up */
    memset(&r, 0, sizeof(r));
    open_server(&s, &r, cfg(100, 8, 1000));
    unsigned char p[1001];
    memset(p, 'z', sizeof(p));
    n = frame(f, 1, WSP_OP_TEXT, p, 1000, 1, 0);
    EXPECT(wss_feed(&s, (char *)f, n, &ops, &r) == 0);
    EXPECT(strcmp(ev(&r), "O8/1000:zzzzzzzz\n") == 0);
    n = frame(f, 1, WSP_OP_TEXT, p, 1001, 1, 0);
    EXPECT(wss_feed(&s, (char *)f, 12, &ops, &r) == 1 && s.end == WSS_END_GIVE_UP);
    wss_free(&s);
    rec_free(&r);

    /* fragments: what came before counts while under the cap (the head is handed over) */
    memset(&r, 0, sizeof(r));
    open_server(&s, &r, cfg(2000, 8, 1000));
    n = frame(f, 0, WSP_OP_TEXT, p, 600, 1, 0);
    n += header64(f + n, WSP_OP_CONT, 401);
    EXPECT(wss_feed(&s, (char *)f, n, &ops, &r) == 1 && s.end == WSS_END_GIVE_UP);
    EXPECT(strncmp(ev(&r), "G600/1001:zzz", 13) == 0);
    wss_free(&s);
    rec_free(&r);

    /* ...but once over the cap only the current frame counts, as before */
    memset(&r, 0, sizeof(r));
    open_server(&s, &r, cfg(100, 8, 1000));
    n = frame(f, 0, WSP_OP_TEXT, p, 600, 1, 0);
    n += frame(f + n, 1, WSP_OP_CONT, p, 600, 1, 0);
    EXPECT(wss_feed(&s, (char *)f, n, &ops, &r) == 0);
    EXPECT(strcmp(ev(&r), "O8/1200:zzzzzzzz\n") == 0);
    wss_free(&s);
    rec_free(&r);
}

static void t13_stop(void)
{
    struct wss s;
    struct rec r = {.stop_after = 1};
    open_server(&s, &r, cfg(1 << 20, 4096, 1 << 30));
    unsigned char f[64];
    size_t n = frame(f, 1, WSP_OP_TEXT, "one", 3, 1, 0);
    n += frame(f + n, 1, WSP_OP_TEXT, "two", 3, 1, 0);
    EXPECT(wss_feed(&s, (char *)f, n, &ops, &r) == 1 && s.end == WSS_END_STOPPED);
    EXPECT(strcmp(ev(&r), "M3:one\n") == 0);
    wss_free(&s);
    rec_free(&r);
}

/* One long stream: handshake, then frames of every length form, fragments, pings, an
 * oversized message; fed whole, byte at a time, and in random cuts, with the same result. */
static size_t long_stream(unsigned char *f, const unsigned char *big)
{
    const char *req = good_request();
    size_t n = strlen(req);
    memcpy(f, req, n);
    n += frame(f + n, 1, WSP_OP_TEXT, "token-1234", 10, 1, 0);
    n += frame(f + n, 1, WSP_OP_TEXT, big, 200, 1, 0);   /* 16-bit length */
    n += frame(f + n, 1, WSP_OP_TEXT, big, 70000, 1, 0); /* 64-bit length */
    n += frame(f + n, 0, WSP_OP_TEXT, big, 7, 1, 0);
    n += frame(f + n, 1, WSP_OP_PING, "pp", 2, 1, 0);
    n += frame(f + n, 1, WSP_OP_CONT, big + 7, 9, 1, 0);
    n += frame(f + n, 1, WSP_OP_TEXT, big, 90001, 1, 0); /* over the cap */
    n += frame(f + n, 1, WSP_OP_BINARY, "bin", 3, 1, 0);
    n += frame(f + n, 1, WSP_OP_CLOSE, "\x03\xe8", 2, 1, 0);
    return n;
}

static void run_cuts(const unsigned char *f, size_t n, uint64_t seed, struct rec *r)
{
    struct wss s;
    struct wss_config c = cfg(80000, 4096, 1 << 30);
    wss_init(&s, &c);
    size_t at = 0;
    int rc = 0;
    while (at < n && !rc) {
        size_t k = seed == 0 ? n - at : seed == 1 ? 1 : 1 + check_xorshift(&seed) % 300;
        if (k > n - at)
            k = n - at;
        rc = wss_feed(&s, (const char *)f + at, k, &ops, r);
        at += k;
    }
    EXPECT(rc == 1 && at == n && s.end == WSS_END_CLOSED);
    wss_free(&s);
}

static void t14_any_split(void)
{
    unsigned char *big = xmalloc(100000), *f = xmalloc(200000);
    for (size_t i = 0; i < 100000; i++)
        big[i] = (unsigned char)(' ' + i % 90);
    size_t n = long_stream(f, big);
    struct rec whole = {0};
    run_cuts(f, n, 0, &whole);
    EXPECT(strncmp(ev(&whole), "M10:token-1234\nM200:", 20) == 0);
    EXPECT(strstr(ev(&whole), "\nO4096/90001:") && strstr(ev(&whole), "\nB3:bin\n"));
    EXPECT(!strstr(ev(&whole), "nonul"));
    int same = 1;
    for (uint64_t seed = 1; seed < 40; seed++) {
        struct rec r = {0};
        run_cuts(f, n, seed == 1 ? 1 : seed * 7919, &r);
        same &= r.ev.len == whole.ev.len && memcmp(r.ev.data, whole.ev.data, r.ev.len) == 0 &&
                r.sent.len == whole.sent.len &&
                memcmp(r.sent.data, whole.sent.data, r.sent.len) == 0;
        rec_free(&r);
    }
    EXPECT(same);
    rec_free(&whole);
    free(big);
    free(f);
}

static void t15_pipelined_after_handshake(void)
{
    struct wss s;
    struct rec r = {0};
    struct wss_config c = cfg(1 << 20, 4096, 1 << 30);
    wss_init(&s, &c);
    unsigned char f[2048];
    const char *req = good_request();
    size_t n = strlen(req);
    memcpy(f, req, n);
    n += frame(f + n, 1, WSP_OP_TEXT, "tok", 3, 1, 0);
    EXPECT(wss_feed(&s, (char *)f, n, &ops, &r) == 0 && s.open);
    EXPECT(strcmp(ev(&r), "M3:tok\n") == 0);
    wss_free(&s);
    rec_free(&r);
}

/* Hostile bytes (agent code writes on its own socket): the valid stream with random bytes
 * overwritten, or random garbage after the handshake, fed in random cuts. Whatever comes, no
 * callback sees more than the cap (or the kept head), a stream that ended stays ended and says
 * why, and nothing is sent or delivered after its end. Under ASan this also checks memory. */
struct frec {
    struct rec r;
    size_t max_len, max_head;
};

static int f_message(void *ud, const char *d, size_t n, int binary)
{
    struct frec *f = ud;
    if (n > f->max_len)
        f->max_len = n;
    return r_message(&f->r, d, n, binary);
}

static int f_oversized(void *ud, const char *head, size_t n, uint64_t total)
{
    struct frec *f = ud;
    if (n > f->max_head)
        f->max_head = n;
    return r_oversized(&f->r, head, n, total);
}

static void f_give_up(void *ud, const char *head, size_t n, uint64_t total)
{
    struct frec *f = ud;
    if (n > f->max_head)
        f->max_head = n;
    r_give_up(&f->r, head, n, total);
}

static void f_send(void *ud, const void *d, size_t n)
{
    r_send(&((struct frec *)ud)->r, d, n);
}

static void f_open(void *ud)
{
    r_open(&((struct frec *)ud)->r);
}

static const struct wss_ops fops = {f_send, f_open, f_message, f_oversized, f_give_up};

static void t16_hostile_bytes(void)
{
    unsigned char *big = xmalloc(100000), *base = xmalloc(200000), *f = xmalloc(200000);
    for (size_t i = 0; i < 100000; i++)
        big[i] = (unsigned char)(' ' + i % 90);
    size_t n = long_stream(base, big);
    size_t req = strlen(good_request());
    int ok = 1, ended = 0;
    for (uint64_t seed = 1; seed <= 3000; seed++) {
        uint64_t rng = seed * 0x9E3779B97F4A7C15ull;
        memcpy(f, base, n);
        if (seed % 3 == 0) { /* garbage after the handshake */
            for (size_t i = req; i < n; i++)
                f[i] = (unsigned char)check_xorshift(&rng);
        } else { /* a few bytes overwritten anywhere, mostly in frame headers near the start */
            int k = 1 + (int)(check_xorshift(&rng) % 6);
            for (int j = 0; j < k; j++) {
                size_t at = check_xorshift(&rng) % (seed % 2 ? n : req + 400);
                f[at] = (unsigned char)check_xorshift(&rng);
            }
        }
        struct wss s;
        struct wss_config c = cfg(1024, 256, 1 << 20);
        wss_init(&s, &c);
        struct frec fr = {0};
        size_t at = 0;
        int rc = 0;
        while (at < n && !rc) {
            size_t cut = 1 + check_xorshift(&rng) % 700;
            if (cut > n - at)
                cut = n - at;
            rc = wss_feed(&s, (const char *)f + at, cut, &fops, &fr);
            at += cut;
        }
        ok &= fr.max_len <= 1024 && fr.max_head <= 256;
        ok &= rc == (s.end != WSS_OPEN_STREAM);
        if (rc) {
            ended++;
            ok &= s.end != WSS_END_PROTOCOL && s.end != WSS_END_REFUSED ? 1 : s.error != NULL;
            size_t ev_len = fr.r.ev.len, sent_len = fr.r.sent.len;
            ok &= wss_feed(&s, (const char *)base + req, n - req, &fops, &fr) == 1;
            ok &= fr.r.ev.len == ev_len && fr.r.sent.len == sent_len;
        }
        wss_free(&s);
        rec_free(&fr.r);
    }
    EXPECT(ok);
    EXPECT(ended > 2000); /* most mutations end the stream (the close at its end, or a fault) */
    free(big);
    free(base);
    free(f);
}

int main(void)
{
    check_case("01 the RFC 6455 sample key gives its accept value", t01_sample_key);
    check_case("02 the 101 passes the worker's own response check",
               t02_accept_checked_by_the_worker);
    check_case("03 bad path 404; bad method, version, key, upgrade, protocol 400", t03_refusals);
    check_case("04 header case, comma lists, an offered extension: accepted", t04_accept_variants);
    check_case("05 an incomplete head waits; one over 8 KiB is refused",
               t05_incomplete_and_oversized_head);
    check_case("06 masked text, empty and binary messages", t06_masked_text);
    check_case("07 an unmasked client frame: close 1002", t07_unmasked_is_1002);
    check_case("08 fragments with ping and pong between them", t08_fragments_with_pings_between);
    check_case("09 a close is answered and ends the stream", t09_close_answered);
    check_case("10 rsv, opcodes, continuations, control frames, 2^63: close 1002", t10_violations);
    check_case("11 over the cap: read to its end, its head kept, the stream goes on",
               t11_cap_keeps_the_head);
    check_case("12 the give-up rule", t12_give_up);
    check_case("13 a callback stops the feed", t13_stop);
    check_case("14 the same stream whole, byte at a time, in random cuts", t14_any_split);
    check_case("15 frames right behind the request head", t15_pipelined_after_handshake);
    check_case("16 hostile bytes: 3,000 mutated or garbage streams in random cuts",
               t16_hostile_bytes);
    return CHECK_DONE();
}
