"""call(): send one call_tool request to the gateway and return a Pending for its value.

The request goes out at once (transport.send never blocks); the reply is read only
when the value is first used, so calls made before any value is read overlap. The
gateway re-checks every request (tool enabled, run live, policy, mutations); nothing
here is enforcement.

Reply handling:
  * JSON-RPC error -> ToolError(kind from error.data.kind; "upstream_error" by default,
    "transport" for protocol-level codes), with the gateway's elapsed_ms when given.
  * CallToolResult -> structuredContent if present; else, when it has image, audio or
    resource blocks, its blocks in order (text as below, the others as content.Content; one
    block alone: that block); else the text blocks joined by "\n", parsed as JSON when
    possible, else that text; else the raw result.
    ``isError: true`` results are values, not exceptions; dry-run stubs are normal results.
  * ``_meta.codemcp.mutation`` in a result marks a write: recorded in the run's mutations.

Writes keep program order: a call made while an earlier write to the same server is still
unanswered waits for that write's reply before it is sent (so ``memory_create_entities``
then ``memory_read_graph`` reads the new graph); reads with no write before them overlap.

This is the hot path of every SDK call (budget: a few tens of µs of CPU), hence: the
arguments go straight to the C JSON encoder when they are plain JSON data (the
to_jsonable/resolve walks run only when that fails), the frame is a string template
around them, each reply is parsed once, the trace entry is built only when a report
needs it, and no lock is taken (list/dict updates are atomic under the GIL).
"""

from __future__ import annotations

import itertools
import json
import re
import time
from typing import Any

from codemcp_rt import content as _content
from codemcp_rt import argguard, errtext, jsonsafe, limits, runstate, sdk, transport
from codemcp_rt.errors import KINDS, ToolError
from codemcp_rt.pending import Pending, resolve

_monotonic = time.monotonic
_ids = itertools.count(1)  # next() on a C iterator is atomic under the GIL
_GRACE_S = limits.CALL_GRACE_S  # extra wait beyond a call's timeout_ms before giving up locally
_PROTOCOL_CODES = (-32700, -32600, -32601, -32603)
_FRAME = ('{"jsonrpc":"2.0","id":"%s","method":"call_tool","params":{"run_id":%s,%s,'
          '"args":%s,"timeout_ms":%s}}')
# A text block is tried as JSON only when it starts like a JSON value (json.loads also
# takes NaN/Infinity); a failed parse costs an exception, and most text is prose.
_JSON_START = frozenset('{["-0123456789tfnNI')
_SPACE = frozenset(" \t\r\n")


_encode_with_pendings = jsonsafe.make_encoder(resolve_pendings=True)
_ARGS_BUDGET = 64 << 20  # larger arguments take jsonsafe's converting path


_FLAT = frozenset((str, float, bool, type(None)))
_INT_LIMIT = jsonsafe._BIG_INT  # larger ints are converted by jsonsafe, not written


def _encode_plain(args: dict[str, Any]) -> str | None:
    """Compact JSON of ``args`` when it is plain JSON data (jsonsafe.plain; Pendings are
    resolved), else None: the caller then converts with jsonsafe (NaN, sets, datetimes,
    namedtuples, cycles...), so the wire carries the same either way."""
    for key, value in args.items():  # the usual case, scalars only, checked inline
        t = type(value)
        if type(key) is not str or (t not in _FLAT and (t is not int or not -_INT_LIMIT < value < _INT_LIMIT)):
            break
    else:
        try:
            return _encode_with_pendings(args)
        except ValueError:  # NaN/Infinity
            return None
    if not jsonsafe.plain(args, _ARGS_BUDGET, pendings=True):
        return None
    try:
        return _encode_with_pendings(args)
    except (TypeError, ValueError, RecursionError):
        return None


try:  # the worker host's C shortcuts (src/worker/pyfast.c); None under plain Python
    from _codemcp import call_frame as _c_call_frame  # type: ignore[import-not-found]
    from _codemcp import text_result as _c_text_result  # type: ignore[import-not-found]
    from _codemcp import issue as _c_issue  # type: ignore[import-not-found]
except ImportError:
    _c_call_frame = _c_text_result = _c_issue = None

# The usual reply: one text block, in the gateway's compact form (jsonfast, rpc_result's key
# order). Anything else (structuredContent, _meta, isError, escapes, another order) is None
# here and takes _finish's general path; both give the same value.
_TR_HEAD = '{"jsonrpc":"2.0","id":"'
_TR_MID = '","result":{"content":[{"type":"text","text":"'
_TR_TAIL = '"}]}}'
_TR_CTRL = re.compile("[\x00-\x1f]").search


