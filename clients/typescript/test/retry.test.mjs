// The retry policy and transport handling of MemorydClient against a fake
// memoryd (node:http): exact attempt counts; a write sent again only with its
// Idempotency-Key (one per call, the same on every attempt) once it may have
// reached memoryd, and never without one (idempotencyKeys: false). That memoryd
// then applies it once is proven against the real one in exactly-once.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import { MemorydClient, MemorydError, createMemorydHandlers } from '../dist/index.js';
import { startFakeMemoryd, closedPort, toolResult, OVERLOADED } from './lib/fake-memoryd.mjs';

const CREATE = { command: 'create', path: '/memories/a.md', file_text: 'hello\n' };
const VIEW = { command: 'view', path: '/memories' };
const WRITES = [
  CREATE,
  { command: 'str_replace', path: '/memories/a.md', old_str: 'hello', new_str: 'bye' },
  { command: 'insert', path: '/memories/a.md', insert_line: 0, insert_text: 'top\n' },
  { command: 'delete', path: '/memories/a.md' },
  { command: 'rename', old_path: '/memories/a.md', new_path: '/memories/b.md' },
];
const LISTING = "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories";
const PROXY_PAGE = (status, title) => ({
  status,
  type: 'text/html',
  text: `<html>\n<head><title>${status} ${title}</title></head>\n<body>\n<center><h1>${status} ${title}</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>\n`,
});

// docker/nginx.conf's own answers: memoryd's shape (a tool_result body, X-Memory-Is-Error),
// so a body alone does not tell them from memoryd's. Exact copies of its `return` lines.
const NGINX = {
  401: '{"type":"tool_result","content":"Error: Unauthorized: send the header Authorization: Bearer <API key>","is_error":true}',
  413: '{"type":"tool_result","content":"Error: The request body exceeds the limit of 4194304 bytes","is_error":true}',
  429: '{"type":"tool_result","content":"Error: Too many requests; the command was not applied. Retry shortly.","is_error":true}',
  502: '{"type":"tool_result","content":"Error: memoryd is unavailable (bad gateway). Retry shortly.","is_error":true}',
  504: '{"type":"tool_result","content":"Error: memoryd did not answer in time; the command may or may not have been applied.","is_error":true}',
};
const nginxAnswer = (status) => ({
  status,
  type: 'application/json',
  text: NGINX[status],
  headers: { 'x-memory-is-error': 'true', ...(status === 429 || status === 502 ? { 'retry-after': '1' } : {}) },
});
const nginxResult = (status) => ({ content: JSON.parse(NGINX[status]).content, isError: true, status, replayed: false });
const KEY_RE = /^mdc-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const where = (command) => (command.command === 'rename' ? '/memories/a.md and /memories/b.md' : '/memories/a.md');

/** The Idempotency-Key of each request `fake` got, in order. */
const keysOf = (fake) => fake.requests.map((r) => r.headers['idempotency-key']);

/** A client with fast backoff that records its retries. */
function clientFor(url, options = {}) {
  const retries = [];
  const client = new MemorydClient({ baseUrl: url, retryDelayMs: 5, onRetry: (e) => retries.push(e), ...options });
  return { client, retries };
}

/** Runs `fn`, which must reject with a MemorydError; returns it. */
async function memorydError(fn) {
  try {
    await fn();
  } catch (e) {
    assert.ok(e instanceof MemorydError, `expected a MemorydError, got ${e}`);
    assert.ok(e instanceof ToolError, 'a MemorydError is the SDK ToolError');
    assert.equal(e.content, e.message);
    assert.match(e.content, /^Error: /);
    return e;
  }
  assert.fail('expected a rejection');
}

async function withFake(handler, fn) {
  const fake = await startFakeMemoryd(handler);
  try {
    return await fn(fake);
  } finally {
    await fake.close();
  }
}

test('503 from memoryd, then 200: the write is sent again and succeeds', () =>
  withFake(
    (req, n) => (n === 0 ? { status: 503, json: toolResult(OVERLOADED, true), headers: { 'retry-after': '0' } } : { status: 200, json: toolResult('File created successfully at: /memories/a.md') }),
    async (fake) => {
      const { client, retries } = clientFor(fake.url);
      assert.deepEqual(await client.execute(CREATE), { content: 'File created successfully at: /memories/a.md', isError: false, status: 200, replayed: false });
      assert.equal(fake.requests.length, 2);
      assert.equal(fake.requests[1].body, fake.requests[0].body);
      const [key, again] = keysOf(fake);
      assert.match(key, KEY_RE);
      assert.equal(again, key);
      assert.deepEqual(retries, [{ command: 'create', attempt: 1, reason: 'unavailable', status: 503, delayMs: 0, idempotencyKey: key }]);
    },
  ));

