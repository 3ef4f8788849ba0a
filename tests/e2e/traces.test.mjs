// OpenTelemetry traces: the real gateway exports OTLP/HTTP to a receiver in this test, which
// decodes each request with the official protobuf definitions (the generated root of
// @opentelemetry/otlp-transformer, built from opentelemetry-proto) or reads OTLP/JSON. The
// upstreams are servers built with the MCP TypeScript SDK v2 (tests/v2/server.mjs), which
// show the trace context they received (whoami echoes its request's _meta; over HTTP the
// fixture logs the traceparent header).
import assert from 'node:assert/strict';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { cli } from './admin_lib.mjs';
import { Client, NODE, TESTS, connectClient, cpuSeconds, ms, servers, sleep, startHttpGateway, startV2Http, tempDir, waitFor, writeConfig } from './lib.mjs';

const require = createRequire(import.meta.url);
const root = require(path.join(TESTS, 'node_modules', '@opentelemetry', 'otlp-transformer', 'build', 'src', 'generated', 'root.js'));
const ExportTraceServiceRequest = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

const V2 = path.join(TESTS, 'v2', 'server.mjs');
const hex = (b) => Buffer.from(b).toString('hex');
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

const started = new Set();
after(() => {
  for (const p of started) p.kill('SIGKILL');
});

/** A collector: {port, spans[], bodies[], close()}; mode 'ok' answers 200, 'hang' never answers. */
function receiver(mode = 'ok') {
  const r = { spans: [], bodies: [], requests: 0, types: [] };
  const srv = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      r.requests++;
      if (mode === 'hang') return; // holds the connection open, never answers
      const body = Buffer.concat(chunks);
      r.bodies.push(body);
      r.types.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const json = req.headers['content-type'] === 'application/json';
      for (const rs of json ? JSON.parse(body).resourceSpans : ExportTraceServiceRequest.decode(body).resourceSpans)
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans) {
            const attrs = {};
            for (const a of s.attributes || []) attrs[a.key] = a.value.stringValue ?? String(a.value.intValue);
            r.spans.push({
              traceId: json ? s.traceId : hex(s.traceId),
              spanId: json ? s.spanId : hex(s.spanId),
              parentSpanId: s.parentSpanId && s.parentSpanId.length ? (json ? s.parentSpanId : hex(s.parentSpanId)) : '',
              traceState: s.traceState || '',
              name: s.name,
              kind: Number(s.kind),
              attrs,
              error: s.status?.code === 2 || s.status?.code === 'STATUS_CODE_ERROR',
              service: (rs.resource.attributes.find((a) => a.key === 'service.name') || {}).value?.stringValue,
            });
          }
      res.writeHead(200, { 'content-type': req.headers['content-type'] });
      res.end(json ? '{}' : '');
    });
  });
  return new Promise((resolve) => {
    srv.listen(0, '127.0.0.1', () => {
      r.port = srv.address().port;
      r.close = () => { srv.closeAllConnections(); srv.close(); };
      resolve(r);
    });
  });
}

const env = (port, extra = {}) => ({
  CODEMCP_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
  CODEMCP_OTLP_DELAY_MS: '50',
  CODEMCP_DISCOVER_PROBE_MS: '60000',
  ...extra,
});

/** The spans of one trace once `want(spans)` holds. */
async function traceSpans(rcv, traceId, want) {
  const pick = () => rcv.spans.filter((s) => s.traceId === traceId);
  await waitFor(() => want(pick()), ms(20000));
  assert.ok(want(pick()), `no complete trace ${traceId} reached the collector: ${JSON.stringify(rcv.spans.map((s) => [s.traceId, s.name]))}`);
  return pick();
}

/** A gateway over two SDK v2 upstreams (v2 on stdio, hv2 over HTTP) exporting to a new
 *  receiver, and one run of code under the client context traceId/PARENT (tracestate
 *  vendor=abc): {rcv, hv2, h, r, spans} once the trace's request span and two upstream request
 *  spans arrived. */
