"""A stand-in for the worker host's `_codemcp` module, in plain Python.

It answers call_tool requests from background threads after a configurable delay, in
whatever order the delays produce, using a responder function per test:

    responder(params) -> ("result", obj) | ("error", obj) | ("none", None)  [, delay_s]

Requests for the request loop are fed with push_request(); close() makes
next_request()/wait_reply() raise ConnectionError like a closed control connection.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from typing import Any, Callable

Responder = Callable[[dict[str, Any]], Any]


def text_result(value: Any, is_error: bool = False) -> dict[str, Any]:
    """A CallToolResult with one text block (JSON-encoded unless already a string)."""
    text = value if isinstance(value, str) else json.dumps(value)
    out: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        out["isError"] = True
    return out


def echo_responder(params: dict[str, Any]) -> Any:
    """Answers every call with structuredContent {"server", "tool", "args"}."""
    return ("result", {"content": [], "structuredContent": {
        "server": params["server"], "tool": params["tool"], "args": params["args"]}})


class FakeTransport:
    def __init__(self, responder: Responder = echo_responder, delay: float = 0.0) -> None:
        self.responder = responder
        self.delay = delay
        self.sent: list[dict[str, Any]] = []
        self.forgotten: set[str] = set()
        self.current_runs: list[Any] = []
        self.reason: str | None = None
        self.requests: "queue.Queue[Any]" = queue.Queue()
        self._replies: dict[str, str] = {}
        self._cond = threading.Condition()
        self._closed = False
        self._threads: list[threading.Thread] = []

    # -- the _codemcp API ---------------------------------------------------------

    def send(self, text: str) -> None:
        if self._closed:
            raise ConnectionError("closed")
        msg = json.loads(text)
        with self._cond:
            self.sent.append(msg)
        if msg.get("method") == "call_tool":
            t = threading.Thread(target=self._answer, args=(msg,), daemon=True)
            self._threads.append(t)
            t.start()

    def next_request(self, timeout: float | None = None) -> str | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                item = self.requests.get(timeout=0.02)
            except queue.Empty:
                if self._closed:
                    raise ConnectionError("closed")
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                continue
            if item is ConnectionError:
                self._closed = True
                raise ConnectionError("closed")
            return item

    def wait_reply(self, call_id: str, timeout: float | None = None) -> str | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while call_id not in self._replies:
                if self._closed:
                    raise ConnectionError("closed")
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                self._cond.wait(0.02)  # short slices, like the C side, so signals get in
            return self._replies.pop(call_id)

    def take_reply(self, call_id: str) -> str | None:
        with self._cond:
            return self._replies.pop(call_id, None)

    def forget(self, call_id: str) -> None:
        with self._cond:
            self.forgotten.add(call_id)
            self._replies.pop(call_id, None)

    def set_current_run(self, run_id: Any) -> None:
        self.current_runs.append(run_id)

    def interrupt_reason(self) -> str | None:
        reason, self.reason = self.reason, None
        return reason

    def worker_id(self) -> int:
        return 0

    # -- test helpers -----------------------------------------------------------------

    def push_request(self, method: str, params: dict[str, Any], req_id: Any = 1) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if req_id is not None:
            msg["id"] = req_id
        self.requests.put(json.dumps(msg))

    def close(self) -> None:
        self.requests.put(ConnectionError)

    def calls(self) -> list[dict[str, Any]]:
        with self._cond:
            return [m for m in self.sent if m.get("method") == "call_tool"]

    def replies(self) -> list[dict[str, Any]]:
        with self._cond:
            return [m for m in self.sent if "method" not in m]

    def _answer(self, msg: dict[str, Any]) -> None:
        out = self.responder(msg["params"])
        delay = self.delay
        if isinstance(out, tuple) and len(out) == 3:
            kind, payload, delay = out
        else:
            kind, payload = out
        if delay:
            time.sleep(delay)
        if kind == "none":
            return
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
        if kind == "raw":
            text = payload
        else:
            reply[kind] = payload
            text = json.dumps(reply)
        with self._cond:
            if msg["id"] not in self.forgotten:
                self._replies[msg["id"]] = text
            self._cond.notify_all()