test('503 every time: 1 + retries attempts, then memoryd\'s own 503 text, verbatim', () =>
  withFake(
    () => ({ status: 503, json: toolResult(OVERLOADED, true), headers: { 'retry-after': '0' } }),
    async (fake) => {
      const { client, retries } = clientFor(fake.url);
      assert.deepEqual(await client.execute(CREATE), { content: OVERLOADED, isError: true, status: 503, replayed: false });
      assert.equal(fake.requests.length, 3);
      assert.deepEqual(retries.map((r) => [r.attempt, r.reason]), [[1, 'unavailable'], [2, 'unavailable']]);

      // Through the tool handlers: a ToolError carrying exactly that text.
      const handlers = createMemorydHandlers({ baseUrl: fake.url, retries: 4, retryDelayMs: 1 });
      await assert.rejects(handlers.create(CREATE), (e) => e instanceof ToolError && !(e instanceof MemorydError) && e.content === OVERLOADED);
      assert.equal(fake.requests.length, 3 + 5);

      const none = clientFor(fake.url, { retries: 0 });
      assert.equal((await none.client.execute(VIEW)).status, 503);
      assert.equal(fake.requests.length, 3 + 5 + 1);
      assert.deepEqual(none.retries, []);
    },
  ));

test('Retry-After is honoured, up to maxRetryDelayMs', async () => {
  const answer = (retryAfter) => (req, n) =>
    n === 0 ? { status: 503, json: toolResult(OVERLOADED, true), headers: { 'retry-after': retryAfter } } : { status: 200, json: toolResult(LISTING) };

  await withFake(answer('1'), async (fake) => {
    const { client, retries } = clientFor(fake.url);
    const t0 = Date.now();
    assert.equal((await client.execute(VIEW)).content, LISTING);
    assert.ok(Date.now() - t0 >= 950, `waited ${Date.now() - t0} ms`);
    assert.equal(retries[0].delayMs, 1000);
  });
  await withFake(answer('3600'), async (fake) => {
    const { client, retries } = clientFor(fake.url, { maxRetryDelayMs: 40 });
    const t0 = Date.now();
    assert.equal((await client.execute(CREATE)).content, LISTING);
    assert.ok(Date.now() - t0 < 2000);
    assert.equal(retries[0].delayMs, 40);
  });
  await withFake(answer(new Date(Date.now() - 5000).toUTCString()), async (fake) => {
    const { client, retries } = clientFor(fake.url);
    await client.execute(VIEW);
    assert.equal(retries[0].delayMs, 0, 'an HTTP-date in the past means now');
  });
});

test('connection refused: every command is retried (it was never sent), then a clear error', async () => {
  const port = await closedPort();
  for (const command of [VIEW, ...WRITES]) {
    const { client, retries } = clientFor(`http://127.0.0.1:${port}`);
    const e = await memorydError(() => client.execute(command));
    assert.equal(e.kind, 'connection_refused');
    assert.equal(e.outcomeUnknown, false);
    assert.equal(e.attempts, 3);
    assert.equal(
      e.content,
      `Error: Could not connect to the memory service: connection refused (tried 3 times); the ${command.command} command was not applied. Try again later.`,
    );
    assert.deepEqual(retries.map((r) => [r.command, r.attempt, r.reason]), [[command.command, 1, 'connection_refused'], [command.command, 2, 'connection_refused']]);
  }
});

test('connection refused, then memoryd comes up during the backoff: the write goes through once', async () => {
  const port = await closedPort();
  let fake;
  const client = new MemorydClient({
    baseUrl: `http://127.0.0.1:${port}`,
    retryDelayMs: 400,
    onRetry: () => {
      fake ??= startFakeMemoryd(() => ({ status: 200, json: toolResult('File created successfully at: /memories/a.md') }), { port });
    },
  });
  try {
    assert.equal((await client.execute(CREATE)).content, 'File created successfully at: /memories/a.md');
    assert.equal((await fake).requests.length, 1);
  } finally {
    await (await fake)?.close();
  }
});

test('timeout: view and keyed writes are retried (one key per call), then an unknown outcome for a write; without keys a write is sent once', () =>
  withFake(
    () => ({ hang: true }),
    async (fake) => {
      const { client, retries } = clientFor(fake.url, { timeoutMs: 100 });
      const e = await memorydError(() => client.execute(VIEW));
      assert.equal(e.kind, 'timeout');
      assert.equal(e.content, 'Error: The memory service did not answer the view command within 100 ms (tried 3 times). Try again later.');
      assert.equal(e.idempotencyKey, undefined);
      assert.equal(fake.requests.length, 3);
      assert.deepEqual(keysOf(fake), [undefined, undefined, undefined], 'no key for a read');
      assert.deepEqual(retries.map((r) => r.reason), ['timeout', 'timeout']);

      const seen = new Set();
      for (const command of WRITES) {
        const before = fake.requests.length;
        const w = await memorydError(() => client.execute(command));
        const sent = fake.requests.slice(before);
        assert.equal(sent.length, 3, `${command.command} was sent 3 times`);
        assert.ok(sent.every((r) => r.body === JSON.stringify(command)));
        assert.match(w.idempotencyKey, KEY_RE);
        assert.deepEqual(sent.map((r) => r.headers['idempotency-key']), [w.idempotencyKey, w.idempotencyKey, w.idempotencyKey]);
        assert.ok(!seen.has(w.idempotencyKey), 'a new key for each call');
        seen.add(w.idempotencyKey);
        assert.deepEqual([w.kind, w.outcomeUnknown, w.attempts], ['timeout', true, 3]);
        assert.equal(
          w.content,
          `Error: The memory service did not answer the ${command.command} command within 100 ms (tried 3 times). It is unknown whether the command was applied: view ${where(command)} to check before retrying.`,
        );
      }
      assert.deepEqual(retries.slice(2).map((r) => [r.command, r.attempt, r.reason, r.idempotencyKey !== undefined]), WRITES.flatMap((c) => [[c.command, 1, 'timeout', true], [c.command, 2, 'timeout', true]]));

      // idempotencyKeys: false: the old policy, a write is sent once.
      const old = clientFor(fake.url, { timeoutMs: 100, idempotencyKeys: false });
      for (const command of WRITES) {
        const before = fake.requests.length;
        const w = await memorydError(() => old.client.execute(command));
        assert.equal(fake.requests.length, before + 1, `${command.command} was sent exactly once`);
        assert.equal(fake.requests[before].headers['idempotency-key'], undefined);
        assert.deepEqual([w.kind, w.outcomeUnknown, w.attempts, w.idempotencyKey], ['timeout', true, 1, undefined]);
        assert.equal(
          w.content,
          `Error: The memory service did not answer the ${command.command} command within 100 ms. It is unknown whether the command was applied: view ${where(command)} to check before retrying.`,
        );
      }
      assert.deepEqual(old.retries, [], 'no retry for any write');
    },
  ));

