// Benchmark (issue 12): the 2026-07-28 era against the 2025 one, over stdio, side by side.
//   (1) first tools/call from process start: spawn codemcp (one upstream, server-everything),
//       then — 2025: initialize + notifications/initialized + tools/call; 2026: tools/call with
//       the `_meta` envelope straight away; 2026+discover: server/discover, then tools/call —
//       and time until the execute_python result (a program calling get-sum once) arrives;
//   (2) per-request cost on a warm gateway: N sequential execute_python requests of an empty
//       program, with and without the envelope, one process per era, interleaved in rounds.
// Target: the modern path no slower than the 2025 one (ratios ≤ ~1.0).
// Usage: node bench/modern.mjs [starts=15] [requests=300]   → bench/results/modern.md
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LinePeer, ROOT, SERVERS, codemcpBin, fmt, stats } from './lib.mjs';

const starts = Number(process.argv[2] || 15);
const requests = Number(process.argv[3] || 300);
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
for (let r = 0; r < starts; r++) {
  for (const [name, arm] of Object.entries(startArms)) {
    const p = new LinePeer([bin], env);
    await arm(p);
    startMs[name].push(p.elapsedMs());
    await p.close();
  }
}

// Per-request: one warm gateway per era; rounds of 20 requests alternate between them.
const legacy = new LinePeer([bin], env);
await legacy.initialize();
const modern = new LinePeer([bin], env);
await firstCall(legacy, false);
await firstCall(modern, true);
const perReq = { '2025 (session)': [], '2026 (_meta per request)': [] };
const ratios = [];
for (let done = 0; done < requests; done += 20) {
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
await legacy.close();
await modern.close();

const base = stats(startMs['2025: initialize, then tools/call']).median;
const lines = [
  '# bench/modern.mjs — the 2026-07-28 era vs the 2025 era (stdio)',
  '',
  `Run: ${new Date().toISOString()}, ${starts} starts per arm, ${requests} warm requests per era, binary ${bin.replace(ROOT + '/', '')}.`,
  'Upstream: server-everything (stdio). Arms interleaved round by round.',
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
];
const out = lines.join('\n');
writeFileSync(join(ROOT, 'bench', 'results', 'modern.md'), out);
console.log(out);
