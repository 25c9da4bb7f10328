// Hostile clients against a live memoryd (issue "memoryd under attack"). Real sockets on
// loopback, no mocks. While each attack runs, a well-behaved client (tests/lib/attack.mjs,
// startGoodClient) keeps sending create / view / str_replace / view on its own keep-alive
// connection and must get exactly the right answers, each within a generous liveness bound
// (5 s — not a performance goal; the observed max and p99 are printed), and memoryd's memory
// must stay bounded (VmRSS and VmHWM growth < 64 MiB; skipped when MD_SANITIZE=1 or under an
// MD_TEST_WRAPPER such as valgrind, which inflate memory). Attacks:
//   - 300 idle connections (all closed by memoryd after --connection-timeout), and slowloris
//     connections trickling a byte at a time (one completes a real request byte by byte);
//   - oversized request headers (one huge header, thousands of headers, a huge URL);
//   - bodies over --max-body with Content-Length, chunked, endlessly chunked (closed after the
//     drop cap), with a Content-Length that lies (too small, too large, huge, not a number),
//     with ambiguous framing (Content-Length twice, with Transfer-Encoding, an unknown
//     Transfer-Encoding: refused, never run, no request smuggled), and truncated bodies;
//   - invalid UTF-8 in JSON strings and keys, deeply nested JSON (100k '['), duplicate keys,
//     huge numbers (1e400, 2^64, -0, 1.5, 2^63-1 ... in insert_line and view_range), wrong
//     types in every field of every command, in both request forms — each a 400 with an exact
//     message, and the tree is unchanged (viewed before and after);
//   - clients that hang up right after sending a write, and a pipelining client;
//   - --max-connections and --connection-timeout enforced (a server of their own).
// A defect this file found and now guards: a request with Content-Length twice, with both
// Content-Length and Transfer-Encoding, or with a Transfer-Encoding other than chunked was
// served (libmicrohttpd takes the first Content-Length and lets any Transfer-Encoding win) and
// the connection kept open, so a proxy in front reading the body length differently could have
// a second request smuggled in, with a tenant header of its own (RFC 9112 6.3). memoryd now
// answers 400 before reading the body and closes the connection (src/http/http.c, framing_error).
//
// What libmicrohttpd 0.9.75 does on its own, asserted as is: it answers oversized headers with
// 431 (a huge URL with 414) and a Content-Length that is not a number with 400 (413 beyond
// 2^64), in HTML, repeating its header block once, and closes; every byte received restarts
// the idle timeout, so a slowloris keeps its connection as long as it trickles (what bounds it
// is --max-connections); at --max-connections it stops accepting, so a further connection
// waits in the kernel's listen backlog, unanswered, until a slot frees.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { startServer } from '../lib/server.mjs';
import { RawConn, exchange, httpRequest, postOnce, procMemory, sleep, startGoodClient } from '../lib/attack.mjs';

const MEMORY_CHECK = process.env.MD_SANITIZE !== '1' && !process.env.MD_TEST_WRAPPER;
const KiB = 1024;
const MiB = 1024 * KiB;
const MAX_BODY = 128 * KiB;
const TIMEOUT_S = 2; // --connection-timeout
const LIVENESS_MS = 5000; // every good request answered within this (a liveness bound)
const MEMORY_GROWTH_KIB = 64 * 1024;

let srv; // the server most attacks run against
const servers = [];
async function start(args) {
  const s = await startServer({ args });
  servers.push(s);
  return s;
}

before(async () => {
  // Every attacker here connects from 127.0.0.1, like the good client: the per-address limit
  // is raised so that these tests reach --max-connections and the timeouts (the per-address
  // limit itself is tested in fairness.test.mjs).
  srv = await start(['--max-body', '128K', '--connection-timeout', String(TIMEOUT_S), '--max-connections', '600',
    '--max-connections-per-ip', '600']);
  // The tree hostile requests aim at (tenant "hostile").
  for (const [path, file_text] of [['/memories/notes.txt', 'one\ntwo\nthree\n'], ['/memories/dir/a.txt', 'alpha\n']]) {
    const r = await postOnce(srv.port, { command: 'create', path, file_text }, { tenant: 'hostile' });
    assert.equal(r.status, 200, r.text);
  }
  assert.deepEqual(await tree(), FIXTURE);
});

after(async () => {
  for (const s of servers) {
    await s.stop();
    fs.rmSync(s.dir, { recursive: true, force: true });
  }
});

// ---------------------------------------------------------------------------------- helpers

const LISTING_HEAD = (p) => `Here're the files and directories up to 2 levels deep in ${p}, excluding hidden items and node_modules:`;
const fileView = (p, lines, first = 1) => [`Here's the content of ${p} with line numbers:`, ...lines.map((l, i) => `${String(first + i).padStart(6)}\t${l}`)].join('\n');
const result = (content, isError, id) => (id === undefined
  ? { type: 'tool_result', content, is_error: isError }
  : { type: 'tool_result', tool_use_id: id, content, is_error: isError });
const etagOf = (text) => `"sha256-${createHash('sha256').update(text).digest('hex')}"`;
// The answer to a view of a file sent as a command object: its text and, since the result is
// not a tool_use block's, the ETag of the whole file (`lines`) in the JSON too.
const fileResult = (p, lines, shown = fileView(p, lines)) => ({ ...result(shown, false), etag: etagOf(lines.join('\n')) });

// The whole tree of tenant "hostile", read back with view.
const TREE_PATHS = ['/memories', '/memories/dir', '/memories/notes.txt', '/memories/dir/a.txt', '/memories/new.txt', '/memories/moved.txt'];
async function tree(tenant = 'hostile') {
  const out = {};
  for (const p of TREE_PATHS) {
    const r = await postOnce(srv.port, { command: 'view', path: p }, { tenant });
    out[p] = `${r.status} ${r.json?.content}`;
  }
  return out;
}
const missing = (p) => `404 The path ${p} does not exist. Please provide a valid path.`;
const FIXTURE = {
  '/memories': `200 ${[LISTING_HEAD('/memories'), '20B\t/memories', '6B\t/memories/dir/', '6B\t/memories/dir/a.txt', '14B\t/memories/notes.txt'].join('\n')}`,
  '/memories/dir': `200 ${[LISTING_HEAD('/memories/dir'), '6B\t/memories/dir', '6B\t/memories/dir/a.txt'].join('\n')}`,
  '/memories/notes.txt': `200 ${fileView('/memories/notes.txt', ['one', 'two', 'three', ''])}`,
  '/memories/dir/a.txt': `200 ${fileView('/memories/dir/a.txt', ['alpha', ''])}`,
  '/memories/new.txt': missing('/memories/new.txt'),
  '/memories/moved.txt': missing('/memories/moved.txt'),
};

