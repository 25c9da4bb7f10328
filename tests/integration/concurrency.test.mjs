// Proves that memoryd's commands are atomic under concurrency (docs/behaviour.md §7: also when
// other requests work on the same tenant and the same file, no lost update), with the writer's
// group commit in play: many clients, each on its own keep-alive connection, send writes at once, so
// their commands share write batches (one transaction, a savepoint per command).
//   (a) 16 clients × 50 inserts into one file: every line ends up in the file exactly once, the
//       original lines keep their order, and each insert_line-0 client's lines stay in order;
//   (b) 16 simultaneous creates of one path (also with missing parents): exactly one 200, 15 × 409,
//       and the file holds the winner's content;
//   (c) str_replace never loses an update: 16 clients advancing their own token, and 16 clients
//       incrementing one shared counter compare-and-swap style (final value = number of successes);
//   (d) a mixed burst of creates/renames/deletes in several directories with views from other
//       clients: every view snapshot is self-consistent (a directory's size is the sum of its
//       entries), and the final tree equals the clients' own model, sizes matching the bytes read;
//   (e) failing commands (409/404/422) mixed into the same batches as successful ones: every
//       acknowledged success is visible and no failure changed anything.
// Every scenario runs against the default settings and with --threads 1 --max-batch 1.
// Under valgrind (scripts/valgrind.sh), which looks for memory errors, (a)-(e) run the same
// commands with fewer clients and rounds (tests/lib/util.mjs volume()): 6 clients, 10 inserts
// each in (a), 2 of the 10 alike paths in (b), 5 rounds and 2 swaps each in (c), 3 writers, 3
// viewers and 30 operations each in (d) (every kind of operation among them), 6 steps in (e)
// (every kind of failure and success).
// Then growing edits in one batch: 32 writers grow 16 files of 250 KB at once, so that one batch
// rewrites about 4 MB (on SQLite, a savepoint journal past 4 MiB): every edit a 200, the files
// as modelled, no error logged.
// Last, overload: with --max-queue 1, writes sent at once past the queue get 503 (exact body,
// Retry-After: 1) and the tree holds exactly the acknowledged ones.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { makeClient, readLines, readText } from '../lib/client.mjs';
import { startServer } from '../lib/server.mjs';
import { formatSize, mulberry32, underValgrind, volume } from '../lib/util.mjs';

const CLIENTS = volume(16, 6);
const INSERTS = volume(50, 10); // per client in (a)

function makeClients(port, tenant, n = CLIENTS) {
  return Array.from({ length: n }, () => makeClient(port, { tenant }));
}

// Each client kept its one connection for all its requests.
function closeClients(clients) {
  for (const [i, c] of clients.entries()) {
    assert.equal(c.sockets.size, 1, `client ${i} used ${c.sockets.size} connections`);
    c.close();
  }
}

const pad = (n) => String(n).padStart(2, '0');

// A directory listing: [{size, path, dir}] with the viewed directory first.
function parseListing(content, path) {
  const [header, ...rest] = content.split('\n');
  assert.equal(header, `Here're the files and directories up to 2 levels deep in ${path}, excluding hidden items and node_modules:`);
  return rest.map((line) => {
    const m = /^(\d+(?:\.\d)?[BKMG])\t(\/memories.*)$/.exec(line);
    assert.ok(m, `bad listing line ${JSON.stringify(line)}`);
    const dir = m[2].endsWith('/') || m[2] === path;
    return { size: m[1], path: m[2].replace(/\/$/, ''), dir };
  });
}

// In one listing, every directory that was opened (the viewed one and its subdirectories) has
// the size of its entries together. Sizes must stay under 1024 bytes for the sums to be exact.
function checkListingSums(entries, root) {
  const bytes = (e) => {
    const m = /^(\d+)B$/.exec(e.size);
    assert.ok(m, `size ${e.size} of ${e.path} is not exact bytes`);
    return Number(m[1]);
  };
  const depth = (p) => (p === root ? 0 : p.slice(root.length).split('/').length - 1);
  for (const d of entries.filter((e) => e.dir && depth(e.path) < 2)) {
    const children = entries.filter((e) => e.path.startsWith(`${d.path}/`) && depth(e.path) === depth(d.path) + 1);
    const sum = children.reduce((s, e) => s + bytes(e), 0);
    assert.equal(bytes(d), sum, `size of ${d.path} (${d.size}) is not the sum of its entries (${sum}B): ${JSON.stringify(entries)}`);
  }
}

