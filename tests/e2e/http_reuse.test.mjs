// Reuse in the HTTP upstream client: curl easy handles are pooled and reset between
// transfers, and keep-alive connections are reused. What that must never do: let a header,
// the method, the body or a timeout of one request reach the next one (a pooled handle may
// have carried another server's DELETE, or been aborted mid-stream), or open a connection
// per call. Checked at the upstream: tests/fixtures/http/mcp_http_server.mjs records every
// request's header names (repeats kept), its client port (the connection) and its body size.
import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { after, test } from 'node:test';

import { connectClient, startHttpFixture, ms, runCodemcp, tempDir, waitFor, writeConfig } from './lib.mjs';

const started = new Set();
after(() => {
  for (const p of started) p.kill('SIGKILL');
});

const startFixture = (flags = []) => startHttpFixture(started, flags);

const stats = async (f) => (await fetch(`http://127.0.0.1:${f.port}/admin/stats`)).json();
const remote = (f, extra = {}) => ({ type: 'remote', url: `http://127.0.0.1:${f.port}/mcp`, ...extra });

async function connect(config, env = {}) {
  const h = await connectClient({ config, env: { CODEMCP_LOG: process.env.REMOTE_TEST_LOG || 'warn', ...env } });
  await h.client.listTools();
  return h;
}

async function run(h, code) {
  const r = await h.client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(60000) });
  assert.equal(r.isError, false, `run failed: ${JSON.stringify(r.structuredContent ?? r)}\n${h.stderr().slice(-3000)}`);
  return r.structuredContent.result;
}

/** One JSON line to the gateway's admin socket; resolves the parsed answer. */
function admin(socket, method, params) {
  return new Promise((resolve, reject) => {
    const c = net.connect(socket);
    let buf = '';
    c.setEncoding('utf8');
    c.on('connect', () => c.write(JSON.stringify({ method, params }) + '\n'));
    c.on('data', (d) => {
      buf += d;
      if (buf.includes('\n')) {
        c.end();
        resolve(JSON.parse(buf.slice(0, buf.indexOf('\n'))));
      }
    });
    c.on('error', reject);
  });
}

/** What every request must satisfy whatever came before it on the same handle. */
function checkOwnHeaders(reqs) {
  for (const q of reqs) {
    const what = `${q.method} ${q.rpc ?? ''} ${JSON.stringify(q.names)}`;
    assert.equal(q.names.length, new Set(q.names).size, `a header repeated: ${what}`);
    assert.equal(q.names.filter((n) => n === 'x-test-token').length, 1, `configured header: ${what}`);
    if (q.method === 'POST') {
      assert.equal(q.lastEventId, undefined, `Last-Event-ID on a POST: ${what}`);
      assert.equal(q.contentType, 'application/json', what);
      assert.ok(q.bodyLen > 0, `a POST without its body: ${what}`);
      assert.equal(q.mcpMethod, q.rpc, `Mcp-Method of another request: ${what}`);
      if (q.rpc === 'tools/call') assert.equal(q.mcpName, q.tool, `Mcp-Name of another request: ${what}`);
      else if (q.rpc === 'initialize') assert.equal(q.session, undefined, `initialize with a session: ${what}`);
    } else {
      for (const n of ['content-type', 'content-length', 'mcp-method', 'mcp-name', 'transfer-encoding'])
        assert.ok(!q.names.includes(n), `${n} on a ${q.method}: ${what}`);
      assert.equal(q.bodyLen, 0, `a body on a ${q.method}: ${what}`);
    }
  }
}

