"""run(params) -> envelope: execute one `run` request's code and describe the outcome.

What agent code sees:
  * The value of a final expression is the result (if that value is None and the
    code assigned ``result``, ``result`` wins, so ``result = x; print(result)`` works);
    otherwise ``result`` as assigned. ``result`` is cleared before every run.
  * Names injected fresh at the start of every run, replacing a variable of the same
    name: every function of the SDK the run started with, plus Pending, ToolError,
    gather, settle and resolve. Names the previous run injected that the current SDK no
    longer has are removed (unless the code rebound them).
  * Each namespace keeps its variables between runs (`reset: true` starts over). The
    gateway names the run's namespace ("n7": an internal key, never the client's handle)
    and lists the namespaces it dropped (`drop_namespaces`); many live in one worker.
  * print() output is captured per run, capped at max_output_bytes per stream.
  * Calls never read are waited for when the code finishes normally, so their writes
    are reported; after an error, a timeout or a cancellation they are abandoned.

The envelope (docs/control-protocol.md):
  success {"ok": true, "result", "calls", "stdout"?, "stderr"?, "mutations"?}
  failure {"ok": false, "error", "error_kind", "stdout"?, "stderr"?, "trace"?, "mutations"?}
  error_kind: exception | tool_error | timeout | cancelled | validation | syntax
"""

from __future__ import annotations

import ast
import threading
import builtins
import collections
import gc
import importlib
import inspect
import os
import re
import sys
import traceback
import types
import weakref
from typing import Any

from codemcp_rt import client, content, discovery, jsonsafe, limits, runstate, sdk
from codemcp_rt.capture import _codemcp as _codemcp_host, capture
from codemcp_rt import procs
from codemcp_rt.errors import RunInterrupted, ToolError
from codemcp_rt.redact import redact_text
from codemcp_rt.pending import Pending, gather, install_json_hook, resolve, settle
from codemcp_rt import transport as transport_mod
from codemcp_rt.transport import get_transport

FILENAME = "<codemcp>"
MAX_SESSIONS = 4096  # a safety valve only: the gateway decides (src/run/namespaces.c)
DEFAULT_MAX_BYTES = limits.RUN_DEFAULT_MAX_BYTES
_MAX_ERROR_CHARS = 16000

_sessions: "collections.OrderedDict[str, dict[str, Any]]" = collections.OrderedDict()
_injected: dict[str, dict[str, Any]] = {}
# Source lines of every live code object compiled from agent code, so a traceback
# through a function defined in an earlier run shows that run's line, not today's.
_sources: "weakref.WeakKeyDictionary[types.CodeType, list[str]]" = weakref.WeakKeyDictionary()


class BadRequest(ValueError):
    """The `run` request itself is malformed (answered with a JSON-RPC error)."""


class _Compiled:
    """The code objects of one program: ``body`` (exec) and ``last`` (the final
    expression, eval), compiled from ``tree`` without modifying it."""

    def __init__(self, code: str, tree: ast.Module) -> None:
        body = tree.body
        last = None
        if body and isinstance(body[-1], ast.Expr):
            last = ast.Expression(body[-1].value)
            tree = ast.Module(body=body[:-1], type_ignores=tree.type_ignores)
        # Top-level `await` (and async for/with) is allowed: a program using it compiles
        # to a coroutine, which _execute runs on a fresh event loop.
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        self.body = compile(tree, FILENAME, "exec", flags=flags)
        self.last = compile(last, FILENAME, "eval", flags=flags) if last is not None else None
        self.is_async = any(co is not None and co.co_flags & inspect.CO_COROUTINE for co in (self.body, self.last))
        lines = code.splitlines()
        for top in (self.body, self.last):
            if top is not None:
                self._register(top, lines)

    def _register(self, co: types.CodeType, lines: list[str]) -> None:
        _sources[co] = lines
        for const in co.co_consts:
            if isinstance(const, types.CodeType):
                self._register(const, lines)


# Programs are often sent again (retries, the same loop over new data): the compiled code
# and the validator's verdict are kept for the last few, in LRU order. Code objects are
# immutable, so one serves every run; the verdict also depends on the SDK snapshot, the
# shapes table, the run's mutation settings and the names the session already has.
CACHE_SIZE = 64
_compiled: "collections.OrderedDict[str, _Compiled]" = collections.OrderedDict()
_verdicts: "collections.OrderedDict[tuple[Any, ...], tuple[str | None]]" = collections.OrderedDict()
_verdicts_for: tuple[Any, Any] = (None, None)  # the (SDK snapshot, shapes table) they hold for


