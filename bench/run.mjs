// memoryd's benchmark (run by bench/run.sh): one run that measures memoryd and its references
// side by side, so that the ratios hold on a noisy machine.
//   - the ceiling: bench_ceiling, a libmicrohttpd server answering every POST with a fixed body,
//     in memoryd's threading mode;
//   - the peer: the official SDK's BetaLocalFilesystemMemoryTool behind Node http (bench/peer);
//   - the storage floor: bench_floor, durable SQLite commits in-process, one per write and 100
//     per transaction, on the same disk and schema.
// For each workload and 1, 16 and 64 connections, wrk (with the Lua scripts in bench/lua) runs
// the ceiling, memoryd and the peer back to back. Then the scale figures (bench/scale.mjs) and
// memory. Prints one table and the targets of the benchmark issue with PASS/FAIL.
//
//   node bench/run.mjs [--seconds N] [--repeat N] [--quick] [--build DIR] [--memoryd BIN] [--json FILE] [--no-scale]
// --repeat: runs of each read and create figure (default 3; 1 with --quick); the median counts.
// --quick: 1 s per run, 1 and 16 connections, small scale test (the ctest smoke).
// --memoryd: another memoryd binary to measure (e.g. an older build), against the same
// references (the ceiling and the floor of --build, the peer).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BENCH_QUOTA, ROOT, freePort, medianRun, startProcess, tempDir, poster, runAll, wrk, memKiB, kibWith } from './lib.mjs';
import { scaleFigures } from './scale.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const QUICK = argv.includes('--quick');
const SECONDS = Number(opt('--seconds', QUICK ? 1 : 5));
const BUILD = path.resolve(ROOT, opt('--build', 'build'));
const MEMORYD = path.resolve(ROOT, opt('--memoryd', path.join(BUILD, 'memoryd')));
const JSON_OUT = opt('--json', null);
const CONNS = QUICK ? [1, 16] : [1, 16, 64];
const REPEAT = Number(opt('--repeat', QUICK ? 1 : 3));
const K = 256; // files per wrk thread in the toggle/insert/mixed/delete+create sets

const threadsFor = (c) => Math.min(c, 2);
const WORKLOADS = [
  { id: 'view_file', name: 'view 1 KiB file', script: 'view.lua', repeatable: true, args: () => ['/memories/bench/file-1k.txt'] },
  { id: 'view_dir', name: 'view 100-entry dir', script: 'view.lua', repeatable: true, args: () => ['/memories/bench/dir100'] },
  { id: 'create', name: 'create (unique)', write: true, script: 'create.lua', repeatable: true, args: (c) => [`/memories/bench/new-c${c}`] },
  { id: 'str_replace', name: 'str_replace 1 KiB', write: true, script: 'str_replace.lua', args: (c) => [`/memories/bench/sr-c${c}`, K] },
  { id: 'insert', name: 'insert', write: true, script: 'insert.lua', args: (c) => [`/memories/bench/ins-c${c}`, K] },
  { id: 'delete_create', name: 'delete+create', write: true, script: 'delete_create.lua', args: (c) => [`/memories/bench/dc-c${c}`, K] },
  { id: 'mixed', name: 'mixed 80/20', script: 'mixed.lua', args: (c) => [`/memories/bench/mix-c${c}`, K] },
];

function seedCommands() {
  const cmds = [{ command: 'create', path: '/memories/bench/file-1k.txt', file_text: kibWith('state=on') }];
  for (let i = 0; i < 100; i++) {
    cmds.push({ command: 'create', path: `/memories/bench/dir100/note-${String(i).padStart(3, '0')}.txt`, file_text: `note ${i}: ${'x'.repeat(80)}\n` });
  }
  for (const c of CONNS) {
    for (let f = 0; f < threadsFor(c) * K; f++) {
      cmds.push({ command: 'create', path: `/memories/bench/sr-c${c}/f${f}.txt`, file_text: kibWith('state=on') });
      cmds.push({ command: 'create', path: `/memories/bench/mix-c${c}/f${f}.txt`, file_text: kibWith('state=on') });
      cmds.push({ command: 'create', path: `/memories/bench/ins-c${c}/f${f}.txt`, file_text: kibWith('insert target') });
    }
  }
  return cmds;
}

