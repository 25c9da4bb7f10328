// memoryd when its storage misbehaves. For each fault — the database locked by another process,
// the disk full (a small tmpfs), a file-size limit (RLIMIT_FSIZE), a database file that cannot be
// written — memoryd must:
//   - answer writes with a clear 5xx (503 busy for a lock, 500 storage failure otherwise), with
//     the contract's generic text (details only in the log);
//   - never report success for a write that did not commit: after each failure the tree is
//     checked and the refused write is not there (no file, no parents, old content kept);
//   - keep answering reads;
//   - recover by itself when the cause goes (lock released, space freed, limit raised, file
//     writable again), with every acknowledged write intact and `PRAGMA integrity_check` ok.
// The tmpfs case needs mount(2) (root with CAP_SYS_ADMIN) and is skipped with a note otherwise;
// the read-only case runs memoryd as `nobody` when the test runs as root (root ignores file
// permissions).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, runMemoryd, tempDir } from '../lib/server.mjs';
import { makeClient, readText } from '../lib/client.mjs';

const FAILED = 'Error: The memory store failed; the command was not applied. Try again later.';
const BUSY = 'Error: The memory store is busy; the command was not applied. Try again shortly.';
const created = (p) => `File created successfully at: ${p}`;

function integrityCheck(db) {
  assert.equal(execFileSync('sqlite3', [db, 'PRAGMA integrity_check;']).toString().trim(), 'ok');
}

// A write that must fail with `status` and `text`, leaving no trace: `absent` paths stay absent.
async function assertRefused(client, cmd, status, text, absent = []) {
  const r = await client.post(cmd);
  assert.deepEqual([r.status, r.content, r.isError], [status, text, true], JSON.stringify(cmd));
  if (status === 503) assert.equal(r.headers['retry-after'], '1');
  for (const p of absent) {
    const v = await client.post({ command: 'view', path: p });
    assert.equal(v.status, 404, `${p} exists after a refused write`);
  }
}

async function assertCreated(client, p, text) {
  const r = await client.post({ command: 'create', path: p, file_text: text });
  assert.deepEqual([r.status, r.content], [200, created(p)]);
}

async function readyz(srv) {
  const r = await srv.request('GET', '/readyz');
  return [r.status, r.text];
}

// Poll until fn() is truthy (the recovery happens on the next attempt; a few tries are allowed
// for the file system to settle). Not a timing assertion: at most 200 tries.
async function eventually(fn, what) {
  for (let i = 0; i < 200; i++) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`never: ${what}`);
}

function hasLog(srv, msg) {
  return srv.logs.some((l) => l.msg === msg);
}

