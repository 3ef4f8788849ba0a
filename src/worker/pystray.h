/* pystray — the sandbox's end-of-run stray-process check, in C so that agent code cannot
 * replace it (it was worker_main.end_strays). In the sandbox the worker is PID 2 of its own
 * PID namespace: after a run, every other process of the namespace but PID 1 is killed
 * (kill(-1)) and reaped, so nothing a run started outlives it. The /proc scan is skipped when
 * the namespace's ns_last_pid has not moved since the last check (no process or thread was
 * created) and the request took less than PYS_TRUST_MS (a PID wrap-around cannot hide one).
 * The last value seen lives here only. Outside the sandbox it does nothing. */
#ifndef CODEMCP_PYSTRAY_H
#define CODEMCP_PYSTRAY_H

#include <stdint.h>

#define PYS_TRUST_MS 5000

/* Decides once whether this process is the sandbox's worker (CODEMCP_ISOLATION=sandbox and
 * PID 2). Call before any agent code runs. */
void pys_init(void);
/* After a request that began at started_ms (now_ms() clock). Never calls Python; call it
 * without the GIL. */
void pys_end_strays(int64_t started_ms);

#endif
