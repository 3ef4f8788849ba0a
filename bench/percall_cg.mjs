// Worker instructions per SDK call: codemcp with its worker under callgrind.
// CODEMCP_WORKER_BIN is a wrapper that execs `valgrind --tool=callgrind codemcp-worker`
// (host isolation, no prototype: one worker process to read); for each workload the
// counters are zeroed (callgrind_control -z), N executes run, and the dump's total
// (callgrind_control -d, all threads) / (N × calls per execute) is printed.
// CG_TARGET=gateway measures the gateway instead (codemcp under callgrind, a normal worker).
// Usage: node bench/percall_cg.mjs [executes=40] [workload...]   (CODEMCP_BIN picks the build)
import { writeFileSync, readFileSync, readdirSync, mkdtempSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { LinePeer, SERVERS, codemcpBin, EXEC_PY, EXEC_N, untilSdkReady } from './lib.mjs';

const N = Number(process.argv[2] || 40);
const which = process.argv.slice(3).length ? process.argv.slice(3) : ['seq50', 'conc50', 'one', 'empty'];
const bin = codemcpBin();
const dir = mkdtempSync(join(tmpdir(), 'codemcp-percall-cg-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));
const wrap = join(dir, 'worker.sh');
writeFileSync(wrap, `#!/bin/sh\nexec valgrind -q --tool=callgrind --callgrind-out-file=${dir}/cg.%p ` +
  `${join(dirname(bin), 'worker', 'codemcp-worker')} "$@"\n`);
chmodSync(wrap, 0o755);
// CG_TARGET=gateway: the gateway (codemcp itself) under callgrind instead, its worker as usual.
const gw = process.env.CG_TARGET === 'gateway';
const peer = gw
  ? new LinePeer(['valgrind', '-q', '--tool=callgrind', `--callgrind-out-file=${dir}/cg.%p`, bin, '--config', cfg],
    { CODEMCP_LOG_LEVEL: 'error', CODEMCP_WORKER_START_TIMEOUT_MS: '120000' })
  : new LinePeer([bin, '--config', cfg], { CODEMCP_WORKER_BIN: wrap, CODEMCP_ISOLATION: 'host',
    CODEMCP_PROTOTYPE: 'off', CODEMCP_WORKER_START_TIMEOUT_MS: '120000', CODEMCP_LOG_LEVEL: 'error' });
await peer.initialize();
const run = async (code) => {
  const r = await peer.request('tools/call', { name: 'execute_python', arguments: { code } });
  if (r.error || r.result?.isError) throw new Error(JSON.stringify(r.error ?? r.result).slice(0, 400));
  return r;
};
await untilSdkReady(() => run(EXEC_PY.one));
for (let i = 0; i < 5; i++) await run(EXEC_PY.seq50);
const cgPid = () => readdirSync(dir).filter((f) => f.startsWith('cg.')).map((f) => f.slice(3))
  .find((p) => { try { return readFileSync(`/proc/${p}/comm`, 'utf8').length > 0; } catch { return false; } });
const pid = cgPid();
const calls = { one: 1, seq50: EXEC_N, conc50: EXEC_N, empty: 1 };
// CG_CODE='{"name": ["python code", calls per execute]}' adds workloads of one's own.
const PY = { ...EXEC_PY };
for (const [k, [code, n]] of Object.entries(JSON.parse(process.env.CG_CODE || '{}'))) { PY[k] = code; calls[k] = n; }
const out = {};
for (const w of which) {
  for (let i = 0; i < 3; i++) await run(PY[w]);
  execFileSync('callgrind_control', ['-z', pid], { stdio: 'ignore' });
  for (let i = 0; i < N; i++) await run(PY[w]);
  execFileSync('callgrind_control', ['-d', w, pid], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 300));
  let total = 0;
  for (const f of readdirSync(dir).filter((f) => f.startsWith(`cg.${pid}.`) && !f.endsWith('.done'))) {
    const text = readFileSync(join(dir, f), 'utf8');
    if (!text.includes(`\ndesc: Trigger: dump ${w}\n`)) continue;
    const m = text.match(/\nsummary: (\d+)/) || text.match(/\ntotals: (\d+)/);
    if (m) total += Number(m[1]);
    writeFileSync(join(dir, f + '.done'), '');
  }
  out[w] = { per_execute: Math.round(total / N), per_call: Math.round(total / (N * calls[w])) };
  console.log(w, JSON.stringify(out[w]));
}
console.log('dumps in', dir);
await peer.close();
process.exit(0);
