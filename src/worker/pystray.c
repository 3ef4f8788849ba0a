/* pystray — see pystray.h. Never calls Python; may wait up to 0.5 s for killed processes. */
#include "pystray.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int sandboxed;
static char last[32];
static ssize_t last_len = -1; /* -1: unknown, scan */

void pys_init(void)
{
    const char *iso = getenv("CODEMCP_ISOLATION");
    sandboxed = iso && strcmp(iso, "sandbox") == 0 && getpid() == 2;
}

static ssize_t read_last_pid(char *out, size_t cap)
{
    int fd = open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n;
    do
        n = read(fd, out, cap);
    while (n < 0 && errno == EINTR);
    close(fd);
    return n;
}

/* Processes of the namespace other than PID 1 and this one? (one readdir of /proc) */
static int others(void)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    long me = (long)getpid();
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        const char *s = e->d_name;
        if (!isdigit((unsigned char)*s))
            continue;
        char *end;
        long pid = strtol(s, &end, 10);
        if (*end == '\0' && pid != 1 && pid != me)
            found = 1;
    }
    closedir(d);
    return found;
}

static void end_all(void)
{
    if (!others())
        return;
    kill(-1, SIGKILL);
    int64_t deadline = now_ms() + 500;
    while (now_ms() < deadline) {
        while (waitpid(-1, NULL, WNOHANG) > 0) /* our own children; orphans go to PID 1 */
            ;
        if (!others())
            return;
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void pys_end_strays(int64_t started_ms)
{
    if (!sandboxed)
        return;
    char now[32];
    ssize_t n = read_last_pid(now, sizeof(now));
    if (n >= 0 && n == last_len && memcmp(now, last, (size_t)n) == 0 &&
        now_ms() - started_ms < PYS_TRUST_MS)
        return;
    end_all();
    last_len = read_last_pid(last, sizeof(last));
}
