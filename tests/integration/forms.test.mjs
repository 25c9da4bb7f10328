// Proves docs/behaviour.md §1, the request and response forms of POST /memory:
// a command object and a whole tool_use block (tool_use_id copied back), the
// tool_use block's own errors, Accept negotiation (JSON by default, bare text
// with X-Memory-Is-Error for text/plain), malformed bodies, duplicate and
// unknown keys, any request Content-Type, wrong methods and unknown routes,
// and that a /memory response body is a tool_result whatever the status.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { startServer } from '../lib/server.mjs';
import { httpRequest } from '../lib/attack.mjs';

let srv;
before(async () => {
  // Small body and file limits so that the 413 bodies are cheap to provoke.
  srv = await startServer({ args: ['--max-body', '65536', '--max-file', '1000'] });
});
after(async () => {
  await srv.stop();
  fs.rmSync(srv.dir, { recursive: true, force: true });
});

// One request with node:http: exact control of the headers sent (none are
// added but Host and Content-Length / Transfer-Encoding).
function raw({ method = 'POST', path = '/memory', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: srv.port, method, path, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json = null;
        try { json = JSON.parse(text); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    if (body !== undefined) req.setHeader('content-length', Buffer.byteLength(body));
    req.end(body);
  });
}

const TENANT = 'forms';
const post = (body, opts = {}) => srv.post(body, { tenant: TENANT, ...opts });

// An ETag of a file's content, as memoryd sends it.
const etagOf = (text) => `"sha256-${createHash('sha256').update(text).digest('hex')}"`;

// `etag`: the JSON's etag key (a view of a file sent as a command object; a tool_use block
// gets a block ready to send back to the Messages API, which takes no other key).
function assertJsonResult(r, { status, content, isError, toolUseId, etag }) {
  assert.equal(r.status, status, r.text);
  assert.equal(r.headers.get ? r.headers.get('content-type') : r.headers['content-type'], 'application/json');
  const expected = toolUseId === undefined
    ? { type: 'tool_result', content, is_error: isError, ...(etag ? { etag } : {}) }
    : { type: 'tool_result', tool_use_id: toolUseId, content, is_error: isError };
  // The exact body: these keys in this order, nothing else.
  assert.equal(r.text, JSON.stringify(expected));
  const flag = r.headers.get ? r.headers.get('x-memory-is-error') : r.headers['x-memory-is-error'];
  assert.equal(flag, String(isError));
}

test('a command object -> {"type":"tool_result","content":...,"is_error":...}, no tool_use_id', async () => {
  assertJsonResult(await post({ command: 'create', path: '/memories/obj.txt', file_text: 'hello' }),
    { status: 200, content: 'File created successfully at: /memories/obj.txt', isError: false });
  const viewed = await post({ command: 'view', path: '/memories/obj.txt' });
  assertJsonResult(viewed, { status: 200, content: "Here's the content of /memories/obj.txt with line numbers:\n     1\thello", isError: false, etag: etagOf('hello') });
  assert.equal(viewed.headers.get('etag'), etagOf('hello'));
  assertJsonResult(await post({ command: 'view', path: '/memories/none' }),
    { status: 404, content: 'The path /memories/none does not exist. Please provide a valid path.', isError: true });
  // Control characters and quotes in content are JSON-escaped and round-trip.
  const text = 'q"\\\u0000\u0001\u001f\n\t\u2028\u{1F600}';
  assertJsonResult(await post({ command: 'create', path: '/memories/esc.txt', file_text: text }),
    { status: 200, content: 'File created successfully at: /memories/esc.txt', isError: false });
  const r = await post({ command: 'view', path: '/memories/esc.txt' });
  assert.equal(r.json.content, `Here's the content of /memories/esc.txt with line numbers:\n     1\tq"\\\u0000\u0001\u001f\n     2\t\t\u2028\u{1F600}`);
});

