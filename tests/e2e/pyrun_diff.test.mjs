// The worker's C run path against its Python path, step by step (issue 17, worker per run).
//
// src/worker/pyrun.c answers the usual run itself; since the fifth pass it reads the request
// from its text (pyreq.c) and checks the injected SDK names in place instead of re-injecting
// them on every run (pyrunset.c). Agent code is hostile: it may rebind or delete an SDK name,
// through a key of a str subclass, from a function an earlier run defined, grow and shrink the
// namespace (its entries move), delete and re-add a name (its order changes), clear the
// namespace, or change the runtime's own dict of injected names. Whatever it did, the next
// run must see exactly what runner._namespace's ns.update(fresh) gives on the Python path.
//
// Two gateways run the same sequence of programs: one as written (ASCII: the C path), one with
// a non-ASCII comment appended (runner._fast_prepare declines non-ASCII code, so every run
// there takes the Python path). Each answer must be the same, and the first gateway's runs
// must really have gone through C (_codemcp.serve_stats()).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { connectClient, ms, servers, tempDir, writeConfig } from './lib.mjs';

// What a run sees of its namespace: every name in order with the type (and, for the SDK's,
// the function name) of its value, and whether __builtins__ is there.
const LOOK = 'result = [[k, type(v).__name__, getattr(v, "__name__", None) if callable(v) else v] ' +
  'for k, v in list(globals().items()) if k not in ("__builtins__", "__name__")] + ' +
  '[["__builtins__" in globals()]]';

const STEPS = [
  'x = 1',
  'everything_get_sum = 5',
  'del everything_echo',
  'globals()[type("S", (str,), {})("everything_get_sum")] = 7\nresult = everything_get_sum',
  'def f():\n    global everything_echo\n    everything_echo = 9\n',
  'f()\nresult = everything_echo',
  'for i in range(300):\n    globals()["v%d" % i] = i',
  'for i in range(300):\n    del globals()["v%d" % i]\neverything_get_sum = None',
  'del everything_echo\neverything_echo = 1',
  'del Pending, search_tools\nresult = 2',
  'result = everything_get_sum(a=1, b=2)',
  '(lambda keep: (globals().clear(), globals().update(keep)))(dict(globals()))\nresult = 3',
  'globals().clear()',
  'import codemcp_rt.runner as rn\nrn._fresh_for[1]["everything_echo"] = 42',
  'import codemcp_rt.runner as rn\nrn._fresh_for[1].pop("everything_get_tiny_image")\nNone',
];

test('pyrun: SDK names rebound, deleted or moved by a run are put back as the Python path does', { timeout: ms(240000) }, async () => {
  const dir = tempDir();
  const config = writeConfig(dir, { everything: servers.everything() });
  const c = await connectClient({ config });
  const py = await connectClient({ config });
  const call = async (h, code) => {
    const r = await h.client.callTool({ name: 'execute_python', arguments: { code } },
      undefined, { timeout: ms(60000) });
    const e = structuredClone(r.structuredContent ?? JSON.parse(r.content[0].text));
    delete e.namespace;
    return e;
  };
  try {
    const ready = 'result = everything_get_sum(a=1, b=2)';
    for (const h of [c, py]) assert.equal((await call(h, ready)).result, 'The sum of 1 and 2 is 3.');
    const stats = async () =>
      (await call(c, 'import _codemcp\nresult = _codemcp.serve_stats()\ndel _codemcp')).result;
    const before = await stats();
    let n = 0;
    for (const step of STEPS) {
      for (const code of [step, LOOK]) {
        const got = await call(c, code);
        const want = await call(py, `${code}\n# \u00e9`);
        assert.deepEqual(got, want, `after ${JSON.stringify(step)}, ${code === LOOK ? 'the namespace' : 'the run itself'}`);
        n++;
      }
    }
    const after = await stats();
    // every run above was ASCII: all of them took the C path
    assert.ok(after.fast - before.fast >= n, JSON.stringify({ before, after, n }));
  } finally {
    await c.close();
    await py.close();
  }
});
