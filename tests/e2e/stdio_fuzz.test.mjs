// stdio_fuzz — a seeded, structure-aware mutation campaign against the stdio MCP front of the
// real binary (no upstreams). The rule under test: bad input always gets a clear error and
// loses nothing; the gateway never dies of it.
//
// Each seed drives one gateway through ROUNDS batches. A batch is a few dozen lines built from
// JSON-RPC messages of both protocol eras (2025 initialize-first; 2026-07-28 `_meta` envelope),
// mutated field by field (wrong types for id/method/params/jsonrpc, every execute_python
// argument, the 2026 envelope) and line by line (batches, truncation, raw invalid UTF-8 and NUL
// bytes, whitespace and CR/LF variants, long lines, deep nesting, out-of-range numbers),
// interleaved with valid requests, duplicate ids in flight and cancellations of unknown and
// running requests. An oracle written from JSON-RPC 2.0 (and the gateway's documented error
// classes) says for every line how many responses it must get and under which id; after the
// batch the test waits for them and checks: none lost, none duplicated, no response nobody
// asked for, every error with a code and a readable message, stdout only JSON, the process
// alive; then a valid ping and an execute_python `result = 1` of each era still work.
// At the end stdin closes and the gateway must exit 0 with no sanitizer report.
//
// Deterministic: SEEDS is fixed. To explore, CODEMCP_STDIO_FUZZ_SEEDS=1-200 (a range or a
// comma list) and CODEMCP_STDIO_FUZZ_ROUNDS=N; a failure names its seed, batch and lines;
// CODEMCP_STDIO_FUZZ_DUMP=DIR keeps every batch's lines there (DIR/s<seed>b<batch>.jsonl).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { RawClient, ms, sleep, tempDir, withTimeout } from './lib.mjs';

const SEEDS = parseSeeds(process.env.CODEMCP_STDIO_FUZZ_SEEDS) || [11, 12, 13, 14, 15, 16];
const ROUNDS = Number(process.env.CODEMCP_STDIO_FUZZ_ROUNDS) || 4;
const LINES_PER_BATCH = 40;

function parseSeeds(s) {
  if (!s) return null;
  const out = [];
  for (const part of s.split(',')) {
    const m = part.match(/^(\d+)-(\d+)$/);
    if (m) for (let i = Number(m[1]); i <= Number(m[2]); i++) out.push(i);
    else if (part.trim()) out.push(Number(part));
  }
  return out;
}

// ---- a seeded PRNG (mulberry32) -----------------------------------------------------------

function prng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const r = {
    next,
    int: (n) => Math.floor(next() * n),
    chance: (p) => next() < p,
    pick: (xs) => xs[Math.floor(next() * xs.length)],
  };
  return r;
}

// ---- JSON text with values JSON.stringify cannot write --------------------------------------
// A Raw is written as its text. `kind` is what the gateway's parser makes of it: 'int' (key:
// the integer's canonical digits), 'real', 'bad' (the line does not parse), or 'held' (valid
// JSON the gateway refuses for what it holds: a string with U+0000, an integer past 64 bits).

class Raw {
  constructor(text, kind, key) {
    this.text = text;
    this.kind = kind;
    this.key = key;
  }
}

function ser(v) {
  if (v instanceof Raw) return v.text;
  if (Array.isArray(v)) return '[' + v.map(ser).join(',') + ']';
  if (v && typeof v === 'object') {
    return '{' + Object.entries(v).filter(([, x]) => x !== undefined).map(([k, x]) => JSON.stringify(k) + ':' + ser(x)).join(',') + '}';
  }
  return JSON.stringify(v);
}

/** 1 when the value (a model, before serialization) holds a Raw of that kind. */
function hasKind(v, kind) {
  if (v instanceof Raw) return v.kind === kind;
  if (Array.isArray(v)) return v.some((x) => hasKind(x, kind));
  if (v && typeof v === 'object') return Object.values(v).some((x) => hasKind(x, kind));
  return false;
}

/** What a line of model m is answered with, when it holds values that are not plain JSON: one
 *  error with id null when it does not parse, or when it holds a refused value and is not a
 *  request with a plain id and method; else -32600 with its id. */
function classifyRaw(m) {
  if (hasKind(m, 'bad')) return { nullErr: true };
  if (!hasKind(m, 'held')) return classify(m);
  const plainId = isStr(m?.id) || (isInt(m?.id) && !hasKind(m.id, 'held'));
  if (isObj(m) && isStr(m.method) && plainId) return { key: idKey(m.id), code: -32600 };
  return { nullErr: true };
}

