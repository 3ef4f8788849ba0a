// The SDK call path's shortcuts: inside a real (sandboxed) worker, the C helpers
// of src/worker/pyfast.c must give what client.py's general path gives — the same frame
// bytes for the arguments they take, None for the ones they leave to Python, and the same
// text for the usual one-text-block reply — on a corpus of awkward values; and real calls
// through both paths (plain text, text with quotes and escapes, JSON text, structured
// results) come back right.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { connectClient, ms, servers, sleep, smokeEverything, tempDir, writeConfig } from './lib.mjs';

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
  const env = await smokeEverything(COMPARE);
  assert.deepEqual(env.result.mismatches, [], JSON.stringify(env.result.mismatches, null, 1));
  assert.ok(env.result.compared > 200, `compared ${env.result.compared}`);
  assert.ok(env.result.fast > 100, `the fast paths answered only ${env.result.fast} cases`);
});

test('pyfast: real calls through the shortcuts and the general path give the right values', { timeout: ms(90000) }, async () => {
  const got = (await smokeEverything(CALLS)).result;
  assert.deepEqual(got, [
    'The sum of 1 and 2 is 3.',
    'Echo: say "hi" \\ caf\u00e9 \u{1F600}',
    'Echo: {"k": [1, 2]}',
    'Echo: tab\tand\nnewline',
    'The sum of 1.5 and 2.25 is 3.75.',
    String(2 * (19 * 20) / 2),
  ]);
});

