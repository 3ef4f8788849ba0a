"""The value of a tool that answered with an error (``isError: true``): the server's own
text, as before, but used as data it raises at once with that text.

A program that reads ``filesystem_read_text_file(path=p)['content']`` for a missing file
used to get ``TypeError: string indices must be integers``, and the server's ENOENT was
lost. ErrorText is a ``str`` (printing it, ``in``, ``str(x)``, ``isinstance(x, str)``,
json.dumps all behave as before); only what a string cannot do anyway - a subscript with a
text key, an attribute a string lacks - raises UsedErrorResult, a ToolError (so ``except
ToolError`` catches it) that is also the TypeError / AttributeError the string would have
raised (so code catching those still does). Its message names the SDK function, the
server's text and the fix.
"""

from __future__ import annotations

from typing import Any

from codemcp_rt.errors import ToolError

__all__ = ["ErrorText", "wrap"]


class UsedErrorResult(ToolError, TypeError):
    """An error result read as data with a subscript."""


class UsedErrorResultAttr(ToolError, AttributeError):
    """An error result read as data through an attribute."""


class ErrorText(str):
    """The text of an error result; ``_origin`` is (server, tool, args)."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return str.__getitem__(self, key)  # what a str takes (int, slice, bool, __index__) as before
        except TypeError:
            raise _used(self, UsedErrorResult, "[%r]" % (key,)) from None

    def __getattr__(self, name: str) -> Any:  # only for attributes str does not have
        if name.startswith("__"):
            raise AttributeError(name)
        raise _used(self, UsedErrorResultAttr, ".%s" % name)

    def get(self, *args: Any, **kwargs: Any) -> Any:  # d.get(k) on a result that is an error
        raise _used(self, UsedErrorResultAttr, ".get(...)")


def _used(text: ErrorText, cls: type, how: str) -> ToolError:
    server, tool, args = text._origin
    name = _sdk_name(server, tool)
    message = ("%s answered with an error, so its result is this error text, not data (read as result%s): %s "
               "Handle the failure first (e.g. `except ToolError`, or check the result with isinstance(r, dict))."
               % (name, how, str.__str__(text).strip()))
    exc = cls("upstream_error", message, server, tool, args)
    return exc


def _sdk_name(server: str, tool: str) -> str:
    try:
        from codemcp_rt import sdk

        return sdk.current().by_tool.get((server, tool)) or "%s/%s" % (server, tool)
    except Exception:
        return "%s/%s" % (server, tool)


def wrap(text: str, server: str, tool: str, args: Any) -> ErrorText:
    out = ErrorText(text)
    out._origin = (server, tool, args)
    return out
