// The pre-flight validator corpus (tests/data/validator/) through the real binary.
//
// Every faulty/*.py carries `# expect: <text>` lines (each must appear in the refusal) and an
// optional `# options: {json}` (validate() keyword arguments); every valid/*.py must pass the
// validator untouched. tests/python/test_validator.py runs the same files against the
// validator alone with an SDK written by hand; here they go through codemcp → worker →
// validator with the SDK generated from real servers (everything, memory, filesystem) and
// result shapes the gateway seeded from outputSchema and learned from real calls.
//
// Mapping of the corpus' assumptions onto a real gateway:
//   * enforce_mutations → a gateway started with CODEMCP_ENFORCE_MUTATIONS=true;
//   * allow_mutations, dry_run → execute_python arguments;
//   * disabled (default: the unit test's DISABLED list) → tools.<tool>.enabled = false;
//   * the unit test's catalog treats everything's trigger-long-running-operation as a write
//     (verb heuristic); the real server annotates it readOnlyHint, so the config overrides it
//     with tools.<tool>.mutation = true (which also exercises the override);
//   * files that call servers this gateway does not have (github-enterprise) are skipped,
//     with the reason, and counted.
// A faulty program must come back isError, error_kind "validation" (or "syntax"), with every
// expected text and "not executed"; a valid program may fail at run time (paths outside the
// allowed directory, empty graphs, ...) but never with error_kind "validation" or "syntax".
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  TESTS, connectClient, tempDir, writeConfig, servers, ms, waitFor, upstreamToolNames, sdkName,
} from './lib.mjs';

const CORPUS = path.join(TESTS, 'data', 'validator');
// The unit test's defaults (tests/python/test_validator.py).
const DEFAULT_DISABLED = ['everything_get_env', 'filesystem_read_media_file'];
// Tools the config marks as writes (none: the unit test now reads sdkgen's golden SDK, whose
// classification is the gateway's own).
const FORCED_WRITES = [];
// Servers of the corpus' catalog; those not configured here make a file skip.
const CATALOG_SERVERS = ['everything', 'memory', 'filesystem', 'github-enterprise'];
const CONFIGURED = ['everything', 'memory', 'filesystem'];
const KNOWN_OPTIONS = new Set(['enforce_mutations', 'allow_mutations', 'dry_run', 'disabled']);
const MIN_RUN = 40;

function readCase(file) {
  const code = fs.readFileSync(file, 'utf8');
  const expects = [];
  let options = {};
  for (const line of code.split('\n')) {
    if (line.startsWith('# expect:')) expects.push(line.slice('# expect:'.length).trim());
    else if (line.startsWith('# options:')) options = JSON.parse(line.slice('# options:'.length));
  }
  return { file, name: path.basename(file), code, expects, options };
}

function corpus(kind) {
  const dir = path.join(CORPUS, kind);
  return fs.readdirSync(dir).filter((n) => n.endsWith('.py')).sort().map((n) => readCase(path.join(dir, n)));
}

/** Why a case cannot run here (a server it calls is missing), or null. */
function skipReason(c) {
  for (const server of CATALOG_SERVERS) {
    if (CONFIGURED.includes(server)) continue;
    const prefix = sdkName(server, '');
    const m = c.code.match(new RegExp(`\\b${prefix}\\w*`));
    if (m) return `calls ${m[0]} (server "${server}" is not configured in this gateway)`;
  }
  return null;
}

/** Whether the refusal reports `want`. A syntax error reported by the runner's compile step
 *  (error_kind "syntax") names the exception class, e.g. "IndentationError:", where the
 *  validator writes "SyntaxError:"; both are accepted here and the verbatim wording is
 *  checked by the todo test below. */
function reports(env, want) {
  if (env.error.includes(want)) return true;
  if (env.error_kind !== 'syntax' || !want.startsWith('SyntaxError:')) return false;
  const rest = want.slice('SyntaxError:'.length);
  return /^(IndentationError|TabError):/m.test(env.error) && env.error.includes(rest);
}

const faulty = corpus('faulty');
const valid = corpus('valid');