test('timeout, then an answer: the keyed write\'s second attempt is answered (a replay, as memoryd marks it)', () =>
  withFake(
    (req, n) =>
      n === 0
        ? { hang: true }
        : { status: 200, json: toolResult('File created successfully at: /memories/a.md'), headers: { 'idempotent-replayed': 'true' } },
    async (fake) => {
      const { client, retries } = clientFor(fake.url, { timeoutMs: 150 });
      assert.deepEqual(await client.execute(CREATE), { content: 'File created successfully at: /memories/a.md', isError: false, status: 200, replayed: true });
      const [key, again] = keysOf(fake);
      assert.match(key, KEY_RE);
      assert.equal(again, key);
      assert.deepEqual(retries.map((r) => [r.reason, r.status, r.idempotencyKey]), [['timeout', undefined, key]]);
    },
  ));

test('connection dropped before the answer (close, reset, half a body): view and keyed writes retried, writes without a key never', async () => {
  for (const drop of [{ destroy: true }, { reset: true }, { partial: true, status: 200, json: toolResult(LISTING) }]) {
    // View: dropped once, answered the second time.
    await withFake(
      (req, n) => (n === 0 ? drop : { status: 200, json: toolResult(LISTING) }),
      async (fake) => {
        const { client, retries } = clientFor(fake.url);
        assert.deepEqual(await client.execute(VIEW), { content: LISTING, isError: false, status: 200, replayed: false });
        assert.equal(fake.requests.length, 2, JSON.stringify(drop));
        assert.deepEqual(retries.map((r) => r.reason), ['connection_lost']);
      },
    );
    // Writes with a key (the default): dropped once, sent again with the same key.
    await withFake(
      (req, n) => (n === 0 ? drop : { status: 200, json: toolResult('File created successfully at: /memories/a.md') }),
      async (fake) => {
        const { client, retries } = clientFor(fake.url);
        assert.deepEqual(await client.execute(CREATE), { content: 'File created successfully at: /memories/a.md', isError: false, status: 200, replayed: false });
        assert.equal(fake.requests.length, 2, JSON.stringify(drop));
        const [key, again] = keysOf(fake);
        assert.match(key, KEY_RE);
        assert.equal(again, key);
        assert.equal(fake.requests[1].body, fake.requests[0].body);
        assert.deepEqual(retries.map((r) => [r.reason, r.idempotencyKey]), [['connection_lost', key]]);
      },
    );
    // Writes without a key: dropped once, never sent again.
    await withFake(
      (req, n) => (n === 0 ? drop : { status: 200, json: toolResult('should not be sent') }),
      async (fake) => {
        const { client, retries } = clientFor(fake.url, { idempotencyKeys: false });
        const e = await memorydError(() => client.execute(CREATE));
        assert.equal(fake.requests.length, 1, JSON.stringify(drop));
        assert.equal(e.kind, 'connection_lost');
        assert.equal(e.outcomeUnknown, true);
        assert.match(
          e.content,
          /^Error: The connection to the memory service failed \((connection closed by the server|connection reset)\) before it answered the create command\. It is unknown whether the command was applied: view \/memories\/a\.md to check before retrying\.$/,
        );
        assert.deepEqual(retries, []);
      },
    );
  }
  // Dropped every time: the keyed write's last error says so, with the key to settle it later.
  await withFake(
    () => ({ destroy: true }),
    async (fake) => {
      const { client } = clientFor(fake.url);
      const e = await memorydError(() => client.execute(CREATE));
      assert.deepEqual([e.kind, e.outcomeUnknown, e.attempts, e.idempotencyKey], ['connection_lost', true, 3, keysOf(fake)[0]]);
      assert.deepEqual(keysOf(fake), [e.idempotencyKey, e.idempotencyKey, e.idempotencyKey]);
      assert.match(
        e.content,
        /^Error: The connection to the memory service failed \(.+\) before it answered the create command \(tried 3 times\)\. It is unknown whether the command was applied: view \/memories\/a\.md to check before retrying\.$/,
      );
    },
  );
});

