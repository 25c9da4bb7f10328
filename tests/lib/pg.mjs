// A real PostgreSQL for the tests, started by the test suite itself: initdb into a directory
// of the build, a Unix socket in a fresh temp directory, no TCP; stopped at the end. No mock,
// no shared server.
//
//   node tests/lib/pg.mjs start DIR    initdb (first time) and start a cluster in DIR; writes
//                                       DIR/state.json ({host, port, user, bin})
//   node tests/lib/pg.mjs stop DIR     stop it (immediate shutdown) and remove DIR
// ctest runs these as the fixture postgres/cluster-start and postgres/cluster-stop
// (tests/CMakeLists.txt) and gives each PostgreSQL variant of a test MD_TEST_PG=DIR.
//
// From a test:
//   pgCluster()            the running cluster ({host, port, user, bin, dir}) or null when
//                          MD_TEST_PG is not set (the test runs on SQLite)
//   await createDatabase() a fresh database; returns its connection URI
//   psql(uri, sql)         run SQL with the psql CLI; returns its output (unaligned, no header)
//   pgCtl(cluster, ...args)  pg_ctl on the cluster, as the user that owns it
// As root (CI), the server runs as the `postgres` user that Debian's package creates:
// PostgreSQL refuses to run as root.
import { execFileSync, execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PORT = 5432; // only the socket file's name: nothing listens on TCP

// The directory of PostgreSQL's server programs (initdb, pg_ctl): Debian keeps them in
// /usr/lib/postgresql/<major>/bin; the newest there, else whatever is on PATH.
export function pgBin() {
  const root = '/usr/lib/postgresql';
  const majors = fs.existsSync(root) ? fs.readdirSync(root).filter((d) => /^\d+$/.test(d)).sort((a, b) => b - a) : [];
  for (const m of majors) {
    const bin = path.join(root, m, 'bin');
    if (fs.existsSync(path.join(bin, 'initdb'))) return bin;
  }
  try {
    return path.dirname(execFileSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' }).trim());
  } catch {
    throw new Error('initdb not found: install PostgreSQL (scripts/setup.sh --test installs postgresql-15)');
  }
}

// argv running `cmd` as the cluster's owner: postgres when we are root.
function asOwner(cmd, args) {
  if (process.getuid() !== 0) return [cmd, args];
  return ['runuser', ['-u', 'postgres', '--', cmd, ...args]];
}

function run(cmd, args, opts = {}) {
  const [c, a] = asOwner(cmd, args);
  return execFileSync(c, a, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...opts });
}

export function startCluster(dir) {
  const bin = pgBin();
  fs.mkdirSync(dir, { recursive: true });
  const data = path.join(dir, 'data');
  const host = fs.mkdtempSync(path.join(os.tmpdir(), 'mdpg-'));
  if (process.getuid() === 0) {
    execFileSync('chown', ['-R', 'postgres:postgres', dir, host]);
  }
  if (!fs.existsSync(path.join(data, 'PG_VERSION'))) {
    run(path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8']);
  }
  const options = [`-k ${host}`, "-c listen_addresses=''", `-p ${PORT}`, '-c max_connections=300', '-c fsync=on',
    '-c shared_buffers=64MB', '-c log_min_messages=warning'].join(' ');
  run(path.join(bin, 'pg_ctl'), ['-D', data, '-o', options, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']);
  const state = { host, port: PORT, user: 'postgres', bin, dir };
  fs.writeFileSync(path.join(dir, 'state.json'), JSON.stringify(state));
  return state;
}

export function stopCluster(dir) {
  const file = path.join(dir, 'state.json');
  if (!fs.existsSync(file)) return;
  const state = JSON.parse(fs.readFileSync(file, 'utf8'));
  try {
    // Immediate: the cluster is thrown away next, so the shutdown checkpoint a fast stop writes
    // (every file the suite dirtied, fsynced; gigabytes after export-large) would be pure waste.
    run(path.join(state.bin, 'pg_ctl'), ['-D', path.join(dir, 'data'), '-m', 'immediate', '-w', 'stop']);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(state.host, { recursive: true, force: true });
  }
}

export function pgCluster() {
  const dir = process.env.MD_TEST_PG;
  if (!dir) return null;
  const file = path.join(dir, 'state.json');
  if (!fs.existsSync(file)) throw new Error(`MD_TEST_PG=${dir}, but no cluster runs there (${file} is missing)`);
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

export const isPg = () => Boolean(process.env.MD_TEST_PG);

export function pgCtl(cluster, ...args) {
  return run(path.join(cluster.bin, 'pg_ctl'), ['-D', path.join(cluster.dir, 'data'), ...args]);
}

export function uriOf(cluster, db) {
  return `postgresql:///${db}?host=${encodeURIComponent(cluster.host)}&port=${cluster.port}&user=${cluster.user}`;
}

let counter = 0;

// A fresh, empty database on the cluster; returns its URI.
export async function createDatabase(cluster = pgCluster()) {
  const name = `md_${process.pid}_${Date.now().toString(36)}_${counter++}`;
  await new Promise((resolve, reject) => {
    execFile('psql', ['-X', '-q', '-h', cluster.host, '-p', String(cluster.port), '-U', cluster.user, '-d', 'postgres',
      '-c', `CREATE DATABASE ${name}`], (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve()));
  });
  return uriOf(cluster, name);
}

// Run SQL on a database given by URI; returns psql's output (unaligned, tuples only).
export function psql(uri, sql) {
  return execFileSync('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', uri, '-c', sql], { encoding: 'utf8', maxBuffer: 1 << 28 });
}

// What PostgreSQL's data must satisfy whatever happened to memoryd (a SIGKILL mid-batch, a
// restart of the server): every directory's size is the bytes of the files below it, every
// file's size its content's length, every entry but a root has its parent directory, every
// tenant with rows has its root. Returns the rows that break one (empty: consistent).
export function pgInconsistencies(uri) {
  return psql(uri, `
    SELECT 'size of ' || d.path FROM entries d WHERE d.kind = 1 AND d.size <> (SELECT coalesce(sum(f.size), 0)
      FROM entries f WHERE f.tenant = d.tenant AND f.kind = 0 AND f.path > d.path || '/' AND f.path < d.path || '0')
    UNION ALL SELECT 'content of ' || path FROM entries WHERE kind = 0 AND octet_length(content) <> size
    UNION ALL SELECT 'parent of ' || e.path FROM entries e WHERE e.depth > 0 AND NOT EXISTS (SELECT 1 FROM entries p
      WHERE p.tenant = e.tenant AND p.kind = 1 AND p.path = regexp_replace(e.path, '/[^/]*$', ''))
    UNION ALL SELECT 'root of tenant ' || t.name FROM tenants t WHERE NOT EXISTS (SELECT 1 FROM entries r
      WHERE r.tenant = t.id AND r.path = '/memories' AND r.kind = 1)`).split('\n').filter(Boolean);
}

// Every row version of `table` and of its TOAST table, live or dead (every item of every page
// that still has a tuple: pageinspect's heap_page_items, read raw from the pages), that holds
// the bytes `needle` (a Buffer or string). A TOAST value is split into chunks, and `needle`
// may straddle two: the chunks of each value (chunk_id) are put together in chunk_seq order,
// their varlena headers removed, before the search. Returns one line per row version or TOAST
// value holding it (empty: none), naming its block, item, xmin and xmax. Needs the
// pageinspect extension, which this creates in the database (the suite's cluster runs as the
// superuser `postgres`).
export function pgRowVersionsHolding(uri, table, needle) {
  return pgRowVersionsHoldingEach(uri, table, [needle])[0];
}

// The same for several needles at once, in one read of the table's pages: an array with, for
// each needle in turn, its lines (empty: none).
export function pgRowVersionsHoldingEach(uri, table, needles) {
  const hexes = needles.map((n) => `'${Buffer.from(n).toString('hex')}'`).join(', ');
  const blocks = (rel) => `generate_series(0, (pg_relation_size(${rel}) / current_setting('block_size')::bigint)::int - 1)`;
  // A 4-byte little-endian integer of a raw attribute.
  // (PostgreSQL gives | and << the same precedence: each shift in parentheses.)
  const u32 = (b) => `(get_byte(${b}, 0)::bigint | (get_byte(${b}, 1)::bigint << 8) | (get_byte(${b}, 2)::bigint << 16) | (get_byte(${b}, 3)::bigint << 24))`;
  const out = psql(uri, `SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS pageinspect;
    WITH needle AS (SELECT i, decode(h, 'hex') AS n FROM unnest(ARRAY[${hexes}]::text[]) WITH ORDINALITY AS u(h, i)),
    heap AS (SELECT '${table}'::regclass AS rel),
    toast AS (SELECT reltoastrelid::regclass AS rel FROM pg_class WHERE oid = '${table}'::regclass AND reltoastrelid <> 0),
    heap_items AS (SELECT h.rel::text AS rel, b, i.lp, i.t_xmin, i.t_xmax, i.t_data
      FROM heap h, ${blocks('h.rel')} b, heap_page_items(get_raw_page(h.rel::text, b)) i WHERE i.t_data IS NOT NULL),
    chunks AS (SELECT t.rel::text AS rel, b, i.lp, i.t_xmin, i.t_xmax, ${u32('i.t_attrs[1]')} AS chunk_id,
        ${u32('i.t_attrs[2]')} AS chunk_seq,
        CASE WHEN get_byte(i.t_attrs[3], 0) & 1 = 1 THEN substr(i.t_attrs[3], 2) ELSE substr(i.t_attrs[3], 5) END AS data
      FROM toast t, ${blocks('t.rel')} b, heap_page_item_attrs(get_raw_page(t.rel::text, b), t.rel) i WHERE i.t_attrs IS NOT NULL),
    toast_values AS (SELECT min(rel) AS rel, chunk_id, count(*) AS chunks,
        string_agg(format('block %s item %s (xmin %s, xmax %s)', b, lp, t_xmin, t_xmax), ', ' ORDER BY chunk_seq) AS at,
        string_agg(data, ''::bytea ORDER BY chunk_seq) AS data
      FROM chunks GROUP BY chunk_id)
    SELECT i, format('%s block %s item %s (xmin %s, xmax %s)', rel, b, lp, t_xmin, t_xmax)
      FROM heap_items, needle WHERE position(n IN t_data) > 0
    UNION ALL
    SELECT i, format('%s value %s: %s chunks, %s', rel, chunk_id, chunks, at)
      FROM toast_values, needle WHERE position(n IN data) > 0`);
  const each = needles.map(() => []);
  for (const line of out.split('\n').filter(Boolean)) {
    const bar = line.indexOf('|');
    each[Number(line.slice(0, bar)) - 1].push(line.slice(bar + 1));
  }
  return each;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [verb, dir] = process.argv.slice(2);
  if (!dir || !['start', 'stop'].includes(verb)) {
    console.error('usage: node tests/lib/pg.mjs start|stop DIR');
    process.exit(2);
  }
  if (verb === 'start') {
    try {
      stopCluster(dir); // a cluster left by an interrupted run
    } catch { /* it was not running: its directory is gone all the same */ }
    const s = startCluster(dir);
    console.log(`PostgreSQL running: socket ${s.host}, data ${dir}/data`);
  } else {
    stopCluster(dir);
  }
}
