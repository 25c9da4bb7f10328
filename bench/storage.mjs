// What history keeps on disk (issue 26, points 1, 3 and 5): 300 files of 10.5 KiB of ordinary
// prose (this repository's docs, cut into notes), each then edited 20 times by a one-line
// str_replace, written through memoryd on SQLite (durability full) — once with the defaults
// (history, search, the change feed) and once bare (--history-versions 0 --search off). Printed
// for each: the live content, the database file and its -wal after the run (memoryd running,
// after its checkpoints) and after memoryd stopped, each table's and index's bytes (SQLite's
// dbstat), the history each one-line edit added (the versions table and its index, per
// edit), and what the files are once every file is cleared (DELETE /v1/memories) and writes
// pause: the pages freed given back or not (point 3). Targets (issue 26, point 4): database plus -wal at most 2x the live content with the
// defaults, at most 512 bytes of history per one-line edit.
//
//   node bench/storage.mjs [--build DIR] [--memoryd BIN] [--files N] [--edits N] [--json FILE]
//                          [--postgres]
// (--postgres: the defaults on PostgreSQL instead, a cluster of the benchmark's own: each
// table's bytes, the history per edit and the word index per MiB of text.)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createDb, startCluster } from './cluster.mjs';
import { BENCH_QUOTA, ROOT, freePort, poster, runAll, startProcess, tempDir } from './lib.mjs';

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : def;
};
const BUILD = path.resolve(ROOT, opt('build', 'build'));
const MEMORYD = path.resolve(ROOT, opt('memoryd', path.join(BUILD, 'memoryd')));
const FILES = Number(opt('files', 300));
const EDITS = Number(opt('edits', 20));
const SIZE = 10752; // 10.5 KiB
const JSON_OUT = opt('json', null);

// Prose: the lines of docs/*.md and README.md, in order, cycled to fill the files.
const prose = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]
  .flatMap((f) => fs.readFileSync(path.join(ROOT, f), 'utf8').split('\n'))
  .filter((l) => l.trim().length > 20);
let at = 0;
function note(i) {
  const lines = [`# note ${i}`];
  let n = lines[0].length + 1;
  while (n < SIZE) {
    const l = `${prose[at++ % prose.length]} [${i}.${lines.length}]`;
    lines.push(l);
    n += l.length + 1;
  }
  return lines.join('\n'); // about SIZE: whole lines, each with its tag
}

const size = (f) => (fs.existsSync(f) ? fs.statSync(f).size : 0);
const sqlite = (db, sql) => execFileSync('sqlite3', ['-readonly', db, sql], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

// The notes written and edited through memoryd on `port`: what was sent and what is live.
async function writeNotes(port, name) {
  const p = poster(port, { tenant: 'notes', sockets: 16 });
  const texts = Array.from({ length: FILES }, (_, i) => note(i));
  const check = (r) => { if (r.status !== 200 || r.json?.is_error) throw new Error(`${name}: ${r.text}`); };
  await runAll(p, texts.map((t, i) => ({ command: 'create', path: `/memories/notes/n${i}.md`, file_text: t })), 16);
  const live0 = texts.reduce((s, t) => s + Buffer.byteLength(t), 0);
  const cmds = [];
  const cur = texts.map((t) => t.split('\n'));
  for (let e = 1; e <= EDITS; e++) {
    for (let i = 0; i < FILES; i++) {
      const k = 1 + ((e * 7 + i) % (cur[i].length - 1));
      const old = cur[i][k];
      const neu = `edited ${e} times, line [${i}.${k}]: ${texts[i].split('\n')[k].slice(0, 50)}`;
      cur[i][k] = neu;
      cmds.push({ command: 'str_replace', path: `/memories/notes/n${i}.md`, old_str: old, new_str: neu });
    }
  }
  // One file's edits in order: 16 files at a time, each file's edits one after another.
  const byFile = Array.from({ length: FILES }, (_, i) => cmds.filter((c) => c.path === `/memories/notes/n${i}.md`));
  let next = 0;
  const t0 = Date.now();
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < FILES) {
      const mine = byFile[next++];
      for (const c of mine) check(await p.post(c));
    }
  }));
  const editMs = Date.now() - t0;
  const live = cur.reduce((s, l) => s + Buffer.byteLength(l.join('\n')), 0);
  return { p, texts, cmds, live0, live, editMs };
}