// The floor's two JSON lines, by mode.
function floorRun(dir) {
  const out = execFileSync(path.join(BUILD, 'bench/bench_floor'), [dir, String(Math.max(2, SECONDS))],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const rows = out.trim().split('\n').map((l) => JSON.parse(l));
  return Object.fromEntries(rows.map((r) => [r.mode, r]));
}

const fmt = (n) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1));
const us = (n) => (n >= 1000 ? `${(n / 1000).toFixed(n >= 10000 ? 0 : 1)} ms` : `${n} µs`);
const ratio = (a, b) => (b > 0 ? `${(a / b).toFixed(2)}×` : '—');

async function main() {
  const work = tempDir('memoryd-bench-');
  const cpus = os.cpus();
  const machine = `${cpus.length} × ${cpus[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}`;
  console.log(`memoryd benchmark — ${new Date().toISOString()}\nmachine: ${machine}\nmemoryd: ${path.relative(ROOT, MEMORYD)}\n` +
    `wrk on the same machine; ${SECONDS} s per run; durability full; reads and creates: the median of ${REPEAT} runs\n`);

  // The storage floor first, on an idle machine and the same disk as memoryd's database.
  const floor = floorRun(work);
  console.log(`storage floor (in-process, 1 KiB creates, synchronous=FULL): one commit per write ${fmt(floor['per-write'].per_sec)}/s, ` +
    `100 per commit ${fmt(floor.batched.per_sec)}/s\n`);

  const [pc, pm, pp] = [await freePort(), await freePort(), await freePort()];
  const logFile = (name) => ({ logFile: path.join(work, `${name}.log`) });
  const ceiling = await startProcess('ceiling', path.join(BUILD, 'bench/bench_ceiling'), [String(pc)], pc, logFile('ceiling'));
  // memoryd as deployed: default settings (durability full, a log line per request).
  const memoryd = await startProcess('memoryd', MEMORYD,
    // --search off: as the figures of this table were first measured (before search); the index's
    // cost is bench/search.mjs's.
    ['--port', String(pm), '--db', path.join(work, 'memoryd.db'), '--search', 'off', ...BENCH_QUOTA], pm, logFile('memoryd'));
  const peerDir = path.join(work, 'peer');
  fs.mkdirSync(peerDir);
  const peer = await startProcess('peer', process.execPath, [path.join(ROOT, 'bench/peer/server.mjs'), String(pp), peerDir], pp, logFile('peer'));
  const results = { machine, seconds: SECONDS, floor, rows: [], scale: null, memory: null };
  try {
    for (const [srv, port] of [[memoryd, pm], [peer, pp]]) {
      const p = poster(port);
      const t0 = Date.now();
      await runAll(p, seedCommands());
      p.close();
      console.log(`seeded ${srv.name} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
    console.log('');
    const head = ['workload', 'conns', 'memoryd req/s', 'p50', 'p99', 'ceiling req/s', '× ceiling', 'peer req/s', 'peer p99', '× peer', 'non-2xx'];
    const table = [head];
    const print = (cells) => console.log(cells.map((c, i) => String(c).padStart(i === 0 ? 0 : [5, 13, 8, 8, 13, 9, 10, 8, 8, 7][i - 1]).padEnd(i === 0 ? 19 : 0)).join(' '));
    print(head);
    for (const w of WORKLOADS) {
      for (const c of CONNS) {
        // Workloads that can run again from where they left off (reads, creates at new paths)
        // run REPEAT times, the three servers in turn each time; each side's figures are those
        // of its median run, so one disturbed run does not make a ratio.
        const reps = w.repeatable ? REPEAT : 1;
        const runs = { ceiling: [], memoryd: [], peer: [] };
        for (let k = 0; k < reps; k++) {
          for (const [side, port] of [['ceiling', pc], ['memoryd', pm], ['peer', pp]]) {
            const args = w.id === 'create' ? [`${w.args(c)[0]}-${side}-${k}`] : w.args(c);
            runs[side].push(wrk({ port, script: `bench/lua/${w.script}`, args, conns: c, seconds: SECONDS }));
          }
        }
        const [ce, m, pe] = ['ceiling', 'memoryd', 'peer'].map((side) => medianRun(runs[side]));
        const row = { workload: w.id, name: w.name, write: !!w.write, conns: c, runs: reps, memoryd: m, ceiling: ce, peer: pe,
          samples: reps > 1 ? Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, v.map((r) => r.rps)])) : undefined };
        results.rows.push(row);
        const cells = [w.name, c, fmt(m.rps), us(m.p50_us), us(m.p99_us), fmt(ce.rps), ratio(m.rps, ce.rps), fmt(pe.rps), us(pe.p99_us), ratio(m.rps, pe.rps), m.non2xx + m.socket_errors];
        table.push(cells);
        print(cells);
        if (w.id === 'mixed' && c === CONNS.at(-1)) results.memory = { conns: c, ...memKiB(memoryd.proc.pid) };
      }
    }
    const mem = results.memory;
    console.log(`\nmemoryd memory after mixed at ${mem.conns} connections: RSS ${(mem.rss / 1024).toFixed(1)} MiB; ` +
      `peak (VmHWM) over the whole run ${(mem.hwm / 1024).toFixed(1)} MiB`);
  } finally {
    await Promise.all([ceiling.stop(), memoryd.stop(), peer.stop()]);
  }
  results.floorGap = await floorGap(work, results, floor);

  if (!argv.includes('--no-scale')) {
    console.log('');
    results.scale = await scaleFigures({ memoryd: MEMORYD, work, seconds: SECONDS, quick: QUICK, repeat: REPEAT, log: console.log });
  }

  console.log('\ntargets');
  const targets = checkTargets(results, floor);
  for (const t of targets) console.log(`${t.ok ? 'PASS' : 'FAIL'}  ${t.what}: ${t.got}`);
  results.targets = targets;
  if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify(results, null, 2));
  fs.rmSync(work, { recursive: true, force: true });
  const errors = results.rows.reduce((n, r) => n + r.memoryd.non2xx + r.memoryd.socket_errors, 0);
  if (errors) {
    console.log(`\n${errors} memoryd requests failed (non-2xx or socket errors)`);
    process.exitCode = 1;
  }
}

// CPU time per request of a run, in µs of one core: wrk, the server and the kernel together.
const cpuPerRequest = (run) => (os.cpus().length * run.cpu_busy * 1e6) / run.rps;

// Where creates at the top connection count stand against the floor's batched rate: memoryd
// with durability full and with durability normal (no flush at all), on fresh databases, in
// turn; and what a create could reach on these cores if it cost no more CPU than the
// ceiling's fixed reply, or than memoryd's view of a file, plus the floor's CPU per write.
async function floorGap(work, results, floor) {
  const top = CONNS.at(-1);
  const cores = os.cpus().length;
  const servers = [];
  for (const durability of ['full', 'normal']) {
    const port = await freePort();
    servers.push(await startProcess(`memoryd-${durability}`, MEMORYD,
      ['--port', String(port), '--db', path.join(work, `gap-${durability}.db`), '--durability', durability, '--search', 'off', ...BENCH_QUOTA], port,
      { logFile: path.join(work, `gap-${durability}.log`) }));
  }
  const runs = [[], []];
  try {
    for (let k = 0; k < REPEAT; k++) {
      servers.forEach((srv, i) => runs[i].push(wrk({ port: srv.port, script: 'bench/lua/create.lua',
        args: [`/memories/bench/gap-${k}`], conns: top, seconds: SECONDS })));
    }
  } finally {
    await Promise.all(servers.map((srv) => srv.stop()));
  }
  const [full, normal] = runs.map(medianRun);
  const batched = floor.batched.per_sec;
  const row = (id) => results.rows.find((r) => r.workload === id && r.conns === top);
  const floorCpu = floor.batched.cpu_us_per_write;
  const bound = (what, run) => {
    const cpu = cpuPerRequest(run);
    return { what, cpu_us: cpu, rps: (cores * 1e6) / (cpu + floorCpu) };
  };
  const bounds = [bound('ceiling\'s reply', row('create').ceiling),
    bound('memoryd\'s view of a file', row('view_file').memoryd)];
  const w = 50;
  console.log(`\ncreates at ${top} connections against the floor's batched rate (${fmt(batched)}/s); fresh databases, ` +
    `the median of ${REPEAT} runs each; CPU per request counts wrk, server and kernel on all ${cores} cores:`);
  for (const [what, run, all] of [['durability full', full, runs[0]], ['durability normal (no flush at all)', normal, runs[1]]]) {
    console.log(`  ${`memoryd, ${what}`.padEnd(w)} ${fmt(run.rps).padStart(8)}/s  ${ratio(run.rps, batched)}  ` +
      `CPU ${cpuPerRequest(run).toFixed(1)} µs per create  (runs: ${all.map((r) => fmt(r.rps)).join(', ')})`);
  }
  for (const b of bounds) {
    console.log(`  ${`bound: ${b.what} + floor's write`.padEnd(w)} ${fmt(b.rps).padStart(8)}/s  ${ratio(b.rps, batched)}  ` +
      `CPU ${b.cpu_us.toFixed(1)} + ${floorCpu.toFixed(1)} µs per create`);
  }
  return { conns: top, full, normal, floor_cpu_us_per_write: floorCpu, bounds };
}

function checkTargets(results, floor) {
  const row = (id, c) => results.rows.find((r) => r.workload === id && r.conns === c);
  const out = [];
  const add = (what, value, min, unit = '×') => out.push({ what, got: `${value.toFixed(2)}${unit} (target ≥ ${min}${unit})`, ok: value >= min });
  const top = CONNS.at(-1);
  for (const c of CONNS.filter((x) => x >= 16)) {
    const r = row('view_file', c);
    add(`view 1 KiB file vs ceiling, ${c} conns`, r.memoryd.rps / r.ceiling.rps, 0.7);
  }
  for (const c of CONNS) {
    const r = row('view_dir', c);
    add(`view 100-entry dir vs peer, ${c} conns`, r.memoryd.rps / r.peer.rps, 40);
  }
  for (const id of ['create', 'str_replace', 'insert', 'delete_create']) {
    const r = row(id, top);
    add(`${id} (durable) vs peer, ${top} conns`, r.memoryd.rps / r.peer.rps, 4);
  }
  const cr = row('create', top);
  add(`create (durable) at ${top} conns vs one commit per write (${Math.round(floor['per-write'].per_sec)}/s)`, cr.memoryd.rps / floor['per-write'].per_sec, 5);
  add(`create (durable) at ${top} conns vs 100 writes per commit (${Math.round(floor.batched.per_sec)}/s)`, cr.memoryd.rps / floor.batched.per_sec, 0.7);
  if (results.memory) {
    out.push({ what: `peak RSS (whole run, up to ${top} conns, mixed included)`, got: `${(results.memory.hwm / 1024).toFixed(1)} MiB (target ≤ 64 MiB)`, ok: results.memory.hwm <= 64 * 1024 });
  }
  for (const t of results.scale?.targets ?? []) out.push(t);
  return out;
}

await main();