// The C cores of Pending and _Call (src/worker/pypending.c, pycall.c) are reachable from a
// program (`_codemcp.PendingBase`, `p._wait.__self__`): every forged object, wrong type,
// re-entrant read, cycle and bad transport answer must be a Python exception (or the Python
// twin's answer), never a crash; and the real call path must still work afterwards.
const HOSTILE = String.raw`
import _codemcp, gc, threading, time, sys
from codemcp_rt import client, transport
from codemcp_rt.pending import Pending
from codemcp_rt.errors import ToolError
out = {}
def probe(name, fn):
    try:
        out[name] = ["ok", repr(fn())[:120]]
    except BaseException as exc:
        out[name] = [type(exc).__name__, str(exc)[:120]]
PB, CB = _codemcp.PendingBase, _codemcp.CallBase
probe("pb_noargs", lambda: PB())
probe("pb_bare_result", lambda: PB.__new__(PB).result())
probe("pb_bare_done", lambda: PB.__new__(PB).done())
probe("pb_int_wait", lambda: PB(5).result())
probe("pb_kw", lambda: PB(wait=lambda: 7, label=None, block=3).result())
probe("pb_toomany", lambda: PB(1, 2, 3, 4, 5))
def forged(state, error=None, value=None, delete=False):
    p = Pending(lambda: 1)
    p._state, p._error, p._value = state, error, value
    if delete:
        del p._value
    return p.result()
probe("state2_int_error", lambda: forged(2, 5))
probe("state2_class_error", lambda: forged(2, ValueError))
probe("state2_none", lambda: forged(2))
probe("state9", lambda: forged(9, value="v"))
probe("state1_deleted", lambda: forged(1, delete=True))
probe("state_str", lambda: forged("x"))
probe("state_huge", lambda: forged(2**80))
holder = []
p = Pending(lambda: holder[0].result())
holder.append(p)
probe("reentrant", lambda: p.result())
probe("reentrant_again", lambda: p.result())
def bad_poll():
    raise ValueError("poll")
class BadBool:
    def __bool__(self):
        raise ValueError("bool")
probe("done_poll_raises", lambda: Pending(lambda: 1, bad_poll).done())
probe("done_poll_badbool", lambda: Pending(lambda: 1, lambda: BadBool()).done())
probe("done_poll_itself_badbool", lambda: Pending(lambda: 1, BadBool()).done())
def te():
    raise ToolError("timeout", "slow", "s", "t", {}, 5)
pt = Pending(te)
probe("toolerror_1", lambda: pt.result())
probe("toolerror_2", lambda: pt.result())
probe("toolerror_state", lambda: (pt._state, pt._wait, type(pt._error).__name__))
probe("other_exc_keeps_wait", lambda: (lambda q: (q.done(), [q.result() for _ in [0]]))(Pending(lambda: 1 / 0)))
# a value that is itself, a Pending holding itself, then collected
cyc = []; cyc.append(cyc)
probe("cycle_value", lambda: len(Pending.of(cyc).result()))
for _ in range(200):
    q = Pending(lambda: 1); q._value = q; q._aw = q
del q; gc.collect()
# __init__ again from inside wait(), and from another thread while one waits
def rebind():
    pr.__init__(lambda: "second")
    return "first"
pr = Pending(rebind)
probe("reinit_inside", lambda: (pr.result(), pr._state))
calls = []
def slow():
    calls.append(1)
    time.sleep(0.2)
    return "v"
ps = Pending(slow)
res = []
ts = [threading.Thread(target=lambda: res.append(ps.result())) for _ in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
out["threads"] = [res, len(calls)]
# CallBase: wrong arity, bare take, forged fields, transports that answer wrongly
probe("cb_noargs", lambda: CB())
probe("cb_kw", lambda: CB(*range(7), x=1))
probe("cb_bare_take_int_id", lambda: CB(5, "s", "t", None, None, None, None, False).take())
class FakeT:
    def __init__(self, answer):
        self.answer = answer
    def wait_reply(self, id, timeout=None):
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer
    def forget(self, id):
        pass
    def take_reply(self, id):
        return None
saved = transport._transport
def with_t(answer, fn):
    transport._transport = FakeT(answer)
    try:
        return fn()
    finally:
        transport._transport = saved
def mk(**kw):
    c = client._Call("zz1", "srv", "tl", {"a": 1}, None, None, None, False)
    for k, v in kw.items():
        setattr(c, k, v)
    return c
probe("cb_bare_take_none", lambda: with_t(None, lambda: CB("z", "s", "t", None, None, None, None, False).take()))
probe("cb_bare_take_nonstr", lambda: with_t(5, lambda: CB("z", "s", "t", None, None, None, None, False).take()))
probe("take_none", lambda: with_t(None, lambda: mk().take()))
probe("take_int", lambda: with_t(5, lambda: mk().take()))
probe("take_lost", lambda: with_t(ConnectionError("gone"), lambda: mk().take()))
probe("take_bytes", lambda: with_t(b"x", lambda: mk().take()))
probe("take_text", lambda: with_t('{"jsonrpc":"2.0","id":"zz1","result":{"content":[{"type":"text","text":"hi"}]}}', lambda: mk().take()))
probe("take_json", lambda: with_t('{"jsonrpc":"2.0","id":"zz1","result":{"content":[{"type":"text","text":"[1,2]"}]}}', lambda: mk().take()))
probe("take_wide", lambda: with_t('{"jsonrpc":"2.0","id":"zz1","result":{"content":[{"type":"text","text":"\u017b\u20ac"}]}}', lambda: mk().take()))
probe("take_err", lambda: with_t('{"jsonrpc":"2.0","id":"zz1","error":{"code":-1,"message":"no","data":{"kind":"policy"}}}', lambda: mk().take()))
probe("take_other_id", lambda: with_t('{"jsonrpc":"2.0","id":"zz2","result":{"content":[{"type":"text","text":"hi"}]}}', lambda: mk().take()))
probe("take_huge_timeout", lambda: with_t('{"jsonrpc":"2.0","id":"zz1","result":{"content":[{"type":"text","text":"ok"}]}}', lambda: mk(timeout_ms=10**400).take()))
probe("take_str_timeout", lambda: with_t("x", lambda: mk(timeout_ms="x").take()))
probe("take_badbool_finished", lambda: mk(finished=BadBool()).take())
probe("take_deleted_id", lambda: (lambda c: (delattr(c, "id"), with_t("x", c.take)))(mk()))
probe("take_no_transport_mod", lambda: with_t(None, lambda: mk(id=None).take()))
probe("started_str", lambda: mk(started="x"))
probe("done_twice", lambda: (lambda c: (with_t('{"jsonrpc":"2.0","id":"zz1","result":{"content":[{"type":"text","text":"a"}]}}', c.take), c.take()))(mk()))
probe("grace", lambda: client._GRACE_S)
for _ in range(200):
    c = client._Call("zz1", "s", "t", None, None, None, None, False); c.value = c; c.state = c
del c; gc.collect()
# issue(): client.call()'s C fast path, called directly with junk
import itertools
from codemcp_rt import runstate
class St:
    def __init__(self):
        self.made, self.writes, self.run_id_json = [], {}, '"rX"'
class SendT:
    def __init__(self, exc=None):
        self.exc, self.sent = exc, []
    def send(self, frame):
        if self.exc is not None:
            raise self.exc
        self.sent.append(frame)
class Stop(BaseException):
    pass
TOOLS = {("srv", "tl"): ('"server":"srv","tool":"tl"', "srv/tl", False, None)}
CHECKED = []
def check_ok(server, tool, args):
    CHECKED.append(dict(args))
def iss(state=None, args=None, tmo=None, tools=None, ids=None, cc=None, pc=None, t=None, server="srv", check=check_ok):
    return _codemcp.issue(St() if state is None else state, server, "tl", {"a": 1} if args is None else args, tmo,
                          TOOLS if tools is None else tools, itertools.count(1) if ids is None else ids,
                          client._Call if cc is None else cc, Pending if pc is None else pc,
                          SendT() if t is None else t, check)
probe("issue_arity", lambda: _codemcp.issue(1, 2))
probe("issue_nostate", lambda: _codemcp.issue(None, "srv", "tl", {}, None, TOOLS, itertools.count(), client._Call, Pending, SendT(), check_ok))
# argguard inside issue(): check() runs only when an argument's type is not certain to fit
CERTAIN = {("srv", "tl"): ('"server":"srv","tool":"tl"', "srv/tl", False, {"a": frozenset({int})})}
def refuse(server, tool, args):
    raise ValueError("refused %r" % sorted(args))
def certain_case(args, check, tools=CERTAIN):
    del CHECKED[:]
    st, tt = St(), SendT()
    r = iss(state=st, t=tt, tools=tools, args=args, check=check)
    return [type(r).__name__, len(st.made), len(tt.sent), len(CHECKED)]
probe("issue_certain", lambda: certain_case({"a": 1}, refuse))
probe("issue_unknown_key", lambda: certain_case({"zz": "x"}, refuse))
probe("issue_uncertain_ok", lambda: certain_case({"a": "x"}, check_ok))
st_refused, tt_refused = St(), SendT()
probe("issue_uncertain_refused", lambda: iss(state=st_refused, t=tt_refused, tools=CERTAIN, args={"a": 1.5}, check=refuse))
out["issue_refused_sent"] = [len(st_refused.made), len(tt_refused.sent)]
probe("issue_no_table", lambda: certain_case({"a": 1}, check_ok, TOOLS))
probe("issue_check_int", lambda: iss(tools=CERTAIN, args={"a": "x"}, check=5))
LISTED = {("srv", "tl"): ('"server":"srv","tool":"tl"', "srv/tl", False, {"a": [int]})}
probe("issue_bad_set", lambda: certain_case({"a": 1}, check_ok, LISTED))
probe("issue_empty_args", lambda: certain_case({}, refuse))
probe("issue_badstate", lambda: iss(state=object()))
probe("issue_notools", lambda: iss(tools={}))
probe("issue_unhashable", lambda: iss(server=["x"]))
probe("issue_badinfo", lambda: iss(tools={("srv", "tl"): (5, 6, 7, None)}))
probe("issue_oldinfo", lambda: iss(tools={("srv", "tl"): ('"server":"srv","tool":"tl"', "l", False)}))
probe("issue_badbool", lambda: iss(tools={("srv", "tl"): ('"server":"srv","tool":"tl"', "l", BadBool(), None)}))
class Clearing:
    def __bool__(self):
        CLR.clear()
        return False
CLR = {("srv", "tl"): ('"server":"srv","tool":"tl"', "l" * 3, Clearing(), None)}
probe("issue_clearing", lambda: type(iss(tools=CLR, t=SendT())).__name__)
probe("issue_ids_neg", lambda: iss(ids=iter([-1])))
probe("issue_ids_str", lambda: iss(ids=iter(["x"])))
probe("issue_ids_empty", lambda: iss(ids=iter([])))
probe("issue_ids_raise", lambda: iss(ids=(1 / 0 for _ in [0])))
probe("issue_nested_args", lambda: iss(args={"a": [1]}))
rec = {}; rec["r"] = rec
probe("issue_recursive_args", lambda: iss(args=rec))
probe("issue_huge_args", lambda: type(iss(args={("k%d" % i): i for i in range(100000)})).__name__)
probe("issue_float_tmo", lambda: iss(tmo=1.5))
probe("issue_cc_int", lambda: iss(cc=5))
probe("issue_pc_int", lambda: iss(pc=5))
probe("issue_send_fails", lambda: iss(t=SendT(ValueError("down"))).result())
probe("issue_send_stops", lambda: iss(t=SendT(Stop("halt"))))
sst = St(); tt = SendT()
pp = iss(state=sst, t=tt, tools={("srv", "tl"): ('"server":"srv","tool":"tl"', "srv/tl", True, None)})
out["issue_write"] = [type(pp).__name__, len(sst.made), list(sst.writes), tt.sent[0][:60]]
# the real path still works, and a real call's _Call forged after the fact does not break the run
p1 = everything_get_sum(a=1, b=2)
call = p1._wait.__self__
out["real"] = str(p1)
call.finished = False; call.early = None; call.id = "no-such-id"; call.timeout_ms = 0
p2 = everything_get_sum(a=2, b=2)
out["real2"] = str(p2)
# the SDK path calls _codemcp's own wait_reply and send directly while they are the module's
# own: agent code that replaces them on the module is still called, as the attribute says
seen = []
orig_wait, orig_send = _codemcp.wait_reply, _codemcp.send
def spy_wait(id, timeout=None):
    seen.append("wait")
    return orig_wait(id, timeout)
def spy_send(text):
    seen.append("send")
    return orig_send(text)
_codemcp.wait_reply, _codemcp.send = spy_wait, spy_send
try:
    out["spied"] = [str(everything_get_sum(a=3, b=2)), seen[:]]
finally:
    _codemcp.wait_reply, _codemcp.send = orig_wait, orig_send
out["unspied"] = [str(everything_get_sum(a=4, b=2)), len(seen)]
# ... also when agent code gives the module a subclass whose descriptor answers for send
import types
class SpyModule(types.ModuleType):
    @property
    def send(self):
        seen.append("class-send")
        return orig_send
mod_cls = _codemcp.__class__
_codemcp.__class__ = SpyModule
try:
    out["class_spied"] = [str(everything_get_sum(a=5, b=2)), seen.count("class-send")]
finally:
    _codemcp.__class__ = mod_cls
# an id with a NUL in it is refused on both paths, as the attribute path's "s" refuses it, and
# never taken for the call whose id is the part before the NUL
def nul_id():
    p = everything_get_sum(a=6, b=2)
    c = p._wait.__self__
    real = c.id
    c.id = real + "\0x"
    try:
        return ["ok", str(p)]
    except BaseException as e:
        return [type(e).__name__, str(e)[:80]]
    finally:
        c.id = real  # the run's end waits for its open calls: by the real id
out["nul_direct"] = nul_id()
_codemcp.wait_reply = spy_wait
try:
    out["nul_attr"] = nul_id()
finally:
    _codemcp.wait_reply = orig_wait
probe("take_nul", lambda: _codemcp.take_reply("c1\0x"))
result = out
`;

