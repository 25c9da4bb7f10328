// End to end: the real @anthropic-ai/sdk tool runner, a scripted fake Messages
// API, and a live memoryd. Asserts that the tool_result blocks the SDK sends
// back are exactly the contract's (content and is_error) and what memoryd holds
// afterwards.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startServer } from '../../../tests/lib/server.mjs';
import { memorydMemoryTool, createMemorydHandlers, MemorydClient } from '../dist/index.js';
import { betaMemoryTool } from '@anthropic-ai/sdk/helpers/beta/memory';
import { startFakeAnthropic, toolResultsOf } from './lib/fake-anthropic.mjs';
import { startFakeMemoryd } from './lib/fake-memoryd.mjs';

const LISTING = "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:";
const PREFS = '# User preferences\n- editor: vim\n- indent: tabs\n- theme: dark\n';
const PROJECT = 'status: draft\nowner: ana\nstatus: draft\n';
const FINAL_PREFS = '# User preferences\n- name: Ana\n- editor: helix\n- indent: tabs\n- theme: dark\n'; // 76 bytes

// A realistic session: each entry is one assistant turn; each call is one
// memory tool_use block and the tool_result the model must get back. Calls in
// one turn run concurrently, so they never depend on each other.
const SESSION = [
  [{ input: { command: 'view', path: '/memories' }, content: `${LISTING}\n0B\t/memories` }],
  [
    {
      input: { command: 'view', path: '/memories/preferences.md' },
      content: 'The path /memories/preferences.md does not exist. Please provide a valid path.',
      isError: true,
    },
  ],
  [
    { input: { command: 'create', path: '/memories/preferences.md', file_text: PREFS }, content: 'File created successfully at: /memories/preferences.md' },
    {
      input: { command: 'create', path: '/memories/projects/memoryd.md', file_text: PROJECT },
      content: 'File created successfully at: /memories/projects/memoryd.md',
    },
  ],
  [
    {
      input: { command: 'create', path: '/memories/preferences.md', file_text: 'overwritten?\n' },
      content: 'Error: File /memories/preferences.md already exists',
      isError: true,
    },
  ],
  [
    {
      input: { command: 'str_replace', path: '/memories/preferences.md', old_str: '- editor: vim', new_str: '- editor: helix' },
      content:
        'The memory file has been edited. Here is the snippet showing the change (with line numbers):\n' +
        '     1\t# User preferences\n     2\t- editor: helix\n     3\t- indent: tabs\n     4\t- theme: dark',
    },
  ],
  [
    {
      input: { command: 'str_replace', path: '/memories/preferences.md', old_str: '- theme: light', new_str: '- theme: solarized' },
      content: 'No replacement was performed, old_str `- theme: light` did not appear verbatim in /memories/preferences.md.',
      isError: true,
    },
    {
      input: { command: 'str_replace', path: '/memories/projects/memoryd.md', old_str: 'status: draft', new_str: 'status: shipped' },
      content: 'No replacement was performed. Multiple occurrences of old_str `status: draft` in lines: 1, 3. Please ensure it is unique',
      isError: true,
    },
  ],
  [
    {
      input: { command: 'insert', path: '/memories/preferences.md', insert_line: 1, insert_text: '- name: Ana\n' },
      content: 'The file /memories/preferences.md has been edited.',
    },
    {
      input: { command: 'insert', path: '/memories/projects/memoryd.md', insert_line: 99, insert_text: 'reviewer: bo\n' },
      content: 'Error: Invalid `insert_line` parameter: 99. It should be within the range of lines of the file: [0, 4]',
      isError: true,
    },
  ],
  [
    {
      input: { command: 'view', path: '/memories/preferences.md' },
      content:
        "Here's the content of /memories/preferences.md with line numbers:\n" +
        '     1\t# User preferences\n     2\t- name: Ana\n     3\t- editor: helix\n     4\t- indent: tabs\n     5\t- theme: dark\n     6\t',
    },
    {
      input: { command: 'view', path: '/memories/preferences.md', view_range: [2, 3] },
      content: "Here's the content of /memories/preferences.md with line numbers:\n     2\t- name: Ana\n     3\t- editor: helix",
    },
  ],
  [
    {
      input: { command: 'rename', old_path: '/memories/preferences.md', new_path: '/memories/projects/memoryd.md' },
      content: 'Error: The destination /memories/projects/memoryd.md already exists',
      isError: true,
    },
    {
      input: { command: 'rename', old_path: '/memories/missing.md', new_path: '/memories/found.md' },
      content: 'Error: The path /memories/missing.md does not exist',
      isError: true,
    },
  ],
  [
    {
      input: { command: 'rename', old_path: '/memories/preferences.md', new_path: '/memories/user/preferences.md' },
      content: 'Successfully renamed /memories/preferences.md to /memories/user/preferences.md',
    },
  ],
  [
    {
      input: { command: 'create', path: '/memories/../etc/passwd', file_text: 'root::0:0::/root:/bin/sh\n' },
      content: 'Error: Path /memories/../etc/passwd would escape /memories directory',
      isError: true,
    },
    { input: { command: 'view', path: '/etc/passwd' }, content: 'Error: Path must start with /memories, got: /etc/passwd', isError: true },
  ],
  [
    { input: { command: 'delete', path: '/memories/projects' }, content: 'Successfully deleted /memories/projects' },
    { input: { command: 'delete', path: '/memories/nothing.md' }, content: 'Error: The path /memories/nothing.md does not exist', isError: true },
  ],
  [
    {
      input: { command: 'view', path: '/memories' },
      content: `${LISTING}\n76B\t/memories\n76B\t/memories/user/\n76B\t/memories/user/preferences.md`,
    },
  ],
];
const FINAL_TEXT = 'I saved your preferences under /memories/user/preferences.md.';

