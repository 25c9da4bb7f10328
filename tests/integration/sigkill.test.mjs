// Proves crash durability and atomicity (docs/behaviour.md §7): an acknowledged write survives a
// crash of memoryd (kill -9), and every command happens completely or not at all.
// memoryd runs on one database file; 8 clients on their own connections drive concurrent writes
// (creates of unique files, creates with missing parents, inserts into shared files, str_replace
// on per-client counters, and directory renames), a ledger records every write acknowledged with
// 200, and memoryd is killed with SIGKILL at a random moment after a random number of
// acknowledgements, while other writes are still in flight. It is restarted on the same database,
// 24 times in a row (MD_CRASH_SEED, printed, replays the same kill plans), and after each restart:
//   - every acknowledged write is there (the file with its exact content, the inserted line once,
//     the counter at least at its acknowledged value, the renamed tree at its new place);
//   - a write whose outcome is unknown (no response before the kill) either fully happened or not
//     at all: no file without its parent directories, no parents without the file, no half-moved
//     directory, no line twice; nothing exists that no command created; every directory's size is
//     the bytes of the files below it;
//   - `PRAGMA integrity_check` on the database says "ok" (sqlite3 CLI; skipped with a note if absent).
// Run with --durability full (the default) and --durability normal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeClient, readText } from '../lib/client.mjs';
import { createDatabase, isPg, pgInconsistencies } from '../lib/pg.mjs';
import { startServer, tempDir } from '../lib/server.mjs';
import { formatSize, mulberry32 } from '../lib/util.mjs';

const CLIENTS = 8;
const SHARED = 3;

function parseListing(content, dir) {
  const [header, ...rest] = content.split('\n');
  assert.equal(header, `Here're the files and directories up to 2 levels deep in ${dir}, excluding hidden items and node_modules:`);
  return rest.map((line) => {
    const m = /^(\d+(?:\.\d)?[BKMG])\t(\/memories.*)$/.exec(line);
    assert.ok(m, `bad listing line ${JSON.stringify(line)}`);
    return { size: m[1], path: m[2].replace(/\/$/, ''), dir: m[2].endsWith('/') || m[2] === dir };
  });
}

// The whole tree through the API: files (path -> content), dirs, and every listed size. The
// directories are listed through the first client; the files, once all are listed, are read
// through every client at once (each its own connection: one request at a time each).
async function readTree(clients) {
  const files = new Map();
  const listed = new Set();
  const dirs = new Set(['/memories']);
  const sizes = new Map();
  const todo = ['/memories'];
  while (todo.length) {
    const d = todo.pop();
    const r = await clients[0].post({ command: 'view', path: d });
    assert.equal(r.status, 200, r.text);
    for (const e of parseListing(r.content, d)) {
      sizes.set(e.path, e.size);
      if (e.path === d || dirs.has(e.path) || listed.has(e.path)) continue;
      if (e.dir) {
        dirs.add(e.path);
        todo.push(e.path);
      } else {
        listed.add(e.path);
      }
    }
  }
  const paths = [...listed];
  let next = 0;
  await Promise.all(clients.map(async (client) => {
    while (next < paths.length) {
      const p = paths[next++];
      files.set(p, await readText(client, p));
    }
  }));
  // Every size shown is the bytes of the files read back.
  for (const [p, size] of sizes) {
    const bytes = dirs.has(p)
      ? [...files].filter(([f]) => f.startsWith(`${p}/`)).reduce((s, [, t]) => s + Buffer.byteLength(t), 0)
      : Buffer.byteLength(files.get(p));
    assert.equal(size, formatSize(bytes), `size shown for ${p}`);
  }
  return { files, dirs };
}

// The ledger: what the clients were told. A write is 'acked' (200 received), 'unknown' (sent, no
// response before the kill) or, once checked after a restart, resolved to 'acked' or 'absent'.
function newLedger() {
  return {
    files: new Map(), // path -> {content, state}: plain creates
    deep: [], // {base, file, content, state}: creates with three missing parents
    moves: [], // {base, x, y, rename}: two creates then a directory rename
    lines: new Map(), // line -> {file, state}: inserts into shared files
    counters: new Map(), // path -> {value, pending}: str_replace value=n -> value=n+1
  };
}

