// Benchmark: the 2026-07-28 era against the 2025 one, over stdio and over
// Streamable HTTP (`codemcp start`), side by side.
//   (1) first tools/call from process start: spawn codemcp (one upstream, server-everything),
//       then — 2025: initialize + notifications/initialized + tools/call; 2026: tools/call with
//       the `_meta` envelope straight away; 2026+discover: server/discover, then tools/call —
//       and time until the execute_python result (a program calling get-sum once) arrives;
//   (2) per-request cost on a warm gateway: N sequential execute_python requests of an empty
//       program, with and without the envelope, one process per era, interleaved in rounds.
//   (3) HTTP, first tools/call from process start: spawn `codemcp start -p 0` (same upstream),
//       wait for its URL, then 2025: initialize + notifications/initialized + tools/call on the
//       session; 2026: one POST with the envelope and routing headers;
//   (4) HTTP, per request on a warm gateway: tools/list (the MCP and HTTP layers alone) and
//       execute_python of an empty program, on a 2025 session vs session-less 2026 POSTs (with
//       the namespace handle passed back, as a client continuing its state does, and without), one
//       keep-alive connection per era, one gateway, interleaved rounds of 20 (paired ratios).
// Target: the modern path no slower than the 2025 one (ratios ≤ ~1.0).
// Usage: node bench/modern.mjs [starts=15] [requests=300]   → bench/results/modern.md
//        node bench/modern.mjs 0 [requests] perreq   → only (4), printed, nothing written (for
//        profiling the gateway under a steady load, or quick A/B rounds)
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_TOKEN, LinePeer, ROOT, SERVERS, codemcpBin, cpuNs, fmt, mcpPost, startHttpGateway, stats } from './lib.mjs';

const starts = Number(process.argv[2] || 15);
const requests = Number(process.argv[3] || 300);
const perReqOnly = process.argv[4] === 'perreq';
const bin = codemcpBin();
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-modern-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));
const env = { CODEMCP_CONFIG: cfg, XDG_CONFIG_HOME: dir };

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const CALL = 'result = everything_get_sum(a=1, b=2)';

function exec(p, code, modern) {
  return p.request('tools/call', { name: 'execute_python', arguments: { code }, ...(modern ? { _meta: META } : {}) });
}

// The SDK function appears once the upstream is connected: retry until the call succeeds.
async function firstCall(p, modern) {
  for (;;) {
    const r = await exec(p, CALL, modern);
    if (r.result && !r.result.isError) return r;
    if (!/NameError|not connected|connecting/.test(JSON.stringify(r))) throw new Error(JSON.stringify(r));
    await new Promise((res) => setTimeout(res, 5));
  }
}

const startArms = {
  '2025: initialize, then tools/call': async (p) => {
    await p.initialize();
    return firstCall(p, false);
  },
  '2026: tools/call with _meta': async (p) => firstCall(p, true),
  '2026: server/discover, then tools/call': async (p) => {
    await p.request('server/discover', { _meta: META });
    return firstCall(p, true);
  },
};

const startMs = Object.fromEntries(Object.keys(startArms).map((k) => [k, []]));
// The arms' order rotates round by round: the arm right after another one's gateway has
// closed starts on a busier machine (its processes still exiting), which biased a fixed order.
const rotated = (arms, r) => { const e = Object.entries(arms); return [...e.slice(r % e.length), ...e.slice(0, r % e.length)]; };
for (let r = 0; r < (perReqOnly ? 0 : starts); r++) {
  for (const [name, arm] of rotated(startArms, r)) {
    const p = new LinePeer([bin], env);
    await arm(p);
    startMs[name].push(p.elapsedMs());
    await p.close();
  }
}

// Per-request: one warm gateway per era; rounds of 20 requests alternate between them.
const perReq = { '2025 (session)': [], '2026 (_meta per request)': [] };
const ratios = [];
const legacy = perReqOnly ? null : new LinePeer([bin], env);
const modern = perReqOnly ? null : new LinePeer([bin], env);
if (!perReqOnly) {
  await legacy.initialize();
  await firstCall(legacy, false);
  await firstCall(modern, true);
}
for (let done = 0; done < (perReqOnly ? 0 : requests); done += 20) {
  const round = {};
  for (const [name, p, m] of [['2025 (session)', legacy, false], ['2026 (_meta per request)', modern, true]]) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 20; i++) await exec(p, 'result = 1', m);
    const us = Number(process.hrtime.bigint() - t0) / 1e3 / 20;
    perReq[name].push(us);
    round[name] = us;
  }
  ratios.push(round['2026 (_meta per request)'] / round['2025 (session)']);
}
await legacy?.close();
await modern?.close();

// ---- HTTP ---------------------------------------------------------------------------------
const httpEnv = { ...env, CODEMCP_HTTP_TOKEN: BENCH_TOKEN, CODEMCP_LOG: 'warn' };
const startHttp = () => startHttpGateway([bin, 'start', '-p', '0'], { ...process.env, ...httpEnv });
const stopHttp = (g) => new Promise((res) => { g.proc.removeAllListeners('exit'); g.proc.on('exit', res); g.proc.kill('SIGTERM'); });

