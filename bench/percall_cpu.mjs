// Gateway CPU per execute, two builds side by side: codemcp (CODEMCP_BIN) and
// codemcp-before (CODEMCP_BIN_BEFORE), each with its own worker and server-everything, the
// workloads of bench/execute.mjs run back to back, alternating builds in short blocks so a
// busy phase of the shared machine hits both. CPU is the gateway process's own (schedstat of
// all its threads: ns, not 10 ms ticks), so other processes' load does not count in it, only
// in the cache and wake-up costs both builds share. Prints a markdown table.
// Usage: node bench/percall_cpu.mjs [blocks=10] [executes per block=20]
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LinePeer, SERVERS, codemcpBin, EXEC_PY, EXEC_N, untilSdkReady, cpuNs } from './lib.mjs';

const BLOCKS = Number(process.argv[2] || 10);
const PER = Number(process.argv[3] || 20);
const before = process.env.CODEMCP_BIN_BEFORE;
if (!before) throw new Error('CODEMCP_BIN_BEFORE must name the build to compare with');
const dir = mkdtempSync(join(tmpdir(), 'codemcp-percall-cpu-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));
const arms = { codemcp: codemcpBin(), 'codemcp-before': before };
const peers = {};
for (const [name, bin] of Object.entries(arms)) {
  const p = new LinePeer([bin, '--config', cfg], { CODEMCP_LOG_LEVEL: 'error' });
  await p.initialize();
  peers[name] = p;
}
const run = async (p, code) => {
  const r = await p.request('tools/call', { name: 'execute_python', arguments: { code } });
  if (r.error || r.result?.isError) throw new Error(JSON.stringify(r.error ?? r.result).slice(0, 300));
};
for (const p of Object.values(peers)) {
  await untilSdkReady(() => run(p, EXEC_PY.one));
  for (let i = 0; i < 5; i++) await run(p, EXEC_PY.seq50);
}
const work = { one: EXEC_PY.one, seq50: EXEC_PY.seq50, conc50: EXEC_PY.conc50, empty: 'result = 1' };
const ns = {}; // ns[w][arm]
for (let b = 0; b < BLOCKS; b++) {
  for (const [w, code] of Object.entries(work)) {
    const order = b % 2 ? Object.keys(peers).reverse() : Object.keys(peers);
    for (const a of order) {
      const p = peers[a];
      const c0 = cpuNs(p.proc.pid);
      for (let i = 0; i < PER; i++) await run(p, code);
      ((ns[w] ??= {})[a] ??= 0);
      ns[w][a] += cpuNs(p.proc.pid) - c0;
    }
  }
}
const n = BLOCKS * PER;
console.log(`Gateway CPU per execute, µs (${n} executes per cell, ${BLOCKS} alternating blocks)\n`);
console.log('| workload | codemcp-before | codemcp | codemcp / before | per call (50-call workloads), before → after |');
console.log('|---|---|---|---|---|');
for (const w of Object.keys(work)) {
  const bf = ns[w]['codemcp-before'] / n / 1000, af = ns[w].codemcp / n / 1000;
  const per = w.endsWith('50') ? `${(bf / EXEC_N).toFixed(1)} → ${(af / EXEC_N).toFixed(1)}` : '';
  console.log(`| ${w} | ${bf.toFixed(0)} | ${af.toFixed(0)} | ${(af / bf).toFixed(2)}× | ${per} |`);
}
for (const p of Object.values(peers)) await p.close();
process.exit(0);