// ---- the oracle: JSON-RPC 2.0 classification, as the gateway must apply it ------------------

const isStr = (v) => typeof v === 'string';
const isInt = (v) => (typeof v === 'number' && Number.isSafeInteger(v)) || (v instanceof Raw && v.kind === 'int');
const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Raw);

/** The response key of a valid id ('"text"' or the integer's digits). */
function idKey(id) {
  if (isStr(id)) return JSON.stringify(id);
  if (id instanceof Raw) return id.key;
  return String(id);
}

/** What a message model must be answered with: {key} (one response with that id), {nullErr}
 *  (one error with id null), or {} (nothing). */
function classify(m) {
  if (!isObj(m)) return { nullErr: true };
  const id = m.id;
  const validId = id !== undefined && (isStr(id) || isInt(id));
  const invalid = () => (validId ? { key: idKey(id), error: true } : { nullErr: true });
  if (m.jsonrpc !== '2.0') return invalid();
  if (id !== undefined && id !== null && !validId) return { nullErr: true };
  if ('method' in m) {
    if (!isStr(m.method)) return invalid();
    if ('params' in m && !isObj(m.params) && !Array.isArray(m.params)) return invalid();
    if (id === undefined || id === null) return {};
    // The 2026 envelope (_meta names a protocol version) with a version other than
    // 2026-07-28: refused, -32022 (a string) or -32602 (not a string), never served.
    const meta = isObj(m.params) && isObj(m.params._meta) ? m.params._meta : null;
    const v = meta && meta[PV];
    if (meta && PV in meta && v !== '2026-07-28') return { key: idKey(id), code: isStr(v) ? -32022 : -32602 };
    return { key: idKey(id) };
  }
  if (id !== undefined && ('result' in m || 'error' in m)) return {}; // a response: ignored
  return invalid();
}

// ---- message generators ---------------------------------------------------------------------

const PV = 'io.modelcontextprotocol/protocolVersion';
const META = (name) => ({
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name, version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
});

const NASTY_STRINGS = [
  '',
  ' ',
  'é',
  '日本語',
  '\u{1F600}',
  'a\tb\nc',
  '"quoted"',
  '\\',
  '\u2028\u2029',
  'x'.repeat(300),
];

/** A string of n characters, many multi-byte: cut anywhere by bytes, it is no longer UTF-8. */
function multibyte(rnd, n) {
  const alphabet = ['é', '日', '\u{1F600}', 'a', 'ß', '\u0800'];
  let s = rnd.chance(0.5) ? 'a'.repeat(rnd.int(4)) : '';
  for (let i = 0; i < n; i++) s += rnd.pick(alphabet);
  return s;
}

function weirdValue(rnd, depth = 0) {
  switch (rnd.int(depth > 2 ? 9 : 12)) {
    case 0: return null;
    case 1: return rnd.chance(0.5);
    case 2: return rnd.int(1000) - 500;
    case 3: return rnd.next() * 1e6;
    case 4: return rnd.pick(NASTY_STRINGS);
    case 5: return new Raw('-0', 'int', '0');
    case 6: return new Raw('1e308', 'real');
    case 7: return new Raw('9223372036854775807', 'int', '9223372036854775807');
    case 8: return multibyte(rnd, 1 + rnd.int(40));
    case 9: return [weirdValue(rnd, depth + 1), weirdValue(rnd, depth + 1)];
    case 10: return { k: weirdValue(rnd, depth + 1) };
    default: return {};
  }
}

/** Ids the gateway must accept and echo (counted per key), and ones it must refuse. */
function validWeirdId(rnd, fresh) {
  switch (rnd.int(10)) {
    case 0: return 0;
    case 1: return -1 - rnd.int(1000);
    case 2: return new Raw('9223372036854775807', 'int', '9223372036854775807');
    case 3: return new Raw('-9223372036854775808', 'int', '-9223372036854775808');
    case 4: return new Raw('-0', 'int', '0');
    case 5: return '';
    case 6: return fresh + rnd.pick(NASTY_STRINGS);
    case 7: return multibyte(rnd, 1 + rnd.int(20));
    case 8: return Number.MAX_SAFE_INTEGER;
    default: return fresh;
  }
}

