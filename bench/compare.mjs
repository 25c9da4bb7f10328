// memoryd against another build of itself, in one run, on both engines: views of a 1 KiB file,
// creates of 1 KiB files at unique paths and str_replace of 1 KiB files, at 64 connections
// (wrk and bench/lua, as bench/run.mjs and bench/pg.mjs measure them), on a SQLite file and on
// a PostgreSQL cluster of the run's own (bench/cluster.mjs). Both builds serve at once, each on
// a database of its own seeded alike, with memoryd's defaults (durability full, history on).
// Their runs go in pairs, in turn (before, after; after, before; ...), so that the machine's
// drift and the order fall on both. Each build's median of --repeat runs is shown; the ratio
// after / before is the median of the pairs' ratios (a run of after over the run of before
// beside it). Prints each figure, the ratio and the target (>= 0.95 by default): it exits 1
// when a ratio misses it, or when a request fails.
//
//   node bench/compare.mjs --before BIN [--after BIN] [--seconds N] [--repeat N]
//                          [--engines sqlite,postgres] [--workloads view_file,create,str_replace]
//                          [--target 0.95] [--json FILE]
// --after defaults to build/memoryd.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDb, startCluster } from './cluster.mjs';
import { BENCH_QUOTA, ROOT, freePort, kibWith, medianRun, poster, runAll, startProcess, tempDir, wrk } from './lib.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const BEFORE = opt('--before', null);
const AFTER = path.resolve(ROOT, opt('--after', 'build/memoryd'));
const SECONDS = Number(opt('--seconds', 5));
const REPEAT = Number(opt('--repeat', 7));
const ENGINES = opt('--engines', 'sqlite,postgres').split(',');
const TARGET = Number(opt('--target', 0.95));
const JSON_OUT = opt('--json', null);
const CONNS = 64;
const THREADS = 2;
const K = 256; // str_replace files per wrk thread
if (!BEFORE) {
  console.error('usage: node bench/compare.mjs --before BIN [--after BIN] [--seconds N] [--repeat N] [--engines sqlite,postgres]');
  process.exit(2);
}

const ALL_WORKLOADS = [
  { id: 'view_file', name: 'view 1 KiB file', script: 'view.lua', args: () => ['/memories/bench/file-1k.txt'] },
  { id: 'create', name: 'create (unique)', script: 'create.lua', args: (run) => [`/memories/bench/new-r${run}`] },
  { id: 'str_replace', name: 'str_replace 1 KiB', script: 'str_replace.lua', args: () => ['/memories/bench/sr', K] },
];
const WORKLOADS = opt('--workloads', ALL_WORKLOADS.map((w) => w.id).join(','))
  .split(',')
  .map((id) => ALL_WORKLOADS.find((w) => w.id === id) ?? (() => { throw new Error(`unknown workload ${id}`); })());

function seedCommands() {
  const cmds = [{ command: 'create', path: '/memories/bench/file-1k.txt', file_text: kibWith('state=on') }];
  for (let f = 0; f < THREADS * K; f++) cmds.push({ command: 'create', path: `/memories/bench/sr/f${f}.txt`, file_text: kibWith('state=on') });
  return cmds;
}

// One memoryd of build `bin` on a database of its own, seeded.
async function serve(label, bin, db, work) {
  const port = await freePort();
  const srv = await startProcess(label, bin, ['--port', String(port), '--db', db, ...BENCH_QUOTA], port,
    { logFile: path.join(work, `${label}.log`) });
  const p = poster(port);
  await runAll(p, seedCommands());
  p.close();
  return srv;
}

const fmt = (n) => Math.round(n).toLocaleString('en-US');
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function compareEngine(engine, work, cluster) {
  const db = (which) => (engine === 'sqlite' ? path.join(work, `${which}.db`) : cluster.uri(createDb(cluster, `compare_${which}`)));
  const servers = {
    before: await serve(`${engine}-before`, BEFORE, db('before'), work),
    after: await serve(`${engine}-after`, AFTER, db('after'), work),
  };
  const rows = [];
  try {
    for (const w of WORKLOADS) {
      const runs = { before: [], after: [] };
      for (let r = 0; r < REPEAT; r++) {
        for (const which of r % 2 ? ['after', 'before'] : ['before', 'after']) {
          const res = wrk({ port: servers[which].port, script: `bench/lua/${w.script}`, args: w.args(`${which}${r}`), conns: CONNS, threads: THREADS, seconds: SECONDS });
          if (res.errors) throw new Error(`${engine} ${which} ${w.id}: ${res.errors} failed requests`);
          runs[which].push(res);
        }
      }
      const before = medianRun(runs.before), after = medianRun(runs.after);
      // The ratio: the median of the pairs' ratios (run r of after over run r of before, run
      // beside it), so that the machine's drift between pairs cancels out.
      const pairs = runs.after.map((a, r) => a.rps / runs.before[r].rps);
      const ratio = median(pairs);
      rows.push({ engine, workload: w.id, before: before.rps, after: after.rps, ratio, pairs, runs_before: runs.before.map((x) => x.rps), runs_after: runs.after.map((x) => x.rps) });
      console.log(`${engine.padEnd(9)} ${w.name.padEnd(18)} before ${fmt(before.rps).padStart(7)}/s  after ${fmt(after.rps).padStart(7)}/s  ${ratio.toFixed(2)}×  ${ratio >= TARGET ? 'PASS' : 'FAIL'}  (pairs: ${pairs.map((x) => x.toFixed(2)).join(' ')}; runs: ${runs.before.map((x) => fmt(x.rps)).join(' ')} | ${runs.after.map((x) => fmt(x.rps)).join(' ')})`);
    }
  } finally {
    await servers.before.stop();
    await servers.after.stop();
  }
  return rows;
}

async function main() {
  const work = tempDir('memoryd-compare-');
  console.log(`memoryd compared with another build — ${new Date().toISOString()}`);
  console.log(`machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB; load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  console.log(`before: ${BEFORE}\nafter:  ${AFTER}\n${CONNS} connections, ${SECONDS} s per run, ${REPEAT} runs each, the two builds in turn; ratio: the median of the pairs' ratios; target >= ${TARGET}\n`);
  let cluster = null;
  const rows = [];
  try {
    for (const engine of ENGINES) {
      if (engine === 'postgres' && !cluster) cluster = startCluster(path.join(work, 'cluster'));
      rows.push(...(await compareEngine(engine, work, cluster)));
    }
  } finally {
    cluster?.stop();
  }
  if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify({ before: BEFORE, after: AFTER, seconds: SECONDS, repeat: REPEAT, target: TARGET, rows }, null, 2));
  fs.rmSync(work, { recursive: true, force: true });
  const missed = rows.filter((r) => r.ratio < TARGET);
  console.log(missed.length ? `\n${missed.length} figure(s) under ${TARGET}×` : `\nevery figure at or over ${TARGET}×`);
  process.exit(missed.length ? 1 : 0);
}

main().catch((e) => {
  console.error(e.stack ?? e);
  process.exit(1);
});
