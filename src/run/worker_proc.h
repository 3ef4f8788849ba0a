/* worker_proc — starting and ending codemcp-worker processes, for workers.c (per-session
 * workers) and prototype.c (the prototype they are forked from).
 *
 * Owns: where the binary is, the scrubbed environment every worker process gets (nothing
 * of the gateway's secrets or upstream credentials), the exec of a worker, SIGKILL of a
 * worker's whole sandbox or process group, and finding a process by the pid it has inside
 * a nested PID namespace. Knows nothing of slots, sessions or runs. Loop thread only. */
#ifndef CODEMCP_WORKER_PROC_H
#define CODEMCP_WORKER_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Finds codemcp-worker (over: CODEMCP_WORKER_BIN, else next to codemcp, libexec). 1 found,
 * 0 not. */
int wkp_find_bin(const char *over);
const char *wkp_bin(void);

/* The environment of a worker process: the pass-list of the gateway's variables, the
 * control frame cap (ctl_frame_env) and `extra` ("K=V" strings, NULL-terminated; copied).
 * NULL-terminated; wkp_env_free() it. */
char **wkp_env(char *const *extra);
void wkp_env_free(char **env);

/* Execs codemcp-worker with env and keep_fd (> 2) as its fd 3, in a process group of its
 * own. fds[1], fds[2]: its stdout and stderr pipes. The pid, or -1 with err set. */
pid_t wkp_spawn(char **env, int keep_fd, int fds[3], char *err, size_t errlen);
/* Moves every thread of pid and of its descendants from SCHED_IDLE to SCHED_OTHER. 0, or -1 with
 * errno set (EPERM: we may not). */
int wkp_foreground_tree(pid_t pid);

enum wkp_kind {
    WKP_EXEC_HOST,    /* exec'd, host isolation: its process group */
    WKP_EXEC_SANDBOX, /* exec'd, sandboxed: pid is the sandbox's waiter (sandbox.h) */
    WKP_FORK_HOST,    /* forked by the prototype, host isolation: its process group */
    WKP_FORK_SANDBOX, /* forked by the prototype, sandboxed: pid is the session's PID 1 */
};
/* SIGKILL for everything the worker is made of (what its agent code started too). */
void wkp_kill(pid_t pid, enum wkp_kind kind);

/* The pid (as the gateway sees it) of the child of `parent` whose pid in the PID namespace
 * at nesting level `level` (0: the gateway's; see NSpid in proc(5)) is `inner`; -1. Reads
 * /proc: O(children). */
pid_t wkp_child_by_nspid(pid_t parent, int level, pid_t inner);
/* The depth of pid's PID namespace below the gateway's (0: the same), or -1. */
int wkp_ns_level(pid_t pid);

/* What a sandboxed worker's process holds, read from outside (/proc), for the gateway's own
 * check that nothing of a run outlives it (the worker's end-of-run check, pystray.h, is agent
 * code's to defeat) and for its CPU time limit. Descriptors are kept open, so a check costs
 * an fstat and a pread (a few microseconds), not path lookups. */
#define WKP_WATCH_THREADS 8
struct wkp_exit;
struct wkp_watch {
    pid_t pid;       /* the worker process, as the gateway sees it; 0: not watched */
    int task_fd;     /* /proc/<pid>/task: its link count is 2 + the threads */
    int children_fd; /* /proc/<pid>/task/<pid>/children */
    int n_base;      /* its threads when watching began (no agent code had run yet) */
    int base_fd[WKP_WATCH_THREADS]; /* their /proc/.../task/<tid>/comm: unreadable once the
                                       thread is gone, whatever reuses its number (-1 where
                                       exits[] watches the thread instead) */
    int main_fd;                    /* the main thread's among them */
    struct wkp_exit *exits[WKP_WATCH_THREADS]; /* where the kernel tells when a thread of
                                                  them exits (pidfd, Linux 6.9+): those need
                                                  no read before each run */
    unsigned gen;                              /* which watch an exit belongs to */
    int lost;                                  /* one of them has exited */
};
/* Starts watching the worker process of the sandbox whose outermost process is pid (the
 * session's PID 1 when forked, the waiter when exec'd), taking its threads now as the ones it
 * may keep. Call before any run. 0, or -1 (not found). */
int wkp_watch_open(struct wkp_watch *wt, pid_t pid, int forked);
void wkp_watch_close(struct wkp_watch *wt);
/* Threads it has beyond the ones it was watched with (live ones: a thread just joined may
 * still be on its way out), or WKP_LOST when one of those is gone (a run ended one of the
 * worker's own threads, so a thread of its own could hide in the count: treated as a
 * leftover), or -1 when the process is gone. */
#define WKP_LOST (-2)
int wkp_extra_threads(const struct wkp_watch *wt);
/* 1 while its main thread lives and is not exiting (a zombie, a process being killed: 0). */
int wkp_alive(const struct wkp_watch *wt);
/* 1 when its main thread has a child: every process a run starts descends from the worker, and
 * orphans come back to it as the sandbox's child subreaper (pystray.h). */
int wkp_has_children(const struct wkp_watch *wt);
/* CPU time in ms of process root and every process below it, read from /proc (user + system
 * time of each, and of the children each has waited for): what no process in the tree can
 * under-report. -1 when root is gone; WKP_TREE_TOO_BIG past WKP_TREE_MAX processes (the
 * caller treats the tree as over any budget). O(processes + threads) file reads. */
#define WKP_TREE_MAX     1024
#define WKP_TREE_TOO_BIG (-3)
int64_t wkp_tree_cpu_ms(pid_t root);
/* The CPU time it has used (all its threads), in ms, or -1. */
int64_t wkp_cpu_ms(const struct wkp_watch *wt);

#endif