// Every file below `root`, by viewing each directory: Map path -> content.
async function readTree(client, root) {
  const files = new Map();
  const dirs = [root];
  const seen = new Set();
  while (dirs.length) {
    const d = dirs.pop();
    const r = await client.post({ command: 'view', path: d });
    assert.equal(r.status, 200, r.text);
    for (const e of parseListing(r.content, d).slice(1)) {
      if (seen.has(e.path)) continue;
      seen.add(e.path);
      if (e.dir) dirs.push(e.path);
      else files.set(e.path, await readText(client, e.path));
    }
  }
  return files;
}

// Resolves once memoryd's stderr has been read to the end (all log lines parsed).
function stderrClosed(srv) {
  const s = srv.proc.stderr;
  return s.closed || s.destroyed ? Promise.resolve() : new Promise((resolve) => s.once('close', resolve));
}

const SETTINGS = [
  { name: 'default settings', args: [] },
  { name: '--threads 1 --max-batch 1', args: ['--threads', '1', '--max-batch', '1'] },
];

for (const setting of SETTINGS) {
  describe(`concurrency (${setting.name})`, () => {
    let srv;
    before(async () => { srv = await startServer({ args: setting.args }); });
    after(async () => {
      if (!srv) return;
      await srv.stop();
      await stderrClosed(srv);
      const stopped = srv.logs.find((l) => l.msg === 'stopped');
      assert.ok(stopped, 'no "stopped" log line');
      if (setting.args.includes('--max-batch')) {
        // --max-batch 1: every command had a transaction of its own.
        assert.equal(stopped.write_batches, stopped.write_commands, JSON.stringify(stopped));
      } else {
        assert.ok(stopped.write_batches <= stopped.write_commands, JSON.stringify(stopped));
      }
      fs.rmSync(srv.dir, { recursive: true, force: true });
    });

    test(`(a) ${CLIENTS} clients × ${INSERTS} inserts into one file: every line present exactly once`, async () => {
      const clients = makeClients(srv.port, 'conc-a');
      const path = '/memories/shared/lines.txt';
      const original = ['orig-1', 'orig-2', 'orig-3', 'orig-4', 'orig-5'];
      const c0 = await clients[0].post({ command: 'create', path, file_text: original.join('\n') });
      assert.equal(c0.content, `File created successfully at: ${path}`);
      // Even clients always insert at line 0; odd ones at a random line that surely exists
      // (lines are only added, so the file has at least the original lines plus its own).
      await Promise.all(clients.map(async (client, c) => {
        const random = mulberry32(1000 + c);
        for (let k = 0; k < INSERTS; k++) {
          const known = original.length + k;
          const at = c % 2 === 0 ? 0 : Math.floor(random() * (known + 1));
          const text = k % 3 === 0 ? `c${pad(c)}-l${pad(k)}\n` : `c${pad(c)}-l${pad(k)}`; // one trailing \n is dropped
          const r = await client.post({ command: 'insert', path, insert_line: at, insert_text: text });
          assert.deepEqual([r.status, r.content, r.isError], [200, `The file ${path} has been edited.`, false], `client ${c} line ${k} at ${at}`);
        }
      }));
      const lines = await readLines(clients[0], path);
      const expected = [...original];
      for (let c = 0; c < CLIENTS; c++) for (let k = 0; k < INSERTS; k++) expected.push(`c${pad(c)}-l${pad(k)}`);
      assert.equal(lines.length, CLIENTS * INSERTS + original.length);
      assert.deepEqual([...lines].sort(), expected.sort());
      // Existing lines never move relative to each other.
      assert.deepEqual(lines.filter((l) => l.startsWith('orig-')), original);
      for (let c = 0; c < CLIENTS; c += 2) {
        const mine = lines.filter((l) => l.startsWith(`c${pad(c)}-`));
        assert.deepEqual(mine, Array.from({ length: INSERTS }, (_, k) => `c${pad(c)}-l${pad(INSERTS - 1 - k)}`), `order of client ${c}`);
      }
      closeClients(clients);
    });

    test(`(b) ${CLIENTS} simultaneous creates of one path: one 200, ${CLIENTS - 1} × 409, the winner's content`, async () => {
      const clients = makeClients(srv.port, 'conc-b');
      const RACE3 = volume(10, 2); // alike paths, each a race of its own
      const paths = ['/memories/race.txt', '/memories/race/a.txt', '/memories/race/new/deeper/b.txt',
        '/memories/race2/x/y/z.txt', '/memories/race2/x/y/w.txt',
        ...Array.from({ length: RACE3 }, (_, i) => `/memories/race3/r${i}/deep/f.txt`)];
      for (const path of paths) {
        const results = await Promise.all(clients.map((client, c) =>
          client.post({ command: 'create', path, file_text: `written by client ${c}\nfor ${path}\n` })));
        const winners = results.map((r, c) => ({ r, c })).filter(({ r }) => r.status === 200);
        assert.equal(winners.length, 1, `${path}: ${results.map((r) => r.status)}`);
        assert.deepEqual([winners[0].r.content, winners[0].r.isError], [`File created successfully at: ${path}`, false]);
        for (const [c, r] of results.entries()) {
          if (c === winners[0].c) continue;
          assert.deepEqual([r.status, r.content, r.isError], [409, `Error: File ${path} already exists`, true], `client ${c}`);
        }
        assert.equal(await readText(clients[1], path), `written by client ${winners[0].c}\nfor ${path}\n`);
      }
      // The racing creates made each missing parent directory once; sizes add up.
      const root = await clients[2].post({ command: 'view', path: '/memories' });
      const entries = parseListing(root.content, '/memories');
      assert.deepEqual(entries.map((e) => e.path), ['/memories', '/memories/race', '/memories/race/a.txt',
        '/memories/race/new', '/memories/race.txt', '/memories/race2', '/memories/race2/x', '/memories/race3',
        ...Array.from({ length: RACE3 }, (_, i) => `/memories/race3/r${i}`)]);
      checkListingSums(entries, '/memories');
      closeClients(clients);
    });

    test('(c) str_replace never loses an update: own tokens and a shared compare-and-swap counter', async () => {
      const clients = makeClients(srv.port, 'conc-c');
      const path = '/memories/tokens.md';
      const ROUNDS = volume(20, 5);
      const initial = Array.from({ length: CLIENTS }, (_, c) => `token [c${pad(c)}=0] end`).join('\n');
      assert.equal((await clients[0].post({ command: 'create', path, file_text: initial })).status, 200);
      await Promise.all(clients.map(async (client, c) => {
        for (let k = 0; k < ROUNDS; k++) {
          const r = await client.post({ command: 'str_replace', path, old_str: `[c${pad(c)}=${k}]`, new_str: `[c${pad(c)}=${k + 1}]` });
          assert.equal(r.status, 200, `client ${c} round ${k}: ${r.text}`);
          assert.ok(r.content.startsWith('The memory file has been edited. Here is the snippet showing the change (with line numbers):\n'), r.content);
          assert.ok(r.content.includes(`\ttoken [c${pad(c)}=${k + 1}] end`), r.content);
        }
      }));
      assert.equal(await readText(clients[0], path),
        Array.from({ length: CLIENTS }, (_, c) => `token [c${pad(c)}=${ROUNDS}] end`).join('\n'));

      // Read the counter, then swap it for the next value; a swap that lost the race finds no
      // match (409) and retries. Each success moves the counter by exactly one.
      const counter = '/memories/counter.txt';
      assert.equal((await clients[0].post({ command: 'create', path: counter, file_text: 'header\ncounter=0\nfooter\n' })).status, 200);
      const EACH = volume(5, 2);
      let successes = 0;
      await Promise.all(clients.map(async (client) => {
        for (let done = 0; done < EACH;) {
          const lines = await readLines(client, counter);
          const n = Number(/^counter=(\d+)$/.exec(lines[1])[1]);
          const r = await client.post({ command: 'str_replace', path: counter, old_str: `counter=${n}\n`, new_str: `counter=${n + 1}\n` });
          if (r.status === 200) {
            done++;
            successes++;
          } else {
            assert.deepEqual([r.status, r.content, r.isError],
              [409, `No replacement was performed, old_str \`counter=${n}\n\` did not appear verbatim in ${counter}.`, true]);
          }
        }
      }));
      assert.equal(successes, CLIENTS * EACH);
      assert.equal(await readText(clients[0], counter), `header\ncounter=${CLIENTS * EACH}\nfooter\n`);
      closeClients(clients);
    });

    test('(d) mixed creates/renames/deletes with concurrent views: consistent snapshots and final sizes', async () => {
      const WRITERS = volume(8, 3), VIEWERS = volume(8, 3), OPS = volume(100, 30), DIRS = 4;
      const clients = makeClients(srv.port, 'conc-d', WRITERS + VIEWERS);
      for (let d = 0; d < DIRS; d++) {
        assert.equal((await clients[0].post({ command: 'create', path: `/memories/d${d}/keep.txt`, file_text: 'k' })).status, 200);
      }
      // Each writer owns the files it makes, so its own model predicts their final state exactly.
      const models = [];
      let writersLeft = WRITERS;
      const writer = async (client, w) => {
        try {
          const random = mulberry32(5000 + w);
          const pick = (n) => Math.floor(random() * n);
          const files = new Map(); // path -> content
          let serial = 0;
          let ownDir = null; // a directory of this writer holding one file
          const expectOk = async (cmd, content) => {
            const r = await client.post(cmd);
            assert.deepEqual([r.status, r.content, r.isError], [200, content, false], JSON.stringify(cmd));
          };
          for (let op = 0; op < OPS; op++) {
            const kind = pick(6);
            const live = [...files.keys()].filter((p) => !ownDir || !p.startsWith(`${ownDir}/`));
            if (kind <= 1 && live.length < 3) {
              const sub = pick(3) === 0 ? `/s${pick(2)}` : '';
              const path = `/memories/d${pick(DIRS)}${sub}/w${w}-f${serial++}.txt`;
              const text = `w${w}:${'x'.repeat(pick(15))}`;
              await expectOk({ command: 'create', path, file_text: text }, `File created successfully at: ${path}`);
              files.set(path, text);
            } else if (kind === 2 && live.length) {
              const from = live[pick(live.length)];
              const to = `/memories/d${pick(DIRS)}/w${w}-f${serial++}.txt`;
              await expectOk({ command: 'rename', old_path: from, new_path: to }, `Successfully renamed ${from} to ${to}`);
              files.set(to, files.get(from));
              files.delete(from);
            } else if (kind === 3 && live.length) {
              const path = live[pick(live.length)];
              await expectOk({ command: 'delete', path }, `Successfully deleted ${path}`);
              files.delete(path);
            } else if (kind === 4) {
              if (!ownDir) {
                ownDir = `/memories/d${pick(DIRS)}/own-w${w}-g${serial++}`;
                const text = `dir file of w${w}`;
                await expectOk({ command: 'create', path: `${ownDir}/inside/f.txt`, file_text: text }, `File created successfully at: ${ownDir}/inside/f.txt`);
                files.set(`${ownDir}/inside/f.txt`, text);
              } else {
                const to = `/memories/d${pick(DIRS)}/own-w${w}-g${serial++}`;
                await expectOk({ command: 'rename', old_path: ownDir, new_path: to }, `Successfully renamed ${ownDir} to ${to}`);
                files.set(`${to}/inside/f.txt`, files.get(`${ownDir}/inside/f.txt`));
                files.delete(`${ownDir}/inside/f.txt`);
                ownDir = to;
              }
            } else if (kind === 5 && ownDir) {
              await expectOk({ command: 'delete', path: ownDir }, `Successfully deleted ${ownDir}`);
              files.delete(`${ownDir}/inside/f.txt`);
              ownDir = null;
            } else {
              // Failing commands in the same stream change nothing.
              const gone = `/memories/d${pick(DIRS)}/w${w}-gone.txt`;
              const r = await client.post({ command: 'rename', old_path: gone, new_path: `${gone}.2` });
              assert.deepEqual([r.status, r.content], [404, `Error: The path ${gone} does not exist`]);
            }
          }
          models[w] = files;
        } finally {
          writersLeft--; // the viewers stop even if a writer failed
        }
      };
      let snapshots = 0;
      const viewer = async (client, v) => {
        while (writersLeft > 0) {
          const path = v % 2 === 0 ? '/memories' : `/memories/d${v % DIRS}`;
          const r = await client.post({ command: 'view', path });
          assert.equal(r.status, 200, r.text);
          checkListingSums(parseListing(r.content, path), path);
          snapshots++;
        }
      };
      await Promise.all([
        ...clients.slice(0, WRITERS).map((c, w) => writer(c, w)),
        ...clients.slice(WRITERS).map((c, v) => viewer(c, v)),
      ]);
      assert.ok(snapshots >= VIEWERS);

      // The final tree is exactly the union of the writers' models plus the keep files.
      const expected = new Map();
      for (let d = 0; d < DIRS; d++) expected.set(`/memories/d${d}/keep.txt`, 'k');
      for (const m of models) for (const [p, t] of m) expected.set(p, t);
      const actual = await readTree(clients[0], '/memories');
      assert.deepEqual(new Map([...actual].sort()), new Map([...expected].sort()));
      // The root listing's sizes are the bytes read back.
      const root = parseListing((await clients[0].post({ command: 'view', path: '/memories' })).content, '/memories');
      const sumUnder = (dir) => [...actual].filter(([p]) => p.startsWith(`${dir}/`)).reduce((s, [, t]) => s + Buffer.byteLength(t), 0);
      for (const e of root) {
        const want = e.dir ? sumUnder(e.path) : Buffer.byteLength(actual.get(e.path));
        assert.equal(e.size, formatSize(want), `size of ${e.path}`);
      }
      checkListingSums(root, '/memories');
      closeClients(clients);
    });

    test('(e) failures mixed into batches with successes: every success visible, no failure changed anything', async () => {
      const clients = makeClients(srv.port, 'conc-e');
      const setup = [
        { command: 'create', path: '/memories/e/existing.txt', file_text: 'keep me\n' },
        { command: 'create', path: '/memories/e/multi.txt', file_text: 'x\nx\n' },
        { command: 'create', path: '/memories/e/log.txt', file_text: 'log' },
      ];
      for (const cmd of setup) assert.equal((await clients[0].post(cmd)).status, 200);
      const STEPS = volume(12, 6); // k % 6 and k % 3 take every value
      // Step k of client c: a failing command when (c + k) is even, else a succeeding one.
      const stepOf = (c, k) => {
        const tag = `c${pad(c)}-k${pad(k)}`;
        if ((c + k) % 2 === 1) {
          switch (k % 3) {
            case 0: return { cmd: { command: 'create', path: `/memories/e/ok/${tag}.txt`, file_text: tag }, status: 200, content: `File created successfully at: /memories/e/ok/${tag}.txt` };
            case 1: return { cmd: { command: 'insert', path: '/memories/e/log.txt', insert_line: 1, insert_text: tag }, status: 200, content: 'The file /memories/e/log.txt has been edited.' };
            default: return { cmd: { command: 'create', path: `/memories/e/new/${tag}/deep/f.txt`, file_text: tag }, status: 200, content: `File created successfully at: /memories/e/new/${tag}/deep/f.txt` };
          }
        }
        switch (k % 6) {
          case 0: return { cmd: { command: 'create', path: '/memories/e/existing.txt', file_text: tag }, status: 409, content: 'Error: File /memories/e/existing.txt already exists' };
          case 1: return { cmd: { command: 'delete', path: `/memories/e/missing-${tag}` }, status: 404, content: `Error: The path /memories/e/missing-${tag} does not exist` };
          case 2: return { cmd: { command: 'str_replace', path: '/memories/e/multi.txt', old_str: 'x', new_str: tag }, status: 409, content: 'No replacement was performed. Multiple occurrences of old_str `x` in lines: 1, 2. Please ensure it is unique' };
          case 3: return { cmd: { command: 'insert', path: '/memories/e/existing.txt', insert_line: 99, insert_text: tag }, status: 422, content: 'Error: Invalid `insert_line` parameter: 99. It should be within the range of lines of the file: [0, 2]' };
          case 4: return { cmd: { command: 'rename', old_path: '/memories/e/multi.txt', new_path: '/memories/e/existing.txt' }, status: 409, content: 'Error: The destination /memories/e/existing.txt already exists' };
          default: return { cmd: { command: 'create', path: `/memories/e/existing.txt/${tag}/f.txt`, file_text: tag }, status: 409, content: `Error: Cannot create /memories/e/existing.txt/${tag}/f.txt: /memories/e/existing.txt is a file, not a directory` };
        }
      };
      // All clients send step k together, so failures and successes land in the same batches.
      for (let k = 0; k < STEPS; k++) {
        const results = await Promise.all(clients.map((client, c) => client.post(stepOf(c, k).cmd)));
        for (const [c, r] of results.entries()) {
          const want = stepOf(c, k);
          assert.deepEqual([r.status, r.content, r.isError], [want.status, want.content, want.status !== 200], `client ${c} step ${k}`);
        }
      }
      const files = await readTree(clients[1], '/memories');
      const expected = new Map([
        ['/memories/e/existing.txt', 'keep me\n'],
        ['/memories/e/multi.txt', 'x\nx\n'],
      ]);
      const logged = [];
      for (let c = 0; c < CLIENTS; c++) {
        for (let k = 0; k < STEPS; k++) {
          if ((c + k) % 2 === 0) continue;
          const tag = `c${pad(c)}-k${pad(k)}`;
          if (k % 3 === 0) expected.set(`/memories/e/ok/${tag}.txt`, tag);
          if (k % 3 === 1) logged.push(tag);
          if (k % 3 === 2) expected.set(`/memories/e/new/${tag}/deep/f.txt`, tag);
        }
      }
      const log = files.get('/memories/e/log.txt').split('\n');
      files.delete('/memories/e/log.txt');
      assert.deepEqual(new Map([...files].sort()), new Map([...expected].sort()));
      assert.equal(log[0], 'log');
      assert.deepEqual(log.slice(1).sort(), logged.sort());
      // No directory was left behind by a failed create.
      const eList = parseListing((await clients[1].post({ command: 'view', path: '/memories/e' })).content, '/memories/e');
      assert.deepEqual(eList.filter((e) => e.dir).map((e) => e.path).filter((p) => !p.startsWith('/memories/e/new/')),
        ['/memories/e', '/memories/e/new', '/memories/e/ok']);
      closeClients(clients);
    });
  });
}

