#!/usr/bin/python3
"""Each module changes only what it owns: fails when a file of src/ frees another module's
state or writes into the loaded config from outside src/config/.

    check_ownership.py REPO

1. A function that frees a module's own state (declared `void X_free(void)` or
   `X_free_all(void)` in a header of folder F) is called only by F's files and by src/main.c,
   which wires every module's life (start and end).
2. A loaded config entry (struct cfg_server, reached through `->cfg->` or `cfg->`) is written
   only in src/config/: no assignment to one of its members, no json_object_set/del on one of
   its JSON members, no writable alias of its `entry` or `tools` outside that folder. Other
   modules ask the config module (cfg_set_server_default, cfg_set_tool_default)."""

import os
import re
import sys

FREE_DECL = re.compile(r'^\s*void\s+(\w+_free(?:_all)?)\s*\(\s*void\s*\)\s*;', re.M)
CFG_WRITE = (
    re.compile(r'\bcfg->\w+(?:\[[^]]*\])?\s*(?:=(?!=)|\+=|-=|\+\+|--)'),
    re.compile(r'\bjson_object_(?:set|set_new|del|clear|update\w*)\s*\(\s*[\w>.-]*\bcfg->'),
    re.compile(r'\bjson_t\s*\*\s*\w+\s*=\s*[\w>.-]*\bcfg->(?:entry|tools|root)\s*;'),
)
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)


def sources(repo):
    for d, _, names in os.walk(os.path.join(repo, "src")):
        for n in sorted(names):
            if n.endswith((".c", ".h")):
                p = os.path.join(d, n)
                with open(p, encoding="utf-8", errors="replace") as f:
                    text = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), f.read())
                yield os.path.relpath(p, repo), text


def folder(rel):
    return os.path.dirname(rel)


def main():
    repo = sys.argv[1]
    files = list(sources(repo))
    owner = {}
    for rel, text in files:
        if rel.endswith(".h"):
            for name in FREE_DECL.findall(text):
                owner[name] = folder(rel)
    bad = []
    for rel, text in files:
        for name, home in owner.items():
            if rel == "src/main.c" or folder(rel) == home:
                continue
            for m in re.finditer(r'\b%s\s*\(' % name, text):
                line = text.count("\n", 0, m.start()) + 1
                bad.append("%s:%d: frees %s's state (%s): only %s/ and src/main.c may"
                           % (rel, line, home, name, home))
        if folder(rel).startswith("src/config"):
            continue
        for pat in CFG_WRITE:
            for m in pat.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                bad.append("%s:%d: writes into a loaded config entry (%s): ask src/config/"
                           % (rel, line, m.group(0).strip()))
    for b in bad:
        print(b)
    if bad:
        print("check_ownership: %d write(s) or free(s) of what another module owns" % len(bad))
        return 1
    print("check_ownership: %d state-freeing functions, each called by its owner" % len(owner))
    return 0


if __name__ == "__main__":
    sys.exit(main())
