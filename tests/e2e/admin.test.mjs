// Live control of running gateways, as a user meets it: two real gateways (one stdio
// under an SDK client harness, one `codemcp start`) with the three npm servers; the admin
// commands (`instances`, `list`, `tools`, `enable`, `disable`, `enable-tool`, `disable-tool`,
// `-i`, `-d`) run as separate processes against them. Checks go through what the user sees:
// the execute_python description, tools/list_changed on the connected client, the result of a
// program, the JSONC mcp.json on disk, and the admin socket's files. No timing is asserted.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { cli, cliJson } from './admin_lib.mjs';
import {
  CODEMCP_BIN, PYTHON, Proc, TESTS, codemcpCommand, codemcpEnv, connectClient, tempDir,
  writeConfig, servers, ms, sleep, waitFor,
} from './lib.mjs';

const LABEL = 'e2e-harness';

function run(h, code, extra = {}) {
  return h.client.callTool(
    { name: 'execute_python', arguments: { code, reset: true, ...extra } },
    undefined,
    { timeout: ms(60000) },
  );
}

async function description(h) {
  const r = await h.client.listTools(undefined, { timeout: ms(30000) });
  return r.tools[0]?.description || '';
}

const JSONC_CONFIG = (memFile, fsDir) => `{
  // codemcp config with comments: the admin's -d must keep them
  "$schema": "https://example.invalid/codemcp.json",
  "mcp": {
    /* the reference server */
    "everything": {
      "type": "local",
      "command": ${JSON.stringify(servers.everything().command)}
    },
    "memory": {
      "type": "local",
      "command": ${JSON.stringify(servers.memory(memFile).command)},
      "environment": { "MEMORY_FILE_PATH": ${JSON.stringify(memFile)} }, // where it keeps the graph
    },
    "filesystem": {
      "type": "local",
      "command": ${JSON.stringify(servers.filesystem(fsDir).command)}
    }
  },
  "zz_other": [1, 2, 3]
}
`;

