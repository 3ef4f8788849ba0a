/* admin_paths — see admin_paths.h. */
#include "admin_paths.h"
#include "config.h"
#include "settings.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int mkdir_private(const char *path)
{
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (lstat(path, &st) < 0)
        return -1;
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
        errno = EPERM;
        return -1;
    }
    if ((st.st_mode & 077) && chmod(path, 0700) < 0)
        return -1;
    return 0;
}

const char *admp_dir(char *buf, size_t n, int create)
{
    const struct settings *s = cfg__settings();
    const char *rt = s ? s->xdg_runtime_dir : NULL;
    struct stat st;
    int r;
    if (rt && rt[0] == '/' && stat(rt, &st) == 0 && S_ISDIR(st.st_mode)) { /* else unusable */
        r = snprintf(buf, n, "%s/codemcp", rt);
    } else {
        char cfgdir[4096];
        if (!cfg_config_dir(cfgdir, sizeof(cfgdir))) {
            errno = ENOENT;
            return NULL;
        }
        if (create) {
            char parent[4200];
            snprintf(parent, sizeof(parent), "%s/codemcp", cfgdir);
            if (mkdir(cfgdir, 0700) < 0 && errno != EEXIST)
                return NULL;
            if (mkdir(parent, 0700) < 0 && errno != EEXIST)
                return NULL;
        }
        r = snprintf(buf, n, "%s/codemcp/run", cfgdir);
    }
    if (r < 0 || (size_t)r >= n) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    if (create && mkdir_private(buf) < 0)
        return NULL;
    return buf;
}

int admp_paths_for(const char *config_path, pid_t pid, char *sock, size_t sn, char *rec, size_t rn)
{
    char dir[4096];
    if (!admp_dir(dir, sizeof(dir), 1))
        return -1;
    const char *named = config_path ? config_path : "(none)";
    unsigned long long h = (unsigned long long)fnv1a(named, strlen(named), 0);
    int r = snprintf(rec, rn, "%s/admin-%016llx-%d.json", dir, h, (int)pid);
    if (r < 0 || (size_t)r >= rn)
        return -1;
    const struct settings *s = cfg__settings();
    const char *over = s ? s->admin_socket : NULL;
    if (over && *over)
        r = snprintf(sock, sn, "%s", over);
    else
        r = snprintf(sock, sn, "%s/admin-%016llx-%d.sock", dir, h, (int)pid);
    struct sockaddr_un sa;
    if (r < 0 || (size_t)r >= sn || (size_t)r >= sizeof(sa.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

long long admp_proc_start(pid_t pid)
{
    char path[64], text[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = 0;
    char *p = strrchr(text, ')'); /* the command name may hold spaces and parentheses */
    if (!p)
        return -1;
    /* After ") ": field 3 (state) ... field 22 (starttime). */
    int field = 2;
    for (p++; *p && field < 22; p++)
        if (*p == ' ')
            field++;
    return field == 22 ? strtoll(p, NULL, 10) : -1;
}

/* A record is live when its pid runs and is the same process (same start time). */
static int record_live(json_t *rec)
{
    json_int_t pid = json_integer_value(json_object_get(rec, "pid"));
    if (pid <= 0)
        return 0;
    if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
        return 0;
    json_t *ps = json_object_get(rec, "proc_start");
    long long now = admp_proc_start((pid_t)pid);
    if (json_is_integer(ps) && now >= 0 && now != json_integer_value(ps))
        return 0; /* the pid was reused */
    return 1;
}

static int by_started(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t u = json_integer_value(json_object_get(x, "started_unix"));
    json_int_t v = json_integer_value(json_object_get(y, "started_unix"));
    if (u != v)
        return u < v ? -1 : 1;
    return (int)(json_integer_value(json_object_get(x, "pid")) -
                 json_integer_value(json_object_get(y, "pid")));
}

json_t *admp_instances(void)
{
    json_t *out = json_array();
    char dir[4096];
    if (!admp_dir(dir, sizeof(dir), 0))
        return out;
    DIR *d = opendir(dir);
    if (!d)
        return out;
    json_t **found = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "admin-", 6) != 0 || len < 6 || strcmp(e->d_name + len - 5, ".json"))
            continue;
        char path[4400];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        json_t *rec = json_load_file(path, 0, NULL);
        if (!json_is_object(rec) || !record_live(rec)) {
            const char *sock = json_string_value(json_object_get(rec, "socket"));
            if (sock)
                unlink(sock);
            else { /* unreadable record: remove the socket named like it */
                snprintf(path + strlen(path) - 5, 6, ".sock");
                unlink(path);
                snprintf(path + strlen(path) - 5, 6, ".json");
            }
            unlink(path);
            json_decref(rec);
            continue;
        }
        json_object_set_new(rec, "record", json_string(path));
        found = realloc(found, (n + 1) * sizeof(*found));
        found[n++] = rec;
    }
    closedir(d);
    if (n)
        qsort(found, n, sizeof(*found), by_started);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(out, found[i]);
    free(found);
    return out;
}