// Run attack() while a good client works; check the good client's answers, their liveness
// and memoryd's memory. Returns what attack() returned.
async function underAttack(t, name, attack, server = srv) {
  const pid = server.proc.pid;
  const mem0 = procMemory(pid);
  const good = startGoodClient(server.port, { tenant: 'good', prefix: `/memories/${name}`, limitMs: LIVENESS_MS, name });
  let value;
  try {
    value = await attack(good);
    // At least one whole create/view/str_replace/view cycle ran during the attack (bounded, so
    // that a dead server fails the test instead of hanging it).
    for (const t0 = Date.now(); good.requests < 4 && Date.now() - t0 < 30000;) await sleep(20);
    assert.ok(good.requests >= 4, `${name}: the good client got only ${good.requests} answers`);
  } finally {
    const stats = await good.stop();
    const mem1 = procMemory(pid);
    t.diagnostic(`${name}: ${stats.requests} good requests, max ${stats.maxMs.toFixed(1)} ms, p99 ${stats.p99Ms.toFixed(1)} ms; ` +
      `VmRSS ${mem0.rssKiB} -> ${mem1.rssKiB} KiB, VmHWM ${mem0.hwmKiB} -> ${mem1.hwmKiB} KiB`);
    assert.deepEqual(stats.failures, [], `${name}: the good client got wrong or late answers`);
    if (MEMORY_CHECK) {
      assert.ok(mem1.rssKiB - mem0.rssKiB < MEMORY_GROWTH_KIB, `${name}: VmRSS grew ${mem1.rssKiB - mem0.rssKiB} KiB`);
      assert.ok(mem1.hwmKiB - mem0.hwmKiB < MEMORY_GROWTH_KIB, `${name}: VmHWM grew ${mem1.hwmKiB - mem0.hwmKiB} KiB`);
    }
  }
  return value;
}

const rawRequest = (headerLines, body = '') => Buffer.concat([Buffer.from(`${headerLines.join('\r\n')}\r\n\r\n`, 'latin1'), Buffer.from(body)]);
const POST = (...lines) => ['POST /memory HTTP/1.1', 'Host: 127.0.0.1', 'X-Tenant-ID: hostile', ...lines];
const CREATE_BODY = (p) => JSON.stringify({ command: 'create', path: p, file_text: 'should never be stored' });
// A create command padded with an ignored key to exactly n bytes.
function paddedCreate(p, n) {
  const base = JSON.stringify({ command: 'create', path: p, file_text: 'x', pad: '' });
  return JSON.stringify({ command: 'create', path: p, file_text: 'x', pad: 'p'.repeat(n - base.length) });
}

// ------------------------------------------------------------------------- connection floods

test('300 idle connections: the good client is served; memoryd closes each after --connection-timeout', async (t) => {
  const conns = await underAttack(t, 'idle', async () => {
    const cs = await Promise.all(Array.from({ length: 300 }, () => RawConn.open(srv.port)));
    // A fresh connection is still served while they are open.
    const r = await httpRequest(srv.port, { method: 'GET', path: '/healthz' });
    assert.equal(r.status, 200);
    assert.equal(r.text, '{"status":"ok"}');
    await sleep(1000);
    return cs;
  });
  const states = await Promise.all(conns.map((c) => c.closed(TIMEOUT_S * 1000 + 10000)));
  for (const [i, s] of states.entries()) {
    assert.ok(s.closed, `idle connection ${i} still open ${TIMEOUT_S + 10} s after the timeout`);
    assert.ok(s.atMs >= TIMEOUT_S * 1000 - 500, `idle connection ${i} closed after ${s.atMs} ms, before the ${TIMEOUT_S} s timeout`);
    assert.equal(conns[i].data.length, 0, 'a timed-out connection gets no bytes');
  }
  t.diagnostic(`idle connections closed after ${Math.min(...states.map((s) => s.atMs))}..${Math.max(...states.map((s) => s.atMs))} ms`);
});

test('slowloris: connections trickling a byte every 100 ms do not hold up others; one completes a real request byte by byte', async (t) => {
  const slowBody = JSON.stringify({ command: 'create', path: '/memories/slow.txt', file_text: 'written slowly' });
  const slowReq = rawRequest(['POST /memory HTTP/1.1', 'Host: 127.0.0.1', 'X-Tenant-ID: slow', `Content-Length: ${slowBody.length}`], slowBody);
  const { conns, complete } = await underAttack(t, 'slowloris', async () => {
    const cs = await Promise.all(Array.from({ length: 60 }, () => RawConn.open(srv.port)));
    // Headers that never end, a byte every 100 ms.
    for (const c of cs) c.trickle(`POST /memory HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ${'a'.repeat(1000)}`, 100);
    const done = await RawConn.open(srv.port);
    await done.trickle(slowReq, 8);
    const [resp] = await done.responses(1, 10000);
    done.destroy();
    // Each byte is activity: libmicrohttpd's idle timeout restarts with it, so a slowloris that
    // trickles faster than --connection-timeout keeps its connection (bounded by
    // --max-connections, tested below). After 3 s, past the 2 s timeout, all are still open.
    await sleep(Math.max(0, 3000 - (Date.now() - cs[0].t0)));
    return { conns: cs, complete: resp };
  });
  assert.equal(complete?.status, 200);
  assert.deepEqual(JSON.parse(complete.text), result('File created successfully at: /memories/slow.txt', false));
  const v = await postOnce(srv.port, { command: 'view', path: '/memories/slow.txt' }, { tenant: 'slow' });
  assert.deepEqual(v.json, fileResult('/memories/slow.txt', ['written slowly']));
  for (const c of conns) assert.equal(c.closedAt, null, 'a trickling connection was closed while active');
  // They stop trickling: now idle, each is closed after the timeout, with no answer.
  const stoppedAt = Date.now();
  for (const c of conns) c.stopTrickle();
  const states = await Promise.all(conns.map((c) => c.closed(TIMEOUT_S * 1000 + 10000)));
  for (const s of states) assert.ok(s.closed, 'a stalled slowloris connection was not closed');
  for (const c of conns) {
    assert.ok(c.closedAt - stoppedAt >= TIMEOUT_S * 1000 - 500, `closed ${c.closedAt - stoppedAt} ms after its last byte`);
    assert.equal(c.data.length, 0);
  }
});