def _remember(cache: "collections.OrderedDict[Any, Any]", key: Any, value: Any) -> None:
    cache[key] = value
    if len(cache) > CACHE_SIZE:
        cache.popitem(last=False)


def _cached_or_parse(code: str) -> tuple[_Compiled | None, ast.Module | None]:
    """The compiled program from the cache, else (None, its AST) for the validator and
    _compile. Raises SyntaxError & co."""
    hit = _compiled.get(code)
    if hit is not None:
        _compiled.move_to_end(code)
        return hit, None
    return None, ast.parse(code, FILENAME, "exec")


def _compile(code: str, tree: ast.Module) -> _Compiled:
    """Compiles ``tree`` (``code``'s AST, not modified) and caches the result. Raises
    SyntaxError & co. (the compiler finds some the parser does not: `break` outside a
    loop, `nonlocal` at module level ...)."""
    compiled = _Compiled(code, tree)
    _remember(_compiled, code, compiled)
    return compiled


_SYNTAX_ERRORS = (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError)  # from parse/compile


def _syntax_report(exc: BaseException, code: str) -> str:
    """A compile error in the validator's words (the code was not executed), or the plain
    message when the validator is not available."""
    try:
        from . import validator
    except Exception:  # noqa: BLE001 - reporting must not fail
        return _syntax_message(exc)
    if isinstance(exc, SyntaxError):
        return validator.format_report([validator.syntax_problem(exc, code)])
    return validator.format_report([_syntax_message(exc)])


def _syntax_message(exc: BaseException) -> str:
    if not isinstance(exc, SyntaxError):
        return "SyntaxError: %s." % exc
    name = "SyntaxError" if type(exc) is SyntaxError else type(exc).__name__
    text = "%s: %s (line %s, col %s)." % (name, exc.msg, exc.lineno, exc.offset)
    if exc.text:
        src = exc.text.rstrip("\r\n")
        stripped = src.lstrip()
        text += "\n    " + stripped
        if exc.offset and exc.offset > 0:
            caret = max(0, exc.offset - 1 - (len(src) - len(stripped)))
            text += "\n    " + " " * caret + "^"
    return text


_fresh_for: tuple[Any, dict[str, Any]] = (None, {})
# Configured servers without functions (connecting, failed, disabled), from the run request:
# [{"server", "prefix", "state", "error"}]. Read by describe() and the pre-flight check.
_unavailable: list[dict[str, Any]] = []


def _set_unavailable(value: Any) -> None:
    global _fresh_for
    value = [u for u in value if isinstance(u, dict)] if isinstance(value, list) else []
    if value != _unavailable:
        _unavailable[:] = value
        _fresh_for = (None, {})  # describe() is rebound with the new list


def _unavailable_problems(code: str, snap: sdk.Sdk) -> list[str]:
    """Calls to functions of configured servers that have none yet: said plainly instead of
    "unknown function, did you mean" (the gateway already held the run while such a server
    was making its first connection, so these are failed or disabled servers)."""
    out = []
    for u in _unavailable:
        prefix = u.get("prefix")
        if not isinstance(prefix, str) or not prefix or prefix + "_" not in code:
            continue
        for name in sorted(set(re.findall(r"(?<![A-Za-z0-9_])%s_[A-Za-z0-9_]+" % re.escape(prefix), code))):
            if name in snap.functions:
                continue
            out.append("%s: server %s is configured but %s%s, so its functions are not available yet; "
                       "try again later or use another server." % (
                           name, u.get("server"), u.get("state") or "not connected",
                           (" (" + str(u["error"]) + ")") if u.get("error") else ""))
    return out


def _fresh(snap: sdk.Sdk) -> dict[str, Any]:
    """The names every run of ``snap`` injects (one dict per snapshot, never modified)."""
    global _fresh_for
    if _fresh_for[0] is not snap:
        fresh: dict[str, Any] = dict(snap.functions)
        fresh.update(Pending=Pending, ToolError=ToolError, gather=gather, settle=settle, resolve=resolve,
                     Content=content.Content, read_resource=client.read_resource)
        fresh.update(discovery.bind(snap, _unavailable))
        _fresh_for = (snap, fresh)
    return _fresh_for[1]