test('a proxy\'s 502/504: view and keyed writes retried; without a key a write is not (outcome unknown)', async () => {
  await withFake(
    (req, n) => (n === 0 ? PROXY_PAGE(502, 'Bad Gateway') : n === 1 ? PROXY_PAGE(504, 'Gateway Time-out') : { status: 200, json: toolResult(LISTING) }),
    async (fake) => {
      const { client, retries } = clientFor(fake.url);
      assert.equal((await client.execute(VIEW)).content, LISTING);
      assert.equal(fake.requests.length, 3);
      assert.deepEqual(retries.map((r) => [r.reason, r.status]), [['bad_gateway', 502], ['bad_gateway', 504]]);
    },
  );
  await withFake(
    (req, n) => (n === 0 ? PROXY_PAGE(502, 'Bad Gateway') : n === 1 ? PROXY_PAGE(504, 'Gateway Time-out') : { status: 200, json: toolResult('The file /memories/a.md has been edited.') }),
    async (fake) => {
      const { client, retries } = clientFor(fake.url);
      const insert = WRITES[2];
      assert.deepEqual(await client.execute(insert), { content: 'The file /memories/a.md has been edited.', isError: false, status: 200, replayed: false });
      const key = keysOf(fake)[0];
      assert.deepEqual(keysOf(fake), [key, key, key]);
      assert.deepEqual(retries.map((r) => [r.reason, r.status, r.idempotencyKey]), [['bad_gateway', 502, key], ['bad_gateway', 504, key]]);
    },
  );
  await withFake(
    () => PROXY_PAGE(504, 'Gateway Time-out'),
    async (fake) => {
      const { client } = clientFor(fake.url);
      const v = await memorydError(() => client.execute(VIEW));
      assert.equal(fake.requests.length, 3);
      assert.equal(v.status, 504);
      assert.equal(
        v.content,
        'Error: The memory service answered the view command with HTTP 504 Gateway Timeout, which is not a memoryd result (text/html: <html> <head><title>504 Gateway Time-out</title></head> <body> <center><h1>504 Gateway Time-out</h1></center> <hr><center>nginx</center> </body> </html>) (tried 3 times). Try again later.',
      );
      for (const command of WRITES) {
        const before = fake.requests.length;
        const w = await memorydError(() => client.execute(command));
        assert.equal(fake.requests.length, before + 3);
        assert.deepEqual([w.kind, w.status, w.outcomeUnknown, w.attempts], ['unexpected_response', 504, true, 3]);
        assert.deepEqual(keysOf(fake).slice(before), [w.idempotencyKey, w.idempotencyKey, w.idempotencyKey]);
        assert.equal(
          w.content,
          `Error: The memory service answered the ${command.command} command with HTTP 504 Gateway Timeout, which is not a memoryd result (text/html: <html> <head><title>504 Gateway Time-out</title></head> <body> <center><h1>504 Gateway Time-out</h1></center> <hr><center>nginx</center> </body> </html>) (tried 3 times). ` +
            `It is unknown whether the command was applied: view ${where(command)} to check before retrying.`,
        );
      }
      const old = clientFor(fake.url, { idempotencyKeys: false });
      for (const command of WRITES) {
        const before = fake.requests.length;
        const w = await memorydError(() => old.client.execute(command));
        assert.equal(fake.requests.length, before + 1);
        assert.equal(w.kind, 'unexpected_response');
        assert.equal(w.outcomeUnknown, true);
        assert.match(w.content, /^Error: The memory service answered the \w+ command with HTTP 504 Gateway Timeout, which is not a memoryd result \(text\/html: .*\)\. It is unknown whether the command was applied: view \/memories\/a\.md.* to check before retrying\.$/);
      }
      assert.deepEqual(old.retries, []);
    },
  );
  // A 503 page that is not memoryd's (no tool_result): not known to be unapplied, so a write
  // is sent again only with its key.
  await withFake(
    (req, n) => (n === 0 ? PROXY_PAGE(503, 'Service Temporarily Unavailable') : { status: 200, json: toolResult('File created successfully at: /memories/a.md') }),
    async (fake) => {
      const { client, retries } = clientFor(fake.url);
      assert.equal((await client.execute(CREATE)).content, 'File created successfully at: /memories/a.md');
      assert.equal(fake.requests.length, 2);
      assert.deepEqual(retries.map((r) => [r.reason, r.status]), [['bad_gateway', 503]]);
    },
  );
  await withFake(
    () => PROXY_PAGE(503, 'Service Temporarily Unavailable'),
    async (fake) => {
      const { client } = clientFor(fake.url, { idempotencyKeys: false });
      const w = await memorydError(() => client.execute(CREATE));
      assert.equal(fake.requests.length, 1);
      assert.equal(w.outcomeUnknown, true);
    },
  );
});

