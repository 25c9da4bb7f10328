// A database whose versions were stored whole (as every version was before deltas, and as
// sql/sqlite/010_version_deltas.sql and sql/postgres/009_version_deltas.sql leave them; on
// SQLite and, as pg/integration/history-convert, PostgreSQL) is converted when memoryd opens it: the
// versions become deltas against their successors, a path at a time, with the progress logged
// ("progress" lines of work "version deltas", then "versions turned into deltas" with the
// counts), and every version reads back byte for byte before and after, through GET
// /v1/versions. A memoryd started without history (--history-versions 0) keeps every version
// whole instead ("versions kept whole"): on a copy of the database (history off prunes the
// versions too, a second or so after the start), each version still there is compared byte for
// byte in the database. The whole copies are then written here from the texts read before, as
// memoryd without history writes them, and the conversion's work is put back as the migration
// leaves it (SQLite: version_deltas, its place; PostgreSQL: versions_unconverted, the paths,
// and every file's run of deltas counted as the longest). On SQLite the database is also made
// as one from before auto_vacuum=INCREMENTAL (auto_vacuum NONE): after the conversion memoryd
// switches it once (a VACUUM, logged), and every file and version reads back exactly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { dbSql, dbSqlFile, isPgUri } from '../lib/db.mjs';
import { isPg } from '../lib/pg.mjs';
import { startServer } from '../lib/server.mjs';

// A column's bytes as hex digits, in either engine's SQL; a text's bytes as a literal.
const hex = (col) => (isPg() ? `encode(${col}, 'hex')` : `lower(hex(${col}))`);
const blob = (text) => (isPg() ? `'\\x${Buffer.from(text).toString('hex')}'::bytea` : `X'${Buffer.from(text).toString('hex')}'`);

// A copy of a stopped memoryd's database (SQLite: its file, checkpointed at the stop;
// PostgreSQL: a database made from it as a template), and its removal.
function copyDb(db) {
  if (!isPgUri(db)) {
    const to = path.join(path.dirname(db), 'copy.db');
    for (const suffix of ['', '-wal']) if (fs.existsSync(db + suffix)) fs.copyFileSync(db + suffix, to + suffix);
    return to;
  }
  const name = `${new URL(db).pathname.slice(1)}_copy`;
  dbSql(db.replace(/^(postgresql:\/\/\/)[^?]*/, '$1postgres'), `CREATE DATABASE ${name} TEMPLATE ${new URL(db).pathname.slice(1)}`);
  return db.replace(/^(postgresql:\/\/\/)[^?]*/, `$1${name}`);
}
function dropDb(db) {
  if (!isPgUri(db)) {
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(db + suffix, { force: true });
    return;
  }
  dbSql(db.replace(/^(postgresql:\/\/\/)[^?]*/, '$1postgres'), `DROP DATABASE ${new URL(db).pathname.slice(1)}`);
}

async function allVersions(s, tenant, n) {
  const out = [];
  for (let v = 1; v <= n; v++) {
    const r = await s.request('GET', `/v1/versions/${v}`, { headers: { 'x-tenant-id': tenant } });
    out.push([r.status, r.text]);
  }
  return out;
}

