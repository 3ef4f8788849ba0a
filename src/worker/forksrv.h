/* forksrv — the prototype's fork server (CODEMCP_WORKER_ROLE=prototype).
 *
 * The prototype is a codemcp-worker that built its sandbox (sandbox.h, prototype mode),
 * initialised CPython and imported the runtime, and then serves the gateway on fd 3 (wire
 * format: src/common/protowire.h): PW_SDK loads the current SDK into this interpreter, PW_FORK
 * forks a session's worker into a sandbox of its own (sbx_fork_session). Everything the
 * children share is frozen first (gc.freeze), so the collector never writes to those
 * pages and they stay shared copy-on-write. What only some programs need (search's tables,
 * the snapshot's index) is built once the gateway has asked nothing for FSV_IDLE_MS after
 * `ready` or an SDK load (fsv_ops.idle), off the path to the first result; sessions forked
 * before that build it themselves on first use.
 * Must not: start a thread (a fork copies only the calling one), run agent code, or keep a
 * child's token after the fork. Main thread, GIL held. */
#ifndef CODEMCP_FORKSRV_H
#define CODEMCP_FORKSRV_H

#include "protowire.h"
#include <stddef.h>

struct sbx_opts;

struct fsv_ops {
    /* Handles text (JSON-RPC requests, one per line) in this interpreter: 0, or -1. */
    int (*load)(const char *text, size_t len);
    /* Makes what exists now permanent for the collector (gc.freeze). */
    void (*freeze)(void);
    /* What can wait until the prototype is idle; freeze follows. */
    void (*idle)(void);
};

/* What a forked child is (filled only when fsv_serve returns 1). */
struct fsv_child {
    int slot;
    char token[PW_TOKEN_MAX]; /* caller wipes */
};

/* Serves fd. Returns 1 in a forked worker (fds 0-3 placed, nothing else open, Python's
 * after-fork hooks run), 0 when the gateway closed the channel, -1 on a socket error. */
int fsv_serve(int fd, const struct sbx_opts *o, int sandboxed, const struct fsv_ops *ops,
              struct fsv_child *child);

#endif
