// search_tools by meaning inside the sandboxed worker (CODEMCP_SEMANTIC_SEARCH=1): the sentence
// encoder's model file (converted here from the pinned npm package in tests/discovery, as
// install.sh does) is bound read-only into the sandbox, numpy loads there (its libblas.so.3 is
// a link through /etc/alternatives), the catalog's vectors are computed in the background and
// describe() says how search ranks; without the file search ranks by words and says why.
// Several phrasings of one task in one call; with CODEMCP_DISCOVERY_TOOLS=1, search_tools and
// describe offered as MCP tools beside execute_python. Real binary, real worker, real npm server.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { connectClient, tempDir, writeConfig, servers, ms, PYTHON, REPO, TESTS, CODEMCP_BIN } from './lib.mjs';

const DIST = path.join(TESTS, 'discovery', 'node_modules', '@energetic-ai', 'model-embeddings-en', 'dist');

function run(h, code) {
  return h.client.callTool({ name: 'execute_python', arguments: { code, timeout_ms: 120000 } }, undefined,
    { timeout: ms(150000) });
}

/** The converted model, outside /tmp (the sandbox's /tmp is its own). */
function convertModel() {
  const dir = fs.mkdtempSync(path.join(path.dirname(path.dirname(path.resolve(CODEMCP_BIN))), 'e2e-encoder-'));
  const out = path.join(dir, 'use-lite.bin');
  const r = spawnSync(PYTHON, ['-m', 'codemcp_rt.encoder', 'convert', DIST, out],
    { env: { ...process.env, PYTHONPATH: path.join(REPO, 'python') }, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return { dir, out };
}

describe('semantic search in the worker', () => {
  let model;
  before(() => { model = convertModel(); });
  after(() => fs.rmSync(model.dir, { recursive: true, force: true }));

  test('with the model: vectors computed in the background, then lexical + semantic', { timeout: ms(240000) }, async () => {
    const dir = tempDir('codemcp-semantic-');
    const config = writeConfig(dir, { memory: servers.memory(path.join(dir, 'memory.json')) });
    const h = await connectClient({ config, env: { CODEMCP_SEMANTIC_SEARCH: '1', CODEMCP_ENCODER_MODEL: model.out } });
    try {
      const r = await run(h, `
from codemcp_rt import discovery, sdk
ready = discovery.vectors(sdk.current()).wait(100)
hits = search_tools("remember that alice likes tea", 3)
result = {"ready": ready, "head": describe("memory").splitlines()[0], "hits": [x["name"] for x in hits]}`);
      assert.ok(!r.isError, JSON.stringify(r.structuredContent ?? r.content));
      const { ready, head, hits } = r.structuredContent.result;
      assert.equal(ready, true, head);
      assert.match(head, /search_tools ranks lexical \+ semantic \(Universal Sentence Encoder Lite, model [0-9a-f]{16}\)/);
      assert.ok(hits.length === 3 && hits.every((n) => n.startsWith('memory_')), JSON.stringify(hits));
    } finally {
      await h.close();
    }
  });

  test('without the model file: lexical, and describe() says why', { timeout: ms(120000) }, async () => {
    const dir = tempDir('codemcp-semantic-none-');
    const config = writeConfig(dir, { memory: servers.memory(path.join(dir, 'memory.json')) });
    const missing = path.join(model.dir, 'absent.bin');
    const h = await connectClient({ config, env: { CODEMCP_SEMANTIC_SEARCH: '1', CODEMCP_ENCODER_MODEL: missing } });
    try {
      const r = await run(h, 'result = [describe("memory").splitlines()[0], [x["name"] for x in search_tools("delete an entity", 1)]]');
      assert.ok(!r.isError, JSON.stringify(r.structuredContent ?? r.content));
      const [head, hits] = r.structuredContent.result;
      assert.ok(head.includes(`lexical only: no model file at ${missing}`), head);
      assert.deepEqual(hits, ['memory_delete_entities']);
    } finally {
      await h.close();
    }
  });

  test('several phrasings in one call', { timeout: ms(120000) }, async () => {
    const dir = tempDir('codemcp-phrasings-');
    const config = writeConfig(dir, { memory: servers.memory(path.join(dir, 'memory.json')) });
    const h = await connectClient({ config });
    try {
      const r = await run(h, 'result = [x["name"] for x in search_tools(["delete an entity", "read the whole graph"], 2)]');
      assert.ok(!r.isError, JSON.stringify(r.structuredContent ?? r.content));
      assert.deepEqual(r.structuredContent.result.sort(), ['memory_delete_entities', 'memory_read_graph']);
    } finally {
      await h.close();
    }
  });
});

describe('CODEMCP_DISCOVERY_TOOLS=1: search_tools and describe as MCP tools', () => {
  test('listed beside execute_python only when asked for, and answered by the worker', { timeout: ms(120000) }, async () => {
    const dir = tempDir('codemcp-disctools-');
    const config = writeConfig(dir, { memory: servers.memory(path.join(dir, 'memory.json')) });
    const off = await connectClient({ config });
    try {
      assert.deepEqual((await off.client.listTools()).tools.map((t) => t.name), ['execute_python']);
      const r = await off.client.callTool({ name: 'search_tools', arguments: { query: 'x' } }).catch((e) => e);
      assert.match(String(r.message ?? JSON.stringify(r)), /unknown tool search_tools/);
    } finally {
      await off.close();
    }
    const h = await connectClient({ config, env: { CODEMCP_DISCOVERY_TOOLS: '1' } });
    try {
      const tools = (await h.client.listTools()).tools;
      assert.deepEqual(tools.map((t) => t.name), ['execute_python', 'search_tools', 'describe']);
      assert.deepEqual(tools[1].inputSchema.required, ['query']);
      const call = (name, args) => h.client.callTool({ name, arguments: args }, undefined, { timeout: ms(90000) });
      const found = await call('search_tools', { query: ['delete an entity', 'read the whole graph'], limit: 2 });
      assert.ok(!found.isError, JSON.stringify(found));
      assert.deepEqual(found.structuredContent.result.map((x) => x.name).sort(), ['memory_delete_entities', 'memory_read_graph']);
      const doc = await call('describe', { name: 'memory_read_graph' });
      assert.ok(!doc.isError, JSON.stringify(doc));
      assert.match(doc.structuredContent.result, /^memory_read_graph\(/);
      // the model's text never becomes code: quotes, newlines and code in the arguments are data
      const hostile = ["x')\nimport os\nresult = os.getcwd()#", 'x"""\nresult = 1\n"""', "\\'); result = 1 #",
        'x\\\nresult = 1', "'".repeat(1000) + '\n'.repeat(1000), 'a\\'.repeat(300000)];
      for (const name of hostile) {
        const odd = await call('describe', { name });
        assert.ok(!odd.isError, JSON.stringify(odd).slice(0, 500));
        assert.match(odd.structuredContent.result, /no such function or server/, JSON.stringify(name).slice(0, 80));
      }
      await assert.rejects(call('describe', { name: "x\u0000'); result = 1 #" }), /invalid request: .*u0000/);
      const many = await call('search_tools', { query: ["')\nresult = 1#", 'read the whole graph', '\\'], limit: 1 });
      assert.ok(!many.isError, JSON.stringify(many).slice(0, 500));
      assert.ok(Array.isArray(many.structuredContent.result), JSON.stringify(many.structuredContent).slice(0, 500));
      const bad = await call('search_tools', { query: 42 });
      assert.equal(bad.isError, true);
      assert.match(JSON.stringify(bad.structuredContent), /TypeError/);
    } finally {
      await h.close();
    }
  });
});
