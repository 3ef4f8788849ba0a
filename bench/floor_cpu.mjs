// Worker CPU per execute, split into user and system time (/proc/<pid>/stat, clock ticks
// summed over many executes: 10 ms ticks, so 4000 executes resolve 2.5 µs), for the
// three worker arms of floor.mjs: floor-worker, floor-pyworker, codemcp-worker. One arm at a
// time, the same 2 ms gap between executes as floor.mjs, then back to back (no gap).
// Usage: node bench/floor_cpu.mjs [executes=4000]   (prints a markdown table; not a results file)
// CODEMCP_BIN_BEFORE=<another build's codemcp>: codemcp-worker of that build ("codemcp-before")
// and of this one, alternated FLOOR_CPU_ROUNDS times (default 2), after floor-pyworker; the
// floor-worker arm is left out then. Each arm is a fresh gateway.
import { writeFileSync, readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { LinePeer, SERVERS, EXEC_PY, codemcpBin, childPids, comm, untilSdkReady, workerPids, fmt } from './lib.mjs';

const RUNS = Number(process.argv[2] || 4000);
const bin = codemcpBin();
const FLOOR_DIR = process.env.FLOOR_DIR || join(dirname(bin), '..', 'bench', 'floor');
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-floorcpu-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));
// FLOOR_CPU_WORKLOADS=empty,one,conc50 picks bench/lib.mjs's EXEC_PY programs (default: empty,one).
const WORKLOADS = (process.env.FLOOR_CPU_WORKLOADS || 'empty,one').split(',');
const PY = Object.fromEntries(['one', ...WORKLOADS].map((w) => [w, EXEC_PY[w]]));
const TICK_US = 1e6 / 100; // USER_HZ
const stat = (pid) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { user: Number(f[11]), sys: Number(f[12]) }; };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ok = (r) => { if (r.error || r.result?.isError) throw new Error(JSON.stringify(r)); return r.result; };

const arms = [
  ['floor-worker', { argv: [join(FLOOR_DIR, 'floor-gateway'), join(FLOOR_DIR, 'floor-worker'), ...SERVERS.everything] }],
  ['floor-pyworker', { argv: [join(FLOOR_DIR, 'floor-gateway'), join(FLOOR_DIR, 'floor-pyworker'), ...SERVERS.everything],
    env: Object.fromEntries(Object.entries(PY).map(([w, c]) => [`FLOOR_PY_${w}`, c])), comm: 'floor-pyworker' }],
  ['codemcp-worker', { argv: [bin], env: { CODEMCP_CONFIG: cfg }, codemcp: true }],
];
const before = process.env.CODEMCP_BIN_BEFORE;
if (before) {
  arms.splice(0, 3, arms[1]);
  for (let r = 0; r < Number(process.env.FLOOR_CPU_ROUNDS || 2); r++) {
    arms.push(['codemcp-before', { argv: [before], env: { CODEMCP_CONFIG: cfg }, codemcp: true }]);
    arms.push(['codemcp-worker', { argv: [bin], env: { CODEMCP_CONFIG: cfg }, codemcp: true }]);
  }
}
const rows = [];
for (const [name, a] of arms) {
  const peer = new LinePeer(a.argv, a.env);
  ok(await peer.initialize());
  const run = a.codemcp
    ? async (w) => ok(await peer.request('tools/call', { name: 'execute_python', arguments: { code: PY[w] } }))
    : async (w) => ok(await peer.request('tools/call', { name: 'run', arguments: { workload: w } }));
  if (a.codemcp) await untilSdkReady(() => run('one'));
  const pids = a.codemcp ? workerPids(peer.proc.pid) : childPids(peer.proc.pid).filter((p) => comm(p) === (a.comm || name));
  for (let i = 0; i < 50; i++) await run('one');
  for (const w of WORKLOADS) for (const gap of [2, 0]) {
    const s0 = pids.map(stat);
    for (let i = 0; i < RUNS; i++) { await run(w); if (gap) await sleep(gap); }
    const s1 = pids.map(stat);
    const d = (k) => s1.reduce((t, s, i) => t + s[k] - s0[i][k], 0) * TICK_US / RUNS;
    rows.push(`| ${name} | ${w} | ${gap ? `${gap} ms` : 'none'} | ${fmt(d('user'), 0)} | ${fmt(d('sys'), 0)} |`);
  }
  await peer.close();
}
console.log(`${RUNS} executes per row, one arm at a time (worker: /proc/<pid>/stat utime, stime)\n`);
console.log('| worker | program | gap | user µs / execute | sys µs / execute |\n|---|---|---|---|---|');
console.log(rows.join('\n'));
