// admin_lib.mjs — running the admin commands (`codemcp list`, `tools`, ...) from e2e tests.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { CODEMCP_BIN, ms } from './lib.mjs';

/** Runs `codemcp ARGS` (an admin command) with env; resolves {code, stdout, stderr}. */
export function cli(args, env) {
  return new Promise((resolve) => {
    execFile(CODEMCP_BIN, args, { env, timeout: ms(60000) }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

/** `codemcp ARGS --json`, asserted to succeed; resolves the parsed output. */
export async function cliJson(args, env) {
  const r = await cli([...args, '--json'], env);
  assert.equal(r.code, 0, `codemcp ${args.join(' ')} failed:\n${r.stderr}${r.stdout}`);
  return JSON.parse(r.stdout);
}
