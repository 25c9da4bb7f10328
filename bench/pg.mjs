// memoryd's benchmark on PostgreSQL (bench/run.sh --postgres): one run on a PostgreSQL 15 cluster
// of its own, memoryd and PostgreSQL's own pgbench on the same server, in turn, so that the ratios
// hold on a noisy machine.
//   - the cluster: initdb into a temp directory, a Unix socket only, fsync and synchronous_commit
//     on, shared_buffers 256MB, max_connections 200 (runs as the postgres user when we are root);
//   - pgbench references (-M prepared), on a table of memoryd's own schema
//     (sql/postgres/001_schema.sql) in a database of their own: (a) a one-row INSERT of a 1 KiB
//     file row, each its own transaction (autocommit), at 1 and 64 clients; (b) 100 such INSERTs
//     per transaction, one client; (c) a primary-key SELECT of one 1 KiB row, at 16 and 64
//     clients; (d) what PostgreSQL alone does, from one client, with the very statements and
//     round trips memoryd's writer sends for a batch of creates (of the size memoryd's batches
//     had at 64 connections): memoryd's writer is one connection;
//   - memoryd (--db postgresql:///...?host=SOCKET): durable creates of 1 KiB files at 1, 16 and
//     64 connections, str_replace at 64, views of a 1 KiB file at 16 and 64 and of a 100-entry
//     directory at 64 (wrk and bench/lua, as bench/run.mjs on SQLite), each beside its pgbench
//     reference; the write batches from memoryd's debug log; for the view at 64, the ceiling
//     (bench/ceiling.c) too;
//   - where the CPU goes, per request: memoryd (or the ceiling), PostgreSQL (every backend) and
//     the load generator (wrk or pgbench), from /proc; and the bound of a view on these cores (a
//     request that cost the ceiling's fixed reply plus pgbench's PK SELECT);
//   - round trips and statements per command, from memoryd's request log lines (`round_trips`,
//     `sql`) and its `write batch` lines: view of a file and of a directory, create, str_replace,
//     insert, delete of a file, rename and delete of a directory of 10 and of 10,000 files. These
//     are asserted: the run fails (exit 1) when one exceeds its target;
//   - the scale figures: a 100-file tenant against a 100,000-file tenant (among 10,000 others),
//     written straight into PostgreSQL with SQL, as bench/scale.mjs does on SQLite;
//   - what history costs: bench/history.mjs on two databases of the cluster (history on, off);
//     then, in the reference database, the storage bound of history on PostgreSQL (as the floor
//     history.mjs measures on SQLite): pgbench from one client replaying memoryd's writer
//     statements for a batch of str_replace on existing 1 KiB files, and of creates, each of
//     memoryd's mean batch at 64 connections, in its 3 round trips, with history on and off
//     (off: the entries, the change feed, the counters, the notification, the sizes; on: plus
//     the versions, a str_replace's with the old content as a parameter); bound = on / off. Where
//     the bound is under history.mjs's 0.85 target, memoryd's on / off meets it at >= 0.9x of
//     the bound (the rule history.mjs applies to SQLite's floor). For str_replace the bound that
//     decides is the floor in C (bench/pg_history_floor.c): the same statements sent as memoryd
//     sends them (binary array parameters, libpq's pipeline), with retention beside them as
//     memoryd's, in a database of its own; pgbench's replay is printed too, but it is slower than
//     memoryd itself with history off (its arrays are SQL expressions, its contents text), so it
//     bounds pgbench more than PostgreSQL.
// Prints the tables and the targets with PASS/FAIL.
//
//   node bench/pg.mjs [--seconds N] [--repeat N] [--quick] [--build DIR] [--memoryd BIN] [--json FILE]
//                     [--no-scale] [--no-history] [--stats] [--only ID,...]
// --repeat: runs of each timed figure (default 3; 1 with --quick), memoryd and its reference in
// turn; the median counts. --quick (the ctest smoke, bench/smoke.sh): 1 s per run, only the rows
// with targets and str_replace, a 10,000-file big tenant; the round-trip targets are asserted all
// the same. --stats: load pg_stat_statements and print what memoryd's statements cost in the
// server. --only: these workloads only (create, str_replace, view_file, view_dir).
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BENCH_QUOTA, ROOT, busyShare, cpuTicks, freePort, kibWith, medianRun, poster, runAll, startProcess, tempDir, wrk } from './lib.mjs';
import { createDb, psql, startCluster as startClusterOf } from './cluster.mjs';
import { renameBack } from './scale.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const QUICK = argv.includes('--quick');
const ONLY = opt('--only', null)?.split(','); // workload ids (create, str_replace, view_file, view_dir)
const STATS = argv.includes('--stats');
const SECONDS = Number(opt('--seconds', QUICK ? 1 : 5));
const BUILD = path.resolve(ROOT, opt('--build', 'build'));
const MEMORYD = path.resolve(ROOT, opt('--memoryd', path.join(BUILD, 'memoryd')));
const JSON_OUT = opt('--json', null);
const REPEAT = Number(opt('--repeat', QUICK ? 1 : 3));
const K = 256; // files per wrk thread in the str_replace set

