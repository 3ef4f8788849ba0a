// The connection cap of a remote upstream: at most N requests of one server are in
// flight at once ("maxConnections", else CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM), so the
// server sees at most N connections carrying requests (+1: its standing GET event stream);
// the rest wait in the gateway, in order. A call that times out while waiting is never sent,
// and its error says it was waiting for a connection. Checked at the upstream:
// tests/fixtures/http/mcp_http_server.mjs counts the connections that carried /mcp requests
// (open at once: maxConns) and the slow tool's concurrent calls (maxInflight).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { after, test } from 'node:test';

import { NODE, TESTS, connectClient, startHttpFixture, ms, tempDir, waitFor, writeConfig } from './lib.mjs';

const started = new Set();
after(() => {
  for (const p of started) p.kill('SIGKILL');
});

const startFixture = () => startHttpFixture(started);

const stats = async (f) => (await fetch(`http://127.0.0.1:${f.port}/admin/stats`)).json();
const remote = (f, extra = {}) => ({ type: 'remote', url: `http://127.0.0.1:${f.port}/mcp`, ...extra });

async function connect(config, env = {}) {
  const h = await connectClient({ config, env: { CODEMCP_LOG: 'debug', ...env } });
  await h.client.listTools();
  return h;
}

async function run(h, code) {
  const r = await h.client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(120000) });
  assert.equal(r.isError, false, `run failed: ${JSON.stringify(r.structuredContent ?? r)}\n${h.stderr().slice(-3000)}`);
  return r.structuredContent.result;
}

const CALLS = 50;
const burst = `ps = [fx_slow(ms=150 + i % 3) for i in range(${CALLS})]\nresult = [str(p) for p in ps]`;
const burstAnswers = Array.from({ length: CALLS }, (_, i) => `slept ${150 + (i % 3)}`);