// ------------------------------------------------------------------------ oversized headers

test('oversized request headers: 431 (414 for a huge URL) and the connection closed; nothing stored', async (t) => {
  const body = CREATE_BODY('/memories/new.txt');
  await underAttack(t, 'headers', async () => {
    const cases = [
      // libmicrohttpd (connection memory limit 64 KiB) answers these itself with an HTML body.
      ['one 100 KiB header', POST(`X-Big: ${'a'.repeat(100 * KiB)}`, `Content-Length: ${body.length}`), 'HTTP/1.1 431 Request Header Fields Too Large'],
      ['10000 headers', POST(...Array.from({ length: 10000 }, (_, i) => `X-H${i}: v`), `Content-Length: ${body.length}`), 'HTTP/1.1 431 Request Header Fields Too Large'],
      ['a 100 KiB URL', [`POST /memory?${'q'.repeat(100 * KiB)} HTTP/1.1`, 'Host: 127.0.0.1', 'X-Tenant-ID: hostile', `Content-Length: ${body.length}`], 'HTTP/1.1 414 URI Too Long'],
    ];
    // memoryd answers once it has read 64 KiB and closes with the rest of the request unread,
    // so the kernel resets the connection, and a reset that overtakes the answer discards it
    // on the client's side (about 1 time in 10 here). So: each attempt must get exactly this
    // answer or a reset with no bytes at all (never anything else), and within 6 attempts
    // the answer must come.
    await Promise.all(cases.map(async ([name, lines, statusLine]) => {
      let answered = 0;
      for (let attempt = 0; attempt < 6 && !answered; attempt++) {
        const r = await exchange(srv.port, rawRequest(lines, body));
        assert.ok(r.closed, `${name}: connection not closed`);
        if (r.raw.length === 0 && r.error === 'ECONNRESET') continue;
        assert.equal(r.responses.length, 1, name);
        assert.equal(r.responses[0].statusLine, statusLine, name);
        assert.equal(r.responses[0].headers.connection, 'close', name);
        answered++;
      }
      assert.equal(answered, 1, `${name}: 6 attempts, each reset before the answer arrived`);
    }));
    // A large but sane header (30 KiB) is fine.
    const ok = await httpRequest(srv.port, { headers: [['X-Tenant-ID', 'hostile'], ['X-Pad', 'b'.repeat(30 * KiB)]], body: JSON.stringify({ command: 'view', path: '/memories/dir/a.txt' }) });
    assert.equal(ok.status, 200);
    assert.deepEqual(JSON.parse(ok.text), fileResult('/memories/dir/a.txt', ['alpha', '']));
  });
  assert.deepEqual(await tree(), FIXTURE);
});

// ----------------------------------------------------------------------------------- bodies

test('bodies over the limit: 413 with Content-Length and chunked; an endless chunked body is cut off; nothing stored', async (t) => {
  const tooBig = result(`Error: The request body exceeds the limit of ${MAX_BODY} bytes`, true);
  await underAttack(t, 'bigbody', async () => {
    const big = paddedCreate('/memories/new.txt', MAX_BODY + 1);
    // Announced by Content-Length: read and dropped, then 413 and close.
    const a = await exchange(srv.port, rawRequest(POST(`Content-Length: ${big.length}`), big));
    assert.equal(a.responses.length, 1);
    assert.equal(a.responses[0].status, 413);
    assert.equal(a.responses[0].headers.connection, 'close');
    assert.deepEqual(JSON.parse(a.responses[0].text), tooBig);
    assert.ok(a.closed);
    // Chunked, in 1000-byte chunks.
    const chunks = [];
    for (let i = 0; i < big.length; i += 1000) {
      const c = big.slice(i, i + 1000);
      chunks.push(`${c.length.toString(16)}\r\n${c}\r\n`);
    }
    const b = await exchange(srv.port, rawRequest(POST('Transfer-Encoding: chunked'), `${chunks.join('')}0\r\n\r\n`));
    assert.equal(b.responses.length, 1);
    assert.equal(b.responses[0].status, 413);
    assert.deepEqual(JSON.parse(b.responses[0].text), tooBig);
    assert.ok(b.closed);
    // Announced far beyond what memoryd would even read and drop (64 MiB): 413 at once, before
    // the body.
    const c = await exchange(srv.port, rawRequest(POST('Content-Length: 10000000000'), big.slice(0, 100)));
    assert.equal(c.responses.length, 1);
    assert.equal(c.responses[0].status, 413);
    assert.deepEqual(JSON.parse(c.responses[0].text), tooBig);
    assert.ok(c.closed);
    // Chunked without end: read and dropped up to 64 MiB, then the connection is closed
    // without an answer, and memoryd's memory does not grow with it.
    const d = await RawConn.open(srv.port);
    d.write(rawRequest(POST('Transfer-Encoding: chunked')));
    const chunk = Buffer.from(`10000\r\n${'x'.repeat(65536)}\r\n`);
    let sent = 0;
    while (d.closedAt === null && sent < 256 * MiB) {
      if (!d.sock.write(chunk)) {
        await new Promise((resolve) => {
          const done = () => { d.sock.off('drain', done); d.sock.off('close', done); resolve(); };
          d.sock.on('drain', done);
          d.sock.on('close', done);
        });
      }
      sent += 65536;
    }
    const ds = await d.closed(10000);
    assert.ok(ds.closed, 'an endless chunked body was never cut off');
    assert.ok(sent >= 64 * MiB, `cut off after ${sent} bytes, before the 64 MiB drop cap`);
    assert.equal(d.data.length, 0);
    t.diagnostic(`endless chunked body cut off after ${(sent / MiB).toFixed(1)} MiB sent`);
  });
  assert.deepEqual(await tree(), FIXTURE);
});

