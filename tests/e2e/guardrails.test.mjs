// Guard rails end to end: mutation enforcement by the gateway (bypass attempts from
// inside the worker), dry_run over dependent writes, allow/deny policy, redaction of secrets,
// and result shapes (seeded from outputSchema, learned from calls). The real binary, the real
// worker, server-memory and the purpose-built fake upstream, driven by the official SDK client.
// "Never reached the upstream" is proved with the memory file on disk (byte for byte) and with
// fake_upstream's --log-file (every message it received). No timing is asserted.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  connectClient, tempDir, writeConfig, servers, ms, sleep, waitFor, readFakeLog,
} from './lib.mjs';

// ---------------------------------------------------------------------------------------------
// Helpers.

function run(h, code, extra = {}) {
  return h.client.callTool(
    { name: 'execute_python', arguments: { code, reset: true, ...extra } },
    undefined,
    { timeout: ms(60000) },
  );
}

/** The envelope (structuredContent), after checking it matches the text block. */
function envelope(r) {
  const env = r.structuredContent;
  assert.ok(env && typeof env === 'object', `no structuredContent: ${JSON.stringify(r)}`);
  assert.deepEqual(JSON.parse(r.content[0].text), env);
  return env;
}

/** The {"tool_error": {...}} object of a run that failed with error_kind tool_error. */
function toolError(r) {
  const env = envelope(r);
  assert.equal(r.isError, true, JSON.stringify(env));
  assert.equal(env.error_kind, 'tool_error', JSON.stringify(env));
  return JSON.parse(env.error).tool_error;
}

/** Waits until execute_python's description lists every function in `fns` (upstreams connect
 *  in the background; a run before that sees an SDK without them). Returns the description. */
async function waitReady(h, fns) {
  let desc = '';
  const ok = await waitFor(async () => {
    const r = await h.client.listTools(undefined, { timeout: ms(30000) });
    desc = r.tools[0]?.description || '';
    return fns.every((f) => desc.includes(`def ${f}(`));
  }, ms(30000), 100);
  assert.ok(ok, `functions ${fns.join(', ')} never appeared in the description:\n${desc}\n` +
    `stderr:\n${h.stderr().slice(-3000)}`);
  return desc;
}