describe('validator corpus through the real binary', () => {
  let dir, memFile, fsDir;
  const entries = {}; // server -> config entry (without tools overrides)
  const toolOf = new Map(); // sdk function name -> [server, upstream tool]
  const gateways = new Map(); // key -> Promise<handle>
  const ran = { faulty: 0, valid: 0 };
  const outcomes = {}; // how the valid programs ended: ok / exception / tool_error / ...
  const skipped = { faulty: [], valid: [] };

  before(async () => {
    dir = tempDir('codemcp-corpus-', { shared: true });
    memFile = path.join(dir, 'memory.jsonl');
    fsDir = path.join(dir, 'allowed');
    fs.mkdirSync(fsDir);
    fs.writeFileSync(path.join(fsDir, 'notes.md'), '# notes\nhello\n');
    entries.everything = servers.everything();
    entries.memory = servers.memory(memFile);
    entries.filesystem = servers.filesystem(fsDir);
    // The upstream tool behind each SDK name, to turn "disabled"/"write" lists into config.
    for (const server of CONFIGURED) {
      for (const tool of await upstreamToolNames(entries[server])) toolOf.set(sdkName(server, tool), [server, tool]);
    }
  });

  /** The gateway for (enforce, disabled): started once, shapes seeded by real calls. */
  function gateway(enforce, disabled) {
    const key = JSON.stringify([enforce, [...disabled].sort()]);
    if (!gateways.has(key)) gateways.set(key, startGateway(enforce, disabled, gateways.size));
    return gateways.get(key);
  }

  async function startGateway(enforce, disabled, n) {
    const mcp = {};
    for (const server of CONFIGURED) mcp[server] = { ...entries[server], tools: {} };
    for (const [names, field] of [[disabled, { enabled: false }], [FORCED_WRITES, { mutation: true }]]) {
      for (const fn of names) {
        const where = toolOf.get(fn);
        assert.ok(where, `${fn} is not a tool of the configured servers`);
        const [server, tool] = where;
        mcp[server].tools[tool] = { ...mcp[server].tools[tool], ...field };
      }
    }
    const config = writeConfig(dir, mcp, `mcp-${n}.json`);
    const h = await connectClient({
      config,
      shared: true,
      env: {
        CODEMCP_ENFORCE_MUTATIONS: enforce ? 'true' : 'false',
        CODEMCP_VALIDATE: 'true',
        CODEMCP_LEARN_SHAPES: 'true',
      },
    });
    const wanted = ['everything_echo', 'memory_read_graph', 'filesystem_read_text_file'];
    let desc = '';
    const ready = await waitFor(async () => {
      desc = (await h.client.listTools(undefined, { timeout: ms(30000) })).tools[0].description;
      return wanted.every((f) => desc.includes(`def ${f}(`));
    }, ms(30000), 100);
    assert.ok(ready, `the SDK never listed ${wanted}:\n${desc}\n${h.stderr().slice(-2000)}`);
    for (const fn of disabled) assert.ok(!desc.includes(`def ${fn}(`), `${fn} should be disabled`);
    // Seed learned shapes with one real call of the tools the field cases read (memory and
    // filesystem are also covered by their outputSchema).
    const seed = await call(h, `
r = [everything_get_structured_content(location="Chicago"), memory_read_graph(),
     memory_search_nodes(query="nobody"), memory_open_nodes(names=[]),
     filesystem_list_allowed_directories()]
result = [str(x)[:40] for x in r]`, {});
    assert.equal(seed.isError, false, JSON.stringify(seed.structuredContent));
    return h;
  }

  function call(h, code, extra) {
    return h.client.callTool(
      { name: 'execute_python', arguments: { code, reset: true, timeout_ms: 5000, ...extra } },
      undefined,
      { timeout: ms(60000) },
    );
  }

  /** Runs one corpus case in the right gateway with its options mapped; returns the envelope. */
  async function runCase(c) {
    for (const k of Object.keys(c.options)) assert.ok(KNOWN_OPTIONS.has(k), `${c.name}: unknown option ${k}`);
    const h = await gateway(!!c.options.enforce_mutations, c.options.disabled || DEFAULT_DISABLED);
    const extra = {};
    if (c.options.allow_mutations) extra.allow_mutations = c.options.allow_mutations;
    if (c.options.dry_run) extra.dry_run = true;
    const r = await call(h, c.code, extra);
    const env = r.structuredContent;
    assert.ok(env && typeof env === 'object', `${c.name}: no structuredContent: ${JSON.stringify(r)}`);
    return { r, env };
  }

  describe('faulty programs are refused with the expected problems', () => {
    for (const c of faulty) {
      const why = skipReason(c);
      if (why) {
        skipped.faulty.push(`${c.name}: ${why}`);
        test(c.name, { skip: why }, () => {});
        continue;
      }
      test(c.name, async () => {
        assert.ok(c.expects.length > 0, 'a faulty case needs `# expect:` lines');
        const { r, env } = await runCase(c);
        assert.equal(r.isError, true, `${c.name} was not refused: ${JSON.stringify(env)}`);
        assert.ok(['validation', 'syntax'].includes(env.error_kind), `${c.name}: ${JSON.stringify(env)}`);
        for (const want of c.expects) {
          assert.ok(reports(env, want), `${c.name}: expected ${JSON.stringify(want)} in:\n${env.error}`);
        }
        if (env.error_kind === 'validation') {
          assert.ok(env.error.includes('not executed'), env.error);
        }
        // Refused before running: no output, no calls, no writes.
        for (const k of ['stdout', 'trace', 'mutations', 'result']) assert.ok(!(k in env), `${c.name}: ${k} present`);
        ran.faulty++;
      });
    }
  });

  test('syntax errors are reported by the validator: "SyntaxError:" and "not executed"', async () => {
    const cases = faulty.filter((c) => c.expects.some((e) => e.startsWith('SyntaxError')));
    assert.ok(cases.length >= 4);
    for (const c of cases) {
      const { env } = await runCase(c);
      // Verbatim, as the validator words it (the per-file tests accept the runner's wording).
      for (const want of c.expects) assert.ok(env.error.includes(want), `${c.name}: ${JSON.stringify(want)} in ${env.error}`);
      assert.ok(env.error.includes('not executed'), `${c.name}: ${env.error}`);
    }
  });

  describe('valid programs pass the validator untouched', () => {
    for (const c of valid) {
      const why = skipReason(c);
      if (why) {
        skipped.valid.push(`${c.name}: ${why}`);
        test(c.name, { skip: why }, () => {});
        continue;
      }
      test(c.name, async () => {
        assert.deepEqual(c.expects, [], 'a valid case has no `# expect:` lines');
        const { r, env } = await runCase(c);
        assert.ok(!['validation', 'syntax'].includes(env.error_kind),
          `${c.name} was refused pre-flight:\n${env.error}`);
        if (r.isError) assert.ok(env.error_kind, JSON.stringify(env));
        const outcome = r.isError ? env.error_kind : 'ok';
        outcomes[outcome] = (outcomes[outcome] || 0) + 1;
        ran.valid++;
      });
    }
  });

  test('unknown keywords are a real check when the validator cannot see the call', async () => {
    const h = await gateway(false, DEFAULT_DISABLED);
    for (const code of ['globals()["everything_echo"](mesage="hi")', 'f = eval("everything_get_sum")\nf(a=1, b=2, c=3)']) {
      const r = await call(h, code, {});
      const env = r.structuredContent;
      assert.equal(r.isError, true, `${code}: ${JSON.stringify(env)}`);
      assert.equal(env.error_kind, 'exception', JSON.stringify(env));
      assert.match(env.error, /TypeError: .*unexpected keyword argument '(mesage|c)'/);
      assert.ok(!env.trace, `the call was sent: ${JSON.stringify(env.trace)}`);
    }
  });

  test('enough of the corpus ran through the binary', (t) => {
    t.diagnostic(`faulty: ${ran.faulty} ran, ${skipped.faulty.length} skipped; ` +
      `valid: ${ran.valid} ran, ${skipped.valid.length} skipped (outcomes ${JSON.stringify(outcomes)})`);
    for (const s of [...skipped.faulty, ...skipped.valid]) t.diagnostic(`skipped ${s}`);
    assert.ok(faulty.length >= MIN_RUN && valid.length >= MIN_RUN);
    assert.ok(ran.faulty >= MIN_RUN, `only ${ran.faulty} faulty programs passed through the binary`);
    assert.ok(ran.valid >= MIN_RUN, `only ${ran.valid} valid programs passed through the binary`);
  });
});