function invalidId(rnd) {
  return rnd.pick([
    {},
    { a: 1 },
    [],
    [1],
    true,
    false,
    1.5,
    new Raw('1.0', 'real'),
    new Raw('1e400', 'bad'), // overflows: the line does not parse
    new Raw('9223372036854775808', 'held'), // beyond int64: refused, with the request's id
    new Raw('-9223372036854775809', 'held'),
    new Raw('"a\\u0000b"', 'held'), // NUL in a string: refused, with the request's id
    new Raw('"\\ud800"', 'bad'), // a lone surrogate
  ]);
}

/** A valid request of one era (modern: the 2026 envelope, no initialize needed). */
function validRequest(rnd, id, modern, tag) {
  const meta = modern ? { _meta: META(`fuzz-${tag}`) } : {};
  const methods = modern
    ? ['server/discover', 'tools/list', 'tools/call']
    : ['ping', 'tools/list', 'initialize', 'logging/setLevel', 'tools/call', 'server/discover'];
  const method = rnd.pick(methods);
  const params = { ...meta };
  if (method === 'initialize') {
    Object.assign(params, {
      protocolVersion: rnd.pick(['2025-06-18', '2025-11-25', '2024-11-05', '1999-01-01']),
      capabilities: {},
      clientInfo: { name: `fuzz-${tag}`, version: '0' },
    });
  } else if (method === 'logging/setLevel') {
    params.level = rnd.pick(['debug', 'error', 'emergency']);
  } else if (method === 'tools/call') {
    params.name = 'execute_python';
    params.arguments = { code: 'result = 1' };
  }
  const m = { jsonrpc: '2.0', id, method };
  if (Object.keys(params).length || rnd.chance(0.5)) m.params = params;
  return m;
}

/** Field-level mutations of a request model (in place). */
function mutateFields(rnd, m) {
  const n = 1 + rnd.int(2);
  for (let i = 0; i < n; i++) {
    switch (rnd.int(9)) {
      case 0: // id of a wrong type
        m.id = invalidId(rnd);
        break;
      case 1: // method not a string, or unknown
        m.method = rnd.pick([42, null, {}, ['ping'], true, 'no/such/method', multibyte(rnd, 30), 'notifications/initialized', 'notifications/cancelled', 'x'.repeat(5000), 'resources/list']);
        break;
      case 2: // params of a wrong type
        m.params = rnd.pick([[], [1, 2], 'params', 7, null, true, { protocolVersion: 5 }, { level: {} }, { name: 7 }]);
        break;
      case 3: // jsonrpc wrong
        if (rnd.chance(0.5)) delete m.jsonrpc;
        else m.jsonrpc = rnd.pick(['1.0', 2.0, null, '2.0 ', '']);
        break;
      case 4: // extra members of any kind
        m[rnd.pick(['extra', 'result', 'error', '_meta', 'ID'])] = weirdValue(rnd);
        break;
      case 5: // a tools/call with a weird tool name
        m.method = 'tools/call';
        m.params = { ...(isObj(m.params) ? m.params : {}), name: rnd.pick([multibyte(rnd, 100 + rnd.int(400)), '', 'execute_python ', 'EXECUTE_PYTHON', 'x'.repeat(2000), 5, null, ['execute_python']]), arguments: {} };
        break;
      case 6: // execute_python with weird arguments
        m.method = 'tools/call';
        m.params = { ...(isObj(m.params) ? m.params : {}), name: 'execute_python', arguments: weirdArguments(rnd) };
        break;
      case 7: // a broken 2026 envelope
        m.params = { ...(isObj(m.params) ? m.params : {}), _meta: weirdMeta(rnd) };
        break;
      default: // remove a member
        delete m[rnd.pick(['id', 'method', 'params', 'jsonrpc'])];
    }
  }
  return m;
}

