/* worker_proc — see worker_proc.h. */
#include "worker_proc.h"
#include "loop.h"
#include "sandbox.h"
#include "util.h"

#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char worker_bin[PATH_MAX + 128];

static int try_bin(const char *path)
{
    if (access(path, X_OK) == 0) {
        snprintf(worker_bin, sizeof(worker_bin), "%s", path);
        return 1;
    }
    return 0;
}

int wkp_find_bin(void)
{
    const char *env = getenv("CODEMCP_WORKER_BIN");
    if (env && *env)
        return try_bin(env);
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *dir = dirname(self);
        char p[PATH_MAX + 64];
        snprintf(p, sizeof(p), "%s/worker/codemcp-worker", dir); /* build tree */
        if (try_bin(p))
            return 1;
        snprintf(p, sizeof(p), "%s/codemcp-worker", dir);
        if (try_bin(p))
            return 1;
        snprintf(p, sizeof(p), "%s/../libexec/codemcp/codemcp-worker", dir);
        if (try_bin(p))
            return 1;
    }
    return try_bin(CODEMCP_LIBEXECDIR "/codemcp-worker");
}

const char *wkp_bin(void)
{
    return worker_bin;
}

char **wkp_env(char *const *extra)
{
    /* A scrubbed environment: nothing of the gateway's secrets or upstream credentials. */
    static const char *const pass[] = {"PATH",
                                       "HOME",
                                       "LANG",
                                       "LC_ALL",
                                       "LC_CTYPE",
                                       "TZ",
                                       "TMPDIR",
                                       "CODEMCP_LOG",
                                       "CODEMCP_PYTHONPATH_DEV",
                                       "ASAN_OPTIONS",
                                       "UBSAN_OPTIONS",
                                       "LSAN_OPTIONS",
                                       "CODEMCP_SANDBOX_NET",
                                       "CODEMCP_SANDBOX_SUBPROCESS",
                                       "CODEMCP_SANDBOX_RO",
                                       "CODEMCP_SANDBOX_RW",
                                       "CODEMCP_SANDBOX_TMP_MB",
                                       "CODEMCP_SANDBOX_NPROC",
                                       "CODEMCP_SANDBOX_NOFILE",
                                       "CODEMCP_ENCODER_MODEL",
                                       "CODEMCP_SEMANTIC_SEARCH",
                                       NULL};
    size_t n = 0, k = 0;
    for (char *const *e = extra; e && *e; e++)
        k++;
    char **env = xcalloc(sizeof(pass) / sizeof(pass[0]) + k + 1, sizeof(char *));
    for (int i = 0; pass[i]; i++) {
        const char *v = getenv(pass[i]);
        if (!v)
            continue;
        size_t len = strlen(pass[i]) + strlen(v) + 2;
        env[n] = xmalloc(len);
        snprintf(env[n++], len, "%s=%s", pass[i], v);
    }
    for (char *const *e = extra; e && *e; e++)
        env[n++] = xstrdup(*e);
    env[n] = NULL;
    return env;
}

void wkp_env_free(char **env)
{
    for (char **e = env; e && *e; e++) {
        explicit_bzero(*e, strlen(*e)); /* a token may be among them */
        free(*e);
    }
    free(env);
}

pid_t wkp_spawn(char **env, int keep_fd, int fds[3], char *err, size_t errlen)
{
    char *argv[] = {worker_bin, NULL};
    struct lp_spawn_opts o = {.argv = argv,
                              .env = env,
                              .clear_env = 1,
                              .want_stdout = 1,
                              .want_stderr = 1,
                              .keep_fd = keep_fd};
    return lp_spawn(&o, fds, err, errlen);
}

void wkp_kill(pid_t pid, enum wkp_kind kind)
{
    if (pid <= 0)
        return;
    switch (kind) {
    case WKP_EXEC_SANDBOX:
        sbx_kill(pid);
        break;
    case WKP_FORK_SANDBOX: /* PID 1 of its namespace: everything inside dies with it */
        kill(pid, SIGKILL);
        break;
    case WKP_EXEC_HOST:
    case WKP_FORK_HOST: /* its whole process group: what the agent's code started dies too */
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        break;
    }
}

/* The NSpid fields of pid (up to max), their count, or -1. */
static int nspids(pid_t pid, long *out, int max)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    int n = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "NSpid:", 6) == 0) {
            char *p = line + 6, *end;
            n = 0;
            for (long v = strtol(p, &end, 10); end != p && n < max; v = strtol(p, &end, 10)) {
                out[n++] = v;
                p = end;
            }
            break;
        }
    fclose(f);
    return n;
}

int wkp_ns_level(pid_t pid)
{
    long f[16];
    int n = nspids(pid, f, 16);
    return n > 0 ? n - 1 : -1;
}

pid_t wkp_child_by_nspid(pid_t parent, int level, pid_t inner)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)parent, (int)parent);
    char *t = read_file(path, NULL);
    pid_t found = -1;
    if (!t)
        return -1;
    /* Children are listed oldest first: the one asked about is usually the last. */
    for (char *p = t + strlen(t); found < 0 && p > t;) {
        while (p > t && (p[-1] < '0' || p[-1] > '9'))
            p--;
        char *e = p;
        while (p > t && p[-1] >= '0' && p[-1] <= '9')
            p--;
        if (e == p)
            break;
        long c = strtol(p, NULL, 10), f[16];
        int n = nspids((pid_t)c, f, 16);
        if (n > level && f[level] == inner)
            found = (pid_t)c;
    }
    free(t);
    return found;
}
