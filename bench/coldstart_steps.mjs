// Benchmark: where a cold start's time goes, step by step. The sequence of bench/coldstart.mjs
// (one stdio upstream, sandbox on; initialize, then execute_python `1 + 1`) with
// CODEMCP_LOG=debug: each step is the moment its debug line reaches us, in ms from spawn
// (the pipe adds well under a ms); builds rotated per round.
// Usage: node bench/coldstart_steps.mjs [rounds=10] name=bin ...   → bench/results/coldstart_steps.md
// (BENCH_OUT=<name> writes bench/results/<name>.md; COLDSTART_UPSTREAM=c: the C upstream, as
// bench/coldstart.mjs takes it)
import { writeFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { stats, fmt, ROOT, PYTHON3 } from './lib.mjs';

const rounds = Number(process.argv[2] || 10);
const builds = process.argv.slice(3).map((a) => a.split('='));
const dir = mkdtempSync(join(tmpdir(), 'codemcp-steps-'));
const cfg = join(dir, 'mcp.json');
const UPSTREAM = process.env.COLDSTART_UPSTREAM === 'c'
  ? [join(dirname(builds[0][1]), '..', 'bench', 'floor', 'floor-upstream')]
  : [PYTHON3, join(ROOT, 'bench', 'bigresult_upstream.py')];
writeFileSync(cfg, JSON.stringify({ mcp: { big: { type: 'local', command: UPSTREAM } } }));
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

// [label, what the debug line says] in the order they happen on the default path
const STEPS = [
  ['prototype sandboxed', /\[prototype\] sandboxed/],
  ['its interpreter up', /\[prototype\] interpreter up/],
  ['runtime imported', /\[prototype\] runtime imported/],
  ['warmed up (what a run needs)', /\[prototype\] warmed up/],
  ['prototype ready', /prototype ready/],
];

function once(bin) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const now = () => Number(process.hrtime.bigint() - t0) / 1e6;
    const p = spawn(bin, [], { env: { ...process.env, CODEMCP_CONFIG: cfg, CODEMCP_LOG: 'debug' },
      stdio: ['pipe', 'pipe', 'pipe'] });
    const at = {};
    let err = '';
    let out = '';
    p.stderr.on('data', (d) => {
      err += d;
      for (const [label, re] of STEPS) if (at[label] === undefined && re.test(err)) at[label] = now();
      if (at['search warmed (idle)'] === undefined && /search warmed/.test(err)) at['search warmed (idle)'] = now();
    });
    const send = (id, method, params) => p.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    p.stdout.on('data', (d) => {
      out += d;
      let i;
      while ((i = out.indexOf('\n')) >= 0) {
        const msg = JSON.parse(out.slice(0, i));
        out = out.slice(i + 1);
        if (msg.id === 1) {
          at['initialize answered'] = now();
          p.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
          send(2, 'tools/call', { name: 'execute_python', arguments: { code: '1 + 1' } });
        } else if (msg.id === 2) {
          if (msg.result?.structuredContent?.result !== 2) reject(new Error(JSON.stringify(msg).slice(0, 300)));
          at['first result'] = now();
          setTimeout(() => { p.stdin.end(); }, 300); // let the idle warm-up show in the log
        }
      }
    });
    p.on('exit', () => resolve(at));
    send(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
  });
}

const labels = [...STEPS.map(([l]) => l), 'initialize answered', 'first result', 'search warmed (idle)'];
const t = Object.fromEntries(builds.map(([n]) => [n, Object.fromEntries(labels.map((l) => [l, []]))]));
const loads = [load()];
for (const [, bin] of builds) await once(bin); // page cache warm
for (let r = 0; r < rounds; r++) {
  for (let i = 0; i < builds.length; i++) {
    const [name, bin] = builds[(i + r) % builds.length];
    const at = await once(bin);
    for (const l of labels) if (at[l] !== undefined) t[name][l].push(at[l]);
  }
}
loads.push(load());
const cell = (xs) => (xs.length ? `${fmt(stats(xs).median)} / ${fmt(stats(xs).p90)}` : '—');
const order = (l) => (t[builds.at(-1)[0]][l].length ? stats(t[builds.at(-1)[0]][l]).median : Infinity);
const rows = [...labels].sort((a, b) => order(a) - order(b)).map((l) => `| ${l} | ${builds.map(([n]) => cell(t[n][l])).join(' | ')} |`);
const report = `# Cold start, step by step

${new Date().toISOString()} — ${rounds} starts per build (rotated), ms from spawn, median / p90;
the sequence of bench/coldstart.mjs with CODEMCP_LOG=debug (a step: when its debug line
arrived; rows in the order of the last build's medians). Load average ${loads.join(' → ')}.

Builds: ${builds.map(([n, b]) => `${n} = \`${b}\``).join('; ')}

| step | ${builds.map(([n]) => n).join(' | ')} |
|---|${builds.map(() => '---|').join('')}
${rows.join('\n')}
`;
writeFileSync(join(ROOT, 'bench', 'results', process.env.BENCH_OUT ? `${process.env.BENCH_OUT}.md` : 'coldstart_steps.md'), report);
console.log(report);
