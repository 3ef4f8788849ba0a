"""Errors that agent code can see: ToolError (a tool call failed) and RunInterrupted.

ToolError is raised when reading the value of an SDK call whose request failed at the
protocol level (timeout, auth, transport, unknown tool, upstream JSON-RPC error, or a
call the gateway refused). A tool that *answers* with an error (``isError: true``) is
not a ToolError: its text comes back as the value.

RunInterrupted is a BaseException so that ``except Exception`` in agent code does not
swallow a timeout or a cancellation.
"""

from __future__ import annotations

import re
from typing import Any

KINDS = ("timeout", "auth", "transport", "not_found", "upstream_error", "denied", "input_required")
"""The values ToolError.kind can take."""

REDACTED = "***"
"""Placeholder written instead of a secret argument value."""

_MAX_STR = 200
_MAX_DEPTH = 8

# Words that mark an argument name as a secret. Matched against the name's words
# (split on _ - . space and camelCase), so "author" or "authority" are NOT secrets
# while "auth", "authToken", "x-api-key" and "client_secret" are.
_SECRET_WORDS = {
    "token",
    "tokens",
    "secret",
    "secrets",
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "apikey",
    "auth",
    "authorization",
    "authentication",
    "credential",
    "credentials",
    "cookie",
    "cookies",
    "bearer",
    "private",
    "signature",
}
_SECRET_PAIRS = {("api", "key"), ("private", "key"), ("access", "key"), ("session", "id")}
_WORD_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def is_secret_key(key: str) -> bool:
    """True when an argument named ``key`` probably holds a secret."""
    words = [w.lower() for w in _WORD_RE.findall(str(key))]
    if any(w in _SECRET_WORDS for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in zip(words, words[1:]))


def redact(value: Any, _depth: int = 0) -> Any:
    """Return a copy of ``value`` fit for reports: secret-looking keys at any depth get
    ``"***"``, long strings are shortened, and deep nesting is cut.

    Booleans and None under a secret key are kept (``private: true`` is not a secret).
    Never raises.
    """
    try:
        if _depth > _MAX_DEPTH:
            return "…"
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                ks = k if isinstance(k, str) else str(k)
                if is_secret_key(ks) and v is not None and not isinstance(v, bool):
                    out[ks] = REDACTED
                else:
                    out[ks] = redact(v, _depth + 1)
            return out
        if isinstance(value, (list, tuple)):
            items = [redact(v, _depth + 1) for v in value[:50]]
            if len(value) > 50:
                items.append("…(%d more)" % (len(value) - 50))
            return items
        if isinstance(value, str):
            if len(value) > _MAX_STR:
                return value[:_MAX_STR] + "…(%d chars)" % len(value)
            return value
        if value is None or isinstance(value, (bool, int, float)):
            return value
        text = repr(value)
        return text if len(text) <= _MAX_STR else text[:_MAX_STR] + "…"
    except Exception:  # a report helper must never fail the caller
        return "<unprintable>"


class ToolError(Exception):
    """A tool call failed at the protocol level.

    Attributes:
        kind: one of timeout, auth, transport, not_found, upstream_error, denied,
            input_required (the server asked a question a program cannot answer).
        server: the upstream server name.
        tool: the upstream tool name.
        call_args: the call's arguments with secrets replaced by "***".
        elapsed_ms: how long the call took, in milliseconds (None if unknown).
        message: what went wrong, as reported by the gateway or the upstream.
    """

    def __init__(
        self,
        kind: str,
        message: str,
        server: str | None = None,
        tool: str | None = None,
        call_args: Any = None,
        elapsed_ms: int | None = None,
    ) -> None:
        self.kind = kind if kind in KINDS else "upstream_error"
        self.message = str(message)
        self.server = server
        self.tool = tool
        self.call_args = redact(call_args) if call_args is not None else {}
        self.elapsed_ms = elapsed_ms
        super().__init__(self.message)

    def __str__(self) -> str:
        where = "%s/%s" % (self.server, self.tool) if self.server or self.tool else "tool call"
        text = "%s failed (%s): %s" % (where, self.kind, self.message)
        if self.elapsed_ms is not None:
            text += " [after %d ms]" % self.elapsed_ms
        return text

    def __repr__(self) -> str:
        return "ToolError(kind=%r, server=%r, tool=%r, message=%r)" % (
            self.kind,
            self.server,
            self.tool,
            self.message,
        )

    def __reduce__(self):  # keep pickling/copying working despite the custom __init__
        return (
            ToolError,
            (self.kind, self.message, self.server, self.tool, None, self.elapsed_ms),
            {"call_args": self.call_args},
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form used in ``{"tool_error": ...}`` and in gather() results."""
        return {
            "kind": self.kind,
            "server": self.server,
            "tool": self.tool,
            "args": self.call_args,
            "message": self.message,
            "elapsed_ms": self.elapsed_ms,
        }


class RunInterrupted(BaseException):
    """The run was stopped from outside: ``reason`` is "timeout" or "cancelled".

    Raised once, by the SIGUSR1 handler, on the worker's main thread.
    """

    def __init__(self, reason: str = "cancelled") -> None:
        self.reason = reason
        super().__init__(reason)
