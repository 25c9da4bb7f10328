// What history costs (issue "memory you can trust", point 8): durable creates and str_replace of
// 1 KiB files at 64 connections, and views of a 1 KiB file, against two memoryd in the same
// run — one with history on (the defaults: 20 versions per file, 30 days), one with it off
// (--history-versions 0) — in turn, the median of --repeat runs each. Targets: writes with
// history at least 0.85x of without; a view not slower (it never reads history: the ratio is
// shown, within the run-to-run noise).
//
//   node bench/history.mjs [--build DIR] [--seconds S] [--repeat N] [--conns C] [--quick]
//                          [--db-on URI --db-off URI]   (PostgreSQL: two empty databases)
// Exits nonzero when memoryd failed a request (timings are read off the table, not asserted).
import path from 'node:path';
import { ROOT, freePort, kibWith, medianRun, poster, runAll, startProcess, tempDir, wrk } from './lib.mjs';

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : def;
};
const quick = argv.includes('--quick');
const BUILD = path.resolve(ROOT, opt('build', 'build'));
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

async function main() {
  const dir = tempDir('memoryd-bench-history-');
  for (const s of sides) {
    const port = await freePort();
    const db = s.db ?? path.join(dir, `${s.name.replace(' ', '-')}.db`);
    s.srv = await startProcess(s.name.replace(' ', '-'), path.join(BUILD, 'memoryd'),
      ['--port', String(port), '--db', db, '--log-level', 'warn', ...s.args], port);
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
  }
  const rows = [['workload', 'history on', 'history off', 'on / off', 'target']];
  const targets = { create: 0.85, str_replace: 0.85, view: null };
  for (const w of ['create', 'str_replace', 'view']) {
    const [on, off] = sides.map((s) => medianRun(s.runs[w]));
    const ratio = on.rps / off.rps;
    const t = targets[w];
    rows.push([`${w} (1 KiB)`, `${fmt(on.rps)}/s p99 ${(on.p99_us / 1000).toFixed(1)} ms`, `${fmt(off.rps)}/s p99 ${(off.p99_us / 1000).toFixed(1)} ms`,
      `${ratio.toFixed(2)}x`, t ? `>= ${t}x ${ratio >= t ? 'PASS' : 'FAIL'}` : 'not slower (history is not read on the view path)']);
    console.log(`  ${w}: on ${sides[0].runs[w].map((x) => fmt(x.rps)).join(', ')}; off ${sides[1].runs[w].map((x) => fmt(x.rps)).join(', ')}`);
  }
  console.log();
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) console.log(r.map((c, i) => c.padEnd(widths[i])).join('  '));
  for (const s of sides) await s.srv.stop();
  if (failed) {
    console.error(`memoryd failed ${failed} requests`);
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