def _py_text_result(raw: Any, call_id: Any) -> str | None:
    """Python twin of _codemcp.text_result (tests/e2e/percall.test.mjs compares them)."""
    if type(raw) is not str or type(call_id) is not str:
        return None
    head = _TR_HEAD + call_id + _TR_MID
    if len(raw) < len(head) + len(_TR_TAIL) or not raw.startswith(head) or not raw.endswith(_TR_TAIL):
        return None
    text = raw[len(head) : len(raw) - len(_TR_TAIL)]
    if '"' in text or "\\" in text or _TR_CTRL(text):
        return None
    return text


_text_result = _c_text_result or _py_text_result

_decoder = json.JSONDecoder()
_scan = _decoder.scan_once


try:
    from _codemcp import loads_fast as _loads_fast  # type: ignore[import-not-found]
except ImportError:  # a plain interpreter
    _loads_fast = None


def _parse(text: str) -> Any:
    """json.loads for the gateway's compact replies, without the whitespace regexes;
    anything unusual goes through json.loads. Raises ValueError/TypeError. In the worker
    the common case is parsed in C (_codemcp.loads_fast, src/worker/pyjson.c: Ellipsis for
    anything it does not handle)."""
    if _loads_fast is not None:
        value = _loads_fast(text)
        if value is not Ellipsis:
            return value
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        return json.loads(text)
    if end != len(text) and text[end:].strip():
        return json.loads(text)  # raises "Extra data"
    return value


def _transport() -> Any:
    # transport.get_transport() takes a lock on every call; once a transport is set,
    # reading the module global is enough (rebinding it is atomic).
    t = transport._transport
    return t if t is not None else transport.get_transport()


# Per SDK snapshot: (server, tool) -> (frame fragment, label, is a write per the SDK,
# argguard.certain_types: the argument types _codemcp.issue lets through without check()).
_tools: dict[tuple[Any, Any], tuple[str | None, str, bool, Any]] = {}
_tools_snap: Any = None


def _tool_info(server: Any, tool: Any) -> tuple[str | None, str, bool, Any]:
    """(the frame's "server"/"tool" members or None when they are not JSON, the label,
    whether the SDK marks the tool as a write, argguard's certain types or None). Never
    raises."""
    global _tools_snap
    snap = sdk.current()
    if snap is not _tools_snap:
        _tools.clear()
        _tools_snap = snap
    try:
        info = _tools.get((server, tool))
    except TypeError:  # unhashable names
        info = None
    if info is None:
        try:
            fragment: str | None = '"server":%s,"tool":%s' % (jsonsafe.dumps(server), jsonsafe.dumps(tool))
        except (TypeError, ValueError, RecursionError):
            fragment = None  # the request fails when it is sent
        try:
            mutation = sdk.is_mutation(server, tool)
        except Exception:
            mutation = False
        try:
            certain = argguard.certain_types(server, tool)
        except Exception:
            certain = None  # issue() then asks argguard.check for every call
        info = (fragment, "%s/%s" % (server, tool), mutation, certain)
        try:
            _tools[(server, tool)] = info
        except TypeError:
            pass
    return info


class _PyCallBase:
    """Python twin of ``_codemcp.CallBase`` (src/worker/pycall.c): a call's fields and
    take(); the worker uses the C one, plain python3 this one."""

    __slots__ = ("id", "server", "tool", "args", "args_json", "timeout_ms", "state", "started", "early",
                 "finished", "value", "exc", "ok", "elapsed_ms", "kind", "mutation")

    def __init__(self, call_id: str, server: str, tool: str, args: Any, args_json: str | None,
                 timeout_ms: int | None, state: runstate.RunState | None, mutation: bool) -> None:
        self.id = call_id
        self.server = server
        self.tool = tool
        self.args = args  # the plain arguments, or None: parse args_json when needed
        self.args_json = args_json
        self.timeout_ms = timeout_ms
        self.state = state
        self.started = _monotonic()
        self.early: str | None = None  # a reply taken by poll() before wait()
        self.finished = False
        self.value: Any = None  # the outcome, kept so a later wait() repeats it
        self.exc: ToolError | None = None
        self.ok: bool | None = None
        self.elapsed_ms: int | None = None
        self.kind: str | None = None
        self.mutation = mutation

    def take(self) -> Any:
        """wait() for the Pending, which keeps the value itself: this call forgets it, so
        the run's trace does not hold every result until the run ends. The usual reply
        (one text block, see _text_result) is unwrapped here without _finish."""
        if self.finished:
            value = self.wait()
            self.value = None
            return value
        raw = self.early
        if raw is None:
            raw = self._receive()
        text = _text_result(raw, self.id)
        if text is None:
            value = self._finish(raw)
            self.value = None
            return value
        self.ok = self.finished = True
        self.early = None
        self.elapsed_ms = int((_monotonic() - self.started) * 1000)
        first = text[:1]
        if first not in _JSON_START and first not in _SPACE:
            return text  # prose: what _text_value gives without looking further
        return _text_value(text)


