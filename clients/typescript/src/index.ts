/**
 * `@memoryd/client`: Claude's memory tool (`memory_20250818`) for the
 * `@anthropic-ai/sdk` tool runner, executed by a memoryd service.
 *
 * @packageDocumentation
 */
export { memorydMemoryTool, createMemorydHandlers } from './tool.js';
export type { MemoryToolHandlers, MemoryToolExtraProps } from './tool.js';
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
export { MemorydError, ToolError } from './errors.js';
export type { MemorydErrorKind, MemorydErrorDetails } from './errors.js';