test('nginx\'s 502/504 in the tool_result shape: the status decides, not the body — view and keyed writes retried (Retry-After honoured), a write without a key not', async () => {
  await withFake(
    (req, n) => (n === 0 ? nginxAnswer(502) : n === 1 ? nginxAnswer(504) : { status: 200, json: toolResult(LISTING) }),
    async (fake) => {
      const { client, retries } = clientFor(fake.url, { maxRetryDelayMs: 30 });
      assert.deepEqual(await client.execute(VIEW), { content: LISTING, isError: false, status: 200, replayed: false });
      assert.equal(fake.requests.length, 3);
      // 502 carries Retry-After: 1 (capped at 30 ms); 504 none: the second backoff (10 ms, 50-100 %).
      assert.deepEqual(retries.map((r) => [r.reason, r.status, r.delayMs >= 5 && r.delayMs <= 10 ? 'backoff' : r.delayMs]), [['bad_gateway', 502, 30], ['bad_gateway', 504, 'backoff']]);
    },
  );
  await withFake(
    () => nginxAnswer(502),
    async (fake) => {
      // The retries run out: the gateway's own tool_result is returned for a view, as memoryd's 503 would be.
      const { client, retries } = clientFor(fake.url, { maxRetryDelayMs: 1 });
      assert.deepEqual(await client.execute(VIEW), nginxResult(502));
      assert.equal(fake.requests.length, 3);
      assert.deepEqual(retries.map((r) => r.reason), ['bad_gateway', 'bad_gateway']);
      const handlers = createMemorydHandlers(client);
      await assert.rejects(handlers.view(VIEW), (e) => e instanceof ToolError && !(e instanceof MemorydError) && e.content === nginxResult(502).content);
    },
  );
  for (const status of [502, 504]) {
    const title = status === 502 ? 'Bad Gateway' : 'Gateway Timeout';
    // With keys: sent 3 times; a write's outcome stays unknown when they run out.
    await withFake(
      () => nginxAnswer(status),
      async (fake) => {
        const { client, retries } = clientFor(fake.url, { maxRetryDelayMs: 1 });
        for (const command of WRITES) {
          const before = fake.requests.length;
          const w = await memorydError(() => client.execute(command));
          assert.equal(fake.requests.length, before + 3, `${command.command} sent 3 times`);
          assert.deepEqual(keysOf(fake).slice(before), [w.idempotencyKey, w.idempotencyKey, w.idempotencyKey]);
          assert.deepEqual([w.kind, w.status, w.outcomeUnknown, w.attempts], ['unexpected_response', status, true, 3]);
          assert.equal(
            w.content,
            `Error: The memory service answered the ${command.command} command with HTTP ${status} ${title}, a gateway's error: "${nginxResult(status).content}" (tried 3 times). ` +
              `It is unknown whether the command was applied: view ${where(command)} to check before retrying.`,
          );
        }
        assert.equal(retries.length, 2 * WRITES.length);
      },
    );
    // Without keys: sent once.
    await withFake(
      () => nginxAnswer(status),
      async (fake) => {
        const { client, retries } = clientFor(fake.url, { idempotencyKeys: false });
        for (const command of WRITES) {
          const before = fake.requests.length;
          const w = await memorydError(() => client.execute(command));
          assert.equal(fake.requests.length, before + 1, `${command.command} sent once`);
          assert.deepEqual([w.kind, w.status, w.outcomeUnknown, w.attempts], ['unexpected_response', status, true, 1]);
          assert.equal(
            w.content,
            `Error: The memory service answered the ${command.command} command with HTTP ${status} ${title}, a gateway's error: "${nginxResult(status).content}" ` +
              `It is unknown whether the command was applied: view ${where(command)} to check before retrying.`,
          );
        }
        assert.deepEqual(retries, []);
      },
    );
  }
});

test('when a keyed write\'s retries run out, an earlier attempt that may have been applied decides: unknown outcome, not "not applied"', async () => {
  const cases = [
    // [the later answers, what the error says happened last]
    [{ status: 503, json: toolResult(OVERLOADED, true), headers: { 'retry-after': '0' } }, `The memory service answered the create command with HTTP 503 Service Unavailable: "${OVERLOADED}"`, 'unexpected_response', 503],
    [nginxAnswer(429), `The memory service answered the create command with HTTP 429 Too Many Requests: "${nginxResult(429).content}"`, 'unexpected_response', 429],
    [PROXY_PAGE(401, 'Authorization Required'), 'The memory service answered the create command with HTTP 401 Unauthorized, which is not a memoryd result (text/html: <html> <head><title>401 Authorization Required</title></head> <body> <center><h1>401 Authorization Required</h1></center> <hr><center>nginx</center> </body> </html>)', 'unexpected_response', 401],
  ];
  for (const [later, said, kind, status] of cases) {
    await withFake(
      (req, n) => (n === 0 ? { destroy: true } : later),
      async (fake) => {
        const { client } = clientFor(fake.url, { maxRetryDelayMs: 1 });
        const e = await memorydError(() => client.execute(CREATE));
        const attempts = status === 401 ? 2 : 3; // the 401 page ends the call at once
        assert.equal(fake.requests.length, attempts);
        assert.deepEqual([e.kind, e.status, e.outcomeUnknown, e.attempts, e.idempotencyKey], [kind, status, true, attempts, keysOf(fake)[0]]);
        assert.equal(
          e.content,
          `Error: ${said} (tried ${attempts} times), after an earlier attempt that may have reached it. It is unknown whether the command was applied: view /memories/a.md to check before retrying.`,
        );
      },
    );
  }
  // memoryd gone after the first attempt (it crashed): refused, refused.
  await withFake(
    () => ({ destroy: true }),
    async (fake) => {
      const client = new MemorydClient({ baseUrl: fake.url, retryDelayMs: 50, onRetry: () => fake.close() });
      const e = await memorydError(() => client.execute(CREATE));
      assert.equal(fake.requests.length, 1);
      assert.deepEqual([e.kind, e.outcomeUnknown, e.attempts], ['connection_refused', true, 3]);
      assert.equal(
        e.content,
        'Error: Could not connect to the memory service: connection refused (tried 3 times), after an earlier attempt that may have reached it. It is unknown whether the command was applied: view /memories/a.md to check before retrying.',
      );
    },
  );
  // Cancelled during the backoff after such an attempt: unknown too, with the key.
  await withFake(
    () => ({ destroy: true }),
    async (fake) => {
      const client = new MemorydClient({ baseUrl: fake.url, retryDelayMs: 5000 });
      const e = await memorydError(() => client.execute(CREATE, { signal: AbortSignal.timeout(200) }));
      assert.equal(fake.requests.length, 1);
      assert.deepEqual([e.kind, e.outcomeUnknown, e.idempotencyKey], ['connection_lost', true, keysOf(fake)[0]]);
    },
  );
});

