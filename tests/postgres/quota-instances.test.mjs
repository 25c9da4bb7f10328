// Quotas with two memoryd instances on one PostgreSQL database (docs/behaviour.md 13): the
// tenant's lock serializes its writes across instances, so a quota is exact there too.
//   - 32 writers spread over both instances race at the edge of a 100,000-byte limit, each
//     creating files of random sizes until refused: the tenant ends at or under the limit, with
//     exactly the bytes and files acknowledged, as both instances (and the database) tell;
//   - the same at the edge of a files limit, with deletes and renames of other clients going
//     on meanwhile (they are never refused): at most the limit, exactly what was acknowledged;
//   - limits set through one instance take effect on the other at once.
// Runs only on PostgreSQL (MD_TEST_PG; tests/CMakeLists.txt).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createDatabase, pgCluster, pgInconsistencies, psql } from '../lib/pg.mjs';
import { startServer } from '../lib/server.mjs';

let uri;
let servers = [];

before(async () => {
  assert.ok(pgCluster(), 'MD_TEST_PG is not set: this test needs the suite\'s PostgreSQL');
  uri = await createDatabase();
  servers = await Promise.all([0, 1].map(() => startServer({ db: uri, args: ['--tenant-max-bytes', '100000', '--tenant-max-files', '200'] })));
});

after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

const create = (path, n) => ({ command: 'create', path, file_text: 'x'.repeat(n) });

async function usage(s, tenant) {
  const r = await s.request('GET', `/v1/tenants/${tenant}`);
  assert.equal(r.status, 200, r.text);
  return r.json;
}

test('32 writers on two instances never take a tenant over its bytes limit', async () => {
  const t = 'race-bytes';
  let acked = 0, files = 0;
  await Promise.all(Array.from({ length: 32 }, async (_, w) => {
    const s = servers[w % 2];
    for (let k = 0; ; k++) {
      const n = 1 + Math.floor(Math.random() * 4000);
      const r = await s.post(create(`/memories/w${w}/f${k}.txt`, n), { tenant: t });
      if (r.status === 507) {
        assert.match(r.json.content, /^Memory is full: [0-9.]+ KiB of 97\.6 KiB used; delete or shorten files first\.$/);
        return;
      }
      assert.equal(r.status, 200, r.text);
      acked += n;
      files++;
    }
  }));
  for (const s of servers) {
    const u = await usage(s, t);
    assert.ok(u.bytes <= 100000, `${u.bytes} > 100000`);
    assert.deepEqual([u.bytes, u.files], [acked, files]);
  }
  assert.equal(psql(uri, `SELECT count(*), sum(size) FROM entries WHERE kind = 0 AND tenant = (SELECT id FROM tenants WHERE name = '${t}')`).trim(), `${files}|${acked}`);
  assert.deepEqual(pgInconsistencies(uri), []);
});

test('at the edge of a files limit, with deletes and renames going on, on two instances', async () => {
  const t = 'race-files';
  // 20 files that others delete or rename meanwhile
  for (let i = 0; i < 20; i++) assert.equal((await servers[i % 2].post(create(`/memories/old/o${i}.txt`, 10), { tenant: t })).status, 200);
  let created = 0, deleted = 0;
  const creators = Array.from({ length: 16 }, async (_, w) => {
    const s = servers[w % 2];
    for (let k = 0; ; k++) {
      const r = await s.post(create(`/memories/c${w}/f${k}.txt`, 5), { tenant: t });
      if (r.status === 507) {
        assert.match(r.json.content, /^Memory is full: \d+ of 200 files used; delete files first\.$/);
        return;
      }
      assert.equal(r.status, 200, r.text);
      created++;
    }
  });
  const others = Array.from({ length: 10 }, async (_, i) => {
    const s = servers[(i + 1) % 2];
    const a = await s.post({ command: 'rename', old_path: `/memories/old/o${i}.txt`, new_path: `/memories/moved/o${i}.txt` }, { tenant: t });
    assert.equal(a.status, 200, a.text);
    const b = await s.post({ command: 'delete', path: `/memories/old/o${i + 10}.txt` }, { tenant: t });
    assert.equal(b.status, 200, b.text);
    deleted++;
  });
  await Promise.all([...creators, ...others]);
  for (const s of servers) {
    const u = await usage(s, t);
    assert.deepEqual([u.files, u.bytes], [20 - deleted + created, (20 - deleted) * 10 + created * 5]);
    assert.ok(u.files <= 200, `${u.files} files`);
  }
  assert.deepEqual(pgInconsistencies(uri), []);
});

test('limits set through one instance take effect on the other at once', async () => {
  const t = 'override';
  let r = await servers[0].request('PUT', `/v1/tenants/${t}/limits`, { body: JSON.stringify({ max_bytes: 10, max_files: null }) });
  assert.equal(r.status, 200, r.text);
  r = await servers[1].post(create('/memories/a.txt', 11), { tenant: t });
  assert.deepEqual([r.status, r.json.content], [507, 'Memory is full: 0 bytes of 10 bytes used; delete or shorten files first.']);
  assert.deepEqual((await usage(servers[1], t)).overrides, { max_bytes: 10, max_files: null, sensitive: null, expire_after: null });
  r = await servers[1].request('PUT', `/v1/tenants/${t}/limits`, { body: JSON.stringify({ max_bytes: null, max_files: null }) });
  assert.equal(r.status, 200, r.text);
  r = await servers[0].post(create('/memories/a.txt', 11), { tenant: t });
  assert.equal(r.status, 200, r.text);
});