/** The scripted assistant turns of a session, ending with a text turn. */
function scriptOf(session) {
  return [...session.map((turn) => turn.map((call) => ({ type: 'tool_use', name: 'memory', input: call.input }))), [{ type: 'text', text: FINAL_TEXT }]];
}

/** The tool_result blocks the SDK must send for turn `t` of `session`. */
function expectedResults(session, t) {
  return session[t].map((call, i) => ({
    type: 'tool_result',
    tool_use_id: `toolu_${t}_${i}`,
    content: call.content,
    ...(call.isError ? { is_error: true } : {}),
  }));
}

function anthropicAt(api) {
  return new Anthropic({ apiKey: 'test-key', baseURL: api.url, maxRetries: 0 });
}

let srv;
before(async () => {
  srv = await startServer();
});
after(async () => {
  await srv?.stop();
});

/** Every request memoryd logged for `tenant` (one JSON log line per request). */
function memorydRequests(tenant) {
  return srv.logs.filter((l) => typeof l.command === 'string' && l.tenant === tenant);
}

test('tool runner session: every command, exact tool_result blocks, final state in memoryd', async () => {
  const api = await startFakeAnthropic(scriptOf(SESSION));
  try {
    const runner = anthropicAt(api).beta.messages.toolRunner({
      model: 'claude-opus-4-6',
      max_tokens: 1024,
      messages: [{ role: 'user', content: 'Remember my preferences: helix, tabs, dark theme. My name is Ana.' }],
      tools: [memorydMemoryTool({ baseUrl: srv.url, tenant: 'agent-a' })],
    });
    const final = await runner.runUntilDone();

    assert.deepEqual(final.content, [{ type: 'text', text: FINAL_TEXT }]);
    assert.equal(api.requests.length, SESSION.length + 1, 'one Messages request per assistant turn');
    for (const r of api.requests) {
      assert.equal(r.method, 'POST');
      assert.equal(new URL(r.url, 'http://x').pathname, '/v1/messages');
    }
    // The tool definition goes with the request that starts the (message) thread.
    assert.deepEqual(api.requests[0].body.tools, [{ type: 'memory_20250818', name: 'memory' }]);
    assert.deepEqual(toolResultsOf(api.requests[0]), [], 'the first request carries no tool results');
    for (let t = 0; t < SESSION.length; t++) {
      assert.deepEqual(toolResultsOf(api.requests[t + 1]), expectedResults(SESSION, t), `tool results of turn ${t}`);
    }

    // Each tool call reached memoryd exactly once, as tenant agent-a.
    const calls = SESSION.flat();
    await srv.waitForLogs(() => memorydRequests('agent-a').length >= calls.length, `${calls.length} request lines`);
    const logged = memorydRequests('agent-a');
    assert.equal(logged.length, calls.length);
    assert.deepEqual(
      logged.map((l) => l.command).sort(),
      calls.map((c) => c.input.command).sort(),
    );

    // The state memoryd holds afterwards.
    const memoryd = new MemorydClient({ baseUrl: srv.url, tenant: 'agent-a' });
    assert.deepEqual(await memoryd.execute({ command: 'view', path: '/memories/user/preferences.md' }), {
      content:
        "Here's the content of /memories/user/preferences.md with line numbers:\n" +
        FINAL_PREFS.split('\n').map((line, i) => `${String(i + 1).padStart(6)}\t${line}`).join('\n'),
      isError: false,
      status: 200,
      replayed: false,
    });
    assert.deepEqual(await memoryd.execute({ command: 'view', path: '/memories' }), {
      content: `${LISTING}\n76B\t/memories\n76B\t/memories/user/\n76B\t/memories/user/preferences.md`,
      isError: false,
      status: 200,
      replayed: false,
    });
    for (const gone of ['/memories/preferences.md', '/memories/projects', '/memories/projects/memoryd.md', '/memories/found.md']) {
      const r = await memoryd.execute({ command: 'view', path: gone });
      assert.deepEqual(r, { content: `The path ${gone} does not exist. Please provide a valid path.`, isError: true, status: 404, replayed: false });
    }
    // Other tenants see none of it.
    const other = await new MemorydClient({ baseUrl: srv.url, tenant: 'agent-b' }).execute({ command: 'view', path: '/memories' });
    assert.equal(other.content, `${LISTING}\n0B\t/memories`);
  } finally {
    await api.close();
  }
});