test('memoryd\'s 422 for a key reused with another command is returned at once, never retried; a replay is reported as one', () =>
  withFake(
    (req, n) =>
      n === 0
        ? { status: 422, json: toolResult('Error: This Idempotency-Key was already used for another request (a different body, path or precondition); a new request needs a new key.', true) }
        : { status: 200, json: toolResult('File created successfully at: /memories/a.md'), headers: { 'idempotent-replayed': 'true' } },
    async (fake) => {
      const { client, retries } = clientFor(fake.url);
      assert.deepEqual(await client.execute(CREATE, { idempotencyKey: 'mine-1' }), {
        content: 'Error: This Idempotency-Key was already used for another request (a different body, path or precondition); a new request needs a new key.',
        isError: true,
        status: 422,
        replayed: false,
      });
      assert.deepEqual(await client.execute(CREATE, { idempotencyKey: 'mine-1' }), { content: 'File created successfully at: /memories/a.md', isError: false, status: 200, replayed: true });
      assert.deepEqual(keysOf(fake), ['mine-1', 'mine-1']);
      assert.deepEqual(retries, []);
    },
  ));

test('Idempotency-Key: a new one for each call of a write, none for view; the caller\'s own (even with idempotencyKeys: false); invalid ones refused', () =>
  withFake(
    () => ({ status: 200, json: toolResult('ok') }),
    async (fake) => {
      const client = new MemorydClient({ baseUrl: fake.url });
      await client.execute(VIEW);
      await client.execute(VIEW, { idempotencyKey: 'ignored-for-view' });
      for (const command of WRITES) await client.execute(command);
      await client.execute(CREATE);
      await client.execute(CREATE, { idempotencyKey: '!~' + 'k'.repeat(253) });
      const off = new MemorydClient({ baseUrl: fake.url, idempotencyKeys: false });
      await off.execute(CREATE);
      await off.execute(CREATE, { idempotencyKey: 'caller-key' });
      const keys = keysOf(fake);
      assert.deepEqual(keys.slice(0, 2), [undefined, undefined]);
      const made = keys.slice(2, 2 + WRITES.length + 1);
      assert.ok(made.every((k) => KEY_RE.test(k)), made.join(' '));
      assert.equal(new Set(made).size, made.length, 'all different');
      assert.deepEqual(keys.slice(2 + WRITES.length + 1), ['!~' + 'k'.repeat(253), undefined, 'caller-key']);

      for (const bad of ['', 'a b', 'é', 'x'.repeat(256), 'a\nb', 42]) {
        await assert.rejects(client.execute(CREATE, { idempotencyKey: bad }), TypeError, JSON.stringify(bad));
      }
      assert.equal(fake.requests.length, keys.length, 'nothing sent with an invalid key');
    },
  ));

