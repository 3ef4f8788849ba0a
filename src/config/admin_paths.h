/* admin_paths — where gateways' admin sockets and instance records live, and which of them
 * belong to running gateways. Shared by the gateway (admin.c) and the admin commands.
 *
 * Directory: $XDG_RUNTIME_DIR/codemcp/ when XDG_RUNTIME_DIR is an existing absolute directory, else
 * <config dir>/codemcp/run/ (created 0700). Socket: admin-<hash of the config path>-<pid>.sock
 * there, unless CODEMCP_ADMIN_SOCKET names the path. Record: admin-<hash>-<pid>.json, always in
 * the directory (so `codemcp instances` finds gateways whose socket was moved), a JSON object
 * {pid, proc_start, label, config, transport, port, started, socket, uid}.
 * A record whose process is gone (or whose pid now belongs to another process: /proc start
 * time differs) is stale: it and its socket are removed when anyone scans. Blocking file I/O
 * only: the gateway calls it before the loop runs and at exit. */
#ifndef CODEMCP_ADMIN_PATHS_H
#define CODEMCP_ADMIN_PATHS_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

/* The directory (created 0700 when create is set). buf or NULL (errno set). */
const char *admp_dir(char *buf, size_t n, int create);
/* Socket and record paths of the gateway serving config_path (NULL: no config) as pid.
 * 0, or -1 when a path does not fit (a Unix socket path has at most 107 bytes). */
int admp_paths_for(const char *config_path, pid_t pid, char *sock, size_t sn, char *rec, size_t rn);
/* The process start time from /proc/<pid>/stat (clock ticks since boot), or -1. */
long long admp_proc_start(pid_t pid);
/* Running gateways' records (new array, oldest first); stale records and their sockets are
 * removed on the way. Never NULL. */
json_t *admp_instances(void);

#endif
