/* admin_client — see admin_client.h. */
#include "admin_client.h"
#include "admin_paths.h"
#include "util.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

char *admc_format_instances(json_t *list)
{
    struct buf b = {0};
    buf_printf(&b, "%-14s %-8s %-10s %-20s %s\n", "LAUNCHER", "PID", "TRANSPORT", "STARTED",
               "CONFIG");
    size_t i;
    json_t *r;
    json_array_foreach(list, i, r)
    {
        const char *tr = json_string_value(json_object_get(r, "transport"));
        char tbuf[32];
        if (tr && strcmp(tr, "http") == 0)
            snprintf(tbuf, sizeof(tbuf), "http:%d",
                     (int)json_integer_value(json_object_get(r, "port")));
        else
            snprintf(tbuf, sizeof(tbuf), "%s", tr ? tr : "?");
        const char *cfg = json_string_value(json_object_get(r, "config"));
        buf_printf(&b, "%-14s %-8d %-10s %-20s %s\n",
                   json_string_value(json_object_get(r, "label")) ?: "?",
                   (int)json_integer_value(json_object_get(r, "pid")), tbuf,
                   json_string_value(json_object_get(r, "started")) ?: "", cfg ? cfg : "(none)");
    }
    return buf_steal(&b);
}

static int matches(json_t *rec, const char *sel, int how)
{
    const char *label = json_string_value(json_object_get(rec, "label"));
    const char *cfg = json_string_value(json_object_get(rec, "config"));
    char pid[32];
    snprintf(pid, sizeof(pid), "%d", (int)json_integer_value(json_object_get(rec, "pid")));
    switch (how) {
    case 0:
        return strcmp(pid, sel) == 0;
    case 1:
        return label && strcmp(label, sel) == 0;
    default:
        return cfg && strstr(cfg, sel) != NULL;
    }
}

json_t *admc_select(const char *over, const char *sel, char *why, size_t n)
{
    if (!sel && over && *over)
        return json_pack("{s:s, s:s}", "socket", over, "label", "(CODEMCP_ADMIN_SOCKET)");
    json_t *all = admp_instances();
    json_t *picked = json_array();
    size_t i;
    json_t *r;
    if (!sel) {
        json_array_extend(picked, all);
    } else {
        /* PID first, then the exact label, then a substring of the config path. */
        for (int how = 0; how < 3 && !json_array_size(picked); how++)
            json_array_foreach(all, i, r)
            {
                if (matches(r, sel, how))
                    json_array_append(picked, r);
            }
    }
    json_t *out = NULL;
    if (json_array_size(picked) == 1) {
        out = json_incref(json_array_get(picked, 0));
    } else if (!json_array_size(picked)) {
        if (!json_array_size(all))
            snprintf(why, n,
                     "no running codemcp gateway found (start one: `codemcp` under your "
                     "MCP client, or `codemcp start`)");
        else {
            char *t = admc_format_instances(all);
            snprintf(why, n, "no running gateway matches -i %s; running:\n%s", sel, t);
            free(t);
        }
    } else {
        char *t = admc_format_instances(picked);
        snprintf(why, n,
                 "%zu gateways are running; pick one with -i LAUNCHER, -i PID or -i "
                 "CONFIG-SUBSTRING:\n%s",
                 json_array_size(picked), t);
        free(t);
    }
    json_decref(picked);
    json_decref(all);
    return out;
}

json_t *admc_call(const char *path, const char *method, json_t *params, int timeout_ms, char *why,
                  size_t n)
{
    json_t *req = json_pack("{s:s}", "method", method);
    if (params)
        json_object_set_new(req, "params", params);
    char *line = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    json_t *reply = NULL;
    struct buf in = {0};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        snprintf(why, n, "socket path too long: %s", path);
        goto done;
    }
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        snprintf(why, n, "cannot reach the gateway at %s: %s%s", path, strerror(errno),
                 errno == ECONNREFUSED || errno == ENOENT ? " (it is not running any more)" : "");
        goto done;
    }
    size_t len = strlen(line);
    line[len] = '\n'; /* the NUL becomes the line end; json_dumps' buffer holds it */
    size_t off = 0;
    while (off < len + 1) {
        ssize_t w = send(fd, line + off, len + 1 - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            snprintf(why, n, "cannot send to the gateway: %s", strerror(errno));
            goto done;
        }
        off += (size_t)w;
    }
    int64_t end = now_ms() + timeout_ms;
    for (;;) {
        char *nl = in.data ? memchr(in.data, '\n', in.len) : NULL;
        if (nl) {
            reply = json_loadb(in.data, (size_t)(nl - in.data), 0, NULL);
            if (!json_is_object(reply)) {
                json_decref(reply);
                reply = NULL;
                snprintf(why, n, "the gateway sent a reply that is not a JSON object");
            }
            goto done;
        }
        int left = (int)(end - now_ms());
        struct pollfd pfd = {fd, POLLIN, 0};
        int pr = left > 0 ? poll(&pfd, 1, left) : 0;
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) {
            snprintf(why, n, "the gateway did not answer within %d ms", timeout_ms);
            goto done;
        }
        char chunk[65536];
        ssize_t r = read(fd, chunk, sizeof(chunk));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(why, n, "the gateway closed the connection without an answer%s",
                     r < 0 ? "" : " (it may be shutting down)");
            goto done;
        }
        buf_append(&in, chunk, (size_t)r);
    }
done:
    if (fd >= 0)
        close(fd);
    free(line);
    buf_free(&in);
    return reply;
}
