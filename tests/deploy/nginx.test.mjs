// The authenticating reverse proxy (docker/nginx.conf + docker/tenants.map) with a REAL
// nginx (Debian 12's 1.22) in front of a real memoryd, both on loopback.
//
// memoryd runs as docker/compose.yaml runs it: --trusted-proxies set to the proxy's
// address and --require-tenant. nginx connects from 127.0.0.2 (proxy_bind), the test's
// direct requests come from 127.0.0.1, so memoryd can tell the two apart.
//
// Proves: two keys are two tenants that cannot see each other's files; a client's
// X-Tenant-ID never reaches memoryd (one header, the key's tenant; no Authorization);
// 401 without a valid key; 405 / 404 for what is not forwarded; the per-tenant /v1 API
// (history, versions, search, changes, restore) reached with the key's tenant; 413 from nginx above
// 4 MiB while exactly 4 MiB reaches memoryd; 429 past the per-tenant rate limit, and past
// the per-address one for key guessing (requests without a valid key count too); 403
// for a client going around nginx; 502 when memoryd is down; upstream keep-alive; a key
// made as tenants.map says works after a reload; the access log carries the tenant and
// never the key; docker/healthcheck.sh through the proxy.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startServer } from '../lib/server.mjs';
import { DOCKER, memorydLogSync, memorydRequests, run } from './lib/deploy.mjs';
import { nginxCheck, startNginx } from './lib/nginx.mjs';

const KEY_A = 'example-key-team-a-do-not-use';
const KEY_B = 'example-key-team-b-do-not-use';
const LISTING = 'Here\'re the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n';
const UNAUTHORIZED = '{"type":"tool_result","content":"Error: Unauthorized: send the header Authorization: Bearer <API key>","is_error":true}';
const view = (p = '/memories') => ({ command: 'view', path: p });
const ok = (content) => ({ type: 'tool_result', content, is_error: false });
const err = (content) => ({ type: 'tool_result', content, is_error: true });

let md; // memoryd
let mdDir; // its temp dir
let px; // nginx

const mdRequests = (tenant) => memorydRequests(md, tenant);
const mdSync = () => memorydLogSync(md);

before(async () => {
  md = await startServer({ args: ['--trusted-proxies', '127.0.0.2', '--require-tenant'] });
  mdDir = md.dir;
  px = await startNginx({ upstreamPort: md.port });
});

after(async () => {
  if (px) await px.stop();
  if (md) await md.stop();
  if (mdDir) fs.rmSync(mdDir, { recursive: true, force: true });
});

test('nginx -t accepts the configuration', async () => {
  const r = await nginxCheck(path.join(px.dir, 'nginx.conf'), px.dir);
  assert.deepEqual([r.code, r.stdout, r.stderr.split('\n').map((l) => l.replace(px.dir, '<dir>'))], [0, '', [
    'nginx: the configuration file <dir>/nginx.conf syntax is ok',
    'nginx: configuration file <dir>/nginx.conf test is successful',
    '',
  ]]);
});

