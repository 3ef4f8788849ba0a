// The Streamable HTTP front (`codemcp start`), as users meet it: the official SDK client
// (StreamableHTTPClientTransport) for sessions, progress, list_changed on the GET stream and
// session termination; raw HTTP (node:http) for every protocol edge: 406, 415, 411, 413, 400,
// 404, 403, 401, 405, 409, batches, Expect: 100-continue, refused upgrades, SSE resumption
// with Last-Event-ID, idle expiry, a stalled client, TLS, and a taken port. Every gateway is
// stopped with SIGTERM and must exit 0 (under CODEMCP_WRAPPER=valgrind that is the leak check).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { after, before, describe, test } from 'node:test';

import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { Client, PYTHON, Proc, ms, servers, sleep, tempDir, waitFor, writeConfig } from './lib.mjs';

const POST = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const LATEST = '2025-11-25';

// ---------------------------------------------------------------------------------------------
// Helpers.

/** Starts `codemcp start -p 0` (or `args`) and resolves {proc, url, stop()} once it prints
 *  its URL. stop() sends SIGTERM and asserts a clean exit. */
async function startGateway({ mcp = {}, env = {}, args = ['start', '-p', '0'], shared = false } = {}) {
  const home = tempDir('codemcp-http-', { shared });
  const config = writeConfig(home, mcp);
  // The front requires a bearer token by default: these tests use the generated one (read
  // from the 0600 file below) unless they bring their own.
  const proc = new Proc({ args, config, env, home, shared });
  const found = await waitFor(
    () => proc.exit || proc.stderr.match(/serving MCP over Streamable HTTP at (\S+)/),
    ms(20000),
  );
  if (!found || !found[1]) {
    throw new Error(`codemcp start did not come up (exit ${JSON.stringify(proc.exit)}):\n${proc.stderrTail()}`);
  }
  const tokenFile = path.join(home, 'codemcp', 'http-token');
  const token = env.CODEMCP_HTTP_TOKEN || (fs.existsSync(tokenFile) ? fs.readFileSync(tokenFile, 'utf8').trim() : null);
  if (token) tokens.set(new URL(found[1]).host, token);
  return {
    token,
    proc,
    url: found[1],
    async stop() {
      proc.child.kill('SIGTERM');
      const ex = await proc.waitExit(ms(15000));
      assert.equal(ex.code, 0, `codemcp start must exit 0 on SIGTERM (${JSON.stringify(ex)}):\n${proc.stderrTail()}`);
    },
  };
}

// host:port -> the bearer token of the gateway listening there (added by request() and
// sdkClient() unless a test sets its own Authorization header, or null for none).
const tokens = new Map();
function authHeader(url) {
  const t = tokens.get(new URL(url).host);
  return t ? { authorization: `Bearer ${t}` } : {};
}

/** One HTTP request; resolves {status, headers, text, json()}. `body`: object (JSON, with
 *  Content-Length), string, or Buffer; opts.chunked sends it without Content-Length. */
function request(url, { method = 'POST', headers = {}, body, chunked = false, ca } = {}) {
  if (!('authorization' in headers)) headers = { ...authHeader(url), ...headers };
  else if (headers.authorization === null) {
    headers = { ...headers };
    delete headers.authorization;
  }
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const mod = u.protocol === 'https:' ? https : http;
    const req = mod.request(
      { hostname: u.hostname, port: u.port, path: u.pathname, method, headers, agent: false, ca },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () =>
          resolve({ status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    const data = body === undefined || typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
    if (data !== undefined && chunked) {
      req.write(data);
      req.end();
    } else {
      req.end(data);
    }
  });
}

/** Asserts an HTTP error with a JSON-RPC error body (as the SDK server sends them). */
function assertHttpError(r, status, what) {
  assert.equal(r.status, status, `${what}: expected ${status}, got ${r.status} ${r.text}`);
  const body = r.json();
  assert.equal(body.jsonrpc, '2.0', `${what}: ${r.text}`);
  assert.equal(typeof body.error?.message, 'string', `${what}: ${r.text}`);
  return body;
}

const initParams = (name = 'http-e2e', protocolVersion = LATEST) => ({
  protocolVersion,
  capabilities: {},
  clientInfo: { name, version: '0' },
});

/** initialize + notifications/initialized over raw HTTP; resolves the session id. */
async function rawSession(url, protocolVersion = LATEST) {
  const r = await request(url, {
    headers: POST,
    body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: initParams('raw', protocolVersion) },
  });
  assert.equal(r.status, 200, r.text);
  assert.match(r.headers['content-type'], /^application\/json/);
  const sid = r.headers['mcp-session-id'];
  assert.match(sid, /^[0-9a-f]{64}$/, 'Mcp-Session-Id must be 256 random bits in hex');
  assert.equal(r.json().result.protocolVersion, protocolVersion);
  const n = await request(url, {
    headers: { ...POST, 'mcp-session-id': sid, 'mcp-protocol-version': protocolVersion },
    body: { jsonrpc: '2.0', method: 'notifications/initialized' },
  });
  assert.equal(n.status, 202, n.text);
  assert.equal(n.text, '');
  return sid;
}

