#!/usr/bin/python3
"""Benchmark: what the worker's Python runtime costs to start, in CPU time (load-independent
enough to compare on a busy machine, unlike wall time), for several trees side by side.

Each round starts one fresh interpreter per tree (/usr/bin/python3 -I, rotated order) that imports
codemcp_rt from that tree's python/ directory and measures, with time.process_time():
  import   — `import codemcp_rt.worker_main` (what the prototype does before it is ready);
  1st run  — load_sdk of a catalog of N functions, then a validated `result = 1 + 1`;
  1st search — the first search_tools() call (imports codemcp_rt.search where that is lazy,
             then indexes the catalog): what a session forked before the prototype's idle
             warm-up pays on its first search;
  2nd search — a second call (the steady state).
plus the number of modules loaded after the import and after the first run.

Usage: python3 bench/runtime_import.py [rounds=15] [functions=500] name=PYTHON_DIR ...
       → bench/results/runtime_import.md (min and median per stage over the rounds)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUPPORT = os.path.join(ROOT, "tests", "python")  # sdk_source: SDK source shaped like sdkgen's
# The interpreter the worker embeds (Debian's libpython), not whichever python3 runs this.
PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable

CHILD = r"""
import json, sys, time
clock = time.process_time
t = clock()
import codemcp_rt.worker_main
out = {"import": clock() - t, "modules_import": len(sys.modules)}
from codemcp_rt import discovery, runner, sdk
from support import sdk_source
n = %(n)d
tools = {"svc%%d_%%s_%%s" %% (i %% 7, v, o): ("svc%%d" %% (i %% 7), "%%s_%%s" %% (v, o), v != "list")
         for i, (v, o) in enumerate((v, "%%s%%d" %% (o, k)) for k in range(n // 12 + 1)
                                    for v in ("list", "create", "delete") for o in ("issue", "repo", "user", "label"))}
tools = dict(list(tools.items())[:n])
t = clock()
sdk.load_sdk(sdk_source(tools), 1)
reply = json.loads(runner.run_json({"run_id": "r", "session": "s", "validate": True, "code": "result = 1 + 1"}))
out["1st run"] = clock() - t
out["modules_run"] = len(sys.modules)
assert reply.get("result") == 2, reply
search = discovery.bind(sdk.current())["search_tools"]
t = clock()
first = search("delete the label of a repo")
out["1st search"] = clock() - t
t = clock()
search("create an issue")
out["2nd search"] = clock() - t
assert first, "no result"
print("RT" + json.dumps(out))
"""

STAGES = ["import", "1st run", "1st search", "2nd search"]


def one(pydir: str, n: int) -> dict[str, float]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    code = "import sys; sys.path[:0] = [%r, %r]\n" % (pydir, SUPPORT) + CHILD % {"n": n}
    p = subprocess.run([PYTHON, "-I", "-c", code], env=env, capture_output=True, text=True, timeout=300)
    lines = [x for x in p.stdout.splitlines() if x.startswith("RT")]
    if p.returncode or not lines:
        sys.exit("%s: %s" % (pydir, p.stderr[-2000:]))
    return json.loads(lines[-1][2:])


def main() -> None:
    args = sys.argv[1:]
    rounds = int(args.pop(0)) if args and args[0].isdigit() else 15
    n = int(args.pop(0)) if args and args[0].isdigit() else 500
    trees = [a.split("=", 1) for a in args]
    if not trees:
        sys.exit(__doc__)
    got: dict[str, list[dict[str, float]]] = {name: [] for name, _ in trees}
    load0 = open("/proc/loadavg").read().split()[:3]
    for r in range(rounds):
        for i in range(len(trees)):
            name, pydir = trees[(i + r) % len(trees)]
            got[name].append(one(pydir, n))
    load1 = open("/proc/loadavg").read().split()[:3]
    base = trees[0][0]

    def cell(name: str, stage: str) -> str:
        xs = [g[stage] * 1e3 for g in got[name]]
        b = statistics.median(g[stage] * 1e3 for g in got[base])
        ratio = " (%.2f×)" % (statistics.median(xs) / b) if name != base and b > 0 else ""
        return "%.1f / %.1f%s" % (min(xs), statistics.median(xs), ratio)

    rows = ["| %s | %s | %d / %d |" % (name, " | ".join(cell(name, s) for s in STAGES),
                                       got[name][0]["modules_import"], got[name][0]["modules_run"])
            for name, _ in trees]
    report = """# The worker runtime's start, in CPU time

%s — %d rounds, one fresh `python3 -I` per tree and round (rotated); CPU ms from
time.process_time(), min / median over the rounds (ratio of medians against the first tree);
a catalog of %d functions. Load average %s → %s.

Trees: %s

| tree | import (worker_main) | 1st run (load_sdk + validated `1 + 1`) | 1st search_tools | 2nd search_tools | modules after import / 1st run |
|---|---|---|---|---|---|
%s
""" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), rounds, n, " ".join(load0), " ".join(load1),
       "; ".join("%s = `%s`" % (name, d) for name, d in trees), "\n".join(rows))
    with open(os.path.join(ROOT, "bench", "results", "runtime_import.md"), "w") as f:
        f.write(report)
    print(report)


if __name__ == "__main__":
    main()
