/* pysigwake — the self-pipe that lets any signal wake the main thread's blocked waits.
 *
 * Python's C signal handler writes the signal number as one byte to its wakeup fd, which
 * is async-signal-safe. This file owns a non-blocking pipe, installs its write end as that
 * wakeup fd once per process (signal.set_wakeup_fd, on the main thread, before the first
 * wait), gives its read end to wsclient (wsc_set_signal_fd), and drains it after a wait that
 * ended on it. A byte written before a wait blocks stays in the pipe, so a signal caught
 * between the last PyErr_CheckSignals() and the poll is not lost. Agent code may install
 * its own wakeup fd or remove ours (asyncio does both): it is not put back, and other
 * signals then end a wait by EINTR only (the poll racing them is lost until it ends). The run
 * interrupt does not depend on this pipe (wsclient wakes the main thread itself when it
 * sends SIGUSR1). Never runs handlers, never blocks. Main thread, GIL held. */
#ifndef CODEMCP_PYSIGWAKE_H
#define CODEMCP_PYSIGWAKE_H

/* Before a main-thread wait: makes and installs the pipe if this process has none yet
 * (after a fork: each process its own). Returns 1 when it was installed just now (a signal
 * caught before left no byte: the caller runs PyErr_CheckSignals() before it blocks), else
 * 0. Failures are logged; waits then see signals by EINTR only. */
int psw_begin(void);
/* A wait ended with WSC_SIGNAL: empties the pipe. A pipe that is gone or replaced (agent
 * code closed or dup2'd over its read end) is dropped and made anew by the next psw_begin. */
void psw_drain(void);

#endif
