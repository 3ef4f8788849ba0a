"""The validator's check of JS-style and import-style SDK names: `mcp.everything.echo(...)`,
`everything.echo(...)`, `tools.memory.read_graph()`, `from everything import echo`,
`import everything` — each reported with the SDK name to call instead.

Split from validator.py, which records the dotted calls and imports during its walk.
Only names the program does not bind itself (and the runner does not define) are
judged; a module that really exists here is never flagged. Stdlib only (plus callcheck).
"""

from __future__ import annotations

import ast
from typing import Any, Callable

try:
    from . import callcheck as _callcheck
except ImportError:  # loaded as a top-level module
    import callcheck as _callcheck  # type: ignore[no-redef]

__all__ = ["problems"]

# Names models use for "the namespace of all tools" (mcp.<server>.<tool>(...)).
_NAMESPACES = frozenset({"mcp", "tools", "sdk", "codemcp", "servers", "functions", "default_api", "api"})


def problems(
    f: Any, functions: dict[str, Callable], meta: dict[str, dict], known: frozenset
) -> list[tuple[int, int, int, str]]:
    """`mcp.everything.echo(...)`, `everything.echo(...)`, `tools.memory.read_graph()`,
    `from everything import echo`, `import everything`: the SDK name to use instead. Only
    names the program does not bind itself (and the runner does not define) are judged."""
    index = _callcheck._SdkIndex.of(functions, meta)
    out: list[tuple[int, int, int, str]] = []
    for parts, call in f.dotted:
        root = parts[0]
        if root in f.binds or root in known:
            continue
        written = ".".join(parts)
        hint = index.dotted(parts[1:] if root in _NAMESPACES else parts)
        if hint is None:
            continue
        msg = "`%s` is not defined (line %d): SDK functions are plain names already in scope.%s" % (
            written, call.lineno, hint)
        out.append((call.lineno, call.col_offset, 1, msg))
    for node in f.imports:
        if type(node) is ast.ImportFrom:
            if node.level or not node.module:
                continue
            parts = tuple(node.module.split("."))
            root = parts[0]
            names = [a.name for a in node.names]
        else:
            for alias in node.names:
                parts = tuple(alias.name.split("."))
                root = parts[0]
                hint = index.dotted(parts[1:] if root in _NAMESPACES and len(parts) > 1 else parts, module=True)
                if hint is not None and not _importable(root):
                    msg = "`import %s` (line %d): SDK functions are not imported, they are already in scope.%s" % (
                        alias.name, node.lineno, hint)
                    out.append((node.lineno, node.col_offset, 1, msg))
            continue
        base = parts[1:] if root in _NAMESPACES else parts
        if not base or _importable(root):
            continue
        for name in names:
            hint = index.dotted(base + (name,)) if name != "*" else index.dotted(base, module=True)
            if hint is None and name != "*":
                hint = index.dotted(base, module=True)
            if hint is None:
                continue
            msg = "`from %s import %s` (line %d): SDK functions are not imported, they are already in scope.%s" % (
                node.module, name, node.lineno, hint)
            out.append((node.lineno, node.col_offset, 1, msg))
    return out


_IMPORTABLE: dict[str, bool] = {}


def _importable(root: str) -> bool:
    """True if ``root`` is a real module here (a server named like a module stays usable)."""
    hit = _IMPORTABLE.get(root)
    if hit is None:
        import importlib.util

        try:
            hit = importlib.util.find_spec(root) is not None
        except (ImportError, ValueError):
            hit = False
        _IMPORTABLE[root] = hit
    return hit
