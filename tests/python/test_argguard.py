"""The run-time argument check (codemcp_rt/argguard.py): arguments a program builds are
judged by argcheck.py, the validator's own check, and argcheck.fits (the fast "certainly
fits" answer) never passes what check_value refuses."""

from __future__ import annotations

import json
import unittest

from fake_transport import text_result
from support import DEFAULT_TOOLS, RuntimeTest, sdk_source

from codemcp_rt import argcheck, sdk

SCHEMAS = {
    "srv_get": {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "none": {"type": "array", "items": False},
            "mode": {"type": "string", "enum": ["fast", "slow"]},
        },
    },
}

# (schema, values): each value is judged by both fits() and check_value().
CORPUS = [
    ({"type": "string"}, ["a", "", 1, None, True, ["a"], {"a": 1}]),
    ({"type": "integer"}, [1, 1.0, 1.5, True, "1", None]),
    ({"type": "number"}, [1, 1.5, True, "1.5", float("nan")]),
    ({"type": "boolean"}, [True, False, 0, "true"]),
    ({"type": ["string", "null"]}, ["a", None, 1]),
    ({"type": "string", "enum": ["a", "B"]}, ["a", "b", "B", 1, None]),
    ({"enum": [1, True, None, 1.5]}, [1, True, None, 1.5, 1.0, 0, False, "1"]),
    ({"type": "array"}, [[], [1, "a"], [[1]], [{"a": 1}], ("a",), "a"]),
    ({"type": "array", "items": False}, [[], [1], ()]),
    ({"type": "array", "items": True}, [[], [1, {"a": []}]]),
    ({"type": "array", "items": {"type": "integer"}}, [[1, 2], [1, "2"], (1, 2), [True], []]),
    ({"type": "array", "items": {"type": "string"}, "minItems": 1}, [[], ["a"]]),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
     [{"a": "x"}, {}, {"a": 1}, {"a": "x", "b": 2}, {"A": "x"}, ["a"]]),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
     [{"a": "x"}, {"b": 1}, {}]),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, [{"a": 1}, {"a": "x"}]),
    ({"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "object", "properties": {
        "n": {"type": "string"}}, "required": ["n"], "additionalProperties": False}}}},
     [{"xs": [{"n": "a"}, {"n": "b"}]}, {"xs": [{"n": "a"}, {"m": "b"}]}, {"xs": [{"n": 1}]}]),
    ({"type": "string", "pattern": "^a"}, ["ab", "ba"]),
    ({"type": "integer", "minimum": 0}, [0, -1]),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, ["a", 1, None]),
    ({"$ref": "#/x"}, [1]),
    ({"type": "string", "const": "a"}, ["a", "b"]),
    ({"type": "string", "nullable": True}, [None, "a"]),
]


class FitsAgreesWithCheckValue(unittest.TestCase):
    def test_fits_never_passes_a_value_check_value_refuses(self) -> None:
        passed = 0
        for schema, values in CORPUS:
            for required in (True, False):
                fits = argcheck.fits(schema, required)
                for value in values:
                    if value is None and not required:
                        continue  # None means "not given" for an optional parameter
                    with self.subTest(schema=schema, value=value, required=required):
                        if fits(value):
                            passed += 1
                            self.assertEqual(argcheck.check_value(value, schema, schema, "x"), [])
        self.assertGreater(passed, 20)  # the fast answer is exercised, not always "not sure"

    def test_none_fits_an_optional_parameter_only(self) -> None:
        self.assertTrue(argcheck.fits({"type": "string"}, False)(None))
        self.assertFalse(argcheck.fits({"type": "string"}, True)(None))


class ArgGuardAtTheCall(RuntimeTest):
    def setUp(self) -> None:
        super().setUp()
        extra = "import json as _json\n__codemcp_schemas__ = _json.loads(%r)\n" % json.dumps(SCHEMAS)
        loaded = sdk.load_sdk(sdk_source(DEFAULT_TOOLS, extra), 2)
        self.assertTrue(loaded["ok"], loaded)
        self.t.responder = lambda p: ("result", text_result({"ok": True}))

    def test_tuples_are_sent_as_lists(self) -> None:
        env = self.run_code("r = srv_get(tags=('a', 'b'))\nresult = r['ok']")
        self.assertTrue(env.get("ok"), env)
        self.assertEqual(self.t.calls()[0]["params"]["args"], {"tags": ["a", "b"]})

    def test_items_false_refuses_any_item(self) -> None:
        env = self.run_code("srv_get(none=[1])")
        self.assertEqual(env["error_kind"], "exception", env)
        self.assertIn("srv_get(...) was not sent: `none[0]` is not allowed here.", env["error"])
        self.assertEqual(self.t.calls(), [])

    def test_enum_off_by_case_is_refused(self) -> None:
        env = self.run_code("srv_get(mode='Fast')")
        self.assertIn("`mode` must be one of 'fast', 'slow'; got 'Fast'. Did you mean 'fast'?", env["error"])
        self.assertEqual(self.t.calls(), [])

    def test_valid_arguments_are_sent(self) -> None:
        env = self.run_code("r = srv_get(tags=['a'], none=[], mode='slow')\nresult = r['ok']")
        self.assertTrue(env.get("ok"), env)
        self.assertEqual(len(self.t.calls()), 1)


if __name__ == "__main__":
    unittest.main()
