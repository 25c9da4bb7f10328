// PostgreSQL faults, for real:
//   - the server restarted under load (a PostgreSQL of this test's own): while it is down,
//     memoryd answers 503 with Retry-After (writes not applied) and /readyz says so; it
//     reconnects by itself; no acknowledged write is lost;
//   - memoryd's connections cut by the server (pg_terminate_backend): the next reads and
//     writes succeed at once (the pool and the writer reconnect, a batch runs again);
//   - kill -9 of one of two instances in the middle of its batches: the other keeps serving,
//     no acknowledged write of either is lost, the data stays consistent;
//   - the connection lost during COMMIT (a proxy on the socket that cuts it there): the answer
//     is "may or may not have been applied", true both ways;
//   - a command that fails in the database, in a batch with others: it alone fails;
//   - retention held up by a lock another session holds on the versions it must delete: the
//     writer goes on (retention runs beside it, on a connection of its own), every write of
//     that time is acknowledged while retention still waits, and retention finishes once the
//     lock goes.
// Runs only on PostgreSQL (MD_TEST_PG; tests/CMakeLists.txt).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { makeClient, readText } from '../lib/client.mjs';
import { createDatabase, pgCluster, pgCtl, pgInconsistencies, psql, startCluster, stopCluster, uriOf } from '../lib/pg.mjs';
import { startServer, tempDir } from '../lib/server.mjs';
import { sleep } from '../lib/attack.mjs';

const UNAVAILABLE = 'Error: The memory store is unavailable right now; the command was not applied. Try again shortly.';
const UNSURE = 'Error: The memory store could not confirm that the command was saved (a disk flush failed, or the connection to the database was lost while committing): it may or may not have been applied. View the path before trying again.';
const FAILED = 'Error: The memory store failed; the command was not applied. Try again later.';

// Clients writing unique files (and reading one) until stopped; every answer is kept.
function load(port, { writers = 6, readers = 2, tenant = 'load', prefix = 'w' } = {}) {
  const log = []; // {kind, path, content, status, text, retryAfter} | {kind, error}
  let running = true;
  const jobs = [];
  for (let w = 0; w < writers; w++) {
    const c = makeClient(port, { tenant });
    jobs.push((async () => {
      for (let k = 0; running; k++) {
        const p = `/memories/${prefix}${w}/f${k}.txt`;
        const content = `${prefix}${w} file ${k}`;
        try {
          const r = await c.post({ command: 'create', path: p, file_text: content });
          log.push({ kind: 'create', path: p, content, status: r.status, text: r.content, retryAfter: r.headers['retry-after'] });
          if (r.status !== 200) await sleep(20);
        } catch (e) {
          log.push({ kind: 'create', path: p, content, error: String(e) });
          break; // the connection is gone (the server died): this client stops
        }
      }
      c.close();
    })());
  }
  for (let i = 0; i < readers; i++) {
    const c = makeClient(port, { tenant });
    jobs.push((async () => {
      while (running) {
        try {
          const r = await c.post({ command: 'view', path: '/memories/fixed.txt' });
          log.push({ kind: 'view', status: r.status, text: r.content, retryAfter: r.headers['retry-after'] });
          if (r.status !== 200) await sleep(20);
        } catch (e) {
          log.push({ kind: 'view', error: String(e) });
          break;
        }
      }
      c.close();
    })());
  }
  return { log, stop: async () => { running = false; await Promise.all(jobs); } };
}

// Every acknowledged create is there; a 503 was not applied; an unsure one may be either.
async function checkCreates(client, log) {
  const creates = log.filter((e) => e.kind === 'create' && e.status !== undefined);
  for (const e of creates) {
    const r = await client.post({ command: 'view', path: e.path });
    if (e.status === 200) {
      assert.equal(r.content, `Here's the content of ${e.path} with line numbers:\n     1\t${e.content}`, `acknowledged ${e.path}`);
    } else if (e.status === 503) {
      assert.equal(r.status, 404, `${e.path} was answered 503 (not applied) but exists`);
    } else {
      assert.deepEqual([e.status, e.text], [500, UNSURE], `unexpected answer for ${e.path}`);
      assert.ok(r.status === 200 || r.status === 404);
    }
  }
  return creates;
}

