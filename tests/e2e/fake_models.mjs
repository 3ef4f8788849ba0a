// Fake model endpoints on loopback for real clients that need an LLM: a recording HTTP server and the two streamed APIs the
// clients speak. They answer just enough for a client to list codemcp's tool and end its turn.
import http from 'node:http';

/** A loopback HTTP server answering with handler(url, body, res); records every request. */
export async function fakeModel(handler) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      let b = {};
      try { b = JSON.parse(body); } catch { /* not JSON */ }
      requests.push({ url: req.url, body: b });
      handler(req.url, b, res);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { requests, url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

// Anthropic's Messages API, streamed. The first answer asks Claude Code's ToolSearch for
// codemcp's tool (Claude Code defers MCP tool definitions behind it), so the next request
// carries execute_python's definition exactly as the model would see it.
export function anthropic(url, b, res) {
  if (!url.startsWith('/v1/messages') || url.includes('count_tokens')) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"input_tokens": 10}');
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const ev = (t, d) => res.write(`event: ${t}\ndata: ${JSON.stringify({ type: t, ...d })}\n\n`);
  ev('message_start', { message: { id: 'msg', type: 'message', role: 'assistant', model: b.model || 'm', content: [],
    stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } });
  const answered = JSON.stringify(b.messages || []).includes('tool_use_id');
  if (!answered && (b.tools || []).some((t) => t.name === 'ToolSearch')) {
    ev('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'ToolSearch', input: {} } });
    ev('content_block_delta', { index: 0, delta: { type: 'input_json_delta',
      partial_json: JSON.stringify({ query: 'select:mcp__codemcp__execute_python' }) } });
    ev('content_block_stop', { index: 0 });
    ev('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 5 } });
  } else {
    ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'ok' } });
    ev('content_block_stop', { index: 0 });
    ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 1 } });
  }
  ev('message_stop', {});
  res.end();
}

// OpenAI's chat completions, streamed: one text answer.
export function openaiChat(url, b, res) {
  if (!url.includes('/chat/completions')) {
    res.writeHead(404);
    res.end();
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk = (delta, fin) => res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1,
    model: b.model || 'm', choices: [{ index: 0, delta, finish_reason: fin }] })}\n\n`);
  chunk({ role: 'assistant', content: 'ok' }, null);
  chunk({}, 'stop');
  res.write('data: [DONE]\n\n');
  res.end();
}
