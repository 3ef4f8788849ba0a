#!/usr/bin/env node
// A real MCP server built with the official TypeScript SDK v2 (@modelcontextprotocol/server),
// used as an upstream in codemcp's end-to-end tests of the 2026-07-28 protocol era.
//
//   node server.mjs [--http PORT] [--legacy reject|serve|stateless] [--name NAME]
//
// stdio by default (serveStdio); --http serves stateless Streamable HTTP on 127.0.0.1:PORT
// at /mcp (createMcpHandler) and prints "listening PORT" on stderr (PORT 0 = ephemeral).
// --legacy reject makes it modern-only: 2025-era requests get -32022 naming 2026-07-28.
// Every request it receives is logged to stderr as "recv METHOD era=..." so tests can see
// what codemcp sent; over HTTP a request with a traceparent header also logs "trace METHOD {...}".
import http from 'node:http';
import { McpServer, createMcpHandler, inputRequired, acceptedContent } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const name = opt('--name', 'v2server');
const legacy = opt('--legacy', undefined);
const httpPort = opt('--http', undefined);

let extraTools = 0;
let notifyListChanged = () => {};

function factory() {
  const server = new McpServer({ name, version: '2.4.0-fixture' }, { capabilities: { tools: { listChanged: true } } });
  server.registerTool(
    'add',
    { description: 'Adds two numbers.', inputSchema: z.object({ a: z.number(), b: z.number() }) },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] })
  );
  server.registerTool(
    'whoami',
    { description: 'Returns what the client declared in this request.', inputSchema: z.object({}) },
    async (_args, ctx) => ({
      content: [{ type: 'text', text: JSON.stringify({ era: ctx?.mcpReq?.era ?? null, meta: ctx?.mcpReq?._meta ?? null }) }],
    })
  );
  server.registerTool(
    'query',
    {
      description: 'Runs a query in a region (its region is mirrored into an Mcp-Param-Region header).',
      inputSchema: z.object({
        region: z.string().meta({ 'x-mcp-header': 'Region' }),
        limit: z.number().int().optional().meta({ 'x-mcp-header': 'Limit' }),
        q: z.string(),
      }),
    },
    async ({ region, q }) => ({ content: [{ type: 'text', text: `${region}:${q}` }] })
  );
  server.registerTool(
    'badheader',
    {
      description: 'An x-mcp-header on a number property: clients must leave this tool out.',
      inputSchema: z.object({ ratio: z.number().meta({ 'x-mcp-header': 'Ratio' }) }),
    },
    async () => ({ content: [{ type: 'text', text: 'should not be callable over HTTP' }] })
  );
  server.registerTool(
    'confirm',
    { description: 'Asks the user to confirm an action (multi round-trip).', inputSchema: z.object({ action: z.string() }) },
    async ({ action }, ctx) => {
      const schema = z.object({ ok: z.boolean() });
      const got = acceptedContent(ctx?.mcpReq?.inputResponses, 'ok', schema);
      if (got?.ok === true) return { content: [{ type: 'text', text: `done: ${action}` }] };
      return inputRequired({
        inputRequests: { ok: inputRequired.elicit({ message: `Really ${action}?`, requestedSchema: schema }) },
      });
    }
  );
  server.registerTool(
    'grow',
    { description: 'Adds a tool named extra_N and announces the list change.', inputSchema: z.object({}) },
    async () => {
      extraTools++;
      const n = extraTools;
      if (httpPort === undefined) addExtra(server, n); // stdio: one pinned instance, which announces it
      setTimeout(() => notifyListChanged(), 10);
      return { content: [{ type: 'text', text: `extra_${n}` }] };
    }
  );
  for (let i = 1; i <= extraTools; i++) addExtra(server, i);
  return server;
}

function addExtra(server, i) {
  server.registerTool(`extra_${i}`, { description: `Extra tool ${i}.`, inputSchema: z.object({}) }, async () => ({
    content: [{ type: 'text', text: `extra ${i}` }],
  }));
}

function logRecv(method, meta) {
  const v = meta && meta['io.modelcontextprotocol/protocolVersion'];
  process.stderr.write(`recv ${method} era=${v ? 'modern:' + v : 'legacy'}\n`);
}

if (httpPort !== undefined) {
  const handler = createMcpHandler(factory, legacy ? { legacy } : {});
  notifyListChanged = () => handler.notify.toolsChanged();
  const srv = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    try {
      const j = JSON.parse(body.toString() || 'null');
      if (j && j.method) {
        logRecv(j.method, j.params && j.params._meta);
        process.stderr.write(
          `headers ${j.method} ${JSON.stringify({ v: req.headers['mcp-protocol-version'] ?? null, m: req.headers['mcp-method'] ?? null, n: req.headers['mcp-name'] ?? null, s: req.headers['mcp-session-id'] ?? null, ...Object.fromEntries(Object.entries(req.headers).filter(([k]) => k.startsWith('mcp-param-'))) })}\n`
        );
        // W3C trace context headers, on a line of their own (only when sent, in a header or
        // in _meta), with _meta's
        if (req.headers.traceparent || j.params?._meta?.traceparent)
          process.stderr.write(`trace ${j.method} ${JSON.stringify({ header: req.headers.traceparent, state: req.headers.tracestate ?? null, meta: j.params?._meta?.traceparent ?? null })}\n`);
      }
    } catch {}
    const url = `http://127.0.0.1:${srv.address().port}${req.url}`;
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const r = await handler.fetch(
      new Request(url, { method: req.method, headers, body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body, signal: abort.signal })
    );
    res.writeHead(r.status, Object.fromEntries(r.headers.entries()));
    if (!r.body) return res.end();
    const reader = r.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        res.write(value);
      }
    } catch {}
    res.end();
  });
  srv.listen(Number(httpPort), '127.0.0.1', () => process.stderr.write(`listening ${srv.address().port}\n`));
} else {
  // Log what arrives before the SDK sees it.
  process.stdin.on('data', (d) => {
    for (const line of d.toString().split('\n')) {
      try {
        const j = JSON.parse(line);
        if (j.method) logRecv(j.method, j.params && j.params._meta);
      } catch {}
    }
  });
  serveStdio(factory, legacy ? { legacy } : {});
}
