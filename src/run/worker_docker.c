/* worker_docker — workers in containers; see worker_docker.h for the design.
 *
 * One job per container start, owned by its helper thread until that thread's last
 * lp_post (the end) hands it to the loop, which frees it. The loop and the thread share only
 * the container id and the kill flag, under the job's mutex. */
#include "worker_docker.h"
#include "admin_paths.h"
#include "control.h"
#include "docker_engine.h"
#include "log.h"
#include "sandbox.h"
#include "settings.h"
#include "util.h"
#include "worker_image.h"
#include "worker_proc.h"
#include "workers_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CTL_DIR_IN    "/run/codemcp-control" /* where the private directory is mounted */
#define LABEL_WORKER  "codemcp.worker"
#define LABEL_GATEWAY "codemcp.gateway"
#define NOBODY        65534 /* a root gateway's containers with CODEMCP_ROOT_UID_BASE=0 */
#define DK_NPROC      32768 /* RLIMIT_NPROC of a worker container: the default pid_max */
/* A gone gateway's container the engine will not remove yet: asked this many times, this far
 * apart (start-up only: the loop does not run yet). */
#define DOCKER_REMOVE_TRIES    5
#define DOCKER_REMOVE_RETRY_MS 200

struct dk_job {
    struct worker *w;
    char dir[256], sock[300];
    struct lp_io *listener;
    json_t *create; /* the create body without its image (the thread sets it) */
    pthread_mutex_t mu;
    char id[100];   /* the container, once made */
    int kill_asked; /* wkd_kill before or while it was made */
    int status;     /* as waitpid reports it */
    char err[600];  /* why it could not start */
};

static struct {
    const char *image, *network;
    const char *runtime_dir; /* XDG_RUNTIME_DIR */
    const char *log;         /* CODEMCP_LOG, passed to the container */
    long memory_mb, pids;
    double cpus;
    int readonly;
    int subprocess; /* CODEMCP_SANDBOX_SUBPROCESS: the worker's seal allows execve */
    long nofile;    /* CODEMCP_SANDBOX_NOFILE: open files, as a sandboxed worker gets */
    long uid_base;  /* CODEMCP_ROOT_UID_BASE: a root gateway's containers run as base + ids */
} cfg;

static char sockets_dir[200]; /* <runtime dir>/codemcp-docker-<pid>-<start>: the workers' dirs */
static char gateway_id[96];   /* boot id:pid:start time, the label of this gateway's containers */
static struct dk_job **jobs;  /* by slot */
static pthread_mutex_t image_mu = PTHREAD_MUTEX_INITIALIZER;
static char image[300]; /* once ensured */

/* ---- who we are, and whether a labelled gateway still runs ---------------------------- */

static void boot_id(char *out, size_t len)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    out[0] = '\0';
    if (f && fgets(out, (int)len, f))
        out[strcspn(out, "\n")] = '\0';
    if (f)
        fclose(f);
}

static void make_gateway_id(void)
{
    char boot[64];
    boot_id(boot, sizeof(boot));
    snprintf(gateway_id, sizeof(gateway_id), "%s:%d:%lld", boot, (int)getpid(),
             admp_proc_start(getpid()));
}

/* The gateway a label names is gone: another boot, or no process with that pid and start. */
static int gateway_gone(const char *label)
{
    char boot[64], lboot[64];
    int pid;
    long long st;
    boot_id(boot, sizeof(boot));
    if (sscanf(label, "%63[^:]:%d:%lld", lboot, &pid, &st) != 3)
        return 1;
    if (strcmp(lboot, boot) != 0)
        return 1;
    return admp_proc_start(pid) != st;
}

/* Force-removes the labelled worker containers whose gateway is gone (mine_only: this
 * gateway's). Blocking; start-up and exit only. */
