#!/usr/bin/env python3
"""Fails when the modules' includes form a circle, and keeps the module map in the docs true.

A module is a folder: src/<folder>/ (src/main.c alone is `main`, src/worker/ is `worker`) and
sdkgen/. A file may include headers of its own module and of modules that do not, directly or
through others, include its module back: the modules form a stack (calls go down, results come
back up through hooks that main.c registers at init). So this checks that the graph "module A
includes a header of module B" has no cycle, that every quoted include names a file that
exists in one of the scanned trees (or a header the build generates), and that the map
docs/architecture.md draws between its `module-map` markers is the one the folders give.

Usage: check_layers.py REPO            check, exit 1 listing each problem
       check_layers.py REPO --map      print the map as the docs must show it
       check_layers.py --self-test     check that the checker catches a circle
"""
from __future__ import annotations

import os
import re
import sys

# The trees scanned, relative to the repository: (folder, module name for files at its top).
TREES = (("src", "main"), ("sdkgen", "sdkgen"))
# Headers the build writes (src/meson.build, python/meson.build): they belong to no folder.
GENERATED = {"redact_rules.h", "codemcp_embedded.h", "codemcp_limits.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
MAP_BEGIN = "<!-- module-map:begin (tests/tools/check_layers.py --map) -->"
MAP_END = "<!-- module-map:end -->"


def scan(repo: str) -> dict[str, tuple[str, str]]:
    """path -> (module, text) for every .c/.h in the trees."""
    files = {}
    for tree, top in TREES:
        base = os.path.join(repo, tree)
        for root, _, names in os.walk(base):
            rel = os.path.relpath(root, base)
            module = top if rel == "." else (rel.split(os.sep)[0] if tree == "src" else tree)
            for name in names:
                if name.endswith((".c", ".h", ".def")):
                    path = os.path.join(root, name)
                    with open(path, encoding="utf-8") as f:
                        files[os.path.relpath(path, repo)] = (module, f.read())
    return files


def graph(files: dict[str, tuple[str, str]]) -> tuple[dict[str, set[str]], list[str]]:
    """module -> modules it includes; and the problems found on the way."""
    bad = []
    deps: dict[str, set[str]] = {m: set() for m, _ in files.values()}
    # Headers are included by bare name (meson puts every folder on the include path), so a
    # header name must be unique across the trees.
    headers: dict[str, str] = {}
    for path, (module, _) in sorted(files.items()):
        name = os.path.basename(path)
        if name.endswith((".h", ".def")):
            if name in headers:
                bad.append(f"{path}: a header named {name} is also in module {headers[name]}")
            headers[name] = module
    for name, (me, text) in sorted(files.items()):
        for inc in INCLUDE.findall(text):
            header = os.path.basename(inc)
            if header in GENERATED:
                continue
            if header not in headers:
                bad.append(f"{name}: includes \"{inc}\", which is in no scanned folder")
                continue
            them = headers[header]
            if them != me:
                deps[me].add(them)
    return deps, bad


def cycles(deps: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(deps.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(deps):
        if v not in index:
            visit(v)
    return found


def module_map(deps: dict[str, set[str]]) -> str:
    """Modules bottom-up (each after everything it uses), with what each uses directly."""
    order: list[str] = []
    left = {m: set(d) for m, d in deps.items()}
    while left:
        ready = sorted(m for m, d in left.items() if not d - set(order))
        order += ready
        for m in ready:
            del left[m]
    width = max(len(m) for m in order)
    lines = [f"{m.ljust(width)}  uses: {', '.join(sorted(deps[m])) or '-'}" for m in order]
    return "\n".join(reversed(lines))


def docs_map(repo: str) -> str | None:
    with open(os.path.join(repo, "docs", "architecture.md"), encoding="utf-8") as f:
        text = f.read()
    if MAP_BEGIN not in text or MAP_END not in text:
        return None
    inner = text.split(MAP_BEGIN, 1)[1].split(MAP_END, 1)[0]
    return inner.strip().strip("`").strip()


def self_test() -> int:
    ok_files = {"a.c": ("run", '#include "b.h"\n'), "b.h": ("core", "")}
    circle = {"a.c": ("run", '#include "b.h"\n'), "a.h": ("run", ""),
              "b.h": ("core", '#include "a.h"\n')}
    stranger = {"a.c": ("run", '#include "nowhere.h"\n')}
    d1, b1 = graph(ok_files)
    d2, b2 = graph(circle)
    _, b3 = graph(stranger)
    ok = not b1 and not cycles(d1) and not b2 and cycles(d2) == [["core", "run"]] and len(b3) == 1
    print("self-test:", "ok" if ok else "FAILED")
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--map"):
        print(__doc__, file=sys.stderr)
        return 2
    deps, bad = graph(scan(argv[1]))
    if not deps:
        print(f"no C sources under {argv[1]}/src or {argv[1]}/sdkgen: give the repository's root")
        return 2
    for comp in cycles(deps):
        bad.append(f"modules include each other in a circle: {' <-> '.join(comp)} "
                   f"(report up through a hook registered in main.c instead)")
    if len(argv) == 3:
        if bad:
            print("\n".join(bad), file=sys.stderr)
            return 1
        print(module_map(deps))
        return 0
    if self_test():
        return 1
    if not bad:
        want = module_map(deps)
        have = docs_map(argv[1])
        if have != want:
            bad.append("docs/architecture.md's module map is not the folders' one: replace the "
                       "block between its module-map markers with the output of "
                       "`tests/tools/check_layers.py . --map`")
    for line in bad:
        print(line)
    print(f"{len(deps)} modules checked, {len(bad)} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
