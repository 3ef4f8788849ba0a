// Real clients people use, driven against codemcp with a large catalog: what each one
// actually hands the model. Claude Code and opencode talk to a fake model endpoint on loopback
// that records every request (no LLM account); the MCP Inspector CLI lists and calls the tool.
// The clients are pinned in tests/clients/package.json (run.sh's `npm ci`); a test skips, with
// the reason, only when its client's binary is not installed. Catalog: the GitHub REST fixture
// (1,223 tools) plus the three npm test servers. Bounds are generous: behaviour, not speed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { CODEMCP_BIN, NODE, NPM_PEERS, TESTS, ms, tempDir } from './lib.mjs';
import { anthropic, fakeModel, openaiChat } from './fake_models.mjs';

const CLIENTS = path.join(TESTS, 'clients', 'node_modules');
const CLAUDE = path.join(CLIENTS, '.bin', 'claude');
const OPENCODE = path.join(CLIENTS, '.bin', 'opencode');
const INSPECTOR = path.join(CLIENTS, '@modelcontextprotocol', 'inspector', 'clients', 'launcher', 'build', 'index.js');
const GITHUB = path.join(TESTS, 'catalog', 'github_api.mjs');
const SERVER_NAMES = ['github', 'everything', 'memory', 'filesystem'];

const missing = (bin) => (fs.existsSync(bin) ? false : `${path.relative(TESTS, bin)} is not installed (npm ci in tests/clients)`);

/** The upstream config (mcpServers format) in dir; returns its path. */
function upstreams(dir) {
  const p = path.join(dir, 'upstreams.json');
  fs.writeFileSync(p, JSON.stringify({ mcpServers: {
    github: { command: NODE, args: [GITHUB], timeout: 60000 },
    everything: { command: NODE, args: [path.join(NPM_PEERS, 'server-everything', 'dist', 'index.js'), 'stdio'] },
    memory: { command: NODE, args: [path.join(NPM_PEERS, 'server-memory', 'dist', 'index.js')],
      env: { MEMORY_FILE_PATH: path.join(dir, 'memory.json') } },
    filesystem: { command: NODE, args: [path.join(NPM_PEERS, 'server-filesystem', 'dist', 'index.js'), dir] },
  } }));
  return p;
}

/** The environment codemcp gets from a client's config: its own state, the real defaults of
 * the description budget, the worker binary of this build. */
function codemcpEnv(dir, extra = {}) {
  const env = { CODEMCP_USAGE_FILE: 'off', XDG_STATE_HOME: path.join(dir, 'state'), XDG_CONFIG_HOME: path.join(dir, 'cfg') };
  if (process.env.CODEMCP_WORKER_BIN) env.CODEMCP_WORKER_BIN = process.env.CODEMCP_WORKER_BIN;
  return { ...env, ...extra };
}

/** A client's environment: nothing of the user's (HOME and XDG in dir), no telemetry. */
function clientEnv(dir, extra = {}) {
  const home = path.join(dir, 'home');
  fs.mkdirSync(home, { recursive: true });
  const env = { PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'), XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'), TMPDIR: dir, ...extra };
  if (process.env.CODEMCP_WORKER_BIN) env.CODEMCP_WORKER_BIN = process.env.CODEMCP_WORKER_BIN;
  return env;
}

/** Runs argv to its end (SIGKILL after `limit`); resolves {code, stdout, stderr}. */
function runClient(argv, opts, limit) {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { ...opts, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
    }, limit);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* the group is gone */ }
      resolve({ code, signal, stdout, stderr });
    });
  });
}