function weirdArguments(rnd) {
  switch (rnd.int(13)) {
    case 0: return rnd.pick([null, [], 'code', 5, [{ code: '1' }]]);
    case 1: return { code: weirdValue(rnd) === null ? null : rnd.pick([5, null, true, ['result = 1'], { c: 1 }, 1.5]) };
    case 2: return {};
    case 3: return { code: 'result = 1', [multibyte(rnd, 100 + rnd.int(300))]: 1 };
    case 4: return { code: 'result = 1', timeout_ms: rnd.pick([0, -1, 'soon', null, [], 0.5, new Raw('1e308', 'real'), new Raw('-0', 'int', '0')]) };
    case 5: return { code: 'result = 1', dry_run: rnd.pick(['yes', 1, null, {}]) };
    case 6: return { code: 'result = 1', reset: rnd.pick(['no', 0, []]) };
    case 7: return { code: 'result = 1', namespace: rnd.pick([5, {}, [], true, 'ns_nope', multibyte(rnd, 200 + rnd.int(200)), ''.padEnd(300, 'n')]) };
    case 8: return { code: 'result = 1', allow_mutations: rnd.pick(['x', [1], [null], {}, [multibyte(rnd, 50)]]) };
    case 9: return { code: new Raw('"result = 1\\u0000"', 'held') };
    case 10: return { code: multibyte(rnd, 2000) }; // a syntax error, answered as a tool error
    case 11: return { code: '#' + 'x'.repeat(100000 + rnd.int(200000)) + '\nresult = 1' };
    default: return { code: 'result = 1', requestState: rnd.pick(['bogus', 5, multibyte(rnd, 80), '']) };
  }
}

function weirdMeta(rnd) {
  const base = META('fuzz-meta');
  switch (rnd.int(7)) {
    case 0: return { ...base, 'io.modelcontextprotocol/protocolVersion': rnd.pick([5, null, {}, '2099-01-01', '', '2025-06-18']) };
    case 1: return { ...base, 'io.modelcontextprotocol/protocolVersion': multibyte(rnd, 20 + rnd.int(60)) };
    case 2: {
      const b = { ...base };
      delete b['io.modelcontextprotocol/clientCapabilities'];
      return b;
    }
    case 3: return { ...base, 'io.modelcontextprotocol/clientCapabilities': rnd.pick([[], 'all', 1, null]) };
    case 4: return { ...base, 'io.modelcontextprotocol/clientInfo': rnd.pick([[], 'me', { name: 5 }, {}]) };
    case 5: return { ...base, 'io.modelcontextprotocol/logLevel': rnd.pick(['debug', 5, 'loud', null]) };
    default: return rnd.pick([[], 'meta', 7, null]);
  }
}

/** n levels of alternating objects and arrays around 1, as text (too deep to build and write
 * recursively). */
function deep(n) {
  const open = [], close = [];
  for (let i = 0; i < n; i++) {
    open.push(i % 2 ? '[' : '{"d":');
    close.push(i % 2 ? ']' : '}');
  }
  return new Raw(open.join('') + '1' + close.reverse().join(''), 'deep');
}

const INVALID_UTF8 = [
  Buffer.from([0xff]),
  Buffer.from([0xc0, 0x80]), // overlong NUL
  Buffer.from([0xed, 0xa0, 0x80]), // a surrogate
  Buffer.from([0xe2, 0x82]), // cut short
  Buffer.from([0xf5, 0x80, 0x80, 0x80]), // beyond U+10FFFF
  Buffer.from([0x80]),
  Buffer.from([0x00]), // a raw NUL byte
];

/**
 * One batch's lines: [{bytes, expect}] where expect is {key, atMostOne?} | {nullErr} | {}.
 * `pending` collects the keys of runs that may still be cancelled.
 */
