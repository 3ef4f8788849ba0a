// The 2024-11-05 HTTP+SSE transport on `codemcp start`: GET /sse opens a
// session whose stream starts with an `endpoint` event, POST /messages?sessionId=… takes one
// message (202) and the reply goes out on the stream. Real clients: SDK 1.32.2's
// SSEClientTransport, mcp-remote 0.15.1 `--transport sse-only` through stdio, Claude Code's
// `sse` entries (`claude mcp list`). The door is the Streamable front's: token, principals
// (another principal's sessionId is 404), quotas shared with Streamable sessions; a session
// ends, and its runs are cancelled, when its stream closes.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';

import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { Client, NODE, Proc, StdioClientTransport, TESTS, ms, runClient, servers, sleep, tempDir, waitFor, writeConfig } from './lib.mjs';

const TA = 'alice-token-0123456789abcdef0123', TB = 'bob-token-0123456789abcdef01234';

/** `codemcp start` with two principals (alice, bob) from a tokens file. */
async function start({ env = {}, mcp = { fake: servers.fake() } } = {}) {
  const home = tempDir('codemcp-sse-');
  const tokens = path.join(home, 'tokens');
  fs.writeFileSync(tokens, `alice ${TA}\nbob ${TB}\n`, { mode: 0o600 });
  const config = writeConfig(home, mcp);
  const proc = new Proc({
    args: ['start', '-p', '0'],
    config,
    home,
    env: { CODEMCP_HTTP_TOKENS_FILE: tokens, CODEMCP_ISOLATION: 'host', CODEMCP_LOG: 'info', ...env },
  });
  const m = await waitFor(() => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
  if (!m || !m[1]) throw new Error(`codemcp start did not come up (${JSON.stringify(proc.exit)}):\n${proc.stderrTail()}`);
  const base = new URL(m[1]).origin;
  return { proc, home, base, sse: `${base}/sse`, mcp: m[1] };
}

async function sseClient(url, token, name = 'sse-e2e') {
  const headers = { authorization: `Bearer ${token}` };
  // EventSource's fetch gets its headers from requestInit too (the SDK's _commonHeaders).
  const transport = new SSEClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name, version: '0' });
  await client.connect(transport, { timeout: ms(15000) });
  return { client, transport };
}

/** A raw GET /sse: resolves {status, res, events(), text()} once the headers arrive. */
function openStream(url, token) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { accept: 'text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('error', () => {});
      resolve({
        status: res.statusCode,
        res,
        req,
        text: () => text,
        endpoint: () => text.match(/event: endpoint\ndata: (\S+)\n\n/)?.[1],
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
  });
}

async function postMessage(base, endpoint, token, body) {
  const r = await fetch(new URL(endpoint, base), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  return { status: r.status, text: await r.text() };
}

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'raw-sse', version: '0' } },
};

test('SDK SSEClientTransport: list tools, run execute_python with progress, variables persist', async () => {
  const gw = await start();
  const { client, transport } = await sseClient(gw.sse, TA);
  assert.equal(client.getServerVersion().name, 'codemcp');
  const tools = await client.listTools(undefined, { timeout: ms(30000) });
  assert.deepEqual(tools.tools.map((t) => t.name), ['execute_python']);
  assert.match(tools.tools[0].description, /fake_add/);
  // The SDK runs notification handlers a microtask later but responses at once, and drops a
  // request's progress handler with its response: progress that arrives in the same chunk as
  // the response is lost whatever the server does. So the calls finish well before the end.
  const progress = [];
  const r = await client.callTool(
    { name: 'execute_python', arguments: { code: 'a = fake_add(a=1, b=2)\nb = fake_add(a=3, b=4)\nprint("sum", a + b)\nimport time\ntime.sleep(0.3)\nresult = [a, b]' } },
    undefined,
    { onprogress: (p) => progress.push(p), timeout: ms(60000) },
  );
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(JSON.stringify(r.structuredContent.result).replace(/\s/g, ''), '[3,7]');
  assert.equal(r.structuredContent.stdout, 'sum 10\n');
  assert.ok(progress.length >= 1, 'progress notifications must reach the client on the SSE stream');
  const again = await client.callTool({ name: 'execute_python', arguments: { code: 'result = a + 1' } }, undefined, { timeout: ms(60000) });
  assert.equal(again.structuredContent.result, 4, 'the session keeps its variables between calls');
  await transport.close();
  await gw.proc.kill();
});

