import { betaMemoryTool, type MemoryToolHandlers } from '@anthropic-ai/sdk/helpers/beta/memory';
import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import type { BetaMemoryTool20250818 } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import { MemorydClient, type MemoryCommand, type MemorydClientOptions } from './client.js';
import { ToolError } from './errors.js';

export type { MemoryToolHandlers };

/**
 * Extra Claude API properties of the tool definition (e.g. `cache_control`),
 * as `betaMemoryTool()` takes them.
 */
export type MemoryToolExtraProps = Omit<BetaMemoryTool20250818, 'type' | 'name'>;

/**
 * The memory tool's six handlers (`view`, `create`, `str_replace`, `insert`,
 * `delete`, `rename`), each forwarding its command object verbatim to
 * memoryd's `POST /memory`.
 *
 * A handler returns memoryd's `content` when memoryd answers
 * `is_error: false`, and throws the SDK's `ToolError` with memoryd's
 * `content` verbatim when it answers `is_error: true`, so the tool runner
 * sends the model exactly memoryd's text with `is_error: true` (a plain
 * `Error` would reach the model as `"Error: " + message`). When memoryd
 * cannot be reached it throws a {@link MemorydError} (also a `ToolError`)
 * whose text says whether the command was applied. Each call is one
 * {@link MemorydClient.execute}: a write gets its own `Idempotency-Key`
 * (unless the client has `idempotencyKeys: false`), so the client's retries
 * of one tool call apply the write at most once.
 *
 * @param options Client options, or a {@link MemorydClient} to share.
 * @returns Handlers for `betaMemoryTool()` from `@anthropic-ai/sdk/helpers/beta/memory`.
 */
export function createMemorydHandlers(options: MemorydClientOptions | MemorydClient): MemoryToolHandlers {
  const client = options instanceof MemorydClient ? options : new MemorydClient(options);
  const run = async (command: MemoryCommand): Promise<string> => {
    const result = await client.execute(command);
    if (result.isError) throw new ToolError(result.content);
    return result.content;
  };
  return { view: run, create: run, str_replace: run, insert: run, delete: run, rename: run };
}

/**
 * Claude's memory tool (`memory_20250818`) backed by memoryd, ready for the
 * SDK's tool runner:
 *
 * ```ts
 * const runner = client.beta.messages.toolRunner({
 *   model: 'claude-sonnet-4-5',
 *   max_tokens: 4096,
 *   messages: [{ role: 'user', content: 'Remember that I prefer tabs.' }],
 *   tools: [memorydMemoryTool({ baseUrl: 'http://127.0.0.1:8080', tenant: 'user-42' })],
 * });
 * const final = await runner.runUntilDone();
 * ```
 *
 * @param options Client options, or a {@link MemorydClient} to share.
 * @param extraProps Additional tool definition properties (e.g. `cache_control`).
 * @returns `betaMemoryTool(createMemorydHandlers(options), extraProps)`.
 */
export function memorydMemoryTool(
  options: MemorydClientOptions | MemorydClient,
  extraProps?: MemoryToolExtraProps,
): BetaRunnableTool<MemoryCommand> {
  return betaMemoryTool(createMemorydHandlers(options), extraProps);
}
