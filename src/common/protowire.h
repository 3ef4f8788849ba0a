/* protowire — the gateway ⇄ prototype wire format (src/run/prototype.c ⇄ src/worker/forksrv.c).
 *
 * One SOCK_SEQPACKET socketpair per prototype, inherited as the prototype's fd 3. The
 * gateway sends fixed-size struct pw_msg datagrams with descriptors attached (SCM_RIGHTS);
 * the prototype answers with short text datagrams, in request order:
 *   "ready <pid>"                      once, when it can fork (pid in its own namespace)
 *   "forked <slot> <pid>"              PW_FORK done: pid of the session's PID 1 (prototype's view)
 *   "fork-failed <slot> <reason>"      PW_FORK failed (the descriptors were closed)
 *   "sdk <version> <shapes> ok|error"  PW_SDK handled
 * Nothing else travels on it; a malformed datagram is dropped. */
#ifndef CODEMCP_PROTOWIRE_H
#define CODEMCP_PROTOWIRE_H

#include <stdint.h>

enum {
    PW_FORK = 1, /* fds: control socket, stdout pipe, stderr pipe, status pipe (write ends) */
    PW_SDK = 2,  /* fds: a memfd holding JSON-RPC requests, one per line (set_shapes, load_sdk) */
};

#define PW_TOKEN_MAX 72

struct pw_msg {
    uint32_t type;
    int32_t slot;             /* PW_FORK: the worker slot (its _codemcp.worker_id()) */
    int32_t ids;              /* PW_FORK: its place in the id range (sbx_fork_session) */
    int32_t version;          /* PW_SDK: catalog source version */
    int32_t shapes;           /* PW_SDK: shapes version */
    char token[PW_TOKEN_MAX]; /* PW_FORK: the worker's control token, NUL-terminated */
};

#endif