test('streaming, unthreaded tool runner (runToolsEagerly) sends the same exact results', async () => {
  const session = [
    [
      { input: { command: 'create', path: '/memories/todo.md', file_text: 'a\nb\n' }, content: 'File created successfully at: /memories/todo.md' },
      { input: { command: 'view', path: '/memories/none.md' }, content: 'The path /memories/none.md does not exist. Please provide a valid path.', isError: true },
    ],
    [
      {
        input: { command: 'str_replace', path: '/memories/todo.md', old_str: 'z', new_str: 'y' },
        content: 'No replacement was performed, old_str `z` did not appear verbatim in /memories/todo.md.',
        isError: true,
      },
    ],
    [{ input: { command: 'view', path: '/memories/todo.md' }, content: "Here's the content of /memories/todo.md with line numbers:\n     1\ta\n     2\tb\n     3\t" }],
  ];
  const api = await startFakeAnthropic(scriptOf(session));
  try {
    const runner = anthropicAt(api).beta.messages.toolRunner({
      model: 'claude-opus-4-6',
      max_tokens: 1024,
      stream: true,
      runToolsEagerly: true,
      thread: false, // the full history and the tools go with every request
      messages: [{ role: 'user', content: 'Keep a todo list.' }],
      tools: [memorydMemoryTool({ baseUrl: srv.url, tenant: 'agent-stream' }, { cache_control: { type: 'ephemeral' } })],
    });
    const final = await runner.runUntilDone();
    assert.deepEqual(final.content, [{ type: 'text', text: FINAL_TEXT }]);
    assert.equal(api.requests.length, session.length + 1);
    for (const r of api.requests) {
      assert.equal(r.body.stream, true);
      assert.equal(r.body.thread, undefined);
      assert.deepEqual(r.body.tools, [{ type: 'memory_20250818', name: 'memory', cache_control: { type: 'ephemeral' } }]);
    }
    for (let t = 0; t < session.length; t++) {
      assert.deepEqual(toolResultsOf(api.requests[t + 1]), expectedResults(session, t), `tool results of turn ${t}`);
    }
    await srv.waitForLogs(() => memorydRequests('agent-stream').length >= session.flat().length, 'the request lines');
    assert.equal(memorydRequests('agent-stream').length, session.flat().length);
  } finally {
    await api.close();
  }
});

test('a plain Error would add "Error: " — the handlers throw ToolError so the text stays exact', async () => {
  // The control: handlers that throw a plain Error with memoryd's text.
  const plain = {
    ...createMemorydHandlers({ baseUrl: srv.url, tenant: 'agent-plain' }),
    async view(command) {
      const r = await new MemorydClient({ baseUrl: srv.url, tenant: 'agent-plain' }).execute(command);
      if (r.isError) throw new Error(r.content);
      return r.content;
    },
  };
  const missing = 'The path /memories/x.md does not exist. Please provide a valid path.';
  const script = [[{ type: 'tool_use', name: 'memory', input: { command: 'view', path: '/memories/x.md' } }], [{ type: 'text', text: 'ok' }]];
  for (const [tool, content] of [
    [betaMemoryTool(plain), `Error: ${missing}`],
    [memorydMemoryTool({ baseUrl: srv.url, tenant: 'agent-plain' }), missing],
  ]) {
    const api = await startFakeAnthropic(script);
    try {
      await anthropicAt(api).beta.messages.toolRunner({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'x' }], tools: [tool] }).runUntilDone();
      assert.deepEqual(toolResultsOf(api.requests[1]), [{ type: 'tool_result', tool_use_id: 'toolu_0_0', content, is_error: true }]);
    } finally {
      await api.close();
    }
  }
});

