// `codemcp setup` for Claude Code, Windsurf, Gemini CLI, Cline and Roo Code, `--undo` for every
// harness, and `codemcp init`: each harness file is written in that harness's own format, the
// real Claude Code and opencode (tests/clients, offline) read what setup leaves and what undo
// puts back, and codemcp itself loads the config setup or init wrote.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { CODEMCP_BIN, TESTS, runCodemcp, runClient, tempDir, servers, ms } from './lib.mjs';

const CLIENTS = path.join(TESTS, 'clients', 'node_modules');
const CLAUDE = path.join(CLIENTS, '.bin', 'claude');
const OPENCODE = path.join(CLIENTS, '.bin', 'opencode');
const noClients = (bin) => !fs.existsSync(bin) && 'tests/clients/node_modules is missing (tests/run.sh runs npm ci there)';

const backups = (file) => fs.readdirSync(path.dirname(file)).filter((f) => f.startsWith(`${path.basename(file)}.bak.`));
const jsonc = (p) => JSON.parse(fs.readFileSync(p, 'utf8')
  .replace(/("(?:\\.|[^"\\])*")|\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (m, s) => s || '')
  .replace(/,(\s*[}\]])/g, '$1'));
const everything = () => {
  const [command, ...args] = servers.everything().command;
  return { command, args };
};

/** A harness's home: HOME and XDG_CONFIG_HOME inside one temporary directory. */
function harnessHome(prefix) {
  const home = tempDir(prefix);
  const xdg = path.join(home, '.config');
  fs.mkdirSync(xdg, { recursive: true });
  const cm = path.join(xdg, 'codemcp', 'mcp.json');
  const run = (args, opts = {}) => runCodemcp({ args, home: xdg, cwd: opts.cwd, env: { HOME: home, ...opts.env } });
  return { home, xdg, cm, run };
}

function writeFile(p, text) {
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, text);
  return text;
}