test('pypending/pycall: forged, wrong-typed and re-entrant use of the C cores raises cleanly', { timeout: ms(90000) }, async () => {
  const o = (await smokeEverything(HOSTILE)).result;
  if (process.env.PERCALL_SHOW) console.log(JSON.stringify(o, null, 1));
  const kind = (k) => o[k][0];
  for (const k of ['pb_noargs', 'pb_int_wait', 'pb_toomany', 'state2_int_error', 'state2_none', 'state_str',
    'cb_noargs', 'cb_kw', 'started_str', 'take_str_timeout'])
    assert.equal(kind(k), 'TypeError', `${k}: ${o[k]}`);
  for (const k of ['pb_bare_result', 'pb_kw']) assert.ok(['TypeError', 'ok'].includes(kind(k)), `${k}: ${o[k]}`);
  assert.deepEqual(o.pb_kw, ['ok', '7']);
  assert.deepEqual(o.pb_bare_done, ['ok', 'False']);
  assert.equal(kind('state2_class_error'), 'ValueError');
  assert.equal(kind('state_huge'), 'OverflowError');
  assert.deepEqual(o.state9, ['ok', "'v'"]);
  assert.deepEqual(o.state1_deleted, ['ok', 'None']);
  assert.deepEqual(o.reentrant[0], 'RuntimeError');
  assert.deepEqual(o.reentrant_again[0], 'RuntimeError');
  for (const k of ['done_poll_raises', 'done_poll_badbool', 'done_poll_itself_badbool'])
    assert.deepEqual(o[k], ['ok', 'False'], k);
  assert.equal(kind('toolerror_1'), 'ToolError');
  assert.deepEqual(o.toolerror_2, o.toolerror_1);
  assert.deepEqual(o.toolerror_state, ['ok', "(2, None, 'ToolError')"]);
  assert.equal(kind('other_exc_keeps_wait'), 'ZeroDivisionError');
  assert.deepEqual(o.cycle_value, ['ok', '1']);
  assert.deepEqual(o.reinit_inside, ['ok', "('first', 1)"]);
  assert.deepEqual(o.threads, [['v', 'v', 'v', 'v'], 1]);
  for (const k of ['cb_bare_take_int_id', 'cb_bare_take_none', 'cb_bare_take_nonstr'])
    assert.equal(kind(k), 'AttributeError', `${k}: ${o[k]}`);
  assert.deepEqual(o.take_none.slice(0, 1), ['ToolError']);
  assert.match(o.take_none[1], /no reply/);
  for (const k of ['take_int', 'take_bytes', 'take_deleted_id']) {
    assert.equal(kind(k), 'ToolError', `${k}: ${o[k]}`);
    assert.match(o[k][1], /malformed|transport/);
  }
  assert.equal(kind('take_lost'), 'ToolError');
  assert.match(o.take_lost[1], /connection lost: gone/);
  assert.deepEqual(o.take_text, ['ok', "'hi'"]);
  assert.deepEqual(o.take_json, ['ok', '[1, 2]']);
  assert.deepEqual(o.take_wide, ['ok', "'\u017b\u20ac'"]);
  assert.equal(kind('take_err'), 'ToolError');
  assert.deepEqual(o.take_other_id, ['ok', "'hi'"]); // routing by id is the transport's job
  assert.equal(kind('take_huge_timeout'), 'OverflowError'); // as the Python path: 10**400 / 1000.0
  assert.equal(kind('take_badbool_finished'), 'ValueError');
  assert.equal(kind('take_no_transport_mod'), 'ToolError', String(o.take_no_transport_mod));
  assert.deepEqual(o.done_twice, ['ok', "('a', None)"]); // take() forgets the value
  assert.deepEqual(o.grace, ['ok', '10.0']);
  assert.equal(kind('issue_arity'), 'TypeError');
  for (const k of ['issue_nostate', 'issue_badstate', 'issue_notools', 'issue_unhashable', 'issue_badinfo',
    'issue_badbool', 'issue_ids_neg', 'issue_ids_str', 'issue_ids_empty', 'issue_nested_args',
    'issue_recursive_args', 'issue_float_tmo'])
    assert.deepEqual(o[k], ['ok', 'None'], `${k}: ${o[k]}`);
  assert.deepEqual(o.issue_clearing, ['ok', "'Pending'"]);
  assert.deepEqual(o.issue_oldinfo, ['ok', 'None']);
  // argguard in issue(): [result type, calls recorded, frames sent, check() calls]
  assert.deepEqual(o.issue_certain, ['ok', "['Pending', 1, 1, 0]"]);
  assert.deepEqual(o.issue_unknown_key, ['ok', "['Pending', 1, 1, 0]"]);
  assert.deepEqual(o.issue_uncertain_ok, ['ok', "['Pending', 1, 1, 1]"]);
  assert.deepEqual(o.issue_uncertain_refused, ['ValueError', "refused ['a']"]);
  assert.deepEqual(o.issue_refused_sent, [0, 0]);
  assert.deepEqual(o.issue_no_table, ['ok', "['Pending', 1, 1, 1]"]);
  assert.equal(kind('issue_check_int'), 'TypeError');
  assert.deepEqual(o.issue_bad_set, ['ok', "['Pending', 1, 1, 1]"]);
  assert.deepEqual(o.issue_empty_args, ['ok', "['Pending', 1, 1, 0]"]);
  assert.equal(kind('issue_ids_raise'), 'ZeroDivisionError');
  assert.deepEqual(o.issue_huge_args, ['ok', "'Pending'"]);
  for (const k of ['issue_cc_int', 'issue_pc_int']) assert.equal(kind(k), 'TypeError', `${k}: ${o[k]}`);
  assert.equal(kind('issue_send_fails'), 'ToolError');
  assert.match(o.issue_send_fails[1], /could not send the request: down/);
  assert.equal(kind('issue_send_stops'), 'Stop');
  assert.deepEqual(o.issue_write, ['Pending', 1, ['srv'],
    '{"jsonrpc":"2.0","id":"c1","method":"call_tool","params":{"r']);
  assert.equal(o.real, 'The sum of 1 and 2 is 3.');
  assert.equal(o.real2, 'The sum of 2 and 2 is 4.');
  assert.deepEqual(o.spied, ['The sum of 3 and 2 is 5.', ['send', 'wait']]);
  assert.deepEqual(o.unspied, ['The sum of 4 and 2 is 6.', 2]);
  assert.deepEqual(o.class_spied, ['The sum of 5 and 2 is 7.', 1]);
  assert.notEqual(o.nul_direct[0], 'ok', String(o.nul_direct));
  assert.deepEqual(o.nul_direct, o.nul_attr);
  assert.equal(kind('take_nul'), 'ValueError', String(o.take_nul));
});

