// Realistic multi-step programs (tests/data/realistic/) through the real binary, against
// server-everything, server-memory (seeded with a few people and companies) and
// server-filesystem (a few notes and a config):
//
//   * preflight/*.py: one mistake each that the SDK and the learned result shapes can see:
//     refused before running (error_kind "validation", "not executed", no call made), every
//     `# expect:` text (the fix) in the report;
//   * runtime/*.py: one mistake each that only shows at run time: the run fails (not
//     refused pre-flight) and the error carries every `# expect:` text (the failing call or
//     line, what was there instead, the fix);
//   * valid/*.py: programs written the same way without the mistake: they run and return
//     their `# result: <json>` line.
// `# options: {json}` adds execute_python arguments (timeout_ms). After the run the tallies
// per directory and `# class:` are printed (the numbers the issue reports).
// CODEMCP_REALISTIC_PROBE=1 prints every program's envelope (to write new cases).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { TESTS, connectClient, tempDir, writeConfig, servers, ms, learnThreeServers } from './lib.mjs';

const CORPUS = path.join(TESTS, 'data', 'realistic');
const PROBE = process.env.CODEMCP_REALISTIC_PROBE === '1';

function readCase(file) {
  const code = fs.readFileSync(file, 'utf8');
  const expects = [];
  let result;
  let options = {};
  let klass = 'valid';
  for (const line of code.split('\n')) {
    if (line.startsWith('# expect:')) expects.push(line.slice('# expect:'.length).trim());
    else if (line.startsWith('# result:')) result = JSON.parse(line.slice('# result:'.length));
    else if (line.startsWith('# options:')) options = JSON.parse(line.slice('# options:'.length));
    else if (line.startsWith('# class:')) klass = line.slice('# class:'.length).trim();
  }
  return { name: path.basename(file), code, expects, result, options, klass };
}

function corpus(kind) {
  const dir = path.join(CORPUS, kind);
  return fs.readdirSync(dir).filter((n) => n.endsWith('.py')).sort().map((n) => readCase(path.join(dir, n)));
}

// The seeded graph: what the programs' results are computed from.
const GRAPH = [
  { type: 'entity', name: 'Ann', entityType: 'person', observations: ['age 34', 'lives in Berlin', 'likes tea'] },
  { type: 'entity', name: 'Bob', entityType: 'person', observations: ['age 41', 'lives in Paris'] },
  { type: 'entity', name: 'Cleo', entityType: 'person', observations: ['age 29', 'likes chess'] },
  { type: 'entity', name: 'Acme', entityType: 'company', observations: ['founded 1999', 'makes anvils'] },
  { type: 'entity', name: 'Globex', entityType: 'company', observations: ['founded 2005'] },
  { type: 'relation', from: 'Ann', to: 'Acme', relationType: 'works_at' },
  { type: 'relation', from: 'Bob', to: 'Globex', relationType: 'works_at' },
  { type: 'relation', from: 'Cleo', to: 'Acme', relationType: 'works_at' },
  { type: 'relation', from: 'Ann', to: 'Bob', relationType: 'knows' },
];
const FILES = {
  'notes/a.md': '# A\nalpha\n',
  'notes/b.md': '# B\nbeta\nbeta two\n',
  'config.json': '{"name": "demo", "retries": 3, "debug": false}\n',
  'todo.txt': 'a\nb\nc\n',
  'data.csv': 'name,score\nann,3\nbob,5\n',
};

const preflight = corpus('preflight');
const runtime = corpus('runtime');
const valid = corpus('valid');
const tally = {};

function count(kind, klass, ok) {
  const k = `${kind}/${klass}`;
  tally[k] ??= { ok: 0, all: 0 };
  tally[k].all += 1;
  if (ok) tally[k].ok += 1;
}

