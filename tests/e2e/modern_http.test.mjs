// codemcp serving the 2026-07-28 protocol era over Streamable HTTP (`codemcp start`): the official SDK v2 client (@modelcontextprotocol/client 2.4.0,
// tests/v2) in `legacy`, `auto` and pinned-2026 modes through its StreamableHTTPClientTransport
// — list, execute with progress, tools/list_changed via listen() — against a gateway that
// requires its bearer token; and raw HTTP for what a client library hides: no Mcp-Session-Id,
// the routing headers checked against the body (-32020), SEP-2575's HTTP statuses, request
// ids echoed on every error, two clients of one token sending id 1 at once, a listen stream
// acknowledged and then tagged, a closed stream cancelling its run, and the Host/Origin/token
// doors shut the same way for both eras. 2025 sessions on the same port are
// tests/e2e/http_front.test.mjs (SDK 1.32.2).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { NODE, Proc, TESTS, ms, tempDir, waitFor, writeConfig, sharedHttpGateway, meta2026 } from './lib.mjs';

const V2DIR = path.join(TESTS, 'v2', 'node_modules', '@modelcontextprotocol', 'client', 'dist');
const { Client, StreamableHTTPClientTransport } = await import(path.join(V2DIR, 'index.mjs'));
const V2SERVER = path.join(TESTS, 'v2', 'server.mjs');

const V = '2026-07-28';
const META = meta2026('raw-http-2026');

let gw; // {proc, url, token}

