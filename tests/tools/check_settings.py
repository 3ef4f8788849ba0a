#!/usr/bin/env python3
"""Fails when the gateway reads its environment outside its settings, or a setting is undocumented.

Every setting lives once in src/config/settings.def (its variable, default, range and line);
src/config/settings.c is the only gateway file that calls getenv(). This checks both halves:
no other file under src/ (the worker host, src/worker/, is a binary of its own with its own
contract and is left out) calls getenv/secure_getenv/env_long/env_bool, and the README names
every variable settings.def lists.

Usage: check_settings.py REPO   (exit 1 listing each problem)
"""
from __future__ import annotations

import os
import re
import sys

READS = re.compile(r"\b(?:secure_getenv|getenv|env_long|env_bool)\s*\(")
ROW = re.compile(r'^S_(?:LONG|BOOL|STR|SECRET)\(\w+,\s*"([A-Z_]+)"', re.M)
OWNER = os.path.join("src", "config", "settings.c")


def strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)


def check(repo: str) -> list[str]:
    bad = []
    for root, dirs, names in os.walk(os.path.join(repo, "src")):
        dirs[:] = [d for d in dirs if d != "worker"]
        for name in names:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, repo)
            if not name.endswith(".c") or rel == OWNER:
                continue
            with open(path, encoding="utf-8") as f:
                code = strip_comments(f.read())
            for n, line in enumerate(code.splitlines(), 1):
                if READS.search(line):
                    bad.append(f"{rel}:{n}: reads the environment; add the setting to "
                               f"src/config/settings.def and take it from struct settings")
    with open(os.path.join(repo, "src", "config", "settings.def"), encoding="utf-8") as f:
        names = ROW.findall(f.read())
    with open(os.path.join(repo, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    for var in names:
        if f"`{var}`" not in readme:
            bad.append(f"README.md: does not document {var} (settings.def lists it)")
    return bad


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    bad = check(argv[1])
    for line in bad:
        print(line)
    print(f"{len(bad)} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
