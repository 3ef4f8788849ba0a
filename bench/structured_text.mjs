// Benchmark: a structured result against the same records as a JSON text, paired in one
// gateway. bench/bigresult.mjs measures each kind in its own phase with a fresh gateway (for
// its peak memory), so the two kinds meet different moments of a shared machine; here every
// round runs one of each back to back, in alternating order, in one session of one gateway,
// against bench/bigresult_upstream.py (records(n): the records as one text block;
// records_structured(n): the same records as structuredContent).
// Per call: the client's round trip of an execute_python whose program forces the result
// (`len(...)`), the time the program itself measured around the call, and the gateway's CPU.
// Usage: node bench/structured_text.mjs [sizeMB=10] [rounds=40]
//        → bench/results/structured_text.md (BENCH_OUT=<name> for another name)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { LinePeer, ROOT, buildType, codemcpBin, cpuNs, fmt, stats, untilSdkReady } from './lib.mjs';

const MB = Number(process.argv[2] || 10);
const ROUNDS = Number(process.argv[3] || 40);
const REC_BYTES = 1028; // the upstream's mean record size (bigresult.mjs)
const n = Math.round((MB * 1e6) / REC_BYTES);
const bin = codemcpBin();
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-st-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { big: { type: 'local',
  command: ['/usr/bin/python3', join(ROOT, 'bench', 'bigresult_upstream.py'), String(n)] } } }));
const peer = new LinePeer([bin], { CODEMCP_CONFIG: cfg });
await peer.initialize();
const run = async (code) => {
  const r = (await peer.request('tools/call', { name: 'execute_python', arguments: { code } })).result;
  if (!r || r.isError) throw new Error(JSON.stringify(r).slice(0, 500));
  return r.structuredContent.result;
};
await untilSdkReady(() => run('result = len(big_records(n=1))')); // its tools, once it is up
const EXPR = { text: `len(big_records(n=${n}))`, structured: `len(big_records_structured(n=${n})["records"])` };
const program = (kind) => `import time\nt = time.perf_counter()\nv = ${EXPR[kind]}\n` +
  'result = [v, (time.perf_counter() - t) * 1000]';
const t = { text: [], structured: [] }, inner = { text: [], structured: [] }, gw = { text: [], structured: [] };
async function once(kind, rec) {
  const c0 = cpuNs(peer.proc.pid), t0 = performance.now();
  const [len, ms] = await run(program(kind));
  const wall = performance.now() - t0, cpu = (cpuNs(peer.proc.pid) - c0) / 1e6;
  if (len !== n) throw new Error(`${kind}: ${len} records, want ${n}`);
  if (rec) { t[kind].push(wall); inner[kind].push(ms); gw[kind].push(cpu); }
}
for (const k of ['text', 'structured', 'text', 'structured']) await once(k, false); // warm
for (let r = 0; r < ROUNDS; r++)
  for (const k of r % 2 ? ['structured', 'text'] : ['text', 'structured']) await once(k, true);
await peer.close();
rmSync(dir, { recursive: true, force: true });

const paired = (a, b) => stats(a.map((x, i) => x / b[i])).median;
const row = (k) => `| ${k} | ${fmt(stats(t[k]).median, 1)} | ${fmt(stats(t[k]).p90, 1)} | ${fmt(stats(inner[k]).median, 1)} | ${fmt(stats(gw[k]).median, 1)} |`;
const md = `# Structured results against text, paired (bench/structured_text.mjs)

${new Date().toISOString()} — ${ROUNDS} rounds, each one call of each kind back to back (order
alternating), one gateway and session; ${n} records (~${MB} MB); ${cpus().length} × ${cpus()[0]?.model?.trim()},
Node ${process.version}; codemcp ${bin} (${buildType(bin)}).

| kind | client round trip, median ms | p90 ms | the program's own time around the call, median ms | gateway CPU per call, median ms |
|---|---|---|---|---|
${row('text')}
${row('structured')}

structured ÷ text, paired per round (median): round trip **${fmt(paired(t.structured, t.text), 3)}×**, the
program's time ${fmt(paired(inner.structured, inner.text), 3)}×, gateway CPU ${fmt(paired(gw.structured, gw.text), 3)}×.
`;
const out = join(ROOT, 'bench', 'results', `${process.env.BENCH_OUT || 'structured_text'}.md`);
writeFileSync(out, md);
console.log(md);
