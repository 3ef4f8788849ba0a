// First-time-right programs through the real binary, against server-everything,
// server-memory and server-filesystem from tests/node_modules.
//
//   * tests/data/firsttime/faulty/*.py: refused pre-flight (error_kind "validation"), "not
//     executed", no call made, every `# expect:` text (which names the fix) in the report;
//   * tests/data/firsttime/valid/*.py: dynamic and async programs that run and whose result
//     equals their `# result: <json>` line;
//   * 10 x 1 s long-running calls awaited through asyncio.gather finish in about 1 s;
//   * a read after a write to the same server sees the write (program order);
//   * the description carries the nested shapes and stays <= 35 % of the servers' own
//     tools/list JSON in o200k tokens (gpt-tokenizer, pinned in tests/tokenizer/).
// CODEMCP_FIRSTTIME_PROBE=1 prints every valid program's actual result (to write new cases).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import {
  TESTS, connectClient, tempDir, writeConfig, servers, ms, StdioClientTransport, Client, learnThreeServers,
} from './lib.mjs';

const CORPUS = path.join(TESTS, 'data', 'firsttime');
const PROBE = process.env.CODEMCP_FIRSTTIME_PROBE === '1';

function readCase(file) {
  const code = fs.readFileSync(file, 'utf8');
  const expects = [];
  let result;
  for (const line of code.split('\n')) {
    if (line.startsWith('# expect:')) expects.push(line.slice('# expect:'.length).trim());
    else if (line.startsWith('# result:')) result = JSON.parse(line.slice('# result:'.length));
  }
  return { name: path.basename(file), code, expects, result };
}

function corpus(kind) {
  const dir = path.join(CORPUS, kind);
  return fs.readdirSync(dir).filter((n) => n.endsWith('.py')).sort().map((n) => readCase(path.join(dir, n)));
}

/** The servers' own tools/list answers (all pages), straight from each server. */
async function toolsLists(entries) {
  const out = [];
  for (const entry of entries) {
    const [command, ...args] = entry.command;
    const transport = new StdioClientTransport({ command, args, env: { ...process.env, ...(entry.environment || {}) },
      stderr: 'ignore' });
    const client = new Client({ name: 'codemcp-e2e-direct', version: '0' });
    await client.connect(transport, { timeout: ms(15000) });
    try {
      // server-everything registers some tools late (tests/data/tools/README.md).
      await new Promise((r) => setTimeout(r, 500));
      const tools = [];
      let cursor;
      do {
        const r = await client.listTools(cursor ? { cursor } : undefined, { timeout: ms(15000) });
        tools.push(...r.tools);
        cursor = r.nextCursor;
      } while (cursor);
      out.push(JSON.stringify({ tools }));
    } finally {
      await client.close();
    }
  }
  return out;
}

const faulty = corpus('faulty');
const valid = corpus('valid');

