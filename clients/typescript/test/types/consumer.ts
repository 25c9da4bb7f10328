// Compile-only check (tsc --noEmit): the package's types, as a harness in
// TypeScript uses them with the SDK's tool runner. Not run.
import Anthropic from '@anthropic-ai/sdk';
import type { MemoryToolHandlers } from '@anthropic-ai/sdk/helpers/beta/memory';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import {
  createMemorydHandlers,
  memorydMemoryTool,
  memorydSearchTool,
  MemorydClient,
  MemorydError,
  IDEMPOTENCY_KEY_HEADER,
  type ExecuteOptions,
  type MemorydResult,
  type MemorydRetryEvent,
  type MemorySearchInput,
  type SearchPage,
  type HistoryPage,
  type VersionDetail,
  type RestoreResult,
  type ChangeFeed,
  type Change,
} from '@memoryd/client';

export async function harness(): Promise<string> {
  const client = new Anthropic({ apiKey: 'k' });
  const memoryd = new MemorydClient({
    baseUrl: 'http://127.0.0.1:8080',
    tenant: 'team-a',
    timeoutMs: 5_000,
    retries: 1,
    idempotencyKeys: true,
    onRetry: (e: MemorydRetryEvent) => console.log(e.reason, e.attempt, e.delayMs, e.idempotencyKey ?? '-'),
  });
  const runner = client.beta.messages.toolRunner({
    model: 'claude-opus-4-6',
    max_tokens: 1024,
    messages: [{ role: 'user', content: 'hi' }],
    tools: [
      memorydMemoryTool(memoryd),
      memorydMemoryTool({ baseUrl: 'https://gw.example', apiKey: 'key' }, { cache_control: { type: 'ephemeral' } }),
      memorydSearchTool(memoryd),
      memorydSearchTool({ baseUrl: 'http://127.0.0.1:8080', apiKey: 'mdk_x' }, { cache_control: { type: 'ephemeral' } }),
    ],
  });
  const final = await runner.runUntilDone();

  const handlers: MemoryToolHandlers = createMemorydHandlers({ baseUrl: 'http://127.0.0.1:8080' });
  const text = await handlers.view({ command: 'view', path: '/memories' });

  const r: MemorydResult = await memoryd.execute({ command: 'rename', old_path: '/memories/a', new_path: '/memories/b' });
  const replayed: boolean = r.replayed;
  const insert = { command: 'insert', path: '/memories/a', insert_line: 0, insert_text: 'x' } as const;
  try {
    await memoryd.execute(insert);
  } catch (e) {
    if (e instanceof MemorydError && e.outcomeUnknown && e.idempotencyKey !== undefined) {
      // Settle it later: the same command with the same key is applied at most once.
      const options: ExecuteOptions = { idempotencyKey: e.idempotencyKey };
      await memoryd.execute(insert, options);
    }
  }
  const legacy = new MemorydClient({ baseUrl: 'http://127.0.0.1:8080', idempotencyKeys: false });
  void legacy, replayed, IDEMPOTENCY_KEY_HEADER;
  try {
    await memoryd.execute({ command: 'view', path: '/memories' }, { signal: AbortSignal.timeout(1000) });
  } catch (e) {
    if (e instanceof MemorydError) {
      const unknown: boolean = e.outcomeUnknown;
      const content: string = e.content;
      const asToolError: ToolError = e;
      void unknown, content, asToolError;
    }
  }
  // The /v1 helpers, typed as memoryd answers.
  const page: SearchPage = await memoryd.search('billing cycle', { path: '/memories/notes', limit: 5 });
  const more = page.next_cursor === null ? null : await memoryd.search('billing cycle', { cursor: page.next_cursor });
  const forModel: string = await memoryd.searchText('"billing cycle"');
  const history: HistoryPage = await memoryd.history('/memories/notes.txt', { limit: 10 });
  const newest = history.versions[0];
  const detail: VersionDetail | undefined = newest && (await memoryd.version(newest.version));
  const content: string | null | undefined = detail?.content;
  const back: RestoreResult = await memoryd.restore({ path: '/memories/notes.txt', version: 4 }, { ifMatch: '"sha256-x"' });
  const before: RestoreResult = await memoryd.restore({ path: '/memories', before: 4 }, { idempotencyKey: 'undo-4' });
  // @ts-expect-error exactly one of version and before
  await memoryd.restore({ path: '/memories', version: 4, before: 4 });
  const feed: ChangeFeed = await memoryd.changes({ after: 0, wait: 30, signal: AbortSignal.timeout(40_000) });
  for await (const change of memoryd.follow({ after: feed.next_after })) {
    const c: Change = change;
    void c.seq, c.paths, c.command;
    break;
  }
  const input: MemorySearchInput = { q: 'billing', path: '/memories', limit: 3 };
  void more, forModel, content, back.replayed, before.removed, input;
  return `${final.id} ${String(text)} ${r.content} ${r.isError} ${r.status}`;
}