static void remove_containers(int mine_only)
{
    struct dk_reply r;
    char path[256];
    snprintf(path, sizeof(path),
             "/containers/json?all=1&filters=%%7B%%22label%%22%%3A%%5B%%22" LABEL_WORKER
             "%%22%%5D%%7D");
    if (dk_call("GET", path, NULL, NULL, 0, 10000, &r) < 0 || r.status != 200) {
        dk_reply_free(&r);
        return;
    }
    json_t *list = json_loads(r.body.data ? r.body.data : "", 0, NULL);
    dk_reply_free(&r);
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c)
    {
        const char *id = json_string_value(json_object_get(c, "Id"));
        const char *gw =
            json_string_value(json_object_get(json_object_get(c, "Labels"), LABEL_GATEWAY));
        if (!id || !gw || strlen(id) > 100)
            continue;
        if (mine_only ? strcmp(gw, gateway_id) != 0 : !gateway_gone(gw))
            continue;
        snprintf(path, sizeof(path), "/containers/%s?force=1", id);
        /* A container stopping by itself as it is removed (its worker saw the gateway go)
         * can make the engine refuse the removal for that moment (Podman answers 500 while
         * its state changes): asked again, a little later, a few times. */
        long status = 0;
        for (int k = 0; k < DOCKER_REMOVE_TRIES; k++) {
            if (k)
                nanosleep(&(struct timespec){0, DOCKER_REMOVE_RETRY_MS * 1000000L}, NULL);
            int rc = dk_call("DELETE", path, NULL, NULL, 0, 10000, &r);
            status = rc == 0 ? r.status : 0;
            if (status == 204 || status == 404) {
                dk_reply_free(&r);
                break;
            }
            if (k == DOCKER_REMOVE_TRIES - 1)
                log_warn("worker", "cannot remove the worker container %.12s: %s", id,
                         rc < 0        ? r.err
                         : r.body.data ? r.body.data
                                       : "no reason given");
            dk_reply_free(&r);
        }
        if (status == 204 && !mine_only)
            log_info("worker", "removed the worker container %.12s of a gateway that is gone", id);
    }
    json_decref(list);
}

static const char *runtime_dir(void)
{
    const char *base = cfg.runtime_dir;
    return base && *base && strlen(base) < 150 ? base : "/tmp";
}

/* A descriptor on path when it is a directory of this user's that no one else may enter (not
 * a symlink: the runtime directory may be /tmp, where another local user names what they
 * like), else -1. */
static int own_private_dir(const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & 077))
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

/* Removes a gateway's sockets directory: one directory per worker, each with one socket. Only
 * one of this user's own: another's, or a link, is left alone. */
static void remove_sockets_dir(const char *path)
{
    int fd = own_private_dir(path);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    struct dirent *e;
    char sock[NAME_MAX + 16];
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(sock, sizeof(sock), "%s/c.sock", e->d_name);
        unlinkat(dirfd(d), sock, 0);
        unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
    }
    closedir(d);
    rmdir(path);
}

/* The sockets directories of gateways that are gone (a SIGKILL leaves them behind). */
static void remove_stale_sockets_dirs(void)
{
    DIR *d = opendir(runtime_dir());
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int pid;
        long long st;
        char path[PATH_MAX];
        if (sscanf(e->d_name, "codemcp-docker-%d-%lld", &pid, &st) != 2 ||
            admp_proc_start(pid) == st)
            continue;
        snprintf(path, sizeof(path), "%s/%s", runtime_dir(), e->d_name);
        remove_sockets_dir(path);
    }
    if (d)
        closedir(d);
}

static pid_t gateway_pid;

/* Only the gateway itself: a forked child that calls exit() must not end its workers. */
static void remove_mine_at_exit(void)
{
    if (getpid() != gateway_pid)
        return;
    remove_containers(1);
    remove_sockets_dir(sockets_dir);
}

