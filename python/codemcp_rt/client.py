"""call(): send one call_tool request to the gateway and return a Pending for its value.

The request goes out at once (transport.send never blocks); the reply is read only
when the value is first used, so calls made before any value is read overlap. The
gateway re-checks every request (tool enabled, run live, policy, mutations); nothing
here is enforcement.

Reply handling:
  * JSON-RPC error -> ToolError(kind from error.data.kind; "upstream_error" by default,
    "transport" for protocol-level codes), with the gateway's elapsed_ms when given.
  * CallToolResult -> structuredContent if present; else the text blocks joined by "\n",
    parsed as JSON when possible, else that text; else the raw result (images, etc.).
    ``isError: true`` results are values, not exceptions; dry-run stubs are normal results.
  * ``_meta.codemcp.mutation`` in a result marks a write: recorded in the run's mutations.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from typing import Any

from codemcp_rt import runstate
from codemcp_rt.errors import KINDS, ToolError
from codemcp_rt.pending import Pending, resolve
from codemcp_rt.transport import get_transport

_ids = itertools.count(1)
_ids_lock = threading.Lock()
_GRACE_S = 10.0  # extra wait beyond a call's timeout_ms before giving up locally
_PROTOCOL_CODES = (-32700, -32600, -32601, -32603)


def _next_id() -> str:
    with _ids_lock:
        return "c%d" % next(_ids)


def _sdk_says_mutation(server: str, tool: str) -> bool:
    try:
        from codemcp_rt import sdk

        return sdk.is_mutation(server, tool)
    except Exception:
        return False


class _Call:
    """One call_tool request: its id, its trace entry, and how to read its reply."""

    def __init__(self, call_id: str, server: str, tool: str, args: Any, timeout_ms: int | None,
                 state: runstate.RunState | None) -> None:
        self.id = call_id
        self.server = server
        self.tool = tool
        self.args = args
        self.timeout_ms = timeout_ms
        self.state = state
        self.started = time.monotonic()
        self.early: str | None = None  # a reply taken by poll() before wait()
        self.finished = False
        self.value: Any = None  # the outcome, kept so a later wait() repeats it
        self.exc: ToolError | None = None
        self.entry: dict[str, Any] = {
            "server": server,
            "tool": tool,
            "ok": None,
            "elapsed_ms": None,
            "mutation": _sdk_says_mutation(server, tool),
        }

    @property
    def label(self) -> str:
        return "%s/%s" % (self.server, self.tool)

    def error(self, kind: str, message: str, elapsed_ms: int | None = None) -> ToolError:
        if elapsed_ms is None:
            elapsed_ms = int((time.monotonic() - self.started) * 1000)
        return ToolError(kind, message, self.server, self.tool, self.args, elapsed_ms)

    def poll(self) -> bool:
        """True when the reply has arrived (keeps it for wait())."""
        if self.early is not None or self.finished:
            return True
        raw = get_transport().take_reply(self.id)
        if raw is not None:
            self.early = raw
            return True
        return False

    def wait(self) -> Any:
        """Block for the reply and return the unwrapped value, or raise ToolError.

        Idempotent: once the outcome is known, later calls repeat it."""
        if self.finished:
            if self.exc is not None:
                raise self.exc
            return self.value
        raw = self.early
        if raw is None:
            timeout = None if self.timeout_ms is None else self.timeout_ms / 1000.0 + _GRACE_S
            try:
                raw = get_transport().wait_reply(self.id, timeout)
            except ConnectionError as exc:
                self._record_error(self.error("transport", "control connection lost: %s" % exc))
            if raw is None:
                get_transport().forget(self.id)
                self._record_error(self.error("timeout", "no reply from the gateway in time"))
        return self._finish(raw)

    def abandon(self) -> None:
        """The run is over and nobody will read this call: record what is known, drop it."""
        if self.finished:
            return
        raw = self.early
        try:
            if raw is None:
                raw = get_transport().take_reply(self.id)
            if raw is not None:
                self._finish(raw)
                return
            get_transport().forget(self.id)
        except ToolError:
            return
        except Exception:  # connection gone: nothing more to learn about this call
            pass
        self.entry.update(ok=False, kind="unfinished")
        self.exc = self.error("transport", "the run that made this call ended before its reply was read")
        self._close()

    # -- internals ------------------------------------------------------------------

    def _close(self) -> None:
        self.finished = True
        if self.entry["elapsed_ms"] is None:
            self.entry["elapsed_ms"] = int((time.monotonic() - self.started) * 1000)
        state = self.state
        if state is not None:
            with state.lock:
                state.open_calls.pop(self.id, None)

    def _record_mutation(self, ok: bool, dry_run: bool = False) -> None:
        self.entry["mutation"] = True
        if self.state is not None:
            item: dict[str, Any] = {"server": self.server, "tool": self.tool, "ok": ok}
            if dry_run:
                item["dry_run"] = True
            with self.state.lock:
                self.state.mutations.append(item)

    def _record_error(self, exc: ToolError, write_attempted: bool = False) -> None:
        self.entry.update(ok=False, kind=exc.kind, elapsed_ms=exc.elapsed_ms)
        self.exc = exc
        if write_attempted:
            self._record_mutation(False)
        self._close()
        raise exc

    def _finish(self, raw: str) -> Any:
        try:
            msg = json.loads(raw)
        except (ValueError, TypeError):
            msg = None
        if not isinstance(msg, dict):
            self._record_error(self.error("transport", "malformed reply from the gateway"))
        if msg.get("error") is not None:
            self._fail(msg["error"])
        result = msg.get("result")
        self.entry.update(ok=True, elapsed_ms=int((time.monotonic() - self.started) * 1000))
        if isinstance(result, dict):
            meta = result.get("_meta")
            info = meta.get("codemcp") if isinstance(meta, dict) else None
            if isinstance(info, dict) and "mutation" in info:
                if info.get("mutation"):
                    self._record_mutation(not result.get("isError"), bool(info.get("dry_run")))
                else:
                    self.entry["mutation"] = False
        self.value = unwrap(result)
        self._close()
        return self.value

    def _fail(self, err: Any) -> None:
        if not isinstance(err, dict):
            err = {"message": str(err)}
        data = err.get("data") if isinstance(err.get("data"), dict) else {}
        kind = data.get("kind")
        if kind not in KINDS:
            kind = "transport" if err.get("code") in _PROTOCOL_CODES else "upstream_error"
        elapsed = data.get("elapsed_ms")
        if not isinstance(elapsed, int) or isinstance(elapsed, bool):
            elapsed = None
        message = err.get("message") or "tool call failed"
        exc = self.error(kind, str(message), elapsed)
        attempted = bool(data.get("mutation")) if "mutation" in data else (
            self.entry["mutation"] and kind in ("upstream_error", "timeout", "transport"))
        self._record_error(exc, attempted)


def unwrap(result: Any) -> Any:
    """The useful value of a CallToolResult (see the module docstring for the order)."""
    if not isinstance(result, dict):
        return result
    structured = result.get("structuredContent")
    if structured is not None:
        return structured
    content = result.get("content")
    if isinstance(content, list):
        texts = [
            block["text"]
            for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        ]
        if texts:
            text = "\n".join(texts)
            try:
                return json.loads(text)
            except ValueError:
                return text
    return result


def call(server: str, tool: str, args: dict[str, Any] | None = None, timeout_ms: int | None = None) -> Pending:
    """Send ``tool`` on ``server`` with ``args`` now; return a Pending for its value.

    ``timeout_ms`` is the per-call deadline the gateway enforces (None: its default).
    Never blocks and never raises for a failed call: errors surface when the value is
    used (ToolError), or in gather().
    """
    from codemcp_rt.jsonsafe import to_jsonable

    state = runstate.current()
    call_id = _next_id()
    if timeout_ms is not None:
        timeout_ms = int(timeout_ms)
    plain_args = to_jsonable(resolve(dict(args) if args else {}))
    c = _Call(call_id, server, tool, plain_args, timeout_ms, state)
    if state is not None:
        with state.lock:
            state.calls += 1
            state.trace.append(c.entry)
            state.open_calls[call_id] = c
    request = {
        "jsonrpc": "2.0",
        "id": call_id,
        "method": "call_tool",
        "params": {
            "run_id": state.run_id if state is not None else None,
            "server": server,
            "tool": tool,
            "args": plain_args,
            "timeout_ms": timeout_ms,
        },
    }
    try:
        get_transport().send(json.dumps(request, ensure_ascii=False, allow_nan=False))
    except Exception as exc:  # connection gone, no transport: fail on first use
        try:
            c._record_error(c.error("transport", "could not send the request: %s" % exc, 0))
        except ToolError:
            pass
    return Pending(c.wait, c.poll, c.label)


def settle_open_calls(state: runstate.RunState, wait: bool) -> None:
    """At the end of a run: wait for (``wait``) or abandon every call nobody read, so the
    trace and the mutations are complete and no stale reply is kept. Never raises a
    ToolError; RunInterrupted passes through."""
    while True:
        with state.lock:
            pending = list(state.open_calls.values())
        if not pending:
            return
        for c in pending:
            if wait:
                try:
                    c.wait()
                except ToolError:
                    pass
            else:
                c.abandon()
            with state.lock:
                state.open_calls.pop(c.id, None)


__all__ = ["call", "unwrap", "settle_open_calls"]
