// What the defaults cost (issue 26, point 4): durable creates and str_replace of 1 KiB files at
// 64 connections against memoryd with every default on (history, change feed, search index,
// quotas) and the same build bare (--history-versions 0 --search off), in turn in one run, the
// median of --repeat runs each. A ratio is the median of the rounds' ratios (each of two runs
// side by side in time: this machine's rates drift by up to 2x between rounds, alike for both).
// On PostgreSQL the word index is written beside the writes, by a thread of memoryd's own: a run
// of a server with search on ends when its index has caught up (search_pending empty), and its
// rate is its commands over that whole time (the seconds it took printed), so that no run pays
// for the index of another's writes and none leaves its own unpaid. PostgreSQL's WAL written a
// command is printed as well (the cluster's WAL position before and after each run, so the
// index's catching up included; the bound's likewise): unlike the rates, it does not drift, and
// every byte of it is one the writers' commits wait for the disk to take. With --before BIN, a third server: the build of the commit before
// the issue, bare, in the same turns. Targets: defaults / bare >= 0.85x for creates and >= 0.8x
// for str_replace; bare / before-bare >= 0.95x.
//
//   node bench/defaults.mjs [--build DIR] [--memoryd BIN] [--before BIN] [--seconds S]
//                           [--repeat N] [--conns C] [--quick] [--json FILE] [--each]
//                           [--postgres | --db-defaults URI --db-bare URI [--db-before URI]]
// (--postgres: a PostgreSQL cluster of the benchmark's own, bench/cluster.mjs, a database per
// server; --db-*: empty PostgreSQL databases of yours; otherwise each server gets its own SQLite
// file.) Exits nonzero when memoryd failed a request; timings are read off the table.
//
// The same rounds also run the bound of point 4: a program that stores only what the features must
// keep (the text and the feed; with the defaults also each write's delta and the word index's
// postings, indexed beside the writes), with the same engine and none of memoryd, at the batch size
// memoryd bare had in that round (memoryd_write_batch_size): on SQLite bench/defaults_bound.c (a
// file in the run's directory), on PostgreSQL bench/defaults_bound_pg.c (a fresh database of the
// cluster a run, so only with --postgres: with --db-* there is no cluster to make one in, and the
// bound is left out). Its defaults / bare is the most any design of those features allows here:
// where memoryd's ratio misses the target, >= 0.9x of the bound's meets the point.
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import fs from 'node:fs';
import path from 'node:path';
import { createDb, psql, startCluster } from './cluster.mjs';
import { BENCH_QUOTA, benchArgs, benchMain, freePort, kibWith, medianRun, poster, printTable, runAll, startProcess, tempDir, wrk } from './lib.mjs';

const { opt, quick, build: BUILD, memoryd: MEMORYD, json: JSON_OUT } = benchArgs();
const BEFORE = opt('before', null);
const [SECONDS, REPEAT, CONNS] = [Number(opt('seconds', quick ? 1 : 5)), Number(opt('repeat', quick ? 1 : 3)), Number(opt('conns', quick ? 16 : 64))];
const THREADS = 2;
const K = 256; // files per wrk thread of a str_replace set
const BARE = ['--history-versions', '0', '--search', 'off'];

const cluster = process.argv.includes('--postgres') ? startCluster(path.join(tempDir('memoryd-bench-defaults-pg-'), 'cluster')) : null;
const dbOf = (name) => (cluster ? cluster.uri(createDb(cluster, `memoryd_${name}`)) : opt(`db-${name}`));
const sides = [
  { name: 'defaults', bin: MEMORYD, args: [], db: dbOf('defaults') },
  { name: 'bare', bin: MEMORYD, args: BARE, db: dbOf('bare') },
];
if (BEFORE) sides.push({ name: 'before, bare', bin: path.resolve(BEFORE), args: BARE, db: dbOf('before') });
// --each: what each feature costs alone, two more servers in the same turns.
if (process.argv.includes('--each')) {
  sides.push({ name: 'search off', bin: MEMORYD, args: ['--search', 'off'], db: dbOf('search_off') });
  sides.push({ name: 'history off', bin: MEMORYD, args: ['--history-versions', '0'], db: dbOf('history_off') });
}
const PG = Boolean(sides[0].db);

const fmt = (n) => Math.round(n).toLocaleString('en-US');
const BOUND_MODES = ['bare', 'defaults'];
const bound = { create: { bare: [], defaults: [], batch: [] }, str_replace: { bare: [], defaults: [], batch: [] } };