function buildBatch(rnd, tag, state) {
  const items = [];
  let seq = 0;
  const fresh = () => `${tag}-${seq++}`;
  const push = (bytes, expect) => items.push({ bytes: Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes), expect });
  const modernBias = state.modernBias;
  for (let i = 0; i < LINES_PER_BATCH; i++) {
    const modern = rnd.chance(modernBias);
    const roll = rnd.int(100);
    if (roll < 20) {
      // a valid request, sometimes with an id the gateway must echo exactly
      const id = rnd.chance(0.3) ? validWeirdId(rnd, fresh()) : fresh();
      const m = validRequest(rnd, id, modern, tag);
      push(ser(m), classify(m));
    } else if (roll < 55) {
      // a mutated request
      const m = mutateFields(rnd, validRequest(rnd, rnd.chance(0.2) ? validWeirdId(rnd, fresh()) : fresh(), modern, tag));
      push(ser(m), classifyRaw(m));
    } else if (roll < 62) {
      // a line-level mutation of a valid message
      const m = validRequest(rnd, fresh(), modern, tag);
      const text = Buffer.from(ser(m));
      switch (rnd.int(6)) {
        case 0: { // truncated: never JSON
          const cut = 1 + rnd.int(text.length - 1);
          push(text.subarray(0, cut), { nullErr: true });
          break;
        }
        case 1: { // invalid UTF-8 or NUL outside strings (between tokens)
          const p = text.indexOf(',') + 1; // after "jsonrpc":"2.0",
          push(Buffer.concat([text.subarray(0, p), rnd.pick(INVALID_UTF8), text.subarray(p)]), { nullErr: true });
          break;
        }
        case 2: // invalid UTF-8 inside a string value
          push(Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(fresh())},"method":"ping","params":{"x":"`), rnd.pick(INVALID_UTF8), Buffer.from('"}}')]), { nullErr: true });
          break;
        case 3: // trailing garbage
          push(Buffer.concat([text, Buffer.from(rnd.pick(['x', '}', ' {}', ',', '\u0000', ' 1']))]), { nullErr: true });
          break;
        case 4: // JSON whitespace (space, tab, CR, LF is the frame) around and between tokens: still valid
          push(' \t' + ser(m).replace(/,/g, rnd.pick([', ', ',\t', ',\r', ' ,'])) + ' \r', classify(m));
          break;
        default: // raw invalid UTF-8 in the method name
          push(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"pi'), rnd.pick(INVALID_UTF8), Buffer.from('ng"}')]), { nullErr: true });
      }
    } else if (roll < 67) {
      // batches: arrays are refused as one error with id null
      const m = validRequest(rnd, fresh(), modern, tag);
      push(ser(rnd.pick([[], [m], [m, m], [[m]], [[]], [1, 'x', null]])), { nullErr: true });
    } else if (roll < 71) {
      // lines of whitespace (one error each), and empty lines and bare CRLFs (nothing)
      const w = rnd.pick([' ', '\t', '  \t ', '\r\r', ' \r']);
      push(w, { nullErr: true });
      const blank = rnd.pick(['', '\r']);
      push(blank, {});
      if (blank) items.at(-1).lf = true; // a CR before CRLF would leave a line holding a CR
    } else if (roll < 75) {
      // scalars at the top
      push(rnd.pick(['42', '"ping"', 'null', 'true', '-0', '1e400', '9223372036854775808', '{}', '{"jsonrpc":"2.0"}']),
        { nullErr: true });
    } else if (roll < 79) {
      // notifications, known and not, with odd params: never answered
      const params = rnd.pick([undefined, {}, [], { requestId: rnd.pick([{}, [], true, 1.5, `${tag}-nobody`]) }, { reason: 5 }]);
      const m = { jsonrpc: '2.0', method: rnd.pick(['notifications/initialized', 'notifications/cancelled', 'notifications/progress', 'foo', '']) };
      if (params !== undefined) m.params = params;
      if (rnd.chance(0.2)) m.id = null;
      push(ser(m), classify(m));
    } else if (roll < 84) {
      // a run and its cancellation (at most one response for it, never two), or a
      // cancellation of an id nobody sent
      const id = fresh();
      if (rnd.chance(0.7)) {
        const m = {
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { ...(modern ? { _meta: META(`fuzz-${tag}`) } : {}), name: 'execute_python', arguments: { code: rnd.pick(['result = 1', 'import time\ntime.sleep(0.3)\nresult = 2']) } },
        };
        push(ser(m), { key: idKey(id), atMostOne: true });
        state.cancellable.push(id);
      }
      // (Unknown targets never equal an id of the batch: a cancelled request is not answered.)
      const target = rnd.chance(0.6) && state.cancellable.length ? state.cancellable.shift() : rnd.pick([`${id}-unknown`, {}, [], true, 1.5, null, `${id}-${multibyte(rnd, 5)}`]);
      push(ser({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: target, reason: rnd.pick(['fuzz', 5, multibyte(rnd, 10)]) } }), {});
    } else if (roll < 88) {
      // a duplicate of an id already in this batch (valid requests both: two responses)
      const prev = items.filter((it) => it.expect.key && !it.expect.atMostOne && !it.expect.error);
      if (prev.length) {
        const key = rnd.pick(prev).expect.key;
        if (key.startsWith('"')) { // string ids only (an integer's key may be a Raw's digits)
          const m = validRequest(rnd, JSON.parse(key), modern, tag);
          push(ser(m), classify(m));
        }
      }
    } else if (roll < 92) {
      // deep nesting: within the parser's depth limit it is a valid request, past it a parse error
      const over = rnd.chance(0.5);
      const m = { jsonrpc: '2.0', id: fresh(), method: 'ping', params: { _deep: deep(over ? 2100 + rnd.int(500) : 50 + rnd.int(1500)) } };
      push(ser(m), over ? { nullErr: true } : classify(m));
    } else if (roll < 95) {
      // a long line (up to a few MiB) that is a valid request
      const pad = 'p'.repeat(rnd.pick([70000, 1 << 20, 3 << 20]));
      const m = { jsonrpc: '2.0', id: fresh(), method: rnd.pick(['ping', 'tools/list', 'no/such']), params: { pad } };
      push(ser(m), classify(m));
    } else if (roll < 97) {
      // huge code, or code with raw multi-byte text cut short (invalid UTF-8 in a string)
      const m = { jsonrpc: '2.0', id: fresh(), method: 'tools/call', params: { name: 'execute_python', arguments: { code: 'result = 1 #' + 'é'.repeat(20000 + rnd.int(50000)) } } };
      if (rnd.chance(0.5)) {
        push(ser(m), classify(m));
      } else {
        const b = Buffer.from(ser(m));
        const at = b.indexOf('é') + 1; // the middle of a two-byte sequence
        push(Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]), { nullErr: true });
      }
    } else {
      // a response sent to the gateway (it sends no requests): ignored
      push(ser({ jsonrpc: '2.0', id: fresh(), result: rnd.pick([{}, null, 5]) }), {});
    }
  }
  return items;
}

