// Upstream environments are explicit: a stdio server gets the SDKs' minimal
// inherited set plus its configured environment, nothing else of the gateway's; "inheritEnv":
// true restores full inheritance; `setup opencode` names adopted servers that may have relied
// on inheritance. Checked with server-everything's get-env through the real gateway.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { RawClient, ms, runCodemcp, servers, tempDir, writeConfig } from './lib.mjs';

const PLANTED = {
  GITHUB_TOKEN: 'ghp_planted0000000000000000000000000000',
  OPENAI_API_KEY: 'sk-planted-000000000000000000000000',
  CODEMCP_E2E_OTHER_SECRET: 'only-for-the-other-server',
  CODEMCP_E2E_PLAIN: 'some-harness-variable',
};

async function envOf(c, fn) {
  const r = await c.request('tools/call', { name: 'execute_python', arguments: { code: `result = ${fn}()` } }, { limit: ms(60000) });
  const env = r.result?.structuredContent;
  assert.ok(env && !env.isError && env.result, JSON.stringify(r));
  return typeof env.result === 'string' ? JSON.parse(env.result) : env.result;
}

test('get-env shows the minimal set and the configured environment, none of the planted variables', async () => {
  const home = tempDir('codemcp-env-');
  const config = writeConfig(home, {
    everything: servers.everything({ environment: { CONFIGURED_VAR: 'configured-value', FROM_HARNESS: '{env:CODEMCP_E2E_PLAIN}' } }),
    // Another server is configured with a secret: it reaches that server only.
    other: servers.everything({ environment: { OTHER: '{env:CODEMCP_E2E_OTHER_SECRET}' } }),
    inherit: servers.everything({ inheritEnv: true }),
  });
  const c = new RawClient({ config, home, env: { ...PLANTED, LANG: 'C.UTF-8', TZ: 'UTC', LC_TIME: 'C' } });
  await c.initialize();
  const env = await envOf(c, 'everything_get_env');
  for (const k of Object.keys(PLANTED)) assert.ok(!(k in env), `${k} leaked to a server not configured for it`);
  assert.equal(env.CONFIGURED_VAR, 'configured-value');
  assert.equal(env.FROM_HARNESS, PLANTED.CODEMCP_E2E_PLAIN, '{env:VAR} in its environment is passed');
  for (const k of ['PATH', 'HOME', 'LANG', 'TZ', 'LC_TIME']) assert.ok(k in env, `${k} is in the minimal set`);
  for (const k of Object.keys(env)) {
    assert.match(k, /^(HOME|LOGNAME|PATH|SHELL|TERM|USER|LANG|LANGUAGE|LC_\w+|TZ|TMPDIR|XDG_\w+|CONFIGURED_VAR|FROM_HARNESS)$/, `unexpected variable ${k}`);
  }
  const other = await envOf(c, 'other_get_env');
  assert.equal(other.OTHER, PLANTED.CODEMCP_E2E_OTHER_SECRET);
  assert.ok(!('CODEMCP_E2E_OTHER_SECRET' in other) && !('GITHUB_TOKEN' in other));
  const all = await envOf(c, 'inherit_get_env');
  for (const [k, v] of Object.entries(PLANTED)) assert.equal(all[k], v, `inheritEnv: true passes ${k}`);
  await c.kill();
});

test('an invalid inheritEnv disables that server with a message', async () => {
  const home = tempDir('codemcp-env-');
  const config = writeConfig(home, { bad: servers.everything({ inheritEnv: 'yes' }) });
  const r = await runCodemcp({ config, home, env: { CODEMCP_DUMP: '1' } });
  assert.match(r.stderr, /inheritEnv must be true or false/);
});

test('setup opencode names adopted local servers that interpolate no variable', async () => {
  const xdg = tempDir('codemcp-env-setup-');
  fs.mkdirSync(path.join(xdg, 'opencode'));
  fs.writeFileSync(
    path.join(xdg, 'opencode', 'opencode.json'),
    JSON.stringify({
      mcp: {
        github: { type: 'local', command: ['github-mcp-server', 'stdio'] },
        explicit: { type: 'local', command: ['x'], environment: { GITHUB_TOKEN: '{env:GITHUB_TOKEN}' } },
        full: { type: 'local', command: ['y'], inheritEnv: true },
        web: { type: 'remote', url: 'https://example.invalid/mcp' },
      },
    }),
  );
  const r = await runCodemcp({ args: ['setup', 'opencode', '--dry-run'], home: xdg });
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const note = r.stdout.split('\n').find((l) => l.startsWith('note: opencode gave local servers its whole environment'));
  assert.ok(note, r.stdout);
  assert.match(note, /relied on an inherited variable \(a token exported in your shell\): github\. /);
  assert.match(note, /"inheritEnv": true/);
});
