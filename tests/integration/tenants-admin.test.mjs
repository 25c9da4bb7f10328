// Proves docs/behaviour.md "Tenant administration" over real HTTP on loopback, against a temp
// SQLite database and (pg/integration/tenants-admin) a fresh PostgreSQL database:
//   - GET /v1/tenants lists every tenant in byte order of its name with its usage (bytes,
//     files, versions kept, last_write from its latest change-feed entry or null), cursor
//     paged (limit default 100, at most 1000; next_cursor null on the last page): 250
//     tenants with known usage, read in pages of 100, by default, and in one page of 1000;
//   - bad limit and cursor get 400s with exact texts; wrong methods 405; a tenant name that
//     is not one 400; nothing changes;
//   - a request through a proxy (Forwarded, X-Forwarded-For) gets 403 and changes nothing;
//   - DELETE /v1/tenants/{t} erases every row of the tenant (answering the counts), 404 for
//     one without rows; afterwards a unique marker that was in the tenant's name, paths and
//     file contents (its current files, a version of history, an answer kept for an
//     Idempotency-Key, an API key made for it with `memoryd keys create`) is nowhere in the
//     database: SQLite: byte for byte in memoryd.db and
//     memoryd.db-wal, read raw; PostgreSQL: in no row version, live or dead, of any of
//     memoryd's tables and their TOAST tables (read from the pages after memoryd's VACUUM);
//     before the erasure the marker is found there, so the check can fail; no table has a
//     row of its id or name; another tenant's tree, history and change feed are equal before
//     and after (its API key too); the tenant's API keys are erased with it (counted as
//     api_keys); the name can be used again and starts empty (versions and seq from 1);
//   - writes racing an erasure leave either nothing or a consistent tenant: no row of a
//     tenant id that has no tenant row, usage equal to the files present, every present file
//     one whose create was acknowledged;
//   - PostgreSQL, two instances on one database: an instance that had read and written the
//     tenant before another erased it hears of the erasure (its notification) and then reads
//     and writes the new tenant, leaving no row of the erased tenant's id.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { dbInconsistencies, dbSql, sqliteFilesHolding } from '../lib/db.mjs';
import { isPg, pgRowVersionsHolding } from '../lib/pg.mjs';
import { runMemoryd, startServer } from '../lib/server.mjs';

const PG = isPg();
const TABLES = ['entries', 'versions', 'changes', 'idempotency'];
const FORBIDDEN = {
  error: 'Tenant administration (/v1/tenants) is only served to clients on this machine (127.0.0.1 or ::1) that do not come through a proxy (Forwarded, X-Forwarded-For)',
};

async function withServer(fn) {
  const s = await startServer();
  try {
    await fn(s);
  } finally {
    await s.stop();
    fs.rmSync(s.dir, { recursive: true, force: true });
  }
}

async function write(s, tenant, cmd, headers = {}) {
  const r = await s.post(cmd, { tenant, headers });
  assert.equal(r.status, 200, `${tenant} ${JSON.stringify(cmd)}: ${r.text}`);
  return r;
}

async function list(s, query = '') {
  const r = await s.request('GET', `/v1/tenants${query}`);
  assert.equal(r.status, 200, r.text);
  return r.json;
}

// Everything a tenant shows: its tree (view of the root), history of its paths, change feed.
async function snapshot(s, tenant, paths) {
  const h = { 'x-tenant-id': tenant };
  const view = await s.post({ command: 'view', path: '/memories' }, { tenant });
  const histories = [];
  for (const p of paths) histories.push((await s.request('GET', `/v1/history?path=${encodeURIComponent(p)}`, { headers: h })).json);
  const changes = (await s.request('GET', '/v1/changes?after=0&limit=1000', { headers: h })).json;
  const files = [];
  for (const p of paths) files.push((await s.post({ command: 'view', path: p }, { tenant })).json);
  return { view: view.json, histories, changes, files };
}