// ---- the driver -------------------------------------------------------------------------------

/** The key under which a parsed response line counts (big integers read from the text). */
function responseKey(msg, line) {
  const id = msg.id;
  if (id === null) return 'null';
  if (typeof id === 'string') return JSON.stringify(id);
  if (typeof id === 'number' && Number.isSafeInteger(id)) return String(id === 0 ? 0 : id);
  const m = line.match(/"id":(-?\d+)/);
  return m ? m[1] : `?${JSON.stringify(id)}`;
}

function assertClearError(msg, what) {
  assert.ok(Number.isInteger(msg.error.code), `${what}: error without an integer code: ${JSON.stringify(msg).slice(0, 400)}`);
  assert.equal(typeof msg.error.message, 'string', `${what}: error without a message`);
  assert.ok(msg.error.message.length >= 8, `${what}: error message too short to be clear: ${JSON.stringify(msg.error)}`);
  assert.ok(!('result' in msg), `${what}: an error response with a result`);
}

/** Writes the batch's bytes in randomly sized chunks (sometimes all at once, sometimes a few
 * bytes at a time), each line ended by LF or CRLF. */
async function writeBatch(rnd, c, items) {
  const parts = [];
  for (const it of items) parts.push(it.bytes, Buffer.from(rnd.chance(0.2) && !it.lf ? '\r\n' : '\n'));
  const all = Buffer.concat(parts);
  const mode = rnd.int(3);
  if (mode === 0) {
    c.child.stdin.write(all);
    return;
  }
  let off = 0;
  while (off < all.length) {
    const n = mode === 1 ? 1 + rnd.int(64) : 1 + rnd.int(64 * 1024);
    const ok = c.child.stdin.write(all.subarray(off, off + n));
    off += n;
    if (!ok) await new Promise((resolve) => c.child.stdin.once('drain', resolve));
    else if (rnd.chance(0.05)) await sleep(1);
  }
}

function describeItems(items) {
  return items
    .map((it, i) => `  #${i} ${JSON.stringify(it.expect)} ${JSON.stringify(it.bytes.toString('latin1').slice(0, 200))}`)
    .join('\n');
}

async function checkStillWorks(c, tag) {
  const p = await c.request('ping', undefined, { id: `${tag}-final-ping`, limit: ms(20000) });
  assert.deepEqual(p.result, {}, `${tag}: ping after the batch: ${JSON.stringify(p)}`);
  for (const modern of [false, true]) {
    const params = { name: 'execute_python', arguments: { code: 'result = 1' } };
    if (modern) params._meta = META(`fuzz-${tag}`);
    const r = await c.request('tools/call', params, { id: `${tag}-final-run-${modern ? 2026 : 2025}`, limit: ms(60000) });
    assert.ok(r.result, `${tag}: execute_python after the batch failed: ${JSON.stringify(r).slice(0, 500)}`);
    assert.ok(!r.result.isError, `${tag}: execute_python after the batch is an error: ${JSON.stringify(r.result).slice(0, 500)}`);
    assert.equal(r.result.structuredContent?.result, 1, `${tag}: ${JSON.stringify(r.result).slice(0, 500)}`);
  }
}

