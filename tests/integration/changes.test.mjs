// Proves the change feed (GET /v1/changes) over real HTTP on loopback against a temp SQLite
// database, and as pg/integration/changes against a fresh PostgreSQL database
// (tests/integration/changes.test.mjs):
//   - its entries exact: seq, version (the first recorded, null when none), versions,
//     history_bytes, time (inside the request's clock window), command, paths (canonical;
//     rename: old, new), actor; last_seq and next_after; limit and paging with after=next_after;
//     refused writes and views add nothing;
//   - long-polling: a waiting request wakes on a write of its tenant (well under its wait) and
//     returns it; with nothing written it returns an empty list after `wait` seconds; another
//     tenant's writes neither wake it nor appear;
//   - a reader following the feed (after=next_after, wait) while 8 writers on their own
//     connections make hundreds of writes sees every acknowledged write exactly once, in commit
//     order (seq strictly consecutive, each writer's writes in the order it made them, versions
//     consecutive), ending at the writers' total;
//   - seq survives a restart; 410 with the exact text once entries after `after` were pruned
//     (their time rewritten to 31 days ago in the database while memoryd runs);
//   - parameter errors: 400 with the exact text.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { dbSql } from '../lib/db.mjs';
import { startServer } from '../lib/server.mjs';
import { volume } from '../lib/util.mjs';

const TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Time bounds are stretched where memoryd runs slowly: under an MD_TEST_WRAPPER (valgrind) or a
// sanitizer build.
const SLOW = process.env.MD_TEST_WRAPPER ? 20 : process.env.MD_SANITIZE === '1' ? 3 : 1;

