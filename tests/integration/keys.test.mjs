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
//     per address: another loopback address (127.0.0.2) is served meanwhile, and its own
//     failures are counted apart;
//   - `memoryd keys list` shows ids, never a key or its hash; bad CLI input changes nothing;
//   - the database keeps only a hash: no key made here (with or without `mdk_`, nor its 32
//     random bytes, nor any 16 characters of it) is in the SQLite files (.db, -wal) or, on
//     PostgreSQL, in the api_keys rows (every column as text or hex) and row versions;
//   - no key created here appears in any log line of the test's memoryd processes or CLI runs,
//     while the request log names the key's id; also with --log-level debug, through keys
//     made, used, revoked, and wrong and near-miss keys presented.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { postOnce } from '../lib/attack.mjs';
import { dbSql, isPgUri, sqliteFilesHolding } from '../lib/db.mjs';
import { pgRowVersionsHoldingEach } from '../lib/pg.mjs';
import { runMemoryd, startServer } from '../lib/server.mjs';
import { underValgrind } from '../lib/util.mjs';

const servers = []; // running
const started = []; // every memoryd of this test, for its logs
const cliOutput = []; // stderr of every CLI run (stdout holds the keys themselves)
const created = []; // every key made
const made = []; // every key made, with its id, database and tenant: {key, id, db, tenant}

async function keys(db, ...args) {
  return keysRun({}, db, ...args);
}
async function keysRun(opts, db, ...args) {
  const r = await runMemoryd(['keys', ...args, '--db', db], opts);
  cliOutput.push(r.stderr);
  return r;
}

// Under valgrind (scripts/valgrind.sh), which looks for memory errors and costs a second or two
// per run, the first key is made under it and the others, the same code for other names and
// scopes, without it; every other CLI run (refused creates included) is under it.
let createChecked = false;
async function createKey(db, tenant, scope, name) {
  const r = await keysRun({ unwrapped: underValgrind && createChecked }, db, 'create', '--tenant', tenant, '--scope', scope, ...(name ? ['--name', name] : []));
  createChecked = true;
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split('\n');
  assert.match(lines[0], /^mdk_[A-Za-z0-9_-]{43}$/);
  assert.match(lines[1], /^id: key_[0-9a-f]{16}$/);
  assert.equal(lines.length, 3);
  created.push(lines[0]);
  made.push({ key: lines[0], id: lines[1].slice(4), db, tenant });
  return { key: lines[0], id: lines[1].slice(4) };
}

// What must never be stored or logged of a key: the key, its secret part (without `mdk_`),
// and every 16 characters of that part (so that a key cut short or one changed by a character
// does not slip through).
function keyPieces(key) {
  const secret = key.slice(4);
  const pieces = [key, secret];
  for (let i = 0; i + 16 <= secret.length; i++) pieces.push(secret.slice(i, i + 16));
  return pieces;
}
// The 32 random bytes a key is made of (its secret part is their base64url).
const keyBytes = (key) => Buffer.from(key.slice(4), 'base64url');
// The pieces of `keys` that `text` holds (empty: none).
const piecesIn = (text, keys) => keys.flatMap((k) => keyPieces(k).filter((p) => text.includes(p)).map((p) => `${p.length} characters of ${k.slice(0, 8)}...`));

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

  // Per address: 127.0.0.1's failures do not block 127.0.0.2 (another loopback address, a
  // connection of its own), whose failures are counted apart: after 9 of its own it is still
  // served, the 10th blocks it.
  const from2 = (headers) => postOnce(s.port, view(), { headers, localAddress: '127.0.0.2' });
  r = await from2(bearer(k));
  assert.equal(r.status, 200, r.text);
  for (let i = 0; i < 9; i++) {
    r = await from2({ authorization: `Bearer mdk_${String(i).repeat(43)}` });
    assert.deepEqual([r.status, r.json], [401, errorResult('Error: Unknown API key')], `127.0.0.2's failure ${i + 1}`);
  }
  r = await from2(bearer(k));
  assert.equal(r.status, 200, `127.0.0.2 after 9 failures of its own: ${r.text}`);
  r = await from2({ authorization: 'Bearer mdk_short' });
  assert.deepEqual([r.status, r.json], [401, errorResult(MALFORMED)], '127.0.0.2\'s 10th failure');
  r = await from2(bearer(k));
  assert.deepEqual([r.status, r.json], [429, errorResult(RATE)], '127.0.0.2 after 10 failures');
  const wait2 = Number(r.headers['retry-after']);
  assert.ok(wait2 >= 1 && wait2 <= 60, `Retry-After: ${wait2}`);
  // 127.0.0.1 is still blocked (a header naming another client changes nothing: behind a proxy
  // the address is the proxy's), and a third address is served.
  r = await s.post(view(), { headers: { ...bearer(k), 'x-forwarded-for': '203.0.113.9' } });
  assert.equal(r.status, 429, r.text);
  r = await postOnce(s.port, view(), { headers: bearer(k), localAddress: '127.0.0.3' });
  assert.equal(r.status, 200, r.text);
});