const fmt = (n) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1));
const us = (n) => (n >= 1000 ? `${(n / 1000).toFixed(n >= 10000 ? 0 : 1)} ms` : `${Math.round(n)} µs`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// 1 KiB of file text, as bench/lua/common.lua's kib_text(): 16 lines of 63 letters and a newline.
const KIB = `${'abcdefghi'.repeat(7)}\n`.repeat(16);
const KIB_HEX = `'\\x${Buffer.from(KIB).toString('hex')}'::bytea`;
const KIB_SHA = `'\\x${crypto.createHash('sha256').update(KIB).digest('hex')}'::bytea`;

// ---- the cluster ----

// ---- pgbench ----

// Run a pgbench script; returns transactions per second (initial connections excluded), the
// average latency, and the machine's busy CPU share during the run.
// `defines`: pgbench variables (-D name=value), as strings.
function pgbench(cluster, db, script, { clients, seconds = SECONDS, defines = {} }) {
  const c0 = cpuTicks();
  // The smoke (--quick) runs a fixed number of transactions per client, not for a time: under a
  // loaded machine (ctest -j2 beside valgrind), 64 clients could take longer than its 1 s to
  // connect, and a timed run then ends with no transaction at all (seen once).
  const extent = QUICK ? ['-t', String(Math.max(5, Math.ceil(200 / clients)))] : ['-T', String(seconds)];
  const out = execFileSync(path.join(cluster.bin, 'pgbench'), ['-n', '-M', 'prepared', '-f', script,
    '-c', String(clients), '-j', String(Math.min(clients, 2)), ...extent,
    ...Object.entries(defines).flatMap(([k, v]) => ['-D', `${k}=${v}`]),
    '-h', cluster.host, '-p', String(cluster.port), '-U', cluster.user, db],
  { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 24 });
  const num = (re) => Number(re.exec(out)?.[1] ?? NaN);
  const tps = num(/^tps = ([\d.]+) \(without initial connection time\)/m);
  const failed = num(/^number of failed transactions: (\d+)/m) || 0;
  if (!(tps > 0)) throw new Error(`pgbench ${path.basename(script)}: no tps in\n${out}`);
  return { rps: tps, requests: num(/^number of transactions actually processed: (\d+)/m), latency_ms: num(/^latency average = ([\d.]+) ms/m),
    failed, cpu_busy: busyShare(c0) };
}

const PIPELINE_N = 8; // SELECTs per pipeline of reference (c')

// The pgbench scripts of the references, on a table of memoryd's schema: tenant 1 receives the
// inserts, tenant 2 holds the 10,000 rows the SELECT reads.
function referenceScripts(dir) {
  const insert = (suffix) => `INSERT INTO entries (tenant, path, depth, kind, size, mtime, content, sha256) ` +
    `VALUES (1, '/memories/bench/ref/t' || :n${suffix} || '.txt', 3, 0, 1024, 0, ${KIB_HEX}, ${KIB_SHA});\n`;
  const scripts = {
    insert: `\\set n random(1, 9000000000000000000)\n${insert('')}`,
    insert100: `\\set n random(1, 9000000000000000000)\nBEGIN;\n${Array.from({ length: 100 }, (_, i) => insert(` || '-${i}'`)).join('')}COMMIT;\n`,
    select: "\\set n random(0, 9999)\nSELECT path, kind, size, content FROM entries WHERE tenant = 2 AND path = '/memories/bench/r/f' || :n || '.txt';\n",
    // (c') the same SELECT, PIPELINE_N to a pipeline (one write and one Sync for them, as memoryd
    // sends its views): what a SELECT costs the server when it need not wake once per query.
    selectPipelined: `\\set n random(0, 9999)\n\\startpipeline\n${"SELECT path, kind, size, content FROM entries WHERE tenant = 2 AND path = '/memories/bench/r/f' || :n || '.txt';\n".repeat(PIPELINE_N)}\\endpipeline\n`,
  };
  return Object.fromEntries(Object.entries(scripts).map(([k, text]) => {
    const file = path.join(dir, `${k}.sql`);
    fs.writeFileSync(file, text);
    return [k, file];
  }));
}

function setupReference(cluster, db) {
  const dir = path.join(ROOT, 'sql/postgres');
  for (const f of fs.readdirSync(dir).filter((x) => /^\d+_.*\.sql$/.test(x)).sort()) psql(cluster, db, fs.readFileSync(path.join(dir, f), 'utf8'));
  psql(cluster, db, `INSERT INTO entries (tenant, path, depth, kind, size, mtime, content, sha256)
    SELECT 2, '/memories/bench/r/f' || i || '.txt', 3, 0, 1024, 0, ${KIB_HEX}, ${KIB_SHA} FROM generate_series(0, 9999) i;
    VACUUM ANALYZE entries;`);
}

// ---- the writer's bounds: memoryd's statements, replayed by pgbench ----

// memoryd's writer statements for an optimistic batch (the statement tables of src/store/pg/, word
// for word), their parameters ($1, $2, ...) given as SQL expressions (pgbench has no array
// variables). The tenant's advisory lock (P_LOCK) is a constant key.
const sqlArr = (items, type) => `ARRAY[${items.join(', ')}]::${type}[]`;
const rep = (x, k) => Array.from({ length: k }, () => x);
const PG_SQL = {
  lock: (key) => `SELECT pg_advisory_xact_lock(${key});`,
  prefetch: (tenants, paths, wants) => `SELECT w.ord, t.id, e.kind, e.size, CASE WHEN w.want = 1 AND e.kind = 0 AND e.size <= 65536 THEN e.content END,
      w.want = 1 AND e.kind = 0 AND e.size > 65536, e.sha256, t.last_version, t.last_seq
      FROM unnest(${tenants}, ${paths}, ${wants})
      WITH ORDINALITY AS w(tenant, path, want, ord)
      JOIN tenants t ON t.name = w.tenant
      LEFT JOIN LATERAL (SELECT kind, size, content, sha256 FROM entries WHERE tenant = t.id AND path = w.path OFFSET 0) e ON true;`,
  verMany: (...a) => `INSERT INTO versions (tenant, version, path, existed, sha256, size, time, command, actor, content)
      SELECT u.tenant, u.version, u.path, u.existed, u.sha256, nullif(u.size, -1), u.time, u.command, u.actor, u.content
      FROM unnest(${a.join(', ')})
      AS u(tenant, version, path, existed, sha256, size, time, command, actor, content);`,
  changesMany: (...a) => `INSERT INTO changes (tenant, seq, version, versions, history_bytes, time, command, paths, actor)
      SELECT u.tenant, u.seq, nullif(u.version, 0), u.versions, u.bytes, u.time, u.command, u.paths, u.actor
      FROM unnest(${a.join(', ')})
      AS u(tenant, seq, version, versions, bytes, time, command, paths, actor);`,
  insertMany: (...a) => `INSERT INTO entries (tenant, path, depth, kind, size, mtime, content, sha256)
      SELECT * FROM unnest(${a.join(', ')});`,
  setMany: (...a) => `UPDATE entries e SET content = u.content, size = u.size, mtime = u.mtime, sha256 = u.sha256
      FROM unnest(${a.join(', ')}) AS u(tenant, path, content, size, mtime, sha256)
      WHERE e.tenant = u.tenant AND e.path = u.path COLLATE "C" AND e.kind = 0;`,
  countersSet: (ids, v, s) => `UPDATE tenants t SET last_version = u.v, last_seq = u.s
      FROM unnest(${ids}, ${v}, ${s}) AS u(id, v, s)
      WHERE t.id = u.id;`,
  notify: (tenants) => `SELECT pg_notify('memoryd_changes', n) FROM unnest(${tenants}) AS n;`,
  sizes: (ids, paths, deltas) => `UPDATE entries e SET size = e.size + u.delta FROM unnest(${ids},
      ${paths}, ${deltas}) AS u(tenant, path, delta)
      WHERE e.tenant = u.tenant AND e.path = u.path;`,
};
// The tenant's id, `k` times, as memoryd sends it.
const tenantIds = (tenant, k) => `(SELECT array_fill(id, ARRAY[${k}]) FROM tenants WHERE name = '${tenant}')`;
const BOUND_ANCESTORS = (dir) => ["'/memories'", "'/memories/bench'", `'/memories/bench/${dir}'`];
// Version and change numbers: memoryd takes them from the tenant's counters, one after the
// other (each at the tail of its index). So do the scripts: pgbench variable b numbers the
// client's batches (it lives from one transaction to the next; -D b= says where a run starts:
// boundRun), and batch b takes b * n .. b * n + n - 1.
const seqArr = (n) => `ARRAY(SELECT :b::int8 * ${n} + g FROM generate_series(0, ${n - 1}) g)`;
const lastSeq = (n) => `:b::int8 * ${n} + ${n - 1}`;
// The batch's counters, the change feed's notification, the directory sizes, COMMIT: the last
// round trip of every batch.
const commitTrip = (n, tenant, history, dir, delta) => [
  '\\startpipeline',
  PG_SQL.countersSet(`(SELECT array_agg(id) FROM tenants WHERE name = '${tenant}')`, `ARRAY[${history ? lastSeq(n) : '0::int8'}]`, `ARRAY[${lastSeq(n)}]`),
  PG_SQL.notify(`ARRAY['${tenant}']::text[]`),
  PG_SQL.sizes(tenantIds(tenant, 3), sqlArr(BOUND_ANCESTORS(dir), 'text'), sqlArr(rep(String(delta), 3), 'int8')),
  'COMMIT;',
  '\\endpipeline',
];

// The bound of memoryd's group commit: what PostgreSQL alone does, from one client, with the
// statements memoryd's writer sends for a batch of `n` creates of 1 KiB files in one existing
// directory of tenant `tenant` (an optimistic batch, src/store/pg/batch.c), history on (the
// defaults) or off (--history-versions 0), in the same three round trips (pgbench pipelines):
//   1. BEGIN, the tenant's advisory lock, the batch's paths and their ancestors read (P_PREFETCH);
//   2. the files' versions (their absence, P_VER_MANY: history on only) and change rows
//      (P_CHANGES_MANY: with history off too, without a version), the files inserted
//      (P_INSERT_MANY): one statement each;
//   3. the tenant's counters (P_COUNTERS_SET), the change feed's notification (P_NOTIFY), the
//      directory sizes (P_SIZES), COMMIT.
// The statements are memoryd's, word for word; their arrays are written out (pgbench has no array
// variables), so the contents are constants of the prepared statements where memoryd sends them
// as parameters: if anything, this bound is the easier one to reach. (Not in it: the pruning of
// old versions, which a batch of creates of new files does not need.)
function writerBoundScript(dir, n, { history = true, tenant = 'bound' } = {}) {
  const files = Array.from({ length: n }, (_, i) => `'/memories/bench/bound/t' || :n || '-${i}.txt'`);
  const ancestors = BOUND_ANCESTORS('bound');
  const ids = tenantIds(tenant, n);
  const text = [
    '\\set n random(1, 9000000000000)',
    '\\set b :b + 1',
    '\\startpipeline',
    'BEGIN;',
    PG_SQL.lock(42),
    PG_SQL.prefetch(sqlArr(rep(`'${tenant}'`, n + 3), 'text'), sqlArr([...ancestors, ...files], 'text'), sqlArr(rep('0', n + 3), 'int2')),
    '\\endpipeline',
    '\\startpipeline',
    ...(history ? [PG_SQL.verMany(ids, seqArr(n), sqlArr(files, 'text'), sqlArr(rep('false', n), 'bool'), sqlArr(rep('NULL', n), 'bytea'),
      sqlArr(rep('-1', n), 'int8'), sqlArr(rep('0', n), 'int8'), sqlArr(rep("'create'", n), 'text'), sqlArr(rep('NULL', n), 'text'),
      sqlArr(rep('NULL', n), 'bytea'))] : []),
    PG_SQL.changesMany(ids, seqArr(n), history ? seqArr(n) : sqlArr(rep('0', n), 'int8'), sqlArr(rep(history ? '1' : '0', n), 'int8'),
      sqlArr(rep('0', n), 'int8'), sqlArr(rep('0', n), 'int8'), sqlArr(rep("'create'", n), 'text'), sqlArr(files, 'text'), sqlArr(rep('NULL', n), 'text')),
    PG_SQL.insertMany(ids, sqlArr(files, 'text'), sqlArr(rep('3', n), 'int4'), sqlArr(rep('0', n), 'int2'), sqlArr(rep('1024', n), 'int8'),
      sqlArr(rep('0', n), 'int8'), sqlArr(rep(KIB_HEX, n), 'bytea'), sqlArr(rep(KIB_SHA, n), 'bytea')),
    '\\endpipeline',
    ...commitTrip(n, tenant, history, 'bound', n * 1024),
  ].join('\n');
  const file = path.join(dir, `bound-${tenant}-${n}.sql`);
  fs.writeFileSync(file, `${text}\n`);
  return file;
}

// The files of the str_replace bound: memoryd's bench toggles "state=on" <-> "state=off" in 1 KiB
// files (bench/lua/str_replace.lua), so that a file's size goes 1024 -> 1025 -> 1024 bytes.
const SR_TEXT = [kibWith('state=on'), kibWith('state=on').replace('state=on', 'state=off')];
const SR_SHA = SR_TEXT.map((t) => `'\\x${crypto.createHash('sha256').update(t).digest('hex')}'::bytea`);

// The same bound for a batch of `n` str_replace commands on existing 1 KiB files, with history
// on (`history`) or off: memoryd's statements for it, in its three round trips:
//   1. BEGIN, the lock, P_PREFETCH of the files (their content wanted) and their ancestors;
//   2. history on: P_VER_MANY, each file's old content sent back (memoryd has it from the
//      prefetch); P_CHANGES_MANY (history off too: the change feed, without versions); the new
//      contents in one P_SET_MANY;
//   3. P_COUNTERS_SET, P_NOTIFY, P_SIZES (each edit changes a size by one byte, as in the bench),
//      COMMIT.
// The files: `files` (a multiple of n) of directory /memories/bench/sr of tenant `tenant`,
// seeded with SR_TEXT[0] (seedStrReplaceBound). The batches sweep them, n distinct files each
// (pgbench's permute(): the same pseudo-random order in every sweep), and every sweep toggles
// every file once: even sweeps write SR_TEXT[1] (1025 bytes) over SR_TEXT[0], odd ones the
// reverse; the contents, old and new, are pgbench variables :c0 and :c1 (-D), sent as parameters
// of the prepared statements, one per file, as memoryd sends them. (pgbench reads the prefetched
// contents as text, hex, where memoryd reads them binary. Not in it: the pruning of old versions
// past 20 a file, which memoryd's writer runs in a transaction of its own.)
function strReplaceBoundScript(dir, n, files, { history, tenant }) {
  const per = files / n; // batches per sweep
  const paths = Array.from({ length: n }, (_, i) => `'/memories/bench/sr/f' || :f${i} || '.txt'`);
  const ids = tenantIds(tenant, n);
  const trips = (grow) => {
    const [o, w] = grow ? [0, 1] : [1, 0]; // the old and the new text
    const size = (k) => String(SR_TEXT[k].length);
    return [
      '\\startpipeline',
      ...(history ? [PG_SQL.verMany(ids, seqArr(n), sqlArr(paths, 'text'), sqlArr(rep('true', n), 'bool'), sqlArr(rep(SR_SHA[o], n), 'bytea'),
        sqlArr(rep(size(o), n), 'int8'), sqlArr(rep('0', n), 'int8'), sqlArr(rep("'str_replace'", n), 'text'), sqlArr(rep('NULL', n), 'text'),
        sqlArr(rep(`:c${o}::bytea`, n), 'bytea'))] : []),
      PG_SQL.changesMany(ids, seqArr(n), history ? seqArr(n) : sqlArr(rep('0', n), 'int8'), sqlArr(rep(history ? '1' : '0', n), 'int8'),
        sqlArr(rep(history ? size(o) : '0', n), 'int8'), sqlArr(rep('0', n), 'int8'), sqlArr(rep("'str_replace'", n), 'text'), sqlArr(paths, 'text'),
        sqlArr(rep('NULL', n), 'text')),
      PG_SQL.setMany(ids, sqlArr(paths, 'text'), sqlArr(rep(`:c${w}::bytea`, n), 'bytea'), sqlArr(rep(size(w), n), 'int8'),
        sqlArr(rep('0', n), 'int8'), sqlArr(rep(SR_SHA[w], n), 'bytea')),
      '\\endpipeline',
      ...commitTrip(n, tenant, history, 'sr', grow ? n : -n),
    ];
  };
  const ancestors = BOUND_ANCESTORS('sr');
  const text = [
    '\\set b :b + 1',
    `\\set odd ((:b - 1) / ${per}) % 2`,
    ...Array.from({ length: n }, (_, i) => `\\set f${i} permute(((:b - 1) % ${per}) * ${n} + ${i}, ${files}, 7)`),
    '\\startpipeline',
    'BEGIN;',
    PG_SQL.lock(43),
    PG_SQL.prefetch(sqlArr(rep(`'${tenant}'`, n + 3), 'text'), sqlArr([...ancestors, ...paths], 'text'),
      sqlArr([...rep('0', 3), ...rep('1', n)], 'int2')),
    '\\endpipeline',
    '\\if :odd',
    ...trips(false),
    '\\else',
    ...trips(true),
    '\\endif',
  ].join('\n');
  const file = path.join(dir, `bound-sr-${tenant}-${n}.sql`);
  fs.writeFileSync(file, `${text}\n`);
  return file;
}

// A tenant of the create bound: the directory its files go in.
function seedCreateBound(cluster, db, tenant) {
  psql(cluster, db, `INSERT INTO tenants (name, created_at) VALUES ('${tenant}', 0);
    INSERT INTO entries (tenant, path, depth, kind, size, mtime) SELECT id, p, d, 1, 0, 0 FROM tenants,
      (VALUES ('/memories', 0), ('/memories/bench', 1), ('/memories/bench/bound', 2)) v(p, d) WHERE name = '${tenant}';`);
}

// A tenant of the str_replace bound: `files` files of SR_TEXT[0], their sizes in the directories'.
function seedStrReplaceBound(cluster, db, tenant, files) {
  const c = `'\\x${Buffer.from(SR_TEXT[0]).toString('hex')}'::bytea`;
  psql(cluster, db, `INSERT INTO tenants (name, created_at) VALUES ('${tenant}', 0);
    INSERT INTO entries (tenant, path, depth, kind, size, mtime) SELECT id, p, d, 1, ${files * SR_TEXT[0].length}, 0 FROM tenants,
      (VALUES ('/memories', 0), ('/memories/bench', 1), ('/memories/bench/sr', 2)) v(p, d) WHERE name = '${tenant}';
    INSERT INTO entries (tenant, path, depth, kind, size, mtime, content, sha256)
      SELECT t.id, '/memories/bench/sr/f' || i || '.txt', 3, 0, length(${c}), 0, ${c}, sha256(${c})
      FROM tenants t, generate_series(0, ${files - 1}) i WHERE t.name = '${tenant}';
    VACUUM ANALYZE entries;`);
}

// One pgbench run of a bound script (1 client), its batch numbers going on from the tenant's
// counter (b: see seqArr), the run itself in `wrap` (measured() for its CPU); it fails on any
// failed transaction.
function boundRun(cluster, db, script, tenant, n, defines = {}, wrap = (f) => f()) {
  const last = Number(psql(cluster, db, `SELECT last_seq FROM tenants WHERE name = '${tenant}'`));
  const r = wrap(() => pgbench(cluster, db, script, { clients: 1, defines: { ...defines, b: Math.floor(last / n) } }));
  if (r.failed) throw new Error(`pgbench ${path.basename(script)}: ${r.failed} failed transactions`);
  return r;
}

// The storage bound of history on PostgreSQL, as bench/history.mjs measures it on SQLite (its
// floor): for str_replace and create, each at memoryd's mean batch at 64 connections, the bound
// scripts above with history on and off from 1 client, in turn, REPEAT runs of SECONDS each,
// their medians; bound = on / off (commands per second). Where it is under history.mjs's target
// (0.85), memoryd's history target is met by reaching 0.9x of it (the rule history.mjs applies
// to SQLite's floor). The rows written are checked: every committed batch's versions (on) and
// change rows (on and off), and the str_replace directories' sizes against their files'.
// The floor of history for str_replace in C (bench/pg_history_floor.c): memoryd's writer
// statements for a batch of `n`, with memoryd's binary parameters, from one connection, and
// retention beside it on a second as memoryd's; modes off, on and on-noprune in turn, REPEAT
// runs of SECONDS each, their medians. Its own database (the program drops the full-text
// index there, as history.mjs's memoryd do with --search off).
function strReplaceFloor(cluster, n, files) {
  const db = createDb(cluster, 'history_floor');
  const modes = ['off', 'on', 'on-noprune'];
  const runs = Object.fromEntries(modes.map((m) => [m, []]));
  for (let k = 0; k < REPEAT; k++) {
    for (const m of k % 2 ? [...modes].reverse() : modes) {
      const out = execFileSync(path.join(BUILD, 'bench/bench_pg_history_floor'), [cluster.uri(db), String(SECONDS), String(n), String(files), m],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      runs[m].push(JSON.parse(out.trim().split('\n').pop()));
    }
  }
  const med = (m) => median(runs[m].map((r) => r.per_sec));
  return { runs, off: med('off'), on: med('on'), noprune: med('on-noprune') };
}

function historyBounds(cluster, db, work, h, results) {
  const TARGET = 0.85;
  const batchOf = (w, dflt) => Math.min(120, Math.max(1, Math.round(results.rows.find((r) => r.workload === w && r.conns === 64)?.batch?.mean ?? dflt)));
  const q = (sql) => psql(cluster, db, sql);
  const count = (table, tenant) => Number(q(`SELECT count(*) FROM ${table} WHERE tenant = (SELECT id FROM tenants WHERE name = '${tenant}')`));
  const specs = [];
  { // str_replace: the files, a multiple of the batch near 512
    const n = batchOf('str_replace', 30);
    const files = n * Math.max(1, Math.floor(512 / n));
    const defines = { c0: SR_TEXT[0], c1: SR_TEXT[1] };
    const sides = ['on', 'off'].map((side) => {
      const tenant = `boundsr-${side}`;
      seedStrReplaceBound(cluster, db, tenant, files);
      return { side, tenant, script: strReplaceBoundScript(work, n, files, { history: side === 'on', tenant }), defines };
    });
    specs.push({ w: 'str_replace', n, files, sides, off: 'entries, change feed, counters, notify, sizes', on: 'plus a version with the old content' });
  }
  { // create: new files in one directory
    const n = batchOf('create', 32);
    const sides = ['on', 'off'].map((side) => {
      const tenant = `boundc-${side}`;
      seedCreateBound(cluster, db, tenant);
      return { side, tenant, script: writerBoundScript(work, n, { history: side === 'on', tenant }), defines: {} };
    });
    specs.push({ w: 'create', n, sides, off: 'entries, change feed, counters, notify, sizes', on: 'plus a version of the absence' });
  }
  for (const s of specs) for (const x of s.sides) { x.runs = []; x.versions0 = count('versions', x.tenant); x.changes0 = count('changes', x.tenant); }
  for (let k = 0; k < REPEAT; k++) {
    for (const s of specs) {
      for (const x of k % 2 ? [...s.sides].reverse() : s.sides) x.runs.push(boundRun(cluster, db, x.script, x.tenant, s.n, x.defines));
    }
  }
  // The rows landed: n change rows per committed batch, n versions with history on (none off).
  for (const s of specs) {
    for (const x of s.sides) {
      const batches = x.runs.reduce((a, r) => a + r.requests, 0);
      const got = { versions: count('versions', x.tenant) - x.versions0, changes: count('changes', x.tenant) - x.changes0 };
      const want = { versions: x.side === 'on' ? batches * s.n : 0, changes: batches * s.n };
      if (got.versions !== want.versions || got.changes !== want.changes) {
        throw new Error(`the ${s.w} bound (history ${x.side}): ${got.versions} versions and ${got.changes} change rows for ${batches} batches of ${s.n}`);
      }
    }
    if (s.w === 'str_replace') {
      const bad = q(`SELECT t.name FROM tenants t JOIN entries d ON d.tenant = t.id AND d.path = '/memories/bench/sr' WHERE t.name LIKE 'boundsr-%'
        AND d.size <> (SELECT sum(size) FROM entries f WHERE f.tenant = t.id AND f.kind = 0 AND f.path LIKE '/memories/bench/sr/%')`);
      if (bad) throw new Error(`the str_replace bound: the directory size of ${bad} is not its files' (an edit that did not toggle its file)`);
    }
  }
  console.log(`\nthe storage bound of history on PostgreSQL (pgbench, 1 client: memoryd's writer statements for a batch of its mean size at 64 connections, ` +
    `in its 3 round trips, history on and off; ${SECONDS} s per run, median of ${REPEAT}, in turn, right after the history run):`);
  const out = {};
  for (const s of specs) {
    const [on, off] = s.sides.map((x) => medianRun(x.runs));
    const bound = on.rps / off.rps;
    const ratio = h.workloads[s.w]?.ratio;
    const of = ratio / bound;
    out[s.w] = { batch: s.n, files: s.files, on_per_sec: on.rps * s.n, off_per_sec: off.rps * s.n, bound, memoryd_ratio: ratio, of_bound: of,
      runs_on: s.sides[0].runs.map((r) => r.rps * s.n), runs_off: s.sides[1].runs.map((r) => r.rps * s.n) };
    console.log(`  ${s.w} (${s.n} per batch${s.files ? `, ${s.files} files of 1 KiB` : ''}): ${fmt(off.rps * s.n)}/s history off (${s.off}), ` +
      `${fmt(on.rps * s.n)}/s on (${s.on})` + (REPEAT > 1 ? ` (runs: off ${out[s.w].runs_off.map(fmt).join(', ')}; on ${out[s.w].runs_on.map(fmt).join(', ')})` : '') +
      `\n    bound of on / off: ${bound.toFixed(2)}; memoryd's ${s.w} on / off ${ratio.toFixed(2)} is ${of.toFixed(2)}× of it`);
    const t = results.targets.find((x) => x.what.startsWith('history on PostgreSQL: ') && x.workload === s.w);
    if (t && s.w === 'str_replace') {
      // The floor in C decides: pgbench's replay (SQL expressions for the arrays, text
      // contents) is slower than memoryd itself with history off, so it bounds pgbench more
      // than PostgreSQL.
      const f = strReplaceFloor(cluster, s.n, s.files);
      const fb = f.on / f.off;
      out.floor = { batch: s.n, files: s.files, off_per_sec: f.off, on_per_sec: f.on, noprune_per_sec: f.noprune, bound: fb, bound_noprune: f.noprune / f.off,
        memoryd_ratio: ratio, of_bound: ratio / fb, of_bound_noprune: ratio / (f.noprune / f.off), runs: f.runs };
      console.log(`  str_replace, the floor in C (bench/pg_history_floor.c: the same statements with memoryd's binary parameters, 1 connection, ` +
        `retention beside it as memoryd's; median of ${REPEAT}): ${fmt(f.off)}/s history off, ${fmt(f.on)}/s on, ${fmt(f.noprune)}/s on without pruning ` +
        `(runs: off ${f.runs.off.map((r) => fmt(r.per_sec)).join(', ')}; on ${f.runs.on.map((r) => fmt(r.per_sec)).join(', ')}; ` +
        `on without pruning ${f.runs['on-noprune'].map((r) => fmt(r.per_sec)).join(', ')})\n` +
        `    floor of on / off: ${fb.toFixed(2)} (${(f.noprune / f.off).toFixed(2)} without pruning); memoryd's str_replace on / off ${ratio.toFixed(2)} ` +
        `is ${(ratio / fb).toFixed(2)}× of it (${(ratio / (f.noprune / f.off)).toFixed(2)}× of the floor without pruning)`);
      if (fb < TARGET) {
        t.got += `; PostgreSQL alone (the floor in C) allows ${fb.toFixed(2)}: ${(ratio / fb).toFixed(2)}× of that bound (≥ 0.9× meets it; ` +
          `${(ratio / (f.noprune / f.off)).toFixed(2)}× of ${(f.noprune / f.off).toFixed(2)} without pruning)`;
        t.ok ||= ratio / fb >= 0.9;
      } else {
        t.got += `; PostgreSQL alone (the floor in C) allows ${fb.toFixed(2)} (≥ ${TARGET}: the target stands)`;
      }
    } else if (t && bound < TARGET) {
      t.got += `; PostgreSQL alone allows ${bound.toFixed(2)}: ${of.toFixed(2)}× of that bound (≥ 0.9× meets it)`;
      t.ok ||= of >= 0.9;
    } else if (t) {
      t.got += `; PostgreSQL alone allows ${bound.toFixed(2)} (≥ ${TARGET}: the target stands)`;
    }
  }
  return out;
}

// ---- CPU by process ----

// CPU time (clock ticks) so far of memoryd (`pid`), of PostgreSQL (its running processes, and
// those it has reaped: the postmaster's children's times) and of this script's finished
// children (wrk, pgbench: they are reaped before the second reading).
function cpuSplit(pid, postmaster) {
  const stat = (p) => {
    try {
      const s = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      return { comm: s.slice(s.indexOf('(') + 1, s.lastIndexOf(')')), self: Number(f[11]) + Number(f[12]), children: Number(f[13]) + Number(f[14]) };
    } catch {
      return null;
    }
  };
  let postgres = stat(postmaster)?.children ?? 0;
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    const st = stat(p);
    if (st?.comm === 'postgres') postgres += st.self;
  }
  return { memoryd: pid ? stat(pid)?.self ?? 0 : 0, postgres, client: stat(process.pid).children };
}

// The CPU of a run per request (µs of one core), by side.
function cpuPer(before, after, requests) {
  const hz = 100; // USER_HZ, what /proc/<pid>/stat counts in on Linux
  const per = (k) => ((after[k] - before[k]) * 1e6) / hz / Math.max(1, requests);
  return { memoryd: per('memoryd'), postgres: per('postgres'), client: per('client') };
}

// ---- memoryd ----

// The log lines of a server written since byte `from` of its log (JSON objects only).
function logSince(srv, from) {
  const fd = fs.openSync(srv.log, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const buf = Buffer.alloc(Math.max(0, size - from));
    fs.readSync(fd, buf, 0, buf.length, from);
    return buf.toString('utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => {
      try { return JSON.parse(l); } catch { return null; }
    }).filter(Boolean);
  } finally {
    fs.closeSync(fd);
  }
}

