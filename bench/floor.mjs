// Benchmark: the floor of codemcp's process topology. How fast can ANY
// implementation of client → gateway → worker → gateway → upstream (and back) be on this
// machine? Three arms, side by side in one run with interleaved rounds, all driven by the same
// client (LinePeer: newline-delimited JSON-RPC over stdio, so the client's cost is identical):
//   direct  — LinePeer → server-everything: get-sum itself (1 call; 50 sequential; 50
//             concurrent); `ping` stands in for the empty program (one bare round trip);
//   floor   — LinePeer → floor-gateway → floor-worker → floor-gateway → server-everything
//             (bench/floor/: C relays with no product work; a tools/call `run {workload}`);
//   floor-pinned — the same with the gateway and its worker pinned to one CPU (FLOOR_PIN_CPU):
//             placement is the one lever left once the work is gone;
//   floor-setsid — floor with its worker in a kernel session of its own (FLOOR_SETSID=1), as
//             every codemcp session's processes are: what that requirement alone costs (where
//             scheduler autogroups are on, a new session is also a task group of its own);
//   floor-python — floor with floor-pyworker: the worker embeds CPython and runs the same
//             Python programs as codemcp (cache-compiled, exec'd in a session dict; each SDK
//             call a C function that sends the call frame and returns a Pending whose str()
//             blocks for the reply): what Python alone costs over the hops;
//   codemcp — LinePeer → codemcp → codemcp-worker → … running the Python programs of
//             bench/execute.mjs (and `result = 1` for the empty program).
// Plus floor-hop: one one-way hop between two processes (pipe / socketpair ping-pong).
// Every answer is checked (3 for one, 1275 for seq50/conc50, 1 for empty). CPU per execute of
// every process from /proc/<pid>/task/*/schedstat; load average and the rest of the machine's
// CPU during the run (the VM is shared), so a disturbed run can be seen and re-run.
// Usage: node bench/floor.mjs [quiet_rounds=200]   → bench/results/floor.md
// (BENCH_MAX_SECONDS=900 caps the measured phase, BENCH_HOP_TRIPS=20000 sizes floor-hop)
// CODEMCP_BIN picks codemcp (its build dir also holds bench/floor/*; FLOOR_DIR overrides).
// CODEMCP_BIN_BEFORE adds a fifth arm, codemcp-before (e.g. a build of main), run in the same rounds:
// the report then has before/after ratios from one run.
// FLOOR_POLL_WAIT=1 makes floor-worker and floor-pyworker wait in poll() before each read
// instead of blocking in the read (bench/floor/lineio.h says why; results/percall.md, seventh
// pass, has what it changes).
import { writeFileSync, readFileSync, existsSync, mkdtempSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { LinePeer, SERVERS, codemcpBin, childPids, comm, fmt, ROOT, cpuNs, untilSdkReady, workerPids,
  cpuNsAll, buildType, EXEC_N, FLOOR_EXPECT, schedNote } from './lib.mjs';

const ROUNDS = Number(process.argv[2] || 200);
const WARMUP = 10;
const HOP_TRIPS = Number(process.env.BENCH_HOP_TRIPS || 20000);
const GAP_MS = 2;
const PIN_CPU = 0;
const bin = codemcpBin();
const FLOOR_DIR = process.env.FLOOR_DIR || join(dirname(bin), '..', 'bench', 'floor');
const FLOOR = { gateway: join(FLOOR_DIR, 'floor-gateway'), worker: join(FLOOR_DIR, 'floor-worker'),
  pyworker: join(FLOOR_DIR, 'floor-pyworker'), hop: join(FLOOR_DIR, 'floor-hop') };
for (const f of Object.values(FLOOR))
  if (!existsSync(f)) throw new Error(`${f} missing: build with ninja (or set FLOOR_DIR)`);

const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-floor-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));

// ---- the machine, before anything starts ----
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
// Busy and total CPU time of the whole machine (ns), from /proc/stat's aggregate line.
function machineNs() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
  const tick = 1e9 / 100; // USER_HZ
  const idle = f[3] + f[4];
  return { busy: (f.reduce((a, b) => a + b, 0) - idle) * tick, total: f.reduce((a, b) => a + b, 0) * tick };
}
const loadBefore = loadavg();
const hop = execFileSync(FLOOR.hop, [String(HOP_TRIPS)], { encoding: 'utf8' }).trim().split('\n')
  .map((l) => JSON.parse(l));