int wkd_init(const struct settings *s)
{
    dk_set_host(s->docker_host);
    cfg.runtime_dir = s->xdg_runtime_dir;
    cfg.log = s->log;
    cfg.image = s->docker_image;
    cfg.network = s->docker_network;
    if (!cfg.network || !*cfg.network)
        cfg.network = "none";
    cfg.memory_mb = s->docker_memory;
    cfg.pids = s->docker_pids_limit;
    const char *cpus = s->docker_cpus;
    cfg.cpus = cpus && *cpus ? strtod(cpus, NULL) : 1.0;
    cfg.readonly = s->docker_readonly;
    cfg.subprocess = s->sandbox_subprocess;
    cfg.nofile = s->sandbox_nofile;
    cfg.uid_base = s->root_uid_base;
    id_count = getuid() == 0 && cfg.uid_base > 0 ? SBX_SESSION_IDS_MAX : 0;
    id_start = (unsigned long)cfg.uid_base;
    if (cfg.memory_mb < 0 || cfg.pids < 0 || !(cfg.cpus >= 0)) {
        log_error("worker", "CODEMCP_DOCKER_MEMORY, _PIDS_LIMIT and _CPUS must not be negative");
        return -1;
    }
    struct dk_reply r;
    if (dk_call("GET", "/_ping", NULL, NULL, 0, 10000, &r) < 0 || r.status != 200) {
        const char *why = "";
        log_error("worker",
                  "CODEMCP_ISOLATION=docker: the Docker daemon at %s does not answer (%s%ld): "
                  "start it, or set DOCKER_HOST=unix:///path/to/its.sock",
                  dk_socket(&why) ? dk_socket(&why) : why, r.err[0] ? r.err : "HTTP ", r.status);
        dk_reply_free(&r);
        return -1;
    }
    dk_reply_free(&r);
    make_gateway_id();
    gateway_pid = getpid();
    remove_containers(0);
    remove_stale_sockets_dirs();
    snprintf(sockets_dir, sizeof(sockets_dir), "%s/codemcp-docker-%d-%lld", runtime_dir(),
             (int)gateway_pid, admp_proc_start(gateway_pid));
    if (mkdir(sockets_dir, 0700) < 0 && errno != EEXIST) {
        log_error("worker", "cannot make %s: %s", sockets_dir, strerror(errno));
        return -1;
    }
    int fd = own_private_dir(sockets_dir); /* made before us by someone else: not ours to use */
    if (fd < 0) {
        log_error("worker",
                  "%s exists and is not a private directory of this user's: the workers' "
                  "control sockets cannot go there",
                  sockets_dir);
        return -1;
    }
    close(fd);
    atexit(remove_mine_at_exit);
    return 0;
}

/* ---- the worker's output -> the log ----------------------------------------------------- */

/* The container's stdout and stderr come through its attach stream (logs=1: from its start,
 * whenever the attach arrives), in Docker's frames: 8 bytes (stream, 0, 0, 0, size in big
 * endian) then size bytes. Each line goes to the loop to be logged as the exec'd worker's are. */
struct out_stream {
    int slot;
    char id[100];
    unsigned char hdr[8];
    int hdr_len;
    uint32_t left; /* bytes of the current frame still to come */
    char line[2048];
    size_t line_len;
};

struct out_line {
    int slot;
    char text[];
};

static void on_out_line(void *ud)
{
    struct out_line *l = ud;
    log_info("worker", "[worker %d] %s", l->slot, l->text);
    free(l);
}

static void flush_line(struct out_stream *s)
{
    struct out_line *l = malloc(sizeof(*l) + s->line_len + 1);
    if (l) {
        l->slot = s->slot;
        memcpy(l->text, s->line, s->line_len);
        l->text[s->line_len] = '\0';
        lp_post(on_out_line, l);
    }
    s->line_len = 0;
}

static size_t on_out(char *data, size_t size, size_t n, void *ud)
{
    struct out_stream *s = ud;
    size_t len = size * n;
    for (size_t i = 0; i < len; i++) {
        if (!s->left) {
            s->hdr[s->hdr_len++] = (unsigned char)data[i];
            if (s->hdr_len == 8) {
                s->left = (uint32_t)s->hdr[4] << 24 | (uint32_t)s->hdr[5] << 16 |
                          (uint32_t)s->hdr[6] << 8 | s->hdr[7];
                s->hdr_len = 0;
            }
            continue;
        }
        s->left--;
        if (data[i] == '\n' || s->line_len == sizeof(s->line) - 1)
            flush_line(s);
        if (data[i] != '\n')
            s->line[s->line_len++] = data[i];
    }
    return len;
}

