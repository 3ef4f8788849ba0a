// docs/policy.md's worked examples, checked: each ```json example=NAME block is written as a
// config, and each line of its ```text checks=NAME block (decision | principal | read/write |
// call) must be what `codemcp policy check` (the gateway's own policy_decide) answers. An
// example in the docs that stops being true fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO, runCodemcp, tempDir } from './lib.mjs';

const doc = fs.readFileSync(path.join(REPO, 'docs', 'policy.md'), 'utf8');
const blocks = (kind) => Object.fromEntries(
  [...doc.matchAll(new RegExp('```\\w+ ' + kind + '=([\\w-]+)\\n([\\s\\S]*?)```', 'g'))].map((m) => [m[1], m[2]]));
const examples = blocks('example');
const checks = blocks('checks');

test('the docs hold the four worked examples, each with its checks', () => {
  assert.deepEqual(Object.keys(examples).sort(), ['one-repository', 'path-confined', 'read-only', 'sql-read-only']);
  assert.deepEqual(Object.keys(checks).sort(), Object.keys(examples).sort());
});

for (const [name, json] of Object.entries(examples)) {
  test(`docs/policy.md example "${name}": every listed decision holds`, async () => {
    const dir = tempDir('codemcp-policy-doc-');
    const config = path.join(dir, 'mcp.json');
    fs.writeFileSync(config, json);
    const lines = checks[name].split('\n').filter((l) => l.trim());
    assert.ok(lines.length >= 3, name);
    for (const line of lines) {
      const [want, principal, rw, call] = line.split('|').map((x) => x.trim());
      const args = ['policy', 'check', '--principal', principal, '--call', call];
      if (rw === 'write') args.push('--write');
      const r = await runCodemcp({ args, config });
      assert.match(r.stdout, new RegExp(`decision:\\s+${want}\\n`), `${name}: ${line}\n${r.stdout}${r.stderr}`);
      assert.equal(r.code, want === 'deny' ? 1 : 0, `${name}: ${line}`);
      assert.ok(!/warn|invalid/i.test(r.stderr), `${name}: the example's rules load cleanly:\n${r.stderr}`);
    }
  });
}