test('PostgreSQL restarted under load: 503 with Retry-After while it is down, reconnected by itself, no acknowledged write lost', async (t) => {
  const dir = tempDir('memoryd-pg-own-');
  fs.chmodSync(dir, 0o755); // the server runs as postgres when we are root
  const own = startCluster(path.join(dir, 'cluster'));
  t.after(() => stopCluster(path.join(dir, 'cluster')));
  const uri = await createDatabase(own);
  const srv = await startServer({ db: uri });
  t.after(() => srv.stop());
  const setup = makeClient(srv.port, { tenant: 'load' });
  assert.equal((await setup.post({ command: 'create', path: '/memories/fixed.txt', file_text: 'fixed' })).status, 200);
  const l = load(srv.port);
  await sleep(300);
  pgCtl(own, '-m', 'fast', '-w', 'stop');
  await sleep(800); // down for a while, under load
  const ready = await srv.request('GET', '/readyz');
  assert.deepEqual([ready.status, ready.json], [503, { status: 'storage unavailable' }]);
  const down = await setup.post({ command: 'create', path: '/memories/while-down.txt', file_text: 'x' });
  assert.deepEqual([down.status, down.content, down.headers['retry-after']], [503, UNAVAILABLE, '1']);
  const downView = await setup.post({ command: 'view', path: '/memories/fixed.txt' });
  assert.deepEqual([downView.status, downView.content, downView.headers['retry-after']], [503, UNAVAILABLE, '1']);
  pgCtl(own, '-o', `-k ${own.host} -c listen_addresses='' -p ${own.port}`, '-l', path.join(own.dir, 'server.log'), '-w', 'start');
  // Back: memoryd reconnects by itself.
  let back = null;
  for (let i = 0; i < 100 && back?.status !== 200; i++) {
    back = await setup.post({ command: 'create', path: `/memories/back-${i}.txt`, file_text: 'back' });
    if (back.status !== 200) await sleep(50);
  }
  assert.equal(back.status, 200, 'memoryd did not get back to the database');
  await sleep(300);
  await l.stop();
  setup.close();
  assert.deepEqual(l.log.filter((e) => e.error), [], 'a client lost its connection to memoryd');
  for (const e of l.log) {
    if (e.status === 503) assert.deepEqual([e.text, e.retryAfter], [UNAVAILABLE, '1']);
    else if (e.status !== 200) assert.deepEqual([e.status, e.text], [500, UNSURE], JSON.stringify(e));
  }
  const check = makeClient(srv.port, { tenant: 'load' });
  const creates = await checkCreates(check, l.log);
  check.close();
  const by = (s) => creates.filter((e) => e.status === s).length;
  t.diagnostic(`creates: ${by(200)} acknowledged, ${by(503)} answered 503, ${by(500)} unsure`);
  assert.ok(by(503) > 0 && by(200) > 0, 'the load did not meet the outage');
  assert.equal((await srv.request('GET', '/readyz')).status, 200);
  assert.deepEqual(pgInconsistencies(uri), []);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('connections cut by the server: the next reads and writes succeed at once', async (t) => {
  const uri = await createDatabase();
  const srv = await startServer({ db: uri });
  t.after(() => srv.stop());
  const c = makeClient(srv.port, { tenant: 'cut' });
  for (let i = 0; i < 5; i++) assert.equal((await c.post({ command: 'create', path: `/memories/a${i}.txt`, file_text: `a${i}` })).status, 200);
  assert.equal((await c.post({ command: 'view', path: '/memories/a0.txt' })).status, 200);
  const cut = psql(uri, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'memoryd' AND datname = current_database()");
  assert.ok(Number(cut) >= 2, `cut ${cut} connections`); // the writer and a reader at least
  await sleep(100);
  for (let i = 0; i < 5; i++) {
    const v = await c.post({ command: 'view', path: `/memories/a${i}.txt` });
    assert.deepEqual([v.status, v.content], [200, `Here's the content of /memories/a${i}.txt with line numbers:\n     1\ta${i}`]);
    const w = await c.post({ command: 'create', path: `/memories/b${i}.txt`, file_text: `b${i}` });
    assert.deepEqual([w.status, w.content], [200, `File created successfully at: /memories/b${i}.txt`]);
  }
  assert.equal((await srv.request('GET', '/readyz')).status, 200);
  await srv.waitForLogs((logs) => logs.some((l) => l.msg === 'writer connection reopened'), 'the writer reconnecting');
  c.close();
});

test('kill -9 of one of two instances mid-batch: the other keeps serving, no acknowledged write lost', async (t) => {
  const uri = await createDatabase();
  const a = await startServer({ db: uri });
  const b = await startServer({ db: uri });
  t.after(() => b.stop());
  const setup = makeClient(b.port, { tenant: 'both' });
  assert.equal((await setup.post({ command: 'create', path: '/memories/fixed.txt', file_text: 'fixed' })).status, 200);
  // Both instances write the same tenant (its lock goes from one to the other).
  const la = load(a.port, { tenant: 'both', prefix: 'a', readers: 1 });
  const lb = load(b.port, { tenant: 'both', prefix: 'b', readers: 1 });
  await sleep(400);
  await a.kill();
  await sleep(400); // b alone, after the kill
  await Promise.all([la.stop(), lb.stop()]);
  for (const e of lb.log) assert.equal(e.status, 200, `instance b: ${JSON.stringify(e)}`);
  assert.ok(lb.log.length > 0);
  const afterKill = makeClient(b.port, { tenant: 'both' });
  const creates = [...await checkCreates(afterKill, la.log), ...await checkCreates(afterKill, lb.log)];
  t.diagnostic(`${creates.filter((e) => e.status === 200).length} acknowledged creates checked; ${la.log.filter((e) => e.error).length} of a's requests unanswered`);
  // What a sent without an answer is there or not, whole.
  for (const e of la.log.filter((x) => x.error && x.kind === 'create')) {
    const r = await afterKill.post({ command: 'view', path: e.path });
    assert.ok(r.status === 404 || r.content === `Here's the content of ${e.path} with line numbers:\n     1\t${e.content}`, JSON.stringify(r));
  }
  afterKill.close();
  setup.close();
  assert.deepEqual(pgInconsistencies(uri), []);
  // A new instance in its place serves at once.
  const again = await startServer({ db: uri });
  assert.equal((await again.post({ command: 'view', path: '/memories/fixed.txt' }, { tenant: 'both' })).status, 200);
  await again.stop();
});

// A proxy in front of PostgreSQL's socket that can cut a connection at its COMMIT: memoryd's
// writer sends COMMIT as the prepared statement "m1" (enum pg_stmt, src/store/pg/internal.h), so
// the proxy watches the protocol for a Bind of "m1". mode 'after': the COMMIT (and its Sync) reach
// the server, then the connection is cut; 'before': it is cut instead of sending them.
function commitCutter(cluster, dir) {
  const sock = path.join(dir, `.s.PGSQL.${cluster.port}`);
  const state = { mode: null, cuts: 0 };
  const open = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(path.join(cluster.host, `.s.PGSQL.${cluster.port}`));
    open.add(client);
    client.on('close', () => open.delete(client));
    upstream.on('data', (d) => client.write(d));
    upstream.on('error', () => client.destroy());
    upstream.on('close', () => client.destroy());
    client.on('error', () => upstream.destroy());
    client.on('close', () => upstream.destroy());
    let buf = Buffer.alloc(0);
    let started = false; // the startup message has no type byte
    let cutAtSync = false;
    client.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const out = [];
      for (;;) {
        const head = started ? 5 : 4;
        if (buf.length < head) break;
        const len = started ? buf.readUInt32BE(1) + 1 : buf.readUInt32BE(0);
        if (buf.length < len) break;
        const msg = buf.subarray(0, len);
        buf = buf.subarray(len);
        if (!started) {
          started = true;
          out.push(msg);
          continue;
        }
        const type = String.fromCharCode(msg[0]);
        if (type === 'B' && state.mode) {
          const body = msg.subarray(5);
          const portalEnd = body.indexOf(0);
          const stmt = body.subarray(portalEnd + 1, body.indexOf(0, portalEnd + 1)).toString();
          if (stmt === 'm1') {
            state.cuts++;
            if (state.mode === 'before') {
              state.mode = null;
              upstream.write(Buffer.concat(out));
              upstream.end();
              client.destroy();
              return;
            }
            state.mode = null;
            cutAtSync = true;
          }
        }
        out.push(msg);
        if (type === 'S' && cutAtSync) {
          upstream.write(Buffer.concat(out));
          upstream.end(); // the server reads the COMMIT, commits, then sees the end
          client.destroy();
          return;
        }
      }
      if (out.length) upstream.write(Buffer.concat(out));
    });
  });
  // close: stop listening and cut what is still open (server.close alone waits for it).
  const close = () => new Promise((r) => {
    server.close(r);
    for (const c of open) c.destroy();
  });
  return new Promise((resolve) => server.listen(sock, () => resolve({ state, close })));
}

