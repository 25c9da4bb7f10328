// Proves idempotent retries (the Idempotency-Key header) over real HTTP on loopback against a temp
// SQLite database, and as pg/integration/idempotency against a fresh PostgreSQL database
// (tests/integration/idempotency.test.mjs):
//   - a retry with the same key and the same request gets the first answer (status and body,
//     Idempotent-Replayed: true) and is not applied again: one change-feed entry, one version,
//     the file as after one application; for every write command and for the tool_use form;
//   - the same key with another request (body, route, If-Match, If-None-Match) -> 422 with the
//     exact text, nothing written; invalid keys (empty, 256 characters, spaces, tabs, non-ASCII,
//     the header twice) -> 400 with the exact text, nothing written; keys are per tenant;
//   - refused answers (409, 404, 412, 422 of insert_line) are kept and replayed as they were
//     even after the state changed so that the command would now succeed;
//   - a key expires after 24 h (its time rewritten in the database): the request is applied
//     anew; expired keys are pruned from the database while memoryd runs;
//   - keys on POST /v1/restore and /v1/redact: replayed, 422 for another request;
//   - crash safety: 8 clients send keyed creates, inserts and str_replaces concurrently,
//     memoryd is killed with SIGKILL at a random moment (several rounds, MD_CRASH_SEED replays
//     them), restarted on the same database, and every request is retried with its key:
//     acknowledged ones are replayed with their first answer, the unanswered ones answered
//     (replayed or applied now), and each write is applied exactly once (file contents, lines,
//     counters, and one change-feed entry per key).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { dbInconsistencies, dbSql } from '../lib/db.mjs';
import { createDatabase, isPg } from '../lib/pg.mjs';
import { startServer, tempDir } from '../lib/server.mjs';
import { mulberry32 } from '../lib/util.mjs';

const REUSED = 'Error: This Idempotency-Key was already used for another request (a different body, path or precondition); a new request needs a new key.';
const BAD_KEY = 'Error: The Idempotency-Key header must be 1 to 255 visible ASCII characters';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Time bounds are stretched where memoryd runs slowly: under an MD_TEST_WRAPPER (valgrind) or a
// sanitizer build.
const SLOW = process.env.MD_TEST_WRAPPER ? 20 : process.env.MD_SANITIZE === '1' ? 3 : 1;

// One request with full control of the headers (arrays are sent once per element).
function request(port, method, urlPath, { body, headers = {}, agent } = {}, onSent) {
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
        try { json = JSON.parse(text); } catch { /* text/plain */ }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    if (onSent) req.on('finish', onSent);
    req.setTimeout(60000, () => req.destroy(new Error('request timed out')));
    req.end(body);
  });
}

function client(srv, tenant, agent) {
  const c = {
    post: (cmd, headers = {}) => request(srv.port, 'POST', '/memory', { body: typeof cmd === 'string' ? cmd : JSON.stringify(cmd), headers: { 'x-tenant-id': tenant, ...headers }, agent }),
    op: (route, body, headers = {}) => request(srv.port, 'POST', `/v1/${route}`, { body: JSON.stringify(body), headers: { 'x-tenant-id': tenant, ...headers }, agent }),
    get: (p) => request(srv.port, 'GET', p, { headers: { 'x-tenant-id': tenant }, agent }),
    async text(p) {
      const r = await c.post({ command: 'view', path: p });
      assert.equal(r.status, 200, r.text);
      return r.json.content.split('\n').slice(1).map((l) => l.replace(/^ *\d+\t/, '')).join('\n');
    },
    async absent(p) {
      const r = await c.post({ command: 'view', path: p });
      assert.equal(r.status, 404, r.text);
    },
    async changes(after = 0) {
      const all = [];
      for (;;) {
        const r = await c.get(`/v1/changes?after=${after}&limit=1000`);
        assert.equal(r.status, 200, r.text);
        all.push(...r.json.changes);
        if (r.json.next_after === r.json.last_seq || r.json.changes.length === 0) return { changes: all, last_seq: r.json.last_seq };
        after = r.json.next_after;
      }
    },
    async versions(p) {
      const r = await c.get(`/v1/history?path=${encodeURIComponent(p)}&limit=1000`);
      assert.equal(r.status, 200, r.text);
      return r.json.versions;
    },
  };
  return c;
}

