// stdio upstreams through the real binary, seen by the official SDK client: the three npm
// servers, broken servers skipped without blocking, pagination, list_changed coalescing,
// upstream ping/roots, upstream stderr in the log, both config formats and interpolation.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import {
  connectClient,
  describeProcs,
  executePythonTool,
  ms,
  pidAlive,
  readFakeLog,
  readPidFile,
  sdkName,
  servers,
  sleep,
  tempDir,
  upstreamToolNames,
  waitFor,
  waitNoZombies,
  writeConfig,
  writeMcpServersConfig,
} from './lib.mjs';

const FAKE_TOOLS = ['echo', 'add', 'sleep', 'fail', 'boom', 'big', 'structured', 'image', 'last_client_answers'];

function defLine(desc, fn) {
  return desc.split('\n').find((l) => l.includes(`def ${fn}(`));
}

function assertHasFunctions(desc, server, tools) {
  const missing = tools.map((t) => sdkName(server, t)).filter((fn) => !defLine(desc, fn));
  assert.deepEqual(missing, [], `functions missing from the execute_python description:\n${desc}`);
}

function assertNoFunctions(desc, server) {
  assert.ok(!desc.includes(`def ${server}_`), `server ${server} should have been skipped:\n${desc}`);
}

test('real npm servers: every tool becomes a typed function in the description', { timeout: ms(90000) }, async () => {
  const dir = tempDir();
  const mcp = {
    everything: servers.everything(),
    memory: servers.memory(path.join(dir, 'memory.jsonl')),
    filesystem: servers.filesystem(dir),
  };
  const cfg = writeConfig(dir, mcp);
  const c = await connectClient({ config: cfg });
  const tool = await executePythonTool(c.client);
  const desc = tool.description;

  assert.match(desc, /def everything_get_sum\(a: float, b: float/);
  assert.match(desc, /def memory_create_entities\(/);
  assert.match(desc, /def filesystem_read_text_file\(path: str/);
  // One function per tool each server reports when asked directly.
  for (const [name, entry] of Object.entries(mcp)) {
    assertHasFunctions(desc, name, await upstreamToolNames(entry));
  }
  // Two lines per tool: the signature, then a one-line summary of at most 160 characters.
  const lines = desc.split('\n');
  lines.forEach((l, i) => {
    if (!/^\s*def \w+\(/.test(l)) return;
    const next = lines[i + 1] || '';
    if (/^\s*def \w+\(/.test(next)) return; // a tool without a description
    const summary = next.trim().replace(/^#\s*/, '');
    assert.ok(summary.length <= 160, `summary after "${l.trim()}" is ${summary.length} chars: ${summary}`);
  });
});

test('a missing command, an exit-at-once and a never-initialize server are skipped; the others work', { timeout: ms(90000) }, async () => {
  const dir = tempDir();
  const silentPid = path.join(dir, 'silent.pid');
  const upstreamTimeout = ms(4000);
  const cfg = writeConfig(dir, {
    everything: servers.everything(),
    fake_ok: servers.fake(),
    missing_cmd: { type: 'local', command: ['/nonexistent/codemcp-e2e-no-such-binary', '--x'] },
    exits_at_once: servers.fake(['--exit-at-once']),
    never_inits: servers.fake(['--never-initialize', '--pid-file', silentPid], { timeout: upstreamTimeout }),
  });
  const t0 = Date.now();
  const c = await connectClient({ config: cfg });
  const initMs = Date.now() - t0;
  // The first answer waits for the servers still connecting (CODEMCP_LIST_WAIT_MS is long in
  // these tests): until never_inits is given up at its own 4 s timeout, far before the default
  // 30 s, so its instructions count the working servers' functions and name the failed ones.
  assert.ok(initMs < ms(20000), `initialize took ${initMs} ms: a broken server held it`);
  const instr = c.client.getInstructions();
  assert.match(instr, /everything [1-9]\d*\b/, instr);
  for (const s of ['missing_cmd', 'exits_at_once', 'never_inits']) assert.match(instr, new RegExp(`${s} \\(failed\\)`), instr);

  const tool = await executePythonTool(c.client, ms(25000));
  const listMs = Date.now() - t0;
  // The default upstream timeout is 30 s: finishing well before it proves the per-server
  // timeout was applied and no broken server blocked the list.
  assert.ok(listMs < ms(20000), `first tools/list took ${listMs} ms`);
  const desc = tool.description;
  assert.match(desc, /def everything_get_sum\(a: float, b: float/);
  assertHasFunctions(desc, 'fake_ok', FAKE_TOOLS);
  for (const s of ['missing_cmd', 'exits_at_once', 'never_inits']) assertNoFunctions(desc, s);

  // Each skipped server is logged by name at the default level.
  for (const s of ['missing_cmd', 'exits_at_once', 'never_inits']) {
    const logged = await waitFor(() => c.stderr().includes(s), ms(3000));
    assert.ok(logged, `nothing in codemcp's stderr names ${s}:\n${c.stderr()}`);
  }
  // Exited children are reaped.
  const z = await waitNoZombies(c.pid);
  assert.deepEqual(z, [], `zombie children: ${describeProcs(z)}`);
  // A server that timed out is shut down, not left running.
  const pid = readPidFile(silentPid);
  assert.ok(pid > 0, 'never_inits never started');
  const gone = await waitFor(() => !pidAlive(pid), ms(8000));
  assert.ok(gone, `never_inits (pid ${pid}) is still running after it timed out`);
});

test('tools/list pagination of an upstream is followed to the end', async () => {
  const dir = tempDir();
  const log = path.join(dir, 'pages.jsonl');
  const cfg = writeConfig(dir, { fake_pages: servers.fake(['--paginate', '2', '--log-file', log]) });
  const c = await connectClient({ config: cfg });
  const { description } = await executePythonTool(c.client);
  assertHasFunctions(description, 'fake_pages', FAKE_TOOLS);
  const cursors = readFakeLog(log)
    .filter((m) => m.method === 'tools/list')
    .map((m) => m.params?.cursor ?? null);
  assert.deepEqual(cursors.slice(0, 5), [null, '2', '4', '6', '8']);
});

test('a burst of upstream tools/list_changed is coalesced into one re-list', async () => {
  const dir = tempDir();
  const log = path.join(dir, 'burst.jsonl');
  const cfg = writeConfig(dir, { burst: servers.fake(['--list-changed-burst', '5', '--log-file', log]) });
  const c = await connectClient({ config: cfg });
  const { description } = await executePythonTool(c.client);
  assertHasFunctions(description, 'burst', FAKE_TOOLS);
  await sleep(ms(1500)); // let any re-lists happen
  const lists = readFakeLog(log).filter((m) => m.method === 'tools/list').length;
  assert.ok(lists >= 1 && lists <= 2, `upstream was listed ${lists} times for 1 initial list + a burst of 5 (want 1 or 2)`);
  // The gateway still answers and still has the tools.
  const again = await executePythonTool(c.client);
  assertHasFunctions(again.description, 'burst', FAKE_TOOLS);
});

test('upstream ping and roots/list requests are answered', async () => {
  const dir = tempDir();
  const log = path.join(dir, 'ask.jsonl');
  const cfg = writeConfig(dir, { asker: servers.fake(['--ask-ping', '--ask-roots', '--log-file', log]) });
  const c = await connectClient({ config: cfg });
  await executePythonTool(c.client);
  const answers = await waitFor(() => {
    const a = readFakeLog(log).filter((m) => !('method' in m));
    return a.length >= 2 ? a : null;
  }, ms(5000));
  assert.ok(answers, `codemcp did not answer the upstream's ping and roots/list: ${JSON.stringify(readFakeLog(log))}`);
  const ping = answers.find((a) => a.id === 'fake-1');
  const roots = answers.find((a) => a.id === 'fake-2');
  assert.deepEqual(ping?.result, {}, JSON.stringify(ping));
  assert.ok(Array.isArray(roots?.result?.roots), `roots/list answer: ${JSON.stringify(roots)}`);
});

test("upstream stderr reaches codemcp's stderr prefixed with the server name", async () => {
  const dir = tempDir();
  const cfg = writeConfig(dir, { noisy_one: servers.fake(['--stderr-noise']) });
  const c = await connectClient({ config: cfg, env: { CODEMCP_LOG: 'debug' } });
  await executePythonTool(c.client);
  const line = await waitFor(
    () => c.stderr().split('\n').find((l) => l.includes('NOISE start')),
    ms(5000),
  );
  assert.ok(line, `upstream stderr never appeared in codemcp's stderr:\n${c.stderr()}`);
  const at = line.indexOf('noisy_one');
  assert.ok(at >= 0 && at < line.indexOf('NOISE start'), `line lacks the server name prefix: ${line}`);
});

test('an upstream that crashes after initialize is noticed, logged and reaped', async () => {
  const dir = tempDir();
  const cfg = writeConfig(dir, {
    fake_ok: servers.fake(),
    crashy: servers.fake(['--crash-after-init']),
  });
  const c = await connectClient({ config: cfg });
  const { description } = await executePythonTool(c.client);
  assertHasFunctions(description, 'fake_ok', FAKE_TOOLS);
  const logged = await waitFor(() => c.stderr().includes('crashy'), ms(5000));
  assert.ok(logged, `the crash of crashy was not logged:\n${c.stderr()}`);
  const z = await waitNoZombies(c.pid);
  assert.deepEqual(z, [], `zombie children: ${describeProcs(z)}`);
});

test('an upstream writing garbage lines between messages still works', async () => {
  const dir = tempDir();
  const cfg = writeConfig(dir, { junky: servers.fake(['--bad-json']) });
  const c = await connectClient({ config: cfg });
  const { description } = await executePythonTool(c.client);
  assertHasFunctions(description, 'junky', FAKE_TOOLS);
});

test('the mcpServers config format works (command + args + env)', async () => {
  const dir = tempDir();
  const e = servers.fake(['--paginate', '3']);
  const cfg = writeMcpServersConfig(dir, {
    fk: { command: e.command[0], args: e.command.slice(1), env: { FAKE_E2E: '1' } },
  });
  const c = await connectClient({ config: cfg });
  const { description } = await executePythonTool(c.client);
  assertHasFunctions(description, 'fk', FAKE_TOOLS);
});

test('{env:VAR} and ${VAR} interpolation; a missing variable disables only that server; enabled:false is not started', async () => {
  const dir = tempDir();
  const toolsFile = path.join(dir, 'tools.json');
  fs.writeFileSync(
    toolsFile,
    JSON.stringify([{ name: 'interp_probe', description: 'Probe.', inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } }]),
  );
  const offPid = path.join(dir, 'off.pid');
  const cfg = writeConfig(dir, {
    dollar: servers.fake(['--tools-file', '${CODEMCP_E2E_TOOLS}']),
    braces: servers.fake(['--tools-file', '{env:CODEMCP_E2E_TOOLS}']),
    needs_var: servers.fake([], { environment: { X: '{env:CODEMCP_E2E_SURELY_UNSET}' } }),
    switched_off: servers.fake(['--pid-file', offPid], { enabled: false }),
    fake_ok: servers.fake(),
  });
  const c = await connectClient({ config: cfg, env: { CODEMCP_E2E_TOOLS: toolsFile } });
  const { description } = await executePythonTool(c.client);
  assert.ok(defLine(description, 'dollar_interp_probe'), description);
  assert.ok(defLine(description, 'braces_interp_probe'), description);
  assertHasFunctions(description, 'fake_ok', FAKE_TOOLS);
  assertNoFunctions(description, 'needs_var');
  assertNoFunctions(description, 'switched_off');
  assert.ok(c.stderr().includes('CODEMCP_E2E_SURELY_UNSET'), `the missing variable is not named in the log:\n${c.stderr()}`);
  assert.equal(readPidFile(offPid), 0, 'a server with enabled:false was started');
});