test('transport failures reach the model as one clear error result', async () => {
  // A memoryd that never answers a write, and one that is not there at all.
  const hanging = await startFakeMemoryd(() => ({ hang: true }));
  const script = [
    [
      { type: 'tool_use', name: 'memory', input: { command: 'create', path: '/memories/a.md', file_text: 'x' } },
      { type: 'tool_use', name: 'memory', input: { command: 'rename', old_path: '/memories/a.md', new_path: '/memories/b.md' } },
    ],
    [{ type: 'text', text: 'ok' }],
  ];
  const api = await startFakeAnthropic(script);
  try {
    const tool = memorydMemoryTool({ baseUrl: hanging.url, timeoutMs: 150, retryDelayMs: 1 });
    await anthropicAt(api).beta.messages.toolRunner({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'x' }], tools: [tool] }).runUntilDone();
    assert.deepEqual(toolResultsOf(api.requests[1]), [
      {
        type: 'tool_result',
        tool_use_id: 'toolu_0_0',
        content:
          'Error: The memory service did not answer the create command within 150 ms (tried 3 times). It is unknown whether the command was applied: view /memories/a.md to check before retrying.',
        is_error: true,
      },
      {
        type: 'tool_result',
        tool_use_id: 'toolu_0_1',
        content:
          'Error: The memory service did not answer the rename command within 150 ms (tried 3 times). It is unknown whether the command was applied: view /memories/a.md and /memories/b.md to check before retrying.',
        is_error: true,
      },
    ]);
    // Each write was sent 3 times with its own Idempotency-Key (the two run concurrently).
    assert.equal(hanging.requests.length, 6);
    const keys = new Map();
    for (const r of hanging.requests) keys.set(r.body, [...(keys.get(r.body) ?? []), r.headers['idempotency-key']]);
    assert.equal(keys.size, 2);
    const [create, rename] = [...keys.values()];
    assert.ok(/^mdc-/.test(create[0]) && create.every((k) => k === create[0]) && rename.every((k) => k === rename[0]) && create[0] !== rename[0]);
  } finally {
    await api.close();
    await hanging.close();
  }
});

test('memoryd overloaded (real 503s): the runner\'s parallel writes are retried and each applied exactly once', async (t) => {
  // A write queue of one: most of 16 simultaneous creates are refused with 503 at first.
  const busy = await startServer({ args: ['--max-queue', '1', '--max-batch', '1'] });
  const N = 16;
  const calls = Array.from({ length: N }, (_, i) => ({ command: 'create', path: `/memories/notes/n${String(i).padStart(2, '0')}.md`, file_text: `note ${i}\n` }));
  const api = await startFakeAnthropic([calls.map((input) => ({ type: 'tool_use', name: 'memory', input })), [{ type: 'text', text: 'ok' }]]);
  try {
    const retried = [];
    const tool = memorydMemoryTool({ baseUrl: busy.url, tenant: 'busy', retries: 30, maxRetryDelayMs: 20, onRetry: (e) => retried.push(e) });
    await anthropicAt(api).beta.messages.toolRunner({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'x' }], tools: [tool] }).runUntilDone();

    assert.deepEqual(
      toolResultsOf(api.requests[1]),
      calls.map((c, i) => ({ type: 'tool_result', tool_use_id: `toolu_0_${i}`, content: `File created successfully at: ${c.path}` })),
    );
    await busy.waitForLogs((logs) => logs.filter((l) => l.command === 'create' && l.status === 200).length >= N, `${N} applied creates`);
    const logged = busy.logs.filter((l) => l.command === 'create');
    const refused = logged.filter((l) => l.status === 503);
    assert.equal(logged.length - refused.length, N, 'each create applied once');
    assert.equal(refused.length, retried.length, 'every 503 was retried');
    assert.ok(retried.every((e) => e.reason === 'unavailable' && e.status === 503 && e.delayMs === 20), 'Retry-After: 1 capped at 20 ms');
    t.diagnostic(`${refused.length} answers were 503 and retried${refused.length === 0 ? ' (the retry path was not exercised this time)' : ''}`);

    const listing = await new MemorydClient({ baseUrl: busy.url, tenant: 'busy' }).execute({ command: 'view', path: '/memories/notes' });
    assert.equal(listing.content.split('\n').length, 2 + N);
  } finally {
    await api.close();
    await busy.stop();
  }
});
