// Inspection and the command line: CODEMCP_DUMP=1, --wrap (with and without --name), --help,
// --version and bad options.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { FAKE_UPSTREAM, NODE, NPM_PEERS, PYTHON, ms, projectVersion, runCodemcp, servers, tempDir, writeConfig } from './lib.mjs';

const LOG_LINE = /codemcp (error|warn|info|debug|trace) \[/;
const EVERYTHING_CMD = `${NODE} ${path.join(NPM_PEERS, 'server-everything', 'dist', 'index.js')} stdio`;

function count(hay, needle) {
  return hay.split(needle).length - 1;
}

// The dump prints sdk.py, then this marker line, then the description (README documents it).
const MARKER = /^# -+ execute_python description -+$/m;

function assertDumpOk(r, what) {
  assert.equal(r.code, 0, `${what}: exit ${r.code} (signal ${r.signal}); stderr:\n${r.stderr.slice(-3000)}`);
  assert.doesNotMatch(r.stdout, LOG_LINE, `${what}: log lines on stdout`);
}

test('CODEMCP_DUMP=1 prints sdk.py and the description, then exits 0', { timeout: ms(60000) }, async () => {
  const dir = tempDir();
  const cfg = writeConfig(dir, { everything: servers.everything(), dumpy: servers.fake() });
  const r = await runCodemcp({ config: cfg, env: { CODEMCP_DUMP: '1' } }, ms(45000));
  assertDumpOk(r, 'dump');
  assert.match(r.stdout, /def everything_get_sum\(a: float, b: float/);
  assert.match(r.stdout, /def dumpy_echo\(text: str/);
  assert.match(r.stdout, /def dumpy_add\(a: float, b: float/);
  // Once in sdk.py, once in the description.
  assert.ok(count(r.stdout, 'def dumpy_echo(') >= 2, 'the dump should hold both sdk.py and the description');
  assert.match(r.stdout, /execute_python|result/, 'the description intro is missing');
});

test('the dumped sdk.py compiles with /usr/bin/python3 and has one unique function per tool, hostile names included', { timeout: ms(60000) }, async () => {
  const dir = tempDir();
  const hostile = ['class', '2fa', 'a.b-c', 'a_b_c', 'café', 'über-tool', 'x'.repeat(128), 'None', 'match', 'def', 'import', 'spaces in name'];
  const toolsFile = path.join(dir, 'hostile.json');
  fs.writeFileSync(
    toolsFile,
    JSON.stringify(hostile.map((name) => ({ name, description: `tool ${name}`, inputSchema: { type: 'object', properties: { lambda: { type: 'string' }, 'from': { type: 'integer' } }, required: ['lambda'] } }))),
  );
  const cfg = writeConfig(dir, {
    everything: servers.everything(),
    memory: servers.memory(path.join(dir, 'memory.jsonl')),
    filesystem: servers.filesystem(dir),
    hostile: servers.fake(['--tools-file', toolsFile]),
  });
  const r = await runCodemcp({ config: cfg, env: { CODEMCP_DUMP: '1' } }, ms(45000));
  assertDumpOk(r, 'dump');
  const m = MARKER.exec(r.stdout);
  assert.ok(m, 'no "# ---- execute_python description ----" line between sdk.py and the description');
  const sdk = r.stdout.slice(0, m.index);
  const check = spawnSync(
    PYTHON,
    [
      '-c',
      `import ast, keyword, sys, json
src = sys.stdin.read()
tree = ast.parse(src, "sdk.py")
compile(tree, "sdk.py", "exec")
names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
print(json.dumps(names))`,
    ],
    { input: sdk, encoding: 'utf8' },
  );
  assert.equal(check.status, 0, `sdk.py does not compile:\n${check.stderr}`);
  const names = JSON.parse(check.stdout);
  assert.equal(new Set(names).size, names.length, `duplicate function names: ${names}`);
  const hostileFns = names.filter((n) => n.startsWith('hostile_'));
  assert.equal(hostileFns.length, hostile.length, `hostile tools → ${JSON.stringify(hostileFns)}`);
  for (const n of names) assert.match(n, /^[A-Za-z_][A-Za-z0-9_]*$/, `not a plain identifier: ${n}`);
  assert.ok(names.includes('everything_get_sum') && names.includes('memory_create_entities'));
});

test('CODEMCP_DUMP=1 works with stdin left open (a terminal) as well as closed (CI)', { timeout: ms(60000) }, async () => {
  const dir = tempDir();
  const cfg = writeConfig(dir, { dumpy: servers.fake() });
  const r = await runCodemcp({ config: cfg, env: { CODEMCP_DUMP: '1' }, keepStdinOpen: true }, ms(20000));
  assertDumpOk(r, 'dump with open stdin');
  assert.match(r.stdout, /def dumpy_echo\(text: str/);
});

test('CODEMCP_DUMP=1 with no config file: zero upstreams, still exits 0', async () => {
  const r = await runCodemcp({ home: tempDir('codemcp-noconf-'), env: { CODEMCP_DUMP: '1' } }, ms(15000));
  assertDumpOk(r, 'dump without config');
  assert.ok(r.stdout.trim().length > 0, 'empty dump');
});

test('CODEMCP_DUMP=1 does not wait past an upstream that never initializes', { timeout: ms(60000) }, async () => {
  const dir = tempDir();
  const cfg = writeConfig(dir, {
    dumpy: servers.fake(),
    silent: servers.fake(['--never-initialize'], { timeout: ms(3000) }),
  });
  const r = await runCodemcp({ config: cfg, env: { CODEMCP_DUMP: '1' } }, ms(20000));
  assertDumpOk(r, 'dump with a silent upstream');
  assert.match(r.stdout, /def dumpy_echo\(/);
  assert.ok(!r.stdout.includes('def silent_'), 'silent should have been skipped');
  assert.ok(r.stderr.includes('silent'), `the skipped server is not named on stderr:\n${r.stderr}`);
});

test('--wrap "<command>" --name serves one stdio upstream without a config file', { timeout: ms(60000) }, async () => {
  const r = await runCodemcp(
    { home: tempDir('codemcp-noconf-'), args: ['--wrap', EVERYTHING_CMD, '--name', 'everything'], env: { CODEMCP_DUMP: '1' } },
    ms(30000),
  );
  assertDumpOk(r, '--wrap --name');
  assert.match(r.stdout, /def everything_get_sum\(a: float, b: float/);
});

test('--wrap without --name is named after its executable and ignores the config file', async () => {
  const dir = tempDir();
  const cfg = writeConfig(dir, { other: servers.fake() });
  fs.accessSync(FAKE_UPSTREAM, fs.constants.X_OK);
  const r = await runCodemcp(
    { config: cfg, args: ['--wrap', `${FAKE_UPSTREAM} --paginate 3`], env: { CODEMCP_DUMP: '1' } },
    ms(20000),
  );
  assertDumpOk(r, '--wrap');
  assert.match(r.stdout, /def fake_upstream(_py)?_echo\(text: str/);
  assert.ok(!r.stdout.includes('def other_'), '--wrap must serve only the wrapped server');
});

test('--help prints usage to stdout and exits 0', async () => {
  const r = await runCodemcp({ args: ['--help'] }, ms(5000));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /usage/i);
  for (const opt of ['--wrap', '--name', '--version', '--help']) assert.ok(r.stdout.includes(opt), `--help does not mention ${opt}`);
});

test('--version prints the project version and exits 0', async () => {
  const r = await runCodemcp({ args: ['--version'] }, ms(5000));
  assert.equal(r.code, 0, r.stderr);
  const v = projectVersion();
  assert.ok(v, 'no version in meson.build');
  assert.ok(r.stdout.includes(v), `--version printed ${JSON.stringify(r.stdout)}, expected ${v}`);
  assert.equal(r.stdout.trim().split('\n').length, 1, 'one line');
});

test('an unknown option or a --wrap without its command fails at once with a message', async () => {
  const bad = await runCodemcp({ args: ['--definitely-not-an-option'] }, ms(5000));
  assert.notEqual(bad.code, 0);
  assert.ok(bad.stderr.includes('--definitely-not-an-option'), `stderr does not name the option:\n${bad.stderr}`);
  assert.equal(bad.stdout, '', 'nothing on stdout');
  const noCmd = await runCodemcp({ args: ['--wrap'] }, ms(5000));
  assert.notEqual(noCmd.code, 0);
  assert.ok(noCmd.stderr.length > 0, 'no message for --wrap without a command');
});