def _namespace(session: str, reset: bool, snap: sdk.Sdk) -> dict[str, Any]:
    # src/worker/pyrunset.c (pyrs_namespace) does the usual case itself: keep the two in step.
    ns = _sessions.get(session)
    if ns is None or reset:
        ns = {"__name__": "__main__", "__builtins__": builtins}
        _sessions[session] = ns
        _injected[session] = {}
        while len(_sessions) > MAX_SESSIONS:
            old, _ = _sessions.popitem(last=False)
            _injected.pop(old, None)
    _sessions.move_to_end(session)
    fresh = _fresh(snap)
    if _injected.get(session) is not fresh:  # a new SDK since this session's last run
        for name, obj in _injected.get(session, {}).items():
            if ns.get(name) is obj:
                del ns[name]
        _injected[session] = fresh
    ns.update(fresh)  # also puts back any injected name the last run rebound
    ns.pop("result", None)
    return ns


def drop_session(session: str) -> None:
    """Forget a namespace (named by the gateway's key, "n7")."""
    _sessions.pop(session, None)
    _injected.pop(session, None)


_validator: Any = None


def _validator_module() -> Any:
    global _validator
    if _validator is None:
        try:
            _validator = importlib.import_module("codemcp_rt.validator")
        except Exception:
            return None
    return _validator


def _validate(code: str, snap: sdk.Sdk, params: dict[str, Any], session: str,
              tree: ast.Module | None) -> str | None:
    """Run the pre-flight validator (codemcp_rt.validator) when it is there; return its
    report, or None when the code may run. A missing or crashing validator never
    blocks a run: the gateway enforces everything anyway. ``tree`` is ``code``'s AST
    when the caller has it (unmodified)."""
    global _validator
    if _validator is None:
        try:
            _validator = importlib.import_module("codemcp_rt.validator")
        except Exception as exc:
            _log("validator unavailable (%s); running without pre-flight checks" % exc)
            return None
    module = _validator
    ns: Any = () if params.get("reset") else _sessions.get(session, ())
    shapes = sdk.shapes() or None
    enforce = bool(params.get("enforce_mutations"))
    allow = tuple(params.get("allow_mutations") or ())
    disabled = tuple(params.get("disabled") or ())
    dry_run = bool(params.get("dry_run"))
    policy = params.get("policy") or None
    global _verdicts_for
    if _verdicts_for[0] is not snap or _verdicts_for[1] is not shapes:
        _verdicts.clear()  # verdicts hold for one SDK snapshot and one shapes table
        _verdicts_for = (snap, shapes)
    # The verdict depends on the namespace only through `name in known_names` tests of names
    # the program itself spells (validator, callcheck, jsnames), so a cached verdict holds
    # while the program's own identifiers are bound (or not) as they were: no frozenset of
    # the whole namespace per run. Non-ASCII code (identifiers are NFKC-normalised) compares
    # the whole namespace, as before.
    try:
        key: Any = (code, enforce, allow, disabled, dry_run, repr(policy) if policy else None)
        hit = _verdicts.get(key)
    except TypeError:  # unhashable option values: validate without the cache
        key, hit = None, None
    if hit is not None:
        tokens, bound_then, verdict = hit
        if bound_then == _bound_part(tokens, ns):
            _verdicts.move_to_end(key)
            return verdict
    try:
        problems = module.validate(code, snap.functions, snap.meta, shapes=shapes, enforce_mutations=enforce,
                                   allow_mutations=allow, disabled=disabled, dry_run=dry_run,
                                   known_names=frozenset(ns), tree=tree, policy=policy)
        verdict = module.format_report(problems) if problems else None
    except Exception as exc:
        _log("validator failed (%s: %s); running without pre-flight checks" % (type(exc).__name__, exc))
        return None
    if key is not None:
        tokens = frozenset(_IDENT(code)) if code.isascii() else None
        _remember(_verdicts, key, (tokens, _bound_part(tokens, ns), verdict))
    return verdict


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").findall


