/* http_addr — addresses for the HTTP front: the Host/Origin allow-lists (DNS rebinding),
 * "host:port" parsing, the bind probe that names a taken port, and the comma-separated
 * lists of CODEMCP_HTTP_ALLOWED_*. Pure functions except http__probe_bind (a bind()).
 * Internal to the HTTP front (declared in http_int.h); no state, no lws. */
#include "http_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

int http__is_loopback_name(const char *h)
{
    return strcmp(h, "localhost") == 0 || strcmp(h, "127.0.0.1") == 0 || strcmp(h, "::1") == 0;
}

/* Splits "name[:port]" or "[v6][:port]" into a lowercase name without brackets and the port
 * ("" when absent); a bare IPv6 address is all name. -1 when malformed. */
int http__split_authority(const char *a, char *name, size_t n, char *port, size_t pn)
{
    const char *name_end, *rest;
    if (*a == '[') {
        a++;
        name_end = strchr(a, ']');
        if (!name_end)
            return -1;
        rest = name_end + 1;
    } else {
        const char *colon = strchr(a, ':');
        if (colon && strchr(colon + 1, ':'))
            colon = NULL; /* bare IPv6 */
        name_end = colon ? colon : a + strlen(a);
        rest = name_end;
    }
    if (*rest && *rest != ':')
        return -1;
    size_t len = (size_t)(name_end - a);
    if (len == 0 || len >= n || (*rest && strlen(rest + 1) >= pn))
        return -1;
    for (size_t i = 0; i < len; i++)
        name[i] = (char)(a[i] >= 'A' && a[i] <= 'Z' ? a[i] + 32 : a[i]);
    name[len] = '\0';
    snprintf(port, pn, "%s", *rest ? rest + 1 : "");
    return 0;
}

int http__host_allowed(const char *host, char **hosts, size_t n_hosts, int any_host)
{
    char name[256], port[16], en[256], ep[16];
    if (any_host)
        return 1;
    if (http__split_authority(host, name, sizeof(name), port, sizeof(port)) < 0)
        return 0;
    if (http__is_loopback_name(name))
        return 1;
    for (size_t i = 0; i < n_hosts; i++)
        if (http__split_authority(hosts[i], en, sizeof(en), ep, sizeof(ep)) == 0 &&
            strcmp(en, name) == 0 && (!ep[0] || strcmp(ep, port) == 0))
            return 1;
    return 0;
}

int http__origin_allowed(const char *origin, char **origins, size_t n_origins)
{
    char auth[256], name[256], port[16];
    const char *sep = strstr(origin, "://");
    if (!sep) /* "null" and other opaque origins */
        return 0;
    snprintf(auth, sizeof(auth), "%s", sep + 3);
    auth[strcspn(auth, "/")] = '\0';
    if (http__split_authority(auth, name, sizeof(name), port, sizeof(port)) == 0 &&
        http__is_loopback_name(name))
        return 1;
    for (size_t i = 0; i < n_origins; i++) {
        size_t el = strlen(origins[i]);
        while (el && origins[i][el - 1] == '/')
            el--;
        if (el == strlen(origin) && strncasecmp(origins[i], origin, el) == 0)
            return 1;
    }
    return 0;
}

char **http__split_list(const char *list, size_t *n)
{
    const char *v = list;
    char **out = NULL;
    *n = 0;
    while (v && *v) {
        size_t len = strcspn(v, ",");
        const char *a = v, *b = v + len;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (b > a) {
            out = xrealloc(out, (*n + 1) * sizeof(*out));
            out[(*n)++] = xstrndup(a, (size_t)(b - a));
        }
        v += len + (v[len] == ',');
    }
    return out;
}

void http__free_list(char **l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

/* "HOST:PORT", "[V6]:PORT", ":PORT", "PORT" or "HOST". */
int http__parse_bind(const char *s, char *host, size_t n, int *port)
{
    char name[256], p[16];
    if (s[strspn(s, "0123456789")] == '\0') {
        snprintf(p, sizeof(p), "%s", s);
    } else if (*s == ':') {
        snprintf(p, sizeof(p), "%s", s + 1);
    } else {
        if (http__split_authority(s, name, sizeof(name), p, sizeof(p)) < 0)
            return -1;
        snprintf(host, n, "%s", name);
    }
    if (p[0]) {
        char *end;
        long v = strtol(p, &end, 10);
        if (*end || v < 0 || v > 65535)
            return -1;
        *port = (int)v;
    }
    return 0;
}

/* Binds once ourselves to turn a failure into a message naming the port: lws only logs it,
 * and for an address that is not local it silently defers listening. */
int http__probe_bind(const char *ip, int v6, int port)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof(ss));
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        if (ip)
            inet_pton(AF_INET6, ip, &a->sin6_addr);
        sl = sizeof(*a);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        if (ip)
            inet_pton(AF_INET, ip, &a->sin_addr);
        sl = sizeof(*a);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), on = 1, err = 0;
    if (fd < 0)
        return 0; /* let lws report it */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (bind(fd, (struct sockaddr *)&ss, sl) < 0)
        err = errno;
    close(fd);
    if (err == EADDRINUSE)
        fprintf(stderr, "codemcp: port %d is already in use (another codemcp? use -p PORT)\n",
                port);
    else if (err == EADDRNOTAVAIL)
        fprintf(stderr, "codemcp: cannot listen on %s: not an address of this machine\n", ip);
    else if (err)
        fprintf(stderr, "codemcp: cannot listen on port %d: %s\n", port, strerror(err));
    return err ? -1 : 0;
}
