// Proves docs/behaviour.md "Expiry of unused files" (issue 25, point 1) over real HTTP on
// loopback, against a temp SQLite database and (pg/integration/expiry) a fresh PostgreSQL
// database, with windows of seconds (--expire-after 2s, --expire-granularity 200ms) so that no
// clock is faked: a file viewed within its window stays and one left alone goes, though its
// directory is listed all along (a listing is no use); the directory it leaves is kept; the
// feed's entry `expired`, memoryd_expired_total and the log line; POST /v1/restore brings the
// file back byte for byte; GET /v1/expiring lists exactly what would go (exact JSON, pages, a
// view moving a file out); a tenant's own window through PUT /v1/tenants/{t}/limits ("off"
// keeps its files, a shorter one loses them sooner), and bad values to it and to `within`
// refused with their texts, changing nothing; a use written back survives kill -9 within the
// granularity; and, PostgreSQL only (one database for two instances), a view on one instance
// keeps the file alive against the other's sweep, and both sweeping delete each file once.
// Waiting is by polling a state with a deadline; no assertion depends on a duration.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startServer, withServer } from '../lib/server.mjs';
import { isPg } from '../lib/pg.mjs';

const FAST = ['--expire-after', '2s', '--expire-granularity', '200ms'];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Poll `fn` until it returns a truthy value (then that value), or fail after `ms`.
async function until(fn, what, ms = 30000) {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) {
    const v = await fn();
    if (v) return v;
  }
  throw new Error(`never: ${what} within ${ms} ms`);
}

