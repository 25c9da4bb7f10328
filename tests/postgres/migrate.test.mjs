// `memoryd migrate --from SQLITE_PATH --to URI` (src/app/migrate.c), for real:
//   - a SQLite database filled by a running memoryd (several tenants, among them one with
//     2,500 entries and one with 17 MiB of files, so that the copy's chunks of 1,000 rows
//     and of 16 MiB are both crossed; nested and empty directories, empty files, names in
//     other scripts and in NFD beside NFC, hidden files and node_modules, files of exactly
//     1 MiB, NULs, control characters, \r, tabs and characters outside the BMP; edited,
//     renamed and deleted entries) is copied into a fresh PostgreSQL database; memoryd on
//     that database then answers every view (every file, every directory, its sizes) exactly
//     as memoryd on the SQLite file did, every row (tenant, creation time, path, depth,
//     kind, size, mtime, content bytes) is equal on both sides, the copy is consistent and
//     memoryd writes on it as on any database;
//   - with history: the SQLite side also holds versions from edits, deletes and renames (a
//     directory's files each), versions pruned by count (--history-versions 3, so a kept
//     version has pruned_through set), a redacted version, restores of a version and of a
//     directory, the change feed of every write, and Idempotency-Keys (answers of success, a
//     refused command's and a refused restore's, one scrubbed by the redaction); after the
//     copy, every row of versions, changes and idempotency of every tenant (each column, NULLs
//     and bytes exact) and every tenant's counters are equal on both sides; memoryd on
//     PostgreSQL answers GET /v1/changes (the whole feed), /v1/history (every path that has
//     versions, /memories, a path that never existed) and /v1/versions/{v} (every version)
//     exactly as memoryd on SQLite did; the kept answers are replayed from PostgreSQL; and the
//     next writes on PostgreSQL continue the tenant's numbering (version and seq) where
//     SQLite left off, a new tenant starting at 1;
//   - a target that already has one of the tenants: refused, naming it, nothing written;
//   - a missing SQLite file, a file that is not memoryd's database, an unreachable target:
//     a clear error, exit 1, the target untouched;
//   - bad arguments: the usage, exit 2.
// Runs only on PostgreSQL (MD_TEST_PG; tests/CMakeLists.txt).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeClient, readText } from '../lib/client.mjs';
import { createDatabase, pgCluster, pgInconsistencies, psql } from '../lib/pg.mjs';
import { runMemoryd, startServer, tempDir } from '../lib/server.mjs';

const MD_SOURCE = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

const MiB = 1 << 20;
const dir = tempDir('memoryd-migrate-');
const sqlitePath = path.join(dir, 'memoryd.db');
// Views of 1 MiB files whole, not cut at the default 256 KiB; history pruned by count at 3
// versions per file, so that pruning leaves its mark (pruned_through) in the copied rows.
const ARGS = ['--max-view', '4M', '--history-versions', '3'];

