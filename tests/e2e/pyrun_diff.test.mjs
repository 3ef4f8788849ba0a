// The worker's C run path against its Python path, step by step.
//
// src/worker/pyrun.c answers the usual run itself; since the fifth pass it reads the request
// from its text (pyreq.c) and checks the injected SDK names in place instead of re-injecting
// them on every run (pyrunset.c). Agent code is hostile: it may rebind or delete an SDK name,
// through a key of a str subclass, from a function an earlier run defined, grow and shrink the
// namespace (its entries move), delete and re-add a name (its order changes), clear the
// namespace, or change the runtime's own dict of injected names, or RunState's class (whose
// slots the C path reads directly while the class is unchanged). Whatever it did, the next run
// must see exactly what the Python path gives (runner._namespace's ns.update(fresh), ...).
//
// Two gateways run the same sequence of programs: one as written (ASCII: the C path), one with
// a non-ASCII comment appended (runner._fast_prepare declines non-ASCII code, so every run
// there takes the Python path). Each answer must be the same, and the first gateway's runs
// must really have gone through C (_codemcp.serve_stats()).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { connectClient, ms, runCodemcp, servers, tempDir, writeConfig } from './lib.mjs';

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
  // RunState's slots are read directly only while the class still resolves them to its slots
  'import codemcp_rt.runstate as rs\nrs._keep = rs.RunState.__dict__["mutations"]\n' +
    'rs.RunState.mutations = property(lambda s: [{"server": "x", "tool": "y", "ok": True}], lambda s, v: None)\n' +
    'result = 1',
  'result = 2',
  'import codemcp_rt.runstate as rs\nrs.RunState.mutations = rs._keep\nresult = 3',
  'result = 4',
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