test('behind a trusted proxy, failures are counted per client the proxy reports (X-Forwarded-For, X-Real-IP), never per the proxy', async () => {
  // memoryd trusts 127.0.0.1 as its proxy; requests from there carry the client's address as
  // nginx sends it ($proxy_add_x_forwarded_for, $remote_addr).
  const s = await start(['--trusted-proxies', '127.0.0.1']);
  const k = await createKey(s.dbPath, 'erin', 'write');
  const via = (client, auth, extra = {}) => s.post(view(), { headers: { 'x-forwarded-for': client, 'x-real-ip': client.split(',').at(-1).trim(), ...auth, ...extra } });
  const bad = (i) => ({ authorization: `Bearer mdk_${String(i).repeat(43)}` });
  for (let i = 0; i < 10; i++) assert.equal((await via('198.51.100.7', bad(i))).status, 401);
  // The bad client is refused, with a good key too; another client through the same proxy is
  // served, and so is the proxy's own request (no header naming a client).
  let r = await via('198.51.100.7', bearer(k));
  assert.deepEqual([r.status, r.json], [429, errorResult(RATE)]);
  r = await via('198.51.100.8', bearer(k));
  assert.equal(r.status, 200, r.text);
  r = await s.post(view(), { headers: bearer(k) });
  assert.equal(r.status, 200, r.text);
  // What a client puts before its own address counts for nothing: the proxy appends the
  // address it saw, the last one not a trusted proxy.
  r = await via('203.0.113.1, 198.51.100.7', bearer(k));
  assert.equal(r.status, 429, r.text);
  r = await via('198.51.100.7, 198.51.100.9', bearer(k));
  assert.equal(r.status, 200, r.text);
  // Chains of trusted proxies are walked through; X-Real-IP alone names the client too.
  r = await via('198.51.100.7, 127.0.0.1', bearer(k), { 'x-real-ip': '127.0.0.1' });
  assert.equal(r.status, 429, r.text);
  r = await s.post(view(), { headers: { ...bearer(k), 'x-real-ip': '198.51.100.7' } });
  assert.equal(r.status, 429, r.text);
  r = await s.post(view(), { headers: { ...bearer(k), 'x-real-ip': '2001:db8::7' } });
  assert.equal(r.status, 200, r.text);
});

