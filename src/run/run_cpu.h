/* run_cpu — the CPU seconds a principal's runs use, charged to its "cpu_s" budgets (policy.h
 * budgets_cpu_spend) while they run.
 *
 * Measured by the gateway from outside: the CPU time of the run's worker and of every process
 * below it (workers.h wk_cpu_ms: threads and child processes included, whatever the worker
 * reports), read when the run starts, at its end, and in between every second or as soon as
 * the budget could run out, whichever is sooner. When a budget is spent during the run, the
 * run is stopped through `over`. A principal without a "cpu_s" budget costs nothing here (no
 * /proc read). Loop thread only. */
#ifndef CODEMCP_RUN_CPU_H
#define CODEMCP_RUN_CPU_H

/* Run run_id (< 32 bytes) of principal (< 64 bytes) started on worker slot: measured from now
 * when the principal has a CPU budget. over(run_id, why) is called (once) when a budget is
 * spent while it runs: the caller stops the run with why. */
void rcpu_start(const char *run_id, const char *principal, int slot,
                void (*over)(const char *run_id, const char *why));
/* The run ended: its last CPU time is charged, and it is no longer measured. */
void rcpu_end(const char *run_id);
void rcpu_free_all(void);

#endif
