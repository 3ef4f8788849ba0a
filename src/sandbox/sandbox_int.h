/* sandbox_int — what sandbox.c shares with sandbox_session.c (the per-session sandbox a
 * prototype forks into). Not for other modules. */
#ifndef CODEMCP_SANDBOX_INT_H
#define CODEMCP_SANDBOX_INT_H

#include "sandbox.h"

#include <string.h>

#define SBX_UID 1000 /* the worker's uid and gid inside */
/* Paths below /tmp (CODEMCP_SANDBOX_RO, then _RW, then the dev path) a session keeps visible
 * over its own /tmp: sandbox_session.c holds a copy of each mount, sbx_check_paths warns past
 * it. */
#define SBX_TMP_KEEP_MAX 16
/* Whether path[0..len) names something below /tmp (one the session's own /tmp would hide). */
static inline int sbx__below_tmp(const char *path, size_t len)
{
    return len > 5 && strncmp(path, "/tmp/", 5) == 0;
}

/* Writes "codemcp-worker: sandbox set-up failed: <step> <path>: <errno>" and exits. */
__attribute__((noreturn)) void sbx__die_step(const char *step, const char *path);
/* The seccomp profile a container needs, as the messages name it: contrib/docker/seccomp.json
 * in the source, installed by the Debian package (and so in the image) in /usr/share/codemcp. */
#define SBX_DOCKER_SECCOMP                                                                         \
    "seccomp.json (contrib/docker/seccomp.json in codemcp's source; in the image: `docker run "    \
    "--rm --entrypoint cat codemcp /usr/share/codemcp/seccomp.json > seccomp.json`)"
/* "mount WHERE" failed: like sbx__die_step, with what to pass when a container's masked /proc
 * is the cause. */
__attribute__((noreturn)) void sbx__die_mount_proc(const char *where);
/* PID 1's loop (see sandbox.c); never returns. */
__attribute__((noreturn)) void sbx__init_main(pid_t worker, int status_fd, int linger);
/* Drops the bounding set and every capability but those in keep (a mask of CAP_* bits), sets
 * no_new_privs; change_uid: become the sandbox user first (1000). */
void sbx__drop_privileges(int outer_root, int change_uid, unsigned long keep);
/* nproc (unless o->prototype), nofile, fsize, core, msgqueue. */
void sbx__apply_limits(const struct sbx_opts *o);

/* sandbox_subid.c: a session's own outer ids. Before the clone: whether the gateway user's
 * subordinate range is used (1) or not (0; sbx_uid_mode says why). */
int sbx__subid_prepare(const struct sbx_opts *o);
int sbx__subid_active(void);
/* A root waiter's map line for the sessions' ids ("BASE_INSIDE START COUNT\n"), or "". */
void sbx__subid_root_extent(char *out, size_t len);
/* The waiter: the sandbox's maps through newuidmap/newgidmap. 0, or -1 with err. */
int sbx__subid_map_sandbox(pid_t child, uid_t uid, gid_t gid, char *err, size_t errlen);
/* What the prototype keeps to write its sessions' maps (0 when not active). */
unsigned long sbx__subid_keep_caps(void);
/* A root gateway's prototype, once it kept its capabilities: refuses itself id 0 (a filter). */
void sbx__subid_guard(void);
/* The prototype: maps a session's 1000 to its own id, the range's start + ids. 0, or -1 (errno). */
int sbx__subid_map_session(pid_t child, int ids);
/* The body of sbx_enter and sbx_probe (sandbox.c); probe: the child stops after the mounts
 * and exits 0. */
int sbx__enter(const struct sbx_opts *o, int probe, char *err, size_t errlen);

#endif
