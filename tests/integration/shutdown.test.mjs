// Proves graceful shutdown: with writes and reads in flight, SIGTERM makes memoryd
//   - answer every request it answers correctly: a 200 with the exact result (and the write is
//     kept), or 503 "Error: memoryd is shutting down; the command was not applied. Retry
//     shortly." with Connection: close and
//     Retry-After (and the write is not applied);
//   - wait for a request in flight (its headers received, its body still arriving) and complete it
//     with 200, while /readyz on an open connection says "shutting down" and a new connection is
//     never served;
//   - exit with code 0 after logging "stopped", and refuse connections afterwards;
//   - leave the database checkpointed: the WAL file (db + "-wal") is absent or empty, and after a
//     restart on the same database every acknowledged write is there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { makeClient, readText } from '../lib/client.mjs';
import { isPg } from '../lib/pg.mjs';
import { startServer } from '../lib/server.mjs';

const SHUTTING_DOWN = 'Error: memoryd is shutting down; the command was not applied. Retry shortly.';

// The 503 memoryd answers once it is shutting down; the connection is closed after it.
function assertShuttingDown(r, what) {
  assert.deepEqual([r.status, r.content, r.isError, r.headers.connection, r.headers['retry-after'], r.headers['x-memory-is-error']],
    [503, SHUTTING_DOWN, true, 'close', '1', 'true'], what);
}

// Resolves once memoryd's stderr has been read to the end (all log lines parsed).
function stderrClosed(srv) {
  const s = srv.proc.stderr;
  return s.closed || s.destroyed ? Promise.resolve() : new Promise((resolve) => s.once('close', resolve));
}

// After a clean exit: code 0, "shutting down" (SIGTERM) then "stopped" logged, the port refuses
// connections, and the WAL was checkpointed and removed or truncated.
async function assertCleanExit(srv) {
  const e = await srv.stop(); // asserts exit code 0 (the signal was already sent)
  assert.deepEqual(e, { code: 0, signal: null });
  await stderrClosed(srv);
  const msgs = srv.logs.map((l) => l.msg);
  assert.equal(srv.logs.find((l) => l.msg === 'shutting down')?.signal, 'SIGTERM');
  assert.ok(msgs.indexOf('stopped') > msgs.indexOf('shutting down'), `no "stopped" line after "shutting down":\n${srv.rawStderr.join('\n')}`);
  const refused = await new Promise((resolve) => {
    const s = net.connect(srv.port, '127.0.0.1');
    s.on('connect', () => { s.destroy(); resolve('connected'); });
    s.on('error', (err) => resolve(err.code));
  });
  assert.equal(refused, 'ECONNREFUSED', 'a new connection after the exit');
  assertWalCheckpointed(srv.dbPath);
}

function assertWalCheckpointed(db) {
  if (isPg()) return; // PostgreSQL keeps its own WAL
  const wal = `${db}-wal`;
  if (fs.existsSync(wal)) assert.equal(fs.statSync(wal).size, 0, `${wal} is not empty after a clean stop`);
}

