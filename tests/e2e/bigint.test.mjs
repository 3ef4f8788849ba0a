// Big integers outside string values (src/json/jsonfast.h JF_BIG_INTEGERS): integers of any size
// go client program → upstream arguments → upstream structured result → worker (Python int)
// → answer digit for digit, on both of the gateway's result paths (a read tool's result spliced
// as bytes, a write tool's result decoded, deep-copied and marked), while strings equal to the
// old tag texts ("\0jf-integer:", "\0jf-string:") stay those strings everywhere.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { connectClient, ms, servers, tempDir, writeConfig } from './lib.mjs';

const TOOLS = [
  { name: 'mirror_r', description: 'Answers its arguments as structuredContent.',
    inputSchema: { type: 'object', properties: { v: { type: 'array' } } }, annotations: { readOnlyHint: true } },
  { name: 'mirror_w', description: 'Answers its arguments as structuredContent (a write).',
    inputSchema: { type: 'object', properties: { v: { type: 'array' } } } },
];

const BIG = `1${'0'.repeat(79)}1`;
const PROGRAM = `
from codemcp_rt import client
v = [2**64, -2**70, 10**80 + 1, 2**63 - 1, "\\x00jf-integer:12", "\\x00jf-string:x",
     "\\x00jf-string:\\x00jf-integer:3", "\\x00\\xffjf-integer:5", "jf-integer:7"]
r = resolve(client.call("fake", "mirror_r", {"v": v}))
w = resolve(client.call("fake", "mirror_w", {"v": v}))
got = [r["arguments"]["v"], w["arguments"]["v"]]
result = {"same": [g == v for g in got], "types": [[type(x).__name__ for x in g] for g in got],
          "r": got[0], "w": got[1]}
`;

test('big integers go both ways digit for digit; tag-like strings stay strings', { timeout: ms(120000) }, async () => {
  const dir = tempDir('codemcp-bigint-');
  const toolsFile = path.join(dir, 'tools.json');
  fs.writeFileSync(toolsFile, JSON.stringify(TOOLS));
  const config = writeConfig(dir, {
    fake: servers.fake(['--tools-file', toolsFile], { tools: { mirror_w: { mutation: true } } }),
  });
  const h = await connectClient({ config });
  try {
    const r = await h.client.callTool({ name: 'execute_python', arguments: { code: PROGRAM, allow_mutations: ['fake_mirror_w'] } },
      undefined, { timeout: ms(60000) });
    assert.equal(r.isError, false, JSON.stringify(r));
    const env = r.structuredContent;
    assert.deepEqual(env.result.same, [true, true], JSON.stringify(env));
    const kinds = ['int', 'int', 'int', 'int', 'str', 'str', 'str', 'str', 'str'];
    assert.deepEqual(env.result.types, [kinds, kinds]);
    const strs = ['\u0000jf-integer:12', '\u0000jf-string:x', '\u0000jf-string:\u0000jf-integer:3', '\u0000\u00ffjf-integer:5', 'jf-integer:7'];
    assert.deepEqual(env.result.r.slice(4), strs);
    assert.deepEqual(env.result.w.slice(4), strs);
    const digits = `[18446744073709551616,-1180591620717411303424,${BIG},9223372036854775807,`;
    const text = r.content[0].text;
    assert.equal(text.split(digits).length - 1, 2, text);
  } finally {
    await h.close();
  }
});
