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
//
// Faults under concurrent batches: 32 connections write at once (creates of new files and
// inserts into one shared file), so the writer groups their commands into batches, one
// transaction each; when a batch's COMMIT fails, every command of it that had succeeded must be
// answered 500, not 200. Each answer is recorded; after the fault is gone and memoryd restarted,
// every acknowledged write is present, no refused one is, and PRAGMA integrity_check is ok. The
// debug log shows which batches failed, so each case also proves that a batch of several
// commands failed as a whole. Run for disk full, for the file-size limit, and for a file system
// that becomes read-only while memoryd runs: a tmpfs cannot be remounted read-only then (the
// kernel refuses with EBUSY while memoryd holds the database open for writing), so the test
// mounts a small ext4 image (loop device) and forces it read-only with `mount -o remount,abort`,
// as ext4 does itself on an I/O error. Such a file system cannot be remounted read-write in
// place; recovery is unmount, mount (the journal is replayed), restart memoryd.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, runMemoryd, tempDir } from '../lib/server.mjs';
import { makeClient, readLines, readText } from '../lib/client.mjs';

const FAILED = 'Error: The memory store failed; the command was not applied. Try again later.';
// A commit whose disk flush failed: memoryd cannot know whether the write landed.
const UNSURE = 'Error: The memory store could not confirm that the command was saved (a disk flush failed, or the connection to the database was lost while committing): it may or may not have been applied. View the path before trying again.';
const BUSY = 'Error: The memory store is busy; the command was not applied. Try again shortly.';
const created = (p) => `File created successfully at: ${p}`;
const missing = (p) => `The path ${p} does not exist. Please provide a valid path.`;

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
    // (.timeout: memoryd's writer and its retention pass take the lock for moments of their
    // own; without it, BEGIN could fail on one of those and the rest would run unlocked.)
    holder.stdin.write(".timeout 10000\nBEGIN EXCLUSIVE;\nINSERT INTO tenants (name, created_at) VALUES ('intruder', 0);\nSELECT 'locked';\n");
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

// An 8 MiB tmpfs in a fresh directory, or null after t.skip when mount(2) is not allowed here.
// (Room for what the tests write before they fill it: with the search index on, the WAL holds
// about 4.3 MB after the first burst.)
function mountTmpfs(t) {
  const mnt = tempDir('memoryd-full-');
  const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mnt]);
  if (m.status === 0) return mnt;
  fs.rmSync(mnt, { recursive: true, force: true });
  t.skip(`cannot mount a tmpfs here (${String(m.stderr).trim()}); the file-size limit tests cover the write path`);
  return null;
}

function unmount(mnt) {
  spawnSync('umount', [mnt]);
  fs.rmSync(mnt, { recursive: true, force: true });
}

test('disk full (8 MiB tmpfs): writes get 500 and are not applied; reads go on; writes resume once space is freed', async (t) => {
  const mnt = mountTmpfs(t);
  if (!mnt) return;
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
    unmount(mnt);
  }
});

// Until the database file and its -wal have kept their sizes for `quietMs`.
async function filesSettled(db, quietMs = 750) {
  const sizes = () => [db, `${db}-wal`].map((f) => (fs.existsSync(f) ? fs.statSync(f).size : 0)).join();
  let last = sizes();
  for (let since = Date.now(); Date.now() - since < quietMs;) {
    await new Promise((r) => setTimeout(r, 50));
    const now = sizes();
    if (now !== last) [last, since] = [now, Date.now()];
  }
}

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

// ------------------------------------------------------------ faults under concurrent batches

const WRITERS = 32;
const BIG = 'b'.repeat(24 * 1024);

// What a burst of concurrent writes was told, one entry per write: a create ({path, text}) or a
// line inserted at the top of the shared file ({line}), with `acked` (200, else 500) and the
// times (performance.now()) it was sent and answered. `unknown` marks a write whose outcome the
// test does not know (see the read-only case).
function newLedger(tag) {
  const dir = `/memories/burst-${tag}`;
  return { tag, dir, shared: `${dir}/shared.txt`, rounds: 0, writes: [], unexpected: [] };
}