try:  # the worker host's C core (src/worker/pycall.c); the twin above under plain python3
    from _codemcp import CallBase as _CallBase  # type: ignore[import-not-found]
except ImportError:
    _CallBase = _PyCallBase


class _Call(_CallBase):  # type: ignore[misc,valid-type]
    """One call_tool request: its id, what the trace says about it, how to read its reply.

    Also the run's trace record (runstate.RunState.made): trace_entry() builds the dict.
    Fields, __init__ and take() are in the base class (C in the worker)."""

    __slots__ = ()

    # take()'s general path (the C take() hands every unusual case to it)
    _take_py = _PyCallBase.take

    def trace_entry(self) -> dict[str, Any]:
        """{server, tool, ok, elapsed_ms, mutation, kind?} as the envelope reports it."""
        entry: dict[str, Any] = {"server": self.server, "tool": self.tool, "ok": self.ok,
                                 "elapsed_ms": self.elapsed_ms, "mutation": self.mutation}
        if self.kind is not None:
            entry["kind"] = self.kind
        return entry

    def plain_args(self) -> Any:
        if self.args is None and self.args_json is not None:
            try:
                self.args = json.loads(self.args_json)
            except ValueError:
                self.args = {}
        return self.args

    def error(self, kind: str, message: str, elapsed_ms: int | None = None) -> ToolError:
        if elapsed_ms is None:
            elapsed_ms = int((_monotonic() - self.started) * 1000)
        return ToolError(kind, message, self.server, self.tool, self.plain_args(), elapsed_ms)

    def poll(self) -> bool:
        """True when the reply has arrived (keeps it for wait())."""
        if self.early is not None or self.finished:
            return True
        raw = _transport().take_reply(self.id)
        if raw is not None:
            self.early = raw
            return True
        return False

    def block(self, seconds: float) -> bool:
        """Wait at most ``seconds`` for the reply (keeps it for wait()); True when it is
        there. Reading the socket here also routes the replies of other calls."""
        if self.early is not None or self.finished:
            return True
        raw = _transport().wait_reply(self.id, seconds)
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
            raw = self._receive()
        return self._finish(raw)

    def abandon(self) -> None:
        """The run is over and nobody will read this call: record what is known, drop it."""
        if self.finished:
            return
        raw = self.early
        try:
            if raw is None:
                raw = _transport().take_reply(self.id)
            if raw is not None:
                self._finish(raw)
                return
            _transport().forget(self.id)
        except ToolError:
            return
        except Exception:  # connection gone: nothing more to learn about this call
            pass
        self.ok, self.kind = False, "unfinished"
        self.exc = self.error("transport", "the run that made this call ended before its reply was read")
        self._close()

    # -- internals ------------------------------------------------------------------

    def _receive(self) -> str:
        """The raw reply, waited for; ToolError (recorded) when the connection is gone or
        no reply came in time."""
        timeout = None if self.timeout_ms is None else self.timeout_ms / 1000.0 + _GRACE_S
        raw = None
        try:
            t = transport._transport  # _transport(), inlined: this is the hot path
            raw = (t if t is not None else transport.get_transport()).wait_reply(self.id, timeout)
        except ConnectionError as exc:
            self._lost(exc)
        if raw is None:
            self._timed_out()
        return raw

    def _send_failed(self, exc: BaseException) -> None:
        """The request could not be sent: the call fails on first use (never raises)."""
        try:
            self._record_error(self.error("transport", "could not send the request: %s" % exc, 0))
        except ToolError:
            pass

    def _lost(self, exc: BaseException) -> None:
        self._record_error(self.error("transport", "control connection lost: %s" % exc))

    def _timed_out(self) -> None:
        _transport().forget(self.id)
        self._record_error(self.error("timeout", "no reply from the gateway in time"))

    @staticmethod
    def _json_text(text: str) -> Any:
        return _text_value(text)

    def _close(self) -> None:
        self.finished = True
        self.early = None
        if self.elapsed_ms is None:
            self.elapsed_ms = int((_monotonic() - self.started) * 1000)

    def _record_mutation(self, ok: bool, dry_run: bool = False) -> None:
        self.mutation = True
        if self.state is not None:
            item: dict[str, Any] = {"server": self.server, "tool": self.tool, "ok": ok}
            if dry_run:
                item["dry_run"] = True
            self.state.mutations.append(item)

    def _record_error(self, exc: ToolError, write_attempted: bool = False) -> None:
        self.ok, self.kind, self.elapsed_ms = False, exc.kind, exc.elapsed_ms
        self.exc = exc
        if write_attempted:
            self._record_mutation(False)
        self._close()
        raise exc

    def _finish(self, raw: str) -> Any:
        text = _text_result(raw, self.id)
        if text is not None:  # the usual one-text-block answer: unwrap() without parsing it
            self.ok = True
            self.elapsed_ms = int((_monotonic() - self.started) * 1000)
            self.value = _text_value(text)
            self._close()
            return self.value
        try:
            msg = _parse(raw)
        except (ValueError, TypeError, RecursionError):
            msg = None
        if type(msg) is not dict:
            self._record_error(self.error("transport", "malformed reply from the gateway"))
        if msg.get("error") is not None:
            self._fail(msg["error"])
        result = msg.get("result")
        self.ok = True
        self.elapsed_ms = int((_monotonic() - self.started) * 1000)
        if type(result) is dict:
            meta = result.get("_meta")
            if meta is not None:
                self._note_meta(result, meta)
        value = unwrap(result)
        if type(value) is str and type(result) is dict and result.get("isError") is True:
            value = errtext.wrap(value, self.server, self.tool, self.plain_args())  # raises when used as data
        self.value = value
        self._close()
        return self.value

    def _note_meta(self, result: dict[str, Any], meta: Any) -> None:
        info = meta.get("codemcp") if isinstance(meta, dict) else None
        if isinstance(info, dict) and "mutation" in info:
            if info.get("mutation"):
                self._record_mutation(not result.get("isError"), bool(info.get("dry_run")))
            else:
                self.mutation = False

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
            self.mutation and kind in ("upstream_error", "timeout", "transport"))
        self._record_error(exc, attempted)


