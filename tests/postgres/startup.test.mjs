// Selecting PostgreSQL, and starting on it:
//   - --db and MEMORYD_DB take postgresql:// and postgres:// URIs (anything else is a SQLite
//     path); the password of a URI never reaches the log;
//   - instances starting together on a fresh database migrate it once (a session advisory
//     lock): every one serves, the schema is recorded once per version;
//   - a database of a newer schema is refused with a clear message, and left as it was;
//   - a refused connection at start is a clear error and exit status 1, not a crash;
//   - writes that cannot get their lock (a table locked by someone else) answer 503 "busy"
//     after --busy-timeout, while reads keep working from the pool; /readyz stays ready.
// Runs only on PostgreSQL (MD_TEST_PG; tests/CMakeLists.txt).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeClient, readText } from '../lib/client.mjs';
import { createDatabase, pgCluster, psql, uriOf } from '../lib/pg.mjs';
import { runMemoryd, startServer, tempDir } from '../lib/server.mjs';

const BUSY = 'Error: The memory store is busy; the command was not applied. Try again shortly.';

test('MEMORYD_DB and --db take postgresql:// and postgres:// URIs; the password is not logged', async () => {
  const cluster = pgCluster();
  const uri = await createDatabase();
  const db = /^postgresql:\/\/\/([^?]+)/.exec(uri)[1];
  // The same database three ways: --db postgresql://, MEMORYD_DB postgres://, and a URI with a
  // password (trust authentication ignores it) in a TCP-less host parameter.
  const viaEnv = `postgres:///${db}?host=${encodeURIComponent(cluster.host)}&port=${cluster.port}&user=${cluster.user}`;
  const withPassword = `postgresql://${cluster.user}:s3cret-pw@/${db}?host=${encodeURIComponent(cluster.host)}&port=${cluster.port}`;
  const a = await startServer({ db: uri });
  assert.equal((await a.post({ command: 'create', path: '/memories/one.txt', file_text: 'one' })).status, 200);
  await a.stop();
  const b = await startServer({ bare: true, args: ['--port', '0'], env: { MEMORYD_DB: viaEnv } });
  const seen = await b.post({ command: 'view', path: '/memories/one.txt' });
  assert.deepEqual([seen.status, seen.json.content], [200, "Here's the content of /memories/one.txt with line numbers:\n     1\tone"]);
  assert.equal(b.logs.find((l) => l.msg === 'listening').store, 'postgres');
  await b.stop();
  const c = await startServer({ db: withPassword });
  assert.equal((await c.post({ command: 'view', path: '/memories/one.txt' })).status, 200);
  await c.stop();
  const all = [...a.rawStderr, ...b.rawStderr, ...c.rawStderr].join('\n');
  assert.ok(!all.includes('s3cret-pw'), 'the password reached the log');
  assert.match(c.logs.find((l) => l.msg === 'listening').db, /\*\*\*/);
  // Anything else is a SQLite file path, even one that looks a little like a URI.
  for (const name of ['postgresql-notes.db', 'postgres:notes.db']) {
    const file = path.join(tempDir(), name);
    const s = await startServer({ db: file });
    assert.deepEqual([s.logs.find((l) => l.msg === 'listening').store, s.logs.find((l) => l.msg === 'listening').db], ['sqlite', file]);
    assert.equal((await s.post({ command: 'create', path: '/memories/x.txt', file_text: 'x' })).status, 200);
    await s.stop();
    assert.equal(fs.readFileSync(file).subarray(0, 16).toString('latin1'), 'SQLite format 3\0');
  }
});

test('six instances starting together on a fresh database migrate it once, and all serve', async () => {
  const uri = await createDatabase();
  const servers = await Promise.all(Array.from({ length: 6 }, () => startServer({ db: uri })));
  const migrated = servers.flatMap((s) => s.logs.filter((l) => l.msg === 'schema migrated'));
  const versions = psql(uri, 'SELECT version FROM memoryd_schema ORDER BY version').split('\n').filter(Boolean).map(Number);
  assert.deepEqual(migrated.map((l) => l.version).sort((a, b) => a - b), versions, 'each version migrated by exactly one instance');
  assert.ok(versions.length >= 1);
  await Promise.all(servers.map((s, i) => s.post({ command: 'create', path: `/memories/s${i}.txt`, file_text: `${i}` }).then((r) => assert.equal(r.status, 200, r.text))));
  const c = makeClient(servers[0].port);
  for (let i = 0; i < 6; i++) assert.equal(await readText(c, `/memories/s${i}.txt`), `${i}`);
  c.close();
  await Promise.all(servers.map((s) => s.stop()));
});

test('a database of a newer schema is refused, clearly, and left as it was', async () => {
  const uri = await createDatabase();
  const first = await startServer({ db: uri });
  await first.stop();
  const current = Number(psql(uri, 'SELECT max(version) FROM memoryd_schema').trim());
  psql(uri, `INSERT INTO memoryd_schema (version) VALUES (${current + 1})`);
  const r = await runMemoryd(['--port', '0', '--db', uri]);
  assert.equal(r.code, 1);
  const line = JSON.parse(r.stderr.trim().split('\n').at(-1));
  assert.deepEqual([line.msg, line.detail], ['cannot open the database',
    `database schema version ${current + 1} is newer than this memoryd (${current}); refusing to open it`]);
  assert.equal(psql(uri, 'SELECT string_agg(version::text, \',\' ORDER BY version) FROM memoryd_schema').trim(),
    Array.from({ length: current + 1 }, (_, i) => i + 1).join(','));
});