// The run request's parse in C (src/worker/pyjson.c, `_codemcp.loads_fast`): the same value
// as json.loads for everything it takes, Ellipsis (json.loads decides) for the rest, never
// an exception or a crash, inside a real worker.
const LOADS = String.raw`
import _codemcp, json
docs = ['{}', '[]', '""', '0', '-0', '-12', '9007199254740993', '123456789012345678',
        '1234567890123456789', '99999999999999999999', '1.5', '1e3', '-1E-2', 'true', 'false',
        'null', ' {"a" : [1 , 2 ,{"b":null}] } ', '"caf\u00e9 \U0001F600"', r'"\u00e9\u20ac"',
        r'"\ud83d\ude00"', r'"\ud83d"', r'"\ude00"', r'"\ud83dx"', r'"a\"b\\c\/d\b\f\n\r\t"',
        r'"\x"', r'"\u12"', r'"\u12g4"', '"a\x01b"', '"a\tb"', '{"k":1,"k":2}', '{"a":1,}', '[1,]',
        '{"a" 1}', '{1:2}', '[1 2]', '01', '-', '--1', '1x', '{"a":1} x', '{"a":1}  ', '',
        '   ', 'nul', 'truex', '[' * 70 + ']' * 70, '[' * 10 + ']' * 10, '{"a":' * 3 + '1' + '}' * 3,
        '{"jsonrpc":"2.0","id":7,"method":"run","params":{"code":"print(1)\\nx = \\"q\\"","run_id":"r-1","timeout_ms":30000,"validate":true,"unavailable":[],"drop_namespaces":["n1","n2"]}}',
        '{"' + 'k' * 40 + '":1,"\u00e9":2,"kk":3}', '"' + 'x' * 100000 + '"', '[' + ','.join(['"s"'] * 3000) + ']']
# Object keys past what the parser's key cache keeps (it holds short ASCII keys, up to a
# bound, found by a hash of their bytes): 400 keys of 1 to 33 bytes, the 24/25-byte edge
# included, first all in one object, then records repeating a share of them each.
keys = ['k%d' % i + 'x' * (i % 30) for i in range(400)]
docs += ['{' + ','.join('"%s":%d' % (k, i) for i, k in enumerate(keys)) + '}',
         '[' + ','.join('{' + ','.join('"%s":%d' % (k, j) for k in keys[i::37]) + '}'
                        for j, i in enumerate(list(range(37)) * 3)) + ']']
mismatches, fast = [], 0
for doc in docs:
    try:
        want = ("ok", json.loads(doc))
    except Exception as exc:
        want = ("err", type(exc).__name__)
    got = _codemcp.loads_fast(doc)
    if got is Ellipsis:
        continue
    fast += 1
    if want[0] != "ok" or json.dumps(got) != json.dumps(want[1]) or type(got) is not type(want[1]):
        mismatches.append([doc[:60], repr(got)[:60], repr(want)[:60]])
for bad in (None, 5, b"{}", ["{}"]):
    if _codemcp.loads_fast(bad) is not Ellipsis:
        mismatches.append(["non-str", repr(bad)])
# Keys the cache does not keep (long, non-ASCII, escaped) are still one str per parse, as
# json.loads makes them: records repeating them do not pay a str per occurrence.
rec = '{"a_key_longer_than_any_cached_one": 1, "cl\u00e9": 2, "esc\\"aped": 3}'
recs = _codemcp.loads_fast('[' + rec + ', ' + rec + ']')
shared = [a is b for a, b in zip(recs[0], recs[1])]
result = {"fast": fast, "total": len(docs), "mismatches": mismatches, "shared": shared}
`;