test('two API keys reach two separate tenants: what one creates the other cannot see', async () => {
  let r = await px.request({ key: KEY_A, body: { command: 'create', path: '/memories/a.txt', file_text: 'from A' } });
  assert.deepEqual([r.status, r.json], [200, ok('File created successfully at: /memories/a.txt')]);
  r = await px.request({ key: KEY_B, body: view() });
  assert.deepEqual([r.status, r.json], [200, ok(`${LISTING}0B\t/memories`)]);
  r = await px.request({ key: KEY_B, body: { command: 'create', path: '/memories/b.txt', file_text: 'from B!' } });
  assert.deepEqual([r.status, r.json], [200, ok('File created successfully at: /memories/b.txt')]);

  r = await px.request({ key: KEY_A, body: view() });
  assert.deepEqual([r.status, r.json], [200, ok(`${LISTING}6B\t/memories\n6B\t/memories/a.txt`)]);
  r = await px.request({ key: KEY_B, body: view() });
  assert.deepEqual([r.status, r.json], [200, ok(`${LISTING}7B\t/memories\n7B\t/memories/b.txt`)]);
  r = await px.request({ key: KEY_A, body: view('/memories/b.txt') });
  assert.deepEqual([r.status, r.json], [404, err('The path /memories/b.txt does not exist. Please provide a valid path.')]);
  r = await px.request({ key: KEY_B, body: { command: 'delete', path: '/memories/a.txt' } });
  assert.deepEqual([r.status, r.json], [404, err('Error: The path /memories/a.txt does not exist')]);
  r = await px.request({ key: KEY_A, body: view('/memories/a.txt'), headers: { accept: 'text/plain' } });
  assert.deepEqual([r.status, r.text, r.headers['x-memory-is-error']],
    [200, 'Here\'s the content of /memories/a.txt with line numbers:\n     1\tfrom A', 'false']);

  await mdSync();
  assert.deepEqual(mdRequests().map((l) => [l.tenant, l.command, l.status]), [
    ['team-a', 'create', 200], ['team-b', 'view', 200], ['team-b', 'create', 200],
    ['team-a', 'view', 200], ['team-b', 'view', 200], ['team-a', 'view', 404],
    ['team-b', 'delete', 404], ['team-a', 'view', 200],
  ]);
});

test('a client-supplied X-Tenant-ID is overwritten with the key\'s tenant', async () => {
  await mdSync();
  const before = mdRequests().length;
  const forged = [
    { 'x-tenant-id': 'team-b' },
    { 'X-TENANT-ID': 'team-b' },
    { 'x-tenant-id': ['team-b', 'team-c'] }, // twice: memoryd alone would answer 400
    { 'x-tenant-id': '../team-b' }, // invalid: memoryd alone would answer 400
    { 'x-tenant-id': '' },
  ];
  for (const headers of forged) {
    const r = await px.request({ key: KEY_A, headers, body: view() });
    assert.deepEqual([r.status, r.json], [200, ok(`${LISTING}6B\t/memories\n6B\t/memories/a.txt`)], JSON.stringify(headers));
  }
  await mdSync();
  assert.deepEqual(mdRequests().slice(before).map((l) => l.tenant), Array(forged.length).fill('team-a'));
});

test('without a valid key: 401 from nginx with WWW-Authenticate, nothing reaches memoryd', async () => {
  await mdSync();
  const before = mdRequests().length;
  const cases = [
    [{}, 'Bearer realm="memoryd"'],
    [{ authorization: 'Bearer wrong-key' }, 'Bearer realm="memoryd", error="invalid_token"'],
    [{ authorization: `Basic ${KEY_A}` }, 'Bearer realm="memoryd", error="invalid_token"'],
    [{ authorization: `Bearer ${KEY_A} extra` }, 'Bearer realm="memoryd", error="invalid_token"'],
    [{ authorization: `Bearer ${KEY_A.slice(0, -1)}` }, 'Bearer realm="memoryd", error="invalid_token"'],
    [{ authorization: 'Bearer ' }, 'Bearer realm="memoryd", error="invalid_token"'],
    [{ 'x-tenant-id': 'team-a' }, 'Bearer realm="memoryd"'],
  ];
  for (const [headers, wwwAuth] of cases) {
    const r = await px.request({ headers, body: view() });
    assert.deepEqual([r.status, r.text, r.headers['content-type'], r.headers['www-authenticate'], r.headers['x-memory-is-error']],
      [401, UNAUTHORIZED, 'application/json', wwwAuth, 'true'], JSON.stringify(headers));
  }
  // Also for a GET: authentication comes before anything else.
  const g = await px.request({ method: 'GET' });
  assert.deepEqual([g.status, g.text], [401, UNAUTHORIZED]);
  await mdSync();
  assert.equal(mdRequests().length, before);
});

test('the key\'s scheme and the key itself are matched ignoring case (hex keys, see tenants.map)', async () => {
  let r = await px.request({ headers: { authorization: `bearer ${KEY_A}` }, body: view() });
  assert.deepEqual([r.status, r.json], [200, ok(`${LISTING}6B\t/memories\n6B\t/memories/a.txt`)]);
  r = await px.request({ headers: { authorization: `BEARER   ${KEY_A.toUpperCase()}` }, body: view() });
  assert.deepEqual([r.status, r.json], [200, ok(`${LISTING}6B\t/memories\n6B\t/memories/a.txt`)]);
});

