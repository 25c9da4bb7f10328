// A PostgreSQL cluster of the benchmark's own (bench/pg.mjs, bench/compare.mjs): initdb into a
// temp directory, a Unix socket only, fsync and synchronous_commit on; psql on its databases.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

// PostgreSQL's server programs: Debian keeps them in /usr/lib/postgresql/<major>/bin.
export function pgBin() {
  const root = '/usr/lib/postgresql';
  const majors = fs.existsSync(root) ? fs.readdirSync(root).filter((d) => /^\d+$/.test(d)).sort((a, b) => b - a) : [];
  for (const m of majors) {
    const bin = path.join(root, m, 'bin');
    if (fs.existsSync(path.join(bin, 'pgbench'))) return bin;
  }
  throw new Error('PostgreSQL not found in /usr/lib/postgresql: scripts/setup.sh --bench installs postgresql-15');
}

// PostgreSQL refuses to run as root: as root, its programs run as the postgres user.
export function asOwner(cmd, args) {
  return process.getuid() === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
}

const SETTINGS = {
  listen_addresses: "''",
  max_connections: 200, // 64 pgbench clients, memoryd's writer and readers, psql
  shared_buffers: '256MB',
  fsync: 'on',
  synchronous_commit: 'on',
  max_wal_size: '4GB', // no checkpoint forced by WAL volume in the middle of a figure
  log_min_messages: 'warning',
};

// A cluster of its own in `dir` (initdb, a Unix socket only, SETTINGS; `stats`: with
// pg_stat_statements loaded), started; stop() stops it.
export function startCluster(dir, { stats = false } = {}) {
  const bin = pgBin();
  const data = path.join(dir, 'data');
  const host = path.join(dir, 'socket');
  fs.mkdirSync(host, { recursive: true });
  // As root the server runs as postgres, which must reach `dir` through its parent (a temp
  // directory, made 0700). Never a shared directory such as /tmp itself: its mode (1777) is
  // not ours to change.
  const parent = path.dirname(dir);
  if (fs.statSync(parent).mode & 0o1000) throw new Error(`startCluster: ${dir} must be inside a directory of its own, not directly in ${parent}`);
  fs.chmodSync(parent, 0o755);
  fs.chmodSync(dir, 0o755);
  if (process.getuid() === 0) execFileSync('chown', ['-R', 'postgres:postgres', dir]);
  const run = (cmd, args) => {
    const [c, a] = asOwner(path.join(bin, cmd), args);
    return execFileSync(c, a, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  };
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8']);
  const settings = { ...SETTINGS, ...(stats ? { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track_planning': 'on' } : {}) };
  const options = [`-k ${host}`, '-p 5432', ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`)].join(' ');
  run('pg_ctl', ['-D', data, '-o', options, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']);
  const cluster = {
    bin, dir, host, port: 5432, user: 'postgres', settings,
    uri: (db) => `postgresql:///${db}?host=${encodeURIComponent(host)}&port=5432&user=postgres`,
    stop: () => {
      try {
        run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
      } catch { /* already stopped */ }
    },
  };
  return cluster;
}

// Run SQL on database `db`; returns psql's output (unaligned, tuples only).
export function psql(cluster, db, sql) {
  return execFileSync(path.join(cluster.bin, 'psql'), ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1',
    '-h', cluster.host, '-p', String(cluster.port), '-U', cluster.user, '-d', db],
  { input: sql, encoding: 'utf8', maxBuffer: 1 << 26 }).trim();
}

export function createDb(cluster, db) {
  psql(cluster, 'postgres', `CREATE DATABASE ${db}`);
  return db;
}
