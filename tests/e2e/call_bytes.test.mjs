// The gateway's byte path for SDK calls: a call_tool frame in the
// form jf_dumps writes is handled from its bytes, its args forwarded as they are, the
// upstream's result spliced into the reply. Agent code shares the worker and can write any
// frame (`_codemcp.send`), so every hostile frame — duplicate keys at any level, escapes
// and \u0000 in the names, raw NUL and control bytes, too-big numbers, wrong types, too many
// members, too deep (53 frames) — must get exactly the answer the tree path gives. The same frame is sent
// twice: as written, and with one space after its first '{' (not jf_dumps' form: always the
// tree path); both answers must be the same. And results come back as the bytes jansson
// writes (checked against a Python rendering of jansson's form).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ms, smokeEverything } from './lib.mjs';

const HOSTILE_FRAMES = String.raw`
import _codemcp, json, re
from codemcp_rt import runstate
R = runstate.current().run_id_json
RESC = '"\\u%04x' % ord(R[1]) + R[2:]  # the same run id with its first character escaped
SUM = '"server":"everything","tool":"get-sum"'
def frame(cid, params, head=None):
    h = head if head is not None else '"jsonrpc":"2.0","id":"%s","method":"call_tool"' % cid
    return '{%s,"params":{%s}}' % (h, params)
def p(args='{"a":1,"b":2}', names=SUM, run=None, tail=',"timeout_ms":null'):
    return '"run_id":%s,%s,"args":%s%s' % (run or R, names, args, tail)
deep = '[' * 70 + ']' * 70
many = ','.join('"k%d":%d' % (i, i) for i in range(70))
cases = {
  'plain': lambda c: frame(c, p()),
  'no_args': lambda c: frame(c, '"run_id":%s,%s' % (R, SUM)),
  'dup_server_bogus_first': lambda c: frame(c, p(names='"server":"nope","server":"everything","tool":"get-sum"')),
  'dup_server_real_first': lambda c: frame(c, p(names='"server":"everything","server":"nope","tool":"get-sum"')),
  'dup_tool': lambda c: frame(c, p(names='"server":"everything","tool":"nope","tool":"get-sum"')),
  'dup_args': lambda c: frame(c, p(args='{"a":1,"b":2},"args":{"a":10,"b":20}')),
  'dup_args_key': lambda c: frame(c, p(args='{"a":1,"a":5,"b":2}')),
  'dup_nested_key': lambda c: frame(c, p(args='{"a":1,"b":2,"x":{"k":1,"k":[2]}}')),
  'dup_run_id': lambda c: frame(c, '"run_id":"bogus",' + p()),
  'dup_run_id_real_first': lambda c: frame(c, p(tail=',"run_id":"bogus"')),
  'dup_method': lambda c: frame(c, p(), '"jsonrpc":"2.0","id":"%s","method":"nope","method":"call_tool"' % c),
  'dup_method_real_first': lambda c: frame(c, p(), '"jsonrpc":"2.0","id":"%s","method":"call_tool","method":"nope"' % c),
  'dup_params': lambda c: frame(c, p(names='"server":"nope","tool":"x"') + '},"params":{' + p()),
  'dup_jsonrpc': lambda c: frame(c, p(), '"jsonrpc":"1.0","jsonrpc":"2.0","id":"%s","method":"call_tool"' % c),
  'jsonrpc_1': lambda c: frame(c, p(), '"jsonrpc":"1.0","id":"%s","method":"call_tool"' % c),
  'no_jsonrpc': lambda c: frame(c, p(), '"id":"%s","method":"call_tool"' % c),
  'server_nul_escape': lambda c: frame(c, p(names='"server":"everything\\u0000junk","tool":"get-sum"')),
  'tool_nul_escape': lambda c: frame(c, p(names='"server":"everything","tool":"get-sum\\u0000x"')),
  'tool_escaped': lambda c: frame(c, p(names='"server":"everything","tool":"get\\u002dsum"')),
  'server_quote': lambda c: frame(c, p(names='"server":"every\\"thing","tool":"get-sum"')),
  'run_id_escaped': lambda c: frame(c, p(run=RESC)),
  'run_id_number': lambda c: frame(c, p(run='12')),
  'server_number': lambda c: frame(c, p(names='"server":7,"tool":"get-sum"')),
  'no_server': lambda c: frame(c, p(names='"tool":"get-sum"')),
  'args_array': lambda c: frame(c, p(args='[1,2]')),
  'args_null': lambda c: frame(c, p(args='null')),
  'args_string': lambda c: frame(c, p(args='"x"')),
  'args_key_escaped': lambda c: frame(c, p(args='{"\\u0061":1,"b":2}')),
  'args_real': lambda c: frame(c, p(args='{"a":1.5,"b":2}')),
  'args_minus_zero': lambda c: frame(c, p(args='{"a":-0,"b":2}')),
  'args_19_digits': lambda c: frame(c, p(args='{"a":1234567890123456789,"b":1}')),
  'args_deep': lambda c: frame(c, p(args='{"a":1,"b":2,"d":%s}' % deep)),
  'args_many_keys': lambda c: frame(c, p(args='{"a":1,"b":2,%s}' % many)),
  'big_integer_tag_spoof': lambda c: frame(c, p(args='{"a":"\\u0000jf-integer:5","b":2}')),
  'big_integer_tag_spoof_echo': lambda c: frame(c, p(args='{"message":"\\u0000jf-integer:7"}', names='"server":"everything","tool":"echo"')),
  'echo_nul_escape': lambda c: frame(c, p(args='{"message":"a\\u0000b"}', names='"server":"everything","tool":"echo"')),
  'echo_odd_escapes': lambda c: frame(c, p(args='{"message":"\\u0041\\/\\u001f\\u001F\\n\\"\\\\"}', names='"server":"everything","tool":"echo"')),
  'echo_unicode': lambda c: frame(c, p(args='{"message":"caf\u00e9 \U0001F600 \u2028"}', names='"server":"everything","tool":"echo"')),
  'timeout_string': lambda c: frame(c, p(tail=',"timeout_ms":"100"')),
  'timeout_negative': lambda c: frame(c, p(tail=',"timeout_ms":-5')),
  'timeout_real': lambda c: frame(c, p(tail=',"timeout_ms":1.5')),
  'many_params': lambda c: frame(c, p(tail=',' + ','.join('"x%d":0' % i for i in range(9)))),
  'many_members': lambda c: frame(c, p(), '"jsonrpc":"2.0","id":"%s","method":"call_tool",%s' % (c, ','.join('"x%d":0' % i for i in range(9)))),
  'params_array': lambda c: '{"jsonrpc":"2.0","id":"%s","method":"call_tool","params":[1]}' % c,
  'no_params': lambda c: '{"jsonrpc":"2.0","id":"%s","method":"call_tool"}' % c,
  'other_method': lambda c: frame(c, p(), '"jsonrpc":"2.0","id":"%s","method":"call_tools"' % c),
  'id_escaped': lambda c: frame(c, p(), '"jsonrpc":"2.0","id":"\\u%04x%s","method":"call_tool"' % (ord(c[0]), c[1:])),
  # no answer reaches an id (parse errors answer id null): both paths must stay silent
  'raw_nul': lambda c: frame(c, p(names='"server":"every\x00thing","tool":"get-sum"')),
  'raw_control': lambda c: frame(c, p(args='{"message":"a\x01b"}', names='"server":"everything","tool":"echo"')),
  'trailing_garbage': lambda c: frame(c, p()) + 'x',
  'trailing_brace': lambda c: frame(c, p()) + '}',
  'too_big_integer': lambda c: frame(c, p(args='{"a":123456789012345678901234,"b":1}')),
  'id_null': lambda c: frame(c, p(), '"jsonrpc":"2.0","id":null,"method":"call_tool"'),
}
def norm(raw):
    if raw is None:
        return None
    m = json.loads(raw)
    m.pop("id", None)
    e = m.get("error", {})
    if isinstance(e.get("message"), str):  # the tree variant has one byte more before it
        e["message"] = re.sub(r" at byte \d+", "", e["message"])
    d = e.get("data")
    if isinstance(d, dict):
        d.pop("elapsed_ms", None)
    return json.dumps(m, sort_keys=True)
def ask(text, cid, wait):
    _codemcp.send(text)
    return _codemcp.wait_reply(cid, wait)
diffs, answered, silent = [], 0, 0
for i, (name, mk) in enumerate(cases.items()):
    fast_id, tree_id = "gf%d" % i, "gt%d" % i
    fast_text = mk(fast_id)
    tree_text = '{ ' + mk(tree_id)[1:]
    tree = ask(tree_text, tree_id, 2.0)
    fast = ask(fast_text, fast_id, 2.0 if tree is None else 20.0)
    if norm(fast) != norm(tree):
        diffs.append([name, fast, tree])
    if tree is None:
        silent += 1
    else:
        answered += 1
after = everything_get_sum(a=2, b=3)
result = {"diffs": diffs, "answered": answered, "n": len(cases), "after": str(after)}
`;

