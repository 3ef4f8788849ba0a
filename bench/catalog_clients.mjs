// bench/catalog_clients.mjs — what a real client shows the model of codemcp's catalog.
//
//   [CLAUDE_BIN=/path/to/claude] node bench/catalog_clients.mjs   → bench/results/catalog-clients.md
//
// Runs Claude Code (`claude -p`, any 2.x; by default the one pinned in tests/clients; the
// suite's tests/e2e/clients.test.mjs checks the same things, plus opencode and Inspector) against a
// fake Anthropic Messages endpoint on loopback that records every request. The fake model's
// first answer asks Claude Code's ToolSearch for codemcp's tool (Claude Code defers MCP tool
// definitions), so the second request carries the execute_python definition exactly as the
// model would see it. Reported: the tool description and the server instructions as they reach
// the model, their sizes, and whether anything was cut. Catalog: the GitHub REST fixture plus
// the three npm test servers (1,260 functions).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { ROOT, SERVERS, codemcpBin } from './lib.mjs';
import { anthropic, fakeModel } from '../tests/e2e/fake_models.mjs';

const claude = process.env.CLAUDE_BIN || join(ROOT, 'tests', 'clients', 'node_modules', '.bin', 'claude');
if (!existsSync(claude)) {
  console.error(`${claude} not found: npm ci in tests/clients, or set CLAUDE_BIN (see the header of this file)`);
  process.exit(2);
}
const tmp = mkdtempSync(join(tmpdir(), 'codemcp-clients-'));
const model = await fakeModel(anthropic);
const { requests } = model;

const upstreams = { github: { command: 'node', args: [join(ROOT, 'tests', 'catalog', 'github_api.mjs')], timeout: 60000 } };
for (const [k, argv] of Object.entries(SERVERS)) upstreams[k] = { command: argv[0], args: argv.slice(1) };
upstreams.memory.env = { MEMORY_FILE_PATH: join(tmp, 'memory.json') };
writeFileSync(join(tmp, 'upstreams.json'), JSON.stringify({ mcpServers: upstreams }));
const worker = join(codemcpBin(), '..', 'worker', 'codemcp-worker');
writeFileSync(join(tmp, 'claude-mcp.json'), JSON.stringify({ mcpServers: { codemcp: {
  command: codemcpBin(), args: ['-c', join(tmp, 'upstreams.json')],
  env: { CODEMCP_WORKER_BIN: worker, CODEMCP_USAGE_FILE: 'off' } } } }));
mkdirSync(join(tmp, 'home'));

// Run in the background of the event loop (spawnSync would block the fake endpoint).
const { spawn } = await import('node:child_process');
const t0 = Date.now();
const child = spawn(claude, ['-p', 'say hi', '--mcp-config', join(tmp, 'claude-mcp.json'), '--strict-mcp-config',
  '--output-format', 'json'], { env: { ...process.env, HOME: join(tmp, 'home'),
  ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: 'sk-ant-fake', DISABLE_TELEMETRY: '1',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
let out = '';
child.stdout.on('data', (d) => (out += d));
const code = await new Promise((r) => child.on('close', r));
const elapsed = Date.now() - t0;
model.close();
const version = spawnSync(claude, ['--version'], { encoding: 'utf8' }).stdout.trim();

let tool = null, instructions = null, deferred = false;
for (const r of requests) {
  for (const t of r.body.tools || []) if (t.name === 'mcp__codemcp__execute_python') tool = t;
  const all = JSON.stringify(r.body);
  if (all.includes('mcp__codemcp__execute_python') && !tool) deferred = true;
  const sys = JSON.stringify(r.body.system || '') + JSON.stringify(r.body.messages || '');
  const i = sys.indexOf('## codemcp\\n');
  if (i >= 0 && instructions === null) {
    instructions = JSON.parse(`"${sys.slice(i + 12).split('\\n\\n')[0]}"`);
  }
}
const lines = ['# catalog-clients — what Claude Code shows the model', '',
  `Run: \`node bench/catalog_clients.mjs\` on ${new Date().toISOString().slice(0, 10)}; ` +
  `Claude Code ${version}; exit ${code} after ${elapsed} ms; ${requests.length} model requests; ` +
  'catalog: GitHub REST fixture + three npm test servers (1,260 functions).', '',
  `- MCP tool definitions deferred behind ToolSearch on the first request: ${deferred ? 'yes' : 'no'}`,
  `- execute_python description as the model receives it: ${tool ? tool.description.length + ' characters' : 'never seen'}` +
  (tool ? ` (codemcp's budget: 2,000; Claude Code cuts at 2,048: ${tool.description.length < 2048 ? 'not cut' : 'possibly cut'})` : ''),
  `- server instructions in the system prompt: ${instructions === null ? 'none' : instructions.length + ' characters'}`, '',
  '## The description', '', '```', tool ? tool.description : '(none)', '```', '',
  '## The instructions', '', '```', instructions ?? '(none)', '```', ''];
writeFileSync(join(ROOT, 'bench', 'results', 'catalog-clients.md'), lines.join('\n'));
console.log(lines.join('\n'));
if (out) console.error(out.slice(0, 300));