const logSize = (srv) => fs.statSync(srv.log).size;

// Commands per write batch over a stretch of the log.
function batchStats(lines) {
  const b = lines.filter((l) => l.msg === 'write batch');
  if (!b.length) return null;
  const sum = (k) => b.reduce((a, l) => a + (l[k] ?? 0), 0);
  return {
    batches: b.length, commands: sum('commands'), mean: sum('commands') / b.length,
    median: median(b.map((l) => l.commands)), max: Math.max(...b.map((l) => l.commands)),
    exec_us: sum('exec_us') / b.length, commit_us: sum('commit_us') / b.length,
    round_trips: sum('round_trips') / b.length, statements: sum('statements') / b.length,
  };
}

async function startMemoryd(cluster, db, work, name, extra = []) {
  const port = await freePort();
  return startProcess(name, MEMORYD, ['--port', String(port), '--db', cluster.uri(db), ...BENCH_QUOTA, ...extra], port,
    { logFile: path.join(work, `${name}.log`) });
}

// ---- round trips per command ----

// One command at a time on tenant "rt" (each a batch of its own); the figures are those of its
// request log line, and of its write batch (which adds the COMMIT's round trip).
async function roundTrips(cluster, work) {
  const db = createDb(cluster, 'memoryd_rt');
  const srv = await startMemoryd(cluster, db, work, 'memoryd-rt', ['--log-level', 'debug']);
  const p = poster(srv.port, { tenant: 'rt' });
  const rows = [];
  try {
    const seed = [{ command: 'create', path: '/memories/p/file.txt', file_text: kibWith('state=on') }];
    for (let i = 0; i < 10; i++) seed.push({ command: 'create', path: `/memories/p/d10/f${i}.txt`, file_text: 'x'.repeat(199) + '\n' });
    await runAll(p, seed, 1);
    // The directory of 10,000 files, straight into the database (sizes kept right).
    const n = 10000;
    psql(cluster, db, `
      INSERT INTO entries (tenant, path, depth, kind, size, mtime, content)
        SELECT id, '/memories/p/d10k', 2, 1, ${n * 200}, 0, NULL FROM tenants WHERE name = 'rt';
      INSERT INTO entries (tenant, path, depth, kind, size, mtime, content, sha256)
        SELECT t.id, '/memories/p/d10k/f' || lpad(i::text, 5, '0') || '.txt', 3, 0, 200, 0, c, sha256(c)
        FROM tenants t, generate_series(0, ${n - 1}) i, convert_to(repeat('x', 199) || E'\\n', 'UTF8') c WHERE t.name = 'rt';
      UPDATE entries SET size = size + ${n * 200} WHERE tenant = (SELECT id FROM tenants WHERE name = 'rt')
        AND path IN ('/memories', '/memories/p');
      ANALYZE entries;`);
    const probes = [
      { what: 'view a file', max: 1, cmd: { command: 'view', path: '/memories/p/file.txt' } },
      { what: 'view a directory (10 files)', max: 1, cmd: { command: 'view', path: '/memories/p/d10' } },
      { what: 'create a file', max: 2, cmd: { command: 'create', path: '/memories/p/new.txt', file_text: KIB } },
      { what: 'str_replace', max: 2, cmd: { command: 'str_replace', path: '/memories/p/file.txt', old_str: 'state=on', new_str: 'state=off' } },
      { what: 'insert', max: 2, cmd: { command: 'insert', path: '/memories/p/file.txt', insert_line: 3, insert_text: 'inserted line\n' } },
      { what: 'delete a file', max: 3, cmd: { command: 'delete', path: '/memories/p/new.txt' } },
      { what: 'rename a directory of 10 files', max: 3, cmd: { command: 'rename', old_path: '/memories/p/d10', new_path: '/memories/p/d10-moved' } },
      { what: 'delete a directory of 10 files', max: 3, cmd: { command: 'delete', path: '/memories/p/d10-moved' } },
      { what: 'rename a directory of 10,000 files', max: 3, cmd: { command: 'rename', old_path: '/memories/p/d10k', new_path: '/memories/p/d10k-moved' } },
      { what: 'delete a directory of 10,000 files', max: 3, cmd: { command: 'delete', path: '/memories/p/d10k-moved' } },
    ];
    for (const probe of probes) {
      const from = logSize(srv);
      const t0 = process.hrtime.bigint();
      const r = await p.post(probe.cmd);
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (r.status !== 200 || r.json?.is_error) throw new Error(`${probe.what}: ${r.status} ${r.text}`);
      let line = null;
      let lines = [];
      for (let i = 0; i < 200 && !line; i++) { // the log line follows the answer
        lines = logSince(srv, from);
        line = lines.find((l) => l.msg === 'request' && l.command === probe.cmd.command);
        if (!line) await sleep(10);
      }
      if (!line) throw new Error(`${probe.what}: no request log line`);
      const batch = lines.find((l) => l.msg === 'write batch');
      rows.push({ what: probe.what, command: probe.cmd.command, max: probe.max, ms, sql: line.sql, round_trips: line.round_trips ?? 0,
        batch_round_trips: batch?.round_trips ?? null, batch_statements: batch?.statements ?? null, ok: (line.round_trips ?? 0) <= probe.max });
    }
  } finally {
    p.close();
    await srv.stop();
  }
  return rows;
}

