// A write whose answer is lost is retried with its Idempotency-Key and applied exactly once,
// against a REAL memoryd (SQLite database), with the failure made at an exact point by a
// relay (test/lib/relay.mjs) between the client (or nginx) and memoryd:
//
// - through a REAL nginx running the committed docker/nginx.conf (tests/deploy/lib/nginx.mjs):
//   memoryd applies an insert, its answer is lost between memoryd and nginx, nginx answers
//   502; the client retries with the same key and gets the first answer (replayed);
// - memoryd SIGKILLed after it committed the insert (and answered), and restarted on the same
//   database and port: the retry is answered from the key, not applied again;
// - memoryd SIGKILLed while it was reading the request (before any commit), and restarted:
//   the retry applies it, once;
// - memoryd killed and not back before the retries run out: the unknown-outcome error carries
//   the key, and the caller settles the outcome later with it (the first answer, replayed);
// - a key reused with another command: memoryd's 422, returned at once, never retried;
// - with idempotencyKeys: false, the old policy: the write is sent once, its outcome unknown.
//
// "Applied once" is checked in memoryd itself: the file's content (one inserted line) and the
// change feed (GET /v1/changes?after=0: one entry per applied write).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startServer } from '../../../tests/lib/server.mjs';
import { memorydLogSync, memorydRequests, waitFor } from '../../../tests/deploy/lib/deploy.mjs';
import { startNginx } from '../../../tests/deploy/lib/nginx.mjs';
import { MemorydClient, MemorydError } from '../dist/index.js';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import { startRelay } from './lib/relay.mjs';

const KEY_A = 'example-key-team-a-do-not-use'; // docker/tenants.map: team-a
const FILE = '/memories/todo.md';
const CREATE = { command: 'create', path: FILE, file_text: 'one\ntwo\n' };
const INSERT = { command: 'insert', path: FILE, insert_line: 0, insert_text: 'top\n' };
const EDITED = `The file ${FILE} has been edited.`;
const ONCE = `Here's the content of ${FILE} with line numbers:\n     1\ttop\n     2\tone\n     3\ttwo\n     4\t`;
const KEY_RE = /^mdc-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const cleanup = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

/** A memoryd on a fresh database (stopped and removed after the tests); `args` added. */
async function memoryd(args = []) {
  const md = await startServer({ args });
  cleanup.push(async () => {
    await md.stop({ expectCode: null });
    fs.rmSync(md.dir, { recursive: true, force: true });
  });
  return md;
}

/** Another memoryd on `md`'s database and port (after `md` was killed). */
async function restart(md) {
  const again = await startServer({ db: md.dbPath, args: ['--port', String(md.port)] });
  cleanup.push(() => again.stop({ expectCode: null }));
  return again;
}

/** What memoryd holds for `tenant`: the file as a view shows it, and the change feed's commands. */
async function state(md, tenant) {
  const view = await md.post({ command: 'view', path: FILE }, { tenant });
  const feed = await md.request('GET', '/v1/changes?after=0', { headers: { 'x-tenant-id': tenant } });
  assert.equal(feed.status, 200, feed.text);
  return { file: view.json.content, changes: feed.json.changes.map((c) => `${c.command} ${c.paths.join(' ')}`) };
}

async function seed(md, tenant) {
  const r = await md.post(CREATE, { tenant });
  assert.equal(r.status, 200, r.text);
}

function retryLog() {
  const events = [];
  return { events, onRetry: (e) => events.push(e) };
}

