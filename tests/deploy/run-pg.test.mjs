// scripts/run-pg.sh, the documented one command that runs memoryd on a local PostgreSQL, run
// for real: in a copy of the checkout (so that its build/ and memoryd-pg/ are the copy's,
// never the checkout's others work in), as the README says, with memoryd's own arguments
// passed through (--port 0: any free port, read from the "listening" log line; a default
// tenant). It must install nothing here (scripts/setup.sh --test has installed everything),
// build, make a PostgreSQL cluster in memoryd-pg/ on the first run and reuse it afterwards
// (still running, or stopped and started again), and serve a create and a view over HTTP,
// the data surviving memoryd's restarts. memoryd is the script's own process (exec): SIGTERM
// stops it, status 0.
//
// As root (CI) the cluster runs as the user postgres. Needs Debian's postgresql-15.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { after, test } from 'node:test';
import { tempDir } from '../lib/server.mjs';
import { REPO, httpRequest, run, spawnTracked } from './lib/deploy.mjs';

const sanitized = process.env.MD_SANITIZE === '1' || process.env.MD_SANITIZE === 'ON';
const skip = sanitized && 'sanitizer build: the script builds its own plain memoryd (run in the plain build)';
const root = process.getuid() === 0;
const PG_BIN = '/usr/lib/postgresql/15/bin';
const top = tempDir('memoryd-run-pg-');
fs.chmodSync(top, 0o755); // the cluster's owner (postgres, as root) must reach memoryd-pg/
const copy = path.join(top, 'checkout');
const cluster = path.join(copy, 'memoryd-pg');

