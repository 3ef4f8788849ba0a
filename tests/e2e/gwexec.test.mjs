// The gateway's byte path for a run's answer (issue 17, src/run_answer.c, workers.c
// wk_on_frame): the worker's answer frame, when in the form jf_dumps writes, is spliced into the
// MCP reply without a decode or an encode; anything else takes the tree path. Agent code shares
// the worker and can write any frame (`_codemcp.send`), so it can answer its own run with any
// envelope: every hostile one (duplicate keys, escapes, NULs, big and real numbers, deep nesting,
// many members, odd `ok`/`calls`/`namespace`/`recycle`, trailing bytes, huge results) is sent
// twice, once as written and once with a space after the frame's first '{' (never jf_dumps'
// form: always the tree path), and the client must get the same bytes both times. The run's
// request id is not visible to agent code: one calibration run finds it (a window of candidate
// ids, highest first, so that no stale frame can ever match a later run), later runs use the
// next ids.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { RawClient, meta2026, ms, servers, tempDir, writeConfig } from './lib.mjs';

const deep = (n) => '['.repeat(n) + ']'.repeat(n);
const keys = (n) => '{' + Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',') + '}';
const members = (n) => Array.from({ length: n }, (_, i) => `"m${i}":${i}`).join(',');
// Envelopes as the bytes the frame carries (String.raw: JSON escapes stay as written).
const CASES = {
  plain: String.raw`{"ok":true,"result":1,"calls":0}`,
  no_calls: String.raw`{"ok":true,"result":"x"}`,
  order: String.raw`{"calls":3,"result":[1,2],"ok":true}`,
  output: String.raw`{"ok":true,"result":null,"calls":1,"stdout":"hi\n","stderr":"warn\n","mutations":[]}`,
  escapes: String.raw`{"ok":true,"result":"q\"uote \\ back\n\t\r\b\f\u0001\u001F / </script>","calls":0}`,
  del_escaped: String.raw`{"ok":true,"result":"\u007F","calls":0}`,
  del_raw: '{"ok":true,"result":"\u007f","calls":0}',
  unicode: '{"ok":true,"result":"caf\u00e9 \u{1F600} \u2028\u2029","calls":0}',
  lower_hex: String.raw`{"ok":true,"result":"\u001f","calls":0}`,
  escaped_ascii: String.raw`{"ok":true,"result":"\u0041\/","calls":0}`,
  lone_surrogate: String.raw`{"ok":true,"result":"\ud800","calls":0}`,
  nul_inside: String.raw`{"ok":true,"result":"a\u0000b","calls":0}`,
  nul_first: String.raw`{"ok":true,"result":"\u0000jf-integer:5","calls":0}`,
  nul_key: String.raw`{"ok":true,"result":{"a\u0000":1},"calls":0}`,
  int18: String.raw`{"ok":true,"result":-999999999999999999,"calls":0}`,
  int19: String.raw`{"ok":true,"result":1234567890123456789,"calls":0}`,
  int24: String.raw`{"ok":true,"result":123456789012345678901234,"calls":0}`,
  real: String.raw`{"ok":true,"result":1.5,"calls":0}`,
  minus_zero: String.raw`{"ok":true,"result":-0,"calls":0}`,
  exponent: String.raw`{"ok":true,"result":1e3,"calls":0}`,
  deep60: `{"ok":true,"result":${deep(60)},"calls":0}`,
  deep70: `{"ok":true,"result":${deep(70)},"calls":0}`,
  keys70: `{"ok":true,"result":${keys(70)},"calls":0}`,
  members15: `{"ok":true,"result":1,${members(13)}}`,
  members17: `{"ok":true,"result":1,${members(15)}}`,
  members40: `{"ok":true,"result":1,${members(38)}}`,
  dup_result: String.raw`{"ok":true,"result":1,"result":2,"calls":0}`,
  dup_ok_true_last: String.raw`{"ok":false,"ok":true,"result":1}`,
  dup_ok_true_first: String.raw`{"ok":true,"ok":false,"result":1}`,
  dup_nested: String.raw`{"ok":true,"result":{"a":1,"a":2},"calls":0}`,
  escaped_key: String.raw`{"\u006fk":true,"result":1,"calls":0}`,
  escaped_nested_key: String.raw`{"ok":true,"result":{"\u0061":1},"calls":0}`,
  ok_false: String.raw`{"ok":false,"error":"boom","error_kind":"exception","calls":0}`,
  ok_missing: String.raw`{"result":1,"calls":0}`,
  ok_string: String.raw`{"ok":"true","result":1}`,
  ok_one: String.raw`{"ok":1,"result":1}`,
  calls_string: String.raw`{"ok":true,"result":1,"calls":"many"}`,
  own_namespace: String.raw`{"ok":true,"result":1,"namespace":"ns_fake","calls":0}`,
  notice_member: String.raw`{"ok":true,"result":1,"notice":"hello","calls":0}`,
  empty_envelope: '{}',
  only_ok: String.raw`{"ok":true}`,
  envelope_number: '5',
  envelope_array: '[1,2]',
  envelope_null: 'null',
  envelope_string: '"x"',
  spaces_inside: String.raw`{"ok":true, "result":1}`,
  trailing_comma: String.raw`{"ok":true,"result":1,}`,
  huge: `{"ok":true,"result":"${'x'.repeat(300000)}\\n${'y'.repeat(1000)}","calls":0}`,
  huge_list: `{"ok":true,"result":[${Array.from({ length: 20000 }, (_, i) => i).join(',')}],"calls":0}`,
};
// Whole frames (HEAD is replaced by the frame's head, its '{' with '{ ' for the tree variant).
const FRAMES = {
  error_member: 'HEAD"error":{"code":-32000,"message":"boom"}}',
  result_and_error: 'HEAD"result":{"ok":true,"result":1},"error":{"code":1,"message":"x"}}',
  extra_member: 'HEAD"result":{"ok":true,"result":1},"x":1}',
  trailing_garbage: 'HEAD"result":{"ok":true,"result":1}}x',
  trailing_brace: 'HEAD"result":{"ok":true,"result":1}}}',
  dup_result_member: 'HEAD"result":{"ok":true,"result":1},"result":{"ok":true,"result":2}}',
  raw_control: 'HEAD"result":{"ok":true,"result":"a\u0001b"}}',
  raw_nul: 'HEAD"result":{"ok":true,"result":"a\u0000b"}}',
  recycle_false: 'HEAD"result":{"ok":true,"result":1,"recycle":false}}',
};
for (const [k, env] of Object.entries(CASES)) FRAMES[k] = `HEAD"result":${env}}`;
const NAMES = Object.keys(FRAMES);

