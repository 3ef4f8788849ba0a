// A fleet of `codemcp start` replicas behind a real load balancer: contrib/fleet/haproxy.cfg
// (Debian's haproxy), contrib/fleet/nginx.conf (Debian's nginx-light) and the router of
// contrib/fleet/kubernetes/codemcp-fleet.yaml (its HAProxy config; no cluster here), as
// shipped, with only their ports (and the pods' names) moved to local ones. Three replicas (CODEMCP_REPLICA_ID r1, r2, r3, one
// CODEMCP_FLEET_SECRET). What must hold:
//  - SDK v2 clients (2026-07-28: a namespace handle mirrored into Mcp-Param-Namespace), SDK
//    v1 clients (2025 sessions) and legacy HTTP+SSE clients keep their variables across calls
//    through the balancer: every id they are given names the replica holding their state;
//  - ids are sealed: a forged or altered id is refused, a real id of another replica is
//    answered with the documented "lost" error, never served with someone else's state;
//  - /healthz and /readyz answer without a token; SIGTERM drains (readyz fails at once, the
//    run in flight finishes, the process exits 0);
//  - a 2026 client's retry of a call answered input_required (it carries only the
//    requestState, in its body) reaches the replica whose run waits for it, and a replica that
//    gets another's requestState says whose it is;
//  - 50 clients under load while one replica is SIGKILLed and another restarted with
//    SIGTERM: no failure on the untouched replica's clients, the others get the documented
//    error and start over, no request hangs.
// The balancers' binaries come from install.sh; a test skips only when its binary is absent.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { redisAvailable, startRedis } from '../fixtures/redis_server.mjs';
import { Client as V1Client, NODE, Proc, REPO, TESTS, freePort, ms, onCleanup, sleep, tempDir, waitFor, withTimeout, writeConfig } from './lib.mjs';

const V2DIR = path.join(TESTS, 'v2', 'node_modules', '@modelcontextprotocol', 'client', 'dist');
const { Client: V2Client, StreamableHTTPClientTransport: V2Transport } = await import(path.join(V2DIR, 'index.mjs'));

// The SDK v2 server fixture as an upstream: its `confirm` tool answers input_required.
const V2_UPSTREAM = { v2: { type: 'local', command: [NODE, path.join(TESTS, 'v2', 'server.mjs')] } };
const TOKEN = 'fleet-token-0123456789abcdef0123';
const SECRET = 'fleet-secret-0123456789abcdef0123456789';
const IDS = ['r1', 'r2', 'r3'];
const HANDLE = /^ns_(r[123])\.[0-9a-f]{56}\.[0-9a-f]{32}$/;
const SID = /^(r[123])\.[0-9a-f]{56}\.[0-9a-f]{32}$/;
// The documented errors (README, "A fleet of gateways") for state on a replica that is gone.
const LOST = new RegExp([
  /replica (r[123])[^]*(gone|restarted|shutting down)/, // the replicas' own (http_fleet.c, namespaces.c)
  /replica serving this request went away before answering/, // haproxy.cfg's 502
  /no codemcp replica could serve this request/, // haproxy.cfg's 503
].map((r) => r.source).join('|'));
// A response cut off: the connection ended before (or, for a non-2xx status, while) it came.
// The SDKs say "Error POSTing to endpoint: null" when the status line came and the body did not.
const CUT = /fetch failed|other side closed|terminated|ECONNRESET|SocketError|Error POSTing to endpoint(?: \(HTTP \d+\))?: null$/;

function which(bin) {
  return spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0;
}

function get(port, p) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
  });
}

