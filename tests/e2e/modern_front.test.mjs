// codemcp serving the 2026-07-28 protocol era over stdio: the official TypeScript SDK v2 client (@modelcontextprotocol/client 2.4.0,
// tests/v2) in its `legacy`, `auto` and pinned-2026 modes against the real binary, and raw
// JSON-RPC lines for the envelope rules (-32022 with the supported list, -32602 for a missing
// envelope, removed methods, the id echoed on every error). The upstream is the SDK v2 fixture
// server (tests/v2/server.mjs), whose `grow` tool changes its tool list on demand.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';

import { NODE, RawClient, TESTS, codemcpCommand, codemcpEnv, ms, tempDir, waitFor, writeConfig, meta2026 } from './lib.mjs';

const V2DIR = path.join(TESTS, 'v2', 'node_modules', '@modelcontextprotocol', 'client', 'dist');
const { Client } = await import(path.join(V2DIR, 'index.mjs'));
const { StdioClientTransport } = await import(path.join(V2DIR, 'stdio.mjs'));
const V2SERVER = path.join(TESTS, 'v2', 'server.mjs');

const META = meta2026('raw-2026');

function config() {
  const dir = tempDir('codemcp-front26-');
  return writeConfig(dir, { v2: { type: 'local', command: [NODE, V2SERVER] } });
}

async function v2client(mode) {
  const [cmd, args] = codemcpCommand([]);
  const transport = new StdioClientTransport({ command: cmd, args, env: codemcpEnv({ config: config() }), stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d) => (stderr += d));
  const client = new Client({ name: 'codemcp-e2e-v2', version: '0' }, { versionNegotiation: { mode } });
  await client.connect(transport, { timeout: ms(20000) });
  return { client, stderr: () => stderr };
}

const run = (c, code, extra = {}) =>
  c.callTool({ name: 'execute_python', arguments: { code, ...extra } }, { timeout: ms(60000) });

for (const [label, mode] of [['legacy', 'legacy'], ['auto', 'auto'], ['pinned 2026-07-28', { pin: '2026-07-28' }]]) {
  describe(`SDK v2 client, ${label} mode`, () => {
    test('lists, runs, keeps variables, and learns of tool changes', async () => {
      const { client } = await v2client(mode);
      try {
        const era = client.getNegotiatedProtocolVersion();
        assert.equal(era, mode === 'legacy' ? '2025-11-25' : '2026-07-28');
        const list = await client.listTools();
        assert.deepEqual(list.tools.map((t) => t.name), ['execute_python']);
        if (mode !== 'legacy') assert.ok(list.ttlMs > 0, 'a 2026 tools/list carries ttlMs');
        const r = await run(client, 'x = v2_add(a=20, b=22)\nresult = x');
        assert.equal(r.isError, false, JSON.stringify(r));
        assert.equal(r.structuredContent.result, 42);
        // stdio keeps one implicit namespace: the next run sees x.
        const again = await run(client, 'result = x + 1');
        assert.equal(again.structuredContent.result, 43, JSON.stringify(again));

        // The results learned so far (v2_add -> int) changed the description already; list
        // again so the next change is announced to this client too (one per listing).
        await client.listTools();
        let changed = 0;
        client.setNotificationHandler('notifications/tools/list_changed', () => {
          changed++;
        });
        let sub;
        if (mode !== 'legacy') sub = await client.listen({ toolsListChanged: true });
        if (sub) assert.equal(sub.honoredFilter.toolsListChanged, true);
        const g = await run(client, 'result = v2_grow()');
        assert.equal(g.structuredContent.result, 'extra_1', JSON.stringify(g));
        assert.ok(await waitFor(() => changed > 0, ms(15000), 50), 'no tools/list_changed reached the client');
        // A change may be announced for the learned result of v2_grow before the new tool is
        // in: wait for the tool itself.
        assert.ok(await waitFor(async () => (await client.listTools()).tools[0].description.includes('def v2_extra_1('),
          ms(15000), 100), 'the new tool never reached the description');
        const x = await run(client, 'result = v2_extra_1()');
        assert.equal(x.structuredContent.result, 'extra 1', JSON.stringify(x));
        await sub?.close();
      } finally {
        await client.close();
      }
    });

    test('bad execute_python arguments come back as a tool error the model can read', async () => {
      const { client } = await v2client(mode);
      try {
        for (const [args, re] of [
          [{ code: 42 }, /"code" \(a string of Python\) is required/],
          [{ code: '1', dry_run: 'yes' }, /"dry_run" must be true or false/],
          [{ code: '1', timeout_ms: 'soon' }, /"timeout_ms" must be a positive integer/],
          [{ code: '1', speed: 'fast' }, /unknown argument "speed"/],
          [{}, /"code" \(a string of Python\) is required/],
        ]) {
          const r = await client.callTool({ name: 'execute_python', arguments: args });
          assert.equal(r.isError, true, JSON.stringify(r));
          assert.match(r.content[0].text, re);
        }
      } finally {
        await client.close();
      }
    });
  });
}

describe('the 2026 envelope, line by line', () => {
  test('discover, -32022, -32602, removed methods; ids echoed; 2025 requests unchanged', async () => {
    const c = new RawClient({ config: config() });
    try {
      const d = await c.request('server/discover', { _meta: META }, { id: 'd1' });
      assert.equal(d.id, 'd1');
      assert.ok(d.result.supportedVersions.includes('2026-07-28'), JSON.stringify(d));
      assert.ok(d.result.supportedVersions.includes('2025-11-25'));
      assert.equal(d.result.resultType, 'complete');
      assert.equal(d.result._meta['io.modelcontextprotocol/serverInfo'].name, 'codemcp');
      assert.equal(d.result.capabilities.tools.listChanged, true);

      const old = await c.request('tools/list', { _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } }, { id: 7 });
      assert.equal(old.id, 7);
      assert.equal(old.error.code, -32022, JSON.stringify(old));
      assert.ok(old.error.data.supported.includes('2026-07-28'));
      assert.equal(old.error.data.requested, '2099-01-01');

      const nocaps = await c.request('tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } }, { id: 'n' });
      assert.equal(nocaps.id, 'n');
      assert.equal(nocaps.error.code, -32602);
      assert.match(nocaps.error.message, /clientCapabilities/);

      for (const method of ['ping', 'logging/setLevel']) {
        const r = await c.request(method, { _meta: META, level: 'info' }, { id: method });
        assert.equal(r.id, method);
        assert.equal(r.error.code, -32601, JSON.stringify(r));
        assert.match(r.error.message, /removed in protocol 2026-07-28/);
      }

      const list = await c.request('tools/list', { _meta: META }, { id: 'l' });
      assert.equal(list.result.resultType, 'complete');
      assert.equal(list.result.cacheScope, 'private');
      assert.ok(list.result.ttlMs > 0);
      assert.equal(list.result.tools[0].name, 'execute_python');

      const call = await c.request('tools/call', { _meta: META, name: 'execute_python', arguments: { code: 'result = 6 * 7' } }, { id: 'c' });
      assert.equal(call.result.resultType, 'complete', JSON.stringify(call));
      assert.equal(call.result.structuredContent.result, 42);

      // Without the envelope this is the 2025 era, which has ping and no resultType.
      assert.deepEqual((await c.request('ping', undefined, { id: 'p' })).result, {});
    } finally {
      await c.kill();
    }
  });
});
