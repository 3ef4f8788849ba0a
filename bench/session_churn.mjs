// What a new session's worker costs the machine, against a program in a session that already
// has one: the price of every slot that changes hands when more sessions than workers take
// turns (bench/saturation.mjs: each hand-over discards the holder's worker and starts one for
// the next session). One `codemcp start` (no upstream, CODEMCP_WORKERS=2, no minimum hold),
// one SDK client; per block, N programs `result = 1` in one session, then N sessions each
// created, running the program once and ended. CPU is the machine's (/proc/stat: gateway,
// prototype, session processes, kernel work) less this driver's own, per program; the machine
// must be otherwise idle. Blocks repeat, builds alternate block by block.
// Usage: node bench/session_churn.mjs [n=100] [blocks=3] [name=bin ...] → bench/results/session_churn.md
// (BENCH_OUT=<name> writes bench/results/<name>.md)
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_TOKEN, ROOT, buildType, codemcpBin, fmt, machineBusyMs, startHttpGateway, stats } from './lib.mjs';

const N = Number(process.argv[2] || 100);
const BLOCKS = Number(process.argv[3] || 3);
const builds = process.argv.slice(4).map((a) => a.split('='));
if (!builds.length) builds.push(['codemcp', codemcpBin()]);
const SDK = join(ROOT, 'tests/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(join(SDK, 'client/index.js'));
const { StreamableHTTPClientTransport } = await import(join(SDK, 'client/streamableHttp.js'));
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-churn-'));
writeFileSync(join(dir, 'mcp.json'), JSON.stringify({ mcp: {} }));
writeFileSync(join(dir, 'tokens'), `bench ${BENCH_TOKEN}\n`, { mode: 0o600 });
const procs = [];
process.on('exit', () => { for (const p of procs) try { p.kill('SIGKILL'); } catch {} });

async function gateway(bin) {
  const g = await startHttpGateway([bin, 'start', '-p', '0'], { ...process.env,
    CODEMCP_CONFIG: join(dir, 'mcp.json'), XDG_CONFIG_HOME: join(dir, 'xdg'), CODEMCP_HTTP_TOKENS_FILE: join(dir, 'tokens'),
    CODEMCP_LOG: 'info', CODEMCP_WORKERS: '2', CODEMCP_WORKER_MIN_HOLD_MS: '0' });
  procs.push(g.proc);
  return { url: g.url.href, starts: () => (g.log().match(/worker \d+ connected/g) || []).length };
}

async function session(url) {
  const t = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${BENCH_TOKEN}` } } });
  const c = new Client({ name: 'bench-churn', version: '1' });
  await c.connect(t);
  return {
    run: async () => {
      const r = await c.callTool({ name: 'execute_python', arguments: { code: 'result = 1' } });
      if (r.isError || r.structuredContent?.result !== 1) throw new Error(JSON.stringify(r).slice(0, 300));
    },
    end: async () => { await t.terminateSession().catch(() => {}); await c.close(); },
  };
}

async function measure(fn) { // machine CPU less this process's, ms per program; wall ms per program
  const b0 = machineBusyMs(), c0 = process.cpuUsage(), t0 = performance.now();
  await fn();
  const c = process.cpuUsage(c0);
  return { cpu: (machineBusyMs() - b0 - (c.user + c.system) / 1000) / N, wall: (performance.now() - t0) / N };
}

const arms = [];
for (const [name, bin] of builds) {
  const gw = await gateway(bin);
  const s = await session(gw.url);
  for (let i = 0; i < 10; i++) await s.run();
  arms.push({ name, bin, gw, s, same: [], fresh: [], starts: 0 });
}
for (let b = 0; b < BLOCKS; b++)
  for (const arm of (b % 2 ? [...arms].reverse() : arms)) {
    arm.same.push(await measure(async () => { for (let i = 0; i < N; i++) await arm.s.run(); }));
    const s0 = arm.gw.starts();
    arm.fresh.push(await measure(async () => {
      for (let i = 0; i < N; i++) { const s = await session(arm.gw.url); await s.run(); await s.end(); }
    }));
    arm.starts += arm.gw.starts() - s0;
    process.stderr.write(`block ${b + 1} ${arm.name}: same ${fmt(arm.same.at(-1).cpu, 2)} ms, new session ${fmt(arm.fresh.at(-1).cpu, 2)} ms CPU per program\n`);
  }

const med = (xs, k) => stats(xs.map((x) => x[k])).median;
let md = `# A new session's worker: what it costs the machine (bench/session_churn.mjs)\n\n`;
md += `${new Date().toISOString()}, ${cpus().length} × ${cpus()[0]?.model?.trim()}, kernel ${release()}, ${BLOCKS} blocks × ${N} programs per arm and kind, builds alternating. `;
md += builds.map(([n, b]) => `\`${n}\`: ${b} (${buildType(b)})`).join('; ') + '.\n\n';
md += `\`codemcp start\`, no upstream, CODEMCP_WORKERS=2, CODEMCP_WORKER_MIN_HOLD_MS=0, one SDK client. "Same session": \`result = 1\` in a session that has its worker. "New session": a session created, the program run once, the session ended (its worker too). CPU: the machine's busy time less this driver's, per program (median of the blocks).\n\n`;
md += `| build | same session: CPU ms | wall ms | new session: CPU ms | wall ms | new − same: CPU ms | workers started per new session |\n|---|---|---|---|---|---|---|\n`;
for (const a of arms)
  md += `| ${a.name} | ${fmt(med(a.same, 'cpu'), 2)} | ${fmt(med(a.same, 'wall'), 2)} | ${fmt(med(a.fresh, 'cpu'), 2)} | ${fmt(med(a.fresh, 'wall'), 2)} | **${fmt(med(a.fresh, 'cpu') - med(a.same, 'cpu'), 2)}** | ${fmt(a.starts / (BLOCKS * N), 2)} |\n`;
const out = join(ROOT, 'bench/results', `${process.env.BENCH_OUT || 'session_churn'}.md`);
let keep = '';
try { const old = readFileSync(out, 'utf8'); const i = old.indexOf('<!-- hand-written below -->'); if (i >= 0) keep = '\n' + old.slice(i); } catch {}
writeFileSync(out, md + keep);
console.log(md);
process.exit(0);
