// memoryd's own API keys (README "API keys", docs/behaviour.md 15): `memoryd keys
// create|list|revoke` on the test's database (SQLite, or PostgreSQL with MD_TEST_PG), and a
// memoryd with --auth keys:
//   - each scope's allowed and refused requests, with their exact texts (read: only views and
//     GET; write: everything of its tenant but /v1/tenants; admin: /v1/tenants of any tenant,
//     the listing and erasure included, from any address; an erasure takes the tenant's keys);
//   - the key decides the tenant; a tenant header that disagrees is refused (403) and nothing is
//     written, in particular the stolen-header attempt (a key of A with X-Tenant-ID: B);
//   - missing, malformed, unknown and revoked keys: 401 with WWW-Authenticate: Bearer;
//   - `memoryd keys revoke` takes effect at the next request;
//   - 10 failures from one address within 60 s: 429 with Retry-After, even for a valid key;
//   - `memoryd keys list` shows ids, never a key or its hash; bad CLI input changes nothing;
//   - no key created here appears in any log line of the test's memoryd processes or CLI runs,
//     while the request log names the key's id.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dbSql } from '../lib/db.mjs';
import { runMemoryd, startServer } from '../lib/server.mjs';

const servers = []; // running
const started = []; // every memoryd of this test, for its logs
const cliOutput = []; // stderr of every CLI run (stdout holds the keys themselves)
const created = []; // every key made

async function keys(db, ...args) {
  const r = await runMemoryd(['keys', ...args, '--db', db]);
  cliOutput.push(r.stderr);
  return r;
}

async function createKey(db, tenant, scope, name) {
  const r = await keys(db, 'create', '--tenant', tenant, '--scope', scope, ...(name ? ['--name', name] : []));
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split('\n');
  assert.match(lines[0], /^mdk_[A-Za-z0-9_-]{43}$/);
  assert.match(lines[1], /^id: key_[0-9a-f]{16}$/);
  assert.equal(lines.length, 3);
  created.push(lines[0]);
  return { key: lines[0], id: lines[1].slice(4) };
}

async function start(args = []) {
  const s = await startServer({ args: ['--auth', 'keys', ...args] });
  servers.push(s);
  started.push(s);
  return s;
}

const bearer = (k) => ({ authorization: `Bearer ${k.key}` });
const view = (path = '/memories') => ({ command: 'view', path });
const createFile = (path, text) => ({ command: 'create', path, file_text: text });
const errorResult = (content) => ({ type: 'tool_result', content, is_error: true });
const READ_ONLY = 'Error: Forbidden: this API key has the read scope: it may only view (the view command and GET requests). Nothing was done.';
const NOT_ADMIN = 'Forbidden: tenant administration (/v1/tenants) needs an API key with the admin scope';
const OTHER_TENANT = 'Error: Forbidden: the X-Tenant-ID header names another tenant than this API key\'s; the key decides the tenant: leave the header out or send the key\'s own tenant. Nothing was done.';
const MISSING = 'Error: Authentication required: send the header Authorization: Bearer <key> with a memoryd API key';
const RATE = 'Error: Too many failed authentication attempts from your address (10 within 60 seconds); nothing was done. Retry in a minute (Retry-After tells the seconds).';
const MALFORMED = 'Error: Invalid Authorization header: send it once, as Bearer followed by a memoryd API key (mdk_...)';

let srv, db, readA, writeA, adminZ, writeB;

before(async () => {
  srv = await start();
  db = srv.dbPath;
  readA = await createKey(db, 'alice', 'read', 'alice reader');
  writeA = await createKey(db, 'alice', 'write');
  writeB = await createKey(db, 'bob', 'write', 'bob');
  adminZ = await createKey(db, 'ops', 'admin', 'operator');
});

after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

test('write scope: every command of its tenant; the tenant is the key\'s', async () => {
  let r = await srv.post(createFile('/memories/a.txt', 'alpha\n'), { headers: bearer(writeA) });
  assert.deepEqual([r.status, r.json], [200, { type: 'tool_result', content: 'File created successfully at: /memories/a.txt', is_error: false }]);
  r = await srv.post({ command: 'str_replace', path: '/memories/a.txt', old_str: 'alpha', new_str: 'beta' }, { headers: bearer(writeA) });
  assert.equal(r.status, 200, r.text);
  // The same header as the key's tenant is fine.
  r = await srv.post(view('/memories/a.txt'), { headers: bearer(writeA), tenant: 'alice' });
  assert.equal(r.status, 200, r.text);
  assert.match(r.json.content, /beta/);
  r = await srv.request('GET', '/v1/history?path=/memories/a.txt', { headers: bearer(writeA) });
  assert.equal(r.status, 200, r.text);
  // The file is alice's: bob's key does not see it.
  r = await srv.post(view('/memories/a.txt'), { headers: bearer(writeB) });
  assert.equal(r.status, 404, r.text);
  // Not tenant administration.
  r = await srv.request('GET', '/v1/tenants/alice', { headers: bearer(writeA) });
  assert.deepEqual([r.status, r.json], [403, { error: NOT_ADMIN }]);
});