describe('two running gateways under live control', () => {
  let rt, env, h, gwB, configA, configB, listChanged = 0;

  before(async () => {
    rt = tempDir('codemcp-rt-', { shared: true });
    const dirA = tempDir('codemcp-gw-a-', { shared: true });
    const dirB = tempDir('codemcp-gw-b-', { shared: true });
    const fsDir = tempDir('codemcp-fs-', { shared: true });
    fs.writeFileSync(path.join(fsDir, 'hello.txt'), 'hello');
    configA = path.join(dirA, 'mcp.json');
    fs.writeFileSync(configA, JSONC_CONFIG(path.join(dirA, 'memory.jsonl'), fsDir));
    configB = writeConfig(dirB, {
      everything: servers.everything(),
      memory: servers.memory(path.join(dirB, 'memory.jsonl')),
    });
    env = { ...process.env, XDG_RUNTIME_DIR: rt, XDG_CONFIG_HOME: dirA };
    delete env.CODEMCP_ADMIN_SOCKET;
    delete env.CODEMCP_INSTANCE_LABEL;
    h = await connectClient({
      config: configA, shared: true,
      env: { XDG_RUNTIME_DIR: rt, CODEMCP_INSTANCE_LABEL: LABEL },
    });
    h.client.setNotificationHandler(ToolListChangedNotificationSchema, () => { listChanged++; });
    gwB = new Proc({ args: ['start', '-p', '0'], config: configB, shared: true,
      env: { XDG_RUNTIME_DIR: rt, CODEMCP_INSTANCE_LABEL: '' } });
    const up = await waitFor(() => gwB.exit || /serving MCP over Streamable HTTP at/.test(gwB.stderr), ms(20000));
    assert.ok(up && !gwB.exit, `codemcp start did not come up:\n${gwB.stderrTail()}`);
    // Both gateways have every server connected.
    const ok = await waitFor(async () => {
      const a = await cli(['list', '--json', '-i', LABEL], env);
      const b = await cli(['list', '--json', '-i', String(gwB.pid)], env);
      if (a.code || b.code) return false;
      const all = [...JSON.parse(a.stdout).servers, ...JSON.parse(b.stdout).servers];
      return all.length === 5 && all.every((s) => s.connected);
    }, ms(40000), 200);
    assert.ok(ok, `servers never all connected:\n${h.stderr().slice(-2000)}\n${gwB.stderrTail()}`);
  });

  test('instances lists both gateways with their launcher labels', async () => {
    const list = await cliJson(['instances'], env);
    assert.equal(list.length, 2, JSON.stringify(list));
    const a = list.find((r) => r.label === LABEL);
    const b = list.find((r) => r.pid === gwB.pid);
    assert.ok(a, `no instance labelled ${LABEL}: ${JSON.stringify(list)}`);
    assert.equal(a.transport, 'stdio');
    assert.equal(a.config, configA);
    assert.ok(b, `no instance with pid ${gwB.pid}`);
    assert.equal(b.transport, 'http');
    assert.ok(b.port > 0, JSON.stringify(b));
    // No CODEMCP_INSTANCE_LABEL: the launcher is the parent process's name (this test runner).
    assert.equal(b.label, fs.readFileSync('/proc/self/comm', 'utf8').trim());
    const table = await cli(['instances'], env);
    assert.match(table.stdout, /LAUNCHER\s+PID\s+TRANSPORT/);
    assert.match(table.stdout, new RegExp(`${LABEL}\\s+${a.pid}\\s+stdio`));
    assert.match(table.stdout, new RegExp(`\\s${gwB.pid}\\s+http:${b.port}`));
    // The socket is private.
    const st = fs.statSync(a.socket);
    assert.ok(st.isSocket());
    assert.equal(st.mode & 0o777, 0o600);
    assert.equal(fs.statSync(path.dirname(a.socket)).mode & 0o777, 0o700);
  });

  test('without -i, several gateways give a list to pick from, not a guess', async () => {
    const r = await cli(['list'], env);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /2 gateways are running; pick one with -i/);
    assert.match(r.stderr, new RegExp(`${LABEL}\\s+\\d+`));
    assert.match(r.stderr, new RegExp(`\\s${gwB.pid}\\s`));
    // A config substring picks one as well.
    const byConfig = await cliJson(['list', '-i', path.basename(path.dirname(configB))], env);
    assert.deepEqual(byConfig.servers.map((s) => s.name), ['everything', 'memory']);
    const none = await cli(['list', '-i', 'no-such-gateway'], env);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no running gateway matches -i no-such-gateway/);
  });

  test('list and tools show the live state with the original columns', async () => {
    const table = await cli(['list', '-i', LABEL], env);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^NAME\s+TYPE\s+DEFAULT\s+CONNECTED\s+AUTH\s+TOOLS\s+PROTOCOL/);
    assert.match(table.stdout, /\neverything\s+local\s+yes\s+yes\s+n\/a\s+\d+\s+20\d\d-/);
    const tools = await cliJson(['tools', '-i', LABEL], env);
    const servers_ = new Set(tools.tools.map((t) => t.server));
    assert.deepEqual([...servers_].sort(), ['everything', 'filesystem', 'memory']);
    const echo = tools.tools.find((t) => t.server === 'everything' && t.tool === 'echo');
    assert.deepEqual({ on: echo.on, default: echo.default, session: echo.session ?? null },
      { on: true, default: true, session: null });
    assert.equal(echo.function, 'everything_echo');
    const ttable = await cli(['tools', '-i', LABEL], env);
    assert.match(ttable.stdout, /^SERVER\s+TOOL\s+ON\s+DEFAULT\s+SESSION\s+SUMMARY/);
    assert.match(ttable.stdout, /\neverything\s+echo\s+yes\s+on\s+-\s+\S/);
    for (const cmd of ['list', 'enable', 'tools', 'disable-tool', 'instances']) {
      const help = await cli([cmd, '--help'], env);
      assert.equal(help.code, 0);
      assert.match(help.stdout, new RegExp(`usage: codemcp ${cmd}`));
      assert.match(help.stdout, /--json/);
    }
  });

  test('disable everything: gone from the description, one tools/list_changed; enable brings it back', async () => {
    const READ = 'try:\n    result = read_resource("demo://resource/dynamic/text/3")[0].text\nexcept ToolError as e:\n    result = ["refused", e.kind]';
    const readable = await run(h, READ);
    assert.match(JSON.stringify(readable.structuredContent.result), /3/, 'its resources read before');
    let desc = await description(h);
    assert.match(desc, /def everything_echo\(/);
    const before_ = listChanged;
    const r = await cli(['disable', 'everything', '-i', LABEL], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /everything is disconnected/);
    assert.ok(await waitFor(() => listChanged > before_, ms(10000)), 'no tools/list_changed');
    await sleep(ms(300));
    assert.equal(listChanged, before_ + 1, 'exactly one notification for one change');
    desc = await description(h);
    assert.doesNotMatch(desc, /everything_/);
    assert.match(desc, /memory_read_graph/);
    const list = await cliJson(['list', '-i', LABEL], env);
    const ev = list.servers.find((s) => s.name === 'everything');
    assert.equal(ev.connected, false);
    assert.equal(ev.default, true, 'runtime only: the default is unchanged');
    // The other gateway is untouched.
    const other = await cliJson(['list', '-i', String(gwB.pid)], env);
    assert.equal(other.servers.find((s) => s.name === 'everything').connected, true);
    // A program that calls it now gets a clear error, not a crash.
    const gone = await run(h, 'from codemcp_rt import client\nresult = client.call("everything", "echo", {"message": "x"}).result()');
    assert.equal(gone.isError, true);
    // nor can a program read its resources
    const unread = await run(h, READ);
    assert.equal(unread.structuredContent.result[0], 'refused', JSON.stringify(unread.structuredContent));

    const en = await cli(['enable', 'everything', '-i', LABEL], env);
    assert.equal(en.code, 0, en.stderr);
    assert.match(en.stdout, /everything: connected \(\d+ tools\)/);
    assert.ok(await waitFor(async () => /def everything_echo\(/.test(await description(h)), ms(20000)));
    const back = await run(h, 'result = everything_echo(message="back")');
    assert.ok(!back.isError, JSON.stringify(back));
    assert.match(JSON.stringify(back.structuredContent.result), /back/);
  });

  test('a disabled tool is refused by the gateway, even when called past the SDK', async (t_) => {
    const r = await cli(['disable-tool', 'memory', 'read_graph', '-i', LABEL], env);
    t_.after(() => cli(['enable-tool', 'memory', 'read_graph', '-i', LABEL], env)); // whatever happens
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /memory\/read_graph disabled \[session\]/);
    const tools = await cliJson(['tools', '-i', LABEL], env);
    const t = tools.tools.find((x) => x.server === 'memory' && x.tool === 'read_graph');
    assert.deepEqual([t.on, t.default, t.session], [false, true, 'off']);
    assert.ok(await waitFor(async () => !/memory_read_graph/.test(await description(h)), ms(10000)));
    const direct = await run(h, 'from codemcp_rt import client\nresult = client.call("memory", "read_graph", {}).result()');
    assert.equal(direct.isError, true, JSON.stringify(direct));
    const err = JSON.parse(direct.structuredContent.error).tool_error;
    assert.equal(err.kind, 'not_found', JSON.stringify(err)); // as for any tool not in the catalog
    assert.match(err.message, /disabled in this gateway.*codemcp enable-tool memory read_graph/);
    // Other tools of the server keep working: disabling a tool never disconnects its server.
    const other = await run(h, 'result = memory_search_nodes(query="x")');
    assert.ok(!other.isError, JSON.stringify(other));
    const unknown = await cli(['disable-tool', 'memory', 'no_such_tool', '-i', LABEL], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /server memory has no tool no_such_tool \(its tools: .*read_graph/);

    const en = await cli(['enable-tool', 'memory', 'read_graph', '-i', LABEL], env);
    assert.equal(en.code, 0, en.stderr);
    assert.ok(await waitFor(async () => /memory_read_graph/.test(await description(h)), ms(10000)));
    const ok = await run(h, 'result = memory_read_graph()');
    assert.ok(!ok.isError, JSON.stringify(ok));
  });

  test('a run in flight during disable and enable completes', async () => {
    const inflight = run(h, 'import time\ntime.sleep(1.5)\nresult = {"read": memory_read_graph(), "n": 1}');
    await sleep(ms(300));
    assert.equal((await cli(['disable', 'filesystem', '-i', LABEL], env)).code, 0);
    assert.equal((await cli(['disable-tool', 'everything', 'get-sum', '-i', LABEL], env)).code, 0);
    assert.equal((await cli(['enable', 'filesystem', '-i', LABEL], env)).code, 0);
    const r = await inflight;
    assert.ok(!r.isError, JSON.stringify(r));
    assert.equal(r.structuredContent.result.n, 1);
    assert.ok(Array.isArray(r.structuredContent.result.read.entities));
    await cli(['enable-tool', 'everything', 'get-sum', '-i', LABEL], env);
  });

  test('-d writes mcp.json (JSONC): comments, other keys and order kept, one backup', async () => {
    const before_ = fs.readFileSync(configA, 'utf8');
    const r = await cli(['disable-tool', 'memory', 'search_nodes', '-d', '-i', LABEL], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\[default, mcp.json updated\]/);
    const after1 = fs.readFileSync(configA, 'utf8');
    assert.equal(fs.readFileSync(configA + '.bak', 'utf8'), before_);
    for (const keep of ['// codemcp config with comments', '/* the reference server */',
      '// where it keeps the graph', '"$schema"', '"zz_other": [1, 2, 3]']) {
      assert.ok(after1.includes(keep), `lost ${keep}:\n${after1}`);
    }
    assert.match(after1, /"tools": \{"search_nodes": \{"enabled": false\}\}/);
    // Only the new member was added: removing it gives the old file back byte for byte.
    assert.equal(after1.replace(/\n\s*"tools": \{"search_nodes": \{"enabled": false\}\}/, ''), before_);
    const tools = await cliJson(['tools', '-i', LABEL], env);
    const t = tools.tools.find((x) => x.server === 'memory' && x.tool === 'search_nodes');
    assert.deepEqual([t.on, t.default, t.session ?? null], [false, false, null]);

    const d = await cli(['disable', 'filesystem', '-d', '-i', LABEL], env);
    assert.equal(d.code, 0, d.stderr);
    const after2 = fs.readFileSync(configA, 'utf8');
    assert.equal(fs.readFileSync(configA + '.bak', 'utf8'), after1, 'one backup: the previous file');
    assert.match(after2, /"filesystem": \{\n\s+"type": "local",\n\s+"command": \[[^\]]*\],\n\s+"enabled": false\n\s+\}/);
    const list = await cliJson(['list', '-i', LABEL], env);
    const fsrv = list.servers.find((s) => s.name === 'filesystem');
    assert.deepEqual([fsrv.connected, fsrv.default], [false, false]);
    // The file still loads: a fresh dump of it omits the disabled server and tool.
    const dump = spawnSync(CODEMCP_BIN, [], {
      env: { ...env, CODEMCP_CONFIG: configA, CODEMCP_DUMP: '1' }, encoding: 'utf8', timeout: ms(60000),
    });
    assert.equal(dump.status, 0, dump.stderr);
    assert.doesNotMatch(dump.stdout, /filesystem_|memory_search_nodes/);
    assert.match(dump.stdout, /memory_read_graph/);

    const e = await cli(['enable', 'filesystem', '-d', '-i', LABEL], env);
    assert.equal(e.code, 0, e.stderr);
    assert.match(fs.readFileSync(configA, 'utf8'), /"enabled": true\n/);
    const e2 = await cli(['enable-tool', 'memory', 'search_nodes', '-d', '-i', LABEL], env);
    assert.equal(e2.code, 0, e2.stderr);
    assert.match(fs.readFileSync(configA, 'utf8'), /"tools": \{"search_nodes": \{"enabled": true\}\}/);
  });

  test('another user cannot talk to the admin socket (file mode, then SO_PEERCRED)', async (t) => {
    if (process.getuid() !== 0) {
      t.skip('needs root to create a second user');
      return;
    }
    const name = `cmcpe2e${process.pid % 100000}`;
    const add = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', name], { encoding: 'utf8' });
    if (add.status !== 0 && add.status !== 9) { // 9: left over from an interrupted run; reuse it
      t.skip(`useradd failed: ${add.stderr}`);
      return;
    }
    const dirs = [];
    try {
      const uid = Number(spawnSync('id', ['-u', name], { encoding: 'utf8' }).stdout.trim());
      const gid = Number(spawnSync('id', ['-g', name], { encoding: 'utf8' }).stdout.trim());
      const sock = (await cliJson(['instances'], env)).find((r) => r.label === LABEL).socket;
      const probe = `import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect:", e.strerror); sys.exit(0)
try:
    s.sendall(b'{"method": "list"}\\n')
except OSError:
    pass  # a refusal may close the connection before the request is sent
print("reply:", s.makefile().readline().strip())`;
      const asOther = () => spawnSync(PYTHON, ['-c', probe, sock], { uid, gid, encoding: 'utf8', timeout: ms(10000) });
      // 1. As installed: the directory (0700) and socket (0600) keep the other user out.
      for (let d = path.dirname(sock); d !== '/' && d !== path.dirname(rt); d = path.dirname(d)) dirs.push([d, fs.statSync(d).mode & 0o7777]);
      let r = asOther();
      assert.match(r.stdout, /connect: Permission denied/, r.stdout + r.stderr);
      // 2. Even with the modes opened up (a careless chmod), the gateway checks the peer's uid.
      for (const [d] of dirs) fs.chmodSync(d, 0o755);
      fs.chmodSync(sock, 0o777);
      r = asOther();
      assert.match(r.stdout, /reply: .*"ok":false.*permission denied: not the gateway's user/, r.stdout + r.stderr);
      assert.doesNotMatch(r.stdout, /servers/);
      // The owner still gets through.
      assert.equal((await cli(['list', '-i', LABEL], env)).code, 0);
    } finally {
      for (const [d, mode] of dirs) fs.chmodSync(d, mode);
      spawnSync('userdel', [name]);
    }
  });

  test('a killed gateway leaves a stale socket that the next scan removes', async () => {
    const dirC = tempDir('codemcp-gw-c-');
    const c = new Proc({ config: writeConfig(dirC, {}), env: { XDG_RUNTIME_DIR: rt, CODEMCP_INSTANCE_LABEL: 'doomed' } });
    const rec = await waitFor(async () => {
      const r = await cli(['instances', '--json'], env);
      return r.code === 0 && JSON.parse(r.stdout).find((x) => x.label === 'doomed');
    }, ms(15000), 100);
    assert.ok(rec, `gateway C never appeared:\n${c.stderrTail()}`);
    assert.ok(fs.existsSync(rec.socket) && fs.existsSync(rec.record));
    process.kill(c.pid, 'SIGKILL');
    await c.waitExit(ms(10000));
    assert.ok(fs.existsSync(rec.socket), 'SIGKILL leaves the socket behind');
    const direct = await cli(['list'], { ...env, CODEMCP_ADMIN_SOCKET: rec.socket });
    assert.equal(direct.code, 1);
    assert.match(direct.stderr, /not running any more/);
    const list = await cliJson(['instances'], env);
    assert.equal(list.length, 2, JSON.stringify(list));
    assert.ok(!list.find((x) => x.label === 'doomed'));
    assert.ok(!fs.existsSync(rec.socket), 'stale socket removed');
    assert.ok(!fs.existsSync(rec.record), 'stale record removed');
  });

  after(async () => {
    await h?.close();
  });
});

