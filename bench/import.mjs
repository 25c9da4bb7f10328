// What a large import does to the other tenants' writes (issue 24, point 7): a tenant of
// --files files (10,000) of --size bytes (10 KiB) each, 100 MiB in all, imported with
// POST /v1/tenants/{t}/import?mode=replace while --writers clients (8) create 1 KiB files in
// tenants of their own, one request after another, all along:
//   - their p50, p99 and longest write before the import (--before seconds, 3) and while it runs;
//   - the import's own time and rate, and its time with nothing else running.
// On SQLite (a temp file) and on PostgreSQL (a cluster of its own, bench/cluster.mjs; skipped
// with --sqlite-only). memoryd runs with its defaults (durability full) and BENCH_QUOTA.
//
//   node bench/import.mjs [--files N] [--size BYTES] [--writers N] [--before S] [--sqlite-only]
//                         [--build DIR] [--memoryd BIN] [--json FILE]
// Exits nonzero when memoryd failed a request (timings are read off the table, not asserted).
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { BENCH_QUOTA, ROOT, freePort, startProcess, tempDir } from './lib.mjs';
import { createDb, startCluster } from './cluster.mjs';
import { tarArchive } from '../tests/lib/tar.mjs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const FILES = Number(opt('--files', 10000));
const SIZE = Number(opt('--size', 10240));
const WRITERS = Number(opt('--writers', 8));
const BEFORE_S = Number(opt('--before', 3));
const BIN = opt('--memoryd', path.join(ROOT, opt('--build', 'build'), 'memoryd'));
const JSON_OUT = opt('--json', null);

function archive() {
  const line = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod\n';
  const body = line.repeat(Math.ceil(SIZE / line.length)).slice(0, SIZE - 8);
  const entries = [];
  for (let i = 0; i < FILES; i++) {
    entries.push({ name: `memories/d${i % 100}/note-${i}.md`, data: `${body}${String(i).padStart(8, '0')}` });
  }
  return tarArchive(entries);
}

function request(agent, port, method, p, tenant, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const r = http.request({
      host: '127.0.0.1', port, path: p, method, agent,
      headers: { 'x-tenant-id': tenant, 'content-length': body.length, ...headers },
    }, (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(parts).toString() }));
    });
    r.on('error', reject);
    r.end(body);
  });
}

const pct = (a, p) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN;
};
const stats = (a) => ({ writes: a.length, p50_ms: pct(a, 0.5), p99_ms: pct(a, 0.99), max_ms: a.length ? Math.max(...a) : NaN });

async function importAlone(port, tar, tenant) {
  const agent = new http.Agent({ keepAlive: true });
  const t0 = Date.now();
  const r = await request(agent, port, 'POST', `/v1/tenants/${tenant}/import?mode=replace`, tenant, tar, { 'content-type': 'application/x-tar' });
  agent.destroy();
  if (r.status !== 200) throw new Error(`import: ${r.status} ${r.text.slice(0, 300)}`);
  return Date.now() - t0;
}

// One engine: memoryd on `db`; the figures.
async function run(engine, db, tar) {
  const port = await freePort();
  const srv = await startProcess(`memoryd-import-${engine}`, BIN, ['--port', port, '--db', db, ...BENCH_QUOTA], port,
    { env: { MEMORYD_LOG_LEVEL: 'warn' } });
  try {
    const alone = await importAlone(port, tar, 'alone');
    const agent = new http.Agent({ keepAlive: true, maxSockets: WRITERS + 2 });
    const lat = { before: [], during: [] };
    let phase = 'before';
    let stop = false;
    let failed = null;
    const payload = 'x'.repeat(1024);
    const writers = Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        const at = phase;
        const t0 = process.hrtime.bigint();
        const body = Buffer.from(JSON.stringify({ command: 'create', path: `/memories/w-${i}.md`, file_text: payload }));
        const r = await request(agent, port, 'POST', '/memory', `writer${w}`, body, { 'content-type': 'application/json' });
        if (r.status !== 200) failed = `write: ${r.status} ${r.text.slice(0, 300)}`;
        if (at === phase && lat[at]) lat[at].push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    });
    await new Promise((r) => setTimeout(r, BEFORE_S * 1000));
    phase = 'during';
    const t0 = Date.now();
    const r = await request(agent, port, 'POST', '/v1/tenants/big/import?mode=replace', 'big', tar, { 'content-type': 'application/x-tar' });
    const took = Date.now() - t0;
    phase = 'after';
    stop = true;
    await Promise.all(writers);
    agent.destroy();
    if (r.status !== 200) throw new Error(`import: ${r.status} ${r.text.slice(0, 300)}`);
    if (failed) throw new Error(failed);
    const mib = tar.length / 1048576;
    return {
      engine,
      import_ms: took,
      import_mib_s: mib / (took / 1000),
      import_alone_ms: alone,
      before: stats(lat.before),
      during: stats(lat.during),
    };
  } finally {
    srv.proc.kill('SIGTERM');
    await new Promise((r) => srv.proc.on('exit', r));
  }
}

const tar = archive();
const dir = tempDir('memoryd-bench-import-');
const results = [];
let cluster = null;
try {
  results.push(await run('sqlite', path.join(dir, 'memoryd.db'), tar));
  if (!args.includes('--sqlite-only')) {
    cluster = startCluster(path.join(dir, 'pg'));
    createDb(cluster, 'imports');
    results.push(await run('postgres', cluster.uri('imports'), tar));
  }
} finally {
  if (cluster) cluster.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}

const f = (x) => (Number.isFinite(x) ? x.toFixed(1) : '-');
console.log(`memoryd import benchmark — ${new Date().toISOString()}`);
console.log(`archive: ${FILES.toLocaleString('en')} files of ${SIZE.toLocaleString('en')} bytes, ${(tar.length / 1048576).toFixed(1)} MiB; ${WRITERS} writers of 1 KiB creates in tenants of their own`);
console.log('');
console.log('engine    import ms  MiB/s  alone ms | writes before: p50 ms  p99 ms  max ms | during the import: writes  p50 ms  p99 ms  max ms');
for (const r of results) {
  console.log(`${r.engine.padEnd(9)} ${String(r.import_ms).padStart(9)} ${f(r.import_mib_s).padStart(6)} ${String(r.import_alone_ms).padStart(9)} |`
    + `                ${f(r.before.p50_ms).padStart(6)} ${f(r.before.p99_ms).padStart(7)} ${f(r.before.max_ms).padStart(7)} |`
    + `                    ${String(r.during.writes).padStart(6)} ${f(r.during.p50_ms).padStart(7)} ${f(r.during.p99_ms).padStart(7)} ${f(r.during.max_ms).padStart(7)}`);
}
if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify({ files: FILES, size: SIZE, writers: WRITERS, results }, null, 2));
