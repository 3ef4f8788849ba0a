// The input relay: an upstream tool that answers with an
// InputRequiredResult (MCP 2026-07-28 multi round-trip requests, SEP-2322) while a program runs.
// A 2026 client that declared the capability gets execute_python's own `input_required`
// result (the server's inputRequests, codemcp's requestState); its retry with the answers
// resumes the waiting program. Real peers: the SDK v2 client (@modelcontextprotocol/client
// 2.4.0, tests/v2) with an elicitation handler over Streamable HTTP and stdio, the SDK v2
// server fixture (tests/v2/server.mjs, its `confirm` tool asks "Really <action>?") as the
// upstream. Hostile retries (unknown, answered, expired, another principal's, other
// arguments) get clear errors; a client without the capability keeps the ToolError.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { NODE, Proc, TESTS, codemcpCommand, codemcpEnv, ms, tempDir, waitFor, writeConfig, sharedHttpGateway, meta2026 } from './lib.mjs';

const V2DIR = path.join(TESTS, 'v2', 'node_modules', '@modelcontextprotocol', 'client', 'dist');
const { Client, StreamableHTTPClientTransport } = await import(path.join(V2DIR, 'index.mjs'));
const { StdioClientTransport } = await import(path.join(V2DIR, 'stdio.mjs'));
const V2SERVER = path.join(TESTS, 'v2', 'server.mjs');

const V = '2026-07-28';
const CAPS = { elicitation: { form: {} } };
const meta = (caps = CAPS) => meta2026('raw-relay', caps);
const TA = 'alice-token-0123456789abcdef', TB = 'bob-token-0123456789abcdef';
const CONFIRM = 'before = 41\nanswer = v2_confirm(action="deploy")\nresult = [before + 1, str(answer)]';

/** An SDK v2 client (pinned 2026) whose elicitation handler answers with answers.shift(). */
function withHandler(client, answers, seen) {
  client.setRequestHandler('elicitation/create', async (req) => {
    seen.push(req.params.message);
    return answers.shift() ?? { action: 'decline' };
  });
  return client;
}

