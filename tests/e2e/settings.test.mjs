// `codemcp settings`, through the real binary: every setting is read once at start into one
// struct (src/config/settings.def), and this command prints what the environment made of each:
// its value and where it came from. A value from the environment is shown as such, a bad value
// is ignored with a warning naming the setting and its range, and a secret (the HTTP bearer
// token) is never printed, only that it is set.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

import { CODEMCP_BIN, codemcpEnv } from './lib.mjs';

function settings(env, args = []) {
  const r = spawnSync(CODEMCP_BIN, ['settings', ...args], { env: codemcpEnv({ env }), encoding: 'utf8', timeout: 30000 });
  const lines = new Map(r.stdout.split('\n').filter(Boolean).map((l) => [l.slice(0, l.indexOf('=')), l]));
  return { ...r, lines };
}

test('codemcp settings shows each value and its source, never a secret', () => {
  const token = 'sEcReT-' + 'x'.repeat(40);
  const r = settings({ CODEMCP_EXEC_TIMEOUT_MS: '1234', CODEMCP_HTTP_TOKEN: token, CODEMCP_WORKERS: 'lots' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.lines.get('CODEMCP_EXEC_TIMEOUT_MS'), /^CODEMCP_EXEC_TIMEOUT_MS=1234\t# environment;/);
  assert.match(r.lines.get('CODEMCP_KILL_GRACE_MS'), /^CODEMCP_KILL_GRACE_MS=2000\t# default;/);
  // the token: set, not shown, on stdout nor stderr
  assert.match(r.lines.get('CODEMCP_HTTP_TOKEN'), /^CODEMCP_HTTP_TOKEN=\(set, not shown\)\t/);
  assert.ok(!r.stdout.includes(token) && !r.stderr.includes(token), 'the token is printed');
  // a bad value: the default, and a warning naming the setting and its range
  assert.match(r.lines.get('CODEMCP_WORKERS'), /bad value ignored/);
  assert.match(r.stderr, /CODEMCP_WORKERS=lots is not a whole number from 1 to \d+/);
  // the facts codemcp honours come through the same struct
  assert.match(r.lines.get('XDG_CONFIG_HOME'), /^XDG_CONFIG_HOME=\/.+\t# environment;/);
});

test('codemcp settings hides the credentials of a URL setting', () => {
  const r = settings({ CODEMCP_AUTHZ_URL: 'https://opa:pa55-w0rd@policy.example:8181/v1/data/codemcp', DOCKER_HOST: 'unix:///run/docker.sock' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.lines.get('CODEMCP_AUTHZ_URL'), /^CODEMCP_AUTHZ_URL=https:\/\/\(credentials hidden\)@policy\.example:8181\/v1\/data\/codemcp\t/);
  assert.ok(!r.stdout.includes('pa55-w0rd') && !r.stderr.includes('pa55-w0rd'), 'the password is printed');
  assert.match(r.lines.get('DOCKER_HOST'), /^DOCKER_HOST=unix:\/\/\/run\/docker\.sock\t/, 'a URL without credentials stays whole');
});

test('codemcp settings --help, and no other argument', () => {
  const h = settings({}, ['--help']);
  assert.equal(h.status, 0);
  assert.ok(h.stdout.startsWith('usage: codemcp settings\n'), h.stdout);
  const bad = settings({}, ['extra']);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /unexpected argument 'extra'/);
});
