// The external policy engine (CODEMCP_AUTHZ_URL) end to end: the real binary and the fake
// upstream recording what it receives, and a small policy service in this test that speaks
// OPA's Data API (POST {"input": {...}} -> {"result": ...}). Debian and npm carry no OPA server
// binary, so the service is written here to the same contract. Its failure modes — slow, a reset
// connection, garbage, HTTP 500, an undefined decision — all deny and never reach the upstream;
// an answer the engine allows caching is asked once; while the engine holds an answer the
// gateway keeps serving (the question runs off the loop); one principal's questions waiting
// for the engine leave the others theirs. No timing is asserted.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { connectClient, connectHttp, startHttpGateway, tempDir, servers, ms, waitFor, readFakeLog } from './lib.mjs';
import { ECHO, MIRROR } from '../fixtures/fake_tools.mjs';

const TOOLS = [ECHO, MIRROR];

describe('CODEMCP_AUTHZ_URL: an OPA Data API engine decides after the rules', () => {
  let h, log, srv, mode = 'ok', release = null;
  const held = [];
  const inputs = [];
  before(async () => {
    srv = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => { body += d; });
      req.on('end', () => {
        let input = null;
        try { input = JSON.parse(body).input; } catch { /* recorded as null */ }
        inputs.push({ url: req.url, input });
        const text = input?.arguments?.text ?? '';
        const send = (status, obj) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(typeof obj === 'string' ? obj : JSON.stringify(obj));
        };
        if (mode === 'slow') return setTimeout(() => send(200, { result: true }), ms(4000));
        if (mode === 'reset') return req.socket.destroy();
        if (mode === 'garbage') return send(200, '{"result": "yes please"');
        if (mode === '500') return send(500, { code: 'internal_error' });
        if (mode === 'undefined') return send(200, {});
        if (mode === 'hold') return (release = () => send(200, { result: true }));
        if (mode === 'hold-all') return held.push(() => send(200, { result: true }));
        // as an OPA policy "deny if startswith(input.arguments.path, "/etc")" would
        if (input?.tool === 'mirror') return send(200, { result: !String(input.arguments?.path ?? '').startsWith('/etc') });
        if (text.startsWith('cache-')) return send(200, { result: { allow: true, reason: 'cacheable', cache_ttl_ms: 60000 } });
        if (text.startsWith('hello')) return send(200, { result: true });
        return send(200, { result: { allow: false, reason: `the engine refuses "${text}"` } });
      });
    });
    await new Promise((r) => srv.listen(0, '127.0.0.1', r));
    const dir = tempDir('codemcp-authz-', { shared: true });
    log = path.join(dir, 'fake.log');
    const tools = path.join(dir, 'tools.json');
    fs.writeFileSync(tools, JSON.stringify({ tools: TOOLS }));
    const config = path.join(dir, 'mcp.json');
    fs.writeFileSync(config, JSON.stringify({
      policy: { rules: [
        { name: 'never-secret', tool: 'echo', args: { text: { eq: 'hello secret' } }, effect: 'deny' },
        { name: 'rest', effect: 'allow' },
      ] },
      mcp: { fake: servers.fake(['--tools-file', tools, '--log-file', log]) },
    }));
    h = await connectClient({ config, shared: true, env: {
      CODEMCP_AUTHZ_URL: `http://127.0.0.1:${srv.address().port}/v1/data/codemcp/allow`,
      CODEMCP_AUTHZ_TIMEOUT_MS: String(ms(1500)),
    } });
    const ok = await waitFor(async () => {
      const r = await h.client.listTools(undefined, { timeout: ms(30000) });
      return (r.tools[0]?.description || '').includes('def fake_echo(');
    }, ms(30000), 100);
    assert.ok(ok, 'fake_echo never appeared');
  });
  after(() => srv?.close());

  // built at run time, so pre-flight validation leaves every call to the gateway
  const call = async (text) => {
    const r = await h.client.callTool({ name: 'execute_python', arguments: { reset: true, code: `try:
    result = {"ok": fake_echo(text=${JSON.stringify(text)} + "").result()}
except ToolError as e:
    result = {"kind": e.kind, "message": str(e)}` } }, undefined, { timeout: ms(60000) });
    return r.structuredContent.result;
  };
  const reached = (text) => readFakeLog(log).some((m) => m.method === 'tools/call' && m.params?.arguments?.text === text);

  test('an allowed call reaches the upstream; the engine saw who, what and with which arguments', async () => {
    const r = await call('hello engine');
    assert.ok(r.ok, JSON.stringify(r));
    assert.ok(reached('hello engine'));
    const seen = inputs.find((i) => i.input?.arguments?.text === 'hello engine');
    assert.equal(seen.url, '/v1/data/codemcp/allow');
    assert.equal(seen.input.principal, 'local');
    assert.equal(seen.input.server, 'fake');
    assert.equal(seen.input.tool, 'echo');
    assert.equal(seen.input.mutation, false);
    assert.equal(seen.input.dry_run, false);
    assert.equal(typeof seen.input.run, 'string');
    assert.equal(typeof seen.input.session, 'number');
  });

  test('a program finds the engine\'s address nowhere: not in its environment, not in its heap', async () => {
    const needle = `127.0.0.1:${srv.address().port}`;
    const r = await h.client.callTool({ name: 'execute_python', arguments: { reset: true, code: `import gc, os
needle = "127.0.0.1:" + ${JSON.stringify(String(srv.address().port))}
env = [k for k, v in os.environ.items() if needle in v or k.startswith("CODEMCP_AUTHZ")]
seen = []
for o in gc.get_objects():
    if isinstance(o, dict):
        seen += [v[:200] for v in list(o.values()) if isinstance(v, str) and v is not needle and needle in v and "gc.get_objects" not in v]
result = {"env": env, "heap": seen}` } }, undefined, { timeout: ms(60000) });
    const got = r.structuredContent;
    assert.ok(got?.result, JSON.stringify(r));
    assert.deepEqual(got.result, { env: [], heap: [] }, `${needle} reached the worker`);
  });

  test('the engine sees every argument, an integer too big for 64 bits beside them included', async () => {
    const r = await h.client.callTool({ name: 'execute_python', arguments: { reset: true, code: `try:
    result = {"ok": fake_mirror(path="/etc/" + "passwd", n=10**30).result()}
except ToolError as e:
    result = {"kind": e.kind, "message": str(e)}` } }, undefined, { timeout: ms(60000) });
    const got = r.structuredContent?.result;
    assert.equal(got?.kind, 'denied', JSON.stringify(r));
    const seen = inputs.find((i) => i.input?.tool === 'mirror');
    assert.equal(seen?.input?.arguments?.path, '/etc/passwd', JSON.stringify(seen));
    assert.equal(String(seen.input.arguments.n), String(1e30));
    assert.ok(!readFakeLog(log).some((m) => m.method === 'tools/call' && m.params?.name === 'mirror'));
  });

  test('a refusal carries the engine\'s reason and never reaches the upstream', async () => {
    const r = await call('nope-1');
    assert.equal(r.kind, 'denied', JSON.stringify(r));
    assert.match(r.message, /the engine refuses "nope-1"/);
    assert.ok(!reached('nope-1'));
  });

  test('a call the rules deny is not put to the engine', async () => {
    const before = inputs.length;
    const r = await call('hello secret');
    assert.equal(r.kind, 'denied');
    assert.equal(inputs.length, before);
  });

  test('an answer the engine lets be cached is asked once; others every time', async () => {
    const count = (t) => inputs.filter((i) => i.input?.arguments?.text === t).length;
    for (let i = 0; i < 3; i++) assert.ok((await call('cache-me')).ok);
    for (let i = 0; i < 2; i++) assert.ok((await call('hello twice')).ok);
    assert.equal(count('cache-me'), 1);
    assert.equal(count('hello twice'), 2);
    assert.ok((await call('cache-other')).ok);
    assert.equal(count('cache-other'), 1, 'other arguments are another key');
  });

  for (const [m, why] of [['slow', /did not answer/], ['reset', /did not answer/], ['garbage', /answer is not/],
    ['500', /HTTP 500/], ['undefined', /decision is undefined/]]) {
    test(`an engine that is ${m} denies (fail-closed), and the call never reaches the upstream`, async () => {
      mode = m;
      try {
        const r = await call(`hello-${m}`);
        assert.equal(r.kind, 'denied', JSON.stringify(r));
        assert.match(r.message, why);
        assert.ok(!reached(`hello-${m}`));
      } finally {
        mode = 'ok';
      }
    });
  }

  test('while the engine holds its answer, the gateway keeps serving other requests', async () => {
    mode = 'hold';
    release = null;
    const pending = call('hello-held');
    assert.ok(await waitFor(() => release !== null, ms(10000)), 'the engine was never asked');
    const listed = await h.client.listTools(undefined, { timeout: ms(10000) });
    assert.ok(listed.tools.length > 0);
    assert.ok(!reached('hello-held'), 'routed before the engine answered');
    mode = 'ok';
    release();
    const r = await pending;
    assert.ok(r.ok, JSON.stringify(r));
    assert.ok(reached('hello-held'));
  });

  test('past 256 questions waiting for the engine, more calls are denied at once instead of held', async () => {
    mode = 'hold-all';
    const pending = h.client.callTool({ name: 'execute_python', arguments: { reset: true, code: `out = gather(*[fake_echo(text="hello-many-%d" % i) for i in range(300)])
result = {"ok": sum(1 for r in out if r["ok"]), "denied": [r["error"]["message"] for r in out if not r["ok"]][:1],
          "n_denied": sum(1 for r in out if not r["ok"])}` } }, undefined, { timeout: ms(60000) });
    assert.ok(await waitFor(() => held.length >= 256, ms(20000)), `the engine was asked ${held.length} times`);
    mode = 'ok';
    for (const f of held.splice(0)) f();
    const r = (await pending).structuredContent.result;
    assert.equal(r.ok, 256, JSON.stringify(r));
    assert.equal(r.n_denied, 44, JSON.stringify(r));
    assert.match(r.denied[0], /256 calls of yours \(256 of everyone's\) are already waiting for the authorization engine/);
  });
});

