// The MCP endpoint (README "MCP", docs/behaviour.md 16), driven by the official MCP TypeScript
// SDK's Client and StreamableHTTPClientTransport against a live memoryd, and by raw fetch where
// the SDK cannot send what is tested (malformed JSON-RPC):
//   - initialize negotiates revision 2025-11-25 and issues a session id (64 hex digits);
//   - tools/list shows the memory tool with the memory tool's input schema, and memory_search,
//     whose answers are GET /v1/search's text for the same tenant;
//   - tools/call of every memory command answers the text POST /memory answers for the same
//     command on the same server (successes and errors, limits and quota), isError on errors;
//   - two clients of different tenants at once each see only their own files;
//   - malformed JSON-RPC: bad JSON (-32700), not a JSON-RPC message or a batch (-32600) with
//     400; an unknown method (-32601) and bad params (-32602) in a 200; nothing is changed;
//   - sessions: required after initialize, ended by DELETE, bound to their tenant, bounded
//     by --mcp-sessions; MCP-Protocol-Version checked; GET /mcp is 405; browser Origins refused
//     unless listed in --mcp-origins;
//   - --auth keys: the SDK client with a Bearer key; the key decides the tenant and its scope;
//   - a write's Idempotency-Key, in params._meta or the header: a retried tools/call applied once.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { runMemoryd, startServer } from '../lib/server.mjs';

const servers = [];
const clients = [];
let srv;

async function start(args = []) {
  const s = await startServer({ args });
  servers.push(s);
  return s;
}

