// Several memoryd instances on one PostgreSQL database: one truth. Three instances serve the
// same tenants, clients spread over them, writing at once (each instance's writer runs its own
// batches; tenants are locked per transaction, in one order, across instances):
//   - 16 editors on one file, spread over the instances: no lost update (their own tokens, and a
//     shared compare-and-swap counter: final value = successes);
//   - a directory renamed on one instance while others create files inside it: every
//     acknowledged file ends up in exactly one place, under the old or the new name, and the
//     tree is consistent (sizes, parents) as every instance shows it;
//   - many tenants, each driven by one client whose commands go round the instances, all at
//     once: every tenant's tree equals its own model, nothing of another tenant in it;
//   - group commit across instances: concurrent creates on each instance share batches;
//   - the change feed across instances: a long poll (GET /v1/changes?wait=) on one instance is
//     woken by a write of its tenant on another (LISTEN/NOTIFY), well before its wait, and
//     returns it; a write of another tenant on a third instance neither ends it nor shows in it.
// Runs only on PostgreSQL (MD_TEST_PG; tests/CMakeLists.txt).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { makeClient, readLines, readText } from '../lib/client.mjs';
import { createDatabase, pgCluster, pgInconsistencies, psql } from '../lib/pg.mjs';
import { startServer } from '../lib/server.mjs';
import { mulberry32 } from '../lib/util.mjs';

const INSTANCES = 3;
let uri;
let servers = [];

before(async () => {
  assert.ok(pgCluster(), 'MD_TEST_PG is not set: this test needs the suite\'s PostgreSQL');
  uri = await createDatabase();
  servers = await Promise.all(Array.from({ length: INSTANCES }, () => startServer({ db: uri })));
});

after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

const pad = (n) => String(n).padStart(2, '0');
const clientsOf = (tenant, n) => Array.from({ length: n }, (_, i) => makeClient(servers[i % INSTANCES].port, { tenant }));
const closeAll = (clients) => clients.forEach((c) => c.close());

// A tenant's whole tree as one instance shows it: files (path -> content) and directories.
async function tree(client, dir = '/memories', out = { files: new Map(), dirs: new Set([dir]) }) {
  const r = await client.post({ command: 'view', path: dir });
  assert.equal(r.status, 200, r.text);
  const lines = r.content.split('\n').slice(2);
  for (const line of lines) {
    const p = line.slice(line.indexOf('\t') + 1);
    if (p.endsWith('/')) {
      const d = p.slice(0, -1);
      if (!out.dirs.has(d)) {
        out.dirs.add(d);
        if (d.split('/').length - dir.split('/').length === 1) await tree(client, d, out);
      }
    } else if (!out.files.has(p)) {
      out.files.set(p, await readText(client, p));
    }
  }
  // Second-level directories are listed but not opened: go into them too.
  for (const d of [...out.dirs]) {
    if (d !== dir && d.startsWith(`${dir}/`) && d.split('/').length - dir.split('/').length === 2) await tree(client, d, out);
  }
  return out;
}

test('16 editors on one file, spread over 3 instances: no lost update', async () => {
  const clients = clientsOf('edit', 16);
  const path = '/memories/tokens.md';
  const ROUNDS = 15;
  const initial = clients.map((_, c) => `token [c${pad(c)}=0] end`).join('\n');
  assert.equal((await clients[0].post({ command: 'create', path, file_text: initial })).status, 200);
  await Promise.all(clients.map(async (client, c) => {
    for (let k = 0; k < ROUNDS; k++) {
      const r = await client.post({ command: 'str_replace', path, old_str: `[c${pad(c)}=${k}]`, new_str: `[c${pad(c)}=${k + 1}]` });
      assert.equal(r.status, 200, `editor ${c} round ${k}: ${r.text}`);
      assert.ok(r.content.includes(`\ttoken [c${pad(c)}=${k + 1}] end`), r.content);
    }
  }));
  const want = clients.map((_, c) => `token [c${pad(c)}=${ROUNDS}] end`).join('\n');
  for (const s of servers) assert.equal(await readText(makeClient(s.port, { tenant: 'edit' }), path), want);

  // The shared counter, compare-and-swap: read it on one instance, swap it on another.
  const counter = '/memories/counter.txt';
  assert.equal((await clients[0].post({ command: 'create', path: counter, file_text: 'header\ncounter=0\nfooter\n' })).status, 200);
  const EACH = 5;
  let successes = 0;
  await Promise.all(clients.map(async (client, c) => {
    const other = makeClient(servers[(c + 1) % INSTANCES].port, { tenant: 'edit' });
    for (let done = 0; done < EACH;) {
      const lines = await readLines(other, counter);
      const n = Number(/^counter=(\d+)$/.exec(lines[1])[1]);
      const r = await client.post({ command: 'str_replace', path: counter, old_str: `counter=${n}\n`, new_str: `counter=${n + 1}\n` });
      if (r.status === 200) {
        done++;
        successes++;
      } else {
        assert.deepEqual([r.status, r.content], [409, `No replacement was performed, old_str \`counter=${n}\n\` did not appear verbatim in ${counter}.`]);
      }
    }
    other.close();
  }));
  assert.equal(successes, 16 * EACH);
  assert.equal(await readText(clients[2], counter), `header\ncounter=${16 * EACH}\nfooter\n`);
  closeAll(clients);
  assert.deepEqual(pgInconsistencies(uri), []);
});