describe('listing', () => {
  test('GET /v1/tenants: 250 tenants in name order with their usage, in pages', async () => {
    await withServer(async (s) => {
      const expected = [];
      const t0 = Date.now();
      for (let i = 0; i < 250; i++) {
        // Names whose byte order differs from their creation order.
        const name = `t-${String((i * 97) % 250).padStart(3, '0')}`;
        const n = (i % 5) + 1;
        await write(s, name, { command: 'create', path: '/memories/a.txt', file_text: 'x'.repeat(n) });
        let bytes = n;
        let files = 1;
        let versions = 1;
        if (i % 10 === 0) {
          await write(s, name, { command: 'create', path: '/memories/d/b.txt', file_text: 'hello' });
          await write(s, name, { command: 'str_replace', path: '/memories/d/b.txt', old_str: 'hello', new_str: 'hi' });
          bytes += 2;
          files += 1;
          versions += 2;
        }
        expected.push({ tenant: name, bytes, files, versions });
      }
      // A tenant with a row but no write: its limits set only.
      const r = await s.request('PUT', '/v1/tenants/t-limits-only/limits', { body: JSON.stringify({ max_bytes: 100, max_files: null }), headers: { 'content-type': 'application/json' } });
      assert.equal(r.status, 200, r.text);
      const t1 = Date.now();
      expected.push({ tenant: 't-limits-only', bytes: 0, files: 0, versions: 0 });
      expected.sort((a, b) => (Buffer.from(a.tenant) < Buffer.from(b.tenant) ? -1 : 1));
      assert.equal(expected.length, 251);

      const check = (rows) => rows.map(({ last_write: lw, ...rest }) => {
        if (rest.tenant === 't-limits-only') assert.equal(lw, null);
        else {
          assert.match(lw, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
          const at = Date.parse(lw);
          assert.ok(at >= t0 - 1 && at <= t1 + 1, `${rest.tenant}: last_write ${lw} not within the test`);
        }
        return rest;
      });
      // Pages of 100.
      const p1 = await list(s, '?limit=100');
      assert.equal(p1.tenants.length, 100);
      assert.equal(p1.next_cursor, expected[99].tenant);
      const p2 = await list(s, `?limit=100&cursor=${p1.next_cursor}`);
      assert.equal(p2.next_cursor, expected[199].tenant);
      const p3 = await list(s, `?cursor=${p2.next_cursor}&limit=100`);
      assert.equal(p3.tenants.length, 51);
      assert.equal(p3.next_cursor, null);
      assert.deepEqual(check([...p1.tenants, ...p2.tenants, ...p3.tenants]), expected);
      // The default is 100; 1000 takes them all.
      const d = await list(s);
      assert.deepEqual(d, p1);
      const all = await list(s, '?limit=1000');
      assert.equal(all.next_cursor, null);
      assert.deepEqual(check(all.tenants), expected);
      // A page that ends exactly at the last tenant has next_cursor null.
      const exact = await list(s, `?limit=51&cursor=${p2.next_cursor}`);
      assert.equal(exact.next_cursor, null);
      assert.deepEqual(exact.tenants, p3.tenants);
      // A cursor that is no tenant's name still pages (names after it).
      const between = await list(s, '?limit=2&cursor=t-0005');
      assert.deepEqual(between.tenants.map((t) => t.tenant), ['t-001', 't-002']);
      assert.equal(between.next_cursor, 't-002');
      // The last write of a tenant is its latest change.
      const before = Date.now();
      await write(s, 't-007', { command: 'create', path: '/memories/late.txt', file_text: 'late' });
      const one = (await list(s, '?limit=1&cursor=t-006')).tenants[0];
      assert.equal(one.tenant, 't-007');
      assert.ok(Date.parse(one.last_write) >= before - 1, one.last_write);
    });
  });

  test('bad limit, cursor, method or name: 400 or 405 with exact texts; nothing changes', async () => {
    await withServer(async (s) => {
      await write(s, 'b1', { command: 'create', path: '/memories/a.txt', file_text: 'a' });
      const was = await list(s);
      const LIMIT = { error: 'Parameter `limit` must be an integer from 1 to 1000' };
      for (const q of ['?limit=0', '?limit=1001', '?limit=abc', '?limit=-1', '?limit=', '?limit=1.5', '?limit=99999999999999999999']) {
        const r = await s.request('GET', `/v1/tenants${q}`);
        assert.deepEqual([r.status, r.json], [400, LIMIT], q);
      }
      const CURSOR = { error: 'Parameter `cursor` must be the next_cursor of a page (a tenant name: 1 to 128 of A-Z a-z 0-9 . _ -)' };
      for (const q of ['?cursor=', '?cursor=a%2Fb', '?cursor=%C3%A9', `?cursor=${'a'.repeat(129)}`, '?cursor=a%20b']) {
        const r = await s.request('GET', `/v1/tenants${q}`);
        assert.deepEqual([r.status, r.json], [400, CURSOR], q);
      }
      const NAME = { error: 'The tenant in /v1/tenants/{tenant} must be 1 to 128 of A-Z a-z 0-9 . _ -' };
      for (const p of ['/v1/tenants/', `/v1/tenants/${'a'.repeat(129)}`, '/v1/tenants/a%20b']) {
        const r = await s.request('DELETE', p);
        assert.deepEqual([r.status, r.json], [400, NAME], p);
      }
      for (const [method, p, allow] of [['PUT', '/v1/tenants/b1', 'GET, DELETE'], ['POST', '/v1/tenants/b1', 'GET, DELETE'], ['PATCH', '/v1/tenants/b1', 'GET, DELETE'], ['DELETE', '/v1/tenants/b1/limits', 'PUT']]) {
        const r = await s.request(method, p, { body: method === 'GET' ? undefined : '{}' });
        assert.deepEqual([r.status, r.json, r.headers.get('allow')], [405, { error: 'method not allowed' }, allow], `${method} ${p}`);
      }
      for (const method of ['POST', 'DELETE', 'PUT']) {
        const r = await s.request(method, '/v1/tenants', { body: '{}' });
        assert.deepEqual([r.status, r.json], [405, { error: 'method not allowed' }], method);
      }
      const r = await s.request('DELETE', '/v1/tenants/b1/other');
      assert.deepEqual([r.status, r.json], [404, { error: 'Not found: use /v1/tenants/{tenant}, /v1/tenants/{tenant}/limits, /v1/tenants/{tenant}/export, /v1/tenants/{tenant}/import or /v1/tenants/{tenant}/secrets' }]);
      assert.deepEqual(await list(s), was);
    });
  });

  test('through a proxy (Forwarded, X-Forwarded-For): 403, nothing listed or erased', async () => {
    await withServer(async (s) => {
      await write(s, 'p1', { command: 'create', path: '/memories/a.txt', file_text: 'a' });
      const was = await list(s);
      for (const h of [{ 'x-forwarded-for': '203.0.113.7' }, { forwarded: 'for=203.0.113.7' }]) {
        let r = await s.request('GET', '/v1/tenants', { headers: h });
        assert.deepEqual([r.status, r.json], [403, FORBIDDEN]);
        r = await s.request('DELETE', '/v1/tenants/p1', { headers: h });
        assert.deepEqual([r.status, r.json], [403, FORBIDDEN]);
      }
      assert.deepEqual(await list(s), was);
      assert.equal((await s.post({ command: 'view', path: '/memories/a.txt' }, { tenant: 'p1' })).status, 200);
    });
  });
});

describe('erasure', () => {
  let s;
  before(async () => { s = await startServer(); });
  after(async () => {
    await s.stop();
    fs.rmSync(s.dir, { recursive: true, force: true });
  });

  // Where the marker is still stored ({} when nowhere): SQLite: offsets in the database's
  // files, read raw; PostgreSQL: row versions (live or dead) of each table holding it.
  function findBytes(marker) {
    if (!PG) return sqliteFilesHolding(s.dbPath, marker);
    const found = {};
    for (const table of [...TABLES, 'tenants', 'api_keys']) {
      const rows = pgRowVersionsHolding(s.dbPath, table, marker);
      if (rows.length) found[table] = rows;
    }
    return found;
  }

  test('DELETE /v1/tenants/{t} leaves nothing of the tenant in the database; others untouched', async () => {
    const marker = `zqm${crypto.randomBytes(8).toString('hex')}`;
    const tenant = `erase-${marker}`;
    const dir = `/memories/dir-${marker}`;
    const file = `${dir}/file-${marker}.txt`;
    // Another tenant, written before and after.
    const keepPaths = ['/memories/k.txt', '/memories/sub/k2.txt'];
    await write(s, 'keep', { command: 'create', path: keepPaths[0], file_text: 'keep one\n' });
    await write(s, 'keep', { command: 'create', path: keepPaths[1], file_text: 'keep two\n' });
    await write(s, tenant, { command: 'create', path: file, file_text: `secret ${marker} one\n` }, { 'idempotency-key': `key-${marker}` });
    await write(s, 'keep', { command: 'str_replace', path: keepPaths[0], old_str: 'one', new_str: 'uno' });
    await write(s, tenant, { command: 'str_replace', path: file, old_str: 'one', new_str: 'two' });
    await write(s, tenant, { command: 'create', path: '/memories/notes.txt', file_text: `plain ${marker}\n` });
    const keepBefore = await snapshot(s, 'keep', keepPaths);
    // An API key of each tenant (memoryd keys on the same database, as keys.test.mjs does).
    const keyOf = async (t) => {
      const k = await runMemoryd(['keys', 'create', '--tenant', t, '--scope', 'write', '--name', `key of ${t}`, '--db', s.dbPath]);
      assert.equal(k.code, 0, k.stderr);
      return k.stdout.split('\n')[1].slice(4);
    };
    const erasedKey = await keyOf(tenant);
    const keptKey = await keyOf('keep');
    assert.equal(dbSql(s.dbPath, `SELECT count(*) FROM api_keys WHERE tenant = '${tenant}'`).trim(), '1');
    const id = dbSql(s.dbPath, `SELECT id FROM tenants WHERE name = '${tenant}'`).trim();
    assert.match(id, /^\d+$/);
    assert.ok(Object.keys(findBytes(marker)).length > 0, 'the marker is not in the database before the erasure: the check could not fail');
    // Its two files are in the full-text index (SQLite: rows of entries_search, each with the
    // tenant's token, U+E000 and its id; PostgreSQL: the index is on entries itself).
    const search = async () => (await s.request('GET', `/v1/search?q=${marker}`, { headers: { 'x-tenant-id': tenant } })).json.hits.map((h) => h.path).sort();
    assert.deepEqual(await search(), [file, '/memories/notes.txt']);
    const indexRows = () => dbSql(s.dbPath, `SELECT count(*) FROM entries_search WHERE entries_search MATCH '"' || char(57344) || '${id}"'`).trim();
    if (!PG) {
      // (SQLite indexes beside the writer, once the writes pause: wait for it.)
      for (let i = 0; i < 200 && dbSql(s.dbPath, 'SELECT count(*) FROM search_pending').trim() !== '0'; i++) await sleep(50);
      assert.equal(indexRows(), '2');
    }

    const r = await s.request('DELETE', `/v1/tenants/${tenant}`);
    assert.deepEqual([r.status, r.json], [200, { tenant, erased: { entries: 4, versions: 3, changes: 3, idempotency_keys: 1, api_keys: 1 } }]);

    assert.deepEqual(findBytes(marker), {}, 'the marker is still stored after the erasure');
    assert.deepEqual(await search(), [], 'the erased files are still found');
    if (!PG) assert.equal(indexRows(), '0', 'index rows of erased files are left');
    for (const table of TABLES) assert.equal(dbSql(s.dbPath, `SELECT count(*) FROM ${table} WHERE tenant = ${id}`).trim(), '0', table);
    assert.equal(dbSql(s.dbPath, `SELECT count(*) FROM tenants WHERE name = '${tenant}' OR id = ${id}`).trim(), '0');
    assert.equal(dbSql(s.dbPath, `SELECT count(*) FROM api_keys WHERE tenant = '${tenant}' OR id = '${erasedKey}'`).trim(), '0', 'the erased tenant\'s API key is left');
    assert.equal(dbSql(s.dbPath, `SELECT tenant FROM api_keys WHERE id = '${keptKey}'`).trim(), 'keep', 'another tenant\'s API key is gone');
    assert.deepEqual(dbInconsistencies(s.dbPath), []);
    assert.deepEqual(await snapshot(s, 'keep', keepPaths), keepBefore);
    assert.deepEqual((await list(s)).tenants.map((t) => t.tenant), ['keep']);

    // Gone: 404 now; its usage is that of a tenant without data.
    const again = await s.request('DELETE', `/v1/tenants/${tenant}`);
    assert.deepEqual([again.status, again.json], [404, { error: `No such tenant: ${tenant}` }]);
    const u = await s.request('GET', `/v1/tenants/${tenant}`);
    assert.deepEqual([u.json.bytes, u.json.files, u.json.overrides], [0, 0, { max_bytes: null, max_files: null, sensitive: null, expire_after: null }]);

    // The name is free again and starts empty: versions and change-feed numbers from 1.
    const view = await s.post({ command: 'view', path: '/memories' }, { tenant });
    assert.equal(view.json.content, 'Here\'re the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories');
    const replay = await s.post({ command: 'create', path: file, file_text: 'fresh\n' }, { tenant, headers: { 'idempotency-key': `key-${marker}` } });
    assert.deepEqual([replay.status, replay.json.content], [200, `File created successfully at: ${file}`]);
    const h = await s.request('GET', `/v1/history?path=${encodeURIComponent(file)}`, { headers: { 'x-tenant-id': tenant } });
    assert.deepEqual(h.json.versions.map((v) => [v.version, v.command, v.existed]), [[1, 'create', false]]);
    const c = await s.request('GET', '/v1/changes?after=0', { headers: { 'x-tenant-id': tenant } });
    assert.deepEqual(c.json.changes.map((x) => [x.seq, x.command]), [[1, 'create']]);
    assert.deepEqual((await list(s)).tenants.map((t) => [t.tenant, t.bytes, t.files, t.versions]), [['erase-' + marker, 6, 1, 1], ['keep', 18, 2, 3]].sort());
  });

  test('writes racing an erasure leave nothing or a consistent fresh tenant', async (t) => {
    const split = [];
    for (let round = 0; round < 5; round++) {
      const tenant = `race-${round}`;
      await write(s, tenant, { command: 'create', path: '/memories/old.txt', file_text: 'old' });
      // 4 clients, 8 creates each in turn; the erasure is sent once a few were answered, so
      // that it lands among them.
      let answered = 0;
      let erase;
      let sent;
      const started = new Promise((res) => { sent = res; });
      const clients = [0, 1, 2, 3].map(async (c) => {
        const out = [];
        for (let k = 0; k < 8; k++) {
          const i = c * 8 + k;
          out.push([`n${i}.txt`, await s.post({ command: 'create', path: `/memories/n${i}.txt`, file_text: `n${i}` }, { tenant })]);
          if (++answered === 3 + round * 4) {
            erase = s.request('DELETE', `/v1/tenants/${tenant}`);
            sent();
          }
        }
        return out;
      });
      const results = (await Promise.all(clients)).flat();
      await started;
      const er = await erase;
      assert.equal(er.status, 200, er.text);
      for (const [, r] of results) assert.equal(r.status, 200, r.text);
      // Nothing of a tenant id without its tenant row.
      for (const table of TABLES) {
        assert.equal(dbSql(s.dbPath, `SELECT count(*) FROM ${table} x WHERE NOT EXISTS (SELECT 1 FROM tenants t WHERE t.id = x.tenant)`).trim(), '0', table);
      }
      assert.deepEqual(dbInconsistencies(s.dbPath), []);
      const row = (await list(s, '?limit=1000')).tenants.find((x) => x.tenant === tenant);
      const view = await s.post({ command: 'view', path: '/memories' }, { tenant });
      const present = view.json.content.split('\n').map((l) => l.split('\t/memories/')[1]).filter(Boolean);
      assert.ok(!present.includes('old.txt'), 'the erased file is back');
      // Every acknowledged create is either erased (it came before) or present (after), and
      // the erasure's counts say exactly how many came before: no half state.
      const before = 32 - present.length;
      assert.deepEqual(er.json.erased, { entries: 2 + before, versions: 1 + before, changes: 1 + before, idempotency_keys: 0, api_keys: 0 });
      if (present.length === 0) {
        assert.equal(row, undefined);
      } else {
        const bytes = present.reduce((n, p) => n + p.length - 4, 0);
        assert.deepEqual([row.bytes, row.files, row.versions], [bytes, present.length, present.length]);
        const c = await s.request('GET', '/v1/changes?after=0&limit=1000', { headers: { 'x-tenant-id': tenant } });
        assert.deepEqual(c.json.changes.map((x) => x.seq), present.map((_, i) => i + 1));
      }
      split.push(`${before} before, ${present.length} after`);
    }
    t.diagnostic(`creates before / after the erasure, per round: ${split.join('; ')}`);
  });

  test('PostgreSQL: another instance forgets the erased tenant and serves the new one', { skip: PG ? false : 'PostgreSQL only (one instance writes a SQLite file)' }, async () => {
    const other = await startServer({ db: s.dbPath });
    try {
      const tenant = 'two-instances';
      const tree = async (srv) => (await srv.post({ command: 'view', path: '/memories' }, { tenant })).json.content;
      const HEAD = 'Here\'re the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n';
      await write(s, tenant, { command: 'create', path: '/memories/a.txt', file_text: 'a' });
      // The other instance reads and writes the tenant: its connections cache the tenant's id.
      await write(other, tenant, { command: 'create', path: '/memories/b.txt', file_text: 'bb' });
      assert.equal(await tree(other), `${HEAD}3B\t/memories\n1B\t/memories/a.txt\n2B\t/memories/b.txt`);
      const oldId = dbSql(s.dbPath, `SELECT id FROM tenants WHERE name = '${tenant}'`).trim();
      const r = await s.request('DELETE', `/v1/tenants/${tenant}`);
      assert.deepEqual([r.status, r.json.erased.entries], [200, 3]);
      // It hears of the erasure (a notification, delivered at the commit): until then it may
      // still show the old tree from its cache... but its reads are by name: poll until it
      // shows the tenant empty, then let it write first.
      const empty = `${HEAD}0B\t/memories`;
      let seen = '';
      for (const end = Date.now() + 10000; Date.now() < end && seen !== empty;) {
        seen = await tree(other);
        if (seen !== empty) await new Promise((res) => setTimeout(res, 20));
      }
      assert.equal(seen, empty);
      await write(other, tenant, { command: 'create', path: '/memories/c.txt', file_text: 'ccc' });
      await write(s, tenant, { command: 'create', path: '/memories/fresh.txt', file_text: 'fresh' });
      const want = `${HEAD}8B\t/memories\n3B\t/memories/c.txt\n5B\t/memories/fresh.txt`;
      assert.equal(await tree(s), want);
      assert.equal(await tree(other), want);
      for (const table of TABLES) assert.equal(dbSql(s.dbPath, `SELECT count(*) FROM ${table} WHERE tenant = ${oldId}`).trim(), '0', table);
      assert.deepEqual(dbInconsistencies(s.dbPath), []);
    } finally {
      await other.stop();
    }
  });
});
