"""The state of the run executing now: its id, the calls it made, the writes it did.

One run executes at a time per worker process (the gateway sends `run` requests to a
worker one at a time), so the current run is a module global shared by every thread
that agent code may start. Calls made outside any run (tests, the REPL) are sent with
run_id None and recorded nowhere.
"""

from __future__ import annotations

import threading
from typing import Any


class RunState:
    """Book-keeping for one run.

    Attributes:
        run_id: the gateway's id of the run ("r17").
        params: the `run` request's params as received.
        trace: one dict per call made: {server, tool, ok, elapsed_ms, mutation, kind?}.
        mutations: one dict per write that happened: {server, tool, ok}.
        open_calls: calls whose reply has not been consumed yet, by call id.
        interruptible: True while agent code (or waiting on its calls) is running; the
            SIGUSR1 handler raises RunInterrupted only then.
        early_interrupt: an interrupt reason that arrived before agent code started; it
            is raised as soon as the code starts.
        finished: set once agent code is over; later interrupts are ignored.
        interrupted: set once RunInterrupted has been raised (it is raised once).
    """

    def __init__(self, run_id: str | None, params: dict[str, Any] | None = None) -> None:
        self.run_id = run_id
        self.params = params or {}
        self.lock = threading.Lock()
        self.trace: list[dict[str, Any]] = []
        self.mutations: list[dict[str, Any]] = []
        self.open_calls: dict[str, Any] = {}
        self.calls = 0
        self.interruptible = False
        self.early_interrupt: str | None = None
        self.finished = False
        self.interrupted = False


_current: RunState | None = None


def current() -> RunState | None:
    """The run executing now, or None."""
    return _current


def begin(state: RunState) -> None:
    """Make ``state`` the current run."""
    global _current
    _current = state


def end() -> None:
    """No run is executing any more."""
    global _current
    _current = None