test('the connection lost during COMMIT: "may or may not have been applied", true both ways', async (t) => {
  const cluster = pgCluster();
  const db = (await createDatabase()).match(/^postgresql:\/\/\/([^?]+)/)[1];
  const dir = tempDir('memoryd-pg-proxy-');
  const proxy = await commitCutter(cluster, dir);
  t.after(() => proxy.close());
  const uri = uriOf({ ...cluster, host: dir }, db);
  const direct = uriOf(cluster, db); // for psql: this process's proxy cannot serve a synchronous child
  const srv = await startServer({ db: uri });
  t.after(() => srv.stop());
  const c = makeClient(srv.port, { tenant: 'cut' });
  assert.equal((await c.post({ command: 'create', path: '/memories/first.txt', file_text: 'first' })).status, 200);

  proxy.state.mode = 'after';
  const applied = await c.post({ command: 'create', path: '/memories/applied.txt', file_text: 'committed' });
  assert.deepEqual([applied.status, applied.content, applied.isError], [500, UNSURE, true]);
  proxy.state.mode = 'before';
  const lost = await c.post({ command: 'create', path: '/memories/lost.txt', file_text: 'not committed' });
  assert.deepEqual([lost.status, lost.content, lost.isError], [500, UNSURE, true]);
  assert.equal(proxy.state.cuts, 2);
  // It was in fact applied in the first case, not in the second; memoryd serves on.
  assert.equal(await readText(c, '/memories/applied.txt'), 'committed');
  assert.equal((await c.post({ command: 'view', path: '/memories/lost.txt' })).status, 404);
  assert.equal((await c.post({ command: 'create', path: '/memories/after.txt', file_text: 'after' })).status, 200);
  assert.deepEqual(pgInconsistencies(direct), []);
  c.close();
});