function sessionHeaders(sid, extra = {}) {
  return { ...POST, 'mcp-session-id': sid, 'mcp-protocol-version': LATEST, ...extra };
}

/** An SSE response read event by event. open() resolves once the status line is in. */
class SseReader {
  constructor(url, { method = 'GET', headers = {}, body } = {}) {
    this.events = [];
    this.waiters = [];
    this.ended = false;
    this.buf = '';
    const u = new URL(url);
    headers = { ...authHeader(url), ...headers };
    this.req = http.request({ hostname: u.hostname, port: u.port, path: u.pathname, method, headers, agent: false });
    this.opened = new Promise((resolve, reject) => {
      this.req.on('response', (res) => {
        this.res = res;
        res.setEncoding('utf8');
        res.on('data', (d) => this.feed(d));
        res.on('end', () => this.finish());
        res.on('error', () => this.finish());
        resolve(res);
      });
      this.req.on('error', (e) => {
        this.finish();
        reject(e);
      });
    });
    this.req.end(body === undefined ? undefined : JSON.stringify(body));
  }

  feed(d) {
    this.buf += d;
    let i;
    while ((i = this.buf.indexOf('\n\n')) >= 0) {
      const block = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 2);
      const ev = { data: [] };
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) ev.comment = line.slice(1).trim();
        const m = line.match(/^(id|event|data|retry): ?(.*)$/);
        if (m && m[1] === 'data') ev.data.push(m[2]);
        else if (m) ev[m[1]] = m[2];
      }
      ev.data = ev.data.join('\n');
      if (ev.comment !== undefined && ev.id === undefined && !ev.data) continue; // keepalive
      this.events.push(ev);
    }
    this.wake();
  }

  finish() {
    this.ended = true;
    this.wake();
  }

  wake() {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Next event, or null when the stream ended first; rejects after `limit` ms. */
  async next(limit = ms(10000)) {
    const end = Date.now() + limit;
    while (!this.events.length) {
      if (this.ended) return null;
      const left = end - Date.now();
      if (left <= 0) throw new Error(`no SSE event within ${limit} ms`);
      await new Promise((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return this.events.shift();
  }

  /** Every remaining event until the server ends the response. */
  async rest(limit = ms(10000)) {
    const out = [];
    for (;;) {
      const ev = await this.next(limit);
      if (!ev) return out;
      out.push(ev);
    }
  }

  close() {
    this.req.destroy();
  }
}

/** A tiny MCP stdio upstream whose tool `bump` adds a tool and announces it with
 *  notifications/tools/list_changed: the one way to make the gateway's catalog change on
 *  demand, so sessions get tools/list_changed on their GET streams. */
function bumperServer(dir) {
  const file = path.join(dir, 'bumper.py');
  fs.writeFileSync(
    file,
    `import json, sys
n = 1
def send(m):
    sys.stdout.write(json.dumps(m) + "\\n"); sys.stdout.flush()
def tools():
    t = [{"name": "bump", "description": "Add a tool and announce it.", "inputSchema": {"type": "object", "properties": {}}}]
    return t + [{"name": "extra%d" % i, "description": "Added by bump.", "inputSchema": {"type": "object", "properties": {}}} for i in range(1, n)]
for line in sys.stdin:
    m = json.loads(line)
    meth, mid = m.get("method"), m.get("id")
    if meth == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "bumper", "version": "0"}}})
    elif meth == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools()}})
    elif meth == "tools/call":
        n += 1
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": str(n)}]}})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    elif mid is not None and meth:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "not here"}})
`,
  );
  return { type: 'local', command: [PYTHON, file] };
}

/** An SDK client on a fresh HTTP session; records list_changed notifications. */
async function sdkClient(url, name = 'http-e2e-sdk') {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: authHeader(url) } });
  const client = new Client({ name, version: '0' });
  const listChanged = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => listChanged.push(n));
  await client.connect(transport, { timeout: ms(15000) });
  return { client, transport, listChanged };
}

function envelope(r) {
  assert.ok(r.structuredContent, `no structuredContent in ${JSON.stringify(r)}`);
  return r.structuredContent;
}

// ---------------------------------------------------------------------------------------------
// The SDK client against one gateway with real upstreams.

