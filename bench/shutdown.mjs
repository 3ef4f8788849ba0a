// Benchmark: SIGTERM to exit of a stdio codemcp whose upstream ignores SIGTERM and
// stdin EOF (tests/fixtures/fake_upstream.py --stubborn), side by side with a baseline binary
// (BASE_BIN, e.g. an older build); Claude Code sends SIGKILL 100-400 ms after SIGTERM.
// Usage: [BASE_BIN=/path/to/old/codemcp] node bench/shutdown.mjs [reps]  → bench/results/shutdown.md
import { mkdtempSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LinePeer, codemcpBin, stats, fmt, ROOT } from './lib.mjs';

const reps = Number(process.argv[2] || 9);
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-shutdown-'));
const cfg = join(dir, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcp: { stub: { type: 'local',
  command: ['/usr/bin/python3', join(ROOT, 'tests', 'fixtures', 'fake_upstream.py'), '--stubborn'] } } }));

async function once(bin) {
  const p = new LinePeer([bin], { CODEMCP_CONFIG: cfg, CODEMCP_LOG: 'error', XDG_CONFIG_HOME: dir });
  await p.initialize();
  await p.request('tools/list');
  const exited = new Promise((resolve) => p.proc.on('exit', resolve));
  const t0 = process.hrtime.bigint();
  p.proc.kill('SIGTERM');
  await exited;
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

const bins = { 'codemcp (this build)': codemcpBin() };
if (process.env.BASE_BIN && existsSync(process.env.BASE_BIN)) bins[`baseline (${process.env.BASE_BIN})`] = process.env.BASE_BIN;
const res = Object.fromEntries(Object.keys(bins).map((k) => [k, []]));
for (let r = 0; r < reps; r++) for (const [k, b] of Object.entries(bins)) res[k].push(await once(b));

const rows = Object.entries(res).map(([k, xs]) => {
  const s = stats(xs);
  return `| ${k} | ${fmt(s.median)} | ${fmt(s.min)} | ${fmt(s.max)} |`;
});
const names = Object.keys(res);
const ratio = names.length === 2 ? stats(res[names[1]]).median / stats(res[names[0]]).median : null;
const md = `# SIGTERM shutdown with a stubborn stdio upstream

${reps} runs each, ms from SIGTERM to exit (${new Date().toISOString().slice(0, 10)}, ${process.arch}).

| binary | median | min | max |
|---|---|---|---|
${rows.join('\n')}
${ratio ? `\nThe baseline takes ${fmt(ratio)}x as long (it waits 500 ms after closing stdin, then 1.5 s after SIGTERM).\n` : ''}`;
writeFileSync(join(ROOT, 'bench', 'results', 'shutdown.md'), md);
console.log(md);