test('429 (nginx\'s rate limit: "the command was not applied"): every command is retried, honouring Retry-After', async () => {
  for (const command of [VIEW, ...WRITES]) {
    await withFake(
      (req, n) => (n < 2 ? nginxAnswer(429) : { status: 200, json: toolResult('done') }),
      async (fake) => {
        const { client, retries } = clientFor(fake.url, { maxRetryDelayMs: 40 });
        assert.deepEqual(await client.execute(command), { content: 'done', isError: false, status: 200, replayed: false });
        assert.equal(fake.requests.length, 3);
        assert.ok(fake.requests.every((r) => r.body === JSON.stringify(command)));
        const key = keysOf(fake)[0];
        assert.deepEqual(keysOf(fake), [key, key, key]);
        assert.equal(key === undefined, command === VIEW);
        const withKey = key === undefined ? {} : { idempotencyKey: key };
        assert.deepEqual(retries, [
          { command: command.command, attempt: 1, reason: 'rate_limited', status: 429, delayMs: 40, ...withKey },
          { command: command.command, attempt: 2, reason: 'rate_limited', status: 429, delayMs: 40, ...withKey },
        ]);
      },
    );
  }
  // Retry-After: 1 is waited for in full under the default cap (5 s).
  await withFake(
    (req, n) => (n === 0 ? nginxAnswer(429) : { status: 200, json: toolResult('File created successfully at: /memories/a.md') }),
    async (fake) => {
      const { client, retries } = clientFor(fake.url);
      const t0 = Date.now();
      assert.equal((await client.execute(CREATE)).content, 'File created successfully at: /memories/a.md');
      assert.ok(Date.now() - t0 >= 950, `waited ${Date.now() - t0} ms`);
      assert.deepEqual(retries.map((r) => [r.reason, r.delayMs]), [['rate_limited', 1000]]);
    },
  );
  // The retries run out: nginx's own result, which says the command was not applied.
  await withFake(
    () => nginxAnswer(429),
    async (fake) => {
      const { client } = clientFor(fake.url, { maxRetryDelayMs: 1 });
      assert.deepEqual(await client.execute(CREATE), nginxResult(429));
      assert.equal(fake.requests.length, 3);
    },
  );
  // A 429 that is not a tool_result (another limiter, no Retry-After): retried with the
  // backoff, then an error saying the command was not applied.
  await withFake(
    () => PROXY_PAGE(429, 'Too Many Requests'),
    async (fake) => {
      const { client, retries } = clientFor(fake.url);
      const e = await memorydError(() => client.execute(CREATE));
      assert.equal(fake.requests.length, 3);
      assert.deepEqual([e.kind, e.status, e.outcomeUnknown, e.attempts], ['unexpected_response', 429, false, 3]);
      assert.equal(
        e.content,
        'Error: The memory service answered the create command with HTTP 429 Too Many Requests, which is not a memoryd result (text/html: <html> <head><title>429 Too Many Requests</title></head> <body> <center><h1>429 Too Many Requests</h1></center> <hr><center>nginx</center> </body> </html>) (tried 3 times); the create command was not applied. Try again later.',
      );
      assert.deepEqual(retries.map((r) => r.reason), ['rate_limited', 'rate_limited']);
    },
  );
});

test('nginx\'s 401 and 413 in the tool_result shape are returned as they are, not retried', async () => {
  for (const status of [401, 413]) {
    await withFake(
      () => nginxAnswer(status),
      async (fake) => {
        const { client, retries } = clientFor(fake.url);
        for (const command of [VIEW, CREATE]) assert.deepEqual(await client.execute(command), nginxResult(status));
        assert.equal(fake.requests.length, 2);
        assert.deepEqual(retries, []);
      },
    );
  }
});

test('non-memoryd answers (a proxy\'s 401/413 page, JSON of another shape) become a clear error naming the status, not retried', async () => {
  const cases = [
    [PROXY_PAGE(401, 'Authorization Required'), 'HTTP 401 Unauthorized'],
    [PROXY_PAGE(413, 'Request Entity Too Large'), 'HTTP 413 Payload Too Large'],
    [{ status: 403, json: { error: 'forbidden' } }, 'HTTP 403 Forbidden'],
    [{ status: 200, type: 'text/plain', text: 'OK' }, 'HTTP 200 OK'],
    [{ status: 302, headers: { location: '/login' } }, 'HTTP 302 Found'],
  ];
  for (const [answer, named] of cases) {
    await withFake(
      () => answer,
      async (fake) => {
        const { client, retries } = clientFor(fake.url);
        for (const command of [VIEW, CREATE]) {
          const e = await memorydError(() => client.execute(command));
          assert.equal(e.kind, 'unexpected_response');
          assert.equal(e.status, answer.status);
          assert.equal(e.outcomeUnknown, false);
          assert.ok(e.content.startsWith(`Error: The memory service answered the ${command.command} command with ${named}, which is not a memoryd result (`), e.content);
        }
        assert.equal(fake.requests.length, 2);
        assert.deepEqual(retries, []);
      },
    );
  }
  await withFake(
    () => PROXY_PAGE(401, 'Authorization Required'),
    async (fake) => {
      const e = await memorydError(() => new MemorydClient({ baseUrl: fake.url }).execute(VIEW));
      assert.equal(
        e.content,
        'Error: The memory service answered the view command with HTTP 401 Unauthorized, which is not a memoryd result (text/html: <html> <head><title>401 Authorization Required</title></head> <body> <center><h1>401 Authorization Required</h1></center> <hr><center>nginx</center> </body> </html>).',
      );
    },
  );
});

test('memoryd\'s own error results (500 included) are returned once, never retried', () =>
  withFake(
    (req, n) => [
      { status: 500, json: toolResult('Error: The memory store failed; the command was not applied. Try again later.', true) },
      { status: 409, json: toolResult('Error: File /memories/a.md already exists', true) },
      { status: 404, json: toolResult('The path /memories/a.md does not exist. Please provide a valid path.', true) },
    ][n],
    async (fake) => {
      const { client, retries } = clientFor(fake.url);
      assert.deepEqual(await client.execute(CREATE), {
        content: 'Error: The memory store failed; the command was not applied. Try again later.',
        isError: true,
        status: 500,
        replayed: false,
      });
      const handlers = createMemorydHandlers(client);
      await assert.rejects(handlers.create(CREATE), (e) => e instanceof ToolError && e.content === 'Error: File /memories/a.md already exists');
      await assert.rejects(handlers.view(VIEW), (e) => e instanceof ToolError && e.content === 'The path /memories/a.md does not exist. Please provide a valid path.');
      assert.equal(fake.requests.length, 3);
      assert.deepEqual(retries, []);
    },
  ));