test('lying, malformed or ambiguous Content-Length / Transfer-Encoding: refused, never run, nothing smuggled', async (t) => {
  const view = JSON.stringify({ command: 'view', path: '/memories/notes.txt' });
  const create = CREATE_BODY('/memories/new.txt');
  const smuggled = rawRequest(POST(`Content-Length: ${CREATE_BODY('/memories/moved.txt').length}`), CREATE_BODY('/memories/moved.txt'));
  await underAttack(t, 'framing', async () => {
    const cases = await Promise.all([
      // Too small: the body is cut at 5 bytes (invalid JSON); the rest is not a request line
      // and the connection is closed once idle.
      exchange(srv.port, rawRequest(POST('Content-Length: 5'), create), { waitMs: TIMEOUT_S * 1000 + 8000 }),
      // Too large, and the client waits: no answer, the command never runs, closed on timeout.
      exchange(srv.port, rawRequest(POST('Content-Length: 1000'), create), { waitMs: TIMEOUT_S * 1000 + 8000 }),
      // Ambiguous framing (request smuggling): 400 before the body is read, then close; the
      // smuggled second request never runs.
      exchange(srv.port, rawRequest(POST('Content-Length: 4', 'Transfer-Encoding: chunked'), `0\r\n\r\n${smuggled}`)),
      exchange(srv.port, rawRequest(POST(`Content-Length: ${create.length}`, 'Content-Length: 0'), `${create}${smuggled}`)),
      exchange(srv.port, rawRequest(POST(`Content-Length: ${view.length}`, `Content-Length: ${view.length}`), view)),
      exchange(srv.port, rawRequest(POST('Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'), `0\r\n\r\n${smuggled}`)),
      exchange(srv.port, rawRequest(POST('Transfer-Encoding: gzip, chunked'), `0\r\n\r\n${smuggled}`)),
      exchange(srv.port, rawRequest(POST('Transfer-Encoding: identity'), `${create}`)),
      // libmicrohttpd frames the body, and takes "chunked" with whitespace after it for an
      // unknown coding: refused, even though memoryd trims the headers it reads.
      exchange(srv.port, rawRequest(POST('Transfer-Encoding: chunked \t'), `0\r\n\r\n${smuggled}`)),
      // Not a number / negative / over 2^64: libmicrohttpd answers itself (0.9.75 repeats its
      // header block once before the body — its quirk, asserted loosely) and closes.
      exchange(srv.port, rawRequest(POST('Content-Length: 12abc'), create)),
      exchange(srv.port, rawRequest(POST('Content-Length: -1'), create)),
      exchange(srv.port, rawRequest(POST('Content-Length: 18446744073709551617'), create)),
    ]);
    const [small, large, clte, twoCl, twoSameCl, twoTe, teList, teIdentity, tePadded, notNum, negative, huge] = cases;
    assert.equal(small.responses.length, 1);
    assert.equal(small.responses[0].status, 400);
    assert.deepEqual(JSON.parse(small.responses[0].text), result(`Error: Invalid JSON in request body: premature end of input near '"com' (line 1, column 5)`, true));
    assert.ok(small.closed && small.atMs >= TIMEOUT_S * 1000 - 500, 'the rest of a short body is not served as a request');
    assert.deepEqual(large.responses, []);
    assert.ok(large.closed && large.atMs >= TIMEOUT_S * 1000 - 500, 'a body that never completes is closed on timeout');
    const refused = (r, message) => {
      assert.equal(r.responses.length, 1, message);
      assert.equal(r.responses[0].status, 400);
      assert.equal(r.responses[0].headers.connection, 'close');
      assert.deepEqual(JSON.parse(r.responses[0].text), result(message, true));
      assert.ok(r.closed && r.atMs < TIMEOUT_S * 1000, 'closed at once');
    };
    refused(clte, 'Error: A request must not have both Content-Length and Transfer-Encoding');
    refused(twoCl, 'Error: The Content-Length header was sent more than once');
    refused(twoSameCl, 'Error: The Content-Length header was sent more than once');
    refused(twoTe, 'Error: Unsupported Transfer-Encoding: only chunked is accepted');
    refused(teList, 'Error: Unsupported Transfer-Encoding: only chunked is accepted');
    refused(teIdentity, 'Error: Unsupported Transfer-Encoding: only chunked is accepted');
    refused(tePadded, 'Error: The Transfer-Encoding header has whitespace after `chunked`, which this server cannot read as chunked; send exactly `Transfer-Encoding: chunked`');
    for (const [r, statusLine, text] of [
      [notNum, 'HTTP/1.1 400 Bad Request', 'Your HTTP request has wrong value for <b>Content-Length</b> header.'],
      [negative, 'HTTP/1.1 400 Bad Request', 'Your HTTP request has wrong value for <b>Content-Length</b> header.'],
      [huge, 'HTTP/1.1 413 Content Too Large', 'Your HTTP request has too large value for <b>Content-Length</b> header.'],
    ]) {
      assert.equal(r.responses[0]?.statusLine, statusLine);
      assert.ok(r.raw.toString('latin1').includes(text), r.raw.toString('latin1'));
      assert.ok(r.closed && r.atMs < TIMEOUT_S * 1000);
    }
  });
  assert.deepEqual(await tree(), FIXTURE);
});

