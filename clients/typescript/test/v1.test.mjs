// The /v1 helpers of MemorydClient (search, searchText, history, version, restore,
// clearAllMemory, changes, follow) and the memory_search tool, against a live memoryd (tests/lib/server.mjs: SQLite,
// or PostgreSQL when MD_TEST_PG is set): memoryd's exact answers as the client returns them,
// its error answers as MemorydError (a ToolError) of kind `rejected` with memoryd's text, a
// restore applied once under its Idempotency-Key, the change feed's long poll outlasting
// timeoutMs, `apiKey` against `memoryd --auth keys` (the key decides the tenant, its scope
// what may be done); the retry policy of the /v1 calls against a fake memoryd; and
// memory_search in the SDK's tool runner: memoryd's text, exact, and the same tool
// definition as memoryd's MCP tool of that name.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import { runMemoryd, startServer } from '../../../tests/lib/server.mjs';
import { MemorydClient, MemorydError, memorydMemoryTool, memorydSearchTool } from '../dist/index.js';
import { startFakeAnthropic, toolResultsOf } from './lib/fake-anthropic.mjs';
import { startFakeMemoryd } from './lib/fake-memoryd.mjs';

const NOTES = 'Meeting notes:\n- Discussed the billing cycle\n- Next steps: ship v1\n';
const TODO = '- Call Ana\n- ship the billing fix\n';
const sha256 = (text) => createHash('sha256').update(text).digest('hex');

let srv;
before(async () => {
  srv = await startServer();
});
after(async () => {
  await srv?.stop();
});

const clientOf = (tenant, options = {}) => new MemorydClient({ baseUrl: srv.url, tenant, ...options });

/** Runs memory commands in order; each must succeed. */
async function run(client, ...commands) {
  for (const command of commands) {
    const r = await client.execute(command);
    assert.equal(r.isError, false, `${JSON.stringify(command)}: ${r.content}`);
  }
}

/** `promise` rejects with memoryd's error answer: a MemorydError of kind `rejected`. */
async function rejected(promise, status, text, command) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof MemorydError, String(e));
    assert.ok(e instanceof ToolError, 'a MemorydError is the SDK\'s ToolError');
    assert.deepEqual(
      { kind: e.kind, status: e.status, content: e.content, message: e.message, command: e.command, outcomeUnknown: e.outcomeUnknown, attempts: e.attempts },
      { kind: 'rejected', status, content: `Error: ${text}`, message: `Error: ${text}`, command, outcomeUnknown: false, attempts: 1 },
    );
    return true;
  });
}

test('search and searchText: the hits, pages, the text for a model, and memoryd\'s refusals', async (t) => {
  t.diagnostic(`memoryd's store: ${/^postgres(ql)?:/.test(srv.dbPath) ? 'PostgreSQL' : 'SQLite'} (${srv.dbPath.replace(/\?.*$/, '')})`);
  const a = clientOf('v1-search');
  await run(
    a,
    { command: 'create', path: '/memories/notes.txt', file_text: NOTES },
    { command: 'create', path: '/memories/todo.md', file_text: TODO },
  );
  const notesHit = { path: '/memories/notes.txt', matching_lines: 1, lines: [{ line: 3, text: '- Next steps: ship v1' }] };
  const todoHit = { path: '/memories/todo.md', matching_lines: 1, lines: [{ line: 2, text: '- ship the billing fix' }] };
  assert.deepEqual(await a.search('ship'), { query: 'ship', path: '/memories', hits: [notesHit, todoHit], next_cursor: null });
  assert.deepEqual(await a.search('"call ana"', { path: '/memories' }), {
    query: '"call ana"',
    path: '/memories',
    hits: [{ path: '/memories/todo.md', matching_lines: 1, lines: [{ line: 1, text: '- Call Ana' }] }],
    next_cursor: null,
  });

  // Pages: the cursor of the first goes back as it came.
  const first = await a.search('ship', { limit: 1 });
  assert.deepEqual(first.hits, [notesHit]);
  assert.equal(typeof first.next_cursor, 'string');
  assert.deepEqual(await a.search('ship', { limit: 1, cursor: first.next_cursor }), { query: 'ship', path: '/memories', hits: [todoHit], next_cursor: null });

  assert.equal(
    await a.searchText('billing'),
    'Files in /memories that match billing (best first, 1 to 2):\n' +
      '/memories/notes.txt\n     2\t- Discussed the billing cycle\n' +
      '/memories/todo.md\n     2\t- ship the billing fix\n',
  );
  assert.equal(await a.searchText('invoice'), 'No file in /memories matches invoice.\n');
  // Another tenant sees none of it.
  assert.deepEqual(await clientOf('v1-other').search('ship'), { query: 'ship', path: '/memories', hits: [], next_cursor: null });

  await rejected(a.search('ship', { limit: 101 }), 400, 'Parameter `limit` must be an integer from 1 to 100', 'search');
  await rejected(a.searchText(undefined), 400, 'Parameter `q` is required: the words to search for', 'search');
  await rejected(
    a.search('ship', { cursor: '10' }),
    400,
    'Parameter `cursor` must be the next_cursor of a page of this same search (the same q and path)',
    'search',
  );

  const off = await startServer({ args: ['--search', 'off'] });
  try {
    await rejected(clientOf('x', { baseUrl: off.url }).searchText('ship'), 404, 'Search is turned off on this server (memoryd --search off)', 'search');
  } finally {
    await off.stop();
  }
});

