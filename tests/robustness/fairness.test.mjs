// One client must not take the whole server: connections per client address
// (--max-connections-per-ip, trusted proxies exempt) and request bodies held in memory by all
// clients together (--max-body-memory). Real sockets on loopback; other clients play from
// 127.0.0.2 and 127.0.0.3 (Linux routes all of 127/8 to loopback).
//
//   - a slowloris from one address fills its quota; its next connections are answered 503
//     (Retry-After, closed, not applied; an idle one is closed after 2 s), and past twice the
//     quota closed at once, unanswered; a client from another address connects and gets exact
//     answers; when the slowloris goes, its address is served again;
//   - Node's default fetch (a connection per request) over the quota: every call gets an
//     answer, 200 or 503, never a reset;
//   - with --trusted-proxies, the proxy's address is not limited;
//   - hundreds of connections each sending a large body slowly: memoryd holds at most
//     --max-body-memory of them; the others get 503 (Retry-After, "not applied") and nothing of
//     theirs is stored; memory stays bounded; the rest succeed whole;
//   - --max-body-memory below --max-body is refused at start.
// Under valgrind (scripts/valgrind.sh), which looks for memory errors, the bodies' test is scaled
// down (a 2 MiB budget, 60 bodies): still some accepted within the budget, the rest refused.
import test from 'node:test';
import assert from 'node:assert/strict';
import { startServer, runMemoryd } from '../lib/server.mjs';
import { RawConn, postOnce, procMemory, sleep } from '../lib/attack.mjs';
import { volume } from '../lib/util.mjs';

// Memory figures mean nothing under AddressSanitizer (quarantine, shadow memory) or valgrind.
const MEMORY_CHECK = process.env.MD_SANITIZE !== '1' && !process.env.MD_TEST_WRAPPER;
const result = (content, isError) => ({ type: 'tool_result', content, is_error: isError });
const OTHER = '127.0.0.2';
const THIRD = '127.0.0.3';
const viewEmpty = 'Here\'re the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories';

// A request whose head and first body bytes are sent; the rest is held back.
function partialPost(body, tenant, sentBytes) {
  const head = ['POST /memory HTTP/1.1', 'Host: 127.0.0.1', `X-Tenant-ID: ${tenant}`, 'Content-Type: application/json',
    `Content-Length: ${body.length}`, '', ''].join('\r\n');
  return { head: Buffer.from(head, 'latin1'), first: body.subarray(0, sentBytes), rest: body.subarray(sentBytes) };
}

// Open `n` connections from `localAddress`, each accepted and counted by memoryd before this
// returns (a connection the kernel has queued may not have been accepted yet, and two
// worker threads accept in either order): a health check answered on each proves it. Then a
// started request on each holds it.
async function openMany(port, n, localAddress) {
  const conns = await Promise.all(Array.from({ length: n }, () => RawConn.open(port, { localAddress })));
  for (const c of conns) c.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  for (const [i, c] of conns.entries()) {
    const [r] = await c.responses(1, 30000);
    assert.equal(r?.status, 200, `connection ${i} from ${localAddress} was not served`);
  }
  for (const c of conns) c.write('POST /memory HTTP/1.1\r\nHost: x\r\n');
  return conns;
}

const overCapText = (limit) => `Error: Too many connections from your address (the limit is ${limit}); the command was not applied. Retry shortly.`;

