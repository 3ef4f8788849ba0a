/* fdcap — output written straight to file descriptors 1 and 2 belongs to the run that wrote
 * it, like print() output.
 *
 * print() goes through sys.stdout, which the runtime swaps per run; os.write(1, ...),
 * subprocesses, C extensions and ctypes write to the descriptors themselves. fdcap_start()
 * puts a pipe on each of fds 1 and 2 (the originals, the gateway's log pipe, move to a
 * private descriptor that log.c and the runtime's own log lines use from then on) and a
 * thread drains both pipes: into the current run's buffers between fdcap_begin() and
 * fdcap_end(), each capped at the run's output limit with the rest counted, and to the log
 * otherwise. fdcap_end() drains what is still in the pipes before it hands the buffers
 * over, so everything written before the run ended is the run's. Output of a subprocess
 * or thread that outlives its run goes to whichever run is current when the drain thread
 * reads it, or to the next run if it is still in the pipe when that run starts. */
#ifndef CODEMCP_WORKER_FDCAP_H
#define CODEMCP_WORKER_FDCAP_H

#include <stddef.h>

/* 0, or -1 (logged) with fds 1 and 2 left as they were. Call before Python starts. */
int fdcap_start(void);
/* The descriptor log lines go to (the original fd 2), or 2 before fdcap_start(). */
int fdcap_log_fd(void);
/* A run starts: capture up to `limit` bytes per stream. */
void fdcap_begin(size_t limit);
/* The run ended: hands over what it wrote (malloc'd, caller frees; NULL when nothing) and
 * how many bytes beyond the limit were dropped; capture stops. */
void fdcap_end(char **out, size_t *out_len, size_t *out_cut, char **err, size_t *err_len,
               size_t *err_cut);
/* Between runs: what fds 1 and 2 hold right now goes to the log at once, not whenever the
 * drain thread gets to it (by then a next run's capture may have started and taken it).
 * Everything this thread wrote before the call is in the pipe, so it is covered. */
void fdcap_settle(void);

#endif
