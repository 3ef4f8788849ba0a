/* wsserver — the server half of RFC 6455 that the gateway's control channel needs, as pure
 * byte processing: no I/O, no globals, no threads (the client half is src/common/wsproto.c,
 * whose header encoder, wsp_put_header, frames what the gateway sends).
 *
 * One struct wss per connection. wss_feed() takes whatever the socket gave (any split, down to
 * one byte at a time): first the HTTP/1.1 upgrade request (answered with 101 or refused with
 * 400/404), then the client's frames, which must be masked. Whole messages go to a callback;
 * pings are answered with pongs, a close with a close; any protocol violation answers a close
 * frame with 1002 and ends the stream. Bytes for the peer go out through ops->send, in order:
 * the caller queues them and closes the connection once wss_feed says the stream is over.
 *
 * Messages are bounded the way the control channel needs: one over max_message is read to its
 * end and only its first head_kept bytes are kept (to find the id of the request it carried,
 * so that request can be refused); one declaring more than give_up ends the stream at once
 * (2^63 bytes would never end). Text frames are not checked for UTF-8 (libwebsockets, which
 * served this before, did not either): the JSON reader above refuses bad UTF-8 with an error
 * reply, and a binary message is handed over like a text one, as before. Extensions are never
 * negotiated. Costs: O(bytes) per feed; one buffer per connection for the message being
 * assembled (kept between messages up to WSS_KEEP_BUF, so the usual frame allocates nothing). */
#ifndef CODEMCP_WSSERVER_H
#define CODEMCP_WSSERVER_H

#include <stddef.h>
#include <stdint.h>

#define WSS_MAX_HEAD 8192  /* a longer request head is refused (400) */
#define WSS_KEEP_BUF 65536 /* a message buffer up to this size is kept for the next message */

/* Why the stream is over (wss_feed returned 1). */
enum wss_end {
    WSS_OPEN_STREAM,  /* not over */
    WSS_END_REFUSED,  /* the upgrade request was refused (the 400/404 went to send) */
    WSS_END_CLOSED,   /* the peer sent a close frame (answered) */
    WSS_END_PROTOCOL, /* a protocol violation (answered with a close 1002): see error */
    WSS_END_GIVE_UP,  /* a message declared more than give_up bytes (close 1009) */
    WSS_END_STOPPED,  /* a callback returned -1 */
};

struct wss_ops {
    /* Bytes for the peer (handshake answer, pong, close): queue them in this order. */
    void (*send)(void *ud, const void *data, size_t len);
    /* The handshake was accepted (the 101 is already sent). May be NULL. */
    void (*open)(void *ud);
    /* A whole data message (binary: it came as opcode 2). data is NUL-terminated and borrowed
     * for the call. -1 stops the feed (WSS_END_STOPPED); the stream is then over. */
    int (*message)(void *ud, const char *data, size_t len, int binary);
    /* A message over max_message ended: its first bytes (at most head_kept) and its size.
     * -1 stops the feed, as above. */
    int (*oversized)(void *ud, const char *head, size_t len, uint64_t total);
    /* A message declares `total` bytes, more than give_up: what it held so far (its first
     * head_kept bytes when it was already over the cap). The stream ends after this. */
    void (*give_up)(void *ud, const char *head, size_t len, uint64_t total);
};

struct wss_config {
    const char *path;     /* the only request path accepted (else 404), e.g. "/control" */
    const char *protocol; /* the subprotocol the client must offer, e.g. "codemcp-control" */
    size_t max_message;   /* see above */
    size_t head_kept;
    uint64_t give_up;
};

struct wss {
    struct wss_config cfg; /* copied; the strings are borrowed (static ones) */
    enum wss_end end;
    const char *error; /* what went wrong (static string), when end is REFUSED or PROTOCOL */
    int open;          /* the handshake was accepted */
    /* the request head while the handshake is under way */
    char *head;
    size_t head_len, head_scanned;
    /* the frame being read */
    unsigned char hdr[14];
    size_t hdr_len;
    int in_frame, fin, opcode;
    uint64_t left; /* its payload bytes still to come */
    unsigned char mask[4];
    unsigned moff;          /* offset of the next payload byte, mod 4 (the mask's phase) */
    unsigned char ctl[125]; /* a control frame's payload */
    size_t ctl_len;
    /* the data message being assembled */
    int mop; /* its opcode, or -1 when none is under way */
    int overflow;
    uint64_t mtotal; /* its bytes so far (all of them, also when only the head is kept) */
    char *msg;
    size_t mlen, mcap;
};

/* Sets up s for one connection. cfg is copied (its strings must outlive s). */
void wss_init(struct wss *s, const struct wss_config *cfg);
/* Frees what s holds; s may be initialized again. */
void wss_free(struct wss *s);
/* Feeds len bytes read from the peer. 0: keep reading. 1: the stream is over (s->end says why,
 * s->error for refusals and violations); what was sent before must still be flushed, then
 * the connection closed. Once over, further feeds do nothing and return 1. Callbacks may
 * queue output and close the connection, but must not free s during a feed. */
int wss_feed(struct wss *s, const char *data, size_t len, const struct wss_ops *ops, void *ud);
/* 1 when the peer has sent part of its upgrade request but not all of it. */
int wss_mid_handshake(const struct wss *s);

#endif