for (const extra of [[], ['--threads', '1', '--max-batch', '1']]) {
  test(`SIGTERM with writes and reads in flight${extra.length ? ` (${extra.join(' ')})` : ''}: correct answers, exit 0, acknowledged writes kept, WAL checkpointed`, async (t) => {
    let srv = await startServer({ args: ['--shutdown-timeout', '60', ...extra] });
    const WRITERS = 8, READERS = 4;
    try {
      const setup = makeClient(srv.port);
      const readme = 'alpha\nbeta\n';
      for (const [path, text] of [['/memories/read/a.txt', readme], ['/memories/shared.txt', 'end']]) {
        assert.equal((await setup.post({ command: 'create', path, file_text: text })).status, 200);
      }
      for (let c = 0; c < WRITERS; c++) {
        assert.equal((await setup.post({ command: 'create', path: `/memories/ctr/c${c}.txt`, file_text: 'n=0' })).status, 200);
      }
      setup.close();
      const listing = 'Here\'re the files and directories up to 2 levels deep in /memories/read, excluding hidden items and node_modules:\n' +
        '11B\t/memories/read\n11B\t/memories/read/a.txt';

      // Every write: its command, what a 200 says, and what became of it.
      const writes = [];
      const counters = Array(WRITERS).fill(0); // acknowledged value of each client's counter
      const outcome = { ok: 0, refused: 0, errors: 0, afterTerm200: 0 };
      let inFlight = 0;
      let termSent = false;
      const maybeTerm = () => {
        if (!termSent && outcome.ok >= 300 && inFlight >= 4) {
          termSent = true;
          srv.proc.kill('SIGTERM');
        }
      };
      // Send until the server refuses (503) or the connection dies; check each answer.
      const run = async (client, next) => {
        for (let i = 0; ; i++) {
          const { cmd, expect, onAck } = next(i);
          const entry = { cmd, state: 'unknown' };
          let sent = false;
          let r;
          try {
            r = await client.post(cmd, () => { sent = true; inFlight++; maybeTerm(); });
          } catch {
            outcome.errors++;
            if (sent) inFlight--;
            if (cmd.command !== 'view') writes.push(entry);
            return; // the server closed the connection while shutting down
          }
          inFlight--;
          if (r.status === 503) {
            assertShuttingDown(r, JSON.stringify(cmd));
            assert.ok(termSent, 'a 503 before SIGTERM');
            outcome.refused++;
            entry.state = 'refused';
            if (cmd.command !== 'view') writes.push(entry);
            return;
          }
          assert.deepEqual([r.status, r.content, r.isError], [200, expect, false], JSON.stringify(cmd));
          outcome.ok++;
          if (termSent) outcome.afterTerm200++;
          entry.state = 'acked';
          if (cmd.command !== 'view') writes.push(entry);
          onAck?.();
          maybeTerm();
        }
      };
      const writer = (c) => (i) => {
        if (i % 3 === 0) {
          const path = `/memories/w/c${c}/f${i}.txt`;
          return { cmd: { command: 'create', path, file_text: `c${c} i${i}\n` }, expect: `File created successfully at: ${path}` };
        }
        if (i % 3 === 1) {
          return { cmd: { command: 'insert', path: '/memories/shared.txt', insert_line: 0, insert_text: `c${c}-i${i}` }, expect: 'The file /memories/shared.txt has been edited.' };
        }
        const n = counters[c];
        return {
          cmd: { command: 'str_replace', path: `/memories/ctr/c${c}.txt`, old_str: `n=${n}`, new_str: `n=${n + 1}` },
          expect: `The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tn=${n + 1}`,
          onAck: () => { counters[c] = n + 1; },
        };
      };
      const reader = () => (i) => (i % 2 === 0
        ? { cmd: { command: 'view', path: '/memories/read/a.txt' }, expect: 'Here\'s the content of /memories/read/a.txt with line numbers:\n     1\talpha\n     2\tbeta\n     3\t' }
        : { cmd: { command: 'view', path: '/memories/read' }, expect: listing });
      const clients = Array.from({ length: WRITERS + READERS }, () => makeClient(srv.port));
      await Promise.all(clients.map((client, k) => run(client, k < WRITERS ? writer(k) : reader())));
      for (const c of clients) c.close();
      assert.ok(termSent);
      t.diagnostic(`${outcome.ok} answered 200 (${outcome.afterTerm200} of them after SIGTERM), ${outcome.refused} refused with 503, ${outcome.errors} without an answer`);

      await assertCleanExit(srv);

      // Restart: acknowledged writes are there, refused ones are not, the rest is all-or-nothing.
      srv = await startServer({ db: srv.dbPath });
      const client = makeClient(srv.port);
      const shared = (await readText(client, '/memories/shared.txt')).split('\n');
      assert.equal(shared.at(-1), 'end');
      for (const { cmd, state } of writes) {
        if (cmd.command === 'create') {
          const r = await client.post({ command: 'view', path: cmd.path });
          if (state === 'acked') assert.equal(r.status, 200, `acknowledged create of ${cmd.path} is lost`);
          if (state === 'refused') assert.equal(r.status, 404, `refused create of ${cmd.path} was applied`);
          if (r.status === 200) assert.equal(await readText(client, cmd.path), cmd.file_text);
        } else if (cmd.command === 'insert') {
          const n = shared.filter((l) => l === cmd.insert_text).length;
          if (state === 'acked') assert.equal(n, 1, `acknowledged insert ${cmd.insert_text}`);
          if (state === 'refused') assert.equal(n, 0, `refused insert ${cmd.insert_text} was applied`);
          assert.ok(n <= 1);
        }
      }
      assert.equal(shared.length - 1, new Set(shared.slice(0, -1)).size);
      for (let c = 0; c < WRITERS; c++) {
        const pending = writes.some((w) => w.state === 'unknown' && w.cmd.path === `/memories/ctr/c${c}.txt`);
        const value = Number(/^n=(\d+)$/.exec(await readText(client, `/memories/ctr/c${c}.txt`))[1]);
        assert.ok(value === counters[c] || (pending && value === counters[c] + 1), `counter ${c}: ${value}, acknowledged ${counters[c]}`);
      }
      client.close();
      srv.proc.kill('SIGTERM');
      await assertCleanExit(srv);
    } finally {
      if (!srv.exited()) await srv.kill(); // only after a failed assertion
      fs.rmSync(srv.dir, { recursive: true, force: true });
    }
  });
}