// An SDK client connected to `s`'s /mcp with these request headers.
async function connect(s, headers = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers } });
  const client = new Client({ name: 'memoryd-test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

const T = (id) => ({ 'x-tenant-id': id });

// A raw JSON-RPC POST /mcp: status, headers and parsed body (null when empty).
async function rpc(s, body, headers = {}) {
  const res = await fetch(`${s.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : null };
}

// A session opened by hand: its id.
async function openSession(s, headers) {
  const r = await rpc(s, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }, headers);
  assert.equal(r.status, 200, r.text);
  return r.headers.get('mcp-session-id');
}

const rpcError = (id, code, message) => ({ jsonrpc: '2.0', id, error: { code, message } });
const toolText = (text, isError) => ({ content: [{ type: 'text', text }], isError });

before(async () => {
  srv = await start(['--max-file', '1K', '--tenant-max-files', '3']);
});

after(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await Promise.all(servers.map((s) => s.stop()));
});

const MEMORY_SCHEMA = {
  type: 'object',
  properties: {
    command: { type: 'string', enum: ['view', 'create', 'str_replace', 'insert', 'delete', 'rename'], description: 'The command to run.' },
    path: { type: 'string', description: 'The file or directory, under /memories (view, create, str_replace, insert, delete).' },
    view_range: { type: 'array', items: { type: 'integer' }, minItems: 2, maxItems: 2, description: 'view of a file: the first and last line to show (1-based; -1 as the last: to the end).' },
    file_text: { type: 'string', description: 'create: the file\'s content.' },
    old_str: { type: 'string', description: 'str_replace: the text to replace; it must occur exactly once.' },
    new_str: { type: 'string', description: 'str_replace: the new text.' },
    insert_line: { type: 'integer', description: 'insert: the line after which to insert (0: at the top).' },
    insert_text: { type: 'string', description: 'insert: the text to insert.' },
    old_path: { type: 'string', description: 'rename: the file or directory to move.' },
    new_path: { type: 'string', description: 'rename: where to move it.' },
  },
  required: ['command'],
};

test('initialize: revision 2025-11-25, the server, a session id from the CSPRNG', async () => {
  const { client, transport } = await connect(srv, T('init'));
  assert.equal(transport.protocolVersion, '2025-11-25');
  assert.match(transport.sessionId, /^[0-9a-f]{64}$/);
  const other = await connect(srv, T('init'));
  assert.notEqual(other.transport.sessionId, transport.sessionId);
  assert.deepEqual(client.getServerVersion(), { name: 'memoryd', version: client.getServerVersion().version });
  assert.match(client.getServerVersion().version, /^\d+\.\d+\.\d+/);
  assert.deepEqual(client.getServerCapabilities(), { tools: { listChanged: false } });
  assert.equal(client.getInstructions(), 'memoryd keeps a memory directory, /memories, for this tenant across conversations. Use the memory tool to view it before a task and to record what you learn.');
  assert.deepEqual(await client.ping(), {});
  // An older or unknown revision asked for: the newest is offered.
  for (const v of ['2025-06-18', '2024-11-05', '1999-01-01']) {
    const r = await rpc(srv, { jsonrpc: '2.0', id: 7, method: 'initialize', params: { protocolVersion: v } }, T('init'));
    assert.equal(r.status, 200);
    assert.equal(r.json.result.protocolVersion, v === '2025-06-18' ? v : '2025-11-25');
  }
});

test('tools/list: the memory tool with the memory tool\'s input schema, and memory_search', async () => {
  const { client } = await connect(srv, T('list'));
  const { tools } = await client.listTools();
  assert.deepEqual(tools, [{
    name: 'memory',
    title: 'Memory',
    description: 'A persistent memory directory, /memories, kept across conversations: view a directory or a file, create a file, replace or insert text in it, delete or rename files and directories. Check it before starting a task; record progress and what you learn as you go.',
    inputSchema: MEMORY_SCHEMA,
    annotations: { readOnlyHint: false },
  }, {
    name: 'memory_search',
    title: 'Search memory',
    description: 'Full-text search of the /memories files: the files that contain every word of the query (where a word begins), best first, with the numbers and text of their matching lines. Use it to find a note before viewing it.',
    inputSchema: {
      type: 'object',
      properties: {
        q: { type: 'string', description: 'Words to find (each where a word begins, ASCII letters without case); a phrase in double quotes.' },
        path: { type: 'string', description: 'Search this directory (or file) only; default /memories.' },
        limit: { type: 'integer', minimum: 1, maximum: 100, description: 'Files per page (default 10).' },
        cursor: { type: 'string', description: 'The next page: the cursor the previous answer ended with.' },
      },
      required: ['q'],
    },
    annotations: { readOnlyHint: true },
  }]);
});

test('memory_search answers GET /v1/search?format=text\'s text for the same tenant; bad arguments are tool errors', async () => {
  const { client } = await connect(srv, T('searcher'));
  const { client: other } = await connect(srv, T('someone-else'));
  for (const [p, text] of [['/memories/billing.md', 'Billing runs monthly.\nInvoices go out on the 1st.\n'], ['/memories/notes/todo.md', 'Ask about billing codes\n']]) {
    const r = await client.callTool({ name: 'memory', arguments: { command: 'create', path: p, file_text: text } });
    assert.equal(r.isError, false);
  }
  await other.callTool({ name: 'memory', arguments: { command: 'create', path: '/memories/billing.md', file_text: 'billing of another tenant\n' } });
  for (const args of [{ q: 'billing' }, { q: 'billing', path: '/memories/notes' }, { q: 'invoices', limit: 1 }, { q: 'nothing-like-this' }]) {
    const qs = new URLSearchParams({ q: args.q, format: 'text', ...(args.path ? { path: args.path } : {}), ...(args.limit ? { limit: String(args.limit) } : {}) });
    const http = await fetch(`${srv.url}/v1/search?${qs}`, { headers: T('searcher') });
    assert.equal(http.status, 200);
    const r = await client.callTool({ name: 'memory_search', arguments: args });
    assert.deepEqual(r, toolText(await http.text(), false), JSON.stringify(args));
  }
  const bad = await client.callTool({ name: 'memory_search', arguments: { q: 7 } });
  assert.deepEqual(bad, toolText('Error: Parameter `q` must be a string', true));
  const missing = await client.callTool({ name: 'memory_search', arguments: {} });
  assert.deepEqual(missing, toolText('Error: Parameter `q` is required: the words to search for', true));
  const http = await fetch(`${srv.url}/v1/search`, { headers: T('searcher') });
  assert.deepEqual(await http.json(), { error: 'Parameter `q` is required: the words to search for' });
});

test('tools/call of every memory command answers POST /memory\'s text, on the same server', async () => {
  const { client } = await connect(srv, T('mcp-side'));
  const steps = [
    [{ command: 'view', path: '/memories' }, 'Here\'re the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories', false],
    [{ command: 'create', path: '/memories/notes.md', file_text: 'line one\nline two\n' }, 'File created successfully at: /memories/notes.md', false],
    [{ command: 'view', path: '/memories/notes.md' }, null, false],
    [{ command: 'view', path: '/memories/notes.md', view_range: [2, 2] }, null, false],
    [{ command: 'str_replace', path: '/memories/notes.md', old_str: 'line two', new_str: 'line 2' }, null, false],
    [{ command: 'insert', path: '/memories/notes.md', insert_line: 0, insert_text: 'top\n' }, null, false],
    [{ command: 'rename', old_path: '/memories/notes.md', new_path: '/memories/archive/notes.md' }, null, false],
    [{ command: 'view', path: '/memories' }, null, false],
    // Errors: the same texts, isError.
    [{ command: 'view', path: '/memories/nope.md' }, 'The path /memories/nope.md does not exist. Please provide a valid path.', true],
    [{ command: 'create', path: '/etc/passwd', file_text: 'x' }, null, true],
    [{ command: 'str_replace', path: '/memories/archive/notes.md', old_str: 'absent', new_str: 'y' }, null, true],
    [{ command: 'frobnicate', path: '/memories' }, null, true],
    [{ command: 'create', file_text: 'no path' }, null, true],
    [{}, null, true],
    // Limits and quota (--max-file 1K, --tenant-max-files 3).
    [{ command: 'create', path: '/memories/big.md', file_text: 'x'.repeat(2000) }, null, true],
    [{ command: 'create', path: '/memories/b.md', file_text: 'b' }, null, false],
    [{ command: 'create', path: '/memories/c.md', file_text: 'c' }, null, false],
    [{ command: 'create', path: '/memories/d.md', file_text: 'd' }, null, true],
    [{ command: 'delete', path: '/memories/archive' }, null, false],
    [{ command: 'view', path: '/memories' }, null, false],
  ];
  for (const [args, exact, isError] of steps) {
    const viaMcp = await client.callTool({ name: 'memory', arguments: args });
    const viaHttp = await srv.post(args, { tenant: 'http-side' });
    const what = JSON.stringify(args).slice(0, 80);
    assert.deepEqual(viaMcp, toolText(viaHttp.json.content, viaHttp.json.is_error), what);
    assert.equal(viaMcp.isError, isError, `${what}: ${viaMcp.content[0].text}`);
    if (exact !== null) assert.equal(viaMcp.content[0].text, exact, what);
  }
  // What was written through MCP is there for POST /memory of the same tenant.
  const r = await srv.post({ command: 'view', path: '/memories/b.md' }, { tenant: 'mcp-side' });
  assert.equal(r.json.content, 'Here\'s the content of /memories/b.md with line numbers:\n     1\tb');
});

test('a retried tools/call with an Idempotency-Key (in _meta or the header) is applied once; another call with the key is refused', async () => {
  const { client } = await connect(srv, T('mcp-retry'));
  await client.callTool({ name: 'memory', arguments: { command: 'create', path: '/memories/log.md', file_text: 'a\n' } });
  const insert = { command: 'insert', path: '/memories/log.md', insert_line: 1, insert_text: 'b\n' };
  const edited = toolText('The file /memories/log.md has been edited.', false);
  // _meta: the SDK sends it as params._meta; the retry, with the arguments in another order.
  const viaMeta = (args, key) => client.callTool({ name: 'memory', arguments: args, _meta: { 'memoryd/idempotency-key': key } });
  assert.deepEqual(await viaMeta(insert, 'k-1'), edited);
  assert.deepEqual(await viaMeta({ insert_text: 'b\n', insert_line: 1, path: '/memories/log.md', command: 'insert' }, 'k-1'), edited);
  // The header: a client of its own whose every request carries it.
  const { client: withHeader } = await connect(srv, { ...T('mcp-retry'), 'idempotency-key': 'k-2' });
  const insertC = { ...insert, insert_text: 'c\n' };
  assert.deepEqual(await withHeader.callTool({ name: 'memory', arguments: insertC }), edited);
  assert.deepEqual(await withHeader.callTool({ name: 'memory', arguments: insertC }), edited);
  const seen = await srv.post({ command: 'view', path: '/memories/log.md' }, { tenant: 'mcp-retry' });
  assert.equal(seen.json.content, 'Here\'s the content of /memories/log.md with line numbers:\n     1\ta\n     2\tc\n     3\tb\n     4\t');
  // The key of another call: refused, nothing applied; a view ignores keys.
  assert.deepEqual(await viaMeta({ ...insert, insert_text: 'x\n' }, 'k-1'), toolText('Error: This Idempotency-Key was already used for another request (a different body, path or precondition); a new request needs a new key.', true));
  assert.equal((await viaMeta({ command: 'view', path: '/memories/log.md' }, 'k-1')).isError, false);
  // Malformed keys: tool errors, nothing applied.
  assert.deepEqual(await viaMeta(insert, 'with space'), toolText('Error: `_meta.memoryd/idempotency-key` must be a string of 1 to 255 visible ASCII characters', true));
  assert.deepEqual(await viaMeta(insert, 7), toolText('Error: `_meta.memoryd/idempotency-key` must be a string of 1 to 255 visible ASCII characters', true));
  assert.deepEqual(await withHeader.callTool({ name: 'memory', arguments: insert, _meta: { 'memoryd/idempotency-key': 'k-3' } }),
    toolText('Error: The Idempotency-Key header and `_meta.memoryd/idempotency-key` differ; send one key', true));
  const after = await srv.post({ command: 'view', path: '/memories/log.md' }, { tenant: 'mcp-retry' });
  assert.equal(after.json.content, seen.json.content);
});

test('two clients of different tenants at once: each sees only its own memory', async () => {
  const [a, b] = await Promise.all([connect(srv, T('alice')), connect(srv, T('bob'))]);
  const write = (c, who) => c.client.callTool({ name: 'memory', arguments: { command: 'create', path: '/memories/me.md', file_text: `I am ${who}` } });
  const [wa, wb] = await Promise.all([write(a, 'alice'), write(b, 'bob')]);
  assert.deepEqual([wa, wb], [toolText('File created successfully at: /memories/me.md', false), toolText('File created successfully at: /memories/me.md', false)]);
  const read = (c) => c.client.callTool({ name: 'memory', arguments: { command: 'view', path: '/memories/me.md' } });
  const [ra, rb] = await Promise.all([read(a), read(b)]);
  assert.equal(ra.content[0].text, 'Here\'s the content of /memories/me.md with line numbers:\n     1\tI am alice');
  assert.equal(rb.content[0].text, 'Here\'s the content of /memories/me.md with line numbers:\n     1\tI am bob');
  // Alice's session id with bob's tenant: not found, and nothing done.
  const r = await rpc(srv, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'memory', arguments: { command: 'delete', path: '/memories/me.md' } } },
    { ...T('bob'), 'mcp-session-id': a.transport.sessionId });
  assert.equal(r.status, 404);
  assert.deepEqual(r.json, rpcError(3, -32001, 'Session not found: this Mcp-Session-Id was ended or never started for this tenant; send initialize to start a new session'));
  assert.equal((await read(b)).content[0].text, 'Here\'s the content of /memories/me.md with line numbers:\n     1\tI am bob');
  assert.equal((await read(a)).isError, false);
});

test('malformed JSON-RPC: the JSON-RPC errors with the statuses of the transport, nothing changed', async () => {
  const sid = await openSession(srv, T('bad'));
  const H = { ...T('bad'), 'mcp-session-id': sid };
  const create = { command: 'create', path: '/memories/never.md', file_text: 'x' };
  const call = (params, id = 9) => ({ jsonrpc: '2.0', id, method: 'tools/call', params });
  const cases = [
    ['{"jsonrpc":"2.0","id":1,', 400, rpcError(null, -32700, 'Parse error: the body is not JSON: string or \'}\' expected near end of file (line 1, column 24)')],
    ['', 400, rpcError(null, -32700, 'Parse error: the body is not JSON: unexpected token near end of file (line 1, column 0)')],
    ['{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', 400, rpcError(null, -32700, 'Parse error: the body is not JSON: duplicate object key near \'"id"\' (line 1, column 28)')],
    [{ jsonrpc: '1.0', id: 1, method: 'tools/call', params: { name: 'memory', arguments: create } }, 400, rpcError(1, -32600, 'Invalid Request: `jsonrpc` must be "2.0"')],
    [{ id: 'x', method: 'ping' }, 400, rpcError('x', -32600, 'Invalid Request: `jsonrpc` must be "2.0"')],
    [{ jsonrpc: '2.0', id: 1.5, method: 'ping' }, 400, rpcError(null, -32600, 'Invalid Request: `id` must be a string or an integer')],
    [{ jsonrpc: '2.0', id: null, method: 'ping' }, 400, rpcError(null, -32600, 'Invalid Request: `id` must be a string or an integer')],
    [{ jsonrpc: '2.0', id: 4, method: 42 }, 400, rpcError(4, -32600, 'Invalid Request: `method` must be a string')],
    [{ jsonrpc: '2.0', id: 4 }, 400, rpcError(4, -32600, 'Invalid Request: `method` must be a string')],
    ['"tools/call"', 400, rpcError(null, -32600, 'Invalid Request: a JSON-RPC message is a JSON object')],
    [[call({ name: 'memory', arguments: create }, 1), call({ name: 'memory', arguments: create }, 2)], 400,
      rpcError(null, -32600, 'Invalid Request: JSON-RPC batches are not supported (MCP has none since revision 2025-06-18); send one message per request')],
    [{ jsonrpc: '2.0', id: 5, method: 'resources/list' }, 200, rpcError(5, -32601, 'Method not found: resources/list')],
    [{ jsonrpc: '2.0', id: 6, method: 'tools/call', params: [1] }, 200, rpcError(6, -32602, 'Invalid params: `params` must be an object')],
    [call({ arguments: create }), 200, rpcError(9, -32602, 'Invalid params: tools/call needs `params.name` (a string)')],
    [call({ name: 'memory_forget', arguments: { q: 'x' } }), 200, rpcError(9, -32602, 'Invalid params: unknown tool: memory_forget (tools/list names the tools)')],
    [call({ name: 'memory', arguments: [create] }), 200, rpcError(9, -32602, 'Invalid params: `params.arguments` must be an object')],
    [call({ name: 'memory', arguments: '{"command":"create"}' }), 200, rpcError(9, -32602, 'Invalid params: `params.arguments` must be an object')],
    [{ jsonrpc: '2.0', id: 'i', method: 'initialize', params: {} }, 200, rpcError('i', -32602, 'Invalid params: initialize needs `params.protocolVersion` (a string)')],
    [{ jsonrpc: '2.0', method: 'initialize', params: { protocolVersion: '2025-11-25' } }, 400, rpcError(null, -32600, 'Invalid Request: initialize must be a request (with an `id`)')],
  ];
  for (const [body, status, want] of cases) {
    const r = await rpc(srv, body, H);
    const what = typeof body === 'string' ? body : JSON.stringify(body);
    assert.equal(r.status, status, what);
    assert.equal(r.headers.get('content-type'), 'application/json', what);
    assert.deepEqual(r.json, want, what);
  }
  // Notifications and responses are accepted with 202 and no body; an unknown one too.
  for (const body of [{ jsonrpc: '2.0', method: 'notifications/initialized' }, { jsonrpc: '2.0', method: 'notifications/whatever', params: { a: 1 } },
    { jsonrpc: '2.0', id: 'srv-1', result: {} }]) {
    const r = await rpc(srv, body, H);
    assert.deepEqual([r.status, r.text], [202, ''], JSON.stringify(body));
  }
  // The SDK client reports a JSON-RPC error as an McpError with its code.
  const { client } = await connect(srv, T('bad'));
  await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), (e) => e.code === -32602 && e.message === 'MCP error -32602: Invalid params: unknown tool: nope (tools/list names the tools)');
  // Nothing was created by any of them.
  const v = await srv.post({ command: 'view', path: '/memories' }, { tenant: 'bad' });
  assert.equal(v.json.content, 'Here\'re the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories');
});

test('sessions: required, ended by DELETE, version header checked, GET is 405', async () => {
  const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
  let r = await rpc(srv, ping, T('sess'));
  assert.equal(r.status, 400);
  assert.deepEqual(r.json, rpcError(1, -32000, 'Bad Request: the Mcp-Session-Id header is required: send initialize first, then its Mcp-Session-Id with every request'));
  r = await rpc(srv, ping, { ...T('sess'), 'mcp-session-id': '0'.repeat(64) });
  assert.equal(r.status, 404);
  assert.deepEqual(r.json, rpcError(1, -32001, 'Session not found: this Mcp-Session-Id was ended or never started for this tenant; send initialize to start a new session'));
  const { client, transport } = await connect(srv, T('sess'));
  const sid = transport.sessionId;
  r = await rpc(srv, ping, { ...T('sess'), 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' });
  assert.deepEqual([r.status, r.json], [200, { jsonrpc: '2.0', id: 1, result: {} }]);
  r = await rpc(srv, ping, { ...T('sess'), 'mcp-session-id': sid, 'mcp-protocol-version': '2024-01-01' });
  assert.deepEqual([r.status, r.json], [400, rpcError(1, -32000, 'Bad Request: unsupported MCP-Protocol-Version: 2024-01-01 (memoryd speaks 2025-11-25 and 2025-06-18)')]);
  // Another tenant cannot end it.
  let d = await fetch(`${srv.url}/mcp`, { method: 'DELETE', headers: { ...T('other'), 'mcp-session-id': sid } });
  assert.deepEqual([d.status, await d.json()], [404, rpcError(null, -32001, 'Session not found: this Mcp-Session-Id was ended or never started for this tenant')]);
  assert.deepEqual(await client.ping(), {});
  // The SDK ends it with DELETE /mcp (204); afterwards the id is not found.
  await transport.terminateSession();
  assert.equal(transport.sessionId, undefined);
  r = await rpc(srv, ping, { ...T('sess'), 'mcp-session-id': sid });
  assert.equal(r.status, 404);
  d = await fetch(`${srv.url}/mcp`, { method: 'DELETE', headers: { ...T('sess'), 'mcp-session-id': sid } });
  assert.equal(d.status, 404);
  d = await fetch(`${srv.url}/mcp`, { method: 'DELETE', headers: T('sess') });
  assert.deepEqual([d.status, await d.json()], [400, rpcError(null, -32000, 'Bad Request: DELETE /mcp needs the Mcp-Session-Id header of the session to end')]);
  // No server-to-client stream.
  const g = await fetch(`${srv.url}/mcp`, { headers: { ...T('sess'), accept: 'text/event-stream' } });
  assert.deepEqual([g.status, g.headers.get('allow'), await g.json()], [405, 'POST, DELETE', { error: 'method not allowed' }]);
});

test('--mcp-sessions bounds the sessions: the next initialize gets 503 until one ends', async () => {
  const s = await start(['--mcp-sessions', '2']);
  const a = await connect(s, T('a'));
  await connect(s, T('b'));
  const transport = new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: T('c') } });
  await assert.rejects(new Client({ name: 'third', version: '1' }).connect(transport), /Too many MCP sessions are open/);
  const r = await rpc(s, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25' } }, T('c'));
  assert.equal(r.status, 503);
  assert.equal(r.headers.get('retry-after'), '1');
  assert.equal(r.headers.get('mcp-session-id'), null);
  assert.deepEqual(r.json, rpcError(1, -32000, 'Too many MCP sessions are open (the limit is 2, --mcp-sessions); none was started. End unused sessions with DELETE /mcp, or retry later.'));
  await a.transport.terminateSession();
  const c = await connect(s, T('c'));
  assert.match(c.transport.sessionId, /^[0-9a-f]{64}$/);
});

test('Origin: browser origins are refused unless --mcp-origins lists them', async () => {
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25' } };
  const FORBIDDEN = rpcError(null, -32000, 'Forbidden: this Origin may not use /mcp (memoryd --mcp-origins lists the browser origins that may)');
  let r = await rpc(srv, init, { ...T('o'), origin: 'http://localhost:8080' });
  assert.deepEqual([r.status, r.json, r.headers.get('mcp-session-id')], [403, FORBIDDEN, null]);
  const s = await start(['--mcp-origins', 'https://app.example.com, http://localhost:5173']);
  r = await rpc(s, init, { ...T('o'), origin: 'https://app.example.com' });
  assert.equal(r.status, 200);
  r = await rpc(s, init, { ...T('o'), origin: 'http://localhost:5173' });
  assert.equal(r.status, 200);
  r = await rpc(s, init, { ...T('o'), origin: 'https://evil.example.com' });
  assert.deepEqual([r.status, r.json], [403, FORBIDDEN]);
  r = await rpc(s, init, { ...T('o'), origin: 'null' });
  assert.deepEqual([r.status, r.json], [403, FORBIDDEN]);
});

test('tenant rules of POST /memory apply: --require-tenant without the header', async () => {
  const s = await start(['--require-tenant']);
  const r = await rpc(s, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25' } });
  const viaHttp = await s.post({ command: 'view', path: '/memories' });
  assert.equal(r.status, viaHttp.status);
  assert.deepEqual(r.json, rpcError(null, -32000, viaHttp.json.content.replace(/^Error: /, '')));
});

test('metrics: the memory tool\'s commands over MCP count as POST /memory\'s', async () => {
  const s = await start();
  const { client } = await connect(s, T('m'));
  await client.callTool({ name: 'memory', arguments: { command: 'create', path: '/memories/m.md', file_text: 'm' } });
  await client.callTool({ name: 'memory', arguments: { command: 'view', path: '/memories/nope' } });
  // A request is counted once answered, as its connection's request ends: wait for the last.
  const seen = (pred) => (logs) => logs.some((l) => l.msg === 'request' && pred(l));
  await s.waitForLogs(seen((l) => l.command === 'view'), 'the view\'s request line');
  await s.waitForLogs(seen((l) => l.method === 'GET' && l.route === '/mcp' && l.status === 405), 'the SDK\'s GET /mcp');
  const m = await s.request('GET', '/metrics');
  assert.match(m.text, /^memoryd_requests_total\{command="create",class="2xx"\} 1$/m);
  // A tool's error is a 200 of JSON-RPC: counted as 2xx under its command.
  assert.match(m.text, /^memoryd_requests_total\{command="view",class="2xx"\} 1$/m);
  // initialize, notifications/initialized and the refused GET: "mcp".
  assert.match(m.text, /^memoryd_requests_total\{command="mcp",class="2xx"\} 2$/m);
  assert.match(m.text, /^memoryd_requests_total\{command="mcp",class="4xx"\} 1$/m);
});

test('logs: the request line names the JSON-RPC method and the command; no session id, no content', async () => {
  const s = await start();
  const { client, transport } = await connect(s, T('logged'));
  await client.callTool({ name: 'memory', arguments: { command: 'create', path: '/memories/secret.md', file_text: 'the-secret-content' } });
  await client.callTool({ name: 'memory', arguments: { command: 'view', path: '/memories/none.md' } });
  const lines = await s.waitForLogs((logs) => logs.filter((l) => l.msg === 'request' && l.rpc_method === 'tools/call').length === 2, 'two tools/call lines');
  // A request's line is written once its answer has gone out, so the next request's line may
  // come first: the lines are compared in order of command, and of method.
  const calls = lines.filter((l) => l.msg === 'request' && l.rpc_method === 'tools/call');
  assert.deepEqual(calls.map((l) => [l.method, l.route, l.tenant, l.command, l.status, l.is_error]).sort(),
    [['POST', '/mcp', 'logged', 'create', 200, false], ['POST', '/mcp', 'logged', 'view', 200, true]]);
  assert.deepEqual(lines.filter((l) => l.msg === 'request' && l.route === '/mcp' && l.method === 'POST').map((l) => l.rpc_method).sort(),
    ['initialize', 'notifications/initialized', 'tools/call', 'tools/call']);
  for (const secret of [transport.sessionId, 'the-secret-content', 'secret.md']) {
    assert.ok(!s.rawStderr.some((l) => l.includes(secret)), `${secret} is in the log`);
  }
});

test('--auth keys: the SDK client with a Bearer key; the key decides the tenant and scope', async () => {
  const s = await start(['--auth', 'keys']);
  const key = async (tenant, scope) => {
    const r = await runMemoryd(['keys', 'create', '--tenant', tenant, '--scope', scope, '--db', s.dbPath]);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.split('\n')[0];
  };
  const [writeA, readA, writeB] = [await key('alice', 'write'), await key('alice', 'read'), await key('bob', 'write')];
  const bearer = (k) => ({ authorization: `Bearer ${k}` });
  const a = await connect(s, bearer(writeA));
  let c = await a.client.callTool({ name: 'memory', arguments: { command: 'create', path: '/memories/k.md', file_text: 'alice\'s' } });
  assert.deepEqual(c, toolText('File created successfully at: /memories/k.md', false));
  const viaHttp = await s.post({ command: 'view', path: '/memories/k.md' }, { headers: bearer(writeA) });
  assert.equal(viaHttp.json.content, 'Here\'s the content of /memories/k.md with line numbers:\n     1\talice\'s');
  // The read scope: views, not writes (the text of POST /memory).
  const r = await connect(s, bearer(readA));
  c = await r.client.callTool({ name: 'memory', arguments: { command: 'view', path: '/memories/k.md' } });
  assert.deepEqual(c, toolText(viaHttp.json.content, false));
  c = await r.client.callTool({ name: 'memory', arguments: { command: 'delete', path: '/memories/k.md' } });
  assert.deepEqual(c, toolText('Error: Forbidden: this API key has the read scope: it may only view (the view command and GET requests). Nothing was done.', true));
  // Bob's key with alice's session: not found; bob sees no k.md.
  const x = await rpc(s, { jsonrpc: '2.0', id: 2, method: 'ping' }, { ...bearer(writeB), 'mcp-session-id': a.transport.sessionId });
  assert.equal(x.status, 404);
  const b = await connect(s, bearer(writeB));
  c = await b.client.callTool({ name: 'memory', arguments: { command: 'view', path: '/memories/k.md' } });
  assert.deepEqual(c, toolText('The path /memories/k.md does not exist. Please provide a valid path.', true));
  // No key, or an unknown one: 401, as for POST /memory.
  for (const [headers, message] of [[{}, 'Authentication required: send the header Authorization: Bearer <key> with a memoryd API key'],
    [bearer('mdk_' + 'x'.repeat(43)), 'Unknown API key']]) {
    const u = await rpc(s, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25' } }, headers);
    assert.deepEqual([u.status, u.headers.get('www-authenticate'), u.json], [401, 'Bearer', rpcError(null, -32000, message)]);
  }
  const t = new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`));
  await assert.rejects(new Client({ name: 'nokey', version: '1' }).connect(t), /Authentication required: send the header Authorization: Bearer <key> with a memoryd API key/);
});
