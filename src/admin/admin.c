/* admin — see admin.h. The listening socket is an lp_io whose readiness means accept(), not
 * read() (on_ready); accepted connections are ordinary lp_io descriptors. Connections are referred
 * to by the lp_io that owns them (freed only through on_close, which also stops the connection's
 * timer). */
#include "admin.h"
#include "admin_fleet.h"
#include "admin_ops.h"
#include "admin_paths.h"
#include "log.h"
#include "loop.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define ADM_MAX_CONNS   16
#define ADM_MAX_REQUEST (1024 * 1024)
#define ADM_DEADLINE_MS 10000

struct adm_conn {
    struct lp_io *io;
    struct buf in;
    struct lp_timer deadline;
    int answered;
};

static struct lp_io *listener; /* the listening socket: readiness means accept() */
static char sock_path[256], rec_path[4400];
static int n_conns;

/* ---- connections ------------------------------------------------------------------------ */

static void conn_reply(struct adm_conn *c, json_t *reply)
{
    char *text = json_dumps(reply, JSON_COMPACT);
    json_decref(reply);
    if (!text) /* out of memory, or a value json_dumps refuses (jsonfast's big integers) */
        text = xstrdup("{\"ok\":false,\"error\":\"the reply could not be encoded\"}");
    lp_io_write_line(c->io, text, strlen(text));
    free(text);
    c->answered = 1;
    lp_io_close(c->io);
}

static void conn_on_read(void *ud, const char *data, size_t len)
{
    struct adm_conn *c = ud;
    if (c->answered)
        return;
    buf_append(&c->in, data, len);
    char *nl = memchr(c->in.data, '\n', c->in.len);
    if (!nl) {
        if (c->in.len > ADM_MAX_REQUEST)
            conn_reply(c, json_pack("{s:b, s:s}", "ok", 0, "error", "request too large"));
        return;
    }
    json_error_t jerr;
    json_t *req = json_loadb(c->in.data, (size_t)(nl - c->in.data), 0, &jerr);
    if (!json_is_object(req)) {
        json_decref(req);
        conn_reply(c, json_pack("{s:b, s:s}", "ok", 0, "error",
                                "the request must be one JSON object on one line"));
        return;
    }
    conn_reply(c, admops_handle(req));
    json_decref(req);
}

static void conn_on_close(void *ud)
{
    struct adm_conn *c = ud;
    lp_timer_stop(&c->deadline);
    buf_free(&c->in);
    free(c);
    n_conns--;
}

static void conn_timed_out(void *ud)
{
    struct adm_conn *c = ud;
    if (!c->answered)
        conn_reply(c, json_pack("{s:b, s:s}", "ok", 0, "error", "no request within 10 s"));
}

static const struct lp_io_ops conn_ops = {.on_read = conn_on_read, .on_close = conn_on_close};

/* Best effort on a fresh non-blocking socket, then closed. */
static void refuse(int fd, const char *why)
{
    char line[300];
    int n = snprintf(line, sizeof(line), "{\"ok\":false,\"error\":\"%s\"}\n", why);
    (void)!write(fd, line, (size_t)n);
    close(fd);
}

static void accept_all(int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR)
                log_warn("admin", "accept: %s", strerror(errno));
            return;
        }
        struct ucred cr;
        socklen_t cl = sizeof(cr);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 ||
            (cr.uid != geteuid() && cr.uid != 0)) {
            log_warn("admin",
                     "refused an admin connection from uid %d (pid %d): only uid %d or "
                     "root may control this gateway",
                     (int)cr.uid, (int)cr.pid, (int)geteuid());
            refuse(fd, "permission denied: not the gateway's user");
            continue;
        }
        if (n_conns >= ADM_MAX_CONNS) {
            refuse(fd, "busy: too many admin connections");
            continue;
        }
        struct adm_conn *c = xcalloc(1, sizeof(*c));
        n_conns++;
        c->io = lp_io_watch(fd, 1, &conn_ops, c);
        if (!c->io) { /* fd closed by lp_io_watch */
            free(c);
            n_conns--;
            continue;
        }
        lp_timer_start(&c->deadline, ADM_DEADLINE_MS, conn_timed_out, c);
    }
}

static void listen_ready(void *ud)
{
    (void)ud;
    accept_all(lp_io_fd(listener));
}