// ---- scale ----

function scaleSql({ bigDirs, filesPerDir, others }) {
  const size = 200; // bytes per file
  const content = "convert_to(repeat('x', 199) || E'\\n', 'UTF8')";
  const name = (dir, file) => `'/memories/d' || lpad(${dir}::text, 4, '0') || '/f' || lpad(${file}::text, 3, '0') || '.txt'`;
  const cols = 'entries (tenant, path, depth, kind, size, mtime, content, sha256)';
  const dir = 'NULL::bytea, NULL::bytea';
  const file = `${content}, sha256(${content})`;
  return `BEGIN;
    INSERT INTO tenants (id, name, created_at) OVERRIDING SYSTEM VALUE VALUES (1, 'small', 0), (2, 'big', 0);
    INSERT INTO tenants (id, name, created_at) OVERRIDING SYSTEM VALUE SELECT i, 'other-' || i, 0 FROM generate_series(3, ${others + 2}) i;
    SELECT setval(pg_get_serial_sequence('tenants', 'id'), ${others + 2});
    INSERT INTO ${cols} VALUES (1, '/memories', 0, 1, ${filesPerDir * size}, 0, ${dir}), (2, '/memories', 0, 1, ${bigDirs * filesPerDir * size}, 0, ${dir});
    INSERT INTO ${cols} SELECT i, '/memories', 0, 1, ${size}, 0, ${dir} FROM generate_series(3, ${others + 2}) i;
    INSERT INTO ${cols} SELECT i, '/memories/note.txt', 1, 0, ${size}, 0, ${file} FROM generate_series(3, ${others + 2}) i;
    INSERT INTO ${cols} VALUES (1, '/memories/d0000', 1, 1, ${filesPerDir * size}, 0, ${dir});
    INSERT INTO ${cols} SELECT 1, ${name(0, 'j')}, 2, 0, ${size}, 0, ${file} FROM generate_series(0, ${filesPerDir - 1}) j;
    INSERT INTO ${cols} SELECT 2, '/memories/d' || lpad(i::text, 4, '0'), 1, 1, ${filesPerDir * size}, 0, ${dir} FROM generate_series(0, ${bigDirs - 1}) i;
    INSERT INTO ${cols} SELECT 2, ${name('i', 'j')}, 2, 0, ${size}, 0, ${file}
      FROM generate_series(0, ${bigDirs - 1}) i, generate_series(0, ${filesPerDir - 1}) j;
    COMMIT;
    VACUUM ANALYZE tenants;
    VACUUM ANALYZE entries;`;
}

