"""Per-run capture of output: sys.stdout / sys.stderr replaced for one run, plus what the
run wrote to file descriptors 1 and 2 directly.

One run executes at a time per worker process, so swapping the sys streams is enough
to keep print() output of runs apart. Output that bypasses sys.stdout (os.write(1, ...),
subprocesses, C code) reaches the worker host's fd capture (_codemcp.fd_capture_*, see
src/worker/fdcap.h) and is appended after the print() output of the same stream when the
run ends. Each stream keeps at most ``limit`` bytes (UTF-8) and counts the rest, so a
runaway loop of prints costs no memory. Without the worker host (unit tests under a plain
interpreter) only print() output is captured.

The two streams are reused from run to run (building an io subclass instance costs more than
checking and resetting one): a stream is handed to the next run only if nothing but this
module refers to it (no reference and no weak reference kept by agent code, its class not
swapped), and its attributes are reset first (a close() or an attribute set by the last run
lives in the instance dict, which is cleared). A stream anything else still holds is left to
its holder and a new one is built, so writes through a kept sys.stdout never reach a later
run's output and closing it cannot break a later run's capture.
"""

from __future__ import annotations

import io
import sys
import threading
import weakref
from typing import Any

try:
    import _codemcp  # the worker host
except ImportError:  # a plain interpreter: no fd-level capture
    _codemcp = None


# One lock for every stream's buffer (writes are short; two per run are created, and a lock
# per stream cost more than the rest of the stream's set-up).
_write_lock = threading.Lock()


class CappedStream(io.TextIOBase):
    """A text stream that keeps the first ``limit`` UTF-8 bytes written to it."""

    # Defaults until the first write: a run that prints nothing sets only name and limit
    # (attributes of an io subclass live in a dict, and each costs).
    _parts: list[bytes] | None = None
    _kept = 0
    _cut = 0

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.limit = max(0, int(limit))

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]
        return "replace"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:  # type: ignore[override]
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        self._write_bytes(text.encode("utf-8", "replace"))
        return len(text)

    def add_raw(self, data: bytes, cut: int) -> None:
        """Output of the run that reached the file descriptor directly (already capped by
        the host at ``cut`` bytes dropped)."""
        if data:
            self._write_bytes(data)
        if cut:
            with _write_lock:
                self._cut += cut

    def _write_bytes(self, data: bytes) -> None:
        with _write_lock:
            parts = self._parts
            if parts is None:
                parts = self._parts = []
            room = self.limit - self._kept
            if room >= len(data):
                parts.append(data)
                self._kept += len(data)
            else:
                if room > 0:
                    parts.append(data[:room])
                    self._kept += room
                self._cut += len(data) - max(room, 0)

    @property
    def buffer(self) -> "_ByteSink":
        """Binary view, for code that writes bytes to sys.stdout.buffer."""
        return _ByteSink(self)

    def flush(self) -> None:
        pass

    @property
    def cut_bytes(self) -> int:
        """How many bytes were dropped because of the cap."""
        return self._cut

    def getvalue(self) -> str:
        """What was written, cut at the cap, with a marker saying how much was dropped."""
        if not self._parts and not self._cut:
            return ""
        with _write_lock:
            text = b"".join(self._parts or ()).decode("utf-8", "ignore" if self._cut else "replace")
            if self._cut:
                text += "\n…[codemcp: %d more bytes of %s cut]" % (self._cut, self.name)
        return text


class _ByteSink:
    def __init__(self, stream: CappedStream) -> None:
        self._stream = stream

    def write(self, data: bytes) -> int:
        self._stream._write_bytes(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass


# The last run's (stdout, stderr) streams, offered to the next run (see the module comment).
_last: list[Any] = [None, None]
_getrefcount = sys.getrefcount
_getweakrefcount = weakref.getweakrefcount


def _stream(i: int, name: str, limit: int) -> CappedStream:
    """The stream for slot ``i`` of the next run: the last run's, reset, when nothing else
    holds it; otherwise a new one."""
    s = _last[i]
    # References to s: _last, this local, getrefcount's argument. Anything more is a holder.
    if s is not None and type(s) is CappedStream and _getrefcount(s) == 3 \
            and not _getweakrefcount(s):
        d = s.__dict__
        d.clear()
        d["name"] = name
        d["limit"] = max(0, int(limit))
        return s
    s = _last[i] = CappedStream(name, limit)
    return s


class capture:
    """Install capped sys.stdout/sys.stderr (and an empty sys.stdin, so input() ends
    at once instead of reading the worker's stdin) for the ``with`` block, which gets
    (stdout, stderr). A class, not a generator: it is entered once per run."""

    __slots__ = ("streams", "saved")

    def __init__(self, limit: int) -> None:
        self.streams = (_stream(0, "stdout", limit), _stream(1, "stderr", limit))
        self.saved: tuple[Any, Any, Any] | None = None

    def __enter__(self) -> tuple[CappedStream, CappedStream]:
        self.saved = sys.stdout, sys.stderr, sys.stdin
        sys.stdout, sys.stderr = self.streams
        sys.stdin = io.StringIO("")
        if _codemcp is not None:
            _codemcp.fd_capture_begin(self.streams[0].limit)
        return self.streams

    def __exit__(self, *exc: Any) -> None:
        sys.stdout, sys.stderr, sys.stdin = self.saved  # type: ignore[misc]
        if _codemcp is not None:
            out, out_cut, err, err_cut = _codemcp.fd_capture_end()
            self.streams[0].add_raw(out, out_cut)
            self.streams[1].add_raw(err, err_cut)