test('truncated bodies (the client hangs up mid-body): nothing runs, nothing stored', async (t) => {
  const create = CREATE_BODY('/memories/new.txt');
  // memoryd closes its side at once, or at the latest on the idle timeout (libmicrohttpd
  // sometimes notices the client's FIN only then): either way no answer, nothing run.
  const o = { endAfterWrite: true, waitMs: TIMEOUT_S * 1000 + 8000 };
  await underAttack(t, 'truncated', async () => {
    await Promise.all([
      // Half the announced body, then close.
      exchange(srv.port, rawRequest(POST(`Content-Length: ${create.length}`), create.slice(0, 30)), o),
      // A complete, valid command, but one byte short of the announced length.
      exchange(srv.port, rawRequest(POST(`Content-Length: ${create.length + 1}`), create), o),
      // Chunked: the command in one chunk, then close before the last chunk.
      exchange(srv.port, rawRequest(POST('Transfer-Encoding: chunked'), `${create.length.toString(16)}\r\n${create}\r\n`), o),
      // Close in the middle of a chunk.
      exchange(srv.port, rawRequest(POST('Transfer-Encoding: chunked'), `${create.length.toString(16)}\r\n${create.slice(0, 20)}`), o),
    ]).then((rs) => {
      for (const r of rs) {
        assert.deepEqual(r.responses, []);
        assert.ok(r.closed);
      }
    });
    // The same with an abrupt reset instead of a clean close.
    for (let i = 0; i < 20; i++) {
      const c = await RawConn.open(srv.port);
      c.write(rawRequest(POST(`Content-Length: ${create.length}`), create.slice(0, i + 10)));
      await sleep(5);
      c.sock.resetAndDestroy();
    }
  });
  assert.deepEqual(await tree(), FIXTURE);
});

// ---------------------------------------------------------------------------------- JSON

// POST raw bytes as tenant "hostile"; returns {status, json}.
async function postRaw(body, opts = {}) {
  const r = await postOnce(srv.port, Buffer.from(body), { tenant: 'hostile', ...opts });
  return { status: r.status, json: r.json };
}
const invalidJson = (text) => ({ status: 400, json: result(`Error: Invalid JSON in request body: ${text}`, true) });

test('invalid UTF-8 in JSON strings and keys: 400 with a clear error, nothing stored', async (t) => {
  const P = '{"command":"create","path":"/memories/new.txt","file_text":"';
  const cases = [
    // [prefix, bad bytes, byte shown in the message]
    [`${P}ab`, [0xff], 'ff'], // never valid in UTF-8
    [P, [0xc0, 0xaf], 'c0'], // overlong '/'
    [P, [0xe0, 0x80, 0xae], 'e0'], // overlong '.'
    [P, [0xed, 0xa0, 0x80], 'ed'], // a UTF-16 surrogate encoded in UTF-8
    [P, [0xe2, 0x82], 'e2'], // truncated sequence
    [P, [0x80], '80'], // lone continuation byte
    [P, [0xf4, 0x90, 0x80, 0x80], 'f4'], // beyond U+10FFFF
    ['{"command":"create","path":"/memories/', [0xc3, 0x28], 'c3'], // in a path
    ['{"command":"create","pa', [0xff], 'ff'], // in a key
    ['{"command":"cr', [0xfe], 'fe'], // in the command name
  ];
  await underAttack(t, 'utf8', async () => {
    for (const [prefix, bad, hex] of cases) {
      const body = Buffer.concat([Buffer.from(prefix), Buffer.from(bad), Buffer.from('x","file_text":"y"}')]);
      const near = prefix.slice(prefix.lastIndexOf('"'));
      assert.deepEqual(await postRaw(body), invalidJson(`unable to decode byte 0x${hex} near '${near}' (line 1, column ${prefix.length})`), prefix);
    }
    // Escaped lone surrogates are not valid Unicode either.
    assert.deepEqual(await postRaw(`${P}\\ud800"}`), invalidJson(`invalid Unicode '\\uD800' near '"\\ud800"' (line 1, column ${P.length + 7})`));
    assert.deepEqual(await postRaw(`${P}a\\udc00\\ud800"}`), invalidJson(`invalid Unicode '\\uDC00' near '"a\\udc00\\ud800"' (line 1, column ${P.length + 14})`));
    // The same body in text/plain: the same message, as valid UTF-8.
    const r = await postOnce(srv.port, Buffer.concat([Buffer.from(P), Buffer.from([0xff]), Buffer.from('"}')]), { tenant: 'hostile', accept: 'text/plain' });
    assert.equal(r.status, 400);
    assert.equal(r.text, `Error: Invalid JSON in request body: unable to decode byte 0xff near '"' (line 1, column ${P.length})`);
  });
  assert.deepEqual(await tree(), FIXTURE);
});

test('deeply nested JSON (100k "[" and more): 400, no crash', async (t) => {
  await underAttack(t, 'nesting', async () => {
    assert.deepEqual(await postRaw('['.repeat(100000)), invalidJson("maximum parsing depth reached near '[' (line 1, column 2049)"));
    assert.deepEqual(await postRaw(`${'['.repeat(60000)}${']'.repeat(60000)}`), invalidJson("maximum parsing depth reached near '[' (line 1, column 2049)"));
    assert.deepEqual(await postRaw('{"a":'.repeat(20000)), invalidJson("maximum parsing depth reached near '{' (line 1, column 10241)"));
    // Inside a command (the object is level 1): the 2048th '[' is one too many.
    const prefix = '{"command":"delete","path":"/memories/notes.txt","x":';
    const inCommand = `${prefix}${'['.repeat(3000)}${']'.repeat(3000)}}`;
    assert.deepEqual(await postRaw(inCommand), invalidJson(`maximum parsing depth reached near '[' (line 1, column ${prefix.length + 2048})`));
    // 2048 levels is the parser's limit; just under it is fine (the extra key is ignored).
    const deepOk = `{"command":"view","path":"/memories/dir/a.txt","x":${'['.repeat(2000)}${']'.repeat(2000)}}`;
    assert.deepEqual(await postRaw(deepOk), { status: 200, json: fileResult('/memories/dir/a.txt', ['alpha', '']) });
  });
  assert.deepEqual(await tree(), FIXTURE);
});

