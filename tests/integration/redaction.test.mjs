// Proves POST /v1/redact over real HTTP on loopback against a temp SQLite database, and as
// pg/integration/redaction against a fresh PostgreSQL database
// (tests/integration/redaction.test.mjs):
//   - a redacted version keeps its metadata (version, path, command, time, actor, existed, size)
//     and loses its content and sha256 (null, redacted: true), in /v1/versions and /v1/history;
//     a restore of it is refused (409), also as part of a directory restore; the redaction is a
//     write of its own in the change feed; redacting it again is harmless;
//   - the content is gone for good: a unique marker written into a file, overwritten (so that
//     only one version holds it) and redacted is absent, checked while memoryd still runs (a
//     small file, stored inline, and a large one: over SQLite's overflow pages, in
//     PostgreSQL's TOAST table); before the redaction the marker is found there, so the check
//     can fail:
//       SQLite: byte for byte, from memoryd.db and memoryd.db-wal, read raw (secure_delete and
//       the TRUNCATE checkpoint after the redaction);
//       PostgreSQL: from every row version, live or dead, of the versions table and of its
//       TOAST table, read from the pages with pageinspect (memoryd runs VACUUM versions after
//       the redaction's commit, before answering; docs/behaviour.md 12.4: the freed space
//       keeps the bytes until it is reused, which is not checked);
//   - an answer kept for an idempotent retry that quoted the marker (a str_replace snippet
//     stored under an Idempotency-Key) is scrubbed: its replay says the answer was erased (and
//     on SQLite the bytes are gone from the files too); so is a refused answer that quoted it;
//   - every refusal of /v1/redact with its exact status and body, nothing changed.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { sqliteFilesHolding } from '../lib/db.mjs';
import { isPg, pgRowVersionsHolding } from '../lib/pg.mjs';
import { startServer } from '../lib/server.mjs';

const sha256 = (s) => crypto.createHash('sha256').update(s).digest('hex');
const SCRUBBED = 'The command was applied. Its original answer was erased because a version of the file was redacted.';
const SNIPPET_HEAD = 'The memory file has been edited. Here is the snippet showing the change (with line numbers):';

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
    async write(cmd, h = {}) {
      const r = await c.post(cmd, h);
      assert.equal(r.status, 200, `${JSON.stringify(cmd)}: ${r.text}`);
      return r;
    },
    async text(path) {
      const r = await c.post({ command: 'view', path });
      assert.equal(r.status, 200, r.text);
      return r.json.content.split('\n').slice(1).map((l) => l.replace(/^ *\d+\t/, '')).join('\n');
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
  };
  return c;
}

const PG = isPg();
const WHERE = PG ? 'every row version of versions and of its TOAST table (live or dead)' : 'memoryd.db and memoryd.db-wal';

// Where the marker is still stored ({} when nowhere).
// SQLite: its offsets in the database's files, read raw: {file: [offsets]}.
// PostgreSQL: the row versions of the versions table and its TOAST table that hold it, read
// from the pages: {versions: [row versions]}.
function findBytes(srv, marker) {
  if (PG) {
    const rows = pgRowVersionsHolding(srv.dbPath, 'versions', marker);
    return rows.length ? { versions: rows } : {};
  }
  return sqliteFilesHolding(srv.dbPath, marker);
}

// PostgreSQL: the row versions of memoryd's other tables that still hold the marker: the
// file's rows of before the edit that replaced it (entries) and the kept answer as it was
// before its scrubbing (idempotency), dead after those writes, removed by the same VACUUM.
function otherCopies(srv, marker) {
  const found = {};
  for (const table of ['entries', 'idempotency']) {
    const rows = pgRowVersionsHolding(srv.dbPath, table, marker);
    if (rows.length) found[table] = rows;
  }
  return found;
}