// Growing edits in one batch (src/store/sqlite/store.c, sqlite_setup): 16 files of about 250 KB, of
// long words (each a term of its own in the search index), and 32 clients, two on each file,
// that send one growing edit each at once, for 3 rounds. In each round one of a file's two
// writers moves its marker "#w.m#" to "#w.m+1#" followed by 3000 x's (str_replace), the other
// puts a line of its own, 3000 y's long, before line 1 (insert at 0): the two commute, so the
// final content is known whatever their order in the batch. A batch of some 30 such edits
// rewrites about 4 MB of files, history and search index in one transaction, and SQLite's
// savepoint journal grows past 4 MiB. memoryd once set SQLITE_CONFIG_STMTJRNL_SPILL to 4 MiB:
// SQLite kept that journal in memory and, past 4 MiB, failed to move it to a temporary file
// (it writes the in-memory journal out in one write, and SQLite 3.40's unix VFS keeps only the
// low 17 bits of a write's length: it wrote less than asked, then 0 bytes, which it takes for a
// full disk): SQLITE_FULL, "database or disk is full", and a 500 for every command of the
// batch. Here every edit is a 200, some batch holds more than 16 commands, the files are
// exactly the model of the edits, the tenant's bytes their sum, and memoryd logs no error.
// Under valgrind (scripts/valgrind.sh), which looks for memory errors, one round of 40 KB files.
test('growing edits in one batch: 32 writers grow 16 files of 250 KB at once, every edit a 200, the files as modelled, no error logged', async () => {
  const FILES = 16, ROUNDS = underValgrind ? 1 : 3, WORDS = underValgrind ? 10 : 60, GROW = 3000;
  const tenant = 'conc-grow';
  const srv = await startServer();
  const clients = makeClients(srv.port, tenant, 2 * FILES);
  const errors = () => srv.logs.filter((l) => l.level === 'error').map((l) => JSON.stringify(l));
  try {
    const file = (f) => `/memories/grow/g${pad(f)}.txt`;
    // File f: the markers of its writers 2f and 2f + 1, then WORDS words of 4000 characters.
    const model = Array.from({ length: FILES }, (_, f) => [`#${2 * f}.0#`, `#${2 * f + 1}.0#`,
      ...Array.from({ length: WORDS }, (_, i) => `f${pad(f)}w${pad(i)}${'z'.repeat(3994)}`)].join('\n'));
    for (let f = 0; f < FILES; f++) {
      const r = await clients[0].post({ command: 'create', path: file(f), file_text: model[f] });
      assert.deepEqual([r.status, r.content, r.isError], [200, `File created successfully at: ${file(f)}`, false]);
    }
    // Batches of more than 16 commands so far (GET /metrics).
    const bigBatches = async () => {
      const r = await srv.request('GET', '/metrics');
      assert.equal(r.status, 200, r.text);
      const sample = (name) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(r.text)[1]);
      return sample('memoryd_write_batch_size_count') - sample('memoryd_write_batch_size_bucket\\{le="16"\\}');
    };
    const bigBefore = await bigBatches();
    const marks = new Array(2 * FILES).fill(0);
    for (let k = 0; k < ROUNDS; k++) {
      const sent = clients.map((_, w) => {
        const f = w >> 1;
        if ((w + k) % 2 === 0) {
          const oldStr = `#${w}.${marks[w]}#`, newStr = `#${w}.${++marks[w]}#${'x'.repeat(GROW)}`;
          model[f] = model[f].replace(oldStr, newStr);
          return { cmd: { command: 'str_replace', path: file(f), old_str: oldStr, new_str: newStr }, newStr };
        }
        const text = `w${pad(w)}k${pad(k)}${'y'.repeat(GROW)}`;
        model[f] = `${text}\n${model[f]}`;
        return { cmd: { command: 'insert', path: file(f), insert_line: 0, insert_text: text } };
      });
      const results = await Promise.all(clients.map((client, w) => client.post(sent[w].cmd)));
      for (const [w, r] of results.entries()) {
        const what = `round ${k}, writer ${w} (${sent[w].cmd.command}): ${r.text.slice(0, 200)}\n${errors().join('\n')}`;
        assert.deepEqual([r.status, r.isError], [200, false], what);
        if (sent[w].newStr) {
          assert.ok(r.content.startsWith('The memory file has been edited. Here is the snippet showing the change (with line numbers):\n'), what);
          assert.ok(r.content.includes(`\t${sent[w].newStr}`), what);
        } else {
          assert.equal(r.content, `The file ${sent[w].cmd.path} has been edited.`, what);
        }
      }
    }
    assert.ok(await bigBatches() > bigBefore, 'no batch of more than 16 commands: the edits were not sent together');
    for (let f = 0; f < FILES; f++) {
      const text = await readText(clients[0], file(f));
      assert.ok(text === model[f], `${file(f)}: ${text.length} bytes read, ${model[f].length} modelled`);
    }
    const usage = await srv.request('GET', `/v1/tenants/${tenant}`);
    assert.deepEqual([usage.status, usage.json?.bytes, usage.json?.files],
      [200, model.reduce((sum, m) => sum + Buffer.byteLength(m), 0), FILES]);
    closeClients(clients);
  } finally {
    for (const c of clients) c.close();
    await srv.stop();
    await stderrClosed(srv);
  }
  assert.ok(srv.logs.find((l) => l.msg === 'stopped'), 'no "stopped" log line');
  assert.deepEqual(errors(), []);
  fs.rmSync(srv.dir, { recursive: true, force: true });
});