// ---- the three arms ----
const N = EXEC_N;
const EXPECT = FLOOR_EXPECT;
const num = (text) => Number(String(text).split(' ').pop().replace('.', ''));
const PY_N = 'def n(r): return int(str(r).rsplit(" ", 1)[1].rstrip("."))\n';
const PY = { // bench/execute.mjs's programs
  one: 'result = everything_get_sum(a=1, b=2)',
  seq50: `${PY_N}s = 0\nfor i in range(${N}):\n    s += n(everything_get_sum(a=i, b=1))\nresult = s`,
  conc50: `${PY_N}ps = [everything_get_sum(a=i, b=1) for i in range(${N})]\nresult = sum(n(p) for p in ps)`,
  empty: 'result = 1',
};

function toolResult(arm, r) {
  if (r.error || r.result?.isError) throw new Error(`${arm}: ${JSON.stringify(r.error ?? r.result)}`);
  return r.result;
}
async function start(arm, argv, env) {
  const peer = new LinePeer(argv, env);
  const init = await peer.initialize();
  if (!init.result) throw new Error(`${arm}: initialize failed: ${JSON.stringify(init)}`);
  return peer;
}
const peers = {
  direct: await start('direct', SERVERS.everything),
  floor: await start('floor', [FLOOR.gateway, FLOOR.worker, ...SERVERS.everything]),
  'floor-pinned': await start('floor-pinned', [FLOOR.gateway, FLOOR.worker, ...SERVERS.everything],
    { FLOOR_PIN_CPU: String(PIN_CPU) }),
  'floor-setsid': await start('floor-setsid', [FLOOR.gateway, FLOOR.worker, ...SERVERS.everything],
    { FLOOR_SETSID: '1' }),
  // floor-pyworker reads each workload's program from FLOOR_PY_<workload> (the gateway passes
  // its environment on): the very texts codemcp runs.
  'floor-python': await start('floor-python', [FLOOR.gateway, FLOOR.pyworker, ...SERVERS.everything],
    Object.fromEntries(Object.entries(PY).map(([w, code]) => [`FLOOR_PY_${w}`, code]))),
  codemcp: await start('codemcp', [bin], { CODEMCP_CONFIG: cfg }),
};
const BEFORE = process.env.CODEMCP_BIN_BEFORE;
if (BEFORE) peers['codemcp-before'] = await start('codemcp-before', [BEFORE], { CODEMCP_CONFIG: cfg });
const CODEMCPS = BEFORE ? ['codemcp', 'codemcp-before'] : ['codemcp'];
function makeDirect(p) {
  const sum = async (a, b) => num(toolResult('direct', await p.request('tools/call',
    { name: 'get-sum', arguments: { a, b } })).content[0].text);
  return {
    one: () => sum(1, 2),
    seq50: async () => { let s = 0; for (let i = 0; i < N; i++) s += await sum(i, 1); return s; },
    conc50: async () => (await Promise.all(Array.from({ length: N }, (_, i) => sum(i, 1))))
      .reduce((s, x) => s + x, 0),
    empty: async () => (toolResult('direct', await p.request('ping')) ? 1 : 0),
  };
}
function makeFloor(p, arm) {
  const run = async (workload) => toolResult(arm, await p.request('tools/call',
    { name: 'run', arguments: { workload } })).structuredContent.result;
  return Object.fromEntries(Object.keys(EXPECT).map((w) => [w, () => run(w)]));
}
function makeCodemcp(p, arm = 'codemcp') {
  const run = async (code) => toolResult(arm, await p.request('tools/call',
    { name: 'execute_python', arguments: { code } })).structuredContent.result;
  return Object.fromEntries(Object.entries(PY).map(([w, code]) =>
    [w, w === 'one' ? async () => num(await run(code)) : () => run(code)]));
}
const arms = { direct: makeDirect(peers.direct), floor: makeFloor(peers.floor, 'floor'),
  'floor-pinned': makeFloor(peers['floor-pinned'], 'floor-pinned'),
  'floor-setsid': makeFloor(peers['floor-setsid'], 'floor-setsid'),
  'floor-python': makeFloor(peers['floor-python'], 'floor-python'), codemcp: makeCodemcp(peers.codemcp) };
if (BEFORE) arms['codemcp-before'] = makeCodemcp(peers['codemcp-before'], 'codemcp-before');
const ARMS = Object.keys(arms);
const WORKLOADS = Object.keys(EXPECT);

