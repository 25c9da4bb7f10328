// End to end through the authenticating proxy: the real @anthropic-ai/sdk tool runner, a
// scripted fake Messages API, memorydMemoryTool with `apiKey`, a REAL nginx running the
// committed docker/nginx.conf (tests/deploy/lib/nginx.mjs: Debian's nginx, loopback
// addresses) and a live memoryd behind it as docker/compose.yaml runs it
// (--trusted-proxies <nginx's address> --require-tenant).
//
// Proves: the key decides the tenant (a tenant the client names is overwritten), two keys
// are two separate /memories, a wrong key gets nginx's 401 text; nginx's 429 is retried
// after its Retry-After and every write applied exactly once; with memoryd down, a create
// and a view that get nginx's 502 are retried (the create with its Idempotency-Key) and
// answered once memoryd is up; without a key the create is not resent. (A 502 after memoryd
// applied the write: exactly-once.test.mjs.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { startServer } from '../../../tests/lib/server.mjs';
import { freePort, memorydLogSync, memorydRequests, waitFor } from '../../../tests/deploy/lib/deploy.mjs';
import { startNginx } from '../../../tests/deploy/lib/nginx.mjs';
import { MemorydClient, memorydMemoryTool } from '../dist/index.js';
import { startFakeAnthropic, toolResultsOf } from './lib/fake-anthropic.mjs';

const KEY_A = 'example-key-team-a-do-not-use';
const KEY_B = 'example-key-team-b-do-not-use';
const LISTING = "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:";
const MEMORYD_ARGS = ['--trusted-proxies', '127.0.0.2', '--require-tenant'];

let md; // memoryd
let px; // nginx in front of it
let burstKey; // the key of a tenant whose rate limit only the 429 test uses

before(async () => {
  md = await startServer({ args: MEMORYD_ARGS });
  px = await startNginx({ upstreamPort: md.port });
  // Added (nginx -s reload) before any test connects: a reload closes the old workers'
  // kept-alive connections, and a write sent on one as it closes has an unknown outcome.
  burstKey = await px.addKey('team-burst');
});
after(async () => {
  await px?.stop();
  await md?.stop();
  if (md) fs.rmSync(md.dir, { recursive: true, force: true });
});

const proxyUrl = () => `http://127.0.0.1:${px.port}`;

/** `nginx`'s access log as "tenant status" lines, once it has at least `n` (nginx logs a request after answering it). */
async function accessLog(nginx, n) {
  const lines = () => nginx.accessLog().trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  await waitFor(() => lines().length >= n, `${n} access log lines`);
  return lines();
}
const use = (input) => ({ type: 'tool_use', name: 'memory', input });

/** Runs one scripted session (turns of tool_use inputs) with `tool`; returns each turn's tool_result blocks. */
async function session(tool, turns) {
  const api = await startFakeAnthropic([...turns.map((t) => t.map(use)), [{ type: 'text', text: 'done' }]]);
  try {
    const anthropic = new Anthropic({ apiKey: 'test-key', baseURL: api.url, maxRetries: 0 });
    const final = await anthropic.beta.messages
      .toolRunner({ model: 'claude-opus-4-6', max_tokens: 1024, messages: [{ role: 'user', content: 'x' }], tools: [tool] })
      .runUntilDone();
    assert.deepEqual(final.content, [{ type: 'text', text: 'done' }]);
    assert.equal(api.requests.length, turns.length + 1);
    return turns.map((_, t) => toolResultsOf(api.requests[t + 1]));
  } finally {
    await api.close();
  }
}

const ok = (t, i, content) => ({ type: 'tool_result', tool_use_id: `toolu_${t}_${i}`, content });
const bad = (t, i, content) => ({ type: 'tool_result', tool_use_id: `toolu_${t}_${i}`, content, is_error: true });