test('nginx answers 502 after memoryd applied the insert (its answer lost on the way back): retried with the same key, applied once, the first answer replayed', async () => {
  const md = await memoryd(['--require-tenant']);
  await seed(md, 'team-a');
  const relay = await startRelay({ upstreamPort: md.port, plan: (n) => (n === 0 ? { lose: 'answer' } : 'pass') });
  cleanup.push(() => relay.close());
  const px = await startNginx({ upstreamPort: relay.port });
  cleanup.push(() => px.stop());

  const log = retryLog();
  const client = new MemorydClient({ baseUrl: `http://127.0.0.1:${px.port}`, apiKey: KEY_A, maxRetryDelayMs: 100, onRetry: log.onRetry });
  const result = await client.execute(INSERT);
  assert.deepEqual(result, { content: EDITED, isError: false, status: 200, replayed: true });

  // Two attempts, one key, the same body; memoryd applied the first (its answer, lost, is
  // the one the client got) and answered the second from the key.
  const [first, second] = relay.exchanges;
  assert.equal(relay.exchanges.length, 2);
  const key = first.headers['idempotency-key'];
  assert.match(key, KEY_RE);
  assert.equal(second.headers['idempotency-key'], key);
  assert.equal(second.body, first.body);
  assert.deepEqual(JSON.parse(first.body), INSERT);
  assert.equal(first.headers['x-tenant-id'], 'team-a', 'nginx set the tenant');
  assert.deepEqual([first.answer.status, JSON.parse(first.answer.body).content, first.answer.headers['idempotent-replayed']], [200, EDITED, undefined]);
  assert.deepEqual([second.answer.status, second.answer.body, second.answer.headers['idempotent-replayed']], [200, first.answer.body, 'true']);
  // nginx's 502 (Retry-After: 1, capped at 100 ms), retried once.
  assert.deepEqual(log.events, [{ command: 'insert', attempt: 1, reason: 'bad_gateway', status: 502, delayMs: 100, idempotencyKey: key }]);
  await waitFor(() => px.accessLog().trim().split('\n').length >= 2, 'two access log lines');
  assert.deepEqual(px.accessLog().trim().split('\n').map((l) => JSON.parse(l)).map((l) => `${l.tenant} ${l.status}`), ['team-a 502', 'team-a 200']);

  assert.deepEqual(await state(md, 'team-a'), { file: ONCE, changes: [`create ${FILE}`, `insert ${FILE}`] });
  await memorydLogSync(md);
  assert.deepEqual(memorydRequests(md, 'team-a').map((l) => `${l.command} ${l.status}`), ['create 200', 'insert 200', 'insert 200', 'view 200']);

  // The old policy, idempotencyKeys: false: the same failure is an unknown outcome, the
  // insert sent once (and applied: memoryd's answer was lost).
  const relay2 = await startRelay({ upstreamPort: md.port, plan: (n) => (n === 0 ? { lose: 'answer' } : 'pass') });
  cleanup.push(() => relay2.close());
  const px2 = await startNginx({ upstreamPort: relay2.port });
  cleanup.push(() => px2.stop());
  const old = new MemorydClient({ baseUrl: `http://127.0.0.1:${px2.port}`, apiKey: KEY_A, idempotencyKeys: false, maxRetryDelayMs: 100 });
  const e = await old.execute(INSERT).then(() => assert.fail('resolved'), (x) => x);
  assert.ok(e instanceof MemorydError);
  assert.deepEqual([e.kind, e.status, e.outcomeUnknown, e.attempts, e.idempotencyKey], ['unexpected_response', 502, true, 1, undefined]);
  assert.equal(
    e.content,
    'Error: The memory service answered the insert command with HTTP 502 Bad Gateway, a gateway\'s error: "Error: memoryd is unavailable (bad gateway). Retry shortly." ' +
      `It is unknown whether the command was applied: view ${FILE} to check before retrying.`,
  );
  assert.equal(relay2.exchanges.length, 1);
  assert.equal(relay2.exchanges[0].headers['idempotency-key'], undefined);
  assert.equal(relay2.exchanges[0].answer.status, 200);
  assert.equal((await state(md, 'team-a')).changes.length, 3, 'applied, unknown to the client');
});

test('memoryd SIGKILLed after it committed the insert, restarted on the same database: the retry is answered from the key, not applied again', async () => {
  let md = await memoryd();
  await seed(md, 'k1');
  const relay = await startRelay({
    upstreamPort: md.port,
    plan: (n) =>
      n === 0
        ? {
            lose: 'answer', // memoryd answered: the insert is committed
            after: async () => {
              const killed = await md.kill();
              assert.equal(killed.signal, 'SIGKILL');
              md = await restart(md);
            },
          }
        : 'pass',
  });
  cleanup.push(() => relay.close());
  const first = md;

  const log = retryLog();
  const client = new MemorydClient({ baseUrl: relay.url, tenant: 'k1', retryDelayMs: 20, onRetry: log.onRetry });
  assert.deepEqual(await client.execute(INSERT), { content: EDITED, isError: false, status: 200, replayed: true });

  assert.notEqual(md, first, 'a new memoryd answered');
  const [a, b] = relay.exchanges;
  assert.equal(relay.exchanges.length, 2);
  assert.match(a.headers['idempotency-key'], KEY_RE);
  assert.equal(b.headers['idempotency-key'], a.headers['idempotency-key']);
  assert.equal(a.answer.status, 200);
  assert.equal(b.answer.headers['idempotent-replayed'], 'true');
  assert.deepEqual(log.events.map((e) => [e.reason, e.idempotencyKey]), [['connection_lost', a.headers['idempotency-key']]]);
  assert.deepEqual(await state(md, 'k1'), { file: ONCE, changes: [`create ${FILE}`, `insert ${FILE}`] });
});

