// Backing up memoryd on PostgreSQL with PostgreSQL's own tools, as the README's "Backup" shows
// (memoryd backup copies SQLite only, tests/integration/backup.test.mjs): memoryd serves a
// database of the suite's cluster; two tenants get trees with history (creates, str_replace,
// insert, a directory renamed, a file deleted, a restore of an old version, a write with an
// Idempotency-Key); `pg_dump -Fc` dumps that database while memoryd runs, `pg_restore
// --no-owner --exit-on-error --single-transaction` loads the dump into a new, empty database,
// and memoryd started on it answers exactly as the original did: the view of every file and
// directory of both tenants, GET /v1/history of every path that has versions (and of
// /memories), /v1/versions/{v} of every version with its content, and the whole change feed;
// the restored data is consistent (pgInconsistencies); the kept answer of the Idempotency-Key
// is replayed; and the next write on the copy takes the next version and seq where the
// original's left off. Runs only on PostgreSQL (MD_TEST_PG; tests/CMakeLists.txt).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeClient } from '../lib/client.mjs';
import { createDatabase, pgCluster, pgInconsistencies, psql } from '../lib/pg.mjs';
import { startServer, tempDir } from '../lib/server.mjs';

const dir = tempDir('memoryd-pgbackup-');
const servers = [];
const serve = async (opts) => {
  const srv = await startServer(opts);
  servers.push(srv);
  return srv;
};
before(() => assert.ok(pgCluster(), 'MD_TEST_PG is not set: this test needs the suite\'s PostgreSQL'));
after(async () => {
  await Promise.all(servers.map((s) => s.kill()));
  fs.rmSync(dir, { recursive: true, force: true });
});

const TENANTS = ['alpha', 'beta'];

// The writes of a tenant: a tree with history.
function writes(tenant) {
  const out = [];
  const create = (p, text) => out.push({ command: 'create', path: p, file_text: text });
  create('/memories/notes.md', `# ${tenant}\n- one\n- two`);
  for (let i = 0; i < 12; i++) create(`/memories/projects/p${i % 3}/task-${i}.md`, `${tenant} task ${i}\nstatus: open`);
  create('/memories/unicode/café ✓ 𝄞.txt', `${tenant} ñ é ü\tsecond column`);
  create('/memories/empty.txt', '');
  for (let i = 0; i < 4; i++) {
    out.push({ command: 'str_replace', path: '/memories/projects/p0/task-0.md', old_str: i ? `status: step ${i}` : 'status: open', new_str: `status: step ${i + 1}` });
  }
  out.push({ command: 'insert', path: '/memories/notes.md', insert_line: 1, insert_text: `inserted for ${tenant}` });
  out.push({ command: 'rename', old_path: '/memories/projects/p1', new_path: '/memories/archive/p1' });
  out.push({ command: 'delete', path: '/memories/projects/p2/task-5.md' });
  return out;
}

// Every entry path of a tenant on the database (hex, so any character survives psql).
function pathsOf(uri, tenant) {
  return psql(uri, `SELECT encode(convert_to(e.path, 'UTF8'), 'hex') FROM entries e JOIN tenants t ON t.id = e.tenant
    WHERE t.name = '${tenant}' ORDER BY e.path`).split('\n').filter(Boolean).map((h) => Buffer.from(h, 'hex').toString('utf8'));
}

// [[version, path]] of a tenant.
function versionsOf(uri, tenant) {
  return psql(uri, `SELECT v.version || ' ' || encode(convert_to(v.path, 'UTF8'), 'hex') FROM versions v JOIN tenants t ON t.id = v.tenant
    WHERE t.name = '${tenant}' ORDER BY v.version`).split('\n').filter(Boolean)
    .map((l) => { const [v, h] = l.split(' '); return [Number(v), Buffer.from(h, 'hex').toString('utf8')]; });
}

// Every answer memoryd gives about a tenant: views of every entry, the history of every path
// with versions and of /memories, every version, the whole change feed.
async function answers(port, tenant, paths, versions) {
  const c = makeClient(port, { tenant });
  const out = {};
  for (const p of paths) {
    const r = await c.post({ command: 'view', path: p });
    assert.equal(r.status, 200, r.text);
    out[`view ${p}`] = r.text;
  }
  for (const p of [...new Set(versions.map(([, p]) => p)), '/memories']) {
    const r = await c.get(`/v1/history?path=${encodeURIComponent(p)}&limit=1000`);
    assert.equal(r.status, 200, r.text);
    out[`history ${p}`] = r.text;
  }
  for (const [v] of versions) {
    const r = await c.get(`/v1/versions/${v}`);
    assert.equal(r.status, 200, r.text);
    out[`version ${v}`] = r.text;
  }
  const feed = await c.get('/v1/changes?after=0&limit=1000');
  assert.equal(feed.status, 200, feed.text);
  out.changes = feed.text;
  c.close();
  return out;
}