// Overload (src/http/http.c): with --max-queue 1 the writer takes one waiting command at a time, so
// of many writes sent at once some are refused before they are applied: 503, Retry-After: 1,
// and a tool_result (with the tool_use_id for a tool_use block) with is_error true and the
// exact text below. Afterwards the tree holds exactly the acknowledged writes: the created
// files of the 200s and none of the 503s, and one line in the shared file per 200 insert.
test('--max-queue 1: writes past the queue get 503 with Retry-After: 1 and change nothing', async () => {
  const OVERLOADED = 'Error: memoryd is overloaded; the command was not applied. Retry shortly.';
  const srv = await startServer({ args: ['--max-queue', '1'] });
  const clients = makeClients(srv.port, 'overload', 48);
  try {
    assert.equal((await clients[0].post({ command: 'create', path: '/memories/log.txt', file_text: 'log' })).status, 200);
    const created = new Map(); // path -> content, acknowledged
    const refused = new Set(); // paths whose create got 503
    const inserted = []; // lines whose insert got 200
    let overloaded = 0;
    // Rounds of every client sending one write at once, until some were refused (the first
    // round nearly always does it) and at least 3 rounds have run.
    for (let round = 0; round < 3 || (overloaded === 0 && round < 50); round++) {
      const sent = clients.map((client, c) => {
        const tag = `r${pad(round)}-c${pad(c)}`;
        const input = c % 2 === 0
          ? { command: 'create', path: `/memories/o/${tag}.txt`, file_text: tag }
          : { command: 'insert', path: '/memories/log.txt', insert_line: 1, insert_text: tag };
        // Every fourth client sends a whole tool_use block.
        const id = c % 4 < 2 ? null : `toolu_overload_${tag}`;
        const body = id ? { type: 'tool_use', id, name: 'memory', input } : input;
        return { tag, input, id, reply: client.post(body) };
      });
      for (const { tag, input, id, reply } of sent) {
        const r = await reply;
        if (r.status === 503) {
          overloaded++;
          assert.equal(r.headers['retry-after'], '1', tag);
          assert.equal(r.text, `{"type":"tool_result",${id ? `"tool_use_id":"${id}",` : ''}"content":"${OVERLOADED}","is_error":true}`);
          if (input.command === 'create') refused.add(input.path);
          continue;
        }
        const content = input.command === 'create' ? `File created successfully at: ${input.path}` : 'The file /memories/log.txt has been edited.';
        assert.deepEqual([r.status, r.content, r.isError, r.json?.tool_use_id], [200, content, false, id ?? undefined], tag);
        assert.equal(r.headers['retry-after'], undefined, tag);
        if (input.command === 'create') created.set(input.path, tag);
        else inserted.push(tag);
      }
    }
    assert.ok(overloaded > 0, 'no write was refused with --max-queue 1');
    assert.ok(created.size > 0 && inserted.length > 0, 'no create or no insert was acknowledged');

    const files = await readTree(clients[0], '/memories');
    const log = files.get('/memories/log.txt').split('\n');
    files.delete('/memories/log.txt');
    assert.deepEqual(new Map([...files].sort()), new Map([...created].sort()));
    for (const p of refused) assert.ok(!files.has(p), `${p} was refused but exists`);
    assert.equal(log[0], 'log');
    assert.deepEqual(log.slice(1).sort(), inserted.sort());
    closeClients(clients);
  } finally {
    for (const c of clients) c.close();
    await srv.stop();
  }
});