let sqliteWarned = false;
function integrityCheck(t, db) {
  if (isPg()) {
    assert.deepEqual(pgInconsistencies(db), [], 'the data in PostgreSQL is consistent');
    return;
  }
  let out;
  try {
    out = execFileSync('sqlite3', [db, 'PRAGMA integrity_check;'], { encoding: 'utf8' });
  } catch (e) {
    if (e.code === 'ENOENT') {
      if (!sqliteWarned) t.diagnostic('sqlite3 CLI not found (scripts/setup.sh --test installs it): PRAGMA integrity_check skipped');
      sqliteWarned = true;
      return;
    }
    throw e;
  }
  assert.equal(out, 'ok\n', `PRAGMA integrity_check of ${db}`);
}

// Check the restarted server's data against the ledger, then resolve every unknown outcome.
async function verify(clients, L) {
  const { files, dirs } = await readTree(clients);
  const allowed = new Set();
  const has = (p) => files.has(p);
  const fileState = (entry, p, what) => {
    allowed.add(p);
    if (entry.state === 'acked') assert.equal(files.get(p), entry.content, `acknowledged ${what} ${p}`);
    else if (entry.state === 'absent') assert.ok(!has(p), `${p} was absent after an earlier crash, now exists`);
    else if (has(p)) assert.equal(files.get(p), entry.content, `${what} ${p} (outcome unknown) has other content`);
    return has(p);
  };
  const resolve = (entry, present) => { if (entry.state === 'unknown') entry.state = present ? 'acked' : 'absent'; };

  for (const [p, entry] of L.files) resolve(entry, fileState(entry, p, 'create'));

  for (const g of L.deep) {
    const present = fileState(g, g.file, 'create with parents');
    if (present) {
      for (const d of [g.base, `${g.base}/a`, `${g.base}/a/b`]) assert.ok(dirs.has(d), `${g.file} exists without its parent ${d}`);
    } else {
      assert.ok(![...dirs].some((d) => d === g.base || d.startsWith(`${g.base}/`)), `parents of ${g.file} were left without the file`);
    }
    resolve(g, present);
  }

  for (const g of L.moves) {
    const src = `${g.base}/src`, dst = `${g.base}/dst/deeper`;
    for (const name of ['x', 'y']) allowed.add(`${src}/${name}.txt`).add(`${dst}/${name}.txt`);
    const moved = dirs.has(dst);
    if (g.rename === 'acked') assert.ok(moved, `acknowledged rename ${src} -> ${dst} is not there`);
    if (g.rename === 'absent' || g.rename === 'unsent') assert.ok(!dirs.has(`${g.base}/dst`), `rename of ${src} happened though never acknowledged`);
    if (moved) {
      // Fully moved: both files at the destination, nothing left at the source.
      assert.ok(!dirs.has(src), `${src} still exists after it was moved to ${dst}`);
      for (const name of ['x', 'y']) assert.equal(files.get(`${dst}/${name}.txt`), g[name].content, `moved ${name}.txt`);
    } else {
      assert.ok(!dirs.has(`${g.base}/dst`), `half-applied rename: ${g.base}/dst exists without ${dst}`);
      for (const name of ['x', 'y']) resolve(g[name], fileState(g[name], `${src}/${name}.txt`, 'create'));
    }
    if (g.rename === 'unknown') g.rename = moved ? 'acked' : 'absent';
  }

  for (const [p, c] of L.counters) {
    allowed.add(p);
    const m = /^value=(\d+)$/.exec(files.get(p) ?? '');
    assert.ok(m, `counter ${p}: ${JSON.stringify(files.get(p))}`);
    const value = Number(m[1]);
    const ok = c.pending === null ? [c.value] : [c.value, c.pending];
    assert.ok(ok.includes(value), `counter ${p} is ${value}, expected one of ${ok}`);
    c.value = value;
    c.pending = null;
  }

  const counts = new Map();
  for (let s = 0; s < SHARED; s++) {
    const p = `/memories/shared/s${s}.txt`;
    allowed.add(p);
    const lines = (files.get(p) ?? '').split('\n');
    assert.equal(lines.at(-1), `shared file ${s}`, `${p} lost its last line`);
    for (const line of lines.slice(0, -1)) {
      const entry = L.lines.get(line);
      assert.ok(entry && entry.file === p, `${p} has a line nobody inserted there: ${JSON.stringify(line)}`);
      counts.set(line, (counts.get(line) ?? 0) + 1);
    }
  }
  for (const [line, entry] of L.lines) {
    const n = counts.get(line) ?? 0;
    assert.ok(n <= 1, `line ${line} is in ${entry.file} ${n} times`);
    if (entry.state === 'acked') assert.equal(n, 1, `acknowledged insert of ${line} into ${entry.file} is missing`);
    if (entry.state === 'absent') assert.equal(n, 0, `line ${line} appeared after an earlier crash`);
    resolve(entry, n === 1);
  }

  for (const p of files.keys()) assert.ok(allowed.has(p), `file ${p} exists though no command created it`);
}