// memoryd's write batches so far: the sum and count of memoryd_write_batch_size.
async function batches(port) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const num = (name) => Number((text.match(new RegExp(`^${name} (\\S+)$`, 'm')) || [])[1] || 0);
  return { sum: num('memoryd_write_batch_size_sum'), count: num('memoryd_write_batch_size_count') };
}
// The bound's program for the engine, and where it stores: SQLite, a file in `dir` (the program
// makes it again each run); PostgreSQL, a database of the cluster's made for the run and dropped
// after it.
const BOUND = PG ? (cluster ? { prog: 'defaults_bound_pg', engine: 'PostgreSQL' } : null) : { prog: 'defaults_bound', engine: 'SQLite' };
let boundDbs = 0;
function boundRun(dir, workload, mode, batch) {
  const db = PG ? createDb(cluster, `bound_${++boundDbs}`) : null;
  try {
    const out = execFileSync(path.join(BUILD, `bench/bench_${BOUND.prog}`), [db ? cluster.uri(db) : dir, String(SECONDS), String(batch), workload, mode],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    return JSON.parse(out.trim().split('\n').pop());
  } finally {
    if (db) psql(cluster, 'postgres', `DROP DATABASE ${db}`);
  }
}
const medianOf = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
// PostgreSQL: the cluster's WAL position, in bytes (any side's database: it is the cluster's).
const walAt = () => (PG ? Number(execFileSync('psql', ['-X', '-q', '-A', '-t', '-d', sides[0].db, '-c', "SELECT pg_current_wal_lsn() - '0/0'"],
  { encoding: 'utf8' }).trim()) : 0);
// PostgreSQL, search on: the seconds until the server's word index has taken every write, that
// is until every tenant's index cursor has reached its last write (search_pending is then
// empty; counting that view's rows took hundreds of ms with a backlog, which the run's time
// would have counted as the index's).
const searchOn = (s) => !s.args.some((a, i) => a === 'off' && s.args[i - 1] === '--search');
async function indexCatchUp(s) {
  if (!s.db || !searchOn(s)) return 0;
  const t0 = Date.now();
  const behind = () => execFileSync('psql', ['-X', '-q', '-A', '-t', '-d', s.db, '-c',
    'SELECT count(*) FROM tenants t LEFT JOIN search_cursor k ON k.tenant = t.id WHERE coalesce(k.seq, 0) < t.last_seq'],
  { encoding: 'utf8' }).trim() !== '0';
  while (behind()) {
    if (Date.now() - t0 > 600000) throw new Error(`${s.name}: the word index did not catch up in 600 s`);
    await sleep(20);
  }
  return (Date.now() - t0) / 1000;
}
let failed = 0;

async function main() {
  const dir = tempDir('memoryd-bench-defaults-');
  for (const s of sides) {
    const port = await freePort();
    const db = s.db ?? path.join(dir, `${s.name.replace(/[ ,]+/g, '-')}.db`);
    s.srv = await startProcess(s.name.replace(/[ ,]+/g, '-'), s.bin,
      ['--port', String(port), '--db', db, '--log-level', 'warn', ...BENCH_QUOTA, ...s.args], port);
    const p = poster(port);
    const cmds = [];
    for (let r = 0; r < REPEAT; r++) {
      for (let f = 0; f < K * THREADS; f++) {
        cmds.push({ command: 'create', path: `/memories/bench/sr-${r}/f${f}.txt`, file_text: kibWith('state=on') });
      }
    }
    await runAll(p, cmds);
    p.close();
    s.runs = { create: [], str_replace: [] };
    if (s.db) execFileSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', s.db, '-c', 'ANALYZE'], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  console.log(`memoryd defaults against bare (${BARE.join(' ')}), ${PG ? 'PostgreSQL' : 'SQLite'}: ${CONNS} connections, ` +
    `${SECONDS} s per run, median of ${REPEAT} runs, the servers in turn\n`);
  for (let r = 0; r < REPEAT; r++) {
    for (const [w, script, args] of [
      ['create', 'create.lua', () => [`/memories/bench/new-${r}`]],
      ['str_replace', 'str_replace.lua', () => [`/memories/bench/sr-${r}`, K]],
    ]) {
      const order = r % 2 ? [...sides].reverse() : sides;
      for (const s of order) {
        const b0 = await batches(s.srv.port);
        const wal0 = walAt();
        const run = wrk({ port: s.srv.port, script: `bench/lua/${script}`, args: args(), conns: CONNS, seconds: SECONDS, threads: THREADS });
        run.catch_up = await indexCatchUp(s);
        run.wal_per_cmd = (walAt() - wal0) / Math.max(1, run.rps * SECONDS);
        run.rps *= SECONDS / (SECONDS + run.catch_up);
        const b1 = await batches(s.srv.port);
        run.batch = (b1.sum - b0.sum) / Math.max(1, b1.count - b0.count);
        failed += run.non2xx + run.socket_errors;
        s.runs[w].push(run);
      }
      if (BOUND) {
        const batch = Math.max(1, Math.round(sides[1].runs[w].at(-1).batch));
        bound[w].batch.push(batch);
        for (const m of BOUND_MODES) {
          const wal0 = walAt();
          const b = boundRun(dir, w, m, batch);
          bound[w][m].push(b.per_sec);
          if (PG) (bound[w].wal ??= { bare: [], defaults: [] })[m].push((walAt() - wal0) / b.commands);
        }
      }
    }
  }
  const out = { engine: PG ? 'postgres' : 'sqlite', conns: CONNS, seconds: SECONDS, repeat: REPEAT, workloads: {}, targets: [] };
  const head = ['workload', ...sides.map((s) => s.name), 'defaults / bare', ...(BEFORE ? ['bare / before'] : [])];
  const rows = [head];
  const targets = { create: 0.85, str_replace: 0.8 };
  const boundLines = [];
  for (const w of ['create', 'str_replace']) {
    const med = sides.map((s) => medianRun(s.runs[w]));
    const paired = (a, b) => medianOf(a.runs[w].map((x, r) => x.rps / b.runs[w][r].rps));
    const ratio = paired(sides[0], sides[1]);
    const vsBefore = BEFORE ? paired(sides[1], sides.find((s) => s.name === 'before, bare')) : null;
    out.workloads[w] = Object.fromEntries(sides.map((s, i) => [s.name, { rps: med[i].rps, p99_us: med[i].p99_us, runs: s.runs[w].map((x) => x.rps) }]));
    out.workloads[w].ratio = ratio;
    if (BEFORE) out.workloads[w].bare_vs_before = vsBefore;
    rows.push([`${w} (1 KiB)`, ...med.map((m) => `${fmt(m.rps)}/s p99 ${(m.p99_us / 1000).toFixed(1)} ms`), `${ratio.toFixed(2)}x`,
      ...(BEFORE ? [`${vsBefore.toFixed(2)}x`] : [])]);
    console.log(`  ${w}: ${sides.map((s) => `${s.name} ${s.runs[w].map((x) => fmt(x.rps)).join(', ')}`).join('; ')}`);
    if (PG) {
      console.log(`    the word index caught up after the run in: ${sides.filter(searchOn).map((s) => `${s.name} ${s.runs[w].map((x) => x.catch_up.toFixed(1)).join(', ')} s`).join('; ')}`);
      const wal = Object.fromEntries(sides.map((s) => [s.name, medianOf(s.runs[w].map((x) => x.wal_per_cmd))]));
      out.workloads[w].wal_per_command = wal;
      let line = `    WAL a command (median): ${sides.map((s) => `${s.name} ${fmt(wal[s.name])} B`).join(', ')}`;
      if (bound[w].wal) {
        const bw = { bare: medianOf(bound[w].wal.bare), defaults: medianOf(bound[w].wal.defaults) };
        out.workloads[w].bound_wal_per_command = bw;
        line += `; the bound bare ${fmt(bw.bare)} B, defaults ${fmt(bw.defaults)} B (its runs include its setup: 512 files)` +
          `; what the defaults add: memoryd ${fmt(wal.defaults - wal.bare)} B, the bound ${fmt(bw.defaults - bw.bare)} B`;
      }
      console.log(line);
    }
    const target = { what: `${w}: defaults / bare`, got: `${ratio.toFixed(2)}× (target ≥ ${targets[w]}×)`, ok: ratio >= targets[w] };
    if (BOUND) {
      const bb = medianOf(bound[w].bare), bd = medianOf(bound[w].defaults);
      const bratio = medianOf(bound[w].defaults.map((x, r) => x / bound[w].bare[r]));
      out.workloads[w].bound = { bare: bb, defaults: bd, ratio: bratio, batches: bound[w].batch, of_bound: ratio / bratio };
      boundLines.push(`  ${w}: bound bare ${fmt(bb)}/s, defaults ${fmt(bd)}/s (batches of ${bound[w].batch.join(', ')}): ` +
        `defaults / bare ${bratio.toFixed(2)}; memoryd's ${ratio.toFixed(2)} is ${(ratio / bratio).toFixed(2)}× of it`);
      if (bratio < targets[w]) {
        target.got += `; the bound allows ${bratio.toFixed(2)}: ${(ratio / bratio).toFixed(2)}× of it (≥ 0.9× meets it)`;
        target.ok ||= ratio / bratio >= 0.9;
      }
    }
    out.targets.push(target);
    if (BEFORE) out.targets.push({ what: `${w}: bare / the commit before the issue, bare`, got: `${vsBefore.toFixed(2)}× (target ≥ 0.95×)`, ok: vsBefore >= 0.95 });
  }
  console.log();
  printTable(rows);
  if (boundLines.length) {
    console.log(`\nthe bound (bench/${BOUND.prog}.c: what the features must keep, ${BOUND.engine} without memoryd, ${SECONDS} s, median of ${REPEAT}):`);
    for (const l of boundLines) console.log(l);
  } else if (!BOUND) {
    console.log('\nthe bound: left out (--db-* gives no cluster to make its databases in; --postgres runs it)');
  }
  console.log('');
  for (const t of out.targets) console.log(`${t.ok ? 'PASS' : 'FAIL'}  ${t.what}: ${t.got}`);
  for (const s of sides) await s.srv.stop();
  if (cluster) cluster.stop();
  if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify(out, null, 2));
  return failed;
}

benchMain(main);