test('the door: wrong token 401 and foreign Origin 403 on GET /sse; unknown, malformed and foreign sessionId 404; missing one 400', async () => {
  const gw = await start();
  const bad = await openStream(gw.sse, 'not-a-token');
  assert.equal(bad.status, 401);
  assert.match(bad.res.headers['www-authenticate'], /^Bearer realm="codemcp", error="invalid_token"/);
  bad.close();
  const none = await openStream(gw.sse, null);
  assert.equal(none.status, 401);
  none.close();
  // The Host and Origin allow-lists apply as on /mcp (DNS rebinding).
  const evil = await new Promise((resolve, reject) => {
    http.get(gw.sse, { headers: { accept: 'text/event-stream', authorization: `Bearer ${TA}`, origin: 'http://evil.example' } }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).on('error', reject);
  });
  assert.equal(evil, 403, 'a foreign Origin on GET /sse');

  const a = await openStream(gw.sse, TA);
  assert.equal(a.status, 200);
  assert.match(a.res.headers['content-type'], /^text\/event-stream/);
  const ep = await waitFor(() => a.endpoint(), ms(5000));
  assert.match(ep, /^\/messages\?sessionId=[0-9a-f]{64}$/);
  // Bob cannot use Alice's session, nor can anyone without a token.
  assert.equal((await postMessage(gw.base, ep, TB, INIT)).status, 404, "another principal's sessionId");
  assert.equal((await postMessage(gw.base, ep, 'nope', INIT)).status, 401);
  assert.equal((await postMessage(gw.base, `/messages?sessionId=${'0'.repeat(64)}`, TA, INIT)).status, 404, 'unknown sessionId');
  assert.equal((await postMessage(gw.base, '/messages?sessionId=abc', TA, INIT)).status, 404, 'malformed sessionId');
  assert.equal((await postMessage(gw.base, '/messages', TA, INIT)).status, 400, 'no sessionId');
  // Alice's own POST is accepted and answered on her stream, not in the POST's body.
  const ok = await postMessage(gw.base, ep, TA, INIT);
  assert.equal(ok.status, 202);
  await waitFor(() => a.text().includes('"id":1,"result"'), ms(5000));
  assert.match(a.text(), /event: message\ndata: \{"jsonrpc":"2.0","id":1,"result":\{"protocolVersion":"2024-11-05"/);
  assert.doesNotMatch(a.text(), /Session not found/, 'nothing of the refused POSTs reached the stream');
  a.close();
  await gw.proc.kill();
});

/** A raw POST (node:http): headers as given, body written as is; resolves {status, text}. */
function rawPost(url, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('POST /messages: the body rules of /mcp (415, 400 empty or not a length, 411 chunked, 413 over CODEMCP_HTTP_MAX_BODY)', async () => {
  const gw = await start({ env: { CODEMCP_HTTP_MAX_BODY: '2048' } });
  const a = await openStream(gw.sse, TA);
  const ep = new URL(await waitFor(() => a.endpoint(), ms(5000)), gw.base);
  const auth = { authorization: `Bearer ${TA}` };
  const json = { ...auth, 'content-type': 'application/json' };
  const body = JSON.stringify(INIT);
  const cases = [
    ['text/plain', { ...auth, 'content-type': 'text/plain', 'content-length': body.length }, body, 415, /Content-Type must be application\/json/],
    ['empty', { ...json, 'content-length': 0 }, '', 400, /the body is empty/],
    ['chunked', { ...json, 'transfer-encoding': 'chunked' }, body, 411, /chunked request bodies are not accepted/],
    ['over the cap', { ...json, 'content-length': 3000 }, 'x'.repeat(3000), 413, /the body limit is 2048 bytes \(CODEMCP_HTTP_MAX_BODY\)/],
  ];
  for (const [what, headers, b, status, text] of cases) {
    const r = await rawPost(ep, headers, b);
    assert.equal(r.status, status, `${what}: ${r.text}`);
    assert.match(r.text, text, what);
  }
  const ok = await rawPost(ep, { ...json, 'content-length': Buffer.byteLength(body) }, body);
  assert.equal(ok.status, 202, ok.text);
  a.close();
  await gw.proc.kill();
});

test('keep-alive comments; closing the stream ends the session and cancels its run', async () => {
  const gw = await start({ env: { CODEMCP_HTTP_SSE_KEEPALIVE_MS: '300', CODEMCP_LOG: 'debug' } });
  const s = await openStream(gw.sse, TA);
  const ep = await waitFor(() => s.endpoint(), ms(5000));
  await waitFor(() => s.text().includes(': keepalive'), ms(5000));
  assert.match(s.text(), /\n: keepalive\n\n/, 'an SSE comment keeps the idle stream alive');
  assert.equal((await postMessage(gw.base, ep, TA, INIT)).status, 202);
  await postMessage(gw.base, ep, TA, { jsonrpc: '2.0', method: 'notifications/initialized' });
  // A run that keeps appending to a file: it must stop once the stream is gone.
  const beat = path.join(gw.home, 'beat');
  const code = `import time\nwhile True:\n    open(${JSON.stringify(beat)}, 'a').write('x')\n    time.sleep(0.05)`;
  const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'execute_python', arguments: { code, timeout_ms: 300000 } } };
  assert.equal((await postMessage(gw.base, ep, TA, call)).status, 202);
  assert.ok(await waitFor(() => fs.existsSync(beat) && fs.statSync(beat).size > 5, ms(30000)), 'the run started');
  s.close();
  await waitFor(() => /legacy SSE session \S+ ended \(its stream closed\)/.test(gw.proc.stderr), ms(5000));
  assert.match(gw.proc.stderr, /legacy SSE session \S+ ended \(its stream closed\)/);
  await sleep(ms(1500)); // the cancel reaches the worker
  const size = fs.statSync(beat).size;
  await sleep(ms(1000));
  assert.equal(fs.statSync(beat).size, size, 'the run of a closed session goes on');
  assert.equal((await postMessage(gw.base, ep, TA, { jsonrpc: '2.0', id: 3, method: 'ping' })).status, 404, 'the session is gone');
  await gw.proc.kill();
});

test('quotas: legacy and Streamable sessions count together per principal (429), others unaffected', async () => {
  const gw = await start({ env: { CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: '2' } });
  const a1 = await openStream(gw.sse, TA);
  const a2 = await openStream(gw.sse, TA);
  assert.deepEqual([a1.status, a2.status], [200, 200]);
  const a3 = await openStream(gw.sse, TA);
  assert.equal(a3.status, 429);
  assert.ok(Number(a3.res.headers['retry-after']) >= 1, 'Retry-After');
  a3.close();
  const r = await fetch(gw.mcp, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TA}` },
    body: JSON.stringify({ ...INIT, params: { ...INIT.params, protocolVersion: '2025-11-25' } }),
  });
  assert.equal(r.status, 429, 'a Streamable initialize counts the legacy sessions too');
  const b = await openStream(gw.sse, TB);
  assert.equal(b.status, 200, 'another principal is unaffected');
  // A closed stream gives its slot back.
  a1.close();
  const again = await waitFor(async () => {
    const x = await openStream(gw.sse, TA);
    if (x.status === 200) return x;
    x.close();
    return null;
  }, ms(5000), 200);
  assert.ok(again, 'a closed stream frees its session slot');
  for (const x of [a2, b, again]) x.close();
  await gw.proc.kill();
});

// Real clients from tests/clients (pinned, offline).
const CLIENTS = path.join(TESTS, 'clients', 'node_modules');
const PROXY = path.join(CLIENTS, 'mcp-remote', 'dist', 'proxy.js');
const CLAUDE = path.join(CLIENTS, '.bin', 'claude');
const offlineEnv = (home) => ({
  ...process.env,
  HOME: home,
  XDG_CONFIG_HOME: path.join(home, '.config'),
  DISABLE_AUTOUPDATER: '1',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_TELEMETRY: '1',
  NO_PROXY: '127.0.0.1,localhost',
});

test('mcp-remote --transport sse-only: lists and executes through stdio', { skip: !fs.existsSync(PROXY) && 'tests/clients/node_modules is missing (tests/run.sh runs npm ci there)' }, async () => {
  const gw = await start();
  const home = tempDir('codemcp-remote-home-');
  const transport = new StdioClientTransport({
    command: NODE,
    args: [PROXY, gw.sse, '--transport', 'sse-only', '--header', `Authorization:Bearer ${TA}`],
    env: offlineEnv(home),
    stderr: 'pipe',
  });
  let log = '';
  transport.stderr?.on('data', (d) => (log += d));
  const client = new Client({ name: 'via-mcp-remote', version: '0' });
  try {
    await client.connect(transport, { timeout: ms(30000) });
    const tools = await client.listTools(undefined, { timeout: ms(30000) });
    assert.deepEqual(tools.tools.map((t) => t.name), ['execute_python']);
    const r = await client.callTool({ name: 'execute_python', arguments: { code: 'result = fake_add(a=20, b=22)' } }, undefined, { timeout: ms(60000) });
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.equal(r.structuredContent.result, 42);
  } catch (e) {
    throw new Error(`${e.message}\nmcp-remote said:\n${log}`);
  } finally {
    await client.close();
  }
  assert.match(log, /SSE/i, `mcp-remote did not use the SSE transport:\n${log}`);
  assert.match(gw.proc.stderr, /legacy SSE session \S+ opened for alice/);
  await gw.proc.kill();
});


test('Claude Code: an `sse` entry connects (claude mcp list)', { skip: !fs.existsSync(CLAUDE) && 'tests/clients/node_modules is missing (tests/run.sh runs npm ci there)' }, async () => {
  const gw = await start();
  const home = tempDir('codemcp-claude-home-');
  const env = offlineEnv(home);
  const add = await runClient(CLAUDE, ['mcp', 'add', '--transport', 'sse', 'codemcp', gw.sse, '--header', `Authorization: Bearer ${TA}`], env, ms(60000));
  assert.equal(add.code, 0, add.out);
  const list = await runClient(CLAUDE, ['mcp', 'list'], env, ms(60000));
  assert.match(list.out, /codemcp: .*\(SSE\).*Connected/, list.out);
  assert.match(gw.proc.stderr, /legacy SSE session \S+ opened for alice/);
  await gw.proc.kill();
});
