"""The state of the run executing now: its id, the calls it made, the writes it did.

One run executes at a time per worker process (the gateway sends `run` requests to a
worker one at a time), so the current run is a module global shared by every thread
that agent code may start. Calls made outside any run (tests, the REPL) are sent with
run_id None and recorded nowhere.
"""

from __future__ import annotations

import json
import json.encoder
from typing import Any

_encode_str = json.encoder.encode_basestring  # the C version when there is one


class RunState:
    """Book-keeping for one run.

    Attributes:
        run_id: the gateway's id of the run ("r17").
        made: one record per call made, in order (client._Call: ``id``, ``finished``
            and ``trace_entry()``); the dicts below are built from it only when asked.
        trace: one dict per call made: {server, tool, ok, elapsed_ms, mutation, kind?}.
        calls: how many calls the run made.
        mutations: one dict per write that happened: {server, tool, ok}.
        open_calls: calls whose reply has not been consumed yet, by call id.
        run_id_json: run_id as JSON text, for the call_tool frames.
        interruptible: True while agent code (or waiting on its calls) is running; the
            SIGUSR1 handler raises RunInterrupted only then.
        early_interrupt: an interrupt reason that arrived before agent code started; it
            is raised as soon as the code starts.
        finished: set once agent code is over; later interrupts are ignored.
        interrupted: set once RunInterrupted has been raised (it is raised once).
    """

    # Slots: one is built per run, and ten attribute stores into a dict cost more. The worker's
    # C run path builds it without __init__ (src/worker/pyrunset.c, pyrs_state): a slot added
    # here must be set there too.
    __slots__ = ("run_id", "run_id_json", "made", "mutations", "writes", "interruptible",
                 "early_interrupt", "finished", "interrupted", "__weakref__")

    def __init__(self, run_id: str | None) -> None:
        self.run_id = run_id
        if type(run_id) is str:
            self.run_id_json = _encode_str(run_id)
        else:
            try:
                self.run_id_json = json.dumps(run_id, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError):
                self.run_id_json = _encode_str(str(run_id))
        self.made: list[Any] = []  # appended without the lock: atomic under the GIL
        self.mutations: list[dict[str, Any]] = []
        self.writes: dict[Any, Any] = {}  # server -> its last write call (client: program order)
        self.interruptible = False
        self.early_interrupt: str | None = None
        self.finished = False
        self.interrupted = False

    @property
    def trace(self) -> list[dict[str, Any]]:
        """A fresh list of fresh dicts (see the class docstring)."""
        return [c.trace_entry() for c in list(self.made)]

    @property
    def calls(self) -> int:
        return len(self.made)

    @property
    def open_calls(self) -> dict[str, Any]:
        """A fresh dict of the calls not finished yet, by call id."""
        return {c.id: c for c in list(self.made) if not c.finished}

    def release(self) -> None:
        """Drop the call records once the run is reported (they point back at this state)."""
        self.made = []
        self.writes = {}


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