test(`with CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM=4, ${CALLS} concurrent calls all succeed over at most 4 request connections`, { timeout: ms(120000) }, async () => {
  const f = await startFixture();
  const dir = tempDir();
  const h = await connect(writeConfig(dir, { fx: remote(f) }), { CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM: '4' });
  try {
    assert.deepEqual(await run(h, burst), burstAnswers);
    const st = await stats(f);
    const calls = st.requests.filter((q) => q.rpc === 'tools/call');
    assert.equal(calls.length, CALLS);
    // The cap is on requests in flight: never more than 4 at the server, and 4 were used.
    assert.equal(st.maxInflight, 4, `concurrent calls at the server: ${st.maxInflight}`);
    // 4 connections for the requests + 1 for the standing GET event stream. Without the cap
    // this is ~CALLS + 1.
    assert.ok(st.maxConns <= 5, `${st.maxConns} connections open at once (cap 4, + the event stream)`);
    const callPorts = new Set(calls.map((q) => q.port));
    assert.ok(callPorts.size <= 5, `the calls used ${callPorts.size} connections`);
    assert.match(h.stderr(), /fx: 4 requests in flight, its connection cap; more wait for a connection/);
    assert.match(h.stderr(), /fx: no request waits for a connection any more \(\d+ waited/);
  } finally {
    await h.close();
  }
});

test('a server\'s "maxConnections" overrides CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM; 0 means no cap', { timeout: ms(120000) }, async () => {
  const fa = await startFixture();
  const fb = await startFixture();
  const dir = tempDir();
  const h = await connect(writeConfig(dir, { fx: remote(fa, { maxConnections: 2 }), fy: remote(fb, { maxConnections: 0 }) }),
    { CODEMCP_HTTP_MAX_CONNECTIONS_PER_UPSTREAM: '8' });
  try {
    assert.deepEqual(await run(h, burst), burstAnswers);
    const a = await stats(fa);
    assert.equal(a.maxInflight, 2, `fx: ${a.maxInflight} calls at once with maxConnections 2`);
    assert.ok(a.maxConns <= 3, `fx: ${a.maxConns} connections open at once`);
    const code = `ps = [fy_slow(ms=400) for i in range(20)]\nresult = [str(p) for p in ps]`;
    assert.deepEqual(await run(h, code), Array(20).fill('slept 400'));
    const b = await stats(fb);
    // No cap: the 20 calls overlap (more than the environment's 8).
    assert.ok(b.maxInflight > 8, `fy: only ${b.maxInflight} calls at once with maxConnections 0`);
  } finally {
    await h.close();
  }
});

test('a bad "maxConnections" disables only that server, with a message naming the key', { timeout: ms(60000) }, async () => {
  const f = await startFixture();
  const dir = tempDir();
  const h = await connect(writeConfig(dir, { fx: remote(f), bad: remote(f, { maxConnections: 'many' }) }));
  try {
    assert.deepEqual(await run(h, 'result = str(fx_add(a=1, b=2))'), '3');
    assert.match(h.stderr(), /maxConnections.*must be an integer from 0 \(no cap\) to 4096/);
  } finally {
    await h.close();
  }
});

test('a call that times out while waiting for a connection is never sent and its error says why', { timeout: ms(120000) }, async () => {
  const f = await startFixture();
  const dir = tempDir();
  const h = await connect(writeConfig(dir, { fx: remote(f, { maxConnections: 2 }) }));
  try {
    // Two slow calls hold both connections; the third waits behind them and its own 1.5 s
    // timeout runs out first. The slow ones still answer (their connections are theirs).
    const code = [
      'a = fx_slow(ms=6000)',
      'b = fx_slow(ms=6000)',
      'c = fx_add(a=1, b=2, timeout_ms=1500)',
      'r = gather(c)[0]',
      'result = [r["ok"], r.get("error", {}).get("kind"), str(r.get("error", {})), str(a), str(b)]',
    ].join('\n');
    const [ok, kind, error, a, b] = await run(h, code);
    assert.equal(ok, false, 'the queued call should have timed out');
    assert.equal(kind, 'timeout', error);
    assert.match(error, /did not answer within \d+ ms: the request was still waiting for a connection \(2 requests to http:\/\/127\.0\.0\.1:\d+\/mcp were in flight/);
    assert.match(error, /maxConnections/);
    assert.deepEqual([a, b], ['slept 6000', 'slept 6000']);
    const st = await stats(f);
    assert.ok(!st.requests.some((q) => q.tool === 'add'), 'the timed-out call reached the server');
    assert.match(h.stderr(), /fx: request \d+ given up after \d+ ms waiting for a connection/);
    // The cap is not stuck: a later call goes through.
    assert.equal(await run(h, 'result = str(fx_add(a=2, b=3))'), '5');
  } finally {
    await h.close();
  }
});

test('a sent call that times out gives its connection back: a server that never answers cannot hold the cap', { timeout: ms(120000) }, async () => {
  const f = await startFixture();
  const dir = tempDir();
  const h = await connect(writeConfig(dir, { fx: remote(f, { maxConnections: 1 }) }));
  try {
    // The slow call holds the only connection for 60 s, but its own timeout is 1 s: the
    // gateway closes its transfer, so the next call (10 s budget) gets the connection.
    const code = [
      'r = gather(fx_slow(ms=60000, timeout_ms=1000))[0]',
      'result = [r["ok"], r["error"]["kind"], str(fx_add(a=2, b=2, timeout_ms=10000))]',
    ].join('\n');
    const t0 = Date.now();
    assert.deepEqual(await run(h, code), [false, 'timeout', '4']);
    assert.ok(Date.now() - t0 < ms(30000), `took ${Date.now() - t0} ms`);
  } finally {
    await h.close();
  }
});

test("a 2026-era server's standing subscriptions/listen stream does not take a slot of the cap", { timeout: ms(120000) }, async () => {
  // The SDK v2 fixture (stateless HTTP, modern only): the gateway keeps one subscriptions/listen
  // POST open for list changes. Counted against maxConnections 1, it would starve every call.
  const proc = spawn(NODE, [path.join(TESTS, 'v2', 'server.mjs'), '--http', '0', '--legacy', 'reject'], { stdio: ['ignore', 'pipe', 'pipe'] });
  started.add(proc);
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`v2 server did not start: ${log}`)), ms(15000));
    proc.stderr.setEncoding('utf8').on('data', (d) => {
      log += d;
      const m = log.match(/listening (\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
  const dir = tempDir();
  const h = await connect(writeConfig(dir, { hm: { type: 'remote', url: `http://127.0.0.1:${port}/mcp`, maxConnections: 1 } }));
  try {
    await waitFor(() => /recv subscriptions\/listen/.test(log), ms(15000));
    const code = 'result = [hm_add(a=1, b=2, timeout_ms=10000), hm_add(a=3, b=4, timeout_ms=10000)]';
    assert.deepEqual(await run(h, code), [3, 7]);
  } finally {
    await h.close();
  }
});

test('calls waiting for a connection when the session expires are sent on the new session', { timeout: ms(120000) }, async () => {
  const f = await startFixture();
  const dir = tempDir();
  const h = await connect(writeConfig(dir, { fx: remote(f, { maxConnections: 2 }) }));
  try {
    assert.equal(await run(h, 'result = str(fx_add(a=1, b=1))'), '2');
    const expired = await (await fetch(`http://127.0.0.1:${f.port}/admin/expire`, { method: 'POST' })).json();
    assert.equal(expired.expired, 1);
    // Twelve calls over two connections: the first ones meet the 404 and are resent once; the
    // rest wait, through the re-initialize, and go out on the new session.
    const code = 'result = [r["value"] for r in gather(*[fx_add(a=40, b=i) for i in range(12)])]';
    assert.deepEqual(await run(h, code), Array.from({ length: 12 }, (_, i) => 40 + i));
    const st = await stats(f);
    assert.equal(st.sessions, 2, 'exactly one new session');
    const calls = st.requests.filter((q) => q.rpc === 'tools/call');
    const newSid = calls[calls.length - 1].session;
    assert.equal(calls.filter((q) => q.session === newSid).length, 12, JSON.stringify(calls.map((q) => q.session)));
    assert.ok(st.maxConns <= 4, `${st.maxConns} connections open at once (cap 2, + the event stream, + the replay)`);
    assert.match(h.stderr(), /fx: the server no longer knows session/);
  } finally {
    await h.close();
  }
});