/** The description block of one function: its `def` line and the `#` lines under it. */
function toolBlock(desc, fn) {
  const lines = desc.split('\n');
  const i = lines.findIndex((l) => l.startsWith(`def ${fn}(`));
  if (i < 0) return null;
  const out = [lines[i]];
  for (let j = i + 1; j < lines.length && /^\s+#/.test(lines[j]); j++) out.push(lines[j]);
  return out.join('\n');
}

/** tools/call requests fake_upstream received, by tool name. */
function fakeCalls(logFile) {
  return readFakeLog(logFile)
    .filter((m) => m.method === 'tools/call')
    .map((m) => m.params?.name);
}

const SEED_LINE = JSON.stringify({
  type: 'entity', name: 'Seed', entityType: 'fixture', observations: ['present before the test'],
});

/** A memory file holding one entity, so "unchanged" can be checked byte for byte. */
function seededMemoryFile(dir) {
  const f = path.join(dir, 'memory.jsonl');
  fs.writeFileSync(f, SEED_LINE + '\n');
  return f;
}

// A tool list for fake_upstream (--tools-file): tools are answered by name (boom raises a
// JSON-RPC error, sleep sleeps, structured returns structuredContent, anything else returns
// {"tool", "arguments"} as structuredContent without declaring an outputSchema).
const FAKE_TOOLS = [
  { name: 'boom', description: 'Always answers with a JSON-RPC error.',
    inputSchema: { type: 'object', properties: {
      api_key: { type: 'string' }, author: { type: 'string' }, options: { type: 'object' } } } },
  { name: 'sleep', description: 'Sleep for ms milliseconds.',
    inputSchema: { type: 'object', properties: {
      ms: { type: 'integer' }, api_key: { type: 'string' }, author: { type: 'string' } },
    required: ['ms'] } },
  { name: 'lookup', description: 'Look a record up (no outputSchema).',
    inputSchema: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
    annotations: { readOnlyHint: true } },
  { name: 'profile', description: 'A profile (closed outputSchema).',
    inputSchema: { type: 'object', properties: {} },
    annotations: { readOnlyHint: true },
    outputSchema: { type: 'object', additionalProperties: false,
      properties: { title: { type: 'string' },
        owner: { type: 'object', additionalProperties: false,
          properties: { login: { type: 'string' } } } } } },
  { name: 'echo', description: 'Echo the text back.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    annotations: { readOnlyHint: true } },
  { name: 'mirror', description: 'Returns its arguments (any keys).',
    inputSchema: { type: 'object', additionalProperties: true, properties: { tag: { type: 'string' } } },
    annotations: { readOnlyHint: true } },
  { name: 'delete_thing', description: 'Delete a thing.',
    inputSchema: { type: 'object', properties: { id: { type: 'string' }, auth_token: { type: 'string' } },
      required: ['id'] } },
];

function fakeToolsFile(dir) {
  const f = path.join(dir, 'fake-tools.json');
  fs.writeFileSync(f, JSON.stringify({ tools: FAKE_TOOLS }));
  return f;
}

/** Writes a config with top-level keys besides "mcp" (e.g. a global "policy"). */
function writeFullConfig(dir, obj) {
  const p = path.join(dir, 'mcp.json');
  fs.writeFileSync(p, JSON.stringify(obj, null, 2));
  return p;
}

const NEW_ENTITY = '[{"name": "Bypass", "entityType": "attack", "observations": ["must never be stored"]}]';

// ---------------------------------------------------------------------------------------------

describe('CODEMCP_ENFORCE_MUTATIONS=true: code that hides a write cannot reach create_entities', () => {
  let h, dir, memFile, original;
  before(async () => {
    dir = tempDir('codemcp-guard-enforce-', { shared: true });
    memFile = seededMemoryFile(dir);
    original = fs.readFileSync(memFile);
    // delete_entities is disabled in the config: not in the SDK, and refused if asked for anyway.
    const config = writeConfig(dir, { memory: servers.memory(memFile, { tools: { delete_entities: { enabled: false } } }) });
    h = await connectClient({ config, shared: true, env: { CODEMCP_ENFORCE_MUTATIONS: 'true' } });
    await waitReady(h, ['memory_create_entities', 'memory_read_graph']);
  });

  /** A refusal is either the validator's (the code never ran) or the gateway's (kind denied). */
  function assertRefused(r, what) {
    const env = envelope(r);
    assert.equal(r.isError, true, `${what}: not refused: ${JSON.stringify(env)}`);
    if (env.error_kind === 'validation') {
      assert.match(env.error, /not executed/);
      assert.match(env.error, /memory_create_entities is a write tool and was not authorized/);
      return 'validation';
    }
    const te = toolError(r);
    assert.equal(te.kind, 'denied', `${what}: ${JSON.stringify(te)}`);
    assert.equal(te.server, 'memory');
    assert.equal(te.tool, 'create_entities');
    assert.match(te.message, /allow_mutations/);
    // The trace records the refused call as a failed write, never as done.
    assert.ok(env.trace.some((c) => c.tool === 'create_entities' && c.ok === false && c.kind === 'denied'),
      JSON.stringify(env.trace));
    assert.ok(!env.mutations || env.mutations.every((m) => m.ok === false), JSON.stringify(env.mutations));
    return 'denied';
  }

  test('a direct call is refused before anything runs', async () => {
    const r = await run(h, `print("started")\nmemory_create_entities(entities=${NEW_ENTITY})`);
    assert.equal(assertRefused(r, 'direct call'), 'validation');
    assert.ok(!('stdout' in envelope(r)), 'the code must not have run');
  });

  const attempts = [
    ['globals()[name]', `fn = globals()["memory_" + "create_entities"]\nresult = fn(entities=${NEW_ENTITY})`],
    ['getattr(module, name) on the SDK module',
      `import sys\nmod = sys.modules["codemcp_sdk"]\nfn = getattr(mod, "memory_create_" + "entities")\n` +
      `result = fn(entities=${NEW_ENTITY}).result()`],
    ['exec', `exec('out = memory_create_entities(entities=${NEW_ENTITY})')\nresult = out`],
    ['eval', `result = eval("memory_create_entities")(entities=${NEW_ENTITY})`],
    ['importlib.import_module of the SDK module',
      `import importlib\nsdk = importlib.import_module("codemcp_sdk")\n` +
      `result = sdk.memory_create_entities(entities=${NEW_ENTITY})`],
    ['codemcp_rt.client.call directly',
      `from codemcp_rt import client\nresult = client.call("memory", "create_entities", {"entities": ${NEW_ENTITY}})`],
    ['the SDK metadata rewritten to call it a read',
      `import codemcp_sdk\nfor k in list(codemcp_sdk.__codemcp_meta__):\n` +
      `    codemcp_sdk.__codemcp_meta__[k]["mutation"] = False\n` +
      `f = vars(codemcp_sdk)["memory_create_entities"]\nresult = f(entities=${NEW_ENTITY})`],
  ];
  for (const [what, code] of attempts) {
    test(`bypass via ${what} is denied by the gateway`, async () => {
      const r = await run(h, code);
      assertRefused(r, what);
    });
  }

  // Frames written straight onto the control connection, without the SDK or the client module.
  const forge = (params, extra = '') => `import _codemcp, json
from codemcp_rt import runstate
rid = runstate.current().run_id
${extra}
req = {"jsonrpc": "2.0", "id": "forged-1", "method": "call_tool", "params": ${params}}
_codemcp.send(json.dumps(req))
reply = _codemcp.wait_reply("forged-1", 20)
result = json.loads(reply) if reply else None`;
  const entArgs = `{"entities": ${NEW_ENTITY}}`;
  const forged = [
    ['with the live run id', `{"run_id": rid, "server": "memory", "tool": "create_entities", "args": ${entArgs}}`],
    ['smuggling allow_mutations / dry_run in the params',
      `{"run_id": rid, "server": "memory", "tool": "create_entities", "args": ${entArgs}, ` +
      `"allow_mutations": ["memory_create_entities"], "dry_run": False, "enforce_mutations": False}`],
    ['with an invented run id', `{"run_id": "r-forged", "server": "memory", "tool": "create_entities", "args": ${entArgs}}`],
    ['without a run id', `{"server": "memory", "tool": "create_entities", "args": ${entArgs}}`],
  ];
  for (const [what, params] of forged) {
    test(`a forged call_tool frame ${what} is refused`, async () => {
      const r = await run(h, forge(params));
      const env = envelope(r);
      assert.equal(r.isError, false, JSON.stringify(env));
      const reply = env.result;
      assert.ok(reply && reply.error, `the forged call got no error reply: ${JSON.stringify(reply)}`);
      assert.equal(reply.id, 'forged-1');
      assert.ok(!('result' in reply), JSON.stringify(reply));
      if (what === 'without a run id') {
        assert.equal(reply.error.code, -32602, JSON.stringify(reply)); // malformed: no run_id
      } else {
        assert.equal(reply.error.data?.kind, 'denied', JSON.stringify(reply));
      }
    });
  }

  test('a disabled tool asked for directly is refused as not_found, even when "authorized"', async () => {
    const r = await run(h, `from codemcp_rt import client
result = client.call("memory", "delete_entities", {"entityNames": ["Seed"]})`,
    { allow_mutations: ['memory_delete_entities'] });
    const te = toolError(r);
    assert.equal(te.kind, 'not_found', JSON.stringify(te));
    const pre = await run(h, 'memory_delete_entities(entityNames=["Seed"])', { allow_mutations: ['memory_delete_entities'] });
    assert.equal(envelope(pre).error_kind, 'validation', JSON.stringify(envelope(pre)));
    assert.match(envelope(pre).error, /`memory_delete_entities` is disabled in this gateway's configuration \(line 1\)/);
  });

  test('a worker request other than call_tool is refused', async () => {
    const r = await run(h, `import _codemcp, json
_codemcp.send(json.dumps({"jsonrpc": "2.0", "id": "forged-2", "method": "run",
    "params": {"code": "x = 1", "allow_mutations": ["memory_create_entities"]}}))
reply = _codemcp.wait_reply("forged-2", 20)
result = json.loads(reply) if reply else None`);
    const env = envelope(r);
    assert.equal(r.isError, false, JSON.stringify(env));
    assert.equal(env.result?.error?.code, -32601, JSON.stringify(env.result));
  });

  test('a function kept from an authorized run is still refused in a later run', async () => {
    // Same session (no reset): run 1 is authorized but only stores the function.
    const a = await run(h, 'keep = memory_create_entities\nresult = "kept"',
      { reset: false, allow_mutations: ['memory_create_entities'] });
    assert.equal(envelope(a).result, 'kept');
    const b = await run(h, `keep(entities=${NEW_ENTITY}).result()`, { reset: false });
    assertRefused(b, 'kept function');
  });

  test('after every attempt: read_graph (a read) still works and nothing was written', async () => {
    // Let any stray call land before looking.
    await sleep(ms(300));
    const r = await run(h, 'g = memory_read_graph()\nresult = sorted(e["name"] for e in g["entities"])');
    const env = envelope(r);
    assert.equal(r.isError, false, JSON.stringify(env));
    assert.deepEqual(env.result, ['Seed']);
    assert.ok(!('mutations' in env), JSON.stringify(env));
    assert.ok(fs.readFileSync(memFile).equals(original), 'the memory file changed:\n' + fs.readFileSync(memFile, 'utf8'));
  });

  test('with allow_mutations the write goes through and is reported', async () => {
    const r = await run(h, `made = memory_create_entities(entities=${NEW_ENTITY.replace('Bypass', 'Allowed')})
result = [e["name"] for e in made["entities"]]`, { allow_mutations: ['memory_create_entities'] });
    const env = envelope(r);
    assert.equal(r.isError, false, JSON.stringify(env));
    assert.deepEqual(env.result, ['Allowed']);
    assert.deepEqual(env.mutations, [{ server: 'memory', tool: 'create_entities', ok: true }]);
    const lines = fs.readFileSync(memFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((l) => l.name).sort(), ['Allowed', 'Seed']);
  });

  test('allow_mutations names one write; another write in the same run is still denied', async () => {
    const r = await run(h, `fn = globals()["memory_create_relations"]
out = fn(relations=[{"from": "Seed", "to": "Allowed", "relationType": "r"}])
result = out`, { allow_mutations: ['memory_create_entities'] });
    const te = toolError(r);
    assert.equal(te.kind, 'denied');
    assert.equal(te.tool, 'create_relations');
    const names = fs.readFileSync(memFile, 'utf8');
    assert.match(names, /"Seed"/);
  });
});

describe('authorization belongs to one run', () => {
  test('a thread left running by an unauthorized run cannot write during a later authorized run', async () => {
    const dir = tempDir('codemcp-guard-lurker-');
    const memFile = seededMemoryFile(dir);
    const original = fs.readFileSync(memFile);
    const config = writeConfig(dir, { memory: servers.memory(memFile) });
    const h = await connectClient({ config, env: { CODEMCP_ENFORCE_MUTATIONS: 'true' } });
    await waitReady(h, ['memory_create_entities']);
    // Run 1, not authorized: leaves a thread that waits for the next run and writes then.
    const a = await run(h, `import threading, time
from codemcp_rt import runstate, client
mine = runstate.current().run_id
def lurk():
    for _ in range(2000):
        st = runstate.current()
        if st is not None and st.run_id != mine:
            client.call("memory", "create_entities", {"entities": [{"name": "Lurker", "entityType": "x", "observations": []}]})
            return
        time.sleep(0.005)
threading.Thread(target=lurk, daemon=True).start()
result = mine`, { reset: false });
    assert.equal(a.isError, false, JSON.stringify(a.structuredContent));
    // Run 2 authorizes create_entities for its own purpose and never calls it.
    const b = await run(h, 'import time\ntime.sleep(0.5)\nresult = "b"',
      { reset: false, allow_mutations: ['memory_create_entities'] });
    assert.equal(envelope(b).result, 'b');
    await sleep(ms(300));
    assert.ok(fs.readFileSync(memFile).equals(original), 'written by a thread of an earlier run:\n' +
      fs.readFileSync(memFile, 'utf8'));
    assert.ok(!envelope(b).mutations, `run 2 reports a write it never made: ${JSON.stringify(envelope(b).mutations)}`);
  });
});

describe('allow_mutations forms: the validator and the gateway agree', () => {
  test('a form the validator accepts is honoured by the gateway (no run-time denial after pre-flight passed)', async () => {
    const dir = tempDir('codemcp-guard-forms-');
    const memFile = seededMemoryFile(dir);
    const config = writeConfig(dir, { memory: servers.memory(memFile) });
    const h = await connectClient({ config, env: { CODEMCP_ENFORCE_MUTATIONS: 'true' } });
    await waitReady(h, ['memory_create_entities']);
    const bad = [];
    for (const form of ['memory/create_entities', 'memory.create_entities', 'memory/*', 'memory', '*']) {
      const r = await run(h, `print("reads happen first")
result = memory_create_entities(entities=[{"name": "Form", "entityType": "t", "observations": []}])`,
      { allow_mutations: [form] });
      const env = envelope(r);
      const ranThenDenied = env.error_kind === 'tool_error' && JSON.parse(env.error).tool_error.kind === 'denied';
      if (ranThenDenied) bad.push(`${form}: passed pre-flight, ran (stdout ${JSON.stringify(env.stdout)}), then denied`);
    }
    assert.deepEqual(bad, []);
  });
});

// ---------------------------------------------------------------------------------------------

describe('dry_run over a chain of dependent writes', () => {
  let h, dir, memFile, original, logFile;
  const CHAIN = `before = memory_read_graph()
made = memory_create_entities(entities=[{"name": "Ada", "entityType": "person", "observations": []}])
rel = memory_create_relations(relations=[{"from": made["name"], "to": "Seed", "relationType": "knows"}])
obs = memory_add_observations(observations=[{"entityName": made["name"], "contents": ["met " + rel["name"]]}])
after = memory_read_graph()
gone = fake_delete_thing(id=made["name"])
seen = fake_echo(text="a read still runs")
result = {"before": before, "made": made, "rel": rel, "obs": obs, "after": after, "gone": gone, "seen": seen}`;

  before(async () => {
    dir = tempDir('codemcp-guard-dry-', { shared: true });
    memFile = seededMemoryFile(dir);
    original = fs.readFileSync(memFile);
    logFile = path.join(dir, 'fake.log');
    const config = writeConfig(dir, {
      memory: servers.memory(memFile),
      fake: servers.fake(['--tools-file', fakeToolsFile(dir), '--log-file', logFile],
        { tools: { boom: { mutation: true } } }),
    });
    // Enforcement on: a preview needs no authorization.
    h = await connectClient({ config, shared: true, env: { CODEMCP_ENFORCE_MUTATIONS: 'true' } });
    await waitReady(h, ['memory_create_entities', 'fake_delete_thing']);
  });

  test('writes are stubbed, reads run, nothing is written, the would-be writes are listed', async () => {
    const r = await run(h, CHAIN, { dry_run: true });
    const env = envelope(r);
    assert.equal(r.isError, false, JSON.stringify(env));
    const res = env.result;
    // Reads went upstream: the graph holds the seeded entity, before and after.
    assert.deepEqual(res.before.entities.map((e) => e.name), ['Seed']);
    assert.deepEqual(res.after, res.before);
    assert.match(JSON.stringify(res.seen), /a read still runs/);
    // Writes came back as stubs with the usual keys.
    for (const [key, tool, server] of [['made', 'create_entities', 'memory'], ['rel', 'create_relations', 'memory'],
      ['obs', 'add_observations', 'memory'], ['gone', 'delete_thing', 'fake']]) {
      const stub = res[key];
      assert.equal(stub._dry_run, true, `${key}: ${JSON.stringify(stub)}`);
      assert.equal(stub.server, server);
      assert.equal(stub.tool, tool);
      for (const k of ['id', 'name', 'number', 'url']) assert.ok(k in stub, `${key} stub lacks ${k}`);
    }
    assert.deepEqual(env.mutations, [
      { server: 'memory', tool: 'create_entities', ok: true, dry_run: true },
      { server: 'memory', tool: 'create_relations', ok: true, dry_run: true },
      { server: 'memory', tool: 'add_observations', ok: true, dry_run: true },
      { server: 'fake', tool: 'delete_thing', ok: true, dry_run: true },
    ]);
    assert.ok(fs.readFileSync(memFile).equals(original), 'the memory file changed');
    const calls = fakeCalls(logFile);
    assert.ok(calls.includes('echo'), `the read did not reach the fake: ${calls}`);
    assert.ok(!calls.includes('delete_thing'), `a dry-run write reached the fake: ${calls}`);
  });

  test('the stubs are deterministic: the same preview twice gives the same result', async () => {
    const a = envelope(await run(h, CHAIN, { dry_run: true }));
    const b = envelope(await run(h, CHAIN, { dry_run: true }));
    assert.deepEqual(a, b);
    assert.ok(fs.readFileSync(memFile).equals(original));
  });

  test('dependent code may read the stub id of a previewed write', async () => {
    const r = await run(h, `made = memory_create_entities(entities=[{"name": "Ada", "entityType": "person", "observations": []}])
rel = memory_create_relations(relations=[{"from": made["id"], "to": "Seed", "relationType": "knows"}])
result = [made["id"], rel["id"]]`, { dry_run: true });
    const env = envelope(r);
    assert.equal(r.isError, false, JSON.stringify(env));
    assert.deepEqual(env.result, ['dry-run:memory/create_entities', 'dry-run:memory/create_relations']);
  });

  test('an authorized write that fails upstream is listed with ok: false', async () => {
    const r = await run(h, 'fake_boom(author="ann").result()', { allow_mutations: ['fake_boom'] });
    const te = toolError(r);
    assert.equal(te.kind, 'upstream_error');
    assert.deepEqual(envelope(r).mutations, [{ server: 'fake', tool: 'boom', ok: false }]);
    assert.ok(fakeCalls(logFile).includes('boom'));
  });

  test('without dry_run the same chain is refused pre-flight under enforcement', async () => {
    const r = await run(h, CHAIN);
    const env = envelope(r);
    assert.equal(r.isError, true);
    assert.equal(env.error_kind, 'validation', JSON.stringify(env));
    for (const fn of ['memory_create_entities', 'memory_create_relations', 'memory_add_observations', 'fake_delete_thing']) {
      assert.match(env.error, new RegExp(`${fn} is a write tool and was not authorized`));
    }
    assert.ok(fs.readFileSync(memFile).equals(original));
  });
});

// ---------------------------------------------------------------------------------------------

describe('policy: allow/deny rules are enforced by the gateway before dispatch', () => {
  let h, dir, memFile, original, logFile, allowLog, badLog;
  before(async () => {
    dir = tempDir('codemcp-guard-policy-', { shared: true });
    memFile = seededMemoryFile(dir);
    original = fs.readFileSync(memFile);
    logFile = path.join(dir, 'fake.log');
    allowLog = path.join(dir, 'allowlist.log');
    badLog = path.join(dir, 'malformed.log');
    const config = writeFullConfig(dir, {
      policy: { deny: ['fake_delete_*'] },
      mcp: {
        memory: servers.memory(memFile, {
          policy: { deny: ['delete_*'] },
          tools: { create_relations: { policy: 'deny' } },
        }),
        fake: servers.fake(['--tools-file', fakeToolsFile(dir), '--log-file', logFile], {
          tools: { echo: { policy: 'deny' } },
        }),
        // An allow list denies what it does not name.
        allowlist: servers.fake(['--tools-file', fakeToolsFile(dir), '--log-file', allowLog], {
          policy: { allow: ['lookup'] },
        }),
        // A malformed rule fails closed: every tool of that server is denied.
        malformed: servers.fake(['--tools-file', fakeToolsFile(dir), '--log-file', badLog], {
          policy: { deny: 'echo' },
        }),
      },
    });
    h = await connectClient({ config, shared: true });
    await waitReady(h, ['memory_delete_entities', 'fake_echo', 'allowlist_echo', 'malformed_lookup']);
  });

  const cases = [
    ['a server rule (deny "delete_*")', 'memory_delete_entities(entityNames=["Seed"])', 'memory', 'delete_entities',
      /deny "delete_\*"/],
    ['a per-tool rule (tools.create_relations.policy = "deny")',
      'memory_create_relations(relations=[{"from": "Seed", "to": "Seed", "relationType": "self"}])',
      'memory', 'create_relations', /memory\.tools\.create_relations\.policy is "deny"/],
    ['a per-tool rule on the fake (tools.echo.policy = "deny")', 'fake_echo(text="hi")', 'fake', 'echo',
      /fake\.tools\.echo\.policy is "deny"/],
    ['a global rule (deny "fake_delete_*")', 'fake_delete_thing(id="x")', 'fake', 'delete_thing',
      /global policy rule deny "fake_delete_\*"/],
    ['a server allow list (allow ["lookup"])', 'allowlist_echo(text="hi")', 'allowlist', 'echo',
      /not in the server allowlist policy allow list/],
    ['a malformed server rule (deny: "echo", not a list)', 'malformed_lookup(key="k")', 'malformed', 'lookup',
      /fail-closed/],
  ];
  for (const [what, call, server, tool, rule] of cases) {
    test(`${what} raises ToolError(kind="denied") naming the rule`, async () => {
      const r = await run(h, `try:
    ${call}.result()
    result = "not denied"
except ToolError as e:
    result = {"kind": e.kind, "server": e.server, "tool": e.tool, "message": str(e)}`);
      const env = envelope(r);
      assert.equal(r.isError, false, JSON.stringify(env));
      assert.equal(env.result.kind, 'denied', JSON.stringify(env.result));
      assert.equal(env.result.server, server);
      assert.equal(env.result.tool, tool);
      assert.match(env.result.message, rule);
    });
  }

  test('an uncaught denial fails the run with a tool_error naming the rule', async () => {
    const te = toolError(await run(h, 'memory_delete_entities(entityNames=["Seed"])'));
    assert.equal(te.kind, 'denied');
    assert.match(te.message, /deny "delete_\*"/);
  });

  test('dry_run does not turn a denied write into a preview (policy comes first)', async () => {
    const te = toolError(await run(h, 'memory_delete_entities(entityNames=["Seed"])', { dry_run: true }));
    assert.equal(te.kind, 'denied');
  });

  test('gather reports a denial without raising', async () => {
    const r = await run(h, 'result = gather(fake_echo(text="x"), fake_lookup(key="k"))');
    const env = envelope(r);
    assert.equal(r.isError, false, JSON.stringify(env));
    const [denied, ok] = env.result;
    assert.equal(denied.ok, false);
    assert.equal(denied.error.kind, 'denied');
    assert.equal(ok.ok, true, JSON.stringify(ok));
  });

  test('allowed tools still work and denied calls never reached an upstream', async () => {
    const r = await run(h, 'g = memory_read_graph()\nresult = [e["name"] for e in g["entities"]]');
    assert.deepEqual(envelope(r).result, ['Seed']);
    assert.ok(fs.readFileSync(memFile).equals(original), 'the memory file changed');
    const calls = fakeCalls(logFile);
    assert.ok(calls.includes('lookup'), `the allowed call is missing from the fake's log: ${calls}`);
    assert.ok(!calls.includes('echo'), `a denied echo reached the fake: ${calls}`);
    assert.ok(!calls.includes('delete_thing'), `a denied delete_thing reached the fake: ${calls}`);
    const ok = await run(h, 'allowlist_lookup(key="k")');
    assert.equal(ok.isError, false, JSON.stringify(ok.structuredContent));
    assert.deepEqual(fakeCalls(allowLog), ['lookup']);
    assert.deepEqual(fakeCalls(badLog), []);
  });
});

// ---------------------------------------------------------------------------------------------

describe('redaction: secret arguments never appear in a response or in the log', () => {
  let h, dir;
  const SECRET = 'SECRET123';
  before(async () => {
    dir = tempDir('codemcp-guard-redact-', { shared: true });
    const config = writeFullConfig(dir, {
      policy: { deny: ['fake_delete_*'] },
      mcp: { fake: servers.fake(['--tools-file', fakeToolsFile(dir)]) },
    });
    h = await connectClient({ config, shared: true, env: { CODEMCP_LOG: 'debug' } });
    await waitReady(h, ['fake_boom', 'fake_sleep']);
  });

  function checkArgs(args, label) {
    assert.equal(args.api_key, '***', `${label}: ${JSON.stringify(args)}`);
    assert.equal(args.author, 'ann', `${label}: author is not a secret: ${JSON.stringify(args)}`);
  }

  test('an upstream error: tool_error args show *** for api_key and keep author', async () => {
    const r = await run(h, `fake_boom(api_key="${SECRET}", author="ann",
          options={"nested": {"password": "${SECRET}", "authorName": "ann", "list": [{"accessToken": "${SECRET}"}]}, "blob": "x" * 5000}).result()`);
    const te = toolError(r);
    assert.equal(te.kind, 'upstream_error', JSON.stringify(te));
    checkArgs(te.args, 'boom');
    assert.equal(te.args.options.nested.password, '***');
    assert.equal(te.args.options.nested.authorName, 'ann');
    assert.equal(te.args.options.nested.list[0].accessToken, '***');
    // Long strings are shortened in reports.
    assert.ok(te.args.options.blob.length < 1000, `not shortened: ${te.args.options.blob.length} chars`);
    assert.ok(te.args.options.blob.startsWith('xxxx'));
    const env = envelope(r);
    assert.ok(env.trace.length >= 1);
    assert.ok(!JSON.stringify(r).includes(SECRET), `the secret leaked: ${JSON.stringify(r)}`);
  });

  test('a call timeout: the ToolError args are redacted', async () => {
    const r = await run(h, `fake_sleep(ms=20000, api_key="${SECRET}", author="ann", timeout_ms=300).result()`);
    const te = toolError(r);
    assert.equal(te.kind, 'timeout', JSON.stringify(te));
    checkArgs(te.args, 'sleep');
    assert.ok(!JSON.stringify(r).includes(SECRET));
  });

  test('caught errors (gather, str/repr, call_args) are redacted too', async () => {
    const r = await run(h, `outs = gather(fake_boom(api_key="${SECRET}", author="ann"))
try:
    fake_boom(api_key="${SECRET}", author="ann").result()
except ToolError as e:
    caught = {"args": e.call_args, "str": str(e), "repr": repr(e)}
result = {"gather": outs, "caught": caught}`);
    const env = envelope(r);
    assert.equal(r.isError, false, JSON.stringify(env));
    checkArgs(env.result.gather[0].error.args, 'gather');
    checkArgs(env.result.caught.args, 'call_args');
    assert.ok(!JSON.stringify(r).includes(SECRET), JSON.stringify(r));
  });

  test('a call denied by policy is logged with its secret redacted', async () => {
    const te = toolError(await run(h, `fake_delete_thing(id="x1", auth_token="${SECRET}").result()`));
    assert.equal(te.kind, 'denied');
    assert.equal(te.args.auth_token, '***');
    assert.equal(te.args.id, 'x1');
  });

  test('a successful call with a secret argument', async () => {
    const r = await run(h, `result = str(fake_sleep(ms=1, api_key="${SECRET}", author="ann"))`);
    assert.equal(r.isError, false, JSON.stringify(r.structuredContent));
    assert.match(envelope(r).result, /slept 1 ms/);
  });

  test('the secret appears nowhere in codemcp\'s debug log', async () => {
    await sleep(ms(300)); // let the log catch up
    const log = h.stderr();
    assert.ok(log.length > 0, 'expected debug logging on stderr');
    assert.match(log, /fake_delete_thing refused: .*"auth_token":\s*"\*\*\*"/, 'the denial was not logged redacted');
    const at = log.indexOf(SECRET);
    assert.equal(at, -1, `the secret is in the log: …${log.slice(Math.max(0, at - 300), at + 100)}…`);
  });
});

// ---------------------------------------------------------------------------------------------

describe('shapes: from outputSchema before the first call, learned after a call', () => {
  let h, dir, memFile, logFile;
  let listChanged = 0;
  before(async () => {
    dir = tempDir('codemcp-guard-shapes-', { shared: true });
    memFile = seededMemoryFile(dir);
    logFile = path.join(dir, 'fake.log');
    const config = writeConfig(dir, {
      memory: servers.memory(memFile),
      fake: servers.fake(['--tools-file', fakeToolsFile(dir), '--log-file', logFile]),
    });
    h = await connectClient({ config, shared: true });
    h.client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      listChanged++;
    });
    await waitReady(h, ['memory_read_graph', 'fake_lookup', 'fake_profile']);
  });

  test('outputSchema: a wrong field is refused on the very first run, before any call', async () => {
    assert.deepEqual(fakeCalls(logFile), [], 'no tool was called yet');
    const r = await run(h, `memory_create_entities(entities=[{"name": "Early", "entityType": "t", "observations": []}])
p = fake_profile()
g = memory_read_graph()
names = [e["name"] for e in g["entitees"]]
who = p["owner"]["logn"]`);
    const env = envelope(r);
    assert.equal(r.isError, true);
    assert.equal(env.error_kind, 'validation', JSON.stringify(env));
    assert.match(env.error, /not executed/);
    assert.match(env.error, /memory_read_graph: result has no field `entitees` \(line 4\)\. Did you mean `entities`\?/);
    assert.match(env.error, /fake_profile: result\['owner'\] has no field `logn` \(line 5\)\. Did you mean `login`\?/);
    // Nothing ran: no call reached the fake, the write before the typo did not happen.
    assert.deepEqual(fakeCalls(logFile), []);
    assert.ok(!fs.readFileSync(memFile, 'utf8').includes('Early'));
  });

  test('a seeded shape is in the description as a bounded `# returns:` line', async () => {
    const desc = await waitReady(h, ['memory_read_graph']);
    const block = toolBlock(desc, 'memory_read_graph');
    assert.match(block, /# returns: \{entities: \[\{.*\}\], relations: \[\{.*\}\]\}/, block);
    const profile = toolBlock(desc, 'fake_profile');
    assert.match(profile, /# returns: \{owner: \{login: str\}, title: str\}/, profile);
  });

  let base = 0;
  test('learned: first run calls the tool, then a wrong field is refused with "Did you mean"', async () => {
    const before = await waitReady(h, ['fake_lookup']);
    base = listChanged; // whatever the start-up sent
    assert.doesNotMatch(toolBlock(before, 'fake_lookup'), /# returns:/, 'nothing is known before a call');
    // Nothing known yet: a wrong field is not judged pre-flight (it fails at run time).
    const blind = await run(h, 'r = fake_lookup(key="k0")\nresult = r["argumnets"]');
    assert.equal(envelope(blind).error_kind, 'exception', JSON.stringify(envelope(blind)));
    await waitFor(() => listChanged >= base + 1, ms(5000));
    assert.equal(fakeCalls(logFile).filter((n) => n === 'lookup').length, 1);

    const good = await run(h, 'r = fake_lookup(key="k1")\nresult = r["arguments"]["key"]');
    assert.equal(envelope(good).result, 'k1', JSON.stringify(envelope(good)));
    assert.equal(fakeCalls(logFile).filter((n) => n === 'lookup').length, 2);

    const bad = await run(h, 'r = fake_lookup(key="k2")\nresult = r["argumnets"]["key"]');
    const env = envelope(bad);
    assert.equal(env.error_kind, 'validation', JSON.stringify(env));
    assert.match(env.error, /fake_lookup: result has no field `argumnets` \(line 2\)\. Did you mean `arguments`\?/);
    const deep = await run(h, 'r = fake_lookup(key="k3")\nresult = r.arguments["kye"]');
    assert.match(envelope(deep).error, /fake_lookup: result\['arguments'\] has no field `kye` \(line 2\)\. Did you mean `key`\?/);
    // The refused runs made no call.
    assert.equal(fakeCalls(logFile).filter((n) => n === 'lookup').length, 2);
  });

  test('the learned shape shows in tools/list and list_changed was sent once for it', async () => {
    const desc = await waitReady(h, ['fake_lookup']);
    const block = toolBlock(desc, 'fake_lookup');
    assert.match(block, /# returns: \{arguments: \{key: str\}, tool: str\}/, block);
    // One learning event (the first lookup) → exactly one notification; later calls with the
    // same shape changed nothing.
    await sleep(ms(500));
    assert.equal(listChanged - base, 1, `expected one notifications/tools/list_changed, got ${listChanged - base}`);
    await run(h, 'fake_lookup(key="again")');
    await sleep(ms(500));
    assert.equal(listChanged - base, 1, 'an unchanged shape must not notify again');
  });
});

describe('shapes: the description exemplar stays bounded', () => {
  test('a wide, deep result gives a `# returns:` line within depth 3, 12 fields, 600 bytes', async () => {
    const dir = tempDir('codemcp-guard-exemplar-');
    const config = writeConfig(dir, { fake: servers.fake(['--tools-file', fakeToolsFile(dir)]) });
    const h = await connectClient({ config });
    const desc0 = await waitReady(h, ['fake_mirror']);
    assert.match(toolBlock(desc0, 'fake_mirror'), /\*\*extra|\*\*/, 'the SDK must accept extra keywords');
    const r = await run(h, `deep = {"l1": {"l2": {"l3": {"l4": {"l5": 1}}}}}
wide = {f"field_{i:02d}_" + "y" * 40: deep for i in range(30)}
out = fake_mirror(tag="t", **wide)
result = sorted(out["arguments"])[:2]`);
    assert.equal(r.isError, false, JSON.stringify(r.structuredContent));
    let block = null;
    await waitFor(async () => {
      block = toolBlock(await waitReady(h, ['fake_mirror']), 'fake_mirror');
      return /# returns:/.test(block);
    }, ms(5000), 100);
    const line = block.split('\n').find((l) => l.includes('# returns:'));
    assert.ok(line, block);
    const ex = line.slice(line.indexOf('# returns:') + '# returns:'.length).trim();
    assert.ok(Buffer.byteLength(ex) <= 600, `exemplar of ${Buffer.byteLength(ex)} bytes: ${ex}`);
    assert.ok(!ex.includes('l4') && !ex.includes('l5'), `deeper than 3 levels: ${ex}`);
    const fields = (ex.match(/field_\d\d_/g) || []).length;
    assert.ok(fields >= 1 && fields <= 12, `${fields} fields shown: ${ex}`);
    // The full shape still reaches the validator: a typo deep down is caught.
    const bad = await run(h, `out = fake_mirror(tag="u")
result = out["arguments"]["field_00_${'y'.repeat(40)}"]["l1"]["l2"]["l3"]["l4"]["l6"]`);
    const env = envelope(bad);
    assert.equal(env.error_kind, 'validation', JSON.stringify(env));
    assert.match(env.error, /\[.l4.\] has no field `l6` \(line 2\)\. Fields: l5\./);
  });
});

describe('shapes: learned from a few calls, a field is not proven impossible', () => {
  test('code that would run is not refused because one earlier result lacked an optional key', {
    todo: 'WEAKNESS: a shape learned from calls is treated as closed, so a key absent from the results seen so ' +
      'far (optional fields, echoes of free-form input) is refused pre-flight although the call would return it',
  }, async () => {
    const dir = tempDir('codemcp-guard-optional-');
    const config = writeConfig(dir, { fake: servers.fake(['--tools-file', fakeToolsFile(dir)]) });
    const h = await connectClient({ config });
    await waitReady(h, ['fake_mirror']);
    const first = await run(h, 'result = fake_mirror(tag="a")["arguments"]["tag"]');
    assert.equal(envelope(first).result, 'a');
    await sleep(ms(300));
    const r = await run(h, 'r = fake_mirror(tag="a", extra=1)\nresult = r["arguments"]["extra"]');
    const env = envelope(r);
    assert.notEqual(env.error_kind, 'validation', env.error);
    assert.equal(env.result, 1);
  });
});

describe('CODEMCP_LEARN_SHAPES=false: no field checks, no exemplars', () => {
  test('wrong fields run (and fail at run time) instead of being refused', async () => {
    const dir = tempDir('codemcp-guard-noshapes-');
    const memFile = seededMemoryFile(dir);
    const config = writeConfig(dir, {
      memory: servers.memory(memFile),
      fake: servers.fake(['--tools-file', fakeToolsFile(dir)]),
    });
    const h = await connectClient({ config, env: { CODEMCP_LEARN_SHAPES: 'false' } });
    const desc = await waitReady(h, ['memory_read_graph', 'fake_lookup']);
    assert.doesNotMatch(toolBlock(desc, 'memory_read_graph'), /# returns:/);
    for (const code of ['g = memory_read_graph()\nresult = g["entitees"]',
      'r = fake_lookup(key="a")\nresult = r["arguments"]', 'r = fake_lookup(key="b")\nresult = r["argumnets"]']) {
      const env = envelope(await run(h, code));
      assert.notEqual(env.error_kind, 'validation', JSON.stringify(env));
    }
    assert.doesNotMatch(toolBlock(await waitReady(h, ['fake_lookup']), 'fake_lookup'), /# returns:/);
  });
});