static void listen_closed(void *ud)
{
    (void)ud;
    listener = NULL; /* lp_destroy closed it */
}

static const struct lp_io_ops listen_ops = {.on_close = listen_closed, .on_ready = listen_ready};

/* ---- socket and record ------------------------------------------------------------------- */

/* -1 when another live gateway answers on path; a dead one's socket is removed. */
static int clear_stale_socket(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return 0;
    if (!S_ISSOCK(st.st_mode)) {
        log_error("admin", "%s exists and is not a socket; not touching it", path);
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, path, strnlen(path, sizeof(sa.sun_path) - 1)); /* length checked */
    int live = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    if (fd >= 0)
        close(fd);
    if (live) {
        log_error("admin", "another gateway serves %s (CODEMCP_ADMIN_SOCKET must differ)", path);
        return -1;
    }
    log_info("admin", "removing the stale admin socket %s", path);
    unlink(path);
    return 0;
}

static int open_listener(const char *path)
{
    if (clear_stale_socket(path) < 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, path, strnlen(path, sizeof(sa.sun_path) - 1)); /* length checked */
    mode_t old = umask(0177); /* the socket is born 0600: no window with wider access */
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc < 0 || chmod(path, 0600) < 0 || listen(fd, ADM_MAX_CONNS) < 0) {
        log_error("admin", "cannot listen on %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static char *parent_name(void)
{
    char path[64], name[64] = "";
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)getppid());
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(name, sizeof(name), f))
            name[0] = 0;
        fclose(f);
    }
    name[strcspn(name, "\n")] = 0;
    return xstrdup(*name ? name : "?");
}

static int write_record(json_t *rec)
{
    char tmp[4500];
    char *slash = strrchr(rec_path, '/');
    snprintf(tmp, sizeof(tmp), "%.*s/.tmp-%s", (int)(slash - rec_path), rec_path, slash + 1);
    if (json_dump_file(rec, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) < 0) {
        unlink(tmp);
        return -1;
    }
    chmod(tmp, 0600);
    return rename(tmp, rec_path);
}

int adm_start(struct cfg *cfg, const char *transport, const char *url, const char *instance_label)
{
    const char *colon = url && strstr(url, "//") ? strchr(strstr(url, "//") + 2, ':') : NULL;
    int port = colon ? atoi(colon + 1) : 0;
    admfleet_init(); /* changes from the other replicas arrive even without a socket here */
    json_decref(admp_instances()); /* removes what dead gateways left behind */
    if (admp_paths_for(cfg->path, getpid(), sock_path, sizeof(sock_path), rec_path,
                       sizeof(rec_path)) < 0) {
        log_error("admin", "no admin socket (%s): set CODEMCP_ADMIN_SOCKET to a shorter path",
                  strerror(errno));
        sock_path[0] = rec_path[0] = 0;
        return -1;
    }
    int fd = open_listener(sock_path);
    if (fd < 0) {
        sock_path[0] = rec_path[0] = 0;
        return -1;
    }
    listener = lp_io_watch(fd, 1, &listen_ops, NULL);
    if (!listener) { /* fd closed by lp_io_watch */
        log_error("admin", "cannot watch the admin socket");
        unlink(sock_path);
        sock_path[0] = rec_path[0] = 0;
        return -1;
    }
    const char *label_env = instance_label;
    char *label = label_env && *label_env ? xstrdup(label_env) : parent_name();
    char started[32];
    time_t now = time(NULL);
    strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    json_t *rec =
        json_pack("{s:i, s:I, s:s, s:s?, s:s, s:i, s:s?, s:s, s:I, s:s, s:i}", "pid", (int)getpid(),
                  "proc_start", (json_int_t)admp_proc_start(getpid()), "label", label, "config",
                  cfg->path, "transport", transport, "port", port, "url", url, "started", started,
                  "started_unix", (json_int_t)now, "socket", sock_path, "uid", (int)geteuid());
    free(label);
    if (write_record(rec) < 0)
        log_warn("admin", "cannot write the instance record %s: %s", rec_path, strerror(errno));
    admops_init(cfg, rec);
    json_decref(rec);
    log_info("admin", "admin socket %s", sock_path);
    return 0;
}

void adm_stop(void)
{
    if (sock_path[0])
        unlink(sock_path);
    if (rec_path[0])
        unlink(rec_path);
    admops_free();
}