test('memoryd keys list shows ids, tenants, scopes and names, never a key or a hash', async () => {
  let r = await keys(db, 'list');
  assert.equal(r.code, 0, r.stderr);
  const rows = r.stdout.trim().split('\n').map((l) => l.split('\t'));
  assert.deepEqual(rows[0], ['id', 'tenant', 'scope', 'name', 'created', 'revoked', 'path']);
  const body = rows.slice(1).map((c) => [c[0], c[1], c[2], c[3], c[5], c[6]]);
  const want = [[readA.id, 'alice', 'read', 'alice reader', '-', '/memories'], [writeA.id, 'alice', 'write', '-', '-', '/memories'], [writeB.id, 'bob', 'write', 'bob', '-', '/memories'], [adminZ.id, 'ops', 'admin', 'operator', '-', '/memories']];
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

test('--log-level debug: no key in any log line, through keys made, used, revoked, and wrong and near-miss keys presented', async () => {
  const s = await start(['--log-level', 'debug']);
  const k = await createKey(s.dbPath, 'erin', 'write', 'erin');
  const adm = await createKey(s.dbPath, 'erin-ops', 'admin');
  let r = await s.post(createFile('/memories/e.txt', 'e\n'), { headers: bearer(k) });
  assert.equal(r.status, 200, r.text);
  r = await s.post({ command: 'str_replace', path: '/memories/e.txt', old_str: 'e', new_str: 'f' }, { headers: bearer(k) });
  assert.equal(r.status, 200, r.text);
  r = await s.post(view('/memories/e.txt'), { headers: bearer(k), tenant: 'erin' });
  assert.equal(r.status, 200, r.text);
  r = await s.request('GET', '/v1/history?path=/memories/e.txt', { headers: bearer(k) });
  assert.equal(r.status, 200, r.text);
  r = await s.request('GET', '/v1/tenants/erin', { headers: bearer(adm) });
  assert.equal(r.status, 200, r.text);
  r = await s.post(view(), { headers: bearer(k), tenant: 'bob' });
  assert.equal(r.status, 403, r.text);
  // A wrong key, and near misses of the real one: its last character changed (well formed,
  // unknown), one character more or fewer, without its prefix, with a lower-case scheme, sent
  // twice. Fewer than 10 failures: none of these is cut short by the rate limit.
  const last = k.key.at(-1) === 'A' ? 'B' : 'A';
  const wrong = `mdk_${randomBytes(32).toString('base64url')}`;
  const nearMiss = `${k.key.slice(0, -1)}${last}`;
  const attempts = [
    [`Bearer ${wrong}`, 'Error: Unknown API key'],
    [`Bearer ${nearMiss}`, 'Error: Unknown API key'],
    [`Bearer ${k.key}x`, MALFORMED],
    [`Bearer ${k.key.slice(0, -1)}`, MALFORMED],
    [`Bearer ${k.key.slice(4)}`, MALFORMED],
    [`bearer ${nearMiss}`, 'Error: Unknown API key'],
    [[`Bearer ${k.key}`, `Bearer ${k.key}`], MALFORMED],
  ];
  for (const [auth, text] of attempts) {
    r = await postOnce(s.port, view(), { headers: { authorization: auth } });
    assert.deepEqual([r.status, r.json], [401, errorResult(text)], String(auth));
  }
  const rv = await keys(s.dbPath, 'revoke', k.id);
  assert.equal(rv.code, 0, rv.stderr);
  r = await s.post(view(), { headers: bearer(k) });
  assert.deepEqual([r.status, r.json], [401, errorResult('Error: This API key has been revoked')]);
  assert.equal((await s.request('GET', '/healthz')).status, 200);
  // The last request's line, then stop (stderr drained: every line is in).
  await s.waitForLogs((logs) => logs.filter((l) => l.msg === 'request' && l.status === 401).length === attempts.length + 1, 'the 401s');
  await s.stop();
  servers.splice(servers.indexOf(s), 1);
  // The most verbose level was in force: debug lines, and the request log of every request.
  assert.ok(s.logs.some((l) => l.level === 'debug' && l.msg === 'write batch'), 'no debug line');
  assert.ok(s.logs.some((l) => l.msg === 'request' && l.route === '/healthz'), 'no request line for /healthz');
  assert.ok(s.logs.some((l) => l.msg === 'request' && l.key_id === k.id && l.status === 200), 'no request line with the key id');
  const all = [...s.rawStderr, ...cliOutput].join('\n');
  assert.deepEqual(piecesIn(all, [k.key, adm.key, wrong, nearMiss]), []);
});

test('the database keeps only a hash of each key: no key, with or without mdk_, in its files or rows', async () => {
  assert.ok(made.length >= 7, `${made.length} keys`);
  for (const db of new Set(made.map((m) => m.db))) {
    const here = made.filter((m) => m.db === db);
    // Every row, every column as text (the hash as hex): one line per row, "|" between columns.
    const pg = isPgUri(db);
    const hash = pg ? "encode(hash, 'hex')" : 'lower(hex(hash))';
    const rows = dbSql(db, `SELECT id, ${hash}, tenant, scope, name, created_at, revoked_at FROM api_keys`).trim().split('\n').filter(Boolean);
    // Also what PostgreSQL makes of a whole row as text (any column a SELECT of named ones
    // would miss).
    const wholeRows = pg ? dbSql(db, 'SELECT t::text FROM api_keys t') : '';
    const text = `${rows.join('\n')}\n${wholeRows}`;
    // PostgreSQL: every row version of the table, dead ones included (the erased tenant's key),
    // read once for every key's needles (the key, its secret part, its 32 bytes) and its id.
    const versions = pg ? pgRowVersionsHoldingEach(db, 'api_keys', here.flatMap((m) => [m.key, m.key.slice(4), keyBytes(m.key), m.id])) : null;
    for (const [j, m] of here.entries()) {
      // The key's row is there (but the erased tenant's), with a 32-byte hash.
      const row = rows.find((l) => l.startsWith(`${m.id}|`));
      if (m.tenant === 'gone') assert.equal(row, undefined);
      else assert.match(row?.split('|')[1] ?? '', /^[0-9a-f]{64}$/, `${m.id}: ${row}`);
      // Neither the key, its secret part, any 16 characters of it, their hex, nor its 32 bytes.
      assert.deepEqual(piecesIn(text, [m.key]), [], `${m.id}: the key in api_keys`);
      for (const hex of [Buffer.from(m.key).toString('hex'), Buffer.from(m.key.slice(4)).toString('hex'), keyBytes(m.key).toString('hex')]) {
        assert.ok(!text.toLowerCase().includes(hex), `${m.id}: the key (hex) in api_keys`);
      }
      assert.equal(keyBytes(m.key).length, 32);
      const needles = [m.key, m.key.slice(4), keyBytes(m.key)];
      if (pg) {
        for (let k = 0; k < needles.length; k++) assert.deepEqual(versions[4 * j + k], [], `${m.id}: the key in a row version of api_keys`);
        if (row) assert.ok(versions[4 * j + 3].length > 0, `${m.id}: the search finds the id`);
      } else {
        // The database's files, read raw (the WAL too: the keys were written while memoryd ran).
        for (const n of [...needles, ...keyPieces(m.key).slice(2)]) {
          assert.deepEqual(sqliteFilesHolding(db, n), {}, `${m.id}: the key in the SQLite files`);
        }
        if (row) assert.notDeepEqual(sqliteFilesHolding(db, m.id), {}, `${m.id}: the search finds the id`);
      }
    }
  }
});

test('no key appears in any log line; the request log names the key id', async () => {
  await srv.post(view(), { headers: bearer(writeA) });
  await srv.waitForLogs((logs) => logs.some((l) => l.msg === 'request' && l.key_id === writeA.id), 'the key id');
  for (const s of servers) await s.stop();
  servers.length = 0;
  assert.equal(started.length, 5);
  const all = [...started.flatMap((s) => s.rawStderr), ...cliOutput].join('\n');
  assert.ok(created.length >= 8);
  for (const k of created) {
    assert.ok(!all.includes(k), 'a key in the logs');
    assert.ok(!all.includes(k.slice(4)), 'a key\'s secret part in the logs');
  }
  assert.deepEqual(piecesIn(all, created), []);
});