// Round `round`: CLIENTS clients write until the server has acknowledged `plan.killAfter` writes
// in this round; from then on, memoryd is killed with SIGKILL `plan.delayMs` after at least
// `plan.inFlight` requests have been sent and not answered yet (those writes may or may not have
// been committed). The plans are drawn at random, so the kills land at random moments: inside a
// batch, between the commit and the answers, while a checkpoint runs.
async function driveAndKill(srv, L, round, plan) {
  const { killAfter, inFlight: IN_FLIGHT, delayMs } = plan;
  let acks = 0;
  let unanswered = 0;
  let inFlight = 0;
  let killed = false;
  let exited = null;
  let armed = false;
  const kill = () => {
    if (killed) return;
    killed = true;
    exited = srv.kill();
  };
  const sent = () => {
    inFlight++;
    // Safety net: a round ends even if fewer requests ever overlap.
    if (!armed && ((acks >= killAfter && inFlight >= IN_FLIGHT) || acks >= killAfter + 500)) {
      armed = true;
      if (delayMs === 0) kill();
      else setTimeout(kill, delayMs);
    }
  };
  // Send one write; returns true if acknowledged, false if the outcome is unknown, null if the
  // kill came first and it was never sent.
  const send = async (client, cmd, expected) => {
    if (killed) return null;
    let r;
    let wasSent = false;
    try {
      r = await client.post(cmd, () => { wasSent = true; sent(); });
    } catch {
      if (wasSent) inFlight--;
      kill(); // a dead connection: the server is gone (or going)
      unanswered++;
      return false;
    }
    inFlight--;
    assert.deepEqual([r.status, r.content], [200, expected], JSON.stringify(cmd));
    acks++;
    return true;
  };
  const clients = Array.from({ length: CLIENTS }, () => makeClient(srv.port));
  await Promise.all(clients.map(async (client, c) => {
    for (let i = 0; !killed; i++) {
      const tag = `r${round}-c${c}-i${i}`;
      const state = (ok) => (ok ? 'acked' : 'unknown');
      switch (i % 5) {
        case 0: { // a unique file; sizes vary so that commits span several pages
          const p = `/memories/r${round}/c${c}/f${i}.txt`;
          const content = `${tag}\n${'payload '.repeat((i * 37) % 700)}`;
          const ok = await send(client, { command: 'create', path: p, file_text: content }, `File created successfully at: ${p}`);
          if (ok !== null) L.files.set(p, { content, state: state(ok) });
          break;
        }
        case 1: { // a line into a file shared by all clients
          const p = `/memories/shared/s${(c + i) % SHARED}.txt`;
          const ok = await send(client, { command: 'insert', path: p, insert_line: 0, insert_text: `${tag}\n` }, `The file ${p} has been edited.`);
          if (ok !== null) L.lines.set(tag, { file: p, state: state(ok) });
          break;
        }
        case 2: { // a file whose three parent directories are made by the same command
          const base = `/memories/r${round}/deep/${tag}`;
          const file = `${base}/a/b/f.txt`;
          const ok = await send(client, { command: 'create', path: file, file_text: tag }, `File created successfully at: ${file}`);
          if (ok !== null) L.deep.push({ base, file, content: tag, state: state(ok) });
          break;
        }
        case 3: { // this client's counter, advanced with str_replace
          const p = `/memories/counters/c${c}.txt`;
          const ctr = L.counters.get(p);
          const ok = await send(client, { command: 'str_replace', path: p, old_str: `value=${ctr.value}`, new_str: `value=${ctr.value + 1}` },
            `The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tvalue=${ctr.value + 1}`);
          if (ok) ctr.value++;
          else if (ok === false) ctr.pending = ctr.value + 1;
          break;
        }
        default: { // two files in a directory, then the directory moved under new parents
          const base = `/memories/r${round}/mv/${tag}`;
          const g = { base, x: { content: `${tag} x`, state: 'unsent' }, y: { content: `${tag} y\n`, state: 'unsent' }, rename: 'unsent' };
          for (const name of ['x', 'y']) {
            const p = `${base}/src/${name}.txt`;
            const ok = await send(client, { command: 'create', path: p, file_text: g[name].content }, `File created successfully at: ${p}`);
            if (ok !== null) g[name].state = state(ok);
          }
          if (g.x.state !== 'unsent') L.moves.push(g);
          if (g.x.state === 'acked' && g.y.state === 'acked') {
            const ok = await send(client, { command: 'rename', old_path: `${base}/src`, new_path: `${base}/dst/deeper` },
              `Successfully renamed ${base}/src to ${base}/dst/deeper`);
            if (ok !== null) g.rename = state(ok);
          }
          // Files never sent are not expected at all.
          for (const name of ['x', 'y']) if (g[name].state === 'unsent') g[name].state = 'absent';
        }
      }
    }
  }));
  for (const c of clients) c.close();
  const e = await exited;
  assert.equal(e.signal, 'SIGKILL', `memoryd ended by itself: ${JSON.stringify(e)}\n${srv.rawStderr.slice(-20).join('\n')}`);
  return { acks, unanswered };
}