async function startLedger(client, ledger) {
  await assertCreated(client, ledger.shared, 'base'); // checked apart from the writes
}

// WRITERS connections each send `rounds` writes one after another, all connections at once, so
// that the writer batches them: creates of new files (from a few bytes to 24 KiB) and one-line
// inserts at the top of the shared file. An answer must be exactly the command's success (200)
// or the generic storage failure (500); anything else is recorded as unexpected. `onAnswer()`
// runs after every answer (to bring a fault in mid-run).
async function burst(port, ledger, { rounds, onAnswer = () => {} }) {
  const clients = Array.from({ length: WRITERS }, () => makeClient(port));
  const first = ledger.rounds; // a later burst writes new files
  ledger.rounds += rounds;
  try {
    await Promise.all(clients.map(async (client, c) => {
      for (let i = first; i < first + rounds; i++) {
        let cmd, ok, entry;
        if (i % 3 === 2) {
          entry = { line: `${ledger.tag} c${c} i${i}` };
          cmd = { command: 'insert', path: ledger.shared, insert_line: 0, insert_text: `${entry.line}\n` };
          ok = `The file ${ledger.shared} has been edited.`;
        } else {
          const p = `${ledger.dir}/c${c}/f${i}.txt`;
          entry = { path: p, text: `${p}\n${(c + i) % 2 ? BIG.slice(0, 1024 * (c % 24)) : ''}` };
          cmd = { command: 'create', path: p, file_text: entry.text };
          ok = created(p);
        }
        entry.sentAt = performance.now();
        const r = await client.post(cmd);
        entry.answeredAt = performance.now();
        entry.acked = r.status === 200 && r.content === ok && r.isError === false;
        // memoryd's own word that the outcome is unknown: checked all-or-nothing, like a write
        // in flight across the fault.
        if (r.status === 500 && r.content === UNSURE && r.isError === true) entry.unknown = true;
        if (!entry.acked && !entry.unknown && !(r.status === 500 && r.content === FAILED && r.isError === true)) {
          ledger.unexpected.push({ cmd: cmd.command, path: cmd.path, got: [r.status, r.content] });
        }
        ledger.writes.push(entry);
        onAnswer();
      }
    }));
  } finally {
    for (const client of clients) client.close();
  }
  assert.deepEqual(ledger.unexpected.slice(0, 3), [], `${ledger.unexpected.length} answers neither success nor storage failure`);
}

const count = (ledger) => ({
  acked: ledger.writes.filter((w) => w.acked && !w.unknown).length,
  refused: ledger.writes.filter((w) => !w.acked && !w.unknown).length,
});

// The tree holds exactly what was acknowledged: every acknowledged file with its text, no
// refused file, and in the shared file exactly the acknowledged lines (each once) above "base".
// A write of unknown outcome is there whole or not at all; returns how many of those are there.
async function checkLedger(client, ledger) {
  const lines = await readLines(client, ledger.shared);
  assert.equal(lines.pop(), 'base');
  const seen = new Map(lines.map((l) => [l, 0]));
  for (const l of lines) seen.set(l, seen.get(l) + 1);
  let unknownThere = 0;
  for (const w of ledger.writes) {
    let there;
    if (w.line !== undefined) {
      there = seen.get(w.line) === 1;
      assert.ok(there || !seen.has(w.line), `${w.line} is in ${ledger.shared} ${seen.get(w.line)} times`);
      seen.delete(w.line);
    } else {
      const r = await client.post({ command: 'view', path: w.path });
      there = r.status === 200;
      if (there) assert.equal(await readText(client, w.path), w.text, w.path);
      else assert.deepEqual([r.status, r.content], [404, missing(w.path)], w.path);
    }
    if (w.unknown) unknownThere += there;
    else assert.equal(there, w.acked, `${w.acked ? 'acknowledged' : 'refused'} ${w.path ?? w.line} is ${there ? '' : 'not '}there`);
  }
  assert.deepEqual([...seen.keys()], [], `lines of ${ledger.shared} that no write sent`);
  return unknownThere;
}