const NOT_FOUND = '{"error":"not found: use POST /memory, /mcp, GET /healthz, GET /readyz or the per-tenant /v1 API (history, versions, restore, redact, changes, search, memories, expiring)"}';

test('only POST /memory, /mcp, the per-tenant /v1 API, GET /healthz and GET /readyz are forwarded', async () => {
  await mdSync();
  const before = mdRequests().length;
  for (const method of ['GET', 'PUT', 'DELETE']) {
    const r = await px.request({ method, key: KEY_A });
    assert.deepEqual([r.status, r.text, r.headers.allow, r.headers['x-memory-is-error']],
      [405, '{"type":"tool_result","content":"Error: Use POST /memory with a JSON memory command","is_error":true}', 'POST', 'true'], method);
  }
  const notForwarded = ['/', '/memory/', '/memories', '/Memory', '/healthz/x', '/metrics', '/_memoryd_key',
    '/v1', '/v1/', '/v1/tenants', '/v1/tenants/team-a', '/v1/tenants/team-a/export', '/v1/history/x', '/v1/versions/1/x', '/v1/Search'];
  for (const p of notForwarded) {
    for (const method of ['GET', 'POST', 'DELETE']) {
      const r = await px.request({ path: p, method, key: KEY_A, body: method === 'POST' ? view() : undefined });
      assert.deepEqual([r.status, r.text], [404, NOT_FOUND], `${method} ${p}`);
    }
  }
  await mdSync();
  assert.equal(mdRequests().length, before);
  let r = await px.request({ path: '/healthz', method: 'GET' });
  assert.deepEqual([r.status, r.text], [200, '{"status":"ok"}']);
  r = await px.request({ path: '/readyz', method: 'GET' });
  assert.deepEqual([r.status, r.text], [200, '{"status":"ready"}']);
  // docker/proxy.Dockerfile's HEALTHCHECK: healthcheck.sh through nginx.
  const h = await run(path.join(DOCKER, 'healthcheck.sh'), ['127.0.0.1', String(px.port)]);
  assert.deepEqual([h.code, h.stdout, h.stderr], [0, 'healthy: {"status":"ok"}\n', '']);
});