static void *out_main(void *ud)
{
    struct out_stream *s = ud;
    char path[256], err[256];
    snprintf(path, sizeof(path), "/containers/%s/attach?stream=1&stdout=1&stderr=1&logs=1", s->id);
    dk_stream(path, on_out, s, err, sizeof(err));
    if (s->line_len)
        flush_line(s);
    free(s);
    return NULL;
}

/* Starts relaying a created container's output (best effort: none is logged without it). */
static void relay_output(int slot, const char *id)
{
    struct out_stream *s = calloc(1, sizeof(*s));
    pthread_t t;
    if (!s)
        return;
    s->slot = slot;
    snprintf(s->id, sizeof(s->id), "%s", id);
    if (pthread_create(&t, NULL, out_main, s) == 0)
        pthread_detach(t);
    else
        free(s);
}

/* ---- the job's thread ----------------------------------------------------------------------- */

static void on_job_end(void *ud);
static void on_image_ready(void *ud);

static void job_set_id(struct dk_job *j, const char *id)
{
    pthread_mutex_lock(&j->mu);
    snprintf(j->id, sizeof(j->id), "%s", id);
    pthread_mutex_unlock(&j->mu);
}

static int job_killed(struct dk_job *j)
{
    pthread_mutex_lock(&j->mu);
    int k = j->kill_asked;
    pthread_mutex_unlock(&j->mu);
    return k;
}

static void container_call(const char *id, const char *what, const char *method)
{
    char path[256];
    struct dk_reply r;
    snprintf(path, sizeof(path), "/containers/%s%s", id, what);
    dk_call(method, path, NULL, NULL, 0, 30000, &r);
    dk_reply_free(&r);
}

/* The uid and gid a container runs as. A root gateway gives each its own, base + the place in
 * the id range its slot took for this start (next_ids: one per live session, and not the one
 * of the slot's session before): the kernel keeps some budgets per uid outside every namespace
 * (pipe buffer pages, epoll watches, processes per user), which one container would otherwise
 * fill for all. A gateway that is not root keeps its own ids: the control socket it makes is
 * its own, and it could not give it away. */
static uid_t container_id(const struct worker *w, int gid)
{
    if (getuid() != 0)
        return gid ? getgid() : getuid();
    return cfg.uid_base > 0 ? (uid_t)(cfg.uid_base + w->ids) : NOBODY;
}

