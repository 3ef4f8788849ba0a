// The test peer itself: tests/fixtures/fake_upstream.py driven by the official SDK client
// directly (no codemcp). If these fail, codemcp's upstream tests cannot be trusted.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import {
  Client,
  FAKE_UPSTREAM,
  PYTHON,
  StdioClientTransport,
  ms,
  readFakeLog,
  sleep,
  tempDir,
  waitFor,
} from './lib.mjs';

async function connectFake(flags, { roots } = {}) {
  const transport = new StdioClientTransport({
    command: PYTHON,
    args: [FAKE_UPSTREAM, ...flags],
    env: { ...process.env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr.setEncoding('utf8');
  transport.stderr.on('data', (d) => (stderr += d));
  const client = new Client({ name: 'fake-check', version: '0' }, { capabilities: roots ? { roots: {} } : {} });
  if (roots) client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots }));
  await client.connect(transport, { timeout: ms(10000) });
  return { client, stderr: () => stderr };
}

test('fake upstream: tools and results', async () => {
  const { client } = await connectFake([]);
  try {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.deepEqual(names, ['echo', 'add', 'sleep', 'fail', 'boom', 'big', 'structured', 'image', 'last_client_answers']);
    const echo = await client.callTool({ name: 'echo', arguments: { text: 'héllo' } });
    assert.deepEqual(echo.content, [{ type: 'text', text: 'héllo' }]);
    const add = await client.callTool({ name: 'add', arguments: { a: 2, b: 0.5 } });
    assert.equal(add.content[0].text, '2.5');
    const fail = await client.callTool({ name: 'fail', arguments: {} });
    assert.equal(fail.isError, true);
    await assert.rejects(client.callTool({ name: 'boom', arguments: {} }), /boom/);
    const st = await client.callTool({ name: 'structured', arguments: {} });
    assert.deepEqual(st.structuredContent.items.map((i) => i.id), [1, 2]);
    const img = await client.callTool({ name: 'image', arguments: {} });
    assert.equal(img.content[0].type, 'image');
    const big = await client.callTool({ name: 'big', arguments: { bytes: 100000 } });
    assert.equal(big.content[0].text.length, 100000);
    await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), /unknown tool/);
  } finally {
    await client.close();
  }
});

test('fake upstream: pagination follows nextCursor', async () => {
  const { client } = await connectFake(['--paginate', '4']);
  try {
    const p1 = await client.listTools();
    assert.equal(p1.tools.length, 4);
    assert.equal(p1.nextCursor, '4');
    const p3 = await client.listTools({ cursor: '8' });
    assert.equal(p3.tools.length, 1);
    assert.equal(p3.nextCursor, undefined);
  } finally {
    await client.close();
  }
});

test('fake upstream: slow call honours notifications/cancelled', async () => {
  const { client, stderr } = await connectFake(['--slow', 'echo=5000']);
  try {
    const ac = new AbortController();
    const call = client.callTool({ name: 'echo', arguments: { text: 'x' } }, undefined, { signal: ac.signal });
    await sleep(200);
    ac.abort('test cancels');
    await assert.rejects(call);
    const logged = await waitFor(() => /stopped after cancellation/.test(stderr()), ms(3000));
    assert.ok(logged, `fake did not log the cancellation; stderr:\n${stderr()}`);
  } finally {
    await client.close();
  }
});

test('fake upstream: asks the client for ping and roots and records the answers', async () => {
  const { client } = await connectFake(['--ask-ping', '--ask-roots'], { roots: [{ uri: 'file:///tmp', name: 'tmp' }] });
  try {
    const answers = await waitFor(async () => {
      const r = await client.callTool({ name: 'last_client_answers', arguments: {} });
      return r.structuredContent.answers.length === 2 ? r.structuredContent.answers : null;
    }, ms(3000));
    assert.ok(answers, 'client answers never recorded');
    assert.deepEqual(answers[0].result, {});
    assert.deepEqual(answers[1].result.roots, [{ uri: 'file:///tmp', name: 'tmp' }]);
  } finally {
    await client.close();
  }
});

test('fake upstream: list_changed burst, bad json, log file', async () => {
  const dir = tempDir();
  const log = path.join(dir, 'log.jsonl');
  const child = spawn(PYTHON, [FAKE_UPSTREAM, '--list-changed-burst', '3', '--bad-json', '--log-file', log]);
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d) => (out += d));
  const send = (m) => child.stdin.write(JSON.stringify(m) + '\n');
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2099-01-01', capabilities: {}, clientInfo: { name: 'x', version: '0' } } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  await waitFor(() => (out.match(/list_changed/g) || []).length === 3, ms(3000));
  child.stdin.end();
  await new Promise((r) => child.on('close', r));
  const lines = out.split('\n').filter(Boolean);
  const valid = lines.filter((l) => l.startsWith('{"jsonrpc"'));
  assert.equal(valid.length, 4, out);
  assert.ok(lines.some((l) => l.startsWith('this is not json')));
  assert.equal(JSON.parse(valid[0]).result.protocolVersion, '2025-11-25');
  assert.deepEqual(readFakeLog(log).map((m) => m.method), ['initialize', 'notifications/initialized']);
});