/** One raw POST: {status, headers, body (JSON or the SSE messages' last)}. */
function post(port, p, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = http.request({ host: '127.0.0.1', port, path: p, method: 'POST', agent: false, headers: {
      'content-type': 'application/json', accept: 'application/json, text/event-stream',
      authorization: `Bearer ${TOKEN}`, 'content-length': Buffer.byteLength(data), ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        let parsed = null;
        if (/event-stream/.test(res.headers['content-type'] || '')) {
          const lines = text.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6);
          parsed = lines.length ? JSON.parse(lines.at(-1).slice(6)) : null;
        } else if (text) {
          try { parsed = JSON.parse(text); } catch { parsed = null; }
        }
        resolve({ status: res.statusCode, headers: res.headers, text, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'fleet-raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** A raw 2026 execute_python (headers as a 2026 client sends them). */
function call2026(port, code, ns, extraHeaders = {}) {
  const args = ns === undefined ? { code } : { code, namespace: ns };
  const h = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'execute_python' };
  if (ns !== undefined) h['mcp-param-namespace'] = ns;
  return post(port, '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/call',
    params: { _meta: META, name: 'execute_python', arguments: args } }, { ...h, ...extraHeaders });
}

async function initialize2025(port) {
  const r = await post(port, '/mcp', { jsonrpc: '2.0', id: 1, method: 'initialize', params: {
    protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fleet-raw', version: '1' } } });
  assert.equal(r.status, 200, r.text);
  return r.headers['mcp-session-id'];
}

/** Three replicas and a balancer made from a shipped config (only ports replaced). */
class Fleet {
  /** opts.redis: the replicas share state through a private redis-server (CODEMCP_STATE). */
  constructor(prefix, opts = {}) {
    this.opts = opts;
    this.home = tempDir(prefix, { shared: true });
    this.config = writeConfig(this.home, opts.mcp ?? {});
    this.procs = {};
    this.ports = {};
  }

  async start(kind) {
    for (const id of IDS) this.ports[id] = await freePort();
    this.lb = await freePort();
    if (this.opts.redis) {
      this.store = await startRedis();
      onCleanup(() => this.store.stop(), true);
    }
    await Promise.all(IDS.map((id) => this.startReplica(id)));
    if (kind === 'haproxy') this.startHaproxy();
    else if (kind === 'k8s-router') {
      this.routerHealth = await freePort();
      this.startK8sRouter();
    } else this.startNginx();
    await waitFor(async () => (await get(this.lb, '/healthz').catch(() => null))?.status === 200, ms(10000));
    // Every replica ready (its upstreams connected), and seen so by the balancer's checks
    // (rise 2 x inter 1s): else the first requests find fewer replicas than the test means.
    for (const id of IDS)
      await waitFor(async () => (await get(this.ports[id], '/readyz').catch(() => null))?.status === 200, ms(20000));
    await sleep(2500);
    this.url = `http://127.0.0.1:${this.lb}/mcp`;
  }

  async startReplica(id) {
    const p = new Proc({ args: ['start', '-p', String(this.ports[id])], config: this.config, home: this.home, shared: true,
      env: { CODEMCP_REPLICA_ID: id, CODEMCP_FLEET_SECRET: SECRET, CODEMCP_HTTP_TOKEN: TOKEN, CODEMCP_WORKERS: '24',
        CODEMCP_DRAIN_MS: '20000', CODEMCP_LOG: 'info', ...(this.store ? { CODEMCP_STATE: this.store.url } : {}) } });
    const m = await waitFor(() => p.exit || p.stderr.match(/serving MCP over Streamable HTTP at (\S+)/), ms(20000));
    assert.ok(m && m[1], `replica ${id} did not come up:\n${p.stderrTail()}`);
    this.procs[id] = p;
    return p;
  }

  /** The shipped text with the local layout's ports (3400..3403) moved to free ones. */
  template(file) {
    let text = fs.readFileSync(path.join(REPO, 'contrib', 'fleet', file), 'utf8');
    assert.ok(text.includes('127.0.0.1:3400') && IDS.every((id, i) => text.includes(`127.0.0.1:340${i + 1}`)),
      `${file} must serve the documented layout (127.0.0.1:3400 over 3401..3403)`);
    text = text.replaceAll('127.0.0.1:3400', `127.0.0.1:${this.lb}`);
    IDS.forEach((id, i) => (text = text.replaceAll(`127.0.0.1:340${i + 1}`, `127.0.0.1:${this.ports[id]}`)));
    return text;
  }

  spawnBalancer(cmd, args) {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.lbLog = '';
    child.stdout.on('data', (d) => (this.lbLog += d));
    child.stderr.on('data', (d) => (this.lbLog += d));
    const exited = new Promise((r) => child.on('close', r));
    onCleanup(async () => {
      child.kill('SIGTERM'); // nginx's master stops its workers (SIGKILL would orphan them)
      await Promise.race([exited, sleep(3000)]);
      child.kill('SIGKILL');
    }, true);
    this.balancer = child;
  }

  startHaproxy() {
    const cfg = path.join(this.home, 'haproxy.cfg');
    fs.writeFileSync(cfg, this.template('haproxy.cfg'));
    this.spawnBalancer('haproxy', ['-db', '-f', cfg]);
  }

  /** The router of contrib/fleet/kubernetes/codemcp-fleet.yaml (its ConfigMap's haproxy.cfg)
   *  with the pods' DNS names and ports moved to the local replicas: pod codemcp-N is the
   *  replica whose CODEMCP_REPLICA_ID is r(N+1), as a pod's id is its name. */
  startK8sRouter() {
    const yaml = fs.readFileSync(path.join(REPO, 'contrib', 'fleet', 'kubernetes', 'codemcp-fleet.yaml'), 'utf8');
    const m = yaml.match(/^  haproxy\.cfg: \|\n((?: {4}.*\n|\n)+)/m);
    assert.ok(m, 'the router ConfigMap holds haproxy.cfg as a block');
    let text = m[1].split('\n').map((l) => l.slice(4)).join('\n');
    assert.ok(text.includes('bind :3400') && text.includes('bind :3401'), 'the router listens on 3400 (mcp) and 3401 (health)');
    text = text.replace('bind :3400', `bind 127.0.0.1:${this.lb}`).replace('bind :3401', `bind 127.0.0.1:${this.routerHealth}`);
    IDS.forEach((id, i) => {
      const pod = `codemcp-${i}`;
      assert.ok(text.includes(`${pod}.codemcp.codemcp.svc.cluster.local:3388`), `the router names pod ${pod}`);
      text = text.replaceAll(`${pod}.codemcp.codemcp.svc.cluster.local:3388`, `127.0.0.1:${this.ports[id]}`).replaceAll(pod, id);
    });
    const cfg = path.join(this.home, 'router.cfg');
    fs.writeFileSync(cfg, text);
    this.spawnBalancer('haproxy', ['-db', '-f', cfg]);
  }

  startNginx() {
    const dir = path.join(this.home, 'nginx');
    fs.mkdirSync(path.join(dir, 'logs'), { recursive: true });
    // nginx.conf is an http{} block's content for /etc/nginx/conf.d; the test wraps it in a
    // minimal main config of its own (no root, a private pid, logs and temp paths).
    const conf = path.join(dir, 'nginx.conf');
    fs.writeFileSync(conf, `daemon off;\nworker_processes 1;\npid ${dir}/nginx.pid;\nerror_log ${dir}/logs/error.log info;\n` +
      `events { worker_connections 1024; }\nhttp {\n  access_log off;\n  client_body_temp_path ${dir}/body;\n  proxy_temp_path ${dir}/proxy;\n` +
      `  fastcgi_temp_path ${dir}/fastcgi;\n  uwsgi_temp_path ${dir}/uwsgi;\n  scgi_temp_path ${dir}/scgi;\n${this.template('nginx.conf')}\n}\n`);
    this.spawnBalancer('nginx', ['-p', dir, '-c', conf, '-e', `${dir}/logs/error.log`]);
  }

  async stop() {
    for (const id of IDS) {
      const p = this.procs[id];
      if (p && !p.exit) {
        p.child.kill('SIGTERM');
        await p.waitExit(ms(30000)).catch(() => p.kill());
      }
    }
  }
}

async function v2(url) {
  const transport = new V2Transport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
  const client = new V2Client({ name: 'fleet-v2', version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(transport, { timeout: ms(20000) });
  return { client, transport };
}

async function v1(url) {
  const transport = new V1Transport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
  const client = new V1Client({ name: 'fleet-v1', version: '0' });
  await client.connect(transport, { timeout: ms(20000) });
  return { client, transport };
}

const exec = (client, args, limit = ms(60000)) =>
  withTimeout(client.callTool({ name: 'execute_python', arguments: args }, undefined, { timeout: limit }), limit + 5000, 'an execute_python call');

const text = (r) => r.content?.[0]?.text ?? '';

/** The state-keeping checks every balancer must pass (v2, v1 and legacy SSE clients). */
function stateTests(fleet) {
  test('SDK v2 (2026-07-28): the handle names its replica, is mirrored into Mcp-Param-Namespace, and keeps variables through the balancer', async () => {
    const sent = [];
    const transport = new V2Transport(new URL(fleet.url), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      fetch: (u, init) => {
        const h = new Headers(init?.headers);
        if (h.get('mcp-method') === 'tools/call') {
          const ns = JSON.parse(init.body).params.arguments.namespace;
          sent.push({ ns, header: h.get('mcp-param-namespace') });
        }
        return fetch(u, init);
      },
    });
    const client = new V2Client({ name: 'fleet-v2', version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(transport, { timeout: ms(20000) });
    try {
      const tools = await client.listTools();
      assert.equal(tools.tools[0].inputSchema.properties.namespace['x-mcp-header'], 'Namespace');
      const seen = new Set();
      for (let k = 0; k < 4; k++) { // several clients' first calls spread over the replicas
        const first = await exec(client, { code: `v = ${k}\nresult = v` });
        assert.equal(first.isError, false, text(first));
        const h = first.structuredContent.namespace;
        const m = h.match(HANDLE);
        assert.ok(m, `a fleet handle names its replica: ${h}`);
        seen.add(m[1]);
        for (let i = 1; i <= 4; i++) {
          const r = await exec(client, { code: `v += 10\nresult = v`, namespace: h });
          assert.equal(r.isError, false, text(r));
          assert.equal(r.structuredContent.result, k + 10 * i, 'the variables of that namespace, on its replica');
          assert.equal(r.structuredContent.namespace, h);
        }
      }
      const named = sent.filter((x) => x.ns);
      assert.ok(named.length === 16 && named.every((x) => x.header === x.ns),
        `the SDK mirrors namespace into Mcp-Param-Namespace (x-mcp-header): ${JSON.stringify(sent)}`);
      assert.ok(seen.size >= 2, `new namespaces are spread over the replicas: ${[...seen]}`);
    } finally {
      await client.close();
    }
  });

  test('SDK v1 (2025 sessions): the session id names its replica and the session keeps its variables', async () => {
    const clients = await Promise.all([0, 1, 2, 3, 4].map(() => v1(fleet.url)));
    try {
      const seen = new Set();
      for (const [k, { client, transport }] of clients.entries()) {
        const m = transport.sessionId.match(SID);
        assert.ok(m, `a fleet session id names its replica: ${transport.sessionId}`);
        seen.add(m[1]);
        assert.equal((await exec(client, { code: `s = ${k}\nresult = s` })).isError, false);
        for (let i = 1; i <= 3; i++) {
          const r = await exec(client, { code: 's += 100\nresult = s' });
          assert.equal(r.isError, false, text(r));
          assert.equal(r.structuredContent.result, k + 100 * i);
        }
      }
      assert.ok(seen.size >= 2, `sessions are spread over the replicas: ${[...seen]}`);
    } finally {
      for (const { client, transport } of clients) {
        await transport.terminateSession().catch(() => {});
        await client.close();
      }
    }
  });

  test('legacy HTTP+SSE: the sessionId of the endpoint event names its replica and POSTs reach it', async () => {
    const u = new URL(fleet.url);
    const transport = new SSEClientTransport(new URL(`${u.origin}/sse`), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      eventSourceInit: { fetch: (x, init) => fetch(x, { ...init, headers: { ...init?.headers, authorization: `Bearer ${TOKEN}` } }) },
    });
    const client = new V1Client({ name: 'fleet-sse', version: '0' });
    await client.connect(transport, { timeout: ms(20000) });
    try {
      assert.match(transport._endpoint.searchParams.get('sessionId'), SID);
      assert.equal((await exec(client, { code: 'q = 7\nresult = q' })).isError, false);
      for (let i = 1; i <= 3; i++) {
        const r = await exec(client, { code: 'q *= 2\nresult = q' });
        assert.equal(r.structuredContent.result, 7 * 2 ** i, text(r));
      }
    } finally {
      await client.close();
    }
  });
}

/** input_required through the balancer: the retry reaches the replica whose run waits. */
function relayTests(fleet) {
  test('input_required: a 2026 retry carrying only its requestState reaches the replica whose run waits for it', async () => {
    const caps = { elicitation: { form: {} } };
    const states = [];
    const transport = new V2Transport(new URL(fleet.url), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      fetch: (u, init) => {
        const st = init?.body && JSON.parse(init.body).params?.requestState;
        if (st) states.push(st);
        return fetch(u, init);
      },
    });
    const client = new V2Client({ name: 'fleet-relay', version: '0' }, { capabilities: caps, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const asked = [];
    client.setRequestHandler('elicitation/create', async (req) => {
      asked.push(req.params.message);
      return { action: 'accept', content: { ok: true } };
    });
    await client.connect(transport, { timeout: ms(20000) });
    try {
      // No namespace: each first call goes to the least busy replica, so over several calls
      // the retries would land on other replicas if the balancer did not route them.
      for (let k = 0; k < 6; k++) {
        const r = await exec(client, { code: `before = ${k}\nanswer = v2_confirm(action="go${k}")\nresult = [before, str(answer)]` });
        assert.equal(r.isError, false, text(r));
        assert.deepEqual(r.structuredContent.result, [k, `done: go${k}`], text(r));
      }
      assert.equal(asked.length, 6, `each run asked once: ${asked}`);
      const owners = new Set(states.map((st) => st.match(/^rs_(r[123])\.[0-9a-f]{56}\.[0-9a-f]{32}$/)?.[1]));
      assert.ok(states.length === 6 && !owners.has(undefined), `each retry echoed a requestState naming its replica: ${states}`);
      assert.ok(owners.size >= 2, `the runs were spread over the replicas: ${[...owners]}`);
    } finally {
      await client.close();
    }
  });

  test('input_required: a replica given another replica\'s requestState names the owner; a forged one is unknown', async () => {
    const { r1, r2 } = fleet.ports;
    const caps = { elicitation: { form: {} } };
    const args = { code: 'answer = v2_confirm(action="deploy")\nresult = str(answer)' };
    const call = (port, id, extra) => post(port, '/mcp', { jsonrpc: '2.0', id, method: 'tools/call',
      params: { _meta: { ...META, 'io.modelcontextprotocol/clientCapabilities': caps }, name: 'execute_python', arguments: args, ...extra } },
    { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'execute_python' });
    const first = await call(r1, 1);
    assert.equal(first.body?.result?.resultType, 'input_required', first.text);
    const st = first.body.result.requestState;
    assert.match(st, /^rs_r1\./);
    const answers = { ok: { action: 'accept', content: { ok: true } } };
    const stray = await call(r2, 2, { requestState: st, inputResponses: answers });
    assert.equal(stray.body?.error?.code, -32602, stray.text);
    assert.match(stray.body.error.message, /requestState belongs to a run on replica r1 of this fleet, not on this one \(r2\)/);
    const forged = 'rs_r2' + st.slice(5);
    const f = await call(fleet.lb, 3, { requestState: forged, inputResponses: answers });
    assert.equal(f.body?.error?.code, -32602, f.text);
    assert.match(f.body.error.message, /requestState is unknown/);
    // Neither used it up: through the balancer the retry reaches r1 and the run goes on.
    const done = await call(fleet.lb, 4, { requestState: st, inputResponses: answers });
    assert.equal(done.body?.result?.structuredContent?.result, 'done: deploy', done.text);
  });
}

describe('fleet behind HAProxy (contrib/fleet/haproxy.cfg), state shared in Redis', {
  skip: (!which('haproxy') && 'haproxy is not installed (install.sh installs it)') ||
    (!redisAvailable() && 'redis-server is not installed (install.sh installs it)'),
}, () => {
  const fleet = new Fleet('codemcp-fleet-hap-', { redis: true,
    mcp: V2_UPSTREAM });
  before(async () => fleet.start('haproxy'));
  after(async () => fleet.stop());

  stateTests(fleet);

  test('/healthz and /readyz answer without a token and reveal nothing sensitive', async () => {
    const port = fleet.ports.r1;
    const alive = await get(port, '/healthz');
    assert.equal(alive.status, 200);
    assert.deepEqual(JSON.parse(alive.text), { status: 'alive' });
    const ready = await get(port, '/readyz');
    assert.equal(ready.status, 200, ready.text);
    assert.deepEqual(JSON.parse(ready.text), { status: 'ready' });
    for (const r of [alive, ready]) assert.ok(!r.text.includes(TOKEN) && !r.text.includes(SECRET) && !r.text.includes('r1'));
  });

  test('Redis down: /readyz stays ready and names the state store as degraded, without its address; back when Redis is', async () => {
    const port = fleet.ports.r1;
    await fleet.store.stop();
    let body;
    try {
      assert.ok(await waitFor(async () => {
        const r = await get(port, '/readyz');
        body = r.text;
        return r.status === 200 && JSON.parse(r.text).degraded?.state;
      }, ms(15000)), `no degraded state in /readyz: ${body}`);
      assert.equal(JSON.parse(body).status, 'ready');
      assert.ok(!body.includes(String(fleet.store.port)), body);
    } finally {
      await fleet.store.start();
    }
    assert.ok(await waitFor(async () => JSON.parse((await get(port, '/readyz')).text).degraded === undefined, ms(15000)),
      'the state store stayed degraded after Redis came back');
  });

  test('forged, altered and foreign ids are refused clearly, never served with another state', async () => {
    const { r1, r2 } = fleet.ports;
    // A 2026 handle of r1 holding a secret value.
    const made = await call2026(r1, 'secret = "r1-only"\nresult = 1');
    assert.equal(made.status, 200, made.text);
    const h = made.body.result.structuredContent.namespace;
    assert.match(h, HANDLE);
    // Sent straight to r2: r2 knows it is r1's, says what was lost, and runs nothing.
    const foreign = await call2026(r2, 'result = secret', h);
    assert.equal(foreign.body.result.isError, true, foreign.text);
    assert.match(foreign.body.result.content[0].text, /^namespace lost: this handle belongs to replica r1 of this fleet/);
    assert.ok(!foreign.text.includes('r1-only'));
    // The replica part changed to r2 (the mac no longer matches): not a handle of this fleet.
    const steered = 'ns_r2' + h.slice(5);
    for (const port of [r2, fleet.lb]) {
      const r = await call2026(port, 'result = secret', steered);
      assert.equal(r.body.result.isError, true, r.text);
      assert.match(r.body.result.content[0].text, /^malformed namespace handle/);
      assert.ok(!r.text.includes('r1-only'));
    }
    // One hex digit of the random part changed: refused as well.
    const altered = h.slice(0, 12) + (h[12] === 'a' ? 'b' : 'a') + h.slice(13);
    assert.match(text((await call2026(fleet.lb, 'result = secret', altered)).body.result), /^malformed namespace handle/);
    // The header must say what the body says (else the balancer routed on a lie): -32020.
    const lie = await call2026(fleet.lb, 'result = secret', h, { 'mcp-param-namespace': steered });
    assert.equal(lie.status, 400, lie.text);
    assert.equal(lie.body.error.code, -32020);

    // 2025: a session id of r1 sent to r2, an altered one, a made-up one.
    const sid = await initialize2025(r1);
    assert.match(sid, SID);
    const ping = { jsonrpc: '2.0', id: 2, method: 'ping' };
    const other = await post(r2, '/mcp', ping, { 'mcp-session-id': sid });
    assert.equal(other.status, 404, other.text);
    assert.match(other.body.error.message, /held by replica r1 of this fleet[^]*variables[^]*lost/);
    const forgedSid = 'r2' + sid.slice(2);
    for (const port of [r2, fleet.lb]) {
      const r = await post(port, '/mcp', ping, { 'mcp-session-id': forgedSid });
      assert.equal(r.status, 404, r.text);
      assert.match(r.body.error.message, /not issued by this fleet/);
    }
    const ok = await post(fleet.lb, '/mcp', ping, { 'mcp-session-id': sid });
    assert.equal(ok.status, 200, `the balancer takes r1's session to r1: ${ok.text}`);
  });

  relayTests(fleet);

  test('SIGTERM drains: /readyz fails at once, the run in flight finishes, new work goes elsewhere, exit 0', async () => {
    const port = fleet.ports.r2;
    const keep = { connection: 'keep-alive' }; // as a balancer's pooled connection asks
    const long = call2026(port, 'import time\ntime.sleep(2)\nresult = "finished"', undefined, keep);
    await sleep(ms(500));
    fleet.procs.r2.child.kill('SIGTERM');
    await waitFor(async () => (await get(port, '/readyz').catch(() => null))?.status === 503, ms(3000));
    const ready = await get(port, '/readyz');
    assert.equal(JSON.parse(ready.text).failing.drain, 'draining: shutting down');
    // A new 2026 run on the draining replica: 503, to be retried elsewhere ...
    const refused = await call2026(port, 'result = 1', undefined, keep);
    assert.equal(refused.status, 503, refused.text);
    // ... on a connection the replica closes after it, and says so, so that no balancer keeps
    // it for a request the exiting process would never answer.
    assert.equal(refused.headers.connection, 'close', JSON.stringify(refused.headers));
    // ... which the balancer does: through it, new work still succeeds.
    for (let i = 0; i < 6; i++) {
      const r = await call2026(fleet.lb, `result = ${i}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.result.structuredContent.result, i);
      assert.doesNotMatch(r.body.result.structuredContent.namespace, /^ns_r2\./, 'no new namespace on the draining replica');
    }
    const done = await long;
    assert.equal(done.status, 200, done.text);
    assert.equal(done.body.result.structuredContent.result, 'finished', 'the run in flight finished during the drain');
    assert.equal(done.headers.connection, 'close', `the answer sent during the drain keeps its connection: ${JSON.stringify(done.headers)}`);
    const ex = await fleet.procs.r2.waitExit(ms(20000));
    assert.equal(ex.code, 0, fleet.procs.r2.stderrTail());
    await fleet.startReplica('r2');
    await waitFor(async () => (await get(port, '/readyz').catch(() => null))?.status === 200, ms(10000));
  });

  test('50 clients under load; r1 SIGKILLed, r2 restarted with SIGTERM: r3 clients see no failure, the others the documented error, nothing hangs', async (t) => {
    // Wait until the balancer sees r2 again (rise 2 x inter 1s).
    await sleep(ms(3000));
    const N2026 = 40, N2025 = 10;
    const recs = [];
    let stop = false;
    let phase = 'before';
    async function loop2026(i) {
      const rec = { era: 2026, i, replica: null, ok: 0, okAfter: 0, errors: [] };
      recs.push(rec);
      const { client } = await v2(fleet.url);
      await client.listTools(); // as an agent does: then the SDK mirrors `namespace` into a header
      let ns, n = 0;
      while (!stop) {
        const sent = phase; // a call's phase is when it was sent: its answer may come later
        try {
          const r = await exec(client, ns ? { code: 'n += 1\nresult = n', namespace: ns } : { code: 'n = 1\nresult = n' }, ms(30000));
          if (r.isError) throw new Error(text(r));
          if (!ns) {
            ns = r.structuredContent.namespace;
            rec.replica = ns.match(HANDLE)?.[1];
            n = 1;
          } else n += 1;
          assert.equal(r.structuredContent.result, n, `client ${i}: its variables`);
          rec.ok++;
          if (phase === 'after') rec.okAfter++;
        } catch (e) {
          const message = String(e.message || e) + (e.cause ? ` (${e.cause.code || ''} ${e.cause.message})` : '');
          rec.errors.push({ replica: rec.replica, phase: sent, caught: phase, message });
          // Cut off in flight: ask again with the handle (to be told what was lost); else
          // start over: a new namespace, anywhere.
          if (!CUT.test(message) || rec.errors.length > 1) ns = undefined;
          await sleep(100);
        }
      }
      await client.close();
    }
    async function loop2025(i) {
      const rec = { era: 2025, i, replica: null, ok: 0, okAfter: 0, errors: [] };
      recs.push(rec);
      let c = null, n = 0, told = [];
      while (!stop) {
        const sent = phase;
        try {
          if (!c) {
            c = await v1(fleet.url);
            rec.replica = c.transport.sessionId.match(SID)?.[1];
            n = 0;
            // A POST's event stream cut off is resumed with a GET; when that is refused the
            // SDK tells onerror, not the call, which then ends at its timeout.
            c.client.onerror = (e) => told.push(String(e.message || e));
          }
          told = [];
          const r = await exec(c.client, n ? { code: 'n += 1\nresult = n' } : { code: 'n = 1\nresult = n' }, ms(30000));
          if (r.isError) throw new Error(text(r));
          n += 1;
          assert.equal(r.structuredContent.result, n, `client ${i}: its session's variables`);
          rec.ok++;
          if (phase === 'after') rec.okAfter++;
        } catch (e) {
          let message = String(e.message || e) + (e.cause ? ` (${e.cause.code || ''} ${e.cause.message})` : '');
          if (/Request timed out/.test(message) && told.length) message += `; the SDK was told: ${told.join('; ')}`;
          rec.errors.push({ replica: rec.replica, phase: sent, caught: phase, message });
          if (!CUT.test(message) || rec.errors.length > 1) { // cut off in flight: ask the session again
            await c?.client.close().catch(() => {});
            c = null; // a new session, on a live replica
          }
          await sleep(100);
        }
      }
      if (c) {
        await c.transport.terminateSession().catch(() => {});
        await c.client.close();
      }
    }
    const loops = [];
    for (let i = 0; i < N2026; i++) loops.push(loop2026(i));
    for (let i = 0; i < N2025; i++) loops.push(loop2025(i));
    let exitCode;
    const drained = fleet.procs.r2;
    try {
      await waitFor(() => recs.length === N2026 + N2025 && recs.every((r) => r.ok >= 2), ms(60000));
      const onR1 = recs.filter((r) => r.replica === 'r1').length;
      const onR3 = recs.filter((r) => r.replica === 'r3').length;
      assert.ok(onR1 > 0 && onR3 > 0, `clients on every replica: r1 ${onR1}, r3 ${onR3}`);

      phase = 'during';
      fleet.procs.r1.child.kill('SIGKILL');
      fleet.procs.r2.child.kill('SIGTERM');
      exitCode = (await drained.waitExit(ms(30000))).code;
      await fleet.procs.r1.waitExit(ms(5000));
      await fleet.startReplica('r2');
      await sleep(ms(3000)); // the balancer's checks see r2 up again
      phase = 'after';
      await waitFor(() => recs.every((r) => r.okAfter >= 2), ms(60000)).catch(() => {});
    } finally {
      stop = true; // the client loops end even when a step above failed
    }
    await withTimeout(Promise.all(loops), ms(90000), 'every client loop to end (a hung request would stop it)');
    assert.equal(exitCode, 0, `the drained replica exits 0:\n${drained.stderrTail()}`);

    for (const r of recs) {
      for (const e of r.errors) {
        assert.ok(e.replica === 'r1' || e.replica === 'r2',
          `a client on ${e.replica} (${r.era} #${r.i}) failed although its replica was never stopped: ${e.message}\n` +
          `balancer: ${fleet.lbLog.slice(-2000)}\n${e.replica}: ${fleet.procs[e.replica]?.stderrTail(3000)}`);
        // A response cut off by the SIGKILL (or, rarely, by the restarted replica's exit: see
        // bench/results/fleet.md) can only end the connection; every other error names what
        // was lost.
        // (The call in flight at the kill was sent before it: its phase when sent or when it
        // failed is 'during'.)
        if ((e.phase === 'during' || e.caught === 'during') && CUT.test(e.message)) continue;
        assert.match(e.message, LOST, `the documented error for state on a stopped replica (${r.era} #${r.i} on ${e.replica}, ${e.phase})\n` +
          `balancer: ${fleet.lbLog.slice(-1500)}`);
      }
      // r1's clients: only the call in flight at the SIGKILL. r2's: also a call HAProxy sent on
      // an idle connection to r2 just as the drained r2 exited and closed it; HAProxy then
      // closes the client's connection without an answer (for the client to retry, which
      // fetch does not do for a POST), once per such connection.
      const cuts = r.errors.filter((e) => CUT.test(e.message)).length;
      assert.ok(cuts <= (r.replica === 'r2' ? 3 : 1), `at most the call in flight at the kill is cut off: ${JSON.stringify(r.errors)}`);
      if (r.errors.length) assert.ok(r.errors.some((e) => LOST.test(e.message)), `a client that lost its state was told what it lost: ${JSON.stringify(r.errors)}`);
      assert.ok(r.okAfter >= 2, `${r.era} client #${r.i} (first on ${r.replica}) works again after the failover: ${JSON.stringify(r.errors)}`);
    }
    const errs = recs.flatMap((r) => r.errors);
    t.diagnostic(`${recs.reduce((a, r) => a + r.ok, 0)} calls answered; errors: ${errs.length} ` +
      `(r1 ${errs.filter((e) => e.replica === 'r1').length}, r2 ${errs.filter((e) => e.replica === 'r2').length}, r3 0)`);
    const hitR1 = recs.filter((r) => r.errors.some((e) => e.replica === 'r1'));
    assert.ok(hitR1.length > 0, 'the killed replica\'s clients were told');
  });
});

describe('fleet behind the Kubernetes router (contrib/fleet/kubernetes/codemcp-fleet.yaml, its HAProxy config)', {
  skip: !which('haproxy') && 'haproxy is not installed (install.sh installs it)',
}, () => {
  // No cluster here: the manifest's router runs as it would in its pod, in front of local
  // replicas named as the StatefulSet's pods would be.
  const fleet = new Fleet('codemcp-fleet-k8s-', { mcp: V2_UPSTREAM });
  before(async () => fleet.start('k8s-router'));
  after(async () => fleet.stop());

  test('2025 sessions and 2026 handles reach the replica holding them', async () => {
    const sid = await initialize2025(fleet.lb);
    const owner = sid.match(SID)[1];
    for (let i = 0; i < 4; i++) {
      const r = await post(fleet.lb, '/mcp', { jsonrpc: '2.0', id: 2 + i, method: 'ping' }, { 'mcp-session-id': sid });
      assert.equal(r.status, 200, `the router takes ${owner}'s session to ${owner}: ${r.text}`);
    }
    const made = await call2026(fleet.lb, 'k = 5\nresult = k');
    const h = made.body.result.structuredContent.namespace;
    for (let i = 1; i <= 3; i++) {
      const r = await call2026(fleet.lb, 'k += 1\nresult = k', h);
      assert.equal(r.body.result.structuredContent.result, 5 + i, r.text);
    }
  });

  relayTests(fleet);
});

describe('fleet behind nginx (contrib/fleet/nginx.conf)', { skip: !which('nginx') && 'nginx is not installed (install.sh installs nginx-light)' }, () => {
  const fleet = new Fleet('codemcp-fleet-ngx-');
  before(async () => fleet.start('nginx'));
  after(async () => fleet.stop());

  stateTests(fleet);

  test('a replica killed: its session and handle are answered through nginx with the documented error, others carry on', async () => {
    // One 2025 session and one 2026 handle on each replica, made directly, used through nginx.
    const sids = {}, handles = {};
    for (const id of IDS) {
      sids[id] = await initialize2025(fleet.ports[id]);
      const made = await call2026(fleet.ports[id], 'k = 5\nresult = k');
      handles[id] = made.body.result.structuredContent.namespace;
      assert.match(handles[id], new RegExp(`^ns_${id}\\.`));
    }
    fleet.procs.r1.child.kill('SIGKILL');
    await fleet.procs.r1.waitExit(ms(5000));
    const ping = { jsonrpc: '2.0', id: 3, method: 'ping' };
    const lost = await post(fleet.lb, '/mcp', ping, { 'mcp-session-id': sids.r1 });
    assert.match(lost.body.error.message, LOST, lost.text);
    const gone = await call2026(fleet.lb, 'result = k', handles.r1);
    assert.match(JSON.stringify(gone.body), LOST, gone.text);
    for (const id of ['r2', 'r3']) {
      const r = await call2026(fleet.lb, 'k += 1\nresult = k', handles[id]);
      assert.equal(r.body.result.structuredContent.result, 6, r.text);
      const p = await post(fleet.lb, '/mcp', ping, { 'mcp-session-id': sids[id] });
      assert.equal(p.status, 200, p.text);
    }
  });
});