test('Claude Code gets a description under its 2,048-character cut naming every server, and the instructions',
  { skip: missing(CLAUDE), timeout: ms(120000) }, async () => {
    const dir = tempDir('codemcp-claude-');
    const model = await fakeModel(anthropic);
    try {
      const cfg = path.join(dir, 'claude-mcp.json');
      // The real description budget (by clientInfo.name). Claude Code speaks 2026-07-28 over
      // stdio (server/discover, no initialize); the first answer waits for every server (up to
      // CODEMCP_LIST_WAIT_MS, long here: the GitHub fixture is slow to list on a busy machine),
      // so the instructions, all the model sees of codemcp up front, count their functions.
      fs.writeFileSync(cfg, JSON.stringify({ mcpServers: { codemcp: { command: CODEMCP_BIN,
        args: ['-c', upstreams(dir)], env: codemcpEnv(dir, { CODEMCP_LIST_WAIT_MS: '25000' }) } } }));
      const r = await runClient([CLAUDE, '-p', 'say hi', '--mcp-config', cfg, '--strict-mcp-config', '--output-format', 'json'],
        { cwd: dir, env: clientEnv(dir, { ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: 'sk-ant-fake',
          DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', MCP_TIMEOUT: '60000' }) }, ms(90000));
      assert.equal(r.code, 0, `claude exited ${r.code} ${r.signal || ''}: ${r.stderr.slice(-2000)}${r.stdout.slice(-1000)}`);
      const tool = model.requests.flatMap((q) => q.body.tools || []).find((t) => t.name === 'mcp__codemcp__execute_python');
      assert.ok(tool, `execute_python never reached the model (${model.requests.length} requests)`);
      const d = tool.description;
      assert.ok(d.length <= 2048, `${d.length} characters: Claude Code cuts at 2,048`);
      assert.ok(Buffer.byteLength(d) <= 2000, `${Buffer.byteLength(d)} bytes, over codemcp's 2,000-byte budget for claude-code`);
      for (const s of SERVER_NAMES) assert.match(d, new RegExp(`\\b${s}\\b`), `the description does not name ${s}:\n${d}`);
      assert.match(d, /search_tools\(/, 'no line on how to find the rest');
      // Server instructions go into the system prompt, as "## codemcp" (≤ 2 KB, every server).
      const system = model.requests.map((q) => JSON.stringify(q.body.system || '') + JSON.stringify(q.body.messages || '')).join('');
      const i = system.indexOf('## codemcp\\n');
      assert.ok(i >= 0, 'the server instructions are not in the system prompt');
      const instr = JSON.parse(`"${system.slice(i + 12).split('\\n\\n')[0]}"`);
      assert.ok(instr.startsWith('codemcp: ') && Buffer.byteLength(instr) <= 2048, instr);
      // Each server with its count of functions ("everything 13"), never "(connecting)".
      for (const s of SERVER_NAMES) assert.match(instr, new RegExp(`\\b${s} [1-9]\\d*\\b`), `the instructions do not count ${s}'s functions:\n${instr}`);
      assert.doesNotMatch(instr, /connecting/, instr);
    } finally {
      model.close();
    }
  });

test('opencode gets its larger budget: more than 2,000 and at most 8,000 bytes, every server named',
  { skip: missing(OPENCODE), timeout: ms(120000) }, async () => {
    const dir = tempDir('codemcp-opencode-');
    const model = await fakeModel(openaiChat);
    try {
      const proj = path.join(dir, 'project');
      fs.mkdirSync(proj);
      // tools/list waits for every server here (opencode waits for it), so the budget, not the
      // connection race, decides the size.
      const cfg = path.join(dir, 'opencode.json');
      fs.writeFileSync(cfg, JSON.stringify({
        $schema: 'https://opencode.ai/config.json',
        model: 'fake/m',
        provider: { fake: { npm: '@ai-sdk/openai-compatible', name: 'Fake',
          options: { baseURL: `${model.url}/v1`, apiKey: 'x' }, models: { m: { name: 'm' } } } },
        mcp: { codemcp: { type: 'local', command: [CODEMCP_BIN, '-c', upstreams(dir)],
          environment: codemcpEnv(dir, { CODEMCP_LIST_WAIT_MS: '60000' }) } },
      }));
      const r = await runClient([OPENCODE, 'run', 'say hi'], { cwd: proj, env: clientEnv(dir, {
        OPENCODE_CONFIG: cfg, OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_AUTOUPDATE: '1',
        OPENCODE_DISABLE_LSP_DOWNLOAD: '1', OPENCODE_DISABLE_DEFAULT_PLUGINS: '1', OPENCODE_DISABLE_SHARE: '1',
        OPENCODE_DISABLE_CLAUDE_CODE: '1' }) }, ms(100000));
      assert.equal(r.code, 0, `opencode exited ${r.code} ${r.signal || ''}: ${r.stderr.slice(-2000)}`);
      const tool = model.requests.flatMap((q) => q.body.tools || []).find((t) => /codemcp_execute_python$/.test(t.function?.name || ''));
      assert.ok(tool, `execute_python never reached the model (${model.requests.length} requests)`);
      const d = tool.function.description;
      const bytes = Buffer.byteLength(d);
      assert.ok(bytes > 2000 && bytes <= 8000, `${bytes} bytes; opencode's budget is 8,000:\n${d.slice(0, 600)}`);
      for (const s of SERVER_NAMES) assert.match(d, new RegExp(`\\b${s}\\b`), `the description does not name ${s}`);
      assert.match(d, /search_tools\(/);
    } finally {
      model.close();
    }
  });

test('the MCP Inspector CLI lists execute_python and runs a program through it',
  { skip: missing(INSPECTOR), timeout: ms(120000) }, async () => {
    const dir = tempDir('codemcp-inspector-');
    // The Inspector hands the server only a default environment and what -e names.
    const serverEnv = Object.entries(codemcpEnv(dir, { CODEMCP_LIST_WAIT_MS: '60000' })).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    const cli = (...args) => runClient([NODE, INSPECTOR, '--cli', ...serverEnv, CODEMCP_BIN, '-c', upstreams(dir), ...args],
      { cwd: dir, env: clientEnv(dir) }, ms(90000));
    const list = await cli('--method', 'tools/list');
    assert.equal(list.code, 0, list.stderr.slice(-2000));
    const tools = JSON.parse(list.stdout).tools;
    assert.deepEqual(tools.map((t) => t.name), ['execute_python']);
    // every server connected before the list was answered (CODEMCP_LIST_WAIT_MS reached codemcp)
    assert.match(tools[0].description, /github 1223\b.*everything \d+.*memory \d+.*filesystem \d+/, tools[0].description.slice(0, 1500));
    const call = await cli('--method', 'tools/call', '--tool-name', 'execute_python', '--tool-arg',
      'code=[r["name"] for r in search_tools("open a bug report", 3)]');
    assert.equal(call.code, 0, call.stderr.slice(-2000));
    const out = JSON.parse(call.stdout);
    assert.ok(!out.isError, call.stdout.slice(0, 2000));
    assert.ok(out.structuredContent.result.includes('github_issues_create'), call.stdout.slice(0, 2000));
  });
