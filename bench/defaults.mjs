// What the defaults cost (issue 26, point 4): durable creates and str_replace of 1 KiB files at
// 64 connections against memoryd with every default on (history, change feed, search index,
// quotas) and the same build bare (--history-versions 0 --search off), in turn in one run, the
// median of --repeat runs each. With --before BIN, a third server: the build of the commit before
// the issue, bare, in the same turns. Targets: defaults / bare >= 0.85x for creates and >= 0.8x
// for str_replace; bare / before-bare >= 0.95x.
//
//   node bench/defaults.mjs [--build DIR] [--memoryd BIN] [--before BIN] [--seconds S]
//                           [--repeat N] [--conns C] [--quick] [--json FILE]
//                           [--db-defaults URI --db-bare URI [--db-before URI]]
// (--db-*: empty PostgreSQL databases, one per server; without them each server gets its own
// SQLite file.) Exits nonzero when memoryd failed a request; timings are read off the table.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BENCH_QUOTA, benchArgs, benchMain, freePort, kibWith, medianRun, poster, printTable, runAll, startProcess, tempDir, wrk } from './lib.mjs';

const { opt, quick, memoryd: MEMORYD, json: JSON_OUT } = benchArgs();
const BEFORE = opt('before', null);
const [SECONDS, REPEAT, CONNS] = [Number(opt('seconds', quick ? 1 : 5)), Number(opt('repeat', quick ? 1 : 3)), Number(opt('conns', quick ? 16 : 64))];
const THREADS = 2;
const K = 256; // files per wrk thread of a str_replace set
const BARE = ['--history-versions', '0', '--search', 'off'];

const sides = [
  { name: 'defaults', bin: MEMORYD, args: [], db: opt('db-defaults') },
  { name: 'bare', bin: MEMORYD, args: BARE, db: opt('db-bare') },
];
if (BEFORE) sides.push({ name: 'before, bare', bin: path.resolve(BEFORE), args: BARE, db: opt('db-before') });
const PG = Boolean(sides[0].db);

const fmt = (n) => Math.round(n).toLocaleString('en-US');
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
        const run = wrk({ port: s.srv.port, script: `bench/lua/${script}`, args: args(), conns: CONNS, seconds: SECONDS, threads: THREADS });
        failed += run.non2xx + run.socket_errors;
        s.runs[w].push(run);
      }
    }
  }
  const out = { engine: PG ? 'postgres' : 'sqlite', conns: CONNS, seconds: SECONDS, repeat: REPEAT, workloads: {}, targets: [] };
  const head = ['workload', ...sides.map((s) => s.name), 'defaults / bare', ...(BEFORE ? ['bare / before'] : [])];
  const rows = [head];
  const targets = { create: 0.85, str_replace: 0.8 };
  for (const w of ['create', 'str_replace']) {
    const med = sides.map((s) => medianRun(s.runs[w]));
    const ratio = med[0].rps / med[1].rps;
    const vsBefore = BEFORE ? med[1].rps / med[2].rps : null;
    out.workloads[w] = Object.fromEntries(sides.map((s, i) => [s.name, { rps: med[i].rps, p99_us: med[i].p99_us, runs: s.runs[w].map((x) => x.rps) }]));
    out.workloads[w].ratio = ratio;
    if (BEFORE) out.workloads[w].bare_vs_before = vsBefore;
    rows.push([`${w} (1 KiB)`, ...med.map((m) => `${fmt(m.rps)}/s p99 ${(m.p99_us / 1000).toFixed(1)} ms`), `${ratio.toFixed(2)}x`,
      ...(BEFORE ? [`${vsBefore.toFixed(2)}x`] : [])]);
    console.log(`  ${w}: ${sides.map((s) => `${s.name} ${s.runs[w].map((x) => fmt(x.rps)).join(', ')}`).join('; ')}`);
    out.targets.push({ what: `${w}: defaults / bare`, got: `${ratio.toFixed(2)}× (target ≥ ${targets[w]}×)`, ok: ratio >= targets[w] });
    if (BEFORE) out.targets.push({ what: `${w}: bare / the commit before the issue, bare`, got: `${vsBefore.toFixed(2)}× (target ≥ 0.95×)`, ok: vsBefore >= 0.95 });
  }
  console.log();
  printTable(rows);
  console.log('');
  for (const t of out.targets) console.log(`${t.ok ? 'PASS' : 'FAIL'}  ${t.what}: ${t.got}`);
  for (const s of sides) await s.srv.stop();
  if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify(out, null, 2));
  return failed;
}

benchMain(main);