test('sequential calls share one keep-alive connection and every request carries only its own headers', { timeout: ms(60000) }, async () => {
  const f = await startFixture();
  const dir = tempDir();
  const h = await connect(writeConfig(dir, { fx: remote(f, { headers: { 'X-Test-Token': 'tok' } }) }));
  try {
    const got = await run(h, 'out = []\nfor i in range(12):\n    out.append(str(fx_add(a=i, b=1)))\n' +
      '    out.append(str(fx_slow(ms=1)))\nresult = out');
    assert.deepEqual(got, Array.from({ length: 12 }, (_, i) => [String(i + 1), 'slept 1']).flat());
    const reqs = (await stats(f)).requests;
    checkOwnHeaders(reqs);
    const calls = reqs.filter((q) => q.rpc === 'tools/call');
    assert.equal(calls.length, 24);
    const ports = new Set(calls.map((q) => q.port));
    // One connection carries them all (a second one if the server closed the first between
    // two calls); a connection per call would be 24.
    assert.ok(ports.size <= 2, `24 sequential calls used ${ports.size} connections`);
  } finally {
    await h.close();
  }
});

test("a pooled handle that ended another server's session (DELETE, 2 s timeout) or was aborted mid-stream carries nothing into the next request", { timeout: ms(90000) }, async () => {
  const fa = await startFixture();
  const fb = await startFixture();
  const dir = tempDir();
  const socket = path.join(dir, 'admin.sock');
  const tok = { headers: { 'X-Test-Token': 'tok' } };
  const h = await connect(writeConfig(dir, { fa: remote(fa, tok), fb: remote(fb, tok) }), { CODEMCP_ADMIN_SOCKET: socket });
  try {
    assert.deepEqual(await run(h, 'result = [str(fa_add(a=1, b=1)), str(fb_add(a=1, b=2))]'), ['2', '3']);
    // Disabling fa aborts its GET stream mid-transfer and sends DELETE (with a 2 s timeout):
    // both handles go back to the pool, the DELETE's last, so fb's next request takes it.
    const ans = await admin(socket, 'disable', { name: 'fa' });
    assert.ok(!ans.error, JSON.stringify(ans));
    let deleted;
    await waitFor(async () => {
      deleted = (await stats(fa)).requests.find((q) => q.method === 'DELETE');
      return !!deleted;
    }, ms(10000));
    await new Promise((r) => setTimeout(r, 300)); // the DELETE's transfer ends and is pooled
    const t0 = Date.now();
    const got = await run(h, 'result = [str(fb_add(a=2, b=2)), str(fb_slow(ms=2600)), str(fb_add(a=3, b=3))]');
    assert.deepEqual(got, ['4', 'slept 2600', '6']);
    const after = (await stats(fb)).requests.filter((q) => q.t >= t0);
    assert.ok(after.filter((q) => q.rpc === 'tools/call').length === 3, JSON.stringify(after));
    assert.ok(after.every((q) => q.method !== 'DELETE'), `fb got a DELETE: ${JSON.stringify(after)}`);
    checkOwnHeaders([...(await stats(fa)).requests, ...(await stats(fb)).requests]);
  } finally {
    await h.close();
  }
});

test('a second burst of concurrent calls reuses the connections of the first', { timeout: ms(60000) }, async () => {
  const f = await startFixture();
  const dir = tempDir();
  const h = await connect(writeConfig(dir, { fx: remote(f, { headers: { 'X-Test-Token': 'tok' } }) }));
  try {
    // More than the 64 connections a fixed cache once kept, fewer than the upstream's cap on
    // requests in flight (CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM, 100).
    const N = 90;
    const code = `ps = [fx_slow(ms=400) for i in range(${N})]\nresult = [str(p) for p in ps]`;
    for (let burst = 0; burst < 2; burst++)
      assert.deepEqual(await run(h, code), Array(N).fill('slept 400'));
    const reqs = (await stats(f)).requests;
    checkOwnHeaders(reqs);
    const calls = reqs.filter((q) => q.rpc === 'tools/call');
    assert.equal(calls.length, 2 * N);
    // At most N calls overlap, so N connections carry both bursts (one more if the server
    // closed one in between). libcurl's default cache (sized by the transfers still running),
    // or one smaller than N, closes some as the first burst ends, and the second opens them
    // again (116 with a cache of 64).
    const ports = new Set(calls.map((q) => q.port));
    assert.ok(ports.size <= N + 1, `two bursts of ${N} concurrent calls used ${ports.size} connections`);
  } finally {
    await h.close();
  }
});