test('apiKey through nginx: the key decides the tenant; two keys, two separate /memories; a wrong key gets the 401 text', async () => {
  await memorydLogSync(md);
  const before = memorydRequests(md).length;
  // team-a's key; the tenant the client names is overwritten by nginx with the key's.
  const a = await session(memorydMemoryTool({ baseUrl: proxyUrl(), apiKey: KEY_A, tenant: 'team-b' }), [
    [{ command: 'create', path: '/memories/plan.md', file_text: 'ship it\n' }],
    [{ command: 'view', path: '/memories' }, { command: 'create', path: '/memories/plan.md', file_text: 'again\n' }],
  ]);
  assert.deepEqual(a, [
    [ok(0, 0, 'File created successfully at: /memories/plan.md')],
    [ok(1, 0, `${LISTING}\n8B\t/memories\n8B\t/memories/plan.md`), bad(1, 1, 'Error: File /memories/plan.md already exists')],
  ]);
  const b = await session(memorydMemoryTool({ baseUrl: proxyUrl(), apiKey: KEY_B }), [
    [{ command: 'view', path: '/memories' }, { command: 'view', path: '/memories/plan.md' }],
  ]);
  assert.deepEqual(b, [[
    ok(0, 0, `${LISTING}\n0B\t/memories`),
    bad(0, 1, 'The path /memories/plan.md does not exist. Please provide a valid path.'),
  ]]);
  const wrong = await session(memorydMemoryTool({ baseUrl: proxyUrl(), apiKey: 'not-a-key' }), [[{ command: 'view', path: '/memories' }]]);
  assert.deepEqual(wrong, [[bad(0, 0, 'Error: Unauthorized: send the header Authorization: Bearer <API key>')]]);

  // What memoryd served (the calls of one turn run concurrently: compared sorted); the wrong
  // key's request never reached it.
  await memorydLogSync(md);
  const served = memorydRequests(md).slice(before).map((l) => `${l.tenant} ${l.command} ${l.status}`);
  assert.deepEqual(served.sort(), ['team-a create 200', 'team-a create 409', 'team-a view 200', 'team-b view 200', 'team-b view 404']);
});

test('nginx\'s 429 (per-tenant limit, Retry-After: 1): the runner\'s parallel writes are retried and each applied exactly once', async () => {
  const key = burstKey; // a tenant with a fresh limit
  const N = 30; // one turn of 30 creates: nginx serves 1 + burst 20 at once, then refuses
  const calls = Array.from({ length: N }, (_, i) => ({ command: 'create', path: `/memories/n${String(i).padStart(2, '0')}.md`, file_text: `note ${i}\n` }));
  const retried = [];
  await memorydLogSync(md);
  const before = memorydRequests(md).length;
  const t0 = Date.now();
  const [results] = await session(memorydMemoryTool({ baseUrl: proxyUrl(), apiKey: key, onRetry: (e) => retried.push(e) }), [calls]);
  const ms = Date.now() - t0;
  assert.deepEqual(results, calls.map((c, i) => ok(0, i, `File created successfully at: ${c.path}`)));

  // Every retry was a 429 from nginx, after its Retry-After (1 s, under the 5 s cap). At
  // least N - 21 when the 30 requests reach nginx within its 100 ms per token; fewer when a
  // loaded machine spreads them out, so only some are required.
  assert.ok(retried.length >= 1, `${retried.length} retries`);
  assert.deepEqual([...new Set(retried.map((e) => `${e.command} ${e.reason} ${e.status} ${e.delayMs}`))], ['create rate_limited 429 1000']);
  assert.ok(ms >= 1000, `took ${ms} ms`);
  const refused = (await accessLog(px, 0)).filter((l) => l.tenant === 'team-burst' && l.status === 429);
  assert.equal(refused.length, retried.length, 'one retry per 429');
  // memoryd saw each create once: the refused attempts never reached it.
  await memorydLogSync(md);
  const served = memorydRequests(md).slice(before);
  assert.deepEqual(served.map((l) => `${l.tenant} ${l.command} ${l.status}`), Array(N).fill('team-burst create 200'));
  const listing = await new MemorydClient({ baseUrl: proxyUrl(), apiKey: key }).execute({ command: 'view', path: '/memories' });
  assert.equal(listing.content.split('\n').length, 2 + N);
});