test('the per-tenant /v1 API through nginx: the key\'s tenant (another key\'s X-Tenant-ID ignored), memoryd\'s answers, JSON errors from nginx', async () => {
  const KEY = await px.addKey('team-v1'); // a tenant of its own: the rate limits of the others untouched
  const p = '/memories/v1-proxied.md';
  const get = (pathq, key, headers) => px.request({ path: pathq, method: 'GET', key, headers });
  let r = await px.request({ key: KEY, body: { command: 'create', path: p, file_text: 'billing cycle\n' } });
  assert.equal(r.status, 200, r.text);
  r = await px.request({ key: KEY, body: { command: 'str_replace', path: p, old_str: 'billing', new_str: 'payment' } });
  assert.equal(r.status, 200, r.text);
  // history: the file's two versions, newest first; its first version's content.
  r = await get(`/v1/history?path=${p}`, KEY);
  assert.equal(r.status, 200, r.text);
  const versions = JSON.parse(r.text).versions;
  assert.deepEqual(versions.map((v) => [v.command, v.existed]), [['str_replace', true], ['create', false]]);
  r = await get(`/v1/versions/${versions[0].version}`, KEY);
  assert.deepEqual([r.status, JSON.parse(r.text).content], [200, 'billing cycle\n']);
  // search and the change feed, as team-a.
  r = await get('/v1/search?q=payment', KEY);
  assert.deepEqual([r.status, JSON.parse(r.text).hits.map((h) => h.path)], [200, [p]]);
  r = await get('/v1/changes', KEY);
  assert.equal(r.status, 200, r.text);
  assert.ok(JSON.parse(r.text).changes.some((c) => c.paths.includes(p)), r.text);
  // restore, a write: the file is back as it was.
  r = await px.request({ path: '/v1/restore', key: KEY, body: { path: p, version: versions[0].version } });
  assert.equal(r.status, 200, r.text);
  r = await px.request({ key: KEY, body: view(p) });
  assert.match(JSON.parse(r.text).content, /billing cycle/);
  // team-b's key sees none of it, whatever X-Tenant-ID it sends; its clear clears its own.
  r = await get(`/v1/history?path=${p}`, KEY_B, { 'x-tenant-id': 'team-v1' });
  assert.equal(r.status, 404, r.text);
  r = await get('/v1/search?q=payment', KEY_B, { 'x-tenant-id': 'team-v1' });
  assert.deepEqual([r.status, JSON.parse(r.text).hits], [200, []]);
  r = await px.request({ path: '/v1/memories', method: 'DELETE', key: KEY_B, headers: { 'x-tenant-id': 'team-v1' } });
  assert.equal(r.status, 200, r.text);
  r = await px.request({ key: KEY, body: view(p) });
  assert.match(JSON.parse(r.text).content, /billing cycle/);
  // Clear all (DELETE /v1/memories), as team-v1: every file gone, in one change.
  r = await px.request({ path: '/v1/memories', method: 'DELETE', key: KEY });
  assert.equal(r.status, 200, r.text);
  assert.equal(JSON.parse(r.text).removed, 1);
  r = await px.request({ key: KEY, body: view(p) });
  assert.match(JSON.parse(r.text).content, /does not exist/);
  // memoryd answers the methods: 405 with Allow.
  r = await px.request({ path: '/v1/search', method: 'PUT', key: KEY });
  assert.deepEqual([r.status, r.headers.allow, r.text], [405, 'GET', '{"error":"method not allowed"}']);
  // Without a valid key: nginx's 401, in the /v1 shape, never forwarded.
  await mdSync();
  const before = mdRequests().length;
  for (const key of [undefined, 'not-a-key']) {
    r = await get('/v1/changes', key);
    assert.deepEqual([r.status, r.text], [401, '{"error":"Unauthorized: send the header Authorization: Bearer <API key>"}']);
    assert.match(r.headers['www-authenticate'], /^Bearer realm="memoryd"/);
  }
  await mdSync();
  assert.equal(mdRequests().length, before);
});

test('a body over 4 MiB is refused by nginx with 413; exactly 4 MiB reaches memoryd', async () => {
  await mdSync();
  const before = mdRequests().length;
  const prefix = '{"command":"create","path":"/memories/big.txt","file_text":"';
  const json = (n) => prefix + 'x'.repeat(n - prefix.length - 2) + '"}';
  const big = await px.request({ key: KEY_A, body: json(4 * 1024 * 1024 + 1) });
  assert.deepEqual([big.status, big.text, big.headers['x-memory-is-error']],
    [413, '{"type":"tool_result","content":"Error: The request body exceeds the limit of 4194304 bytes","is_error":true}', 'true']);
  await mdSync();
  assert.equal(mdRequests().length, before, 'the oversized body never reached memoryd');
  // 4 MiB exactly passes nginx; memoryd answers (its file limit is 1 MiB).
  const max = await px.request({ key: KEY_A, body: json(4 * 1024 * 1024) });
  assert.deepEqual([max.status, max.json],
    [413, err(`Error: File /memories/big.txt would be ${4 * 1024 * 1024 - prefix.length - 2} bytes, over the 1048576-byte file size limit`)]);
  await mdSync();
  assert.deepEqual(mdRequests().slice(before).map((l) => [l.tenant, l.status, l.bytes_in]), [['team-a', 413, 4194304]]);
});

test('a key made with `openssl rand -hex 32` and added to tenants.map works after a reload', async () => {
  const key = await px.addKey('team-c');
  let r = await px.request({ key, body: view() });
  assert.deepEqual([r.status, r.json], [200, ok(`${LISTING}0B\t/memories`)]);
  r = await px.request({ key: KEY_A, body: view() }); // the example keys still work
  assert.deepEqual([r.status, r.json], [200, ok(`${LISTING}6B\t/memories\n6B\t/memories/a.txt`)]);
});

