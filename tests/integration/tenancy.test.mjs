// Proves docs/behaviour.md §2, tenancy: without the header the default tenant is
// used; two tenants with the same paths see and change only their own data,
// for every command; --require-tenant and MEMORYD_REQUIRE_TENANT=1 refuse a
// request without the header (400); a duplicated, empty, too long (129) or
// badly spelled tenant id is a 400 with the exact message, 128 characters are
// fine; --tenant-header renames the header and --default-tenant changes the
// default; --trusted-proxies serves /memory only to the listed addresses
// (403 for others, with or without the header), health checks to anyone.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { startServer, runMemoryd, tempDir } from '../lib/server.mjs';

const servers = [];
async function start(opts) {
  const s = await startServer(opts);
  servers.push(s);
  return s;
}
after(async () => {
  for (const s of servers) {
    await s.stop();
    fs.rmSync(s.dir, { recursive: true, force: true });
  }
});

// POST /memory with exactly these headers (node:http: arrays send a header
// line per value). Returns {status, text, json, headers}.
function raw(srv, headers, body, { accept, localAddress } = {}) {
  return new Promise((resolve, reject) => {
    const h = { 'content-type': 'application/json', ...headers };
    if (accept) h.accept = accept;
    const payload = typeof body === 'string' ? body : JSON.stringify(body);
    h['content-length'] = Buffer.byteLength(payload);
    const req = http.request({ host: '127.0.0.1', port: srv.port, method: 'POST', path: '/memory', headers: h, localAddress }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json = null;
        try { json = JSON.parse(text); } catch { /* text */ }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

// The result of one command: {status, content}; checks the envelope.
async function run(srv, headers, cmd) {
  const r = await raw(srv, headers, cmd);
  assert.ok(r.json, r.text);
  assert.equal(r.json.type, 'tool_result');
  assert.equal(r.json.is_error, r.status !== 200);
  return { status: r.status, content: r.json.content };
}

const T = (id) => ({ 'x-tenant-id': id });
const view = (path) => ({ command: 'view', path });
const fileView = (p, lines) => [`Here's the content of ${p} with line numbers:`, ...lines.map((l, i) => `${String(i + 1).padStart(6)}\t${l}`)].join('\n');
const listing = (p, entries) => [`Here're the files and directories up to 2 levels deep in ${p}, excluding hidden items and node_modules:`, ...entries].join('\n');
const invalidTenant = (header) =>
  `Error: Invalid ${header} header: a tenant id is 1 to 128 characters of A-Z, a-z, 0-9, '.', '_' and '-'`;

test('default tenant without the header; the header "default" names the same tenant', async () => {
  const srv = await start();
  assert.deepEqual(await run(srv, {}, { command: 'create', path: '/memories/d.txt', file_text: 'dflt' }),
    { status: 200, content: 'File created successfully at: /memories/d.txt' });
  assert.deepEqual(await run(srv, T('default'), view('/memories/d.txt')), { status: 200, content: fileView('/memories/d.txt', ['dflt']) });
  assert.deepEqual(await run(srv, T('other'), view('/memories/d.txt')),
    { status: 404, content: 'The path /memories/d.txt does not exist. Please provide a valid path.' });
  // The header name is case-insensitive.
  assert.deepEqual(await run(srv, { 'X-TENANT-ID': 'default' }, view('/memories/d.txt')), { status: 200, content: fileView('/memories/d.txt', ['dflt']) });
});

test('two tenants with the same paths see and change only their own data, for every command', async () => {
  const srv = await start();
  const A = T('tenant-a'), B = T('tenant.B_2');
  const p = '/memories/shared/notes.txt';
  for (const [h, text] of [[A, 'alpha\n'], [B, 'bravo bravo\n']]) {
    assert.deepEqual(await run(srv, h, { command: 'create', path: p, file_text: text }),
      { status: 200, content: `File created successfully at: ${p}` });
  }
  const aState = async () => [await run(srv, A, view('/memories')), await run(srv, A, view(p))];
  const bState = async () => [await run(srv, B, view('/memories')), await run(srv, B, view(p))];
  assert.deepEqual(await aState(), [
    { status: 200, content: listing('/memories', ['6B\t/memories', '6B\t/memories/shared/', '6B\t/memories/shared/notes.txt']) },
    { status: 200, content: fileView(p, ['alpha', '']) },
  ]);
  const bBefore = await bState();
  assert.deepEqual(bBefore, [
    { status: 200, content: listing('/memories', ['12B\t/memories', '12B\t/memories/shared/', '12B\t/memories/shared/notes.txt']) },
    { status: 200, content: fileView(p, ['bravo bravo', '']) },
  ]);

  // Each write command in A leaves B exactly as it was.
  const writes = [
    [{ command: 'str_replace', path: p, old_str: 'alpha', new_str: 'ALPHA' }, 200],
    [{ command: 'insert', path: p, insert_line: 0, insert_text: 'top' }, 200],
    [{ command: 'create', path: '/memories/only-a.txt', file_text: 'a' }, 200],
    [{ command: 'rename', old_path: '/memories/only-a.txt', new_path: '/memories/moved/a.txt' }, 200],
    [{ command: 'delete', path: '/memories/moved' }, 200],
  ];
  for (const [cmd, status] of writes) {
    assert.equal((await run(srv, A, cmd)).status, status, JSON.stringify(cmd));
    assert.deepEqual(await bState(), bBefore, `B changed by A's ${cmd.command}`);
  }
  assert.deepEqual((await run(srv, A, view(p))).content, fileView(p, ['top', 'ALPHA', '']));

  // B's commands cannot see A's text or paths.
  assert.deepEqual(await run(srv, B, { command: 'str_replace', path: p, old_str: 'ALPHA', new_str: 'x' }),
    { status: 409, content: `No replacement was performed, old_str \`ALPHA\` did not appear verbatim in ${p}.` });
  assert.deepEqual(await run(srv, A, { command: 'str_replace', path: p, old_str: 'bravo', new_str: 'x' }),
    { status: 409, content: `No replacement was performed, old_str \`bravo\` did not appear verbatim in ${p}.` });
  // A rename in B onto a path that exists only in A succeeds.
  await run(srv, A, { command: 'create', path: '/memories/taken.txt', file_text: 'A owns this' });
  assert.deepEqual(await run(srv, B, { command: 'rename', old_path: p, new_path: '/memories/taken.txt' }),
    { status: 200, content: `Successfully renamed ${p} to /memories/taken.txt` });
  assert.deepEqual(await run(srv, A, view('/memories/taken.txt')), { status: 200, content: fileView('/memories/taken.txt', ['A owns this']) });
  assert.deepEqual(await run(srv, A, view(p)), { status: 200, content: fileView(p, ['top', 'ALPHA', '']) });
  // Deleting the whole shared directory in B leaves A's.
  assert.deepEqual(await run(srv, B, { command: 'delete', path: '/memories/shared' }),
    { status: 200, content: 'Successfully deleted /memories/shared' });
  assert.deepEqual(await run(srv, A, view(p)), { status: 200, content: fileView(p, ['top', 'ALPHA', '']) });

  // A third tenant sees an empty /memories and none of the paths.
  const C = T('tenant-c');
  assert.deepEqual(await run(srv, C, view('/memories')), { status: 200, content: listing('/memories', ['0B\t/memories']) });
  const missing = [
    [view(p), 404, `The path ${p} does not exist. Please provide a valid path.`],
    [{ command: 'str_replace', path: p, old_str: 'a', new_str: 'b' }, 404, `Error: The path ${p} does not exist. Please provide a valid path.`],
    [{ command: 'insert', path: p, insert_line: 0, insert_text: 'x' }, 404, `Error: The path ${p} does not exist`],
    [{ command: 'delete', path: p }, 404, `Error: The path ${p} does not exist`],
    [{ command: 'rename', old_path: p, new_path: '/memories/x' }, 404, `Error: The path ${p} does not exist`],
  ];
  for (const [cmd, status, content] of missing) {
    assert.deepEqual(await run(srv, C, cmd), { status, content }, JSON.stringify(cmd));
  }
  // Tenant ids are case-sensitive: "tenant-A" is not "tenant-a".
  assert.deepEqual(await run(srv, T('TENANT-A'), view('/memories')), { status: 200, content: listing('/memories', ['0B\t/memories']) });
});

test('the header sent twice, empty, 129 characters or with other characters -> 400, nothing stored', async () => {
  const srv = await start();
  const create = { command: 'create', path: '/memories/x.txt', file_text: 'x' };
  const cases = [
    [{ 'x-tenant-id': ['a', 'b'] }, 'Error: The X-Tenant-ID header was sent more than once'],
    [{ 'x-tenant-id': ['a', 'a'] }, 'Error: The X-Tenant-ID header was sent more than once'],
    [{ 'x-tenant-id': '' }, invalidTenant('X-Tenant-ID')],
    [{ 'x-tenant-id': 'a'.repeat(129) }, invalidTenant('X-Tenant-ID')],
    [{ 'x-tenant-id': 'a b' }, invalidTenant('X-Tenant-ID')],
    [{ 'x-tenant-id': 'a/b' }, invalidTenant('X-Tenant-ID')],
    [{ 'x-tenant-id': 'a:b' }, invalidTenant('X-Tenant-ID')],
    [{ 'x-tenant-id': 'a,b' }, invalidTenant('X-Tenant-ID')],
    [{ 'x-tenant-id': 'a*' }, invalidTenant('X-Tenant-ID')],
    [{ 'x-tenant-id': 'caf\u00e9' }, invalidTenant('X-Tenant-ID')],
    [{ 'x-tenant-id': '../x' }, invalidTenant('X-Tenant-ID')],
  ];
  for (const [headers, message] of cases) {
    assert.deepEqual(await run(srv, headers, create), { status: 400, content: message }, JSON.stringify(headers));
    // Text form too.
    const t = await raw(srv, headers, create, { accept: 'text/plain' });
    assert.equal(t.status, 400);
    assert.equal(t.text, message);
    assert.equal(t.headers['x-memory-is-error'], 'true');
  }
  // Nothing was stored anywhere.
  for (const id of ['a', 'default', 'a'.repeat(128)]) {
    assert.deepEqual(await run(srv, T(id), view('/memories')), { status: 200, content: listing('/memories', ['0B\t/memories']) });
  }
  // 128 characters of every allowed kind are fine.
  const long = `${'Az09._-'.repeat(18)}xy`;
  assert.equal(long.length, 128);
  assert.deepEqual(await run(srv, T(long), create), { status: 200, content: 'File created successfully at: /memories/x.txt' });
  assert.deepEqual(await run(srv, T(long), view('/memories/x.txt')), { status: 200, content: fileView('/memories/x.txt', ['x']) });
  for (const id of ['a', '.', '-', '_', '0']) {
    assert.deepEqual(await run(srv, T(id), view('/memories')), { status: 200, content: listing('/memories', ['0B\t/memories']) });
  }
});

for (const [how, opts] of [
  ['--require-tenant', { args: ['--require-tenant'] }],
  ['MEMORYD_REQUIRE_TENANT=1', { env: { MEMORYD_REQUIRE_TENANT: '1' } }],
]) {
  test(`${how}: a request without the header -> 400, with it -> served`, async () => {
    const srv = await start(opts);
    const missing = 'Error: Missing X-Tenant-ID header: this server requires a tenant';
    assert.deepEqual(await run(srv, {}, { command: 'create', path: '/memories/r.txt', file_text: 'r' }), { status: 400, content: missing });
    assert.deepEqual(await run(srv, {}, view('/memories')), { status: 400, content: missing });
    assert.deepEqual(await run(srv, T('t1'), { command: 'create', path: '/memories/r.txt', file_text: 'r' }),
      { status: 200, content: 'File created successfully at: /memories/r.txt' });
    assert.deepEqual(await run(srv, T('t1'), view('/memories/r.txt')), { status: 200, content: fileView('/memories/r.txt', ['r']) });
    assert.deepEqual(await run(srv, T('default'), view('/memories')), { status: 200, content: listing('/memories', ['0B\t/memories']) });
    const t = await raw(srv, {}, view('/memories'), { accept: 'text/plain' });
    assert.equal(t.status, 400);
    assert.equal(t.text, missing);
  });
}

test('--require-tenant: a tool_use block without the header gets its tool_use_id back', async () => {
  // The id is in the body, which memoryd has in hand: the tool_result must
  // carry it back (§1), or the harness cannot forward this error to the model.
  const srv = await start({ args: ['--require-tenant'] });
  const r = await raw(srv, {}, { type: 'tool_use', id: 'toolu_tenant', name: 'memory', input: view('/memories') });
  assert.equal(r.status, 400);
  assert.deepEqual(r.json, {
    type: 'tool_result',
    tool_use_id: 'toolu_tenant',
    content: 'Error: Missing X-Tenant-ID header: this server requires a tenant',
    is_error: true,
  });
});

test('--tenant-header renames the header; --default-tenant changes the default', async () => {
  const srv = await start({ args: ['--tenant-header', 'X-Org', '--default-tenant', 'acme'] });
  assert.deepEqual(await run(srv, { 'x-org': 'org1' }, { command: 'create', path: '/memories/o.txt', file_text: 'org1' }),
    { status: 200, content: 'File created successfully at: /memories/o.txt' });
  assert.deepEqual(await run(srv, { 'X-ORG': 'org1' }, view('/memories/o.txt')), { status: 200, content: fileView('/memories/o.txt', ['org1']) });
  // X-Tenant-ID means nothing now: such a request goes to the default tenant.
  assert.deepEqual(await run(srv, T('org1'), view('/memories/o.txt')),
    { status: 404, content: 'The path /memories/o.txt does not exist. Please provide a valid path.' });
  assert.deepEqual(await run(srv, T('org1'), { command: 'create', path: '/memories/d.txt', file_text: 'acme' }),
    { status: 200, content: 'File created successfully at: /memories/d.txt' });
  assert.deepEqual(await run(srv, {}, view('/memories/d.txt')), { status: 200, content: fileView('/memories/d.txt', ['acme']) });
  assert.deepEqual(await run(srv, { 'x-org': 'acme' }, view('/memories/d.txt')), { status: 200, content: fileView('/memories/d.txt', ['acme']) });
  assert.deepEqual(await run(srv, { 'x-org': 'default' }, view('/memories')), { status: 200, content: listing('/memories', ['0B\t/memories']) });
  // The messages name the configured header.
  assert.deepEqual(await run(srv, { 'x-org': ['a', 'b'] }, view('/memories')),
    { status: 400, content: 'Error: The X-Org header was sent more than once' });
  assert.deepEqual(await run(srv, { 'x-org': 'a b' }, view('/memories')), { status: 400, content: invalidTenant('X-Org') });
  // Two X-Tenant-ID headers are no longer an error either.
  assert.deepEqual(await run(srv, { 'x-tenant-id': ['a', 'b'] }, view('/memories/d.txt')), { status: 200, content: fileView('/memories/d.txt', ['acme']) });
});

test('--tenant-header with --require-tenant names the renamed header', async () => {
  const srv = await start({ env: { MEMORYD_TENANT_HEADER: 'X-Team', MEMORYD_REQUIRE_TENANT: 'true' } });
  assert.deepEqual(await run(srv, T('t'), view('/memories')),
    { status: 400, content: 'Error: Missing X-Team header: this server requires a tenant' });
  assert.deepEqual(await run(srv, { 'x-team': 't' }, view('/memories')), { status: 200, content: listing('/memories', ['0B\t/memories']) });
});

test('an invalid --default-tenant or MEMORYD_DEFAULT_TENANT: exit 2 with a message', async () => {
  const dir = tempDir();
  const db = `${dir}/never.db`;
  const flag = await runMemoryd(['--port', '0', '--db', db, '--default-tenant', 'bad tenant']);
  assert.equal(flag.code, 2);
  assert.equal(flag.stderr, "memoryd: invalid value for --default-tenant: 'bad tenant' (expected ID)\n");
  const env = await runMemoryd(['--port', '0', '--db', db], { env: { MEMORYD_DEFAULT_TENANT: 'x'.repeat(129) } });
  assert.equal(env.code, 2);
  assert.equal(env.stderr, `memoryd: invalid value for MEMORYD_DEFAULT_TENANT: '${'x'.repeat(129)}' (expected ID)\n`);
  const empty = await runMemoryd(['--port', '0', '--db', db, '--tenant-header', '']);
  assert.equal(empty.code, 2);
  assert.equal(empty.stderr, "memoryd: invalid value for --tenant-header: '' (expected NAME)\n");
  fs.rmSync(dir, { recursive: true, force: true });
});

test('--trusted-proxies: only the listed addresses reach /memory (403 for others, header or not); health checks stay open', async () => {
  // Loopback has every 127.x.y.z: the "proxy" is 127.0.0.2, a direct client 127.0.0.1.
  const srv = await start({ args: ['--trusted-proxies', '127.0.0.2, ::1'] });
  const create = { command: 'create', path: '/memories/p.txt', file_text: 'via proxy' };
  const forbidden = 'Error: Forbidden: 127.0.0.1 is not a trusted proxy; send requests through the proxy';
  for (const headers of [{}, { 'x-tenant-id': 'acme' }]) {
    const r = await raw(srv, headers, create, { localAddress: '127.0.0.1' });
    assert.deepEqual([r.status, r.json], [403, { type: 'tool_result', content: forbidden, is_error: true }]);
    const t = await raw(srv, headers, { type: 'tool_use', id: 'toolu_x', name: 'memory', input: create }, { localAddress: '127.0.0.1', accept: 'text/plain' });
    assert.deepEqual([t.status, t.text, t.headers['x-memory-is-error']], [403, forbidden, 'true']);
  }
  const ok = await raw(srv, { 'x-tenant-id': 'acme' }, create, { localAddress: '127.0.0.2' });
  assert.deepEqual([ok.status, ok.json.content], [200, 'File created successfully at: /memories/p.txt']);
  // Nothing the refused requests sent was applied: the proxy's create was the first.
  const view = await raw(srv, { 'x-tenant-id': 'acme' }, { command: 'view', path: '/memories/p.txt' }, { localAddress: '127.0.0.2' });
  assert.equal(view.json.content, "Here's the content of /memories/p.txt with line numbers:\n     1\tvia proxy");
  const dflt = await raw(srv, {}, { command: 'view', path: '/memories/p.txt' }, { localAddress: '127.0.0.2' });
  assert.equal(dflt.status, 404);
  for (const route of ['/healthz', '/readyz']) {
    const h = await fetch(`http://127.0.0.1:${srv.port}${route}`);
    assert.equal(h.status, 200);
  }
  const bad = await runMemoryd(['--trusted-proxies', '10.0.0.0/40']);
  assert.deepEqual([bad.code, bad.stderr], [2, "memoryd: invalid value for --trusted-proxies: '/40' is not a prefix length for 10.0.0.0 (0 to 32)\n"]);
  const badEnv = await runMemoryd([], { env: { MEMORYD_TRUSTED_PROXIES: 'proxy.local' } });
  assert.deepEqual([badEnv.code, badEnv.stderr], [2, "memoryd: invalid value for MEMORYD_TRUSTED_PROXIES: 'proxy.local' is not an IP address\n"]);
});