test('memoryd down behind nginx: a write without a key that gets nginx\'s 502 is sent once; a keyed create and a view are retried and answered once memoryd is up', async () => {
  // A second nginx whose upstream is a gate on the test's side: while shut, it closes every
  // connection nginx makes at once (nginx answers 502, as with no memoryd there); opened, it
  // joins each to a memoryd, from nginx's address (the proxy memoryd trusts). The memoryd that answers a retry is started before the session
  // and the client's onRetry (called before the backoff) opens the gate to it: however slow
  // its start on a busy machine, it is up before the retry, which the test must not race.
  const port = await freePort();
  let upstream = null;
  const gate = net.createServer((c) => {
    if (!upstream) return c.destroy();
    const u = net.connect({ port: upstream, host: '127.0.0.1', localAddress: '127.0.0.2' }); // nginx's address
    c.on('error', () => u.destroy());
    u.on('error', () => c.destroy());
    c.pipe(u).pipe(c);
  });
  await new Promise((resolve) => gate.listen(port, '127.0.0.1', resolve));
  const px2 = await startNginx({ upstreamPort: port });
  const gw = `http://127.0.0.1:${px2.port}`;
  const servers = [];
  const startBehindGate = async (db) => {
    const srv = startServer({ db, args: MEMORYD_ARGS });
    servers.push(srv);
    return srv;
  };
  const gateway = async (n) => (await accessLog(px2, n)).map((l) => `${l.tenant} ${l.status}`);
  try {
    // Without a key (idempotencyKeys: false): sent once, its outcome unknown.
    const old = await session(memorydMemoryTool({ baseUrl: gw, apiKey: KEY_A, idempotencyKeys: false }), [
      [{ command: 'create', path: '/memories/a.md', file_text: 'x' }],
    ]);
    assert.deepEqual(old, [[bad(0, 0,
      'Error: The memory service answered the create command with HTTP 502 Bad Gateway, a gateway\'s error: "Error: memoryd is unavailable (bad gateway). Retry shortly." ' +
      'It is unknown whether the command was applied: view /memories/a.md to check before retrying.')]]);
    assert.deepEqual(await gateway(1), ['team-a 502'], 'the create was sent once');

    // With its key (the default): the first attempt gets the 502; memoryd comes up behind the
    // gate during the backoff (Retry-After: 1), and the second attempt is applied.
    const retried = [];
    const late = await startBehindGate();
    const created = await session(
      memorydMemoryTool({ baseUrl: gw, apiKey: KEY_A, onRetry: (e) => { retried.push(e); upstream = late.port; } }),
      [[{ command: 'create', path: '/memories/a.md', file_text: 'x' }]],
    );
    assert.deepEqual(created, [[ok(0, 0, 'File created successfully at: /memories/a.md')]]);
    assert.deepEqual(retried.map((e) => [e.command, e.attempt, e.reason, e.status, e.delayMs]), [['create', 1, 'bad_gateway', 502, 1000]]);
    assert.match(retried[0].idempotencyKey, /^mdc-/);
    assert.deepEqual(await gateway(3), ['team-a 502', 'team-a 502', 'team-a 200']);
    const srv = late;
    await memorydLogSync(srv);
    assert.deepEqual(memorydRequests(srv).map((l) => `${l.tenant} ${l.command} ${l.status}`), ['team-a create 200']);

    // memoryd stops; a view gets nginx's 502, is retried, and is answered by a memoryd started
    // on the same database, behind the gate opened during the backoff.
    await srv.stop();
    upstream = null;
    const retriedView = [];
    const later = await startBehindGate(srv.dbPath);
    const view = await session(
      memorydMemoryTool({ baseUrl: gw, apiKey: KEY_A, onRetry: (e) => { retriedView.push(e); upstream = later.port; } }),
      [[{ command: 'view', path: '/memories' }]],
    );
    assert.deepEqual(view, [[ok(0, 0, `${LISTING}\n1B\t/memories\n1B\t/memories/a.md`)]]);
    assert.deepEqual(retriedView.map((e) => [e.command, e.attempt, e.reason, e.status, e.delayMs, e.idempotencyKey]), [['view', 1, 'bad_gateway', 502, 1000, undefined]]);
    assert.deepEqual((await gateway(5)).slice(3), ['team-a 502', 'team-a 200']);
    await memorydLogSync(later);
    assert.deepEqual(memorydRequests(later).map((l) => `${l.tenant} ${l.command} ${l.status}`), ['team-a view 200']);
  } finally {
    await px2.stop();
    gate.close();
    for (const p of servers) {
      const srv = await p;
      await srv.stop({ expectCode: null });
      fs.rmSync(srv.dir, { recursive: true, force: true });
    }
  }
});
