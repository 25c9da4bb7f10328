// Proves docs/behaviour.md "DELETE /v1/memories" (issue 25, point 4) over real HTTP on
// loopback, against a temp SQLite database and (pg/integration/clear) a fresh PostgreSQL
// database: every file and directory below /memories removed in one write (names a listing
// leaves out too), its exact JSON answer, one change-feed entry (`clear`, `/memories`), a
// version of each file in the history, undone exactly by POST /v1/restore with the answer's
// `restore_before`; other tenants untouched; a replay under the same Idempotency-Key; If-Match
// refused (400) with nothing changed; other methods 405; a read key 403, a write key served
// (--auth keys); counted in the metrics as `clear`.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createKey, withServer } from '../lib/server.mjs';

async function write(s, tenant, cmd, headers = {}) {
  const r = await s.post(cmd, { tenant, headers });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.is_error, false, r.text);
}

const clear = (s, tenant, headers = {}) => s.request('DELETE', '/v1/memories', { headers: { 'x-tenant-id': tenant, ...headers } });

// Every file of a tenant with its content, by views (the tree below /memories, hidden names too).
async function files(s, tenant, paths) {
  const out = {};
  for (const p of paths) out[p] = (await s.post({ command: 'view', path: p }, { tenant })).json.content;
  return out;
}

const PATHS = ['/memories/a.md', '/memories/d/b.md', '/memories/d/e/c.md', '/memories/.hidden/h.md', '/memories/node_modules/n.js'];
const EMPTY = 'Here\'re the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories';

describe('DELETE /v1/memories', () => {
  test('clears every entry in one write, recorded in history and the feed, undone by a restore', async () => {
    await withServer({}, async (s) => {
      for (const p of PATHS) await write(s, 'acme', { command: 'create', path: p, file_text: `${p}\n` });
      await write(s, 'other', { command: 'create', path: '/memories/keep.md', file_text: 'kept\n' });
      const before = await files(s, 'acme', PATHS);
      const r = await clear(s, 'acme', { 'idempotency-key': 'clear-1', 'x-memory-actor': 'cleaner' });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json, { path: '/memories', removed: 5, restore_before: 6, seq: 6, versions_recorded: 5 });
      assert.equal((await s.post({ command: 'view', path: '/memories' }, { tenant: 'acme' })).json.content, EMPTY);
      for (const p of PATHS) {
        assert.equal((await s.post({ command: 'view', path: p }, { tenant: 'acme' })).json.content,
          `The path ${p} does not exist. Please provide a valid path.`);
      }
      // A retry under the same key is the first answer, applied once.
      const again = await clear(s, 'acme', { 'idempotency-key': 'clear-1', 'x-memory-actor': 'cleaner' });
      assert.equal(again.status, 200);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(again.json, r.json);
      // One change; a version of each file, as it was.
      const feed = await s.request('GET', '/v1/changes?after=5', { headers: { 'x-tenant-id': 'acme' } });
      assert.deepEqual(feed.json.changes.map((c) => [c.seq, c.command, c.paths, c.actor, c.version, c.versions]),
        [[6, 'clear', ['/memories'], 'cleaner', 6, 5]]);
      const h = await s.request('GET', '/v1/history?path=/memories/d/e/c.md', { headers: { 'x-tenant-id': 'acme' } });
      assert.deepEqual(h.json.versions.map((v) => [v.command, v.existed]), [['clear', true], ['create', false]]);
      // Another tenant keeps its file.
      assert.match((await s.post({ command: 'view', path: '/memories/keep.md' }, { tenant: 'other' })).json.content, /kept/);
      // The restore of `restore_before` puts everything back.
      const back = await s.request('POST', '/v1/restore', { headers: { 'x-tenant-id': 'acme', 'content-type': 'application/json' },
        body: JSON.stringify({ path: '/memories', before: r.json.restore_before }) });
      assert.equal(back.status, 200, back.text);
      assert.deepEqual([back.json.restored, back.json.removed], [5, 0]);
      assert.deepEqual(await files(s, 'acme', PATHS), before);
      // Nothing there: the same answer shape, nothing recorded (no change-feed entry).
      const none = await clear(s, 'nobody');
      assert.deepEqual(none.json, { path: '/memories', removed: 0, restore_before: null, seq: null, versions_recorded: 0 });
      const empty = await s.request('GET', '/v1/changes?after=0', { headers: { 'x-tenant-id': 'nobody' } });
      assert.deepEqual(empty.json.changes, []);
      const m = await (await fetch(`${s.url}/metrics`)).text();
      assert.match(m, /^memoryd_requests_total\{command="clear",class="2xx"\} 3$/m);
    });
  });

  test('If-Match is refused, nothing changed; other methods 405', async () => {
    await withServer({}, async (s) => {
      await write(s, 'acme', { command: 'create', path: '/memories/a.md', file_text: 'a\n' });
      for (const h of [{ 'if-match': '*' }, { 'if-none-match': '*' }]) {
        const r = await clear(s, 'acme', h);
        assert.equal(r.status, 400, r.text);
        assert.deepEqual(r.json, { error: 'If-Match and If-None-Match do not apply to clearing every file (DELETE /v1/memories)' });
      }
      assert.match((await s.post({ command: 'view', path: '/memories/a.md' }, { tenant: 'acme' })).json.content, /\ta/);
      for (const method of ['GET', 'POST', 'PUT']) {
        const r = await s.request(method, '/v1/memories', { headers: { 'x-tenant-id': 'acme' } });
        assert.equal(r.status, 405, `${method}: ${r.text}`);
        assert.equal(r.headers.get('allow'), 'DELETE');
      }
    });
  });

  test('--auth keys: a read key gets 403, a write key clears its tenant', async () => {
    await withServer({ args: ['--auth', 'keys'] }, async (s) => {
      const reader = await createKey(s, 'acme', 'read');
      const writer = await createKey(s, 'acme', 'write');
      await write(s, 'acme', { command: 'create', path: '/memories/a.md', file_text: 'a\n' }, { authorization: `Bearer ${writer}` });
      const denied = await s.request('DELETE', '/v1/memories', { headers: { authorization: `Bearer ${reader}` } });
      assert.equal(denied.status, 403, denied.text);
      const ok = await s.request('DELETE', '/v1/memories', { headers: { authorization: `Bearer ${writer}` } });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.json.removed, 1);
    });
  });
});