// The sizes (commands) of the batches whose transaction failed, from the debug log: each
// 'write batch failed' follows its batch's 'write batch' line (both from the writer thread).
function failedBatches(srv) {
  const sizes = [];
  let last = null;
  for (const l of srv.logs) {
    if (l.msg === 'write batch') last = l.commands;
    else if (l.msg === 'write batch failed') sizes.push(last);
  }
  return sizes;
}

// The fault must have refused writes and made batches fail; with `several`, among them a batch of
// several commands as a whole. memoryd writes its log from a background thread, so first wait
// until the request lines of all refused writes have arrived (the batch lines come before them).
// With `writerLost`, the fault may instead have struck the writer between batches (its retention
// pass runs a transaction of its own): the writer's connection is then lost and cannot be
// reopened, and every later batch fails at BEGIN, before any batch line.
async function assertBatchesFailed(t, srv, ledger, { several = true, writerLost = false } = {}) {
  const { acked, refused } = count(ledger);
  await srv.waitForLogs((logs) => logs.filter((l) => l.msg === 'request' && l.status === 500).length >= refused, 'the request lines of the refused writes');
  const sizes = failedBatches(srv);
  t.diagnostic(`${ledger.tag}: ${acked} writes acknowledged, ${refused} refused; ${sizes.length} batches failed, sizes ${JSON.stringify(sizes)}`);
  assert.ok(refused > 0, 'the fault refused no write');
  const errors = new Map();
  for (const l of srv.logs) if (l.level === 'error' || l.level === 'warn') errors.set(`${l.msg}: ${l.error ?? ''}`, (errors.get(`${l.msg}: ${l.error ?? ''}`) ?? 0) + 1);
  const lost = writerLost && srv.logs.some((l) => l.msg === 'cannot reopen the writer connection');
  assert.ok(sizes.length > 0 || lost, `no batch failed; errors logged: ${JSON.stringify([...errors])}`);
  if (several) assert.ok(sizes.some((n) => n >= 2), `no batch of several commands failed: ${JSON.stringify(sizes)}`);
}

// Stop memoryd, check the database, start it again on the same file and check the ledger.
async function restartAndCheck(srv, db, ledger) {
  await srv.stop();
  integrityCheck(db);
  const again = await startServer({ db });
  const c = makeClient(again.port);
  try {
    await checkLedger(c, ledger);
  } finally {
    c.close();
  }
  await again.stop();
  integrityCheck(db);
}

test(`disk full under ${WRITERS} concurrent writers: a batch whose COMMIT fails is refused whole; after space is freed and a restart, exactly the acknowledged writes are there`, async (t) => {
  const mnt = mountTmpfs(t);
  if (!mnt) return;
  let srv = null;
  try {
    const db = path.join(mnt, 'memoryd.db');
    srv = await startServer({ db, args: ['--log-level', 'debug', '--search', 'off'] });
    const c = makeClient(srv.port);
    const ledger = newLedger('full');
    await startLedger(c, ledger);
    await burst(srv.port, ledger, { rounds: 3 }); // acknowledged before the fault
    assert.equal(count(ledger).refused, 0);
    const filler = fill(mnt);
    await burst(srv.port, ledger, { rounds: 6 });
    await assertBatchesFailed(t, srv, ledger);
    await checkLedger(c, ledger); // also while memoryd still runs

    fs.rmSync(filler);
    const p = `${ledger.dir}/after.txt`;
    await eventually(async () => (await c.post({ command: 'create', path: p, file_text: 'after' })).status === 200, 'a write succeeds after space is freed');
    ledger.writes.push({ path: p, text: 'after', acked: true });
    c.close();
    await restartAndCheck(srv, db, ledger);
  } finally {
    if (srv && !srv.exited()) await srv.kill();
    unmount(mnt);
  }
});

