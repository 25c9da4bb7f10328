// What full-text search costs (issue 16, point 3), on SQLite (FTS5 word index) or, with
// --db-on/--db-off, on PostgreSQL (the GIN word index):
//   - a tenant of --files files (100,000; --quick 5,000) of about 1 KiB of words each, with
//     --tenants other tenants (10,000; --quick 500) of one such file each; one file in 1,000 of
//     every tenant holds the word "billing";
//   - a one-word search (GET /v1/search?q=billing, the first page of 10 hits of the big tenant)
//     at 16 connections: p50 and p99 (targets: <= 5 ms and <= 50 ms);
//   - creates of 1 KiB files at 64 connections against two memoryd holding the same data, one
//     with the index (--search on, the default), one without (--search off), in turn, the
//     median of --repeat runs each (target: on / off >= 0.8);
//   - the index's size on disk (SQLite's dbstat: the pages of the entries_search tables;
//     PostgreSQL: pg_total_relation_size of search_words, its words and their GIN index) per
//     MiB of file text;
//   - on PostgreSQL, what PostgreSQL alone allows (pgbench, same machine, same run): the search's
//     candidate query (memoryd's own SQL, P_SEARCH_CAND) at 16 clients, the bound of memoryd's
//     searches; the same 1 KiB insert into a table with and without the word index at 64
//     clients, which prices the index per insert: the best ratio memoryd's creates could reach
//     is 1 / (1 + that price x memoryd's rate without the index).
//
//   node bench/search.mjs [--build DIR] [--memoryd BIN] [--files N] [--tenants N] [--seconds S]
//                         [--repeat N] [--quick] [--json FILE] [--db-on URI --db-off URI]
// (--db-on/--db-off: two empty PostgreSQL databases, e.g. of `node tests/lib/pg.mjs start DIR`.)
// Every memoryd runs with BENCH_QUOTA. Exits nonzero when memoryd failed a request (timings are
// read off the table, not asserted).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { BENCH_QUOTA, ROOT, freePort, medianRun, startProcess, tempDir, wrk } from './lib.mjs';

// PostgreSQL's pgbench (Debian keeps it in /usr/lib/postgresql/<major>/bin).
function pgbenchBin() {
  const root = '/usr/lib/postgresql';
  const majors = fs.existsSync(root) ? fs.readdirSync(root).filter((d) => /^\d+$/.test(d)).sort((a, b) => b - a) : [];
  for (const m of majors) if (fs.existsSync(path.join(root, m, 'bin', 'pgbench'))) return path.join(root, m, 'bin', 'pgbench');
  throw new Error('pgbench not found in /usr/lib/postgresql');
}