async function runSeed(seed) {
  const rnd = prng(seed);
  const c = new RawClient({ home: tempDir('codemcp-fuzz-'), env: { CODEMCP_LOG: 'warn' } });
  // Raw lines of stdout as they came, to count responses per id (one per line).
  const counts = new Map();
  let scanned = 0;
  const scan = () => {
    let i;
    while ((i = c.stdout.indexOf('\n', scanned)) >= 0) {
      const line = c.stdout.slice(scanned, i).replace(/\r$/, '');
      scanned = i + 1;
      if (!line.trim()) continue;
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        continue; // RawClient records it in nonJson, asserted empty below
      }
      if (!msg || typeof msg !== 'object' || 'method' in msg || !('id' in msg)) continue;
      const key = responseKey(msg, line);
      const e = counts.get(key) || { n: 0, msgs: [] };
      e.n++;
      e.msgs.push(msg);
      counts.set(key, e);
    }
  };
  const state = { modernBias: [0.1, 0.5, 0.9][seed % 3], cancellable: [] };
  // Half the seeds start with requests before any initialize (both eras allow that).
  if (rnd.chance(0.5)) await c.initialize(rnd.pick(['2025-06-18', '2025-11-25']), ms(20000));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const tag = `s${seed}b${round}`;
      const items = buildBatch(rnd, tag, state);
      state.cancellable = [];
      scan();
      counts.clear();
      if (process.env.CODEMCP_STDIO_FUZZ_DUMP) { // exploring: keep each batch's lines
        fs.writeFileSync(path.join(process.env.CODEMCP_STDIO_FUZZ_DUMP, `${tag}.jsonl`), Buffer.concat(items.flatMap((it) => [it.bytes, Buffer.from('\n')])));
      }
      await writeBatch(rnd, c, items);
      const want = new Map(); // key -> {n, atMost}
      let nullWant = 0;
      for (const it of items) {
        if (it.expect.nullErr) nullWant++;
        else if (it.expect.key !== undefined) {
          const w = want.get(it.expect.key) || { n: 0, maybe: 0, codes: [] };
          if (it.expect.atMostOne) w.maybe++;
          else w.n++;
          w.codes.push(it.expect.code);
          want.set(it.expect.key, w);
        }
      }
      const done = () => {
        scan();
        for (const [k, w] of want) if ((counts.get(k)?.n || 0) < w.n) return false;
        return (counts.get('null')?.n || 0) >= nullWant;
      };
      const where = () => `seed ${seed}, batch ${round}; lines:\n${describeItems(items)}\nstderr:\n${c.stderrTail(2000)}`;
      const end = Date.now() + ms(20000);
      while (!done() && !c.exit && Date.now() < end) await sleep(20);
      assert.ok(!c.exit, `codemcp died (${JSON.stringify(c.exit)}) at ${where()}`);
      // Runs still allowed to answer (cancelled ones may or may not) and anything late.
      await sleep(ms(400));
      scan();
      for (const [k, w] of want) {
        const got = counts.get(k)?.n || 0;
        assert.ok(got >= w.n && got <= w.n + w.maybe,
          `id ${k}: ${got} responses, expected ${w.n}${w.maybe ? `..${w.n + w.maybe}` : ''} (${JSON.stringify(counts.get(k)?.msgs || []).slice(0, 600)}) at ${where()}`);
      }
      for (const [k, w] of want) { // an error code the oracle knows, where one line has the id
        if (w.codes.length !== 1 || w.codes[0] === undefined) continue;
        const m = counts.get(k).msgs[0];
        assert.equal(m.error?.code, w.codes[0], `id ${k}: expected error ${w.codes[0]}, got ${JSON.stringify(m).slice(0, 600)} at ${where()}`);
      }
      const nullGot = counts.get('null')?.n || 0;
      assert.equal(nullGot, nullWant, `id null: ${nullGot} error responses, expected ${nullWant} at ${where()}`);
      for (const [k, e] of counts) {
        assert.ok(k === 'null' || want.has(k), `a response to id ${k} that no line of the batch asked for: ${JSON.stringify(e.msgs).slice(0, 400)} at ${where()}`);
        for (const m of e.msgs) {
          if (m.error) assertClearError(m, `id ${k} (seed ${seed}, batch ${round})`);
          else assert.ok('result' in m, `id ${k}: neither result nor error: ${JSON.stringify(m).slice(0, 300)}`);
        }
      }
      for (const m of counts.get('null')?.msgs || []) {
        assert.ok(m.error, `a result with id null: ${JSON.stringify(m).slice(0, 300)}`);
        if (m.error.code === -32700) assert.match(m.error.message, /parse error/);
      }
      assert.deepEqual(c.nonJson, [], `stdout must carry only JSON-RPC messages (seed ${seed}, batch ${round})`);
      c.messages.length = 0;
      await checkStillWorks(c, tag);
      scan();
      c.messages.length = 0;
    }
  } catch (err) {
    await c.kill();
    throw err;
  }
  c.closeStdin();
  const ex = await withTimeout(c.exited, ms(20000), `codemcp (seed ${seed}) to exit after stdin closed`);
  assert.equal(ex.code, 0, `seed ${seed}: exit ${JSON.stringify(ex)} after stdin closed; stderr:\n${c.stderrTail()}`);
  assert.doesNotMatch(c.stderr, /runtime error:|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer/, `seed ${seed}: sanitizer report:\n${c.stderrTail()}`);
}