test('pyjson: loads_fast agrees with json.loads on a corpus and leaves the rest to it, in a sandboxed worker', { timeout: ms(90000) }, async () => {
  const env = await smokeEverything(LOADS);
  assert.deepEqual(env.result.mismatches, [], JSON.stringify(env.result.mismatches, null, 1));
  assert.ok(env.result.fast >= 20, `the C parse answered only ${env.result.fast} of ${env.result.total}`);
  assert.deepEqual(env.result.shared, [true, true, true], 'a key repeated in one parse is one str');
});

// The capture streams are reused from run to run (python/codemcp_rt/capture.py): one a
// program keeps (a variable, a weak reference, a bound method) must not be the next run's,
// so writing into it or closing it later cannot reach or break another run's output; and
// what a run did to the streams' state (close, cap, counters, class) does not carry over.
/** execute_python on connection h, returning the run's envelope. */
const envelopeOf = (h) => async (code) => {
  const r = await h.client.callTool({ name: 'execute_python', arguments: { code } },
    undefined, { timeout: ms(60000) });
  return r.structuredContent ?? JSON.parse(r.content[0].text);
};

test('capture reuse: a kept or tampered sys.stdout/stderr never reaches or breaks a later run', { timeout: ms(120000) }, async () => {
  const dir = tempDir();
  const h = await connectClient({ config: writeConfig(dir, { everything: servers.everything() }) });
  const run = envelopeOf(h);
  let e = await run('import sys, weakref\nkeep = sys.stdout\nkeep_err = weakref.ref(sys.stderr)\n' +
    'keep_w = sys.stdout.write\nprint("one")');
  assert.equal(e.stdout, 'one\n', JSON.stringify(e));
  e = await run('keep.write("LEAK1"); keep_w("LEAK2"); keep_err() and keep_err().write("LEAK3")\n' +
    'keep.close()\nprint("two")');
  assert.equal(e.stdout, 'two\n', JSON.stringify(e));
  assert.equal(e.stderr, undefined, JSON.stringify(e));
  // tamper with the run's own streams, keep no reference: the next runs start clean
  e = await run('import sys\nprint("three")\nsys.stdout.limit = 1\nsys.stdout._kept = 10**9\n' +
    'sys.stderr._cut = 5\nsys.stdout.close()\nsys.stderr.close()');
  assert.equal(e.stdout, 'three\n', JSON.stringify(e));
  for (let i = 0; i < 3; i++) {
    e = await run('import sys\nprint("four", sys.stdout.closed, sys.stdout.limit > 1)\n' +
      'print("err", file=sys.stderr)');
    assert.equal(e.stdout, 'four False True\n', `${i}: ${JSON.stringify(e)}`);
    assert.equal(e.stderr, 'err\n', `${i}: ${JSON.stringify(e)}`);
  }
  // a class swapped on the stream is not handed on either
  e = await run('import sys\nclass X(type(sys.stdout)):\n    def write(self, s):\n        return 0\n' +
    'sys.stdout.__class__ = X\nprint("five")');
  e = await run('print("six")');
  assert.equal(e.stdout, 'six\n', JSON.stringify(e));
  await h.close();
});