// ---------------------------------------------------------------------------------------------
// The systemd unit in contrib/ starts a gateway that stays up.

test('contrib/codemcp.service: its ExecStart command line serves (with the binary under test)', async () => {
  const unit = fs.readFileSync(new URL('../../contrib/codemcp.service', import.meta.url), 'utf8');
  assert.doesNotMatch(unit, /planned|will not stay up/);
  const exec = unit.match(/^ExecStart=(\S+)\s+(.*)$/m);
  assert.ok(exec, 'no ExecStart line');
  assert.match(exec[1], /\/codemcp$/);
  const args = exec[2].trim().split(/\s+/).map((a) => (a === '3388' ? '0' : a)); // a free port
  assert.equal(args[0], 'start');
  const dir = tempDir('codemcp-unit-');
  const p = new Proc({ args, config: writeConfig(dir, { everything: servers.everything() }), home: dir,
    env: { XDG_RUNTIME_DIR: dir, CODEMCP_LOG: 'info' } });
  p.child.stdin.end(); // systemd gives it /dev/null
  const up = await waitFor(() => p.exit || /serving MCP over Streamable HTTP at/.test(p.stderr), ms(20000));
  assert.ok(up && !p.exit, `the unit's command line did not serve:\n${p.stderrTail()}`);
  await sleep(ms(500));
  assert.equal(p.exit, null, 'it stays up with stdin at EOF');
  p.child.kill('SIGTERM');
  const ex = await p.waitExit(ms(15000));
  assert.equal(ex.code, 0);
});