test('a tool_use block -> the same tool_result with tool_use_id copied', async () => {
  const block = (id, input, extra = {}) => ({ type: 'tool_use', id, name: 'memory', input, ...extra });
  assertJsonResult(await post(block('toolu_01A', { command: 'create', path: '/memories/tu.txt', file_text: 'x' })),
    { status: 200, content: 'File created successfully at: /memories/tu.txt', isError: false, toolUseId: 'toolu_01A' });
  const viewed = await post(block('toolu_01B', { command: 'view', path: '/memories/tu.txt' }));
  assertJsonResult(viewed, { status: 200, content: "Here's the content of /memories/tu.txt with line numbers:\n     1\tx", isError: false, toolUseId: 'toolu_01B' });
  assert.equal(viewed.headers.get('etag'), etagOf('x')); // the header, still
  // Errors of the command carry the id too.
  assertJsonResult(await post(block('toolu_01C', { command: 'create', path: '/memories/tu.txt', file_text: 'y' })),
    { status: 409, content: 'Error: File /memories/tu.txt already exists', isError: true, toolUseId: 'toolu_01C' });
  assertJsonResult(await post(block('toolu_01D', { command: 'copy' })),
    { status: 400, content: 'Error: copy not implemented', isError: true, toolUseId: 'toolu_01D' });
  assertJsonResult(await post(block('toolu_01E', { command: 'view', path: '/etc' })),
    { status: 400, content: 'Error: Path must start with /memories, got: /etc', isError: true, toolUseId: 'toolu_01E' });
  // The id is copied exactly, whatever it holds; `name` may be left out;
  // unknown keys of the block (e.g. cache_control) are ignored.
  const odd = 'id "quoted" \\ \u00e9 \u{1F600} \n';
  assertJsonResult(await post(block(odd, { command: 'delete', path: '/memories/tu.txt' }, { cache_control: { type: 'ephemeral' } })),
    { status: 200, content: 'Successfully deleted /memories/tu.txt', isError: false, toolUseId: odd });
  assertJsonResult(await post({ type: 'tool_use', id: '', input: { command: 'view', path: '/memories/tu.txt' } }),
    { status: 404, content: 'The path /memories/tu.txt does not exist. Please provide a valid path.', isError: true, toolUseId: '' });
});

test('tool_use block errors: wrong name, missing id, non-object input, other types', async () => {
  const input = { command: 'create', path: '/memories/never.txt', file_text: 'x' };
  assertJsonResult(await post({ type: 'tool_use', id: 'toolu_x', name: 'x', input }),
    { status: 400, content: "Error: Tool 'x' not found", isError: true, toolUseId: 'toolu_x' });
  assertJsonResult(await post({ type: 'tool_use', id: 'toolu_x', name: 'Memory', input }),
    { status: 400, content: "Error: Tool 'Memory' not found", isError: true, toolUseId: 'toolu_x' });
  const noId = 'Error: A tool_use block needs a string `id`';
  assertJsonResult(await post({ type: 'tool_use', name: 'memory', input }), { status: 400, content: noId, isError: true });
  assertJsonResult(await post({ type: 'tool_use', id: 7, name: 'memory', input }), { status: 400, content: noId, isError: true });
  assertJsonResult(await post({ type: 'tool_use', id: null, name: 'memory', input }), { status: 400, content: noId, isError: true });
  const noInput = 'Error: A tool_use block needs an object `input`';
  for (const bad of [undefined, 'view', [input], null, 3]) {
    assertJsonResult(await post({ type: 'tool_use', id: 'toolu_y', name: 'memory', input: bad }),
      { status: 400, content: noInput, isError: true, toolUseId: 'toolu_y' });
  }
  // An input given as a JSON string (not an object) is not parsed.
  assertJsonResult(await post({ type: 'tool_use', id: 'toolu_z', name: 'memory', input: JSON.stringify(input) }),
    { status: 400, content: noInput, isError: true, toolUseId: 'toolu_z' });
  const unsupported = 'Error: Unsupported request: send a memory command object ({"command": ...}) or a tool_use block ({"type": "tool_use", ...})';
  for (const type of ['tool_result', 'text', 'TOOL_USE', 5, null]) {
    assertJsonResult(await post({ type, id: 'toolu_w', name: 'memory', input }), { status: 400, content: unsupported, isError: true });
  }
  // Nothing was created by any of them.
  assertJsonResult(await post({ command: 'view', path: '/memories/never.txt' }),
    { status: 404, content: 'The path /memories/never.txt does not exist. Please provide a valid path.', isError: true });
});