test('past the rate limit (10 r/s, burst 20, per tenant) nginx answers 429; other tenants are unaffected', async () => {
  const key = await px.addKey('team-rate');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const statuses = [];
    let limited = null;
    const t0 = Date.now();
    // A fresh tenant's first 1 + burst requests are always served; then one is refused as
    // soon as requests come faster than 10 a second, which these (one at a time, no pause)
    // do by far.
    while (!limited && statuses.length < 200) {
      const r = await px.request({ key, body: view(), agent });
      statuses.push(r.status);
      if (r.status === 429) limited = r;
      else assert.deepEqual([r.status, r.json], [200, ok(`${LISTING}0B\t/memories`)]);
    }
    const ms = Date.now() - t0;
    assert.ok(limited, `no 429 in 200 requests (${ms} ms)`);
    assert.deepEqual([limited.text, limited.headers['retry-after'], limited.headers['x-memory-is-error']],
      ['{"type":"tool_result","content":"Error: Too many requests; the command was not applied. Retry shortly.","is_error":true}', '1', 'true']);
    const served = statuses.length - 1;
    // 21 at once, plus at most one more per 100 ms elapsed.
    assert.ok(served >= 21 && served <= 21 + Math.ceil(ms / 100), `served ${served} in ${ms} ms`);
    await mdSync();
    assert.equal(mdRequests('team-rate').length, served, 'the refused request never reached memoryd');
    // The limit is per tenant.
    const other = await px.request({ key: KEY_B, body: view(), agent });
    assert.equal(other.status, 200);
  } finally {
    agent.destroy();
  }
});

test('key guessing from one address: 401s, then 429 past the per-address limit (50 r/s, burst 100), valid keys from it counted too; other addresses unaffected', async () => {
  const RATE_LIMITED = '{"type":"tool_result","content":"Error: Too many requests; the command was not applied. Retry shortly.","is_error":true}';
  const key = await px.addKey('team-guess'); // (a reload: before the guesser connects)
  await mdSync();
  const before = mdRequests().length;
  // The guesser: one kept-alive connection from 127.0.0.3.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1, localAddress: '127.0.0.3' });
  try {
    const t0 = Date.now();
    // 20 requests with a valid key (within its tenant's burst): they count for the address.
    for (let i = 0; i < 20; i++) {
      const r = await px.request({ key, body: view(), agent });
      assert.deepEqual([r.status, r.json], [200, ok(`${LISTING}0B\t/memories`)]);
    }
    // Then a new wrong key each time, one request at a time, until refused.
    let limited = null;
    let guesses = 0;
    while (!limited && guesses < 1000) {
      const r = await px.request({ key: `guess-${guesses}`, body: view(), agent });
      if (r.status === 429) limited = r;
      else {
        assert.deepEqual([r.status, r.text, r.headers['www-authenticate']], [401, UNAUTHORIZED, 'Bearer realm="memoryd", error="invalid_token"']);
        guesses++;
      }
    }
    const ms = Date.now() - t0;
    assert.ok(limited, `no 429 after ${guesses} wrong keys (${ms} ms)`);
    assert.deepEqual([limited.text, limited.headers['retry-after'], limited.headers['x-memory-is-error']], [RATE_LIMITED, '1', 'true']);
    // 1 + burst 100 at once, 20 of them the valid key's, plus at most one more per 20 ms elapsed.
    assert.ok(guesses >= 81 && guesses <= 81 + Math.ceil(ms / 20), `${guesses} wrong keys answered 401 in ${ms} ms`);
  } finally {
    agent.destroy();
  }
  // Another address is served.
  const other = await px.request({ key: KEY_A, body: view() });
  assert.deepEqual([other.status, other.json], [200, ok(`${LISTING}6B\t/memories\n6B\t/memories/a.txt`)]);
  await mdSync();
  assert.deepEqual(mdRequests().slice(before).map((l) => l.tenant), [...Array(20).fill('team-guess'), 'team-a'], 'no guess reached memoryd');
  const log = px.accessLog().trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.client === '127.0.0.3');
  assert.deepEqual([...new Set(log.map((l) => `${l.tenant} ${l.status}`))], ['team-guess 200', ' 401', ' 429']);
});

