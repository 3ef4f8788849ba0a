"""The worker's request loop: read gateway requests, dispatch them, send the replies.

Runs on the worker's main thread (the C host calls ``codemcp_rt.worker_main.main()``). In
the worker the loop itself is C's (``_codemcp.serve``, src/worker/pyrun.c): it answers the
usual run request itself and gives every other request to ``handle`` below; ``serve`` here is
the loop for other transports (tests). Requests are handled one at a time: load_sdk, run, set_shapes, drop_namespace (a
notification: the gateway dropped that namespace; `run` may also list drops). Replies to our own
call_tool requests and `cancel` notifications never reach this loop (the C side routes
them). A `cancel` for the current run makes the C side send SIGUSR1 to this thread; the
handler installed here raises RunInterrupted once, and only while agent code runs.

Nothing but a closed control connection ends the loop.
"""

from __future__ import annotations

import json
import signal
import sys
from typing import Any

from codemcp_rt import runner, runstate, sdk
from codemcp_rt.client import _parse
from codemcp_rt.errors import RunInterrupted
from codemcp_rt.pending import Pending
from codemcp_rt.transport import get_transport

try:
    import _codemcp  # the worker host
except ImportError:  # a plain interpreter (tests)
    _codemcp = None

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

# The end-of-run check for processes a run left behind (the sandbox) is C's: src/worker/pystray.c,
# called by the request loop after every request (pyrun.c), where agent code cannot replace it.


class _Raw(str):
    """A result that is JSON text already (the run envelope): spliced in, not re-encoded."""


def _reply(req_id: Any, result: Any = None, error: dict[str, Any] | None = None) -> str:
    if error is None and type(result) is _Raw:  # req_id came from json.loads: it encodes
        # the gateway's ids are ints (src/run/workers.c): their JSON is their repr
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
            result = _Raw(runner.run_json(params))
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
        elif method in ("drop_namespace", "drop_session"):  # src/run/namespaces.c dropped it
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
    """Loop on transport.next_request() until the connection closes; returns 0. In the worker
    the loop is C's (_codemcp.serve, src/worker/pyrun.c): it answers the usual run itself and
    hands every other request to handle(); this loop serves other transports (tests)."""
    transport = get_transport()
    if transport is _codemcp and _codemcp is not None and hasattr(_codemcp, "serve"):
        return _codemcp.serve(_hooks())
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


def _hooks() -> dict[str, Any]:
    """What the C loop keeps for itself when the worker starts (before any agent code)."""
    import io
    from codemcp_rt import capture
    return {"handle": handle, "prepare": runner._fast_prepare, "namespace": runner._namespace,
            "sessions": runner._sessions, "rn_dict": vars(runner), "runstate": runstate.RunState,
            "stream": capture._stream, "last": capture._last, "capped": capture.CappedStream,
            "rs_dict": vars(runstate), "sdk_dict": vars(sdk), "settle": runner._fast_settle,
            "outcome": runner._fast_outcome, "tail": runner._fast_tail,
            "interrupted": RunInterrupted, "stringio": io.StringIO, "pending": Pending}


def main() -> int:
    """Entry point for the worker host: install the interrupt handler, then serve."""
    install_interrupt_handler()
    try:
        return serve()
    finally:
        _log("control connection closed; worker exiting")


if __name__ == "__main__":
    sys.exit(main())
