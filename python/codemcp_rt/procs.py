"""Processes a run leaves behind: found and killed when the run times out or is cancelled.

The worker is a child subreaper (PR_SET_CHILD_SUBREAPER, src/worker/main.c), so whatever a
run starts stays its descendant even after double forks or ``setsid``; the gateway still
kills the worker's whole process group when it kills the worker itself.
"""

from __future__ import annotations

import os
import signal
import time


def descendants(pid: int | None = None) -> list[int]:
    """Every live descendant of ``pid`` (default: this process), children first."""
    root = os.getpid() if pid is None else pid
    out: list[int] = []
    todo = [root]
    while todo and len(out) < 10000:
        p = todo.pop()
        kids: list[int] = []
        try:
            for task in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, task)) as f:
                    kids += [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            continue
        for k in kids:
            if k not in out:
                out.append(k)
                todo.append(k)
    return out


def kill_descendants(grace_s: float = 1.0) -> int:
    """SIGKILLs every descendant of this worker and reaps them (waiting at most grace_s).
    Returns how many were signalled. Never raises."""
    try:
        pids = descendants()
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        deadline = time.monotonic() + grace_s
        pending = set(pids)
        while pending and time.monotonic() < deadline:
            for p in list(pending):
                try:
                    done, _ = os.waitpid(p, os.WNOHANG)
                except ChildProcessError:  # not our child (a grandchild's parent reaps it)
                    done = p
                except OSError:
                    done = p
                if done:
                    pending.discard(p)
            if pending:
                time.sleep(0.01)
        return len(pids)
    except Exception:  # cleanup must never fail a run's report
        return 0
