// The SDK call path's shortcuts (issue 17): inside a real (sandboxed) worker, the C helpers
// of src/worker/pyfast.c must give what client.py's general path gives — the same frame
// bytes for the arguments they take, None for the ones they leave to Python, and the same
// text for the usual one-text-block reply — on a corpus of awkward values; and real calls
// through both paths (plain text, text with quotes and escapes, JSON text, structured
// results) come back right.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ms, runCodemcp, servers, tempDir, writeConfig } from './lib.mjs';

const COMPARE = String.raw`
import _codemcp, json, math
from codemcp_rt import client

def generic_frame(cid, rid, frag, args, tmo):
    aj = client._encode_plain(args)
    if aj is None:
        return None
    return client._FRAME % (cid, rid, frag, aj, "null" if tmo is None else tmo)

class IntSub(int): pass
class StrSub(str): pass
values = ["", "plain", 'q"uote', "back\\slash", "nl\nx", "tab\t", "\x00\x01\x1f\x7f", "caf\u00e9",
          "\u20ac", "\U0001F600", "</script>", "a/b", 0, 1, -1, 2**63 - 1, -2**63, 2**63, -2**63 - 1,
          2**200, 0.0, -0.0, 1.0, 0.1, 1e16, 1e-7, 123456789.125, 1e308, float("nan"), float("inf"),
          True, False, None, [1], {"k": 1}, (1,), IntSub(3), StrSub("s"), b"x", "\ud800"]
mismatches, compared, fast = [], 0, 0
for i, v in enumerate(values):
    for args in ({"v": v}, {"a": 1, "v": v, "z": "end"}, {"k\"ey\n\u00e9": v}):
        for tmo in (None, 2500):
            try:
                want = generic_frame("c%d" % i, '"run-1"', '"server":"s","tool":"t"', args, tmo)
            except Exception as exc:
                want = None
            got = _codemcp.call_frame("c%d" % i, '"run-1"', '"server":"s","tool":"t"', args, tmo)
            compared += 1
            if got is not None:
                fast += 1
                if got != want:
                    mismatches.append(("frame", repr(args), got, want))
for args in ({1: "int key"}, {None: 1}, {StrSub("k"): 1}):
    compared += 1
    if _codemcp.call_frame("c1", "null", '"server":"s","tool":"t"', args, None) is not None:
        mismatches.append(("frame-nonstr-key", repr(args)))

texts = ["The sum of 1 and 2 is 3.", "", "caf\u00e9 \U0001F600", 'say "hi"', "a\\b", "line\nbreak",
         "tab\tx", "\x01", '{"json": [1, 2]}', "[1, 2]", "42", "null", "x" * 5000, '"}]}}']
def reply(cid, text, tail=""):
    res = {"content": [{"type": "text", "text": text}]}
    if tail == "sc":
        res["structuredContent"] = {"v": 1}
    if tail == "err":
        res["isError"] = True
    if tail == "meta":
        res["_meta"] = {"codemcp": {"mutation": True}}
    return json.dumps({"jsonrpc": "2.0", "id": cid, "result": res}, ensure_ascii=False, separators=(",", ":"))
raws = []
for t in texts:
    for tail in ("", "sc", "err", "meta"):
        raws.append(("c7", reply("c7", t, tail)))
    raws.append(("c8", reply("c7", t)))
    raws.append(("c7", reply("c7", t).replace(":", ": ", 1)))
raws += [("c7", '{"jsonrpc":"2.0","id":"c7","result":{"content":[{"type":"text","text":"a\x02b"}]}}'),
         ("c7", '{"jsonrpc":"2.0","id":"c7","error":{"code":-32000,"message":"x"}}'),
         ("c7", ""), ("c7", "{"), ("", '{"jsonrpc":"2.0","id":"","result":{"content":[{"type":"text","text":"e"}]}}')]
for cid, raw in raws:
    compared += 1
    got, want = _codemcp.text_result(raw, cid), client._py_text_result(raw, cid)
    if got != want:
        mismatches.append(("text", raw[:80], got, want))
    if got is not None:
        fast += 1
        # and it is what the general path unwraps
        if got != json.loads(raw)["result"]["content"][0]["text"]:
            mismatches.append(("text-value", raw[:80], got))
result = {"compared": compared, "fast": fast, "mismatches": mismatches}
`;

const CALLS = String.raw`
out = []
out.append(everything_get_sum(a=1, b=2))
out.append(everything_echo(message='say "hi" \\ caf\u00e9 \U0001F600'))
out.append(everything_echo(message='{"k": [1, 2]}'))
out.append(everything_echo(message="tab\tand\nnewline"))
out.append(everything_get_sum(a=1.5, b=2.25))
ps = [everything_get_sum(a=i, b=i) for i in range(20)]
out.append(sum(int(str(p).rsplit(" ", 1)[1].rstrip(".")) for p in ps))
result = [str(x) for x in out]
`;

test('pyfast: the C frame and reply shortcuts agree with the Python path on a corpus, in a sandboxed worker', { timeout: ms(90000) }, async () => {
  const dir = tempDir();
  const config = writeConfig(dir, { everything: servers.everything() });
  const r = await runCodemcp({ config, env: { CODEMCP_SMOKE: COMPARE } }, ms(80000));
  assert.equal(r.code, 0, `smoke failed:\n${r.stdout}\n${r.stderr.slice(-3000)}`);
  const env = JSON.parse(r.stdout);
  assert.deepEqual(env.result.mismatches, [], JSON.stringify(env.result.mismatches, null, 1));
  assert.ok(env.result.compared > 200, `compared ${env.result.compared}`);
  assert.ok(env.result.fast > 100, `the fast paths answered only ${env.result.fast} cases`);
});

test('pyfast: real calls through the shortcuts and the general path give the right values', { timeout: ms(90000) }, async () => {
  const dir = tempDir();
  const config = writeConfig(dir, { everything: servers.everything() });
  const r = await runCodemcp({ config, env: { CODEMCP_SMOKE: CALLS } }, ms(80000));
  assert.equal(r.code, 0, `smoke failed:\n${r.stdout}\n${r.stderr.slice(-3000)}`);
  const got = JSON.parse(r.stdout).result;
  assert.deepEqual(got, [
    'The sum of 1 and 2 is 3.',
    'Echo: say "hi" \\ caf\u00e9 \u{1F600}',
    'Echo: {"k": [1, 2]}',
    'Echo: tab\tand\nnewline',
    'The sum of 1.5 and 2.25 is 3.75.',
    String(2 * (19 * 20) / 2),
  ]);
});