function request(port, method, urlPath, { body, headers = {}, agent } = {}) {
  return new Promise((resolve, reject) => {
    const h = { ...headers };
    if (body !== undefined) {
      h['content-type'] = 'application/json';
      h['content-length'] = Buffer.byteLength(body);
    }
    const req = http.request({ host: '127.0.0.1', port, method, path: urlPath, headers: h, agent: agent ?? false }, (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let json = null;
        try { json = JSON.parse(text); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    req.setTimeout(120000, () => req.destroy(new Error('request timed out')));
    req.end(body);
  });
}

function client(srv, tenant, agent) {
  const c = {
    post: (cmd, headers = {}) => request(srv.port, 'POST', '/memory', { body: JSON.stringify(cmd), headers: { 'x-tenant-id': tenant, ...headers }, agent }),
    op: (route, body) => request(srv.port, 'POST', `/v1/${route}`, { body: JSON.stringify(body), headers: { 'x-tenant-id': tenant }, agent }),
    get: (p) => request(srv.port, 'GET', p, { headers: { 'x-tenant-id': tenant }, agent }),
    async write(cmd, headers = {}) {
      const t0 = Date.now();
      const r = await c.post(cmd, headers);
      const t1 = Date.now();
      assert.equal(r.status, 200, `${JSON.stringify(cmd)}: ${r.text}`);
      return { t0, t1 };
    },
    async changes(query) {
      const r = await c.get(`/v1/changes?${query}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers['content-type'], 'application/json');
      return r.json;
    },
  };
  return c;
}

function inWindow(time, { t0, t1 }, what) {
  assert.match(time, TIME_RE, what);
  const ms = Date.parse(time);
  assert.ok(ms >= t0 && ms <= t1, `${what}: ${time} outside [${new Date(t0).toISOString()}, ${new Date(t1).toISOString()}]`);
}

const HOUR_MS = 3600000;
const DAY_MS = 24 * HOUR_MS;

describe('change feed', () => {
  let srv;
  before(async () => { srv = await startServer(); });
  after(async () => {
    await srv.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  });

  test('entries exact: every write command, restore and redact; refused writes and views add nothing; paging', async () => {
    const c = client(srv, 'c-exact');
    assert.deepEqual(await c.changes('after=0'), { changes: [], last_seq: 0, next_after: 0 });
    const w = [];
    w.push(await c.write({ command: 'create', path: '/memories//a.txt', file_text: 'hello\n' }, { 'x-memory-actor': 'writer-1' }));
    w.push(await c.write({ command: 'str_replace', path: '/memories/a.txt', old_str: 'hello', new_str: 'hi' }));
    w.push(await c.write({ command: 'insert', path: '/memories/a.txt', insert_line: 0, insert_text: 'top' }));
    w.push(await c.write({ command: 'create', path: '/memories/d/x.txt', file_text: 'xx' }));
    w.push(await c.write({ command: 'create', path: '/memories/d/y.txt', file_text: 'yyy' }));
    w.push(await c.write({ command: 'rename', old_path: '/memories/d/', new_path: '/memories/e' }));
    w.push(await c.write({ command: 'delete', path: '/memories/e' }, { 'x-memory-actor': 'cleaner' }));
    // Refused writes and views: nothing in the feed.
    assert.equal((await c.post({ command: 'create', path: '/memories/a.txt', file_text: 'again' })).status, 409);
    assert.equal((await c.post({ command: 'delete', path: '/memories/none' })).status, 404);
    assert.equal((await c.post({ command: 'view', path: '/memories' })).status, 200);
    assert.equal((await c.op('restore', { path: '/memories/a.txt', version: 1 })).status, 409);
    let t0 = Date.now();
    const rs = await c.op('restore', { path: '/memories/a.txt', version: 2 });
    w.push({ t0, t1: Date.now() });
    assert.equal(rs.status, 200, rs.text);
    t0 = Date.now();
    const rd = await c.op('redact', { path: '/memories/a.txt', version: 2 });
    w.push({ t0, t1: Date.now() });
    assert.equal(rd.status, 200, rd.text);

    const feed = await c.changes('after=0');
    const e = (seq, version, versions, bytes, command, paths, actor = null) => ({ seq, version, versions, history_bytes: bytes, time: feed.changes[seq - 1]?.time, command, paths, actor });
    const expected = [
      e(1, 1, 1, 0, 'create', ['/memories/a.txt'], 'writer-1'),
      e(2, 2, 1, 6, 'str_replace', ['/memories/a.txt']),
      e(3, 3, 1, 3, 'insert', ['/memories/a.txt']),
      e(4, 4, 1, 0, 'create', ['/memories/d/x.txt']),
      e(5, 5, 1, 0, 'create', ['/memories/d/y.txt']),
      e(6, 6, 4, 5, 'rename', ['/memories/d', '/memories/e']),
      e(7, 10, 2, 5, 'delete', ['/memories/e'], 'cleaner'),
      e(8, 12, 1, 7, 'restore', ['/memories/a.txt']),
      e(9, null, 0, 0, 'redact', ['/memories/a.txt']),
    ];
    assert.deepEqual(feed, { changes: expected, last_seq: 9, next_after: 9 });
    for (const [i, ch] of feed.changes.entries()) inWindow(ch.time, w[i], `change ${ch.seq}`);

    // Paging: limit, after=next_after, each page in order; after the end: empty, next_after kept.
    const pages = [];
    for (let after = 0; ;) {
      const page = await c.changes(`after=${after}&limit=4`);
      assert.equal(page.last_seq, 9);
      if (page.changes.length === 0) {
        assert.equal(page.next_after, after);
        break;
      }
      assert.equal(page.next_after, page.changes.at(-1).seq);
      pages.push(page.changes.map((x) => x.seq));
      after = page.next_after;
    }
    assert.deepEqual(pages, [[1, 2, 3, 4], [5, 6, 7, 8], [9]]);
    assert.deepEqual(await c.changes('after=5&limit=2'), { changes: feed.changes.slice(5, 7), last_seq: 9, next_after: 7 });
    // An `after` beyond the end (wait=0): empty, nothing refused.
    assert.deepEqual(await c.changes('after=100'), { changes: [], last_seq: 9, next_after: 100 });
  });

  test('parameter errors: 400 with the exact text', async () => {
    const c = client(srv, 'c-params');
    const cases = [
      ['after=-1', 'Parameter `after` must be an integer from 0 to 9223372036854775807'],
      ['after=abc', 'Parameter `after` must be an integer from 0 to 9223372036854775807'],
      ['after=', 'Parameter `after` must be an integer from 0 to 9223372036854775807'],
      ['after=1.5', 'Parameter `after` must be an integer from 0 to 9223372036854775807'],
      ['after=99999999999999999999', 'Parameter `after` must be an integer from 0 to 9223372036854775807'],
      ['after=0&limit=0', 'Parameter `limit` must be an integer from 1 to 1000'],
      ['after=0&limit=1001', 'Parameter `limit` must be an integer from 1 to 1000'],
      ['after=0&wait=61', 'Parameter `wait` must be an integer from 0 to 60'],
      ['after=0&wait=-1', 'Parameter `wait` must be an integer from 0 to 60'],
      ['after=0&wait=1s', 'Parameter `wait` must be an integer from 0 to 60'],
    ];
    for (const [q, error] of cases) {
      const r = await c.get(`/v1/changes?${q}`);
      assert.deepEqual([r.status, r.json], [400, { error }], q);
    }
    // Without `after`: from the start.
    assert.deepEqual(await c.changes(''), { changes: [], last_seq: 0, next_after: 0 });
    const r = await request(srv.port, 'POST', '/v1/changes', { body: '{}' });
    assert.deepEqual([r.status, r.headers.allow], [405, 'GET']);
  });

  test('long-poll: wakes on a write of its tenant well under the wait; times out empty after `wait`; other tenants never appear', async () => {
    const c = client(srv, 'c-poll');
    const other = client(srv, 'c-poll-other');
    await c.write({ command: 'create', path: '/memories/first.txt', file_text: '1' });
    // A write 300 ms into a 20 s wait.
    let t0 = Date.now();
    const poll = c.changes('after=1&wait=20');
    await sleep(300);
    // Another tenant's write does not end the wait.
    await other.write({ command: 'create', path: '/memories/other.txt', file_text: 'o' });
    await sleep(200);
    const w = await c.write({ command: 'create', path: '/memories/second.txt', file_text: '2' });
    const woke = await poll;
    const latency = Date.now() - w.t1;
    assert.deepEqual(woke.changes.map((x) => [x.seq, x.command, x.paths]), [[2, 'create', ['/memories/second.txt']]]);
    assert.deepEqual([woke.last_seq, woke.next_after], [2, 2]);
    assert.ok(Date.now() - t0 >= 500, 'the poll returned before the write');
    assert.ok(latency < 1000 * SLOW, `the poll answered ${latency} ms after the write was acknowledged`);

    // Nothing written: empty after the wait (1 s, and not much more).
    t0 = Date.now();
    const empty = await c.changes('after=2&wait=1');
    const took = Date.now() - t0;
    assert.deepEqual(empty, { changes: [], last_seq: 2, next_after: 2 });
    assert.ok(took >= 950 && took < 3000 * SLOW, `wait=1 took ${took} ms`);
    // wait=0: at once.
    t0 = Date.now();
    assert.deepEqual(await c.changes('after=2&wait=0'), { changes: [], last_seq: 2, next_after: 2 });
    assert.ok(Date.now() - t0 < 500 * SLOW);

    // Another tenant's writes all through a wait: neither returned nor waking it early.
    t0 = Date.now();
    const poll2 = c.changes('after=2&wait=2');
    for (let i = 0; i < 10; i++) {
      await other.write({ command: 'create', path: `/memories/o${i}.txt`, file_text: 'o' });
      await sleep(100);
    }
    const r2 = await poll2;
    const took2 = Date.now() - t0;
    assert.deepEqual(r2, { changes: [], last_seq: 2, next_after: 2 });
    assert.ok(took2 >= 1950, `the wait ended after ${took2} ms, before its 2 s, on another tenant's writes`);
    // And the other tenant's feed holds only its own writes.
    const of = await other.changes('after=0');
    assert.equal(of.changes.length, 11);
    assert.ok(of.changes.every((x) => x.paths[0].startsWith('/memories/o')));

    // Several waiters of one tenant are all woken by one write.
    const polls = Array.from({ length: 5 }, () => c.changes('after=2&wait=20'));
    await sleep(200);
    t0 = Date.now();
    await c.write({ command: 'delete', path: '/memories/first.txt' });
    const all = await Promise.all(polls);
    assert.ok(Date.now() - t0 < 1000 * SLOW);
    for (const r of all) assert.deepEqual(r.changes.map((x) => [x.seq, x.command]), [[3, 'delete']]);

    // A tenant that has never written: its poll waits, and its first write wakes it.
    const fresh = client(srv, 'c-poll-fresh');
    const poll3 = fresh.changes('after=0&wait=20');
    await sleep(300);
    t0 = Date.now();
    await fresh.write({ command: 'create', path: '/memories/hello.txt', file_text: 'hi' });
    const r3 = await poll3;
    assert.ok(Date.now() - t0 < 1000 * SLOW, `the first write of a new tenant woke its poll after ${Date.now() - t0} ms`);
    assert.deepEqual([r3.changes.map((x) => [x.seq, x.version, x.paths]), r3.last_seq, r3.next_after], [[[1, 1, ['/memories/hello.txt']]], 1, 1]);
  });

  test('a reader following the feed while 8 writers write sees every acknowledged write exactly once, in commit order', async (t) => {
    const WRITERS = 8;
    const EACH = volume(60, 20); // (20 under valgrind, which looks for memory errors)
    const tenant = 'c-follow';
    const reader = client(srv, tenant, new http.Agent({ keepAlive: true, maxSockets: 1 }));
    const seen = [];
    let stop = false;
    let polls = 0;
    const following = (async () => {
      let after = 0;
      while (!stop || seen.length < WRITERS * EACH) {
        const page = await reader.changes(`after=${after}&wait=2&limit=37`);
        polls++;
        if (page.changes.length) assert.equal(page.next_after, page.changes.at(-1).seq);
        else assert.equal(page.next_after, after);
        seen.push(...page.changes);
        after = page.next_after;
        if (stop && page.changes.length === 0 && page.last_seq === after) break;
      }
    })();
    const acked = [];
    const agents = Array.from({ length: WRITERS }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
    await Promise.all(agents.map(async (agent, w) => {
      const c = client(srv, tenant, agent);
      for (let i = 0; i < EACH; i++) {
        // Creates of new files and edits of the writer's own file, alternating.
        const cmd = i % 2 === 0
          ? { command: 'create', path: `/memories/w${w}/f${i}.txt`, file_text: `w${w} i${i}` }
          : { command: i === 1 ? 'create' : 'insert', path: `/memories/w${w}/log.txt`, ...(i === 1 ? { file_text: 'log' } : { insert_line: 0, insert_text: `i${i}` }) };
        const r = await c.post(cmd);
        assert.equal(r.status, 200, r.text);
        acked.push({ w, i, path: cmd.path, command: cmd.command });
      }
    }));
    for (const a of agents) a.destroy();
    stop = true;
    await following;
    t.diagnostic(`${seen.length} changes read in ${polls} polls`);
    assert.equal(acked.length, WRITERS * EACH);
    assert.equal(seen.length, acked.length, 'the reader did not see exactly the acknowledged writes');
    // Seq strictly consecutive from 1; versions consecutive (one per write here).
    seen.forEach((ch, k) => {
      assert.equal(ch.seq, k + 1);
      assert.deepEqual([ch.version, ch.versions], [k + 1, 1]);
    });
    // Each writer's writes in the order it made them, each once.
    for (let w = 0; w < WRITERS; w++) {
      const mine = seen.filter((ch) => ch.paths[0].startsWith(`/memories/w${w}/`)).map((ch) => `${ch.command} ${ch.paths[0]}`);
      const made = acked.filter((a) => a.w === w).map((a) => `${a.command} ${a.path}`);
      assert.deepEqual(mine, made, `writer ${w}`);
    }
    // Times never go back in commit order.
    for (let k = 1; k < seen.length; k++) assert.ok(seen[k].time >= seen[k - 1].time, `time of seq ${seen[k].seq} before seq ${seen[k - 1].seq}`);
    const end = await reader.changes(`after=${seen.length}`);
    assert.deepEqual(end, { changes: [], last_seq: WRITERS * EACH, next_after: WRITERS * EACH });
  });

  test('410 once the entries after `after` were pruned (older than --history-days)', async (t) => {
    const c = client(srv, 'c-gone');
    for (let i = 1; i <= 6; i++) await c.write({ command: 'create', path: `/memories/f${i}.txt`, file_text: `${i}` });
    dbSql(srv.dbPath, `UPDATE changes SET time = time - ${31 * DAY_MS} WHERE tenant = (SELECT id FROM tenants WHERE name = 'c-gone') AND seq <= 3;`);
    const t0 = Date.now();
    for (;;) {
      const r = await c.get('/v1/changes?after=0');
      if (r.status === 410) {
        assert.deepEqual(r.json, { error: 'Changes after 0 are no longer kept (the oldest kept is 4): read the tree again, then follow the feed from after=3' });
        break;
      }
      assert.equal(r.status, 200, r.text);
      assert.ok(Date.now() - t0 < 10000 * SLOW, 'the old changes were not pruned within 10 s');
      await sleep(100);
    }
    t.diagnostic(`pruned after ${Date.now() - t0} ms`);
    const r2 = await c.get('/v1/changes?after=2&wait=5');
    assert.deepEqual([r2.status, r2.json], [410, { error: 'Changes after 2 are no longer kept (the oldest kept is 4): read the tree again, then follow the feed from after=3' }]);
    const ok = await c.changes('after=3');
    assert.deepEqual([ok.changes.map((x) => x.seq), ok.last_seq, ok.next_after], [[4, 5, 6], 6, 6]);
    // The files themselves are untouched.
    assert.equal((await c.post({ command: 'view', path: '/memories/f1.txt' })).status, 200);
    // Every entry pruned: the oldest kept is the next one to come.
    dbSql(srv.dbPath, `UPDATE changes SET time = time - ${31 * DAY_MS} WHERE tenant = (SELECT id FROM tenants WHERE name = 'c-gone');`);
    for (const t1 = Date.now(); ;) {
      const r = await c.get('/v1/changes?after=5');
      if (r.status === 410) {
        assert.deepEqual(r.json, { error: 'Changes after 5 are no longer kept (the oldest kept is 7): read the tree again, then follow the feed from after=6' });
        break;
      }
      assert.ok(Date.now() - t1 < 10000 * SLOW, 'the old changes were not pruned within 10 s');
      await sleep(100);
    }
    assert.deepEqual(await c.changes('after=6'), { changes: [], last_seq: 6, next_after: 6 });
    await c.write({ command: 'create', path: '/memories/f7.txt', file_text: '7' });
    assert.deepEqual((await c.changes('after=6')).changes.map((x) => x.seq), [7]);
  });
});

test('seq survives a restart; a poll waiting at shutdown is answered', async () => {
  let srv = await startServer();
  const db = srv.dbPath;
  try {
    let c = client(srv, 'c-restart');
    for (let i = 1; i <= 3; i++) await c.write({ command: 'create', path: `/memories/f${i}.txt`, file_text: `${i}` });
    const before = await c.changes('after=0');
    assert.equal(before.last_seq, 3);
    // A long-poll in progress when memoryd stops gets an answer (not a dropped connection).
    const waiting = c.get('/v1/changes?after=3&wait=30');
    await sleep(200);
    await srv.stop();
    const w = await waiting;
    assert.ok([200, 503].includes(w.status), `a waiting poll at shutdown got ${w.status}: ${w.text}`);
    if (w.status === 200) assert.deepEqual(w.json, { changes: [], last_seq: 3, next_after: 3 });
    srv = await startServer({ db });
    c = client(srv, 'c-restart');
    assert.deepEqual(await c.changes('after=0'), before);
    await c.write({ command: 'insert', path: '/memories/f1.txt', insert_line: 1, insert_text: 'more' });
    const after = await c.changes('after=3');
    assert.deepEqual(after.changes.map((x) => [x.seq, x.version, x.command]), [[4, 4, 'insert']]);
    assert.equal(after.last_seq, 4);
    // Versions survive too.
    const v = await c.get('/v1/versions/4');
    assert.deepEqual([v.status, v.json.content], [200, '1']);
  } finally {
    await srv.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
});

test('with --history-days 0 (history off) the change feed is kept for one day', async (t) => {
  const srv = await startServer({ args: ['--history-days', '0'] });
  try {
    const c = client(srv, 'c-day');
    for (let i = 1; i <= 4; i++) await c.write({ command: 'create', path: `/memories/f${i}.txt`, file_text: `${i}` });
    const tenant = "(SELECT id FROM tenants WHERE name = 'c-day')";
    dbSql(srv.dbPath, `UPDATE changes SET time = time - ${25 * HOUR_MS} WHERE tenant = ${tenant} AND seq <= 2;`);
    dbSql(srv.dbPath, `UPDATE changes SET time = time - ${23 * HOUR_MS} WHERE tenant = ${tenant} AND seq = 3;`);
    const t0 = Date.now();
    for (;;) {
      const r = await c.get('/v1/changes?after=0');
      if (r.status === 410) {
        assert.deepEqual(r.json, { error: 'Changes after 0 are no longer kept (the oldest kept is 3): read the tree again, then follow the feed from after=2' });
        break;
      }
      assert.equal(r.status, 200, r.text);
      assert.ok(Date.now() - t0 < 10000 * SLOW, 'the day-old changes were not pruned within 10 s');
      await sleep(100);
    }
    t.diagnostic(`pruned after ${Date.now() - t0} ms`);
    // The 23-hour-old entry stays, also a while later.
    await sleep(1200);
    const kept = await c.changes('after=2');
    assert.deepEqual(kept.changes.map((x) => [x.seq, x.version, x.versions]), [[3, null, 0], [4, null, 0]]);
  } finally {
    await srv.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
});
