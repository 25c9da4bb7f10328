// `memoryd backup --db PATH --to FILE` (src/app/backup.c), for real, on SQLite only (a PostgreSQL
// URI is refused; tests/postgres/backup.test.mjs proves pg_dump/pg_restore instead), so
// tests/engines.txt lists it as SQLite's (no pg/ variant):
//   - online: memoryd serves a SQLite file; two tenants get a known tree (creates of files up
//     to 1 MiB, str_replace, insert, rename, delete), every write acknowledged (200) and
//     recorded; then 6 writers of a third tenant keep writing (a unique file per write and a
//     counter per writer, str_replace'd from n-1 to n) while `memoryd backup` runs, and go on
//     after it exits. The copy: exits 0 with its summary (pages × page size = the file's size,
//     3 tenants), mode 0600, no temporary file left; PRAGMA integrity_check ok (sqlite3 CLI);
//     a second memoryd on it answers every view of the two known trees (each file and
//     directory) exactly as the serving memoryd did before the backup, each file's content the
//     one written; every writer's file acknowledged before the backup began is there with its
//     content, none sent after the backup exited is; each counter lies between its last value
//     acknowledged before the backup and its first sent after it (one snapshot); writes were
//     acknowledged while the backup ran; and the copy takes new writes;
//   - bad input, each with its exact message and exit status, nothing created beside the
//     target and an existing target unchanged: an existing target (without --force), a
//     PostgreSQL URI, a missing source, a file that is not a database, a SQLite database that
//     is not memoryd's, a missing target directory, an unwritable one (as nobody when the
//     test runs as root), the source as its own target, missing and unknown arguments; --force
//     replaces an existing target; --help;
//   - interrupted: SIGTERM while the copy is being written (its temporary file exists) ends
//     it with exit 1 and `interrupted`, and removes the temporary file: nothing is left.
// Under valgrind (scripts/valgrind.sh), which looks for memory errors, the same paths with less
// data: one file of 1 MiB and one of 300,000 bytes and 8 notes per known tree, 3 writers; and
// the interrupted backup, itself under valgrind there (some 30 times slower), copies 4 MiB
// instead of 40.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeClient, readText } from '../lib/client.mjs';
import { dbInconsistencies } from '../lib/db.mjs';
import { spawn } from 'node:child_process';
import { memorydCommand, runMemoryd, startServer, tempDir } from '../lib/server.mjs';
import { volume } from '../lib/util.mjs';

const ARGS = ['--max-view', '4M'];
const WRITERS = volume(6, 3);
const dirs = [];
const scratch = (name) => {
  const d = tempDir(`memoryd-backup-${name}-`);
  dirs.push(d);
  return d;
};
const servers = [];
const serve = async (opts) => {
  const srv = await startServer(opts);
  servers.push(srv);
  return srv;
};
after(async () => {
  await Promise.all(servers.map((s) => s.kill())); // those a failed test left running
  dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true }));
});

// `bytes` of text (no trailing newline), lines that name the file.
function textOf(label, bytes) {
  const line = `${label}: the quick brown fox jumps over the lazy dog ñ ✓ 𝄞\n`;
  const text = line.repeat(Math.ceil(bytes / Buffer.byteLength(line)));
  return Buffer.from(text).subarray(0, bytes - 1).toString('utf8').replace(/[\n\uFFFD]+$/, '') + '.';
}