// The usual run request is carried out in C (src/worker/pyrun.c): every outcome it takes
// itself or hands to runner.py must read as the Python path's did — scalars of each type,
// final expressions, exit(), output through print and fd 1/2, stdin, a cut result, errors,
// calls, variables kept between runs — and the plain ones must really have gone through C.
test('pyrun: runs carried out in C give the envelopes the Python path gives', { timeout: ms(120000) }, async () => {
  const dir = tempDir();
  const h = await connectClient({ config: writeConfig(dir, { everything: servers.everything() }) });
  const run = envelopeOf(h);
  const stats = async () => run('import _codemcp\nresult = _codemcp.serve_stats()');
  await run('result = everything_get_sum(a=1, b=2)'); // the SDK is in
  const before = (await stats()).result;
  const cases = [
    ['result = 1', { result: 1 }],
    ['"caf\\u00e9 \\"q\\" \\\\ \\n\\t\\x01 \\U0001F600"', { result: 'caf\u00e9 "q" \\ \n\t\x01 \u{1F600}' }],
    ['x = 0.1\nx', { result: 0.1 }],
    ['result = -2**63', { result: -(2 ** 63) }],
    ['result = 2**62', { result: 2 ** 62 }],
    ['result = float("nan")', { result: null }],
    ['result = None', { result: null }],
    ['True', { result: true }],
    ['result = [1, {"a": "b"}]', { result: [1, { a: 'b' }] }],
    ['print("hi")\nresult = 3', { result: 3, stdout: 'hi\n' }],
    ['import os\nos.write(1, b"raw\\n")\nos.write(2, b"err\\n")\nresult = 4', { result: 4, stdout: 'raw\n', stderr: 'err\n' }],
    ['result = 5\nraise SystemExit(0)', { result: 5 }],
    ['result = 6\nexit()\nresult = 7', { result: 6 }],
    ['result = 8\nNone', { result: 8 }],
    ['y = 10', { result: null }],
    ['result = y + 1', { result: 11 }],
    ['result = everything_get_sum(a=2, b=3)', { result: 'The sum of 2 and 3 is 5.' }],
    ['p = everything_get_sum(a=4, b=5)\nresult = 1', { result: 1 }],
    ['r = "\u00e9"\nr', { result: '\u00e9' }],
    ['result = 1', { result: 1 }],
  ];
  for (const [code, want] of cases) {
    const e = await run(code);
    for (const [k, v] of Object.entries(want)) assert.deepEqual(e[k], v, `${code}: ${JSON.stringify(e)}`);
    for (const k of ['stdout', 'stderr', 'error']) if (!(k in want)) assert.equal(e[k], undefined, `${code}: ${JSON.stringify(e)}`);
  }
  let e = await run('exit(3)');
  assert.match(e.error, /SystemExit: 3/, JSON.stringify(e));
  e = await run('x = 1\n1/0');
  assert.match(e.error, /ZeroDivisionError/, JSON.stringify(e));
  assert.equal(e.error_kind, 'exception');
  e = await run('result = input()');
  assert.match(e.error, /EOFError/, JSON.stringify(e));
  e = await run('result = "x" * 2000000');
  assert.equal(typeof e.result, 'object', 'a result over max_result_bytes is cut');
  e = await run('import sys\nprint("e", file=sys.stderr)\nresult = everything_get_sum(a=1, b=1)');
  assert.equal(e.stderr, 'e\n');
  assert.equal(e.result, 'The sum of 1 and 1 is 2.');
  // Agent code cannot start a second request loop (it would read the gateway's frames itself).
  e = await run('import _codemcp\n_codemcp.serve({})');
  assert.match(e.error, /RuntimeError: serve\(\) runs once per worker/, JSON.stringify(e));
  assert.equal((await run('result = 12')).result, 12, 'the worker still answers');
  const after = (await stats()).result;
  // every case above but the non-ASCII program took the C path (the stats runs too)
  assert.ok(after.fast - before.fast >= cases.length + 5, JSON.stringify({ before, after }));
  await h.close();
});