test('duplicate keys: 400, whichever copy would have won', async (t) => {
  await underAttack(t, 'dupkeys', async () => {
    // [body, the repeated key as written]; jansson's column is the end of that key.
    const cases = [
      ['{"command":"view","path":"/memories/notes.txt","path":"/memories/dir/a.txt"}', '"path"'],
      ['{"command":"view","command":"delete","path":"/memories/notes.txt"}', '"command"'],
      ['{"command":"delete","path":"/memories/notes.txt","p\\u0061th":"/memories/dir"}', '"p\\u0061th"'],
      ['{"command":"create","path":"/memories/new.txt","file_text":"a","file_text":"b"}', '"file_text"'],
      ['{"type":"tool_use","id":"t1","id":"t2","name":"memory","input":{"command":"view","path":"/memories"}}', '"id"'],
      ['{"type":"tool_use","id":"t1","name":"memory","input":{"command":"delete","path":"/memories/dir","path":"/memories/notes.txt"}}', '"path"'],
    ];
    for (const [body, key] of cases) {
      const column = body.lastIndexOf(key) + key.length;
      assert.deepEqual(await postRaw(body), invalidJson(`duplicate object key near '${key}' (line 1, column ${column})`), body);
    }
    // A key with a NUL, which could otherwise pass for "path".
    const nul = '{"command":"view","path":"/memories","path\\u0000":"/memories/dir"}';
    assert.deepEqual(await postRaw(nul), invalidJson(`NUL byte in object key not supported near '"path\\u0000"' (line 1, column ${nul.length - 17})`));
  });
  assert.deepEqual(await tree(), FIXTURE);
});

test('huge and odd numbers in insert_line and view_range: exact answers, no overflow', async (t) => {
  const p = '/memories/num.txt';
  const post = async (body) => {
    const r = await postOnce(srv.port, Buffer.from(body), { tenant: 'numbers' });
    return { status: r.status, json: r.json };
  };
  const insert = (n) => `{"command":"insert","path":"${p}","insert_line":${n},"insert_text":"x"}`;
  const view = (range) => `{"command":"view","path":"${p}","view_range":${range}}`;
  const at = (body, token) => body.indexOf(token) + token.length; // jansson's column: end of the token
  const numAt = (body) => body.indexOf('"insert_line":') + '"insert_line":'.length; // before the number
  const outOfRange = (n, lines) => ({ status: 422, json: result(`Error: Invalid \`insert_line\` parameter: ${n}. It should be within the range of lines of the file: [0, ${lines}]`, true) });
  const notInt = { status: 400, json: result('Error: Parameter `insert_line` must be an integer', true) };
  const bigNumber = { status: 400, json: result('Error: Parameter `insert_line` has a number out of range: integers must be between -9223372036854775808 and 9223372036854775807', true) };
  const badRange = { status: 400, json: result('Error: Parameter `view_range` must be an array of two integers [start_line, end_line]', true) };
  const edited = { status: 200, json: result(`The file ${p} has been edited.`, false) };
  await underAttack(t, 'numbers', async () => {
    assert.equal((await post(`{"command":"create","path":"${p}","file_text":"a\\nb\\n"}`)).status, 200);
    for (const [n, want] of [
      // Valid JSON numbers that do not fit in 64 bits: the parameter is out of range.
      ['1e400', () => bigNumber],
      ['-1e400', () => bigNumber],
      ['18446744073709551616', () => bigNumber],
      ['9223372036854775808', () => bigNumber],
      ['-9223372036854775809', () => bigNumber],
      [`1${'0'.repeat(5000)}`, () => bigNumber],
      ['1e19', () => bigNumber],
      ['9223372036854775807', () => outOfRange('9223372036854775807', 3)],
      ['-9223372036854775808', () => outOfRange('-9223372036854775808', 3)],
      ['9007199254740993', () => outOfRange('9007199254740993', 3)],
      ['9007199254740992.0', () => outOfRange('9007199254740992', 3)], // 2^53 as a real: still exact
      ['-1', () => outOfRange('-1', 3)],
      ['4', () => outOfRange('4', 3)],
      ['1.5', () => notInt],
      ['-0.5', () => notInt],
      // A real beyond 2^53 is not taken as an integer (it may not be the number written).
      ['9007199254740994.0', () => notInt],
      ['1e18', () => notInt],
      ['1e300', () => bigNumber],
      // Not JSON numbers (jansson's column: the end of what it read of the token).
      ['NaN', (b) => invalidJson(`invalid token near 'NaN' (line 1, column ${numAt(b) + 3})`)],
      ['Infinity', (b) => invalidJson(`invalid token near 'Infinity' (line 1, column ${numAt(b) + 8})`)],
      ['+1', (b) => invalidJson(`invalid token near '+' (line 1, column ${numAt(b) + 1})`)],
      ['.5', (b) => invalidJson(`invalid token near '.' (line 1, column ${numAt(b) + 1})`)],
      ['01', (b) => invalidJson(`invalid token near '0' (line 1, column ${numAt(b) + 1})`)],
      ['0x10', (b) => invalidJson(`'}' expected near 'x' (line 1, column ${numAt(b) + 2})`)],
    ]) {
      const b = insert(n);
      assert.deepEqual(await post(b), want(b), n);
    }
    assert.deepEqual(await post(view('null')), { status: 200, json: fileResult(p, ['a', 'b', '']) });
    // -0 and integral reals are integers: inserted at line 0, 0, then after line 1.
    assert.deepEqual(await post(insert('-0')), edited);
    assert.deepEqual(await post(insert('-0.0')), edited);
    assert.deepEqual(await post(insert('1.0')), edited);
    assert.deepEqual(await post(insert('2E0')), edited);
    const lines = ['x', 'x', 'x', 'x', 'a', 'b', ''];
    assert.deepEqual(await post(view('null')), { status: 200, json: fileResult(p, lines) });
    for (const [range, want] of [
      ['[-0,-1]', fileView(p, lines)],
      ['[-0.0,1]', fileView(p, lines.slice(0, 1))],
      ['[1,2.0]', fileView(p, lines.slice(0, 2))],
      ['[5e0,6]', fileView(p, lines.slice(4, 6), 5)],
      ['[-9223372036854775808,9223372036854775807]', fileView(p, lines)],
      ['[9223372036854775807,-9223372036854775808]', `Here's the content of ${p} with line numbers:\n`],
      ['[6,-9223372036854775808]', `Here's the content of ${p} with line numbers:\n`],
    ]) assert.deepEqual(await post(view(range)), { status: 200, json: fileResult(p, lines, want) }, range);
    for (const range of ['[1.5,2]', '[1,2.5]', '[1e300,1.5]', '[9007199254740994.0,1]', '[1e400,"x"]']) {
      assert.deepEqual(await post(view(range)), badRange, range);
    }
    const rangeBig = { status: 400, json: result('Error: Parameter `view_range` has a number out of range: integers must be between -9223372036854775808 and 9223372036854775807', true) };
    for (const range of ['[1e300,1]', '[1,-1e300]', '[1,1e400]', '[1,18446744073709551616]', '[-9223372036854775809,1]', '[1e400,-1e400]']) {
      assert.deepEqual(await post(view(range)), rangeBig, range);
    }
    // A JSON error after a big number is still reported where it is in the body as sent.
    const b = `{"command":"view","path":"${p}","view_range":[1,18446744073709551616],]}`;
    assert.deepEqual(await post(b), invalidJson(`string or '}' expected near ']' (line 1, column ${b.length - 1})`));
  });
});