test('read scope: views and GET only; writes refused with 403, nothing written', async () => {
  await srv.post(createFile('/memories/r.txt', 'kept\n'), { headers: bearer(writeA) });
  let r = await srv.post(view('/memories/r.txt'), { headers: bearer(readA) });
  assert.equal(r.status, 200, r.text);
  assert.match(r.json.content, /kept/);
  r = await srv.request('GET', '/v1/changes', { headers: bearer(readA) });
  assert.equal(r.status, 200, r.text);
  for (const cmd of [
    createFile('/memories/new.txt', 'x'),
    { command: 'str_replace', path: '/memories/r.txt', old_str: 'kept', new_str: 'gone' },
    { command: 'insert', path: '/memories/r.txt', insert_line: 0, insert_text: 'x\n' },
    { command: 'delete', path: '/memories/r.txt' },
    { command: 'rename', old_path: '/memories/r.txt', new_path: '/memories/s.txt' },
  ]) {
    r = await srv.post(cmd, { headers: bearer(readA) });
    assert.deepEqual([r.status, r.json], [403, errorResult(READ_ONLY)], cmd.command);
  }
  r = await srv.request('POST', '/v1/restore', { headers: { ...bearer(readA), 'content-type': 'application/json' }, body: '{"path":"/memories/r.txt","version":1}' });
  assert.deepEqual([r.status, r.json], [403, { error: READ_ONLY.slice(7) }]);
  r = await srv.request('GET', '/v1/tenants/alice', { headers: bearer(readA) });
  assert.deepEqual([r.status, r.json], [403, { error: NOT_ADMIN }]);
  r = await srv.post(view('/memories'), { headers: bearer(readA) });
  assert.doesNotMatch(r.json.content, /new\.txt|s\.txt/);
  r = await srv.post(view('/memories/r.txt'), { headers: bearer(readA) });
  assert.equal(r.json.content, "Here's the content of /memories/r.txt with line numbers:\n     1\tkept\n     2\t");
});

test('admin scope: tenant administration of any tenant, and its own tenant\'s commands', async () => {
  let r = await srv.request('GET', '/v1/tenants/alice', { headers: bearer(adminZ) });
  assert.equal(r.status, 200, r.text);
  // alice's files so far: a.txt and r.txt (the tests before this one).
  assert.deepEqual([r.json.tenant, r.json.files], ['alice', 2]);
  r = await srv.request('PUT', '/v1/tenants/bob/limits', { headers: { ...bearer(adminZ), 'content-type': 'application/json' }, body: '{"max_bytes":1000,"max_files":null}' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.overrides.max_bytes, 1000, r.text);
  r = await srv.post(createFile('/memories/ops.txt', 'o'), { headers: bearer(adminZ) });
  assert.equal(r.status, 200, r.text);
  r = await srv.post(view('/memories/ops.txt'), { headers: bearer(writeA) });
  assert.equal(r.status, 404, r.text);
});

test('tenant listing and erasure: an admin key from any address; write and read keys get 403; the erased tenant\'s keys go with it', async () => {
  const gone = await createKey(db, 'gone', 'write', 'to be erased');
  let r = await srv.post(createFile('/memories/g.txt', 'g'), { headers: bearer(gone) });
  assert.equal(r.status, 200, r.text);
  // Neither a write nor a read key may list or erase (nothing erased), loopback or not.
  for (const k of [writeA, readA, gone]) {
    r = await srv.request('GET', '/v1/tenants', { headers: bearer(k) });
    assert.deepEqual([r.status, r.json], [403, { error: NOT_ADMIN }]);
    r = await srv.request('GET', '/v1/tenants?limit=1', { headers: bearer(k) });
    assert.deepEqual([r.status, r.json], [403, { error: NOT_ADMIN }]);
    r = await srv.request('DELETE', '/v1/tenants/gone', { headers: bearer(k) });
    assert.deepEqual([r.status, r.json], [403, { error: NOT_ADMIN }]);
  }
  r = await srv.post(view('/memories/g.txt'), { headers: bearer(gone) });
  assert.equal(r.status, 200, r.text);
  // An admin key may, even through a proxy (the loopback rule of --auth none does not apply).
  const proxied = { ...bearer(adminZ), 'x-forwarded-for': '203.0.113.7' };
  r = await srv.request('GET', '/v1/tenants', { headers: proxied });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.tenants.map((t) => t.tenant), ['alice', 'bob', 'gone', 'ops']);
  assert.equal(r.json.next_cursor, null);
  r = await srv.request('DELETE', '/v1/tenants/gone', { headers: proxied });
  assert.deepEqual([r.status, r.json], [200, { tenant: 'gone', erased: { entries: 2, versions: 1, changes: 1, idempotency_keys: 0, api_keys: 1 } }]);
  assert.equal(dbSql(db, `SELECT count(*) FROM api_keys WHERE tenant = 'gone' OR id = '${gone.id}'`).trim(), '0');
  r = await srv.request('GET', '/v1/tenants', { headers: bearer(adminZ) });
  assert.deepEqual(r.json.tenants.map((t) => t.tenant), ['alice', 'bob', 'ops']);
  r = await srv.request('DELETE', '/v1/tenants/gone', { headers: bearer(adminZ) });
  assert.deepEqual([r.status, r.json], [404, { error: 'No such tenant: gone' }]);
});