// The known trees: per tenant, the commands and the files (path -> content) they leave.
function knownSet() {
  const out = {};
  for (const tenant of ['alpha', 'beta']) {
    const files = new Map();
    const cmds = [];
    const create = (p, text) => { cmds.push({ command: 'create', path: p, file_text: text }); files.set(p, text); };
    const [big, large] = volume([10, 6], [2, 1]); // files, of which 1 MiB (the others 300,000 bytes)
    for (let i = 0; i < big; i++) create(`/memories/big/${tenant}-${i}.txt`, textOf(`${tenant} big ${i}`, i < large ? 1 << 20 : 300000));
    for (let i = 0; i < volume(30, 8); i++) create(`/memories/notes/d${i % 4}/n${i}.md`, `# ${tenant} note ${i}\n- item ${i}`);
    cmds.push({ command: 'str_replace', path: '/memories/notes/d0/n0.md', old_str: '- item 0', new_str: '- item zero, edited' });
    files.set('/memories/notes/d0/n0.md', `# ${tenant} note 0\n- item zero, edited`);
    cmds.push({ command: 'insert', path: '/memories/notes/d1/n1.md', insert_line: 1, insert_text: 'inserted line' });
    files.set('/memories/notes/d1/n1.md', `# ${tenant} note 1\ninserted line\n- item 1`);
    cmds.push({ command: 'rename', old_path: '/memories/notes/d2/n2.md', new_path: '/memories/moved/n2.md' });
    files.set('/memories/moved/n2.md', files.get('/memories/notes/d2/n2.md'));
    files.delete('/memories/notes/d2/n2.md');
    cmds.push({ command: 'delete', path: '/memories/notes/d3/n3.md' });
    files.delete('/memories/notes/d3/n3.md');
    out[tenant] = { cmds, files, gone: ['/memories/notes/d2/n2.md', '/memories/notes/d3/n3.md'] };
  }
  return out;
}

// Every directory above the given files, /memories included.
function dirsOf(files) {
  const out = new Set();
  for (const p of files) for (let d = path.posix.dirname(p); d !== '/'; d = path.posix.dirname(d)) out.add(d);
  return [...out].sort();
}

// View answers (status and body) of every file and directory of a tree.
async function views(port, tenant, paths) {
  const c = makeClient(port, { tenant });
  const out = {};
  for (const p of paths) {
    const r = await c.post({ command: 'view', path: p });
    out[p] = [r.status, r.text];
  }
  c.close();
  return out;
}

