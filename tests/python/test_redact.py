"""One redaction corpus through both implementations: the gateway's (src/catalog/redact.c, through
tests/unit/redact_tool) and the worker's (codemcp_rt.redact). Both must hide every secret
shape, leave every look-alike intact, and give byte-identical answers."""

from __future__ import annotations

import json
import os
import subprocess
import unittest

from codemcp_rt.errors import ToolError
from codemcp_rt.redact import is_secret_key, redact, redact_text

A = "A1b2C3d4E5f6G7h8J9k0"  # 20 mixed characters, repeated to build credential shapes
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7" + A + "\n" + A + A + "\n-----END RSA PRIVATE KEY-----"

# (description, input, the secret text that must not survive). Inputs are JSON values (dicts
# are tool arguments or headers) or free text ("text:" prefix).
SECRETS = [
    ("bearer in an Authorization header", {"headers": {"Authorization": "Bearer " + A + A}}, A),
    ("Proxy-Authorization header", {"Proxy-Authorization": "Basic dXNlcjpwYXNzd29yZA=="}, "dXNlcjpwYXNzd29yZA"),
    ("Cookie header", {"Cookie": "sid=31d4d96e407aad42; theme=dark"}, "31d4d96e407aad42"),
    ("Set-Cookie header", {"set-cookie": "session=38afes7a8; Path=/"}, "38afes7a8"),
    ("X-Api-Key header", {"X-Api-Key": "zq9-livekey-777"}, "zq9-livekey-777"),
    ("apiKey camelCase", {"apiKey": "k-12345-abc"}, "k-12345-abc"),
    ("api_key snake_case", {"config": {"api_key": "plainvalue99"}}, "plainvalue99"),
    ("github_pat key", {"github_pat": "anything-goes-here"}, "anything-goes-here"),
    ("sessionKey key", {"sessionKey": "sess-value-1"}, "sess-value-1"),
    ("clientSecret key", {"oauth": {"clientSecret": "cs-0000-1111"}}, "cs-0000-1111"),
    ("client_secret in a list", {"apps": [{"client_secret": "xyzzy-secret"}]}, "xyzzy-secret"),
    ("password key", {"password": "hunter2"}, "hunter2"),
    ("PASSWORD env style", {"DB_PASSWORD": "pg-pass-42"}, "pg-pass-42"),
    ("private_key key", {"private_key": "raw-key-material"}, "raw-key-material"),
    ("accessToken key", {"accessToken": "at-998877"}, "at-998877"),
    ("refresh_token key", {"refresh_token": "rt-665544"}, "rt-665544"),
    ("x-auth-token header", {"x-auth-token": "xat-123123"}, "xat-123123"),
    ("ghp_ token as a query value", {"query": "ghp_" + A + A[:16]}, "ghp_" + A),
    ("gho_ token nested", {"a": {"b": [{"c": "use gho_" + A + A + " please"}]}}, "gho_" + A),
    ("github_pat_ value", {"note": "github_pat_11ABCDEFG0" + A + "_" + A}, "github_pat_11ABCDEFG0"),
    ("OpenAI sk- key under an innocent key", {"model_config": "sk-proj-" + A + A}, "sk-proj-" + A),
    ("Anthropic key", {"value": "sk-ant-api03-" + A + A}, "sk-ant-api03-" + A),
    ("Slack xoxb", {"channel_hook": "xoxb-1234567890-" + A}, "xoxb-1234567890"),
    ("Slack xoxp", {"text": "token is xoxp-99887766-" + A}, "xoxp-99887766"),
    ("AWS access key id", {"aws": "AKIAIOSFODNN7EXAMPLE"}, "AKIAIOSFODNN7EXAMPLE"),
    ("AWS secret access key", {"aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}, "wJalrXUtnFEMI"),
    ("JWT anywhere", {"data": JWT}, "eyJzdWIiOiIxMjM0NTY3ODkwIn0"),
    ("PEM private key block", {"body": PEM}, "MIIEpAIBAAKCAQEA7"),
    ("Google API key", {"maps": "AIza" + "SyD" + A + "1234567890ab"}, "AIzaSyD" + A),
    ("Stripe live key", {"charge": "sk_live_" + A}, "sk_live_" + A),
    ("GitLab token", {"ci": "glpat-" + A}, "glpat-" + A),
    ("npm token", {"npmrc": "//registry/:_authToken=npm_" + A + A[:16]}, "npm_" + A),
    ("Hugging Face token", {"hub": "hf_" + A + A}, "hf_" + A),
    ("password in a URL", {"url": "postgres://admin:s3cr3tpass@db.example:5432/app"}, "s3cr3tpass"),
    ("api_key in a URL query", {"url": "https://api.example/v1?api_key=q-77-abc&page=2"}, "q-77-abc"),
    ("text: Authorization header line", "text:GET / HTTP/1.1\r\nAuthorization: Bearer " + A + A + "\r\n", A),
    ("text: JSON body in a trace log", 'text:{"method":"x","params":{"client_secret":"cs-in-log-1"}}', "cs-in-log-1"),
    ("text: key=value in an error", "text:login failed for password=hunter22 (retry)", "hunter22"),
    ("text: sessionKey= in an error", "text:bad sessionKey=abc-def-123, start over", "abc-def-123"),
    ("text: github_pat= in an error", "text:github_pat=oops-leaked rejected", "oops-leaked"),
    ("text: bearer in an error", "text:upstream said: invalid bearer " + A + A, A),
]

# Values that look like secrets to a naive filter and must come back unchanged.
LOOKALIKES = [
    {"author": "Ada Lovelace", "authors": ["A", "B"]},
    {"tokenizer": "cl100k_base", "tokenizer_mode": "fast"},
    {"keyboard": "dvorak", "keyword": "search", "key": "name"},
    {"passwordless_mode": True, "private": True},
    {"max_tokens": 1024, "prompt_tokens": 12, "token_count": 7},
    {"secretary": "Jane", "monkey": "see", "passage": "text"},
    {"task": "task-management-platform-version-two"},
    {"sha": "0000000000000000000000000000000000000000", "commit": "d670460b4b4aece5915caf5c68d12f560a9fe3e4"},
    {"url": "https://github.com/modelcontextprotocol/servers/tree/main/src", "path": "/home/ada/ghp_notes.txt"},
    {"text": "The bearer of this letter is a friend."},
    {"desk": "desk-lamp", "ask": "ask-me-anything-about-skiing-today"},
    {"auth_required": False, "session_count": 3},
    "text:author=Jane Doe, tokenizer=bpe, max_tokens=100, passwordless_mode: true",
    "text:see https://example.com/docs/authentication for details",
    "text:locked: needs_auth: the server answered 401; OAuth login is not implemented",
]


def tool_redact(requests: list[dict]) -> list:
    """Runs requests through the gateway's redaction (redact_tool)."""
    exe = os.environ.get("CODEMCP_REDACT_TOOL")
    if not exe:
        raise unittest.SkipTest("CODEMCP_REDACT_TOOL is not set (meson sets it)")
    data = "".join(json.dumps(r) + "\n" for r in requests)
    out = subprocess.run([exe], input=data, capture_output=True, text=True, check=True, timeout=60)
    return [json.loads(line)["out"] for line in out.stdout.splitlines()]


def as_request(value):
    if isinstance(value, str) and value.startswith("text:"):
        return {"text": value[5:]}
    return {"json": value}


def py_redact(value):
    if isinstance(value, str) and value.startswith("text:"):
        return redact_text(value[5:])
    return redact(value)


class CorpusTest(unittest.TestCase):
    def test_corpus_size(self):
        self.assertGreaterEqual(len(SECRETS), 30)
        self.assertGreaterEqual(len(LOOKALIKES), 10)

    def test_secrets_hidden_on_both_sides(self):
        c_out = tool_redact([as_request(v) for _, v, _ in SECRETS])
        for (what, value, secret), c in zip(SECRETS, c_out):
            p = py_redact(value)
            self.assertNotIn(secret, json.dumps(p, ensure_ascii=False), "Python: " + what)
            self.assertNotIn(secret, json.dumps(c, ensure_ascii=False), "C: " + what)
            self.assertIn("***", json.dumps(p), what)
            self.assertEqual(c, p, "C and Python differ on " + what)

    def test_lookalikes_intact_on_both_sides(self):
        c_out = tool_redact([as_request(v) for v in LOOKALIKES])
        for value, c in zip(LOOKALIKES, c_out):
            want = value[5:] if isinstance(value, str) else value
            self.assertEqual(py_redact(value), want, "Python mangled %r" % (value,))
            self.assertEqual(c, want, "C mangled %r" % (value,))

    def test_tool_error_reports(self):
        e = ToolError("auth", "401 from upstream: bad token ghp_" + A + A, "gh", "search",
                      {"query": "repo:x ghp_" + A + A, "apiKey": "k"})
        self.assertNotIn("ghp_" + A, e.message)
        self.assertNotIn("ghp_" + A, json.dumps(e.to_dict()))
        self.assertEqual(e.call_args["apiKey"], "***")

    def test_keys_agree(self):
        keys = ["apiKey", "api_key", "x-api-key", "APIKey", "github_pat", "sessionKey", "clientSecret",
                "password", "private_key", "Authorization", "author", "tokenizer", "keyboard",
                "passwordless_mode", "max_tokens", "secretary", "SESSION_ID", "session"]
        c = tool_redact([{"json": {k: "v"}} for k in keys])
        for k, out in zip(keys, c):
            self.assertEqual(out[k] == "***", is_secret_key(k), k)


if __name__ == "__main__":
    unittest.main()
