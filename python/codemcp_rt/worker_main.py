"""The worker's request loop: read gateway requests, dispatch them, send the replies.

Runs on the worker's main thread (the C host calls ``codemcp_rt.worker_main.main()``).
Requests are handled one at a time: load_sdk, run, set_shapes, drop_namespace (a
notification: the gateway dropped that namespace; `run` may also list drops). Replies to our own
call_tool requests and `cancel` notifications never reach this loop (the C side routes
them). A `cancel` for the current run makes the C side send SIGUSR1 to this thread; the
handler installed here raises RunInterrupted once, and only while agent code runs.

Nothing but a closed control connection ends the loop.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

from codemcp_rt import runner, runstate, sdk
from codemcp_rt.client import _parse
from codemcp_rt.errors import RunInterrupted
from codemcp_rt.transport import get_transport

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000


def _on_interrupt(signum: int, frame: Any) -> None:
    """SIGUSR1: raise RunInterrupted(reason) once, if an interrupt is pending for the run
    executing agent code. One that arrives while the run is still starting is kept and
    raised when the code starts; one that arrives after the code finished is dropped."""
    try:
        reason = get_transport().interrupt_reason()
    except Exception:
        return
    if reason is None:
        return
    state = runstate.current()
    if state is None or state.finished or state.interrupted:
        return
    if not state.interruptible:
        state.early_interrupt = str(reason)
        return
    state.interrupted = True
    raise RunInterrupted(str(reason))


def install_interrupt_handler() -> None:
    """Install the SIGUSR1 handler (must be called on the main thread)."""
    signal.signal(signal.SIGUSR1, _on_interrupt)


_log = runner._log  # one stderr logger for the runtime (goes to the gateway's log)

# In the sandbox (src/sandbox.h) the worker is PID 2 of a PID namespace of its own.
_SANDBOXED = os.environ.get("CODEMCP_ISOLATION") == "sandbox" and os.getpid() == 2


# The namespace's last allocated PID after the last check (None: unknown, look). A run that
# created no process and no thread leaves it unchanged, and then nothing can be left over; it
# could only come back to the same value after pid_max allocations, so a run that took longer
# than _LAST_PID_TRUST_S is always looked at.
_last_pid: bytes | None = None
_LAST_PID_TRUST_S = 5.0


def _read_last_pid() -> bytes | None:
    try:
        fd = os.open("/proc/sys/kernel/ns_last_pid", os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 32)
    except OSError:
        return None
    finally:
        os.close(fd)


def end_strays(started: float | None = None) -> None:
    """Sandbox only: processes a run started and left behind (a detached child, a daemon)
    end with the run, so nothing outlives it to watch or disturb later runs. kill(-1)
    reaches every process of the namespace except this one and PID 1. ``started``: the
    run's time.monotonic() at its start (a run that allocated no PID is not looked at)."""
    global _last_pid
    if not _SANDBOXED:
        return
    now = _read_last_pid()
    if now is not None and now == _last_pid and started is not None \
            and time.monotonic() - started < _LAST_PID_TRUST_S:
        return
    try:
        _end_strays()
    finally:
        _last_pid = _read_last_pid()


def _end_strays() -> None:
    if not _others():
        return
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        try:  # our own children; orphans are reaped by PID 1
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        if not _others():
            return
        time.sleep(0.002)


def _others() -> list[str]:
    """Processes of the sandbox other than PID 1 and this one (one listdir, ~20 µs)."""
    me = str(os.getpid())
    return [p for p in os.listdir("/proc") if p.isdigit() and p not in ("1", me)]


class _Raw(str):
    """A result that is JSON text already (the run envelope): spliced in, not re-encoded."""


