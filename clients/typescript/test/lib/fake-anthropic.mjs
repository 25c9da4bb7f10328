// A scripted stand-in for the Anthropic Messages API on loopback (node:http).
//
//   const api = await startFakeAnthropic([
//     [{ type: 'tool_use', name: 'memory', input: { command: 'view', path: '/memories' } }],
//     [{ type: 'text', text: 'Done.' }],
//   ]);
//   new Anthropic({ apiKey: 'test', baseURL: api.url, maxRetries: 0 })
//   api.requests  // every request: { method, url, headers, body (parsed JSON) }
//   await api.close();
//
// Each POST /v1/messages answers the next scripted assistant turn, as JSON or,
// when the request has `stream: true`, as server-sent events, the way the real
// API does. A turn's tool_use blocks get ids `toolu_<turn>_<index>` unless they
// carry one; its stop_reason is `tool_use` if it has any, else `end_turn`.
import http from 'node:http';

export async function startFakeAnthropic(turns) {
  const requests = [];
  let next = 0;

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body = null;
      try { body = JSON.parse(raw); } catch { /* recorded as null */ }
      requests.push({ method: req.method, url: req.url, headers: req.headers, body });

      const path = new URL(req.url, 'http://x').pathname;
      if (req.method !== 'POST' || path !== '/v1/messages' || !body) {
        return sendError(res, 404, 'not_found_error', `fake API: unexpected ${req.method} ${req.url}`);
      }
      if (next >= turns.length) {
        return sendError(res, 400, 'invalid_request_error', `fake API: no scripted turn left (request ${requests.length})`);
      }
      const turn = next++;
      const message = assistantMessage(turn, turns[turn], body.model);
      if (body.stream) sendStream(res, message);
      else {
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_${turn}` });
        res.end(JSON.stringify(message));
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;

  return {
    url,
    requests,
    /** The scripted turns answered so far. */
    get turnsServed() { return next; },
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };
}

/** The full assistant message for scripted turn `turn`. */
export function assistantMessage(turn, blocks, model = 'claude-test') {
  const content = blocks.map((b, i) => (b.type === 'tool_use' ? { id: `toolu_${turn}_${i}`, ...b } : b));
  return {
    id: `msg_fake_${turn}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 100, output_tokens: 20 },
  };
}

function sendError(res, status, type, message) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ type: 'error', error: { type, message } }));
}

/** The message as the API streams it: message_start, the blocks piece by piece, message_delta, message_stop. */
function sendStream(res, message) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const event = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event('message_start', {
    message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 100, output_tokens: 1 } },
  });
  message.content.forEach((block, index) => {
    if (block.type === 'tool_use') {
      event('content_block_start', { index, content_block: { ...block, input: {} } });
      const json = JSON.stringify(block.input);
      // Split the input JSON in two, as the API sends it in pieces.
      const half = Math.floor(json.length / 2);
      for (const part of [json.slice(0, half), json.slice(half)]) {
        event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } });
      }
    } else {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      event('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } });
    }
    event('content_block_stop', { index });
  });
  event('message_delta', { delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: 20 } });
  event('message_stop', {});
  res.end();
}

/**
 * The tool_result blocks of the last user message of a recorded request: what
 * the SDK sent back for the previous turn's tool_use blocks.
 */
export function toolResultsOf(request) {
  const messages = request.body?.messages ?? [];
  const last = messages[messages.length - 1];
  if (!last || last.role !== 'user' || !Array.isArray(last.content)) return [];
  return last.content.filter((b) => b.type === 'tool_result');
}
