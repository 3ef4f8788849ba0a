// `codemcp setup opencode` end to end: the real binary rewrites a real-looking opencode config
// in a temporary XDG_CONFIG_HOME, and the command it leaves in opencode's file is then launched
// exactly as opencode would (its command and environment) and serves the adopted servers.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  Client, StdioClientTransport, runCodemcp, tempDir, servers, executePythonTool, ms, waitFor,
} from './lib.mjs';

// opencode's own dialect: comments and trailing commas, other settings around `mcp`.
function opencodeText(mcp) {
  const body = JSON.stringify(mcp, null, 2).replace(/\n}$/, ',\n  // the last server\n}');
  return `{
  // written by hand, as people do
  "$schema": "https://opencode.ai/config.json",
  "theme": "dark", /* kept */
  "mcp": ${body},
  "agent": { "build": { "model": "x" }, },
}
`;
}

function setupXdg(mcp, { codemcpConfig } = {}) {
  const xdg = tempDir('codemcp-setup-');
  fs.mkdirSync(path.join(xdg, 'opencode'));
  const oc = path.join(xdg, 'opencode', 'opencode.json');
  fs.writeFileSync(oc, opencodeText(mcp));
  if (codemcpConfig !== undefined) {
    fs.mkdirSync(path.join(xdg, 'codemcp'));
    fs.writeFileSync(path.join(xdg, 'codemcp', 'mcp.json'), codemcpConfig);
  }
  return { xdg, oc, cm: path.join(xdg, 'codemcp', 'mcp.json') };
}

const setup = (xdg, args = []) => runCodemcp({ args: ['setup', 'opencode', ...args], home: xdg });
const backups = (file) => fs.readdirSync(path.dirname(file))
  .filter((f) => f.startsWith(`${path.basename(file)}.bak.`))
  .map((f) => path.join(path.dirname(file), f));
const read = (p) => JSON.parse(fs.readFileSync(p, 'utf8'));
// opencode's file keeps its comments and trailing commas through setup: read it as JSONC.
const readJsonc = (p) => JSON.parse(fs.readFileSync(p, 'utf8')
  .replace(/("(?:\\.|[^"\\])*")|\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (m, s) => s || '')
  .replace(/,(\s*[}\]])/g, '$1'));

describe('codemcp setup keeps what it copies private, whatever the umask', () => {
  test('backups 0600; undo records 0600 in a 0700 folder, even one made before with other modes', async () => {
    const { xdg, oc } = setupXdg({ remote: { type: 'remote', url: 'https://example.invalid/mcp', headers: { Authorization: 'Bearer secret-token-1234' } } });
    const undo = path.join(xdg, 'codemcp', 'setup-undo');
    fs.mkdirSync(path.dirname(undo), { mode: 0o700 });
    fs.mkdirSync(undo);
    fs.chmodSync(undo, 0o755);
    const old = process.umask(0);
    let r;
    try {
      r = await setup(xdg);
    } finally {
      process.umask(old);
    }
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const [bak] = backups(oc);
    assert.match(fs.readFileSync(bak, 'utf8'), /secret-token-1234/, 'the backup is the original');
    assert.equal(fs.statSync(bak).mode & 0o777, 0o600, 'backup mode');
    assert.equal(fs.statSync(undo).mode & 0o777, 0o700, 'undo folder mode');
    const records = fs.readdirSync(undo);
    assert.ok(records.length > 0, 'no undo record');
    for (const f of records) assert.equal(fs.statSync(path.join(undo, f)).mode & 0o777, 0o600, `${f} mode`);
  });
});