test('database locked by another process: writes get 503 busy and are not applied; reads go on; writes resume when the lock goes', async () => {
  const srv = await startServer({ args: ['--busy-timeout', '200'] });
  const client = makeClient(srv.port);
  let holder = null;
  try {
    await assertCreated(client, '/memories/a.txt', 'alpha');
    // Another process takes the write lock and keeps it.
    holder = spawn('sqlite3', [srv.dbPath], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    holder.stdout.on('data', (d) => { out += d; });
    holder.stdin.write("BEGIN EXCLUSIVE;\nINSERT INTO tenants (name, created_at) VALUES ('intruder', 0);\nSELECT 'locked';\n");
    await eventually(() => out.includes('locked'), 'the other process holds the lock');

    await assertRefused(client, { command: 'create', path: '/memories/dir/b.txt', file_text: 'beta' }, 503, BUSY, ['/memories/dir/b.txt', '/memories/dir']);
    await assertRefused(client, { command: 'str_replace', path: '/memories/a.txt', old_str: 'alpha', new_str: 'ALPHA' }, 503, BUSY);
    await assertRefused(client, { command: 'delete', path: '/memories/a.txt' }, 503, BUSY);
    assert.equal(await readText(client, '/memories/a.txt'), 'alpha');
    assert.deepEqual(await readyz(srv), [200, '{"status":"ready"}']); // reads work; the writer is healthy
    assert.ok(srv.logs.some((l) => l.msg === 'sqlite error' && /locked/.test(l.error)), 'the lock is logged');

    holder.stdin.end('ROLLBACK;\n.quit\n');
    await new Promise((r) => holder.on('exit', r));
    holder = null;
    await assertCreated(client, '/memories/dir/b.txt', 'beta');
    assert.equal((await client.post({ command: 'str_replace', path: '/memories/a.txt', old_str: 'alpha', new_str: 'ALPHA' })).status, 200);
    assert.equal(await readText(client, '/memories/a.txt'), 'ALPHA');
    client.close();
    await srv.stop();
    integrityCheck(srv.dbPath);
  } finally {
    holder?.kill('SIGKILL');
    client.close();
    if (!srv.exited()) await srv.kill();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
});

// Fill a file system with a filler file until ENOSPC.
function fill(dir) {
  const filler = path.join(dir, 'filler');
  const fd = fs.openSync(filler, 'w');
  const chunk = Buffer.alloc(64 * 1024, 120);
  try {
    for (;;) fs.writeSync(fd, chunk);
  } catch (err) {
    assert.equal(err.code, 'ENOSPC');
  }
  // Byte by byte to the very end.
  try {
    for (;;) fs.writeSync(fd, chunk, 0, 1);
  } catch (err) {
    assert.equal(err.code, 'ENOSPC');
  } finally {
    fs.closeSync(fd);
  }
  return filler;
}

test('disk full (4 MiB tmpfs): writes get 500 and are not applied; reads go on; writes resume once space is freed', async (t) => {
  const mnt = tempDir('memoryd-full-');
  const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mnt]);
  if (m.status !== 0) {
    fs.rmSync(mnt, { recursive: true, force: true });
    t.skip(`cannot mount a tmpfs here (${String(m.stderr).trim()}); the file-size limit test covers the write path`);
    return;
  }
  let srv = null;
  try {
    const db = path.join(mnt, 'memoryd.db');
    srv = await startServer({ db });
    let c = makeClient(srv.port);
    const acked = new Map();
    for (let i = 0; i < 20; i++) {
      const p = `/memories/keep/f${i}.txt`;
      const text = `file ${i}\n${'k'.repeat(20000)}`;
      await assertCreated(c, p, text);
      acked.set(p, text);
    }
    const filler = fill(mnt);

    const big = 'x'.repeat(200 * 1024);
    await assertRefused(c, { command: 'create', path: '/memories/new/big.txt', file_text: big }, 500, FAILED, ['/memories/new/big.txt', '/memories/new']);
    await assertRefused(c, { command: 'str_replace', path: '/memories/keep/f0.txt', old_str: 'file 0', new_str: big }, 500, FAILED);
    await assertRefused(c, { command: 'insert', path: '/memories/keep/f1.txt', insert_line: 0, insert_text: big }, 500, FAILED);
    for (const [p, text] of acked) assert.equal(await readText(c, p), text, `${p} after the failures`);
    assert.ok(srv.logs.some((l) => l.msg === 'sqlite error' && /full/.test(l.error)), 'disk full is logged');

    fs.rmSync(filler);
    await eventually(async () => (await c.post({ command: 'create', path: '/memories/new/big.txt', file_text: big })).status === 200, 'a write succeeds after space is freed');
    acked.set('/memories/new/big.txt', big);
    for (const [p, text] of acked) assert.equal(await readText(c, p), text);
    c.close();
    await srv.stop();

    // Everything acknowledged is there after a restart; the database is sound.
    integrityCheck(db);
    srv = await startServer({ db });
    c = makeClient(srv.port);
    for (const [p, text] of acked) assert.equal(await readText(c, p), text);
    c.close();
    await srv.stop();
  } finally {
    if (srv && !srv.exited()) await srv.kill();
    spawnSync('umount', [mnt]);
    fs.rmSync(mnt, { recursive: true, force: true });
  }
});

function prlimit(pid, spec) {
  execFileSync('prlimit', ['--pid', String(pid), `--fsize=${spec}`]);
}