def _text_value(text: str) -> Any:
    """A text result: its JSON value when it is JSON, else the text itself."""
    first = text[:1]
    if first not in _JSON_START:
        if first not in _SPACE or text.lstrip()[:1] not in _JSON_START:
            return text
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def unwrap(result: Any) -> Any:
    """The useful value of a CallToolResult (see the module docstring for the order)."""
    if not isinstance(result, dict):
        return result
    structured = result.get("structuredContent")
    if structured is not None:
        return structured
    content = result.get("content")
    if type(content) is list and len(content) == 1:  # the usual answer: one text block
        block = content[0]
        if type(block) is dict and block.get("type") == "text":
            text = block.get("text")
            if type(text) is str:
                return _text_value(text)
    if isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") in _content.KINDS for b in content):
            # images, audio, resources: every block in order, text as its value
            items = [_text_value(b["text"]) if isinstance(b, dict) and b.get("type") == "text"
                     and isinstance(b.get("text"), str) else _content.from_block(b) for b in content]
            return items[0] if len(items) == 1 else items
        texts = [
            block["text"]
            for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        ]
        if texts:
            return _text_value(texts[0] if len(texts) == 1 else "\n".join(texts))
    return result


def call(server: str, tool: str, args: dict[str, Any] | None = None, timeout_ms: int | None = None) -> Pending:
    """Send ``tool`` on ``server`` with ``args`` now; return a Pending for its value.

    ``timeout_ms`` is the per-call deadline the gateway enforces (None: its default).
    Never blocks and never raises for a failed call: errors surface when the value is
    used (ToolError), or in gather(). Arguments that certainly do not fit the tool's input
    schema raise argguard.InvalidArguments here, before anything is sent.
    """
    state = runstate._current
    if _c_issue is not None and state is not None and sdk._current is _tools_snap:
        # the usual case (cached tool, flat scalar arguments, no write unanswered) in C,
        # argguard's check included (InvalidArguments: nothing is sent); None: nothing was
        # sent, take the path below
        p = _c_issue(state, server, tool, args, timeout_ms, _tools, _ids, _Call, Pending, transport._transport,
                     argguard.check)
        if p is not None:
            return p
    argguard.check(server, tool, args)  # InvalidArguments: nothing is sent
    call_id = "c%d" % next(_ids)
    if timeout_ms is not None:
        timeout_ms = int(timeout_ms)
    info = None
    if sdk._current is _tools_snap:  # _tool_info's cache, looked up inline (hot path)
        try:
            info = _tools.get((server, tool))
        except TypeError:
            pass
    fragment, label, mutation, _ = info if info is not None else _tool_info(server, tool)
    plain_args: Any = None
    args_json: str | None = None
    frame: str | None = None
    if type(args) is dict:
        if _c_call_frame is not None and fragment is not None:
            # flat scalar arguments (the usual case): the whole frame in C, else None
            frame = _c_call_frame(call_id, state.run_id_json if state is not None else "null", fragment, args,
                                  timeout_ms)
        if frame is not None:
            plain_args = dict(args)  # what a ToolError reports, as the JSON round trip gave
        else:
            args_json = _encode_plain(args)
    elif args is None:
        args_json = "{}"
    if args_json is None and frame is None:  # sets, NaN, datetimes, cycles...: jsonsafe's conversions
        plain_args = jsonsafe.to_jsonable(resolve(dict(args) if args else {}))
    if state is not None:
        # Program order for writes: a call to a server with an unanswered write in flight
        # waits for that write first (reads with no write before them still overlap).
        prev = state.writes.get(server) if state.writes else None
        if prev is not None and not prev.finished:
            try:
                prev.wait()
            except ToolError:
                pass  # the write's own Pending reports it
    c = _Call(call_id, server, tool, plain_args, args_json, timeout_ms, state, mutation)
    if state is not None:
        state.made.append(c)
        if mutation:
            try:
                state.writes[server] = c
            except TypeError:
                pass
    try:
        if frame is None:
            if args_json is None:
                args_json = jsonsafe.dumps(plain_args)
            if fragment is None:
                raise TypeError("server and tool must be JSON values, not %s/%s"
                                % (type(server).__name__, type(tool).__name__))
            frame = _FRAME % (call_id, state.run_id_json if state is not None else "null", fragment, args_json,
                              "null" if timeout_ms is None else timeout_ms)
        t = transport._transport  # _transport(), inlined: this is the hot path
        (t if t is not None else transport.get_transport()).send(frame)
    except Exception as exc:  # connection gone, no transport: fail on first use
        c._send_failed(exc)
    return Pending(c.take, c.poll, label, c.block)