// The reply's bytes: what the worker receives for an upstream result must be jansson's
// compact form of it (Python's json.dumps with jansson's upper-case \u00XX escapes).
const REPLY_BYTES = String.raw`
import _codemcp, json, re
from codemcp_rt import runstate
R = runstate.current().run_id_json
def jansson(v):
    t = json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    return re.sub(r'\\u00([0-9a-f]{2})', lambda m: '\\u00' + m.group(1).upper(), t)
msgs = ["plain", 'q"uote \\ back', "tab\tnl\ncr\r", "\x01\x1f\x7f", "caf\u00e9 \U0001F600",
        "a\x00b", "</script> a/b", "\u2028\u2029", "x" * 3000]
bad = []
for i, m in enumerate(msgs):
    cid = "rb%d" % i
    _codemcp.send(json.dumps({"jsonrpc": "2.0", "id": cid, "method": "call_tool", "params": {
        "run_id": json.loads(R), "server": "everything", "tool": "echo", "args": {"message": m},
        "timeout_ms": None}}, ensure_ascii=False, separators=(",", ":")))
    raw = _codemcp.wait_reply(cid, 20.0)
    if raw is None or raw != jansson(json.loads(raw)):
        bad.append([m[:40], raw and raw[:300]])
    elif json.loads(raw)["result"]["content"][0]["text"] != "Echo: " + m:
        bad.append([m[:40], "wrong text", raw[:300]])
result = {"bad": bad, "n": len(msgs)}
`;

test('hostile call_tool frames: the byte path answers exactly as the tree path', { timeout: ms(200000) }, async () => {
  const got = (await smokeEverything(HOSTILE_FRAMES, { CODEMCP_EXEC_TIMEOUT_MS: '170000' }, ms(190000))).result;
  assert.deepEqual(got.diffs, [], JSON.stringify(got.diffs, null, 1));
  assert.ok(got.answered >= 40, `only ${got.answered} frames were answered`);
  assert.ok(got.n >= 50, `${got.n} cases`);
  assert.equal(got.after, 'The sum of 2 and 3 is 5.');
});

test('results reach the worker as jansson writes them (escapes, NUL, non-ASCII, long text)', { timeout: ms(90000) }, async () => {
  const got = (await smokeEverything(REPLY_BYTES)).result;
  assert.deepEqual(got.bad, [], JSON.stringify(got.bad, null, 1));
  assert.equal(got.n, 9);
});