// Between runs the worker waits for its next request without waking up: the wait is one
// blocking poll, not 20 ms slices (an idle worker woke 50 times a second, ~0.6 % of a CPU
// each, 200 idle sessions more than a whole CPU). Agent code reads its own main thread's
// voluntary context switches before and after 3 s of idleness; sliced waiting gives ~150.
test('idle: a worker between runs does not wake up', { timeout: ms(90000) }, async () => {
  const dir = tempDir();
  const h = await connectClient({ config: writeConfig(dir, { everything: servers.everything() }) });
  const run = envelopeOf(h);
  const SWITCHES = 'import re\nwith open("/proc/thread-self/status") as f:\n' +
    '    result = int(re.search(r"\\nvoluntary_ctxt_switches:\\s+(\\d+)", f.read()).group(1))';
  const before = (await run(SWITCHES)).result;
  assert.equal(typeof before, 'number');
  await new Promise((r) => setTimeout(r, 3000));
  const after = (await run(SWITCHES)).result;
  assert.ok(after - before < 30, `the idle worker woke ${after - before} times in 3 s`);
  await h.close();
});

// Inside a run, a program waiting for an upstream call's reply blocks in one poll as well:
// no 20 ms slices (50 wake-ups a second for every waiting worker). What must end the wait
// early wakes it itself: a cancel or the run's deadline (the thread that sends SIGUSR1
// writes the main thread's eventfd), any other signal (EINTR, or Python's wakeup fd, a
// pipe, if it lands just before the poll), the connection closing. Sliced waiting gives
// ~150 voluntary context switches of the main thread in these 3 s.
const SW = 'import re\ndef _sw():\n    with open("/proc/thread-self/status") as f:\n' +
  '        return int(re.search(r"\\nvoluntary_ctxt_switches:\\s+(\\d+)", f.read()).group(1))\n';