test('a command that fails in the database fails alone; the others of its batches are committed', async (t) => {
  const uri = await createDatabase();
  const srv = await startServer({ db: uri });
  t.after(() => srv.stop());
  const c0 = makeClient(srv.port, { tenant: 'fail' });
  assert.equal((await c0.post({ command: 'create', path: '/memories/seed.txt', file_text: 'seed' })).status, 200);
  // The database itself refuses one path.
  psql(uri, `CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      IF NEW.path LIKE '%/boom%' THEN RAISE EXCEPTION 'boom'; END IF; RETURN NEW; END $$;
    CREATE TRIGGER boom BEFORE INSERT ON entries FOR EACH ROW EXECUTE FUNCTION boom();`);
  const clients = Array.from({ length: 32 }, () => makeClient(srv.port, { tenant: 'fail' }));
  const results = await Promise.all(clients.map(async (c, i) => {
    const out = [];
    for (let k = 0; k < 5; k++) {
      const p = (i + k) % 8 === 0 ? `/memories/boom-${i}-${k}.txt` : `/memories/ok/${i}-${k}.txt`;
      const r = await c.post({ command: 'create', path: p, file_text: `${i}-${k}` });
      out.push({ p, status: r.status, content: r.content });
    }
    return out;
  }));
  closeAllClients(clients);
  const all = results.flat();
  for (const r of all) {
    if (r.p.includes('/boom')) assert.deepEqual([r.status, r.content], [500, FAILED], r.p);
    else assert.deepEqual([r.status, r.content], [200, `File created successfully at: ${r.p}`], r.p);
  }
  for (const r of all) {
    const v = await c0.post({ command: 'view', path: r.p });
    assert.equal(v.status, r.p.includes('/boom') ? 404 : 200, r.p);
  }
  c0.close();
  await srv.stop();
  const stopped = srv.logs.find((l) => l.msg === 'stopped');
  assert.ok(stopped.write_batches < stopped.write_commands, `no batch held several commands: ${JSON.stringify(stopped)}`);
  assert.deepEqual(pgInconsistencies(uri), []);
});

