// Benchmark: time from spawn to the initialize reply and to a complete
// tools/list, for (a) codemcp with no upstreams, (b) codemcp in front of the three npm
// servers, side by side with each of those servers spawned alone. Also gateway RSS.
// Usage: node bench/startup.mjs [reps]   → bench/results/startup.md
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LinePeer, SERVERS, codemcpBin, rssKiB, stats, fmt, ROOT } from './lib.mjs';

const reps = Number(process.argv[2] || 7);
const bin = codemcpBin();
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-'));
const cfg3 = join(dir, 'mcp.json');
writeFileSync(cfg3, JSON.stringify({ mcp: Object.fromEntries(Object.entries(SERVERS).map(
  ([name, argv]) => [name, { type: 'local', command: argv,
    environment: { MEMORY_FILE_PATH: join(dir, 'memory.json') } }])) }));

async function measure(argv, env) {
  const p = new LinePeer(argv, env);
  await p.initialize();
  const init = p.elapsedMs();
  const list = await p.request('tools/list');
  const listed = p.elapsedMs();
  const rss = rssKiB(p.proc.pid);
  const tools = list.result?.tools?.length ?? 0;
  await p.close();
  return { init, listed, rss, tools };
}

// The three servers started at once by the benchmark itself, no codemcp: on 2 cores three
// Node start-ups compete for the CPU, so this is the floor for (b).
async function measureTogether(env) {
  const t0 = process.hrtime.bigint();
  const peers = Object.values(SERVERS).map((argv) => new LinePeer(argv, env));
  await Promise.all(peers.map((p) => p.initialize()));
  const init = Number(process.hrtime.bigint() - t0) / 1e6;
  await Promise.all(peers.map((p) => p.request('tools/list')));
  const listed = Number(process.hrtime.bigint() - t0) / 1e6;
  await Promise.all(peers.map((p) => p.close()));
  return { init, listed, rss: null, tools: 0 };
}

const variants = {
  'codemcp, no upstreams': () => measure([bin], { CODEMCP_CONFIG: join(dir, 'none.json') }),
  'codemcp, 3 npm upstreams': () => measure([bin], { CODEMCP_CONFIG: cfg3 }),
  ...Object.fromEntries(Object.entries(SERVERS).map(([n, argv]) =>
    [`${n} alone`, () => measure(argv, { MEMORY_FILE_PATH: join(dir, 'memory.json') })])),
  '3 npm servers started together (no codemcp)': () =>
    measureTogether({ MEMORY_FILE_PATH: join(dir, 'memory.json') }),
};
const results = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
for (let r = 0; r < reps; r++)
  for (const [name, run] of Object.entries(variants)) results[name].push(await run());

const rows = [];
const med = {};
for (const [name, rs] of Object.entries(results)) {
  const i = stats(rs.map((x) => x.init)), l = stats(rs.map((x) => x.listed));
  const rss = stats(rs.map((x) => x.rss ?? 0));
  med[name] = { init: i.median, listed: l.median, rss: rss.median };
  rows.push(`| ${name} | ${fmt(i.median)} | ${fmt(l.median)} | ${fmt(l.p99)} | ${rs[0].rss === null ? 'n/a' : fmt(rss.median / 1024)} |`);
}
const singles = Object.keys(SERVERS).map((n) => med[`${n} alone`].listed);
const slowest = Math.max(...singles);
const ratio = med['codemcp, 3 npm upstreams'].listed / slowest;
const report = `# Start-up benchmark

${new Date().toISOString()} — ${reps} rounds, variants interleaved in each round; medians in ms
from spawn. RSS of the measured process (the gateway itself, not its children) after
tools/list answered.

| variant | initialize reply | tools/list complete | tools/list p99 | RSS MB |
|---|---|---|---|---|
${rows.join('\n')}

- (a) codemcp with no upstreams: tools/list complete in ${fmt(med['codemcp, no upstreams'].listed)} ms (target < 20 ms).
- (b) codemcp with 3 upstreams vs the slowest single upstream's own start (${fmt(slowest)} ms):
  **${fmt(ratio, 2)}×** (target ≤ 1.2×).
- (b) against the same three servers started together without codemcp
  (${fmt(med['3 npm servers started together (no codemcp)'].listed)} ms): **${fmt(med['codemcp, 3 npm upstreams'].listed / med['3 npm servers started together (no codemcp)'].listed, 2)}×**
  — what codemcp itself adds.
- gateway RSS: ${fmt(med['codemcp, 3 npm upstreams'].rss / 1024)} MB with 3 upstreams (target < 15 MB).
`;
writeFileSync(join(ROOT, 'bench', 'results', 'startup.md'), report);
console.log(report);