test('clearAllMemory: every file gone in one write, once under its key, undone by a restore', async () => {
  const c = clientOf('v1-clear');
  await run(
    c,
    { command: 'create', path: '/memories/a.md', file_text: 'a\n' },
    { command: 'create', path: '/memories/d/b.md', file_text: 'b\n' },
    { command: 'create', path: '/memories/.hidden.md', file_text: 'h\n' },
  );
  const cleared = await c.clearAllMemory({ idempotencyKey: 'v1-test-clear-1' });
  assert.deepEqual(cleared, { path: '/memories', removed: 3, restore_before: 4, seq: 4, versions_recorded: 3, replayed: false });
  assert.deepEqual(await c.clearAllMemory({ idempotencyKey: 'v1-test-clear-1' }), { ...cleared, replayed: true });
  assert.equal((await c.execute({ command: 'view', path: '/memories' })).content,
    'Here\'re the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories');
  assert.deepEqual((await c.changes({ after: 3 })).changes.map((x) => [x.seq, x.command, x.paths]), [[4, 'clear', ['/memories']]]);
  const back = await c.restore({ path: '/memories', before: cleared.restore_before });
  assert.deepEqual([back.restored, back.removed], [3, 0]);
  assert.equal((await c.execute({ command: 'view', path: '/memories/.hidden.md' })).content, 'Here\'s the content of /memories/.hidden.md with line numbers:\n     1\th\n     2\t');
  const empty = await clientOf('v1-clear-empty').clearAllMemory();
  assert.deepEqual([empty.removed, empty.restore_before, empty.versions_recorded], [0, null, 0]);
});

