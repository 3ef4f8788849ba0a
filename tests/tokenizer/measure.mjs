// o200k token counts of the execute_python listing vs the servers' own tools/list JSON.
// Usage: node tests/tokenizer/measure.mjs <description.txt>... -- <tools.json>...
// Prints one JSON line: {listing: {bytes, tokens}, tools_list: {bytes, tokens}, ratio}.
import fs from 'node:fs';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';

export function tokens(text) {
  return encode(text).length;
}

/** The tools/list result JSON a server sends for the dumped tools (compact, as on the wire). */
export function toolsListJson(file) {
  const dump = JSON.parse(fs.readFileSync(file, 'utf8'));
  return JSON.stringify({ tools: dump.tools });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const sep = args.indexOf('--');
  const listing = args.slice(0, sep).map((f) => fs.readFileSync(f, 'utf8')).join('\n');
  const lists = args.slice(sep + 1).map(toolsListJson).join('\n');
  const l = { bytes: Buffer.byteLength(listing), tokens: tokens(listing) };
  const t = { bytes: Buffer.byteLength(lists), tokens: tokens(lists) };
  console.log(JSON.stringify({ listing: l, tools_list: t, ratio: +(l.tokens / t.tokens).toFixed(4) }));
}