/* The container's create body (made on the loop, where the worker's settings are). */
static json_t *create_body(struct dk_job *j)
{
    char url[PATH_MAX], tok[128], id[64], mem[64], user[32], bind[PATH_MAX + 64];
    snprintf(url, sizeof(url), "CODEMCP_CONTROL_URL=unix:%s/c.sock", CTL_DIR_IN);
    snprintf(tok, sizeof(tok), "CODEMCP_WORKER_TOKEN=%s", j->w->token);
    snprintf(id, sizeof(id), "CODEMCP_WORKER_ID=%d", j->w->slot);
    snprintf(mem, sizeof(mem), "CODEMCP_WORKER_MEMORY_MB=%ld", memory_mb);
    snprintf(user, sizeof(user), "%u:%u", (unsigned)container_id(j->w, 0),
             (unsigned)container_id(j->w, 1));
    snprintf(bind, sizeof(bind), "%s:%s:ro", j->dir, CTL_DIR_IN);
    const char *log = cfg.log;
    char logv[64];
    snprintf(logv, sizeof(logv), "CODEMCP_LOG=%s", log ? log : "warn");
    /* Open files and processes set, not left to the engine: Podman asks for 1048576 and
     * 4194304, which runc cannot set above its own hard limits without CAP_SYS_RESOURCE
     * ("error setting rlimit type 7: operation not permitted"). Open files as a sandboxed
     * worker gets them; processes per uid (the containers of a gateway that is not root share
     * its uid) as many as the default pid_max allows, so only the container's pids limit ever
     * binds. */
    struct rlimit nproc_rl = {RLIM_INFINITY, RLIM_INFINITY};
    getrlimit(RLIMIT_NPROC, &nproc_rl);
    json_int_t nproc = nproc_rl.rlim_max < DK_NPROC ? (json_int_t)nproc_rl.rlim_max : DK_NPROC;
    /* "container": the worker seals itself (seccomp, Landlock where the runtime's profile
     * lets it) as a sandboxed one does; sockets only when the container has a network. */
    int no_net = strcmp(cfg.network, "none") == 0;
    json_t *body = json_pack(
        "{s:s, s:[s], s:[s,s,s,s,s,s,s,s,s,s,s], s:s, s:s, s:b, s:{s:s, s:s}, s:{s:[s], "
        "s:[s], s:s, s:b, s:{s:s}, s:I, s:I, s:I, s:I, s:[s], s:s, s:[{s:s, s:I, s:I}, {s:s, s:I, "
        "s:I}]}}",
        "Image", "", "Cmd", WKI_WORKER_PATH, "Env", url, tok, id, mem, ctl_frame_env(),
        "CODEMCP_ISOLATION=container",
        cfg.subprocess ? "CODEMCP_SANDBOX_SUBPROCESS=1" : "CODEMCP_SANDBOX_SUBPROCESS=0",
        no_net ? "CODEMCP_SANDBOX_NET=none" : "CODEMCP_SANDBOX_NET=host", "HOME=/tmp",
        "LANG=C.UTF-8", logv, "User", user, "WorkingDir", "/tmp", "NetworkDisabled", no_net,
        "Labels", LABEL_WORKER, "1", LABEL_GATEWAY, gateway_id, "HostConfig", "CapDrop", "ALL",
        "SecurityOpt", "no-new-privileges", "NetworkMode", cfg.network, "ReadonlyRootfs",
        cfg.readonly, "Tmpfs", "/tmp", "rw,nosuid,nodev,size=64m", "Memory",
        (json_int_t)cfg.memory_mb << 20, "MemorySwap", (json_int_t)cfg.memory_mb << 20, "NanoCpus",
        (json_int_t)(cfg.cpus * 1e9), "PidsLimit", (json_int_t)cfg.pids, "Binds", bind, "IpcMode",
        "private", "Ulimits", "Name", "nofile", "Soft", (json_int_t)cfg.nofile, "Hard",
        (json_int_t)cfg.nofile, "Name", "nproc", "Soft", nproc, "Hard", nproc);
    explicit_bzero(tok, sizeof(tok));
    /* A writable root (CODEMCP_DOCKER_READONLY=0) is writable for the worker's Landlock too. */
    if (!cfg.readonly)
        json_array_append_new(json_object_get(body, "Env"), json_string("CODEMCP_SANDBOX_RW=/"));
    if (cfg.memory_mb == 0) { /* no cap: leave both unset */
        json_object_del(json_object_get(body, "HostConfig"), "Memory");
        json_object_del(json_object_get(body, "HostConfig"), "MemorySwap");
    }
    return body;
}

/* A container's exit code as a wait status: 128+N is "killed by signal N" (the OOM killer's
 * SIGKILL shows as 137). */
static int wait_status(long code)
{
    if (code > 128 && code < 128 + 65)
        return (int)(code - 128);
    return (int)((code & 0xff) << 8);
}