test('pg_dump -Fc of a served database, pg_restore into an empty one: memoryd on it serves the same trees and history', { timeout: 300000 }, async () => {
  const cluster = pgCluster();
  const md = await serve();
  const uri = md.dbPath;
  for (const tenant of TENANTS) {
    const c = makeClient(md.port, { tenant });
    for (const cmd of writes(tenant)) {
      const r = await c.post(cmd);
      assert.equal(r.status, 200, `${JSON.stringify(cmd)}: ${r.text}`);
    }
    c.close();
  }
  // A restore of task-0 as it was before its first str_replace (a version records the file as
  // it was before the write), and a write with an Idempotency-Key.
  const first = versionsOf(uri, 'alpha').filter(([, p]) => p === '/memories/projects/p0/task-0.md')[1][0];
  const restore = await md.request('POST', '/v1/restore', {
    body: JSON.stringify({ path: '/memories/projects/p0/task-0.md', version: first }),
    headers: { 'content-type': 'application/json', 'x-tenant-id': 'alpha' },
  });
  assert.equal(restore.status, 200, restore.text);
  const keyed = { command: 'create', path: '/memories/keyed.md', file_text: 'written once' };
  const kept = await md.post(keyed, { tenant: 'beta', headers: { 'idempotency-key': 'backup-test-key-1' } });
  assert.equal(kept.status, 200, kept.text);

  const original = {};
  for (const tenant of TENANTS) original[tenant] = await answers(md.port, tenant, pathsOf(uri, tenant), versionsOf(uri, tenant));
  assert.ok(Object.keys(original.alpha).length > 40, 'the trees are not what the test meant to write');

  // The README's commands: dump while memoryd serves, restore into a new, empty database.
  const dump = path.join(dir, 'memoryd.dump');
  execFileSync(path.join(cluster.bin, 'pg_dump'), ['-Fc', '-f', dump, uri]);
  const restored = await createDatabase(cluster);
  execFileSync(path.join(cluster.bin, 'pg_restore'), ['--no-owner', '--exit-on-error', '--single-transaction', '-d', restored, dump]);
  await md.stop();
  assert.deepEqual(pgInconsistencies(restored), []);

  const copy = await serve({ db: restored });
  for (const tenant of TENANTS) {
    assert.deepEqual(pathsOf(restored, tenant), pathsOf(uri, tenant), tenant);
    assert.deepEqual(await answers(copy.port, tenant, pathsOf(restored, tenant), versionsOf(restored, tenant)), original[tenant], tenant);
  }
  // The kept answer is replayed from the copy; nothing is written again.
  const replay = await copy.post(keyed, { tenant: 'beta', headers: { 'idempotency-key': 'backup-test-key-1' } });
  assert.deepEqual([replay.status, replay.text], [kept.status, kept.text]);
  // The next write continues the tenant's numbering where the original left off.
  const lastVersion = Math.max(...versionsOf(uri, 'alpha').map(([v]) => v));
  const lastSeq = JSON.parse(original.alpha.changes).changes.at(-1).seq;
  const next = await copy.post({ command: 'create', path: '/memories/after-restore.md', file_text: 'new' }, { tenant: 'alpha' });
  assert.equal(next.status, 200, next.text);
  const feed = (await copy.request('GET', `/v1/changes?after=${lastSeq}`, { headers: { 'x-tenant-id': 'alpha' } })).json;
  assert.equal(feed.changes.length, 1);
  assert.equal(feed.changes[0].seq, lastSeq + 1);
  const hist = (await copy.request('GET', '/v1/history?path=/memories/after-restore.md', { headers: { 'x-tenant-id': 'alpha' } })).json;
  assert.equal(hist.versions[0].version, lastVersion + 1);
  // A tenant new to the copy gets its id from the restored sequences.
  assert.equal((await copy.post({ command: 'create', path: '/memories/a.md', file_text: 'x' }, { tenant: 'gamma' })).status, 200);
  await copy.stop();
  assert.deepEqual(pgInconsistencies(restored), []);
});