for (const a of CODEMCPS) await untilSdkReady(() => arms[a].one());

const pidOf = (arm) => peers[arm].proc.pid;
const childNamed = (pid, name) => childPids(pid).find((p) => comm(p) === name);
const childNot = (pid, name) => childPids(pid).find((p) => comm(p) !== name);
const kids = (arm, worker) => [childNamed(pidOf(arm), worker), childNot(pidOf(arm), worker)];
const [fw, fu] = kids('floor', 'floor-worker'), [pw, pu] = kids('floor-pinned', 'floor-worker');
const [yw, yu] = kids('floor-python', 'floor-pyworker'), [sw, su] = kids('floor-setsid', 'floor-worker');
// codemcp's sandboxed worker is a grandchild (waiter -> worker): sum every codemcp-worker
// below the gateway; its upstream is the node child (other children: the sandbox's waiter,
// the process-group guard).
const cws = {}, cu = {};
for (const a of CODEMCPS) {
  cws[a] = workerPids(pidOf(a));
  cu[a] = childPids(pidOf(a)).find((p) => comm(p) === 'node');
}
if (![fw, fu, pw, pu, yw, yu, sw, su, ...CODEMCPS.flatMap((a) => [cws[a][0], cu[a]])].every(Boolean))
  throw new Error(`process tree not as expected: ${[fw, fu, pw, pu, JSON.stringify(cws), JSON.stringify(cu)]}`);
// The client's own CPU is taken with process.cpuUsage() around the call alone (its window
// must not include this accounting's reads of /proc).
const PROBES = {
  direct: { upstream: () => cpuNs(pidOf('direct')) },
  floor: { 'floor-gateway': () => cpuNs(pidOf('floor')), 'floor-worker': () => cpuNs(fw),
    upstream: () => cpuNs(fu) },
  'floor-pinned': { 'floor-gateway': () => cpuNs(pidOf('floor-pinned')), 'floor-worker': () => cpuNs(pw),
    upstream: () => cpuNs(pu) },
  'floor-setsid': { 'floor-gateway': () => cpuNs(pidOf('floor-setsid')), 'floor-worker': () => cpuNs(sw),
    upstream: () => cpuNs(su) },
  'floor-python': { 'floor-gateway': () => cpuNs(pidOf('floor-python')), 'floor-pyworker': () => cpuNs(yw),
    upstream: () => cpuNs(yu) },
};
for (const a of CODEMCPS)
  PROBES[a] = { gateway: () => cpuNs(pidOf(a)), 'codemcp-worker (all threads)': () => cpuNsAll(cws[a]),
    upstream: () => cpuNs(cu[a]) };
const CLIENT = 'client (this Node process, all threads)';
const ourPids = () => [process.pid, ...ARMS.map(pidOf), fw, fu, pw, pu, yw, yu, sw, su, ...CODEMCPS.flatMap((a) => [...cws[a], cu[a]])];
const cpu = {}; // cpu[w][arm][probe] = total ns over the measured rounds
const snapCpu = (arm) => Object.fromEntries(Object.entries(PROBES[arm]).map(([k, f]) => [k, f()]));

async function timed(arm, w, rec) {
  const before = rec ? snapCpu(arm) : null;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const v = await arms[arm][w]();
  const ms = performance.now() - t0;
  const c1 = process.cpuUsage(c0);
  if (v !== EXPECT[w]) throw new Error(`${arm}/${w}: got ${JSON.stringify(v)}, want ${EXPECT[w]}`);
  // A short idle gap: each execute's tail work (reply written, then GC, timers) lands in its own
  // CPU window and does not compete with the next arm's timed call.
  await new Promise((r) => setTimeout(r, GAP_MS));
  if (rec) {
    const after = snapCpu(arm);
    const c = ((rec.cpu[w] ??= {})[arm] = { [CLIENT]: (c1.user + c1.system) * 1e3 });
    for (const k of Object.keys(after)) c[k] = after[k] - before[k];
    (rec.ms[w] ??= {})[arm] = ms;
  }
}