describe('first-time-right programs through the real binary', () => {
  let h, dir, desc;
  const entries = {};

  before(async () => {
    dir = tempDir('codemcp-firsttime-', { shared: true });
    const fsDir = path.join(dir, 'allowed');
    fs.mkdirSync(fsDir);
    fs.writeFileSync(path.join(fsDir, 'notes.md'), '# notes\nhello\nworld\n');
    fs.writeFileSync(path.join(fsDir, 'todo.txt'), 'a\nb\nc\n');
    entries.everything = servers.everything();
    entries.memory = servers.memory(path.join(dir, 'memory.jsonl'));
    entries.filesystem = servers.filesystem(fsDir);
    const config = writeConfig(dir, entries);
    h = await connectClient({
      config,
      shared: true,
      env: { CODEMCP_ENFORCE_MUTATIONS: 'false', CODEMCP_VALIDATE: 'true', CODEMCP_LEARN_SHAPES: 'true' },
    });
    desc = await learnThreeServers(h.client, run);
  });

  after(async () => {
    await h?.close?.();
  });

  function run(code, extra = {}, timeout = 20000) {
    return h.client.callTool({ name: 'execute_python', arguments: { code, timeout_ms: timeout, ...extra } },
      undefined, { timeout: ms(timeout + 30000) });
  }

  test('the corpus is large enough', () => {
    assert.ok(faulty.length >= 60, `${faulty.length} faulty programs`);
    assert.ok(valid.length >= 40, `${valid.length} valid programs`);
  });

  describe('faulty programs are caught pre-flight with the fix', () => {
    for (const c of faulty) {
      test(c.name, async () => {
        assert.ok(c.expects.length > 0);
        const r = await run(c.code);
        const env = r.structuredContent;
        assert.equal(r.isError, true, `${c.name} was not refused: ${JSON.stringify(env)}`);
        assert.equal(env.error_kind, 'validation', JSON.stringify(env));
        assert.ok(env.error.includes('not executed'), env.error);
        for (const want of c.expects) assert.ok(env.error.includes(want), `${c.name}: ${JSON.stringify(want)} in:\n${env.error}`);
        for (const k of ['stdout', 'trace', 'mutations', 'result']) assert.ok(!(k in env), `${c.name}: ${k} present`);
      });
    }
  });

  describe('valid dynamic and async programs run and return the right value', () => {
    for (const c of valid) {
      test(c.name, async () => {
        const r = await run(c.code);
        const env = r.structuredContent;
        if (PROBE) console.log(`${c.name}: ${JSON.stringify(env)}`);
        assert.equal(r.isError, false, `${c.name} failed:\n${env.error}`);
        assert.deepEqual(env.result, c.result, `${c.name}: ${JSON.stringify(env.result)}`);
      });
    }
  });

  test('10 x 1 s calls awaited through asyncio.gather overlap', async () => {
    const code = `import asyncio, time
async def op(i):
    await everything_trigger_long_running_operation(duration=1, steps=1)
    return i
async def main():
    t0 = time.monotonic()
    out = await asyncio.gather(*(op(i) for i in range(10)))
    return {"out": out, "s": time.monotonic() - t0}
result = asyncio.run(main())`;
    const r = await run(code, {}, 60000);
    const env = r.structuredContent;
    assert.equal(r.isError, false, env.error);
    assert.deepEqual(env.result.out, [...Array(10).keys()]);
    // One after the other would take 10 s; overlapped it is about 1 s (generous bound).
    assert.ok(env.result.s >= 0.9 && env.result.s < 5, `took ${env.result.s} s`);
  });

  test('top-level await of a gather of Pendings overlaps too', async () => {
    const code = `import asyncio, time
t0 = time.monotonic()
rs = await asyncio.gather(*[everything_trigger_long_running_operation(duration=1, steps=1) for _ in range(5)])
result = {"n": len(rs), "s": time.monotonic() - t0}`;
    const r = await run(code, {}, 60000);
    const env = r.structuredContent;
    assert.equal(r.isError, false, env.error);
    assert.equal(env.result.n, 5);
    assert.ok(env.result.s < 4, `took ${env.result.s} s`);
  });

  test('writes keep program order: a read after a write sees it', async () => {
    // Many writes then a read, none of them awaited: without ordering the read overtakes.
    const code = `names = ["order_%d" % i for i in range(8)]
for n in names:
    memory_create_entities(entities=[{"name": n, "entityType": "probe", "observations": ["x"]}])
g = memory_read_graph()
result = sorted(e["name"] for e in g["entities"] if e["name"].startswith("order_"))`;
    const r = await run(code);
    const env = r.structuredContent;
    assert.equal(r.isError, false, env.error);
    assert.deepEqual(env.result, [...Array(8).keys()].map((i) => `order_${i}`));
  });

  test('a KeyError on a result names the tool, the path and the keys', async () => {
    const r = await run(`g = memory_read_graph()
key = "nme"
result = [e[key] for e in g["entities"]]`);
    const env = r.structuredContent;
    assert.equal(env.error_kind, 'exception', JSON.stringify(env));
    assert.match(env.error, /Hint: memory_read_graph's result\['entities'\]\[\d+\] has no key 'nme'; its keys: name, entityType, observations\./);
  });

  test('the description carries nested shapes and stays <= 35 % of tools/list in tokens', async () => {
    assert.match(desc, /def memory_create_entities\(entities: list\[\{name: str, entityType: str, observations: list\[str\]\}\]\)/);
    assert.match(desc, /def everything_get_sum\(a: float, b: float\) -> str:/);
    assert.match(desc, /def filesystem_edit_file\(path: str, edits: list\[\{oldText: str, newText: str\}\], dryRun: bool \| None = None\)/);
    const require = createRequire(path.join(TESTS, 'tokenizer', 'package.json'));
    let encode;
    try {
      ({ encode } = require('gpt-tokenizer/cjs/encoding/o200k_base'));
    } catch {
      ({ encode } = await import(path.join(TESTS, 'tokenizer', 'node_modules', 'gpt-tokenizer', 'esm', 'encoding', 'o200k_base.js')));
    }
    const lists = await toolsLists([entries.everything, entries.memory, entries.filesystem]);
    const listTokens = encode(lists.join('\n')).length;
    const descTokens = encode(desc).length;
    const ratio = descTokens / listTokens;
    console.log(`# description ${descTokens} tokens (${Buffer.byteLength(desc)} bytes), tools/list ${listTokens} tokens: ${(100 * ratio).toFixed(1)} %`);
    assert.ok(ratio <= 0.35, `description is ${(100 * ratio).toFixed(1)} % of tools/list`);
  });
});
