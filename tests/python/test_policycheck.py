"""Tests for the validator's policy check (python/codemcp_rt/policycheck.py): a literal call
the gateway's rules will deny is reported, naming the rule; what the module cannot judge (a
regex, a value built at run time) is never reported; its matchers agree with the gateway's
(policy_rules.c) on hostile values. The gateway's own decisions are tested in
tests/unit/test_policy_rules.c and tests/e2e/policy.test.mjs.

Run: PYTHONPATH=python /usr/bin/python3 -m unittest tests/python/test_policycheck.py -v
"""

from __future__ import annotations

import unittest

from codemcp_rt import policycheck, validator

META = {
    "fs_write_file": {"server": "fs", "tool": "write_file", "mutation": True},
    "db_query": {"server": "db", "tool": "query", "mutation": False},
    "gh_create_issue": {"server": "gh", "tool": "create_issue", "mutation": True},
}


def _fn(**kwargs):
    return None


FUNCTIONS = {name: _fn for name in META}

RULES = [
    {"name": "docs", "server": "fs", "tool": "write_file", "args": {"path": {"under": "/repo/docs"}},
     "effect": "allow"},
    {"name": "select", "server": "db", "tool": "query", "args": {"sql": {"regex": "select.*"}}, "effect": "allow"},
    {"name": "no-other-org", "server": "gh", "args": {"owner": {"one_of": ["acme"]}}, "effect": "allow"},
    {"name": "gh-rest", "server": "gh", "effect": "deny", "message": "acme only"},
]


def problems(code, rules=RULES, dry_run=False):
    return validator.validate(code, FUNCTIONS, META, policy=rules, dry_run=dry_run)


class PolicyCheck(unittest.TestCase):
    def test_traversal_reported_with_default_deny(self):
        out = problems('fs_write_file(path="/repo/docs/../../etc/passwd", content="x")')
        self.assertEqual(len(out), 1, out)
        self.assertIn("no policy rule allows fs/write_file", out[0])
        self.assertEqual(problems('fs_write_file(path="/repo//docs/./a.md", content="x")'), [])

    def test_deny_rule_named_with_its_message(self):
        out = problems('gh_create_issue(owner="other", title="t")')
        self.assertEqual(len(out), 1, out)
        self.assertIn("policy rule gh-rest denies it: acme only", out[0])
        self.assertIn("line 1", out[0])
        self.assertEqual(problems('gh_create_issue(owner="acme", title="t")'), [])

    def test_lookalike_and_type_mismatch(self):
        self.assertEqual(len(problems('gh_create_issue(owner="\u0430cme")')), 1)  # Cyrillic a
        self.assertEqual(len(problems('gh_create_issue(owner=["acme"])')), 1)

    def test_regex_and_runtime_values_are_left_to_the_gateway(self):
        self.assertEqual(problems('db_query(sql="drop table t")'), [])
        self.assertEqual(problems('p = "/etc"\nfs_write_file(path=p, content="x")'), [])
        positional = problems('fs_write_file("/etc/x", "y")')  # not judged (the SDK's own checks may speak)
        self.assertFalse([p for p in positional if "will be denied" in p], positional)

    def test_no_rules_no_reports(self):
        self.assertEqual(problems('fs_write_file(path="/etc/x", content="y")', rules=None), [])

    def test_glob_is_linear_and_byte_exact(self):
        self.assertTrue(policycheck._glob("get_*", "get_sum"))
        self.assertFalse(policycheck._glob("get_*", "gets"))
        self.assertTrue(policycheck._glob("*a*a*a*b", "a" * 50 + "b"))
        self.assertFalse(policycheck._glob("*a*a*a*a*a*a*b", "a" * 20000))  # finishes: no backtracking blow-up
        self.assertFalse(policycheck._glob("github", "\u0261ithub"))

    def test_normalize(self):
        self.assertEqual(policycheck._normalize("/a//b/./c/../d"), "/a/b/d")
        self.assertIsNone(policycheck._normalize("/../a"))
        self.assertIsNone(policycheck._normalize("a/b"))
        self.assertIsNone(policycheck._normalize("/a\0b"))

    def test_json_equality_is_typed(self):
        self.assertFalse(policycheck._json_equal(True, 1))
        self.assertFalse(policycheck._json_equal("5", 5))
        self.assertTrue(policycheck._json_equal(5, 5.0))


if __name__ == "__main__":
    unittest.main()
