/* wsserver — RFC 6455, server side, without I/O; see wsserver.h. It must not read or write a
 * descriptor or keep state outside its struct wss: control.c does the I/O and owns the
 * connection. Everything the peer sends is hostile (agent code can write on its own control
 * socket): lengths are checked before anything is allocated for them, and every violation
 * ends the stream instead of being guessed around. */
#include "wsserver.h"
#include "util.h"
#include "wsproto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void wss_init(struct wss *s, const struct wss_config *cfg)
{
    memset(s, 0, sizeof(*s));
    s->cfg = *cfg;
    s->mop = -1;
}

void wss_free(struct wss *s)
{
    free(s->head);
    free(s->msg);
    s->head = s->msg = NULL;
    s->head_len = s->mlen = s->mcap = 0;
}

int wss_mid_handshake(const struct wss *s)
{
    return !s->open && s->head_len > 0 && s->end == WSS_OPEN_STREAM;
}

/* ---- the opening handshake ---------------------------------------------------------------- */

/* A Sec-WebSocket-Key is the base64 of 16 bytes: 22 characters and "==". */
static int key_ok(const char *k, size_t n)
{
    if (n != WSP_KEY_LEN || k[22] != '=' || k[23] != '=')
        return 0;
    for (size_t i = 0; i < 22; i++) {
        unsigned char c = (unsigned char)k[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/'))
            return 0;
    }
    return 1;
}

static void refuse(struct wss *s, int status, const char *why, const struct wss_ops *ops, void *ud)
{
    char out[512];
    int n = snprintf(out, sizeof(out),
                     "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Type: text/plain\r\n"
                     "%sContent-Length: %zu\r\n\r\n%s\n",
                     status, status == 404 ? "Not Found" : "Bad Request",
                     status == 400 ? "Sec-WebSocket-Version: 13\r\n" : "", strlen(why) + 1, why);
    ops->send(ud, out, (size_t)n);
    s->end = WSS_END_REFUSED;
    s->error = why;
}

/* Checks a complete request head and answers it: 0 accepted (101 sent), -1 refused. */
static int answer_request(struct wss *s, const char *head, size_t len, const struct wss_ops *ops,
                          void *ud)
{
    const char *v, *sp;
    size_t vlen, plen = strlen(s->cfg.path);
    if (len < 4 || memcmp(head, "GET ", 4) != 0) {
        refuse(s, 400, "only a GET upgrade request is served here", ops, ud);
        return -1;
    }
    const char *path = head + 4, *eol = memchr(head, '\r', len);
    sp = eol ? memchr(path, ' ', (size_t)(eol - path)) : NULL;
    if (!sp || (size_t)(eol - sp) != 9 || memcmp(sp, " HTTP/1.1", 9) != 0) {
        refuse(s, 400, "the request line is not 'GET <path> HTTP/1.1'", ops, ud);
        return -1;
    }
    if ((size_t)(sp - path) != plen || memcmp(path, s->cfg.path, plen) != 0) {
        refuse(s, 404, "no such path", ops, ud);
        return -1;
    }
    if (!wsp_find_header(head, len, "upgrade", &v, &vlen) || !wsp_has_token(v, vlen, "websocket")) {
        refuse(s, 400, "not a WebSocket upgrade (no 'Upgrade: websocket')", ops, ud);
        return -1;
    }
    if (!wsp_find_header(head, len, "connection", &v, &vlen) ||
        !wsp_has_token(v, vlen, "upgrade")) {
        refuse(s, 400, "not a WebSocket upgrade (no 'Connection: upgrade')", ops, ud);
        return -1;
    }
    if (!wsp_find_header(head, len, "sec-websocket-version", &v, &vlen) || vlen != 2 ||
        memcmp(v, "13", 2) != 0) {
        refuse(s, 400, "only WebSocket version 13 is spoken here", ops, ud);
        return -1;
    }
    char accept[29];
    if (!wsp_find_header(head, len, "sec-websocket-key", &v, &vlen) || !key_ok(v, vlen) ||
        wsp_accept_key(v, vlen, accept) < 0) {
        refuse(s, 400, "missing or malformed Sec-WebSocket-Key", ops, ud);
        return -1;
    }
    const char *pv;
    size_t pvlen;
    if (!wsp_find_header(head, len, "sec-websocket-protocol", &pv, &pvlen) ||
        !wsp_has_token(pv, pvlen, s->cfg.protocol)) {
        refuse(s, 400, "the required WebSocket subprotocol was not offered", ops, ud);
        return -1;
    }
    char out[300];
    int n = snprintf(out, sizeof(out),
                     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
                     "Sec-WebSocket-Protocol: %s\r\n\r\n",
                     accept, s->cfg.protocol);
    ops->send(ud, out, (size_t)n);
    s->open = 1;
    if (ops->open)
        ops->open(ud);
    return 0;
}

/* Collects the request head from data; once it is complete, answers it. Returns how many
 * bytes of data it took (the rest are frames), or -1 when the stream is over. */
static long take_head(struct wss *s, const char *data, size_t len, const struct wss_ops *ops,
                      void *ud)
{
    if (!s->head)
        s->head = xmalloc(WSS_MAX_HEAD);
    size_t old = s->head_len;
    size_t k = len < WSS_MAX_HEAD - old ? len : WSS_MAX_HEAD - old;
    memcpy(s->head + old, data, k);
    s->head_len += k;
    size_t i = s->head_scanned > 3 ? s->head_scanned - 3 : 0, end = 0;
    for (; i + 4 <= s->head_len; i++)
        if (s->head[i] == '\r' && memcmp(s->head + i, "\r\n\r\n", 4) == 0) {
            end = i + 4;
            break;
        }
    s->head_scanned = s->head_len;
    if (!end) {
        if (s->head_len < WSS_MAX_HEAD)
            return (long)k;
        refuse(s, 400, "the request head is too large", ops, ud);
        return -1;
    }
    int rc = answer_request(s, s->head, end, ops, ud);
    free(s->head);
    s->head = NULL;
    s->head_len = s->head_scanned = 0;
    return rc < 0 ? -1 : (long)(end - old);
}

/* ---- frames ------------------------------------------------------------------------------- */

/* Sends one unmasked control frame: opcode, then a 2-byte code (if code >= 0) and text. */
static void send_control(const struct wss_ops *ops, void *ud, int opcode, int code,
                         const void *payload, size_t len)
{
    unsigned char out[10 + 125];
    size_t pre = code >= 0 ? 2 : 0;
    if (len > 125 - pre)
        len = 125 - pre;
    size_t h = wsp_put_header(out, opcode, pre + len, 0);
    if (pre) {
        out[h] = (unsigned char)(code >> 8);
        out[h + 1] = (unsigned char)code;
    }
    if (len)
        memcpy(out + h + pre, payload, len);
    ops->send(ud, out, h + pre + len);
}

/* Ends the stream for a violation: a close 1002 naming it. Returns 1 (feed's "over"). */
static int violation(struct wss *s, const char *why, const struct wss_ops *ops, void *ud)
{
    send_control(ops, ud, WSP_OP_CLOSE, 1002, why, strlen(why));
    s->end = WSS_END_PROTOCOL;
    s->error = why;
    return 1;
}

/* Bytes the header at h[0..have) needs in all (2 until its length byte is known). */
static size_t header_need(const unsigned char *h, size_t have)
{
    if (have < 2)
        return 2;
    size_t n = (h[1] & 0x7F) == 126 ? 4 : (h[1] & 0x7F) == 127 ? 10 : 2;
    return n + ((h[1] & 0x80) ? 4 : 0);
}

/* Checks what the first two header bytes say. NULL when they are acceptable. */
static const char *check_start(const struct wss *s, const unsigned char *h)
{
    int op = h[0] & 0x0F, fin = h[0] & 0x80;
    if (h[0] & 0x70)
        return "reserved bits set (no extension was negotiated)";
    if (op != WSP_OP_CONT && op != WSP_OP_TEXT && op != WSP_OP_BINARY && op != WSP_OP_CLOSE &&
        op != WSP_OP_PING && op != WSP_OP_PONG)
        return "unknown opcode";
    if (!(h[1] & 0x80))
        return "client frame not masked";
    if (op >= WSP_OP_CLOSE && (!fin || (h[1] & 0x7F) > 125))
        return "fragmented or oversized control frame";
    if (op == WSP_OP_CONT && s->mop < 0)
        return "continuation frame without a message";
    if ((op == WSP_OP_TEXT || op == WSP_OP_BINARY) && s->mop >= 0)
        return "new message inside a fragmented one";
    return NULL;
}

/* Grows the message buffer to hold `more` bytes past mlen and a NUL. */
static void reserve(struct wss *s, size_t more)
{
    size_t need = s->mlen + more + 1;
    if (need <= s->mcap)
        return;
    size_t cap = s->mcap * 2 > need ? s->mcap * 2 : need;
    if (cap > s->cfg.max_message + 1 && need <= s->cfg.max_message + 1)
        cap = s->cfg.max_message + 1; /* doubling never goes past the cap */
    if (cap < 256)
        cap = 256;
    s->msg = xrealloc(s->msg, cap);
    s->mcap = cap;
}

/* The header at h (s->hdr, or the caller's bytes) is complete and its first two bytes are
 * checked: starts its frame. 0, or 1 when the stream is over. */
static int start_frame(struct wss *s, const unsigned char *h, const struct wss_ops *ops, void *ud)
{
    uint64_t plen = h[1] & 0x7F;
    size_t at = 2;
    if (plen == 126) {
        plen = (uint64_t)h[2] << 8 | h[3];
        at = 4;
    } else if (plen == 127) {
        plen = 0;
        for (int i = 0; i < 8; i++)
            plen = plen << 8 | h[2 + i];
        at = 10;
        if (plen >> 63)
            return violation(s, "frame length with the top bit set", ops, ud);
    }
    memcpy(s->mask, h + at, 4);
    s->moff = 0;
    s->fin = (h[0] & 0x80) != 0;
    s->opcode = h[0] & 0x0F;
    s->left = plen;
    s->in_frame = 1;
    s->hdr_len = 0;
    if (s->opcode >= WSP_OP_CLOSE) {
        s->ctl_len = 0;
        return 0;
    }
    if (s->opcode != WSP_OP_CONT) {
        s->mop = s->opcode;
        s->mlen = 0;
        s->mtotal = 0;
        s->overflow = 0;
    }
    /* (once over the cap, only the head is held: what came before does not count) */
    uint64_t total = (s->overflow ? 0 : s->mtotal) + plen;
    if (total > s->cfg.give_up) {
        if (ops->give_up)
            ops->give_up(ud, s->msg ? s->msg : "", s->mlen, total);
        send_control(ops, ud, WSP_OP_CLOSE, 1009, "message too large", 17);
        s->end = WSS_END_GIVE_UP;
        return 1;
    }
    if (!s->overflow && s->mtotal + plen > s->cfg.max_message) {
        s->overflow = 1; /* read to its end; only its head is kept */
        if (s->mlen > s->cfg.head_kept)
            s->mlen = s->cfg.head_kept;
    }
    return 0;
}

/* The current frame's payload is complete. 0, or 1 when the stream is over. */
static int end_frame(struct wss *s, const struct wss_ops *ops, void *ud)
{
    s->in_frame = 0;
    if (s->opcode == WSP_OP_PING) {
        send_control(ops, ud, WSP_OP_PONG, -1, s->ctl, s->ctl_len);
        return 0;
    }
    if (s->opcode == WSP_OP_PONG)
        return 0;
    if (s->opcode == WSP_OP_CLOSE) { /* answered with the peer's code, then over */
        send_control(ops, ud, WSP_OP_CLOSE, s->ctl_len >= 2 ? s->ctl[0] << 8 | s->ctl[1] : -1, NULL,
                     0);
        s->end = WSS_END_CLOSED;
        return 1;
    }
    if (!s->fin)
        return 0;
    int binary = s->mop == WSP_OP_BINARY, overflow = s->overflow, rc;
    uint64_t total = s->mtotal;
    size_t len = s->mlen;
    s->mop = -1;
    s->mlen = 0;
    s->mtotal = 0;
    s->overflow = 0;
    const char *text = "";
    if (s->msg) {
        s->msg[len] = '\0';
        text = s->msg;
    }
    if (overflow)
        rc = ops->oversized ? ops->oversized(ud, text, len, total) : 0;
    else
        rc = ops->message ? ops->message(ud, text, len, binary) : 0;
    if (s->mcap > WSS_KEEP_BUF) { /* a large message's buffer is not kept */
        free(s->msg);
        s->msg = NULL;
        s->mcap = 0;
    }
    if (rc < 0) {
        s->end = WSS_END_STOPPED;
        return 1;
    }
    return 0;
}

/* Takes up to n payload bytes of the current frame from p. Returns how many it took. */
static size_t take_payload(struct wss *s, const unsigned char *p, size_t n)
{
    size_t k = n < s->left ? n : (size_t)s->left;
    if (s->opcode >= WSP_OP_CLOSE) {
        wsp_xor(s->ctl + s->ctl_len, p, k, s->mask, s->moff);
        s->ctl_len += k;
    } else {
        size_t keep = k;
        if (s->overflow)
            keep = s->mlen < s->cfg.head_kept
                       ? (k < s->cfg.head_kept - s->mlen ? k : s->cfg.head_kept - s->mlen)
                       : 0;
        if (keep) {
            reserve(s, keep);
            wsp_xor(s->msg + s->mlen, p, keep, s->mask, s->moff);
            s->mlen += keep;
        }
        s->mtotal += k;
    }
    s->moff = (unsigned)((s->moff + k) & 3);
    s->left -= k;
    return k;
}

static int feed_frames(struct wss *s, const unsigned char *p, size_t n, const struct wss_ops *ops,
                       void *ud)
{
    while (n) {
        if (!s->in_frame && !s->hdr_len && n >= 2 && n >= header_need(p, 2)) {
            /* the usual case: the whole header is in this read */
            const char *why = check_start(s, p);
            if (why)
                return violation(s, why, ops, ud);
            size_t need = header_need(p, 2);
            if (start_frame(s, p, ops, ud))
                return 1;
            p += need;
            n -= need;
        } else if (!s->in_frame) {
            size_t need;
            while (s->hdr_len < (need = header_need(s->hdr, s->hdr_len)) && n) {
                size_t k = need - s->hdr_len < n ? need - s->hdr_len : n;
                memcpy(s->hdr + s->hdr_len, p, k);
                if (s->hdr_len < 2 && s->hdr_len + k >= 2) {
                    const char *why = check_start(s, s->hdr);
                    if (why)
                        return violation(s, why, ops, ud);
                }
                s->hdr_len += k;
                p += k;
                n -= k;
            }
            if (s->hdr_len < need)
                return 0;
            if (start_frame(s, s->hdr, ops, ud))
                return 1;
        }
        size_t k = take_payload(s, p, n);
        p += k;
        n -= k;
        if (!s->left && end_frame(s, ops, ud))
            return 1;
    }
    return 0;
}

int wss_feed(struct wss *s, const char *data, size_t len, const struct wss_ops *ops, void *ud)
{
    if (s->end != WSS_OPEN_STREAM)
        return 1;
    if (!s->open) {
        long took = take_head(s, data, len, ops, ud);
        if (took < 0)
            return 1;
        data += took;
        len -= (size_t)took;
        if (!s->open)
            return 0;
    }
    return feed_frames(s, (const unsigned char *)data, len, ops, ud);
}
