// What a parsed result's object keys cost in memory in the worker: the C reader of tool results
// (src/worker/pyjson.c, `_codemcp.loads_fast`, the parse structured results and JSON texts take)
// against CPython's json.loads, on records whose keys its key table does not keep (longer than
// 24 bytes). json.loads makes one str per distinct key per parse (its memo); a reader without
// one makes a str per occurrence. Measured inside a sandboxed worker (CODEMCP_SMOKE) with
// tracemalloc: the bytes the parsed value holds, per build given.
// Usage: node bench/keymemo.mjs [records=20000] [name=bin ...] → bench/results/keymemo.md
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, buildType, codemcpBin, fmt } from './lib.mjs';

const RECORDS = Number(process.argv[2] || 20000);
const builds = process.argv.slice(3).map((a) => a.split('='));
if (!builds.length) builds.push(['codemcp', codemcpBin()]);
const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-keymemo-'));
writeFileSync(join(dir, 'mcp.json'), JSON.stringify({ mcp: {} }));

const PROGRAM = `
import _codemcp, json, tracemalloc
keys = ['attribute_name_number_%02d_long' % i for i in range(20)]  # 30 bytes each
rec = '{' + ','.join('"%s":%d' % (k, i) for i, k in enumerate(keys)) + '}'
text = '[' + ','.join([rec] * ${RECORDS}) + ']'
def held(parse):
    tracemalloc.start()
    v = parse(text)
    n = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert v == json.loads(text)
    return n
result = {'text': len(text), 'loads_fast': held(_codemcp.loads_fast), 'json_loads': held(json.loads)}
`;

const rows = [];
for (const [name, bin] of builds) {
  const r = spawnSync(bin, [], { encoding: 'utf8', timeout: 120000, env: { ...process.env,
    CODEMCP_CONFIG: join(dir, 'mcp.json'), XDG_CONFIG_HOME: join(dir, 'xdg'), CODEMCP_SMOKE: PROGRAM,
    CODEMCP_WORKER_MEMORY_MB: '2048' } });
  const out = JSON.parse(r.stdout || '{}');
  if (!out.result) throw new Error(`${name}: ${r.stdout}\n${r.stderr.slice(-2000)}`);
  rows.push({ name, bin, ...out.result });
}
const MB = (b) => fmt(b / 1e6, 1);
let md = `# Object keys in a parsed result: the worker's C reader against json.loads (bench/keymemo.mjs)\n\n`;
md += `${new Date().toISOString()}. ${RECORDS} records of 20 integer members whose keys are 30 bytes (past the 24 the reader's key table keeps), parsed in a sandboxed worker; the bytes the parsed value holds (tracemalloc). `;
md += builds.map(([n, b]) => `\`${n}\`: ${b} (${buildType(b)})`).join('; ') + '.\n\n';
md += `| build | JSON text MB | loads_fast holds MB | json.loads holds MB | loads_fast ÷ json.loads |\n|---|---|---|---|---|\n`;
for (const r of rows)
  md += `| ${r.name} | ${MB(r.text)} | ${MB(r.loads_fast)} | ${MB(r.json_loads)} | **${fmt(r.loads_fast / r.json_loads, 2)}×** |\n`;
writeFileSync(join(ROOT, 'bench/results', `${process.env.BENCH_OUT || 'keymemo'}.md`), md);
console.log(md);