def _bound_part(tokens: frozenset[str] | None, ns: Any) -> frozenset[str]:
    """The names of ``ns`` a verdict may depend on: those among the program's identifiers
    (every name when they are not known)."""
    if tokens is None:
        return frozenset(ns)
    return frozenset(filter(ns.__contains__, tokens))


def _user_stack(tb: Any) -> traceback.StackSummary:
    frames = []
    for frame, lineno in traceback.walk_tb(tb):
        co = frame.f_code
        if co.co_filename != FILENAME:
            continue
        lines = _sources.get(co) or []
        line = lines[lineno - 1] if lineno and 0 < lineno <= len(lines) else ""
        frames.append(traceback.FrameSummary(FILENAME, lineno, co.co_name, lookup_line=False, line=line))
    return traceback.StackSummary.from_list(frames)


def _last_user_frame(exc: BaseException) -> tuple[Any, int] | None:
    """(frame, line) of the last frame of agent code ``exc`` passed through."""
    last = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == FILENAME:
            last = (frame, lineno)
    return last


def _user_line(exc: BaseException) -> tuple[int, str] | None:
    """(line, its text) of the last frame of agent code ``exc`` passed through."""
    last = _last_user_frame(exc)
    if last is None or not last[1]:
        return None
    lines = _sources.get(last[0].f_code) or []
    text = lines[last[1] - 1].strip() if 0 < last[1] <= len(lines) else ""
    return last[1], redact_text(text[:120])  # the line may hold a credential, as a traceback may


def _result_hint(exc: BaseException) -> str | None:
    """errhint's line for an error raised reading an SDK result, from the last frame of
    agent code the error passed through."""
    last = _last_user_frame(exc)
    if last is None:
        return None
    frame, lineno = last
    try:
        from codemcp_rt import errhint
    except ImportError:
        return None
    return errhint.hint(exc, frame, _sources.get(frame.f_code) or [], lineno)


def _format_exception(exc: BaseException) -> str:
    """The traceback text, showing only the agent's own frames (file "<codemcp>")."""
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__, lookup_lines=False)
    pairs = [(te, exc)]
    seen = set()
    while pairs:
        t, e = pairs.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        t.stack = _user_stack(e.__traceback__)
        if t.__cause__ is not None and e.__cause__ is not None:
            pairs.append((t.__cause__, e.__cause__))
        if t.__context__ is not None and e.__context__ is not None:
            pairs.append((t.__context__, e.__context__))
    text = "".join(te.format()).rstrip("\n")
    if isinstance(exc, (KeyError, AttributeError, TypeError, IndexError, ZeroDivisionError)):
        extra = _result_hint(exc)
        if extra:
            text += "\n" + extra
    if len(text) > _MAX_ERROR_CHARS:
        half = _MAX_ERROR_CHARS // 2
        text = text[:half] + "\n…[%d characters cut]…\n" % (len(text) - 2 * half) + text[-half:]
    return text


def _run_body(compiled: _Compiled, ns: dict[str, Any]) -> Any:
    """Execute a (synchronous) program; return its value before resolving."""
    try:
        exec(compiled.body, ns)
    except SystemExit as exc:  # exit()/sys.exit(0) end the run normally
        if exc.code not in (None, 0):
            raise
        return ns.get("result")
    if compiled.last is not None:
        value = eval(compiled.last, ns)
        if value is None and "result" in ns:
            value = ns["result"]
        return value
    return ns.get("result")


def _run_async(compiled: _Compiled, ns: dict[str, Any]) -> Any:
    """A program with top-level ``await``: body and final expression run as one coroutine
    on a fresh event loop (closed afterwards), so the program's own tasks share it."""
    import asyncio

    async def main() -> Any:
        try:
            done = eval(compiled.body, ns)
            if inspect.iscoroutine(done):
                await done
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise
            return ns.get("result")
        if compiled.last is None:
            return ns.get("result")
        value = eval(compiled.last, ns)
        if inspect.iscoroutine(value):
            value = await value
        if value is None and "result" in ns:
            value = ns["result"]
        return value

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(main())
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        except BaseException:
            pass
        loop.close()