const HOUR_MS = 3600000;

// The replay of `first`: the same status and body, marked as replayed.
function assertReplay(r, first, what) {
  assert.deepEqual([r.status, r.text, r.headers['idempotent-replayed']], [first.status, first.text, 'true'], what);
}

describe('idempotent retries', () => {
  let srv;
  before(async () => { srv = await startServer(); });
  after(async () => {
    await srv.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  });

  test('a retry gets the first answer and is not applied again: every write command, once in the feed and the history', async () => {
    const c = client(srv, 'i-replay');
    const p = '/memories/f.txt';
    const steps = [
      [{ command: 'create', path: p, file_text: 'one\ntwo\n' }, `File created successfully at: ${p}`],
      [{ command: 'insert', path: p, insert_line: 0, insert_text: 'zero' }, `The file ${p} has been edited.`],
      [{ command: 'str_replace', path: p, old_str: 'two', new_str: 'deux' }, 'The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tzero\n     2\tone\n     3\tdeux\n     4\t'],
      [{ command: 'rename', old_path: p, new_path: '/memories/g.txt' }, `Successfully renamed ${p} to /memories/g.txt`],
      [{ command: 'delete', path: '/memories/g.txt' }, 'Successfully deleted /memories/g.txt'],
    ];
    for (const [i, [cmd, content]] of steps.entries()) {
      const key = `step-${i}`;
      const first = await c.post(cmd, { 'idempotency-key': key });
      assert.deepEqual([first.status, first.json, first.headers['idempotent-replayed']], [200, { type: 'tool_result', content, is_error: false }, undefined], cmd.command);
      const feed = await c.changes();
      for (let k = 0; k < 3; k++) assertReplay(await c.post(cmd, { 'idempotency-key': key }), first, `${cmd.command} retry ${k}`);
      // Replays are read from the same place with Accept: text/plain too: the same result text.
      const plain = await c.post(cmd, { 'idempotency-key': key, accept: 'text/plain' });
      assert.deepEqual([plain.status, plain.text, plain.headers['idempotent-replayed']], [200, content, 'true']);
      assert.deepEqual(await c.changes(), feed, `${cmd.command}: a replay added to the change feed`);
      assert.equal(feed.last_seq, i + 1);
    }
    // Applied once each: one version per file written, the file gone at the end.
    assert.deepEqual((await c.versions(p)).map((v) => v.command), ['rename', 'str_replace', 'insert', 'create']);
    assert.deepEqual((await c.versions('/memories/g.txt')).map((v) => v.command), ['delete', 'rename']);
    await c.absent(p);
    await c.absent('/memories/g.txt');
    // The tool_use form: the replay carries the same tool_use_id (the body is the same).
    const tu = { type: 'tool_use', id: 'toolu_07', name: 'memory', input: { command: 'create', path: '/memories/t.txt', file_text: 't' } };
    const first = await c.post(tu, { 'idempotency-key': 'tool-use' });
    assert.deepEqual([first.status, first.json], [200, { type: 'tool_result', tool_use_id: 'toolu_07', content: 'File created successfully at: /memories/t.txt', is_error: false }]);
    assertReplay(await c.post(tu, { 'idempotency-key': 'tool-use' }), first, 'tool_use');
    // A different actor is not a different request.
    assertReplay(await c.post(tu, { 'idempotency-key': 'tool-use', 'x-memory-actor': 'someone else' }), first, 'another actor');
    assert.equal((await c.changes()).last_seq, 6);
  });

  test('the same key for another request: 422 with the exact text, nothing written', async () => {
    const c = client(srv, 'i-reuse');
    const p = '/memories/f.txt';
    const cmd = { command: 'insert', path: p, insert_line: 0, insert_text: 'a' };
    await c.post({ command: 'create', path: p, file_text: 'base' });
    const first = await c.post(cmd, { 'idempotency-key': 'k' });
    assert.equal(first.status, 200, first.text);
    const expected = { type: 'tool_result', content: REUSED, is_error: true };
    const others = [
      [{ ...cmd, insert_text: 'b' }, {}],
      [JSON.stringify(cmd, null, 1), {}], // the same command, other bytes
      [cmd, { 'if-match': '*' }],
      [cmd, { 'if-none-match': '*' }],
      [{ command: 'delete', path: p }, {}],
    ];
    const state = [await c.text(p), await c.changes()];
    for (const [body, headers] of others) {
      const r = await c.post(body, { 'idempotency-key': 'k', ...headers });
      assert.deepEqual([r.status, r.json, r.headers['idempotent-replayed']], [422, expected, undefined], `${JSON.stringify(body)} ${JSON.stringify(headers)}`);
    }
    // Another route with the same key and body.
    const r = await request(srv.port, 'POST', '/v1/restore', { body: JSON.stringify(cmd), headers: { 'x-tenant-id': 'i-reuse', 'idempotency-key': 'k' } });
    assert.deepEqual([r.status, r.json], [422, { error: REUSED.slice('Error: '.length) }]);
    assert.deepEqual([await c.text(p), await c.changes()], state);
    // The first request is still replayed.
    assertReplay(await c.post(cmd, { 'idempotency-key': 'k' }), first, 'the first request after the 422s');
    assert.equal(await c.text(p), 'a\nbase');
  });

  test('invalid keys: 400 with the exact text, nothing written; 255 visible characters are fine', async () => {
    const c = client(srv, 'i-invalid');
    const cmd = { command: 'create', path: '/memories/f.txt', file_text: 'x' };
    const bad = ['', ' ', 'k'.repeat(256), 'has space', 'tab\there', Buffer.from('caf\u00e9', 'utf8').toString('latin1'), '\u00ff', ['a', 'a']];
    for (const key of bad) {
      const r = await c.post(cmd, { 'idempotency-key': key });
      const text = Array.isArray(key) ? 'Error: The Idempotency-Key header was sent more than once' : BAD_KEY;
      assert.deepEqual([r.status, r.json], [400, { type: 'tool_result', content: text, is_error: true }], JSON.stringify(key));
    }
    await c.absent('/memories/f.txt');
    assert.equal((await c.changes()).last_seq, 0);
    const bad2 = await c.op('restore', { path: '/memories/f.txt', version: 1 }, { 'idempotency-key': 'k'.repeat(256) });
    assert.deepEqual([bad2.status, bad2.json], [400, { error: BAD_KEY.slice('Error: '.length) }]);
    const long = '!~'.repeat(127) + 'k';
    const first = await c.post(cmd, { 'idempotency-key': long });
    assert.equal(first.status, 200, first.text);
    assertReplay(await c.post(cmd, { 'idempotency-key': long }), first, '255 characters');
    // Surrounding blanks are not part of the key.
    assertReplay(await c.post(cmd, { 'idempotency-key': `  ${long} ` }), first, 'with blanks around');
  });

  test('keys are per tenant', async () => {
    const a = client(srv, 'i-tenant-a');
    const b = client(srv, 'i-tenant-b');
    const cmd = { command: 'create', path: '/memories/f.txt', file_text: 'A' };
    const fa = await a.post(cmd, { 'idempotency-key': 'shared-key' });
    assert.equal(fa.status, 200);
    // The same key and body in another tenant: applied there, not a replay.
    const fb = await b.post(cmd, { 'idempotency-key': 'shared-key' });
    assert.deepEqual([fb.status, fb.headers['idempotent-replayed']], [200, undefined]);
    // Another body with the same key in a third tenant: applied, not 422.
    const c = client(srv, 'i-tenant-c');
    const fc = await c.post({ ...cmd, file_text: 'C' }, { 'idempotency-key': 'shared-key' });
    assert.deepEqual([fc.status, fc.headers['idempotent-replayed']], [200, undefined]);
    assert.deepEqual([await a.text('/memories/f.txt'), await b.text('/memories/f.txt'), await c.text('/memories/f.txt')], ['A', 'A', 'C']);
    assertReplay(await a.post(cmd, { 'idempotency-key': 'shared-key' }), fa, 'tenant a');
    assertReplay(await b.post(cmd, { 'idempotency-key': 'shared-key' }), fb, 'tenant b');
    for (const t of [a, b, c]) assert.equal((await t.changes()).last_seq, 1);
  });

  test('refused answers are kept and replayed even after the state changed', async () => {
    const c = client(srv, 'i-refused');
    await c.post({ command: 'create', path: '/memories/x.txt', file_text: 'x' });
    const cases = [
      // [request, headers, status, text, what makes it succeed afterwards]
      [{ command: 'create', path: '/memories/x.txt', file_text: 'new' }, {}, 409, 'Error: File /memories/x.txt already exists', { command: 'delete', path: '/memories/x.txt' }],
      [{ command: 'str_replace', path: '/memories/y.txt', old_str: 'old', new_str: 'new' }, {}, 404, 'Error: The path /memories/y.txt does not exist. Please provide a valid path.', { command: 'create', path: '/memories/y.txt', file_text: 'old' }],
      [{ command: 'insert', path: '/memories/y.txt', insert_line: 5, insert_text: 'l5' }, {}, 422, 'Error: Invalid `insert_line` parameter: 5. It should be within the range of lines of the file: [0, 1]', { command: 'insert', path: '/memories/y.txt', insert_line: 1, insert_text: '2\n3\n4\n5' }],
      [{ command: 'insert', path: '/memories/y.txt', insert_line: 0, insert_text: 'top' }, { 'if-match': `"sha256-${'0'.repeat(64)}"` }, 412, 'The file /memories/y.txt changed since you viewed it; view it again before editing.', null],
      [{ command: 'rename', old_path: '/memories/z', new_path: '/memories/w' }, {}, 404, 'Error: The path /memories/z does not exist', { command: 'create', path: '/memories/z/f.txt', file_text: 'z' }],
    ];
    for (const [i, [cmd, headers, status, text, fix]] of cases.entries()) {
      const key = `refused-${i}`;
      const first = await c.post(cmd, { 'idempotency-key': key, ...headers });
      assert.deepEqual([first.status, first.json], [status, { type: 'tool_result', content: text, is_error: true }], JSON.stringify(cmd));
      if (fix) assert.equal((await c.post(fix)).status, 200, JSON.stringify(fix));
      const seq = (await c.changes()).last_seq;
      assertReplay(await c.post(cmd, { 'idempotency-key': key, ...headers }), first, `replay of ${JSON.stringify(cmd)}`);
      assert.equal((await c.changes()).last_seq, seq, `replay of ${JSON.stringify(cmd)} wrote`);
      // Without the key it would apply now.
      if (i === 1) assert.equal(await c.text('/memories/y.txt'), 'old');
    }
    await c.absent('/memories/x.txt');
    await c.absent('/memories/w');
    assert.equal(await c.text('/memories/y.txt'), 'old\n2\n3\n4\n5');
  });

  test('a key expires after 24 h: the request is applied anew; expired keys are pruned', async (t) => {
    const c = client(srv, 'i-expiry');
    const p = '/memories/log.txt';
    await c.post({ command: 'create', path: p, file_text: 'log' });
    const cmd = { command: 'insert', path: p, insert_line: 1, insert_text: 'entry' };
    const first = await c.post(cmd, { 'idempotency-key': 'day-old' });
    assert.equal(first.status, 200);
    assertReplay(await c.post(cmd, { 'idempotency-key': 'day-old' }), first, 'fresh key');
    // 23 h old: still replayed.
    const tenant = "(SELECT id FROM tenants WHERE name = 'i-expiry')";
    dbSql(srv.dbPath, `UPDATE idempotency SET time = time - ${23 * HOUR_MS} WHERE tenant = ${tenant} AND key = 'day-old';`);
    assertReplay(await c.post(cmd, { 'idempotency-key': 'day-old' }), first, '23 h old key');
    assert.equal(await c.text(p), 'log\nentry');
    // 25 h old: forgotten, the same request is applied again (a second line, a second change).
    dbSql(srv.dbPath, `UPDATE idempotency SET time = time - ${2 * HOUR_MS} WHERE tenant = ${tenant} AND key = 'day-old';`);
    const again = await c.post(cmd, { 'idempotency-key': 'day-old' });
    assert.deepEqual([again.status, again.text, again.headers['idempotent-replayed']], [200, first.text, undefined]);
    assert.equal(await c.text(p), 'log\nentry\nentry');
    assert.equal((await c.changes()).last_seq, 3);
    // ... and kept under the key again from now on.
    assertReplay(await c.post(cmd, { 'idempotency-key': 'day-old' }), again, 'key stored again');
    // An expired key is removed from the database by memoryd while it runs.
    await c.post({ command: 'create', path: '/memories/other.txt', file_text: 'o' }, { 'idempotency-key': 'to-prune' });
    assert.equal(dbSql(srv.dbPath, `SELECT count(*) FROM idempotency WHERE tenant = ${tenant} AND key = 'to-prune';`), '1\n');
    dbSql(srv.dbPath, `UPDATE idempotency SET time = time - ${25 * HOUR_MS} WHERE tenant = ${tenant} AND key = 'to-prune';`);
    const t0 = Date.now();
    for (;;) {
      if (dbSql(srv.dbPath, `SELECT count(*) FROM idempotency WHERE tenant = ${tenant} AND key = 'to-prune';`) === '0\n') break;
      assert.ok(Date.now() - t0 < 10000 * SLOW, 'the expired key was not pruned within 10 s');
      await sleep(100);
    }
    t.diagnostic(`expired key pruned after ${Date.now() - t0} ms`);
    assert.equal(dbSql(srv.dbPath, `SELECT count(*) FROM idempotency WHERE tenant = ${tenant} AND key = 'day-old';`), '1\n');
  });

  test('keys on POST /v1/restore and /v1/redact: replayed, 422 for another request', async () => {
    const c = client(srv, 'i-ops');
    const p = '/memories/f.txt';
    await c.post({ command: 'create', path: p, file_text: 'A' }); // v1
    await c.post({ command: 'str_replace', path: p, old_str: 'A', new_str: 'B' }); // v2: A
    const body = { path: p, version: 2 };
    const first = await c.op('restore', body, { 'idempotency-key': 'restore-1' });
    assert.deepEqual([first.status, first.json, first.headers['idempotent-replayed']], [200, { path: p, version: 2, restored: 1, removed: 0, unchanged: 0, seq: 3, versions_recorded: 1 }, undefined]);
    await c.post({ command: 'str_replace', path: p, old_str: 'A', new_str: 'C' });
    // The replay: the first answer, not applied again (the file keeps C).
    assertReplay(await c.op('restore', body, { 'idempotency-key': 'restore-1' }), first, 'restore');
    assert.equal(await c.text(p), 'C');
    assert.equal((await c.changes()).last_seq, 4);
    assert.equal((await c.versions(p)).length, 4);
    const other = await c.op('restore', { path: p, version: 3 }, { 'idempotency-key': 'restore-1' });
    assert.deepEqual([other.status, other.json], [422, { error: REUSED.slice('Error: '.length) }]);
    const red = await c.op('redact', { path: p, version: 2 }, { 'idempotency-key': 'redact-1' });
    assert.deepEqual([red.status, red.json], [200, { path: p, version: 2, redacted: true, seq: 5, versions_recorded: 0 }]);
    assertReplay(await c.op('redact', { path: p, version: 2 }, { 'idempotency-key': 'redact-1' }), red, 'redact');
    assert.equal((await c.changes()).last_seq, 5);
    const other2 = await c.op('redact', { path: p, version: 3 }, { 'idempotency-key': 'redact-1' });
    assert.deepEqual([other2.status, other2.json], [422, { error: REUSED.slice('Error: '.length) }]);
    // A key used on /memory cannot be reused on /v1/redact.
    const m = await c.post({ command: 'insert', path: p, insert_line: 0, insert_text: 'x' }, { 'idempotency-key': 'memory-1' });
    assert.equal(m.status, 200);
    const cross = await c.op('redact', { path: p, version: 3 }, { 'idempotency-key': 'memory-1' });
    assert.deepEqual([cross.status, cross.json], [422, { error: REUSED.slice('Error: '.length) }]);
    assert.equal((await c.get('/v1/versions/3')).json.redacted, false);
  });

  test('a refused /v1/restore is kept for its key and replayed, marked as a replay, even when it would now succeed', async () => {
    const c = client(srv, 'i-ops-refused');
    // /memories/q.txt, a file (v1, v2), is a directory at the time of the first request and
    // gone at the retry.
    const q = '/memories/q.txt';
    await c.post({ command: 'create', path: q, file_text: 'q1' }); // v1
    await c.post({ command: 'str_replace', path: q, old_str: 'q1', new_str: 'q2' }); // v2: q1
    await c.post({ command: 'delete', path: q }); // v3
    await c.post({ command: 'create', path: `${q}/child.txt`, file_text: 'c' }); // v4
    const refused = await c.op('restore', { path: q, version: 2 }, { 'idempotency-key': 'restore-2' });
    assert.deepEqual([refused.status, refused.json], [409, { error: 'Cannot restore /memories/q.txt: it is a directory now' }]);
    assert.equal((await c.post({ command: 'delete', path: q })).status, 200);
    const seq = (await c.changes()).last_seq;
    const replay = await c.op('restore', { path: q, version: 2 }, { 'idempotency-key': 'restore-2' });
    assert.deepEqual([replay.status, replay.text], [refused.status, refused.text], 'the refused restore was not replayed');
    await c.absent(q);
    assert.equal((await c.changes()).last_seq, seq);
    assert.equal(replay.headers['idempotent-replayed'], 'true', 'the replay of a refused /v1/restore is not marked Idempotent-Replayed: true');

  });

  test('concurrent retries of one keyed request: applied once, every answer the same', async () => {
    const c = client(srv, 'i-concurrent');
    const p = '/memories/f.txt';
    await c.post({ command: 'create', path: p, file_text: 'base' });
    const cmd = { command: 'insert', path: p, insert_line: 1, insert_text: 'once' };
    const answers = await Promise.all(Array.from({ length: 16 }, () => c.post(cmd, { 'idempotency-key': 'burst' })));
    const fresh = answers.filter((r) => r.headers['idempotent-replayed'] === undefined);
    assert.equal(fresh.length, 1, 'exactly one of the concurrent requests was applied');
    for (const r of answers) assert.deepEqual([r.status, r.text], [200, fresh[0].text]);
    assert.equal(await c.text(p), 'base\nonce');
    assert.equal((await c.changes()).last_seq, 2);
  });
});