async function run(name, args) {
  const dir = tempDir('memoryd-storage-');
  const db = path.join(dir, 'memoryd.db');
  const port = await freePort();
  const md = await startProcess(`storage-${name.replace(/\W+/g, '-')}`, MEMORYD,
    ['--port', String(port), '--db', db, '--durability', 'full', ...BENCH_QUOTA, ...args], port);
  const { p, texts, cmds, live0, live, editMs } = await writeNotes(port, name);
  await new Promise((r) => setTimeout(r, 1500)); // the checkpointer's turn
  const running = { db: size(db), wal: size(`${db}-wal`) };
  // The tables as the edits left them (read beside the running memoryd).
  const tables = Object.fromEntries(sqlite(db, 'SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC')
    .split('\n').filter(Boolean).map((l) => l.split('|')).map(([n, b]) => [n, Number(b)]));
  const versionsBytes = (tables.versions ?? 0) + (tables.versions_path ?? 0);
  const [nVersions, contentBytes] = sqlite(db, 'SELECT count(*), coalesce(sum(length(content)), 0) FROM versions').split('|').map(Number);
  // (a memoryd before deltas has no `enc`: --memoryd of an older build, for the before/after)
  let deltas = 0;
  try { deltas = Number(sqlite(db, 'SELECT coalesce(sum(enc = 1), 0) FROM versions')); } catch { /* none */ }
  // Pages on the freelist (kept for the next writes, or not yet given back).
  const freePages = Number(sqlite(db, 'PRAGMA freelist_count'));
  const pageSize = Number(sqlite(db, 'PRAGMA page_size'));
  const index = Object.entries(tables).filter(([n]) => n.startsWith('entries_search')).reduce((s, [, b]) => s + b, 0);
  // Every file cleared (DELETE /v1/memories): what the file gives back once writes pause.
  const cleared = await fetch(`http://127.0.0.1:${port}/v1/memories`, { method: 'DELETE', headers: { 'x-tenant-id': 'notes' } });
  if (cleared.status !== 200) throw new Error(`${name}: clear ${cleared.status}`);
  await new Promise((r) => setTimeout(r, 2000));
  const afterClear = { db: size(db), wal: size(`${db}-wal`) };
  p.close();
  await md.stop();
  const stopped = { db: size(db), wal: size(`${db}-wal`) };
  fs.rmSync(dir, { recursive: true, force: true });
  return { name, args, texts, cmds, live0, live, running, afterClear, stopped, tables, freeBytes: freePages * pageSize, versionsBytes, nVersions, contentBytes, deltas, index, edits: FILES * EDITS, editMs };
}

const mib = (b) => `${(b / 1048576).toFixed(2)} MiB`;

// The floor of point 4: a program that stores only what the feature must keep, with SQLite (no
// memoryd): the files' text (path, content), each edit's reverse delta (a splice: head and tail
// as two varints, then the replaced bytes, as md_delta.h) keyed by file and edit, and a
// contentless FTS5 index of the files' words. No sizes, hashes, times, change feed, -wal.
function varint(n) {
  const out = [];
  do { let b = n & 0x7f; n = Math.floor(n / 128); if (n) b |= 0x80; out.push(b); } while (n);
  return Buffer.from(out);
}
function splice(oldText, newText) {
  const a = Buffer.from(oldText), b = Buffer.from(newText);
  const n = Math.min(a.length, b.length);
  let head = 0;
  while (head < n && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < n - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  return Buffer.concat([varint(head), varint(tail), a.subarray(head, a.length - tail)]);
}
function floor(r) {
  const dir = tempDir('memoryd-storage-floor-');
  const db = path.join(dir, 'floor.db');
  const cur = [...r.texts];
  const lines = ['PRAGMA page_size=4096;', 'BEGIN;',
    'CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT NOT NULL, content BLOB NOT NULL);',
    'CREATE TABLE deltas (file INTEGER NOT NULL, edit INTEGER NOT NULL, delta BLOB NOT NULL, PRIMARY KEY (file, edit)) WITHOUT ROWID;',
    "CREATE VIRTUAL TABLE words USING fts5(content, content='', detail=none);"];
  let deltaBytes = 0;
  const edits = new Array(cur.length).fill(0);
  for (const c of r.cmds) {
    const i = Number(c.path.match(/n(\d+)\.md$/)[1]);
    const next = cur[i].replace(c.old_str, c.new_str);
    const d = splice(cur[i], next);
    deltaBytes += d.length;
    lines.push(`INSERT INTO deltas VALUES (${i}, ${++edits[i]}, X'${d.toString('hex')}');`);
    cur[i] = next;
  }
  cur.forEach((t, i) => {
    const hex = Buffer.from(t).toString('hex');
    lines.push(`INSERT INTO files VALUES (${i}, '/memories/notes/n${i}.md', X'${hex}');`);
    lines.push(`INSERT INTO words (rowid, content) VALUES (${i}, CAST(X'${hex}' AS TEXT));`);
  });
  lines.push('COMMIT;');
  const sqlFile = path.join(dir, 'floor.sql');
  fs.writeFileSync(sqlFile, lines.join('\n'));
  execFileSync('sh', ['-c', `sqlite3 ${db} < ${sqlFile}`]);
  const out = { bytes: size(db), deltaBytes, edits: r.cmds.length };
  fs.rmSync(dir, { recursive: true, force: true });
  return out;
}
// --postgres: the defaults on a PostgreSQL cluster of the benchmark's own (bench/cluster.mjs),
// once the word index has taken every note: each table's bytes with its indexes and TOAST
// (pg_total_relation_size), the history per edit, and the word index per MiB of text.
if (argv.includes('--postgres')) {
  const cluster = startCluster(path.join(tempDir('memoryd-storage-pg-'), 'cluster'));
  try {
    const uri = cluster.uri(createDb(cluster, 'memoryd_storage'));
    const port = await freePort();
    const md = await startProcess('storage-pg', MEMORYD, ['--port', String(port), '--db', uri, ...BENCH_QUOTA], port);
    const w = await writeNotes(port, 'postgres');
    w.p.close();
    const q = (sql) => execFileSync('psql', ['-X', '-A', '-t', '-d', uri, '-c', sql], { encoding: 'utf8' }).trim();
    // (a memoryd before issue 26 has no search_pending: its index, entries_search, is on entries)
    const apart = q("SELECT to_regclass('search_pending') IS NOT NULL") === 't';
    while (apart && q('SELECT count(*) FROM search_pending') !== '0') await new Promise((r) => setTimeout(r, 100));
    q('VACUUM ANALYZE');
    const index = apart ? Number(q("SELECT pg_total_relation_size('search_words')")) : Number(q("SELECT pg_relation_size('entries_search')"));
    const tables = Object.fromEntries(q("SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace ORDER BY 2 DESC")
      .split('\n').map((l) => l.split('|')).map(([n, b]) => [n, Number(b)]));
    await md.stop();
    const live = w.live;
    const edits = FILES * EDITS;
    console.log(`memoryd storage benchmark, PostgreSQL — ${new Date().toISOString()}`);
    console.log(`${FILES} files of ${SIZE} bytes of prose, each edited ${EDITS} times by a one-line str_replace (${edits} edits), the defaults`);
    console.log('');
    console.log('| live content | entries | versions | history per edit | changes | word index | per MiB of text |');
    console.log('|---|---|---|---|---|---|---|');
    console.log(`| ${mib(live)} | ${mib(tables.entries)} | ${mib(tables.versions)} | ${Math.round(tables.versions / edits)} B | ${mib(tables.changes)} | ${mib(index)} | ${(index / live).toFixed(2)} MiB |`);
    console.log('');
    console.log(`tables with their indexes and TOAST (bytes): ${Object.entries(tables).map(([n, b]) => `${n} ${b}`).join(', ')}`);
    console.log(`(the word index: search_words with its GIN index${apart ? '' : '; before issue 26, the GIN index entries_search on entries'})`);
    if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify({ live, edits, tables, index }, null, 2));
  } finally {
    cluster.stop();
  }
  process.exit(0);
}

