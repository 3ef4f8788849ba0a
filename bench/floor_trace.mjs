// Per-execute kernel evidence: runs one arm (codemcp, floor-python's
// floor-gateway + floor-pyworker, or floor's floor-worker) with the floor's 2 ms gap between
// executes and, during the measured executes, a command of yours with {gw} and {wk} replaced
// by the gateway's and the worker's pids ({up}: the upstream's, {cl}: this client's) (perf
// record / perf stat / perf trace / strace).
// Prints the CPU per execute of both processes (schedstat). Not a results file.
// Usage: node bench/floor_trace.mjs codemcp|floorpy|floor empty|one|seq50|conc50 [executes=2000] [gap ms=2] ['cmd']
// e.g. node bench/floor_trace.mjs codemcp empty 2000 2 \
//   'exec perf record -q -e raw_syscalls:sys_enter,raw_syscalls:sys_exit,sched:sched_switch,sched:sched_wakeup -p {gw},{wk} -o /tmp/c.data'
// then python3 bench/floor_trace.py /tmp/c.data GW WK  (phases of the critical path, hops by CPU
// placement, syscall durations); with -p {gw},{wk},{up},{cl}, python3 bench/floor_timeline.py
// /tmp/c.data GW WK UP CL (an execute's milestones in all four processes, and where the worker
// ran against whether the client was still runnable). CODEMCP_BIN / FLOOR_DIR choose the builds.
import { writeFileSync, mkdtempSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { LinePeer, SERVERS, EXEC_PY, codemcpBin, childPids, comm, untilSdkReady, workerPids, cpuNs } from './lib.mjs';

const [arm = 'codemcp', w = 'empty', N = '2000', GAP = '2', cmd = ''] = process.argv.slice(2);
const bin = codemcpBin();
const FLOOR = process.env.FLOOR_DIR || join(dirname(bin), '..', 'bench', 'floor');
const dir = mkdtempSync(join(tmpdir(), 'codemcp-floor-trace-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));
const PY = EXEC_PY; // one, seq50, conc50, empty
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ok = (r) => { if (r.error || r.result?.isError) throw new Error(JSON.stringify(r)); return r.result; };
let peer, run, gw, wk;
if (arm === 'codemcp') {
  peer = new LinePeer([bin], { CODEMCP_CONFIG: cfg });
  ok(await peer.initialize());
  run = async (x) => ok(await peer.request('tools/call', { name: 'execute_python', arguments: { code: PY[x] } }));
  await untilSdkReady(() => run('one'));
  gw = peer.proc.pid;
  wk = workerPids(gw).at(-1); // the innermost: the session's worker (above it: waiters, prototype)
} else {
  const wname = arm === 'floorpy' ? 'floor-pyworker' : 'floor-worker';
  peer = new LinePeer([join(FLOOR, 'floor-gateway'), join(FLOOR, wname), ...SERVERS.everything],
    Object.fromEntries(Object.entries(PY).map(([k, c]) => [`FLOOR_PY_${k}`, c])));
  ok(await peer.initialize());
  run = async (x) => ok(await peer.request('tools/call', { name: 'run', arguments: { workload: x } }));
  gw = peer.proc.pid;
  wk = childPids(gw).filter((p) => comm(p) === wname)[0];
}
for (let i = 0; i < 200; i++) await run(w);
let prof;
const up = childPids(gw).filter((p) => comm(p) === 'node')[0]; // the upstream server-everything
if (cmd) {
  prof = spawn('sh', ['-c', cmd.replaceAll('{gw}', gw).replaceAll('{wk}', wk).replaceAll('{up}', up)
    .replaceAll('{cl}', process.pid)], { stdio: 'inherit' });
  prof.done = new Promise((r) => prof.on('exit', r));
  await sleep(500);
}
const g0 = cpuNs(gw), w0 = cpuNs(wk), n = Number(N);
for (let i = 0; i < n; i++) { await run(w); if (+GAP) await sleep(+GAP); }
const g1 = cpuNs(gw), w1 = cpuNs(wk);
if (prof) { prof.kill('SIGINT'); await prof.done; }
console.log(`${arm} ${w}, gap ${GAP} ms: gateway ${((g1 - g0) / n / 1000).toFixed(1)} µs, ` +
  `worker ${((w1 - w0) / n / 1000).toFixed(1)} µs CPU per execute (gateway pid ${gw}, worker pid ${wk}, ` +
  `upstream pid ${up}, client pid ${process.pid})`);
await peer.close();
process.exit(0);