test('a directory renamed on one instance while the others write inside it: one consistent tree', async () => {
  const tenant = 'move';
  const renamer = makeClient(servers[0].port, { tenant });
  const writers = Array.from({ length: 8 }, (_, i) => makeClient(servers[1 + (i % 2)].port, { tenant }));
  assert.equal((await renamer.post({ command: 'create', path: '/memories/dir/seed.txt', file_text: 'seed' })).status, 200);
  const acked = []; // {name, content}
  let renamed = false;
  let firstAck;
  const acknowledged = new Promise((resolve) => { firstAck = resolve; });
  const writing = Promise.all(writers.map(async (w, i) => {
    for (let k = 0; k < 25; k++) {
      const name = `w${i}-${k}.txt`;
      const content = `writer ${i} file ${k}`;
      // Sent after the rename was acknowledged: it must land after it. (One sent before may
      // commit before the rename and still be answered after it: the two overlap.)
      const afterRename = renamed;
      const r = await w.post({ command: 'create', path: `/memories/dir/${name}`, file_text: content });
      assert.equal(r.status, 200, r.text); // the parent is made again after the rename
      acked.push({ name, content, afterRename });
      firstAck();
    }
  }));
  // The rename is sent once a create has been acknowledged (so at least one file is in the
  // directory it moves), while the writers go on with the rest of their 200 creates. (A fixed
  // pause before it was too short on a busy machine: no create had committed yet.)
  await Promise.race([acknowledged, writing]);
  const rn = await renamer.post({ command: 'rename', old_path: '/memories/dir', new_path: '/memories/moved/dir' });
  assert.equal(rn.status, 200, rn.text);
  renamed = true;
  await writing;
  // Every acknowledged file is in exactly one of the two directories, with its content; a file
  // whose create was sent after the rename was acknowledged is in the new /memories/dir.
  const views = await Promise.all(servers.map((s) => tree(makeClient(s.port, { tenant }))));
  for (const v of views.slice(1)) assert.deepEqual([...v.files].sort(), [...views[0].files].sort(), 'every instance shows the same tree');
  const files = views[0].files;
  assert.equal(files.get('/memories/moved/dir/seed.txt'), 'seed');
  let before = 0;
  for (const a of acked) {
    const old = files.get(`/memories/moved/dir/${a.name}`);
    const now = files.get(`/memories/dir/${a.name}`);
    assert.ok((old === undefined) !== (now === undefined), `${a.name} is in ${old === undefined ? 'neither' : 'both'} directories`);
    assert.equal(old ?? now, a.content);
    if (a.afterRename) assert.equal(now, a.content, `${a.name}, sent after the rename was acknowledged, is not under /memories/dir`);
    if (old !== undefined) before++;
  }
  assert.equal(files.size, acked.length + 1);
  assert.ok(before > 0, 'the rename happened before any create: the test did not race them');
  assert.ok(acked.some((a) => a.afterRename), 'no create was sent after the rename: the test did not race them');
  assert.deepEqual(pgInconsistencies(uri), []);
  renamer.close();
  closeAll(writers);
});

