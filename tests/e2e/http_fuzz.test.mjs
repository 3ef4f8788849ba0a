// A seeded, bounded mutation campaign against `codemcp start` through raw sockets (node:net, so
// the HTTP can be broken): malformed request lines, missing/duplicate/obs-folded/huge headers,
// wrong Content-Type and Accept, Content-Length short/long/negative/doubled, chunked bodies
// with bad sizes, bodies cut mid-way, slow trickles, pipelined requests, forged, foreign and
// deleted Mcp-Session-Ids, GET streams opened and dropped, Last-Event-ID garbage, bad tokens,
// broken JSON and JSON-RPC, batches, bodies past CODEMCP_HTTP_MAX_BODY, 2026-era requests with
// mismatched headers, interleaved with valid traffic. After every batch: the gateway is alive,
// a fresh initialize + execute_python (`result = 1`) works on a new connection, every complete
// request got a well-formed response (an error status with an error body), and the gateway's
// descriptors return to their baseline. Deterministic: the same seeds give the same requests.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { describe, test } from 'node:test';

import { meta2026, ms, sharedHttpGateway, sleep, waitFor } from './lib.mjs';

const TOKEN = 'fuzz-token-0123456789abcdef';
const MAX_BODY = 65536;
const SEEDS = [11, 23, 37, 41, 59, 67];
const CASES_PER_SEED = 36;
const PARALLEL = 6;
const FD_SLACK = 6; // workers come and go; a per-connection leak shows as tens

const gw = sharedHttpGateway({
  prefix: 'codemcp-fuzz-',
  exitZero: true, // a spinning or wedged loop ignores SIGTERM: that fails here
  env: {
    CODEMCP_HTTP_TOKEN: TOKEN,
    CODEMCP_HTTP_MAX_BODY: String(MAX_BODY),
    CODEMCP_HTTP_HEADER_TIMEOUT_MS: '1500',
    CODEMCP_HTTP_BODY_TIMEOUT_MS: '1500',
    CODEMCP_HTTP_PENDING_GRACE_MS: '200',
    CODEMCP_WORKERS: '2',
    CODEMCP_LOG: 'info',
  },
});

// ---------------------------------------------------------------------------------------------
// Raw HTTP.

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const port = () => Number(new URL(gw.url).port);

/** Parses consecutive HTTP/1.x responses from buf. Returns {responses, rest, bad}: each
 *  response {status, headers, body, sse}; an SSE response ends the list (its body is open);
 *  rest: bytes of an incomplete response; bad: a description when the bytes are not HTTP. */
function parseResponses(buf) {
  const responses = [];
  let off = 0;
  while (off < buf.length) {
    const end = buf.indexOf('\r\n\r\n', off);
    if (end < 0) break;
    const head = buf.subarray(off, end).toString('latin1').split('\r\n');
    const m = head[0].match(/^HTTP\/1\.[01] (\d{3}) [^\r\n]*$/);
    if (!m) return { responses, bad: `not a status line: ${JSON.stringify(head[0].slice(0, 80))}` };
    const headers = {};
    for (const line of head.slice(1)) {
      const i = line.indexOf(':');
      if (i <= 0) return { responses, bad: `bad header line ${JSON.stringify(line)}` };
      const k = line.slice(0, i).trim().toLowerCase();
      headers[k] = headers[k] === undefined ? line.slice(i + 1).trim() : `${headers[k]}, ${line.slice(i + 1).trim()}`;
    }
    const status = Number(m[1]);
    let p = end + 4;
    if (/event-stream/.test(headers['content-type'] || '')) {
      responses.push({ status, headers, body: buf.subarray(p).toString('utf8'), sse: true });
      return { responses, rest: null };
    }
    if (headers['transfer-encoding']) return { responses, bad: `unexpected transfer-encoding on a ${status}` };
    if (headers['content-length'] === undefined) {
      if (status === 100 || status === 204 || status === 304) {
        off = p;
        if (status !== 100) responses.push({ status, headers, body: '' });
        continue;
      }
      return { responses, bad: `a ${status} without Content-Length` };
    }
    const n = Number(headers['content-length']);
    if (!Number.isInteger(n) || n < 0) return { responses, bad: `Content-Length ${headers['content-length']}` };
    if (buf.length < p + n) return { responses, rest: buf.subarray(off) };
    responses.push({ status, headers, body: buf.subarray(p, p + n).toString('utf8') });
    off = p + n;
  }
  return { responses, rest: off < buf.length ? buf.subarray(off) : null };
}

