// Proves the history of "memory you can trust" over real HTTP on loopback against a temp SQLite
// database, and as pg/integration/history against a fresh PostgreSQL database
// (tests/integration/history.test.mjs):
//   - every write command records, for each file it changes, what the file was just before: its
//     fields exact (command, actor, existed, size, sha256 of the previous content computed here
//     with node:crypto, redacted, time inside the request's clock window), versions numbered
//     1, 2, ... per tenant without gaps; a directory deleted or renamed records each file below it
//     (rename: the old paths with their content, then the new ones as "did not exist");
//   - GET /v1/history: newest first, pagination (limit, cursor, next_cursor null at the end, the
//     default limit of 50), 404 for a path that never existed, an empty list for an existing
//     path on a server with --history-versions 0; GET /v1/versions/{v} with its content;
//   - POST /v1/restore of one version (in place, after the file was deleted, after its parent
//     directory was deleted), of a directory as it stood before a version (undoing a delete; a
//     rename, by the old directory and by /memories as a whole; files that did not exist then
//     removed, unchanged ones counted; a file that took a directory's place removed first), each
//     restore recording its own versions and change;
//   - versions and seqs consecutive per tenant when 4 tenants' commands, many refused, share
//     write batches (a refused command's savepoint gives its numbers back);
//   - every refusal of /v1/restore and the history routes, with its exact status and body, and
//     nothing changed by it;
//   - retention: by count (--history-versions 3: the 3 newest versions of a file kept, the
//     pruned ones gone, a restore reaching before them refused) and by age (versions whose time
//     is rewritten to 31 days ago in the database are pruned while memoryd runs); history off
//     (--history-versions 0, --history-days 0): no version recorded, the change feed still kept.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { dbSql } from '../lib/db.mjs';
import { startServer } from '../lib/server.mjs';

const sha256 = (s) => crypto.createHash('sha256').update(s).digest('hex');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Time bounds are stretched where memoryd runs slowly: under an MD_TEST_WRAPPER (valgrind) or a
// sanitizer build.
const SLOW = process.env.MD_TEST_WRAPPER ? 20 : process.env.MD_SANITIZE === '1' ? 3 : 1;
const TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const LISTING_HEAD = (p) =>
  `Here're the files and directories up to 2 levels deep in ${p}, excluding hidden items and node_modules:`;