// What the campaign found, pinned: a client string quoted in an error message and cut by bytes
// in the middle of a character made that message not UTF-8; jansson refused to build it, so
// the request got no answer at all (unknown tool name, unknown argument name) or, for the 2026
// version check, the refusal vanished and the request was served as if its version were good.
test('client text cut mid-character in an error message: still answered, with the error', async () => {
  const c = new RawClient({ home: tempDir('codemcp-fuzz-'), env: { CODEMCP_LOG: 'warn' } });
  await c.initialize();
  for (let pad = 0; pad < 4; pad++) {
    const name = 'a'.repeat(pad) + 'é'.repeat(300);
    const t = await c.request('tools/call', { name, arguments: {} }, { id: `tool-${pad}` });
    assert.equal(t.error?.code, -32602, JSON.stringify(t).slice(0, 300));
    assert.match(t.error.message, /^unknown tool a*é+/);
    const a = await c.request('tools/call', { name: 'execute_python', arguments: { code: 'result = 1', [name]: 1 } }, { id: `arg-${pad}` });
    assert.equal(a.result?.isError, true, JSON.stringify(a).slice(0, 300));
    assert.match(a.result.structuredContent.error, /unknown argument "a*é+/);
    const v = await c.request('tools/list', { _meta: { ...META('cut'), [PV]: 'a'.repeat(pad) + '日'.repeat(40) } }, { id: `ver-${pad}` });
    assert.equal(v.error?.code, -32022, JSON.stringify(v).slice(0, 300));
    assert.match(v.error.message, /^Unsupported protocol version: a*日+ \(this server speaks 2026-07-28/);
  }
  assert.deepEqual(c.nonJson, []);
  await checkStillWorks(c, 'cut');
});

// Valid JSON the gateway does not take (a string holding U+0000, an integer past 64 bits) was
// answered as a parse error with id null: the client's request then waited forever.
test('a request refused for a NUL in a string or a 2**64 integer is answered with its own id', async () => {
  const c = new RawClient({ home: tempDir('codemcp-fuzz-'), env: { CODEMCP_LOG: 'warn' } });
  await c.initialize();
  const cases = [
    ['nul-code', '{"jsonrpc":"2.0","id":"nul-code","method":"tools/call","params":{"name":"execute_python","arguments":{"code":"result = \'a\\u0000b\'"}}}'],
    ['nul-name', '{"jsonrpc":"2.0","id":"nul-name","method":"tools/call","params":{"name":"execute_python\\u0000","arguments":{}}}'],
    [77, '{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"result = 1","n":18446744073709551616}}}'],
  ];
  for (const [id, line] of cases) {
    c.send(line);
    const r = await c.response(id);
    assert.equal(r.error?.code, -32600, JSON.stringify(r).slice(0, 300));
    assert.match(r.error.message, /^invalid request: /);
  }
  c.send('{"jsonrpc":"2.0","id":"cut",'); // not JSON at all: a parse error, id null, as before
  const p = await c.next((m) => m.error?.code === -32700);
  assert.equal(p.id, null);
  assert.deepEqual(c.nonJson, []);
  await checkStillWorks(c, 'nul');
});

for (const seed of SEEDS) {
  test(`stdio fuzz, seed ${seed}: every request answered exactly once, the gateway lives`, { timeout: ms(120000) }, () => runSeed(seed));
}