// Rounds: every workload once per arm, arm order rotated each round and reversed every other
// round. Arms share code pages (libpython, lws, server-everything's), so an arm run right after
// another that warmed them is faster: with rotation alone codemcp-before followed codemcp in
// five rounds of six, and two builds of the same code measured codemcp / codemcp-before 1.02×
// on one call and 1.09× on the empty program. Reversing every other round makes each arm
// follow each other one equally often. Each round also records
// the share of the machine's CPU time used by anything but this benchmark's processes (the VM
// is shared): a round where someone else's job held ≥ DISTURBED of it is "disturbed", kept apart,
// and followed by a pause until the machine is idle again and one unrecorded round. The run
// goes on until ROUNDS quiet rounds are in or MAX_SECONDS have passed.
const DISTURBED = 0.15;
const MAX_SECONDS = Number(process.env.BENCH_MAX_SECONDS || 900);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ourNs = () => ourPids().reduce((s, p) => s + cpuNs(p), 0);
async function waitIdle(deadline) {
  for (let waited = 0; performance.now() < deadline; waited++) {
    const m = machineNs();
    await sleep(1000);
    const m2 = machineNs();
    if ((m2.busy - m.busy) / (m2.total - m.total) < 0.05) return waited;
  }
  return -1;
}
const armOrder = (r) => {
  const a = r % 2 ? [...ARMS].reverse() : ARMS, shift = r >> 1;
  return a.map((_, k) => a[(k + shift) % a.length]);
};
async function round(r, rec) {
  const order = armOrder(r);
  for (const w of WORKLOADS)
    for (const arm of order) await timed(arm, w, rec);
}
for (let r = 0; r < WARMUP; r++) await round(r, null);
const rounds = [], loads = [];
let pausedSec = 0;
const tRun0 = performance.now(), deadline = tRun0 + MAX_SECONDS * 1e3;
const m0 = machineNs(), ours0 = ourNs();
for (let r = 0; rounds.filter((x) => x.other < DISTURBED).length < ROUNDS && performance.now() < deadline; r++) {
  const rec = { ms: {}, cpu: {} };
  const m = machineNs(), o = ourNs();
  if (r % 10 === 0) loads.push(loadavg()[0]);
  await round(r, rec);
  const m2 = machineNs(), o2 = ourNs();
  rec.other = Math.max(0, (m2.busy - m.busy) - (o2 - o)) / (m2.total - m.total);
  rounds.push(rec);
  if (rec.other >= DISTURBED) {
    const t = performance.now();
    if ((await waitIdle(deadline)) < 0) break;
    await round(r, null);
    pausedSec += (performance.now() - t) / 1e3;
  }
}
const m1 = machineNs();
const ours1 = ourNs();
const runSec = (performance.now() - tRun0) / 1e3;
const loadAfter = loadavg();
for (const p of Object.values(peers)) await p.close();

// The report uses the quiet rounds when there are at least 100 of them, else every round.
const quiet = rounds.filter((r) => r.other < DISTURBED);
const disturbed = rounds.filter((r) => r.other >= DISTURBED);
const used = quiet.length >= 100 ? quiet : rounds;
const usedWhat = used === quiet ? `the ${quiet.length} quiet rounds (of ${rounds.length})` :
  `all ${rounds.length} rounds (**only ${quiet.length} were quiet: a disturbed run**)`;
const samplesOf = (rs) => Object.fromEntries(WORKLOADS.map((w) =>
  [w, Object.fromEntries(ARMS.map((a) => [a, rs.map((r) => r.ms[w][a])]))]));
const samples = samplesOf(used);

// ---- report ----
const q = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))]; };
const med = (xs) => q(xs, 0.5);
const pairedIn = (sm, w, a, b) => med(sm[w][a].map((x, i) => x / sm[w][b][i]));
const paired = (w, a, b) => pairedIn(samples, w, a, b);
const LABEL = { one: '1 call', seq50: `${N} sequential`, conc50: `${N} concurrent`, empty: 'empty program' };
const TARGET = { one: 1.3, seq50: 1.15, conc50: 1.3 };
const HOPS = { direct: { one: 2, seq50: 2 * N, conc50: '2 per call', empty: 2 },
  floor: { one: 8, seq50: 4 + 4 * N, conc50: '4 + 4 per call', empty: 4 } };