async function scaleFigures(cluster, work) {
  const shape = QUICK ? { bigDirs: 100, filesPerDir: 100, others: 1000 } : { bigDirs: 1000, filesPerDir: 100, others: 10000 };
  const files = shape.bigDirs * shape.filesPerDir;
  const db = createDb(cluster, 'memoryd_scale');
  // The schema, made by memoryd itself; then the rows, straight in SQL.
  let srv = await startMemoryd(cluster, db, work, 'memoryd-scale');
  await srv.stop();
  const t0 = Date.now();
  psql(cluster, db, scaleSql(shape));
  console.log(`scale: ${fmt(files)} files for "big", ${shape.filesPerDir} for "small", ${fmt(shape.others)} other tenants, ` +
    `written in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  srv = await startMemoryd(cluster, db, work, 'memoryd-scale');
  const out = { shape, ops: [] };
  try {
    const mid = `d${String(Math.floor(shape.bigDirs / 2)).padStart(4, '0')}`;
    const ops = [
      { id: 'view_file', name: 'view a file', script: 'view.lua', args: (d) => [`/memories/${d}/f050.txt`] },
      { id: 'view_dir', name: 'view a 100-entry directory', script: 'view.lua', args: (d) => [`/memories/${d}`] },
      // One wrk thread per connection, each with files of its own (rename.lua): a connection
      // has one request in flight, so no rename can overtake the one before it on its file. (With
      // 8 connections to a thread, as bench/scale.mjs runs it on SQLite, a request that waits
      // long enough is overtaken by the one that moves its file back: 409, the destination
      // exists; seen here at PostgreSQL's latencies.) 16 wrk threads cost throughput on 2 cores;
      // both tenants are measured alike.
      { id: 'rename', name: 'rename a file', script: 'rename.lua', threads: 16, args: (d) => [`/memories/${d}`, Math.floor(shape.filesPerDir / 16)], after: renameBack },
      { id: 'create', name: 'create a file', script: 'create.lua', args: (d, r) => [`/memories/${d}/new${r}`] },
    ];
    console.log(`\n${'operation (16 connections)'.padEnd(28)} ${'tenant of 100 files'.padStart(24)} ${`tenant of ${fmt(files)} files`.padStart(28)}  ratio`);
    for (const op of ops) {
      const run = (tenant, dir, r) => wrk({ port: srv.port, script: `bench/lua/${op.script}`, args: op.args(dir, r), conns: 16, threads: op.threads, seconds: SECONDS, env: { BENCH_TENANT: tenant } });
      const smalls = [], bigs = [];
      for (let r = 0; r < REPEAT; r++) {
        smalls.push(run('small', 'd0000', r));
        if (op.after) await op.after(srv.port, 'small', 'd0000');
        bigs.push(run('big', mid, r));
        if (op.after) await op.after(srv.port, 'big', mid);
      }
      const small = medianRun(smalls);
      const big = medianRun(bigs);
      const ratio = small.rps / big.rps;
      const errors = [...smalls, ...bigs].reduce((n, x) => n + x.non2xx + x.socket_errors, 0);
      out.ops.push({ op: op.id, name: op.name, small, big, ratio, errors, small_rps: smalls.map((x) => x.rps), big_rps: bigs.map((x) => x.rps) });
      console.log(`${op.name.padEnd(28)} ${`${fmt(small.rps)}/s p99 ${us(small.p99_us)}`.padStart(24)} ${`${fmt(big.rps)}/s p99 ${us(big.p99_us)}`.padStart(28)}  ${ratio.toFixed(2)}×` +
        (REPEAT > 1 ? `  (runs: ${smalls.map((x) => fmt(x.rps)).join(', ')} | ${bigs.map((x) => fmt(x.rps)).join(', ')})` : ''));
    }
  } finally {
    await srv.stop();
  }
  return out;
}

// ---- main ----

const WIDTHS = [24, 5, 13, 8, 8, 23, 9, 7, 7];
const printRow = (cells, widths = WIDTHS) =>
  console.log(cells.map((c, i) => (i === 0 || i === 5 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join(' '));

async function main() {
  const work = tempDir('memoryd-pgbench-');
  const cpus = os.cpus();
  const machine = `${cpus.length} × ${cpus[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}`;
  const cluster = startClusterOf(path.join(work, 'cluster'), { stats: STATS });
  const postmaster = () => Number(fs.readFileSync(path.join(cluster.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const results = { machine, seconds: SECONDS, repeat: REPEAT, load_start: os.loadavg(), rows: [], refs: {}, cpu: {}, round_trips: [], scale: null, targets: [] };
  let failures = 0;
  try {
    const version = psql(cluster, 'postgres', 'SHOW server_version');
    results.postgres = version;
    console.log(`memoryd benchmark on PostgreSQL — ${new Date().toISOString()}\nmachine: ${machine}; load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}\n` +
      `memoryd: ${path.relative(ROOT, MEMORYD)} (its defaults: durability full, history on, 2 HTTP threads per CPU on PostgreSQL; --log-level debug for its batch lines)\n` +
      `PostgreSQL ${version}, a cluster of this run's own on the same machine: ${Object.entries(cluster.settings).map(([k, v]) => `${k}=${v}`).join(', ')}\n` +
      `wrk and pgbench on the same cores; ${SECONDS} s per run; the median of ${REPEAT} runs, memoryd and its reference in turn\n`);

    const refDb = createDb(cluster, 'reference');
    setupReference(cluster, refDb);
    const scripts = referenceScripts(work);
    const mdDb = createDb(cluster, 'memoryd');
    if (STATS) psql(cluster, mdDb, 'CREATE EXTENSION pg_stat_statements');
    const md = await startMemoryd(cluster, mdDb, work, 'memoryd', ['--log-level', 'debug']);
    // Each run with the CPU it cost each side, per request (the server: memoryd, or `pid`).
    const measured = (run, pid = md.proc.pid) => {
      const a = cpuSplit(pid, postmaster());
      const r = run();
      r.cpu = cpuPer(a, cpuSplit(pid, postmaster()), r.requests);
      return r;
    };
    const ceilingPort = await freePort();
    const ceiling = await startProcess('ceiling', path.join(BUILD, 'bench/bench_ceiling'), [String(ceilingPort)], ceilingPort,
      { logFile: path.join(work, 'ceiling.log') });
    try {
      const p = poster(md.port);
      const seed = [{ command: 'create', path: '/memories/bench/file-1k.txt', file_text: KIB }];
      for (let i = 0; i < 100; i++) {
        seed.push({ command: 'create', path: `/memories/bench/dir100/note-${String(i).padStart(3, '0')}.txt`, file_text: `note ${i}: ${'x'.repeat(80)}\n` });
      }
      for (let f = 0; f < 2 * K; f++) {
        seed.push({ command: 'create', path: `/memories/bench/sr-c64/f${f}.txt`, file_text: kibWith('state=on') });
      }
      await runAll(p, seed);
      p.close();
      psql(cluster, mdDb, 'VACUUM ANALYZE entries; VACUUM ANALYZE tenants;');

      // --quick: the rows of the targets, and str_replace (the smoke: every path of the script).
      const plan = [
        { id: 'create', name: 'create 1 KiB (durable)', conns: 1, script: 'create.lua', args: (k) => [`/memories/bench/new-c1-${k}`], ref: 'insert', refName: 'INSERT, 1 client' },
        { id: 'create', name: 'create 1 KiB (durable)', conns: 16, script: 'create.lua', args: (k) => [`/memories/bench/new-c16-${k}`], ref: 'insert', refClients: 64, refName: 'INSERT, 64 clients' },
        { id: 'create', name: 'create 1 KiB (durable)', conns: 64, script: 'create.lua', args: (k) => [`/memories/bench/new-c64-${k}`], ref: 'insert', refName: 'INSERT, 64 clients', target: 1.0 },
        { id: 'str_replace', name: 'str_replace 1 KiB', conns: 64, script: 'str_replace.lua', args: () => ['/memories/bench/sr-c64', K], ref: 'insert', refName: 'INSERT, 64 clients', once: true },
        { id: 'view_file', name: 'view 1 KiB file', conns: 16, script: 'view.lua', args: () => ['/memories/bench/file-1k.txt'], ref: 'select', refName: 'PK SELECT, 16 clients' },
        { id: 'view_file', name: 'view 1 KiB file', conns: 64, script: 'view.lua', args: () => ['/memories/bench/file-1k.txt'], ref: 'select', refName: 'PK SELECT, 64 clients', target: 0.7, ceiling: true },
        { id: 'view_dir', name: 'view 100-entry dir', conns: 64, script: 'view.lua', args: () => ['/memories/bench/dir100'], ref: 'select', refName: 'PK SELECT, 64 clients' },
      ].filter((w) => (!QUICK || w.target || w.id === 'str_replace') && (!ONLY || ONLY.includes(w.id)));
      const refRuns = {}; // pgbench runs by reference and clients, shared by the rows that use them
      const refKey = (r, c) => `${r}@${c}`;
      printRow(['workload', 'conns', 'memoryd req/s', 'p50', 'p99', 'pgbench reference', 'ref tx/s', '× ref', 'target']);
      for (const w of plan) {
        const refClients = w.refClients ?? w.conns;
        const key = refKey(w.ref, refClients);
        refRuns[key] ??= [];
        const runs = [];
        const batches = [];
        const ceilings = [];
        const reps = w.once ? 1 : REPEAT;
        for (let k = 0; k < reps; k++) {
          // The reference first, then memoryd: each figure with the other side's just before it.
          if (refRuns[key].length < REPEAT) refRuns[key].push(measured(() => pgbench(cluster, refDb, scripts[w.ref], { clients: refClients })));
          if (w.ceiling) {
            ceilings.push(measured(() => wrk({ port: ceilingPort, script: `bench/lua/${w.script}`, args: w.args(k), conns: w.conns, seconds: SECONDS }),
              ceiling.proc.pid));
          }
          const from = logSize(md);
          runs.push(measured(() => wrk({ port: md.port, script: `bench/lua/${w.script}`, args: w.args(k), conns: w.conns, seconds: SECONDS })));
          await sleep(200); // the log lines of the last answers
          batches.push(batchStats(logSince(md, from)));
        }
        const m = medianRun(runs);
        const ref = medianRun(refRuns[key]);
        const ratio = m.rps / ref.rps;
        const batch = batches[runs.indexOf(m)];
        const row = { workload: w.id, name: w.name, conns: w.conns, memoryd: m, runs: runs.map((r) => r.rps), ref: w.ref, ref_clients: refClients,
          reference: ref, ref_runs: refRuns[key].map((r) => r.rps), ratio, target: w.target ?? null, batch,
          ceiling: ceilings.length ? medianRun(ceilings) : undefined };
        results.rows.push(row);
        failures += m.non2xx + m.socket_errors;
        printRow([w.name, w.conns, fmt(m.rps), us(m.p50_us), us(m.p99_us), w.refName, fmt(ref.rps), `${ratio.toFixed(2)}×`, w.target ? `≥ ${w.target}×` : '']);
        if (reps > 1) console.log(`${''.padEnd(31)}runs: memoryd ${row.runs.map(fmt).join(', ')}; pgbench ${row.ref_runs.map(fmt).join(', ')}`);
        if (batch && !w.id.startsWith('view')) {
          console.log(`${''.padEnd(31)}write batches: ${fmt(batch.batches)}, ${batch.mean.toFixed(1)} commands each on average (median ${batch.median}, ` +
            `at most ${batch.max}), ${batch.round_trips.toFixed(1)} round trips each; ${us(batch.exec_us)} to run + ${us(batch.commit_us)} to commit`);
        }
        if (w.target) {
          results.targets.push({ what: `${w.name} at ${w.conns} connections vs pgbench ${w.refName} (${fmt(ref.rps)}/s)`, got: `${ratio.toFixed(2)}× (target ≥ ${w.target}×)`, ok: ratio >= w.target, timing: true });
        }
      }
      for (const [key, runs] of Object.entries(refRuns)) results.refs[key] = { median: medianRun(runs), runs: runs.map((r) => r.rps) };

      // (b) and (d): one client, group commits (when the creates ran).
      const top = results.rows.find((r) => r.workload === 'create' && r.conns === 64);
      const many = results.refs[refKey('insert', 64)]?.median;
      const sel = results.refs[refKey('select', 64)]?.median;
      const line = (what, key, unit = '/s') => (results.refs[key] ? `  ${what.padEnd(59)} ${fmt(results.refs[key].median.rps).padStart(8)}${unit}\n` : '');
      let bound = null;
      if (top) {
      const r100 = [];
      for (let k = 0; k < REPEAT; k++) r100.push(measured(() => pgbench(cluster, refDb, scripts.insert100, { clients: 1 })));
      const ins100 = medianRun(r100);
      results.refs['insert100@1'] = { median: ins100, runs: r100.map((r) => r.rps), rows_per_sec: ins100.rps * 100 };
      const n = Math.max(1, Math.round(top.batch?.mean ?? 32));
      psql(cluster, refDb, `INSERT INTO tenants (name, created_at) VALUES ('bound', 0);
        INSERT INTO entries SELECT id, p, d, 1, 0, 0, NULL FROM tenants, (VALUES ('/memories', 0), ('/memories/bench', 1), ('/memories/bench/bound', 2)) v(p, d) WHERE name = 'bound';`);
      const boundScript = writerBoundScript(work, n);
      const rb = [];
      for (let k = 0; k < REPEAT; k++) rb.push(boundRun(cluster, refDb, boundScript, 'bound', n, {}, measured));
      bound = medianRun(rb);
      bound.cpu = { memoryd: 0, postgres: bound.cpu.postgres / n, client: bound.cpu.client / n }; // per create
      results.refs.writer_bound = { batch: n, median: bound, runs: rb.map((r) => r.rps), rows_per_sec: bound.rps * n };
      console.log(`\npgbench references (the median of ${REPEAT} runs each; 1 KiB rows of memoryd's entries table, durable commits):\n` +
        line('(a) one-row INSERT, each its own transaction, 1 client', refKey('insert', 1), ' commits/s') +
        line('(a) one-row INSERT, each its own transaction, 64 clients', refKey('insert', 64), ' commits/s') +
        `  (b) 100 one-row INSERTs per transaction, 1 client           ${fmt(ins100.rps * 100).padStart(8)} rows/s (${fmt(ins100.rps)} commits/s)\n` +
        line('(c) primary-key SELECT of one row, 16 clients', refKey('select', 16)) +
        line('(c) primary-key SELECT of one row, 64 clients', refKey('select', 64)) +
        `  (d) the writer's bound: memoryd's statements for a batch of ${n} creates (its mean batch at 64 connections),\n` +
        `      in its 3 round trips, from 1 client                     ${fmt(bound.rps * n).padStart(8)} creates/s (${fmt(bound.rps)} batches/s)`);
      const ratioBound = top.memoryd.rps / (bound.rps * n);
      results.writer_bound_ratio = ratioBound;
      console.log(`memoryd's creates at 64 connections: ${(top.memoryd.rps / many.rps).toFixed(2)}× (a) at 64 clients, ` +
        `${(top.memoryd.rps / (ins100.rps * 100)).toFixed(2)}× (b), ${ratioBound.toFixed(2)}× (d) (which has the cores to itself: no HTTP, no wrk)`);
      }

      // Where the CPU goes: per request, by side.
      const vf = results.rows.find((r) => r.workload === 'view_file' && r.conns === 64);
      const cpuRows = [
        ['memoryd create, 64 connections', top?.memoryd, 'wrk'],
        ['pgbench (a) INSERT, 64 clients', many, 'pgbench'],
        ['pgbench (d) the writer\'s bound, per create', bound, 'pgbench'],
        ['memoryd view of a file, 64 connections', vf?.memoryd, 'wrk'],
        ['ceiling (fixed reply; as memoryd)', vf?.ceiling, 'wrk'],
        ['pgbench (c) PK SELECT, 64 clients', sel, 'pgbench'],
      ].filter(([, run]) => run);
      console.log(`\nCPU per request, µs of one core (${cpus.length} cores; the median run of each; server, PostgreSQL, load generator):`);
      for (const [what, run, client] of cpuRows) {
        const c = run.cpu;
        const total = c.memoryd + c.postgres + c.client;
        console.log(`  ${what.padEnd(44)} ${`${fmt(run.rps)}/s`.padStart(10)}  memoryd ${c.memoryd.toFixed(1).padStart(5)}  PostgreSQL ${c.postgres.toFixed(1).padStart(5)}  ` +
          `${client} ${c.client.toFixed(1).padStart(5)}  = ${total.toFixed(1).padStart(5)}`);
      }
      results.cpu = Object.fromEntries(cpuRows.map(([what, run]) => [what, run.cpu]));
      // The view's bound: an HTTP request that cost no more than the ceiling's fixed reply (wrk
      // included) plus a query that cost no more than pgbench's PK SELECT (pgbench included).
      if (vf) {
      const perView = vf.ceiling.cpu.memoryd + vf.ceiling.cpu.client + sel.cpu.postgres + sel.cpu.client;
      const viewBound = (cpus.length * 1e6) / perView;
      const ofBound = vf.memoryd.rps / viewBound;
      results.view_bound = { rps: viewBound, cpu_us: perView, ratio: ofBound };
      console.log(`  bound for a view: the ceiling's reply + pgbench's PK SELECT, ${perView.toFixed(1)} µs on ${cpus.length} cores: ` +
        `${fmt(viewBound)}/s (${(viewBound / sel.rps).toFixed(2)}× (c)); memoryd's view reaches ${ofBound.toFixed(2)}× of it`);
      // The view's target is met directly (≥ 0.7× (c)), or, where that is out of reach on these
      // cores, by reaching 0.9× of the bound.
      const vt = results.targets.find((t) => t.what.startsWith('view 1 KiB file at 64'));
      vt.got += `; ${ofBound.toFixed(2)}× the bound of ${fmt(viewBound)}/s (≥ 0.9× meets it too)`;
      vt.ok ||= ofBound >= 0.9;
      // The same with the SELECT pipelined as memoryd sends its views ((c'), 4 clients): the
      // server's cost of a query when it need not wake for each. Printed, not a target: it
      // shows how much of a view's cost is memoryd's own.
      const pr = [];
      for (let k = 0; k < REPEAT; k++) pr.push(measured(() => pgbench(cluster, refDb, scripts.selectPipelined, { clients: 4 })));
      const pipe = medianRun(pr);
      const perSel = { postgres: pipe.cpu.postgres / PIPELINE_N, client: pipe.cpu.client / PIPELINE_N };
      const perView2 = vf.ceiling.cpu.memoryd + vf.ceiling.cpu.client + perSel.postgres + perSel.client;
      const bound2 = (cpus.length * 1e6) / perView2;
      results.view_bound_pipelined = { selects_per_sec: pipe.rps * PIPELINE_N, cpu_us: perView2, rps: bound2, ratio: vf.memoryd.rps / bound2 };
      console.log(`  (c') the PK SELECT pipelined, ${PIPELINE_N} a pipeline, 4 clients: ${fmt(pipe.rps * PIPELINE_N)}/s, ` +
        `PostgreSQL ${perSel.postgres.toFixed(1)} µs + pgbench ${perSel.client.toFixed(1)} µs a SELECT (memoryd's views: PostgreSQL ${vf.memoryd.cpu.postgres.toFixed(1)} µs)\n` +
        `  the ceiling's reply + a pipelined SELECT, ${perView2.toFixed(1)} µs: ${fmt(bound2)}/s; memoryd's view reaches ${(vf.memoryd.rps / bound2).toFixed(2)}× of it ` +
        `(memoryd's own ${vf.memoryd.cpu.memoryd.toFixed(1)} µs a view against the ceiling's ${vf.ceiling.cpu.memoryd.toFixed(1)} µs is the rest)`);
      }

      if (STATS) {
        console.log('\nmemoryd\'s statements in the server (pg_stat_statements, the whole run):');
        console.log(psql(cluster, mdDb, `SELECT lpad(calls::text, 9) || lpad(round(mean_exec_time::numeric * 1000, 1)::text, 9) || ' µs  ' ||
          left(regexp_replace(query, '\\s+', ' ', 'g'), 100) FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          ORDER BY total_exec_time DESC LIMIT 12`));
      }
    } finally {
      await Promise.all([md.stop(), ceiling.stop()]);
    }

    // Round trips per command.
    console.log('\nround trips and statements per command (one command at a time: its request log line, and its write batch, COMMIT included):');
    results.round_trips = await roundTrips(cluster, work);
    const rw = [36, 4, 12, 22, 9, 10];
    const rprint = (cells) => console.log(cells.map((c, i) => (i === 0 ? String(c).padEnd(rw[i]) : String(c).padStart(rw[i]))).join(' '));
    rprint(['command', 'sql', 'round trips', 'its batch (+COMMIT)', 'time', 'target']);
    for (const r of results.round_trips) {
      rprint([r.what, r.sql, r.round_trips, r.batch_round_trips === null ? '' : `${r.batch_round_trips} rt, ${r.batch_statements} sql`, `${r.ms.toFixed(1)} ms`, `≤ ${r.max} ${r.ok ? 'PASS' : 'FAIL'}`]);
      results.targets.push({ what: `round trips of ${r.what}`, got: `${r.round_trips} (target ≤ ${r.max})`, ok: r.ok, asserted: true });
    }
    const sameSql = (cmd) => {
      const [a, b] = results.round_trips.filter((r) => r.what.startsWith(cmd));
      results.targets.push({ what: `${cmd}: statements for 10 vs 10,000 files`, got: `${a.sql} vs ${b.sql} (target: equal)`, ok: a.sql === b.sql, asserted: true });
    };
    sameSql('rename a directory');
    sameSql('delete a directory');

    if (!argv.includes('--no-scale')) {
      console.log('');
      results.scale = await scaleFigures(cluster, work);
      const files = results.scale.shape.bigDirs * results.scale.shape.filesPerDir;
      for (const o of results.scale.ops) {
        results.targets.push({ what: `${o.name}: 100-file tenant vs ${fmt(files)}-file tenant (among ${fmt(results.scale.shape.others)} others)`,
          got: `${o.ratio.toFixed(2)}× (target ≤ 1.5×)${o.errors ? `, ${o.errors} failed requests` : ''}`, ok: o.ratio <= 1.5 && o.errors === 0, timing: true });
        failures += o.errors;
      }
    }

    // What history costs on PostgreSQL: bench/history.mjs on two empty databases of this cluster.
    if (!argv.includes('--no-history')) {
      console.log('');
      const on = createDb(cluster, 'memoryd_hist_on');
      const off = createDb(cluster, 'memoryd_hist_off');
      const args = ['bench/history.mjs', '--build', BUILD, '--memoryd', MEMORYD, '--db-on', cluster.uri(on), '--db-off', cluster.uri(off),
        '--seconds', String(SECONDS), '--repeat', String(REPEAT), ...(QUICK ? ['--quick'] : []), '--json', path.join(work, 'history.json')];
      try {
        execFileSync(process.execPath, args, { cwd: ROOT, stdio: 'inherit' });
      } catch {
        failures++; // history.mjs printed why
      }
      const h = JSON.parse(fs.readFileSync(path.join(work, 'history.json'), 'utf8'));
      results.history = h;
      for (const t of h.targets) results.targets.push({ what: `history on PostgreSQL: ${t.what}`, got: t.got, ok: t.ok, timing: true, workload: t.what.split(' ')[0] });
      results.history_bound = historyBounds(cluster, refDb, work, h, results);
    }
  } finally {
    cluster.stop();
  }

  console.log('\ntargets (round trips are asserted; timings are read off)');
  for (const t of results.targets) console.log(`${t.ok ? 'PASS' : 'FAIL'}  ${t.what}: ${t.got}`);
  results.load_end = os.loadavg();
  console.log(`load average at the start ${results.load_start.map((x) => x.toFixed(2)).join(' ')}, at the end ${results.load_end.map((x) => x.toFixed(2)).join(' ')}`);
  if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify(results, null, 2));
  fs.rmSync(work, { recursive: true, force: true });
  const missed = results.targets.filter((t) => t.asserted && !t.ok);
  if (missed.length) {
    console.log(`\n${missed.length} round-trip target(s) exceeded`);
    process.exitCode = 1;
  }
  if (failures) {
    console.log(`\n${failures} memoryd requests failed (non-2xx or socket errors)`);
    process.exitCode = 1;
  }
}

await main();