before(() => assert.ok(pgCluster(), 'MD_TEST_PG is not set: this test needs the suite\'s PostgreSQL'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

// ---- the data set ----

// A file's content of exactly `bytes` bytes of UTF-8, every line different: tabs, \r\n and a
// lone \r, NUL and other control characters, Latin-1, a BOM, U+FFFD, U+10FFFF, a clef
// (outside the BMP), quotes and backslashes.
function oddText(seed, bytes) {
  const parts = [];
  let n = 0;
  for (let i = 0; n < bytes - 200; i++) {
    const line = `${seed}:${i}\tcol\tñ é ü ß ✓ 𝄞 \u0000\u0001\u001f\u007f\u0080\u00ff\ufeff\ufffd\u{10ffff} "q" \\b\\${i % 3 === 0 ? '\r\n' : i % 3 === 1 ? '\r' : '\n'}`;
    parts.push(line);
    n += Buffer.byteLength(line);
  }
  parts.push('x'.repeat(bytes - n));
  const text = parts.join('');
  assert.equal(Buffer.byteLength(text), bytes);
  return text;
}

// Full-text search answers of tenant alpha (hits in path order: the backends rank apart).
const SEARCHES = ['levels', 'NFC', 'soon gone', 'CJK', 'hidden', 'main(void)', 'e + combining'];
async function searchAnswers(port) {
  const out = {};
  for (const q of SEARCHES) {
    const r = await fetch(`http://127.0.0.1:${port}/v1/search?q=${encodeURIComponent(q)}&limit=100`, { headers: { 'x-tenant-id': 'alpha' } });
    const j = await r.json();
    out[q] = [r.status, j.hits.sort((a, b) => (a.path < b.path ? -1 : 1)), j.next_cursor];
  }
  return out;
}

const LONG_TENANT = `t${'x'.repeat(126)}Z`; // 128 characters, the longest tenant id

// Per tenant: the commands run, in order, and the files they leave (path -> content).
function dataSet() {
  const tenants = {};
  const add = (tenant, commands) => { (tenants[tenant] ??= []).push(...commands); };
  const create = (p, text) => ({ command: 'create', path: p, file_text: text });

  add('alpha', [
    create('/memories/notes.md', '# Notes\n- one\n- two\n'),
    create('/memories/a/b/c/d/e/deep.txt', 'five levels down\n'),
    create('/memories/a/b/side.txt', 'beside c\n'),
    create('/memories/empty.txt', ''),
    create('/memories/a/empty-too.txt', ''),
    // An empty directory: its only file deleted.
    create('/memories/hollow/gone.txt', 'soon gone'),
    { command: 'delete', path: '/memories/hollow/gone.txt' },
    // Empty directories nested in each other.
    create('/memories/x1/x2/x3/gone.txt', 'soon gone'),
    { command: 'delete', path: '/memories/x1/x2/x3/gone.txt' },
    create('/memories/café/naïve résumé.md', 'NFC names\n'),
    create('/memories/nfd/cafe\u0301.md', 'NFD: e + combining acute\n'),
    create('/memories/nfd/caf\u00e9.md', 'NFC: one code point\n'),
    create('/memories/日本語/メモ.txt', 'CJK\n'),
    create('/memories/emoji 📁/🗒 list.txt', 'outside the BMP\n'),
    create('/memories/odd q?&=#%\'"; name.txt', 'URL-ish characters in a name\n'),
    create('/memories/.hidden.md', 'a hidden file\n'),
    create('/memories/.config/settings.json', '{"hidden": true}\n'),
    create('/memories/proj/node_modules/pkg/index.js', 'module.exports = 1;\n'),
    create('/memories/proj/.git/HEAD', 'ref: refs/heads/main\n'),
    create('/memories/proj/src/main.c', 'int main(void)\r\n{\r\n\treturn 0;\r\n}\r\n'),
    create('/memories/bytes.bin.txt', oddText('small', 4000)),
    create('/memories/lone-cr.txt', 'a\rb\rc\r'),
    create('/memories/tabs.tsv', 'a\tb\tc\n1\t2\t3\n\t\t\n'),
    create('/memories/nul.txt', '\u0000'),
    // Edited, inserted into, renamed: mtimes and sizes that changed after the create.
    create('/memories/edit.md', 'alpha beta gamma\n'),
    { command: 'str_replace', path: '/memories/edit.md', old_str: 'beta', new_str: 'BETA (edited)' },
    { command: 'insert', path: '/memories/edit.md', insert_line: 0, insert_text: 'first line\n' },
    create('/memories/move/me.txt', 'moved\n'),
    { command: 'rename', old_path: '/memories/move', new_path: '/memories/moved/here' },
  ]);
  add('beta.2', [
    create('/memories/one.txt', 'beta\'s only file\n'),
  ]);
  // A tenant whose only file was deleted: its row and root, nothing else.
  add('Gamma_3-x', [create('/memories/tmp.txt', 'gone'), { command: 'delete', path: '/memories/tmp.txt' }]);
  add(LONG_TENANT, [create('/memories/long-tenant.txt', 'the longest tenant id\n')]);
  // 2,500 entries: the copy sends rows 1,000 at a time.
  add('bulk', Array.from({ length: 2450 }, (_, i) => create(`/memories/d${String(i % 49).padStart(2, '0')}/f${i}.txt`, `file ${i}\n`)));
  // 17 files of exactly 1 MiB: the copy also cuts chunks at 16 MiB of content.
  add('big', Array.from({ length: 17 }, (_, i) => create(`/memories/mb/${i}.txt`, oddText(`big${i}`, MiB))));
  add('big', [create('/memories/mb/.hidden-1mib', oddText('hidden', MiB)), create('/memories/small.txt', 'small\n')]);
  return tenants;
}

// The creates whose file nothing changed or removed afterwards.
const under = (p, q) => p === q || p.startsWith(`${q}/`);
const untouched = (commands) => commands.filter((c, i) => c.command === 'create'
  && !commands.slice(i + 1).some((d) => (d.path !== undefined && under(c.path, d.path)) || (d.old_path !== undefined && under(c.path, d.old_path))));

// Run each tenant's commands, in order per tenant, the tenants at once (each on a few
// connections for the independent creates).
async function fill(port, tenants) {
  await Promise.all(Object.entries(tenants).map(async ([tenant, commands]) => {
    const clients = Array.from({ length: 4 }, () => makeClient(port, { tenant }));
    const independent = commands.every((c) => c.command === 'create');
    if (independent) {
      let next = 0;
      await Promise.all(clients.map(async (c) => {
        while (next < commands.length) {
          const cmd = commands[next++];
          const r = await c.post(cmd);
          assert.equal(r.status, 200, `${tenant}: ${JSON.stringify(cmd).slice(0, 200)}: ${r.text}`);
        }
      }));
    } else {
      for (const cmd of commands) {
        const r = await clients[0].post(cmd);
        assert.equal(r.status, 200, `${tenant}: ${JSON.stringify(cmd).slice(0, 200)}: ${r.text}`);
      }
    }
    clients.forEach((c) => c.close());
  }));
}

// ---- what each side holds ----

// Every row, one line each: tenant, its creation time, path, depth, kind, size, mtime and the
// content in hex, in byte order of (tenant, path) — the order of both databases' C collation.
const SQLITE_ROWS = `SELECT t.name || char(9) || t.created_at || char(9) || e.path || char(9) || e.depth || char(9)
  || e.kind || char(9) || e.size || char(9) || e.mtime || char(9) || hex(e.content)
  FROM entries e JOIN tenants t ON t.id = e.tenant ORDER BY t.name, e.path`;
const PG_ROWS = `SELECT t.name || E'\\t' || t.created_at || E'\\t' || e.path || E'\\t' || e.depth || E'\\t'
  || e.kind || E'\\t' || e.size || E'\\t' || e.mtime || E'\\t' || coalesce(upper(encode(e.content, 'hex')), '')
  FROM entries e JOIN tenants t ON t.id = e.tenant ORDER BY t.name, e.path`;
const BIG = { encoding: 'utf8', maxBuffer: 256 * MiB };

const sqliteRows = (db) => execFileSync('sqlite3', ['-readonly', db, SQLITE_ROWS], BIG).split('\n').filter(Boolean);
const pgRows = (uri) => execFileSync('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', uri, '-c', PG_ROWS], BIG)
  .split('\n').filter(Boolean);
const pgTenants = (uri) => psql(uri, 'SELECT name FROM tenants ORDER BY name').split('\n').filter(Boolean);
const pgTables = (uri) => psql(uri, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1").split('\n').filter(Boolean);

// Every entry of every tenant as memoryd shows it: the exact answer to a view of each path
// (files: content with line numbers; directories: the listing with sizes), hidden ones and
// node_modules included (their paths come from the rows, not from listings, which leave them
// out). Returns {`${tenant} ${path}`: [status, content]}.
async function views(port, entries) {
  const out = {};
  const byTenant = new Map();
  for (const e of entries) byTenant.set(e.tenant, [...(byTenant.get(e.tenant) ?? []), e]);
  await Promise.all([...byTenant].map(async ([tenant, list]) => {
    const client = makeClient(port, { tenant });
    for (const { path: p } of list) {
      const r = await client.post({ command: 'view', path: p });
      out[`${tenant} ${p}`] = [r.status, r.content];
    }
    client.close();
  }));
  return out;
}

const entriesOf = (rows) => rows.map((l) => {
  const [tenant, , p, , kind] = l.split('\t');
  return { tenant, path: p, kind: Number(kind) };
});

// ---- history ----

const SCRUBBED = 'The command was applied. Its original answer was erased because a version of the file was redacted.';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// History for tenants alpha and beta.2 of the SQLite database, below /memories/hist (no file of
// the data set is touched): edits pruned by count, a secret edited away and its version
// redacted, a directory renamed, a subdirectory deleted and restored, a version restored,
// keyed requests (successful and refused). Returns {keys, secretVersion}: the first answer to
// each key ({key: {tenant, route, body, headers, status, text}}) and the redacted version.
async function makeHistory(srv) {
  const keys = {};
  const send = async (tenant, route, body, headers = {}) => {
    const r = await srv.request('POST', route, { body: JSON.stringify(body), headers: { 'content-type': 'application/json', 'x-tenant-id': tenant, ...headers } });
    const key = headers['idempotency-key'];
    if (key) keys[key] = { tenant, route, body, status: r.status, text: r.text, headers };
    return r;
  };
  const ok = async (tenant, route, body, headers) => {
    const r = await send(tenant, route, body, headers);
    assert.equal(r.status, 200, `${tenant} ${route} ${JSON.stringify(body)}: ${r.text}`);
    return r;
  };
  const get = async (tenant, p) => {
    const r = await srv.request('GET', p, { headers: { 'x-tenant-id': tenant } });
    assert.equal(r.status, 200, `${tenant} GET ${p}: ${r.text}`);
    return r.json;
  };
  const A = 'alpha';
  const log = '/memories/hist/log.txt';
  await ok(A, '/memory', { command: 'create', path: log, file_text: 'v0\n' }, { 'idempotency-key': 'h-create', 'x-memory-actor': 'planner' });
  for (let i = 1; i <= 5; i++) await ok(A, '/memory', { command: 'str_replace', path: log, old_str: `v${i - 1}`, new_str: `v${i}` });
  const secret = '/memories/hist/secret.txt';
  await ok(A, '/memory', { command: 'create', path: secret, file_text: 'token: s3cr3t\n' });
  await ok(A, '/memory', { command: 'str_replace', path: secret, old_str: 's3cr3t', new_str: '[gone]' }, { 'idempotency-key': 'h-secret' });
  const secretVersion = (await get(A, `/v1/history?path=${secret}`)).versions[0].version;
  await ok(A, '/v1/redact', { path: secret, version: secretVersion }, { 'idempotency-key': 'h-redact', 'x-memory-actor': 'compliance' });
  for (const f of ['dir/a.txt', 'dir/sub/b.txt', 'dir/sub/c.txt']) await ok(A, '/memory', { command: 'create', path: `/memories/hist/${f}`, file_text: `${f}\n` });
  await ok(A, '/memory', { command: 'rename', old_path: '/memories/hist/dir', new_path: '/memories/hist/moved' });
  await ok(A, '/memory', { command: 'delete', path: '/memories/hist/moved/sub' }, { 'x-memory-actor': 'cleaner' });
  const del = (await get(A, '/v1/changes?after=0&limit=1000')).changes.at(-1);
  assert.deepEqual([del.command, del.versions], ['delete', 2]);
  await ok(A, '/v1/restore', { path: '/memories/hist/moved', before: del.version }, { 'idempotency-key': 'h-restore' });
  const logHistory = (await get(A, `/v1/history?path=${log}`)).versions;
  await ok(A, '/v1/restore', { path: log, version: logHistory[1].version });
  // Refused, kept for their keys: a create onto an existing file, a restore of a version that
  // does not exist.
  assert.equal((await send(A, '/memory', { command: 'create', path: log, file_text: 'again' }, { 'idempotency-key': 'h-refused' })).status, 409);
  assert.equal((await send(A, '/v1/restore', { path: log, version: 999999 }, { 'idempotency-key': 'h-restore-refused' })).status, 404);
  await ok('beta.2', '/memory', { command: 'create', path: '/memories/hist/b.txt', file_text: 'b\n' });
  await ok('beta.2', '/memory', { command: 'str_replace', path: '/memories/hist/b.txt', old_str: 'b', new_str: 'bb' }, { 'idempotency-key': 'b-edit' });
  // Pruning by count runs while memoryd is idle: log.txt keeps its 3 newest versions.
  for (const end = Date.now() + 20000; ;) {
    const n = (await get(A, `/v1/history?path=${log}`)).versions.length;
    if (n === 3) break;
    assert.ok(Date.now() < end, `log.txt still has ${n} versions: not pruned to 3`);
    await sleep(100);
  }
  return { keys, secretVersion };
}

// The history rows of both databases, one line per row, every column (text and bytes in hex,
// NULL as NULL, booleans as 0/1), in the same order: tenants' counters, versions, changes,
// idempotency keys. Built for the sqlite3 CLI or psql from one description. A version's content
// is compared as there or not: SQLite keeps most as deltas (docs/architecture.md, "History"),
// PostgreSQL whole; each whole text is checked against its SHA-256 below, and every version's
// text through GET /v1/versions on both sides.
const HIST_TABLES = [
  ['tenants', 'id', 'name', [['last_version', 'int'], ['last_seq', 'int']]],
  ['versions', 'tenant', 'version', [['version', 'int'], ['path', 'text'], ['existed', 'bool'], ['sha256', 'bytes'], ['size', 'int'], ['time', 'int'],
    ['command', 'text'], ['actor', 'text'], ['redacted', 'bool'], ['pruned_through', 'int'], ['content', 'present']]],
  ['changes', 'tenant', 'seq', [['seq', 'int'], ['version', 'int'], ['versions', 'int'], ['history_bytes', 'int'], ['time', 'int'], ['command', 'text'],
    ['paths', 'text'], ['actor', 'text']]],
  ['idempotency', 'tenant', 'key', [['key', 'text'], ['fingerprint', 'bytes'], ['err', 'int'], ['body', 'text'], ['path', 'text'], ['time', 'int']]],
];
function histQueries(pg) {
  const sep = pg ? " || E'\\t' || " : ' || char(9) || ';
  const expr = (c, kind) => {
    if (pg) {
      return { int: `coalesce(x.${c}::text, 'NULL')`, bool: `(x.${c}::int)::text`, text: `coalesce(upper(encode(convert_to(x.${c}, 'UTF8'), 'hex')), 'NULL')`, bytes: `coalesce(upper(encode(x.${c}, 'hex')), 'NULL')`, present: `CASE WHEN x.${c} IS NULL THEN 'NULL' ELSE 'P' END` }[kind];
    }
    return { int: `coalesce(CAST(x.${c} AS TEXT), 'NULL')`, bool: `CAST(x.${c} AS TEXT)`, text: `CASE WHEN x.${c} IS NULL THEN 'NULL' ELSE hex(x.${c}) END`, bytes: `CASE WHEN x.${c} IS NULL THEN 'NULL' ELSE hex(x.${c}) END`, present: `CASE WHEN x.${c} IS NULL THEN 'NULL' ELSE 'P' END` }[kind];
  };
  return HIST_TABLES.map(([table, tenantCol, order, cols]) => `SELECT '${table}'${sep}t.name${sep}${cols.map(([c, k]) => expr(c, k)).join(sep)}
    FROM ${table} x JOIN tenants t ON t.id = x.${tenantCol} ORDER BY t.name, x.${order}`);
}
const sqliteHistRows = (db) => histQueries(false).flatMap((q) => execFileSync('sqlite3', ['-readonly', db, q], BIG).split('\n').filter(Boolean));
const pgHistRows = (uri) => histQueries(true).flatMap((q) => execFileSync('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', uri, '-c', q], BIG)
  .split('\n').filter(Boolean));

// Every answer of the /v1 read API about the tenants' history: the whole change feed (pages
// of 1,000), the history of each path that has versions, of /memories (a directory: none) and
// of a path that never existed (404), and each version with its content.
// `versions`: {tenant: [[version, path]]}. Returns {`${tenant} ${request}`: [status, body]}.
async function historyAnswers(port, versions) {
  const out = {};
  await Promise.all(Object.entries(versions).map(async ([tenant, list]) => {
    const c = makeClient(port, { tenant });
    const ask = async (p) => {
      const r = await c.get(p);
      out[`${tenant} ${p}`] = [r.status, r.text];
      return r;
    };
    for (let after = 0; ;) {
      const r = await ask(`/v1/changes?after=${after}&limit=1000`);
      assert.equal(r.status, 200, r.text);
      if (r.json.changes.length === 0) break;
      after = r.json.next_after;
    }
    const paths = [...new Set(list.map(([, p]) => p)), '/memories', '/memories/never-existed.txt'];
    for (const p of paths) await ask(`/v1/history?path=${encodeURIComponent(p)}&limit=1000`);
    for (const [v] of list) await ask(`/v1/versions/${v}`);
    c.close();
  }));
  return out;
}

// {tenant: [[version, path]]} of the SQLite database.
function versionsOf(db) {
  const out = {};
  const lines = execFileSync('sqlite3', ['-readonly', db, `SELECT t.name || char(9) || v.version || char(9) || hex(v.path)
    FROM versions v JOIN tenants t ON t.id = v.tenant ORDER BY t.name, v.version`], BIG).split('\n').filter(Boolean);
  for (const l of lines) {
    const [tenant, v, hex] = l.split('\t');
    (out[tenant] ??= []).push([Number(v), Buffer.from(hex, 'hex').toString('utf8')]);
  }
  return out;
}

// ---- the tests ----

let source; // what the SQLite side showed: {rows, views, files}
let uri; // the database migrated into

test('every tenant of a SQLite database copied exactly: rows, views, sizes; then served and written by memoryd', { timeout: 600000 }, async () => {
  const tenants = dataSet();
  const md = await startServer({ db: sqlitePath, args: ARGS });
  let hist;
  try {
    await fill(md.port, tenants);
    hist = await makeHistory(md);
  } finally {
    await md.stop();
  }
  const rows = sqliteRows(sqlitePath);
  const histRows = sqliteHistRows(sqlitePath);
  const versions = versionsOf(sqlitePath);
  const entries = entriesOf(rows);

  // The source holds what the test says it does.
  const tenantNames = [...new Set(entries.map((e) => e.tenant))];
  assert.deepEqual(tenantNames, ['Gamma_3-x', 'alpha', 'beta.2', 'big', 'bulk', LONG_TENANT]);
  const has = (tenant, p, kind) => entries.some((e) => e.tenant === tenant && e.path === p && e.kind === kind);
  for (const [t, p, k] of [['alpha', '/memories/hollow', 1], ['alpha', '/memories/x1/x2/x3', 1], ['alpha', '/memories/empty.txt', 0],
    ['alpha', '/memories/nfd/cafe\u0301.md', 0], ['alpha', '/memories/nfd/caf\u00e9.md', 0], ['alpha', '/memories/.config/settings.json', 0],
    ['alpha', '/memories/proj/node_modules/pkg/index.js', 0], ['alpha', '/memories/moved/here/me.txt', 0], ['Gamma_3-x', '/memories', 1]]) {
    assert.ok(has(t, p, k), `${t} ${p} (kind ${k}) in the source`);
  }
  assert.ok(!has('alpha', '/memories/hollow/gone.txt', 0) && !has('alpha', '/memories/move', 1));
  assert.equal(entries.filter((e) => e.tenant === 'Gamma_3-x').length, 1);
  assert.equal(entries.filter((e) => e.tenant === 'bulk').length, 2450 + 49 + 1);
  assert.equal(entries.filter((e) => e.tenant === 'big').length, 18 + 2 + 1);
  // ... and the history it says: every kind of version, change and key.
  const sq = (sql) => execFileSync('sqlite3', ['-readonly', sqlitePath, sql], BIG);
  assert.equal(sq(`SELECT count(*) FROM versions WHERE redacted = 1 AND content IS NULL AND sha256 IS NULL AND existed = 1 AND version = ${hist.secretVersion}
    AND tenant = (SELECT id FROM tenants WHERE name = 'alpha')`), '1\n');
  assert.notEqual(sq("SELECT count(*) FROM versions WHERE pruned_through > 0 AND path = '/memories/hist/log.txt'"), '0\n', 'no version records pruning');
  assert.equal(sq("SELECT count(*) FROM versions WHERE path = '/memories/hist/log.txt'"), '3\n');
  assert.equal(sq("SELECT group_concat(DISTINCT command) FROM (SELECT command FROM versions ORDER BY command)"), 'create,delete,insert,rename,restore,str_replace\n');
  assert.equal(sq("SELECT group_concat(DISTINCT command) FROM (SELECT command FROM changes ORDER BY command)"), 'create,delete,insert,redact,rename,restore,str_replace\n');
  assert.equal(sq("SELECT count(*) FROM versions WHERE command = 'rename' AND existed = 0 AND path LIKE '/memories/hist/moved/%'"), '3\n');
  assert.equal(sq('SELECT group_concat(command) FROM changes WHERE version IS NULL'), 'redact\n', 'only the redaction records no version');
  assert.equal(sq("SELECT group_concat(key || ':' || err, ' ') FROM (SELECT key, err FROM idempotency ORDER BY key)").replace(/:[1-9]\d*/g, ':refused'),
    'b-edit:0 h-create:0 h-redact:0 h-refused:refused h-restore:0 h-restore-refused:refused h-secret:0\n');
  assert.equal(sq("SELECT body FROM idempotency WHERE key = 'h-secret'"), `${SCRUBBED}\n`);
  assert.equal(Object.values(versions).flat().length, Number(sq('SELECT count(*) FROM versions')));
  // What memoryd on SQLite shows, and that it is the data set's content.
  const md2 = await startServer({ db: sqlitePath, args: ARGS });
  let sqliteViews;
  let sqliteHistory;
  let sqliteSearch;
  const files = {};
  try {
    sqliteViews = await views(md2.port, entries);
    sqliteSearch = await searchAnswers(md2.port);
    sqliteHistory = await historyAnswers(md2.port, versions);
    for (const [tenant, commands] of Object.entries(tenants)) {
      const client = makeClient(md2.port, { tenant });
      for (const c of untouched(commands)) {
        files[`${tenant} ${c.path}`] = c.file_text;
        assert.equal(await readText(client, c.path), c.file_text, `${tenant} ${c.path} on SQLite`);
      }
      client.close();
    }
  } finally {
    await md2.stop();
  }
  assert.deepEqual(sqliteViews['alpha /memories/edit.md'], [200,
    'Here\'s the content of /memories/edit.md with line numbers:\n     1\tfirst line\n     2\talpha BETA (edited) gamma\n     3\t']);
  assert.equal(Object.values(sqliteViews).filter(([s]) => s !== 200).length, 0);

  // A tenant's own quota limits (and the file counts, which the target's triggers keep).
  // Its --sensitive mode and expiry window; a file's use written back (the uses table).
  execFileSync('sqlite3', [sqlitePath, "UPDATE tenants SET max_bytes = 12345, sensitive = 2, expire_ms = 86400000 WHERE name = 'alpha'; UPDATE tenants SET max_files = 0, expire_ms = 0 WHERE name = 'big';"
    + " INSERT OR REPLACE INTO uses (tenant, path, used) SELECT tenant, path, 1767225600000 FROM entries WHERE kind = 0 AND path = '/memories/edit.md'"]);
  const quotaOf = (out) => out.trim().split('\n').sort();
  const TENANT_ROWS = 'SELECT name, files, max_bytes, max_files, sensitive, expire_ms FROM tenants';
  const sqliteQuota = quotaOf(sq(TENANT_ROWS));
  assert.ok(sqliteQuota.some((l) => /^alpha\|[1-9]\d*\|12345\|\|2\|86400000$/.test(l)) && sqliteQuota.some((l) => /^big\|[1-9]\d*\|\|0\|\|0$/.test(l)), sqliteQuota.join(' '));
  const USES = 'SELECT t.name, u.path, u.used FROM uses u JOIN tenants t ON t.id = u.tenant ORDER BY 1, 2';
  const sqliteUses = sq(USES).trim();
  assert.match(sqliteUses, /^alpha\|\/memories\/edit\.md\|1767225600000$/m);

  // API keys (memoryd keys): one valid, one revoked, one of a tenant without data.
  const made = [];
  for (const [tenant, scope, extra] of [['alpha', 'write', ['--path', '/memories/sub']], ['beta.2', 'read', []], ['nodata', 'admin', []]]) {
    const k = await runMemoryd(['keys', 'create', '--db', sqlitePath, '--tenant', tenant, '--scope', scope, '--name', `key of ${tenant}`, ...extra]);
    assert.equal(k.code, 0, k.stderr);
    made.push(k.stdout.split('\n')[1].slice(4));
  }
  assert.equal((await runMemoryd(['keys', 'revoke', '--db', sqlitePath, made[1]])).code, 0);
  const KEY_ROWS = (hex) => `SELECT id, ${hex}, tenant, scope, name, created_at, coalesce(revoked_at, -1), coalesce(path, '-') FROM api_keys ORDER BY id`;
  const sqliteKeys = sq(KEY_ROWS('lower(hex(hash))')).trim().split('\n');
  assert.equal(sqliteKeys.length, 3);
  assert.equal(sqliteKeys.filter((l) => !l.includes('|-1|')).length, 1);
  assert.equal(sqliteKeys.filter((l) => l.endsWith('|/memories/sub')).length, 1);

  // The copy.
  uri = await createDatabase();
  const bytes = rows.reduce((sum, l) => sum + l.slice(l.lastIndexOf('\t') + 1).length / 2, 0);
  // MEMORYD_PROGRESS_MS=20: a progress line every 20 ms of loading (md_progress.h), then "done".
  const m = await runMemoryd(['migrate', '--from', sqlitePath, '--to', uri], { env: { MEMORYD_PROGRESS_MS: '20' } });
  assert.deepEqual([m.code, m.stdout], [0,
    `memoryd migrate: copied 6 tenants, ${rows.length} entries, ${bytes} bytes of files from ${sqlitePath} to ${uri}\n`]);
  assert.deepEqual(quotaOf(psql(uri, TENANT_ROWS)), sqliteQuota);
  assert.equal(psql(uri, 'SELECT t.name, e.path, e.used FROM entries e JOIN tenants t ON t.id = e.tenant WHERE e.used > 0 ORDER BY 1, 2').trim(), sqliteUses);
  assert.deepEqual(psql(uri, KEY_ROWS("encode(hash, 'hex')")).trim().split('\n'), sqliteKeys);
  // The schema made in the fresh database, in memoryd's log format (the backend's migration).
  // One line per migration of sql/postgres/ applied to the empty target, in order.
  const migrations = fs.readdirSync(path.join(MD_SOURCE, 'sql/postgres')).filter((f) => /^\d{3}_.*\.sql$/.test(f)).length;
  const logs = m.stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const progress = logs.filter((l) => l.msg === 'progress' || l.msg === 'done');
  assert.deepEqual(logs.filter((l) => !progress.includes(l)).map(({ level, msg, engine, version }) => ({ level, msg, engine, version })),
    Array.from({ length: migrations }, (_, i) => ({ level: 'info', msg: 'schema migrated', engine: 'postgres', version: i + 1 })));
  // Progress: rows loaded, growing, against the total of the tenants' rows (each tenant, its
  // entries, versions, feed and kept answers; the API keys come on top), then the whole count.
  // The copy of ~20 MiB takes longer than 20 ms on any machine: at least one line.
  const total = rows.length + histRows.length; // histRows: the rows of tenants, versions, changes, idempotency
  const done = progress.at(-1);
  assert.ok(progress.length >= 2, `${progress.length} progress lines`);
  assert.deepEqual([done.msg, done.work, done.unit, done.total, done.done], ['done', 'migrate', 'rows', total, total + sqliteKeys.length]);
  const counts = progress.slice(0, -1).map((l) => l.done);
  assert.deepEqual(progress.slice(0, -1).map((l) => [l.msg, l.work, l.unit, l.total]), counts.map(() => ['progress', 'migrate', 'rows', total]));
  assert.ok(counts.every((n, i) => n > (counts[i - 1] ?? 0) && n <= done.done), counts.join());
  assert.ok(progress.every((l) => Number.isInteger(l.rate) && l.rate >= 0));
  assert.ok(bytes > 18 * MiB);

  // Every row equal, byte for byte; the copy consistent.
  assert.deepEqual(pgRows(uri), rows);
  assert.deepEqual(pgInconsistencies(uri), []);
  // History too: every row of versions, changes and idempotency, and each tenant's counters.
  assert.deepEqual(pgHistRows(uri), histRows);
  // PostgreSQL holds each version's text whole: its SHA-256 is the one recorded.
  assert.equal(psql(uri, 'SELECT count(*) FROM versions WHERE content IS NOT NULL AND sha256 IS DISTINCT FROM sha256(content)').trim(), '0');
  assert.ok(Number(sq('SELECT count(*) FROM versions WHERE enc = 1')) > 0, 'SQLite kept no delta');
  assert.ok(histRows.length > 2 * 2450);
  source = { rows, views: sqliteViews, files };
  // Where alpha's numbering stands on SQLite (a redaction took a seq, directories several
  // versions: the two differ).
  const [lastVersion, lastSeq] = sq("SELECT last_version || ' ' || last_seq FROM tenants WHERE name = 'alpha'").trim().split(' ').map(Number);
  assert.ok(lastVersion > 0 && lastSeq > 0 && lastVersion !== lastSeq, `alpha's counters ${lastVersion} ${lastSeq}`);

  // memoryd on PostgreSQL shows exactly what memoryd on SQLite showed.
  const pg = await startServer({ db: uri, args: ARGS });
  try {
    const pgViews = await views(pg.port, entries);
    assert.deepEqual(Object.keys(pgViews).sort(), Object.keys(sqliteViews).sort());
    for (const k of Object.keys(sqliteViews)) assert.deepEqual(pgViews[k], sqliteViews[k], k);
    for (const [k, text] of Object.entries(files)) {
      const [tenant, p] = [k.slice(0, k.indexOf(' ')), k.slice(k.indexOf(' ') + 1)];
      const client = makeClient(pg.port, { tenant });
      assert.equal(await readText(client, p), text, `${k} on PostgreSQL`);
      client.close();
    }
    // Search finds the same files and lines (the index was built by PostgreSQL as the rows
    // were copied).
    assert.deepEqual(await searchAnswers(pg.port), sqliteSearch);
    assert.deepEqual(sqliteSearch.levels[1].map((h) => h.path), ['/memories/a/b/c/d/e/deep.txt']);
    assert.deepEqual(sqliteSearch['soon gone'][1], []);
    // A listing's sizes as both show them (the tenant's 18 MiB and its first level).
    assert.equal(pgViews['big /memories'][1].split('\n').slice(1, 3).join('\n'), '18.0M\t/memories\n18.0M\t/memories/mb/');

    // The history API answers exactly as on SQLite: the change feed, each path's history,
    // each version.
    const pgHistory = await historyAnswers(pg.port, versions);
    assert.deepEqual(Object.keys(pgHistory).sort(), Object.keys(sqliteHistory).sort());
    for (const k of Object.keys(sqliteHistory)) assert.deepEqual(pgHistory[k], sqliteHistory[k], k);
    assert.equal(Object.keys(pgHistory).filter((k) => k.includes(' /v1/versions/')).length, Object.values(versions).flat().length);

    // The kept answers are replayed from PostgreSQL: a success, the scrubbed one, refusals.
    for (const [key, first] of Object.entries(hist.keys)) {
      const r = await pg.request('POST', first.route, { body: JSON.stringify(first.body), headers: { 'content-type': 'application/json', 'x-tenant-id': first.tenant, ...first.headers } });
      const text = key === 'h-secret' ? JSON.stringify({ type: 'tool_result', content: SCRUBBED, is_error: false }) : first.text;
      assert.deepEqual([r.status, r.text, r.headers.get('idempotent-replayed')], [first.status, text, 'true'], `replay of ${key}`);
    }
    assert.deepEqual(Object.keys(hist.keys).sort(), ['b-edit', 'h-create', 'h-redact', 'h-refused', 'h-restore', 'h-restore-refused', 'h-secret']);

    // And it is a live database: writes land, directory sizes follow, versions and seqs
    // continue where SQLite left off.
    const a = makeClient(pg.port, { tenant: 'alpha' });
    let r = await a.post({ command: 'create', path: '/memories/a/b/c/after.txt', file_text: '12345' });
    assert.equal(r.status, 200, r.text);
    r = await a.post({ command: 'str_replace', path: '/memories/a/b/c/d/e/deep.txt', old_str: 'five', new_str: 'FIVE' });
    assert.equal(r.status, 200, r.text);
    r = await a.post({ command: 'view', path: '/memories/a/b' });
    assert.deepEqual([r.status, r.content], [200,
      'Here\'re the files and directories up to 2 levels deep in /memories/a/b, excluding hidden items and node_modules:\n'
      + '31B\t/memories/a/b\n22B\t/memories/a/b/c/\n5B\t/memories/a/b/c/after.txt\n17B\t/memories/a/b/c/d/\n9B\t/memories/a/b/side.txt']);
    r = await a.post({ command: 'rename', old_path: '/memories/hollow', new_path: '/memories/x1/x2/x3/hollow' });
    assert.equal(r.status, 200, r.text);
    r = await a.post({ command: 'delete', path: '/memories/moved' });
    assert.equal(r.status, 200, r.text);
    const feed = (await a.get(`/v1/changes?after=${lastSeq - 1}`)).json;
    assert.deepEqual(feed.changes.map(({ seq, version, versions, command }) => [seq, version, versions, command]), [
      [lastSeq, feed.changes[0].version, feed.changes[0].versions, feed.changes[0].command], // SQLite's last
      [lastSeq + 1, lastVersion + 1, 1, 'create'],
      [lastSeq + 2, lastVersion + 2, 1, 'str_replace'],
      [lastSeq + 3, null, 0, 'rename'], // an empty directory: no file, no version
      [lastSeq + 4, lastVersion + 3, 1, 'delete'],
    ]);
    assert.equal(feed.last_seq, lastSeq + 4);
    for (const [v, path, existed] of [[lastVersion + 1, '/memories/a/b/c/after.txt', false], [lastVersion + 2, '/memories/a/b/c/d/e/deep.txt', true],
      [lastVersion + 3, '/memories/moved/here/me.txt', true]]) {
      const got = (await a.get(`/v1/versions/${v}`)).json;
      assert.deepEqual([got.version, got.path, got.existed], [v, path, existed], `version ${v}`);
    }
    assert.equal((await a.get(`/v1/versions/${lastVersion + 4}`)).status, 404);
    a.close();
    const n = makeClient(pg.port, { tenant: 'new-tenant' });
    r = await n.post({ command: 'create', path: '/memories/first.txt', file_text: 'new' });
    assert.equal(r.status, 200, r.text);
    const first = (await n.get('/v1/changes?after=0')).json;
    assert.deepEqual([first.changes.map(({ seq, version, versions }) => [seq, version, versions]), first.last_seq], [[[1, 1, 1]], 1]);
    n.close();
  } finally {
    await pg.stop();
  }
  assert.deepEqual(pgInconsistencies(uri), []);
  assert.deepEqual(pgTenants(uri), ['Gamma_3-x', 'alpha', 'beta.2', 'big', 'bulk', 'new-tenant', LONG_TENANT]);
  assert.equal(psql(uri, "SELECT last_version || ' ' || last_seq FROM tenants WHERE name = 'alpha'"), `${lastVersion + 3} ${lastSeq + 4}\n`);
});

test('a target that already has one of the tenants: refused, naming it; nothing written', async () => {
  assert.ok(source, 'the copy test ran first');
  const target = await createDatabase();
  const md = await startServer({ db: target });
  try {
    const c = makeClient(md.port, { tenant: 'beta.2' });
    const r = await c.post({ command: 'create', path: '/memories/mine.txt', file_text: 'already here' });
    assert.equal(r.status, 200, r.text);
    c.close();
  } finally {
    await md.stop();
  }
  const before = pgRows(target);
  const m = await runMemoryd(['migrate', '--from', sqlitePath, '--to', target]);
  assert.deepEqual([m.code, m.stdout, m.stderr], [1, '',
    'memoryd migrate: tenant beta.2 already exists in the target\n'
    + 'memoryd migrate: refusing to copy over existing tenants (nothing was written)\n']);
  assert.deepEqual(pgRows(target), before);
  assert.deepEqual(pgTenants(target), ['beta.2']);

  // Into the database already migrated: every tenant of the source is there (the first five
  // are named), still nothing written.
  const rowsBefore = pgRows(uri);
  const again = await runMemoryd(['migrate', '--from', sqlitePath, '--to', uri]);
  assert.deepEqual([again.code, again.stdout, again.stderr], [1, '',
    ['Gamma_3-x', 'alpha', 'beta.2', 'big', 'bulk'].map((t) => `memoryd migrate: tenant ${t} already exists in the target\n`).join('')
    + 'memoryd migrate: refusing to copy over existing tenants (nothing was written)\n']);
  assert.deepEqual(pgRows(uri), rowsBefore);
  // The SQLite file was only read.
  assert.deepEqual(sqliteRows(sqlitePath), source.rows);
});

test('a missing SQLite file, a file that is not memoryd\'s, an unreachable target: a clear error, exit 1, the target untouched', async () => {
  const target = await createDatabase();
  const missing = path.join(dir, 'no-such.db');
  let m = await runMemoryd(['migrate', '--from', missing, '--to', target]);
  assert.deepEqual([m.code, m.stdout, m.stderr], [1, '', `memoryd migrate: ${missing}: No such file or directory\n`]);
  assert.equal(fs.existsSync(missing), false, 'the missing file was not created');

  const notDb = path.join(dir, 'notes.txt');
  fs.writeFileSync(notDb, 'just some text, not a database\n'.repeat(100));
  m = await runMemoryd(['migrate', '--from', notDb, '--to', target]);
  assert.deepEqual([m.code, m.stdout, m.stderr], [1, '', `memoryd migrate: ${notDb} is not a SQLite database: file is not a database\n`]);
  assert.deepEqual(pgTables(target), [], 'nothing was created in the target');

  const nowhere = `postgresql:///memoryd?host=${encodeURIComponent(path.join(dir, 'no-socket-here'))}`;
  m = await runMemoryd(['migrate', '--from', sqlitePath, '--to', nowhere]);
  assert.equal(m.code, 1);
  assert.equal(m.stdout, '');
  assert.match(m.stderr, /^memoryd migrate: cannot connect to PostgreSQL: connection to server on socket "[^"]*no-socket-here\/\.s\.PGSQL\.5432" failed: No such file or directory\n/);
});

test('bad arguments: the usage on stderr, exit 2; --help: the usage on stdout, exit 0', async () => {
  const help = await runMemoryd(['migrate', '--help']);
  assert.equal(help.code, 0);
  assert.equal(help.stderr, '');
  assert.match(help.stdout, /^Usage: memoryd migrate --from SQLITE_PATH --to URI\n\nCopy every tenant of memoryd's SQLite database at SQLITE_PATH into the PostgreSQL\n/);
  const usage = help.stdout;
  const target = await createDatabase();
  const cases = [
    [[], 'both --from and --to are needed'],
    [['--from', sqlitePath], 'both --from and --to are needed'],
    [['--to', target], 'both --from and --to are needed'],
    [['--from=', `--to=${target}`], 'both --from and --to are needed'],
    [['--from', sqlitePath, '--to'], 'unknown or incomplete argument: --to'],
    [['--from', sqlitePath, '--to', target, '--force'], 'unknown or incomplete argument: --force'],
    [['--fromage', sqlitePath, '--to', target], 'unknown or incomplete argument: --fromage'],
    [[sqlitePath, target], `unknown or incomplete argument: ${sqlitePath}`],
    [['--from', target, '--to', sqlitePath], '--from is a SQLite file and --to a PostgreSQL URI (postgresql://... or postgres://...)'],
    [['--from', sqlitePath, '--to', path.join(dir, 'other.db')], '--from is a SQLite file and --to a PostgreSQL URI (postgresql://... or postgres://...)'],
  ];
  for (const [args, message] of cases) {
    const r = await runMemoryd(['migrate', ...args]);
    assert.deepEqual([r.code, r.stdout, r.stderr], [2, '', `memoryd migrate: ${message}\n\n${usage}`], JSON.stringify(args));
  }
  assert.deepEqual(pgTables(target), [], 'nothing was created in the target');
  assert.equal(fs.existsSync(path.join(dir, 'other.db')), false);
});