def _reply(req_id: Any, result: Any = None, error: dict[str, Any] | None = None) -> str:
    if error is None and type(result) is _Raw:  # req_id came from json.loads: it encodes
        # the gateway's ids are ints (src/workers.c): their JSON is their repr
        rid = "%d" % req_id if type(req_id) is int else json.dumps(req_id)
        return '{"jsonrpc":"2.0","id":%s,"result":%s}' % (rid, result)
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": req_id}
    if error is not None:
        msg["error"] = error
    else:
        msg["result"] = result
    try:
        return json.dumps(msg, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:  # a bug upstream of here; still answer
        fallback = {"code": INTERNAL_ERROR, "message": "reply not serializable: %s" % exc}
        return json.dumps({"jsonrpc": "2.0", "id": req_id, "error": fallback})


def handle(text: str) -> str | None:
    """Handle one raw request; return the raw reply, or None for a notification."""
    try:
        msg = _parse(text)
    except (ValueError, TypeError, RecursionError) as exc:
        return _reply(None, error={"code": PARSE_ERROR, "message": "parse error: %s" % exc})
    if not isinstance(msg, dict) or not isinstance(msg.get("method"), str):
        req_id = msg.get("id") if isinstance(msg, dict) else None
        return _reply(req_id, error={"code": INVALID_REQUEST, "message": "invalid request"})
    req_id = msg.get("id")
    method = msg["method"]
    params = msg.get("params")
    if params is None:
        params = {}
    is_notification = "id" not in msg
    try:
        if not isinstance(params, dict):
            raise runner.BadRequest("params must be an object")
        if method == "run":
            started = time.monotonic() if _SANDBOXED else None
            try:
                result = _Raw(runner.run_json(params))
            finally:
                end_strays(started)
        elif method == "load_sdk":
            loaded = sdk.load_sdk(params.get("source"), params.get("version"), params.get("catalog"))
            if not loaded["ok"]:
                _log("load_sdk failed: %s" % loaded["error"])
                return None if is_notification else _reply(
                    req_id, error={"code": SERVER_ERROR, "message": loaded["error"]})
            result = {"ok": True, "functions": loaded["functions"]}
        elif method == "set_shapes":
            sdk.set_shapes(params.get("shapes"))
            result = {"ok": True}
        elif method in ("drop_namespace", "drop_session"):  # src/namespaces.c dropped it
            session = params.get("namespace", params.get("session"))
            if not isinstance(session, str):
                raise runner.BadRequest("%s needs params.namespace (a string)" % method)
            runner.drop_session(session)
            result = {"ok": True}
        elif method == "ping":
            result = {}
        else:
            if is_notification:
                return None
            return _reply(req_id, error={"code": METHOD_NOT_FOUND, "message": "unknown method %s" % method})
    except runner.BadRequest as exc:
        return None if is_notification else _reply(req_id, error={"code": INVALID_PARAMS, "message": str(exc)})
    except RunInterrupted:  # a stray interrupt outside agent code: answer anyway
        return None if is_notification else _reply(
            req_id, error={"code": INTERNAL_ERROR, "message": "interrupted while handling %s" % method})
    except Exception as exc:
        _log("%s failed: %s: %s" % (method, type(exc).__name__, exc))
        return None if is_notification else _reply(
            req_id, error={"code": INTERNAL_ERROR, "message": "%s failed: %s: %s" % (method, type(exc).__name__, exc)})
    return None if is_notification else _reply(req_id, result)


def serve() -> int:
    """Loop on transport.next_request() until the connection closes; returns 0."""
    transport = get_transport()
    while True:
        try:
            text = transport.next_request()
        except ConnectionError:
            return 0
        except RunInterrupted:
            continue
        if text is None:
            continue
        try:
            reply = handle(text)
            if reply is not None:
                transport.send(reply)
        except ConnectionError:
            return 0
        except BaseException as exc:  # never let one request kill the worker
            if isinstance(exc, (SystemExit, KeyboardInterrupt)) and not isinstance(exc, RunInterrupted):
                _log("stopping: %s" % type(exc).__name__)
                raise
            _log("request loop: %s: %s" % (type(exc).__name__, exc))


def main() -> int:
    """Entry point for the worker host: install the interrupt handler, then serve."""
    install_interrupt_handler()
    try:
        return serve()
    finally:
        _log("control connection closed; worker exiting")


if __name__ == "__main__":
    sys.exit(main())