const results = [];
for (const [name, args] of [['defaults', []], ['bare (--history-versions 0 --search off)', ['--history-versions', '0', '--search', 'off']]]) {
  results.push(await run(name, args));
}

console.log(`memoryd storage benchmark — ${new Date().toISOString()}`);
console.log(`${FILES} files of ${SIZE} bytes of prose, each edited ${EDITS} times by a one-line str_replace (${FILES * EDITS} edits), SQLite, durability full`);
console.log('');
console.log('| | live content | database | -wal (running) | -wal (stopped) | db + -wal / live | versions (table + index) | history per edit | search index | edits/s | db + -wal after clearing every file |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of results) {
  const ratio = (r.running.db + r.running.wal) / r.live;
  const perEdit = r.nVersions > FILES ? r.versionsBytes / r.edits : 0;
  console.log(`| ${r.name} | ${mib(r.live)} | ${mib(r.running.db)} | ${mib(r.running.wal)} | ${mib(r.stopped.wal)} | ${ratio.toFixed(2)}x | ${mib(r.versionsBytes)} (${r.nVersions} versions, ${r.deltas} deltas, ${mib(r.contentBytes)} of content) | ${Math.round(perEdit)} B | ${mib(r.index)} (${(r.index / r.live).toFixed(2)} MiB per MiB of text) | ${Math.round(r.edits / (r.editMs / 1000))} | ${mib(r.afterClear.db + r.afterClear.wal)} |`);
}
console.log('');
console.log('tables and indexes (dbstat, bytes):');
for (const r of results) console.log(`  ${r.name}: ${Object.entries(r.tables).map(([n, b]) => `${n} ${b}`).join(', ')}; free pages ${r.freeBytes}`);
const d = results[0];
const ratio = (d.running.db + d.running.wal) / d.live;
console.log('');
console.log(`targets (defaults): db + -wal ${ratio.toFixed(2)}x of the live content (target <= 2x); history per one-line edit ${Math.round(d.versionsBytes / d.edits)} B (target <= 512 B)`);
const f = floor(d);
console.log(`floor (the text, each edit's splice, a contentless word index; no memoryd): ${mib(f.bytes)}, ${(f.bytes / d.live).toFixed(2)}x of the live content, ${Math.round(f.deltaBytes / f.edits)} B of delta per edit; memoryd with the defaults at ${(f.bytes / (d.running.db + d.running.wal)).toFixed(2)}x of it (floor / memoryd; target >= 0.9x where 2x is out of reach)`);
if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify(results, null, 2));