/** Runs a real client offline and anonymously in cwd; {code, out} without colours. */
async function client(bin, args, home, cwd) {
  const env = {
    ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_TELEMETRY: '1', OPENCODE_DISABLE_AUTOUPDATE: '1',
  };
  delete env.CODEMCP_CONFIG;
  const r = await runClient(bin, args, env, ms(60000), cwd);
  return { code: r.code, out: r.out.replace(/\x1b\[[0-9;]*m/g, '') };
}

test('setup claude-code (user scope): `claude mcp list` shows codemcp connected; --undo gives Claude Code its servers back', { skip: noClients(CLAUDE) }, async () => {
  const h = harnessHome('codemcp-cc-');
  const file = path.join(h.home, '.claude.json');
  writeFile(file, JSON.stringify({ numStartups: 3, mcpServers: { everything: { type: 'stdio', ...everything(), env: {} } } }, null, 2));
  let list = await client(CLAUDE, ['mcp', 'list'], h.home, h.home);
  assert.match(list.out, /everything: .*Connected/, list.out);

  let r = await h.run(['setup', 'claude-code']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.match(r.stdout, /moving 1 server .*: everything/);
  const doc = jsonc(file);
  assert.equal(doc.numStartups, 3, 'other settings stay');
  assert.deepEqual(Object.keys(doc.mcpServers), ['codemcp']);
  assert.equal(doc.mcpServers.codemcp.type, 'stdio');
  assert.deepEqual(jsonc(h.cm).mcpServers.everything, { type: 'stdio', ...everything(), env: {} });
  list = await client(CLAUDE, ['mcp', 'list'], h.home, h.home);
  assert.match(list.out, /codemcp: .*codemcp .*Connected/, list.out);
  assert.doesNotMatch(list.out, /everything:/);
  const get = await client(CLAUDE, ['mcp', 'get', 'codemcp'], h.home, h.home);
  assert.match(get.out, /Scope: User config/, get.out);
  assert.match(get.out, new RegExp(`CODEMCP_CONFIG=${h.cm}`), get.out);

  // Idempotent: nothing to do, no new backup.
  const nBackups = backups(file).length;
  r = await h.run(['setup', 'claude-code']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /nothing to do/);
  assert.equal(backups(file).length, nBackups);

  // Claude Code rewrote ~/.claude.json since (its own bookkeeping): undo puts "mcpServers" back.
  r = await h.run(['setup', '--undo', 'claude-code']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.deepEqual(jsonc(file).mcpServers, { everything: { type: 'stdio', ...everything(), env: {} } });
  assert.equal(jsonc(file).numStartups, 3);
  assert.ok(!fs.existsSync(h.cm), 'the codemcp config setup made is gone again');
  list = await client(CLAUDE, ['mcp', 'list'], h.home, h.home);
  assert.match(list.out, /everything: .*Connected/, list.out);
  assert.doesNotMatch(list.out, /codemcp:/);

  // Nothing left to undo: said, exit 1.
  r = await h.run(['setup', '--undo', 'claude-code']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /no setup of claude-code at .*\.claude\.json to undo/);
});

test('setup claude-code follows CLAUDE_CONFIG_DIR, where Claude Code keeps its user file then', { skip: noClients(CLAUDE) }, async () => {
  const h = harnessHome('codemcp-ccdir-');
  const dir = path.join(h.home, 'claude-config');
  const e = everything();
  const add = await runClient(CLAUDE, ['mcp', 'add', '-s', 'user', 'everything', '--', e.command, ...e.args],
    { ...process.env, HOME: h.home, CLAUDE_CONFIG_DIR: dir, DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' }, ms(60000), h.home);
  assert.equal(add.code, 0, add.out);
  const r = await h.run(['setup', 'claude-code'], { env: { CLAUDE_CONFIG_DIR: dir } });
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.deepEqual(Object.keys(jsonc(path.join(dir, '.claude.json')).mcpServers), ['codemcp']);
  assert.ok(!fs.existsSync(path.join(h.home, '.claude.json')), '~/.claude.json is not the file then');
});

test('setup claude-code --scope project edits ./.mcp.json; --undo restores it byte for byte', { skip: noClients(CLAUDE) }, async () => {
  const h = harnessHome('codemcp-ccp-');
  const proj = path.join(h.home, 'proj');
  const file = path.join(proj, '.mcp.json');
  const original = writeFile(file, `{\n  "mcpServers": {\n    "everything": ${JSON.stringify(everything())}\n  }\n}\n`);
  let r = await h.run(['setup', 'claude-code', '--scope', 'project'], { cwd: proj });
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.deepEqual(Object.keys(jsonc(file).mcpServers), ['codemcp']);
  assert.ok(!fs.existsSync(path.join(h.home, '.claude.json')) || !jsonc(path.join(h.home, '.claude.json')).mcpServers, 'user scope untouched');
  const get = await client(CLAUDE, ['mcp', 'get', 'codemcp'], h.home, proj);
  assert.match(get.out, /Scope: Project config/, get.out);
  assert.match(get.out, /Type: stdio/, get.out);
  r = await h.run(['setup', '--undo', 'claude-code', '--scope', 'project'], { cwd: proj });
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.equal(fs.readFileSync(file, 'utf8'), original);
});

test('setup claude-code --scope local moves the servers `claude mcp add -s local` keeps for this directory', { skip: noClients(CLAUDE) }, async () => {
  const h = harnessHome('codemcp-ccl-');
  const proj = path.join(h.home, 'proj');
  fs.mkdirSync(proj);
  const e = everything();
  const add = await client(CLAUDE, ['mcp', 'add', '-s', 'local', 'everything', '--', e.command, ...e.args], h.home, proj);
  assert.equal(add.code, 0, add.out);
  const file = path.join(h.home, '.claude.json');
  assert.ok(jsonc(file).projects[proj].mcpServers.everything, 'claude keeps local servers under projects.<dir>');
  let r = await h.run(['setup', 'claude-code', '--scope', 'local'], { cwd: proj });
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.deepEqual(Object.keys(jsonc(file).projects[proj].mcpServers), ['codemcp']);
  const get = await client(CLAUDE, ['mcp', 'get', 'codemcp'], h.home, proj);
  assert.match(get.out, /Scope: Local config/, get.out);
  assert.match(get.out, /Connected/, get.out);
  r = await h.run(['setup', '--undo', 'claude-code', '--scope', 'local'], { cwd: proj });
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const list = await client(CLAUDE, ['mcp', 'list'], h.home, proj);
  assert.match(list.out, /everything: .*Connected/, list.out);
  assert.doesNotMatch(list.out, /codemcp:/);
});

// Each harness's own format, as its docs give it, with what codemcp's config must hold after.
const formats = [
  {
    name: 'windsurf', file: '.codeium/windsurf/mcp_config.json',
    servers: { everything: everything(), remote: { serverUrl: 'https://mcp.example.com/mcp', headers: { A: 'b' }, disabled: true } },
    expect: { everything: everything(), remote: { url: 'https://mcp.example.com/mcp', headers: { A: 'b' }, disabled: true } },
  },
  {
    name: 'gemini-cli', file: '.gemini/settings.json', other: { theme: 'Dracula' },
    servers: {
      everything: { ...everything(), trust: true, timeout: 30000 },
      streamable: { httpUrl: 'https://mcp.example.com/mcp', headers: { A: 'b' }, disabled: true },
      legacy: { url: 'https://mcp.example.com/sse', disabled: true },
    },
    expect: {
      everything: { ...everything(), timeout: 30000 },
      streamable: { url: 'https://mcp.example.com/mcp', type: 'http', headers: { A: 'b' }, disabled: true },
      legacy: { url: 'https://mcp.example.com/sse', type: 'sse', disabled: true },
    },
    note: /gemini-cli's server "everything": left out .*trust/,
  },
  {
    name: 'cline', file: '.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json',
    servers: { everything: { ...everything(), alwaysAllow: [], autoApprove: ['echo'], disabled: false } },
    expect: { everything: { ...everything(), disabled: false } },
    note: /left out .*alwaysAllow autoApprove/,
  },
  {
    name: 'roo-code', file: '.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json',
    servers: { everything: { ...everything(), alwaysAllow: ['echo'] }, remote: { type: 'streamable-http', url: 'https://mcp.example.com/mcp', disabled: true } },
    expect: { everything: everything(), remote: { type: 'streamable-http', url: 'https://mcp.example.com/mcp', disabled: true } },
  },
];

for (const f of formats) {
  test(`setup ${f.name}: its format moved into codemcp's, idempotent, codemcp serves it; --undo restores the file exactly`, async () => {
    const h = harnessHome(`codemcp-${f.name}-`);
    const file = path.join(h.home, f.file);
    const original = writeFile(file, `{\n  // ${f.name}'s settings, by hand\n${JSON.stringify({ ...f.other, mcpServers: f.servers }, null, 2).slice(2)}\n`);
    let r = await h.run(['setup', f.name]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    if (f.note) assert.match(r.stdout, f.note);
    const after = fs.readFileSync(file, 'utf8');
    assert.match(after, new RegExp(`// ${f.name}'s settings, by hand`), 'comments stay');
    const doc = jsonc(file);
    for (const [k, v] of Object.entries(f.other || {})) assert.deepEqual(doc[k], v);
    assert.deepEqual(Object.keys(doc.mcpServers), ['codemcp']);
    assert.equal(doc.mcpServers.codemcp.command, fs.realpathSync(CODEMCP_BIN));
    assert.equal(doc.mcpServers.codemcp.env.CODEMCP_INSTANCE_LABEL, f.name);
    assert.deepEqual(jsonc(h.cm).mcpServers, f.expect);
    assert.equal(fs.readFileSync(path.join(path.dirname(file), backups(file)[0]), 'utf8'), original);

    r = await h.run(['setup', f.name]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /already launches codemcp.*nothing to do/);
    assert.equal(fs.readFileSync(file, 'utf8'), after);
    assert.equal(backups(file).length, 1);

    // codemcp loads what setup wrote (the remote ones are disabled: no network here).
    const dump = await runCodemcp({ config: h.cm, env: { CODEMCP_DUMP: '1', HOME: h.home } }, ms(30000));
    assert.equal(dump.code, 0, dump.stderr);
    assert.match(dump.stdout, /def everything_echo\(/);

    r = await h.run(['setup', '--undo', f.name]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.equal(fs.readFileSync(file, 'utf8'), original, 'the harness file is as it was');
    assert.ok(!fs.existsSync(h.cm), "codemcp's config, made by setup, is gone");
  });
}

test('setup --undo refuses, changing nothing, when the servers changed since setup', async () => {
  const h = harnessHome('codemcp-undo-');
  const file = path.join(h.home, '.cursor', 'mcp.json');
  writeFile(file, JSON.stringify({ mcpServers: { everything: everything() } }, null, 2));
  fs.mkdirSync(path.dirname(h.cm), { recursive: true });
  const mine = '{\n  // mine\n  "mcpServers": {"keep": {"command": "x", "disabled": true}}\n}\n';
  fs.writeFileSync(h.cm, mine);
  let r = await h.run(['setup', 'cursor']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const doc = jsonc(file);
  doc.mcpServers.added = { command: 'y' }; // the user added a server in Cursor since
  const changed = JSON.stringify(doc, null, 2);
  fs.writeFileSync(file, changed);
  const cmAfter = fs.readFileSync(h.cm, 'utf8');
  r = await h.run(['setup', '--undo', 'cursor']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /"mcpServers" changed since setup: nothing was undone.*\.bak\./);
  assert.equal(fs.readFileSync(file, 'utf8'), changed);
  assert.equal(fs.readFileSync(h.cm, 'utf8'), cmAfter);

  // Put back what setup wrote: undo restores both files, codemcp's own config with its comment.
  delete doc.mcpServers.added;
  fs.writeFileSync(file, JSON.stringify(doc, null, 2));
  r = await h.run(['setup', '--undo', 'cursor']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.deepEqual(jsonc(file).mcpServers, { everything: everything() });
  assert.equal(fs.readFileSync(h.cm, 'utf8'), mine);
});

test('setup opencode: `opencode mcp list` shows codemcp connected; --undo gives opencode its servers back', { skip: noClients(OPENCODE) }, async () => {
  const h = harnessHome('codemcp-ocu-');
  const file = path.join(h.xdg, 'opencode', 'opencode.json');
  writeFile(file, `{\n  // mine\n  "mcp": {\n    "everything": ${JSON.stringify(servers.everything())},\n  },\n}\n`);
  let r = await h.run(['setup', 'opencode']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  let list = await client(OPENCODE, ['mcp', 'list'], h.home, h.home);
  assert.match(list.out, /✓ codemcp .*connected/, list.out);
  assert.doesNotMatch(list.out, /everything/);
  // opencode adds "$schema" to its file when it runs: undo puts "mcp" back and keeps that.
  r = await h.run(['setup', '--undo', 'opencode']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.deepEqual(jsonc(file).mcp, { everything: servers.everything() });
  assert.match(fs.readFileSync(file, 'utf8'), /\/\/ mine/);
  list = await client(OPENCODE, ['mcp', 'list'], h.home, h.home);
  assert.match(list.out, /✓ everything .*connected/, list.out);
});

test('init writes a commented mcp.json from the harness configs it finds, which codemcp loads, and never overwrites', async () => {
  const h = harnessHome('codemcp-init-');
  writeFile(path.join(h.home, '.cursor', 'mcp.json'), JSON.stringify({ mcpServers: { everything: everything() } }));
  writeFile(path.join(h.home, '.codeium', 'windsurf', 'mcp_config.json'),
    JSON.stringify({ mcpServers: { remote: { serverUrl: 'https://mcp.example.com/mcp', disabled: true }, everything: everything() } }));
  let r = await h.run(['init']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.match(r.stdout, /wrote .*mcp\.json with 2 servers/);
  const text = fs.readFileSync(h.cm, 'utf8');
  assert.match(text, /^\/\/ codemcp's config/);
  assert.match(text, /\/\/ from .*\.cursor\/mcp\.json/);
  assert.deepEqual(jsonc(h.cm).mcpServers, { everything: everything(), remote: { url: 'https://mcp.example.com/mcp', disabled: true } });
  assert.equal(fs.statSync(h.cm).mode & 0o777, 0o600);
  const dump = await runCodemcp({ config: h.cm, env: { CODEMCP_DUMP: '1' } }, ms(30000));
  assert.equal(dump.code, 0, dump.stderr);
  assert.match(dump.stdout, /def everything_echo\(/);

  fs.appendFileSync(h.cm, '// edited\n');
  const edited = fs.readFileSync(h.cm, 'utf8');
  r = await h.run(['init']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /exists: nothing was written/);
  assert.equal(fs.readFileSync(h.cm, 'utf8'), edited);
});

test('init with no harness config writes a small disabled example that codemcp loads', async () => {
  const h = harnessHome('codemcp-init0-');
  const target = path.join(h.home, 'new', 'mcp.json');
  const r = await h.run(['init', '-c', target]);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.match(r.stdout, /an example, disabled/);
  const doc = jsonc(target);
  assert.equal(doc.mcpServers.everything.disabled, true);
  assert.match(fs.readFileSync(target, 'utf8'), /\/\/ An example/);
  const dump = await runCodemcp({ config: target, env: { CODEMCP_DUMP: '1' } }, ms(30000));
  assert.equal(dump.code, 0, dump.stderr);
});
