// Context switches and CPU per SDK call, thread by thread, in the gateway and its worker: where
// a wake-up is paid that neither callgrind (user-space instructions) nor strace (system calls)
// shows. Each thread's voluntary and involuntary switches (/proc/<pid>/task/<tid>/status) and
// CPU (schedstat) are read before and after RUNS executes of a workload, after a warm-up, and
// divided by the SDK calls made (50 for seq50/conc50, 1 for one; per execute for empty).
// Threads are named by their comm ("codemcp", "codemcp-worker", ...) and grouped by process.
// Usage: node bench/ctxsw.mjs [runs=100] [workloads=seq50,conc50]
// CODEMCP_BIN_BEFORE=<another build's codemcp>: that build and this one, alternated
// CTXSW_ROUNDS times (default 2), each a fresh gateway. Writes bench/results/ctxsw.md
// (CTXSW_OUT=<file> elsewhere).
import { writeFileSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LinePeer, SERVERS, EXEC_PY, EXEC_EXPECT, ROOT, codemcpBin, untilSdkReady, workerPids, fmt } from './lib.mjs';

const RUNS = Number(process.argv[2] || 100);
const WORKLOADS = (process.argv[3] || 'seq50,conc50').split(',');
const CALLS = { one: 1, seq50: 50, conc50: 50, empty: 1 };
const bin = codemcpBin();
const before = process.env.CODEMCP_BIN_BEFORE;
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-ctxsw-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));

// Per thread of pid: { name, vol, invol, cpuNs }.
function threads(pid, role) {
  const out = new Map();
  let tids = [];
  try { tids = readdirSync(`/proc/${pid}/task`); } catch { return out; }
  for (const tid of tids) {
    try {
      const st = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      const num = (k) => Number(st.match(new RegExp(`${k}:\\s+(\\d+)`))[1]);
      const name = st.match(/Name:\s+(.*)/)[1].trim();
      const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      const f = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ');
      out.set(`${pid}/${tid}`, { key: `${role}: ${Number(tid) === pid ? 'main' : name}`, vol: num('voluntary_ctxt_switches'),
        invol: num('nonvoluntary_ctxt_switches'), ns, user: Number(f[11]), sys: Number(f[12]) });
    } catch { /* the thread ended */ }
  }
  return out;
}
const snapshot = (gw, workers) => {
  const all = new Map(threads(gw, 'gateway'));
  for (const w of workers) for (const [k, v] of threads(w, 'worker')) all.set(k, v);
  return all;
};

const ok = (r, w) => {
  if (r.error || r.result?.isError) throw new Error(JSON.stringify(r));
  const v = r.result.structuredContent?.result;
  if (v !== EXEC_EXPECT[w]) throw new Error(`${w}: got ${JSON.stringify(v)}`);
};

const arms = [];
for (let r = 0; r < (before ? Number(process.env.CTXSW_ROUNDS || 2) : 1); r++) {
  if (before) arms.push(['before', before]);
  arms.push(['this', bin]);
}
// rows[arm][workload][threadKey] = {vol, invol, us} summed over rounds; calls[arm][workload]
const sums = {};
for (const [arm, path] of arms) {
  const peer = new LinePeer([path], { CODEMCP_CONFIG: cfg, CODEMCP_ISOLATION: process.env.CODEMCP_ISOLATION || '' });
  await peer.initialize();
  const run = async (w) => ok(await peer.request('tools/call', { name: 'execute_python', arguments: { code: EXEC_PY[w] } }), w);
  await untilSdkReady(() => run('one'));
  for (let i = 0; i < 20; i++) await run('seq50');
  const workers = workerPids(peer.proc.pid);
  for (const w of WORKLOADS) {
    const s0 = snapshot(peer.proc.pid, workers);
    for (let i = 0; i < RUNS; i++) await run(w);
    const s1 = snapshot(peer.proc.pid, workers);
    const per = (sums[arm] ??= {})[w] ??= { calls: 0, t: {} };
    per.calls += RUNS * CALLS[w];
    for (const [k, b] of s1) {
      const a = s0.get(k) || { vol: 0, invol: 0, ns: 0, user: 0, sys: 0 };
      const t = per.t[b.key] ??= { vol: 0, invol: 0, ns: 0, user: 0, sys: 0 };
      t.vol += b.vol - a.vol; t.invol += b.invol - a.invol; t.ns += b.ns - a.ns;
      t.user += b.user - a.user; t.sys += b.sys - a.sys;
    }
  }
  await peer.close();
}

const lines = [`# Context switches and CPU per SDK call, per thread`, '',
  `\`node bench/ctxsw.mjs ${RUNS} ${WORKLOADS.join(',')}\`` +
  (before ? ` with CODEMCP_BIN_BEFORE (before: ${before}; this: ${bin}), ${arms.length / 2} rounds each, alternated` : ` (${bin})`) +
  `; isolation ${process.env.CODEMCP_ISOLATION || 'default'}, \`everything\` as the upstream, after 20 warm-up seq50 executes.`,
  'Per SDK call (per execute for `empty`): voluntary switches (the thread blocked), involuntary ones (preempted), CPU µs',
  '(schedstat), and the share of that CPU spent in the kernel (stime / (utime + stime), 10 ms ticks: read it over many calls).', ''];
for (const w of WORKLOADS) {
  lines.push(`## ${w}`, '', `| thread | ${Object.keys(sums).map((a) => `${a}: vol / invol / CPU µs / kernel`).join(' | ')} |`,
    `|---|${Object.keys(sums).map(() => '---:').join('|')}|`);
  const keys = [...new Set(Object.values(sums).flatMap((s) => Object.keys(s[w].t)))].sort();
  for (const k of keys) {
    const cells = Object.values(sums).map((s) => {
      const t = s[w].t[k];
      if (!t) return '–';
      const kern = t.user + t.sys ? `${fmt((100 * t.sys) / (t.user + t.sys), 0)} %` : '–';
      return `${fmt(t.vol / s[w].calls, 2)} / ${fmt(t.invol / s[w].calls, 2)} / ${fmt(t.ns / 1000 / s[w].calls, 1)} / ${kern}`;
    });
    if (cells.every((c) => c === '–' || c.startsWith('0.00 / 0.00 / 0.0 '))) continue;
    lines.push(`| ${k} | ${cells.join(' | ')} |`);
  }
  lines.push('');
}
const text = lines.join('\n');
console.log(text);
writeFileSync(process.env.CTXSW_OUT || join(ROOT, 'bench', 'results', 'ctxsw.md'), text + '\n');