test('Accept: text/plain -> the bare content, text/plain; charset=utf-8, X-Memory-Is-Error', async () => {
  const ok = await post({ command: 'create', path: '/memories/text.txt', file_text: 'line \u00e9' }, { accept: 'text/plain' });
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get('content-type'), 'text/plain; charset=utf-8');
  assert.equal(ok.headers.get('x-memory-is-error'), 'false');
  assert.equal(ok.text, 'File created successfully at: /memories/text.txt');
  const view = await post({ command: 'view', path: '/memories/text.txt' }, { accept: 'text/plain' });
  assert.equal(view.text, "Here's the content of /memories/text.txt with line numbers:\n     1\tline \u00e9");
  const bad = await post({ command: 'create', path: '/memories/text.txt', file_text: 'x' }, { accept: 'text/plain' });
  assert.equal(bad.status, 409);
  assert.equal(bad.headers.get('content-type'), 'text/plain; charset=utf-8');
  assert.equal(bad.headers.get('x-memory-is-error'), 'true');
  assert.equal(bad.text, 'Error: File /memories/text.txt already exists');
  // A tool_use block in text mode: the bare content as well.
  const tu = await post({ type: 'tool_use', id: 'toolu_t', name: 'memory', input: { command: 'view', path: '/memories/nope' } },
    { accept: 'text/plain' });
  assert.equal(tu.status, 404);
  assert.equal(tu.headers.get('x-memory-is-error'), 'true');
  assert.equal(tu.text, 'The path /memories/nope does not exist. Please provide a valid path.');
  // Request-level errors too.
  const malformed = await post('{', { accept: 'text/plain' });
  assert.equal(malformed.status, 400);
  assert.equal(malformed.headers.get('x-memory-is-error'), 'true');
  assert.equal(malformed.text, "Error: Invalid JSON in request body: string or '}' expected near end of file (line 1, column 1)");
});

test('header values: spaces and tabs around them are not part of them (Accept and the tenant header)', async () => {
  // fetch trims header values itself: raw requests.
  const body = JSON.stringify({ command: 'view', path: '/memories' });
  const content = "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories";
  for (const accept of ['text/plain ', 'text/plain\t', ' \ttext/plain \t ', 'text/plain\t;\tq=0.9,\tapplication/json;q=0.5\t']) {
    const r = await httpRequest(srv.port, { headers: [`Accept: ${accept}`, 'Content-Type: application/json'], body });
    assert.equal(r.status, 200, JSON.stringify(accept));
    assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8', JSON.stringify(accept));
    assert.equal(r.text, content);
  }
  const created = await httpRequest(srv.port, { headers: ['X-Tenant-ID: ws-tenant \t ', 'Content-Type: application/json'],
    body: JSON.stringify({ command: 'create', path: '/memories/ws.txt', file_text: 'trimmed' }) });
  assert.equal(created.status, 200, created.text);
  const seen = await post({ command: 'view', path: '/memories/ws.txt' }, { tenant: 'ws-tenant' });
  assert.equal(seen.json.content, "Here's the content of /memories/ws.txt with line numbers:\n     1\ttrimmed");
});

test('Accept negotiation: JSON unless text/plain is preferred', async () => {
  const cmd = { command: 'view', path: '/memories/text.txt' };
  const content = "Here's the content of /memories/text.txt with line numbers:\n     1\tline \u00e9";
  const cases = [
    ['application/json, text/plain, */*', 'json'],
    ['*/*', 'json'],
    ['application/json', 'json'],
    ['text/html', 'json'],
    ['text/plain;q=0.5, application/json', 'json'],
    ['text/plain; q=0', 'json'],
    ['application/*, text/plain', 'json'],
    ['text/plain', 'text'],
    ['TEXT/PLAIN', 'text'],
    ['text/*', 'text'],
    ['text/plain, application/json;q=0.9', 'text'],
    ['application/json;q=0.1, text/plain;q=0.2', 'text'],
    ['text/plain;charset=utf-8', 'text'],
  ];
  for (const [accept, want] of cases) {
    const r = await post(cmd, { accept });
    assert.equal(r.status, 200, accept);
    if (want === 'json') {
      assertJsonResult(r, { status: 200, content, isError: false, etag: etagOf('line \u00e9') });
    } else {
      assert.equal(r.headers.get('content-type'), 'text/plain; charset=utf-8', accept);
      assert.equal(r.text, content, accept);
      assert.equal(r.headers.get('x-memory-is-error'), 'false', accept);
    }
  }
  // No Accept header at all: JSON.
  const r = await raw({ headers: { 'x-tenant-id': TENANT }, body: JSON.stringify(cmd) });
  assertJsonResult(r, { status: 200, content, isError: false, etag: etagOf('line \u00e9') });
});

