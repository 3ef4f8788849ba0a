// The gateway's byte path for a run's answer: the worker's answer frame, when in the form jf_dumps writes, is spliced into the
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
        const m = await one(FRAMES[env], false, meta2026('answer_bytes-e2e'));
        const t = await one(FRAMES[env], true, meta2026('answer_bytes-e2e'));
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

// The request side: a 2025 client's tools/call execute_python in jf_dumps' form is read from its
// bytes (src/front/mcp_server.c receive_execute; only the arguments are decoded). Every request is
// sent as written and with a space after its first '{' (always the tree path); the lines the
// client gets for it (answers, errors, nothing) must be the same bytes.
const E = (args, id = '1', extra = '') =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"execute_python","arguments":${args}${extra}}}`;
const CODE1 = '{"code":"result = 1"}';
const REQUESTS = {
  plain: E(CODE1),
  order: '{"params":{"arguments":{"code":"result = 2"},"name":"execute_python"},"method":"tools/call","id":5,"jsonrpc":"2.0"}',
  id_string: E(CODE1, '"abc"'),
  id_escaped: E(CODE1, String.raw`"a\u0062c"`),
  id_quote: E(CODE1, String.raw`"a\"b"`),
  id_negative: E(CODE1, '-7'),
  id_18_digits: E(CODE1, '999999999999999999'),
  id_19_digits: E(CODE1, '1234567890123456789'),
  id_real: E(CODE1, '1.5'),
  id_null: E(CODE1, 'null'),
  id_true: E(CODE1, 'true'),
  id_object: E(CODE1, '{}'),
  id_nul: E(CODE1, String.raw`"a\u0000"`),
  jsonrpc_1: E(CODE1).replace('"2.0"', '"1.0"'),
  no_jsonrpc: E(CODE1).replace('"jsonrpc":"2.0",', ''),
  dup_id: E(CODE1).replace('"id":1,', '"id":1,"id":2,'),
  dup_method: E(CODE1).replace('"method":"tools/call"', '"method":"tools/list","method":"tools/call"'),
  dup_method_real_first: E(CODE1).replace('"method":"tools/call"', '"method":"tools/call","method":"ping"'),
  dup_params: E(CODE1) .replace('"params":', '"params":{"name":"nope"},"params":'),
  dup_name: E(CODE1).replace('"name":"execute_python"', '"name":"nope","name":"execute_python"'),
  dup_arguments: E(CODE1, '1', ',"arguments":{"code":"result = 3"}'),
  dup_code: E('{"code":"result = 1","code":"result = 4"}'),
  name_other: E(CODE1).replace('execute_python', 'other_tool'),
  name_escaped: E(CODE1).replace('execute_python', String.raw`execute\u005fpython`),
  params_array: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}',
  no_arguments: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_python"}}',
  arguments_array: E('[1]'),
  arguments_null: E('null'),
  arguments_string: E('"result = 1"'),
  code_number: E('{"code":5}'),
  unknown_argument: E('{"code":"result = 1","bogus":1}'),
  timeout_real: E('{"code":"result = 1","timeout_ms":1500.5}'),
  timeout_negative: E('{"code":"result = 1","timeout_ms":-1}'),
  timeout_string: E('{"code":"result = 1","timeout_ms":"5"}'),
  dry_run_string: E('{"code":"result = 1","dry_run":"yes"}'),
  namespace_number: E('{"code":"result = 1","namespace":5}'),
  namespace_bogus: E('{"code":"result = 1","namespace":"ns_nope"}'),
  allow_mutations_bad: E('{"code":"result = 1","allow_mutations":[1]}'),
  all_arguments: E('{"code":"result = 7","timeout_ms":20000,"dry_run":false,"allow_mutations":[],"reset":false}'),
  code_escapes: E(String.raw`{"code":"s = \"q\\\"\" + \"\\n\"\nresult = [s, '\t', 'caf\u00e9']"}`),
  code_unicode_raw: E('{"code":"result = \'caf\u00e9 \u{1F600} \u2028\'"}'),
  code_escaped_unicode: E(String.raw`{"code":"result = 'caf\u00e9'"}`),
  code_lower_hex: E(String.raw`{"code":"result = '\u001f'"}`),
  code_upper_hex: E(String.raw`{"code":"result = '\u001F'"}`),
  code_nul: E(String.raw`{"code":"result = 'a\u0000b'"}`),
  code_raw_control: E('{"code":"result = \'a\u0001b\'"}'),
  code_syntax_error: E('{"code":"result = = 1"}'),
  code_huge: E(`{"code":"result = len('${'x'.repeat(200000)}')"}`),
  args_deep: E(`{"code":"result = 1","x":${deep(70)}}`),
  args_many_keys: E(`{"code":"result = 1","x":${keys(70)}}`),
  meta_progress: E(CODE1, '1', ',"_meta":{"progressToken":"p1"}'),
  meta_2026: E(CODE1, '1', ',"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}'),
  extra_member: E(CODE1).replace('"id":1,', '"id":1,"x":1,'),
  extra_params_member: E(CODE1, '1', ',"x":1'),
  trailing_garbage: E(CODE1) + 'x',
  two_objects: E(CODE1) + E(CODE1),
  batch: `[${E(CODE1)}]`,
  spaces_inside: E(CODE1).replace('"method":', '"method": '),
};

test('hostile execute_python requests: the byte path answers exactly as the tree path', { timeout: ms(300000) }, async () => {
  const dir = tempDir();
  const c = new RawClient({ config: writeConfig(dir, { everything: servers.everything() }),
    env: { CODEMCP_EXEC_TIMEOUT_MS: '60000' } });
  await c.initialize();
  let k = 0;
  // The lines a request gets: everything up to the answer of a run queued after it (runs of a
  // session run in order; errors are answered at once).
  const linesFor = async (line) => {
    const mark = c.stdout.length;
    c.send(line);
    const sync = `sync${k++}`;
    const r = await c.request('tools/call', { name: 'execute_python', arguments: { code: 'result = 0' } },
      { id: sync, limit: ms(90000) });
    assert.equal(r.result?.structuredContent?.result, 0, JSON.stringify(r).slice(0, 300));
    return c.stdout.slice(mark).split('\n').filter((l) => l && !l.includes(`"id":"${sync}"`))
      .map((l) => l.replace(/ at byte \d+/g, ''));
  };
  await linesFor(E(CODE1)); // the worker is up
  const diffs = [];
  let answered = 0;
  for (const [name, line] of Object.entries(REQUESTS)) {
    const fast = await linesFor(line);
    const tree = await linesFor(line[0] + ' ' + line.slice(1));
    if (JSON.stringify(fast) !== JSON.stringify(tree)) diffs.push([name, fast.map((l) => l.slice(0, 300)), tree.map((l) => l.slice(0, 300))]);
    if (fast.length) answered++;
  }
  assert.deepEqual(diffs, [], JSON.stringify(diffs, null, 1));
  assert.ok(answered >= Object.keys(REQUESTS).length - 3, `only ${answered} requests were answered`);
  const plain = await linesFor(E('{"code":"result = 6 * 7"}', '"last"'));
  assert.equal(plain.length, 1);
  assert.equal(JSON.parse(plain[0]).result.structuredContent.result, 42);
});