const hpost = mcpPost;

const h26 = (method, name) => ({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) });
let hid = 1;
const call26 = (g, agent, code, extra = {}) => hpost(g, agent, { jsonrpc: '2.0', id: hid++, method: 'tools/call',
  params: { _meta: META, name: 'execute_python', arguments: { code, ...extra } } }, h26('tools/call', 'execute_python'));
const list26 = (g, agent) => hpost(g, agent, { jsonrpc: '2.0', id: hid++, method: 'tools/list', params: { _meta: META } }, h26('tools/list'));

async function session25(g, agent) {
  const r = await hpost(g, agent, { jsonrpc: '2.0', id: hid++, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }, {});
  const sh = { 'mcp-session-id': r.headers['mcp-session-id'], 'mcp-protocol-version': '2025-11-25' };
  await hpost(g, agent, { jsonrpc: '2.0', method: 'notifications/initialized' }, sh);
  return {
    call: (code) => hpost(g, agent, { jsonrpc: '2.0', id: hid++, method: 'tools/call', params: { name: 'execute_python', arguments: { code } } }, sh),
    list: () => hpost(g, agent, { jsonrpc: '2.0', id: hid++, method: 'tools/list' }, sh),
  };
}

async function httpFirst(callOnce) {
  for (;;) {
    const r = await callOnce();
    if (r.result && !r.result.isError) return r;
    if (!/NameError|not connected|connecting/.test(JSON.stringify(r))) throw new Error(JSON.stringify(r));
    await new Promise((res) => setTimeout(res, 5));
  }
}

const httpStartArms = {
  '2025: initialize, then tools/call': async (g, agent) => {
    const s = await session25(g, agent);
    return httpFirst(() => s.call(CALL));
  },
  '2026: tools/call with _meta and headers': (g, agent) => httpFirst(() => call26(g, agent, CALL)),
};
const httpStartMs = Object.fromEntries(Object.keys(httpStartArms).map((k) => [k, []]));
// A start whose request is never answered (a gateway stuck in lws, see the results' note) is
// counted, killed and left out of the samples, whichever arm it hit.
const httpHangs = Object.fromEntries(Object.keys(httpStartArms).map((k) => [k, 0]));
for (let r = 0; r < (perReqOnly ? 0 : starts); r++) {
  for (const [name, arm] of rotated(httpStartArms, r)) {
    const g = await startHttp();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      await arm(g, agent);
      httpStartMs[name].push(Number(process.hrtime.bigint() - g.t0) / 1e6);
      agent.destroy();
      await stopHttp(g);
    } catch (e) {
      httpHangs[name]++;
      console.error(`${name}: ${e.message}; gateway killed`);
      agent.destroy();
      g.proc.removeAllListeners('exit');
      g.proc.kill('SIGKILL');
    }
  }
}

// Per request over HTTP: one gateway, a keep-alive connection per era.
const hg = await startHttp();
if (perReqOnly) console.error(`gateway pid ${hg.proc.pid}`);
const agent25 = new http.Agent({ keepAlive: true, maxSockets: 1 });
const agent26 = new http.Agent({ keepAlive: true, maxSockets: 1 });
const s25 = await session25(hg, agent25);
await httpFirst(() => s25.call(CALL));
const handle = (await httpFirst(() => call26(hg, agent26, CALL))).result.structuredContent.namespace;
const httpKinds = {
  'tools/list': { '2025 (session)': () => s25.list(), '2026 (no session)': () => list26(hg, agent26) },
  'execute_python (empty program)': {
    '2025 (session)': () => s25.call('result = 1'),
    '2026 (no session)': () => call26(hg, agent26, 'result = 1', { namespace: handle }),
    '2026 (no session, no handle: a fresh namespace each time)': () => call26(hg, agent26, 'result = 1'),
  },
};
const NOHANDLE = '2026 (no session, no handle: a fresh namespace each time)';
const httpPer = {};
const httpCpu = {}; // the gateway process's own CPU per request (schedstat): robust to a busy machine
const httpRatios = {};
const cpuRatios = {};
for (const [kind, arms] of Object.entries(httpKinds)) {
  httpPer[kind] = Object.fromEntries(Object.keys(arms).map((k) => [k, []]));
  httpCpu[kind] = Object.fromEntries(Object.keys(arms).map((k) => [k, []]));
  httpRatios[kind] = [];
  cpuRatios[kind] = [];
  for (let done = 0; done < requests; done += 20) {
    const round = {};
    const cround = {};
    for (const [name, fn] of Object.entries(arms)) {
      const c0 = cpuNs(hg.proc.pid);
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < 20; i++) {
        const r = await fn();
        if (!r.result) throw new Error(`${kind} ${name}: ${JSON.stringify(r)}`);
      }
      const us = Number(process.hrtime.bigint() - t0) / 1e3 / 20;
      const cpu = (cpuNs(hg.proc.pid) - c0) / 1e3 / 20;
      httpPer[kind][name].push(us);
      httpCpu[kind][name].push(cpu);
      round[name] = us;
      cround[name] = cpu;
    }
    cpuRatios[kind].push(cround['2026 (no session)'] / cround['2025 (session)']);
    httpRatios[kind].push(round['2026 (no session)'] / round['2025 (session)']);
    if (round[NOHANDLE]) (httpRatios[`${kind}, no handle`] ||= []).push(round[NOHANDLE] / round['2025 (session)']);
  }
}
agent25.destroy();
agent26.destroy();
await stopHttp(hg);