test('many tenants at once, each going round the instances: every tenant\'s tree equals its model', async () => {
  const TENANTS = 12, OPS = 60;
  await Promise.all(Array.from({ length: TENANTS }, async (_, t) => {
    const tenant = `model-${t}`;
    const clients = servers.map((s) => makeClient(s.port, { tenant }));
    const random = mulberry32(900 + t);
    const pick = (xs) => xs[Math.floor(random() * xs.length)];
    const files = new Map(); // path -> content: the model
    for (let op = 0; op < OPS; op++) {
      const client = clients[op % INSTANCES];
      const paths = [...files.keys()];
      const kind = paths.length === 0 ? 0 : Math.floor(random() * 5);
      if (kind === 0 || kind === 4) {
        const p = `/memories/${pick(['a', 'b', 'c'])}/${tenant}-f${op}.txt`;
        const text = `${tenant} op ${op}\n`;
        const r = await client.post({ command: 'create', path: p, file_text: text });
        assert.equal(r.status, 200, r.text);
        files.set(p, text);
      } else if (kind === 1) {
        const p = pick(paths);
        const r = await client.post({ command: 'str_replace', path: p, old_str: 'op', new_str: `op ${op} then` });
        assert.equal(r.status, 200, r.text);
        files.set(p, files.get(p).replace('op', `op ${op} then`));
      } else if (kind === 2) {
        const p = pick(paths);
        const r = await client.post({ command: 'insert', path: p, insert_line: 0, insert_text: `line ${op}` });
        assert.equal(r.status, 200, r.text);
        files.set(p, `line ${op}\n${files.get(p)}`);
      } else {
        const p = pick(paths);
        const q = `/memories/r/${tenant}-r${op}.txt`;
        const r = await client.post({ command: 'rename', old_path: p, new_path: q });
        assert.equal(r.status, 200, r.text);
        files.set(q, files.get(p));
        files.delete(p);
      }
    }
    // Each instance shows exactly the model: no update lost, nothing of another tenant.
    for (const client of clients) {
      const got = await tree(client);
      assert.deepEqual(new Map([...got.files].sort()), new Map([...files].sort()), `${tenant} on an instance`);
      client.close();
    }
  }));
  assert.deepEqual(pgInconsistencies(uri), []);
});

test('group commit on each instance: concurrent creates share transactions (a batch commits many)', async () => {
  // Instances of their own, so that their final counts are of this burst alone.
  const own = await Promise.all(Array.from({ length: INSTANCES }, () => startServer({ db: uri })));
  const clients = Array.from({ length: 48 }, (_, i) => makeClient(own[i % INSTANCES].port, { tenant: `gc-${i % 6}` }));
  await Promise.all(clients.map(async (c, i) => {
    for (let k = 0; k < 10; k++) {
      const r = await c.post({ command: 'create', path: `/memories/gc/${i}-${k}.txt`, file_text: 'x' });
      assert.equal(r.status, 200, r.text);
    }
  }));
  closeAll(clients);
  const rows = psql(uri, "SELECT t.name, count(*) FROM entries e JOIN tenants t ON t.id = e.tenant WHERE t.name LIKE 'gc-%' AND e.kind = 0 GROUP BY 1 ORDER BY 1");
  assert.equal(rows.trim(), Array.from({ length: 6 }, (_, i) => `gc-${i}|80`).join('\n'));
  for (const s of own) {
    await s.stop();
    const stopped = s.logs.find((l) => l.msg === 'stopped');
    assert.equal(stopped.write_commands, 160);
    assert.ok(stopped.write_batches < stopped.write_commands, `no commit was shared: ${JSON.stringify(stopped)}`);
  }
  assert.deepEqual(pgInconsistencies(uri), []);
});

test('a long poll on one instance wakes on a write of its tenant on another; another tenant\'s write does not end it', async () => {
  const [a, b, c] = servers.map((s) => makeClient(s.port, { tenant: 'feed' }));
  const other = makeClient(servers[2].port, { tenant: 'feed-other' });
  assert.equal((await b.post({ command: 'create', path: '/memories/before.txt', file_text: 'x' })).status, 200);
  const start = await a.get('/v1/changes?after=0');
  assert.equal(start.status, 200, start.text);
  const after0 = start.json.last_seq;
  assert.equal(after0, 1);

  const WAIT = 30;
  const t0 = Date.now();
  const poll = a.get(`/v1/changes?after=${after0}&wait=${WAIT}`);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await other.post({ command: 'create', path: '/memories/elsewhere.txt', file_text: 'y' })).status, 200);
  await new Promise((r) => setTimeout(r, 1200));
  const tWrite = Date.now();
  assert.equal((await c.post({ command: 'create', path: '/memories/woke.txt', file_text: 'z' })).status, 200);
  const r = await poll;
  const elapsed = Date.now() - t0;
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.changes.map(({ seq, command, paths }) => ({ seq, command, paths })), [{ seq: 2, command: 'create', paths: ['/memories/woke.txt'] }]);
  assert.deepEqual([r.json.last_seq, r.json.next_after], [2, 2]);
  // It waited past the other tenant's write, and ended on its own tenant's, not at its wait.
  assert.ok(elapsed >= tWrite - t0, `the poll ended before its tenant's write (${elapsed} ms)`);
  assert.ok(elapsed < (WAIT * 1000) / 2, `the poll was not woken by the write on another instance (${elapsed} ms of ${WAIT} s)`);
  [a, b, c, other].forEach((x) => x.close());
});