const cell = (w, a) => `${fmt(med(samples[w][a]), 2)} (${fmt(q(samples[w][a], 0.1), 2)}–${fmt(q(samples[w][a], 0.9), 2)})`;
const timeRows = WORKLOADS.map((w) => `| ${LABEL[w]} | ${ARMS.map((a) => cell(w, a)).join(' | ')} |`);
const ratioRows = WORKLOADS.map((w) => `| ${LABEL[w]} | **${fmt(paired(w, 'floor', 'direct'), 2)}×** | ` +
  `**${fmt(paired(w, 'floor-pinned', 'direct'), 2)}×** | ${fmt(paired(w, 'codemcp', 'direct'), 2)}× | ` +
  `${fmt(paired(w, 'codemcp', 'floor'), 2)}× | ${fmt(paired(w, 'codemcp', 'floor-pinned'), 2)}× | ` +
  `${TARGET[w] ? `${TARGET[w]}×` : '–'} |`);
// The floor is the better of the two placements (what an implementation could choose).
const verdict = (w) => {
  const [f, fp, c] = ['floor', 'floor-pinned', 'codemcp'].map((a) => paired(w, a, 'direct'));
  const best = Math.min(f, fp), bestArm = f <= fp ? 'floor' : 'floor-pinned';
  const ms = (a) => med(samples[w][a]) - med(samples[w].direct);
  return `- **${LABEL[w]}** (target ≤ ${TARGET[w]}×): best floor ${fmt(best, 2)}× (${bestArm}) → ` +
    (best > TARGET[w] ? '**unreachable** by any implementation of this topology here' :
      `reachable in principle (the target leaves ${fmt((TARGET[w] / best - 1) * 100, 0)} % above that floor)`) +
    `; codemcp ${fmt(c, 2)}×. Medians over direct: floor ${fmt(ms('floor'), 2)} ms, floor-pinned ` +
    `${fmt(ms('floor-pinned'), 2)} ms, codemcp ${fmt(ms('codemcp'), 2)} ms.`;
};
const cpuRows = [];
for (const arm of ARMS) for (const probe of [CLIENT, ...Object.keys(PROBES[arm])])
  cpuRows.push(`| ${arm} | ${probe} | ${WORKLOADS.map((w) =>
    fmt(used.reduce((t, r) => t + r.cpu[w][arm][probe], 0) / 1e3 / used.length, 0)).join(' | ')} |`);
// The same ratios over the disturbed rounds, when there are enough of them to say anything.
const dSamples = disturbed.length >= 30 ? samplesOf(disturbed) : null;
const dRows = dSamples ? WORKLOADS.map((w) => `| ${LABEL[w]} | ${['floor', 'floor-pinned', 'codemcp']
  .map((a) => `${fmt(pairedIn(dSamples, w, a, 'direct'), 2)}×`).join(' | ')} |`) : [];
const hopRows = hop.map((h) => `| ${h.transport} | ${h.cpus} | ${fmt(h.p50_us, 1)} | ${fmt(h.p10_us, 1)}–${fmt(h.p90_us, 1)} |`);
const machine = { busy: (m1.busy - m0.busy) / (m1.total - m0.total), ours: (ours1 - ours0) / (m1.total - m0.total) };
const ncpu = cpus().length;
const rev = (() => { try { return execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(); } catch { return '?'; } })();
const pct = (x) => `${fmt(100 * x, 0)} %`;