async function startGateway() {
  const home = tempDir('codemcp-http26-', { shared: true });
  const config = writeConfig(home, { v2: { type: 'local', command: [NODE, V2SERVER] } });
  const proc = new Proc({ args: ['start', '-p', '0'], config, home, env: { CODEMCP_WORKERS: '4', CODEMCP_LOG: 'info' }, shared: true });
  const m = await waitFor(() => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
  assert.ok(m && m[1], `codemcp start did not come up:\n${proc.stderrTail()}`);
  const token = fs.readFileSync(path.join(home, 'codemcp', 'http-token'), 'utf8').trim();
  return { proc, url: m[1], token };
}

/** Headers of a 2026 POST for method (and Mcp-Name), with the bearer token. */
function h26(method, name, extra = {}, token = gw.token) {
  const h = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${token}`,
    'mcp-protocol-version': V,
    'mcp-method': method,
  };
  if (name !== undefined) h['mcp-name'] = name;
  return { ...h, ...extra };
}

/** One POST; resolves {status, headers, text, messages} (SSE events parsed, or the JSON body). */
function post(body, headers, { onMessage, signal, url = gw.url } = {}) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const data = JSON.stringify(body);
    const req = http.request(
      { hostname: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(data) }, agent: false, signal },
      (res) => {
        const headersAt = Date.now();
        let text = '';
        const messages = [];
        let pending = '';
        res.setEncoding('utf8');
        res.on('data', (d) => {
          text += d;
          if (!/event-stream/.test(res.headers['content-type'] || '')) return;
          pending += d;
          let i;
          while ((i = pending.indexOf('\n\n')) >= 0) {
            const ev = pending.slice(0, i);
            pending = pending.slice(i + 2);
            const line = ev.split('\n').find((l) => l.startsWith('data: '));
            if (line && line.length > 6) {
              const m = JSON.parse(line.slice(6));
              messages.push(m);
              onMessage?.(m, res);
            }
          }
        });
        res.on('end', () => {
          if (!/event-stream/.test(res.headers['content-type'] || '') && text) messages.push(JSON.parse(text));
          resolve({ status: res.statusCode, headers: res.headers, text, messages, headersAt, endAt: Date.now() });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

const call = (id, code, meta = META, extra = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { _meta: meta, name: 'execute_python', arguments: { code, ...extra } },
});

async function v2client(mode) {
  const transport = new StreamableHTTPClientTransport(new URL(gw.url), {
    requestInit: { headers: { authorization: `Bearer ${gw.token}` } },
  });
  const client = new Client({ name: 'codemcp-e2e-v2-http', version: '0' }, { versionNegotiation: { mode } });
  await client.connect(transport, { timeout: ms(20000) });
  return { client, transport };
}

describe('the 2026-07-28 era over Streamable HTTP', () => {
  before(async () => {
    gw = await startGateway();
  });
  after(async () => {
    if (!gw || gw.proc.exit) return;
    gw.proc.child.kill('SIGTERM');
    const ex = await gw.proc.waitExit(ms(15000));
    assert.equal(ex.code, 0, `codemcp start must exit 0 on SIGTERM:\n${gw.proc.stderrTail()}`);
  });

  for (const [label, mode] of [['legacy', 'legacy'], ['auto', 'auto'], ['pinned 2026-07-28', { pin: V }]]) {
    test(`SDK v2 client, ${label} mode: list, execute with progress, list_changed`, async () => {
      const { client, transport } = await v2client(mode);
      try {
        const modern = mode !== 'legacy';
        assert.equal(client.getNegotiatedProtocolVersion(), modern ? V : '2025-11-25');
        if (modern) assert.equal(transport.sessionId, undefined, 'a 2026 client has no Mcp-Session-Id');
        else assert.match(transport.sessionId, /^[0-9a-f]{64}$/);
        const list = await client.listTools();
        assert.deepEqual(list.tools.map((t) => t.name), ['execute_python']);
        if (modern) {
          assert.ok(list.ttlMs > 0, 'a 2026 tools/list carries ttlMs');
          assert.equal(list.cacheScope, 'private');
        }
        const progress = [];
        const r = await client.callTool(
          { name: 'execute_python', arguments: { code: 'a = v2_add(a=20, b=22)\nb = v2_add(a=1, b=1)\nprint("ok")\nresult = [a, b]' } },
          { timeout: ms(60000), onprogress: (p) => progress.push(p) },
        );
        assert.equal(r.isError, false, JSON.stringify(r));
        assert.deepEqual(r.structuredContent.result, [42, 2]);
        assert.equal(r.structuredContent.stdout, 'ok\n');
        assert.ok(progress.length >= 1, `progress must reach the client on the POST stream (${label})`);

        await client.listTools(); // a 2025 session is told of changes after a listing
        let changed = 0;
        client.setNotificationHandler('notifications/tools/list_changed', () => {
          changed++;
        });
        const sub = modern ? await client.listen({ toolsListChanged: true }) : null;
        if (sub) assert.equal(sub.honoredFilter.toolsListChanged, true);
        const g = await client.callTool({ name: 'execute_python', arguments: { code: 'result = v2_grow()' } }, { timeout: ms(60000) });
        assert.match(String(g.structuredContent.result), /^extra_\d+$/, JSON.stringify(g));
        assert.ok(await waitFor(() => changed > 0, ms(15000), 50), `no tools/list_changed reached the ${label} client`);
        await sub?.close();
      } finally {
        await client.close();
      }
    });
  }

  test('raw: no session id, JSON answers with resultType, discover, ids echoed on every error', async () => {
    const d = await post({ jsonrpc: '2.0', id: 'd', method: 'server/discover', params: { _meta: META } }, h26('server/discover'));
    assert.equal(d.status, 200, d.text);
    assert.match(d.headers['content-type'], /^application\/json/);
    assert.equal(d.headers['mcp-session-id'], undefined);
    const disc = d.messages[0];
    assert.equal(disc.id, 'd');
    assert.ok(disc.result.supportedVersions.includes(V));
    assert.equal(disc.result.resultType, 'complete');

    const l = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: META } }, h26('tools/list'));
    assert.equal(l.status, 200, l.text);
    assert.equal(l.messages[0].result.resultType, 'complete');
    assert.ok(l.messages[0].result.ttlMs > 0);

    const cases = [
      // [what, body, headers, status, code]
      ['Mcp-Method differs', { jsonrpc: '2.0', id: 10, method: 'tools/list', params: { _meta: META } }, h26('tools/call'), 400, -32020],
      ['no MCP-Protocol-Version', { jsonrpc: '2.0', id: 11, method: 'tools/list', params: { _meta: META } }, h26('tools/list', undefined, { 'mcp-protocol-version': undefined }), 400, -32020],
      ['Mcp-Name differs', call(12, 'result = 1'), h26('tools/call', 'other_tool'), 400, -32020],
      ['no Mcp-Name on tools/call', call(13, 'result = 1'), h26('tools/call'), 400, -32020],
      ['unknown version', { jsonrpc: '2.0', id: 14, method: 'tools/list', params: { _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } },
        h26('tools/list', undefined, { 'mcp-protocol-version': '2099-01-01' }), 400, -32022],
      ['no envelope', { jsonrpc: '2.0', id: 15, method: 'tools/list', params: {} }, h26('tools/list'), 400, -32602],
      ['removed method', { jsonrpc: '2.0', id: 16, method: 'ping', params: { _meta: META } }, h26('ping'), 404, -32601],
      ['unknown method', { jsonrpc: '2.0', id: 17, method: 'nope/nothing', params: { _meta: META } }, h26('nope/nothing'), 404, -32601],
      ['unknown tool (a method error: HTTP 200)', { ...call(18, ''), params: { _meta: META, name: 'nope', arguments: {} } }, h26('tools/call', 'nope'), 200, -32602],
      // A sessionless request of the 2025 era is still refused, now with its id.
      ['2025 request without a session', { jsonrpc: '2.0', id: 19, method: 'tools/list' }, h26('tools/list', undefined, { 'mcp-protocol-version': '2025-11-25' }), 400, -32000],
    ];
    for (const [what, body, headers, status, code] of cases) {
      for (const k of Object.keys(headers)) if (headers[k] === undefined) delete headers[k];
      const r = await post(body, headers);
      assert.equal(r.status, status, `${what}: ${r.text}`);
      const m = r.messages[0];
      assert.equal(m.error?.code, code, `${what}: ${r.text}`);
      assert.equal(m.id, body.id, `${what}: the request id must be echoed: ${r.text}`);
    }
    // Notifications are accepted and never answered.
    const n = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99 } }, h26('notifications/cancelled'));
    assert.equal(n.status, 202, n.text);
    assert.equal(n.text, '');
    // Header values are trimmed; names are case-insensitive.
    const ws = await post(call(20, 'result = 5'), { ...h26('tools/call', '  execute_python\t') });
    assert.equal(ws.status, 200, ws.text);
    assert.equal(ws.messages.at(-1).result.structuredContent.result, 5);
  });

  test('raw: two clients of one token send id 1 at once; each gets its own answer', async () => {
    const slow = (n) => `import time\ntime.sleep(0.5)\nprint("run ${n}")\nresult = ${n}`;
    const runs = await Promise.all([1, 2, 3].map((n) => post(call(1, slow(n)), h26('tools/call', 'execute_python'))));
    runs.forEach((r, i) => {
      assert.equal(r.status, 200, r.text);
      const final = r.messages.filter((m) => m.id === 1 && !m.method);
      assert.equal(final.length, 1, r.text);
      assert.equal(final[0].result.structuredContent.result, i + 1, r.text);
      assert.equal(final[0].result.structuredContent.stdout, `run ${i + 1}\n`);
      assert.equal(final[0].result.resultType, 'complete');
    });
  });

  test('raw: subscriptions/listen is acknowledged, then tagged list changes arrive on the POST stream', async () => {
    const ac = new AbortController();
    let ack = null;
    let change = null;
    const listening = post(
      { jsonrpc: '2.0', id: 'sub-1', method: 'subscriptions/listen', params: { _meta: META, notifications: { toolsListChanged: true } } },
      h26('subscriptions/listen'),
      {
        signal: ac.signal,
        onMessage: (m) => {
          if (!ack) ack = m;
          else if (m.method === 'notifications/tools/list_changed') change = m;
        },
      },
    ).catch((e) => (e.name === 'AbortError' ? null : Promise.reject(e)));
    assert.ok(await waitFor(() => ack, ms(10000), 20), 'no acknowledgement on the listen stream');
    assert.equal(ack.method, 'notifications/subscriptions/acknowledged');
    assert.equal(ack.params._meta['io.modelcontextprotocol/subscriptionId'], 'sub-1');
    const g = await post(call(5, 'result = v2_grow()'), h26('tools/call', 'execute_python'));
    assert.equal(g.status, 200, g.text);
    assert.ok(await waitFor(() => change, ms(15000), 50), 'no tools/list_changed on the listen stream');
    assert.equal(change.params._meta['io.modelcontextprotocol/subscriptionId'], 'sub-1');
    ac.abort();
    await listening;
  });

  test('raw: a run answered alone is one JSON body; with progress, or outlasting 15 s, an SSE stream', async () => {
    const h = h26('tools/call', 'execute_python');
    const quick = await post(call(31, 'import time\ntime.sleep(0.3)\nresult = 7'), h);
    assert.equal(quick.status, 200, quick.text);
    assert.match(quick.headers['content-type'], /^application\/json/, quick.text);
    assert.equal(quick.messages.length, 1, quick.text);
    assert.equal(quick.messages[0].id, 31);
    assert.equal(quick.messages[0].result.structuredContent.result, 7, quick.text);
    assert.equal(quick.messages[0].result.resultType, 'complete');
    // A program that fails is still a result (isError), HTTP 200, as JSON.
    const bad = await post(call(32, 'raise ValueError("nope")'), h);
    assert.equal(bad.status, 200, bad.text);
    assert.match(bad.headers['content-type'], /^application\/json/);
    assert.equal(bad.messages[0].result.isError, true, bad.text);
    // With a progress token the run's progress comes first: SSE.
    const pc = call(33, 'result = v2_add(a=2, b=3)');
    pc.params._meta = { ...META, progressToken: 'p33' };
    const prog = await post(pc, h);
    assert.match(prog.headers['content-type'], /^text\/event-stream/, prog.text);
    assert.ok(prog.messages.some((m) => m.method === 'notifications/progress'), prog.text);
    assert.equal(prog.messages.at(-1).result.structuredContent.result, 5, prog.text);
    // A run still going after 15 s starts its stream then (keepalive comments can flow).
    // (Last: runs of one principal share its worker, so others would queue behind it.)
    const l = await post(call(30, 'import time\ntime.sleep(17)\nresult = "long"'), h);
    assert.match(l.headers['content-type'], /^text\/event-stream/, l.text);
    assert.equal(l.messages.at(-1).result.structuredContent.result, 'long', l.text);
    assert.ok(l.endAt - l.headersAt >= 1000, `the stream must start before the answer (headers ${l.endAt - l.headersAt} ms before the end)`);
  });

  test('raw: closing the stream of a running request cancels its run', async () => {
    // The program sleeps, then calls the upstream: a cancelled run never makes that call, which
    // the upstream would log as "recv tools/call" (its stderr is in the gateway's log).
    const calls = () => (gw.proc.stderr.match(/recv tools\/call/g) || []).length;
    const ac = new AbortController();
    const code = 'import time\ntime.sleep(2)\nresult = v2_add(a=1, b=1)';
    const p = post(call(7, code), h26('tools/call', 'execute_python'), { signal: ac.signal }).catch((e) => e);
    await new Promise((r) => setTimeout(r, 700));
    const before = calls();
    ac.abort();
    await p;
    await new Promise((r) => setTimeout(r, ms(4000))); // well past the program's sleep
    assert.equal(calls(), before, 'the run went on and called the upstream after its client closed the stream');
    // The gateway still answers, and the same program runs to the end when nobody hangs up.
    const done = await post(call(8, code), h26('tools/call', 'execute_python'));
    assert.equal(done.messages.at(-1).result.structuredContent.result, 2, done.text);
    assert.ok(await waitFor(() => calls() > before, ms(5000), 50), 'the upstream call of a run that completed is not in the log');
  });

  test('raw: the token, Host and Origin checks are the same for the 2026 era', async () => {
    const body = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } };
    const noTok = await post(body, h26('tools/list', undefined, { authorization: 'Bearer wrong' }));
    assert.equal(noTok.status, 401, noTok.text);
    assert.match(noTok.headers['www-authenticate'], /Bearer/);
    const host = await post(body, h26('tools/list', undefined, { host: 'evil.example:80' }));
    assert.equal(host.status, 403, host.text);
    const origin = await post(body, h26('tools/list', undefined, { origin: 'https://evil.example' }));
    assert.equal(origin.status, 403, origin.text);
  });

  test('raw: GET and DELETE from a 2026 client get 405 (no GET stream, no sessions); 2025 ones keep their answers', async () => {
    const req = (method, headers) => new Promise((resolve, reject) => {
      const u = new URL(gw.url);
      const r = http.request({ hostname: u.hostname, port: u.port, path: u.pathname, method, headers, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
      });
      r.on('error', reject);
      r.end();
    });
    const base = { accept: 'text/event-stream', authorization: `Bearer ${gw.token}` };
    for (const method of ['GET', 'DELETE']) {
      const r = await req(method, { ...base, 'mcp-protocol-version': V });
      assert.equal(r.status, 405, `${method}: ${r.text}`);
      assert.equal(r.headers.allow, 'POST', `${method}: ${JSON.stringify(r.headers)}`);
      assert.match(JSON.parse(r.text).error.message, /Method Not Allowed: protocol 2026-07-28/, r.text);
    }
    // The checks before it still come first: no token is 401, not 405.
    const anon = await req('GET', { accept: 'text/event-stream', 'mcp-protocol-version': V });
    assert.equal(anon.status, 401, anon.text);
    // A 2025 client (or one naming no version) without a session: 400 as before.
    for (const proto of ['2025-11-25', undefined]) {
      const h = { ...base, ...(proto ? { 'mcp-protocol-version': proto } : {}) };
      const r = await req('GET', h);
      assert.equal(r.status, 400, `${proto}: ${r.text}`);
      assert.match(r.text, /Mcp-Session-Id header is required/);
    }
  });
});

describe('2026 requests of two principals (tokens file): namespaces by handle', () => {
  const TA = 'alice-token-0123456789abcdef', TB = 'bob-token-0123456789abcdef';
  const g = sharedHttpGateway({ prefix: 'codemcp-http26-p-', tokens: { alice: TA, bob: TB }, exitZero: true,
    env: { CODEMCP_WORKERS: '4', CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL: '3' } });

  const run = async (token, id, code, extra = {}) => {
    const r = await post(call(id, code, META, extra), h26('tools/call', 'execute_python', {}, token), { url: g.url });
    assert.equal(r.status, 200, r.text);
    return r.messages.at(-1).result;
  };

  test('a handle continues across requests of one principal; none is a fresh namespace; another principal cannot use it', async () => {
    const first = await run(TA, 1, 'x = "alice"\nresult = x');
    const ha = first.structuredContent.namespace;
    assert.match(ha, /^ns_[A-Za-z0-9_-]{32}$/, JSON.stringify(first));
    const cont = await run(TA, 1, 'x += "!"\nresult = x', { namespace: ha });
    assert.equal(cont.structuredContent.result, 'alice!', JSON.stringify(cont));
    assert.equal(cont.structuredContent.namespace, ha);
    const fresh = await run(TA, 1, 'result = x');
    assert.match(fresh.structuredContent.error, /NameError/, 'a request without a handle starts afresh');
    assert.notEqual(fresh.structuredContent.namespace, ha);
    const foreign = await run(TB, 1, 'result = x', { namespace: ha });
    assert.equal(foreign.isError, true, JSON.stringify(foreign));
    assert.match(foreign.content[0].text, /^unknown namespace handle/);
    assert.ok(!JSON.stringify(foreign).includes('alice'));
  });

  test('per-principal bound: CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL open 2026 streams, then 429 for that principal only', async () => {
    // This gateway allows 3 per principal; bob holds 3 listen streams open.
    const acs = [];
    const acks = [];
    for (let i = 0; i < 3; i++) {
      const ac = new AbortController();
      acs.push(ac);
      let got = false;
      acks.push(() => got);
      post({ jsonrpc: '2.0', id: i, method: 'subscriptions/listen', params: { _meta: META, notifications: { toolsListChanged: true } } },
        h26('subscriptions/listen', undefined, {}, TB), { url: g.url, signal: ac.signal, onMessage: () => (got = true) }).catch(() => {});
    }
    try {
      assert.ok(await waitFor(() => acks.every((f) => f()), ms(15000), 50), 'not every listen stream was acknowledged');
      const over = await post({ jsonrpc: '2.0', id: 'x', method: 'tools/list', params: { _meta: META } }, h26('tools/list', undefined, {}, TB), { url: g.url });
      assert.equal(over.status, 429, over.text);
      assert.equal(over.messages[0].id, 'x');
      const alice = await post({ jsonrpc: '2.0', id: 'y', method: 'tools/list', params: { _meta: META } }, h26('tools/list', undefined, {}, TA), { url: g.url });
      assert.equal(alice.status, 200, 'another principal is not affected');
    } finally {
      for (const ac of acs) ac.abort();
    }
    // Closed streams free their places.
    assert.ok(await waitFor(async () => (await post({ jsonrpc: '2.0', id: 'z', method: 'tools/list', params: { _meta: META } },
      h26('tools/list', undefined, {}, TB), { url: g.url })).status === 200 || null, ms(10000), 200), 'closed listen streams were never released');
  });
});