test('requests: POST {baseUrl}/memory, the command verbatim as JSON, tenant, bearer and idempotency headers', () =>
  withFake(
    () => ({ status: 200, json: toolResult(LISTING) }),
    async (fake) => {
      const command = { command: 'view', path: '/memories/x', view_range: [1, -1], some_future_field: { a: [1, 'ü'] } };
      await new MemorydClient({ baseUrl: fake.url, tenant: 'team-a' }).execute(command);
      await new MemorydClient({ baseUrl: `${fake.url}/prefix/`, tenant: 'team.b_2', tenantHeader: 'X-Org' }).execute(command);
      await new MemorydClient({ baseUrl: fake.url, apiKey: 'sk-secret', headers: { 'x-request-source': 'test', authorization: 'overridden' } }).execute(command);

      const [a, b, c] = fake.requests;
      for (const r of [a, b, c]) {
        assert.equal(r.method, 'POST');
        assert.deepEqual(JSON.parse(r.body), command);
        assert.equal(r.headers['content-type'], 'application/json');
        assert.equal(r.headers.accept, 'application/json');
      }
      assert.equal(a.url, '/memory');
      assert.equal(a.headers['x-tenant-id'], 'team-a');
      assert.equal(a.headers.authorization, undefined);
      assert.equal(b.url, '/prefix/memory');
      assert.equal(b.headers['x-org'], 'team.b_2');
      assert.equal(b.headers['x-tenant-id'], undefined);
      assert.equal(c.headers.authorization, 'Bearer sk-secret');
      assert.equal(c.headers['x-tenant-id'], undefined);
      assert.equal(c.headers['x-request-source'], 'test');
      for (const r of [a, b, c]) assert.equal(r.headers['idempotency-key'], undefined, 'none for a view');

      await new MemorydClient({ baseUrl: fake.url, tenant: 'team-a' }).execute(CREATE);
      const d = fake.requests[3];
      assert.deepEqual(JSON.parse(d.body), CREATE);
      assert.match(d.headers['idempotency-key'], KEY_RE);
      assert.equal(d.headers['x-tenant-id'], 'team-a');
    },
  ));

test('the caller\'s AbortSignal stops the call at once, without retries', () =>
  withFake(
    () => ({ hang: true }),
    async (fake) => {
      const { client, retries } = clientFor(fake.url, { timeoutMs: 5000 });
      const t0 = Date.now();
      const e = await memorydError(() => client.execute(CREATE, { signal: AbortSignal.timeout(100) }));
      assert.ok(Date.now() - t0 < 2000);
      assert.equal(e.kind, 'aborted');
      assert.equal(e.outcomeUnknown, true);
      assert.match(e.idempotencyKey, KEY_RE);
      assert.equal(e.idempotencyKey, fake.requests[0].headers['idempotency-key']);
      assert.equal(
        e.content,
        'Error: The create command was cancelled while it was being sent to the memory service. It is unknown whether the command was applied: view /memories/a.md to check before retrying.',
      );
      const v = await memorydError(() => client.execute(VIEW, { signal: AbortSignal.timeout(100) }));
      assert.equal(v.kind, 'aborted');
      assert.equal(v.outcomeUnknown, false);
      assert.equal(fake.requests.length, 2);
      assert.deepEqual(retries, []);
    },
  ));

test('invalid options are refused when the client is made', () => {
  const ok = { baseUrl: 'http://127.0.0.1:8080' };
  assert.throws(() => new MemorydClient({ ...ok, tenant: 'bad tenant' }), TypeError);
  assert.throws(() => new MemorydClient({ ...ok, tenant: 'x'.repeat(129) }), TypeError);
  assert.throws(() => new MemorydClient({ ...ok, tenantHeader: 'X Tenant' }), TypeError);
  assert.throws(() => new MemorydClient({ ...ok, apiKey: 'a\nb' }), TypeError);
  assert.throws(() => new MemorydClient({ ...ok, retries: -1 }), TypeError);
  assert.throws(() => new MemorydClient({ ...ok, timeoutMs: 0 }), TypeError);
  assert.throws(() => new MemorydClient({ baseUrl: 'ftp://host' }), TypeError);
  assert.throws(() => new MemorydClient({ baseUrl: 'not a url' }), TypeError);
  assert.throws(() => new MemorydClient({ ...ok, idempotencyKeys: 'no' }), TypeError);
  assert.throws(() => new MemorydClient({ ...ok, headers: { 'idempotency-key': 'one-for-all' } }), /Idempotency-Key/);
  assert.equal(new MemorydClient({ baseUrl: 'http://h:1/a/b/?q=1#f' }).url, 'http://h:1/a/b/memory');
});
