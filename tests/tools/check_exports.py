#!/usr/bin/env python3
"""Fails on an exported function nobody calls.

A function declared in a header of src/ or sdkgen/ is part of its module's interface; one that
no file uses beyond its own definition is dead weight a reader has to understand and keep
true. This lists each such function: its name occurs in the project's C sources (src/,
sdkgen/, tests/: a unit test is a caller too) only in its header's declaration and its
definition.

Usage: check_exports.py REPO   (exit 1 listing each function nobody calls)
"""
from __future__ import annotations

import os
import re
import sys

PROTO = re.compile(r"^(?!typedef|#|\s|static|extern\s+\"C\")[A-Za-z_][\w\s\*]*?\b(\w+)\s*\(", re.M)
WORD = re.compile(r"\b\w+\b")


def sources(repo: str) -> dict[str, str]:
    out = {}
    for tree in ("src", "sdkgen", "tests"):
        for root, dirs, names in os.walk(os.path.join(repo, tree)):
            dirs[:] = [d for d in dirs if d != "node_modules"]
            for name in names:
                if name.endswith((".c", ".h")):
                    path = os.path.join(root, name)
                    with open(path, encoding="utf-8") as f:
                        out[os.path.relpath(path, repo)] = f.read()
    return out


def check(files: dict[str, str]) -> list[str]:
    declared: dict[str, str] = {}
    for path, text in files.items():
        if path.endswith(".h") and path.startswith(("src/", "sdkgen/")):
            for name in PROTO.findall(text):
                declared.setdefault(name, path)
    uses: dict[str, int] = dict.fromkeys(declared, 0)
    for text in files.values():
        for word in WORD.findall(text):
            if word in uses:
                uses[word] += 1
    # The declaration and the definition are two; a third occurrence is a use.
    return [f"{declared[n]}: {n} is exported but nobody calls it (remove it, or make it "
            f"static if its own file needs it)" for n, k in sorted(uses.items()) if k <= 2]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    bad = check(sources(argv[1]))
    for line in bad:
        print(line)
    print(f"{len(bad)} exported function(s) nobody calls")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