test('memoryd backup while memoryd writes: a checked copy holding every write acknowledged before it began', { timeout: 300000 }, async () => {
  const dir = scratch('online');
  const db = path.join(dir, 'memoryd.db');
  const to = path.join(scratch('copy'), 'copy.db');
  const srv = await serve({ db, args: ARGS });
  const known = knownSet();
  for (const [tenant, { cmds }] of Object.entries(known)) {
    const c = makeClient(srv.port, { tenant });
    for (const cmd of cmds) {
      const r = await c.post(cmd);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.isError, false, r.text);
    }
    c.close();
  }
  const before = {};
  for (const [tenant, { files, gone }] of Object.entries(known)) {
    before[tenant] = await views(srv.port, tenant, [...files.keys(), ...dirsOf(files.keys()), ...gone]);
  }

  // The writers: phase is the backup's, as each write is sent and as it is acknowledged.
  let phase = 'before';
  let stop = false;
  const log = Array.from({ length: WRITERS }, () => []); // {kind, n, sent, acked}
  let failure = null;
  const writers = Array.from({ length: WRITERS }, (_, w) => (async () => {
    const c = makeClient(srv.port, { tenant: 'writers' });
    let r = await c.post({ command: 'create', path: `/memories/w${w}/counter.txt`, file_text: 'count=0' });
    assert.equal(r.status, 200, r.text);
    let afterWrites = 0;
    for (let n = 1; !stop || afterWrites < 6; n++) {
      for (const cmd of [
        { kind: 'file', command: 'create', path: `/memories/w${w}/f${n}.txt`, file_text: `writer ${w} file ${n}` },
        { kind: 'counter', command: 'str_replace', path: `/memories/w${w}/counter.txt`, old_str: `count=${n - 1}`, new_str: `count=${n}` },
      ]) {
        const { kind, ...body } = cmd;
        const entry = { kind, n, sent: phase };
        r = await c.post(body);
        assert.equal(r.status, 200, r.text);
        assert.equal(r.isError, false, r.text);
        entry.acked = phase;
        log[w].push(entry);
        if (entry.sent === 'after') afterWrites++;
      }
    }
    c.close();
  })().catch((e) => { failure = e; stop = true; throw e; }));
  // Let every writer get some writes acknowledged first.
  while (log.some((l) => l.length < 10)) {
    if (failure) throw failure;
    await new Promise((res) => setTimeout(res, 5));
  }

  phase = 'during';
  const backup = runMemoryd(['backup', '--db', db, '--to', to]);
  const result = await backup;
  phase = 'after';
  const sizeAtExit = fs.statSync(to).size;
  const modeAtExit = fs.statSync(to).mode & 0o777;
  stop = true;
  await Promise.all(writers);
  await srv.stop();

  assert.equal(result.stderr, '');
  const m = /^memoryd backup: copied (.*) to (.*): (\d+) pages of 4096 bytes, 3 tenants, integrity_check ok\n$/.exec(result.stdout);
  assert.ok(m, result.stdout);
  assert.equal(result.code, 0);
  assert.deepEqual([m[1], m[2]], [db, to]);
  assert.equal(Number(m[3]) * 4096, sizeAtExit);
  assert.equal(modeAtExit, 0o600);
  assert.deepEqual(fs.readdirSync(path.dirname(to)), ['copy.db']);
  const during = log.flat().filter((e) => e.acked === 'during').length;
  assert.ok(during > 0, 'no write was acknowledged while the backup ran: the test did not test an online backup');

  assert.deepEqual(dbInconsistencies(to), []);
  const copy = await serve({ db: to, args: ARGS });
  for (const [tenant, { files, gone }] of Object.entries(known)) {
    assert.deepEqual(await views(copy.port, tenant, [...files.keys(), ...dirsOf(files.keys()), ...gone]), before[tenant], tenant);
    const c = makeClient(copy.port, { tenant });
    for (const [p, text] of files) assert.equal(await readText(c, p), text, `${tenant} ${p}`);
    for (const p of gone) assert.equal((await c.post({ command: 'view', path: p })).status, 404);
    c.close();
  }
  const c = makeClient(copy.port, { tenant: 'writers' });
  for (let w = 0; w < WRITERS; w++) {
    for (const e of log[w].filter((x) => x.kind === 'file')) {
      const p = `/memories/w${w}/f${e.n}.txt`;
      if (e.acked === 'before') assert.equal(await readText(c, p), `writer ${w} file ${e.n}`, p);
      if (e.sent === 'after') {
        const r = await c.post({ command: 'view', path: p });
        assert.equal(r.content, `The path ${p} does not exist. Please provide a valid path.`);
      }
    }
    const counters = log[w].filter((x) => x.kind === 'counter');
    const low = Math.max(0, ...counters.filter((x) => x.acked === 'before').map((x) => x.n));
    const high = Math.min(...counters.filter((x) => x.sent === 'after').map((x) => x.n));
    const got = Number(/^count=(\d+)$/.exec(await readText(c, `/memories/w${w}/counter.txt`))[1]);
    assert.ok(low >= 5 && got >= low && got < high, `writer ${w}: counter ${got} in the copy, ${low} acknowledged before the backup, ${high} sent after it`);
  }
  c.close();
  // The copy serves: a new write on it, read back.
  const r = await copy.post({ command: 'create', path: '/memories/after-restore.txt', file_text: 'restored copy takes writes' }, { tenant: 'alpha' });
  assert.equal(r.status, 200, r.text);
  assert.equal(await readText(makeClient(copy.port, { tenant: 'alpha' }), '/memories/after-restore.txt'), 'restored copy takes writes');
  await copy.stop();
  assert.deepEqual(dbInconsistencies(to), []);
});