/** Sends pieces ([Buffer|string], each after `gap` ms) on a new connection, then waits for
 *  `want` responses, the peer's close or `limit` ms; `cut`: close right after sending.
 *  Resolves {responses, rest, bad, closed, ms}. */
function exchange(pieces, { gap = 0, want = 1, limit = 4000, cut = false, hold = 0 } = {}) {
  return new Promise((resolve) => {
    const s = net.connect(port(), '127.0.0.1');
    const t0 = Date.now();
    let buf = Buffer.alloc(0);
    let closed = false;
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ ...parseResponses(buf), closed, ms: Date.now() - t0 });
    };
    const timer = setTimeout(finish, limit);
    s.on('error', () => {});
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const p = parseResponses(buf);
      if (p.bad || p.responses.length >= want || p.responses.some((r) => r.sse)) setTimeout(finish, hold);
    });
    s.on('close', () => {
      closed = true;
      finish();
    });
    s.on('connect', async () => {
      for (const piece of pieces) {
        if (settled || s.destroyed) return;
        s.write(piece);
        if (gap) await sleep(gap);
      }
      if (cut) finish();
    });
  });
}

const BASE = {
  Host: '127.0.0.1',
  Authorization: `Bearer ${TOKEN}`,
  Accept: 'application/json, text/event-stream',
  'Content-Type': 'application/json',
};