const asOwner = (cmd, args) => (root ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args]);
const pgCtl = (...args) => run(...asOwner(`${PG_BIN}/pg_ctl`, ['-D', path.join(cluster, 'data'), ...args]));
const psql = (sql) => execFileSync(`${PG_BIN}/psql`, ['-X', '-q', '-A', '-t', '-h', cluster, '-U', 'postgres', '-d', 'memoryd', '-c', sql], { encoding: 'utf8' });
const postmasterPid = () => Number(fs.readFileSync(path.join(cluster, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);

const runs = [];
after(async () => {
  // A failed assertion leaves memoryd running: stop every run first (their pipes would keep
  // this process alive), then the cluster.
  for (const r of runs) await r.p.stop('SIGKILL');
  if (fs.existsSync(path.join(cluster, 'data', 'postmaster.pid'))) await pgCtl('-m', 'fast', '-w', 'stop');
  fs.rmSync(top, { recursive: true, force: true });
});

// Run scripts/run-pg.sh with `args` until memoryd logs "listening"; returns the process, the
// port, the script's own lines (run-pg: ...) and memoryd's log lines so far.
async function runPg(args) {
  const p = spawnTracked('scripts/run-pg.sh', args, { cwd: copy });
  runs.push({ p });
  const lines = [];
  const rl = readline.createInterface({ input: p.stderr });
  const listening = await new Promise((resolve, reject) => {
    rl.on('line', (line) => {
      lines.push(line);
      if (line.startsWith('{') && JSON.parse(line).msg === 'listening') resolve(JSON.parse(line));
    });
    p.exited.then((e) => reject(new Error(`run-pg.sh exited (${JSON.stringify(e)}) before memoryd listened:\n${p.out}\n${lines.join('\n')}`)));
  });
  return {
    p, port: listening.port, listening,
    script: lines.filter((l) => l.startsWith('run-pg: ')),
    log: lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)),
    post: (body) => httpRequest({ port: listening.port, method: 'POST', path: '/memory', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  };
}

const FILE = '/memories/run-pg.md';
const TEXT = '# On PostgreSQL\nmade by scripts/run-pg.sh\n';
const VIEW = `Here's the content of ${FILE} with line numbers:\n     1\t# On PostgreSQL\n     2\tmade by scripts/run-pg.sh\n     3\t`;
const ok = (content) => ({ type: 'tool_result', content, is_error: false });
// A view of a file sent as a bare command answers with the file's ETag too.
const viewed = { ...ok(VIEW), etag: `"sha256-${createHash('sha256').update(TEXT).digest('hex')}"` };

test('scripts/run-pg.sh: builds, makes a cluster in memoryd-pg/, serves on it; a second run reuses it, running or stopped', { skip, timeout: 900000 }, async () => {
  // The checkout as it is (tracked and new files, not what git ignores, not a memoryd-pg/ of
  // someone's own run), with its modes.
  const files = execFileSync('git', ['-C', REPO, 'ls-files', '-z', '-co', '--exclude-standard'], { encoding: 'utf8' })
    .split('\0').filter((f) => f && !f.startsWith('memoryd-pg/') && fs.existsSync(path.join(REPO, f)));
  assert.ok(files.includes('scripts/run-pg.sh'));
  fs.mkdirSync(copy);
  execFileSync('tar', ['-C', REPO, '--null', '-T', '-', '-cf', path.join(top, 'tree.tar')], { input: files.join('\0') });
  execFileSync('tar', ['-C', copy, '-xpf', path.join(top, 'tree.tar')]);

  // First run: build, initdb, create the role and database, serve.
  const first = await runPg(['--port', '0', '--default-tenant', 'run-pg']);
  const uri = `postgresql:///memoryd?host=${encodeURIComponent(cluster).replaceAll('%2F', '/')}&user=memoryd`;
  assert.deepEqual(first.script, [
    `run-pg: making a PostgreSQL cluster in ${cluster} (owner: ${root ? 'postgres' : execFileSync('id', ['-un'], { encoding: 'utf8' }).trim()})`,
    `run-pg: starting PostgreSQL (log: ${cluster}/server.log)`,
    'run-pg: creating the database memoryd',
    `run-pg: PostgreSQL runs in ${cluster}; stop it with: ${root ? 'runuser -u postgres -- ' : ''}${PG_BIN}/pg_ctl -D ${cluster}/data stop`,
  ], first.p.out);
  assert.match(first.p.out, /Built target memoryd\n/);
  assert.ok(fs.existsSync(path.join(copy, 'build', 'memoryd')), 'built in the copy\'s build/');
  assert.deepEqual([first.listening.address, first.listening.db], ['127.0.0.1', uri]);
  // One line per migration of sql/postgres/, in order.
  const migrations = fs.readdirSync(path.join(REPO, 'sql/postgres')).filter((f) => /^\d{3}_.*\.sql$/.test(f)).length;
  assert.ok(migrations >= 2);
  assert.deepEqual(first.log.filter((l) => l.msg === 'schema migrated').map(({ engine, version }) => ({ engine, version })),
    Array.from({ length: migrations }, (_, i) => ({ engine: 'postgres', version: i + 1 })));
  let r = await first.post({ command: 'create', path: FILE, file_text: TEXT });
  assert.deepEqual([r.status, r.json], [200, ok(`File created successfully at: ${FILE}`)]);
  r = await first.post({ command: 'view', path: FILE });
  assert.deepEqual([r.status, r.json], [200, viewed]);
  // memoryd is the script's process (exec): SIGTERM stops it cleanly.
  assert.deepEqual(await first.p.stop('SIGTERM'), { code: 0, signal: null });

  // The cluster: the checkout's memoryd-pg/, private to its owner, a Unix socket only; the
  // file in memoryd's tables, in the tenant passed through (--default-tenant), owned by the
  // role memoryd, which is not a superuser.
  const st = fs.statSync(cluster);
  assert.deepEqual([st.mode & 0o777, st.uid], [0o700, root ? Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })) : process.getuid()]);
  assert.ok(fs.existsSync(path.join(cluster, '.s.PGSQL.5432')));
  assert.equal(psql('SHOW listen_addresses'), '\n');
  assert.equal(psql("SELECT t.name || ' ' || e.path || ' ' || e.size FROM entries e JOIN tenants t ON t.id = e.tenant WHERE e.kind = 0"), `run-pg ${FILE} ${Buffer.byteLength(TEXT)}\n`);
  assert.equal(psql("SELECT r.rolname || ' ' || r.rolsuper FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba WHERE d.datname = 'memoryd'"), 'memoryd false\n');
  const pid = postmasterPid();

  // Second run: the cluster still runs and is reused as it is (no initdb, no new database).
  const second = await runPg(['--port', '0', '--default-tenant', 'run-pg']);
  assert.deepEqual(second.script, [`run-pg: PostgreSQL runs in ${cluster}; stop it with: ${root ? 'runuser -u postgres -- ' : ''}${PG_BIN}/pg_ctl -D ${cluster}/data stop`]);
  assert.equal(postmasterPid(), pid, 'the same PostgreSQL');
  assert.equal(second.log.find((l) => l.msg === 'schema migrated'), undefined, 'the schema was there');
  r = await second.post({ command: 'view', path: FILE });
  assert.deepEqual([r.status, r.json], [200, viewed]);
  assert.deepEqual(await second.p.stop('SIGTERM'), { code: 0, signal: null });

  // Third run, the cluster stopped before: started again, the data still there.
  const stop = await pgCtl('-m', 'fast', '-w', 'stop');
  assert.equal(stop.code, 0, stop.stderr);
  const third = await runPg(['--port', '0', '--default-tenant', 'run-pg']);
  assert.deepEqual(third.script, [
    `run-pg: starting PostgreSQL (log: ${cluster}/server.log)`,
    `run-pg: PostgreSQL runs in ${cluster}; stop it with: ${root ? 'runuser -u postgres -- ' : ''}${PG_BIN}/pg_ctl -D ${cluster}/data stop`,
  ]);
  assert.notEqual(postmasterPid(), pid);
  r = await third.post({ command: 'view', path: FILE });
  assert.deepEqual([r.status, r.json], [200, viewed]);
  assert.deepEqual(await third.p.stop('SIGTERM'), { code: 0, signal: null });
});

test('scripts/run-pg.sh is shellcheck clean and executable', async () => {
  const r = await run('shellcheck', ['scripts/run-pg.sh'], { cwd: REPO });
  assert.deepEqual([r.code, r.stdout, r.stderr], [0, '', '']);
  assert.ok(fs.statSync(path.join(REPO, 'scripts/run-pg.sh')).mode & 0o100);
});
