// Upstreams of the 2026-07-28 protocol era: real
// servers built with the official TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0,
// tests/v2/server.mjs), dual-era and modern-only (`legacy: 'reject'`), over stdio and
// stateless Streamable HTTP, behind the real codemcp binary. The fixture logs every request
// it receives ("recv METHOD era=…", and over HTTP the routing headers), so the tests check
// both what the program gets and what reached the server.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { NODE, TESTS, connectClient, ms, servers, startV2Http, tempDir, waitFor, writeConfig } from './lib.mjs';

const V2 = path.join(TESTS, 'v2', 'server.mjs');

const v2stdio = (flags = [], extra = {}) => ({ type: 'local', command: [NODE, V2, ...flags], ...extra });

function run(h, code) {
  return h.client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(60000) });
}

const started = new Set();
after(() => {
  for (const p of started) p.kill('SIGKILL');
});

/** Starts the fixture on HTTP (ephemeral port); resolves {proc, port, log()}. */
const startHttp = (flags = []) => startV2Http(started, flags);

/** The fixture's "headers METHOD {...}" lines, parsed. */
function headerLines(log) {
  return [...log.matchAll(/^headers (\S+) (\{.*\})$/gm)].map((m) => ({ method: m[1], ...JSON.parse(m[2]) }));
}

/** The header lines `srv` has logged that `keep` selects, once there are at least `n`. The
 * fixture logs a request before it answers, but its stderr pipe and the gateway's reply reach
 * this process separately: the reply can come first, so a single read may miss the lines. */
async function loggedHeaders(srv, keep, n = 1) {
  const pick = () => headerLines(srv.log()).filter(keep);
  await waitFor(() => pick().length >= n, ms(10000));
  return pick();
}

describe('2026-07-28 upstreams over stdio', () => {
  let h;
  before(async () => {
    const dir = tempDir('codemcp-v2-', { shared: true });
    const config = writeConfig(dir, {
      dual: v2stdio(['--name', 'dual']),
      modern: v2stdio(['--name', 'modern', '--legacy', 'reject']),
      // Told to skip the probe: gets -32022 for its initialize and switches to the 2026 era.
      forced: v2stdio(['--name', 'forced', '--legacy', 'reject'], { protocol: 'legacy' }),
      everything: servers.everything(),
    });
    // The probe window is widened: on a loaded machine a Node server can take longer than the
    // default 5 s to answer its first request, and would then (correctly) be used in 2025 mode.
    h = await connectClient({ config, shared: true, env: { CODEMCP_LOG: 'info', CODEMCP_DISCOVER_PROBE_MS: '60000' } });
    await h.client.listTools();
  });

  test('a modern-only server (legacy: reject) keeps its tools; calls use the 2026 envelope', async () => {
    const r = await run(h, 'result = [modern_add(a=2, b=3), dual_add(a=1, b=1), forced_add(a=5, b=5)]');
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.deepEqual(r.structuredContent.result, [5, 2, 10]);
    // The servers' "recv" lines reach codemcp's stderr through their stderr pipes, apart from
    // their replies: wait for them rather than reading once.
    await waitFor(() => ['modern', 'dual', 'forced'].every((n) => h.stderr().includes(`[${n}] recv tools/call`)), ms(10000));
    const log = h.stderr();
    for (const name of ['modern', 'dual', 'forced']) {
      assert.match(log, new RegExp(`${name}: protocol 2026-07-28, era 2026 \\(modern\\)`), log);
      assert.match(log, new RegExp(`\\[${name}\\] recv tools/call era=modern:2026-07-28`));
      assert.doesNotMatch(log, new RegExp(`\\[${name}\\] recv tools/call era=legacy`));
    }
    assert.doesNotMatch(log, /\[(modern|dual)\] recv initialize/, 'the probe answered: no initialize');
    assert.match(log, /\[forced\] recv initialize era=legacy/);
    // A 2025-era server answers the probe with -32601 and gets the handshake as before.
    assert.match(log, /everything: protocol 2025-\d\d-\d\d, era 2025 \(legacy\)/);
  });

  test('a server that asks for input raises ToolError(kind="input_required") naming the question', async () => {
    const r = await run(h, `
try:
    str(modern_confirm(action="drop the table"))
    result = "no error"
except ToolError as e:
    result = [e.kind, e.message]`);
    assert.equal(r.isError, false, JSON.stringify(r));
    const [kind, message] = r.structuredContent.result;
    assert.equal(kind, 'input_required');
    assert.match(message, /elicitation\/create/);
    assert.match(message, /Really drop the table\?/);
  });

  test('list changes arrive on subscriptions/listen: a new tool becomes callable', async () => {
    const g = await run(h, 'result = modern_grow()');
    assert.equal(g.isError, false, JSON.stringify(g));
    assert.equal(g.structuredContent.result, 'extra_1');
    const ok = await waitFor(async () => {
      const r = await run(h, 'result = modern_extra_1()');
      return !r.isError && r.structuredContent.result === 'extra 1';
    }, ms(15000), 200);
    assert.ok(ok, `modern_extra_1 never appeared:\n${h.stderr().slice(-2000)}`);
    assert.match(h.stderr(), /\[modern\] recv subscriptions\/listen era=modern:2026-07-28/);
  });
});

