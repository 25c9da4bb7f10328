/**
 * The `memory_search` tool for the SDK's tool runner: full-text search of the tenant's
 * `/memories` files through memoryd's `GET /v1/search` (`format=text`), the same tool,
 * input and text as memoryd's MCP tool of that name.
 *
 * @module
 */
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import type { BetaTool } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import { MemorydClient, type MemorydClientOptions } from './client.js';
import { ToolError } from './errors.js';

/**
 * The input the model sends to `memory_search`: `GET /v1/search`'s parameters. (A type, not an
 * interface: the schema allows other keys, which the tool ignores.)
 */
export type MemorySearchInput = {
  /** The words to find (a phrase in double quotes). */
  q: string;
  /** A directory (or file) to search in; default `/memories`. */
  path?: string;
  /** Files per page, 1 to 100 (default 10). */
  limit?: number;
  /** The next page: the cursor the previous answer ended with. */
  cursor?: string;
};

/**
 * Extra Claude API properties of the tool definition (e.g. `cache_control`), as the SDK's
 * `betaTool()` takes them.
 */
export type MemorySearchToolExtraProps = Omit<BetaTool, 'type' | 'name' | 'description' | 'input_schema'>;

/** The tool's name, as the model calls it. */
export const MEMORY_SEARCH_TOOL_NAME = 'memory_search';

/** The tool's description (memoryd's MCP tool's). */
export const MEMORY_SEARCH_TOOL_DESCRIPTION =
  'Full-text search of the /memories files: the files that contain every word of the query ' +
  '(where a word begins), best first, with the numbers and text of their matching lines. ' +
  'Use it to find a note before viewing it.';

const INPUT_SCHEMA = {
  type: 'object',
  properties: {
    q: { type: 'string', description: 'Words to find (each where a word begins, ASCII letters without case); a phrase in double quotes.' },
    path: { type: 'string', description: 'Search this directory (or file) only; default /memories.' },
    limit: { type: 'integer', minimum: 1, maximum: 100, description: 'Files per page (default 10).' },
    cursor: { type: 'string', description: 'The next page: the cursor the previous answer ended with.' },
  },
  required: ['q'],
} as const;

/**
 * `memory_search`, ready for the SDK's tool runner, next to the memory tool:
 *
 * ```ts
 * const memoryd = new MemorydClient({ baseUrl: 'http://127.0.0.1:8080', tenant: 'user-42' });
 * const runner = client.beta.messages.toolRunner({
 *   model: 'claude-opus-4-6',
 *   max_tokens: 4096,
 *   messages: [{ role: 'user', content: 'What did we decide about billing?' }],
 *   tools: [memorydMemoryTool(memoryd), memorydSearchTool(memoryd)],
 * });
 * ```
 *
 * The model gets memoryd's text: `Files in /memories that match billing (best first, 1 to 2):`
 * and each file's path with its first matching lines (numbered as `view` numbers them), or
 * `No file in /memories matches billing.`; an error as `Error: ` and memoryd's text (e.g.
 * `Error: Parameter \`limit\` must be an integer from 1 to 100`), with `is_error: true`.
 *
 * @param options Client options, or a {@link MemorydClient} to share.
 * @param extraProps Additional tool definition properties (e.g. `cache_control`).
 */
export function memorydSearchTool(
  options: MemorydClientOptions | MemorydClient,
  extraProps?: MemorySearchToolExtraProps,
): BetaRunnableTool<MemorySearchInput> {
  const client = options instanceof MemorydClient ? options : new MemorydClient(options);
  return betaTool({
    ...extraProps,
    name: MEMORY_SEARCH_TOOL_NAME,
    description: MEMORY_SEARCH_TOOL_DESCRIPTION,
    inputSchema: INPUT_SCHEMA,
    run: async (input, context) => {
      // The SDK does not check the input against the schema: the texts of memoryd's MCP tool.
      const args = (input ?? {}) as Record<string, unknown>;
      for (const [name, integer] of [['q', false], ['path', false], ['limit', true], ['cursor', false]] as const) {
        const v = args[name];
        if (v !== undefined && (integer ? !Number.isInteger(v) : typeof v !== 'string')) {
          throw new ToolError(`Error: Parameter \`${name}\` must be ${integer ? 'an integer' : 'a string'}`);
        }
      }
      return client.searchText(args['q'] as string, {
        path: args['path'] as string | undefined,
        limit: args['limit'] as number | undefined,
        cursor: args['cursor'] as string | undefined,
        signal: context?.signal ?? undefined,
      });
    },
  }) as BetaRunnableTool<MemorySearchInput>;
}