test('going around nginx: memoryd answers 403 to any other address (header or not)', async () => {
  const forbidden = err('Error: Forbidden: 127.0.0.1 is not a trusted proxy; send requests through the proxy');
  let r = await md.post(view(), { tenant: 'team-a' });
  assert.deepEqual([r.status, r.json], [403, forbidden]);
  r = await md.post(view());
  assert.deepEqual([r.status, r.json], [403, forbidden]);
  r = await md.request('GET', '/healthz');
  assert.deepEqual([r.status, r.text], [200, '{"status":"ok"}']);
});

test('the access log is one JSON object per request with the tenant, and never holds a key', () => {
  const lines = px.accessLog().trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(lines.length > 40, `${lines.length} lines`);
  assert.deepEqual(Object.keys(lines[0]), ['time', 'client', 'tenant', 'method', 'uri', 'status', 'bytes_in', 'bytes_out', 'request_time', 'upstream_time']);
  assert.deepEqual([lines[0].tenant, lines[0].status, lines[0].uri, lines[0].client], ['team-a', 200, '/memory', '127.0.0.1']);
  assert.ok(lines.some((l) => l.tenant === '' && l.status === 401));
  assert.ok(lines.some((l) => l.tenant === 'team-rate' && l.status === 429));
  for (const out of [px.accessLog(), px.errorLog()]) {
    assert.ok(!out.includes(KEY_A) && !out.includes(KEY_B), 'a key in the logs');
  }
});

test('what memoryd receives: one X-Tenant-ID, no Authorization, from the proxy address, over kept-alive connections', async () => {
  // A stand-in upstream that records requests, behind a second nginx from the same file.
  const seen = [];
  let sockets = 0;
  const upstream = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      seen.push({ raw: req.rawHeaders, addr: req.socket.remoteAddress, socket: req.socket.id, body: Buffer.concat(chunks).toString() });
      res.setHeader('content-type', 'application/json');
      res.end('{"type":"tool_result","content":"ok","is_error":false}');
    });
  });
  upstream.on('connection', (s) => { s.id = ++sockets; });
  await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const px2 = await startNginx({ upstreamPort: upstream.address().port });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const body = JSON.stringify(view());
    for (const headers of [{ 'x-tenant-id': 'team-b' }, { 'x-tenant-id': ['x', 'y'], 'x-forwarded-for': '10.0.0.1' }, {}]) {
      const r = await px2.request({ key: KEY_A, headers: { 'content-type': 'application/json', ...headers }, body, agent });
      assert.equal(r.status, 200);
    }
    // A chunked request body arrives with a Content-Length (nginx buffers it first).
    const chunked = await new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: px2.port, method: 'POST', path: '/memory', agent, headers: { authorization: `Bearer ${KEY_B}` } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      });
      req.on('error', reject);
      req.write(body.slice(0, 10));
      req.end(body.slice(10));
    });
    assert.equal(chunked, 200);

    assert.equal(seen.length, 4);
    const values = (raw, name) => raw.filter((v, j) => j % 2 === 1 && raw[j - 1].toLowerCase() === name);
    for (const [i, s] of seen.entries()) {
      const tenant = i === 3 ? 'team-b' : 'team-a';
      assert.deepEqual(values(s.raw, 'x-tenant-id'), [tenant], `request ${i}: exactly one X-Tenant-ID, the key's tenant`);
      assert.deepEqual(values(s.raw, 'authorization'), [], `request ${i}: no Authorization`);
      assert.deepEqual(values(s.raw, 'connection'), [], `request ${i}: no Connection header (HTTP/1.1 keep-alive)`);
      assert.deepEqual(values(s.raw, 'transfer-encoding'), [], `request ${i}: not chunked`);
      assert.deepEqual(values(s.raw, 'content-length'), [String(Buffer.byteLength(body))], `request ${i}: Content-Length`);
      assert.equal(s.addr, '127.0.0.2', `request ${i}: from proxy_bind's address`);
      assert.equal(s.body, body);
    }
    // One client connection, so one nginx worker, which kept its one upstream connection.
    assert.deepEqual([...new Set(seen.map((s) => s.socket))], [1]);
  } finally {
    agent.destroy();
    await px2.stop();
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
  }
});