// pyreq.c reads the run request straight from its text. Whatever it takes must be what the
// plain-run rules (pyrun.c's before the fifth pass, on the dict loads_fast gives) took, with the
// same values; anything else goes to the Python handler. A corpus of frames: the gateway's own
// (src/run/run_params.c; these must be taken), each member missing, each value swapped for values
// of other types and forms, escaped, duplicated or unknown keys, odd ids, methods and spacing.
const SCAN = String.raw`
import _codemcp, json

def ref(text):
    if _codemcp.loads_fast(text) is Ellipsis:
        return None  # the old loop parsed with loads_fast: nothing else reached its rules
    msg = json.loads(text)
    if type(msg) is not dict:
        return None
    m, i, p = msg.get("method"), msg.get("id"), msg.get("params")
    if type(m) is not str or m != "run" or type(i) is not int or not -2**63 <= i < 2**63 or type(p) is not dict:
        return None
    code, rid, ns = p.get("code"), p.get("run_id"), p.get("namespace")
    if type(code) is not str or type(rid) is not str or type(ns) is not str or ns == "" or "session" in p:
        return None
    for k in ("drop_namespaces", "disabled", "unavailable"):
        v = p.get(k)
        if not (v is None or (type(v) is list and not v)):
            return None
    def flag(k, d):
        return d if k not in p else 1 if p[k] is True else 0 if p[k] is False else -1
    f = {k: flag(k, d) for k, d in (("enforce_mutations", 0), ("validate", 0), ("dry_run", 0),
                                    ("namespace_fresh", 1), ("reset", 0))}
    if f["enforce_mutations"] != 0 or -1 in f.values():
        return None
    sizes = {}
    for k in ("max_output_bytes", "max_result_bytes"):
        v = p.get(k)
        if v is not None and (type(v) is not int or not -2**63 <= v < 2**63):
            return None
        sizes[k] = 1 << 20 if v is None else v
    allow = p.get("allow_mutations")
    if allow is not None and (type(allow) is not list or any(type(a) is not str for a in allow)):
        return None
    return dict(id=i, code=code, run_id=rid, namespace=ns, allow_mutations=allow,
                validate=bool(f["validate"]), dry_run=bool(f["dry_run"]), reset=bool(f["reset"]),
                namespace_fresh=bool(f["namespace_fresh"]), **sizes)

P = ('"run_id":"r7","namespace":"n3","code":"print(1)\\nx = \\"q\\" # \\u00e9","timeout_ms":30000,'
     '"dry_run":false,"allow_mutations":["everything_echo"],"enforce_mutations":false,'
     '"max_output_bytes":1048576,"max_result_bytes":1048576,"reset":false,"validate":true,'
     '"namespace_fresh":true')
def frame(params, head='"jsonrpc":"2.0","method":"run","id":7'):
    return '{%s,"params":{%s}}' % (head, params)
members = P.split(',"')
members = [members[0]] + ['"' + m for m in members[1:]]
must = [frame(P), frame(P.replace('["everything_echo"]', 'null')), frame(P.replace('"validate":true', '"validate":false')),
        frame(P + ',"namespace_note":"lost","disabled":[],"unavailable":[],"drop_namespaces":null'),
        ' {"params": {%s}, "id": -3 , "method" : "run"} ' % P]
docs = list(must)
for i in range(len(members)):
    docs.append(frame(",".join(members[:i] + members[i + 1:])))
VALUES = ['null', 'true', 'false', '0', '-1', '1.5', '1e3', '12345678901234567890', '123456789012345678',
          '""', '"x"', '"\\u00e9"', '"\\ud800"', '"a\\"b"', '[]', '[ ]', '["a"]', '[1]', '["a",2]', '{}', '{"a":1}']
for i, m in enumerate(members):
    key = m.split(":", 1)[0]
    for v in VALUES:
        docs.append(frame(",".join(members[:i] + [key + ":" + v] + members[i + 1:])))
for extra in ('"session":"s1"', '"other":1', '"code":"dup"', '"co\\u0064e":"x"', '"timeout_ms":5',
              '"drop_namespaces":["n1"]', '"disabled":["x"]', '"unavailable":[{}]', '"enforce_mutations":true',
              '"namespace_note":5', '"namespace_fresh":false'):
    docs.append(frame(P + "," + extra))
for head in ('"jsonrpc":"1.0","method":"run","id":7', '"method":"run","id":7', '"jsonrpc":"2.0","method":"Run","id":7',
             '"jsonrpc":"2.0","method":"r\\u0075n","id":7', '"jsonrpc":"2.0","method":"run","id":"7"',
             '"jsonrpc":"2.0","method":"run","id":7.0', '"jsonrpc":"2.0","method":"run","id":10000000000000000000',
             '"jsonrpc":"2.0","method":"run","id":null', '"jsonrpc":"2.0","method":"run","id":7,"id":8',
             '"jsonrpc":"2.0","method":"run","id":7,"x":1', '"jsonrpc":"2.0","method":"cancel","id":7'):
    docs.append(frame(P, head))
docs += [frame(P) + " x", frame(P)[:-1], "[" + frame(P) + "]", frame(P).replace(":", " : "),
         frame(P).replace(",", "\n,\t"), "", "{}", "null"]
taken, bad = 0, []
for d in docs:
    got = _codemcp.scan_run(d)
    if got is None:
        if d in must:
            bad.append(["refused", d[:120]])
        continue
    taken += 1
    want = ref(d)
    if got != want or type(got["id"]) is not int:
        bad.append([d[:160], repr(got)[:200], repr(want)[:200]])
result = {"taken": taken, "total": len(docs), "bad": bad}
`;

test('pyreq: the run request read from its text takes only what the plain-run rules took, with the same values', { timeout: ms(90000) }, async () => {
  const dir = tempDir();
  const config = writeConfig(dir, { everything: servers.everything() });
  const r = await runCodemcp({ config, env: { CODEMCP_SMOKE: SCAN } }, ms(80000));
  assert.equal(r.code, 0, `smoke failed:\n${r.stdout}\n${r.stderr.slice(-3000)}`);
  const env = JSON.parse(r.stdout);
  assert.deepEqual(env.result.bad, [], JSON.stringify(env.result.bad, null, 1));
  assert.ok(env.result.taken >= 40, `only ${env.result.taken} of ${env.result.total} frames taken`);
});
