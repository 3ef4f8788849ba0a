// Gateway CPU per execute for one workload, in floor.mjs's
// conditions: each round runs the workload once per arm, arm order rotated, so every execute
// starts on caches the other arms have cooled (back-to-back blocks, as percall_cpu.mjs runs
// them, hide that). Arms: codemcp (CODEMCP_BIN), codemcp-before (CODEMCP_BIN_BEFORE, if set),
// and floor-python (floor-gateway + floor-pyworker running the same Python program; the floor
// relays are found as floor.mjs finds them). Per arm and execute: the gateway process's CPU
// (schedstat, ns), its worker's CPU (codemcp-worker, or floor-pyworker), its context switches
// (voluntary + involuntary, /proc/<pid>/status) and, with BENCH_SYSCALLS=1, its syscalls
// (/proc/<pid>/io syscr + syscw: reads and writes only; polls are not counted there). Prints a
// markdown table: means per execute and ratios to codemcp-before.
// Usage: node bench/conc50_cpu.mjs [rounds=300] [workload=conc50]
import { writeFileSync, readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { LinePeer, SERVERS, codemcpBin, EXEC_PY, EXEC_EXPECT, FLOOR_EXPECT, untilSdkReady, cpuNs, cpuNsAll, fmt, workerPids,
  childPids, comm } from './lib.mjs';

const ROUNDS = Number(process.argv[2] || 300);
const W = process.argv[3] || 'conc50';
const bin = codemcpBin();
const FLOOR_DIR = process.env.FLOOR_DIR || join(dirname(bin), '..', 'bench', 'floor');
const dir = mkdtempSync(join(tmpdir(), 'codemcp-conc50-cpu-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));
const switches = (pid) => {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(s.match(/\nvoluntary_ctxt_switches:\s+(\d+)/)[1]) +
    Number(s.match(/\nnonvoluntary_ctxt_switches:\s+(\d+)/)[1]);
};
const rw = (pid) => {
  const s = readFileSync(`/proc/${pid}/io`, 'utf8');
  return Number(s.match(/syscr: (\d+)/)[1]) + Number(s.match(/syscw: (\d+)/)[1]);
};
const arms = [['codemcp', { argv: [bin, '--config', cfg], env: { CODEMCP_LOG_LEVEL: 'error' }, codemcp: true }]];
if (process.env.CODEMCP_BIN_BEFORE)
  arms.push(['codemcp-before', { argv: [process.env.CODEMCP_BIN_BEFORE, '--config', cfg],
    env: { CODEMCP_LOG_LEVEL: 'error' }, codemcp: true }]);
if (process.env.BENCH_FLOOR !== '0')
  arms.push(['floor-python', { argv: [join(FLOOR_DIR, 'floor-gateway'), join(FLOOR_DIR, 'floor-pyworker'),
    ...SERVERS.everything], env: { [`FLOOR_PY_${W}`]: EXEC_PY[W], FLOOR_PY_one: EXEC_PY.one } }]);
const peers = [];
for (const [name, a] of arms) {
  const p = new LinePeer(a.argv, a.env);
  await p.initialize();
  const run = a.codemcp
    ? (w) => p.request('tools/call', { name: 'execute_python', arguments: { code: EXEC_PY[w] } })
    : (w) => p.request('tools/call', { name: 'run', arguments: { workload: w } });
  const check = async (w) => {
    const r = await run(w);
    if (r.error || r.result?.isError) throw new Error(`${name}: ${JSON.stringify(r).slice(0, 300)}`);
    const got = r.result.structuredContent?.result;
    const want = (a.codemcp ? EXEC_EXPECT : FLOOR_EXPECT)[w];
    if (got !== undefined && String(got) !== String(want)) throw new Error(`${name}: ${got}`);
  };
  if (a.codemcp) await untilSdkReady(() => check('one'));
  for (let i = 0; i < 20; i++) await check(W);
  // the worker's pids, read again each round (a sandboxed worker is a grandchild; one that was
  // replaced counts from its first round)
  const workers = a.codemcp ? () => workerPids(p.proc.pid) : () => childPids(p.proc.pid).filter((c) => comm(c) === 'floor-pyworker');
  peers.push({ name, p, check, workers, cpu: 0, wcpu: 0, sw: 0, io: 0 });
}
const io = process.env.BENCH_SYSCALLS === '1';
for (let r = 0; r < ROUNDS; r++) {
  for (let k = 0; k < peers.length; k++) {
    const a = peers[(r + k) % peers.length];
    const pid = a.p.proc.pid;
    const wk = a.workers();
    const c0 = cpuNs(pid), w0 = cpuNsAll(wk), s0 = switches(pid), i0 = io ? rw(pid) : 0;
    await a.check(W);
    a.cpu += cpuNs(pid) - c0;
    a.wcpu += cpuNsAll(wk) - w0;
    a.sw += switches(pid) - s0;
    if (io) a.io += rw(pid) - i0;
    await new Promise((res) => setTimeout(res, 2)); // floor.mjs's gap between executes
  }
}
const base = peers.find((a) => a.name === 'codemcp-before') || peers[0];
console.log(`Gateway and worker per execute of ${W}, ${ROUNDS} rounds (one execute per arm per round, rotated)\n`);
console.log(`| arm | CPU µs | context switches |${io ? ' read+write syscalls |' : ''} CPU / ${base.name} |` +
  ` worker CPU µs | worker CPU / ${base.name} |`);
console.log(`|---|---|---|${io ? '---|' : ''}---|---|---|`);
for (const a of peers)
  console.log(`| ${a.name} | ${fmt(a.cpu / ROUNDS / 1000, 0)} | ${fmt(a.sw / ROUNDS, 1)} |` +
    `${io ? ` ${fmt(a.io / ROUNDS, 1)} |` : ''} ${fmt(a.cpu / base.cpu, 2)}× |` +
    ` ${fmt(a.wcpu / ROUNDS / 1000, 0)} | ${fmt(a.wcpu / base.wcpu, 2)}× |`);
for (const a of peers) await a.p.close();
process.exit(0);