test('memoryd backup: bad input is refused with a clear message and creates nothing', { timeout: 120000 }, async () => {
  const dir = scratch('bad');
  const db = path.join(dir, 'memoryd.db');
  const srv = await serve({ db });
  assert.equal((await srv.post({ command: 'create', path: '/memories/a.txt', file_text: 'a' })).status, 200);
  await srv.stop();
  const out = scratch('bad-out');
  const listing = () => fs.readdirSync(out).sort();
  const refuse = async (args, code, stderr) => {
    const was = listing();
    const r = await runMemoryd(['backup', ...args]);
    assert.deepEqual([r.code, r.stdout, r.stderr], [code, '', stderr], args.join(' '));
    assert.deepEqual(listing(), was, `${args.join(' ')}: files appeared`);
  };
  const usage = (await runMemoryd(['backup', '--help'])).stdout;
  assert.match(usage, /^Usage: memoryd backup --db PATH --to FILE \[--force\]\n/);
  assert.match(usage, /\nExit status: 0 done/);

  const existing = path.join(out, 'existing.db');
  fs.writeFileSync(existing, 'keep me');
  await refuse(['--db', db, '--to', existing], 1, `memoryd backup: ${existing}: exists (nothing was written; --force replaces it)\n`);
  assert.equal(fs.readFileSync(existing, 'utf8'), 'keep me');

  const target = path.join(out, 'copy.db');
  await refuse(['--db', 'postgresql://memoryd@db.internal/memoryd', '--to', target], 2,
    'memoryd backup: --db is a PostgreSQL URI; memoryd backup copies SQLite databases only: back PostgreSQL up with pg_dump (or base backups and WAL archiving), see docs/operations.md, Backup and restore\n');
  const missing = path.join(dir, 'missing.db');
  await refuse(['--db', missing, '--to', target], 1, `memoryd backup: ${missing}: No such file or directory\n`);
  assert.equal(fs.existsSync(missing), false);
  const junk = path.join(dir, 'junk.db');
  fs.writeFileSync(junk, 'this is not a database, but it is long enough to be read as one. '.repeat(100));
  await refuse(['--db', junk, '--to', target], 1, `memoryd backup: ${junk} is not a SQLite database: file is not a database\n`);
  const other = path.join(dir, 'other.db');
  execFileSync('sqlite3', [other, 'CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES (\'x\');']);
  await refuse(['--db', other, '--to', target], 1, `memoryd backup: ${other} is not a memoryd database (no memoryd schema in it)\n`);
  const nodir = path.join(out, 'no', 'such', 'dir', 'copy.db');
  await refuse(['--db', db, '--to', nodir], 1, `memoryd backup: cannot create the copy in ${path.dirname(nodir)}: No such file or directory\n`);
  await refuse(['--db', db, '--to', db, '--force'], 1, `memoryd backup: ${db}: is the database itself\n`);
  await refuse(['--db', db, '--to', out], 1, `memoryd backup: ${out}: is a directory (give the name of the copy)\n`);
  const noTo = await runMemoryd(['backup', '--db', db]);
  assert.deepEqual([noTo.code, noTo.stderr], [2, `memoryd backup: both --db (or MEMORYD_DB) and --to are needed\n\n${usage}`]);
  const unknown = await runMemoryd(['backup', '--db', db, '--to', target, '--fast']);
  assert.deepEqual([unknown.code, unknown.stderr], [2, `memoryd backup: unknown or incomplete argument: --fast\n\n${usage}`]);
  assert.deepEqual(listing(), ['existing.db']);

  // --force replaces the existing target with a checked copy.
  const forced = await runMemoryd(['backup', '--db', db, '--to', existing, '--force']);
  assert.equal(forced.code, 0, forced.stderr);
  assert.equal(forced.stdout, `memoryd backup: copied ${db} to ${existing}: ${fs.statSync(existing).size / 4096} pages of 4096 bytes, 1 tenants, integrity_check ok\n`);
  assert.equal(execFileSync('sqlite3', [existing, 'SELECT content FROM entries WHERE path = \'/memories/a.txt\''], { encoding: 'utf8' }), 'a\n');
  // MEMORYD_DB stands for --db, as for memoryd itself.
  const viaEnv = await runMemoryd(['backup', '--to', target], { env: { MEMORYD_DB: db } });
  assert.equal(viaEnv.code, 0, viaEnv.stderr);
  assert.deepEqual(listing(), ['copy.db', 'existing.db']);
});