test('a tenant header that disagrees with the key: 403, nothing written (the stolen-header attempt)', async () => {
  const before = await srv.post(view('/memories'), { headers: bearer(writeB) });
  assert.equal(before.status, 200, before.text);
  let r = await srv.post(createFile('/memories/stolen.txt', 'mine now'), { headers: bearer(writeA), tenant: 'bob' });
  assert.deepEqual([r.status, r.json], [403, errorResult(OTHER_TENANT)]);
  r = await srv.post(view('/memories'), { headers: bearer(writeA), tenant: 'bob' });
  assert.deepEqual([r.status, r.json], [403, errorResult(OTHER_TENANT)]);
  r = await srv.request('GET', '/v1/changes', { headers: { ...bearer(writeA), 'x-tenant-id': 'bob' } });
  assert.deepEqual([r.status, r.json], [403, { error: OTHER_TENANT.slice(7) }]);
  // bob is untouched, and alice did not get the file either.
  const afterB = await srv.post(view('/memories'), { headers: bearer(writeB) });
  assert.deepEqual([afterB.status, afterB.text], [200, before.text]);
  r = await srv.post(view('/memories/stolen.txt'), { headers: bearer(writeA) });
  assert.equal(r.status, 404, r.text);
  assert.equal(dbSql(db, "SELECT count(*) FROM entries WHERE path = '/memories/stolen.txt'").trim(), '0');
});

test('missing, malformed, unknown and revoked keys: 401 with WWW-Authenticate; revocation counts at the next request', async () => {
  const s = await start();
  const k = await createKey(s.dbPath, 'carol', 'write');
  let r = await s.post(view());
  assert.deepEqual([r.status, r.json, r.headers.get('www-authenticate')], [401, errorResult(MISSING), 'Bearer']);
  for (const auth of ['Basic Zm9vOmJhcg==', 'Bearer', 'Bearer mdk_short', `Bearer ${k.key}x`, `Token ${k.key}`]) {
    r = await s.post(view(), { headers: { authorization: auth } });
    assert.deepEqual([r.status, r.json, r.headers.get('www-authenticate')], [401, errorResult(MALFORMED), 'Bearer'], auth);
  }
  r = await s.post(view(), { headers: { authorization: `Bearer mdk_${'A'.repeat(43)}` } });
  assert.deepEqual([r.status, r.json], [401, errorResult('Error: Unknown API key')]);
  r = await s.request('GET', '/v1/changes', { headers: { authorization: `Bearer mdk_${'A'.repeat(43)}` } });
  assert.deepEqual([r.status, r.json, r.headers.get('www-authenticate')], [401, { error: 'Unknown API key' }, 'Bearer']);
  r = await s.post(createFile('/memories/c.txt', 'c'), { headers: bearer(k) });
  assert.equal(r.status, 200, r.text);
  const rv = await keys(s.dbPath, 'revoke', k.id);
  assert.deepEqual([rv.code, rv.stdout], [0, `revoked ${k.id}\n`]);
  r = await s.post(view(), { headers: bearer(k) });
  assert.deepEqual([r.status, r.json], [401, errorResult('Error: This API key has been revoked')]);
  // Health and metrics need no key.
  assert.equal((await s.request('GET', '/healthz')).status, 200);
  assert.equal((await s.request('GET', '/readyz')).status, 200);
});