test('file-size limit reached (RLIMIT_FSIZE): writes get 500 and are not applied; memoryd survives; writes resume when the limit is raised', async () => {
  const srv = await startServer();
  const c = makeClient(srv.port);
  try {
    await assertCreated(c, '/memories/a.txt', 'alpha');
    const wal = `${srv.dbPath}-wal`;
    const limit = Math.max(fs.statSync(wal).size, fs.statSync(srv.dbPath).size) + 8192;
    prlimit(srv.proc.pid, `${limit}:unlimited`); // soft limit only: raising it back needs no privilege
    const big = 'y'.repeat(64 * 1024);
    await assertRefused(c, { command: 'create', path: '/memories/d/big.txt', file_text: big }, 500, FAILED, ['/memories/d/big.txt', '/memories/d']);
    await assertRefused(c, { command: 'str_replace', path: '/memories/a.txt', old_str: 'alpha', new_str: big }, 500, FAILED);
    assert.equal(await readText(c, '/memories/a.txt'), 'alpha');
    assert.equal(srv.exited(), null, 'memoryd was killed by SIGXFSZ');

    prlimit(srv.proc.pid, 'unlimited:unlimited');
    await assertCreated(c, '/memories/d/big.txt', big);
    assert.equal(await readText(c, '/memories/d/big.txt'), big);
    assert.ok(hasLog(srv, 'writer connection reopened'), 'the writer connection was reopened after the I/O error');
    c.close();
    await srv.stop();
    integrityCheck(srv.dbPath);
  } finally {
    c.close();
    if (!srv.exited()) await srv.kill();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
});

test('database file not writable: memoryd serves reads, refuses writes with 500, is not ready; recovers when the file is writable again', async () => {
  const asRoot = process.getuid() === 0;
  const wrapper = asRoot ? ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups'] : undefined;
  const dir = tempDir('memoryd-ro-');
  if (asRoot) fs.chownSync(dir, 65534, 65534);
  fs.chmodSync(dir, 0o755);
  const db = path.join(dir, 'memoryd.db');
  let srv = await startServer({ db, wrapper });
  let c = makeClient(srv.port);
  try {
    await assertCreated(c, '/memories/a.txt', 'alpha');
    c.close();
    await srv.stop();

    fs.chmodSync(db, 0o444);
    srv = await startServer({ db, wrapper });
    c = makeClient(srv.port);
    assert.ok(srv.logs.some((l) => l.msg === 'the database is read-only: writes fail until it is writable'));
    assert.equal(await readText(c, '/memories/a.txt'), 'alpha');
    await assertRefused(c, { command: 'create', path: '/memories/b/c.txt', file_text: 'x' }, 500, FAILED, ['/memories/b/c.txt', '/memories/b']);
    await assertRefused(c, { command: 'delete', path: '/memories/a.txt' }, 500, FAILED);
    assert.deepEqual(await readyz(srv), [503, '{"status":"storage unavailable"}']);
    assert.equal(await readText(c, '/memories/a.txt'), 'alpha');

    fs.chmodSync(db, 0o644);
    await eventually(async () => (await readyz(srv))[0] === 200, '/readyz is 200 again');
    await assertCreated(c, '/memories/b/c.txt', 'x');
    assert.ok(hasLog(srv, 'writer connection reopened'));
    c.close();
    await srv.stop();
    integrityCheck(db);

    // A database that cannot be written and still needs its schema: memoryd refuses to start,
    // with the reason.
    const fresh = path.join(dir, 'sub');
    fs.mkdirSync(fresh);
    if (asRoot) fs.chownSync(fresh, 65534, 65534);
    fs.chmodSync(fresh, 0o555);
    const r = await runMemoryd(['--port', '0', '--db', path.join(fresh, 'new.db')], { wrapper });
    assert.equal(r.code, 1);
    const line = r.stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.msg === 'cannot open the database');
    assert.ok(line, r.stderr);
    assert.match(line.detail, /new\.db/);
  } finally {
    c.close();
    if (!srv.exited()) await srv.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