/** A request as bytes. headers: [[name, value]] in order; body: string or Buffer. */
function requestBytes({ line, headers, body }) {
  const head = `${line}\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), Buffer.isBuffer(body) ? body : Buffer.from(body || '', 'utf8')]);
}

const initBody = (id = 1, version = '2025-06-18') =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'fuzz', version: '0' } } });
const execBody = (id, code = 'result = 1') =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'execute_python', arguments: { code } } });

function post(body, extra = [], { path = '/mcp', version = 'HTTP/1.1' } = {}) {
  const b = Buffer.from(body, 'utf8');
  return { line: `POST ${path} ${version}`, headers: [...Object.entries(BASE), ['Content-Length', String(b.length)], ...extra], body: b };
}

/** One JSON-RPC answer from a response (JSON body or SSE events): the message with `id`. */
function rpcAnswer(r, id) {
  if (!r.sse) return JSON.parse(r.body);
  for (const m of r.body.matchAll(/^data: (.+)$/gm)) {
    const msg = JSON.parse(m[1]);
    if (msg.id === id && ('result' in msg || 'error' in msg)) return msg;
  }
  return null;
}

/** A fresh session on a new connection: initialize, initialized, execute_python result = 1,
 *  DELETE. Proves the gateway serves. */
async function probe(what) {
  const i = await exchange([requestBytes(post(initBody(1)))]);
  assert.equal(i.responses[0]?.status, 200, `${what}: initialize on a fresh connection: ${JSON.stringify(i)}\n${gw.proc.stderrTail()}`);
  const sid = i.responses[0].headers['mcp-session-id'];
  assert.match(sid || '', /^[0-9a-f]{64}$/);
  const sidH = [['Mcp-Session-Id', sid], ['MCP-Protocol-Version', '2025-06-18']];
  const n = await exchange([requestBytes(post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), sidH))]);
  assert.equal(n.responses[0]?.status, 202, `${what}: initialized: ${JSON.stringify(n)}`);
  // The run's answer: SSE on the POST; read until the stream holds the answer.
  let answer = null;
  const deadline = Date.now() + ms(60000);
  const s = net.connect(port(), '127.0.0.1');
  let buf = Buffer.alloc(0);
  s.on('error', () => {});
  s.write(requestBytes(post(execBody(2), sidH)));
  await new Promise((resolve) => {
    const check = () => {
      const p = parseResponses(buf);
      if (p.responses[0]) answer = rpcAnswer(p.responses[0], 2);
      if (answer || Date.now() > deadline) resolve();
    };
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      check();
    });
    s.on('close', resolve);
    setTimeout(resolve, deadline - Date.now());
  });
  s.destroy();
  assert.ok(answer, `${what}: no answer to execute_python: ${buf.toString('utf8').slice(0, 500)}\n${gw.proc.stderrTail()}`);
  assert.equal(answer.result?.isError, false, `${what}: ${JSON.stringify(answer)}`);
  assert.equal(answer.result?.structuredContent?.result, 1, `${what}: ${JSON.stringify(answer)}`);
  const d = await exchange([requestBytes({ line: 'DELETE /mcp HTTP/1.1', headers: [...Object.entries(BASE), ...sidH] })]);
  assert.equal(d.responses[0]?.status, 200, `${what}: DELETE: ${JSON.stringify(d)}`);
}

// The gateway's descriptors as [fd, what it names] (one closed while listing is left out).
const fdLinks = () => fs.readdirSync(`/proc/${gw.proc.pid}/fd`).flatMap((f) => {
  try {
    return [[f, fs.readlinkSync(`/proc/${gw.proc.pid}/fd/${f}`)]];
  } catch {
    return [];
  }
});
const watchFd = (to) => to.startsWith('/proc/') || to === 'anon_inode:[pidfd]';

// The gateway's descriptors, less those it keeps on its live workers (watchFdsWrong checks
// those): a leak per connection or per request shows here as tens.
const fds = () => fdLinks().filter(([, to]) => !watchFd(to)).length;

/** A pid's parent, or 0 once it is gone. */
function ppid(pid) {
  try {
    return Number(/^PPid:\s*(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
  } catch {
    return 0;
  }
}

// What the gateway keeps on each worker to see what a run leaves behind (worker_proc.h's
// watch): /proc/<pid>/task, its children file and a comm file per thread, and a pidfd per
// thread. Each /proc descriptor must name a live process below the gateway, no more of them
// per process than the watch takes (2 + WKP_WATCH_THREADS), and the pidfds no more than those
// processes' threads: a watch left open for an ended worker, or opened twice, fails here.
// What is wrong, or ''.
const WATCH_FDS_PER_WORKER = 2 + 8;
function watchFdsWrong() {
  const perPid = new Map();
  let pidfds = 0;
  for (const [fd, to] of fdLinks()) {
    if (to === 'anon_inode:[pidfd]') {
      pidfds++;
      continue;
    }
    if (!to.startsWith('/proc/')) continue;
    const pid = Number(/^\/proc\/(\d+)\//.exec(to)?.[1]);
    let up = pid;
    for (let i = 0; up > 1 && up !== gw.proc.pid && i < 8; i++) up = ppid(up);
    if (!pid || up !== gw.proc.pid) return `fd ${fd} -> ${to}: not a live worker of the gateway`;
    perPid.set(pid, (perPid.get(pid) || 0) + 1);
  }
  let threads = 0;
  for (const [pid, n] of perPid) {
    if (n > WATCH_FDS_PER_WORKER) return `${n} descriptors on /proc/${pid}`;
    try {
      threads += fs.readdirSync(`/proc/${pid}/task`).length;
    } catch {
      return `worker ${pid} is gone, ${n} descriptors on it are not`;
    }
  }
  return pidfds > threads ? `${pidfds} pidfds for ${threads} threads of live workers` : '';
}
let baseline; // fds() once the gateway has settled
const fdsSettled = () => fds() <= baseline + FD_SLACK && watchFdsWrong() === '';
const fdsReport = () => `descriptors: ${fds()} open, baseline ${baseline}; ${watchFdsWrong() || 'worker watches fine'}`;

// ---------------------------------------------------------------------------------------------
// The mutations. Each case: {name, pieces, opts, complete (a full, framed request whose answer
// is owed), framing (HTTP itself is broken: lws may answer with its own page or close)}.

function genCase(rnd, ctx) {
  const pick = (a) => a[Math.floor(rnd() * a.length)];
  const int = (n) => Math.floor(rnd() * n);
  const sid = ctx.sid;
  const templates = [
    () => ({ t: 'init', req: post(initBody(1 + int(1000))) }),
    () => ({ t: 'call', req: post(execBody(1 + int(1000), pick(['result = 1', 'result = "x" * 10', 'print(1)'])), [['Mcp-Session-Id', sid]]) }),
    () => ({ t: 'list', req: post(JSON.stringify({ jsonrpc: '2.0', id: 'l' + int(99), method: 'tools/list' }), [['Mcp-Session-Id', sid]]) }),
    () => ({ t: 'modern', req: post(JSON.stringify({ jsonrpc: '2.0', id: int(99), method: 'tools/list', params: { _meta: meta2026('fuzz') } }),
      [['MCP-Protocol-Version', '2026-07-28'], ['Mcp-Method', 'tools/list']]) }),
    () => ({ t: 'get', req: { line: 'GET /mcp HTTP/1.1', headers: [...Object.entries(BASE), ['Mcp-Session-Id', sid]] } }),
    () => ({ t: 'delete', req: { line: 'DELETE /mcp HTTP/1.1', headers: [...Object.entries(BASE), ['Mcp-Session-Id', ctx.victim]] } }),
    () => ({ t: 'legacy', req: { line: 'GET /sse HTTP/1.1', headers: Object.entries(BASE) } }),
  ];
  const c = pick(templates)();
  const req = { line: c.req.line, headers: c.req.headers.map((h) => [...h]), body: c.req.body };
  const names = [c.t];
  let framing = false;
  let sizeKnown = true; // Content-Length still tells the body's end
  const setHeader = (k, v) => {
    const i = req.headers.findIndex(([n]) => n.toLowerCase() === k.toLowerCase());
    if (i >= 0) req.headers[i][1] = v;
    else req.headers.push([k, v]);
  };
  const dropHeader = (k) => (req.headers = req.headers.filter(([n]) => n.toLowerCase() !== k.toLowerCase()));
  const mutations = [
    ['no-accept', () => dropHeader('Accept')],
    ['accept-html', () => setHeader('Accept', 'text/html')],
    ['ctype-text', () => setHeader('Content-Type', pick(['text/plain', 'application/jsonx', '', 'application/json; charset=utf-16']))],
    ['no-ctype', () => dropHeader('Content-Type')],
    ['no-host', () => dropHeader('Host')],
    ['evil-host', () => setHeader('Host', pick(['evil.example', '127.0.0.1.evil', '[::1', 'a'.repeat(300)]))],
    ['evil-origin', () => setHeader('Origin', pick(['http://evil.example', 'null', 'x'.repeat(400)]))],
    ['bad-auth', () => setHeader('Authorization', pick(['Bearer wrong', 'Basic Zm9vOmJhcg==', 'Bearer', '', `Bearer ${TOKEN}x`, 'Bearer ' + 'A'.repeat(2000)]))],
    ['no-auth', () => dropHeader('Authorization')],
    ['dup-auth', () => req.headers.push(['Authorization', 'Bearer wrong'])],
    ['forged-sid', () => setHeader('Mcp-Session-Id', pick(['0'.repeat(64), 'deadbeef', 'f'.repeat(200), '', ctx.deleted, sid.toUpperCase()]))],
    ['dup-sid', () => req.headers.push(['Mcp-Session-Id', ctx.deleted])],
    ['proto', () => setHeader('MCP-Protocol-Version', pick(['1999-01-01', '2026-07-28', '', 'x'.repeat(100), '2025-06-18\t']))],
    ['last-event-id', () => setHeader('Last-Event-ID', pick(['garbage', '1-99999999', '-1--1', '18446744073709551615-0', 'x'.repeat(200), '1-1x', '']))],
    ['mcp-method', () => setHeader('Mcp-Method', pick(['tools/call', 'x'.repeat(100), ' ', 'initialize']))],
    ['obs-fold', () => req.headers.splice(int(req.headers.length + 1), 0, ['X-Folded', 'a\r\n  b']), true],
    ['no-colon', () => req.headers.splice(int(req.headers.length + 1), 0, ['X-Broken\r\nNoColonHere', 'x']), true],
    // Past lws's header buffer (4 KiB) lws 4.1 closes the connection without a status: known,
    // not in codemcp's hands (the gateway stays up and leaks nothing; that is checked).
    ['huge-header', () => req.headers.push(['X-Huge', 'h'.repeat(pick([4000, 9000, 20000]))]), true],
    ['many-headers', () => { for (let i = 0; i < 150; i++) req.headers.push([`X-H${i}`, 'v']); }],
    ['cl-dup', () => req.headers.push(['Content-Length', pick(['0', '5', String((req.body || '').length)])]), true],
    ['cl-neg', () => setHeader('Content-Length', '-1'), true],
    ['cl-junk', () => setHeader('Content-Length', pick(['abc', '1e3', ' 12', '0x10', '99999999999999999999'])), true],
    ['cl-short', () => setHeader('Content-Length', String(Math.max(0, (req.body || '').length - 1 - int(20)))), true],
    ['cl-long', () => { setHeader('Content-Length', String((req.body || '').length + 1 + int(50))); sizeKnown = false; }],
    ['cl-huge', () => setHeader('Content-Length', String(MAX_BODY + 1 + int(1e6)))],
    ['chunked', () => {
      dropHeader('Content-Length');
      setHeader('Transfer-Encoding', 'chunked');
      req.body = Buffer.from(pick(['zz\r\nab\r\n0\r\n\r\n', 'fffffffffffffffff\r\nx\r\n', '-5\r\nabc\r\n0\r\n\r\n', '3\r\nabcdef\r\n0\r\n\r\n', '0\r\n\r\n']));
    }, true],
    ['te-and-cl', () => setHeader('Transfer-Encoding', pick(['chunked', 'gzip', 'identity, chunked'])), true],
    ['json-broken', () => { req.body = Buffer.from(pick(['{', '{"jsonrpc":"2.0",', 'null', '[]', '[{"jsonrpc":"2.0","id":1,"method":"ping"}]', '"x"', '{"jsonrpc":"1.0","id":1,"method":"ping"}', '{"jsonrpc":"2.0","id":{},"method":"ping"}', '{"jsonrpc":"2.0","id":1,"method":7}', '\u0000\u0001\u00ff', '{"a":' + '['.repeat(5000) + ']'.repeat(5000) + '}', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":7}}}', '{"jsonrpc":"2.0","id":1e400,"method":"ping"}'])); setHeader('Content-Length', String(req.body.length)); }],
    ['big-body', () => { req.body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping', params: { pad: 'p'.repeat(MAX_BODY - 200 + int(400)) } })); setHeader('Content-Length', String(req.body.length)); }],
    ['bad-line', () => { req.line = pick(['GARBAGE', 'POST /mcp HTTP/9.9', 'POST /mcp', 'POST  /mcp  HTTP/1.1', 'PUT /mcp HTTP/1.1', 'OPTIONS * HTTP/1.1', `POST /${'p'.repeat(3000)} HTTP/1.1`, 'POST /mcp?x=%zz HTTP/1.1', 'POST /../mcp HTTP/1.1', 'BREW /mcp HTTP/1.1', 'POST /mcp HTTP/1.1 extra']); }, true],
    ['bare-lf', () => { req.lf = true; }, true],
  ];
  const n = 1 + int(rnd() < 0.3 ? 3 : 1);
  for (let i = 0; i < n; i++) {
    const [name, fn, breaks] = pick(mutations);
    fn();
    names.push(name);
    if (breaks) framing = true;
  }
  let bytes = requestBytes(req);
  if (req.lf) bytes = Buffer.from(bytes.toString('latin1').replaceAll('\r\n', '\n'), 'latin1');
  // Delivery.
  const d = rnd();
  let pieces = [bytes];
  const opts = { want: 1, limit: 4000 };
  let complete = sizeKnown && !framing;
  if (d < 0.15) { // split at random points with small gaps
    const cuts = [...new Set([int(bytes.length), int(bytes.length), int(bytes.length)])].sort((a, b) => a - b);
    pieces = [];
    let prev = 0;
    for (const x of [...cuts, bytes.length]) {
      if (x > prev) pieces.push(bytes.subarray(prev, x));
      prev = x;
    }
    opts.gap = 5 + int(30);
    names.push('split');
  } else if (d < 0.3) { // cut mid-way, then close
    pieces = [bytes.subarray(0, int(bytes.length))];
    opts.cut = true;
    complete = false;
    names.push('cut');
  } else if (d < 0.38) { // slowloris: a few bytes at a time, past the header timeout
    pieces = [];
    for (let i = 0; i < Math.min(bytes.length, 20); i += 2) pieces.push(bytes.subarray(i, i + 2));
    opts.gap = 200;
    opts.limit = 6000;
    complete = false;
    names.push('trickle');
  } else if (d < 0.5) { // pipelined behind a valid request
    pieces = [Buffer.concat([requestBytes(post(JSON.stringify({ jsonrpc: '2.0', id: 'p', method: 'ping' }), [['Mcp-Session-Id', sid]])), bytes])];
    opts.want = 2;
    opts.pipelined = true;
    names.push('pipelined');
  } else if (d < 0.55) { // opened, then dropped before the answer
    opts.limit = 30;
    complete = false;
    names.push('dropped');
  }
  return { name: names.join('+'), pieces, opts, complete, framing, t: c.t };
}

/** The rules for one exchange's result. */
function judge(c, r, log) {
  const where = `${c.name}: ${JSON.stringify({ ...r, rest: r.rest?.toString('latin1').slice(0, 200) }).slice(0, 900)}`;
  assert.ok(!r.bad, `malformed response: ${r.bad}\n${where}`);
  for (const res of r.responses) {
    assert.ok(res.status >= 200 && res.status < 600, where);
    assert.notEqual(res.status, 500, `500 for bad input\n${where}`);
    if (res.status >= 400) {
      const lwsPage = /^<html>/.test(res.body) && c.framing; // lws's own answer to broken HTTP
      if (!lwsPage) {
        let body;
        assert.doesNotThrow(() => (body = JSON.parse(res.body)), `an error without a JSON body\n${where}`);
        const msg = body.error?.message || body.error_description;
        assert.ok(typeof msg === 'string' && msg.length > 10, `an error without a message\n${where}`);
      }
    }
  }
  if (c.complete) {
    // A complete, well-framed request is answered: a response, or at least the first of a
    // pipelined pair followed by the connection's close.
    assert.ok(r.responses.length >= 1, `no answer to a complete request (${r.closed ? 'closed' : 'still open'} after ${r.ms} ms)\n${where}`);
    if (c.opts.pipelined && r.responses.length < 2 && !r.responses.some((x) => x.sse)) {
      assert.ok(r.closed, `pipelined: one answer and the connection left open\n${where}`);
      assert.equal(r.responses[0].headers.connection, 'close', `pipelined: the answer should say the connection closes\n${where}`);
    }
  }
  log.push(`${c.name} -> ${r.responses.map((x) => x.status).join(',') || (r.closed ? 'closed' : 'none')}`);
}

async function freshSession() {
  const i = await exchange([requestBytes(post(initBody(1)))]);
  assert.equal(i.responses[0]?.status, 200, JSON.stringify(i));
  return i.responses[0].headers['mcp-session-id'];
}

describe('codemcp start under a raw-socket mutation campaign', { timeout: ms(240000) }, () => {
  test('baseline: the gateway answers and its descriptors settle', async () => {
    await probe('first probe');
    await sleep(300);
    baseline = fds();
    assert.ok(await waitFor(() => watchFdsWrong() === '', ms(8000), 100), watchFdsWrong()); // a read of /proc in passing is no watch
  });

  for (const seed of SEEDS) {
    test(`seed ${seed}: ${CASES_PER_SEED} hostile requests, then a fresh session works and no descriptor leaks`, async () => {
      const rnd = mulberry32(seed);
      const victim = await freshSession();
      const deleted = await freshSession();
      await exchange([requestBytes({ line: 'DELETE /mcp HTTP/1.1', headers: [...Object.entries(BASE), ['Mcp-Session-Id', deleted]] })]);
      const ctx = { sid: await freshSession(), victim, deleted };
      const cases = Array.from({ length: CASES_PER_SEED }, () => genCase(rnd, ctx));
      const log = [];
      for (let i = 0; i < cases.length; i += PARALLEL) {
        const batch = cases.slice(i, i + PARALLEL);
        const results = await Promise.all(batch.map((c) => exchange(c.pieces, c.opts)));
        batch.forEach((c, k) => judge(c, results[k], log));
        assert.equal(gw.proc.exit, null, `the gateway died:\n${gw.proc.stderrTail()}`);
      }
      await probe(`after seed ${seed}`);
      const settled = await waitFor(fdsSettled, ms(8000), 100);
      assert.ok(settled, `${fdsReport()}\n${log.join('\n')}`);
    });
  }

  test('a flood of 300 connections (half-sent requests, dropped at once) leaves the gateway serving, no descriptor leak', async () => {
    const socks = [];
    const head = requestBytes(post(initBody(1))).subarray(0, 60);
    for (let i = 0; i < 300; i++) {
      const s = net.connect(port(), '127.0.0.1');
      s.on('error', () => {});
      s.on('connect', () => s.write(head));
      socks.push(s);
    }
    await sleep(500);
    await probe('during the flood');
    for (const s of socks) s.destroy();
    await probe('after the flood');
    const settled = await waitFor(fdsSettled, ms(8000), 100);
    assert.ok(settled, fdsReport());
  });

  test('pipelined POSTs: the first is answered with Connection: close, the gateway keeps serving', async () => {
    // lws 4.1 spun at 100 % CPU on the second of two POSTs sent in one segment, answering
    // nobody and ignoring SIGTERM (src/front/serve_http.c, pipelined()).
    const one = requestBytes(post(initBody(1)));
    const r = await exchange([Buffer.concat([one, one])], { want: 2 });
    assert.equal(r.responses[0]?.status, 200, JSON.stringify(r));
    assert.equal(r.responses[0].headers.connection, 'close');
    assert.ok(r.closed, 'the connection closes after the first answer');
    await probe('after pipelined POSTs');
  });
});