async function write(s, tenant, cmd) {
  const r = await s.post(cmd, { tenant });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.is_error, false, r.text);
}
const view = (s, tenant, path) => s.post({ command: 'view', path }, { tenant });
// A directory's listing (no use of the files in it).
const listing = async (s, tenant, dir) => (await view(s, tenant, dir)).json.content;
const get = (s, tenant, url) => s.request('GET', url, { headers: { 'x-tenant-id': tenant } });
const limits = (s, tenant, body) => s.request('PUT', `/v1/tenants/${tenant}/limits`,
  { headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
const expiring = (s, tenant, query) => get(s, tenant, `/v1/expiring?${query}`);
async function metric(s, name) {
  const text = (await s.request('GET', '/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
}
async function feed(s, tenant) {
  return (await get(s, tenant, '/v1/changes?after=0')).json.changes;
}
const expiredEntries = async (s, tenant) => (await feed(s, tenant)).filter((c) => c.command === 'expired');
const NUMBERED = (path, lines) => `Here's the content of ${path} with line numbers:\n${lines.map((l, i) => `${String(i + 1).padStart(6)}\t${l}`).join('\n')}`;

describe('expiry of unused files', () => {
  test('a file viewed within its window stays, one left alone goes (a listing is no use); feed, metrics, log, restore', async () => {
    await withServer({ args: FAST }, async (s) => {
      const gone = 'gone: first line\n\tsecond, with a tab \u00e9\n';
      await write(s, 'acme', { command: 'create', path: '/memories/keep.md', file_text: 'keep\n' });
      await write(s, 'acme', { command: 'create', path: '/memories/d/gone.md', file_text: gone });
      assert.equal(await metric(s, 'memoryd_expired_total'), 0);
      // Viewed (keep.md) and listed (d/, the root) all along, until gone.md is gone.
      await until(async () => {
        const v = await view(s, 'acme', '/memories/keep.md');
        assert.equal(v.json.content, NUMBERED('/memories/keep.md', ['keep', '']), v.text);
        await listing(s, 'acme', '/memories');
        return !(await listing(s, 'acme', '/memories/d')).includes('gone.md');
      }, 'gone.md expired');
      assert.equal((await view(s, 'acme', '/memories/keep.md')).json.is_error, false);
      // Its directory is kept, empty.
      assert.equal(await listing(s, 'acme', '/memories/d'),
        'Here\'re the files and directories up to 2 levels deep in /memories/d, excluding hidden items and node_modules:\n0B\t/memories/d');
      const [entry, ...more] = await expiredEntries(s, 'acme');
      assert.deepEqual(more, []);
      assert.deepEqual([entry.command, entry.paths, entry.actor, entry.versions, entry.history_bytes],
        ['expired', ['/memories/d/gone.md'], null, 1, Buffer.byteLength(gone)]);
      assert.equal(await metric(s, 'memoryd_expired_total'), 1);
      await s.waitForLogs((l) => l.some((x) => x.msg === 'expired'), 'the expired line');
      assert.deepEqual(s.logs.filter((x) => x.msg === 'expired').map(({ time, ...x }) => x),
        [{ level: 'info', msg: 'expired', tenant: 'acme', files: 1 }]);
      // History keeps it: a restore to before the expiry's version brings it back, byte for byte.
      const h = await get(s, 'acme', '/v1/history?path=/memories/d/gone.md');
      assert.deepEqual(h.json.versions.map((v) => [v.command, v.existed, v.size]), [['expired', true, Buffer.byteLength(gone)], ['create', false, null]]);
      const back = await s.request('POST', '/v1/restore', { headers: { 'x-tenant-id': 'acme', 'content-type': 'application/json' },
        body: JSON.stringify({ path: '/memories/d/gone.md', before: entry.version }) });
      assert.equal(back.status, 200, back.text);
      assert.equal(back.json.restored, 1, back.text);
      const v = await view(s, 'acme', '/memories/d/gone.md');
      assert.equal(v.json.content, NUMBERED('/memories/d/gone.md', gone.split('\n')), v.text);
      const ver = await get(s, 'acme', `/v1/versions/${entry.version}`);
      assert.equal(ver.json.content, gone);
    });
  });

  test('GET /v1/expiring lists exactly what would go, in pages; a view moves a file out; bad input refused', async () => {
    await withServer({ args: ['--expire-after', '1h', '--expire-granularity', '1s'] }, async (s) => {
      const t0 = Date.now();
      for (const p of ['a', 'b', 'c']) await write(s, 'acme', { command: 'create', path: `/memories/${p}.md`, file_text: `${p}\n` });
      await write(s, 'acme', { command: 'create', path: '/memories/d/e.md', file_text: 'e\n' });
      const t1 = Date.now();
      // Within a minute: nothing (an hour's window).
      assert.equal((await expiring(s, 'acme', 'within=1m')).text, '{"expire_after":"1h","files":[],"next_cursor":null}');
      const all = await expiring(s, 'acme', 'within=2h');
      assert.equal(all.status, 200, all.text);
      assert.deepEqual(all.json.files.map((f) => f.path), ['/memories/a.md', '/memories/b.md', '/memories/c.md', '/memories/d/e.md']);
      for (const f of all.json.files) {
        assert.ok(f.last_used >= t0 - 5 && f.last_used <= t1 + 5, JSON.stringify(f));
        assert.equal(f.expires_at, f.last_used + 3600000);
      }
      const exact = (files, next) => JSON.stringify({ expire_after: '1h', files, next_cursor: next });
      assert.equal(all.text, exact(all.json.files, null));
      // Pages of two.
      const p1 = await expiring(s, 'acme', 'within=2h&limit=2');
      assert.equal(p1.text, exact(all.json.files.slice(0, 2), '/memories/b.md'));
      const p2 = await expiring(s, 'acme', `within=2h&limit=2&cursor=${encodeURIComponent(p1.json.next_cursor)}`);
      assert.equal(p2.text, exact(all.json.files.slice(2), null));
      // A view is a use: b.md's last use moves to it (from memory here at once).
      await sleep(1500); // past the files' creation, so that the use is later than their writes
      const tv = Date.now();
      assert.equal((await view(s, 'acme', '/memories/b.md')).json.is_error, false);
      const after = await expiring(s, 'acme', 'within=2h');
      const b = after.json.files.find((f) => f.path === '/memories/b.md');
      assert.ok(b.last_used >= tv - 5, JSON.stringify(b));
      assert.equal(b.expires_at, b.last_used + 3600000);
      // Within b.md's time left but 600 ms: b.md, used last, is left out; the others are not.
      const cut = b.last_used + 3600000 - Date.now() - 600;
      const soon = await expiring(s, 'acme', `within=${cut}ms`);
      assert.deepEqual(soon.json.files.map((f) => f.path), ['/memories/a.md', '/memories/c.md', '/memories/d/e.md']);
      // A tenant without data, and one whose expiry is off.
      assert.equal((await expiring(s, 'nobody', 'within=2h')).text, '{"expire_after":"1h","files":[],"next_cursor":null}');
      assert.equal((await limits(s, 'acme', { max_bytes: null, max_files: null, expire_after: 'off' })).status, 200);
      assert.equal((await expiring(s, 'acme', 'within=2h')).text, '{"expire_after":null,"files":[],"next_cursor":null}');
      // Bad input: 400 with its text.
      const WITHIN = 'Parameter `within` must be a duration: a whole number and a unit (ms, s, m, h or d), e.g. 7d';
      for (const q of ['', 'within=', 'within=0s', 'within=-1s', 'within=1.5h', 'within=1y', 'within=7', 'within=%207d', 'within=999999999999d']) {
        const r = await expiring(s, 'acme', q);
        assert.deepEqual([r.status, r.json], [400, { error: WITHIN }], q);
      }
      const r = await expiring(s, 'acme', 'within=1h&cursor=a.md');
      assert.deepEqual([r.status, r.json], [400, { error: 'Parameter `cursor` must be the next_cursor of a page (a path below /memories)' }]);
      const l = await expiring(s, 'acme', 'within=1h&limit=0');
      assert.deepEqual([l.status, l.json], [400, { error: 'Parameter `limit` must be an integer from 1 to 1000' }]);
      const post = await s.request('POST', '/v1/expiring?within=1h', { headers: { 'x-tenant-id': 'acme' } });
      assert.deepEqual([post.status, post.headers.get('allow')], [405, 'GET']);
    });
  });

  test('a tenant\'s own window: "off" keeps its files, a shorter one loses them sooner; bad values refused, nothing changed', async () => {
    await withServer({ args: ['--expire-after', '3s', '--expire-granularity', '200ms'] }, async (s) => {
      const doc = (tenant, bytes, files, inForce, own) => ({ tenant, bytes, files,
        limits: { max_bytes: 67108864, max_files: 10000, sensitive: 'reject', expire_after: inForce },
        overrides: { max_bytes: null, max_files: null, sensitive: null, expire_after: own } });
      const put = await limits(s, 'off', { max_bytes: null, max_files: null, expire_after: 'off' });
      assert.deepEqual([put.status, put.json], [200, doc('off', 0, 0, null, 'off')]);
      const short = await limits(s, 'short', { max_bytes: null, max_files: null, expire_after: '1s' });
      assert.deepEqual([short.status, short.json], [200, doc('short', 0, 0, '1s', '1s')]);
      // Without expire_after: left as it is; null: the default again.
      assert.deepEqual((await limits(s, 'short', { max_bytes: 100, max_files: null })).json.overrides, { max_bytes: 100, max_files: null, sensitive: null, expire_after: '1s' });
      assert.deepEqual((await limits(s, 'plain', { max_bytes: null, max_files: null, expire_after: '2h' })).json.limits.expire_after, '2h');
      assert.deepEqual((await limits(s, 'plain', { max_bytes: null, max_files: null, expire_after: null })).json, doc('plain', 0, 0, '3s', null));
      assert.deepEqual((await limits(s, 'short', { max_bytes: null, max_files: null })).json, doc('short', 0, 0, '1s', '1s'));
      // Refused, with its text; nothing changed.
      const EXPIRE = 'Field `expire_after` must be a duration (a whole number and a unit: ms, s, m, h or d, e.g. "90d"), "off", or null (the default of --expire-after)';
      for (const bad of ['3x', '', '0s', 'off ', 'OFF', '1.5h', '-1s', 5, true, ['1s'], { s: 1 }]) {
        const r = await limits(s, 'short', { max_bytes: 7, max_files: 7, expire_after: bad });
        assert.deepEqual([r.status, r.json], [400, { error: EXPIRE }], JSON.stringify(bad));
      }
      const unknown = await limits(s, 'short', { max_bytes: 7, max_files: 7, expire: '1s' });
      assert.deepEqual([unknown.status, unknown.json], [400, { error: 'Unknown field `expire`: only max_bytes, max_files, sensitive and expire_after are taken' }]);
      assert.deepEqual((await s.request('GET', '/v1/tenants/short')).json, doc('short', 0, 0, '1s', '1s'));
      // One file each; `off`'s first, so that it is the oldest.
      for (const t of ['off', 'plain', 'short']) await write(s, t, { command: 'create', path: '/memories/f.md', file_text: `${t}\n` });
      const goneIn = async (t) => !(await listing(s, t, '/memories')).includes('f.md');
      await until(() => goneIn('short'), 'short\'s file expired');
      await until(() => goneIn('plain'), 'plain\'s file expired');
      const [es] = await expiredEntries(s, 'short');
      const [ep] = await expiredEntries(s, 'plain');
      assert.ok(Date.parse(es.time) < Date.parse(ep.time), `${es.time} < ${ep.time}`);
      // Older than a file that expired, yet kept: its tenant's expiry is off.
      assert.equal((await view(s, 'off', '/memories/f.md')).json.content, NUMBERED('/memories/f.md', ['off', '']));
      assert.deepEqual(await expiredEntries(s, 'off'), []);
      assert.equal(await metric(s, 'memoryd_expired_total'), 2);
    });
  });

  test('a use written back survives kill -9: after a restart its last use is at most the granularity older', async () => {
    const args = ['--expire-after', '1h', '--expire-granularity', '300ms'];
    let s = await startServer({ args });
    const dir = s.dir;
    try {
      await write(s, 'acme', { command: 'create', path: '/memories/a.md', file_text: 'a\n' });
      await write(s, 'acme', { command: 'create', path: '/memories/b.md', file_text: 'b\n' });
      const created = (await expiring(s, 'acme', 'within=2h')).json.files[1].last_used;
      await sleep(1500); // past the creation by more than the granularity
      const tv = Date.now();
      assert.equal((await view(s, 'acme', '/memories/a.md')).json.is_error, false);
      await until(async () => (await metric(s, 'memoryd_use_times_written_total')) >= 1, 'the use written back');
      await s.kill();
      s = await startServer({ args, db: s.dbPath });
      const files = (await expiring(s, 'acme', 'within=2h')).json.files;
      assert.deepEqual(files.map((f) => f.path), ['/memories/a.md', '/memories/b.md']);
      assert.ok(files[0].last_used >= tv - 300, `${files[0].last_used} >= ${tv} - 300`);
      // b.md, never viewed: its creation.
      assert.equal(files[1].last_used, created);
    } finally {
      await s.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('two instances on one PostgreSQL database: a view on one keeps the file against the other\'s sweep; each file deleted once',
    { skip: !isPg() && 'PostgreSQL only (its variant, pg/integration/expiry): two instances share a database only there' }, async () => {
      const args = ['--expire-after', '4s', '--expire-granularity', '200ms'];
      const a = await startServer({ args });
      const b = await startServer({ args, db: a.dbPath });
      try {
        await write(b, 'acme', { command: 'create', path: '/memories/x.md', file_text: 'x\n' });
        await write(b, 'acme', { command: 'create', path: '/memories/y.md', file_text: 'y\n' });
        await sleep(2000); // half the window
        const tv = Date.now();
        assert.equal((await view(a, 'acme', '/memories/x.md')).json.is_error, false);
        const goneOn = async (s, name) => !(await listing(s, 'acme', '/memories')).includes(name);
        await until(() => goneOn(b, 'y.md'), 'y.md expired');
        // B knows x.md's use only from the database, where A wrote it back.
        const x = (await expiring(b, 'acme', 'within=1h')).json.files.find((f) => f.path === '/memories/x.md');
        assert.ok(x && x.last_used >= tv - 200, JSON.stringify(x));
        assert.equal((await view(b, 'acme', '/memories/x.md')).json.is_error, false);
        await until(() => goneOn(a, 'x.md'), 'x.md expired');
        // Both swept; each file was deleted once.
        const entries = await expiredEntries(a, 'acme');
        assert.deepEqual(entries.map((e) => e.paths).sort(), [['/memories/x.md'], ['/memories/y.md']]);
        assert.equal((await metric(a, 'memoryd_expired_total')) + (await metric(b, 'memoryd_expired_total')), 2);
      } finally {
        await b.stop();
        await a.stop();
      }
    });
});