test('whole versions turned into deltas at open, with progress; history off keeps them whole', async () => {
  const KEEP = ['--history-versions', '100'];
  let s = await startServer({ args: KEEP });
  const db = s.dbPath;
  const T = 'conv';
  const post = async (cmd) => assert.equal((await s.post(cmd, { tenant: T })).json.is_error, false);
  const big = Array.from({ length: 300 }, (_, i) => `line ${i} of a long note`).join('\n');
  for (let f = 0; f < 5; f++) {
    const p = `/memories/n${f}.md`;
    await post({ command: 'create', path: p, file_text: big });
    for (let e = 0; e < 40; e++) await post({ command: 'str_replace', path: p, old_str: `line ${e} of`, new_str: `LINE ${e} of` });
  }
  await post({ command: 'delete', path: '/memories/n4.md' });
  const n = Number(dbSql(db, 'SELECT count(*) FROM versions').trim());
  assert.equal(n, 5 * 41 + 1);
  const before = await allVersions(s, T, n);
  await s.stop();

  // Without history: every delta kept whole at open. On a copy of the database: history off
  // also prunes the versions kept (about a second after the start), so the copy's are read
  // from the database once memoryd stopped, each one still there compared byte for byte.
  const copy = copyDb(db);
  s = await startServer({ db: copy, args: ['--history-versions', '0'] });
  const whole = s.logs.find((l) => l.msg === 'versions kept whole (history is off)');
  await s.stop();
  assert.ok(whole && whole.versions > 150, JSON.stringify(whole));
  const copied = dbSql(copy, `SELECT version, enc, ${hex('content')} FROM versions ORDER BY version`).trim().split('\n').filter(Boolean);
  for (const row of copied) {
    const [v, enc, text] = row.split('|');
    const was = JSON.parse(before[Number(v) - 1][1]);
    assert.deepEqual([v, enc, text], [v, '0', was.content === null ? '' : Buffer.from(was.content).toString('hex')]);
  }
  dropDb(copy);

  // As the migration leaves a database: every version whole (written here from the texts read
  // above, as memoryd without history writes them), the conversion's work set.
  const sets = before.map(([, text]) => JSON.parse(text)).filter((v) => v.content !== null)
    .map((v) => `UPDATE versions SET enc = 0, content = ${blob(v.content)}${isPgUri(db) ? '' : ', run = 0'} WHERE version = ${v.version};`);
  const setsFile = path.join(s.dir, 'whole.sql');
  fs.writeFileSync(setsFile, `BEGIN; ${sets.join('\n')}\nCOMMIT;\n`);
  dbSqlFile(db, setsFile);
  assert.equal(dbSql(db, 'SELECT count(*) FROM versions WHERE enc = 1').trim(), '0');
  if (isPgUri(db)) {
    dbSql(db, 'INSERT INTO versions_unconverted SELECT DISTINCT tenant, path FROM versions WHERE existed AND NOT redacted');
    dbSql(db, 'UPDATE entries SET vrun = 31');
  } else {
    // As a database made before auto_vacuum=INCREMENTAL: its free pages are never given back.
    dbSql(db, 'PRAGMA auto_vacuum = NONE; VACUUM;');
    assert.equal(dbSql(db, 'PRAGMA auto_vacuum').trim(), '0');
    dbSql(db, "INSERT INTO version_deltas (tenant, path) VALUES (-1, '')");
  }
  const FILES = "SELECT path, hex(content) FROM entries WHERE kind = 0 ORDER BY path";
  const files = isPgUri(db) ? null : dbSql(db, FILES);
  const wholeBytes = Number(dbSql(db, 'SELECT sum(length(content)) FROM versions').trim());
  s = await startServer({ db, args: KEEP, env: { MEMORYD_PROGRESS_MS: '1' } });
  const done = s.logs.find((l) => l.msg === 'versions turned into deltas');
  assert.ok(done, s.rawStderr.join('\n'));
  const SWITCHED = 'database switched to auto_vacuum=INCREMENTAL: free pages are given back when writes pause';
  if (!isPgUri(db)) {
    // Switched once, after the conversion; every file as it was.
    const at = s.logs.findIndex((l) => l.msg === SWITCHED);
    assert.ok(at > s.logs.indexOf(done), s.rawStderr.join('\n'));
    assert.equal(s.logs[at].auto_vacuum, 2);
    assert.equal(dbSql(db, 'PRAGMA auto_vacuum').trim(), '2');
    assert.equal(dbSql(db, FILES), files);
  }
  assert.equal(done.paths, 5);
  assert.ok(s.logs.some((l) => l.msg === 'progress' && l.work === 'version deltas'), 'no progress shown');
  const [deltas, kept, left] = dbSql(db, 'SELECT sum(CASE WHEN enc = 1 THEN 1 ELSE 0 END), ' +
    'sum(CASE WHEN enc = 0 AND content IS NOT NULL THEN 1 ELSE 0 END), ' +
    `(SELECT count(*) FROM ${isPgUri(db) ? 'versions_unconverted' : 'version_deltas'}) FROM versions`).trim().split('|').map(Number);
  assert.equal(deltas, done.versions);
  assert.ok(deltas > 150 && kept >= 5, `${deltas} deltas, ${kept} whole`);
  assert.equal(left, 0);
  const deltaBytes = Number(dbSql(db, 'SELECT sum(length(content)) FROM versions').trim());
  assert.ok(deltaBytes * 10 < wholeBytes, `${deltaBytes} bytes of deltas against ${wholeBytes} whole`);
  assert.deepEqual(await allVersions(s, T, n), before);
  // Written on after: the newest version's run goes on from where the conversion left it.
  await post({ command: 'str_replace', path: '/memories/n0.md', old_str: 'line 299 of', new_str: 'LINE 299 of' });
  const r = await s.request('GET', `/v1/versions/${n + 1}`, { headers: { 'x-tenant-id': T } });
  assert.equal(JSON.parse(r.text).content.split('\n')[299], 'line 299 of a long note');
  await s.stop();
  if (!isPgUri(db)) {
    // Opened again: nothing left to switch.
    s = await startServer({ db, args: KEEP });
    await s.waitForLogs((l) => l.some((x) => x.msg === 'listening'), 'listening');
    assert.ok(!s.logs.some((l) => l.msg === SWITCHED));
    assert.deepEqual(await allVersions(s, T, n), before);
    await s.stop();
  }
  fs.rmSync(s.dir, { recursive: true, force: true });
});