test('malformed bodies: invalid JSON, empty, not an object, duplicate keys, trailing data', async () => {
  const err = (content, status = 400) => ({ status, content, isError: true });
  assertJsonResult(await post('{"command":'), err('Error: Invalid JSON in request body: unexpected token near end of file (line 1, column 11)'));
  assertJsonResult(await post('{"command":"view",}'), err("Error: Invalid JSON in request body: string or '}' expected near '}' (line 1, column 19)"));
  assertJsonResult(await post('nope'), err("Error: Invalid JSON in request body: invalid token near 'nope' (line 1, column 4)"));
  assertJsonResult(await post('{"command":"view","path":"/memories"} x'),
    err("Error: Invalid JSON in request body: end of file expected near 'x' (line 1, column 39)"));
  assertJsonResult(await post("{'command':'view'}"), err("Error: Invalid JSON in request body: string or '}' expected near ''' (line 1, column 2)"));
  const empty = 'Error: The request body is empty; send a memory command as JSON, e.g. {"command": "view", "path": "/memories"}';
  assertJsonResult(await post(''), err(empty));
  assertJsonResult(await raw({ headers: { 'x-tenant-id': TENANT } }), err(empty));
  for (const body of ['[]', '[{"command":"view","path":"/memories"}]']) {
    assertJsonResult(await post(body), err('Error: The request body must be a JSON object'));
  }
  // Duplicate keys are refused, at any depth.
  assertJsonResult(await post('{"command":"view","path":"/memories","path":"/memories/x"}'),
    err("Error: Invalid JSON in request body: duplicate object key near '\"path\"' (line 1, column 43)"));
  assertJsonResult(await post('{"command":"create","path":"/memories/dup","file_text":"a","file_text":"b"}'),
    err("Error: Invalid JSON in request body: duplicate object key near '\"file_text\"' (line 1, column 70)"));
  assertJsonResult(await post('{"type":"tool_use","id":"t","name":"memory","input":{"command":"view","command":"delete","path":"/memories/dup"}}'),
    err("Error: Invalid JSON in request body: duplicate object key near '\"command\"' (line 1, column 79)"));
  assertJsonResult(await post({ command: 'view', path: '/memories/dup' }),
    err('The path /memories/dup does not exist. Please provide a valid path.', 404));
});

test('a JSON scalar body (valid JSON, not an object) -> 400 "must be a JSON object", not "Invalid JSON"', async () => {
  for (const body of ['"view"', '5', 'null', 'true']) {
    assertJsonResult(await post(body), { status: 400, content: 'Error: The request body must be a JSON object', isError: true });
  }
});

test('unknown extra keys are ignored', async () => {
  assertJsonResult(await post({ command: 'create', path: '/memories/extra.txt', file_text: 'e', mode: 'overwrite', old_str: 5, new_path: 1 }),
    { status: 200, content: 'File created successfully at: /memories/extra.txt', isError: false });
  assertJsonResult(await post({ command: 'view', path: '/memories/extra.txt', extra: { deep: [1, 2] }, insert_line: 'x' }),
    { status: 200, content: "Here's the content of /memories/extra.txt with line numbers:\n     1\te", isError: false, etag: etagOf('e') });
});

test('any request Content-Type is accepted and the body is never form-decoded', async () => {
  const fileText = 'a+b=c&d%20e %2e';
  const types = [
    'application/x-www-form-urlencoded', // curl -d
    'text/plain',
    'application/octet-stream',
    'application/json; charset=utf-8',
    'multipart/form-data; boundary=x',
    undefined, // none at all
  ];
  for (const [i, type] of types.entries()) {
    const headers = { 'x-tenant-id': TENANT };
    if (type) headers['content-type'] = type;
    const path = `/memories/ct${i}.txt`;
    assertJsonResult(await raw({ headers, body: JSON.stringify({ command: 'create', path, file_text: fileText }) }),
      { status: 200, content: `File created successfully at: ${path}`, isError: false });
    assertJsonResult(await raw({ headers, body: JSON.stringify({ command: 'view', path }) }),
      { status: 200, content: `Here's the content of ${path} with line numbers:\n     1\t${fileText}`, isError: false, etag: etagOf(fileText) });
  }
});