test('a refused connection at start: a clear error and exit status 1, not a crash', async () => {
  const cluster = pgCluster();
  for (const db of ['postgresql:///memoryd?host=/nonexistent-memoryd-socket-dir', uriOf(cluster, 'no_such_database_here')]) {
    const r = await runMemoryd(['--port', '0', '--db', db]);
    assert.equal(r.code, 1, r.stderr);
    const line = JSON.parse(r.stderr.trim().split('\n').at(-1));
    assert.equal(line.msg, 'cannot open the database');
    assert.match(line.detail, /^cannot connect to PostgreSQL: /);
    assert.match(line.detail, db.includes('nonexistent') ? /No such file or directory/ : /database "no_such_database_here" does not exist/);
  }
});

test('writes that wait for a lock held elsewhere answer 503 "busy"; reads keep working meanwhile', async (t) => {
  const uri = await createDatabase();
  const srv = await startServer({ db: uri, args: ['--busy-timeout', '300'] });
  t.after(() => srv.stop());
  const c = makeClient(srv.port, { tenant: 'locked' });
  assert.equal((await c.post({ command: 'create', path: '/memories/kept.txt', file_text: 'kept' })).status, 200);
  // Another session locks the entries table against every write (reads are still allowed).
  const holder = spawn('psql', ['-X', '-q', '-d', uri], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  holder.stdout.on('data', (d) => { out += d; });
  holder.stdin.write("BEGIN; LOCK TABLE entries IN EXCLUSIVE MODE; SELECT 'locked';\n");
  for (let i = 0; i < 200 && !out.includes('locked'); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(out.includes('locked'), 'psql did not take the lock');
  try {
    const w = await c.post({ command: 'create', path: '/memories/blocked.txt', file_text: 'x' });
    assert.deepEqual([w.status, w.content, w.headers['retry-after']], [503, BUSY, '1']);
    for (let i = 0; i < 20; i++) {
      const r = await c.post({ command: 'view', path: '/memories/kept.txt' });
      assert.deepEqual([r.status, r.content], [200, "Here's the content of /memories/kept.txt with line numbers:\n     1\tkept"]);
    }
    assert.equal((await srv.request('GET', '/readyz')).status, 200);
  } finally {
    holder.stdin.end('ROLLBACK;\n');
    await new Promise((r) => holder.on('close', r));
  }
  // The lock is gone: the write that was refused was not applied, and a write goes through.
  assert.equal((await c.post({ command: 'view', path: '/memories/blocked.txt' })).status, 404);
  assert.equal((await c.post({ command: 'create', path: '/memories/blocked.txt', file_text: 'x' })).status, 200);
  c.close();
});

// The key of a tenant's advisory lock, as memoryd computes it (FNV-1a 64, src/store/store.c).
function tenantKey(name) {
  let h = 14695981039346656037n;
  for (const b of Buffer.from(name)) h = BigInt.asUintN(64, (h ^ BigInt(b)) * 1099511628211n);
  return BigInt.asIntN(64, h);
}

test('a database whose default isolation is REPEATABLE READ: memoryd still reads what committed before its tenant lock (its sessions run read committed)', async (t) => {
  const uri = await createDatabase();
  const db = /^postgresql:\/\/\/([^?]+)/.exec(uri)[1];
  psql(uri, `ALTER DATABASE ${db} SET default_transaction_isolation = 'repeatable read'`);
  const srv = await startServer({ db: uri });
  t.after(() => srv.stop());
  const c = makeClient(srv.port, { tenant: 'iso' });
  const path = '/memories/counter.txt';
  assert.equal((await c.post({ command: 'create', path, file_text: 'n=0\n' })).status, 200);
  // Another writer holds the tenant's lock and changes the file before it lets go, as another
  // instance would; meanwhile memoryd's write waits for the lock.
  const holder = spawn('psql', ['-X', '-q', '-d', uri], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  holder.stdout.on('data', (d) => { out += d; });
  holder.stdin.write(`BEGIN; SELECT pg_advisory_xact_lock(${tenantKey('iso')}); SELECT 'held';\n`);
  for (let i = 0; i < 500 && !out.includes('held'); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(out.includes('held'), 'psql did not take the lock');
  const write = c.post({ command: 'str_replace', path, old_str: 'n=1\n', new_str: 'n=2\n' });
  // memoryd's transaction has begun and waits for the lock.
  for (let i = 0; i < 500; i++) {
    const waiting = psql(uri, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").trim();
    if (waiting === '1') break;
    await new Promise((r) => setTimeout(r, 10));
  }
  holder.stdin.end(`UPDATE entries SET content = convert_to(E'n=1\\n', 'UTF8'), sha256 = sha256(convert_to(E'n=1\\n', 'UTF8')) WHERE path = '${path}' AND tenant = (SELECT id FROM tenants WHERE name = 'iso'); COMMIT;\n`);
  await new Promise((r) => holder.on('close', r));
  // Read committed: the write sees n=1, committed before it got the lock. (At repeatable read
  // its snapshot, taken when it began to wait, would still hold n=0: a 409.)
  const r = await write;
  assert.deepEqual([r.status, r.content], [200, `The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tn=2\n     2\t`]);
  assert.equal(await readText(c, path), 'n=2\n');
  c.close();
});
