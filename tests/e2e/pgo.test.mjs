// The training run of install.sh's profile-guided build (bench/pgo_train.py): its
// programs run clean on this build, every answer checked, and a build that wrote no counts is
// refused (exit 1) rather than taken for trained — otherwise install.sh would build "use" on
// nothing and call it profile-guided. (The counting path itself, -Db_pgo=generate with
// src/worker/pgo_dump.c, runs in .ci/run's install with CODEMCP_PGO=1, which fails on it.)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { CODEMCP_BIN, PYTHON, REPO, ms } from './lib.mjs';

const TRAIN = path.join(REPO, 'bench', 'pgo_train.py');
const leftovers = () => fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith('codemcp-pgo-'));

test('pgo_train.py: the programs run clean, and a build without counts is refused', { timeout: ms(90000) }, () => {
  const build = path.dirname(path.dirname(path.resolve(CODEMCP_BIN))); // <build>/src/codemcp
  const before = new Set(leftovers());
  // (pgo_train.py drops CODEMCP_* from its environment: the build's own worker is used.) The
  // runtime directory given must stay empty: the unsandboxed training gateway's admin socket
  // and instance record belong in the trainer's own temporary directory.
  const rt = fs.mkdtempSync(path.join(os.tmpdir(), 'codemcp-e2e-pgo-rt-'));
  const r = spawnSync(PYTHON, [TRAIN, build, '3'], { encoding: 'utf8', timeout: ms(80000),
    env: { ...process.env, XDG_RUNTIME_DIR: rt } });
  assert.deepEqual(fs.readdirSync(rt), [], 'nothing in the caller\'s runtime directory');
  fs.rmSync(rt, { recursive: true, force: true });
  assert.equal(r.status, 1, `exit ${r.status} (signal ${r.signal}); stdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  // Reached only after all 36 runs answered as expected (a wrong answer fails earlier, saying so).
  assert.match(r.stderr, /pgo_train: no profile written \(gateway 0 files, worker 0\)/, r.stderr);
  assert.deepEqual(leftovers().filter((f) => !before.has(f)), [], 'its temporary HOME is removed');
});

test('pgo_train.py: a build directory without codemcp is an error that says so', { timeout: ms(30000) }, () => {
  const r = spawnSync(PYTHON, [TRAIN, fs.mkdtempSync(path.join(os.tmpdir(), 'codemcp-e2e-nobuild-'))],
    { encoding: 'utf8', timeout: ms(20000) });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /pgo_train: .*src\/codemcp is not built/);
});