// verify through READERS clients of `srv`.
const READERS = 4;
async function verifyOn(srv, L) {
  const clients = Array.from({ length: READERS }, () => makeClient(srv.port));
  try {
    await verify(clients, L);
  } finally {
    for (const c of clients) c.close();
  }
}

async function crashLoop(t, durability, kills) {
  const seed = Number(process.env.MD_CRASH_SEED ?? (Date.now() % 2147483647));
  const rand = mulberry32(seed);
  t.diagnostic(`kill moments drawn with MD_CRASH_SEED=${seed}`);
  const dir = tempDir('memoryd-sigkill-');
  const db = isPg() ? await createDatabase() : path.join(dir, 'memoryd.db');
  const L = newLedger();
  const args = durability === 'full' ? [] : ['--durability', durability]; // full is the default
  let srv = null;
  try {
    // Setup, acknowledged before the first crash.
    srv = await startServer({ db, args });
    assert.equal(srv.logs.find((l) => l.msg === 'listening').durability, durability);
    const setup = makeClient(srv.port);
    for (let s = 0; s < SHARED; s++) {
      const p = `/memories/shared/s${s}.txt`;
      assert.equal((await setup.post({ command: 'create', path: p, file_text: `shared file ${s}` })).status, 200);
    }
    for (let c = 0; c < CLIENTS; c++) {
      const p = `/memories/counters/c${c}.txt`;
      assert.equal((await setup.post({ command: 'create', path: p, file_text: 'value=0' })).status, 200);
      L.counters.set(p, { value: 0, pending: null });
    }
    setup.close();
    for (let round = 0; round < kills; round++) {
      const plan = {
        killAfter: 20 + Math.floor(rand() * 240),
        inFlight: 1 + Math.floor(rand() * CLIENTS),
        delayMs: rand() < 0.3 ? 0 : Math.floor(rand() * 8),
      };
      const { acks, unanswered } = await driveAndKill(srv, L, round, plan);
      t.diagnostic(`round ${round} ${JSON.stringify(plan)}: ${acks} writes acknowledged, ${unanswered} unanswered at the kill`);
      srv = await startServer({ db, args });
      await verifyOn(srv, L);
      integrityCheck(t, db);
    }
    // A clean stop after the crashes keeps all of it.
    await srv.stop();
    srv = await startServer({ db, args });
    await verifyOn(srv, L);
    await srv.stop();
    integrityCheck(t, db);
    const acked = [...L.files.values(), ...L.deep, ...L.lines.values()].filter((e) => e.state === 'acked').length;
    assert.ok(acked > 0);
    t.diagnostic(`${acked} creates/inserts checked, ${L.moves.filter((g) => g.rename === 'acked').length} renames`);
  } finally {
    if (srv && !srv.exited()) await srv.kill(); // only after a failed assertion
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('SIGKILL at random moments during concurrent writes, 24 times in a row (--durability full): acknowledged writes survive, nothing half-applied', async (t) => {
  await crashLoop(t, 'full', 24);
});

test('SIGKILL at random moments during concurrent writes, 4 times in a row (--durability normal): a process crash loses no acknowledged write', async (t) => {
  await crashLoop(t, 'normal', 4);
});