// A pgbench script run against `uri`; its transactions per second (median of REPEAT runs).
function pgbenchRate(uri, dir, name, sql, clients) {
  const file = path.join(dir, `${name}.sql`);
  fs.writeFileSync(file, `${sql};\n`);
  const rates = [];
  for (let r = 0; r < REPEAT; r++) {
    const out = execFileSync(pgbenchBin(), ['-n', '-M', 'prepared', '-f', file, '-c', String(clients), '-j', '2', '-T', String(SECONDS), uri],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const tps = Number(/^tps = ([\d.]+) \(without initial connection time\)/m.exec(out)?.[1]);
    if (!(tps > 0)) throw new Error(`pgbench ${name}: no tps in\n${out}`);
    rates.push(tps);
  }
  return rates.sort((a, b) => a - b)[Math.floor(rates.length / 2)];
}

// The 1 KiB text of bench/lua/common.lua's kib_text.
const KIB_TEXT = `${'abcdefghi'.repeat(7)}\n`.repeat(16);

// What PostgreSQL alone allows (see the head of this file).
function postgresBounds(uri, dir) {
  const cand = "WITH t AS MATERIALIZED (SELECT id FROM tenants WHERE name = 'big'),"
    + " w AS MATERIALIZED (SELECT tenant, path FROM search_words WHERE words @@ '(''billing'':*) | ''#all'''::tsquery),"
    + " c AS (SELECT path FROM w WHERE tenant = (SELECT id FROM t) AND (path = '/memories' OR (path > '/memories/' AND path < '/memories0'))"
    + " UNION SELECT x.path FROM (SELECT DISTINCT path FROM search_pending WHERE tenant = (SELECT id FROM t)) p, LATERAL (SELECT e.path FROM entries e"
    + " WHERE e.tenant = (SELECT id FROM t) AND e.path = p.path AND e.kind = 0 UNION ALL SELECT e.path FROM entries e WHERE e.tenant = (SELECT id FROM t)"
    + " AND e.path > p.path || '/' AND e.path < p.path || '0' AND e.kind = 0) x WHERE x.path = '/memories' OR (x.path > '/memories/' AND x.path < '/memories0')),"
    + ' m AS (SELECT e.path, e.content FROM c JOIN entries e ON e.tenant = (SELECT id FROM t) AND e.path = c.path AND e.kind = 0)'
    + ' SELECT path, content FROM (SELECT path, content, sum(octet_length(content)) OVER (ROWS UNBOUNDED PRECEDING) - octet_length(content) AS before'
    + ' FROM m) c WHERE before < 8388608 LIMIT 501';
  const search = pgbenchRate(uri, dir, 'search-candidates', cand, 16);
  const psqlRun = (sql) => execFileSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', uri, '-c', sql], { encoding: 'utf8' });
  psqlRun('SET client_min_messages = warning; DROP TABLE IF EXISTS bound_on, bound_off; CREATE TABLE bound_on (id bigserial PRIMARY KEY, content bytea NOT NULL);'
    + ' CREATE TABLE bound_off (id bigserial PRIMARY KEY, content bytea NOT NULL);'
    + ' CREATE INDEX bound_on_words ON bound_on USING gin (memoryd_words(content)) WITH (gin_pending_list_limit = 256)');
  const text = KIB_TEXT.replace(/\n/g, '\\n');
  const on = pgbenchRate(uri, dir, 'insert-on', `INSERT INTO bound_on (content) VALUES (convert_to(E'${text}', 'UTF8'))`, 64);
  const off = pgbenchRate(uri, dir, 'insert-off', `INSERT INTO bound_off (content) VALUES (convert_to(E'${text}', 'UTF8'))`, 64);
  psqlRun('DROP TABLE bound_on, bound_off');
  return { search, insertOn: on, insertOff: off, indexUs: 1e6 / on - 1e6 / off };
}

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : def;
};
const quick = argv.includes('--quick');
const BUILD = path.resolve(ROOT, opt('build', 'build'));
const MEMORYD = path.resolve(ROOT, opt('memoryd', path.join(BUILD, 'memoryd')));
const JSON_OUT = opt('json', null);
const DB_ON = opt('db-on', null);
const DB_OFF = opt('db-off', null);
const ENGINE = DB_ON ? 'PostgreSQL' : 'SQLite';
const FILES = Number(opt('files', quick ? 5000 : 100000));
const TENANTS = Number(opt('tenants', quick ? 500 : 10000));
const SECONDS = Number(opt('seconds', quick ? 1 : 5));
const REPEAT = Number(opt('repeat', quick ? 1 : 3));
const WORD = 'billing';
const fmt = (n) => Math.round(n).toLocaleString('en-US');
let failed = 0;

// A deterministic stream of pseudo-random numbers (the same data for both servers).
function rng(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    return x / 4294967296;
  };
}
const rand = rng(16);
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';
const VOCAB = Array.from({ length: 5000 }, () => Array.from({ length: 4 + Math.floor(rand() * 6) }, () => LETTERS[Math.floor(rand() * 26)]).join(''))
  .filter((w) => !w.includes('bil'));