const base = stats(startMs['2025: initialize, then tools/call']).median;
const hbase = stats(httpStartMs['2025: initialize, then tools/call']).median;
const lines = [
  '# bench/modern.mjs — the 2026-07-28 era vs the 2025 era (stdio and Streamable HTTP)',
  '',
  `Run: ${new Date().toISOString()}, ${starts} starts per arm, ${requests} warm requests per era, binary ${bin.replace(ROOT + '/', '')}.`,
  'Upstream: server-everything (stdio). Arms interleaved round by round, their order rotating.',
  '',
  '## First tools/call from process start (execute_python calling get-sum once)',
  '',
  '| arm | median ms | p99 ms | min | / 2025 |',
  '|---|---|---|---|---|',
  ...Object.entries(startMs).map(([k, v]) => {
    const s = stats(v);
    return `| ${k} | ${fmt(s.median)} | ${fmt(s.p99)} | ${fmt(s.min)} | ${fmt(s.median / base, 2)}× |`;
  }),
  '',
  '## Per request on a warm gateway (execute_python of an empty program, sequential)',
  '',
  '| era | median µs/request | p99 | min |',
  '|---|---|---|---|',
  ...Object.entries(perReq).map(([k, v]) => {
    const s = stats(v);
    return `| ${k} | ${fmt(s.median, 0)} | ${fmt(s.p99, 0)} | ${fmt(s.min, 0)} |`;
  }),
  '',
  `Paired per-round ratio 2026 / 2025: median ${fmt(stats(ratios).median, 3)}× (min ${fmt(stats(ratios).min, 3)}, max ${fmt(stats(ratios).max, 3)}), ${ratios.length} rounds.`,
  '',
  '## HTTP: first tools/call from process start (`codemcp start`, execute_python calling get-sum once)',
  '',
  '| arm | median ms | p99 ms | min | / 2025 |',
  '|---|---|---|---|---|',
  ...Object.entries(httpStartMs).map(([k, v]) => {
    const s = stats(v);
    return `| ${k} | ${fmt(s.median)} | ${fmt(s.p99)} | ${fmt(s.min)} | ${fmt(s.median / hbase, 2)}× |`;
  }),
  '',
  `Starts left out because a request got no answer in 30 s: ${Object.entries(httpHangs).map(([k, n]) => `${k}: ${n}`).join('; ')}.`,
  '',
  '## HTTP: per request on a warm gateway (sequential, one keep-alive connection per era)',
  '',
  '| request | era | median µs/request | p99 | min | gateway CPU µs/request (median) |',
  '|---|---|---|---|---|---|',
  ...Object.entries(httpPer).flatMap(([kind, arms]) => Object.entries(arms).map(([k, v]) => {
    const s = stats(v);
    return `| ${kind} | ${k} | ${fmt(s.median, 0)} | ${fmt(s.p99, 0)} | ${fmt(s.min, 0)} | ${fmt(stats(httpCpu[kind][k]).median, 0)} |`;
  })),
  '',
  ...Object.entries(cpuRatios).map(([kind, r]) =>
    `${kind}: gateway CPU per request, paired per-round ratio 2026 / 2025 median ${fmt(stats(r).median, 3)}× (min ${fmt(stats(r).min, 3)}, max ${fmt(stats(r).max, 3)}).`),
  ...Object.entries(httpRatios).map(([kind, r]) =>
    `${kind}: paired per-round ratio 2026 / 2025 median ${fmt(stats(r).median, 3)}× (min ${fmt(stats(r).min, 3)}, max ${fmt(stats(r).max, 3)}), ${r.length} rounds.`),
  '',
];
const out = lines.join('\n');
// Hand-written notes below NOTES in the results file (before/after runs, profiles) are kept.
const NOTES = '<!-- notes: kept by bench/modern.mjs -->';
const resFile = join(ROOT, 'bench', 'results', 'modern.md');
let notes = '';
try {
  const old = readFileSync(resFile, 'utf8');
  if (old.includes(NOTES)) notes = '\n' + old.slice(old.indexOf(NOTES));
} catch {}
if (!perReqOnly) writeFileSync(resFile, out + notes);
console.log(perReqOnly ? out.slice(out.indexOf('## HTTP: per request')) : out);
// perreq: one machine-readable line for bench/modern_ab.mjs
if (perReqOnly) {
  const med = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, stats(v).median]));
  console.log('JSON ' + JSON.stringify({
    cpu: Object.fromEntries(Object.entries(httpCpu).map(([k, v]) => [k, med(v)])),
    wall: Object.fromEntries(Object.entries(httpPer).map(([k, v]) => [k, med(v)])),
    cpuRatio: med(cpuRatios), wallRatio: med(httpRatios),
  }));
}