describe('codemcp setup opencode', () => {
  test('moves the servers, backs up, and leaves a command that serves them', async () => {
    const mcp = { everything: servers.everything(), off: servers.fake([], { enabled: false }) };
    const { xdg, oc, cm } = setupXdg(mcp);
    const original = fs.readFileSync(oc, 'utf8');
    const r = await setup(xdg);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /everything off/);

    const [bak] = backups(oc);
    assert.ok(bak, 'no backup of opencode.json');
    assert.equal(fs.readFileSync(bak, 'utf8'), original, 'the backup is not the original');
    assert.deepEqual(read(cm).mcp, mcp, 'codemcp has not got the servers verbatim');
    assert.equal(fs.statSync(cm).mode & 0o777, 0o600);

    const after = readJsonc(oc);
    assert.match(fs.readFileSync(oc, 'utf8'), /\/\/ written by hand, as people do/, 'comments kept');
    assert.equal(after.theme, 'dark');
    assert.deepEqual(after.agent, { build: { model: 'x' } });
    assert.deepEqual(Object.keys(after.mcp), ['codemcp']);
    const entry = after.mcp.codemcp;
    assert.equal(entry.type, 'local');
    assert.equal(entry.environment.CODEMCP_CONFIG, cm);

    // Launch it the way opencode does: its command, its environment, nothing of ours.
    const [cmd, ...args] = entry.command;
    const env = { PATH: process.env.PATH, HOME: xdg, ...entry.environment };
    const transport = new StdioClientTransport({ command: cmd, args, env, stderr: 'ignore' });
    const client = new Client({ name: 'opencode-like', version: '0' });
    await client.connect(transport);
    try {
      // tools/list answers within a second even while the server starts: poll.
      let tool;
      await waitFor(async () => /everything_get_sum\(/.test((tool = await executePythonTool(client)).description),
        ms(30000), 200);
      assert.match(tool.description, /(def )?everything_get_sum\(/);
      const res = await client.callTool({ name: 'execute_python',
        arguments: { code: 'result = str(everything_get_sum(a=20, b=22))' } }, undefined, { timeout: ms(30000) });
      assert.match(res.structuredContent.result, /42/);
    } finally {
      await client.close();
    }
  });

  test('running it again changes nothing', async () => {
    const { xdg, oc, cm } = setupXdg({ everything: servers.everything() });
    assert.equal((await setup(xdg)).code, 0);
    const ocText = fs.readFileSync(oc, 'utf8');
    const cmText = fs.readFileSync(cm, 'utf8');
    const r = await setup(xdg);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /nothing to do/);
    assert.equal(fs.readFileSync(oc, 'utf8'), ocText);
    assert.equal(fs.readFileSync(cm, 'utf8'), cmText);
    assert.equal(backups(oc).length, 1, 'a second backup was made for no change');
  });

  test('merges into an existing codemcp config, opencode winning a clash', async () => {
    const mine = { keep: servers.fake(), both: servers.fake(['--paginate', '2']) };
    const { xdg, cm } = setupXdg({ both: servers.everything(), new: servers.everything() },
      { codemcpConfig: JSON.stringify({ mcp: mine }) });
    const r = await setup(xdg);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /already had a server "both"/);
    const merged = read(cm).mcp;
    assert.deepEqual(Object.keys(merged).sort(), ['both', 'keep', 'new']);
    assert.deepEqual(merged.keep, mine.keep);
    assert.deepEqual(merged.both, servers.everything());
    const [bak] = backups(cm);
    assert.deepEqual(read(bak), { mcp: mine }, 'the old codemcp config was not backed up');
  });

  test('--dry-run writes nothing', async () => {
    const { xdg, oc, cm } = setupXdg({ everything: servers.everything() });
    const before = fs.readFileSync(oc, 'utf8');
    const r = await setup(xdg, ['--dry-run']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /would move 1 server/);
    assert.equal(fs.readFileSync(oc, 'utf8'), before);
    assert.ok(!fs.existsSync(cm));
    assert.equal(backups(oc).length, 0);
  });

  test('refuses clearly and changes nothing when it cannot proceed', async () => {
    // A broken opencode file: file:line:col.
    const bad = setupXdg({ everything: servers.everything() });
    fs.writeFileSync(bad.oc, '{\n  "mcp": {\n    "x": [1, 2\n}\n');
    let r = await setup(bad.xdg);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /opencode\.json:\d+:\d+: .*nothing was changed/);
    assert.ok(!fs.existsSync(bad.cm));

    // No opencode config at all.
    const empty = tempDir('codemcp-setup-');
    r = await setup(empty);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no opencode config at .*OPENCODE_CONFIG/);

    // codemcp's config in the other format: not mixed, not touched.
    const other = setupXdg({ everything: servers.everything() },
      { codemcpConfig: JSON.stringify({ mcpServers: { a: { command: 'x' } } }) });
    const ocBefore = fs.readFileSync(other.oc, 'utf8');
    r = await setup(other.xdg);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /mcpServers/);
    assert.equal(fs.readFileSync(other.oc, 'utf8'), ocBefore);
    assert.equal(backups(other.oc).length, 0);

    // A server of the user's own that happens to be called codemcp.
    const clash = setupXdg({ codemcp: servers.everything() });
    r = await setup(clash.xdg);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /named "codemcp" that does not run codemcp/);

    // Usage.
    r = await runCodemcp({ args: ['setup', 'claude'], home: empty });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /usage: codemcp setup opencode/);
  });

  test("OPENCODE_CONFIG names the file; codemcp's own config may carry comments too", async () => {
    const dir = tempDir('codemcp-setup-');
    const oc = path.join(dir, 'custom.jsonc');
    fs.writeFileSync(oc, opencodeText({ everything: servers.everything() }));
    const r = await runCodemcp({ args: ['setup', 'opencode'], home: dir, env: { OPENCODE_CONFIG: oc } });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(Object.keys(readJsonc(oc).mcp), ['codemcp']);
    // A hand-edited codemcp config with comments and trailing commas loads.
    const cm = path.join(dir, 'codemcp', 'mcp.json');
    fs.writeFileSync(cm, opencodeText({ everything: servers.everything() }));
    const dump = await runCodemcp({ config: cm, env: { CODEMCP_DUMP: '1' } }, ms(30000));
    assert.equal(dump.code, 0, dump.stderr);
    assert.match(dump.stdout, /def everything_get_sum\(/);
  });
});