describe('input relay over Streamable HTTP', () => {
  const g = sharedHttpGateway({ prefix: 'codemcp-relay-', tokens: { alice: TA, bob: TB },
    mcp: { v2: { type: 'local', command: [NODE, V2SERVER] } },
    env: { CODEMCP_WORKERS: '4', CODEMCP_INPUT_WAIT_MS: '4000', CODEMCP_LOG: 'info' } });

  async function sdk(token = TA) {
    const transport = new StreamableHTTPClientTransport(new URL(g.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
    const client = new Client({ name: 'relay-e2e', version: '0' }, { capabilities: CAPS, versionNegotiation: { mode: { pin: V } } });
    return { client, transport };
  }

  /** One raw 2026 tools/call of execute_python; resolves the final JSON-RPC message. */
  function call(token, id, args, extra = {}, caps = CAPS) {
    const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { _meta: meta(caps), name: 'execute_python', arguments: args, ...extra } });
    const u = new URL(g.url);
    return new Promise((resolve, reject) => {
      const req = http.request({ hostname: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent: false, headers: {
        'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`,
        'mcp-protocol-version': V, 'mcp-method': 'tools/call', 'mcp-name': 'execute_python', 'content-length': Buffer.byteLength(body) } }, (res) => {
        let t = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (t += d));
        res.on('end', () => {
          const msgs = /event-stream/.test(res.headers['content-type'] || '')
            ? t.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).map((l) => JSON.parse(l.slice(6)))
            : [JSON.parse(t)];
          resolve({ status: res.statusCode, msg: msgs.filter((m) => m.id === id).at(-1), text: t });
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  test('SDK v2 client: the program waits for the answer the user gives, then goes on', async () => {
    const seen = [];
    const { client, transport } = await sdk();
    withHandler(client, [{ action: 'accept', content: { ok: true } }], seen);
    await client.connect(transport, { timeout: ms(20000) });
    try {
      const r = await client.callTool({ name: 'execute_python', arguments: { code: CONFIRM } }, { timeout: ms(60000) });
      assert.equal(r.isError, false, JSON.stringify(r));
      assert.deepEqual(r.structuredContent.result, [42, 'done: deploy'], JSON.stringify(r));
      assert.deepEqual(seen, ['Really deploy?']);
      // Declined first: the server asks again, the relay relays again, the second answer counts.
      seen.length = 0;
      withHandler(client, [{ action: 'decline' }, { action: 'accept', content: { ok: true } }], seen);
      const again = await client.callTool({ name: 'execute_python', arguments: { code: 'result = str(v2_confirm(action="ship"))' } }, { timeout: ms(60000) });
      assert.equal(again.structuredContent.result, 'done: ship', JSON.stringify(again));
      assert.deepEqual(seen, ['Really ship?', 'Really ship?']);
    } finally {
      await client.close();
    }
  });

  test('raw: the input_required result, the retry, and every wrong retry told what is wrong', async () => {
    const args = { code: CONFIRM };
    const first = await call(TA, 1, args);
    assert.equal(first.status, 200, first.text);
    const ir = first.msg.result;
    assert.equal(ir.resultType, 'input_required', first.text);
    assert.equal(ir.inputRequests.ok.method, 'elicitation/create', first.text);
    assert.match(ir.inputRequests.ok.params.message, /Really deploy\?/);
    assert.match(ir.requestState, /^rs_[A-Za-z0-9_-]{32}$/);
    const answers = { ok: { action: 'accept', content: { ok: true } } };
    const wrong = async (token, id, a, extra, pattern) => {
      const r = await call(token, id, a, extra);
      assert.equal(r.msg.error?.code, -32602, r.text);
      assert.match(r.msg.error.message, pattern, r.text);
      assert.equal(r.msg.id, id);
    };
    await wrong(TA, 2, args, { requestState: 'rs_' + 'A'.repeat(32), inputResponses: answers }, /requestState is unknown/);
    await wrong(TA, 3, args, { requestState: 42 }, /requestState must be the string/);
    await wrong(TB, 4, args, { requestState: ir.requestState, inputResponses: answers }, /issued to another principal/);
    await wrong(TA, 5, { code: 'result = "something else"' }, { requestState: ir.requestState, inputResponses: answers }, /other arguments/);
    await wrong(TA, 6, args, { requestState: ir.requestState, inputResponses: 'yes' }, /inputResponses must be an object/);
    // None of those used it up: the right retry continues the program.
    const done = await call(TA, 7, args, { requestState: ir.requestState, inputResponses: answers });
    assert.equal(done.status, 200, done.text);
    assert.equal(done.msg.result.isError, false, done.text);
    assert.deepEqual(done.msg.result.structuredContent.result, [42, 'done: deploy'], done.text);
    assert.equal(done.msg.result.resultType, 'complete');
    await wrong(TA, 8, args, { requestState: ir.requestState, inputResponses: answers }, /already answered/);
  });

  test('raw: a requestState nobody answers expires and its run is cancelled; the worker is free again', async () => {
    const args = { code: 'x = str(v2_confirm(action="wait"))\nresult = "answered"' };
    const first = await call(TA, 20, args);
    const st = first.msg.result.requestState;
    assert.ok(st, first.text);
    await new Promise((r) => setTimeout(r, ms(5500))); // past CODEMCP_INPUT_WAIT_MS=4000
    const late = await call(TA, 21, args, { requestState: st, inputResponses: { ok: { action: 'accept', content: { ok: true } } } });
    assert.equal(late.msg.error?.code, -32602, late.text);
    assert.match(late.msg.error.message, /expired/, late.text);
    // The principal's worker is not held by the cancelled run.
    const next = await call(TA, 22, { code: 'result = 5' });
    assert.equal(next.msg.result.structuredContent.result, 5, next.text);
  });

  test('raw: a 2026 client that did not declare elicitation keeps the ToolError', async () => {
    const r = await call(TA, 30, { code: 'try:\n    str(v2_confirm(action="x"))\n    result = "no"\nexcept ToolError as e:\n    result = e.kind' }, {}, {});
    assert.equal(r.msg.result.structuredContent.result, 'input_required', r.text);
  });
});

describe('input relay over stdio (SDK v2 client, pinned 2026-07-28)', () => {
  test('the program waits for the answer, then goes on; the implicit namespace stays', async () => {
    const dir = tempDir('codemcp-relay-stdio-');
    const config = writeConfig(dir, { v2: { type: 'local', command: [NODE, V2SERVER] } });
    const [cmd, args] = codemcpCommand([]);
    const transport = new StdioClientTransport({ command: cmd, args, env: codemcpEnv({ config }), stderr: 'pipe' });
    const seen = [];
    const client = withHandler(new Client({ name: 'relay-stdio', version: '0' }, { capabilities: CAPS, versionNegotiation: { mode: { pin: V } } }),
      [{ action: 'accept', content: { ok: true } }], seen);
    await client.connect(transport, { timeout: ms(20000) });
    try {
      const r = await client.callTool({ name: 'execute_python', arguments: { code: CONFIRM } }, { timeout: ms(60000) });
      assert.deepEqual(r.structuredContent.result, [42, 'done: deploy'], JSON.stringify(r));
      assert.deepEqual(seen, ['Really deploy?']);
      const next = await client.callTool({ name: 'execute_python', arguments: { code: 'result = before' } }, { timeout: ms(60000) });
      assert.equal(next.structuredContent.result, 41, JSON.stringify(next));
    } finally {
      await client.close();
    }
  });
});