test('--max-connections-per-ip: over the limit a connection is answered 503 and closed, past twice the limit closed unanswered; other addresses are served', async (t) => {
  const LIMIT = 20;
  const srv = await startServer({ args: ['--max-connections-per-ip', String(LIMIT), '--max-connections', '200', '--connection-timeout', '30'] });
  t.after(() => srv.stop());
  const slow = await openMany(srv.port, LIMIT, '127.0.0.1');
  const over = [];
  try {
    await sleep(300);
    for (const [i, c] of slow.entries()) assert.equal(c.closedAt, null, `slowloris connection ${i} (within the quota) was closed`);
    // The next connection from the same address gets an answer: 503, Retry-After, closed; its
    // command is not applied.
    const extra = await RawConn.open(srv.port, { localAddress: '127.0.0.1' });
    const body = JSON.stringify({ command: 'create', path: '/memories/over.txt', file_text: 'x' });
    extra.write(`POST /memory HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    const [r] = await extra.responses(1, 10000);
    assert.equal(r?.status, 503, `over the limit: ${extra.data.toString('latin1').slice(0, 300)}`);
    assert.equal(r.headers['retry-after'], '1');
    assert.equal(r.headers.connection, 'close');
    assert.equal(r.headers['x-memory-is-error'], 'true');
    assert.deepEqual(JSON.parse(r.text), result(overCapText(LIMIT), true));
    assert.ok((await extra.closed(10000)).closed, 'the connection answered 503 stayed open');
    extra.destroy();
    // Other routes get the 503 too, as JSON.
    const health = await RawConn.open(srv.port, { localAddress: '127.0.0.1' });
    health.write('GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n');
    const [h] = await health.responses(1, 10000);
    assert.equal(h?.status, 503);
    assert.equal(h.headers['retry-after'], '1');
    assert.deepEqual(JSON.parse(h.text), { error: 'too many connections from this address' });
    assert.ok((await health.closed(10000)).closed);
    health.destroy();
    // One over the limit that sends nothing is closed by its short idle timeout (2 s), long
    // before --connection-timeout (30 s).
    const idle = await RawConn.open(srv.port, { localAddress: '127.0.0.1' });
    const st = await idle.closed(15000);
    assert.ok(st.closed, 'an idle connection over the limit was kept');
    assert.equal(idle.data.length, 0);
    idle.destroy();
    // Past twice the limit: LIMIT more connections over it (each sending its request line a
    // byte at a time, so that they stay), then the next one is closed at once, unanswered.
    for (let i = 0; i < LIMIT; i++) {
      const c = await RawConn.open(srv.port, { localAddress: '127.0.0.1' });
      c.trickle('POST /memory HTTP/1.1\r\nHost: x\r\n', 300);
      over.push(c);
    }
    await sleep(1000); // every one of them accepted and counted
    for (const [i, c] of over.entries()) assert.equal(c.closedAt, null, `over-the-limit connection ${i} was closed while it was sending`);
    const last = await RawConn.open(srv.port, { localAddress: '127.0.0.1' });
    last.write('POST /memory HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}');
    const lst = await last.closed(5000);
    assert.ok(lst.closed, 'a connection past twice --max-connections-per-ip was accepted');
    assert.equal(last.data.length, 0, 'a connection past the hard bound got an answer');
    last.destroy();
    // Another address is served, exactly.
    for (const addr of [OTHER, THIRD]) {
      const o = await postOnce(srv.port, { command: 'view', path: '/memories' }, { tenant: 'other', localAddress: addr });
      assert.equal(o.status, 200);
      assert.deepEqual(o.json, result(viewEmpty, false));
    }
    // The hard refusal is logged (once a second at most), with the address and the limit; the
    // 503 was not applied.
    const isRefusal = (l) => l.msg === 'connection closed: twice --max-connections-per-ip reached';
    await srv.waitForLogs((logs) => logs.some(isRefusal), 'the refused connection');
    const refused = srv.logs.filter(isRefusal);
    assert.equal(refused[0].client, '127.0.0.1');
    assert.equal(refused[0].limit, LIMIT);
    const v = await postOnce(srv.port, { command: 'view', path: '/memories/over.txt' }, { localAddress: OTHER });
    assert.equal(v.status, 404);
  } finally {
    for (const c of [...slow, ...over]) c.destroy();
  }
  // Once they are gone the address is served again (the count went back down).
  let r = null;
  for (let i = 0; i < 50 && r?.status !== 200; i++) {
    await sleep(100);
    r = await postOnce(srv.port, { command: 'view', path: '/memories' }, { tenant: 'again', localAddress: '127.0.0.1' }).catch(() => null);
  }
  assert.equal(r?.status, 200, 'the address stayed refused after its connections closed');
  assert.deepEqual(r.json, result(viewEmpty, false));
});

test('over --max-connections-per-ip, Node\'s default fetch gets answers, not resets: 357 parallel creates are each 200 or 503 (not applied), and the 503s succeed when retried', async (t) => {
  const srv = await startServer(); // the defaults: 256 per address
  t.after(() => srv.stop());
  const N = 357;
  const path = (i) => `/memories/burst/f${i}.txt`;
  const send = (i) => fetch(`${srv.url}/memory`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ command: 'create', path: path(i), file_text: `file ${i}` }),
  }).then(async (res) => ({ status: res.status, retryAfter: res.headers.get('retry-after'), json: await res.json() }));
  const settled = await Promise.allSettled(Array.from({ length: N }, (_, i) => send(i)));
  const failed = settled.filter((s) => s.status === 'rejected').map((s) => String(s.reason?.cause ?? s.reason));
  assert.deepEqual(failed, [], 'fetch calls failed instead of getting an answer');
  const results = settled.map((s) => s.value);
  const refused = [];
  for (const [i, r] of results.entries()) {
    if (r.status === 200) {
      assert.deepEqual(r.json, result(`File created successfully at: ${path(i)}`, false));
    } else {
      assert.equal(r.status, 503, JSON.stringify(r));
      assert.equal(r.retryAfter, '1');
      assert.deepEqual(r.json, result(overCapText(256), true));
      refused.push(i);
    }
  }
  t.diagnostic(`${N - refused.length} created, ${refused.length} answered 503`);
  // A refused create was not applied; retried after Retry-After, it is. (Checked from another
  // address: fetch keeps its connections from this one open, up to the quota.)
  for (const i of refused) {
    const v = await postOnce(srv.port, { command: 'view', path: path(i) }, { localAddress: OTHER });
    assert.equal(v.status, 404, `${path(i)} was answered 503 but exists`);
  }
  await sleep(1000);
  for (const i of refused) {
    const r = await send(i);
    assert.equal(r.status, 200, JSON.stringify(r));
  }
  for (let i = 0; i < N; i++) {
    const v = await postOnce(srv.port, { command: 'view', path: path(i) }, { localAddress: OTHER });
    assert.equal(v.json?.content, `Here's the content of ${path(i)} with line numbers:\n     1\tfile ${i}`);
  }
});

test('--max-connections-per-ip does not limit --trusted-proxies', async (t) => {
  const LIMIT = 5;
  const srv = await startServer({ args: ['--max-connections-per-ip', String(LIMIT), '--trusted-proxies', '127.0.0.1'] });
  t.after(() => srv.stop());
  const conns = await openMany(srv.port, LIMIT * 4, '127.0.0.1');
  try {
    await sleep(300);
    for (const [i, c] of conns.entries()) assert.equal(c.closedAt, null, `proxy connection ${i} was refused`);
    const r = await postOnce(srv.port, { command: 'create', path: '/memories/p.txt', file_text: 'via proxy' }, { tenant: 'p', localAddress: '127.0.0.1' });
    assert.deepEqual(r.json, result('File created successfully at: /memories/p.txt', false));
  } finally {
    for (const c of conns) c.destroy();
  }
  // An untrusted address is limited as usual (and gets 403 on /memory, being no proxy).
  const others = await openMany(srv.port, LIMIT, OTHER);
  try {
    const extra = await RawConn.open(srv.port, { localAddress: OTHER });
    const st = await extra.closed(5000);
    assert.ok(st.closed, 'an untrusted address went over its quota');
    extra.destroy();
  } finally {
    for (const c of others) c.destroy();
  }
});

const BODIES = volume(200, 60);
test(`--max-body-memory: ${BODIES} slow large bodies at once; memoryd holds at most the budget, refuses the rest with 503, stores exactly the accepted`, async (t) => {
  const BUDGET = volume(8, 2) << 20; // MiB for bodies in flight
  const N = BODIES;
  const BODY_TEXT = 96 * 1024; // each file ~96 KiB; the bodies ~96 KiB of JSON
  const srv = await startServer({ args: ['--max-body-memory', String(BUDGET), '--max-body', '1M', '--max-connections', '600', '--max-connections-per-ip', '600'] });
  t.after(() => srv.stop());
  const before = procMemory(srv.proc.pid);
  const reqs = Array.from({ length: N }, (_, i) => {
    const body = Buffer.from(JSON.stringify({ command: 'create', path: `/memories/big/f${i}.txt`, file_text: String(i % 10).repeat(BODY_TEXT) }));
    return partialPost(body, 'bodies', body.length - 100); // all but the last 100 bytes
  });
  const conns = await Promise.all(reqs.map(() => RawConn.open(srv.port)));
  try {
    for (const [i, c] of conns.entries()) {
      c.write(reqs[i].head);
      c.write(reqs[i].first);
    }
    // Let memoryd read what it was sent; then measure while every body is still incomplete.
    await sleep(1500);
    const held = procMemory(srv.proc.pid);
    // Finish every body.
    for (const [i, c] of conns.entries()) c.write(reqs[i].rest);
    const answers = await Promise.all(conns.map((c) => c.responses(1, 30000)));
    const after = procMemory(srv.proc.pid);
    const ok = [];
    const busy = [];
    for (const [i, rs] of answers.entries()) {
      assert.equal(rs.length, 1, `request ${i} got no answer`);
      const r = rs[0];
      if (r.status === 200) {
        assert.deepEqual(JSON.parse(r.text), result(`File created successfully at: /memories/big/f${i}.txt`, false));
        ok.push(i);
      } else {
        assert.equal(r.status, 503, `request ${i}: ${r.status} ${r.text.slice(0, 200)}`);
        assert.equal(r.headers['retry-after'], '1');
        assert.deepEqual(JSON.parse(r.text), result('Error: memoryd is busy: too many request bodies are being received at once; the command was not applied. Retry shortly.', true));
        busy.push(i);
      }
    }
    t.diagnostic(`${ok.length} accepted, ${busy.length} refused with 503; RSS before ${before.rssKiB} KiB, with bodies held ${held.rssKiB} KiB, after ${after.rssKiB} KiB, peak ${after.hwmKiB} KiB`);
    // The budget holds ~85 such bodies (~21 under valgrind); the rest must have been refused.
    assert.ok(busy.length > 0, `no body was refused although ${N} x 96 KiB exceed the ${BUDGET >> 20} MiB budget`);
    assert.ok(ok.length >= Math.floor(BUDGET / (BODY_TEXT + 200)) - 5, `only ${ok.length} bodies accepted within the budget`);
    // Memory: the budget (bodies may sit in buffers of up to twice their size) plus what
    // libmicrohttpd holds per connection and the parsed commands — far below 200 whole bodies.
    const grownKiB = after.hwmKiB - before.rssKiB;
    if (MEMORY_CHECK) assert.ok(grownKiB < (3 * BUDGET) / 1024 + 16 * 1024, `memory grew by ${grownKiB} KiB with an ${BUDGET >> 20} MiB body budget`);
    // Exactly the accepted files exist, each whole.
    const listing = await srv.post({ command: 'view', path: '/memories/big' }, { tenant: 'bodies' });
    const names = listing.json.content.split('\n').slice(2).map((l) => l.split('\t')[1]);
    assert.deepEqual(names.sort(), ok.map((i) => `/memories/big/f${i}.txt`).sort());
    for (const i of ok.slice(0, 5)) {
      const v = await srv.post({ command: 'view', path: `/memories/big/f${i}.txt`, view_range: [1, 1] }, { tenant: 'bodies', accept: 'text/plain' });
      assert.equal(v.text, `Here's the content of /memories/big/f${i}.txt with line numbers:\n     1\t${String(i % 10).repeat(BODY_TEXT)}`);
    }
  } finally {
    for (const c of conns) c.destroy();
  }
  // The budget is given back: a new large body is accepted.
  const body = { command: 'create', path: '/memories/late.txt', file_text: 'z'.repeat(900 * 1024) };
  const r = await postOnce(srv.port, body, { tenant: 'bodies' });
  assert.deepEqual(r.json, result('File created successfully at: /memories/late.txt', false));
});

test('--max-body-memory below --max-body is refused at start', async () => {
  const r = await runMemoryd(['--port', '0', '--max-body', '4M', '--max-body-memory', '1M']);
  assert.equal(r.code, 2);
  assert.equal(r.stderr, 'memoryd: --max-body-memory (1048576) must be at least --max-body (4194304): a request of the largest allowed size could never be received\n');
});
