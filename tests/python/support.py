"""Shared test helpers: a generated-SDK lookalike and a TestCase that installs a fake
transport (see fake_transport.py) and a fresh runtime state for every test."""

from __future__ import annotations

import unittest
from typing import Any

from fake_transport import FakeTransport, echo_responder

from codemcp_rt import runner, runstate, sdk, transport


def sdk_source(tools: dict[str, tuple[str, str, bool]], extra: str = "") -> str:
    """SDK source shaped like sdkgen's output: {fn: (server, tool, mutation)}; every
    function takes keyword arguments and an optional timeout_ms."""
    lines = [
        "from typing import Any",
        "from codemcp_rt.client import call as _call",
        "__all__ = %r" % sorted(tools),
        "__codemcp_meta__ = %r" % {
            fn: {"server": s, "tool": t, "mutation": m} for fn, (s, t, m) in tools.items()
        },
    ]
    for fn, (server, tool, _) in sorted(tools.items()):
        lines.append("def %s(timeout_ms: int | None = None, **kw: Any) -> Any:" % fn)
        lines.append("    return _call(%r, %r, kw, timeout_ms)" % (server, tool))
    return "\n".join(lines) + "\n" + extra


DEFAULT_TOOLS = {
    "srv_get": ("srv", "get", False),
    "srv_add": ("srv", "add", False),
    "srv_create": ("srv", "create", True),
}


class RuntimeTest(unittest.TestCase):
    """Installs ``self.t`` (a FakeTransport) and the DEFAULT_TOOLS SDK."""

    responder = staticmethod(echo_responder)
    delay = 0.0

    def setUp(self) -> None:
        self.t = FakeTransport(self.responder, self.delay)
        transport.set_transport(self.t)
        runner._sessions.clear()
        runner._injected.clear()
        loaded = sdk.load_sdk(sdk_source(DEFAULT_TOOLS), 1)
        self.assertTrue(loaded["ok"], loaded)

    def tearDown(self) -> None:
        runstate.end()
        transport.set_transport(None)

    def run_code(self, code: str, **params: Any) -> dict[str, Any]:
        req: dict[str, Any] = {"run_id": "r1", "session": "s1", "code": code, "timeout_ms": 30000}
        req.update(params)
        return runner.run(req)
