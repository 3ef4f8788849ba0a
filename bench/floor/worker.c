/* floor-worker — the relay "worker" of the topology floor (bench/floor.mjs).
 *
 * Stands in for codemcp-worker with none of its work: no Python, no JSON, no SDK; only the
 * transport is the product's (a socketpair, each message one WebSocket text frame, masked
 * from here as a client's must be). It reads `run <workload>` from the gateway on fd 3 (a
 * SOCK_STREAM socketpair end), performs the workload's get-sum calls through the gateway, one line
 * per call, and answers `done <total>` (or `fail <reason>`). Blocking I/O on one thread, so each
 * reply costs exactly one wake-up here, as in the best possible worker.
 *
 *   gateway -> worker   run one|seq50|conc50|empty
 *   worker  -> gateway  call <wid> <a> <b>
 *   gateway -> worker   <wid> <the upstream's JSON-RPC reply line, verbatim>
 *   worker  -> gateway  done <total> | fail <reason>
 *
 * Workloads match bench/execute.mjs: one = get-sum(1, 2); seq50 = get-sum(i, 1) for i < 50,
 * each reply read before the next call; conc50 = the same 50 calls all sent, then all read;
 * empty = no call, total 1 (like `result = 1`). Exits 0 when the gateway closes fd 3. */
#include "lineio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GW_FD   3
#define N_CALLS 50

static struct lines in;
static struct wsin raw;

static int send_call(int wid, int a, int b)
{
    char line[64];
    int n = snprintf(line, sizeof(line), "call %d %d %d\n", wid, a, b);
    return ws_write(GW_FD, line, (size_t)n, 1);
}

/* Blocks for the next reply; stores its call id and the sum read from the text
 * "The sum of A and B is S.". -1 on end of file or a reply that is not a sum. */
static int read_reply(int *wid, long *sum)
{
    size_t n;
    char *line;
    while (!(line = lines_next(&in, &n)))
        if (ws_fill(&in, &raw, GW_FD) <= 0)
            return -1;
    char *end;
    *wid = (int)strtol(line, &end, 10);
    if (end == line || strstr(end, "\"isError\":true"))
        return -1;
    const char *is = strstr(end, " is ");
    if (!is)
        return -1;
    *sum = strtol(is + 4, &end, 10);
    return end == is + 4 ? -1 : 0;
}

/* Sequential calls get-sum(a0 + i, b) for i < count, each reply read before the next. */
static int run_seq(int count, int a0, int b, long *total)
{
    for (int i = 0; i < count; i++) {
        int wid;
        long s;
        if (send_call(i, a0 + i, b) < 0 || read_reply(&wid, &s) < 0 || wid != i)
            return -1;
        *total += s;
    }
    return 0;
}

/* All calls sent first, then every reply read, in whatever order they come back. */
static int run_conc(long *total)
{
    char seen[N_CALLS] = {0};
    for (int i = 0; i < N_CALLS; i++)
        if (send_call(i, i, 1) < 0)
            return -1;
    for (int i = 0; i < N_CALLS; i++) {
        int wid;
        long s;
        if (read_reply(&wid, &s) < 0 || wid < 0 || wid >= N_CALLS || seen[wid])
            return -1;
        seen[wid] = 1;
        *total += s;
    }
    return 0;
}

/* 0, -1 for a bad reply, -2 for an unknown workload. */
static int run(const char *workload, long *total)
{
    *total = 0;
    if (!strcmp(workload, "one"))
        return run_seq(1, 1, 2, total);
    if (!strcmp(workload, "seq50"))
        return run_seq(N_CALLS, 0, 1, total);
    if (!strcmp(workload, "conc50"))
        return run_conc(total);
    if (!strcmp(workload, "empty")) {
        *total = 1;
        return 0;
    }
    return -2;
}

int main(void)
{
    int status = 1;
    ws_fill_polls = getenv("FLOOR_POLL_WAIT") && *getenv("FLOOR_POLL_WAIT") == '1';
    for (;;) {
        size_t n;
        char *line;
        while (!(line = lines_next(&in, &n))) {
            ssize_t r = ws_fill(&in, &raw, GW_FD);
            if (r == 0)
                status = 0;
            if (r <= 0)
                goto cleanup;
        }
        if (strncmp(line, "run ", 4) != 0) {
            fprintf(stderr, "floor-worker: unexpected line: %s\n", line);
            goto cleanup;
        }
        long total;
        char out[64];
        int rc = run(line + 4, &total);
        int len = rc == 0    ? snprintf(out, sizeof(out), "done %ld\n", total)
                  : rc == -1 ? snprintf(out, sizeof(out), "fail bad reply from the gateway\n")
                             : snprintf(out, sizeof(out), "fail unknown workload\n");
        if (ws_write(GW_FD, out, (size_t)len, 1) < 0)
            goto cleanup;
    }
cleanup:
    lines_free(&in);
    ws_free(&raw);
    return status;
}
