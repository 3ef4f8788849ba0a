"""Errors that agent code can see: ToolError (a tool call failed) and RunInterrupted.

ToolError is raised when reading the value of an SDK call whose request failed at the
protocol level (timeout, auth, transport, unknown tool, upstream JSON-RPC error, or a
call the gateway refused). A tool that *answers* with an error (``isError: true``) is
not a ToolError: its text comes back as the value.

RunInterrupted is a BaseException so that ``except Exception`` in agent code does not
swallow a timeout or a cancellation.
"""

from __future__ import annotations

from typing import Any

from codemcp_rt.redact import is_secret_key, redact, redact_text  # noqa: F401 (re-exported)
from codemcp_rt.redact_rules import REDACTED  # noqa: F401 (re-exported)

KINDS = ("timeout", "auth", "transport", "not_found", "upstream_error", "denied", "input_required",
         "too_large", "budget")
"""The values ToolError.kind can take."""


class ToolError(Exception):
    """A tool call failed at the protocol level.

    Attributes:
        kind: one of timeout, auth, transport, not_found, upstream_error, denied,
            input_required (the server asked a question a program cannot answer), budget
            (the principal spent a budget of the gateway's config: the message names it
            and says when it resets).
        server: the upstream server name.
        tool: the upstream tool name.
        call_args: the call's arguments with secrets replaced by "***" (by key and by value,
            see codemcp_rt.redact).
        elapsed_ms: how long the call took, in milliseconds (None if unknown).
        message: what went wrong, as reported by the gateway or the upstream (credential-
            shaped text replaced by "***").
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
        self.message = redact_text(str(message))
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
