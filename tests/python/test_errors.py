"""ToolError fields, redaction, RunInterrupted."""

import copy
import json
import pickle
import unittest

from codemcp_rt.errors import REDACTED, RunInterrupted, ToolError, is_secret_key, redact


class ToolErrorTest(unittest.TestCase):
    def test_fields_and_dict(self) -> None:
        e = ToolError("timeout", "took too long", "gh", "get_me", {"q": 1, "api_key": "sk-123"}, 2001)
        self.assertEqual((e.kind, e.server, e.tool, e.elapsed_ms, e.message), ("timeout", "gh", "get_me", 2001, "took too long"))
        self.assertEqual(e.call_args, {"q": 1, "api_key": REDACTED})
        d = e.to_dict()
        self.assertEqual(d, {"kind": "timeout", "server": "gh", "tool": "get_me",
                             "args": {"q": 1, "api_key": "***"}, "message": "took too long", "elapsed_ms": 2001})
        json.dumps(d)
        self.assertIn("gh/get_me", str(e))
        self.assertIn("timeout", str(e))
        self.assertIsInstance(e, Exception)

    def test_unknown_kind_becomes_upstream_error(self) -> None:
        self.assertEqual(ToolError("weird", "x").kind, "upstream_error")
        for kind in ("timeout", "auth", "transport", "not_found", "upstream_error", "denied"):
            self.assertEqual(ToolError(kind, "x").kind, kind)

    def test_copy_and_pickle_keep_fields(self) -> None:
        e = ToolError("auth", "no", "s", "t", {"token": "abc", "n": 2}, 5)
        for clone in (copy.copy(e), pickle.loads(pickle.dumps(e))):
            self.assertEqual(clone.to_dict(), e.to_dict())

    def test_run_interrupted_is_not_an_exception(self) -> None:
        r = RunInterrupted("timeout")
        self.assertEqual(r.reason, "timeout")
        self.assertNotIsInstance(r, Exception)
        self.assertIsInstance(r, BaseException)


class RedactTest(unittest.TestCase):
    def test_secret_key_names(self) -> None:
        for key in ("token", "access_token", "authToken", "Authorization", "x-api-key", "apiKey", "APIKey",
                    "password", "client_secret", "cookie", "private_key", "credentials", "auth"):
            self.assertTrue(is_secret_key(key), key)
        for key in ("author", "authority", "owner", "repo", "title", "keyword", "tokenizer_name"):
            self.assertFalse(is_secret_key(key), key)

    def test_nested_and_long(self) -> None:
        out = redact({"headers": {"Authorization": "Bearer x"}, "items": [{"password": "p"}], "body": "a" * 500,
                      "private": True, "author": "me"})
        self.assertEqual(out["headers"]["Authorization"], REDACTED)
        self.assertEqual(out["items"][0]["password"], REDACTED)
        self.assertLess(len(out["body"]), 300)
        self.assertIn("500 chars", out["body"])
        self.assertIs(out["private"], True)  # a boolean flag is not a secret
        self.assertEqual(out["author"], "me")

    def test_never_raises(self) -> None:
        class Bad:
            def __repr__(self) -> str:
                raise RuntimeError("no")

        self.assertEqual(redact(Bad()), "<unprintable>")
        deep: list = []
        cur = deep
        for _ in range(50):
            cur.append([])
            cur = cur[0]
        redact(deep)


if __name__ == "__main__":
    unittest.main()
