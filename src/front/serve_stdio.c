/* serve_stdio — see serve_stdio.h. Loop thread only. */
#include "serve_stdio.h"
#include "jsonrpc.h"
#include "log.h"
#include "loop.h"
#include "mcp_server.h"
#include "metrics.h"
#include "util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_REQUEST_BYTES ((size_t)64 << 20)

static struct lp_io *in_io, *out_io;
static struct mcp_session *session;
static struct rpc_lines lines = {.max_line = MAX_REQUEST_BYTES};
static void (*eof_cb)(void);

static void send_line(void *tud, const char *text, size_t len, json_t *related)
{
    (void)tud;
    (void)related;
    if (!out_io)
        return;
    mx_client_bytes(MX_TRANSPORT_STDIO, 0, len + 1);
    lp_io_write_line(out_io, text, len);
}

static void on_line(void *ud, const char *line, size_t len)
{
    (void)ud;
    if (!session)
        return;
    if (!line) {
        json_t *e =
            rpc_error(NULL, RPC_INVALID_REQUEST, "message larger than 64 MiB dropped", NULL);
        char *t = rpc_dump(e);
        send_line(NULL, t, strlen(t), NULL);
        free(t);
        json_decref(e);
        return;
    }
    mcp_session_receive(session, line, len);
}

static void on_stdin(void *ud, const char *data, size_t len)
{
    (void)ud;
    mx_client_bytes(MX_TRANSPORT_STDIO, len, 0);
    rpc_lines_feed(&lines, data, len, on_line, NULL);
}

static void on_stdin_close(void *ud)
{
    (void)ud;
    in_io = NULL;
    log_info("stdio", "stdin closed: shutting down");
    /* A final line without '\n' still counts. */
    rpc_lines_feed(&lines, "\n", 1, on_line, NULL);
    if (eof_cb)
        eof_cb();
}

static void on_stdout_close(void *ud)
{
    (void)ud;
    out_io = NULL;
}

static const struct lp_io_ops in_ops = {.on_read = on_stdin, .on_close = on_stdin_close};
static const struct lp_io_ops out_ops = {.on_close = on_stdout_close};

int stdio_serve(void (*on_eof)(void))
{
    eof_cb = on_eof;
    int in_fd = fcntl(0, F_DUPFD_CLOEXEC, 10);
    int out_fd = fcntl(1, F_DUPFD_CLOEXEC, 10);
    if (in_fd < 0 || out_fd < 0) {
        log_error("stdio", "cannot duplicate stdin/stdout");
        return -1;
    }
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        if (devnull > 2)
            close(devnull);
    }
    session = mcp_session_new(send_line, NULL, "stdio");
    out_io = lp_io_watch(out_fd, 0, &out_ops, NULL);
    in_io = lp_io_watch(in_fd, 1, &in_ops, NULL);
    return in_io && out_io ? 0 : -1;
}

unsigned long stdio_pending_output(void)
{
    return out_io ? lp_io_pending(out_io) : 0;
}

void stdio_close(void)
{
    if (session) {
        mcp_session_close(session);
        session = NULL;
    }
    rpc_lines_free(&lines);
}
