#!/usr/bin/env node
// Choose what scripts/valgrind.sh runs under memcheck by default: a cheap set of tests that
// together execute every line of memoryd's C sources (src/, include/) that all its candidate
// suites execute when run whole, so that memcheck still sees every line it saw when it ran them
// all.
//   node scripts/valgrind-select.mjs [--write]
// 1. Builds memoryd with gcov (build-cov/: Debug, --coverage, the program only).
// 2. Runs each candidate (scripts/valgrind.sh --all --list) whole, then each of its tests alone
//    (a top-level test, or a test directly inside a top-level describe: `FILE :: NAME`), each
//    with scripts/valgrind.sh itself on that build: under memcheck as the tier runs them (servers
//    on copies of a template database, the volume the suites take under valgrind, memoryd as slow
//    as there, which some tests need), so that a run's lines are what memcheck checks and its
//    seconds what it costs there (valgrind's tool that checks nothing took a fifth of the time of
//    a test of large bodies, a half of another's). The lines a run executed are those gcov counts
//    in the .gcda files its memoryd processes wrote at exit. A test that fails alone (it needs an
//    earlier one) is no candidate; its file still is.
// 3. The lines of the whole runs are the target. Greedy set cover: the entry (a file or a test)
//    that adds the most lines not yet covered per second it took (ties: the cheaper; by lines
//    alone, whole files won every time and cost as much as before), again, until every line is
//    covered; then drops each entry, costliest first, whose lines the others cover. A file whose
//    every test is chosen is run whole.
// 4. Runs the chosen entries together, as valgrind.sh will, and checks that they execute every
//    line of the target; when tests together miss some (one changed what another finds), it
//    adds entries for those and checks again.
// It prints each run's lines and seconds, the entries chosen with the lines each added, the
// totals, and the SELECTED and COVERED lists of scripts/valgrind.sh, which --write puts there.
// gcov sees only processes that exit (a SIGKILLed memoryd writes no counts): a line that only a
// killed process runs is on neither side of the comparison. Takes about an hour and a half on two
// busy cores, one run at a time; tests/tooling/valgrind-selection fails when a suite is added until
// it is run again. Needs valgrind and gcc's gcov.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(repo);
const write = process.argv.includes('--write');
const BUILD = 'build-cov';
const say = (s) => process.stdout.write(`${s}\n`);

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 30, ...opts });
  if (r.status !== 0 && !opts.mayFail) {
    process.stderr.write(`${r.stdout ?? ''}${r.stderr ?? ''}`);
    throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal})`);
  }
  return r;
}

run('cmake', ['-S', '.', '-B', BUILD, '-DCMAKE_BUILD_TYPE=Debug', '-DCMAKE_C_FLAGS=--coverage']);
run('cmake', ['--build', BUILD, '--target', 'memoryd', `-j${os.availableParallelism()}`]);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memoryd-valgrind-select-'));
process.on('exit', () => fs.rmSync(work, { recursive: true, force: true }));
// valgrind.sh's template database, made here before any count is kept (valgrind.sh makes it
// without valgrind: its lines are none of memcheck's).
const template = path.join(work, 'memoryd.db');
run(`${BUILD}/memoryd`, ['keys', 'list', '--db', template]);
const gcda = fs.readdirSync(BUILD, { recursive: true }).filter((f) => f.endsWith('.gcno'))
  .map((f) => path.join(BUILD, f.replace(/\.gcno$/, '.gcda')));

// The lines ("src/x.c:12") the memoryd processes of one valgrind.sh run executed, its TAP output
// and its seconds.
function measure(entries) {
  // Every count file empty, and writable by all: some tests run memoryd as another user
  // (setpriv), which could not add to a file that a root memoryd made; libgcov takes an empty
  // file for a new one.
  for (const f of gcda) {
    fs.writeFileSync(f, '');
    fs.chmodSync(f, 0o666);
  }
  const start = Date.now();
  const r = run('scripts/valgrind.sh', [BUILD, ...entries], {
    mayFail: true, env: { ...process.env, MD_TEST_TEMPLATE_DB: template },
  });
  const seconds = (Date.now() - start) / 1000;
  const written = gcda.filter((f) => fs.statSync(f).size > 0);
  for (const f of gcda) if (fs.statSync(f).size === 0) fs.rmSync(f);
  // gcov's text (-t: to stdout): "-: 0:Source:PATH" for each source file, then "COUNT: LINE:"
  // for each line, COUNT a number (a * after it when some of its blocks did not run) if it ran.
  const out = written.length ? run('gcov', ['-t', ...written.map((f) => path.relative(BUILD, f))], { cwd: BUILD }).stdout : '';
  const lines = new Set();
  let src = null;
  for (const l of out.split('\n')) {
    const m = /^\s*([^:]+):\s*(\d+):(.*)$/.exec(l);
    if (!m) continue;
    if (m[2] === '0' && m[3].startsWith('Source:')) {
      const p = path.relative(repo, path.resolve(BUILD, m[3].slice(7)));
      src = /^(src|include)\//.test(p) ? p : null;
    } else if (src && /^\d/.test(m[1].trim())) {
      lines.add(`${src}:${m[2]}`);
    }
  }
  return { ok: r.status === 0, tap: r.stdout, err: r.stderr, lines, seconds };
}

// The tests of a file that can run alone: from its TAP output, each top-level test and each test
// (or describe) directly inside a top-level describe, but those skipped.
function tests(tap) {
  const unescape = (s) => s.replace(/\\(.)/g, (_, c) => ({ n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', v: '\v' })[c] ?? c);
  const open = [];
  const top = [];
  let last = null;
  for (const l of tap.split('\n')) {
    let m = /^( *)# Subtest: (.*)$/.exec(l);
    if (m) {
      const t = { name: unescape(m[2]), depth: m[1].length / 4, children: [] };
      (t.depth === 0 ? top : open[t.depth - 1]?.children)?.push(t);
      open[t.depth] = t;
      continue;
    }
    m = /^( *)(?:not )?ok \d+ - .*?( # (?:SKIP|TODO)\b.*)?$/.exec(l);
    if (m && open[m[1].length / 4]) {
      last = open[m[1].length / 4];
      last.skipped = Boolean(m[2]);
      continue;
    }
    if (last && /^ +type: 'suite'$/.test(l)) last.suite = true;
  }
  const names = [];
  for (const t of top.filter((x) => !x.skipped)) {
    for (const x of t.suite ? t.children.filter((c) => !c.skipped) : [t]) {
      if (!x.name.includes(' :: ') && !x.name.includes('\n') && !names.includes(x.name)) names.push(x.name);
    }
  }
  return names;
}

const files = run('scripts/valgrind.sh', ['--all', '--list']).stdout.split('\n').filter((l) => /^\d/.test(l)).map((l) => l.split(' ')[1]);
const candidates = []; // { entry, file, lines, seconds }
const target = new Set();
for (const file of files) {
  const whole = measure([file]);
  if (!whole.ok) {
    process.stderr.write(`${whole.tap.slice(-6000)}${whole.err.slice(-3000)}`);
    throw new Error(`${file} failed`);
  }
  say(`${String(whole.lines.size).padStart(6)} lines ${whole.seconds.toFixed(0).padStart(4)} s  ${file}`);
  for (const l of whole.lines) target.add(l);
  candidates.push({ entry: file, file, lines: whole.lines, seconds: whole.seconds });
  const names = tests(whole.tap);
  if (names.length < 2) continue;
  for (const name of names) {
    const one = measure([`${file} :: ${name}`]);
    say(`${String(one.lines.size).padStart(6)} lines ${one.seconds.toFixed(0).padStart(4)} s    :: ${name}${one.ok ? '' : ' (fails alone: no candidate)'}`);
    if (one.ok) candidates.push({ entry: `${file} :: ${name}`, file, lines: one.lines, seconds: one.seconds });
  }
}

// Greedy: the most new lines per second (ties: the cheaper, then the first), until `want` is
// covered; `have` the lines covered so far.
function cover(want, have, chosen) {
  for (;;) {
    let best = null;
    let bestNew = 0;
    for (const c of candidates) {
      if (chosen.includes(c)) continue;
      let n = 0;
      for (const l of c.lines) if (want.has(l) && !have.has(l)) n++;
      if (n && (!best || n / c.seconds > bestNew / best.seconds || (n / c.seconds === bestNew / best.seconds && c.seconds < best.seconds))) {
        best = c;
        bestNew = n;
      }
    }
    if (!best) return;
    chosen.push(best);
    best.added = bestNew;
    for (const l of best.lines) if (want.has(l)) have.add(l);
  }
}
const chosen = [];
cover(target, new Set(), chosen);
// Drop what the others cover, costliest first; then a file's tests all chosen: the file whole.
const times = new Map();
for (const c of chosen) for (const l of c.lines) times.set(l, (times.get(l) ?? 0) + 1);
for (const c of [...chosen].sort((a, b) => b.seconds - a.seconds)) {
  if ([...c.lines].every((l) => !target.has(l) || times.get(l) > 1)) {
    chosen.splice(chosen.indexOf(c), 1);
    for (const l of c.lines) times.set(l, times.get(l) - 1);
  }
}
// The entries as valgrind.sh will run them, checked together: tests that share a file's node
// process may change what one another do.
let entries;
for (let round = 1; ; round++) {
  entries = [];
  for (const c of chosen) {
    const whole = chosen.some((x) => x.entry === c.file) ||
      candidates.filter((x) => x.file === c.file && x.entry !== c.file).every((x) => chosen.includes(x));
    const e = whole ? c.file : c.entry;
    if (!entries.includes(e)) entries.push(e);
  }
  const all = measure(entries);
  if (!all.ok) {
    process.stderr.write(`${all.tap.slice(-6000)}${all.err.slice(-3000)}`);
    throw new Error('the chosen tests fail when run together');
  }
  const missed = new Set([...target].filter((l) => !all.lines.has(l)));
  say(`\nround ${round}: the ${entries.length} entries, run together, execute ${[...target].filter((l) => all.lines.has(l)).length} of the ${target.size} lines (${all.seconds.toFixed(0)} s)`);
  if (missed.size === 0) break;
  say(`missed: ${[...missed].slice(0, 20).join(' ')}${missed.size > 20 ? ' ...' : ''}`);
  if (round === 3) throw new Error(`the chosen tests, run together, miss ${missed.size} lines three times: run the script again`);
  cover(missed, new Set(), chosen);
}

say('');
for (const c of chosen) say(`+${String(c.added).padStart(5)} lines ${c.seconds.toFixed(0).padStart(4)} s  ${c.entry}`);
const wholeSeconds = candidates.filter((c) => c.entry === c.file).reduce((s, c) => s + c.seconds, 0);
const chosenFiles = new Set(entries.map((e) => e.split(' :: ')[0]));
const covered = files.filter((f) => !chosenFiles.has(f));
const today = new Date().toISOString().slice(0, 10);
const commit = run('git', ['log', '-1', '--format=%h'], { mayFail: true }).stdout?.trim() || 'unknown';
const summary = `the ${files.length} candidates, run whole, execute ${target.size} lines of src/ and include/ (${wholeSeconds.toFixed(0)} s under memcheck, coverage build); the ${entries.length} entries SELECTED, of ${chosenFiles.size} files, run together, execute all of them`;
say(`\nvalgrind-select: ${summary}`);

const quote = (s) => (s.includes("'") ? `"${s.replace(/[\\"$`]/g, '\\$&')}"` : `'${s}'`);
const block = [
  '# valgrind-select: begin (rewritten by scripts/valgrind-select.mjs --write)',
  `# Generated by scripts/valgrind-select.mjs on ${today} (commit ${commit}):`,
  ...`${summary}.`.replace(/(.{1,96})(?: |$)/g, '$1\n').trim().split('\n').map((l) => `# ${l}`),
  '# shellcheck disable=SC2016 # the names are text, not expansions',
  'SELECTED=(',
  ...entries.map((e) => `    ${quote(e)}`),
  ')',
  `# Covered by the others, as of ${today}: every line these execute, SELECTED execute too.`,
  'COVERED=(',
  ...covered.map((f) => `    ${f}`),
  ')',
  '# valgrind-select: end',
].join('\n');
if (write) {
  const sh = fs.readFileSync('scripts/valgrind.sh', 'utf8');
  const next = sh.replace(/^# valgrind-select: begin[^]*?^# valgrind-select: end$/m, () => block);
  fs.writeFileSync('scripts/valgrind.sh', next);
  run('scripts/valgrind.sh', ['--check']);
  say('valgrind-select: wrote SELECTED and COVERED in scripts/valgrind.sh (now re-measure its COST of the files partly selected)');
} else {
  say(`\n${block}`);
}
