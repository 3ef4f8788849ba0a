/* wsconnect — see wsconnect.h. Runs before the socket is shared: plain blocking logic on
 * a non-blocking socket, each wait bounded by the deadline and the stop descriptor. */
#include "wsconnect.h"

#include "log.h"
#include "util.h"
#include "wsproto.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define WCN_UNIX_PATH "/control" /* HTTP path used on a Unix socket URL */

int wcn_parse_url(const char *url, struct wcn_target *t)
{
    memset(t, 0, sizeof(*t));
    t->fd = -1;
    if (strncmp(url, "fd:", 3) == 0) {
        char *end;
        long fd = strtol(url + 3, &end, 10);
        if (end == url + 3 || *end || fd < 3 || fd > 65535)
            return -1;
        t->fd = (int)fd;
        t->is_unix = 1;
        t->address = xstrdup(url);
        t->path = xstrdup(WCN_UNIX_PATH);
        /* lws picks the vhost of an adopted socket by the Host header (name + port). */
        t->host = xstrdup("codemcp-control");
        return 0;
    }
    if (strncmp(url, "unix:", 5) == 0 && url[5] == '/') {
        t->is_unix = 1;
        t->address = xstrdup(url + 5);
        t->path = xstrdup(WCN_UNIX_PATH);
        t->host = xstrdup("localhost");
        return 0;
    }
    if (strncmp(url, "ws://", 5) != 0)
        return -1;
    const char *h = url + 5;
    const char *colon = strchr(h, ':');
    const char *slash = strchr(h, '/');
    if (!colon || colon == h || (slash && slash < colon))
        return -1;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || port <= 0 || port > 65535 || (*end && *end != '/'))
        return -1;
    t->address = xstrndup(h, (size_t)(colon - h));
    t->port = (int)port;
    t->path = xstrdup(*end ? end : "/");
    t->host = xstrndup(h, (size_t)(end - h));
    return 0;
}

void wcn_target_free(struct wcn_target *t)
{
    free(t->address);
    free(t->path);
    free(t->host);
    memset(t, 0, sizeof(*t));
    t->fd = -1;
}

/* Waits for fd to become ready for `events`. 1 ready, 0 deadline passed, -1 stopped or
 * error. */
static int wcn_wait(int fd, short events, int stop_fd, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd p[2] = {{.fd = fd, .events = events}, {.fd = stop_fd, .events = POLLIN}};
        int n = poll(p, 2, (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || p[1].revents)
            return -1;
        if (n > 0)
            return 1;
    }
}