static void *job_main(void *ud)
{
    struct dk_job *j = ud;
    struct dk_reply r = {0};
    j->status = SIGKILL;
    pthread_mutex_lock(&image_mu);
    int ok = image[0] ||
             wki_ensure(cfg.image, wkp_bin(), image, sizeof(image), j->err, sizeof(j->err)) == 0;
    if (!ok)
        image[0] = '\0';
    pthread_mutex_unlock(&image_mu);
    if (!ok || job_killed(j))
        goto end;
    lp_post(on_image_ready, j);
    json_object_set_new(j->create, "Image", json_string(image));
    char *json = json_dumps(j->create, JSON_COMPACT);
    int made_rc = json ? dk_call("POST", "/containers/create", json, NULL, 0, 30000, &r) : -1;
    if (json) { /* it holds the worker's token */
        explicit_bzero(json, strlen(json));
        free(json);
    }
    if (made_rc < 0 || r.status != 201) {
        snprintf(j->err, sizeof(j->err), "the worker container could not be made: %s%.300s", r.err,
                 r.body.data ? r.body.data : "");
        goto end;
    }
    json_t *made = json_loads(r.body.data, 0, NULL);
    const char *id = json_string_value(json_object_get(made, "Id"));
    if (id)
        job_set_id(j, id);
    json_decref(made);
    dk_reply_free(&r);
    if (!j->id[0])
        goto end;
    relay_output(j->w->slot, j->id);
    char path[256];
    snprintf(path, sizeof(path), "/containers/%s/start", j->id);
    if (job_killed(j) || dk_call("POST", path, NULL, NULL, 0, 30000, &r) < 0 ||
        (r.status != 204 && r.status != 304)) {
        if (!job_killed(j))
            snprintf(j->err, sizeof(j->err), "the worker container could not start: %s%.300s",
                     r.err, r.body.data ? r.body.data : "");
        container_call(j->id, "?force=1", "DELETE");
        goto end;
    }
    dk_reply_free(&r);
    if (job_killed(j))
        container_call(j->id, "/kill", "POST");
    /* Removed here once it stopped, not by AutoRemove: Podman 4.3 answers a wait for
     * "removed" with StatusCode 0 whatever the exit (an OOM kill would read as a clean exit),
     * and a wait for "not-running" loses the race with its own auto removal. */
    snprintf(path, sizeof(path), "/containers/%s/wait?condition=not-running", j->id);
    if (dk_call("POST", path, NULL, NULL, 0, 0, &r) == 0 && r.status == 200) {
        json_t *w = json_loads(r.body.data, 0, NULL);
        j->status = wait_status((long)json_integer_value(json_object_get(w, "StatusCode")));
        json_decref(w);
    }
    container_call(j->id, "?force=1", "DELETE");
end:
    dk_reply_free(&r);
    json_decref(j->create);
    j->create = NULL;
    lp_post(on_job_end, j);
    return NULL;
}

/* ---- the loop's side ------------------------------------------------------------------------- */

static void close_listener(struct dk_job *j)
{
    lp_io_detach(j->listener); /* no callback may reach j once it is freed */
    j->listener = NULL;
    if (j->sock[0])
        unlink(j->sock);
    j->sock[0] = '\0';
}

static void on_listener_ready(void *ud)
{
    struct dk_job *j = ud;
    int fd = accept4(lp_io_fd(j->listener), NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        if (errno != EAGAIN && errno != EINTR)
            lp_accept_failed(errno);
        return;
    }
    close_listener(j); /* one connection per container */
    if (ctl_adopt(fd) < 0 && !j->w->kill_reason) {
        j->w->kill_reason = xstrdup("the Python worker's control channel could not be set up");
        wkd_kill(j->w);
    }
}

static void on_listener_close(void *ud)
{
    ((struct dk_job *)ud)->listener = NULL;
}

static const struct lp_io_ops listener_ops = {.on_ready = on_listener_ready,
                                              .on_close = on_listener_close};

/* The start timeout counts from here: a first use's image build does not eat it. */
static void on_image_ready(void *ud)
{
    struct dk_job *j = ud;
    if (jobs[j->w->slot] == j && j->w->state == WK_STARTING)
        arm_start_timer(j->w);
}

static void on_job_end(void *ud)
{
    struct dk_job *j = ud;
    struct worker *w = j->w;
    close_listener(j);
    rmdir(j->dir);
    if (jobs[w->slot] == j) {
        jobs[w->slot] = NULL;
        if (j->err[0]) {
            log_error("worker", "worker %d: %s", w->slot, j->err);
            if (!w->kill_reason) /* what the run and the start failure say */
                w->kill_reason = xstrdup(j->err);
        }
        on_worker_exit(w, 0, j->status);
    }
    pthread_mutex_destroy(&j->mu);
    free(j);
}