def _execute(compiled: _Compiled, ns: dict[str, Any], state: runstate.RunState) -> Any:
    """Run the code; return the (resolved) result. Raises what the code raised."""
    try:
        state.interruptible = True
        if state.early_interrupt is not None and not state.interrupted:
            state.interrupted = True
            raise RunInterrupted(state.early_interrupt)
        if compiled.is_async:
            value = _run_async(compiled, ns)
        else:
            value = _run_body(compiled, ns)
        value = resolve(value)
        client.settle_open_calls(state, wait=True)
        return value
    finally:
        state.interruptible = False
        state.finished = True


def _set_current_run(run_id: str | None) -> None:
    try:
        t = transport_mod._transport  # get_transport() without its lock, once one is set
        setter = getattr(t if t is not None else get_transport(), "set_current_run", None)
        if setter is not None:
            setter(run_id)
    except Exception:
        pass


def _log(message: str) -> None:
    """A line for the gateway's log. In the worker host that is its own descriptor: fds 1
    and 2 carry the current run's output (see capture.py)."""
    data = ("codemcp_rt: %s\n" % message).encode("utf-8", "replace")
    try:
        if _codemcp_host is not None:
            os.write(_codemcp_host.log_fd(), data)
        elif sys.__stderr__ is not None:
            sys.__stderr__.write(data.decode("utf-8"))
            sys.__stderr__.flush()
    except Exception:
        pass


def _int_param(params: dict[str, Any], name: str, default: int) -> int:
    value = params.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest("run: params.%s must be a number" % name)
    return int(value)


def run(params: dict[str, Any]) -> dict[str, Any]:
    """Execute ``params["code"]`` and return the envelope. Raises BadRequest only for a
    malformed request; every outcome of the code itself is an envelope."""
    return _run(params)[0]


def run_json(params: dict[str, Any]) -> str:
    """run(), with the envelope as compact JSON text (the result is serialized once)."""
    envelope, result_text = _run(params)
    return envelope_json(envelope, result_text)


def _prepare(code: str, session: str, params: dict[str, Any]) -> tuple[Any, Any, dict[str, Any] | None]:
    """The head of every run, for _run and the C run path (_fast_prepare): parse, validate,
    then compile ``code``. Returns (compiled, snap, None), or (None, snap, the failure
    envelope) for a syntax error or a validator report.

    Parse, validate, then compile: the validator walks the tree while the parse has just
    left it in the CPU caches (a 500-line program's tree is megabytes of objects; walked
    after the compiler, validation took about 0.5 ms more of a 2 ms phase in the worker).
    A syntax error the compiler finds still wins over the validator's report, as it did
    when compiling came first.
    The collector is paused while the program is parsed, validated and compiled: the tree
    is tens of thousands of new objects that its allocations would make it traverse again
    and again, and none of them forms a cycle (the tree is freed by reference counting
    below). bench/validation.mjs, 500 call sites: a run 2-6 ms faster with or without
    validation, and the share validation adds 2.2-7.5 % before, 3.3-3.4 % after (3 runs)."""
    install_json_hook()
    gc_was = gc.isenabled()
    gc.disable()
    snap = None
    try:
        compiled, tree = _cached_or_parse(code)
        snap = sdk.current()
        _set_unavailable(params.get("unavailable"))
        message = None
        if _unavailable and params.get("validate"):
            problems = _unavailable_problems(code, snap)
            if problems:
                message = _validator_module().format_report(problems) if _validator_module() else "\n".join(problems)
        if message is None and params.get("validate"):
            message = _validate(code, snap, params, session, tree)
        if compiled is None:
            compiled = _compile(code, tree)  # type: ignore[arg-type]
    except _SYNTAX_ERRORS as exc:
        return None, snap, {"ok": False, "error": _syntax_report(exc, code), "error_kind": "syntax"}
    finally:
        tree = None
        if gc_was:
            gc.enable()
    if message:
        return None, snap, {"ok": False, "error": message, "error_kind": "validation"}
    return compiled, snap, None