test('retention held up by a lock: the writer goes on, retention finishes once the lock goes', async (t) => {
  const uri = await createDatabase();
  // Retention waits for the lock as long as the busy timeout allows: a minute.
  const srv = await startServer({ db: uri, args: ['--history-versions', '2', '--busy-timeout', '60000'] });
  t.after(() => srv.stop());
  const c = makeClient(srv.port, { tenant: 'held' });
  const ok = async (cmd, text) => {
    const r = await c.post(cmd);
    assert.deepEqual([r.status, r.content], [200, text], JSON.stringify(cmd));
  };
  const x = '/memories/x.txt';
  const edited = (n) => `The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tn=${n}`;
  await ok({ command: 'create', path: x, file_text: 'n=0' }, `File created successfully at: ${x}`);
  await ok({ command: 'str_replace', path: x, old_str: 'n=0', new_str: 'n=1' }, edited(1));
  // Another session locks x's two versions (what retention will have to delete).
  const holder = spawn('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', uri], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => holder.kill());
  let out = '';
  holder.stdout.on('data', (d) => { out += d; });
  holder.stdin.write(`BEGIN;\nSELECT count(*) FROM (SELECT 1 FROM versions WHERE path = '${x}' FOR UPDATE) s;\n\\echo locked\n`);
  const deadline = Date.now() + 10000;
  while (!out.includes('locked') && Date.now() < deadline) await sleep(20);
  assert.equal(out.trim(), '2\nlocked', 'the two versions locked');
  // Two more edits: x has four versions, two to prune, and they are locked.
  await ok({ command: 'str_replace', path: x, old_str: 'n=1', new_str: 'n=2' }, edited(2));
  await ok({ command: 'str_replace', path: x, old_str: 'n=2', new_str: 'n=3' }, edited(3));
  const waiting = () => Number(psql(uri, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
    AND application_name = 'memoryd' AND wait_event_type = 'Lock' AND query LIKE '%DELETE FROM versions%'`));
  const until = Date.now() + 10000;
  while (waiting() === 0 && Date.now() < until) await sleep(50);
  assert.equal(waiting(), 1, 'retention waits for the lock');
  // Meanwhile every write is acknowledged, edits of x among them (the writer only inserts
  // versions), and a view answers.
  for (let i = 0; i < 10; i++) {
    await ok({ command: 'create', path: `/memories/y${i}.txt`, file_text: `y${i}` }, `File created successfully at: /memories/y${i}.txt`);
  }
  await ok({ command: 'str_replace', path: x, old_str: 'n=3', new_str: 'n=4' }, edited(4));
  await ok({ command: 'delete', path: '/memories/y0.txt' }, 'Successfully deleted /memories/y0.txt');
  await ok({ command: 'view', path: x }, `Here's the content of ${x} with line numbers:\n     1\tn=4`);
  assert.equal(waiting(), 1, 'retention still waits: the writes did not wait for it');
  // The lock goes: retention deletes what it waited for, and x keeps its 2 newest versions.
  holder.stdin.end('COMMIT;\n');
  await new Promise((resolve) => holder.on('close', resolve));
  const done = Date.now() + 10000;
  const kept = () => psql(uri, `SELECT string_agg(version::text, ',' ORDER BY version) FROM versions WHERE path = '${x}'`).trim();
  // x's versions: 1 (its absence), 2 and 3 (before the edits made before the lock), 4 and 15
  // (before the two after; the creates and the delete took 5-14 and 16).
  while (kept() !== '4,15' && Date.now() < done) await sleep(50);
  assert.equal(kept(), '4,15');
  assert.equal(srv.logs.filter((l) => l.msg === 'retention: pruning failed').length, 0);
  c.close();
});

function closeAllClients(clients) {
  for (const c of clients) c.close();
}
