/**
 * `@memoryd/client`: Claude's memory tool (`memory_20250818`) for the
 * `@anthropic-ai/sdk` tool runner, executed by a memoryd service; a
 * `memory_search` tool; and a client for memoryd's `/v1` API (search,
 * history, versions, restore, the change feed).
 *
 * @packageDocumentation
 */
export { memorydMemoryTool, createMemorydHandlers } from './tool.js';
export type { MemoryToolHandlers, MemoryToolExtraProps } from './tool.js';
export { memorydSearchTool, MEMORY_SEARCH_TOOL_NAME, MEMORY_SEARCH_TOOL_DESCRIPTION } from './search-tool.js';
export type { MemorySearchInput, MemorySearchToolExtraProps } from './search-tool.js';
export {
  MemorydClient,
  DEFAULT_TIMEOUT_MS,
  DEFAULT_RETRIES,
  DEFAULT_RETRY_DELAY_MS,
  DEFAULT_MAX_RETRY_DELAY_MS,
  DEFAULT_TENANT_HEADER,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_PREFIX,
} from './client.js';
export type {
  MemoryCommand,
  MemorydClientOptions,
  MemorydResult,
  MemorydRetryEvent,
  MemorydRetryReason,
  ExecuteOptions,
} from './client.js';
export type {
  ApiCallOptions,
  SearchOptions,
  SearchLine,
  SearchHit,
  SearchPage,
  HistoryOptions,
  HistoryPage,
  VersionCommand,
  VersionEntry,
  VersionDetail,
  RestoreRequest,
  ClearOptions,
  ClearResult,
  RestoreOptions,
  RestoreResult,
  ChangesOptions,
  FollowOptions,
  Change,
  ChangeFeed,
} from './v1.js';
export { MemorydError, ToolError } from './errors.js';
export type { MemorydErrorKind, MemorydErrorDetails } from './errors.js';