def _run(params: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The envelope, and the JSON text of its "result" when it has one."""
    if not isinstance(params, dict):
        raise BadRequest("run: params must be an object")
    code = params.get("code")
    if not isinstance(code, str):
        raise BadRequest("run: params.code must be a string")
    run_id = params.get("run_id")
    session = str(params.get("namespace") or params.get("session") or "default")
    for key in params.get("drop_namespaces") or ():
        if isinstance(key, str) and key != session:
            drop_session(key)
    if params.get("namespace_fresh") is False and session not in _sessions \
            and not params.get("namespace_note"):
        # The gateway knows this namespace had variables; this process never saw them.
        params["namespace_note"] = ("this namespace's variables were lost: its Python worker "
                                    "was restarted since its last run")
    max_output = _int_param(params, "max_output_bytes", DEFAULT_MAX_BYTES)
    max_result = _int_param(params, "max_result_bytes", DEFAULT_MAX_BYTES)
    timeout_ms = params.get("timeout_ms")
    compiled, snap, failure = _prepare(code, session, params)
    if failure is not None:
        return failure, None

    ns = _namespace(session, bool(params.get("reset")), snap)
    enforce = bool(params.get("enforce_mutations"))
    threads_before = set(threading.enumerate()) if enforce else None
    state = runstate.RunState(run_id)
    envelope: dict[str, Any]
    result_text: str | None = None
    runstate.begin(state)
    _set_current_run(run_id)
    try:
        with capture(max_output) as (out, err):
            try:
                value = _execute(compiled, ns, state)
                envelope, result_text = _success(value, state, max_result)
            except BaseException as exc:  # noqa: B902 - agent code may raise anything
                envelope = _failure(exc, params, timeout_ms)
            if not envelope["ok"]:
                client.settle_open_calls(state, wait=False)
    finally:
        _set_current_run(None)
        runstate.end()
    return _tail(envelope, result_text, state, out, err, threads_before)


def _success(value: Any, state: runstate.RunState, max_result: int) -> tuple[dict[str, Any], str]:
    """The envelope of a run that returned ``value``, and its result's JSON. Content objects
    in the value travel as the envelope's ``content`` blocks (see codemcp_rt.content); their
    payloads and the result share the result cap."""
    value, blocks = content.extract(value, max_result)
    if blocks:
        used = sum(content.Content(b).size() for b in blocks)
        max_result = max(1, max_result - used) if max_result > 0 else max_result
    result, result_text = jsonsafe.cap_json(value, max_result)
    envelope = {"ok": True, "result": result, "calls": state.calls}
    if blocks:
        envelope["content"] = blocks
    return envelope, result_text


def _failure(exc: BaseException, params: dict[str, Any], timeout_ms: Any) -> dict[str, Any]:
    """The envelope of a run whose code raised ``exc`` (RunInterrupted: timeout/cancelled)."""
    if isinstance(exc, RunInterrupted):
        if exc.reason == "timeout":
            after = " after %s ms" % timeout_ms if isinstance(timeout_ms, int) else ""
            where = _user_line(exc)
            at = " at line %d (%s)" % where if where else ""
            return {"ok": False, "error": "execution timed out%s%s. The run's time limit is execute_python's "
                    "timeout_ms: pass a larger timeout_ms, or do less per run." % (after, at),
                    "error_kind": "timeout"}
        return {"ok": False, "error": "execution cancelled", "error_kind": "cancelled"}
    if isinstance(exc, ToolError):
        report = exc.to_dict()
        where = _user_line(exc)
        if where:
            report["at"] = "(line %d) %s" % where  # where the program used the failed call
        if exc.kind == "timeout":
            report["fix"] = ("the call got no answer within its time limit (line %s). Pass a larger "
                             "timeout_ms= to this call (e.g. fn(..., timeout_ms=60000)); the run's own "
                             "timeout_ms must cover it too." % (where[0] if where else "?"))
        text = jsonsafe.dumps_capped({"tool_error": report}, _MAX_ERROR_CHARS)
        return {"ok": False, "error": text, "error_kind": "tool_error"}
    # Credential-shaped text in a traceback is hidden (codemcp_rt.redact).
    error = redact_text(_format_exception(exc))
    note = params.get("namespace_note")
    if isinstance(exc, NameError) and isinstance(note, str) and note:
        error += "\n(%s)" % note  # not a bare NameError: say why the name is gone
    return {"ok": False, "error": error, "error_kind": "exception"}


def _tail(envelope: dict[str, Any], result_text: str | None, state: runstate.RunState, out: Any, err: Any,
          threads_before: Any) -> tuple[dict[str, Any], str | None]:
    """After the capture ended: stopped runs' processes, output, trace, mutations."""
    if envelope.get("error_kind") in ("timeout", "cancelled"):
        procs.kill_descendants()  # no process a stopped run started outlives it
    stdout, stderr = out.getvalue(), err.getvalue()
    if threads_before is not None:
        left = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()]
        if left:
            # A thread outliving its run could call tools under a later run's
            # allow_mutations: the gateway restarts this worker instead.
            envelope["recycle"] = True
            stderr += ("codemcp: this run left %d thread(s) running; the worker is restarted "
                       "(session variables are lost) so they cannot act under a later run's "
                       "authorization\n" % len(left))
    if stdout:
        envelope["stdout"] = stdout
    if stderr:
        envelope["stderr"] = stderr
    if not envelope["ok"] and state.made:
        envelope["trace"] = state.trace
    if state.mutations:
        envelope["mutations"] = list(state.mutations)
    state.release()
    return envelope, result_text


