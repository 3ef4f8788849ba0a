// `codemcp setup claude-desktop | cursor | vscode` and the polish of setup opencode, tried as
// a new user would: real-looking harness files (comments, other settings), the real binary, and
// the command it leaves behind launched the way the harness would launch it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  CODEMCP_BIN, Client, StdioClientTransport, runCodemcp, tempDir, servers, executePythonTool, ms,
} from './lib.mjs';

const backups = (file) => fs.readdirSync(path.dirname(file))
  .filter((f) => f.startsWith(`${path.basename(file)}.bak.`));
const jsonc = (p) => JSON.parse(fs.readFileSync(p, 'utf8').replace(/^\s*\/\/.*$/mg, ''));

function mcpServersEntry(e) {
  const [command, ...args] = e.command;
  return { command, args };
}

/** Launches {command, args, env} as a harness would and returns execute_python's description. */
async function launchAsHarness(entry, home) {
  const env = { PATH: '/usr/bin:/bin', HOME: home, ...entry.env };
  const transport = new StdioClientTransport({ command: entry.command, args: entry.args || [], env, stderr: 'ignore' });
  const client = new Client({ name: 'harness', version: '0' });
  await client.connect(transport, { timeout: ms(15000) });
  try {
    for (let i = 0; i < 100; i++) {
      const d = (await executePythonTool(client)).description;
      if (/(def )?everything_echo\(/.test(d)) return d;
      await new Promise((r) => setTimeout(r, 100));
    }
    return (await executePythonTool(client)).description;
  } finally {
    await client.close();
  }
}

test('setup claude-desktop: servers move, other settings and comments stay, absolute command, idempotent', async () => {
  const home = tempDir('codemcp-cd-');
  const file = path.join(home, '.config', 'Claude', 'claude_desktop_config.json');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const original = `{
  // Claude Desktop settings, edited by hand
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "everything": ${JSON.stringify(mcpServersEntry(servers.everything()))}
  }
}
`;
  fs.writeFileSync(file, original);
  const env = { XDG_CONFIG_HOME: path.join(home, '.config'), HOME: home };
  // --dry-run: the plan, nothing written.
  let r = await runCodemcp({ args: ['setup', 'claude-desktop', '--dry-run'], home: path.join(home, '.config'), env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /would move 1 server .*: everything/);
  assert.equal(fs.readFileSync(file, 'utf8'), original);
  assert.equal(backups(file).length, 0);
  const cm = path.join(home, '.config', 'codemcp', 'mcp.json');
  assert.ok(!fs.existsSync(cm));

  r = await runCodemcp({ args: ['setup', 'claude-desktop'], home: path.join(home, '.config'), env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /by its absolute path/);
  const after = fs.readFileSync(file, 'utf8');
  assert.match(after, /\/\/ Claude Desktop settings, edited by hand/);
  assert.match(after, /"globalShortcut": "Ctrl\+Space"/);
  const doc = jsonc(file);
  assert.deepEqual(Object.keys(doc.mcpServers), ['codemcp']);
  const entry = doc.mcpServers.codemcp;
  assert.equal(entry.command, fs.realpathSync(CODEMCP_BIN));
  assert.equal(entry.env.CODEMCP_CONFIG, cm);
  assert.equal(entry.env.CODEMCP_INSTANCE_LABEL, 'claude-desktop');
  assert.deepEqual(JSON.parse(fs.readFileSync(cm, 'utf8')).mcpServers.everything, mcpServersEntry(servers.everything()));
  const [bak] = backups(file);
  assert.equal(fs.readFileSync(path.join(path.dirname(file), bak), 'utf8'), original);

  // Again: nothing to do, no new backup.
  r = await runCodemcp({ args: ['setup', 'claude-desktop'], home: path.join(home, '.config'), env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /already launches codemcp.*nothing to do/);
  assert.equal(backups(file).length, 1);
  assert.equal(fs.readFileSync(file, 'utf8'), after);

  // The harness's command serves the adopted server, without codemcp on PATH.
  const desc = await launchAsHarness(entry, home);
  assert.match(desc, /(def )?everything_echo\(/);
});

test('setup cursor (default ~/.cursor/mcp.json) merges into an opencode-format codemcp config', async () => {
  const home = tempDir('codemcp-cursor-');
  const file = path.join(home, '.cursor', 'mcp.json');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify({ mcpServers: {
    everything: { ...mcpServersEntry(servers.everything()), env: { A: '1' } },
    off: { command: 'nothing', disabled: true },
  } }, null, 2));
  const cm = path.join(home, 'codemcp.json');
  fs.writeFileSync(cm, '{\n  // mine\n  "mcp": {\n    "keep": {"type": "local", "command": ["x"]}\n  }\n}\n');
  const r = await runCodemcp({ args: ['setup', 'cursor', '-c', cm], home, env: { HOME: home } });
  assert.equal(r.code, 0, r.stderr);
  const text = fs.readFileSync(cm, 'utf8');
  assert.match(text, /\/\/ mine/);
  const m = jsonc(cm).mcp;
  assert.deepEqual(Object.keys(m), ['keep', 'everything', 'off']);
  assert.deepEqual(m.everything, { type: 'local', command: servers.everything().command, environment: { A: '1' } });
  assert.equal(m.off.enabled, false);
  assert.deepEqual(Object.keys(JSON.parse(fs.readFileSync(file, 'utf8')).mcpServers), ['codemcp']);
  assert.equal(backups(cm).length, 1, 'codemcp config backed up');
});

test('setup vscode writes "servers" with type stdio in ./.vscode/mcp.json', async () => {
  const dir = tempDir('codemcp-vscode-');
  const file = path.join(dir, '.vscode', 'mcp.json');
  fs.mkdirSync(path.dirname(file));
  fs.writeFileSync(file, JSON.stringify({ inputs: [], servers: { everything: { type: 'stdio', ...mcpServersEntry(servers.everything()) } } }, null, 2));
  const r = await runCodemcp({ args: ['setup', 'vscode', '-c', path.join(dir, 'cm.json')], cwd: dir, home: dir });
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  assert.deepEqual(doc.inputs, []);
  assert.equal(doc.servers.codemcp.type, 'stdio');
  assert.equal(doc.servers.codemcp.env.CODEMCP_INSTANCE_LABEL, 'vscode');
  assert.ok(JSON.parse(fs.readFileSync(path.join(dir, 'cm.json'), 'utf8')).mcpServers.everything);
});

test('setup opencode: stale "tools" settings rewritten, the binary named by absolute path', async () => {
  const xdg = tempDir('codemcp-octools-');
  fs.mkdirSync(path.join(xdg, 'opencode'));
  const oc = path.join(xdg, 'opencode', 'opencode.json');
  fs.writeFileSync(oc, JSON.stringify({
    mcp: { everything: servers.everything(), memory: servers.memory(path.join(xdg, 'm.jsonl')) },
    tools: { 'everything_*': true, 'memory_delete_entities': false, bash: true },
    agent: { plan: { tools: { 'memory_*': false, write: false } } },
  }, null, 2));
  const r = await runCodemcp({ args: ['setup', 'opencode'], home: xdg });
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(fs.readFileSync(oc, 'utf8'));
  assert.deepEqual(doc.tools, { bash: true }, 'settings about moved tools are gone');
  assert.deepEqual(doc.agent.plan.tools, { write: false });
  assert.match(r.stdout, /"memory_delete_entities": false -> memory\.tools\.delete_entities\.enabled = false/);
  assert.match(r.stdout, /agent "plan".*"memory_\*" removed/);
  const cm = JSON.parse(fs.readFileSync(path.join(xdg, 'codemcp', 'mcp.json'), 'utf8'));
  assert.deepEqual(cm.mcp.memory.tools, { delete_entities: { enabled: false } });
  assert.equal(doc.mcp.codemcp.command[0], fs.realpathSync(CODEMCP_BIN));
  assert.equal(doc.mcp.codemcp.environment.CODEMCP_INSTANCE_LABEL, 'opencode');
  // The carried-over setting takes effect: the dump leaves that tool out.
  const dump = await runCodemcp({ config: path.join(xdg, 'codemcp', 'mcp.json'), env: { CODEMCP_DUMP: '1' } }, ms(30000));
  assert.equal(dump.code, 0, dump.stderr);
  assert.match(dump.stdout, /def memory_read_graph\(/);
  assert.doesNotMatch(dump.stdout, /def memory_delete_entities\(/);
});
