import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';

/**
 * Why a command could not be carried out by memoryd (as opposed to memoryd
 * answering a memory command with an error result, which `execute` returns, not
 * throws), or why a `/v1` call failed:
 *
 * - `connection_refused` – nothing was listening; the request was never sent,
 *   so the command was not applied.
 * - `timeout` – no complete answer within `timeoutMs`.
 * - `connection_lost` – the connection failed after it was opened (reset,
 *   closed early, DNS or TLS failure, …).
 * - `unexpected_response` – an HTTP answer that is not memoryd's result: not a
 *   `tool_result` (e.g. a reverse proxy's 401 or 413 page), or a gateway's 502,
 *   503 or 504, whatever its body.
 * - `aborted` – the caller's `AbortSignal` fired.
 * - `rejected` – memoryd answered a `/v1` call (search, history, version, restore,
 *   changes) with its error (`{"error": …}`: 400, 404, 409, 410, 412, …); the text is
 *   `Error: ` and memoryd's, `status` the HTTP status. Nothing was changed.
 */
export type MemorydErrorKind =
  | 'connection_refused'
  | 'timeout'
  | 'connection_lost'
  | 'unexpected_response'
  | 'aborted'
  | 'rejected';

/** Fields of a {@link MemorydError} besides its text. */
export interface MemorydErrorDetails {
  /** What went wrong. */
  kind: MemorydErrorKind;
  /** The command that was sent (`view`, `create`, …, or `unknown`), or the `/v1` call (`search`, `restore`, …). */
  command: string;
  /**
   * True when a write may or may not have been applied (it was sent, and no
   * answer from memoryd came back, on any of its attempts). The model should
   * view before retrying.
   */
  outcomeUnknown: boolean;
  /** How many HTTP attempts were made (1 + retries used). */
  attempts: number;
  /** HTTP status of the last answer, when there was one. */
  status?: number | undefined;
  /** The underlying error (a `fetch` failure), when there was one. */
  cause?: unknown;
  /** The `Idempotency-Key` the write was sent with, if any. */
  idempotencyKey?: string | undefined;
}

/**
 * Thrown by {@link MemorydClient.execute} (and so by the memory tool's
 * handlers) when memoryd could not be asked or did not give a proper answer,
 * and by the `/v1` calls (`search`, `history`, `version`, `restore`, `changes`)
 * also when memoryd answered with an error (kind `rejected`).
 *
 * It is a `ToolError` of `@anthropic-ai/sdk`: when it escapes a tool's `run`,
 * the SDK's tool runner sends its text to the model verbatim as a
 * `tool_result` with `is_error: true`. The text always starts with `Error: `,
 * says whether the command was applied, and tells the model what to do.
 */
export class MemorydError extends ToolError {
  /** The tool result text (same as `message`). */
  declare readonly content: string;
  /** What went wrong. */
  readonly kind: MemorydErrorKind;
  /** The command that was sent (`view`, `create`, …), or `unknown`. */
  readonly command: string;
  /** True when a write was sent and it is unknown whether it was applied. */
  readonly outcomeUnknown: boolean;
  /** How many HTTP attempts were made. */
  readonly attempts: number;
  /** HTTP status of the last answer, if any. */
  readonly status: number | undefined;
  /**
   * The `Idempotency-Key` the write was sent with (undefined for `view`, or with
   * `idempotencyKeys: false`). When {@link outcomeUnknown} is true, sending the same
   * command again with this key (`execute(command, { idempotencyKey })`) within 24 hours
   * settles it: memoryd answers with the first answer if the write was applied, and
   * applies it otherwise — never twice.
   */
  readonly idempotencyKey: string | undefined;

  /**
   * @param text The message, which is also the tool result text.
   * @param details Structured fields.
   */
  constructor(text: string, details: MemorydErrorDetails) {
    super(text);
    this.name = 'MemorydError';
    this.kind = details.kind;
    this.command = details.command;
    this.outcomeUnknown = details.outcomeUnknown;
    this.attempts = details.attempts;
    this.status = details.status;
    this.idempotencyKey = details.idempotencyKey;
    if (details.cause !== undefined) {
      Object.defineProperty(this, 'cause', { value: details.cause, configurable: true, writable: true });
    }
  }
}

export { ToolError };
