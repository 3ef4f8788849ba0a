#!/usr/bin/env python3
"""Fails when the modules' includes form a circle, and keeps the module map in the docs true.

A module is a folder: src/<folder>/ (src/main.c alone is `main`, src/worker/ is `worker`) and
sdkgen/. A file may include headers of its own module and of modules that do not, directly or
through others, include its module back: the modules form a stack (calls go down, results come
back up through hooks that main.c registers at init). So this checks that the graph "module A
includes a header of module B" has no cycle, that every quoted include names a file that
exists in one of the scanned trees (or a header the build generates), and that the map
docs/architecture.md draws between its `module-map` markers is the one the folders give.

Inside a module the same holds between files: a file (a .c with its .h, and with the family's
internal header, the one whose name ends in _int) includes no file that includes it back,
directly or through others.
KNOWN_FILE_CIRCLES names the circles the tree still has, each with why; a new one fails, and
so does a listed one that is gone (remove it from the list).

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
GENERATED = {"redact_rules.h", "codemcp_embedded.h", "codemcp_limits.h", "mutation_verbs.h"}
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


# Circles between files of one module the tree still has (units as file_units names them),
# each with what ties it; a listed circle that is gone is reported so the list only shrinks.
KNOWN_FILE_CIRCLES = {
}


def file_unit(path: str) -> str:
    """A file's unit: its path without the extension; an internal header (name ending "_int") counts with its family."""
    unit = os.path.splitext(path)[0]
    return unit[:-4] if unit.endswith("_int") else unit


def file_cycles(files: dict[str, tuple[str, str]]) -> list[list[str]]:
    """The circles between units of one module (units of a circle are always of one module
    once the modules form no circle; includes of other modules are left out anyway)."""
    where = {os.path.basename(p): p for p in files if p.endswith((".h", ".def"))}
    deps: dict[str, set[str]] = {}
    for path, (module, text) in files.items():
        me = file_unit(path)
        deps.setdefault(me, set())
        for inc in INCLUDE.findall(text):
            target = where.get(os.path.basename(inc))
            if target and files[target][0] == module and file_unit(target) != me:
                deps[me].add(file_unit(target))
    return cycles(deps)


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
    pair = {"w/a.c": ("w", '#include "a.h"\n#include "b.h"\n'), "w/a.h": ("w", ""),
            "w/b.c": ("w", '#include "b_int.h"\n'), "w/b_int.h": ("w", '#include "a.h"\n'),
            "w/b.h": ("w", "")}
    ok = (not b1 and not cycles(d1) and not b2 and cycles(d2) == [["core", "run"]] and len(b3) == 1
          and file_cycles(pair) == [["w/a", "w/b"]] and not file_cycles(ok_files))
    print("self-test:", "ok" if ok else "FAILED")
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--map"):
        print(__doc__, file=sys.stderr)
        return 2
    files = scan(argv[1])
    deps, bad = graph(files)
    if not deps:
        print(f"no C sources under {argv[1]}/src or {argv[1]}/sdkgen: give the repository's root")
        return 2
    for comp in cycles(deps):
        bad.append(f"modules include each other in a circle: {' <-> '.join(comp)} "
                   f"(report up through a hook registered in main.c instead)")
    circles = {frozenset(c): c for c in file_cycles(files)}
    for key, comp in sorted(circles.items(), key=lambda kv: kv[1]):
        if key not in KNOWN_FILE_CIRCLES:
            bad.append(f"files of one module include each other in a circle: {' <-> '.join(comp)} "
                       f"(move what both need into a header of its own, or pass a callback)")
    for key in KNOWN_FILE_CIRCLES:
        if key not in circles:
            bad.append(f"KNOWN_FILE_CIRCLES lists {' <-> '.join(sorted(key))}, which is gone: "
                       f"remove it from the list")
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