test('memoryd SIGKILLed while reading the request (nothing committed), restarted: the retry applies the insert, once', async () => {
  let md = await memoryd();
  await seed(md, 'k2');
  const relay = await startRelay({
    upstreamPort: md.port,
    plan: (n) =>
      n === 0
        ? {
            lose: 'request', // memoryd has all of it but the last byte
            after: async () => {
              await md.kill();
              md = await restart(md);
            },
          }
        : 'pass',
  });
  cleanup.push(() => relay.close());

  const log = retryLog();
  const client = new MemorydClient({ baseUrl: relay.url, tenant: 'k2', retryDelayMs: 20, onRetry: log.onRetry });
  assert.deepEqual(await client.execute(INSERT), { content: EDITED, isError: false, status: 200, replayed: false });
  const [a, b] = relay.exchanges;
  assert.equal(relay.exchanges.length, 2);
  assert.equal(a.answer, undefined, 'the first attempt got no answer');
  assert.equal(b.headers['idempotency-key'], a.headers['idempotency-key']);
  assert.equal(b.answer.headers['idempotent-replayed'], undefined);
  assert.deepEqual(log.events.map((e) => e.reason), ['connection_lost']);
  assert.deepEqual(await state(md, 'k2'), { file: ONCE, changes: [`create ${FILE}`, `insert ${FILE}`] });
});

test('memoryd killed after the commit and not back before the retries run out: the unknown-outcome error carries the key, which settles it later without a second insert', async () => {
  let md = await memoryd();
  await seed(md, 'k3');
  const relay = await startRelay({ upstreamPort: md.port, plan: (n) => (n === 0 ? { lose: 'answer', after: () => md.kill() } : 'pass') });
  cleanup.push(() => relay.close());

  const client = new MemorydClient({ baseUrl: relay.url, tenant: 'k3', retryDelayMs: 5 });
  const e = await client.execute(INSERT).then(() => assert.fail('resolved'), (x) => x);
  assert.ok(e instanceof MemorydError && e instanceof ToolError);
  assert.deepEqual([e.kind, e.outcomeUnknown, e.attempts], ['connection_lost', true, 3]);
  assert.match(e.idempotencyKey, KEY_RE);
  assert.match(
    e.content,
    /^Error: The connection to the memory service failed \(.+\) before it answered the insert command \(tried 3 times\)\. It is unknown whether the command was applied: view \/memories\/todo\.md to check before retrying\.$/,
  );
  assert.equal(relay.exchanges.length, 3);
  assert.ok(relay.exchanges.every((x) => x.headers['idempotency-key'] === e.idempotencyKey));
  assert.deepEqual(relay.exchanges.slice(1).map((x) => x.upstreamError), ['ECONNREFUSED', 'ECONNREFUSED']);

  // memoryd is back: the same command with the same key gets the first answer, replayed.
  md = await restart(md);
  const settled = await client.execute(INSERT, { idempotencyKey: e.idempotencyKey });
  assert.deepEqual(settled, { content: EDITED, isError: false, status: 200, replayed: true });
  assert.equal(relay.exchanges[3].headers['idempotency-key'], e.idempotencyKey);
  assert.deepEqual(await state(md, 'k3'), { file: ONCE, changes: [`create ${FILE}`, `insert ${FILE}`] });
});

test('a key reused with another command: memoryd\'s 422, returned once and never retried; the same command with it is a replay', async () => {
  const md = await memoryd();
  await seed(md, 'k4');
  const log = retryLog();
  const client = new MemorydClient({ baseUrl: md.url, tenant: 'k4', retryDelayMs: 5, onRetry: log.onRetry });
  const key = 'harness-call-7f3a';

  assert.deepEqual(await client.execute(INSERT, { idempotencyKey: key }), { content: EDITED, isError: false, status: 200, replayed: false });
  const other = { ...INSERT, insert_text: 'other\n' };
  const REUSED = 'Error: This Idempotency-Key was already used for another request (a different body, path or precondition); a new request needs a new key.';
  assert.deepEqual(await client.execute(other, { idempotencyKey: key }), { content: REUSED, isError: true, status: 422, replayed: false });
  assert.deepEqual(await client.execute(INSERT, { idempotencyKey: key }), { content: EDITED, isError: false, status: 200, replayed: true });
  // The same key in another tenant is another key.
  await seed(md, 'k5');
  const k5 = new MemorydClient({ baseUrl: md.url, tenant: 'k5' });
  assert.deepEqual(await k5.execute(INSERT, { idempotencyKey: key }), { content: EDITED, isError: false, status: 200, replayed: false });

  assert.deepEqual(log.events, []);
  await memorydLogSync(md);
  assert.deepEqual(memorydRequests(md, 'k4').map((l) => `${l.command} ${l.status}`), ['create 200', 'insert 200', 'insert 422', 'insert 200']);
  assert.deepEqual(await state(md, 'k4'), { file: ONCE, changes: [`create ${FILE}`, `insert ${FILE}`] });
});