/* Fills ss with t's address. 0 or -1 (logged). */
static int wcn_address(const struct wcn_target *t, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
    if (t->is_unix) {
        struct sockaddr_un *un = (struct sockaddr_un *)ss;
        if (strlen(t->address) >= sizeof(un->sun_path)) {
            log_error("worker", "control socket path too long: %s", t->address);
            return -1;
        }
        un->sun_family = AF_UNIX;
        strcpy(un->sun_path, t->address);
        *len = sizeof(*un);
        return 0;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    char port[16];
    snprintf(port, sizeof(port), "%d", t->port);
    int e = getaddrinfo(t->address, port, &hints, &ai);
    if (e != 0 || !ai) {
        log_error("worker", "control connection failed: cannot resolve %s: %s", t->address,
                  gai_strerror(e));
        return -1;
    }
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

/* A connected socket, or -1 (logged unless stopped). */
static int wcn_connect(const struct wcn_target *t, int stop_fd, int64_t deadline)
{
    if (t->fd >= 0) { /* inherited: make it ours (non-blocking, not inherited further) */
        int fl = fcntl(t->fd, F_GETFL);
        if (fl < 0 || fcntl(t->fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
            fcntl(t->fd, F_SETFD, FD_CLOEXEC) < 0) {
            log_error("worker", "control connection failed: descriptor %d: %s", t->fd,
                      strerror(errno));
            return -1;
        }
        return t->fd;
    }
    struct sockaddr_storage ss;
    socklen_t sslen;
    if (wcn_address(t, &ss, &sslen) < 0)
        return -1;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        log_error("worker", "control connection failed: socket: %s", strerror(errno));
        return -1;
    }
    if (!t->is_unix) {
        int one = 1; /* small frames must leave at once, not wait for an ACK */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    int err = 0;
    if (connect(fd, (struct sockaddr *)&ss, sslen) < 0) {
        err = errno;
        if (err == EINPROGRESS || err == EAGAIN) {
            socklen_t l = sizeof(err);
            int r = wcn_wait(fd, POLLOUT, stop_fd, deadline);
            if (r <= 0)
                err = r == 0 ? ETIMEDOUT : ECANCELED;
            else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
                err = errno;
        }
    }
    if (err) {
        if (err != ECANCELED)
            log_error("worker", "control connection failed: %s%s: %s", t->is_unix ? "unix:" : "",
                      t->address, strerror(err));
        close(fd);
        return -1;
    }
    return fd;
}

int wcn_open(const struct wcn_target *t, const char *protocol, int stop_fd, int64_t deadline,
             uint64_t key_seed, void *extra, size_t cap, size_t *extra_len)
{
    char key[WSP_KEY_LEN + 1], req[1024], head[WSP_MAX_HEAD_TEXT];
    size_t got = 0, hlen = 0, sent = 0;
    const char *why = "connection closed during the handshake";
    int stopped = 0;

    int fd = wcn_connect(t, stop_fd, deadline);
    if (fd < 0)
        return -1;
    wsp_make_key(key, &key_seed);
    int n = wsp_request(req, sizeof(req), t->host, t->path, protocol, key);
    if (n < 0) {
        why = "request too long";
        goto fail;
    }
    while (sent < (size_t)n) {
        ssize_t w = send(fd, req + sent, (size_t)n - sent, MSG_NOSIGNAL);
        if (w > 0) {
            sent += (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            int r = wcn_wait(fd, POLLOUT, stop_fd, deadline);
            if (r <= 0) {
                why = "handshake timed out";
                stopped = r < 0;
                goto fail;
            }
        } else {
            goto fail;
        }
    }
    while (!(hlen = wsp_head_len(head, got))) {
        if (got == sizeof(head)) {
            why = "handshake response too long";
            goto fail;
        }
        ssize_t r = recv(fd, head + got, sizeof(head) - got, 0);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        if (r == 0 || (errno != EAGAIN && errno != EINTR))
            goto fail;
        int w = wcn_wait(fd, POLLIN, stop_fd, deadline);
        if (w <= 0) {
            why = "handshake timed out";
            stopped = w < 0;
            goto fail;
        }
    }
    if (wsp_check_response(head, hlen, key, protocol, &why) < 0)
        goto fail;
    if (got - hlen > cap) {
        why = "too much data after the handshake";
        goto fail;
    }
    memcpy(extra, head + hlen, got - hlen);
    *extra_len = got - hlen;
    /* Blocking from here on: every recv and send of wsclient says MSG_DONTWAIT but the one
     * of its idle wait, which blocks. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
fail:
    if (!stopped)
        log_error("worker", "control connection failed: %s", why);
    close(fd);
    return -1;
}

/* ---- writing ------------------------------------------------------------------------- */

int wcn_send_all(int fd, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            if (poll(&pfd, 1, 1000) < 0 && errno != EINTR)
                return -1;
            if (pfd.revents & (POLLERR | POLLNVAL))
                return -1;
            continue;
        }
        return -1;
    }
    return 0;
}

int wcn_send_frame(int fd, int opcode, const void *payload, size_t len, uint32_t mask, int secret)
{
    unsigned char stackbuf[WCN_STACK_OUT];
    size_t total = wsp_header_len(len) + len;
    unsigned char *out = total <= sizeof(stackbuf) ? stackbuf : malloc(total);
    if (!out)
        return -2;
    wsp_encode(out, opcode, payload, len, mask);
    int rc = wcn_send_all(fd, out, total);
    if (secret)
        explicit_bzero(out, total);
    if (out != stackbuf)
        free(out);
    return rc;
}