test('memoryd backup reports its progress: log lines of pages copied (MEMORYD_PROGRESS_MS), a bar on a terminal', { timeout: 120000 }, async () => {
  const dir = scratch('progress');
  const db = path.join(dir, 'src.db');
  const srv = await startServer({ db });
  const c = makeClient(srv.port);
  for (let i = 0; i < 40; i++) await c.post({ command: 'create', path: `/memories/f${i}.txt`, file_text: 'x'.repeat(20000) });
  c.close();
  await srv.stop();
  // Without a terminal: JSON log lines of the pages copied, growing to the total, then "done".
  const r = await runMemoryd(['backup', '--db', db, '--to', path.join(dir, 'log.db')], { env: { MEMORYD_PROGRESS_MS: '0' } });
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const pages = fs.statSync(path.join(dir, 'log.db')).size / 4096;
  assert.ok(lines.length >= 2, r.stderr);
  assert.deepEqual(lines.map((l) => [l.level, l.msg, l.work, l.unit, l.total]),
    [...lines.slice(0, -1).map(() => ['info', 'progress', 'backup', 'pages', pages]), ['info', 'done', 'backup', 'pages', pages]]);
  assert.equal(lines.at(-1).done, pages);
  const counts = lines.map((l) => l.done);
  assert.ok(counts.every((n, i) => n >= (counts[i - 1] ?? 0) && n <= pages), counts.join());
  // On a terminal (script(1) gives it one): a bar that ends at 100%, on a line of its own.
  const [file, argv] = memorydCommand(['backup', '--db', db, '--to', path.join(dir, 'tty.db')]);
  const tty = execFileSync('script', ['-qec', [file, ...argv].map((a) => `'${a}'`).join(' '), '/dev/null'],
    { encoding: 'utf8', env: { ...process.env, MEMORYD_PROGRESS_MS: '0' } });
  assert.match(tty, new RegExp(`\rbackup  \\[#{30}\\] 100%  ${pages.toLocaleString('en-US')}/${pages.toLocaleString('en-US')} pages  [\\d,]+/s \r?\n`));
  assert.match(tty, /memoryd backup: copied .* integrity_check ok/);
});

test('memoryd backup: a target directory it cannot write in is refused', { timeout: 60000 }, async () => {
  // As root (CI), memoryd backup runs as nobody: root writes in any directory.
  const asRoot = process.getuid() === 0;
  const wrapper = asRoot ? ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups'] : undefined;
  const dir = scratch('ro');
  fs.chmodSync(dir, 0o755);
  const db = path.join(dir, 'memoryd.db');
  const srv = await serve({ db });
  await srv.stop();
  const ro = scratch('ro-out');
  fs.chmodSync(ro, 0o555);
  try {
    const r = await runMemoryd(['backup', '--db', db, '--to', path.join(ro, 'copy.db')], { wrapper });
    assert.deepEqual([r.code, r.stdout, r.stderr], [1, '', `memoryd backup: cannot create the copy in ${ro}: Permission denied\n`]);
    assert.deepEqual(fs.readdirSync(ro), []);
  } finally {
    fs.chmodSync(ro, 0o755);
  }
});

test('memoryd backup: SIGTERM while it copies leaves nothing behind', { timeout: 120000 }, async () => {
  const dir = scratch('signal');
  const db = path.join(dir, 'memoryd.db');
  const srv = await serve({ db });
  const c = makeClient(srv.port, { tenant: 'big' });
  for (let i = 0; i < volume(40, 4); i++) {
    const r = await c.post({ command: 'create', path: `/memories/f${i}.txt`, file_text: textOf(`file ${i}`, 1 << 20) });
    assert.equal(r.status, 200, r.text);
  }
  c.close();
  const out = scratch('signal-out');
  const p = spawn(...memorydCommand(['backup', '--db', db, '--to', path.join(out, 'copy.db')]));
  let stdout = '', stderr = '';
  p.stdout.on('data', (d) => { stdout += d; });
  p.stderr.on('data', (d) => { stderr += d; });
  const done = new Promise((res) => p.on('close', (code) => res(code)));
  // The temporary file appears before the source is read: from then on the backup is copying.
  while (!fs.readdirSync(out).some((f) => f.startsWith('copy.db.tmp-'))) await new Promise((res) => setImmediate(res));
  p.kill('SIGTERM');
  const code = await done;
  assert.deepEqual([code, stdout, stderr], [1, '', 'memoryd backup: interrupted (nothing was written)\n']);
  assert.deepEqual(fs.readdirSync(out), []);
  await srv.stop();
});
