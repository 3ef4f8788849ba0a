// bench/catalog_dump.mjs — writes the search index's input (every function of the 1,260-function
// catalog: GitHub REST fixture + the three test servers, as discovery._info sees it) to a JSON
// file, so ranking can be iterated on with python/tools outside the gateway.
//
//   node bench/catalog_dump.mjs OUT.json [--openapi]
//
// --openapi: only the servers of tests/data/discovery/README.md instead (public OpenAPI
// descriptions of other domains served by bench/discovery/openapi_api.mjs; 1,046 functions);
// --openapi2: the second catalog there (Stripe, Slack, Trello, Asana, Mailchimp).
import { writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { LinePeer, OPENAPI, OPENAPI2, ROOT, SERVERS, codemcpBin } from './lib.mjs';

const out = process.argv[2] || join(tmpdir(), 'codemcp-catalog-dump.json');
const second = process.argv.includes('--openapi2');
const openapi = second ? OPENAPI2 : process.argv.includes('--openapi') ? OPENAPI : null;
const tmp = mkdtempSync(join(tmpdir(), 'codemcp-dump-'));
const mcpServers = {};
if (openapi) {
  for (const [k, spec] of Object.entries(openapi))
    mcpServers[k] = { command: 'node', args: [join(ROOT, 'bench', 'discovery', 'openapi_api.mjs'), spec], timeout: 60000 };
} else {
  mcpServers.github = { command: 'node', args: [join(ROOT, 'tests', 'catalog', 'github_api.mjs')], timeout: 60000 };
  for (const [k, argv] of Object.entries(SERVERS)) mcpServers[k] = { command: argv[0], args: argv.slice(1), timeout: 60000 };
  mcpServers.memory.env = { MEMORY_FILE_PATH: join(tmp, 'memory.json') };
}
const last = second ? 'mailchimp' : openapi ? 'zoom' : 'github';
const cfg = join(tmp, 'mcp.json');
writeFileSync(cfg, JSON.stringify({ mcpServers }));
const p = new LinePeer([codemcpBin(), '-c', cfg], { CODEMCP_USAGE_FILE: 'off', XDG_STATE_HOME: tmp, CODEMCP_MAX_OUTPUT_BYTES: '16000000' });
await p.request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'dump', version: '1' } });
p.notify('notifications/initialized');
for (let k = 0; k < 600; k++) {
  const d = (await p.request('tools/list')).result.tools[0].description;
  if (!/still connecting|connecting:/.test(d) && d.includes(last)) break;
  await new Promise((res) => setTimeout(res, 200));
}
const code = `
from codemcp_rt import sdk, discovery
names, info = discovery._info(sdk.current())
result = {"names": names, "info": info}
`;
const r = await p.request('tools/call', { name: 'execute_python', arguments: { code, timeout_ms: 120000 } });
const env = r.result?.structuredContent;
if (!env || r.result.isError) throw new Error(JSON.stringify(r.result || r.error).slice(0, 2000));
writeFileSync(out, JSON.stringify(env.result));
console.log(`${out}: ${env.result.names.length} functions`);
await p.close();