test('history, version and restore: versions newest first, content back, a restore applied once under its key', async () => {
  const h = clientOf('v1-history');
  const FILE = '/memories/notes.txt';
  await run(
    h,
    { command: 'create', path: FILE, file_text: 'one\n' },
    { command: 'str_replace', path: FILE, old_str: 'one', new_str: 'two' },
    { command: 'insert', path: FILE, insert_line: 0, insert_text: 'zero\n' },
  );
  const page = await h.history(FILE);
  assert.equal(page.path, FILE);
  assert.equal(page.next_cursor, null);
  assert.deepEqual(
    page.versions.map((v) => [v.version, v.path, v.command, v.existed, v.size, v.sha256, v.actor, v.redacted]),
    [
      [3, FILE, 'insert', true, 4, sha256('two\n'), null, false],
      [2, FILE, 'str_replace', true, 4, sha256('one\n'), null, false],
      [1, FILE, 'create', false, null, null, null, false],
    ],
  );
  for (const v of page.versions) assert.match(v.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

  const top = await h.history(FILE, { limit: 2 });
  assert.deepEqual([top.versions.map((v) => v.version), top.next_cursor], [[3, 2], '2']);
  const rest = await h.history(FILE, { limit: 2, cursor: top.next_cursor });
  assert.deepEqual([rest.versions.map((v) => v.version), rest.next_cursor], [[1], null]);

  assert.deepEqual(await h.version(2), { ...page.versions[1], content: 'one\n' });
  assert.deepEqual(await h.version(1), { ...page.versions[2], content: null });
  await rejected(h.version(99), 404, 'Version 99 is not kept (there is no such version of this tenant, or retention has pruned it)', 'version');
  await rejected(clientOf('v1-other').version(2), 404, 'Version 2 is not kept (there is no such version of this tenant, or retention has pruned it)', 'version');
  for (const bad of [0, -1, 1.5, Number.NaN, '2']) await assert.rejects(h.version(bad), { name: 'TypeError', message: 'MemorydClient: version must be a positive integer' });
  await rejected(h.history('/memories/missing.txt'), 404, 'The path /memories/missing.txt has no history and does not exist', 'history');
  await rejected(h.history(FILE, { limit: 0 }), 400, 'Parameter `limit` must be an integer from 1 to 1000', 'history');

  // Version 2 back (the content before the str_replace), under a key: the retry is a replay.
  const restored = await h.restore({ path: FILE, version: 2 }, { idempotencyKey: 'v1-test-restore-2' });
  assert.deepEqual(restored, { path: FILE, version: 2, restored: 1, removed: 0, unchanged: 0, seq: 4, versions_recorded: 1, replayed: false });
  assert.deepEqual(await h.restore({ path: FILE, version: 2 }, { idempotencyKey: 'v1-test-restore-2' }), { ...restored, replayed: true });
  assert.equal((await h.execute({ command: 'view', path: FILE })).content, `Here's the content of ${FILE} with line numbers:\n     1\tone\n     2\t`);
  const feed = await h.changes();
  assert.deepEqual(feed.changes.map((c) => [c.seq, c.command, c.paths]), [
    [1, 'create', [FILE]],
    [2, 'str_replace', [FILE]],
    [3, 'insert', [FILE]],
    [4, 'restore', [FILE]],
  ]);

  // If-Match: only over the content the caller saw.
  await rejected(
    h.restore({ path: FILE, version: 3 }, { ifMatch: `"sha256-${sha256('two\n')}"` }),
    412,
    `The file ${FILE} changed since you viewed it; view it again before editing.`,
    'restore',
  );
  assert.deepEqual(await h.restore({ path: FILE, version: 3 }, { ifMatch: `"sha256-${sha256('one\n')}"` }), {
    path: FILE,
    version: 3,
    restored: 1,
    removed: 0,
    unchanged: 0,
    seq: 5,
    versions_recorded: 1,
    replayed: false,
  });

  // The tree as it was before version 1: the file did not exist, so it is removed.
  assert.deepEqual(await h.restore({ path: '/memories', before: 1 }), {
    path: '/memories',
    before: 1,
    restored: 0,
    removed: 1,
    unchanged: 0,
    seq: 6,
    versions_recorded: 1,
    replayed: false,
  });
  assert.equal((await h.execute({ command: 'view', path: FILE })).content, `The path ${FILE} does not exist. Please provide a valid path.`);

  // Refused: nothing changes (the feed still ends at 6).
  await rejected(
    h.restore({ path: FILE, version: 1 }),
    409,
    `Version 1 records that ${FILE} did not exist before the write that created it: there is no content to restore (delete the file to go back to that state)`,
    'restore',
  );
  await rejected(
    h.restore({ path: FILE, version: 2, before: 2 }),
    400,
    'Give either `version` (a positive integer: put that version of the file back) or `before` (a positive integer: put every file at or below the path back as it stood just before that version), not both',
    'restore',
  );
  await rejected(h.restore({ path: FILE, version: 99 }), 404, 'Version 99 is not kept (there is no such version of this tenant, or retention has pruned it)', 'restore');
  assert.equal((await h.changes({ after: 0 })).last_seq, 6);
  await assert.rejects(h.restore({ path: FILE, version: 2 }, { idempotencyKey: 'a key' }), {
    name: 'TypeError',
    message: 'MemorydClient: idempotencyKey must be 1-255 visible ASCII characters',
  });
  await assert.rejects(h.restore({ path: FILE, version: 2 }, { ifMatch: '"x"\r\nX-Evil: 1' }), {
    name: 'TypeError',
    message: 'MemorydClient: ifMatch must be an entity-tag of visible ASCII characters',
  });
});

test('changes and follow: the feed in order, a long poll that outlasts timeoutMs, follow ends on abort', async () => {
  // retries: 0 and a time limit of 300 ms: the long poll below only succeeds because the
  // client adds `wait` to its time limit.
  const c = clientOf('v1-changes', { timeoutMs: 300, retries: 0 });
  assert.deepEqual(await c.changes(), { changes: [], last_seq: 0, next_after: 0 });
  await run(
    c,
    { command: 'create', path: '/memories/a.md', file_text: 'a\n' },
    { command: 'rename', old_path: '/memories/a.md', new_path: '/memories/b.md' },
  );
  const feed = await c.changes({ after: 0 });
  assert.deepEqual(
    feed.changes.map(({ seq, version, versions, history_bytes, command, paths, actor }) => ({ seq, version, versions, history_bytes, command, paths, actor })),
    [
      { seq: 1, version: 1, versions: 1, history_bytes: 0, command: 'create', paths: ['/memories/a.md'], actor: null },
      { seq: 2, version: 2, versions: 2, history_bytes: 2, command: 'rename', paths: ['/memories/a.md', '/memories/b.md'], actor: null },
    ],
  );
  assert.deepEqual([feed.last_seq, feed.next_after], [2, 2]);
  assert.deepEqual(await c.changes({ after: 1, limit: 1 }), { changes: [feed.changes[1]], last_seq: 2, next_after: 2 });

  // A long poll: the write comes a second after the request (longer than timeoutMs).
  const polled = c.changes({ after: 2, wait: 30 });
  await new Promise((r) => setTimeout(r, 1000));
  await run(clientOf('v1-changes'), { command: 'delete', path: '/memories/b.md' });
  const next = await polled;
  assert.deepEqual([next.changes.map((x) => [x.seq, x.command, x.paths]), next.last_seq, next.next_after], [[[3, 'delete', ['/memories/b.md']]], 3, 3]);
  await rejected(c.changes({ wait: 61 }), 400, 'Parameter `wait` must be an integer from 0 to 60', 'changes');

  // follow: every entry from the start, then the ones written while it waits; an abort while
  // it long-polls ends it without an error.
  const ac = new AbortController();
  const seen = [];
  for await (const change of clientOf('v1-changes').follow({ signal: ac.signal, limit: 2, wait: 30 })) {
    seen.push(change.seq);
    if (change.seq === 3) await run(c, { command: 'create', path: '/memories/c.md', file_text: 'c\n' });
    if (change.seq === 4) setTimeout(() => ac.abort(), 200);
  }
  assert.deepEqual(seen, [1, 2, 3, 4]);
});

test('apiKey with memoryd --auth keys: the key decides the tenant, its scope what may be done', async () => {
  const keyed = await startServer({ args: ['--auth', 'keys'] });
  try {
    const create = async (scope) => {
      const r = await runMemoryd(['keys', 'create', '--db', keyed.dbPath, '--tenant', 'alice', '--scope', scope]);
      assert.equal(r.code, 0, r.stderr);
      return r.stdout.split('\n')[0];
    };
    const writeKey = await create('write');
    const readKey = await create('read');
    const alice = new MemorydClient({ baseUrl: keyed.url, apiKey: writeKey });
    await run(alice, { command: 'create', path: '/memories/plan.md', file_text: 'ship it\n' });
    assert.deepEqual((await alice.search('ship')).hits.map((h) => h.path), ['/memories/plan.md']);
    assert.deepEqual((await alice.history('/memories/plan.md')).versions.map((v) => v.version), [1]);
    assert.equal((await alice.restore({ path: '/memories', before: 1 })).removed, 1);
    assert.deepEqual((await alice.changes()).changes.map((x) => x.command), ['create', 'restore']);
    // The key's own tenant may be named; another is refused.
    assert.equal((await new MemorydClient({ baseUrl: keyed.url, apiKey: writeKey, tenant: 'alice' }).changes()).last_seq, 2);
    const bob = new MemorydClient({ baseUrl: keyed.url, apiKey: writeKey, tenant: 'bob' });
    const forbidden = 'Forbidden: the X-Tenant-ID header names another tenant than this API key\'s; the key decides the tenant: leave the header out or send the key\'s own tenant. Nothing was done.';
    assert.deepEqual(await bob.execute({ command: 'view', path: '/memories' }), { content: `Error: ${forbidden}`, isError: true, status: 403, replayed: false });
    await rejected(bob.search('ship'), 403, forbidden, 'search');
    // A read key reads, and may not restore.
    const reader = new MemorydClient({ baseUrl: keyed.url, apiKey: readKey });
    assert.equal((await reader.changes()).last_seq, 2);
    await rejected(
      reader.restore({ path: '/memories/plan.md', version: 1 }),
      403,
      'Forbidden: this API key has the read scope: it may only view (the view command and GET requests). Nothing was done.',
      'restore',
    );
    // No key, or one memoryd does not know: 401.
    await rejected(
      new MemorydClient({ baseUrl: keyed.url }).history('/memories/plan.md'),
      401,
      'Authentication required: send the header Authorization: Bearer <key> with a memoryd API key',
      'history',
    );
    await rejected(new MemorydClient({ baseUrl: keyed.url, apiKey: `mdk_${'B'.repeat(43)}` }).search('ship'), 401, 'Unknown API key', 'search');
  } finally {
    await keyed.stop();
  }
});

test('the /v1 calls retry as the memory commands do: reads freely, a restore with its key', async () => {
  const UNAVAILABLE = { status: 503, json: { error: 'memoryd is shutting down; retry shortly' }, headers: { 'retry-after': '1' } };
  const PAGE = { query: 'x', path: '/memories', hits: [], next_cursor: null };
  const RESULT = { path: '/memories/a.md', version: 2, restored: 1, removed: 0, unchanged: 0, seq: 3, versions_recorded: 1 };
  const opts = { retryDelayMs: 1, maxRetryDelayMs: 5, timeoutMs: 200 };

  // A read: memoryd's 503, a timeout, a gateway's 502, then the page.
  const reads = await startFakeMemoryd((req, n) => [UNAVAILABLE, { hang: true }, { status: 502, text: 'bad gateway', type: 'text/plain' }, { status: 200, json: PAGE }][n]);
  try {
    const events = [];
    const c = new MemorydClient({ baseUrl: reads.url, tenant: 't', retries: 3, ...opts, onRetry: (e) => events.push([e.command, e.reason, e.status]) });
    assert.deepEqual(await c.search('x', { limit: 5 }), PAGE);
    assert.deepEqual(events, [['search', 'unavailable', 503], ['search', 'timeout', undefined], ['search', 'bad_gateway', 502]]);
    assert.deepEqual(reads.requests.map((r) => [r.method, r.url, r.headers['x-tenant-id'], r.headers['content-type'], r.body]), Array(4).fill(['GET', '/v1/search?q=x&limit=5', 't', undefined, '']));
  } finally {
    await reads.close();
  }

  // A restore: lost once, then answered; the same key and body both times.
  const writes = await startFakeMemoryd((req, n) => (n === 0 ? { destroy: true } : { status: 200, json: RESULT, headers: { 'idempotent-replayed': 'true' } }));
  try {
    const c = new MemorydClient({ baseUrl: writes.url, ...opts });
    assert.deepEqual(await c.restore({ path: '/memories/a.md', version: 2 }), { ...RESULT, replayed: true });
    const [one, two] = writes.requests;
    assert.deepEqual([one.method, one.url, one.body, one.headers['content-type']], ['POST', '/v1/restore', '{"path":"/memories/a.md","version":2}', 'application/json']);
    assert.match(one.headers['idempotency-key'], /^mdc-[0-9a-f-]{36}$/);
    assert.deepEqual([two.body, two.headers['idempotency-key']], [one.body, one.headers['idempotency-key']]);
  } finally {
    await writes.close();
  }

  // Without a key (idempotencyKeys: false) a restore that may have been applied is not sent
  // again: its outcome is unknown.
  const hanging = await startFakeMemoryd(() => ({ hang: true }));
  try {
    const c = new MemorydClient({ baseUrl: hanging.url, idempotencyKeys: false, ...opts });
    await assert.rejects(c.restore({ path: '/memories/a.md', before: 7 }), (e) => {
      assert.ok(e instanceof MemorydError && e instanceof ToolError);
      assert.deepEqual([e.kind, e.command, e.outcomeUnknown, e.attempts, e.idempotencyKey], ['timeout', 'restore', true, 1, undefined]);
      assert.equal(
        e.message,
        'Error: The memory service did not answer the restore request within 200 ms. It is unknown whether the request was applied: view /memories/a.md to check before retrying.',
      );
      return true;
    });
    assert.equal(hanging.requests.length, 1);
  } finally {
    await hanging.close();
  }

  // An answer that is not memoryd's (a proxy's page): an error naming it, not retried.
  const page = await startFakeMemoryd(() => ({ status: 200, type: 'text/html', text: '<html>login</html>' }));
  try {
    await assert.rejects(new MemorydClient({ baseUrl: page.url, ...opts }).history('/memories/a.md'), (e) => {
      assert.deepEqual([e.kind, e.status, e.attempts], ['unexpected_response', 200, 1]);
      assert.equal(e.message, 'Error: The memory service answered the history request with HTTP 200 OK, which is not a memoryd result (text/html: <html>login</html>).');
      return true;
    });
  } finally {
    await page.close();
  }
});

test('memory_search in the tool runner: memoryd\'s text, exact, and memoryd\'s MCP tool definition', async () => {
  const memoryd = clientOf('v1-tool');
  await run(memoryd, { command: 'create', path: '/memories/notes.txt', file_text: NOTES });
  const search = (input) => ({ type: 'tool_use', name: 'memory_search', input });
  const api = await startFakeAnthropic([
    [search({ q: 'billing' }), search({ q: 'invoice', path: '/memories/notes.txt' })],
    [search({ q: 'ship', limit: '2' }), search({ q: 'ship', limit: 0 }), search({})],
    [{ type: 'text', text: 'done' }],
  ]);
  try {
    const anthropic = new Anthropic({ apiKey: 'test-key', baseURL: api.url, maxRetries: 0 });
    const final = await anthropic.beta.messages
      .toolRunner({
        model: 'claude-opus-4-6',
        max_tokens: 1024,
        messages: [{ role: 'user', content: 'What do my notes say about billing?' }],
        tools: [memorydMemoryTool(memoryd), memorydSearchTool(memoryd, { cache_control: { type: 'ephemeral' } })],
      })
      .runUntilDone();
    assert.deepEqual(final.content, [{ type: 'text', text: 'done' }]);
    const result = (turn, i, content, isError) => ({ type: 'tool_result', tool_use_id: `toolu_${turn}_${i}`, content, ...(isError ? { is_error: true } : {}) });
    assert.deepEqual(toolResultsOf(api.requests[1]), [
      result(0, 0, 'Files in /memories that match billing (best first, 1 to 1):\n/memories/notes.txt\n     2\t- Discussed the billing cycle\n'),
      result(0, 1, 'No file in /memories/notes.txt matches invoice.\n'),
    ]);
    assert.deepEqual(toolResultsOf(api.requests[2]), [
      result(1, 0, 'Error: Parameter `limit` must be an integer', true),
      result(1, 1, 'Error: Parameter `limit` must be an integer from 1 to 100', true),
      result(1, 2, 'Error: Parameter `q` is required: the words to search for', true),
    ]);

    // The definition sent to the API: memoryd's MCP tool (tools/list), name, description and schema.
    const [memoryTool, searchTool] = api.requests[0].body.tools;
    assert.deepEqual(memoryTool, { type: 'memory_20250818', name: 'memory' });
    const mcp = await mcpTools(srv, 'v1-tool');
    const listed = mcp.find((t) => t.name === 'memory_search');
    assert.deepEqual(searchTool, { cache_control: { type: 'ephemeral' }, type: 'custom', name: listed.name, description: listed.description, input_schema: listed.inputSchema });
  } finally {
    await api.close();
  }
});

/** memoryd's MCP tools/list for `tenant`: a session opened by hand (initialize), then the list. */
async function mcpTools(server, tenant) {
  const rpc = async (body, headers = {}) => {
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-tenant-id': tenant, ...headers },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200);
    return { headers: res.headers, json: await res.json() };
  };
  const init = await rpc({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'test', version: '1' } } });
  const session = { 'mcp-session-id': init.headers.get('mcp-session-id'), 'mcp-protocol-version': '2025-11-25' };
  const list = await rpc({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, session);
  return list.json.result.tools;
}
