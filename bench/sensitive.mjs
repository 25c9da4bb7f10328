// What the secret check costs and how often it is wrong (issue 25, point 2):
//   - creates of 1 KiB files (bench/lua/create.lua) at 64 connections against two memoryd on
//     SQLite, one with --sensitive reject (the default), one with --sensitive off, in turn, the
//     median of --repeat runs (7) of --seconds (5) each: the ratio on / off (target >= 0.95);
//   - false positives: every file of a corpus of ordinary notes written through POST /memory to
//     the memoryd that checks (a refusal there is a false positive): this repository's README,
//     CHANGELOG, docs, sources and clients (not tests/, which plant secrets on purpose) and the
//     licences of Debian's /usr/share/common-licenses (prose); the refusals printed by kind and
//     file.
//
//   node bench/sensitive.mjs [--seconds S] [--repeat N] [--build DIR] [--json FILE]
// wrk must be installed (scripts/setup.sh --bench). Exits nonzero when memoryd failed a request.
import fs from 'node:fs';
import path from 'node:path';
import { BENCH_QUOTA, ROOT, freePort, medianRun, poster, startProcess, tempDir, wrk } from './lib.mjs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const SECONDS = Number(opt('--seconds', 5));
const REPEAT = Number(opt('--repeat', 7));
const BIN = path.join(ROOT, opt('--build', 'build'), 'memoryd');
const JSON_OUT = opt('--json', null);

async function server(name, mode, dir) {
  const port = await freePort();
  return startProcess(name, BIN, ['--port', port, '--db', path.join(dir, `${name}.db`), '--sensitive', mode,
    '--log-level', 'warn', ...BENCH_QUOTA], port);
}

// The corpus: [name, text] of files under 1 MiB that are UTF-8 text.
function corpus() {
  const files = [];
  const walk = (dir, keep) => {
    if (!fs.existsSync(dir)) return;
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (!['node_modules', 'dist', 'tests', 'build', '.git'].includes(e.name)) walk(p, keep);
      } else if (keep(e.name)) {
        files.push(p);
      }
    }
  };
  for (const f of ['README.md', 'CHANGELOG.md', 'openapi.yaml']) files.push(path.join(ROOT, f));
  walk(path.join(ROOT, 'docs'), (n) => /\.(md|yml)$/.test(n));
  walk(path.join(ROOT, 'src'), (n) => /\.c$/.test(n));
  walk(path.join(ROOT, 'include'), (n) => /\.(h|def)$/.test(n));
  walk(path.join(ROOT, 'clients'), (n) => /\.(ts|py|md|mjs)$/.test(n));
  walk(path.join(ROOT, 'bench'), (n) => /\.(mjs|c|md)$/.test(n));
  walk('/usr/share/common-licenses', () => true);
  const out = [];
  for (const f of files) {
    const buf = fs.readFileSync(f);
    if (buf.length === 0 || buf.length > 1 << 20) continue;
    const text = buf.toString('utf8');
    if (Buffer.from(text, 'utf8').equals(buf)) out.push([path.relative(ROOT, f).startsWith('..') ? f : path.relative(ROOT, f), text]);
  }
  return out;
}

const dir = tempDir('memoryd-bench-sensitive-');
const on = await server('on', 'reject', dir);
const off = await server('off', 'off', dir);
let failed = false;
const result = {};
try {
  // Creates, in turn.
  const runs = { on: [], off: [] };
  for (let i = 0; i < REPEAT; i++) {
    for (const [name, s] of [['on', on], ['off', off]]) {
      const r = wrk({ port: s.port, script: 'bench/lua/create.lua', args: [`/memories/r${i}`], conns: 64, seconds: SECONDS });
      if (r.non2xx) failed = true;
      runs[name].push(r);
    }
  }
  const mOn = medianRun(runs.on);
  const mOff = medianRun(runs.off);
  result.creates = { on: mOn.rps, off: mOff.rps, ratio: mOn.rps / mOff.rps, runs_on: runs.on.map((r) => r.rps), runs_off: runs.off.map((r) => r.rps) };

  // False positives.
  const files = corpus();
  const p = poster(on.port, { tenant: 'corpus', sockets: 8 });
  const refused = [];
  let bytes = 0;
  for (let i = 0; i < files.length; i++) {
    const [name, text] = files[i];
    bytes += Buffer.byteLength(text);
    const r = await p.post({ command: 'create', path: `/memories/c${i}.txt`, file_text: text });
    if (r.status === 422) refused.push([name, r.json.content]);
    else if (r.status !== 200 && r.status !== 413 && r.status !== 507) failed = true;
  }
  p.close();
  result.corpus = { files: files.length, bytes, false_positives: refused.length, refused };
} finally {
  on.proc.kill('SIGTERM');
  off.proc.kill('SIGTERM');
  fs.rmSync(dir, { recursive: true, force: true });
}

const n = (x) => Math.round(x).toLocaleString('en');
console.log(`memoryd secret check benchmark — ${new Date().toISOString()}`);
console.log(`creates of 1 KiB, 64 connections, ${SECONDS} s, median of ${REPEAT}: --sensitive reject ${n(result.creates.on)}/s, off ${n(result.creates.off)}/s: ${result.creates.ratio.toFixed(3)}x (target >= 0.95)`);
console.log(`  runs on: ${result.creates.runs_on.map(n).join(', ')}; off: ${result.creates.runs_off.map(n).join(', ')}`);
console.log(`false positives: ${result.corpus.false_positives} of ${result.corpus.files} files (${(result.corpus.bytes / 1048576).toFixed(1)} MiB: README, CHANGELOG, openapi.yaml, docs, src, include, clients, bench, /usr/share/common-licenses)`);
for (const [name, text] of result.corpus.refused) console.log(`  ${name}: ${text}`);
if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify(result, null, 2));
process.exit(failed ? 1 : 0);
