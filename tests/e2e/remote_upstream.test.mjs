// Remote (Streamable HTTP) upstreams through the real binary:
// server-everything in streamableHttp mode and a purpose-built SDK-based server
// (tests/fixtures/http/mcp_http_server.mjs) for what no stock server does on demand — expiring
// sessions, cutting response streams, adding tools at run time, answering 401. Assertions are
// about behaviour seen from both ends: what the SDK client gets from codemcp, and which
// requests (headers, Last-Event-ID, session ids) reached the upstream.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import {
  NODE,
  NPM_PEERS,
  TESTS,
  connectClient,
  freePort,
  ms,
  runCodemcp,
  servers,
  sleep,
  tempDir,
  waitFor,
  writeConfig,
} from './lib.mjs';

const EVERYTHING = path.join(NPM_PEERS, 'server-everything', 'dist', 'index.js');
const FIXTURE = path.join(TESTS, 'fixtures', 'http', 'mcp_http_server.mjs');

// ---- upstream processes started by this file ------------------------------------------------

const started = new Set();
after(() => {
  for (const p of started) p.kill('SIGKILL');
});

/** Spawns a node server and waits until `ready` matches its output; resolves {proc, out, port}. */
function startNode(args, env, ready) {
  return new Promise((resolve, reject) => {
    const proc = spawn(NODE, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    started.add(proc);
    const h = { proc, out: '' };
    const timer = setTimeout(() => reject(new Error(`server did not start: ${h.out}`)), ms(15000));
    const onData = (d) => {
      h.out += d;
      const m = h.out.match(ready);
      if (m && !h.ready) {
        h.ready = true;
        clearTimeout(timer);
        h.port = Number(m[1]);
        resolve(h);
      }
    };
    proc.stdout.setEncoding('utf8').on('data', onData);
    proc.stderr.setEncoding('utf8').on('data', onData);
    proc.on('exit', (code) => {
      started.delete(proc);
      if (!h.ready) {
        clearTimeout(timer);
        reject(new Error(`server exited (${code}) before it was ready: ${h.out}`));
      }
    });
  });
}

function startEverything(port) {
  return startNode([EVERYTHING, 'streamableHttp'], { PORT: String(port) }, /listening on port (\d+)/i);
}

function startFixture(flags = []) {
  return startNode([FIXTURE, ...flags], {}, /listening on (\d+)/);
}

async function stopProc(h) {
  if (h.proc.exitCode !== null || h.proc.signalCode !== null) return;
  const gone = new Promise((r) => h.proc.once('exit', r));
  h.proc.kill('SIGKILL');
  await gone;
}

async function fixtureStats(port) {
  const r = await fetch(`http://127.0.0.1:${port}/admin/stats`);
  return r.json();
}

function remote(port, extra = {}) {
  return { type: 'remote', url: `http://127.0.0.1:${port}/mcp`, ...extra };
}

function run(h, code, opts = {}) {
  return h.client.callTool({ name: 'execute_python', arguments: { code } }, undefined, {
    timeout: ms(60000),
    ...opts,
  });
}

/** An SDK client on a fresh codemcp, after its first tools/list (which waits for the upstreams
 *  to settle, as a harness's first list does). */
async function connect(config, env = {}) {
  const h = await connectClient({ config, env: { CODEMCP_LOG: process.env.REMOTE_TEST_LOG || 'warn', ...env } });
  await h.client.listTools();
  return h;
}

/** The envelope of a run that must have succeeded. */
function ok(r, h) {
  assert.equal(r.isError, false, `run failed: ${JSON.stringify(r.structuredContent ?? r)}` +
    (h ? `\ncodemcp stderr:\n${h.stderr().slice(-4000)}` : ''));
  return r.structuredContent;
}

// ---- server-everything over Streamable HTTP -------------------------------------------------

test('without a loadable libcurl a remote server fails saying what to install, and a stdio upstream still serves', { timeout: ms(60000) }, async () => {
  // libcurl is loaded on first use (src/core/curl_lib.c): a libcurl.so.4 the dynamic linker
  // finds first and cannot load stands for a machine without libcurl4.
  const dir = tempDir();
  const lib = path.join(dir, 'lib');
  fs.mkdirSync(lib);
  fs.writeFileSync(path.join(lib, 'libcurl.so.4'), 'not a shared object\n');
  const config = writeConfig(dir, { far: { type: 'remote', url: 'http://127.0.0.1:9/mcp' }, everything: servers.everything() });
  const r = await runCodemcp({ config, env: { LD_LIBRARY_PATH: lib, CODEMCP_LOG: 'info',
    CODEMCP_SMOKE: 'print(everything_get_sum(a=1, b=2))' } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(JSON.parse(r.stdout).stdout, /3/);
  assert.match(r.stderr, /far: .*libcurl could not be loaded \(.*\): install libcurl4/, r.stderr);
});

test('CODEMCP_DUMP lists the tools of server-everything over HTTP, then ends the session', { timeout: ms(60000) }, async () => {
  const up = await startEverything(await freePort());
  const dir = tempDir();
  const config = writeConfig(dir, { everything: remote(up.port) });
  const r = await runCodemcp({ config, env: { CODEMCP_DUMP: '1' } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /def everything_get_sum\(a: float, b: float/);
  assert.match(r.stdout, /def everything_echo\(/);
  // The server saw: a session created, the GET stream asked for, and the session deleted.
  // (DUMP ends as soon as the tools are listed, so the GET, made on its own connection
  // right after notifications/initialized, may reach the server after the DELETE.)
  await waitFor(() => /termination request/.test(up.out) && /Received MCP GET request/.test(up.out),
    ms(3000));
  assert.match(up.out, /Session initialized with ID/);
  assert.match(up.out, /Received MCP GET request/);
  assert.match(up.out, /Received session termination request/);
  await stopProc(up);
});

describe('server-everything as a remote upstream', () => {
  test('calls work, fail with a transport ToolError while the server is down, then work again', { timeout: ms(120000) }, async () => {
    const port = await freePort();
    let up = await startEverything(port);
    const dir = tempDir();
    const config = writeConfig(dir, { everything: remote(port) });
    const h = await connectClient({ config, env: { CODEMCP_LOG: process.env.REMOTE_TEST_LOG || 'info' } });
    const tools = await h.client.listTools();
    assert.match(tools.tools[0].description, /def everything_get_sum\(/);

    let env = ok(await run(h, 'everything_get_sum(a=2, b=40)'), h);
    assert.match(JSON.stringify(env.result), /42/);
    // Calls overlap: ten at once through gather.
    env = ok(await run(h, 'result = [str(r) for r in gather(*[everything_get_sum(a=i, b=1) for i in range(10)])]'), h);
    assert.equal(env.result.length, 10);
    env.result.forEach((s, i) => assert.match(s, new RegExp(`\\b${i + 1}\\b`), s));

    await stopProc(up);
    const down = ok(await run(h, `
out = []
for _ in range(2):
    try:
        everything_get_sum(a=1, b=1).result()
        out.append("no error")
    except ToolError as e:
        out.append(e.kind)
result = out
`), h);
    assert.deepEqual(down.result, ['transport', 'transport']);

    up = await startEverything(port);
    // Reconnects with backoff (1 s, 2 s, ...): poll until a call goes through.
    let last;
    const back = await waitFor(async () => {
      last = await run(h, 'everything_get_sum(a=20, b=22)');
      return !last.isError && /42/.test(JSON.stringify(last.structuredContent.result));
    }, ms(40000), 500);
    assert.ok(back, `no successful call after the restart: ${JSON.stringify(last?.structuredContent)}\n${h.stderr().slice(-3000)}`);
    assert.match(h.stderr(), /reconnecting/);
    await h.close();
    await stopProc(up);
  });
});

// ---- the purpose-built server ----------------------------------------------------------------

describe('Streamable HTTP details (fixture server)', () => {
  test('configured headers ({env:} interpolated), session id and protocol version are sent', { timeout: ms(60000) }, async () => {
    const up = await startFixture();
    const dir = tempDir();
    const config = writeConfig(dir, { fx: remote(up.port, { headers: { 'X-Test-Token': '{env:FX_TOKEN}' } }) });
    const r = await runCodemcp({ config, env: { FX_TOKEN: 'tok-123', CODEMCP_SMOKE: 'print(fx_add(a=1, b=2))' } });
    assert.equal(r.code, 0, r.stderr);
    assert.match(JSON.parse(r.stdout).stdout, /^3\n/);
    const st = await fixtureStats(up.port);
    const reqs = st.requests;
    assert.equal(st.sessions, 1);
    assert.ok(reqs.every((q) => q.token === 'tok-123'), JSON.stringify(reqs));
    const init = reqs.find((q) => q.rpc === 'initialize');
    assert.equal(init.session, undefined, 'initialize must not carry a session id');
    assert.equal(init.protocolVersion, undefined, 'initialize must not carry MCP-Protocol-Version');
    assert.equal(init.accept, 'application/json, text/event-stream');
    assert.equal(init.contentType, 'application/json');
    // The 2026 era probe: no session, the modern headers; this 2025-era fixture refuses it.
    const probe = reqs.find((q) => q.rpc === 'server/discover');
    assert.ok(probe && reqs.indexOf(probe) < reqs.indexOf(init), 'server/discover is sent first');
    assert.equal(probe.session, undefined, 'server/discover must not carry a session id');
    assert.equal(probe.protocolVersion, '2026-07-28');
    const later = reqs.filter((q) => q !== init && q !== probe);
    assert.ok(later.length >= 4, JSON.stringify(reqs)); // initialized, GET, tools/list, tools/call, DELETE
    for (const q of later) {
      assert.ok(q.session, `${q.method} ${q.rpc} without Mcp-Session-Id`);
      assert.equal(q.protocolVersion, '2025-11-25', `${q.method} ${q.rpc}`);
    }
    assert.ok(reqs.some((q) => q.method === 'GET' && q.accept === 'text/event-stream'), 'no GET stream');
    assert.ok(reqs.some((q) => q.method === 'DELETE'), 'session not deleted at exit');
    await stopProc(up);
  });

  for (const mode of ['sse', 'json']) {
    test(`an expired session (404) is re-initialized and the call retried once (${mode} replies)`, { timeout: ms(60000) }, async () => {
      const up = await startFixture(mode === 'json' ? ['--json'] : []);
      const dir = tempDir();
      const config = writeConfig(dir, { fx: remote(up.port) });
      const h = await connect(config);
      ok(await run(h, 'fx_add(a=1, b=1)'), h);
      const expired = await (await fetch(`http://127.0.0.1:${up.port}/admin/expire`, { method: 'POST' })).json();
      assert.equal(expired.expired, 1);
      // Five calls at once: those sent before the re-initialize meet the 404 and are resent
      // once, those sent during it wait for the new session; one re-initialize in all.
      const env = ok(await run(h, 'result = [r["value"] for r in gather(*[fx_add(a=40, b=i) for i in range(5)])]'), h);
      assert.deepEqual(env.result, [40, 41, 42, 43, 44]);
      const st = await fixtureStats(up.port);
      assert.equal(st.sessions, 2, 'exactly one new session');
      const calls = st.requests.filter((q) => q.rpc === 'tools/call');
      const oldSid = calls[0].session;
      const refused = calls.slice(1).filter((q) => q.session === oldSid);
      const resent = calls.slice(1).filter((q) => q.session && q.session !== oldSid);
      assert.ok(refused.length >= 1, JSON.stringify(calls));
      assert.equal(resent.length, 5, JSON.stringify(calls));
      assert.equal(calls.length, 1 + refused.length + 5);
      await h.close();
      await stopProc(up);
    });
  }

  test('a response stream cut before the response is resumed with Last-Event-ID after `retry`', { timeout: ms(60000) }, async () => {
    const up = await startFixture(['--retry', '1500']);
    const dir = tempDir();
    const config = writeConfig(dir, { fx: remote(up.port) });
    const h = await connect(config);
    const env = ok(await run(h, 'fx_cut_stream(ms=100)'), h);
    assert.match(JSON.stringify(env.result), /answered after the cut/);
    const st = await fixtureStats(up.port);
    const resumes = st.requests.filter((q) => q.method === 'GET' && q.lastEventId);
    assert.equal(resumes.length, 1, JSON.stringify(st.requests));
    // The server's retry (1500 ms, above codemcp's 1000 ms default) is honoured.
    const waited = resumes[0].t - st.cutAt[0];
    assert.ok(waited >= 1450, `resumed after ${waited} ms, before the server's retry of 1500 ms`);
    await h.close();
    await stopProc(up);
  });

  test('tools/list_changed on the GET stream re-lists: a tool added at run time becomes callable', { timeout: ms(60000) }, async () => {
    const up = await startFixture();
    const dir = tempDir();
    const config = writeConfig(dir, { fx: remote(up.port) });
    const h = await connect(config);
    const before = (await h.client.listTools()).tools[0].description;
    assert.doesNotMatch(before, /fx_late_tool/);
    ok(await run(h, 'fx_add_tool(name="late_tool")'), h);
    const seen = await waitFor(async () => {
      const d = (await h.client.listTools()).tools[0].description;
      return /def fx_late_tool\(/.test(d);
    }, ms(10000), 100);
    assert.ok(seen, 'the new tool never appeared in the description');
    const env = ok(await run(h, 'fx_late_tool(text="hi")'), h);
    assert.equal(env.result, 'hi');
    await h.close();
    await stopProc(up);
  });

  test('a remote server that is down at start is picked up once it comes up', { timeout: ms(90000) }, async () => {
    const port = await freePort();
    const dir = tempDir();
    const config = writeConfig(dir, { fx: remote(port), everything: servers.everything() });
    const h = await connect(config, { CODEMCP_LOG: 'info' });
    const first = (await h.client.listTools()).tools[0].description;
    assert.match(first, /def everything_get_sum\(/, 'the stdio server is not held up');
    assert.doesNotMatch(first, /def fx_add\(/);
    const up = await startFixture(['--port', String(port)]);
    const seen = await waitFor(async () => {
      const d = (await h.client.listTools()).tools[0].description;
      return /def fx_add\(/.test(d);
    }, ms(45000), 250);
    assert.ok(seen, `fx never became available:\n${h.stderr().slice(-3000)}`);
    const env = ok(await run(h, 'fx_add(a=20, b=22)'), h);
    assert.equal(env.result, 42);
    await h.close();
    await stopProc(up);
  });

  test('calls to one remote server overlap', { timeout: ms(60000) }, async () => {
    const up = await startFixture();
    const dir = tempDir();
    const config = writeConfig(dir, { fx: remote(up.port) });
    const h = await connect(config);
    ok(await run(h, 'result = [str(r) for r in gather(*[fx_slow(ms=500) for _ in range(4)])]'), h);
    const st = await fixtureStats(up.port);
    assert.equal(st.maxInflight, 4, 'the four calls should have been in flight together');
    await h.close();
    await stopProc(up);
  });

  test('a server answering 401 is marked needs_auth without blocking a stdio upstream', { timeout: ms(60000) }, async () => {
    const up = await startFixture(['--auth-required']);
    const dir = tempDir();
    const config = writeConfig(dir, {
      locked: remote(up.port, { timeout: 20000 }),
      everything: servers.everything(),
    });
    const h = await connectClient({ config, env: { CODEMCP_LOG: 'info' } });
    const desc = (await h.client.listTools()).tools[0].description;
    assert.match(desc, /def everything_get_sum\(/);
    assert.doesNotMatch(desc, /def locked_/);
    const env = ok(await run(h, 'everything_get_sum(a=1, b=2)'), h);
    assert.match(JSON.stringify(env.result), /3/);
    assert.match(h.stderr(), /locked: needs_auth \(Run: codemcp auth locked\): the server answered 401/);
    // Not retried: auth does not fix itself.
    const n = (await fixtureStats(up.port)).requests.length;
    await sleep(ms(1500));
    assert.equal((await fixtureStats(up.port)).requests.length, n);
    await h.close();
    await stopProc(up);
  });

  test('with the right bearer header the same server works', { timeout: ms(60000) }, async () => {
    const up = await startFixture(['--auth-required']);
    const dir = tempDir();
    const config = writeConfig(dir, { locked: remote(up.port, { headers: { Authorization: 'Bearer let-me-in' } }) });
    const r = await runCodemcp({ config, env: { CODEMCP_SMOKE: 'print(locked_add(a=2, b=3))' } });
    assert.equal(r.code, 0, r.stderr);
    assert.match(JSON.parse(r.stdout).stdout, /^5\n/);
    await stopProc(up);
  });
});