/* The private directory and the listening socket the container's worker connects to. The
 * socket is bound under a name the worker never looks for, given its mode and owner there, and
 * only then renamed to c.sock: whoever finds c.sock finds it 0600 and the container's (the
 * directory is not the only guard, as control.c's). No umask(): it is the whole process's. */
static int make_control_socket(struct dk_job *j)
{
    char bound[sizeof(j->sock)] = "";
    snprintf(j->dir, sizeof(j->dir), "%s/w-XXXXXX", sockets_dir);
    if (!mkdtemp(j->dir)) {
        snprintf(j->err, sizeof(j->err), "mkdtemp %.250s: %s", j->dir, strerror(errno));
        j->dir[0] = '\0';
        return -1;
    }
    snprintf(j->sock, sizeof(j->sock), "%s/c.sock", j->dir);
    snprintf(bound, sizeof(bound), "%s/b.sock", j->dir);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (strlen(j->sock) >= sizeof(a.sun_path) || fd < 0)
        goto fail;
    memcpy(a.sun_path, bound, strlen(bound) + 1);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || chmod(bound, 0600) < 0)
        goto fail;
    /* Root gateways run the container as another user: the directory and socket become its. */
    uid_t uid = container_id(j->w, 0);
    gid_t gid = container_id(j->w, 1);
    if (getuid() == 0 && (chown(bound, uid, gid) < 0 || chown(j->dir, uid, gid) < 0))
        goto fail;
    if (rename(bound, j->sock) < 0 || listen(fd, 1) < 0)
        goto fail;
    j->listener = lp_io_watch(fd, 1, &listener_ops, j);
    return j->listener ? 0 : -1;
fail:
    snprintf(j->err, sizeof(j->err), "the control socket %.290s: %s", j->sock, strerror(errno));
    if (fd >= 0)
        close(fd);
    unlink(bound);
    unlink(j->sock);
    rmdir(j->dir);
    j->sock[0] = j->dir[0] = '\0';
    return -1;
}

int wkd_spawn(struct worker *w)
{
    if (!jobs)
        jobs = xcalloc((size_t)n_workers, sizeof(*jobs));
    struct dk_job *j = xcalloc(1, sizeof(*j));
    j->w = w;
    pthread_mutex_init(&j->mu, NULL);
    w->forked = 0;
    w->pid = 0;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    lp_timer_stop(&w->start_timer); /* armed again once the image is there */
    if (make_control_socket(j) < 0 || !(j->create = create_body(j)))
        goto fail;
    jobs[w->slot] = j;
    if (pthread_create(&t, &attr, job_main, j) != 0) {
        jobs[w->slot] = NULL;
        snprintf(j->err, sizeof(j->err), "cannot start a thread: %s", strerror(errno));
        goto fail;
    }
    pthread_attr_destroy(&attr);
    return 0;
fail:
    pthread_attr_destroy(&attr);
    log_error("worker", "worker %d: %s", w->slot, j->err);
    free(w->start_failure);
    w->start_failure = xstrdup(j->err);
    close_listener(j);
    if (j->dir[0])
        rmdir(j->dir);
    json_decref(j->create);
    pthread_mutex_destroy(&j->mu);
    free(j);
    return -1;
}

static void *kill_main(void *ud)
{
    container_call(ud, "/kill", "POST");
    free(ud);
    return NULL;
}

int wkd_alive(const struct worker *w)
{
    return jobs && jobs[w->slot] != NULL;
}

void wkd_kill(struct worker *w)
{
    struct dk_job *j = jobs ? jobs[w->slot] : NULL;
    if (!j)
        return;
    pthread_mutex_lock(&j->mu);
    j->kill_asked = 1;
    char *id = j->id[0] ? xstrdup(j->id) : NULL;
    pthread_mutex_unlock(&j->mu);
    pthread_t t;
    if (id && pthread_create(&t, NULL, kill_main, id) == 0)
        pthread_detach(t);
    else
        free(id);
}