// About 1 KiB of words, lines of 10; `word` on line 3 when given.
function text(r, word) {
  const lines = [];
  for (let l = 0; l < 16; l++) {
    const ws = Array.from({ length: 10 }, () => VOCAB[Math.floor(r() * VOCAB.length)]);
    if (word && l === 3) ws[4] = word;
    lines.push(ws.join(' '));
  }
  return lines.join('\n') + '\n';
}
// Every create of the data set, in order: the big tenant's files, then one per other tenant.
function* dataSet() {
  const r = rng(2026);
  for (let i = 0; i < FILES; i++) {
    yield { tenant: 'big', cmd: { command: 'create', path: `/memories/d${Math.floor(i / 100)}/f${i}.md`, file_text: text(r, i % 1000 === 7 ? WORD : null) } };
  }
  for (let t = 0; t < TENANTS; t++) {
    yield { tenant: `t${t}`, cmd: { command: 'create', path: '/memories/notes.md', file_text: text(r, t % 1000 === 7 ? WORD : null) } };
  }
}

async function load(port) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const post = (tenant, cmd) => new Promise((resolve, reject) => {
    const body = JSON.stringify(cmd);
    const req = http.request({ host: '127.0.0.1', port, path: '/memory', method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-tenant-id': tenant } }, (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(parts).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
  const it = dataSet();
  let bytes = 0;
  await Promise.all(Array.from({ length: 64 }, async () => {
    for (let n = it.next(); !n.done; n = it.next()) {
      const r = await post(n.value.tenant, n.value.cmd);
      if (r.status !== 200 || r.text.includes('"is_error":true')) throw new Error(`${n.value.cmd.path} -> ${r.status} ${r.text.slice(0, 200)}`);
      bytes += Buffer.byteLength(n.value.cmd.file_text);
    }
  }));
  agent.destroy();
  return bytes;
}

async function main() {
  const dir = tempDir('memoryd-bench-search-');
  const sides = [{ name: 'search-on', args: [] }, { name: 'search-off', args: ['--search', 'off'] }];
  if (!DB_ON !== !DB_OFF) throw new Error('--db-on and --db-off go together');
  sides[0].uri = DB_ON;
  sides[1].uri = DB_OFF;
  console.log(`memoryd search cost: a tenant of ${fmt(FILES)} files and ${fmt(TENANTS)} other tenants, ${ENGINE}\n`);
  let textBytes = 0;
  for (const s of sides) {
    const port = await freePort();
    s.db = s.uri || path.join(dir, `${s.name}.db`);
    s.srv = await startProcess(s.name, MEMORYD, ['--port', String(port), '--db', s.db, '--log-level', 'warn', ...BENCH_QUOTA, ...s.args], port);
    const t0 = Date.now();
    textBytes = await load(port);
    console.log(`  ${s.name}: loaded ${fmt(FILES + TENANTS)} files (${(textBytes / 2 ** 20).toFixed(1)} MiB of text) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    s.runs = [];
  }
  const on = sides[0];
  // The index's size on disk, per MiB of text.
  const pages = DB_ON
    ? execFileSync('psql', ['-X', '-A', '-t', '-d', on.db, '-c', "SELECT pg_total_relation_size('search_words')"], { encoding: 'utf8' })
    : execFileSync('sqlite3', ['-readonly', on.db, "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'entries_search%'"], { encoding: 'utf8' });
  const indexBytes = Number(pages.trim());
  const perMiB = indexBytes / (textBytes / 2 ** 20);
  // The one-word search at 16 connections.
  const hits = await (await fetch(`http://127.0.0.1:${on.srv.port}/v1/search?q=${WORD}&limit=100`, { headers: { 'x-tenant-id': 'big' } })).json();
  const expect = Math.min(100, Math.floor((FILES + 992) / 1000));
  if (hits.hits.length !== expect) throw new Error(`the search found ${hits.hits.length} files, not ${expect}`);
  const searches = [];
  for (let r = 0; r < REPEAT; r++) {
    const run = wrk({ port: on.srv.port, script: 'bench/lua/search.lua', args: [WORD, 'big'], conns: 16, seconds: SECONDS, threads: 2 });
    failed += run.non2xx + run.socket_errors;
    searches.push(run);
  }
  const search = medianRun(searches);
  // Creates at 64 connections, the two servers in turn.
  for (let r = 0; r < REPEAT; r++) {
    for (const s of r % 2 ? [...sides].reverse() : sides) {
      const run = wrk({ port: s.srv.port, script: 'bench/lua/create.lua', args: [`/memories/bench/new-${r}`], conns: 64, seconds: SECONDS, threads: 2 });
      failed += run.non2xx + run.socket_errors;
      s.runs.push(run);
    }
  }
  const [cOn, cOff] = sides.map((s) => medianRun(s.runs));
  const ratio = cOn.rps / cOff.rps;
  console.log(`\n  one-word search ("${WORD}", ${hits.hits.length} hits of the big tenant on the first 100), 16 connections: ` +
    `${fmt(search.rps)}/s, p50 ${(search.p50_us / 1000).toFixed(2)} ms, p99 ${(search.p99_us / 1000).toFixed(2)} ms (runs: ${searches.map((x) => fmt(x.rps)).join(', ')})`);
  console.log(`  creates (1 KiB), 64 connections: index on ${fmt(cOn.rps)}/s p99 ${(cOn.p99_us / 1000).toFixed(1)} ms, ` +
    `off ${fmt(cOff.rps)}/s p99 ${(cOff.p99_us / 1000).toFixed(1)} ms: ${ratio.toFixed(2)}x ` +
    `(runs on ${on.runs.map((x) => fmt(x.rps)).join(', ')}; off ${sides[1].runs.map((x) => fmt(x.rps)).join(', ')})`);
  console.log(`  index size on disk: ${(indexBytes / 2 ** 20).toFixed(1)} MiB for ${(textBytes / 2 ** 20).toFixed(1)} MiB of text: ` +
    `${(perMiB / 2 ** 20).toFixed(2)} MiB per MiB of text\n`);
  const targets = [
    { what: 'one-word search p50 at 16 connections', got: `${(search.p50_us / 1000).toFixed(2)} ms (target <= 5 ms)`, ok: search.p50_us <= 5000 },
    { what: 'one-word search p99 at 16 connections', got: `${(search.p99_us / 1000).toFixed(2)} ms (target <= 50 ms)`, ok: search.p99_us <= 50000 },
    { what: 'creates at 64 connections, index on / off', got: `${ratio.toFixed(2)}x (target >= 0.8x)`, ok: ratio >= 0.8 },
  ];
  let bounds = null;
  if (DB_ON) {
    bounds = postgresBounds(on.db, dir);
    const best = 1 / (1 + (bounds.indexUs / 1e6) * cOff.rps);
    bounds.createRatioBound = best;
    console.log(`  PostgreSQL alone (pgbench, same machine): the search's candidate query at 16 clients ${fmt(bounds.search)}/s ` +
      `(memoryd's searches: ${(search.rps / bounds.search).toFixed(2)}x of it; at that rate 16 clients wait ${(16000 / bounds.search).toFixed(2)} ms on average)`);
    console.log(`  PostgreSQL alone: a 1 KiB insert at 64 clients ${fmt(bounds.insertOn)}/s with the word index, ${fmt(bounds.insertOff)}/s without: ` +
      `the index costs ${bounds.indexUs.toFixed(0)} us per insert, so memoryd's creates (${fmt(cOff.rps)}/s without it) could reach at best ` +
      `${best.toFixed(2)}x with it; they reached ${ratio.toFixed(2)}x, ${(ratio / best).toFixed(2)} of that bound\n`);
  }
  for (const t of targets) console.log(`${t.ok ? 'PASS' : 'FAIL'}  ${t.what}: ${t.got}`);
  for (const s of sides) await s.srv.stop();
  if (JSON_OUT) {
    fs.writeFileSync(JSON_OUT, JSON.stringify({ files: FILES, tenants: TENANTS, seconds: SECONDS, repeat: REPEAT, text_bytes: textBytes,
      index_bytes: indexBytes, index_mib_per_text_mib: perMiB / 2 ** 20, search: { rps: search.rps, p50_us: search.p50_us, p99_us: search.p99_us },
      creates: { on: cOn.rps, off: cOff.rps, ratio }, postgres_bounds: bounds, targets }, null, 2));
  }
  fs.rmSync(dir, { recursive: true, force: true });
  if (failed) {
    console.error(`memoryd failed ${failed} requests`);
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