describe('2026-07-28 upstreams over stateless Streamable HTTP', () => {
  let h, dual, modern;
  before(async () => {
    dual = await startHttp();
    modern = await startHttp(['--legacy', 'reject']);
    const dir = tempDir('codemcp-v2h-', { shared: true });
    const config = writeConfig(dir, {
      hdual: { type: 'remote', url: `http://127.0.0.1:${dual.port}/mcp` },
      hmodern: { type: 'remote', url: `http://127.0.0.1:${modern.port}/mcp` },
    });
    h = await connectClient({ config, shared: true, env: { CODEMCP_LOG: 'info' } });
    await h.client.listTools();
  });

  test('both are used in the 2026 era: no session, routing headers that match the body', async () => {
    const r = await run(h, 'result = [hdual_add(a=20, b=1), hmodern_add(a=40, b=2)]');
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.deepEqual(r.structuredContent.result, [21, 42]);
    for (const srv of [dual, modern]) {
      await loggedHeaders(srv, (x) => x.method === 'tools/call');
      const hdrs = headerLines(srv.log());
      const call = hdrs.find((x) => x.method === 'tools/call');
      assert.ok(call, srv.log());
      assert.deepEqual(call, { method: 'tools/call', v: '2026-07-28', m: 'tools/call', n: 'add', s: null });
      const list = hdrs.find((x) => x.method === 'tools/list');
      assert.deepEqual(list, { method: 'tools/list', v: '2026-07-28', m: 'tools/list', n: null, s: null });
      assert.ok(!hdrs.some((x) => x.method === 'initialize'), 'no initialize was needed');
    }
    assert.match(h.stderr(), /hmodern: protocol 2026-07-28, era 2026 \(modern\)/);
  });

  test('x-mcp-header parameters are mirrored into Mcp-Param-* headers; an invalid annotation hides the tool', async () => {
    const r = await run(h, 'result = [hmodern_query(region="us-west1", q="x", limit=7), hmodern_query(region="Zürich ", q="y")]');
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.deepEqual(r.structuredContent.result, ['us-west1:x', 'Zürich :y']);
    const calls = await loggedHeaders(modern, (x) => x.method === 'tools/call' && x.n === 'query', 2);
    assert.equal(calls.length, 2, modern.log());
    // The two calls overlap (Pending handles), so they may reach the server in either order.
    const plain = calls.find((x) => x['mcp-param-region'] === 'us-west1');
    assert.ok(plain, modern.log());
    assert.equal(plain['mcp-param-limit'], '7');
    // Not plain trimmed ASCII: the base64 sentinel of the UTF-8 bytes.
    const other = calls.find((x) => x !== plain);
    assert.equal(other['mcp-param-region'], `=?base64?${Buffer.from('Zürich ').toString('base64')}?=`);
    assert.equal(other['mcp-param-limit'], undefined, 'an absent argument sends no header');
    const bad = await run(h, 'result = hmodern_badheader(ratio=0.5)');
    assert.equal(bad.isError, true, 'a tool with an invalid x-mcp-header must not be offered');
    assert.match(h.stderr(), /hmodern: leaving out tool badheader: x-mcp-header "Ratio" on a property of type number/);
  });

  test('input_required over HTTP', async () => {
    const r = await run(h, `
try:
    str(hmodern_confirm(action="wipe"))
except ToolError as e:
    result = e.kind`);
    assert.equal(r.structuredContent.result, 'input_required', JSON.stringify(r));
  });

  test('list changes over HTTP arrive on the listen stream', async () => {
    const g = await run(h, 'result = hdual_grow()');
    assert.equal(g.structuredContent.result, 'extra_1', JSON.stringify(g));
    const ok = await waitFor(async () => {
      const r = await run(h, 'result = hdual_extra_1()');
      return !r.isError && r.structuredContent.result === 'extra 1';
    }, ms(15000), 200);
    assert.ok(ok, `hdual_extra_1 never appeared:\n${dual.log().slice(-2000)}`);
  });
});