test('MCP through nginx: the SDK client with a key reaches the key\'s tenant; nginx\'s errors are JSON-RPC', async () => {
  const key = await px.addKey('team-mcp');
  // A forged X-Tenant-ID is overwritten here too.
  const headers = { authorization: `Bearer ${key}`, 'x-tenant-id': 'team-a' };
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${px.port}/mcp`), { requestInit: { headers } });
  const client = new Client({ name: 'nginx-test', version: '1.0.0' });
  await client.connect(transport);
  try {
    let c = await client.callTool({ name: 'memory', arguments: { command: 'create', path: '/memories/m.txt', file_text: 'via MCP' } });
    assert.deepEqual(c, { content: [{ type: 'text', text: 'File created successfully at: /memories/m.txt' }], isError: false });
    c = await client.callTool({ name: 'memory', arguments: view() });
    assert.deepEqual(c, { content: [{ type: 'text', text: `${LISTING}7B\t/memories\n7B\t/memories/m.txt` }], isError: false });
    // POST /memory with the same key: the same tenant.
    const r = await px.request({ key, body: view('/memories/m.txt') });
    assert.deepEqual([r.status, r.json.content, r.json.is_error], [200, 'Here\'s the content of /memories/m.txt with line numbers:\n     1\tvia MCP', false]);
  } finally {
    await client.close();
  }
  await mdSync();
  const lines = md.logs.filter((l) => l.msg === 'request' && l.route === '/mcp');
  const posts = lines.filter((l) => l.method === 'POST');
  assert.deepEqual(posts.map((l) => [l.tenant, l.rpc_method, l.command ?? null, l.status]), [
    ['team-mcp', 'initialize', null, 200],
    ['team-mcp', 'notifications/initialized', null, 202],
    ['team-mcp', 'tools/call', 'create', 200],
    ['team-mcp', 'tools/call', 'view', 200],
  ]);
  // The SDK's GET (the optional stream): memoryd's 405, before any tenant is decided.
  assert.deepEqual(lines.filter((l) => l.method !== 'POST').map((l) => [l.method, l.status]), [['GET', 405]]);
  // Without a valid key: nginx's 401, as a JSON-RPC error; nothing reaches memoryd.
  for (const h of [{}, { authorization: 'Bearer wrong-key' }]) {
    const u = await px.request({ path: '/mcp', headers: h, body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25' } } });
    assert.deepEqual([u.status, u.headers['content-type'], u.json],
      [401, 'application/json', { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Unauthorized: send the header Authorization: Bearer <API key>' } }]);
  }
  await mdSync();
  assert.equal(md.logs.filter((l) => l.msg === 'request' && l.route === '/mcp').length, lines.length);
});

test('memoryd down: nginx answers 502 in the tool_result shape and the proxy health check fails', async () => {
  await md.stop();
  const r = await px.request({ key: KEY_A, body: view() });
  assert.deepEqual([r.status, r.text, r.headers['retry-after'], r.headers['x-memory-is-error']],
    [502, '{"type":"tool_result","content":"Error: memoryd is unavailable (bad gateway). Retry shortly.","is_error":true}', '1', 'true']);
  const m = await px.request({ path: '/mcp', key: KEY_A, body: { jsonrpc: '2.0', id: 1, method: 'ping' } });
  assert.deepEqual([m.status, m.headers['retry-after'], m.json],
    [502, '1', { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'memoryd is unavailable (bad gateway). Retry shortly.' } }]);
  const h = await run(path.join(DOCKER, 'healthcheck.sh'), ['127.0.0.1', String(px.port)]);
  assert.deepEqual([h.code, h.stdout], [1, 'unhealthy: status line: HTTP/1.1 502 Bad Gateway\n']);
  md = null;
});
