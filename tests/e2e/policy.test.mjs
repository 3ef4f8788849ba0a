// Policy rules end to end: the real binary, the real worker, the fake upstream recording every
// message it receives (--log-file). Rules see the principal, the tool, read/write and the final
// argument values; a denied call never reaches the upstream, whichever way the program makes
// it (the SDK function, globals(), getattr, a thread, the runtime client, a raw control frame);
// a dry_run rule stubs the call; the HTTP front's bearer principal is the one rules see.
// No timing is asserted.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  Proc, connectClient, connectHttp, runCodemcp, tempDir, servers, ms, waitFor, readFakeLog,
  runEnvelope, untilDescribed,
} from './lib.mjs';
import { DELETE_THING, ECHO, LOOKUP, MIRROR } from '../fixtures/fake_tools.mjs';

const FAKE_TOOLS = [ECHO, MIRROR, LOOKUP, DELETE_THING];

const RULES = [
  { name: 'no-secret-echo', server: 'fake', tool: 'echo', args: { text: { eq: 'hello secret' } },
    effect: 'deny', message: 'that one is secret' },
  { name: 'echo-hello', server: 'fake', tool: 'echo', principal: ['local', 'alice'],
    args: { text: { glob: 'hello*' } }, effect: 'allow' },
  { name: 'mirror-docs', server: 'fake', tool: 'mirror', args: { path: { under: '/repo/docs' } }, effect: 'allow' },
  { name: 'preview-deletes', server: 'fake', tool: 'delete_thing', effect: 'dry_run' },
  { name: 'private-keys', server: 'fake', tool: 'lookup', args: { key: { regex: '(a*)*b' } },
    effect: 'deny', message: 'keys like that are private' },
  { name: 'bob-lookups', server: 'fake', tool: 'lookup', principal: ['carol', 'b*'],
    args: { key: { eq: 'bob-only' } }, effect: 'allow' },
  { name: 'lookups', server: 'fake', tool: 'lookup', effect: 'allow' },
];

function setup(prefix) {
  const dir = tempDir(prefix, { shared: true });
  const log = path.join(dir, 'fake.log');
  const tools = path.join(dir, 'tools.json');
  fs.writeFileSync(tools, JSON.stringify({ tools: FAKE_TOOLS }));
  const config = path.join(dir, 'mcp.json');
  fs.writeFileSync(config, JSON.stringify({
    policy: { rules: RULES },
    mcp: { fake: servers.fake(['--tools-file', tools, '--log-file', log]) },
  }, null, 2));
  return { dir, log, config };
}

/** Arguments of every tools/call the fake received, as JSON text. */
const received = (log) => readFakeLog(log).filter((m) => m.method === 'tools/call')
  .map((m) => JSON.stringify(m.params));

