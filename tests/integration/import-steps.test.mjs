// Proves docs/tenants.md "Export and import" on large imports, over real HTTP on loopback,
// against a temp SQLite database and (pg/integration/import-steps) a fresh PostgreSQL database:
// an import is written in steps between the writer's other transactions (md_import.h,
// md_writer.h), so that
//   - other tenants' writes go on while it runs: four clients writing all along are answered
//     between its steps (MEMORYD_IMPORT_STEP_US=1 makes every step one entry, so the import of
//     3,000 files takes 3,000 steps, and a queued write waits for one step at most); it is one
//     change-feed entry;
//   - the tenant being imported takes no other command meanwhile (a write, a second import):
//     503 with its exact text and Retry-After; its reads too where the steps commit (SQLite: a
//     view, the export, history, search, the change feed, its usage), while on PostgreSQL (one
//     transaction of its own, kept open) its reads see the tenant as it was before;
//   - a refusal met after steps were written (merge: a file where the tenant has a directory)
//     leaves the tenant exactly as it was: tree, contents, versions and change feed;
//   - memoryd killed mid-import: at the next start the tenant is exactly as it was (SQLite
//     undoes the committed steps before serving the tenant, and logs it; PostgreSQL never
//     committed them);
//   - with history off an import still works (on SQLite in one transaction, as nothing could
//     undo steps).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { dbInconsistencies, dbSql, isPgUri } from '../lib/db.mjs';
import { startServer } from '../lib/server.mjs';
import { tarArchive } from '../lib/tar.mjs';
import { volume } from '../lib/util.mjs';

const STEPS = { MEMORYD_IMPORT_STEP_US: '1' };
const FILES = volume(3000, 600);
const busyText = (t) => `Error: Tenant ${t} is being imported; the command was not applied. Retry when the import is done.`;

async function importTar(s, tenant, body, query = '') {
  const res = await fetch(`${s.url}/v1/tenants/${tenant}/import${query}`, { method: 'POST', body });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, text, json };
}

async function write(s, tenant, cmd) {
  const r = await s.post(cmd, { tenant });
  assert.equal(r.status, 200, `${tenant} ${JSON.stringify(cmd).slice(0, 120)}: ${r.text}`);
  assert.equal(r.json.is_error, false, r.text);
}

const bigArchive = (n, prefix = 'n') => Array.from({ length: n }, (_, i) => ({
  name: `memories/${prefix}/${String(i).padStart(4, '0')}.md`,
  data: `note ${i}\n${'lorem ipsum dolor sit amet '.repeat(40)}\n`,
}));

// A write to `tenant` that changes nothing if it runs (a str_replace of a file that is not
// there): 503 while the tenant is being imported.
const probe = (s, tenant) => s.post({ command: 'str_replace', path: '/memories/none/probe.md', old_str: 'a', new_str: 'b' }, { tenant });

async function waitBusy(s, tenant) {
  for (let i = 0; i < 2000; i++) {
    const r = await probe(s, tenant);
    if (r.status === 503) return;
    await new Promise((res) => setTimeout(res, 5));
  }
  throw new Error(`${tenant} never became busy`);
}