describe('redaction', () => {
  let srv;
  before(async () => { srv = await startServer(); });
  after(async () => {
    await srv.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  });

  test('a redacted version keeps its metadata and loses its content; restoring it is refused', async () => {
    const c = client(srv, 'r-meta');
    const p = '/memories/secret.txt';
    await c.write({ command: 'create', path: p, file_text: 'api key: hunter2\n' }); // v1
    const t0 = Date.now();
    await c.write({ command: 'str_replace', path: p, old_str: 'hunter2', new_str: '[removed]' }, { 'x-memory-actor': 'editor' }); // v2
    const t1 = Date.now();
    const v2 = await c.version(2);
    assert.deepEqual(v2, { version: 2, path: p, command: 'str_replace', time: v2.time, actor: 'editor', existed: true, size: 17, sha256: sha256('api key: hunter2\n'), redacted: false, content: 'api key: hunter2\n' });
    assert.ok(Date.parse(v2.time) >= t0 && Date.parse(v2.time) <= t1);

    const r = await c.op('redact', { path: p, version: 2 }, { 'x-memory-actor': 'compliance' });
    assert.deepEqual([r.status, r.json], [200, { path: p, version: 2, redacted: true, seq: 3, versions_recorded: 0 }]);
    const after = await c.version(2);
    assert.deepEqual(after, { ...v2, sha256: null, redacted: true, content: null });
    const h = await c.get(`/v1/history?path=${p}`);
    assert.deepEqual(h.json.versions.map((v) => [v.version, v.redacted, v.sha256, v.size]), [[2, true, null, 17], [1, false, null, null]]);
    // The live file is not touched.
    assert.equal(await c.text(p), 'api key: [removed]\n');
    // The redaction is a write in the change feed; it records no version.
    const feed = await c.changes(2);
    assert.deepEqual(feed.changes.map(({ time, ...rest }) => rest), [{ seq: 3, version: null, versions: 0, history_bytes: 0, command: 'redact', paths: [p], actor: 'compliance' }]);
    // Restoring it is refused, alone or in a directory restore; nothing changes.
    const rs = await c.op('restore', { path: p, version: 2 });
    assert.deepEqual([rs.status, rs.json], [409, { error: 'Version 2 of /memories/secret.txt was redacted: its content is gone' }]);
    const rb = await c.op('restore', { path: '/memories', before: 2 });
    assert.deepEqual([rb.status, rb.json], [409, { error: 'Version 2 of /memories/secret.txt was redacted: its content is gone' }]);
    assert.equal(await c.text(p), 'api key: [removed]\n');
    assert.equal((await c.changes()).last_seq, 3);
    // Redacting again: nothing left to erase, still an answer of success.
    const again = await c.op('redact', { path: p, version: 2 });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(await c.version(2), after);
  });

  test('redact refusals: exact status and body, nothing changed', async () => {
    const c = client(srv, 'r-errors');
    await c.write({ command: 'create', path: '/memories/a.txt', file_text: 'A' }); // v1
    await c.write({ command: 'str_replace', path: '/memories/a.txt', old_str: 'A', new_str: 'B' }); // v2
    const cases = [
      ['{"path": "/memories/a.txt"', 400, 'Invalid JSON in request body: \'}\' expected near end of file (line 1, column 26)'],
      [{ path: '/memories/a.txt' }, 400, 'Missing required parameter `version` for command `redact`'],
      [{ version: 2 }, 400, 'Missing required parameter `path` for command `redact`'],
      [{ path: '/memories/a.txt', version: 0 }, 400, '`version` must be a positive integer'],
      [{ path: '/memories/a.txt', version: -1 }, 400, '`version` must be a positive integer'],
      [{ path: '/memories/a.txt', version: 'two' }, 400, 'Parameter `version` must be an integer'],
      [{ path: '/memories/../a.txt', version: 2 }, 400, 'Path /memories/../a.txt would escape /memories directory'],
      [{ path: '/memories/a.txt', version: 3 }, 404, 'Version 3 is not kept (there is no such version of this tenant, or retention has pruned it)'],
      [{ path: '/memories/b.txt', version: 2 }, 409, 'Version 2 is of /memories/a.txt, not of /memories/b.txt'],
      [{ path: '/memories/a.txt', version: 1 }, 409, 'Version 1 of /memories/a.txt holds no content: it records that the file did not exist'],
    ];
    const v2 = await c.version(2);
    const last = (await c.changes()).last_seq;
    for (const [body, status, error] of cases) {
      const r = await c.op('redact', body);
      assert.deepEqual([r.status, r.json], [status, { error }], typeof body === 'string' ? body : JSON.stringify(body));
    }
    assert.deepEqual(await c.version(2), v2);
    assert.equal((await c.changes()).last_seq, last);
    // Another tenant cannot redact this tenant's version.
    const o = client(srv, 'r-errors-other');
    const r = await o.op('redact', { path: '/memories/a.txt', version: 2 });
    assert.deepEqual([r.status, r.json], [404, { error: 'Version 2 is not kept (there is no such version of this tenant, or retention has pruned it)' }]);
    assert.deepEqual(await c.version(2), v2);
  });

  for (const [size, filler] of [['a small file (stored inline)', ''], ['a large file (SQLite: overflow pages; PostgreSQL: TOAST)', 'filler line for overflow pages\n'.repeat(700)]]) {
    test(`the marker is gone from ${WHERE} while memoryd runs, and the idempotent answer quoting it is scrubbed: ${size}`, async (t) => {
      const c = client(srv, `r-bytes-${filler ? 'large' : 'small'}`);
      // Ends in a letter no hex digit is: version 3 is kept as a splice of the text that
      // replaced it ('gone'), the bytes both share at the ends left out; a marker ending in
      // 'e' (one run in 16) would lose its last byte to the shared tail and not be found.
      const marker = `MARKER-${crypto.randomBytes(16).toString('hex')}Z`;
      const key = `put-${crypto.randomUUID()}`; // not the marker: the key is stored as it is
      const p = '/memories/notes.txt';
      await c.write({ command: 'create', path: p, file_text: `title\nPLACEHOLDER\n${filler}end\n` }); // v1
      // The marker goes in with an Idempotency-Key: the stored answer (a snippet) quotes it.
      const put = { command: 'str_replace', path: p, old_str: 'PLACEHOLDER', new_str: marker };
      const first = await c.write(put, { 'idempotency-key': key }); // v2: PLACEHOLDER
      assert.ok(first.json.content.startsWith(`${SNIPPET_HEAD}\n     1\ttitle\n     2\t${marker}\n`), first.json.content);
      // Overwritten: from now on only version 3 holds it.
      await c.write({ command: 'str_replace', path: p, old_str: marker, new_str: 'gone' }); // v3: the marker
      assert.equal(await c.text(p), `title\ngone\n${filler}end\n`);
      const v3 = await c.version(3);
      assert.ok(v3.content.includes(marker));
      const seen = findBytes(srv, marker);
      assert.ok(Object.keys(seen).length > 0, `the marker is not in ${WHERE} before the redaction: this test could not fail`);
      t.diagnostic(`before the redaction the marker is at ${JSON.stringify(seen)}`);
      if (PG) {
        const others = otherCopies(srv, marker);
        assert.deepEqual(Object.keys(others).sort(), ['entries', 'idempotency'], `dead row versions of entries and idempotency hold the marker before: ${JSON.stringify(others)}`);
      }

      const r = await c.op('redact', { path: p, version: 3 });
      assert.deepEqual([r.status, r.json], [200, { path: p, version: 3, redacted: true, seq: 4, versions_recorded: 0 }]);
      assert.equal(srv.exited(), null, 'memoryd is still running');
      assert.deepEqual(findBytes(srv, marker), {}, `the marker is still in ${WHERE} after the redaction`);
      if (PG) assert.deepEqual(otherCopies(srv, marker), {}, 'the marker is still in a row version of entries or idempotency after the redaction');
      assert.deepEqual(await c.version(3), { ...v3, sha256: null, redacted: true, content: null });

      // The answer kept for the key is scrubbed: its replay no longer quotes the marker.
      const replay = await c.post(put, { 'idempotency-key': key });
      assert.deepEqual([replay.status, replay.json, replay.headers.get('idempotent-replayed')], [200, { type: 'tool_result', content: SCRUBBED, is_error: false }, 'true']);
      assert.equal(await c.text(p), `title\ngone\n${filler}end\n`, 'the replay applied the command again');
      const rs = await c.op('restore', { path: p, version: 3 });
      assert.deepEqual([rs.status, rs.json], [409, { error: 'Version 3 of /memories/notes.txt was redacted: its content is gone' }]);
      // Still gone after more writes and a checkpoint or two.
      for (let i = 0; i < 20; i++) await c.write({ command: 'insert', path: p, insert_line: 0, insert_text: `more ${i}` });
      assert.deepEqual(findBytes(srv, marker), {});
      assert.equal(srv.exited(), null);
    });
  }

  test('a refused answer kept for an idempotent retry that quoted the redacted content is scrubbed too', async () => {
    const c = client(srv, 'r-refused-answer');
    const marker = `MARKER-${crypto.randomBytes(16).toString('hex')}`;
    const key = `bad-${crypto.randomUUID()}`;
    const p = '/memories/twice.txt';
    await c.write({ command: 'create', path: p, file_text: `${marker}\n${marker}\n` }); // v1
    // Refused (two occurrences): the answer quotes old_str, the marker, and is kept for the key.
    const bad = { command: 'str_replace', path: p, old_str: marker, new_str: 'x' };
    const refused = await c.post(bad, { 'idempotency-key': key });
    assert.deepEqual([refused.status, refused.json.content], [409, `No replacement was performed. Multiple occurrences of old_str \`${marker}\` in lines: 1, 2. Please ensure it is unique`]);
    await c.write({ command: 'str_replace', path: p, old_str: `${marker}\n${marker}\n`, new_str: 'clean\n' }); // v2: the marker twice
    assert.ok(Object.keys(findBytes(srv, marker)).length > 0);
    const r = await c.op('redact', { path: p, version: 2 });
    assert.deepEqual([r.status, r.json], [200, { path: p, version: 2, redacted: true, seq: 3, versions_recorded: 0 }]);
    const replay = await c.post(bad, { 'idempotency-key': key });
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.ok(!replay.text.includes(marker), `the replayed answer still quotes the redacted content: ${replay.text}`);
    assert.deepEqual(findBytes(srv, marker), {}, `the marker is still in ${WHERE} after the redaction`);
  });
});