// Every field of every command, with every wrong JSON type, in both request forms.
const BASE = {
  view: { command: 'view', path: '/memories/notes.txt', view_range: [1, 2] },
  create: { command: 'create', path: '/memories/new.txt', file_text: 'new' },
  str_replace: { command: 'str_replace', path: '/memories/notes.txt', old_str: 'two', new_str: 'TWO' },
  insert: { command: 'insert', path: '/memories/notes.txt', insert_line: 1, insert_text: 'ins' },
  delete: { command: 'delete', path: '/memories/dir/a.txt' },
  rename: { command: 'rename', old_path: '/memories/dir/a.txt', new_path: '/memories/moved.txt' },
};
const KIND = { command: 'string', path: 'string', file_text: 'string', old_str: 'string', new_str: 'string', insert_text: 'string', old_path: 'string', new_path: 'string', insert_line: 'integer', view_range: 'range' };
const WRONG = {
  string: [0, -1, 1.5, 1e300, true, false, [], ['/memories/notes.txt'], {}, { path: '/memories/notes.txt' }],
  integer: ['1', '', '0x1', true, false, [], [1], {}, { n: 1 }, 1.5, -0.5],
  // (an array of another length than two is no range: the whole file, as the SDK shows it)
  range: ['1,2', '[1,2]', 1, true, false, [1, '2'], ['1', 2], [1.5, 2], [1, null], [null, 1], [true, 2], {}, { 0: 1, 1: 2 }, [[1], [2]]],
};
function wrongTypeMessage(cmd, field, kind) {
  if (field === 'command') return 'Error: Parameter `command` must be a string';
  if (kind === 'string') return `Error: Parameter \`${field}\` must be a string`;
  if (kind === 'integer') return `Error: Parameter \`${field}\` must be an integer`;
  return `Error: Parameter \`${field}\` must be an array of two integers [start_line, end_line]`;
}
const missingMessage = (cmd, field) => (field === 'command' ? 'Error: Missing required parameter `command`' : `Error: Missing required parameter \`${field}\` for command \`${cmd}\``);

test('wrong types in every field of every command (both request forms): 400 with a clear message, nothing changed', async (t) => {
  let checked = 0;
  await underAttack(t, 'types', async () => {
    const send = async (cmd, id) => {
      const body = id === undefined ? cmd : { type: 'tool_use', id, name: 'memory', input: cmd };
      const r = await postOnce(srv.port, body, { tenant: 'hostile' });
      checked++;
      return { status: r.status, json: r.json };
    };
    for (const [name, base] of Object.entries(BASE)) {
      for (const field of Object.keys(base)) {
        const kind = KIND[field];
        for (const id of [undefined, `toolu_${name}_${field}`]) {
          for (const v of WRONG[kind]) {
            assert.deepEqual(await send({ ...base, [field]: v }, id), { status: 400, json: result(wrongTypeMessage(name, field, kind), true, id) },
              `${name}.${field} = ${JSON.stringify(v)}`);
          }
          const absent = { ...base };
          delete absent[field];
          if (field === 'view_range') {
            // Optional: null or absent means the whole file.
            for (const cmd of [{ ...base, view_range: null }, absent]) {
              const lines = ['one', 'two', 'three', ''];
              assert.deepEqual(await send(cmd, id), { status: 200, json: id === undefined ? fileResult('/memories/notes.txt', lines) : result(fileView('/memories/notes.txt', lines), false, id) });
            }
            continue;
          }
          for (const cmd of [{ ...base, [field]: null }, absent]) {
            assert.deepEqual(await send(cmd, id), { status: 400, json: result(missingMessage(name, field), true, id) }, `${name} without ${field}`);
          }
        }
      }
    }
    // An empty old_str, unknown commands and non-object bodies.
    assert.deepEqual(await send({ ...BASE.str_replace, old_str: '' }), { status: 400, json: result('Error: Parameter `old_str` must not be empty', true) });
    for (const c of ['VIEW', 'view ', '', 'drop table entries', 'str-replace']) {
      assert.deepEqual(await send({ ...BASE.delete, command: c }), { status: 400, json: result(`Error: ${c} not implemented`, true) });
    }
    for (const body of ['[]', '"view"', '42', 'null', 'true', '[{"command":"delete","path":"/memories/notes.txt"}]']) {
      assert.deepEqual(await postRaw(body), { status: 400, json: result('Error: The request body must be a JSON object', true) }, body);
    }
    // The tool_use block's own fields.
    const input = BASE.delete;
    const unsupported = 'Error: Unsupported request: send a memory command object ({"command": ...}) or a tool_use block ({"type": "tool_use", ...})';
    for (const type of [1, true, [], {}, 'tool_result', 'TOOL_USE']) {
      assert.deepEqual(await postRaw(JSON.stringify({ type, id: 'x', name: 'memory', input })), { status: 400, json: result(unsupported, true) }, `type ${JSON.stringify(type)}`);
    }
    for (const id of [null, 1, true, [], {}, ['x']]) {
      assert.deepEqual(await postRaw(JSON.stringify({ type: 'tool_use', id, name: 'memory', input })),
        { status: 400, json: result('Error: A tool_use block needs a string `id`', true) }, `id ${JSON.stringify(id)}`);
    }
    for (const [name, shown] of [[1, ''], [true, ''], [[], ''], [{}, ''], ['Memory', 'Memory'], ['memory ', 'memory ']]) {
      assert.deepEqual(await postRaw(JSON.stringify({ type: 'tool_use', id: 'x', name, input })),
        { status: 400, json: result(`Error: Tool '${shown}' not found`, true, 'x') }, `name ${JSON.stringify(name)}`);
    }
    for (const inp of [null, 'x', 1, true, [], [input]]) {
      assert.deepEqual(await postRaw(JSON.stringify({ type: 'tool_use', id: 'x', name: 'memory', input: inp })),
        { status: 400, json: result('Error: A tool_use block needs an object `input`', true, 'x') }, `input ${JSON.stringify(inp)}`);
    }
  });
  t.diagnostic(`${checked} wrong-type requests checked`);
  assert.deepEqual(await tree(), FIXTURE);
});