test(`file-size limit under ${WRITERS} concurrent writers: a batch whose COMMIT fails is refused whole; after the limit is raised and a restart, exactly the acknowledged writes are there`, async (t) => {
  // --wal-size-limit 64M: the -wal file keeps the size the first burst gave it (as before the
  // default limit of 4 MiB, which cuts it back when writes pause), so that the limit set below
  // is reached while a batch of several commands commits; with the -wal file cut back, its
  // regrowth met the limit first and only one-command batches failed (seen: [1,1,1]).
  // --search off (here and in the disk-full case above): SQLite's word index is written in
  // transactions of the writer's own between batches (md_store_index_step), and one of those
  // could meet the limit first; the writer connection then goes (reopened once the limit is
  // raised) and no batch's COMMIT fails, which is what this test is about (seen once: the
  // step's disk I/O error, then 'cannot reopen the writer connection', no batch failed).
  const srv = await startServer({ args: ['--log-level', 'debug', '--wal-size-limit', '64M', '--search', 'off'] });
  const c = makeClient(srv.port);
  try {
    const ledger = newLedger('fsize');
    await startLedger(c, ledger);
    await burst(srv.port, ledger, { rounds: 3 });
    assert.equal(count(ledger).refused, 0);
    // What memoryd does once writes pause (the index's last step, the checkpoint, the index merged
    // and free pages given back) done first: taken while it ran, the limit fell in that work (the
    // writer's index step failed, and the writer with it) before any batch of the next burst.
    await filesSettled(srv.dbPath);
    // Some room above the current files, so that the limit is reached in the middle of the burst.
    const limit = Math.max(fs.statSync(`${srv.dbPath}-wal`).size, fs.statSync(srv.dbPath).size) + 128 * 1024;
    prlimit(srv.proc.pid, `${limit}:unlimited`);
    await burst(srv.port, ledger, { rounds: 6 });
    assert.equal(srv.exited(), null, 'memoryd was killed by SIGXFSZ');
    await assertBatchesFailed(t, srv, ledger);
    await checkLedger(c, ledger);

    prlimit(srv.proc.pid, 'unlimited:unlimited');
    const p = `${ledger.dir}/after.txt`;
    await assertCreated(c, p, 'after');
    ledger.writes.push({ path: p, text: 'after', acked: true });
    c.close();
    await restartAndCheck(srv, srv.dbPath, ledger);
  } finally {
    c.close();
    if (!srv.exited()) await srv.kill();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
});

// A 64 MiB ext4 image mounted on a loop device, or null after t.skip when that is not possible.
function mountExt4(t) {
  if (process.getuid() !== 0) {
    t.skip('not root: mounting an ext4 image (loop device) needs root');
    return null;
  }
  const dir = tempDir('memoryd-ext4-');
  const img = path.join(dir, 'fs.img');
  const mnt = path.join(dir, 'mnt');
  fs.mkdirSync(mnt);
  fs.writeFileSync(img, '');
  fs.truncateSync(img, 64 * 1024 * 1024);
  const steps = [['mkfs.ext4', ['-q', '-F', img]], ['mount', ['-t', 'ext4', '-o', 'loop', img, mnt]]];
  for (const [cmd, args] of steps) {
    const r = spawnSync(cmd, args);
    if (r.status !== 0) {
      fs.rmSync(dir, { recursive: true, force: true });
      t.skip(`cannot ${cmd} here (${r.error?.code ?? String(r.stderr).trim()}); the disk-full and file-size tests cover failed commits`);
      return null;
    }
  }
  return { dir, img, mnt };
}

// While the abort runs, Node is blocked in spawnSync, so a write answered before it started was
// committed (fsync returned) before the file system went read-only, and a write sent after it
// returned reached memoryd when the file system was read-only already. Both are checked
// exactly. The writes in flight across the abort have no reliable outcome, whatever memoryd
// answers: ext4 may fail the fsync of data that the abort's own sync already wrote (500, yet
// present after the remount), and an fsync racing the abort may succeed for data that never
// reaches the disk (200, yet missing) — seen here with a plain write+fsync loop and no SQLite,
// about 1 run in 30. For those the test checks that each is there whole or not at all, and
// reports how many are there.
test(`file system forced read-only while ${WRITERS} writers run (ext4 abort): writes from then on get 500, reads go on; after a remount and a restart, the acknowledged writes are there`, async (t) => {
  const ext4 = mountExt4(t);
  if (!ext4) return;
  const { dir, img, mnt } = ext4;
  let srv = null;
  try {
    const db = path.join(mnt, 'memoryd.db');
    srv = await startServer({ db, args: ['--log-level', 'debug'] });
    const c = makeClient(srv.port);
    const ledger = newLedger('ro');
    await startLedger(c, ledger);
    await assertCreated(c, `${ledger.dir}/before.txt`, 'before');
    ledger.writes.push({ path: `${ledger.dir}/before.txt`, text: 'before', acked: true });

    // A third of the way through the burst, the file system goes read-only under memoryd.
    const rounds = 9;
    let answers = 0;
    let abort = null;
    await burst(srv.port, ledger, {
      rounds,
      onAnswer: () => {
        if (++answers !== (WRITERS * rounds) / 3) return;
        const start = performance.now();
        const r = spawnSync('mount', ['-o', 'remount,abort', mnt]);
        abort = { start, end: performance.now(), status: r.status, stderr: String(r.stderr) };
      },
    });
    assert.equal(abort?.status, 0, `mount -o remount,abort: ${abort?.stderr}`);
    assert.ok(fs.readFileSync('/proc/mounts', 'utf8').split('\n').some((l) => l.includes(` ${mnt} `) && /[ ,](emergency_)?ro[ ,]/.test(l)), 'the file system is read-only');
    const after = ledger.writes.filter((w) => w.sentAt > abort.end);
    const inFlight = ledger.writes.filter((w) => w.sentAt !== undefined && w.sentAt <= abort.end && w.answeredAt > abort.start);
    assert.ok(after.length > 0);
    assert.deepEqual(after.filter((w) => w.acked), [], 'writes sent after the file system went read-only were acknowledged');
    for (const w of inFlight) w.unknown = true;
    // The batch committing when the file system went read-only fails (its size depends on the
    // moment), or the retention pass between two batches meets the fault first; later batches
    // fail already at BEGIN, as the writer connection cannot be reopened.
    await assertBatchesFailed(t, srv, ledger, { several: false, writerLost: true });
    // Reads still work; a new write is refused.
    assert.equal(await readText(c, `${ledger.dir}/before.txt`), 'before');
    await assertRefused(c, { command: 'create', path: `${ledger.dir}/late.txt`, file_text: 'x' }, 500, FAILED, [`${ledger.dir}/late.txt`]);
    assert.ok(srv.logs.some((l) => l.msg === 'sqlite error' && /read-only|I\/O/.test(l.error)), 'the cause is logged');
    c.close();

    // The remount needs memoryd's files closed: stop it (it exits 0; its last checkpoint fails),
    // then unmount and mount again, which replays the journal.
    await srv.stop();
    assert.equal(spawnSync('umount', [mnt]).status, 0);
    const m = spawnSync('mount', ['-t', 'ext4', '-o', 'loop', img, mnt]);
    assert.equal(m.status, 0, String(m.stderr));
    integrityCheck(db);
    srv = await startServer({ db });
    const c2 = makeClient(srv.port);
    try {
      const there = await checkLedger(c2, ledger);
      const inFlightAcked = inFlight.filter((w) => w.acked).length;
      t.diagnostic(`ro: ${inFlight.length} writes in flight across the abort (${inFlightAcked} answered 200, ` +
        `${inFlight.length - inFlightAcked} answered 500), ${there} of them there after the remount`);
      try {
        await assertCreated(c2, `${ledger.dir}/late.txt`, 'x');
      } catch (e) {
        // Seen once in a CI run, never alone: say why memoryd refused it, and how the file
        // system is mounted now.
        t.diagnostic(`memoryd's warnings and errors: ${JSON.stringify(srv.logs.filter((l) => l.level === 'warn' || l.level === 'error'))}`);
        t.diagnostic(`mounted: ${fs.readFileSync('/proc/mounts', 'utf8').split('\n').filter((l) => l.includes(` ${mnt} `)).join('; ')}`);
        throw e;
      }
    } finally {
      c2.close();
    }
    await srv.stop();
    integrityCheck(db);
  } finally {
    if (srv && !srv.exited()) await srv.kill();
    spawnSync('umount', [mnt]);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
