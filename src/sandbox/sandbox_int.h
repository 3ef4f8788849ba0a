/* sandbox_int — what sandbox.c shares with sandbox_session.c (the per-session sandbox a
 * prototype forks into). Not for other modules. */
#ifndef CODEMCP_SANDBOX_INT_H
#define CODEMCP_SANDBOX_INT_H

#include "sandbox.h"

#define SBX_UID 1000 /* the worker's uid and gid inside */

/* Writes "codemcp-worker: sandbox set-up failed: <step> <path>: <errno>" and exits. */
__attribute__((noreturn)) void sbx__die_step(const char *step, const char *path);
/* PID 1's loop (see sandbox.c); never returns. */
__attribute__((noreturn)) void sbx__init_main(pid_t worker, int status_fd, int linger);
/* Drops the bounding set and every capability, sets no_new_privs; change_uid: become the
 * sandbox user first (1000). */
void sbx__drop_privileges(int outer_root, int change_uid);
/* nproc (unless o->prototype), nofile, fsize, core, msgqueue. */
void sbx__apply_limits(const struct sbx_opts *o);

#endif
