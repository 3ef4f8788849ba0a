// Instructions per tools/list in the gateway (callgrind), base binary against head: the cost
// of the execute_python description per request (src/catalog/catalog.c keeps it per budget).
// For each binary, era (2025 session / 2026 _meta) and client (bench: the default 2,000-byte
// budget; opencode: 8,000) the gateway (`codemcp start -p 0`, upstream server-everything) runs
// under callgrind twice, with 100 and with 600 tools/list; (Ir600 − Ir100) / 500 is one request
// with start-up and shutdown cancelled out. Only the gateway's own process is counted (the
// worker is another executable, not traced).
// Usage: node bench/describe_cg.mjs <base codemcp binary> [head binary = build/src/codemcp]
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_TOKEN, ROOT, SERVERS, mcpPost, startHttpGateway } from './lib.mjs';

const base = process.argv[2];
const head = process.argv[3] || join(ROOT, 'build/src/codemcp');
if (!base) throw new Error('usage: node bench/describe_cg.mjs <base codemcp> [head codemcp]');

function startGateway(bin, out) {
  const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-desc-'));
  const cfg = join(dir, 'mcp.json');
  writeFileSync(cfg, JSON.stringify({ mcp: { everything: { type: 'local', command: SERVERS.everything } } }));
  const env = { ...process.env, CODEMCP_CONFIG: cfg, XDG_CONFIG_HOME: dir, XDG_STATE_HOME: dir, CODEMCP_HTTP_TOKEN: BENCH_TOKEN,
    CODEMCP_LOG: 'warn', CODEMCP_USAGE_FILE: 'off' };
  delete env.CODEMCP_DESCRIBE_BUDGET;
  return startHttpGateway(['valgrind', '--tool=callgrind', `--callgrind-out-file=${out}.%p`, bin, 'start', '-p', '0'], env);
}

const post = (g, agent, body, headers) => mcpPost(g, agent, body, headers, 60000);

let id = 1;
async function lister(g, agent, era, client) {
  if (era === '2026') {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: client, version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {} };
    const h = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' };
    return () => post(g, agent, { jsonrpc: '2.0', id: id++, method: 'tools/list', params: { _meta: meta } }, h);
  }
  const r = await post(g, agent, { jsonrpc: '2.0', id: id++, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: client, version: '1' } } }, {});
  const sh = { 'mcp-session-id': r.headers['mcp-session-id'], 'mcp-protocol-version': '2025-11-25' };
  await post(g, agent, { jsonrpc: '2.0', method: 'notifications/initialized' }, sh);
  return () => post(g, agent, { jsonrpc: '2.0', id: id++, method: 'tools/list' }, sh);
}

/** Total instructions of the gateway process for n tools/list. */
async function instructions(bin, era, client, n) {
  const dir = mkdtempSync(join(tmpdir(), 'codemcp-bench-cg-'));
  const g = await startGateway(bin, join(dir, 'cg'));
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const list = await lister(g, agent, era, client);
  // The same catalog in every run: wait until the upstream's functions are listed.
  for (let i = 0; ; i++) {
    const r = await list();
    if (/everything \d+/.test(r.result?.tools?.[0]?.description || '')) break;
    if (i > 600) throw new Error(`no upstream after ${i} lists: ${JSON.stringify(r).slice(0, 500)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
  for (let i = 0; i < n; i++) {
    const r = await list();
    if (!r.result) throw new Error(JSON.stringify(r));
  }
  agent.destroy();
  await new Promise((res) => { g.proc.removeAllListeners('exit'); g.proc.on('exit', res); g.proc.kill('SIGTERM'); });
  const file = join(dir, `cg.${g.proc.pid}`);
  const ir = readFileSync(file, 'utf8').match(/^(?:summary|totals): (\d+)/m);
  if (!ir) throw new Error(`no totals in ${file} (${readdirSync(dir)})`);
  return Number(ir[1]);
}

const rows = [];
for (const client of ['bench', 'opencode']) {
  for (const era of ['2025', '2026']) {
    const per = {};
    for (const [name, bin] of [['base', base], ['head', head]]) {
      const small = await instructions(bin, era, client, 100);
      const big = await instructions(bin, era, client, 600);
      per[name] = (big - small) / 500;
    }
    rows.push(`| ${client} | ${era} | ${Math.round(per.base).toLocaleString('en')} | ${Math.round(per.head).toLocaleString('en')} | ${(per.head / per.base).toFixed(3)}× |`);
    console.error(rows.at(-1));
  }
}
console.log(['| client (budget) | era | base | head | head / base |', '|---|---|---|---|---|', ...rows].join('\n'));
