"""The worker's pre-flight policy check (codemcp_rt/policycheck.py) and the gateway's decision
(src/catalog/policy*.c, through `codemcp policy check`) are two implementations of one rule
semantics: this runs one rule set and one list of calls through both and fails on the first
call they decide differently, so neither can change alone.

policycheck gets the rules as the gateway sends them to a run (policy_worker_rules: the
principal filter already applied, so the rules here name none). A call policycheck leaves
undecided (a regex) is not compared; every other one must get the same effect from the same
rule (or no rule on both sides).

Run: CODEMCP_BIN=build/src/codemcp PYTHONPATH=python python3 -m unittest tests/python/test_policy_agree.py
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import tempfile
import unittest

from codemcp_rt import policycheck

RULES = [
    {"name": "docs", "server": "fs", "tool": "write_file", "args": {"path": {"under": "/repo/docs"}},
     "effect": "allow"},
    {"name": "no-etc", "server": "fs", "tool": "read_*", "args": {"path": {"under": "/etc"}},
     "effect": "deny", "message": "not /etc"},
    {"name": "reads", "server": "fs", "tool": "read_*", "write": False, "effect": "allow"},
    {"name": "preview-deletes", "server": "fs", "tool": ["delete_*", "remove?"], "effect": "dry_run"},
    {"name": "acme", "server": "gh", "args": {"owner": {"one_of": ["acme", "acme-labs"]}},
     "effect": "allow"},
    {"name": "gh-rest", "server": "gh", "effect": "deny", "message": "acme only"},
    {"name": "pages", "server": "db", "tool": "page",
     "args": {"n": {"range": [1, 100]}, "order": {"eq": "asc"}}, "effect": "allow"},
    {"name": "deep", "server": "db", "tool": "deep", "args": {"a.b[1][\"c.d\"]": {"glob": "ok-*"}},
     "effect": "allow"},
    {"name": "dry-only", "server": "db", "tool": "drop", "dry_run": True, "effect": "allow"},
    {"name": "select", "server": "db", "tool": "query", "args": {"sql": {"regex": "select.*"}},
     "effect": "allow"},
    {"name": "no-big-limit", "server": "db", "tool": "scan", "args": {"limit": {"range": [None, 10]}},
     "effect": "deny", "message": "no"},
    {"name": "star", "server": "*e*", "tool": "*_x*?", "effect": "deny"},
]

# (server, tool, write, dry_run, the call's keyword arguments as the program writes them)
CALLS = [
    ("fs", "write_file", True, False, 'path="/repo/docs/a.md", content="x"'),
    ("fs", "write_file", True, False, 'path="/repo/docs/../../etc/passwd", content="x"'),
    ("fs", "write_file", True, False, 'path="/repo//docs/./b/../c.md"'),
    ("fs", "write_file", True, False, 'path="/repo/docsx/a.md"'),
    ("fs", "write_file", True, False, 'path="repo/docs/a.md"'),
    ("fs", "write_file", True, False, 'path=["/repo/docs/a.md"]'),
    ("fs", "write_file", True, False, 'content="no path"'),
    ("fs", "read_file", False, False, 'path="/etc/shadow"'),
    ("fs", "read_file", False, False, 'path="/etc"'),
    ("fs", "read_file", False, False, 'path="/etcetera"'),
    ("fs", "read_file", False, False, 'path="/../etc"'),
    ("fs", "read_file", False, False, 'path=3'),
    ("fs", "read_text", True, False, 'path="/home/a"'),
    ("fs", "read_text", False, False, 'path="/home/a"'),
    ("fs", "delete_file", True, False, 'path="/x"'),
    ("fs", "removeX", True, False, ''),
    ("fs", "remove", True, False, ''),
    ("fs", "stat", False, False, 'path="/x"'),
    ("gh", "create_issue", True, False, 'owner="acme", title="t"'),
    ("gh", "create_issue", True, False, 'owner="acme-labs"'),
    ("gh", "create_issue", True, False, 'owner="\u0430cme"'),
    ("gh", "create_issue", True, False, 'owner="ACME"'),
    ("gh", "create_issue", True, False, 'owner=["acme"]'),
    ("gh", "create_issue", True, False, 'owner=None'),
    ("gh", "list_repos", False, False, ''),
    ("db", "page", False, False, 'n=1, order="asc"'),
    ("db", "page", False, False, 'n=100.0, order="asc"'),
    ("db", "page", False, False, 'n=101, order="asc"'),
    ("db", "page", False, False, 'n=0.5, order="asc"'),
    ("db", "page", False, False, 'n=True, order="asc"'),
    ("db", "page", False, False, 'n="5", order="asc"'),
    ("db", "page", False, False, 'n=5, order="desc"'),
    ("db", "page", False, False, 'n=5'),
    ("db", "deep", False, False, 'a={"b": [0, {"c.d": "ok-1"}]}'),
    ("db", "deep", False, False, 'a={"b": [0, {"c.d": "no-1"}]}'),
    ("db", "deep", False, False, 'a={"b": [0]}'),
    ("db", "deep", False, False, 'a={"b": {"1": {"c.d": "ok-1"}}}'),
    ("db", "drop", True, True, 'table="t"'),
    ("db", "drop", True, False, 'table="t"'),
    ("db", "scan", False, False, 'limit=10'),
    ("db", "scan", False, False, 'limit=11'),
    ("db", "scan", False, False, 'limit="11"'),
    ("db", "scan", False, False, ''),
    ("db", "query", False, False, 'sql="select 1"'),
    ("web", "get_xy", False, False, ''),
    ("web", "get_x", False, False, ''),
    ("web", "fetch", False, False, ''),
]

SERVERS = {"fs", "gh", "db", "web"}


def gateway(cfg_path: str, server: str, tool: str, write: bool, dry: bool, kwargs: str) -> tuple[str, str]:
    """(decision, rule) from `codemcp policy check`; rule "" when none decided."""
    argv = [os.environ["CODEMCP_BIN"], "--config", cfg_path, "policy", "check", "--server", server,
            "--tool", tool, "--call", "%s_%s(%s)" % (server, tool, kwargs)]
    argv += ["--write"] if write else []
    argv += ["--dry-run"] if dry else []
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    lines = dict(line.split(":", 1) for line in p.stdout.splitlines() if ":" in line)
    decision, rule = lines.get("decision", "").strip(), lines.get("rule", "").strip()
    assert p.returncode == (1 if decision == "deny" else 0), (argv, p.returncode, p.stdout, p.stderr)
    return decision, "" if rule == "(none)" else rule


def preflight(server: str, tool: str, write: bool, dry: bool, kwargs: str):
    """(decision, rule) from policycheck, or None when it leaves the call undecided."""
    call = ast.parse("f(%s)" % kwargs, mode="eval").body
    args = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    got = policycheck._decide(json.loads(json.dumps(RULES)), server, tool, write, dry, args)
    if got is policycheck._UNDECIDED:
        return None
    if got is None:
        return "allow", ""
    effect, rule, _ = got
    return effect, rule or ""


class Agree(unittest.TestCase):
    def test_same_decisions(self):
        with tempfile.TemporaryDirectory() as d:
            cfg = os.path.join(d, "mcp.json")
            with open(cfg, "w", encoding="utf-8") as f:
                json.dump({"policy": {"rules": RULES},
                           "mcp": {s: {"type": "local", "command": ["true"]} for s in SERVERS}}, f)
            compared = 0
            for server, tool, write, dry, kwargs in CALLS:
                want = gateway(cfg, server, tool, write, dry, kwargs)
                got = preflight(server, tool, write, dry, kwargs)
                if got is None:
                    continue
                compared += 1
                self.assertEqual(got, want, "%s_%s(%s) write=%s dry_run=%s" % (server, tool, kwargs, write, dry))
            self.assertGreater(compared, len(CALLS) - 3)


if __name__ == "__main__":
    unittest.main()
