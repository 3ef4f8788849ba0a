// Adversarial review of the C code agent code can reach (docs/review-extensions.md): the
// `_codemcp` module's types and functions (src/worker/pypending.c, pycall.c, pyfast.c,
// pyjson.c, pymod.c) called the wrong way from a real sandboxed worker, and hostile control
// frames for the gateway's decoder (src/jsonfast.c). Each test is one finding or one sweep:
// the worker must not crash where a Python object would not, a crash is a clear error that
// loses nothing else, and the gateway never dies.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { connectClient, ms, servers, tempDir, writeConfig } from './lib.mjs';

async function session(mcp = {}, env = {}) {
  const dir = tempDir();
  const h = await connectClient({ config: writeConfig(dir, mcp), env });
  const run = async (code, extra = {}) => {
    const r = await h.client.callTool({ name: 'execute_python', arguments: { code, ...extra } },
      undefined, { timeout: ms(90000) });
    return r.structuredContent ?? JSON.parse(r.content[0].text);
  };
  return { h, run };
}

// Finding 1: PendingBase and CallBase had no trashcan in their dealloc, so a long chain of
// them (p._value = q, or a CallBase holding the previous one) was freed recursively and
// overflowed the C stack: the worker died (SIGSEGV) where the same chain of Python objects
// is fine. Each run below crashed the worker before the fix.
test('a long chain of PendingBase / CallBase objects is freed without crashing the worker', { timeout: ms(180000) }, async () => {
  const { h, run } = await session();
  try {
    let e = await run('x = 41\nresult = "kept"');
    assert.equal(e.result, 'kept', JSON.stringify(e));
    e = await run('import _codemcp\np = None\nfor i in range(300000):\n' +
      '    q = _codemcp.PendingBase(None)\n    q._value = p\n    p = q\ndel p, q\nresult = "pending chain freed"');
    assert.equal(e.result, 'pending chain freed', JSON.stringify(e));
    e = await run('import _codemcp\np = None\nfor i in range(300000):\n' +
      '    p = _codemcp.CallBase(p, 1, 2, 3, 4, 5, 6, 7)\ndel p\nresult = "call chain freed"');
    assert.equal(e.result, 'call chain freed', JSON.stringify(e));
    // a chain through a subclass's __dict__ and a cycle collected by the GC
    e = await run('import _codemcp, gc\nclass P(_codemcp.PendingBase): pass\np = None\n' +
      'for i in range(300000):\n    q = _codemcp.PendingBase(None)\n    q._value = P(None)\n' +
      '    q._value.x = p\n    p = q\np._error = p\ndel p, q\ngc.collect()\nresult = "mixed chain freed"');
    assert.equal(e.result, 'mixed chain freed', JSON.stringify(e));
    e = await run('result = x + 1'); // the session's variables survived: no worker restart
    assert.equal(e.result, 42, JSON.stringify(e));
  } finally {
    await h.close();
  }
});

// Finding 2: a call_tool frame the gateway cannot decode (here a NUL in an argument's key,
// which jansson cannot hold) was answered with `"id": null`, so the worker never learnt which
// call failed and the call hung until the run's timeout. The gateway now answers with the id
// the frame's head names (jf_frame_id), and the call fails at once with the decoder's reason.
test('a call whose frame the gateway cannot decode fails at once instead of hanging', { timeout: ms(120000) }, async () => {
  const { h, run } = await session({ everything: servers.everything() }, { CODEMCP_EXEC_TIMEOUT_MS: '20000' });
  try {
    const e = await run(String.raw`
import time
from codemcp_rt import client
out = {}
t = time.monotonic()
for name, args in (("top", {"message": "x", "a\x00b": 1}), ("nested", {"message": {"k\x00": [1]}})):
    try:
        out[name] = resolve(client.call("everything", "echo", args))
    except ToolError as exc:
        out[name] = [exc.kind, exc.message]
out["seconds"] = time.monotonic() - t
out["after"] = everything_echo(message="still fine")
result = out`);
    assert.ok(e.result, JSON.stringify(e));
    for (const k of ['top', 'nested']) {
      assert.equal(e.result[k][0], 'transport', JSON.stringify(e.result));
      assert.match(e.result[k][1], /NUL byte in object key/, JSON.stringify(e.result));
    }
    assert.ok(e.result.seconds < 10, `the failed calls took ${e.result.seconds} s`);
    assert.match(JSON.stringify(e.result.after), /still fine/);
  } finally {
    await h.close();
  }
});
