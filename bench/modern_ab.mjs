// Before/after of bench/modern.mjs's HTTP per-request part: `base` (CODEMCP_BASE_BIN, e.g. a build of main) and `head` (CODEMCP_BIN, default
// build/src/codemcp) run `modern.mjs 0 <requests> perreq` alternately, `repeats` times each
// (the order rotating), each run its own gateway. Every run yields, per request kind, the
// gateway CPU per request of each era and the paired per-round ratios 2026 / 2025 (rounds of
// 20 requests interleaved on one gateway, so a slow phase of a shared machine hits both eras);
// this prints the median over runs of each, per binary, and head/base of the CPU per request.
// Usage: CODEMCP_BASE_BIN=/path/to/old/codemcp node bench/modern_ab.mjs [repeats=6] [requests=600]
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { ROOT, codemcpBin, fmt, stats } from './lib.mjs';

const REPEATS = Number(process.argv[2] || 6);
const REQUESTS = Number(process.argv[3] || 600);
const bins = { base: process.env.CODEMCP_BASE_BIN, head: codemcpBin() };
if (!bins.base) throw new Error('set CODEMCP_BASE_BIN to the binary to compare against');
const runs = { base: [], head: [] };
const load0 = loadavg()[0];
for (let r = 0; r < REPEATS; r++) {
  for (const arm of r % 2 ? ['head', 'base'] : ['base', 'head']) {
    const out = execFileSync(process.execPath, [join(ROOT, 'bench', 'modern.mjs'), '0', String(REQUESTS), 'perreq'],
      { env: { ...process.env, CODEMCP_BIN: bins[arm] }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    runs[arm].push(JSON.parse(out.split('\n').find((l) => l.startsWith('JSON ')).slice(5)));
  }
}
const med = (xs) => stats(xs).median;
const lines = [`modern_ab: ${REPEATS} runs per binary of ${REQUESTS} requests per arm; load average ${fmt(load0, 2)} → ${fmt(loadavg()[0], 2)}`,
  `base ${bins.base}`, `head ${bins.head}`, '',
  '| request | binary | 2025 CPU µs/req | 2026 CPU µs/req | CPU 2026/2025 (paired, median of runs; min–max of runs) | latency 2026/2025 (same) |',
  '|---|---|---|---|---|---|'];
for (const kind of Object.keys(runs.head[0].cpu)) {
  for (const arm of ['base', 'head']) {
    const rs = runs[arm];
    const c25 = med(rs.map((x) => x.cpu[kind]['2025 (session)']));
    const c26 = med(rs.map((x) => x.cpu[kind]['2026 (no session)']));
    const cr = rs.map((x) => x.cpuRatio[kind]);
    const wr = rs.map((x) => x.wallRatio[kind]);
    lines.push(`| ${kind} | ${arm} | ${fmt(c25, 0)} | ${fmt(c26, 0)} | ${fmt(med(cr), 3)}× (${fmt(Math.min(...cr), 3)}–${fmt(Math.max(...cr), 3)}) | ${fmt(med(wr), 3)}× (${fmt(Math.min(...wr), 3)}–${fmt(Math.max(...wr), 3)}) |`);
  }
}
lines.push('');
for (const kind of Object.keys(runs.head[0].cpu))
  for (const era of ['2025 (session)', '2026 (no session)']) {
    const b = med(runs.base.map((x) => x.cpu[kind][era])), h = med(runs.head.map((x) => x.cpu[kind][era]));
    lines.push(`${kind}, ${era}: gateway CPU per request head/base ${fmt(h / b, 3)}× (${fmt(b, 0)} → ${fmt(h, 0)} µs)`);
  }
console.log(lines.join('\n'));