test('failures are rate-limited per address: the 11th attempt within 60 s gets 429, even with a valid key', async () => {
  const s = await start();
  const k = await createKey(s.dbPath, 'dave', 'write');
  for (let i = 0; i < 10; i++) {
    const r = await s.post(view(), { headers: { authorization: `Bearer mdk_${String(i).repeat(43)}` } });
    assert.equal(r.status, 401, r.text);
  }
  let r = await s.post(view(), { headers: bearer(k) });
  assert.equal(r.status, 429, r.text);
  const wait = Number(r.headers.get('retry-after'));
  assert.ok(wait >= 1 && wait <= 60, `Retry-After: ${wait}`);
  assert.deepEqual(r.json, errorResult(RATE));
  r = await s.request('GET', '/v1/changes', { headers: bearer(k) });
  assert.equal(r.status, 429, r.text);
  assert.deepEqual(r.json, { error: RATE.slice(7) });
  assert.equal(r.headers.get('www-authenticate'), null);
});

test('memoryd keys list shows ids, tenants, scopes and names, never a key or a hash', async () => {
  let r = await keys(db, 'list');
  assert.equal(r.code, 0, r.stderr);
  const rows = r.stdout.trim().split('\n').map((l) => l.split('\t'));
  assert.deepEqual(rows[0], ['id', 'tenant', 'scope', 'name', 'created', 'revoked']);
  const body = rows.slice(1).map((c) => [c[0], c[1], c[2], c[3], c[5]]);
  const want = [[readA.id, 'alice', 'read', 'alice reader', '-'], [writeA.id, 'alice', 'write', '-', '-'], [writeB.id, 'bob', 'write', 'bob', '-'], [adminZ.id, 'ops', 'admin', 'operator', '-']];
  const order = (a, b) => (a[1] + a[0] < b[1] + b[0] ? -1 : 1);
  assert.deepEqual(body, want.sort(order));
  for (const c of rows.slice(1)) assert.match(c[4], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  for (const k of created) assert.ok(!r.stdout.includes(k) && !r.stdout.includes(k.slice(4, 20)), 'a key in the listing');
  assert.doesNotMatch(r.stdout, /mdk_/);
  r = await keys(db, 'list', '--tenant', 'bob');
  assert.deepEqual(r.stdout.trim().split('\n').slice(1).map((l) => l.split('\t')[0]), [writeB.id]);
  // The database holds hashes only.
  const stored = dbSql(db, 'SELECT count(*) FROM api_keys').trim();
  assert.equal(stored, '4');
});

test('bad CLI input: a clear message, exit 2 (or 1), nothing created or revoked', async () => {
  const cases = [
    [['create', '--tenant', 'alice', '--scope', 'root'], 2, /^memoryd keys: --scope must be read, write or admin: root\n/],
    [['create', '--tenant', 'bad tenant', '--scope', 'read'], 2, /^memoryd keys: --tenant must be 1\.\.128 of \[A-Za-z0-9._-\]: bad tenant\n/],
    [['create', '--scope', 'read'], 2, /^memoryd keys: create needs --tenant and --scope\n/],
    [['delete'], 2, /^memoryd keys: unknown action \(create, list or revoke\): delete\n/],
    [['revoke'], 2, /^memoryd keys: revoke needs the key's id\n/],
    [['revoke', 'key_0000000000000000'], 1, /^memoryd keys: no such key: key_0000000000000000\n$/],
    [['revoke', 'nonsense'], 1, /^memoryd keys: no such key: nonsense\n$/],
  ];
  for (const [args, code, msg] of cases) {
    const r = await keys(db, ...args);
    assert.equal(r.code, code, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, msg);
    assert.equal(r.stdout, '');
  }
  const none = await runMemoryd(['keys', 'list'], { env: { MEMORYD_DB: '' } });
  assert.equal(none.code, 2);
  assert.match(none.stderr, /^memoryd keys: --db \(or MEMORYD_DB\) is needed\n/);
  const viaEnv = await runMemoryd(['keys', 'list'], { env: { MEMORYD_DB: db } });
  assert.equal(viaEnv.code, 0, viaEnv.stderr);
  assert.equal(viaEnv.stdout.trim().split('\n').length, 5);
  assert.equal(dbSql(db, 'SELECT count(*) FROM api_keys WHERE revoked_at IS NOT NULL').trim(), '0');
});

test('no key appears in any log line; the request log names the key id', async () => {
  await srv.post(view(), { headers: bearer(writeA) });
  await srv.waitForLogs((logs) => logs.some((l) => l.msg === 'request' && l.key_id === writeA.id), 'the key id');
  for (const s of servers) await s.stop();
  servers.length = 0;
  assert.equal(started.length, 3);
  const all = [...started.flatMap((s) => s.rawStderr), ...cliOutput].join('\n');
  assert.ok(created.length >= 6);
  for (const k of created) {
    assert.ok(!all.includes(k), 'a key in the logs');
    assert.ok(!all.includes(k.slice(4)), 'a key\'s secret part in the logs');
  }
});