describe('SDK client over Streamable HTTP', () => {
  let gw;
  before(async () => {
    const dir = tempDir('codemcp-http-up-', { shared: true });
    gw = await startGateway({
      mcp: { fake: servers.fake(), bumper: bumperServer(dir) },
      env: { CODEMCP_WORKERS: '2' },
      shared: true,
    });
  });
  after(async () => gw && (await gw.stop()));

  test('initialize, tools/list, execute_python with progress, terminate the session', async () => {
    const { client, transport } = await sdkClient(gw.url);
    assert.match(transport.sessionId, /^[0-9a-f]{64}$/);
    assert.equal(client.getServerVersion().name, 'codemcp');
    const tools = await client.listTools(undefined, { timeout: ms(30000) });
    assert.deepEqual(tools.tools.map((t) => t.name), ['execute_python']);
    assert.match(tools.tools[0].description, /fake_add/);

    const progress = [];
    const r = await client.callTool(
      {
        name: 'execute_python',
        arguments: { code: 'a = fake_add(a=1, b=2)\nb = fake_add(a=3, b=4)\nprint("sum ready")\nresult = [a, b]' },
      },
      undefined,
      { onprogress: (p) => progress.push(p), timeout: ms(30000) },
    );
    const env = envelope(r);
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.equal(JSON.stringify(env.result).replace(/\s/g, ''), JSON.stringify([3, 7]).replace(/\s/g, ''));
    assert.equal(env.stdout, 'sum ready\n');
    assert.ok(progress.length >= 1, 'progress notifications must reach the client on the POST stream');
    assert.ok(progress.every((p) => typeof p.progress === 'number'), JSON.stringify(progress));

    const sid = transport.sessionId;
    await transport.terminateSession();
    assert.equal(transport.sessionId, undefined);
    const after = await request(gw.url, {
      headers: sessionHeaders(sid),
      body: { jsonrpc: '2.0', id: 9, method: 'ping' },
    });
    assertHttpError(after, 404, 'a request on a deleted session');
    await client.close();
  });

  test('two sessions at once: concurrent runs with their own namespace and output', async () => {
    const a = await sdkClient(gw.url, 'session-a');
    const b = await sdkClient(gw.url, 'session-b');
    assert.notEqual(a.transport.sessionId, b.transport.sessionId);
    const call = (c, code) =>
      c.client.callTool({ name: 'execute_python', arguments: { code } }, undefined, { timeout: ms(30000) });
    // Both runs are in flight at the same time.
    const [ra, rb] = await Promise.all([
      call(a, 'import time\nwho = "A"\ntime.sleep(0.3)\nprint("from A")\nresult = who'),
      call(b, 'import time\nwho = "B"\ntime.sleep(0.3)\nprint("from B")\nresult = who'),
    ]);
    assert.deepEqual([envelope(ra).result, envelope(ra).stdout], ['A', 'from A\n']);
    assert.deepEqual([envelope(rb).result, envelope(rb).stdout], ['B', 'from B\n']);
    // Variables persist per session, never across sessions.
    const [ra2, rb2] = await Promise.all([call(a, 'result = who'), call(b, 'result = who')]);
    assert.equal(envelope(ra2).result, 'A');
    assert.equal(envelope(rb2).result, 'B');
    await a.transport.terminateSession();
    await b.transport.terminateSession();
    await a.client.close();
    await b.client.close();
  });

  test('tools/list_changed reaches every listing session on its GET stream, and a dropped stream is resumed', async () => {
    const a = await sdkClient(gw.url, 'watch-a');
    const b = await sdkClient(gw.url, 'watch-b');
    await a.client.listTools(undefined, { timeout: ms(30000) });
    await b.client.listTools(undefined, { timeout: ms(30000) });
    // A raw session that listed, opened its GET stream, then lost it.
    const sid = await rawSession(gw.url);
    const list = await request(gw.url, { headers: sessionHeaders(sid), body: { jsonrpc: '2.0', id: 2, method: 'tools/list' } });
    assert.equal(list.status, 200, list.text);
    const get1 = new SseReader(gw.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': LATEST } });
    const res1 = await get1.opened;
    assert.equal(res1.statusCode, 200);
    assert.match(res1.headers['content-type'], /^text\/event-stream/);
    const priming = await get1.next();
    assert.match(priming.id, /^\d+-\d+$/, 'the GET stream starts with an id to resume from');
    assert.equal(priming.data, '');
    assert.equal(priming.retry, '1000');
    get1.close();
    await sleep(200);

    const r = await a.client.callTool(
      { name: 'execute_python', arguments: { code: 'result = bumper_bump()' } },
      undefined,
      { timeout: ms(30000) },
    );
    assert.equal(r.isError, false, JSON.stringify(r));
    const got = await waitFor(() => a.listChanged.length >= 1 && b.listChanged.length >= 1, ms(10000));
    assert.ok(got, `list_changed: A got ${a.listChanged.length}, B got ${b.listChanged.length}`);

    const get2 = new SseReader(gw.url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': LATEST, 'last-event-id': priming.id },
    });
    assert.equal((await get2.opened).statusCode, 200);
    const missed = await get2.next();
    assert.equal(JSON.parse(missed.data).method, 'notifications/tools/list_changed');
    assert.equal(missed.id.split('-')[0], priming.id.split('-')[0], 'resumed on the same stream');
    get2.close();

    // Once per change: the second list is not followed by another notification unless the
    // catalog changes again.
    assert.equal(a.listChanged.length, 1);
    for (const c of [a, b]) {
      await c.transport.terminateSession();
      await c.client.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Raw HTTP against one gateway (no upstreams; a small body cap for 413).

describe('Streamable HTTP protocol edges (raw HTTP)', () => {
  let gw;
  let url;
  before(async () => {
    gw = await startGateway({ env: { CODEMCP_HTTP_MAX_BODY: '65536' }, shared: true });
    url = gw.url;
  });
  after(async () => gw && (await gw.stop()));

  test('initialize answers JSON with a random session id; later requests need it', async () => {
    const s1 = await rawSession(url);
    const s2 = await rawSession(url);
    assert.notEqual(s1, s2);
    const ping = await request(url, { headers: sessionHeaders(s1), body: { jsonrpc: '2.0', id: 'p', method: 'ping' } });
    assert.equal(ping.status, 200);
    assert.equal(ping.headers['mcp-session-id'], s1);
    assert.deepEqual(ping.json(), { jsonrpc: '2.0', id: 'p', result: {} });

    const missing = await request(url, { headers: POST, body: { jsonrpc: '2.0', id: 2, method: 'tools/list' } });
    assertHttpError(missing, 400, 'no Mcp-Session-Id');
    const unknown = await request(url, {
      headers: sessionHeaders('0'.repeat(64)),
      body: { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    });
    assertHttpError(unknown, 404, 'unknown session');
    const reinit = await request(url, {
      headers: sessionHeaders(s1),
      body: { jsonrpc: '2.0', id: 3, method: 'initialize', params: initParams() },
    });
    assertHttpError(reinit, 400, 'initialize on an existing session');
  });

  test('negotiates down to 2025-03-26; MCP-Protocol-Version is checked, its absence allowed', async () => {
    const sid = await rawSession(url, '2025-03-26');
    const bad = await request(url, {
      headers: { ...POST, 'mcp-session-id': sid, 'mcp-protocol-version': '1999-01-01' },
      body: { jsonrpc: '2.0', id: 2, method: 'ping' },
    });
    assert.match(assertHttpError(bad, 400, 'unsupported protocol version').error.message, /1999-01-01/);
    const absent = await request(url, { headers: { ...POST, 'mcp-session-id': sid }, body: { jsonrpc: '2.0', id: 3, method: 'ping' } });
    assert.equal(absent.status, 200, absent.text);
  });

  test('a failed initialize creates no session', async () => {
    const r = await request(url, { headers: POST, body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} } });
    assert.equal(r.status, 200);
    assert.equal(r.json().error.code, -32602);
    assert.equal(r.headers['mcp-session-id'], undefined);
  });

  test('POST: 406 without both media types in Accept, 415 without JSON, 202 for notifications', async () => {
    const sid = await rawSession(url);
    const body = { jsonrpc: '2.0', id: 5, method: 'ping' };
    for (const accept of ['application/json', 'text/event-stream', '*/*']) {
      const r = await request(url, { headers: { ...sessionHeaders(sid), accept }, body });
      assertHttpError(r, 406, `Accept: ${accept}`);
    }
    const r415 = await request(url, { headers: { ...sessionHeaders(sid), 'content-type': 'text/plain' }, body });
    assertHttpError(r415, 415, 'Content-Type: text/plain');
    const charset = await request(url, {
      headers: { ...sessionHeaders(sid), 'content-type': 'application/json; charset=utf-8' },
      body,
    });
    assert.equal(charset.status, 200, 'application/json with parameters is JSON');
    const note = await request(url, {
      headers: sessionHeaders(sid),
      body: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 77 } },
    });
    assert.equal(note.status, 202);
    const resp = await request(url, { headers: sessionHeaders(sid), body: { jsonrpc: '2.0', id: 'x', result: {} } });
    assert.equal(resp.status, 202, 'a JSON-RPC response from the client is accepted with 202');
  });

  test('keep-alive: a request sent the moment a 202 arrives is answered (400 rounds on one connection)', async () => {
    // A 202 is complete with its headers, so the client's next request can arrive before the
    // gateway ends the old transaction; lws 4.1 then parked that request and spun forever
    // (about one gateway in twenty hung this way before the fix in http_stream.c).
    const sid = await rawSession(url);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const u = new URL(url);
    const send = (body) => new Promise((resolve, reject) => {
      const data = JSON.stringify(body);
      const req = http.request({ hostname: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent,
        headers: { ...authHeader(url), ...sessionHeaders(sid), 'content-length': Buffer.byteLength(data) } }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode, text }));
      });
      req.setTimeout(ms(10000), () => req.destroy(new Error(`no answer to ${body.method} in 10 s`)));
      req.on('error', reject);
      req.end(data);
    });
    try {
      for (let i = 0; i < 400; i++) {
        const n = await send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        assert.equal(n.status, 202);
        const p = await send({ jsonrpc: '2.0', id: i, method: 'tools/list' });
        assert.equal(p.status, 200, p.text);
      }
    } finally {
      agent.destroy();
    }
  });

  test('POST: 411 for a chunked body, 413 above CODEMCP_HTTP_MAX_BODY, Expect: 100-continue answered', async () => {
    const sid = await rawSession(url);
    const chunked = await request(url, {
      headers: sessionHeaders(sid),
      body: { jsonrpc: '2.0', id: 6, method: 'ping' },
      chunked: true,
    });
    assertHttpError(chunked, 411, 'chunked request body');
    // A POST with these extra header lines and body, over a raw socket: the reply's head and body.
    const u0 = new URL(url);
    const rawPost = (lines, body) => new Promise((resolve) => {
      const s = net.connect(Number(u0.port), u0.hostname, () =>
        s.write(
          `POST ${u0.pathname} HTTP/1.1\r\nHost: ${u0.host}\r\nContent-Type: application/json\r\n` +
            `Accept: application/json, text/event-stream\r\nMcp-Session-Id: ${sid}\r\n` +
            `Authorization: ${authHeader(url).authorization}\r\n${lines}\r\n${body}`,
        ),
      );
      let t = '';
      s.on('data', (d) => {
        t += d;
        if (t.includes('}')) s.destroy();
      });
      s.on('close', () => resolve(t));
      s.on('error', () => resolve(t));
      setTimeout(() => s.destroy(), ms(3000));
    });
    // A length that is there but not a number is a 400 that says so, not "Length Required".
    for (const bad of ['abc', '12abc', '-5']) {
      const head = await rawPost(`Content-Length: ${bad}\r\n`, '{}');
      assert.match(head.split('\r\n')[0], /^HTTP\/1\.1 400 /, `Content-Length: ${bad} -> ${head}`);
      assert.match(head, /Content-Length must be a decimal number/, head);
    }
    // A Transfer-Encoding too long to copy is still one: 411, whatever Content-Length says.
    const longTe = await rawPost(`Content-Length: 2\r\nTransfer-Encoding: ${'identity, '.repeat(10)}chunked\r\n`, '0\r\n\r\n');
    assert.match(longTe.split('\r\n')[0], /^HTTP\/1\.1 411 /, longTe);
    const big = { jsonrpc: '2.0', id: 7, method: 'ping', params: { pad: 'x'.repeat(70000) } };
    const r413 = await request(url, { headers: sessionHeaders(sid), body: big });
    assertHttpError(r413, 413, 'body over the cap');
    // The server still works, and a body just under the cap is fine.
    const ok = await request(url, {
      headers: sessionHeaders(sid),
      body: { jsonrpc: '2.0', id: 8, method: 'ping', params: { pad: 'x'.repeat(60000) } },
    });
    assert.equal(ok.status, 200, ok.text);

    // Expect: 100-continue — the client sends its body only after "100 Continue".
    const u = new URL(url);
    const pingBody = JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'ping' });
    const got = await new Promise((resolve, reject) => {
      const req = http.request({
        hostname: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        agent: false,
        headers: { ...sessionHeaders(sid), ...authHeader(url), expect: '100-continue', 'content-length': Buffer.byteLength(pingBody) },
      });
      let continued = false;
      req.on('continue', () => {
        continued = true;
        req.end(pingBody);
      });
      req.on('response', (res) => {
        let t = '';
        res.on('data', (d) => (t += d));
        res.on('end', () => resolve({ continued, status: res.statusCode, text: t }));
      });
      req.on('error', reject);
      setTimeout(() => reject(new Error('no answer to Expect: 100-continue')), ms(5000));
    });
    assert.equal(got.continued, true, 'the server must send 100 Continue');
    assert.equal(got.status, 200, got.text);
  });

  test('POST: 400 for a batch, unparsable JSON and invalid JSON-RPC', async () => {
    const sid = await rawSession(url);
    const batch = await request(url, {
      headers: sessionHeaders(sid),
      body: [{ jsonrpc: '2.0', id: 1, method: 'ping' }],
    });
    assert.equal(assertHttpError(batch, 400, 'batch').error.code, -32600);
    const junk = await request(url, { headers: sessionHeaders(sid), body: '{"jsonrpc": "2.0", "id": ' });
    assert.equal(assertHttpError(junk, 400, 'bad JSON').error.code, -32700);
    const invalid = await request(url, { headers: sessionHeaders(sid), body: { jsonrpc: '1.0', id: 1, method: 'ping' } });
    assert.equal(assertHttpError(invalid, 400, 'not JSON-RPC 2.0').error.code, -32600);
    const unknownMethod = await request(url, { headers: sessionHeaders(sid), body: { jsonrpc: '2.0', id: 4, method: 'nope/nope' } });
    assert.equal(unknownMethod.status, 200);
    assert.equal(unknownMethod.json().error.code, -32601);
  });

  test('GET: 405 without Accept: text/event-stream, one standalone stream per session (409)', async () => {
    const sid = await rawSession(url);
    const plain = await request(url, { method: 'GET', headers: { accept: 'application/json', 'mcp-session-id': sid } });
    assertHttpError(plain, 405, 'GET without text/event-stream');
    assert.match(plain.headers.allow, /POST/);
    const noSession = await request(url, { method: 'GET', headers: { accept: 'text/event-stream' } });
    assertHttpError(noSession, 400, 'GET without a session');
    const s1 = new SseReader(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid } });
    assert.equal((await s1.opened).statusCode, 200);
    const priming = await s1.next();
    const future = await request(url, {
      method: 'GET',
      headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'last-event-id': `${priming.id.split('-')[0]}-99` },
    });
    assertHttpError(future, 400, 'Last-Event-ID beyond the stream');
    const second = await request(url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid } });
    assertHttpError(second, 409, 'a second GET stream');
    const badId = await request(url, {
      method: 'GET',
      headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'last-event-id': '999999-1' },
    });
    assertHttpError(badId, 400, 'Last-Event-ID of no stream of this session');
    s1.close();
  });

  test('DELETE ends the session: its GET stream ends, later requests get 404', async () => {
    const sid = await rawSession(url);
    const get = new SseReader(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid } });
    await get.opened;
    const del = await request(url, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
    assert.equal(del.status, 200, del.text);
    await waitFor(() => get.ended, ms(5000));
    assert.equal(get.ended, true, 'the GET stream of a deleted session must end');
    for (const method of ['POST', 'GET', 'DELETE']) {
      const r = await request(url, {
        method,
        headers: method === 'GET' ? { accept: 'text/event-stream', 'mcp-session-id': sid } : sessionHeaders(sid),
        body: method === 'POST' ? { jsonrpc: '2.0', id: 1, method: 'ping' } : undefined,
      });
      assertHttpError(r, 404, `${method} after DELETE`);
    }
  });

  test('Host and Origin allow-lists (DNS rebinding): 403 for evil, loopback names with any port pass', async () => {
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: initParams() };
    const port = new URL(url).port;
    for (const host of ['evil.example.com', `evil.example.com:${port}`, '127.0.0.2']) {
      const r = await request(url, { headers: { ...POST, host }, body: init });
      assertHttpError(r, 403, `Host: ${host}`);
    }
    for (const origin of ['http://evil', 'https://evil.example.com:443', 'null']) {
      const r = await request(url, { headers: { ...POST, origin }, body: init });
      assertHttpError(r, 403, `Origin: ${origin}`);
    }
    for (const host of [`localhost:${port}`, '127.0.0.1', `[::1]:${port}`, 'LOCALHOST']) {
      const r = await request(url, { headers: { ...POST, host, origin: 'http://localhost:6274' }, body: init });
      assert.equal(r.status, 200, `Host: ${host} must pass: ${r.text}`);
    }
  });

  test('other methods 405, other paths 404, WebSocket upgrades refused', async () => {
    const sid = await rawSession(url);
    const put = await request(url, { method: 'PUT', headers: sessionHeaders(sid), body: {} });
    assertHttpError(put, 405, 'PUT');
    const other = await request(url.replace(/\/mcp$/, '/other'), { headers: POST, body: { jsonrpc: '2.0', id: 1, method: 'ping' } });
    assertHttpError(other, 404, 'another path');
    const u = new URL(url);
    const status = await new Promise((resolve) => {
      const s = net.connect(Number(u.port), u.hostname, () => {
        s.write(
          `GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
        );
      });
      let t = '';
      s.on('data', (d) => (t += d));
      s.on('close', () => resolve(t.split('\r\n')[0]));
      s.on('error', () => resolve(t.split('\r\n')[0]));
      setTimeout(() => s.destroy(), ms(3000));
    });
    assert.match(status, /^HTTP\/1\.[01] 400 /, `a WebSocket upgrade must be refused, got '${status}'`);
  });

  test('a POST stream survives a dropped connection: Last-Event-ID resumes only that stream', async () => {
    const sid = await rawSession(url);
    const call = (id, word) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'execute_python', arguments: { code: `import time\ntime.sleep(1.0)\nresult = "${word}"` } },
    });
    const a = new SseReader(url, { method: 'POST', headers: sessionHeaders(sid), body: call('a', 'alpha') });
    const b = new SseReader(url, { method: 'POST', headers: sessionHeaders(sid), body: call('b', 'beta') });
    for (const s of [a, b]) {
      const res = await s.opened;
      assert.equal(res.statusCode, 200);
      assert.match(res.headers['content-type'], /^text\/event-stream/, 'a run is answered on an SSE stream');
    }
    const pa = await a.next();
    const pb = await b.next();
    for (const p of [pa, pb]) {
      assert.match(p.id, /^\d+-0$/, 'POST streams start with a priming event');
      assert.equal(p.data, '');
      assert.equal(p.retry, '1000');
    }
    assert.notEqual(pa.id, pb.id, 'event ids are unique across streams');
    a.close();
    b.close();
    // While the runs go on without a reader, the session must not be confused by a resume of
    // the other stream: each resume gets its own response and nothing else.
    const ra = new SseReader(url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'last-event-id': pa.id },
    });
    assert.equal((await ra.opened).statusCode, 200);
    const eventsA = await ra.rest(ms(20000));
    assert.equal(eventsA.length, 1, JSON.stringify(eventsA));
    const msgA = JSON.parse(eventsA[0].data);
    assert.equal(msgA.id, 'a');
    assert.equal(msgA.result.structuredContent.result, 'alpha');
    assert.equal(eventsA[0].id.split('-')[0], pa.id.split('-')[0]);

    const rb = new SseReader(url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'last-event-id': pb.id },
    });
    const eventsB = await rb.rest(ms(20000));
    assert.equal(eventsB.length, 1, JSON.stringify(eventsB));
    assert.equal(JSON.parse(eventsB[0].data).result.structuredContent.result, 'beta');

    // A delivered stream is gone: resuming it again is an unknown id.
    const again = await request(url, {
      method: 'GET',
      headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'last-event-id': eventsA[0].id },
    });
    assertHttpError(again, 400, 'resuming a finished stream');
  });

  test('a stalled client (half a body, never finished) does not hold up anyone else', async () => {
    const sid = await rawSession(url);
    const u = new URL(url);
    const stalled = net.connect(Number(u.port), u.hostname);
    await new Promise((resolve) => stalled.on('connect', resolve));
    stalled.write(
      `POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\n` +
        `Accept: application/json, text/event-stream\r\nMcp-Session-Id: ${sid}\r\n` +
        `Authorization: ${authHeader(url).authorization}\r\nContent-Length: 500\r\n\r\n{"jsonrpc":`,
    );
    let closed = false;
    stalled.on('close', () => (closed = true));
    stalled.on('error', () => {});
    // Meanwhile the gateway answers others at once.
    for (let i = 0; i < 5; i++) {
      const r = await request(url, { headers: sessionHeaders(sid), body: { jsonrpc: '2.0', id: i, method: 'ping' } });
      assert.equal(r.status, 200);
    }
    // And the stalled connection is eventually dropped (lws body timeout, 5 s).
    assert.ok(await waitFor(() => closed, ms(15000)), 'a connection that never sends its body must be closed');
  });
});

// ---------------------------------------------------------------------------------------------
// Settings that need their own gateway.

test('CODEMCP_HTTP_TOKEN: 401 with WWW-Authenticate without the bearer token', async () => {
  const gw = await startGateway({ env: { CODEMCP_HTTP_TOKEN: 's3cret-token' } });
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: initParams() };
  for (const auth of [null, 'Bearer wrong', 'Basic czNjcmV0LXRva2Vu', 'Bearer s3cret-token-and-more', 'Bearer s3cret-toke', 'Bearers3cret-token']) {
    const r = await request(gw.url, { headers: { ...POST, authorization: auth }, body: init });
    assert.equal(r.status, 401, `Authorization: ${auth}: ${r.text}`);
    // RFC 6750: WWW-Authenticate with error and error_description, an OAuth-style body.
    assert.match(r.headers['www-authenticate'], /^Bearer realm="codemcp", error="invalid_token", error_description="[^"]+"$/);
    const body = r.json();
    assert.equal(body.error, 'invalid_token', r.text);
    assert.match(body.error_description, /Authorization: Bearer <token>.*--print-token/, r.text);
    assert.equal(r.headers.connection, 'close', 'an unauthenticated peer gets no keep-alive');
  }
  const ok = await request(gw.url, { headers: { ...POST, authorization: 'Bearer s3cret-token' }, body: init });
  assert.equal(ok.status, 200, ok.text);
  // The SDK client with the header works end to end.
  const transport = new StreamableHTTPClientTransport(new URL(gw.url), {
    requestInit: { headers: { authorization: 'bearer s3cret-token' } },
  });
  const client = new Client({ name: 'token-e2e', version: '0' });
  await client.connect(transport, { timeout: ms(15000) });
  await client.ping();
  await transport.terminateSession();
  await client.close();
  await gw.stop();
});

test('CODEMCP_HTTP_ALLOWED_HOSTS and CODEMCP_HTTP_ALLOWED_ORIGINS add to the loopback names', async () => {
  const gw = await startGateway({
    env: {
      CODEMCP_HTTP_ALLOWED_HOSTS: 'mcp.example.com, pinned.example.com:8443',
      CODEMCP_HTTP_ALLOWED_ORIGINS: 'https://app.example.com',
    },
  });
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: initParams() };
  const cases = [
    [{ host: 'mcp.example.com:9999' }, 200],
    [{ host: 'pinned.example.com:8443' }, 200],
    [{ host: 'pinned.example.com:8444' }, 403],
    [{ host: 'other.example.com' }, 403],
    [{ origin: 'https://app.example.com' }, 200],
    [{ origin: 'https://app.example.com.evil.io' }, 403],
    [{ origin: 'http://app.example.com' }, 403],
  ];
  for (const [h, status] of cases) {
    const r = await request(gw.url, { headers: { ...POST, ...h }, body: init });
    assert.equal(r.status, status, `${JSON.stringify(h)}: ${r.text}`);
  }
  await gw.stop();
});

test('CODEMCP_HTTP_MAX_SESSIONS: initialize beyond the cap gets 503 until a session ends', async () => {
  const gw = await startGateway({ env: { CODEMCP_HTTP_MAX_SESSIONS: '2' } });
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: initParams() };
  const first = await rawSession(gw.url);
  await rawSession(gw.url);
  const third = await request(gw.url, { headers: POST, body: init });
  assertHttpError(third, 503, 'a third session over the cap of 2');
  assert.equal(third.headers['mcp-session-id'], undefined);
  const del = await request(gw.url, { method: 'DELETE', headers: { 'mcp-session-id': first } });
  assert.equal(del.status, 200);
  const again = await request(gw.url, { headers: POST, body: init });
  assert.equal(again.status, 200, again.text);
  await gw.stop();
});

test('request headers: a 12 KB cookie and a 6 KB bearer token are served; over CODEMCP_HTTP_MAX_HEADERS the connection closes, says why, and the gateway goes on', async () => {
  // lws's default room for headers is 4 KiB: a long JWT or a proxy's cookies got an empty reply.
  const gw = await startGateway();
  const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
  const sid = await rawSession(gw.url);
  const cookie = await request(gw.url, { headers: sessionHeaders(sid, { cookie: `a=${'c'.repeat(12000)}` }), body: ping });
  assert.equal(cookie.status, 200, cookie.text);
  const bearer = await request(gw.url, {
    headers: sessionHeaders(sid, { authorization: `Bearer ${gw.token}${'t'.repeat(6000)}` }),
    body: ping,
  });
  // Read in full and refused with a reason, not dropped unanswered.
  assert.equal(bearer.status, 401, bearer.text);
  assert.match(bearer.text, /Authorization header is too long/, bearer.text);
  await gw.stop();

  const small = await startGateway({ env: { CODEMCP_HTTP_MAX_HEADERS: '8192' } });
  const sid2 = await rawSession(small.url);
  const over = await request(small.url, { headers: sessionHeaders(sid2, { cookie: `a=${'c'.repeat(9000)}` }), body: ping })
    .then((r) => `answered ${r.status}`, (e) => e.code);
  assert.equal(over, 'ECONNRESET', 'lws 4.1 closes the connection (it cannot answer 431)');
  await waitFor(() => /headers were over 8192 bytes \(CODEMCP_HTTP_MAX_HEADERS\)/.test(small.proc.stderr), ms(5000));
  const next = await request(small.url, { headers: sessionHeaders(sid2), body: ping });
  assert.equal(next.status, 200, next.text);
  await small.stop();
});

test('idle sessions expire (404); a session with a request in flight does not', async () => {
  const gw = await startGateway({ env: { CODEMCP_HTTP_SESSION_IDLE_MS: String(ms(700)) } });
  const idle = await rawSession(gw.url);
  const busy = await rawSession(gw.url);
  const run = new SseReader(gw.url, {
    method: 'POST',
    headers: sessionHeaders(busy),
    body: {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'execute_python', arguments: { code: `import time\ntime.sleep(${(ms(700) * 2.5) / 1000})\nresult = "done"` } },
    },
  });
  assert.equal((await run.opened).statusCode, 200);
  await sleep(ms(700) * 2);
  const gone = await request(gw.url, { headers: sessionHeaders(idle), body: { jsonrpc: '2.0', id: 2, method: 'ping' } });
  assertHttpError(gone, 404, 'an idle session after its expiry');
  const events = await run.rest(ms(20000));
  const last = JSON.parse(events[events.length - 1].data);
  assert.equal(last.result.structuredContent.result, 'done');
  const alive = await request(gw.url, { headers: sessionHeaders(busy), body: { jsonrpc: '2.0', id: 3, method: 'ping' } });
  assert.equal(alive.status, 200, 'the busy session must have survived its run');
  await gw.stop();
});

test('a taken port fails at once with a message naming it, exit 1, no fallback', async () => {
  const first = await startGateway();
  const port = new URL(first.url).port;
  const second = new Proc({ args: ['start', '-p', port], home: tempDir('codemcp-http-'), config: writeConfig(tempDir(), {}) });
  const ex = await second.waitExit(ms(10000));
  assert.equal(ex.code, 1, second.stderrTail());
  assert.match(second.stderr, new RegExp(`port ${port} is already in use \\(another codemcp\\? use -p PORT\\)`));
  assert.doesNotMatch(second.stderr, /serving MCP/);
  // The first one is unaffected.
  const r = await request(first.url, { headers: POST, body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: initParams() } });
  assert.equal(r.status, 200);
  await first.stop();
});

test('CODEMCP_TRANSPORT=http with CODEMCP_HTTP_BIND and CODEMCP_HTTP_PATH', async () => {
  const gw = await startGateway({
    args: [],
    env: { CODEMCP_TRANSPORT: 'http', CODEMCP_HTTP_BIND: '127.0.0.1:0', CODEMCP_HTTP_PATH: '/custom/mcp' },
  });
  assert.match(gw.url, /^http:\/\/127\.0\.0\.1:\d+\/custom\/mcp$/);
  const sid = await rawSession(gw.url);
  assert.match(sid, /^[0-9a-f]{64}$/);
  const wrong = await request(gw.url.replace('/custom/mcp', '/mcp'), { headers: POST, body: { jsonrpc: '2.0', id: 1, method: 'ping' } });
  assertHttpError(wrong, 404, 'the default path when another is configured');
  await gw.stop();
});

test('TLS with CODEMCP_TLS_CERT/KEY: https, ALPN pinned to http/1.1', async () => {
  const dir = tempDir('codemcp-tls-');
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', key, '-out', cert,
  ], { stdio: 'ignore' });
  const gw = await startGateway({ env: { CODEMCP_TLS_CERT: cert, CODEMCP_TLS_KEY: key } });
  assert.match(gw.url, /^https:\/\//);
  const ca = fs.readFileSync(cert);
  const r = await request(gw.url, {
    headers: POST,
    body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: initParams() },
    ca,
  });
  assert.equal(r.status, 200, r.text);
  assert.match(r.headers['mcp-session-id'], /^[0-9a-f]{64}$/);
  const u = new URL(gw.url);
  const alpn = await new Promise((resolve, reject) => {
    const s = tls.connect({ host: u.hostname, port: Number(u.port), ca, ALPNProtocols: ['h2', 'http/1.1'] }, () => {
      resolve(s.alpnProtocol);
      s.destroy();
    });
    s.on('error', reject);
  });
  assert.equal(alpn, 'http/1.1', 'HTTP/2 must not be negotiated (custom headers break on it in lws 4.1)');
  await gw.stop();
});