async function tracedRun(traceId, code, extraEnv = {}) {
  const rcv = await receiver();
  const hv2 = await startV2Http(started, ['--name', 'hv2']);
  const dir = tempDir('codemcp-traces-');
  const config = writeConfig(dir, {
    v2: { type: 'local', command: [NODE, V2, '--name', 'v2'] },
    hv2: { type: 'remote', url: `http://127.0.0.1:${hv2.port}/mcp` },
  });
  const h = await connectClient({ config, env: env(rcv.port, extraEnv) });
  await h.client.listTools();
  const r = await h.client.callTool(
    {
      name: 'execute_python',
      arguments: { code },
      _meta: { traceparent: `00-${traceId}-${PARENT}-01`, tracestate: 'vendor=abc' },
    },
    undefined,
    { timeout: ms(60000) },
  );
  assert.equal(r.isError, false, JSON.stringify(r));
  const spans = await traceSpans(rcv, traceId, (s) => s.filter((x) => x.kind === 3).length >= 2 && s.some((x) => x.kind === 2));
  return { rcv, hv2, h, r, spans };
}

describe('traces', () => {
  test('one run of two tool calls: request → run → tool calls → upstream requests, under the client traceparent; the SDK v2 upstreams get the context', async () => {
    const { rcv, hv2, h, r, spans } = await tracedRun(TRACE, 'result = [v2_whoami(), hv2_add(a=987654321, b=1)]');
    const byParent = (id) => spans.filter((s) => s.parentSpanId === id);
    const req = spans.find((s) => s.kind === 2);
    assert.equal(req.name, 'tools/call execute_python');
    assert.equal(req.parentSpanId, PARENT, 'the MCP request span continues the client span');
    assert.equal(req.traceState, 'vendor=abc');
    assert.equal(req.attrs['mcp.method.name'], 'tools/call');
    assert.equal(req.attrs['gen_ai.tool.name'], 'execute_python');
    assert.equal(req.service, 'codemcp');
    const run = byParent(req.spanId).find((s) => s.name === 'codemcp.run');
    assert.ok(run, JSON.stringify(spans.map((s) => s.name)));
    const children = byParent(run.spanId);
    for (const phase of ['preflight', 'queue', 'execute'])
      assert.ok(children.some((s) => s.name === phase), `phase ${phase}: ${JSON.stringify(children.map((s) => s.name))}`);
    const calls = children.filter((s) => s.name.startsWith('execute_tool '));
    assert.deepEqual(calls.map((s) => s.attrs['gen_ai.tool.name']).sort(), ['add', 'whoami']);
    const ups = calls.map((c) => byParent(c.spanId).find((s) => s.kind === 3));
    for (const u of ups) {
      assert.ok(u, 'each tool call has its upstream request span');
      assert.equal(u.attrs['mcp.method.name'], 'tools/call');
    }
    const upOf = (tool) => ups.find((u) => u.attrs['gen_ai.tool.name'] === tool);
    // the stdio SDK v2 server saw the upstream request span's context in _meta
    const seen = JSON.stringify(r.structuredContent.result[0]);
    assert.ok(seen.includes(`00-${TRACE}-${upOf('whoami').spanId}-01`), seen);
    assert.ok(seen.includes('vendor=abc'), seen);
    // the HTTP one in the traceparent header and in _meta
    const tp = `00-${TRACE}-${upOf('add').spanId}-01`;
    await waitFor(() => hv2.log().includes(tp), ms(10000));
    const line = hv2.log().split('\n').find((l) => l.startsWith('trace tools/call ') && l.includes(tp));
    assert.deepEqual(JSON.parse(line.slice('trace tools/call '.length)), { header: tp, state: 'vendor=abc', meta: tp });
    // arguments are never recorded (sizes only)
    assert.ok(!Buffer.concat(rcv.bodies).includes('987654321'), 'an argument value reached the collector');
    assert.ok(calls.every((c) => Number(c.attrs['codemcp.arguments.size']) >= 2));
    assert.match(rcv.types[0], /^POST \/v1\/traces application\/x-protobuf$/);
    await h.close();
    rcv.close();
  });

  test('CODEMCP_OTLP_PROPAGATE=off: the same spans are exported, and no upstream is given the context', async () => {
    const trace = 'dddddddddddddddd1111111111111111';
    const { rcv, hv2, h, r, spans } = await tracedRun(trace, 'result = [v2_whoami(), hv2_add(a=2, b=3)]',
      { CODEMCP_OTLP_PROPAGATE: 'off' });
    assert.equal(spans.find((s) => s.kind === 2).parentSpanId, PARENT, 'the client span is still continued');
    // the stdio server's _meta held neither key; the HTTP server got no header and no _meta key
    const seen = JSON.stringify(r.structuredContent.result[0]);
    assert.ok(seen.includes('"meta"'), seen);
    assert.ok(!seen.includes('traceparent') && !seen.includes('vendor=abc'), seen);
    assert.equal(String(r.structuredContent.result[1]), '5');
    await waitFor(() => /^headers tools\/call /m.test(hv2.log()), ms(10000));
    assert.ok(!hv2.log().includes('trace tools/call '), hv2.log());
    await h.close();
    rcv.close();
  });

  test('OTLP/JSON, and the HTTP front continues a traceparent header', async () => {
    const rcv = await receiver();
    const gw = await startHttpGateway({
      mcp: { v2: { type: 'local', command: [NODE, V2, '--name', 'v2'] } },
      env: env(rcv.port, { CODEMCP_OTLP_PROTOCOL: 'http/json' }),
      tokens: { alice: 'tok-alice-0123456789' },
    });
    const trace = 'aaaaaaaaaaaaaaaabbbbbbbbbbbbbbbb';
    // every POST of this client carries the header (no _meta traceparent)
    const transport = new StreamableHTTPClientTransport(new URL(gw.url), {
      requestInit: { headers: { authorization: 'Bearer tok-alice-0123456789', traceparent: `00-${trace}-cccccccccccccccc-01` } },
    });
    const client = new Client({ name: 'traced', version: '0' });
    await client.connect(transport, { timeout: ms(15000) });
    const r = await client.callTool({ name: 'execute_python', arguments: { code: 'result = v2_add(a=1, b=2)' } }, undefined, { timeout: ms(60000) });
    assert.equal(r.isError, false, JSON.stringify(r));
    const spans = await traceSpans(rcv, trace, (s) => s.some((x) => x.kind === 3) && s.some((x) => x.kind === 2));
    const req = spans.find((s) => s.kind === 2);
    assert.equal(req.parentSpanId, 'cccccccccccccccc');
    const run = spans.find((s) => s.name === 'codemcp.run');
    assert.equal(run.parentSpanId, req.spanId);
    const call = spans.find((s) => s.name === 'execute_tool add');
    assert.equal(call.parentSpanId, run.spanId);
    assert.equal(spans.find((s) => s.kind === 3).parentSpanId, call.spanId);
    assert.match(rcv.types[0], /^POST \/v1\/traces application\/json$/);
    await transport.terminateSession().catch(() => {});
    await client.close();
    gw.proc.child.kill('SIGTERM');
    await gw.proc.waitExit(ms(15000));
    rcv.close();
  });

  test('a failed program and refused arguments end their spans with status ERROR and error.type', async () => {
    const rcv = await receiver();
    const dir = tempDir('codemcp-traces-');
    const config = writeConfig(dir, { v2: { type: 'local', command: [NODE, V2, '--name', 'v2'] } });
    const h = await connectClient({ config, env: env(rcv.port) });
    await h.client.listTools();
    const call = (trace, args) => h.client.callTool(
      { name: 'execute_python', arguments: args, _meta: { traceparent: `00-${trace}-${PARENT}-01` } }, undefined, { timeout: ms(60000) });
    const raised = 'c'.repeat(32), refused = 'd'.repeat(32);
    assert.equal((await call(raised, { code: 'v2_add(a=1, b=2).result()\nraise ValueError("no")' })).isError, true);
    assert.equal((await call(refused, { code: 5 })).isError, true);
    const a = await traceSpans(rcv, raised, (s) => s.some((x) => x.kind === 2));
    const req = a.find((s) => s.kind === 2), run = a.find((s) => s.name === 'codemcp.run');
    assert.ok(req.error && req.attrs['error.type'] === 'tool_error', JSON.stringify(req));
    assert.ok(run.error && run.attrs['error.type'] === 'exception', JSON.stringify(run));
    const add = a.find((s) => s.name === 'execute_tool add');
    assert.ok(add && !add.error, `the call itself succeeded: ${JSON.stringify(a)}`);
    const b = await traceSpans(rcv, refused, (s) => s.some((x) => x.kind === 2));
    assert.ok(b.find((s) => s.kind === 2).error);
    assert.equal(b.find((s) => s.name === 'preflight').attrs['error.type'], 'invalid_arguments');
    await h.close();
    rcv.close();
  });

  test('a tool answering isError marks its call and upstream request spans ERROR with error.type tool_error', async () => {
    const rcv = await receiver();
    const dir = tempDir('codemcp-traces-');
    const config = writeConfig(dir, { fake: servers.fake() });
    const h = await connectClient({ config, env: env(rcv.port) });
    await h.client.listTools();
    const trace = 'e'.repeat(32);
    const code = 'try:\n    fake_fail()\nexcept Exception as e:\n    print(type(e).__name__)\nfake_echo(text="x")';
    const r = await h.client.callTool(
      { name: 'execute_python', arguments: { code }, _meta: { traceparent: `00-${trace}-${PARENT}-01` } }, undefined, { timeout: ms(60000) });
    assert.equal(r.isError, false, JSON.stringify(r));
    const spans = await traceSpans(rcv, trace, (s) => s.some((x) => x.kind === 2) && s.filter((x) => /^(tools\/call|execute_tool) (fail|echo)$/.test(x.name)).length === 4);
    const by = (name) => spans.find((s) => s.name === name);
    for (const name of ['execute_tool fail', 'tools/call fail'])
      assert.ok(by(name)?.error && by(name).attrs['error.type'] === 'tool_error', `${name}: ${JSON.stringify(spans)}`);
    for (const name of ['execute_tool echo', 'tools/call echo'])
      assert.ok(by(name) && !by(name).error, `${name} answered without isError: ${JSON.stringify(spans)}`);
    await h.close();
    rcv.close();
  });

  for (const mode of ['hang', 'down']) {
    test(`collector ${mode}: runs are not held up, the queue is bounded and drops are counted`, async () => {
      const rcv = await receiver('hang');
      const port = rcv.port;
      if (mode === 'down') rcv.close(); // nothing listens: every export fails at once
      const dir = tempDir('codemcp-traces-');
      const config = writeConfig(dir, { v2: { type: 'local', command: [NODE, V2, '--name', 'v2'] } });
      const h = await connectClient({
        config,
        env: env(port, {
          CODEMCP_OTLP_QUEUE_SPANS: '16', CODEMCP_OTLP_BATCH_SPANS: '4', CODEMCP_OTLP_TIMEOUT_MS: '600000',
          XDG_RUNTIME_DIR: dir, CODEMCP_INSTANCE_LABEL: `traces-${mode}`,
        }),
      });
      await h.client.listTools();
      // 40 runs of 7 spans each: far more than the queue holds while nothing is exported
      for (let i = 0; i < 40; i++) {
        const r = await h.client.callTool({ name: 'execute_python', arguments: { code: `result = v2_add(a=${i}, b=1)` } }, undefined, { timeout: ms(30000) });
        assert.equal(r.isError, false, JSON.stringify(r));
        assert.equal(r.structuredContent.result, i + 1);
      }
      // a loop waiting on a collector that never answers (600 s timeout) would not get here
      const dropped = await waitFor(() => {
        const all = [...h.stderr().matchAll(/(\d+) spans dropped so far/g)].map((m) => Number(m[1]));
        return all.length && Math.max(...all) >= 64 ? Math.max(...all) : null;
      }, ms(20000));
      assert.ok(dropped >= 64, h.stderr());
      // and the operator sees them in the metrics, not only in the log
      const admin = { ...process.env, XDG_RUNTIME_DIR: dir };
      delete admin.CODEMCP_ADMIN_SOCKET;
      const out = await cli(['metrics', '-i', `traces-${mode}`], admin);
      assert.equal(out.code, 0, out.stderr);
      const m = out.stdout.match(/^codemcp_trace_spans_dropped_total (\d+)$/m);
      assert.ok(m && Number(m[1]) >= dropped, `codemcp_trace_spans_dropped_total under ${dropped}:\n${out.stdout}`);
      assert.match(out.stdout, /^codemcp_trace_spans_exported_total 0$/m);
      assert.equal(rcv.spans.length, 0);
      // an idle exporter sleeps: the gateway burns no CPU between runs (a spinning export
      // thread would take a whole core)
      const c0 = cpuSeconds(h.pid);
      await sleep(3000);
      const idle = cpuSeconds(h.pid) - c0;
      assert.ok(idle < 0.2, `the idle gateway used ${idle} s of CPU in 3 s`);
      await h.close();
      if (mode === 'hang') rcv.close();
    });
  }
});