// ---------------------------------------------------------------------------------------------
// The 2026 era: a client's open subscriptions/listen stream hears of an admin change too.

test('a 2026-era client with subscriptions/listen gets tools/list_changed on disable-tool', async () => {
  const v2dir = path.join(TESTS, 'v2', 'node_modules', '@modelcontextprotocol', 'client', 'dist');
  const { Client: V2Client } = await import(path.join(v2dir, 'index.mjs'));
  const { StdioClientTransport: V2Stdio } = await import(path.join(v2dir, 'stdio.mjs'));
  const rt = tempDir('codemcp-rt26-');
  const config = writeConfig(tempDir('codemcp-adm26-'), { everything: servers.everything() });
  const [cmd, args] = codemcpCommand([]);
  const transport = new V2Stdio({ command: cmd, args, stderr: 'pipe',
    env: codemcpEnv({ config, env: { XDG_RUNTIME_DIR: rt, CODEMCP_INSTANCE_LABEL: 'v2-2026' } }) });
  const client = new V2Client({ name: 'codemcp-e2e-v2', version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(transport, { timeout: ms(20000) });
  try {
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    const env = { ...process.env, XDG_RUNTIME_DIR: rt };
    delete env.CODEMCP_ADMIN_SOCKET;
    assert.ok(await waitFor(async () => {
      const r = await cli(['tools', '--json'], env);
      return r.code === 0 && JSON.parse(r.stdout).tools.some((t) => t.tool === 'echo');
    }, ms(30000), 200), 'everything never connected');
    let changed = 0;
    client.setNotificationHandler('notifications/tools/list_changed', () => { changed++; });
    const sub = await client.listen({ toolsListChanged: true });
    assert.equal(sub.honoredFilter.toolsListChanged, true);
    const r = await cli(['disable-tool', 'everything', 'echo'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(await waitFor(() => changed > 0, ms(10000), 50), 'no tools/list_changed on the listen stream');
    const list = await client.listTools();
    assert.doesNotMatch(list.tools[0].description, /everything_echo\(/);
    await sub.close();
  } finally {
    await client.close();
  }
});
