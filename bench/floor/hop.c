/* floor-hop — what one one-way hop between two processes costs on this machine.
 *
 * Why it exists: the floor benchmark (bench/floor.mjs) explains its numbers in hops, a
 * process blocked in read(2) woken by another's write(2). This measures that unit alone:
 * a parent and a child play ping-pong with one byte, blocking both ways, and the hop is half
 * of the round trip. Configurations, interleaved in blocks so a slow phase of the machine
 * hits all of them: pipe or AF_UNIX socketpair, times scheduler placement (any CPU, both
 * pinned to the same CPU, pinned to different CPUs; the pinned ones need 2 CPUs).
 *
 *   floor-hop [round_trips_per_config=20000]
 *
 * Prints one JSON object per configuration: {"transport","cpus","n","p10_us","p50_us",
 * "p90_us"} — one-way hop in µs (round trip / 2). */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 500

enum placement { ANY, SAME, CROSS, N_PLACEMENTS };
static const char *placement_name[] = {"any", "same", "cross"};

struct config {
    int socket;
    enum placement where;
    int to_child, from_child; /* parent's ends */
    pid_t pid;
    double *rtt_ns;
    size_t n;
};

static int pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (cpu < 0) {
        for (int i = 0; i < CPU_SETSIZE; i++)
            CPU_SET(i, &set);
    } else {
        CPU_SET(cpu, &set);
    }
    return sched_setaffinity(0, sizeof(set), &set);
}

static int echo_loop(int in, int out)
{
    char c;
    for (;;) {
        ssize_t n = read(in, &c, 1);
        if (n == 0)
            return 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || write(out, &c, 1) != 1)
            return 1;
    }
}

static int start(struct config *c, size_t total)
{
    int down[2], up[2];
    if (c->socket) {
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, down) < 0)
            return -1;
        up[0] = down[0], up[1] = down[1];
    } else if (pipe(down) < 0 || pipe(up) < 0) {
        return -1;
    }
    c->pid = fork();
    if (c->pid < 0)
        return -1;
    if (c->pid == 0) {
        if (c->where != ANY)
            pin(c->where == SAME ? 0 : 1);
        if (c->socket) {
            close(down[0]);
            _exit(echo_loop(down[1], down[1]));
        }
        close(down[1]);
        close(up[0]);
        _exit(echo_loop(down[0], up[1]));
    }
    if (c->socket) {
        close(down[1]);
        c->to_child = c->from_child = down[0];
    } else {
        close(down[0]);
        close(up[1]);
        c->to_child = down[1];
        c->from_child = up[0];
    }
    c->rtt_ns = calloc(total, sizeof(double));
    return c->rtt_ns ? 0 : -1;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int block(struct config *c, size_t count)
{
    pin(c->where == ANY ? -1 : 0);
    char b = 'x';
    for (size_t i = 0; i < count; i++) {
        double t0 = now_ns();
        if (write(c->to_child, &b, 1) != 1 || read(c->from_child, &b, 1) != 1)
            return -1;
        c->rtt_ns[c->n++] = now_ns() - t0;
    }
    return 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    size_t total = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000;
    int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    struct config cfg[2 * N_PLACEMENTS];
    size_t n_cfg = 0;
    int status = 1;
    total = total < BLOCK ? BLOCK : total / BLOCK * BLOCK;
    for (int s = 0; s < 2; s++)
        for (int w = 0; w < N_PLACEMENTS; w++)
            if (w == ANY || cpus >= 2)
                cfg[n_cfg++] = (struct config){
                    .socket = s, .where = w, .to_child = -1, .from_child = -1, .pid = -1};
    for (size_t i = 0; i < n_cfg; i++) {
        if (start(&cfg[i], total) < 0) {
            perror("floor-hop: start");
            goto cleanup;
        }
    }
    for (size_t done = 0; done < total; done += BLOCK) {
        for (size_t i = 0; i < n_cfg; i++) {
            if (block(&cfg[i], BLOCK) < 0) {
                perror("floor-hop: ping-pong");
                goto cleanup;
            }
        }
    }
    for (size_t i = 0; i < n_cfg; i++) {
        struct config *c = &cfg[i];
        qsort(c->rtt_ns, c->n, sizeof(double), cmp);
        double p10 = c->rtt_ns[c->n / 10], p50 = c->rtt_ns[c->n / 2],
               p90 = c->rtt_ns[c->n * 9 / 10];
        printf("{\"transport\":\"%s\",\"cpus\":\"%s\",\"n\":%zu,\"p10_us\":%.2f,"
               "\"p50_us\":%.2f,\"p90_us\":%.2f}\n",
               c->socket ? "socketpair" : "pipe", placement_name[c->where], c->n, p10 / 2e3,
               p50 / 2e3, p90 / 2e3);
    }
    status = 0;
cleanup:
    /* Close every end first: a child forked later holds copies of earlier children's
     * pipes, so each one sees end of file only once the parent has dropped them all. */
    for (size_t i = 0; i < n_cfg; i++) {
        if (cfg[i].to_child >= 0)
            close(cfg[i].to_child);
        if (cfg[i].from_child >= 0 && cfg[i].from_child != cfg[i].to_child)
            close(cfg[i].from_child);
    }
    for (size_t i = 0; i < n_cfg; i++) {
        if (cfg[i].pid > 0)
            waitpid(cfg[i].pid, NULL, 0);
        free(cfg[i].rtt_ns);
    }
    return status;
}