describe('waits inside a run', () => {
  let h, run, dir;
  before(async () => {
    dir = tempDir('codemcp-e2e-', { shared: true });
    h = await connectClient({ config: writeConfig(dir, { fake: servers.fake() }), shared: true });
    run = (code, extra = {}, opts = {}) => h.client.callTool(
      { name: 'execute_python', arguments: { code, ...extra } }, undefined,
      { timeout: ms(60000), ...opts });
  });
  after(async () => { await h?.close(); });

  test('a program waiting 3 s for an upstream reply does not wake up', { timeout: ms(90000) }, async () => {
    const r = await run(SW + 'b = _sw()\nfake_sleep(ms=3000).result()\nresult = _sw() - b');
    assert.equal(r.isError, false, JSON.stringify(r));
    const woke = r.structuredContent.result;
    assert.equal(typeof woke, 'number');
    assert.ok(woke < 30, `the waiting worker woke ${woke} times in 3 s`);
  });

  test('a cancel interrupts a program blocked in wait_reply; the worker keeps its state', { timeout: ms(120000) }, async () => {
    await run('kept = "alive"');
    // alone, the main thread reads the socket itself; with a second thread waiting too, the
    // main thread may sleep while the other one reads the cancel and must wake it
    const programs = ['fake_sleep(ms=30000).result()',
      'import threading\nth = threading.Thread(target=lambda: fake_sleep(ms=30000).result(), daemon=True)\n' +
      'th.start()\nfake_sleep(ms=30000).result()'];
    for (const code of programs) {
      const ac = new AbortController();
      const pending = run(code, {}, { signal: ac.signal });
      await sleep(ms(1000));
      const t0 = Date.now();
      ac.abort('test cancels');
      await assert.rejects(pending);
      const ok = await run('result = kept');
      assert.ok(Date.now() - t0 < ms(10000), `${code}: the cancelled run kept the worker busy`);
      if (code.includes('threading')) {
        // The second thread waits on a call the cancel also ended: it either sees that answer
        // and ends within the gateway's grace (the worker keeps its state), or is still there
        // when the next run comes (sandbox: the gateway ends the worker and says so; host
        // isolation has no such check). Which one depends on timing; both keep one run's code
        // out of another (tests/e2e/tenants.test.mjs holds the leftover check itself).
        const notice = ok.structuredContent.notice ?? '';
        if (notice && process.env.CODEMCP_ISOLATION !== 'host') {
          assert.match(notice, /previous run left 1 thread\(s\) running/, JSON.stringify(ok));
          await run('kept = "alive"');
        } else {
          assert.equal(ok.structuredContent.result, 'alive', JSON.stringify(ok));
        }
        continue;
      }
      assert.equal(ok.structuredContent.result, 'alive', `${code}: the worker was restarted, not interrupted`);
    }
  });

  test('the run deadline interrupts a program blocked in wait_reply', { timeout: ms(90000) }, async () => {
    await run('kept2 = "alive"');
    const t0 = Date.now();
    const r = await run('fake_sleep(ms=30000).result()', { timeout_ms: 800 });
    assert.equal(r.isError, true);
    assert.match(r.structuredContent.error, /timed out/);
    assert.doesNotMatch(r.structuredContent.error, /restarted/);
    assert.ok(Date.now() - t0 < ms(10000), `took ${Date.now() - t0} ms`);
    const ok = await run('result = kept2');
    assert.equal(ok.structuredContent.result, 'alive');
  });

  test("agent code's own signal handler runs while it waits for a reply", { timeout: ms(90000) }, async () => {
    // SIGALRM is process-directed and not sent by codemcp: EINTR or the wakeup pipe ends the
    // wait. (The run itself then still waits for the abandoned call's reply.)
    const r = await run('import signal, time\nclass Alarm(Exception): pass\n' +
      'def _h(s, f):\n    raise Alarm()\nsignal.signal(signal.SIGALRM, _h)\nt = time.monotonic()\n' +
      'signal.alarm(1)\ntry:\n    fake_sleep(ms=4000).result()\n    r = "not interrupted"\n' +
      'except Alarm:\n    r = "alarm"\nsignal.signal(signal.SIGALRM, signal.SIG_DFL)\n' +
      'result = [r, time.monotonic() - t]');
    const [what, took] = r.structuredContent?.result ?? [];
    assert.equal(what, 'alarm', JSON.stringify(r));
    assert.ok(took < 3.5 * (ms(1000) / 1000), `the handler ran ${took} s after the wait began`);
  });

  // Calls made in a quick burst leave the worker in one send (src/worker/wsout.c, the cork),
  // at the latest WSO_CORK_US (0.5 ms) after the burst began even when the program then
  // computes without waiting: the cork timer flushes them. Two calls, the second one a 400 ms
  // sleep, then 800 ms of busy computing: the sleep must overlap the computing (took ~0.8 s),
  // not start only when the program waits (~1.2 s). Also with the cork timer's descriptor
  // closed by agent code: the wait still flushes, nothing hangs.
  const BURST = 'import time\nt = time.monotonic()\np1 = fake_echo(text="a")\np2 = fake_sleep(ms=400)\n' +
    'while time.monotonic() - t < 0.8:\n    pass\np2.result()\np1.result()\nresult = time.monotonic() - t';
  test('a burst of calls is sent while the program computes, not when it waits', { timeout: ms(90000) }, async () => {
    for (let i = 0; i < 3; i++) {
      const r = await run(BURST);
      const took = r.structuredContent?.result;
      assert.equal(typeof took, 'number', JSON.stringify(r));
      assert.ok(took < 1.05, `the corked call went out late: the run took ${took} s`);
    }
    // The cork's timer is the worker's last timerfd (the watcher's own is made before it).
    const r = await run('import os\ntf = []\nfor fd in range(3, 256):\n    try:\n' +
      '        if os.readlink("/proc/self/fd/%d" % fd) == "anon_inode:[timerfd]":\n' +
      '            tf.append(fd)\n    except OSError:\n        pass\nos.close(tf[-1])\n' +
      'ps = [fake_echo(text=str(i)) for i in range(20)]\n' +
      'result = [len(tf), [p.result() for p in ps][-1]]', {}, { timeout: ms(30000) });
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.equal(r.structuredContent.result[0], 2, JSON.stringify(r.structuredContent));
    assert.match(JSON.stringify(r.structuredContent.result[1]), /19/);
    const after = await run(BURST);
    assert.equal(typeof after.structuredContent?.result, 'number', JSON.stringify(after));
  });
});

// argguard's check on the SDK path: arguments whose types certainly fit their schema (here
// numbers for get-sum's numbers) are let through by issue()'s C test without a Python check()
// per call; any other value still goes to check(), which refuses it with its message and
// nothing is sent (the gateway's count of routed calls does not move).
const GUARD = String.raw`
from codemcp_rt import argguard
out = {"first": str(everything_get_sum(a=1, b=1))}  # the first call fills the tool cache
real_check = argguard.check
guard_calls = []
def counting_check(server, tool, args):
    guard_calls.append(tool)
    return real_check(server, tool, args)
argguard.check = counting_check
try:
    out["fast"] = [str(everything_get_sum(a=7, b=1)), str(everything_get_sum(a=7.5, b=1)), len(guard_calls)]
    try:
        everything_get_sum(a="".join(["sev", "en"]), b=1)
        out["refused"] = "sent"
    except argguard.InvalidArguments as e:
        out["refused"] = [type(e).__name__, str(e)[:40], len(guard_calls)]
    try:
        everything_get_sum(a=[None][0], b=1)  # required: None does not fit, and no type is certain
        out["refused_none"] = "sent"
    except argguard.InvalidArguments as e:
        out["refused_none"] = [type(e).__name__, len(guard_calls)]
finally:
    argguard.check = real_check
result = out
`;

test('argguard: certain argument types skip the per-call check, the rest is still refused before sending', { timeout: ms(90000) }, async () => {
  const o = (await smokeEverything(GUARD)).result;
  assert.equal(o.first, 'The sum of 1 and 1 is 2.');
  assert.deepEqual(o.fast, ['The sum of 7 and 1 is 8.', 'The sum of 7.5 and 1 is 8.5.', 0]);
  assert.deepEqual(o.refused, ['InvalidArguments', 'everything_get_sum(...) was not sent: `a', 1]);
  assert.deepEqual(o.refused_none, ['InvalidArguments', 2]);
});
