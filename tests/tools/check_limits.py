#!/usr/bin/python3
"""Every limit in python/codemcp_rt/limits.py is written there only: fails when a C file
(src/, sdkgen/) or a runtime module (python/codemcp_rt/) defines a constant of its own with
a limit's value under a name that says what the limit is about (a `#define`, a top-level
Python assignment, or a `.field =` assignment whose name holds the limit's key word).

    check_limits.py REPO

The key word of a limit is the one that tells it apart (KEYS): GRACE for CALL_GRACE_S, LINE
for CAPTURED_LINE_MAX, and so on. Values are compared after evaluating the
literal arithmetic (`64 * 1024`, `(size_t)256 << 20`, `10.0`)."""

import ast
import os
import re
import sys

LIMITS = "python/codemcp_rt/limits.py"
KEYS = {"CALL_GRACE_S": "GRACE", "RUN_DEFAULT_MAX_BYTES": "DEFAULT_MAX_BYTES", "CAPTURED_LINE_MAX": "LINE",
        "UPSTREAM_MESSAGE_MAX": "MESSAGE"}
# Same value and key word, another meaning: (path, name) -> why it is not the limit.
UNRELATED = {
    ("src/wire/jsonrpc.c", "RPC_LINE_KEEP"): "a line buffer up to this size is kept for reuse",
}
C_DEFINE = re.compile(r'^\s*#\s*define\s+(\w+)\s+(.+?)\s*(?:/\*.*)?$', re.M)
C_FIELD = re.compile(r'\.(\w+)\s*=\s*(?:[\w.>-]+\s*=\s*)*([^;,=]+)[;,]')
PY_ASSIGN = re.compile(r'^(\w+)\s*=\s*([^#\n]+)', re.M)
CAST = re.compile(r'\(\s*(?:size_t|long|int|unsigned|double|uint64_t|int64_t)\s*\)')
SUFFIX = re.compile(r'\b(\d+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU]?)\b')


def limits(repo):
    out = {}
    with open(os.path.join(repo, LIMITS), encoding="utf-8") as f:
        for node in ast.parse(f.read()).body:
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                out[node.targets[0].id] = ast.literal_eval(node.value)
    missing = set(out) ^ set(KEYS)
    if missing:
        raise SystemExit("check_limits: KEYS and %s disagree on %s" % (LIMITS, sorted(missing)))
    return out


def value(expr):
    """The number a literal expression denotes, or None."""
    expr = SUFFIX.sub(r"\1", CAST.sub("", expr)).strip()
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return None

    def ev(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool):
            return n.value
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            ops = {ast.Mult: lambda: a * b, ast.Add: lambda: a + b, ast.LShift: lambda: a << b}
            if a is not None and b is not None and type(n.op) in ops:
                return ops[type(n.op)]()
        return None
    return ev(tree.body)


def files(repo):
    for tree, ext in (("src", (".c", ".h")), ("sdkgen", (".c", ".h")), ("python/codemcp_rt", (".py",))):
        for d, _, names in os.walk(os.path.join(repo, tree)):
            for n in sorted(names):
                if n.endswith(ext):
                    p = os.path.join(d, n)
                    yield os.path.relpath(p, repo), p


def main():
    repo = sys.argv[1]
    lims = limits(repo)
    bad = []
    for rel, path in files(repo):
        if rel == LIMITS:
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        found = PY_ASSIGN.findall(text) if rel.endswith(".py") else C_DEFINE.findall(text) + C_FIELD.findall(text)
        for name, expr in found:
            v = value(expr)
            if v is None or (rel, name) in UNRELATED:
                continue
            for lim, lv in lims.items():
                if KEYS[lim] in name.upper() and float(v) == float(lv):
                    bad.append("%s: %s = %s repeats %s's %s (LIM_%s in C, limits.%s in Python)"
                               % (rel, name, expr.strip(), LIMITS, lim, lim, lim))
    for b in bad:
        print(b)
    if bad:
        print("check_limits: %d limit(s) written twice" % len(bad))
        return 1
    print("check_limits: %d limits, each written once" % len(lims))
    return 0


if __name__ == "__main__":
    sys.exit(main())