def _contents(result: Any) -> Any:
    """A ReadResourceResult's contents as resource Content objects (returnable as they are)."""
    if isinstance(result, dict) and isinstance(result.get("contents"), list):
        return [_content.from_block({"type": "resource", "resource": c}) if isinstance(c, dict) else c
                for c in result["contents"]]
    return result


def read_resource(uri: str, timeout_ms: int | None = None) -> Pending:
    """Read resource ``uri`` from the server that lists it; a Pending for its contents: a list
    of Content objects (type "resource": ``.uri``, ``.mime_type``, ``.text``, ``.bytes()``),
    which a program may also return to the client. A failure raises ToolError on use.
    timeout_ms shortens the wait (the gateway's CODEMCP_CALL_TIMEOUT_MS is the most)."""
    if not isinstance(uri, str):
        raise TypeError("read_resource(uri): uri must be a string, not %s" % type(uri).__name__)
    if timeout_ms is not None:
        timeout_ms = int(timeout_ms)
    state = runstate._current
    call_id = "c%d" % next(_ids)
    c = _Call(call_id, "resources", "read", {"uri": uri}, None, timeout_ms, state, False)
    if state is not None:
        state.made.append(c)
    try:
        frame = '{"jsonrpc":"2.0","id":"%s","method":"read_resource","params":{"run_id":%s,"uri":%s,"timeout_ms":%s}}' % (
            call_id, state.run_id_json if state is not None else "null", jsonsafe.dumps(uri),
            "null" if timeout_ms is None else timeout_ms)
        t = transport._transport
        (t if t is not None else transport.get_transport()).send(frame)
    except Exception as exc:  # connection gone, no transport: fail on first use
        c._send_failed(exc)
    return Pending(lambda: _contents(c.take()), c.poll, "read_resource(%r)" % uri[:80], c.block)


def settle_open_calls(state: runstate.RunState, wait: bool) -> None:
    """At the end of a run: wait for (``wait``) or abandon every call nobody read, so the
    trace and the mutations are complete and no stale reply is kept. Never raises a
    ToolError; RunInterrupted passes through."""
    done = 0
    while True:
        made = state.made
        upto = len(made)
        pending = [c for c in made[done:upto] if not c.finished]
        if not pending:
            if upto == len(made):
                return
        done = upto  # calls made before this pass are settled by it (or raised)
        for c in pending:
            if wait:
                try:
                    c.wait()
                except ToolError:
                    pass
            else:
                c.abandon()


__all__ = ["call", "read_resource", "unwrap", "settle_open_calls"]
