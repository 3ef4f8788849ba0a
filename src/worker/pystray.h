/* pystray — the sandbox's end-of-run stray-process check, in C so that agent code cannot
 * replace it (it was worker_main.end_strays). In the sandbox the worker is PID 2 of its own
 * PID namespace, and every other process there but PID 1 descends from it: PID 1 forks only
 * the worker, the worker is a child subreaper (orphans of a run are reparented to it), and
 * its seccomp filter refuses clone(CLONE_PARENT) (a sibling would be PID 1's child), turning
 * the subreaper flag off, and stacking a filter of agent code's own (seal.c). So "no process
 * outlived the request" is "the worker has no child": one waitid(2), no /proc. When it has one,
 * every process of the namespace but PID 1 is killed (kill(-1)) and reaped. In a docker
 * isolation container the worker is PID 1 itself, under the same filter, and the same holds.
 * Elsewhere it does nothing. It is a courtesy, not the wall: agent code owns this process, so the
 * gateway looks for leftover threads and processes itself, from /proc, at the answer and
 * before the next run (workers.c), and ends the worker when it finds any; this check keeps a
 * session whose run merely left children behind from losing its worker. (In a container the
 * gateway has no /proc view: a container serves one session and ends when another takes its
 * slot, so what this check misses stays within the session.) */
#ifndef CODEMCP_PYSTRAY_H
#define CODEMCP_PYSTRAY_H

/* Decides once whether this process is the sandbox's worker (CODEMCP_ISOLATION=sandbox and
 * PID 2) or a container's (CODEMCP_ISOLATION=container and PID 1, docker isolation: every
 * process of its namespace descends from it) and makes it a child subreaper. Call before any
 * agent code runs. */
void pys_init(void);
/* After every request, before its reply goes out. Never calls Python; call it without the
 * GIL. May wait up to 0.5 s for killed processes to be reaped. */
void pys_end_strays(void);
/* 1 when pys_end_strays() has something to do now: in the sandbox, the worker has a child (one
 * waitid(2) with WNOHANG: it never blocks, so it is called with the GIL held) or no subreaper
 * flag. 0 otherwise: the caller skips releasing the GIL for pys_end_strays(). */
int pys_strays(void);

#endif