/** `codemcp start` on s's config with two principals, alice and bob. */
async function startHttp(s) {
  const tokens = path.join(s.dir, 'tokens');
  fs.writeFileSync(tokens, 'alice tok-alice-0123456789abcdef\nbob tok-bob-0123456789abcdef01\n', { mode: 0o600 });
  const proc = new Proc({ args: ['start', '-p', '0'], config: s.config, home: s.dir, shared: true,
    env: { CODEMCP_HTTP_TOKENS_FILE: tokens } });
  const m = await waitFor(() => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
  assert.ok(m && m[1], proc.stderr);
  return { proc, url: m[1] };
}

const run = runEnvelope;
const ready = (client) => untilDescribed(client, 'fake_echo');

const CATCH = (call) => `try:
    r = ${call}
    result = {"ok": r if not hasattr(r, "result") else r.result()}
except ToolError as e:
    result = {"kind": e.kind, "message": str(e)}`;

describe('policy rules over stdio (principal "local")', () => {
  let h, s;
  before(async () => {
    s = setup('codemcp-policy-');
    h = await connectClient({ config: s.config, shared: true });
    await ready(h.client);
  });

  test('an allowed value reaches the upstream; another value is denied and never does', async () => {
    let e = await run(h.client, CATCH('fake_echo(text="hello world")'));
    assert.ok(e.result.ok, JSON.stringify(e));
    // built at run time: the gateway decides it (a literal is reported before the run)
    e = await run(h.client, CATCH('fake_echo(text="goodbye-" + "plain")'));
    assert.equal(e.result.kind, 'denied', JSON.stringify(e));
    assert.match(e.result.message, /no policy rule allows fake\/echo for principal local/);
    const got = received(s.log);
    assert.ok(got.some((g) => g.includes('hello world')), got.join('\n'));
    assert.ok(!got.some((g) => g.includes('goodbye-plain')), got.join('\n'));
  });

  const routes = [
    ['globals()', CATCH('globals()["fake_" + "echo"](text="goodbye-" + "globals")')],
    ['getattr on the SDK module',
      CATCH('getattr(__import__("sys").modules["codemcp_sdk"], "fake_echo")(text="goodbye-" + "getattr")')],
    ['a thread', `import threading
box = {}
def go():
    try:
        box["r"] = fake_echo(text="goodbye-" + "thread").result()
    except ToolError as e:
        box["r"] = {"kind": e.kind, "message": str(e)}
t = threading.Thread(target=go)
t.start()
t.join()
result = box["r"]`],
    ['the runtime client',
      CATCH('__import__("codemcp_rt.client", fromlist=["x"]).call("fake", "echo", {"text": "goodbye-" + "client"})')],
  ];
  for (const [what, code] of routes) {
    test(`a denied value sent through ${what} is denied by the gateway`, async () => {
      const e = await run(h.client, code);
      const tag = 'goodbye-' + code.match(/"goodbye-" \+ "(\w+)"/)[1];
      assert.ok(!received(s.log).some((g) => g.includes(tag)), `${tag} reached the upstream`);
      assert.equal(e.result?.kind, 'denied', JSON.stringify(e));
      assert.match(e.result.message, /no policy rule allows fake\/echo/);
    });
  }

  test('a raw call_tool frame on the control connection is decided the same way', async () => {
    const e = await run(h.client, `import _codemcp, json
from codemcp_rt import runstate
rid = runstate.current().run_id
out = {}
for i, text in enumerate(["goodbye-frame", "hello-frame"]):
    req = {"jsonrpc": "2.0", "id": "f%d" % i, "method": "call_tool",
           "params": {"run_id": rid, "server": "fake", "tool": "echo", "args": {"text": text}}}
    _codemcp.send(json.dumps(req, separators=(",", ":")))
    reply = _codemcp.wait_reply("f%d" % i, 20)
    out[text] = json.loads(reply) if reply else None
result = out`);
    assert.equal(e.result['goodbye-frame'].error?.data?.kind ?? e.result['goodbye-frame'].error?.kind ??
      (JSON.stringify(e.result['goodbye-frame']).includes('denied') ? 'denied' : null), 'denied', JSON.stringify(e.result));
    assert.ok(!('error' in e.result['hello-frame']), JSON.stringify(e.result));
    const got = received(s.log);
    assert.ok(!got.some((g) => g.includes('goodbye-frame')), got.join('\n'));
    assert.ok(got.some((g) => g.includes('hello-frame')), got.join('\n'));
  });

  test('a path under the allowed tree passes; traversal, doubled slashes and relative paths do not', async () => {
    const cases = {
      '/repo/docs/guide.md': true, '/repo//docs/./a/../b.md': true,
      '/repo/docs/../../etc/passwd': false, '/repo/docsx/a': false, 'repo/docs/a': false,
      '/repo/docs/../secret': false, '/../repo/docs/a': false,
    };
    const e = await run(h.client, `out = {}
for p in ${JSON.stringify(Object.keys(cases))}:
    try:
        fake_mirror(path=p).result()
        out[p] = True
    except ToolError as e:
        out[p] = e.kind
result = out`);
    for (const [p, ok] of Object.entries(cases))
      assert.equal(e.result[p], ok ? true : 'denied', `${p}: ${JSON.stringify(e.result)}`);
    const got = received(s.log);
    for (const [p, ok] of Object.entries(cases))
      assert.equal(got.some((g) => g.includes(JSON.stringify(p).slice(1, -1))), ok, `${p} upstream: ${ok}`);
  });

  test('pre-flight validation reports a literal call a rule will deny, naming the rule, before anything runs', async () => {
    const e = await run(h.client, 'fake_echo(text="hello first")\nfake_echo(text="hello secret")');
    assert.equal(e.error_kind, 'validation', JSON.stringify(e));
    assert.match(e.error, /fake_echo\(\.\.\.\)` will be denied \(line 2\): policy rule no-secret-echo denies it: that one is secret/);
    const other = await run(h.client, 'fake_echo(text="bye-preflight")');
    assert.equal(other.error_kind, 'validation', JSON.stringify(other));
    assert.match(other.error, /no policy rule allows fake\/echo/);
    const got = received(s.log);
    assert.ok(!got.some((g) => g.includes('hello first') || g.includes('bye-preflight')), 'the program ran');
    // a value the worker cannot see statically is left to the gateway, which denies it
    const dyn = await run(h.client, CATCH('fake_echo(text="bye-" + "dynamic")'));
    assert.equal(dyn.result?.kind, 'denied', JSON.stringify(dyn));
  });

  test('a dry_run rule stubs a write: the program gets a preview, the upstream nothing', async () => {
    const e = await run(h.client, 'result = fake_delete_thing(id="thing-42").result()');
    assert.equal(e.result?._dry_run, true, JSON.stringify(e));
    assert.ok(!received(s.log).some((g) => g.includes('thing-42')));
  });

  test('a deny rule with a regex that backtracking engines hang on answers with its message', async () => {
    const e = await run(h.client, `out = []
for k in ["a" * 200000 + "b", "a" * 200000 + "c"]:
    try:
        fake_lookup(key=k).result()
        out.append("ok")
    except ToolError as e:
        out.append(str(e))
result = out`);
    assert.match(e.result[0], /keys like that are private/);
    assert.equal(e.result[1], 'ok', JSON.stringify(e.result).slice(0, 400));
  });
});

describe('codemcp policy check explains which rule decides', () => {
  const s = setup('codemcp-policy-cli-');
  const check = (args) => runCodemcp({ args: ['policy', 'check', ...args], config: s.config });
  test('an allowed call names its rule; a denied one says why; a bad call is a usage error', async () => {
    let r = await check(['--call', 'fake_echo(text="hello there")']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /decision:\s+allow/);
    assert.match(r.stdout, /rule:\s+echo-hello/);
    r = await check(['--principal', 'bob', '--call', 'fake_echo(text="hello there")']);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stdout, /decision:\s+deny/);
    assert.match(r.stdout, /no policy rule allows fake\/echo for principal bob/);
    r = await check(['--call', "fake_mirror(path='/repo/docs/../../etc/passwd', n=3, ok=True)"]);
    assert.equal(r.code, 1, r.stdout);
    r = await check(['--call', 'fake_lookup(key="aab")']);
    assert.match(r.stdout, /rule:\s+private-keys/);
    assert.match(r.stdout, /keys like that are private/);
    r = await check(['--write', '--call', 'fake_delete_thing(id="1")']);
    assert.match(r.stdout, /decision:\s+dry_run/);
    assert.equal(r.code, 0, 'a stubbed call exits 0 as an allowed one');
    r = await check(['--call', 'fake_echo(text="unclosed)']);
    assert.equal(r.code, 2);
    r = await check(['--call', 'fake_echo(text="x")', '--bogus']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /exit 0 allowed .*, 1 denied, 2 a usage or config error/);
    const broken = path.join(s.dir, 'broken.json');
    fs.writeFileSync(broken, '{"mcp": {');
    r = await runCodemcp({ args: ['policy', 'check', '--call', 'fake_echo(text="x")'], config: broken });
    assert.equal(r.code, 2, 'a config that cannot be read is exit 2, never a decision');
    assert.doesNotMatch(r.stdout, /decision:/);
  });
});

describe('policy rules over HTTP: the bearer principal is the one rules see', () => {
  let proc, url, s;
  before(async () => {
    s = setup('codemcp-policy-http-');
    ({ proc, url } = await startHttp(s));
  });
  after(() => proc?.child.kill('SIGTERM'));

  test('alice may echo hello; bob, asking the same, is denied and never reaches the upstream', async () => {
    const a = await connectHttp(url, 'tok-alice-0123456789abcdef');
    const b = await connectHttp(url, 'tok-bob-0123456789abcdef01');
    try {
      await ready(a);
      const ea = await run(a, CATCH('fake_echo(text="hello from alice")'));
      assert.ok(ea.result.ok, JSON.stringify(ea));
      const eb = await run(b, CATCH('fake_echo(text="hello from " + "bob")'));
      assert.equal(eb.result.kind, 'denied', JSON.stringify(eb));
      assert.match(eb.result.message, /principal bob/);
      // the worker got bob's rules: his literal call is reported before it runs, alice's is not
      const pb = await run(b, 'fake_echo(text="hello again")');
      assert.equal(pb.error_kind, 'validation', JSON.stringify(pb));
      const pa = await run(a, 'result = fake_echo(text="hello again")');
      assert.ok(!pa.error_kind, JSON.stringify(pa));
      const got = received(s.log);
      assert.ok(got.some((g) => g.includes('hello from alice')));
      assert.ok(!got.some((g) => g.includes('hello from bob')), got.join('\n'));
    } finally {
      await a.end();
      await b.end();
    }
  });
});

/** A program that hunts its own interpreter for what the gateway sent with the run: every
 *  "policy" list reachable from the stack or the heap, and every string anywhere in the heap
 *  that holds one of `needles`. */
const HUNT = (needles) => `import gc, sys, json
lists, hits = [], []
def look(o):
    if isinstance(o, dict) and isinstance(o.get("policy"), list):
        lists.append(o["policy"])
f = sys._getframe()
while f is not None:
    for v in list(f.f_locals.values()):
        look(v)
    f = f.f_back
for o in gc.get_objects():
    look(o)
    if isinstance(o, dict):
        for v in list(o.values()):
            if isinstance(v, str) and "hits.append" not in v and any(n in v for n in ${JSON.stringify(needles)}):
                hits.append(v[:200])
result = {"policies": json.loads(json.dumps(lists, default=str)), "hits": hits}`;

describe('the rules sent with a run are only those of its principal', () => {
  let proc, url, s;
  before(async () => {
    s = setup('codemcp-policy-rules-sent-');
    ({ proc, url } = await startHttp(s));
  });
  after(() => proc?.child.kill('SIGTERM'));

  test('bob, searching his interpreter, finds his rules, no principal globs, nothing of alice or carol', async () => {
    const b = await connectHttp(url, 'tok-bob-0123456789abcdef01');
    try {
      await ready(b);
      const e = await run(b, HUNT(['echo-hello', 'alice', 'carol', 'tok-alice', 'tok-bob']));
      assert.ok(!e.error_kind, JSON.stringify(e));
      const { policies, hits } = e.result;
      assert.ok(policies.length > 0, 'the hunt found the rules the worker was sent: ' + JSON.stringify(e));
      for (const rules of policies) {
        const names = rules.map((r) => r.name);
        const bobs = RULES.filter((r) => !r.principal || r.principal.includes('b*'));
        assert.deepEqual(names, bobs.map((r) => r.name), JSON.stringify(rules));
        assert.ok(rules.every((r) => !('principal' in r)), JSON.stringify(rules));
      }
      assert.deepEqual(hits, [], 'the other principal, its rule and the tokens are nowhere in the worker');
    } finally {
      await b.end();
    }
  });
});

describe('budgets: counted per principal across its sessions, and writes per run', () => {
  let proc, url, s;
  before(async () => {
    s = setup('codemcp-budget-');
    const cfg = JSON.parse(fs.readFileSync(s.config, 'utf8'));
    cfg.policy = { rules: [{ name: 'all', effect: 'allow' }] };
    cfg.budgets = [
      { name: 'alice-hourly', principal: 'alice', window_s: 3600, calls: 3 },
      { name: 'one-write', writes_per_run: 1 },
      { name: 'bob-runs', principal: 'bob', window_s: 3600, runs: 3 },
    ];
    fs.writeFileSync(s.config, JSON.stringify(cfg));
    ({ proc, url } = await startHttp(s));
  });
  after(() => proc?.child.kill('SIGTERM'));

  test('two sessions of alice share 3 calls an hour; the 4th is ToolError(kind="budget") naming it; bob is not counted', async () => {
    const a1 = await connectHttp(url, 'tok-alice-0123456789abcdef');
    const a2 = await connectHttp(url, 'tok-alice-0123456789abcdef');
    const b = await connectHttp(url, 'tok-bob-0123456789abcdef01');
    try {
      await ready(a1);
      assert.ok((await run(a1, CATCH('fake_echo(text="alice-1")'))).result.ok);
      assert.ok((await run(a1, CATCH('fake_echo(text="alice-2")'))).result.ok);
      assert.ok((await run(a2, CATCH('fake_echo(text="alice-3")'))).result.ok);
      const e = await run(a2, CATCH('fake_echo(text="alice-4")'));
      assert.equal(e.result.kind, 'budget', JSON.stringify(e));
      assert.match(e.result.message, /budget alice-hourly exceeded: principal alice made its 3 tool calls of this 3600 s window; it resets in \d+ s/);
      assert.ok((await run(b, CATCH('fake_echo(text="bob-1")'))).result.ok, 'bob has no call budget');
      const got = received(s.log);
      assert.ok(!got.some((g) => g.includes('alice-4')), 'the call past the budget reached the upstream');
      assert.ok(got.some((g) => g.includes('alice-3')) && got.some((g) => g.includes('bob-1')));
    } finally {
      await a1.end();
      await a2.end();
      await b.end();
    }
  });

  test('one write per run: the second write of a run fails with kind "budget"; the next run may write again', async () => {
    const b = await connectHttp(url, 'tok-bob-0123456789abcdef01');
    try {
      await ready(b);
      const code = `out = []
for i in ("w-a", "w-b"):
    try:
        fake_delete_thing(id=RUN + i).result()
        out.append("ok")
    except ToolError as e:
        out.append([e.kind, str(e)])
result = out`;
      const r1 = await b.callTool({ name: 'execute_python', arguments: { code: 'RUN = "r1-"\n' + code, allow_mutations: ['fake_delete_thing'] } },
        undefined, { timeout: ms(60000) });
      const out1 = r1.structuredContent.result;
      assert.equal(out1[0], 'ok', JSON.stringify(r1.structuredContent));
      assert.equal(out1[1][0], 'budget');
      assert.match(out1[1][1], /budget one-write exceeded: this run made its 1 write calls/);
      const r2 = await b.callTool({ name: 'execute_python', arguments: { code: 'RUN = "r2-"\n' + code, allow_mutations: ['fake_delete_thing'] } },
        undefined, { timeout: ms(60000) });
      assert.equal(r2.structuredContent.result[0], 'ok', JSON.stringify(r2.structuredContent));
      const got = received(s.log);
      assert.ok(got.some((g) => g.includes('r1-w-a')) && !got.some((g) => g.includes('r1-w-b')));
      assert.ok(got.some((g) => g.includes('r2-w-a')));
    } finally {
      await b.end();
    }
  });

  test('bob\'s fourth program of the hour is refused before it starts, naming the budget', async () => {
    const b = await connectHttp(url, 'tok-bob-0123456789abcdef01');
    try {
      const r = await b.callTool({ name: 'execute_python', arguments: { code: 'fake_echo(text="bob-" + "late")' } },
        undefined, { timeout: ms(60000) });
      assert.equal(r.isError, true, JSON.stringify(r));
      assert.match(JSON.stringify(r), /budget bob-runs exceeded: principal bob started its 3 runs of this 3600 s window; it resets in \d+ s/);
      assert.ok(!received(s.log).some((g) => g.includes('bob-late')));
    } finally {
      await b.end();
    }
  });
});

describe('a program\'s read_resource is decided as a read of the server\'s "resources/read"', () => {
  /** A config whose fake upstream offers fake://doc (12 bytes), with policy and the server's
   *  own policy as given. */
  function setupReads(prefix, policy, serverPolicy) {
    const dir = tempDir(prefix, { shared: true });
    const log = path.join(dir, 'fake.log');
    const config = path.join(dir, 'mcp.json');
    const fake = servers.fake(['--resource', 'fake://doc=12', '--log-file', log]);
    fs.writeFileSync(config, JSON.stringify({
      policy, mcp: { fake: serverPolicy ? { ...fake, policy: serverPolicy } : fake },
    }, null, 2));
    return { dir, log, config };
  }
  const reads = (log) => readFakeLog(log).filter((m) => m.method === 'resources/read').length;
  const READ = CATCH('read_resource("fake://doc")[0].text');

  test('a rule for bob refuses his reads with its message; alice reads; only hers reach the server', async () => {
    const s = setupReads('codemcp-policy-reads-', { rules: [
      { name: 'no-bob-reads', server: 'fake', tool: 'resources/read', principal: ['bob'],
        effect: 'deny', message: 'bob reads no resources here' },
      { name: 'reads', server: 'fake', tool: 'resources/read', effect: 'allow' }] });
    const { proc, url } = await startHttp(s);
    const a = await connectHttp(url, 'tok-alice-0123456789abcdef');
    const b = await connectHttp(url, 'tok-bob-0123456789abcdef01');
    try {
      await ready(a);
      const eb = await run(b, READ);
      assert.equal(eb.result?.kind, 'denied', JSON.stringify(eb));
      assert.match(eb.result.message, /bob reads no resources here/);
      const ea = await run(a, READ);
      assert.equal(ea.result?.ok, 'r'.repeat(12), JSON.stringify(ea));
      assert.equal(reads(s.log), 1);
    } finally {
      await a.end();
      await b.end();
      proc.child.kill('SIGTERM');
    }
  });

  for (const [what, policy, serverPolicy] of [
    ['the server\'s allow list does not name resources/read', undefined, { allow: ['echo'] }],
    ['the global list denies the server\'s functions', { deny: ['fake_*'] }, undefined],
  ]) {
    test(`a read is refused when ${what}`, async () => {
      const s = setupReads('codemcp-policy-reads-', policy, serverPolicy);
      const h = await connectClient({ config: s.config, shared: true });
      try {
        const e = await run(h.client, READ);
        assert.equal(e.result?.kind, 'denied', JSON.stringify(e));
        assert.equal(reads(s.log), 0);
      } finally {
        await h.close();
      }
    });
  }
});

describe('CPU-seconds budgets: measured by the gateway on the worker and everything it starts', () => {
  let proc, url, s;
  const WINDOW = 20;
  before(async () => {
    s = setup('codemcp-budget-cpu-');
    const cfg = JSON.parse(fs.readFileSync(s.config, 'utf8'));
    cfg.policy = { rules: [{ name: 'all', effect: 'allow' }] };
    cfg.budgets = [{ name: 'alice-cpu', principal: 'alice', window_s: WINDOW, cpu_s: 2 }];
    fs.writeFileSync(s.config, JSON.stringify(cfg));
    ({ proc, url } = await startHttp(s));
  });
  after(() => proc?.child.kill('SIGTERM'));

  const spin = (code) => ({ name: 'execute_python', arguments: { code, timeout_ms: 120000 } });
  const SPENT = new RegExp(`budget alice-cpu exceeded: principal alice used its 2 CPU seconds of this ${WINDOW} s window; it resets in \\d+ s`);

  test('a spinning program is stopped when the budget runs out, the next run is refused until the window resets; bob is not counted', { timeout: ms(180000) }, async () => {
    const a = await connectHttp(url, 'tok-alice-0123456789abcdef');
    const b = await connectHttp(url, 'tok-bob-0123456789abcdef01');
    try {
      const r = await a.callTool(spin('while True:\n    pass'), undefined, { timeout: ms(150000) });
      assert.equal(r.isError, true, JSON.stringify(r).slice(0, 500));
      assert.equal(r.structuredContent?.error_kind, 'budget', JSON.stringify(r).slice(0, 500));
      assert.match(r.structuredContent.error, SPENT);
      assert.match(r.structuredContent.error, /the run was stopped/);
      const refused = await a.callTool(spin('result = 1'), undefined, { timeout: ms(60000) });
      assert.equal(refused.isError, true, JSON.stringify(refused));
      assert.match(JSON.stringify(refused), SPENT);
      // bob spins as long as he likes (his program ends itself after 3 s of CPU)
      const br = await b.callTool(spin('import time\nt = time.process_time()\nwhile time.process_time() - t < 3:\n    pass\nresult = "bob"'),
        undefined, { timeout: ms(150000) });
      assert.equal(br.structuredContent?.result, 'bob', JSON.stringify(br).slice(0, 500));
      // the window ends: alice may run again
      const back = await waitFor(async () => {
        const x = await a.callTool(spin('result = 2'), undefined, { timeout: ms(60000) });
        return x.structuredContent?.result === 2;
      }, ms((WINDOW + 30) * 1000), 1000);
      assert.ok(back, 'alice\'s runs were still refused after the window');
    } finally {
      await a.end();
      await b.end();
    }
  });

  test('CPU spent by child processes counts: a program whose main thread sleeps while its children spin is stopped', { timeout: ms(180000) }, async () => {
    const a = await connectHttp(url, 'tok-alice-0123456789abcdef');
    try {
      // a fresh window (the previous test waited for its end, or this is the first use)
      await waitFor(async () => {
        const x = await a.callTool(spin('result = 3'), undefined, { timeout: ms(60000) });
        return x.structuredContent?.result === 3;
      }, ms((WINDOW + 30) * 1000), 1000);
      const r = await a.callTool(spin(`import os, time
def burn():
    while True:
        pass
for _ in range(2):
    if os.fork() == 0:
        burn()
time.sleep(40)
result = "never"`), undefined, { timeout: ms(150000) });
      assert.equal(r.structuredContent?.error_kind, 'budget', JSON.stringify(r).slice(0, 500));
      assert.match(r.structuredContent.error, SPENT);
    } finally {
      await a.end();
    }
  });
});