test('the connection cache grows with each HTTP upstream: two servers of 45 connections each keep all 90 between bursts', { timeout: ms(60000) }, async () => {
  const fa = await startFixture();
  const fb = await startFixture();
  const dir = tempDir();
  const tok = { headers: { 'X-Test-Token': 'tok' }, maxConnections: 45 };
  const h = await connect(writeConfig(dir, { fa: remote(fa, tok), fb: remote(fb, tok) }));
  try {
    const N = 45; // per server: each alone would fit a cache of 64, both together do not
    const code = `ps = [fa_slow(ms=400) for i in range(${N})] + [fb_slow(ms=400) for i in range(${N})]\n` +
      'result = [str(p) for p in ps]';
    for (let burst = 0; burst < 2; burst++)
      assert.deepEqual(await run(h, code), Array(2 * N).fill('slept 400'));
    let ports = 0;
    for (const f of [fa, fb]) {
      const calls = (await stats(f)).requests.filter((q) => q.rpc === 'tools/call');
      assert.equal(calls.length, 2 * N);
      ports += new Set(calls.map((q) => q.port)).size;
    }
    assert.ok(ports <= 2 * N + 2, `two bursts of ${2 * N} concurrent calls on two servers used ${ports} connections`);
  } finally {
    await h.close();
  }
});

test('a server saturated at its connection cap keeps its connections: the ones that finish carry the queued calls', { timeout: ms(90000) }, async () => {
  const f = await startFixture();
  const dir = tempDir();
  // A cap above the cache's floor of 64, so the cache is sized by this server alone: its cap
  // plus the transfers outside it (here the standing GET stream).
  const CAP = 70, N = 210;
  const h = await connect(writeConfig(dir, { fx: remote(f, { headers: { 'X-Test-Token': 'tok' }, maxConnections: CAP }) }));
  try {
    const code = `ps = [fx_slow(ms=150) for i in range(${N})]\nresult = [str(p) for p in ps]`;
    assert.deepEqual(await run(h, code), Array(N).fill('slept 150'));
    const reqs = (await stats(f)).requests;
    checkOwnHeaders(reqs);
    const calls = reqs.filter((q) => q.rpc === 'tools/call');
    assert.equal(calls.length, N);
    // CAP calls at a time, the rest queued: each call that ends hands its connection to the
    // next. With a cache of exactly CAP connections the GET stream put it one over, so every
    // call that ended closed its connection and the next opened a new one (147 connections for 210 calls).
    const ports = new Set(calls.map((q) => q.port));
    assert.ok(ports.size <= CAP + 2, `${N} calls, ${CAP} at a time, used ${ports.size} connections`);
  } finally {
    await h.close();
  }
});

test("a DELETE the server never answers ends at libcurl's 2 s timeout: the gateway exits without being forced", { timeout: ms(60000) }, async () => {
  const f = await startFixture(['--hang-delete']);
  const dir = tempDir();
  const config = writeConfig(dir, { fx: remote(f, { headers: { 'X-Test-Token': 'tok' } }) });
  const r = await runCodemcp({ config, env: { CODEMCP_LOG: 'warn', CODEMCP_SMOKE: 'print(fx_add(a=1, b=2))' } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(JSON.parse(r.stdout).stdout, /^3\n/);
  assert.ok((await stats(f)).requests.some((q) => q.method === 'DELETE'), 'no DELETE reached the server');
  // The transfer's own timeout (curl's timer) ends the DELETE; without it the gateway's
  // 8 s shutdown deadline would have to stop it.
  assert.doesNotMatch(r.stderr, /shutdown took too long/);
});