describe('the questions waiting for the engine are shared between principals', () => {
  const TA = 'alice-token-0123456789abcdef', TB = 'bob-token-0123456789abcdef';
  let srv, gw, alice, bob;
  const held = [], burstPorts = [];
  before(async () => {
    srv = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => { body += d; });
      req.on('end', () => {
        const send = () => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"result": true}'); };
        const text = String(JSON.parse(body).input?.arguments?.text);
        if (text.startsWith('burst-')) burstPorts.push(req.socket.remotePort);
        if (text.startsWith('flood-') || text.startsWith('burst-')) held.push(send);
        else send();
      });
    });
    await new Promise((r) => srv.listen(0, '127.0.0.1', r));
    const dir = tempDir('codemcp-authz-share-', { shared: true });
    const tools = path.join(dir, 'tools.json');
    fs.writeFileSync(tools, JSON.stringify({ tools: TOOLS }));
    gw = await startHttpGateway({ shared: true, mcp: { fake: servers.fake(['--tools-file', tools]) }, tokens: { alice: TA, bob: TB },
      env: { CODEMCP_AUTHZ_URL: `http://127.0.0.1:${srv.address().port}/v1/data/codemcp/allow`,
        CODEMCP_AUTHZ_TIMEOUT_MS: String(ms(30000)) } });
    alice = await connectHttp(gw.url, TA);
    bob = await connectHttp(gw.url, TB);
    assert.ok(await waitFor(async () => ((await alice.listTools(undefined, { timeout: ms(30000) })).tools[0]?.description || '')
      .includes('def fake_echo('), ms(30000), 100), 'fake_echo never appeared');
  });
  after(async () => {
    for (const f of held.splice(0)) f();
    await alice?.end();
    await bob?.end();
    gw?.proc.child.kill('SIGTERM');
    srv?.close();
  });

  test("one principal's 256 questions waiting leave another's call to be asked", { timeout: ms(90000) }, async () => {
    const run = (client, code) => client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(60000) })
      .then((r) => r.structuredContent?.result ?? r);
    const flood = run(alice, `out = gather(*[fake_echo(text="flood-%d" % i) for i in range(300)])
result = {"ok": sum(1 for r in out if r["ok"]), "denied": [r["error"]["message"] for r in out if not r["ok"]][:1],
          "n_denied": sum(1 for r in out if not r["ok"])}`);
    // All 256 reach the engine at once, though it has answered none of them on its fresh
    // connections (libcurl's PIPEWAIT held every question behind the first: 2 of 256 arrived).
    assert.ok(await waitFor(() => held.length >= 256, ms(30000)), `the engine was asked ${held.length} times`);
    const b = await run(bob, `try:
    result = {"ok": fake_echo(text="hello-bob").result()}
except ToolError as e:
    result = {"kind": e.kind, "message": str(e)}`);
    // bob has his own share: a cap for all principals together denied him.
    assert.ok(b.ok, `bob's call: ${JSON.stringify(b)}`);
    for (const f of held.splice(0)) f();
    const a = await flood;
    assert.equal(a.ok, 256, JSON.stringify(a));
    assert.equal(a.n_denied, 44, JSON.stringify(a));
    assert.match(a.denied[0], /256 calls of yours \(256 of everyone's\) are already waiting/);
  });

  test('two bursts of 100 questions reuse the connections of the first', { timeout: ms(90000) }, async () => {
    for (let burst = 0; burst < 2; burst++) {
      const before = burstPorts.length;
      const done = alice.callTool({ name: 'execute_python', arguments: { code:
        `out = gather(*[fake_echo(text="burst-${burst}-%d" % i) for i in range(100)])\nresult = sum(1 for r in out if r["ok"])` } },
      undefined, { timeout: ms(60000) });
      // All 100 wait at the engine at once, so each holds a connection.
      assert.ok(await waitFor(() => burstPorts.length - before >= 100, ms(30000)), `asked ${burstPorts.length - before} times`);
      for (const f of held.splice(0)) f();
      assert.equal((await done).structuredContent?.result, 100);
    }
    // A cache of libcurl's 64-connection floor closed 36 as the first burst ended, and the
    // second opened them again (136 ports).
    const ports = new Set(burstPorts).size;
    assert.ok(ports <= 102, `two bursts of 100 questions used ${ports} connections`);
  });
});