// ---------------------------------------------------------------------------- crash safety

const CLIENTS = 8;
const SHARED = 3;

// The expected result text of each kind of write.
const created = (p) => `File created successfully at: ${p}`;
const edited = (p) => `The file ${p} has been edited.`;
const counterSnippet = (n) => `The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tvalue=${n}`;

// Round `round`: the clients write keyed requests until memoryd is killed; every request sent
// (or being sent) is kept in `L.requests` with its key, body and expected answer, and whether
// its answer was received (with the answer).
async function driveAndKill(srv, L, round, plan, rand) {
  let acks = 0;
  let killed = false;
  let exited = null;
  const kill = () => {
    if (killed) return;
    killed = true;
    exited = srv.kill();
  };
  const agents = Array.from({ length: CLIENTS }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  await Promise.all(agents.map(async (agent, c) => {
    // Each client keeps sending until its connection fails: the requests in flight at the kill
    // may or may not have been committed.
    for (let i = 0; ; i++) {
      const key = `r${round}-c${c}-i${i}`;
      let cmd;
      let expected;
      const kind = i % 3;
      if (kind === 0) {
        const p = `/memories/r${round}/c${c}/f${i}.txt`;
        cmd = { command: 'create', path: p, file_text: `${key}\n${'payload '.repeat(Math.floor(rand() * 300))}` };
        expected = created(p);
      } else if (kind === 1) {
        const p = `/memories/shared/s${(c + i) % SHARED}.txt`;
        cmd = { command: 'insert', path: p, insert_line: 0, insert_text: `${key}\n` };
        expected = edited(p);
      } else {
        const p = `/memories/counters/c${c}.txt`;
        const n = L.counters[c];
        cmd = { command: 'str_replace', path: p, old_str: `value=${n}`, new_str: `value=${n + 1}` };
        expected = counterSnippet(n + 1);
        L.counters[c] = n + 1; // sent: applied exactly once by the end, whatever happens
      }
      const entry = { key, cmd, body: JSON.stringify(cmd), expected, answer: null };
      L.requests.push(entry);
      let r;
      try {
        r = await request(srv.port, 'POST', '/memory', { body: entry.body, headers: { 'idempotency-key': key }, agent });
      } catch {
        kill(); // the server is gone (or going): this request's outcome is unknown
        break;
      }
      assert.deepEqual([r.status, r.json?.content, r.headers['idempotent-replayed']], [200, expected, undefined], key);
      entry.answer = r;
      if (++acks >= plan.killAfter) {
        if (plan.delayMs === 0) kill();
        else setTimeout(kill, plan.delayMs);
      }
    }
  }));
  for (const a of agents) a.destroy();
  const e = await exited;
  assert.equal(e.signal, 'SIGKILL', `memoryd ended by itself: ${JSON.stringify(e)}`);
  return acks;
}

// Retry every request with its key (in the order they were sent, several at once), then check
// that each was applied exactly once.
async function retryAndVerify(srv, L) {
  const c = client(srv, 'default');
  let replayed = 0;
  let unansweredReplayed = 0;
  let appliedNow = 0;
  const queue = [...L.requests];
  const agents = Array.from({ length: CLIENTS }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  // The retries of one client's requests keep their order (a counter's str_replaces depend on
  // one another): one worker per client.
  const byClient = new Map();
  for (const e of queue) {
    const k = e.key.replace(/-i\d+$/, '');
    if (!byClient.has(k)) byClient.set(k, []);
    byClient.get(k).push(e);
  }
  const lists = [...byClient.values()];
  await Promise.all(lists.map(async (list, w) => {
    const agent = agents[w % CLIENTS];
    for (const e of list) {
      const r = await request(srv.port, 'POST', '/memory', { body: e.body, headers: { 'idempotency-key': e.key }, agent });
      if (e.answer) {
        assertReplay(r, e.answer, `retry of acknowledged ${e.key}`);
        replayed++;
      } else {
        assert.deepEqual([r.status, r.json?.content], [200, e.expected], `retry of unanswered ${e.key}`);
        if (r.headers['idempotent-replayed'] === 'true') unansweredReplayed++;
        else appliedNow++;
        e.answer = r;
      }
    }
  }));
  for (const a of agents) a.destroy();

  // Each write applied exactly once.
  const lines = new Map();
  for (let s = 0; s < SHARED; s++) {
    const text = await c.text(`/memories/shared/s${s}.txt`);
    const ls = text.split('\n');
    assert.equal(ls.at(-1), `shared ${s}`);
    for (const l of ls.slice(0, -1)) {
      assert.ok(!lines.has(l), `line ${l} is in the shared files twice`);
      lines.set(l, `/memories/shared/s${s}.txt`);
    }
  }
  const feed = await c.changes();
  const perPath = new Map();
  for (const ch of feed.changes) {
    const k = `${ch.command} ${ch.paths.join(' ')}`;
    perPath.set(k, (perPath.get(k) ?? 0) + 1);
  }
  const expectedPerPath = new Map();
  for (const e of L.requests) {
    if (e.cmd.command === 'create') assert.equal(await c.text(e.cmd.path), e.cmd.file_text, e.key);
    if (e.cmd.command === 'insert') assert.equal(lines.get(e.key), e.cmd.path, `line ${e.key}`);
    const k = `${e.cmd.command} ${e.cmd.path}`;
    expectedPerPath.set(k, (expectedPerPath.get(k) ?? 0) + 1);
  }
  for (const l of lines.keys()) assert.ok(L.requests.some((e) => e.key === l), `line ${l} was never sent`);
  for (let k = 0; k < CLIENTS; k++) assert.equal(await c.text(`/memories/counters/c${k}.txt`), `value=${L.counters[k]}`, `counter ${k}`);
  // The change feed: the setup's writes, then one entry per key.
  for (const [k, n] of expectedPerPath) assert.equal(perPath.get(k), n, `change-feed entries for ${k}`);
  assert.equal(feed.changes.length, L.setupWrites + L.requests.length, 'change-feed entries: one per key and the setup');
  // Seqs strictly consecutive.
  feed.changes.forEach((ch, i) => assert.equal(ch.seq, i + 1));
  return { replayed, unansweredReplayed, appliedNow };
}

test('crash safety: keyed writes, SIGKILL at a random moment, restart, retry every request with its key: each applied exactly once', async (t) => {
  const seed = Number(process.env.MD_CRASH_SEED ?? (Date.now() % 2147483647));
  const rand = mulberry32(seed);
  t.diagnostic(`kill moments drawn with MD_CRASH_SEED=${seed}`);
  const dir = tempDir('memoryd-idem-crash-');
  const db = isPg() ? await createDatabase() : path.join(dir, 'memoryd.db');
  const L = { requests: [], counters: Array(CLIENTS).fill(0), setupWrites: 0 };
  const totals = { unansweredReplayed: 0, appliedNow: 0 };
  let srv = await startServer({ db });
  try {
    const setup = client(srv, 'default');
    for (let s = 0; s < SHARED; s++) assert.equal((await setup.post({ command: 'create', path: `/memories/shared/s${s}.txt`, file_text: `shared ${s}` })).status, 200);
    for (let k = 0; k < CLIENTS; k++) assert.equal((await setup.post({ command: 'create', path: `/memories/counters/c${k}.txt`, file_text: 'value=0' })).status, 200);
    L.setupWrites = SHARED + CLIENTS;
    const ROUNDS = process.env.MD_TEST_WRAPPER ? 2 : 6; // a restart under valgrind takes seconds
    for (let round = 0; round < ROUNDS; round++) {
      const plan = { killAfter: 10 + Math.floor(rand() * 150), delayMs: rand() < 0.3 ? 0 : Math.floor(rand() * 6) };
      const acks = await driveAndKill(srv, L, round, plan, rand);
      srv = await startServer({ db });
      const { replayed, unansweredReplayed, appliedNow } = await retryAndVerify(srv, L);
      totals.unansweredReplayed += unansweredReplayed;
      totals.appliedNow += appliedNow;
      t.diagnostic(`round ${round} ${JSON.stringify(plan)}: ${acks} acknowledged; after the restart ${replayed} acknowledged retries replayed; of the unanswered, ${unansweredReplayed} had been committed (replayed), ${appliedNow} applied now`);
    }
    await srv.stop();
    // SQLite: PRAGMA integrity_check; PostgreSQL: sizes, contents and parents agree.
    assert.deepEqual(dbInconsistencies(db), []);
    assert.ok(totals.unansweredReplayed + totals.appliedNow > 0, 'no request was in flight at any kill: the retries proved nothing');
  } finally {
    if (!srv.exited()) await srv.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