// The relays opt out of a profile (bench/floor/meson.build): a plain build of the tree's type.
const relayType = buildType(join(FLOOR_DIR, 'floor-gateway')).replace(', profile-guided', '');
const report = `# The topology floor

${new Date().toISOString()} — ${rounds.length} rounds after ${WARMUP} warm-up rounds; in every round each
workload runs once per arm, arm order rotated round by round and reversed every other round. ${ncpu} × ${cpus()[0]?.model ?? '?'},
Node ${process.version}, commit ${rev}, codemcp ${bin} (${buildType(bin)} build), relays ${FLOOR_DIR} (${relayType} build).

**What the floor is.** \`bench/floor/\` holds two C relays that keep codemcp's mandated process
topology and drop all product work: a gateway (one thread, poll() over client stdin, upstream
stdout and a worker socketpair; jansson only to read client requests and upstream reply ids;
one write per line) and a worker (blocking reads on one thread, no Python, no WebSocket: one
text line per call, the sum parsed out of the reply text). A call crosses the same processes as
in codemcp — client → gateway → worker → gateway → upstream → gateway → worker → gateway →
client — against the same real server-everything. Any implementation of this design pays at
least these wake-ups and copies, so the floor is a **lower bound for this topology on this
machine**: where floor/direct exceeds an issue-3 target, that target cannot be met by any
implementation of the design here, however well tuned. (It is not a lower bound for other
designs: batching calls, or running the program in the gateway's process, would change it.)
Two placements: **floor** leaves every process to the scheduler, as codemcp does today;
**floor-pinned** pins the gateway and its worker to CPU ${PIN_CPU} (\`FLOOR_PIN_CPU\`; upstream and client
unpinned), because a hop within one CPU is much cheaper than across CPUs on this VM (table
below). The floor for a target is the better of the two. It assumes blocking, event-driven
processes: spinning instead of sleeping would remove wake-ups at the price of a busy CPU.

**Method.** All arms are driven by the same client (\`LinePeer\` from bench/lib.mjs, raw
newline-delimited JSON-RPC over stdio), so the client's cost is the same everywhere; each arm
has its own server-everything child. **direct**: get-sum straight to server-everything
(sequential awaits / all 50 sent, then awaited); its "empty program" is an MCP \`ping\` (the
smallest round trip there is). **floor**, **floor-pinned**: one \`tools/call run {workload}\` to floor-gateway.
**codemcp**: one \`execute_python\` running bench/execute.mjs's programs (\`result = 1\` for the
empty program). Each answer is checked (3; ${EXPECT.seq50}; ${EXPECT.conc50}; 1). Times in ms, client-side. Ratios
are paired: the median over rounds of the per-round ratio (same round, so slow phases of the
shared machine cancel). The VM is shared: a round in which other processes used ≥ ${pct(DISTURBED)} of the
machine's CPU time counts as disturbed; **times, ratios and CPU below are from ${usedWhat}**.

## One hop (floor-hop: ${HOP_TRIPS} one-byte ping-pongs per configuration, interleaved)

A process blocked in read(2) woken by another's write(2): half a round trip, µs.

| transport | placement | one-way hop p50 | p10–p90 |
|---|---|---|---|
${hopRows.join('\n')}

"same"/"cross": both processes pinned to one CPU / to different CPUs; "any": the scheduler's
choice, which is what the arms below get.

## Round trip, ms: median (p10–p90)

| workload | ${ARMS.join(' | ')} |
|${'---|'.repeat(ARMS.length + 1)}
${timeRows.join('\n')}

One-way hops per execute: direct ${HOPS.direct.one} / ${HOPS.direct.seq50} / ${HOPS.direct.conc50} / ${HOPS.direct.empty},
floor and codemcp ${HOPS.floor.one} / ${HOPS.floor.seq50} / ${HOPS.floor.conc50} (fewer when lines coalesce) / ${HOPS.floor.empty}
(1 call / ${N} sequential / ${N} concurrent / empty); codemcp adds its worker's second thread
only when Python computes.

## Paired ratios

| workload | floor / direct | floor-pinned / direct | codemcp / direct | codemcp / floor | codemcp / floor-pinned | issue-3 target (× direct) |
|---|---|---|---|---|---|---|
${ratioRows.join('\n')}

${['one', 'seq50', 'conc50'].map(verdict).join('\n')}
${BEFORE ? `
### Before / after (same run, same rounds)

codemcp-before is ${BEFORE} (${buildType(BEFORE)} build).

| workload | codemcp-before / floor | codemcp / floor | codemcp / codemcp-before | target codemcp / floor |
|---|---|---|---|---|
${WORKLOADS.map((w) => `| ${LABEL[w]} | ${fmt(paired(w, 'codemcp-before', 'floor'), 2)}× | **${fmt(paired(w, 'codemcp', 'floor'), 2)}×** | ` +
  `${fmt(paired(w, 'codemcp', 'codemcp-before'), 2)}× | ${w === 'empty' ? '–' : '≤ 1.25×'} |`).join('\n')}