test('SIGTERM while a request body is still arriving: memoryd waits for it and completes it with 200', async () => {
  let srv = await startServer({ args: ['--shutdown-timeout', '60'] });
  let slowSocket = null;
  try {
    const idle = makeClient(srv.port); // an open keep-alive connection
    assert.deepEqual((await idle.get('/readyz')).text, '{"status":"ready"}');
    const writer = makeClient(srv.port);
    assert.equal((await writer.post({ command: 'create', path: '/memories/before.txt', file_text: 'before' })).status, 200);

    // Headers with Expect: 100-continue: the "100 Continue" proves memoryd has taken the request
    // in; then only part of the body is sent.
    const body = JSON.stringify({ command: 'create', path: '/memories/slow.txt', file_text: 'sent slowly' });
    let slowText = '';
    slowSocket = net.connect(srv.port, '127.0.0.1');
    const slowDone = new Promise((resolve) => {
      slowSocket.on('data', (d) => { slowText += d; });
      slowSocket.on('close', resolve);
      slowSocket.on('error', () => {});
    });
    await new Promise((resolve) => slowSocket.once('connect', resolve));
    slowSocket.write(`POST /memory HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\nExpect: 100-continue\r\n\r\n`);
    for (let i = 0; !slowText.includes('\r\n\r\n'); i++) {
      assert.ok(i < 6000, 'no 100 Continue (safety net)');
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(slowText, 'HTTP/1.1 100 Continue\r\n\r\n');
    slowText = '';
    slowSocket.write(body.slice(0, 20));

    srv.proc.kill('SIGTERM');
    // On an open connection, /readyz reports the shutdown; memoryd is still running, because the
    // slow request is in flight.
    for (let i = 0; ; i++) {
      const r = await idle.get('/readyz');
      if (r.status === 503) {
        assert.equal(r.text, '{"status":"shutting down"}');
        break;
      }
      assert.deepEqual([r.status, r.text], [200, '{"status":"ready"}']);
      assert.ok(i < 6000, '/readyz never reported the shutdown (safety net)');
      await new Promise((res) => setTimeout(res, 10));
    }
    assert.equal(srv.exited(), null);
    // A new request on an open connection is refused with 503 and nothing is applied.
    assertShuttingDown(await writer.post({ command: 'create', path: '/memories/late.txt', file_text: 'late' }), 'late write');
    // A new connection is never served (memoryd closes it as it accepts it).
    const fresh = makeClient(srv.port);
    const freshResult = fresh.post({ command: 'create', path: '/memories/fresh.txt', file_text: 'fresh' }).then(
      (r) => ({ status: r.status, content: r.content }), (err) => ({ error: err.code ?? err.message }));

    // The rest of the body arrives; memoryd answers and exits.
    slowSocket.write(body.slice(20)); // not end(): libmicrohttpd takes a half-closed connection for a closed one
    await slowDone;
    const [head, slowBody] = slowText.split('\r\n\r\n');
    const slowStatus = Number(/^HTTP\/1\.1 (\d+) /.exec(head)?.[1]);
    const fr = await freshResult;
    assert.ok(fr.status === undefined || fr.status === 503, `a new connection after SIGTERM was served: ${JSON.stringify(fr)}`);
    if (fr.status === 503) assert.equal(fr.content, SHUTTING_DOWN);
    idle.close();
    writer.close();
    fresh.close();
    await assertCleanExit(srv);

    srv = await startServer({ db: srv.dbPath });
    const client = makeClient(srv.port);
    assert.equal(await readText(client, '/memories/before.txt'), 'before');
    for (const p of ['/memories/late.txt', '/memories/fresh.txt']) {
      assert.equal((await client.post({ command: 'view', path: p })).status, 404, `${p} was applied`);
    }
    // The slow request's answer matches what was stored.
    const slowFile = await client.post({ command: 'view', path: '/memories/slow.txt' });
    assert.equal(slowFile.status, slowStatus === 200 ? 200 : 404, `slow request answered ${JSON.stringify(slowText)}`);
    client.close();
    srv.proc.kill('SIGTERM');
    await assertCleanExit(srv);

    // Checked last so that everything above is checked either way: the request in flight when
    // SIGTERM came is completed, not refused.
    assert.deepEqual([slowStatus, slowBody === undefined ? null : JSON.parse(slowBody)],
      [200, { type: 'tool_result', content: 'File created successfully at: /memories/slow.txt', is_error: false }],
      'the request in flight at SIGTERM was not completed');
  } finally {
    slowSocket?.destroy();
    if (!srv.exited()) await srv.kill(); // only after a failed assertion
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
});
