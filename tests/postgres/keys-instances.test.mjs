// API keys with two memoryd instances (--auth keys) on one PostgreSQL database: neither caches
// a key, so `memoryd keys revoke` takes effect at the next request on both; a key created while
// they run is taken by both at once; the stolen-header attempt is refused by either.
// Runs only on PostgreSQL (MD_TEST_PG; tests/CMakeLists.txt).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createDatabase, pgCluster } from '../lib/pg.mjs';
import { runMemoryd, startServer } from '../lib/server.mjs';

let uri;
let servers = [];
const created = [];
const cliOutput = [];

async function keys(...args) {
  const r = await runMemoryd(['keys', ...args, '--db', uri]);
  cliOutput.push(r.stderr);
  return r;
}

async function createKey(tenant, scope) {
  const r = await keys('create', '--tenant', tenant, '--scope', scope);
  assert.equal(r.code, 0, r.stderr);
  const [key, idLine] = r.stdout.split('\n');
  created.push(key);
  return { key, id: idLine.replace(/^id: /, '') };
}

before(async () => {
  assert.ok(pgCluster(), 'MD_TEST_PG is not set: this test needs the suite\'s PostgreSQL');
  uri = await createDatabase();
  servers = await Promise.all([0, 1].map(() => startServer({ db: uri, args: ['--auth', 'keys'] })));
});

after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

const auth = (k) => ({ authorization: `Bearer ${k.key}` });
const view = { command: 'view', path: '/memories' };

test('a key made while both run works on both; its revocation refuses it on both at the next request', async () => {
  const k = await createKey('shared', 'write');
  const [a, b] = servers;
  let r = await a.post({ command: 'create', path: '/memories/x.txt', file_text: 'x' }, { headers: auth(k) });
  assert.equal(r.status, 200, r.text);
  r = await b.post({ command: 'view', path: '/memories/x.txt' }, { headers: auth(k) });
  assert.equal(r.status, 200, r.text);
  const rv = await keys('revoke', k.id);
  assert.equal(rv.code, 0, rv.stderr);
  for (const s of [a, b]) {
    r = await s.post(view, { headers: auth(k) });
    assert.deepEqual([r.status, r.json], [401, { type: 'tool_result', content: 'Error: This API key has been revoked', is_error: true }]);
    r = await s.request('GET', '/v1/changes', { headers: auth(k) });
    assert.deepEqual([r.status, r.json], [401, { error: 'This API key has been revoked' }]);
  }
  // Revoking again keeps the first revocation.
  const again = await keys('revoke', k.id);
  assert.equal(again.code, 0, again.stderr);
  const list = await keys('list', '--tenant', 'shared');
  const row = list.stdout.trim().split('\n')[1].split('\t');
  assert.equal(row[0], k.id);
  assert.match(row[5], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
});

test('the stolen-header attempt is refused by either instance; the other tenant is untouched', async () => {
  const a = await createKey('tenant-a', 'write');
  const b = await createKey('tenant-b', 'write');
  const before = await servers[1].post(view, { headers: auth(b) });
  assert.equal(before.status, 200, before.text);
  for (const s of servers) {
    const r = await s.post({ command: 'create', path: '/memories/planted.txt', file_text: 'p' }, { headers: { ...auth(a), 'x-tenant-id': 'tenant-b' } });
    assert.equal(r.status, 403, r.text);
  }
  const after = await servers[0].post(view, { headers: auth(b) });
  assert.deepEqual([after.status, after.text], [200, before.text]);
});

test('no key appears in the logs of either instance or of the CLI', async () => {
  await Promise.all(servers.map((s) => s.stop()));
  const all = [...servers.flatMap((s) => s.rawStderr), ...cliOutput].join('\n');
  assert.equal(created.length, 3);
  assert.match(all, /"key_id":"key_[0-9a-f]{16}"/);
  for (const k of created) assert.ok(!all.includes(k.slice(4)), 'a key in the logs');
});