// ------------------------------------------------------------------ hang-ups and pipelining

test('clients that hang up right after sending a write: each write happens whole or not at all; memoryd stays healthy', async (t) => {
  await underAttack(t, 'hangup', async () => {
    await Promise.all(Array.from({ length: 40 }, async (_, i) => {
      const body = JSON.stringify({ command: 'create', path: `/memories/h${i}.txt`, file_text: `hung up ${i}\n`.repeat(50) });
      const c = await RawConn.open(srv.port);
      c.write(rawRequest(['POST /memory HTTP/1.1', 'Host: 127.0.0.1', 'X-Tenant-ID: hangup', `Content-Length: ${body.length}`], body));
      if (i % 2) c.sock.resetAndDestroy(); else c.sock.destroy();
    }));
    await sleep(300);
  });
  for (let i = 0; i < 40; i++) {
    const p = `/memories/h${i}.txt`;
    const r = await postOnce(srv.port, { command: 'view', path: p }, { tenant: 'hangup' });
    if (r.status === 404) {
      assert.deepEqual(r.json, result(`The path ${p} does not exist. Please provide a valid path.`, true));
    } else {
      assert.equal(r.status, 200);
      assert.deepEqual(r.json, fileResult(p, [...Array(50).fill(`hung up ${i}`), '']));
    }
  }
});

test('a pipelining client: 30 requests in one write get 30 exact answers, in order', async (t) => {
  await underAttack(t, 'pipeline', async () => {
    const reqs = [];
    const want = [];
    for (let i = 0; i < 10; i++) {
      const p = `/memories/p${i}.txt`;
      for (const [cmd, content] of [
        [{ command: 'create', path: p, file_text: `v${i}` }, `File created successfully at: ${p}`],
        [{ command: 'str_replace', path: p, old_str: `v${i}`, new_str: `w${i}` }, `The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tw${i}`],
        [{ command: 'view', path: p }, fileView(p, [`w${i}`])],
      ]) {
        const body = JSON.stringify(cmd);
        reqs.push(rawRequest(['POST /memory HTTP/1.1', 'Host: 127.0.0.1', 'X-Tenant-ID: pipeline', `Content-Length: ${body.length}`], body));
        want.push(cmd.command === 'view' ? fileResult(p, [`w${i}`]) : result(content, false));
      }
    }
    const c = await RawConn.open(srv.port);
    c.write(Buffer.concat(reqs));
    const got = await c.responses(30, 20000);
    c.destroy();
    assert.deepEqual(got.map((r) => r.status), Array(30).fill(200));
    assert.deepEqual(got.map((r) => JSON.parse(r.text)), want);
  });
});

// ------------------------------------------------------- --max-connections, --connection-timeout

test('--max-connections: beyond it new connections wait unanswered while a keep-alive client still works; idle ones time out', async (t) => {
  // A 3 s timeout leaves a wide margin between "the limit is reached" (checked for 1 s) and
  // "the idle ones time out".
  const limTimeoutS = 3;
  const lim = await start(['--max-connections', '8', '--connection-timeout', String(limTimeoutS), '--threads', '1']);
  await underAttack(t, 'maxconn', async (good) => {
    // The good client holds one connection; 7 idle ones make 8, the limit.
    while (good.requests < 1) await sleep(10);
    const idle = await Promise.all(Array.from({ length: 7 }, () => RawConn.open(lim.port)));
    await sleep(300);
    // Three more: the kernel completes their handshake (libmicrohttpd stops accepting at the
    // limit, so they wait in the listen backlog); none is answered while the limit is reached.
    const extra = await Promise.all(Array.from({ length: 3 }, () => RawConn.open(lim.port)));
    for (const c of extra) c.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const early = await Promise.all(extra.map((c) => c.responses(1, 1000)));
    assert.deepEqual(early.map((r) => r.length), [0, 0, 0], 'a connection beyond --max-connections was served');
    // The idle ones are closed after the timeout; then the waiting ones are accepted and served.
    const idleStates = await Promise.all(idle.map((c) => c.closed(limTimeoutS * 1000 + 10000)));
    for (const s of idleStates) {
      assert.ok(s.closed, 'an idle connection outlived --connection-timeout');
      assert.ok(s.atMs >= limTimeoutS * 1000 - 500, `idle connection closed after ${s.atMs} ms`);
    }
    const late = await Promise.all(extra.map((c) => c.responses(1, 10000)));
    for (const r of late) {
      assert.equal(r.length, 1, 'a waiting connection was never served');
      assert.equal(r[0].status, 200);
      assert.equal(r[0].text, '{"status":"ok"}');
    }
    for (const c of extra) c.destroy();
  }, lim);
});
