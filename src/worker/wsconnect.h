/* wsconnect — opens the worker's control connection: parses the control URL, connects
 * (loopback TCP with TCP_NODELAY, a Unix socket, or takes an inherited socketpair end) and
 * performs the WebSocket opening
 * handshake, within a deadline and interruptible through a stop descriptor. Blocking: it
 * runs on wsclient's watcher thread before anyone else uses the socket. Also writes
 * wsclient's frames (wcn_send_frame). */
#ifndef CODEMCP_WSCONNECT_H
#define CODEMCP_WSCONNECT_H

#include <stddef.h>
#include <stdint.h>

/* Where to connect. Strings are owned (wcn_target_free). */
struct wcn_target {
    int is_unix;
    int fd;        /* "fd:N": an inherited, already connected socket (the socketpair); else -1 */
    char *address; /* host name or address; the socket path when is_unix */
    int port;
    char *path; /* HTTP path of the upgrade request */
    char *host; /* Host header */
};

/* Parses "ws://HOST:PORT/PATH", "unix:/PATH" or "fd:N" (an inherited connected socket; both
 * with HTTP path /control). 0, or -1 (nothing allocated). */
int wcn_parse_url(const char *url, struct wcn_target *t);
void wcn_target_free(struct wcn_target *t);

/* Connects to t and shakes hands for `protocol`, giving up at `deadline` (now_ms() time)
 * or once stop_fd becomes readable. key_seed seeds the handshake nonce. Bytes that came
 * after the handshake response (the first frames) are copied to extra (cap bytes, at least
 * WSP_MAX_HEAD_TEXT) and counted in *extra_len. Returns the connected socket, blocking (its
 * users say MSG_DONTWAIT where they must not block) and close-on-exec, or -1 (logged,
 * except when stopped). */
int wcn_open(const struct wcn_target *t, const char *protocol, int stop_fd, int64_t deadline,
             uint64_t key_seed, void *extra, size_t cap, size_t *extra_len);

/* Writes all of p[0..n) (MSG_DONTWAIT, polling for room while the socket buffer is full).
 * 0, or -1 (the connection is gone). */
int wcn_send_all(int fd, const unsigned char *p, size_t n);

#define WCN_STACK_OUT 16384 /* frames up to this size are built on the stack */

/* Masks one frame with `mask` and writes all of it (MSG_DONTWAIT, polling for room while
 * the socket buffer is full: the gateway reads continuously). `secret`: wipe the masked
 * copy (the token must not linger on the stack or heap). 0, -1 (connection gone) or -2
 * (OOM). The caller serialises writers. */
int wcn_send_frame(int fd, int opcode, const void *payload, size_t len, uint32_t mask, int secret);

#endif