` : ''}
## A kernel session per worker (floor-setsid)

floor-setsid is the floor with its worker calling setsid() first, as each codemcp session's
processes do (its own process group and session, so that no signal, priority or job-control
call of one session reaches another). Where scheduler autogroups are on (here: ${schedNote()}),
a new session is also a scheduler task group of its own, and every hop between the gateway and
the worker crosses groups. floor-setsid / floor is what that requirement alone costs any
implementation of this topology here.

| workload | floor-setsid / floor | floor-setsid / direct | codemcp / floor-setsid |${BEFORE ? ' codemcp-before / floor |' : ''}
|---|---|---|---|${BEFORE ? '---|' : ''}
${WORKLOADS.map((w) => `| ${LABEL[w]} | **${fmt(paired(w, 'floor-setsid', 'floor'), 3)}×** | ${fmt(paired(w, 'floor-setsid', 'direct'), 2)}× | ` +
  `${fmt(paired(w, 'codemcp', 'floor-setsid'), 2)}× |${BEFORE ? ` ${fmt(paired(w, 'codemcp-before', 'floor'), 2)}× |` : ''}`).join('\n')}

## Floor + Python (floor-pyworker: what an embedded CPython alone costs over the hops)

floor-python is the floor with its worker replaced by floor-pyworker (bench/floor/pyworker.c):
CPython embedded as in codemcp-worker, running the programs codemcp runs (code cache keyed by
the text, exec in the session's dict, each SDK call a C function that sends the call frame and
returns a Pending whose str() blocks for the reply text as a Python str). No codemcp_rt, no
validation, no JSON parse. Where floor-python / floor is above 1.25×, codemcp / floor ≤ 1.25×
cannot be met by any worker that embeds CPython in this topology.

| workload | floor-python / floor | codemcp / floor-python | codemcp / floor | target codemcp / floor | CPU per execute, µs: floor-worker / floor-pyworker / codemcp-worker |
|---|---|---|---|---|---|
${WORKLOADS.map((w) => {
  const fp = paired(w, 'floor-python', 'floor');
  const cpuOf = (arm, probe) => fmt(used.reduce((t, r) => t + r.cpu[w][arm][probe], 0) / 1e3 / used.length, 0);
  return `| ${LABEL[w]} | **${fmt(fp, 2)}×**${w !== 'empty' && fp > 1.25 ? ' (> 1.25×)' : ''} | ` +
    `${fmt(paired(w, 'codemcp', 'floor-python'), 2)}× | ${fmt(paired(w, 'codemcp', 'floor'), 2)}× | ` +
    `${w === 'empty' ? '–' : '≤ 1.25×'} | ${cpuOf('floor', 'floor-worker')} / ${cpuOf('floor-python', 'floor-pyworker')} / ` +
    `${cpuOf('codemcp', 'codemcp-worker (all threads)')} |`;
}).join('\n')}

Medians, ms: ${WORKLOADS.map((w) => `${LABEL[w]} floor ${fmt(med(samples[w].floor), 2)}, floor-python ` +
  `${fmt(med(samples[w]['floor-python']), 2)}, codemcp ${fmt(med(samples[w].codemcp), 2)}`).join('; ')}.

## CPU per execute (µs on CPU, mean over the rounds used; /proc schedstat)

| arm | process | ${WORKLOADS.map((w) => LABEL[w]).join(' | ')} |
|---|---|---|---|---|---|
${cpuRows.join('\n')}

## The machine during the run

Load average before ${loadBefore.join(' / ')}, after ${loadAfter.join(' / ')} (1/5/15 min); 1-min
load sampled every 10 rounds: min ${fmt(Math.min(...loads), 2)}, median ${fmt(med(loads), 2)}, max
${fmt(Math.max(...loads), 2)}. Over the ${fmt(runSec, 0)} s of the measured phase (${fmt(pausedSec, 0)} s of it pauses after disturbed
rounds, waiting for an idle machine) the machine's CPUs were
${pct(machine.busy)} busy, ${pct(machine.ours)} of it this benchmark's processes and
${pct(Math.max(0, machine.busy - machine.ours))} everything else (of ${ncpu} CPUs' time). Everything else per round: min
${pct(Math.min(...rounds.map((r) => r.other)))}, median ${pct(med(rounds.map((r) => r.other)))}, max ${pct(Math.max(...rounds.map((r) => r.other)))} (on ${ncpu} CPUs, ${pct(1 / ncpu)} is one CPU held by someone
else); ${quiet.length} quiet rounds, ${disturbed.length} disturbed. Scheduler: ${schedNote()}.
${dSamples ? `
Paired ratios over the ${disturbed.length} disturbed rounds, for reference (× direct):

| workload | floor | floor-pinned | codemcp |
|---|---|---|---|
${dRows.join('\n')}
` : ''}`;
const out = join(ROOT, 'bench', 'results', 'floor.md');
const notes = join(ROOT, 'bench', 'floor-notes.md');
writeFileSync(out, report + (existsSync(notes) ? `\n${readFileSync(notes, 'utf8').trim()}\n` : ''));
console.log(report);