const hex = (s) => Buffer.from(s, 'utf8').toString('hex');
// The program: the frame for every id of the window, highest first, then its own result.
function program(frame, lo, hi, space) {
  const head = space ? '{ "jsonrpc":"2.0","id":%d,' : '{"jsonrpc":"2.0","id":%d,';
  return [
    'import _codemcp',
    `F = bytes.fromhex('${hex(frame.replace('HEAD', '\u0001'))}').decode()`,
    `H = '${head}'`,
    `for i in range(${hi}, ${lo} - 1, -1):`,
    "    _codemcp.send(F.replace('\\x01', H % i))",
    'result = "GENUINE"',
  ].join('\n');
}

// The reply's bytes without its id; a parse error's byte offset differs by the added space.
function rawLine(c, id) {
  const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},`;
  const line = c.stdout.split('\n').find((l) => l.startsWith(head));
  return line === undefined ? undefined : '{' + line.slice(head.length).replace(/ at byte \d+/g, '');
}

test('hostile run answers: the byte path answers exactly as the tree path', { timeout: ms(400000) }, async () => {
  const dir = tempDir();
  const c = new RawClient({ config: writeConfig(dir, { everything: servers.everything() }),
    env: { CODEMCP_EXEC_TIMEOUT_MS: '60000' } });
  await c.initialize();
  const exec = (code, meta) => c.request('tools/call', { name: 'execute_python', arguments: { code },
    ...(meta ? { _meta: meta } : {}) }, { limit: ms(90000) });
  const warm = await exec('result = 1');
  assert.equal(warm.result?.structuredContent?.result, 1, JSON.stringify(warm));
  // Calibration: each candidate id answers with itself.
  let next;
  const calibrate = async () => {
    const r = await exec([
      'import _codemcp',
      'for i in range(2000, 0, -1):',
      '    _codemcp.send(\'{"jsonrpc":"2.0","id":%d,"result":{"ok":true,"result":%d,"calls":0}}\' % (i, i))',
      'result = "GENUINE"',
    ].join('\n'));
    const id = r.result?.structuredContent?.result;
    assert.equal(typeof id, 'number', `calibration: ${JSON.stringify(r).slice(0, 300)}`);
    next = id + 1;
  };
  await calibrate();
  const diffs = [];
  let fakes = 0;
  const one = async (frame, space, meta) => {
    const r = await exec(program(frame, next - 3, next + 60, space), meta);
    next++;
    const line = rawLine(c, r.id);
    assert.ok(line, `no raw line for ${r.id}`);
    if (!line.includes('GENUINE')) fakes++;
    return line;
  };
  for (const name of NAMES) {
    const fast = await one(FRAMES[name], false);
    const tree = await one(FRAMES[name], true);
    if (fast !== tree) diffs.push([name, fast.slice(0, 400), tree.slice(0, 400)]);
    if (name === 'recycle_false') {
      // a 2026-era request: its result gets the era's members, from the tree, in both variants
      for (const env of ['plain', 'escapes', 'unicode']) {
        const m = await one(FRAMES[env], false, meta2026('gwexec-e2e'));
        const t = await one(FRAMES[env], true, meta2026('gwexec-e2e'));
        if (m !== t) diffs.push([`${env} (2026)`, m.slice(0, 400), t.slice(0, 400)]);
        assert.match(m, /"resultType":"complete"/, m.slice(0, 400));
      }
    }
  }
  if (process.env.GWEXEC_DEBUG) console.error("fakes", fakes, "of", 2 * NAMES.length, "next", next);
  assert.deepEqual(diffs, [], JSON.stringify(diffs, null, 1));
  // Most frames were taken as the run's answer (the genuine one only where the gateway
  // refused the fake: errors, trailing bytes, raw control bytes end the run or are dropped).
  assert.ok(fakes >= 2 * (NAMES.length - 12), `only ${fakes} fake answers were taken`);
  // The canonical ones answer with their own envelope, namespace handle appended.
  const plain = JSON.parse(await one(FRAMES.plain, false));
  assert.equal(plain.result.structuredContent.result, 1);
  assert.match(plain.result.structuredContent.namespace, /^ns_/);
  assert.equal(plain.result.content[0].text, JSON.stringify(plain.result.structuredContent));
  assert.equal(plain.result.isError, false);
  // recycle: the worker asks for a fresh process (refused by the byte path: the tree path
  // restarts the worker); a new worker answers the next runs.
  await one('HEAD"result":{"ok":true,"result":1,"recycle":true}}', false);
  await calibrate();
  const after = await exec('result = 6 * 7');
  assert.equal(after.result?.structuredContent?.result, 42, JSON.stringify(after));
});