# ---- the C run path's Python steps (src/worker/pyrun.c) ------------------------------------
# pyrun.c runs the usual `run` request itself: its cache (code -> code objects and the
# validator's verdict), the namespace's verdict check, the interpreter state swap, the capture,
# the envelope and the reply are in C, out of reach of agent code. It calls these functions
# (references it took when the worker started) for the work that stays Python.


def _fast_prepare(code: str, session: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
    """On a miss of pyrun's cache: _prepare, as _run does. Returns (body, last, tokens, bound)
    when the program validated clean and runs synchronously: ``tokens`` the program's
    identifiers, ``bound`` which of them the namespace had (b"0"/b"1" each), so a later run
    may reuse the verdict while they are bound the same way. None: the run takes the Python
    path (a syntax error, a report, unavailable servers, top-level await, non-ASCII code)."""
    compiled, _snap, failure = _prepare(code, session, params)
    if failure is not None or _unavailable or compiled.is_async or not code.isascii():
        return None
    ns: Any = () if params.get("reset") else _sessions.get(session, ())
    tokens = tuple(sorted(set(_IDENT(code)))) if params.get("validate") else ()
    bound = bytes(b"1"[0] if t in ns else b"0"[0] for t in tokens)
    return compiled.body, compiled.last, tokens, bound


def _fast_settle(value: Any, state: runstate.RunState) -> Any:
    """The end of _execute: resolve the value, wait for the calls nobody read."""
    value = resolve(value)
    client.settle_open_calls(state, wait=True)
    return value


def _fast_outcome(state: runstate.RunState, params: dict[str, Any], exc: BaseException | None, value: Any,
                  max_result: int) -> tuple[dict[str, Any], str | None]:
    """Inside the capture, after the code ran: the envelope and its result's JSON, as _run."""
    result_text = None
    if exc is None:
        envelope, result_text = _success(value, state, max_result)
    else:
        try:
            raise exc
        except BaseException as e:  # noqa: B902 - so the traceback formatting sees it raised
            envelope = _failure(e, params, params.get("timeout_ms"))
        finally:
            exc = None
    if not envelope["ok"]:
        client.settle_open_calls(state, wait=False)
    return envelope, result_text


def _fast_tail(envelope: dict[str, Any], result_text: str | None, state: runstate.RunState,
               out: Any, err: Any) -> str:
    """After the capture: the envelope's JSON text (_tail, then envelope_json)."""
    return envelope_json(*_tail(envelope, result_text, state, out, err, None))


def envelope_json(envelope: dict[str, Any], result_text: str | None = None) -> str:
    """The envelope as compact JSON text (it is already JSON-safe). ``result_text``: the
    JSON of envelope["result"] when the caller has it (it is used, not recomputed)."""
    if result_text is None or envelope.get("ok") is not True or "result" not in envelope:
        return jsonsafe.dumps(envelope)
    calls = envelope.get("calls")
    if len(envelope) == 3 and type(calls) is int:  # {"ok", "result", "calls"}: no output, no mutations
        return '{"ok":true,"result":%s,"calls":%d}' % (result_text, calls)
    rest = jsonsafe.dumps({k: v for k, v in envelope.items() if k != "ok" and k != "result"})
    return '{"ok":true,"result":%s%s' % (result_text, "," + rest[1:] if len(rest) > 2 else "}")