test('GET (or another method) on /memory -> 405 with Allow: POST and a tool_result body', async () => {
  for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
    const r = await raw({ method, headers: { 'x-tenant-id': TENANT } });
    assert.equal(r.status, 405, `${method} /memory: status`);
    assert.equal(r.headers.allow, 'POST', `${method} /memory: Allow`);
    assert.equal(r.headers['x-memory-is-error'], 'true');
    assert.deepEqual(r.json, { type: 'tool_result', content: 'Error: Use POST /memory with a JSON memory command', is_error: true });
  }
});

test('unknown route -> 404 JSON', async () => {
  const notFound = '{"error":"not found: use POST /memory, POST /mcp, GET /healthz, GET /readyz, GET /metrics, GET /v1/history, GET /v1/versions/{version}, POST /v1/restore, POST /v1/redact, GET /v1/changes, GET /v1/search, DELETE /v1/memories, GET /v1/expiring, GET /v1/tenants, GET /v1/tenants/{tenant}, PUT /v1/tenants/{tenant}/limits, GET /v1/tenants/{tenant}/export, POST /v1/tenants/{tenant}/import or GET /v1/tenants/{tenant}/secrets (see openapi.yaml)"}';
  for (const [method, path] of [['GET', '/'], ['POST', '/memory/'], ['POST', '/Memory'], ['POST', '/memories'], ['GET', '/nope']]) {
    const r = await raw({ method, path, body: method === 'POST' ? '{"command":"view","path":"/memories"}' : undefined });
    assert.equal(r.status, 404, `${method} ${path}`);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.equal(r.text, notFound);
  }
  // A query string does not change the route.
  const q = await raw({ path: '/memory?x=1', headers: { 'x-tenant-id': TENANT }, body: '{"command":"view","path":"/memories/extra.txt"}' });
  assertJsonResult(q, { status: 200, content: "Here's the content of /memories/extra.txt with line numbers:\n     1\te", isError: false, etag: etagOf('e') });
});

test('a /memory response body is a tool_result whatever the status (JSON and text)', async () => {
  const seen = new Set();
  const requests = [
    [{ command: 'view', path: '/memories' }, 200],
    ['{', 400],
    [{ command: 'view', path: '/memories/nothing' }, 404],
    [{ command: 'create', path: '/memories/extra.txt', file_text: '' }, 409],
    [{ command: 'create', path: '/memories/big.txt', file_text: 'x'.repeat(1001) }, 413],
    ['x'.repeat(65537), 413],
    [{ command: 'insert', path: '/memories/extra.txt', insert_line: 9, insert_text: '' }, 422],
  ];
  for (const [body, status] of requests) {
    const j = await post(body);
    assert.equal(j.status, status, j.text);
    assert.equal(j.headers.get('content-type'), 'application/json');
    assert.deepEqual(Object.keys(j.json), ['type', 'content', 'is_error']);
    assert.equal(j.json.type, 'tool_result');
    assert.equal(typeof j.json.content, 'string');
    assert.equal(j.json.is_error, status !== 200);
    assert.equal(j.headers.get('x-memory-is-error'), String(status !== 200));
    const t = await post(body, { accept: 'text/plain' });
    assert.equal(t.status, status);
    assert.equal(t.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.equal(t.text, j.json.content);
    assert.equal(t.headers.get('x-memory-is-error'), String(status !== 200));
    seen.add(status);
  }
  assert.deepEqual([...seen], [200, 400, 404, 409, 413, 422]);
  // The two 413s, exactly.
  assert.equal((await post({ command: 'create', path: '/memories/big.txt', file_text: 'x'.repeat(1001) })).json.content,
    'Error: File /memories/big.txt would be 1001 bytes, over the 1000-byte file size limit');
  assert.equal((await post('x'.repeat(65537))).json.content, 'Error: The request body exceeds the limit of 65536 bytes');
  // A tool_use block's failure keeps its id at every status as well.
  const tu = await post({ type: 'tool_use', id: 'toolu_big', name: 'memory', input: { command: 'create', path: '/memories/big.txt', file_text: 'x'.repeat(1001) } });
  assertJsonResult(tu, { status: 413, content: 'Error: File /memories/big.txt would be 1001 bytes, over the 1000-byte file size limit', isError: true, toolUseId: 'toolu_big' });
});