// The entries of an export (short names, no pax headers): name, type and content; not the
// modification times (an undo puts files back at the time it runs, see docs/tenants.md).
function tarEntries(tar) {
  const out = [];
  for (let at = 0; at + 512 <= tar.length;) {
    const h = tar.subarray(at, at + 512);
    if (h.every((b) => b === 0)) break;
    const name = h.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    const size = parseInt(h.subarray(124, 136).toString('latin1').replace(/\0.*$/s, '').trim() || '0', 8);
    out.push(`${String.fromCharCode(h[156])} ${name} ${tar.subarray(at + 512, at + 512 + size).toString('utf8')}`);
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

// What a tenant is, as far as a client can tell: its tree, its files' contents, its history
// (the versions of every path) and its change feed's last seq.
async function snapshot(s, tenant) {
  const exp = await fetch(`${s.url}/v1/tenants/${tenant}/export`);
  assert.equal(exp.status, 200);
  const tar = tarEntries(Buffer.from(await exp.arrayBuffer()));
  const feed = await s.request('GET', '/v1/changes?after=0&limit=1000', { headers: { 'x-tenant-id': tenant } });
  assert.equal(feed.status, 200, feed.text);
  const versions = dbSql(s.dbPath, `SELECT count(*) FROM versions v JOIN tenants t ON t.id = v.tenant WHERE t.name = '${tenant}'`);
  return { tar, changes: feed.json.changes.length, last: feed.json.changes.at(-1)?.seq ?? 0, versions };
}

// Three directories of names of different lengths, one nested, for a replace to clear.
async function seed(s, tenant) {
  await write(s, tenant, { command: 'create', path: '/memories/keep.md', file_text: 'kept\n' });
  await write(s, tenant, { command: 'create', path: '/memories/b/long-name-dir/c.txt', file_text: 'c\n' });
  await write(s, tenant, { command: 'create', path: '/memories/zz/a.txt', file_text: 'a\n' });
  await write(s, tenant, { command: 'str_replace', path: '/memories/keep.md', old_str: 'kept', new_str: 'kept, edited' });
}

describe('imports in steps', () => {
  test('other tenants\' writes go on during a large import; the tenant waits for its end', async () => {
    const s = await startServer({ args: ['--durability', 'normal'], env: STEPS });
    try {
      await seed(s, 'acme');
      const pg = isPgUri(s.dbPath);
      // Other tenants write all along, four at a time: the writer always has one of their
      // commands queued, so it answers them between the import's steps.
      const events = [];
      let stop = false;
      const loops = Array.from({ length: 4 }, async (_, k) => {
        for (let i = 0; !stop; i++) {
          await write(s, `other${k}`, { command: 'create', path: `/memories/w-${i}.md`, file_text: `${i}\n` });
          events.push('other');
        }
      });
      const pending = importTar(s, 'acme', tarArchive(bigArchive(FILES)), '?mode=replace').then((r) => {
        events.push('import');
        return r;
      });
      await waitBusy(s, 'acme');
      events.push('busy');
      // The tenant's own commands are refused meanwhile (reads too where the steps commit);
      // on PostgreSQL its reads see it as it was, the import's transaction being open.
      const view = await s.post({ command: 'view', path: '/memories/keep.md' }, { tenant: 'acme' });
      const exp = await s.request('GET', '/v1/tenants/acme/export');
      const reads = [];
      for (const url of ['/v1/history?path=/memories/keep.md', '/v1/search?q=kept', '/v1/changes?after=0', '/v1/tenants/acme']) {
        reads.push(await s.request('GET', url, { headers: { 'x-tenant-id': 'acme' } }));
      }
      const again = await importTar(s, 'acme', tarArchive([{ name: 'memories/x.md', data: 'x\n' }]), '?mode=merge');
      const w = await probe(s, 'acme');
      assert.ok(!events.includes('import'), 'the import ended before the checks: make it larger');
      assert.equal(w.status, 503, w.text);
      assert.equal(w.headers.get('retry-after'), '1');
      assert.deepEqual(w.json, { type: 'tool_result', content: busyText('acme'), is_error: true });
      assert.equal(again.status, 503, again.text);
      assert.deepEqual(again.json, { error: busyText('acme').replace(/^Error: /, '') });
      if (pg) {
        assert.equal(view.status, 200, view.text);
        assert.match(view.json.content, /kept, edited/);
        assert.equal(exp.status, 200);
      } else {
        assert.equal(view.status, 503, view.text);
        assert.equal(view.json.content, busyText('acme'));
        assert.equal(exp.status, 503, exp.text);
        assert.deepEqual(exp.json, { error: busyText('acme').replace(/^Error: /, '') });
        for (const x of reads) {
          assert.equal(x.status, 503, x.text);
          assert.deepEqual(x.json, { error: busyText('acme').replace(/^Error: /, '') });
        }
      }
      if (pg) for (const x of reads) assert.equal(x.status, 200, x.text);
      const r = await pending;
      stop = true;
      await Promise.all(loops);
      assert.equal(r.status, 200, r.text);
      // Other tenants' writes were answered while the import ran.
      const during = events.slice(events.indexOf('busy'), events.indexOf('import')).filter((e) => e === 'other');
      assert.ok(during.length > 0, events.join(' '));
      assert.equal(r.json.files, FILES);
      assert.equal(r.json.removed, 3);
      assert.equal(r.json.versions_recorded, FILES + 3);
      // One change-feed entry for the whole import, naming /memories.
      const feed = await s.request('GET', '/v1/changes?after=4', { headers: { 'x-tenant-id': 'acme' } });
      assert.equal(feed.json.changes.length, 1, feed.text);
      assert.equal(feed.json.changes[0].seq, r.json.seq);
      assert.equal(feed.json.changes[0].seq, 5);
      assert.deepEqual(feed.json.changes[0].paths, ['/memories']);
      // The tenant is the archive's now, and served again.
      const root = await s.post({ command: 'view', path: '/memories' }, { tenant: 'acme' });
      assert.equal(root.status, 200, root.text);
      assert.doesNotMatch(root.json.content, /keep\.md|zz|long-name/);
      const one = await s.post({ command: 'view', path: '/memories/n/0007.md' }, { tenant: 'acme' });
      assert.match(one.json.content, /note 7/);
      assert.deepEqual(dbInconsistencies(s.dbPath), []);
    } finally {
      await s.stop();
      fs.rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test('a refusal met after steps were written leaves the tenant exactly as it was', async () => {
    const s = await startServer({ args: ['--durability', 'normal'], env: STEPS });
    try {
      await seed(s, 'acme');
      const before = await snapshot(s, 'acme');
      // Merge: the archive's files go over the tenant's; its last entry is a file where the
      // tenant has a directory, which only the tenant's tree tells.
      const entries = [...bigArchive(Math.floor(FILES / 2)), { name: 'memories/keep.md', data: 'over\n' },
        { name: 'memories/zz', data: 'not a directory\n' }];
      const r = await importTar(s, 'acme', tarArchive(entries), '?mode=merge');
      assert.equal(r.status, 409, r.text);
      assert.deepEqual(r.json, { error: 'Nothing was imported: file memories/zz: /memories/zz is a directory' });
      assert.deepEqual(await snapshot(s, 'acme'), before);
      if (!isPgUri(s.dbPath)) {
        assert.equal(dbSql(s.dbPath, 'SELECT count(*) FROM imports'), '0\n');
        await s.waitForLogs((l) => l.some((x) => x.msg === 'import undone' && x.tenant === 'acme' && x.why === 'refused'), 'the undo');
      }
      // Served again, and writable.
      await write(s, 'acme', { command: 'create', path: '/memories/after.md', file_text: 'after\n' });
      assert.deepEqual(dbInconsistencies(s.dbPath), []);
    } finally {
      await s.stop();
      fs.rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test('memoryd killed mid-import: at the next start the tenant is exactly as it was', async () => {
    const s = await startServer({ args: ['--durability', 'normal'], env: STEPS });
    let s2 = null;
    try {
      await seed(s, 'acme');
      const before = await snapshot(s, 'acme');
      const pending = importTar(s, 'acme', tarArchive(bigArchive(FILES)), '?mode=replace').catch(() => null);
      await waitBusy(s, 'acme');
      if (!isPgUri(s.dbPath)) {
        // Steps committed: the mark is there, and versions beyond the tenant's.
        for (let i = 0; i < 2000; i++) {
          if (dbSql(s.dbPath, 'SELECT count(*) FROM imports') === '1\n'
            && Number(dbSql(s.dbPath, 'SELECT count(*) FROM versions')) > Number(before.versions) + 10) break;
          await new Promise((res) => setTimeout(res, 5));
        }
        assert.equal(dbSql(s.dbPath, 'SELECT count(*) FROM imports'), '1\n');
      }
      await s.kill();
      await pending;
      s2 = await startServer({ db: s.dbPath, args: ['--durability', 'normal'] });
      // Served once undone (until then 503, as during an import).
      for (let i = 0; i < 2000; i++) {
        const v = await s2.post({ command: 'view', path: '/memories' }, { tenant: 'acme' });
        if (v.status === 200) break;
        assert.equal(v.json.content, busyText('acme'));
        await new Promise((res) => setTimeout(res, 5));
      }
      assert.deepEqual(await snapshot(s2, 'acme'), before);
      if (!isPgUri(s.dbPath)) {
        assert.equal(dbSql(s.dbPath, 'SELECT count(*) FROM imports'), '0\n');
        await s2.waitForLogs((l) => l.some((x) => x.msg === 'import undone' && x.tenant === 'acme'
          && x.why === 'memoryd stopped during the import'), 'the undo at start');
      }
      assert.deepEqual(dbInconsistencies(s.dbPath), []);
    } finally {
      if (s2) await s2.stop();
      fs.rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test('with history off an import is written in one transaction, and works', async () => {
    const s = await startServer({ args: ['--history-versions', '0'], env: STEPS });
    try {
      await seed(s, 'acme');
      const r = await importTar(s, 'acme', tarArchive(bigArchive(20)), '?mode=replace');
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.files, 20);
      assert.equal(r.json.versions_recorded, 0);
      const v = await s.post({ command: 'view', path: '/memories/n/0019.md' }, { tenant: 'acme' });
      assert.match(v.json.content, /note 19/);
    } finally {
      await s.stop();
      fs.rmSync(s.dir, { recursive: true, force: true });
    }
  });
});