// A tenant-bound client of one server.
function client(srv, tenant) {
  const headers = (h = {}) => ({ 'x-tenant-id': tenant, ...h });
  const c = {
    tenant,
    post: (cmd, h = {}) => srv.post(cmd, { tenant, headers: h }),
    get: (p) => srv.request('GET', p, { headers: headers() }),
    op: (route, body, h = {}) => srv.request('POST', `/v1/${route}`, {
      body: typeof body === 'string' ? body : JSON.stringify(body),
      headers: headers({ 'content-type': 'application/json', ...h }),
    }),
    // A write that must succeed; returns {r, t0, t1}: the clock window around it.
    async write(cmd, h = {}) {
      const t0 = Date.now();
      const r = await c.post(cmd, h);
      const t1 = Date.now();
      assert.equal(r.status, 200, `${JSON.stringify(cmd)}: ${r.text}`);
      assert.equal(r.json.is_error, false);
      return { r, t0, t1 };
    },
    async create(path, text, h) {
      const w = await c.write({ command: 'create', path, file_text: text }, h);
      assert.equal(w.r.json.content, `File created successfully at: ${path}`);
      return w;
    },
    // A file's content, read back with view.
    async text(path) {
      const r = await c.post({ command: 'view', path });
      assert.equal(r.status, 200, r.text);
      const [head, ...lines] = r.json.content.split('\n');
      assert.equal(head, `Here's the content of ${path} with line numbers:`);
      return lines.map((l, i) => {
        const m = /^ *(\d+)\t([^]*)$/.exec(l);
        assert.ok(m && Number(m[1]) === i + 1, `bad view line ${JSON.stringify(l)}`);
        return m[2];
      }).join('\n');
    },
    async missing(path) {
      const r = await c.post({ command: 'view', path });
      assert.deepEqual([r.status, r.json.content], [404, `The path ${path} does not exist. Please provide a valid path.`]);
    },
    async history(path, query = '') {
      const r = await c.get(`/v1/history?path=${encodeURIComponent(path)}${query}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('content-type'), 'application/json');
      return r.json;
    },
    async version(v) {
      const r = await c.get(`/v1/versions/${v}`);
      assert.equal(r.status, 200, r.text);
      return r.json;
    },
    async changes(after = 0) {
      const r = await c.get(`/v1/changes?after=${after}&limit=1000`);
      assert.equal(r.status, 200, r.text);
      return r.json;
    },
    // Every listing and file view below `root` (hidden files too, through `extra`).
    async tree(extra = [], root = '/memories') {
      const out = [];
      const visit = async (dir) => {
        const r = await c.post({ command: 'view', path: dir });
        assert.equal(r.status, 200, r.text);
        out.push(r.json.content);
        for (const line of r.json.content.split('\n').slice(2)) {
          const p = line.slice(line.indexOf('\t') + 1);
          const rel = p.slice(dir.length + 1);
          if (rel.endsWith('/') && !rel.slice(0, -1).includes('/')) await visit(p.slice(0, -1));
          else if (!rel.includes('/')) out.push(`${p}: ${await c.text(p)}`);
        }
      };
      await visit(root);
      for (const p of extra) {
        const r = await c.post({ command: 'view', path: p });
        out.push(`${p} (${r.status}): ${r.json.content}`);
      }
      return out;
    },
  };
  return c;
}

// The expected version object: content-derived fields from `before` (undefined: did not exist).
function expectVersion(v, { version, path, command, actor = null, before, redacted = false }) {
  return before === undefined
    ? { version, path, command, time: v.time, actor, existed: false, size: null, sha256: null, redacted }
    : { version, path, command, time: v.time, actor, existed: true, size: Buffer.byteLength(before), sha256: redacted ? null : sha256(before), redacted };
}

function inWindow(time, { t0, t1 }, what) {
  assert.match(time, TIME_RE, what);
  const ms = Date.parse(time);
  assert.equal(new Date(ms).toISOString(), time, what);
  assert.ok(ms >= t0 && ms <= t1, `${what}: time ${time} is outside the request's window [${new Date(t0).toISOString()}, ${new Date(t1).toISOString()}]`);
}

const DAY_MS = 86400000;

async function until(what, fn, ms = 10000 * SLOW) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    last = await fn();
    if (last.done) return last;
    await sleep(50);
  }
  assert.fail(`${what} did not happen within ${ms} ms; last seen: ${JSON.stringify(last.seen)}`);
}

describe('history (default settings)', () => {
  let srv;
  before(async () => { srv = await startServer(); });
  after(async () => {
    await srv.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  });

  test('every write command records the file as it was just before: fields exact, versions consecutive, times in the window', async () => {
    const c = client(srv, 'h-every');
    const p = '/memories/notes.txt';
    const q = '/memories/arch/notes.txt';
    const c0 = 'alpha\nbeta\n';
    const w1 = await c.create(p, c0, { 'x-memory-actor': 'agent 7 (planner)' });
    assert.equal(await c.text(p), c0);
    const w2 = await c.write({ command: 'str_replace', path: p, old_str: 'beta', new_str: 'gamma' });
    const c1 = 'alpha\ngamma\n';
    assert.equal(await c.text(p), c1);
    const w3 = await c.write({ command: 'insert', path: p, insert_line: 1, insert_text: 'inserted' }, { 'x-memory-actor': 'bob' });
    const c2 = 'alpha\ninserted\ngamma\n';
    assert.equal(await c.text(p), c2);
    const w4 = await c.write({ command: 'rename', old_path: p, new_path: q });
    assert.equal(await c.text(q), c2);
    const w5 = await c.write({ command: 'delete', path: q });
    await c.missing(q);

    const expected = [
      { w: w1, version: 1, path: p, command: 'create', actor: 'agent 7 (planner)', before: undefined },
      { w: w2, version: 2, path: p, command: 'str_replace', before: c0 },
      { w: w3, version: 3, path: p, command: 'insert', actor: 'bob', before: c1 },
      { w: w4, version: 4, path: p, command: 'rename', before: c2 },
      { w: w4, version: 5, path: q, command: 'rename', before: undefined },
      { w: w5, version: 6, path: q, command: 'delete', before: c2 },
    ];
    // Each version by itself, with its content (null when the path had no file).
    for (const e of expected) {
      const v = await c.version(e.version);
      inWindow(v.time, e.w, `version ${e.version}`);
      assert.deepEqual(v, { ...expectVersion(v, e), content: e.before ?? null }, `version ${e.version}`);
    }
    // The history of each path, newest first; both paths no longer exist and still have one.
    const hp = await c.history(p);
    assert.deepEqual(hp, { path: p, versions: [4, 3, 2, 1].map((n) => expectVersion(hp.versions[4 - n], expected[n - 1])), next_cursor: null });
    const hq = await c.history(q);
    assert.deepEqual(hq, { path: q, versions: [6, 5].map((n) => expectVersion(hq.versions[6 - n], expected[n - 1])), next_cursor: null });
    // The same versions' times as one another in the rename (one command, one time).
    assert.equal(hq.versions[1].time, hp.versions[0].time);
    // The path given is canonicalised in the answer.
    assert.equal((await c.history('/memories//arch/notes.txt/')).path, q);

    // The change feed: one entry per write, naming the first version and how many.
    const feed = await c.changes();
    const ch = (seq, version, versions, bytes, command, paths, actor = null) => ({ seq, version, versions, history_bytes: bytes, time: feed.changes[seq - 1].time, command, paths, actor });
    assert.deepEqual(feed, {
      changes: [
        ch(1, 1, 1, 0, 'create', [p], 'agent 7 (planner)'),
        ch(2, 2, 1, Buffer.byteLength(c0), 'str_replace', [p]),
        ch(3, 3, 1, Buffer.byteLength(c1), 'insert', [p], 'bob'),
        ch(4, 4, 2, Buffer.byteLength(c2), 'rename', [p, q]),
        ch(5, 6, 1, Buffer.byteLength(c2), 'delete', [q]),
      ],
      last_seq: 5,
      next_after: 5,
    });
    for (const [i, w] of [w1, w2, w3, w4, w5].entries()) {
      inWindow(feed.changes[i].time, w, `change ${i + 1}`);
      assert.equal(feed.changes[i].time, (await c.version(feed.changes[i].version)).time);
    }
  });

  test('X-Memory-Actor must be 1 to 128 printable ASCII characters (400, nothing written)', async () => {
    const c = client(srv, 'h-actor');
    await c.create('/memories/a.txt', 'x', { 'x-memory-actor': 'a'.repeat(128) });
    assert.equal((await c.version(1)).actor, 'a'.repeat(128));
    for (const bad of ['a'.repeat(129), '\u00e9t\u00e9', 'tab\there']) {
      const r = await srv.post({ command: 'create', path: '/memories/b.txt', file_text: 'y' }, { tenant: c.tenant, headers: { 'x-memory-actor': Buffer.from(bad, 'utf8').toString('latin1') } });
      assert.deepEqual([r.status, r.json], [400, { type: 'tool_result', content: 'Error: The X-Memory-Actor header must be 1 to 128 printable ASCII characters', is_error: true }], JSON.stringify(bad));
    }
    await c.missing('/memories/b.txt');
    assert.equal((await c.changes()).last_seq, 1);
  });

  test('a directory deleted or renamed records each file below it, in path order', async () => {
    const c = client(srv, 'h-tree');
    const files = { '/memories/d/b.txt': 'bb', '/memories/d/a.txt': 'a', '/memories/d/sub/c.txt': 'ccc' };
    for (const [f, t] of Object.entries(files)) await c.create(f, t);
    const wr = await c.write({ command: 'rename', old_path: '/memories/d', new_path: '/memories/e' });
    const wd = await c.write({ command: 'delete', path: '/memories/e' });
    const sorted = ['a.txt', 'b.txt', 'sub/c.txt'];
    const expected = [
      ...sorted.map((f, i) => ({ w: wr, version: 4 + i, path: `/memories/d/${f}`, command: 'rename', before: files[`/memories/d/${f}`] })),
      ...sorted.map((f, i) => ({ w: wr, version: 7 + i, path: `/memories/e/${f}`, command: 'rename', before: undefined })),
      ...sorted.map((f, i) => ({ w: wd, version: 10 + i, path: `/memories/e/${f}`, command: 'delete', before: files[`/memories/d/${f}`] })),
    ];
    for (const e of expected) {
      const v = await c.version(e.version);
      inWindow(v.time, e.w, `version ${e.version}`);
      assert.deepEqual(v, { ...expectVersion(v, e), content: e.before ?? null }, `version ${e.version}`);
    }
    const r = await c.get('/v1/versions/13');
    assert.deepEqual([r.status, r.json], [404, { error: 'Version 13 is not kept (there is no such version of this tenant, or retention has pruned it)' }]);
    const feed = await c.changes(3);
    assert.deepEqual(feed.changes.map(({ time, ...rest }) => rest), [
      { seq: 4, version: 4, versions: 6, history_bytes: 6, command: 'rename', paths: ['/memories/d', '/memories/e'], actor: null },
      { seq: 5, version: 10, versions: 3, history_bytes: 6, command: 'delete', paths: ['/memories/e'], actor: null },
    ]);
    // The directories themselves have no versions: an empty history, for a path that exists.
    await c.create('/memories/d/new.txt', 'n');
    assert.deepEqual(await c.history('/memories/d'), { path: '/memories/d', versions: [], next_cursor: null });
    assert.deepEqual(await c.history('/memories'), { path: '/memories', versions: [], next_cursor: null });
  });

  test('GET /v1/history and /v1/versions refusals: exact 400 and 404 bodies, tenants apart', async () => {
    const c = client(srv, 'h-refuse');
    await c.create('/memories/f.txt', 'f');
    const cases = [
      ['/v1/history?path=/memories/never.txt', 404, 'The path /memories/never.txt has no history and does not exist'],
      ['/v1/history?path=/memories/never.txt&cursor=5', 200, null],
      ['/v1/history', 400, 'Parameter `path` is required'],
      ['/v1/history?path=/etc/passwd', 400, 'Path must start with /memories, got: /etc/passwd'],
      ['/v1/history?path=/memories/f.txt&limit=0', 400, 'Parameter `limit` must be an integer from 1 to 1000'],
      ['/v1/history?path=/memories/f.txt&limit=1001', 400, 'Parameter `limit` must be an integer from 1 to 1000'],
      ['/v1/history?path=/memories/f.txt&limit=ten', 400, 'Parameter `limit` must be an integer from 1 to 1000'],
      ['/v1/history?path=/memories/f.txt&limit=', 400, 'Parameter `limit` must be an integer from 1 to 1000'],
      ['/v1/history?path=/memories/f.txt&cursor=0', 400, 'Parameter `cursor` must be an integer from 1 to 9223372036854775807'],
      ['/v1/history?path=/memories/f.txt&cursor=-3', 400, 'Parameter `cursor` must be an integer from 1 to 9223372036854775807'],
      ['/v1/history?path=/memories/f.txt&cursor=2.5', 400, 'Parameter `cursor` must be an integer from 1 to 9223372036854775807'],
      ['/v1/versions/0', 400, 'The version in /v1/versions/{version} must be a positive integer'],
      ['/v1/versions/-1', 400, 'The version in /v1/versions/{version} must be a positive integer'],
      ['/v1/versions/1x', 400, 'The version in /v1/versions/{version} must be a positive integer'],
      ['/v1/versions/', 400, 'The version in /v1/versions/{version} must be a positive integer'],
      ['/v1/versions/2', 404, 'Version 2 is not kept (there is no such version of this tenant, or retention has pruned it)'],
    ];
    for (const [url, status, error] of cases) {
      const r = await c.get(url);
      if (status === 200) {
        assert.deepEqual([r.status, r.json], [200, { path: '/memories/never.txt', versions: [], next_cursor: null }], url);
        continue;
      }
      assert.deepEqual([r.status, r.json], [status, { error }], url);
    }
    // Another tenant sees neither this tenant's versions nor its paths.
    const other = client(srv, 'h-refuse-other');
    const r1 = await other.get('/v1/versions/1');
    assert.deepEqual([r1.status, r1.json], [404, { error: 'Version 1 is not kept (there is no such version of this tenant, or retention has pruned it)' }]);
    const r2 = await other.get('/v1/history?path=/memories/f.txt');
    assert.deepEqual([r2.status, r2.json], [404, { error: 'The path /memories/f.txt has no history and does not exist' }]);
    // Methods.
    const r3 = await srv.request('POST', '/v1/history?path=/memories/f.txt', { headers: { 'x-tenant-id': c.tenant } });
    assert.deepEqual([r3.status, r3.headers.get('allow')], [405, 'GET']);
    const r4 = await srv.request('GET', '/v1/restore');
    assert.deepEqual([r4.status, r4.headers.get('allow')], [405, 'POST']);
  });

  test('restore one version: in place, after the file was deleted, after its parent directory was deleted; it records its own version and change', async () => {
    const c = client(srv, 'h-restore');
    const p = '/memories/f.txt';
    await c.create(p, 'one\n');
    await c.write({ command: 'str_replace', path: p, old_str: 'one', new_str: 'two' }); // v2: one
    const t0 = Date.now();
    const r = await c.op('restore', { path: p, version: 2 }, { 'x-memory-actor': 'undo-bot' });
    const t1 = Date.now();
    assert.deepEqual([r.status, r.json], [200, { path: p, version: 2, restored: 1, removed: 0, unchanged: 0, seq: 3, versions_recorded: 1 }]);
    assert.equal(r.headers.get('idempotent-replayed'), null);
    assert.equal(await c.text(p), 'one\n');
    // Its own version (what the file was just before the restore) and change.
    const v3 = await c.version(3);
    inWindow(v3.time, { t0, t1 }, 'restore version');
    assert.deepEqual(v3, { version: 3, path: p, command: 'restore', time: v3.time, actor: 'undo-bot', existed: true, size: 4, sha256: sha256('two\n'), redacted: false, content: 'two\n' });
    const feed = await c.changes(2);
    assert.deepEqual(feed, { changes: [{ seq: 3, version: 3, versions: 1, history_bytes: 4, time: v3.time, command: 'restore', paths: [p], actor: 'undo-bot' }], last_seq: 3, next_after: 3 });
    // The restore itself can be undone: version 3 holds what it replaced.
    const r2 = await c.op('restore', { path: p, version: 3 });
    assert.deepEqual([r2.status, r2.json], [200, { path: p, version: 3, restored: 1, removed: 0, unchanged: 0, seq: 4, versions_recorded: 1 }]);
    assert.equal(await c.text(p), 'two\n');

    // After the file was deleted: it comes back (the restore records that it did not exist).
    await c.write({ command: 'delete', path: p }); // v5
    await c.missing(p);
    const r3 = await c.op('restore', { path: '/memories//f.txt', version: 2 });
    assert.deepEqual([r3.status, r3.json], [200, { path: p, version: 2, restored: 1, removed: 0, unchanged: 0, seq: 6, versions_recorded: 1 }]);
    assert.equal(await c.text(p), 'one\n');
    const v6 = await c.version(6);
    assert.deepEqual(v6, { version: 6, path: p, command: 'restore', time: v6.time, actor: null, existed: false, size: null, sha256: null, redacted: false, content: null });

    // After its parent directory (and the directory above) was deleted: recreated with its parents.
    const deep = '/memories/p/q/deep.txt';
    await c.create(deep, 'first version');
    await c.write({ command: 'str_replace', path: deep, old_str: 'first', new_str: 'second' }); // v8: first version
    await c.create('/memories/p/other.txt', 'o');
    await c.write({ command: 'delete', path: '/memories/p' });
    await c.missing('/memories/p');
    const r4 = await c.op('restore', { path: deep, version: 8 });
    assert.deepEqual([r4.status, r4.json], [200, { path: deep, version: 8, restored: 1, removed: 0, unchanged: 0, seq: 11, versions_recorded: 1 }]);
    assert.equal(await c.text(deep), 'first version');
    const listing = await c.post({ command: 'view', path: '/memories/p' });
    assert.equal(listing.json.content, [LISTING_HEAD('/memories/p'), '13B\t/memories/p', '13B\t/memories/p/q/', '13B\t/memories/p/q/deep.txt'].join('\n'));
    await c.missing('/memories/p/other.txt');
    // Sizes of the directories above are right after the restore.
    const root = await c.post({ command: 'view', path: '/memories' });
    assert.equal(root.json.content, [LISTING_HEAD('/memories'), '17B\t/memories', '4B\t/memories/f.txt', '13B\t/memories/p/', '13B\t/memories/p/q/'].join('\n'));
  });

  test('directory restore undoes a delete: the tree equals the tree before it (from any version of the delete)', async () => {
    for (const offset of [0, 3, 5]) {
      const c = client(srv, `h-undo-delete-${offset}`);
      const files = {
        '/memories/proj/readme.md': '# Project\n',
        '/memories/proj/src/main.c': 'int main(void) { return 1; }\n',
        '/memories/proj/src/util/helpers.c': 'static int helper;\n'.repeat(40),
        '/memories/proj/empty.txt': '',
        '/memories/proj/.hidden': 'not listed',
        '/memories/proj/notes/todo.txt': '- one\n- two\n',
        '/memories/other.txt': 'outside',
      };
      for (const [f, t] of Object.entries(files)) await c.create(f, t);
      await c.write({ command: 'str_replace', path: '/memories/proj/src/main.c', old_str: 'return 1', new_str: 'return 0' });
      const snapshot = await c.tree(['/memories/proj/.hidden'], '/memories/proj');
      const del = await c.write({ command: 'delete', path: '/memories/proj' });
      const feed = await c.changes();
      const change = feed.changes.at(-1);
      assert.deepEqual([change.command, change.versions, change.paths], ['delete', 6, ['/memories/proj']]);
      inWindow(change.time, del, 'delete change');
      // Something outside changes after the delete: a restore of proj leaves it alone.
      await c.write({ command: 'str_replace', path: '/memories/other.txt', old_str: 'outside', new_str: 'outside, edited' });
      const r = await c.op('restore', { path: '/memories/proj', before: change.version + offset });
      assert.deepEqual([r.status, r.json], [200, { path: '/memories/proj', before: change.version + offset, restored: 6, removed: 0, unchanged: 0, seq: change.seq + 2, versions_recorded: 6 }], `offset ${offset}`);
      assert.deepEqual(await c.tree(['/memories/proj/.hidden'], '/memories/proj'), snapshot, `offset ${offset}`);
      assert.equal(await c.text('/memories/other.txt'), 'outside, edited');
      // Each restored file recorded that it did not exist just before the restore.
      const h = await c.history('/memories/proj/src/util/helpers.c', '&limit=1');
      assert.deepEqual([h.versions[0].command, h.versions[0].existed], ['restore', false]);
      const last = (await c.changes(change.seq + 1)).changes;
      assert.deepEqual(last.map(({ time, ...rest }) => rest), [{ seq: change.seq + 2, version: change.version + 7, versions: 6, history_bytes: 0, command: 'restore', paths: ['/memories/proj'], actor: null }]);
    }
  });

  test('directory restore: files that did not exist then removed, others written back, unchanged ones counted', async () => {
    const c = client(srv, 'h-before');
    await c.create('/memories/w/a.txt', 'A1');
    await c.create('/memories/w/b.txt', 'B1');
    await c.create('/memories/w/d.txt', 'D1');
    await c.create('/memories/w/keep.txt', 'K'); // never changed after the point
    await c.create('/memories/x.txt', 'outside 1');
    const point = (await c.changes()).last_seq + 1; // the next write's first version (one version per write so far)
    assert.equal(point, 6);
    await c.write({ command: 'str_replace', path: '/memories/w/a.txt', old_str: 'A1', new_str: 'A2' }); // v6: A1
    await c.create('/memories/w/new/c.txt', 'C');
    await c.write({ command: 'str_replace', path: '/memories/w/b.txt', old_str: 'B1', new_str: 'B2' });
    await c.write({ command: 'str_replace', path: '/memories/w/d.txt', old_str: 'D1', new_str: 'D2' });
    await c.write({ command: 'str_replace', path: '/memories/w/d.txt', old_str: 'D2', new_str: 'D1' });
    await c.write({ command: 'str_replace', path: '/memories/x.txt', old_str: '1', new_str: '2' });
    const r = await c.op('restore', { path: '/memories/w', before: point });
    assert.deepEqual([r.status, r.json], [200, { path: '/memories/w', before: point, restored: 2, removed: 1, unchanged: 1, seq: 12, versions_recorded: 3 }]);
    assert.equal(await c.text('/memories/w/a.txt'), 'A1');
    assert.equal(await c.text('/memories/w/b.txt'), 'B1');
    assert.equal(await c.text('/memories/w/d.txt'), 'D1');
    assert.equal(await c.text('/memories/w/keep.txt'), 'K');
    await c.missing('/memories/w/new/c.txt');
    assert.equal(await c.text('/memories/x.txt'), 'outside 2');
    // The versions it recorded: a and b with their content before the restore, c removed.
    const v = await Promise.all([12, 13, 14].map((n) => c.version(n)));
    assert.equal((await c.get('/v1/versions/15')).status, 404);
    const byPath = Object.fromEntries(v.map((x) => [x.path, [x.command, x.existed, x.content]]));
    assert.deepEqual(byPath, {
      '/memories/w/a.txt': ['restore', true, 'A2'],
      '/memories/w/b.txt': ['restore', true, 'B2'],
      '/memories/w/new/c.txt': ['restore', true, 'C'],
    });
    // Restoring again to the same point changes nothing: everything unchanged.
    const again = await c.op('restore', { path: '/memories/w', before: point });
    assert.deepEqual([again.status, again.json], [200, { path: '/memories/w', before: point, restored: 0, removed: 0, unchanged: 4, seq: 13, versions_recorded: 0 }]);
  });

  test('directory restore undoes a rename: by the old directory, and by /memories as a whole (tree as before the rename)', async () => {
    const setup = async (c) => {
      await c.create('/memories/a/x.txt', 'X');
      await c.create('/memories/a/y/z.txt', 'ZZ');
      await c.create('/memories/top.txt', 'T');
      const snapshot = await c.tree();
      await c.write({ command: 'rename', old_path: '/memories/a', new_path: '/memories/b' });
      const ch = (await c.changes()).changes.at(-1);
      assert.deepEqual([ch.seq, ch.version, ch.versions, ch.command, ch.paths], [4, 4, 4, 'rename', ['/memories/a', '/memories/b']]);
      return snapshot;
    };
    // The old directory: its files come back; the new one stays.
    const c1 = client(srv, 'h-undo-rename-1');
    await setup(c1);
    const r1 = await c1.op('restore', { path: '/memories/a', before: 4 });
    assert.deepEqual([r1.status, r1.json], [200, { path: '/memories/a', before: 4, restored: 2, removed: 0, unchanged: 0, seq: 5, versions_recorded: 2 }]);
    assert.equal(await c1.text('/memories/a/x.txt'), 'X');
    assert.equal(await c1.text('/memories/a/y/z.txt'), 'ZZ');
    assert.equal(await c1.text('/memories/b/x.txt'), 'X');
    assert.equal(await c1.text('/memories/b/y/z.txt'), 'ZZ');

    // /memories before the rename (given as its last version): undone entirely.
    const c2 = client(srv, 'h-undo-rename-2');
    const snapshot = await setup(c2);
    const r2 = await c2.op('restore', { path: '/memories', before: 7 });
    assert.deepEqual([r2.status, r2.json], [200, { path: '/memories', before: 7, restored: 2, removed: 2, unchanged: 0, seq: 5, versions_recorded: 4 }]);
    assert.equal(await c2.text('/memories/a/x.txt'), 'X');
    await c2.missing('/memories/b/x.txt');
    await c2.missing('/memories/b/y/z.txt');
    assert.deepEqual(await c2.tree(), snapshot, 'the tree after restoring /memories to before the rename is the tree before it');
  });

  test('directory restore: a file that took the place of a directory is removed before the files below it come back', async () => {
    const c = client(srv, 'h-file-for-dir');
    await c.create('/memories/w/a.txt', 'A');
    await c.create('/memories/w/b/c.txt', 'C');
    const snapshot = await c.tree();
    await c.write({ command: 'delete', path: '/memories/w/b' }); // v3: C
    await c.create('/memories/w/b', 'now a file'); // v4
    const r = await c.op('restore', { path: '/memories/w', before: 3 });
    assert.deepEqual([r.status, r.json], [200, { path: '/memories/w', before: 3, restored: 1, removed: 1, unchanged: 0, seq: 5, versions_recorded: 2 }]);
    assert.deepEqual(await c.tree(), snapshot);
  });

  test('versions and seqs stay consecutive per tenant when commands of several tenants, some refused, share write batches', async (t) => {
    const TENANTS = 4;
    const PER_TENANT = 4;
    const ROUNDS = 8; // 16 versions per file: under the default --history-versions 20
    const ok = Array(TENANTS).fill(0);
    await Promise.all(Array.from({ length: TENANTS * PER_TENANT }, async (_, k) => {
      const tn = k % TENANTS;
      const c = client(srv, `h-batch-${tn}`);
      const mine = `/memories/c${k}.txt`;
      const expect = async (r, status) => {
        const res = await r;
        assert.equal(res.status, status, res.text);
        if (status === 200) ok[tn]++;
      };
      for (let i = 0; i < ROUNDS; i++) {
        await expect(c.post(i === 0 ? { command: 'create', path: mine, file_text: 'x' } : { command: 'insert', path: mine, insert_line: 0, insert_text: `l${i}` }), 200);
        await expect(c.post({ command: 'create', path: mine, file_text: 'again' }), 409);
        await expect(c.post({ command: 'str_replace', path: mine, old_str: 'absent', new_str: 'y' }), 409);
        await expect(c.post({ command: 'insert', path: mine, insert_line: 10000, insert_text: 'y' }), 422);
        await expect(c.op('restore', { path: mine, version: 1000000 }), 404);
        await expect(c.post({ command: 'str_replace', path: mine, old_str: i === 0 ? 'x' : `l${i}`, new_str: `m${i}` }), 200);
        await expect(c.post({ command: 'delete', path: `${mine}.none` }), 404);
      }
    }));
    for (let tn = 0; tn < TENANTS; tn++) {
      const c = client(srv, `h-batch-${tn}`);
      const feed = await c.changes();
      assert.equal(feed.changes.length, ok[tn]);
      assert.equal(feed.last_seq, ok[tn]);
      let next = 1;
      feed.changes.forEach((ch, i) => {
        assert.equal(ch.seq, i + 1, `tenant ${tn}`);
        assert.deepEqual([ch.version, ch.versions], [next, 1], `tenant ${tn} seq ${ch.seq}`);
        next += 1;
      });
      // Every version number given out exists, each of the file its change names.
      for (const ch of feed.changes) assert.equal((await c.version(ch.version)).path, ch.paths[0]);
      const over = await c.get(`/v1/versions/${next}`);
      assert.equal(over.status, 404);
    }
    t.diagnostic(`successful writes per tenant: ${ok.join(', ')}`);
  });

  test('restore refusals: exact status and body, nothing changed', async () => {
    const c = client(srv, 'h-restore-errors');
    await c.create('/memories/f.txt', 'F1'); // v1 (did not exist)
    await c.write({ command: 'str_replace', path: '/memories/f.txt', old_str: 'F1', new_str: 'F2' }); // v2: F1
    await c.create('/memories/g.txt', 'secret'); // v3
    await c.write({ command: 'str_replace', path: '/memories/g.txt', old_str: 'secret', new_str: 'public' }); // v4: secret
    const red = await c.op('redact', { path: '/memories/g.txt', version: 4 });
    assert.equal(red.status, 200, red.text);
    await c.create('/memories/p', 'was a file'); // v5
    await c.write({ command: 'str_replace', path: '/memories/p', old_str: 'was', new_str: 'is' }); // v6: was a file
    await c.write({ command: 'delete', path: '/memories/p' }); // v7
    await c.create('/memories/p/child.txt', 'now a directory'); // v8
    await c.create('/memories/w/b/c.txt', 'C'); // v9
    await c.write({ command: 'delete', path: '/memories/w' }); // v10: C
    await c.create('/memories/w', 'a file where the directory was'); // v11
    const cases = [
      ['{"path": "/memories/f.txt", "version": ', 400, 'Invalid JSON in request body: unexpected token near end of file (line 1, column 39)'],
      ['', 400, 'Invalid JSON in request body: unexpected token near end of file (line 1, column 0)'],
      ['[1]', 400, 'The request body must be a JSON object'],
      [{ path: '/memories/f.txt', version: 2, before: 2 }, 400, 'Give either `version` (a positive integer: put that version of the file back) or `before` (a positive integer: put every file at or below the path back as it stood just before that version), not both'],
      [{ path: '/memories/f.txt' }, 400, 'Give either `version` (a positive integer: put that version of the file back) or `before` (a positive integer: put every file at or below the path back as it stood just before that version), not both'],
      [{ path: '/memories/f.txt', version: 0 }, 400, 'Give either `version` (a positive integer: put that version of the file back) or `before` (a positive integer: put every file at or below the path back as it stood just before that version), not both'],
      [{ path: '/memories/f.txt', version: -2 }, 400, 'Give either `version` (a positive integer: put that version of the file back) or `before` (a positive integer: put every file at or below the path back as it stood just before that version), not both'],
      [{ path: '/memories/f.txt', before: 0 }, 400, 'Give either `version` (a positive integer: put that version of the file back) or `before` (a positive integer: put every file at or below the path back as it stood just before that version), not both'],
      [{ path: '/memories/f.txt', version: '2' }, 400, 'Parameter `version` must be an integer'],
      [{ path: '/memories/f.txt', version: 1.5 }, 400, 'Parameter `version` must be an integer'],
      [{ version: 2 }, 400, 'Missing required parameter `path` for command `restore`'],
      [{ path: '/etc/f.txt', version: 2 }, 400, 'Path must start with /memories, got: /etc/f.txt'],
      [{ path: '/memories/f.txt', version: 99 }, 404, 'Version 99 is not kept (there is no such version of this tenant, or retention has pruned it)'],
      [{ path: '/memories', before: 99 }, 404, 'Version 99 is not kept (there is no such version of this tenant, or retention has pruned it)'],
      [{ path: '/memories/f.txt', version: 4 }, 409, 'Version 4 is of /memories/g.txt, not of /memories/f.txt'],
      [{ path: '/memories/g.txt', version: 4 }, 409, 'Version 4 of /memories/g.txt was redacted: its content is gone'],
      [{ path: '/memories', before: 4 }, 409, 'Version 4 of /memories/g.txt was redacted: its content is gone'],
      [{ path: '/memories/f.txt', version: 1 }, 409, 'Version 1 records that /memories/f.txt did not exist before the write that created it: there is no content to restore (delete the file to go back to that state)'],
      [{ path: '/memories/p', version: 6 }, 409, 'Cannot restore /memories/p: it is a directory now'],
      [{ path: '/memories', version: 2 }, 409, 'Cannot restore /memories: it is a directory now'],
      [{ path: '/memories/w/b/c.txt', version: 10 }, 409, 'Cannot restore /memories/w/b/c.txt: /memories/w is a file, not a directory'],
      [{ path: '/memories/w/b', before: 10 }, 409, 'Cannot restore /memories/w/b/c.txt: /memories/w is a file, not a directory'],
    ];
    const before = [await c.tree(), await c.changes()];
    for (const [body, status, error] of cases) {
      const r = await c.op('restore', body);
      assert.deepEqual([r.status, r.json], [status, { error }], typeof body === 'string' ? body : JSON.stringify(body));
      assert.equal(r.headers.get('content-type'), 'application/json');
    }
    assert.deepEqual([await c.tree(), await c.changes()], before, 'a refused restore changed something');
    // The same restore of f with a valid version works: the tenant was not left broken.
    const ok = await c.op('restore', { path: '/memories/f.txt', version: 2 });
    assert.deepEqual([ok.status, ok.json], [200, { path: '/memories/f.txt', version: 2, restored: 1, removed: 0, unchanged: 0, seq: 13, versions_recorded: 1 }]);
  });

  test('retention by age: versions older than --history-days (30) are pruned while memoryd runs', async (t) => {
    const c = client(srv, 'h-aged');
    const p = '/memories/aged.txt';
    await c.create(p, 'v0');
    for (let i = 1; i <= 5; i++) await c.write({ command: 'str_replace', path: p, old_str: `v${i - 1}`, new_str: `v${i}` });
    const kept = await c.history(p);
    assert.deepEqual(kept.versions.map((v) => v.version), [6, 5, 4, 3, 2, 1]);
    // Versions 1-3 of this tenant made 31 days old; 4-6 stay as they are.
    dbSql(srv.dbPath, `UPDATE versions SET time = time - ${31 * DAY_MS} WHERE tenant = (SELECT id FROM tenants WHERE name = 'h-aged') AND version <= 3;`);
    // Another tenant's version rewritten 29 days old: within retention, kept.
    const o = client(srv, 'h-aged-other');
    await o.create('/memories/o.txt', 'o');
    dbSql(srv.dbPath, `UPDATE versions SET time = time - ${29 * DAY_MS} WHERE tenant = (SELECT id FROM tenants WHERE name = 'h-aged-other');`);
    const t0 = Date.now();
    await until('pruning of the 31-day-old versions', async () => {
      const h = await c.history(p);
      const seen = h.versions.map((v) => v.version);
      return { done: seen.length === 3, seen };
    });
    t.diagnostic(`pruned by age after ${Date.now() - t0} ms`);
    const h = await c.history(p);
    assert.deepEqual(h.versions.map((v) => [v.version, v.sha256]), [[6, sha256('v4')], [5, sha256('v3')], [4, sha256('v2')]]);
    for (const n of [1, 2, 3]) assert.equal((await c.get(`/v1/versions/${n}`)).status, 404);
    assert.equal((await c.version(4)).content, 'v2');
    assert.equal((await o.history('/memories/o.txt')).versions.length, 1);
    // The change feed keeps its entries (their times were not rewritten).
    assert.deepEqual((await c.changes()).changes.map((x) => x.seq), [1, 2, 3, 4, 5, 6]);
  });
});

describe('pagination (--history-versions 100: no version pruned)', () => {
  let srv;
  before(async () => { srv = await startServer({ args: ['--history-versions', '100'] }); });
  after(async () => {
    await srv.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  });

  test('history pagination: limit, cursor, next_cursor null at the end; the default limit is 50', async () => {
    const c = client(srv, 'h-page');
    const p = '/memories/log.txt';
    await c.create(p, 'line 0');
    for (let i = 1; i < 55; i++) await c.write({ command: 'insert', path: p, insert_line: i, insert_text: `line ${i}` });
    const nums = (h) => h.versions.map((v) => v.version);
    const range = (hi, lo) => Array.from({ length: hi - lo + 1 }, (_, i) => hi - i);

    const first = await c.history(p);
    assert.deepEqual([nums(first), first.next_cursor], [range(55, 6), '6']);
    const rest = await c.history(p, `&cursor=${first.next_cursor}`);
    assert.deepEqual([nums(rest), rest.next_cursor], [range(5, 1), null]);

    // Pages of 7: 55..49, 48..42, ..., 6..1 (the last page is short), then nothing.
    let cursor = null;
    const seen = [];
    for (let page = 0; page < 8; page++) {
      const h = await c.history(p, `&limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(h.versions.length, page < 7 ? 7 : 6, `page ${page}`);
      seen.push(...nums(h));
      cursor = h.next_cursor;
      if (page < 7) assert.equal(cursor, String(h.versions.at(-1).version));
    }
    assert.equal(cursor, null);
    assert.deepEqual(seen, range(55, 1));
    // A page that ends exactly at the oldest version: next_cursor null, not a cursor to an empty page.
    const exact = await c.history(p, '&limit=5&cursor=6');
    assert.deepEqual([nums(exact), exact.next_cursor], [range(5, 1), null]);
    const all = await c.history(p, '&limit=1000');
    assert.deepEqual([nums(all), all.next_cursor], [range(55, 1), null]);
    // A cursor below every version: an empty page (the path has history: not 404).
    assert.deepEqual(await c.history(p, '&cursor=1'), { path: p, versions: [], next_cursor: null });
    // Each entry is the file just before that insert: i lines.
    const v10 = await c.version(10);
    assert.equal(v10.content, Array.from({ length: 9 }, (_, i) => `line ${i}`).join('\n'));
    assert.equal(v10.sha256, sha256(v10.content));
  });
});

describe('retention by count (--history-versions 3)', () => {
  let srv;
  before(async () => { srv = await startServer({ args: ['--history-versions', '3'] }); });
  after(async () => {
    await srv.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  });

  test('10 edits of a file: eventually exactly the 3 newest versions kept; a restore reaching before them refused', async (t) => {
    const c = client(srv, 'keep3');
    const p = '/memories/f.txt';
    await c.create('/memories/g.txt', 'g'); // v1
    await c.create(p, 'n=0'); // v2
    for (let i = 1; i <= 10; i++) await c.write({ command: 'str_replace', path: p, old_str: `n=${i - 1}`, new_str: `n=${i}` }); // v3..v12
    const t0 = Date.now();
    await until('pruning to 3 versions', async () => {
      const seen = (await c.history(p)).versions.map((v) => v.version);
      return { done: seen.length <= 3, seen };
    });
    t.diagnostic(`pruned by count after ${Date.now() - t0} ms`);
    const h = await c.history(p);
    assert.deepEqual(h.versions.map((v) => [v.version, v.size, v.sha256]), [[12, 3, sha256('n=9')], [11, 3, sha256('n=8')], [10, 3, sha256('n=7')]]);
    assert.equal(h.next_cursor, null);
    for (let n = 2; n <= 9; n++) {
      const r = await c.get(`/v1/versions/${n}`);
      assert.deepEqual([r.status, r.json], [404, { error: `Version ${n} is not kept (there is no such version of this tenant, or retention has pruned it)` }]);
    }
    // Another file's only version is kept; the pruned versions stay pruned, nothing more goes.
    assert.equal((await c.history('/memories/g.txt')).versions.length, 1);
    await sleep(1300);
    assert.deepEqual((await c.history(p)).versions.map((v) => v.version), [12, 11, 10]);
    assert.equal((await c.history('/memories/g.txt')).versions.length, 1);
    // The change feed is not pruned by count.
    assert.equal((await c.changes()).changes.length, 12);
    // /memories as it stood before version 1: f's history before version 10 is gone.
    const r = await c.op('restore', { path: '/memories', before: 1 });
    assert.deepEqual([r.status, r.json], [409, { error: 'The history of /memories/f.txt before version 1 was pruned (retention keeps the newest versions of each file): restore its files one version at a time' }]);
    assert.equal(await c.text(p), 'n=10');
    // A kept version restores.
    const ok = await c.op('restore', { path: p, version: 10 });
    assert.deepEqual([ok.status, ok.json], [200, { path: p, version: 10, restored: 1, removed: 0, unchanged: 0, seq: 13, versions_recorded: 1 }]);
    assert.equal(await c.text(p), 'n=7');
    await until('pruning to 3 versions after the restore', async () => {
      const seen = (await c.history(p)).versions.map((v) => v.version);
      return { done: seen.length === 3 && seen[0] === 13, seen };
    });
    assert.deepEqual((await c.history(p)).versions.map((v) => v.version), [13, 12, 11]);
  });

  // One retention run takes a bounded number of the written paths; a burst of writes queues
  // more than that. An idle writer works through them at once (run after run), not one run a
  // second: the file edited last, behind 1,500 new files, is pruned as soon as memoryd is idle.
  test('a burst of 1,500 new files, then 10 edits of one: pruned as soon as memoryd is idle', async (t) => {
    const c = client(srv, 'keep3-burst');
    const files = Array.from({ length: 1500 }, (_, i) => `/memories/burst/${i}.txt`);
    for (let i = 0; i < files.length; i += 16) await Promise.all(files.slice(i, i + 16).map((f) => c.create(f, 'x')));
    const p = '/memories/last.txt';
    await c.create(p, 'n=0');
    for (let i = 1; i <= 10; i++) await c.write({ command: 'str_replace', path: p, old_str: `n=${i - 1}`, new_str: `n=${i}` });
    const t0 = Date.now();
    await until('pruning of the last file to 3 versions', async () => {
      const seen = (await c.history(p)).versions.map((v) => v.version);
      return { done: seen.length <= 3, seen };
    });
    t.diagnostic(`pruned by count after ${Date.now() - t0} ms`);
    assert.deepEqual((await c.history(p)).versions.map((v) => v.version), [1511, 1510, 1509]);
    assert.equal((await c.history(files[0])).versions.length, 1); // each new file's one version is kept
  });

  test('a directory delete is pruned per file too', async () => {
    const c = client(srv, 'keep3-dir');
    for (const f of ['a', 'b']) {
      await c.create(`/memories/d/${f}.txt`, `${f}0`);
      for (let i = 1; i <= 4; i++) await c.write({ command: 'str_replace', path: `/memories/d/${f}.txt`, old_str: `${f}${i - 1}`, new_str: `${f}${i}` });
    }
    await c.write({ command: 'delete', path: '/memories/d' });
    for (const f of ['a', 'b']) {
      await until(`pruning of ${f}.txt`, async () => {
        const seen = (await c.history(`/memories/d/${f}.txt`)).versions.map((v) => v.command);
        return { done: seen.length === 3, seen };
      });
      const h = await c.history(`/memories/d/${f}.txt`);
      assert.deepEqual(h.versions.map((v) => [v.command, v.sha256]), [['delete', sha256(`${f}4`)], ['str_replace', sha256(`${f}3`)], ['str_replace', sha256(`${f}2`)]]);
    }
  });
});

for (const args of [['--history-versions', '0'], ['--history-days', '0']]) {
  describe(`history off (${args.join(' ')})`, () => {
    let srv;
    before(async () => { srv = await startServer({ args }); });
    after(async () => {
      await srv.stop();
      fs.rmSync(srv.dir, { recursive: true, force: true });
    });

    test('no version recorded; an existing path has an empty history; the change feed is still kept', async () => {
      const c = client(srv, 'off');
      const p = '/memories/f.txt';
      await c.create(p, 'one');
      await c.write({ command: 'str_replace', path: p, old_str: 'one', new_str: 'two' }, { 'x-memory-actor': 'me' });
      await c.create('/memories/d/x.txt', 'x');
      await c.write({ command: 'delete', path: '/memories/d' });
      assert.deepEqual(await c.history(p), { path: p, versions: [], next_cursor: null });
      const r = await c.get('/v1/history?path=/memories/d/x.txt');
      assert.deepEqual([r.status, r.json], [404, { error: 'The path /memories/d/x.txt has no history and does not exist' }]);
      const v = await c.get('/v1/versions/1');
      assert.deepEqual([v.status, v.json], [404, { error: 'Version 1 is not kept (there is no such version of this tenant, or retention has pruned it)' }]);
      const feed = await c.changes();
      assert.deepEqual(feed.changes.map(({ time, ...rest }) => rest), [
        { seq: 1, version: null, versions: 0, history_bytes: 0, command: 'create', paths: [p], actor: null },
        { seq: 2, version: null, versions: 0, history_bytes: 0, command: 'str_replace', paths: [p], actor: 'me' },
        { seq: 3, version: null, versions: 0, history_bytes: 0, command: 'create', paths: ['/memories/d/x.txt'], actor: null },
        { seq: 4, version: null, versions: 0, history_bytes: 0, command: 'delete', paths: ['/memories/d'], actor: null },
      ]);
      const rs = await c.op('restore', { path: p, version: 1 });
      assert.deepEqual([rs.status, rs.json], [404, { error: 'Version 1 is not kept (there is no such version of this tenant, or retention has pruned it)' }]);
      const rb = await c.op('restore', { path: '/memories', before: 1 });
      assert.deepEqual([rb.status, rb.json], [404, { error: 'Version 1 is not kept (there is no such version of this tenant, or retention has pruned it)' }]);
      assert.equal(await c.text(p), 'two');
      // Nothing in the versions table at all.
      assert.equal(dbSql(srv.dbPath, 'SELECT count(*) FROM versions;'), '0\n');
    });
  });
}