describe('realistic multi-step programs through the real binary', () => {
  let h, dir;

  before(async () => {
    dir = tempDir('codemcp-realistic-', { shared: true });
    const fsDir = path.join(dir, 'allowed');
    for (const [rel, text] of Object.entries(FILES)) {
      fs.mkdirSync(path.dirname(path.join(fsDir, rel)), { recursive: true });
      fs.writeFileSync(path.join(fsDir, rel), text);
    }
    const memFile = path.join(dir, 'memory.jsonl');
    fs.writeFileSync(memFile, GRAPH.map((x) => JSON.stringify(x)).join('\n') + '\n');
    const entries = {
      everything: servers.everything(),
      memory: servers.memory(memFile),
      filesystem: servers.filesystem(fsDir),
    };
    const config = writeConfig(dir, entries);
    h = await connectClient({
      config,
      shared: true,
      env: { CODEMCP_ENFORCE_MUTATIONS: 'false', CODEMCP_VALIDATE: 'true', CODEMCP_LEARN_SHAPES: 'true' },
    });
    await learnThreeServers(h.client, run);
  });

  after(async () => {
    await h?.close?.();
    const lines = Object.entries(tally).sort().map(([k, v]) => `#   ${k}: ${v.ok}/${v.all}`);
    const sum = (kind) => Object.entries(tally).filter(([k]) => k.startsWith(kind + '/'))
      .reduce((a, [, v]) => [a[0] + v.ok, a[1] + v.all], [0, 0]);
    const [pf, pfa] = sum('preflight');
    const [rt, rta] = sum('runtime');
    const [vd, vda] = sum('valid');
    console.log(`# realistic corpus: caught pre-flight with the fix ${pf}/${pfa}; ` +
      `runtime errors naming the fix ${rt}/${rta}; valid programs ran ${vd}/${vda}\n${lines.join('\n')}`);
  });

  function run(code, extra = {}) {
    const timeout = extra.timeout_ms ?? 20000;
    return h.client.callTool({ name: 'execute_python', arguments: { code, timeout_ms: 20000, ...extra } },
      undefined, { timeout: ms(timeout + 30000) });
  }

  test('the corpus is large and balanced', () => {
    assert.ok(preflight.length >= 20, `${preflight.length} pre-flight programs`);
    assert.ok(runtime.length >= 10, `${runtime.length} runtime programs`);
    assert.ok(valid.length >= preflight.length + runtime.length, `${valid.length} valid programs`);
  });

  /** One test per program of ``kind``: ``check(c, env, r)`` asserts; the outcome is tallied. */
  function corpusTests(kind, cases, check) {
    for (const c of cases) {
      test(c.name, async () => {
        let ok = false;
        try {
          const r = await run(c.code, c.options);
          const env = r.structuredContent;
          if (PROBE) console.log(`${c.name}: ${JSON.stringify(env)}`);
          check(c, env, r);
          ok = true;
        } finally {
          count(kind, c.klass, ok);
        }
      });
    }
  }

  function expectAll(c, env) {
    assert.ok(c.expects.length > 0, `${c.name} has no # expect: lines`);
    for (const want of c.expects) assert.ok(env.error.includes(want), `${c.name}: ${JSON.stringify(want)} in:\n${env.error}`);
  }

  describe('mistakes a static check can see are refused with the fix', () => {
    corpusTests('preflight', preflight, (c, env, r) => {
      assert.equal(r.isError, true, `${c.name} was not refused: ${JSON.stringify(env)}`);
      assert.ok(['validation', 'syntax'].includes(env.error_kind), JSON.stringify(env));
      assert.ok(env.error.includes('not executed'), env.error);
      expectAll(c, env);
    });
  });

  describe('mistakes only a run can show fail with a message that names the fix', () => {
    corpusTests('runtime', runtime, (c, env, r) => {
      assert.equal(r.isError, true, `${c.name} did not fail: ${JSON.stringify(env)}`);
      assert.ok(!['validation', 'syntax'].includes(env.error_kind), `${c.name} was refused: ${env.error}`);
      expectAll(c, env);
    });
  });

  describe('valid programs run and return the right value', () => {
    corpusTests('valid', valid, (c, env, r) => {
      assert.equal(r.isError, false, `${c.name} failed:\n${env.error}`);
      assert.deepEqual(env.result, c.result, `${c.name}: ${JSON.stringify(env.result)}`);
    });
  });
});
