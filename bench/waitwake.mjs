// A worker waiting for a slow upstream call: wake-ups and CPU of the
// worker while its program blocks 5 s in wait_reply, two worker builds side by side: the
// worker next to CODEMCP_BIN (or CODEMCP_WORKER_BIN) and CODEMCP_WORKER_BIN_BEFORE, one
// gateway each, the tests' fake upstream (its `sleep` tool) behind both, runs alternating.
// Measured inside the run, from /proc: the main thread's voluntary context switches and
// CPU (schedstat ns), and the CPU of all the worker's threads, across the 5 s call.
// Usage: node bench/waitwake.mjs [runs per build=3] [wait ms=5000]
import { writeFileSync, mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { LinePeer, ROOT, codemcpBin, fmt } from './lib.mjs';

const RUNS = Number(process.argv[2] || 3);
const WAIT = Number(process.argv[3] || 5000);
const before = process.env.CODEMCP_WORKER_BIN_BEFORE;
if (!before) throw new Error('CODEMCP_WORKER_BIN_BEFORE must name the worker to compare with');
const gw = codemcpBin();
const after = process.env.CODEMCP_WORKER_BIN || join(dirname(gw), 'worker', 'codemcp-worker');
if (!existsSync(after)) throw new Error(`no worker at ${after}`);
const dir = mkdtempSync(join(tmpdir(), 'codemcp-waitwake-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { fake: { type: 'local',
  command: ['/usr/bin/python3', join(ROOT, 'tests', 'fixtures', 'fake_upstream.py')] } } }));
const CODE = `import os, re
def _main():
    with open("/proc/thread-self/status") as f:
        sw = int(re.search(r"\\nvoluntary_ctxt_switches:\\s+(\\d+)", f.read()).group(1))
    with open("/proc/thread-self/schedstat") as f:
        return sw, int(f.read().split()[0])
def _all():
    t = 0
    for tid in os.listdir("/proc/self/task"):
        with open("/proc/self/task/%s/schedstat" % tid) as f:
            t += int(f.read().split()[0])
    return t
(s0, m0), a0 = _main(), _all()
fake_sleep(ms=${WAIT}).result()
(s1, m1), a1 = _main(), _all()
result = [s1 - s0, m1 - m0, a1 - a0]`;
const arms = { before, after };
const peers = {};
for (const [name, bin] of Object.entries(arms)) {
  const p = new LinePeer([gw, '--config', cfg], { CODEMCP_LOG_LEVEL: 'error', CODEMCP_WORKER_BIN: bin });
  await p.initialize();
  peers[name] = p;
}
const run = async (p, code) => {
  const r = await p.request('tools/call', { name: 'execute_python', arguments: { code } });
  if (r.error || r.result?.isError) throw new Error(JSON.stringify(r.error ?? r.result).slice(0, 300));
  return r.result.structuredContent.result;
};
for (const p of Object.values(peers)) await run(p, 'fake_sleep(ms=1).result()');
const got = { before: [], after: [] };
for (let i = 0; i < RUNS; i++) {
  const order = i % 2 ? ['after', 'before'] : ['before', 'after'];
  for (const a of order) got[a].push(await run(peers[a], CODE));
}
for (const p of Object.values(peers)) await p.close();
const med = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const row = (a) => {
  const g = got[a];
  return { sw: med(g.map((x) => x[0])), main: med(g.map((x) => x[1])) / 1e6, all: med(g.map((x) => x[2])) / 1e6 };
};
const b = row('before'), n = row('after');
const secs = WAIT / 1000;
console.log(`| worker (median of ${RUNS}, one ${WAIT} ms call) | main-thread wake-ups | main-thread CPU ms | all-threads CPU ms | CPU % of a core |`);
console.log('|---|---:|---:|---:|---:|');
for (const [name, r] of [['before (20 ms slices)', b], ['after (one blocking wait)', n]])
  console.log(`| ${name} | ${r.sw} | ${fmt(r.main, 2)} | ${fmt(r.all, 2)} | ${fmt(r.all / (10 * secs), 3)} |`);
console.log(`| after / before | ${fmt(n.sw / b.sw, 3)} | ${fmt(n.main / b.main, 3)} | ${fmt(n.all / b.all, 3)} | |`);
