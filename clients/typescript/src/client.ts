import type { BetaMemoryTool20250818Command } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import { MemorydError } from './errors.js';

/** A memory tool command: exactly the `input` of Claude's memory `tool_use` block. */
export type MemoryCommand = BetaMemoryTool20250818Command;

/** Default per-attempt timeout, in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 10_000;
/** Default number of retries after the first attempt. */
export const DEFAULT_RETRIES = 2;
/** Default first backoff delay, in milliseconds (doubled on each retry). */
export const DEFAULT_RETRY_DELAY_MS = 250;
/** Default cap on any wait between attempts, `Retry-After` included, in milliseconds. */
export const DEFAULT_MAX_RETRY_DELAY_MS = 5_000;
/** Default tenant header name (memoryd's `--tenant-header`). */
export const DEFAULT_TENANT_HEADER = 'X-Tenant-ID';

const TENANT_RE = /^[A-Za-z0-9._-]{1,128}$/;

/** Options of {@link MemorydClient}. */
export interface MemorydClientOptions {
  /**
   * Where memoryd (or the reverse proxy in front of it) listens, e.g.
   * `http://127.0.0.1:8080` or `https://gateway.example.com/memoryd`.
   * Commands are posted to `{baseUrl}/memory`.
   */
  baseUrl: string | URL;
  /**
   * The tenant whose `/memories` the commands use, sent in the
   * {@link tenantHeader} header (1–128 characters of `A-Z a-z 0-9 . _ -`).
   * Leave it out behind an authenticating proxy that sets the tenant itself
   * (use {@link apiKey}), or to use memoryd's default tenant.
   */
  tenant?: string | undefined;
  /** Name of the tenant header. Default `X-Tenant-ID`. */
  tenantHeader?: string | undefined;
  /** Sent as `Authorization: Bearer <apiKey>` (for an authenticating reverse proxy). */
  apiKey?: string | undefined;
  /** Extra request headers (sent on every request; the headers above win). */
  headers?: Record<string, string> | undefined;
  /** Time limit of one HTTP attempt, answer body included, in ms. Default 10 000. */
  timeoutMs?: number | undefined;
  /**
   * How many times to try again after a failed attempt, where that is safe
   * (see the retry policy in the README). Default 2; 0 disables retries.
   */
  retries?: number | undefined;
  /** First backoff delay in ms, doubled on each retry, with jitter (50–100 %). Default 250. */
  retryDelayMs?: number | undefined;
  /** Upper bound of any wait between attempts, including a server's `Retry-After`, in ms. Default 5 000. */
  maxRetryDelayMs?: number | undefined;
  /** The `fetch` to use. Default: the global `fetch` (Node.js ≥ 18). */
  fetch?: typeof globalThis.fetch | undefined;
  /** Called before each retry (for logging or metrics). What it throws is ignored. */
  onRetry?: ((event: MemorydRetryEvent) => void) | undefined;
}

/** Why an attempt is being retried. */
export type MemorydRetryReason =
  /** memoryd answered 503: overloaded or shutting down; the command was not applied. */
  | 'unavailable'
  /** 429 Too Many Requests (a rate limit, e.g. the proxy's): the command was not applied. */
  | 'rate_limited'
  /** The connection was refused: the request was never sent. */
  | 'connection_refused'
  /** `view` only: no answer within `timeoutMs`. */
  | 'timeout'
  /** `view` only: the connection failed after it was opened. */
  | 'connection_lost'
  /**
   * `view` only: a gateway answered 502 or 504 (whatever the body: memoryd never sends
   * these), or 503 without a memoryd result.
   */
  | 'bad_gateway';

/** What {@link MemorydClientOptions.onRetry} is told. */
export interface MemorydRetryEvent {
  /** The command being sent (`view`, `create`, …). */
  command: string;
  /** The attempt that failed (1 for the first). */
  attempt: number;
  /** Why it is retried. */
  reason: MemorydRetryReason;
  /** HTTP status of the failed attempt, when it got an answer. */
  status?: number | undefined;
  /** How long the client waits before the next attempt, in ms. */
  delayMs: number;
}

/** memoryd's answer to one command. */
export interface MemorydResult {
  /** The `tool_result` text, exactly as memoryd sent it. */
  content: string;
  /** memoryd's `is_error`. */
  isError: boolean;
  /** The HTTP status (200 on success; 400, 404, 409, 413, 422, 500, 503 … on errors). */
  status: number;
}

/** Per-call options of {@link MemorydClient.execute}. */
export interface ExecuteOptions {
  /** Aborts the request (and any wait between attempts). */
  signal?: AbortSignal | undefined;
}

/** What one attempt produced. */
type Attempt =
  | {
      type: 'answer';
      status: number;
      statusText: string;
      contentType: string;
      text: string;
      retryAfterMs: number | undefined;
      result: MemorydResult | undefined;
    }
  | { type: 'failure'; kind: 'refused' | 'timeout' | 'lost' | 'aborted'; code: string | undefined; error: unknown };

/** Either a final outcome or a retry. */
type Step =
  | { final: MemorydResult }
  | { fail: MemorydError }
  | { retry: MemorydRetryReason; status?: number | undefined; retryAfterMs?: number | undefined; last: MemorydResult | MemorydError };

/**
 * A small HTTP client for memoryd's `POST /memory`.
 *
 * @example
 * ```ts
 * const memoryd = new MemorydClient({ baseUrl: 'http://127.0.0.1:8080', tenant: 'team-a' });
 * const r = await memoryd.execute({ command: 'view', path: '/memories' });
 * // r.content: "Here're the files and directories up to 2 levels deep in /memories, …"
 * // r.isError: false, r.status: 200
 * ```
 */
export class MemorydClient {
  /** The URL commands are posted to (`{baseUrl}/memory`). */
  readonly url: string;
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #retries: number;
  readonly #retryDelayMs: number;
  readonly #maxRetryDelayMs: number;
  readonly #fetch: typeof globalThis.fetch;
  readonly #onRetry: ((event: MemorydRetryEvent) => void) | undefined;

  /**
   * @param options Where memoryd is, who the tenant is, and the time limits.
   * @throws TypeError if an option is invalid (bad URL, tenant, header or number).
   */
  constructor(options: MemorydClientOptions) {
    if (options === null || typeof options !== 'object') throw new TypeError('MemorydClient: options are required');
    let base: URL;
    try {
      base = new URL(String(options.baseUrl));
    } catch {
      throw new TypeError(`MemorydClient: baseUrl is not a valid URL: ${String(options.baseUrl)}`);
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new TypeError(`MemorydClient: baseUrl must be http: or https:, got ${base.protocol}`);
    }
    base.search = '';
    base.hash = '';
    this.url = base.href.replace(/\/+$/, '') + '/memory';

    this.#timeoutMs = positive('timeoutMs', options.timeoutMs, DEFAULT_TIMEOUT_MS);
    this.#retries = wholeNumber('retries', options.retries, DEFAULT_RETRIES);
    this.#retryDelayMs = wholeNumber('retryDelayMs', options.retryDelayMs, DEFAULT_RETRY_DELAY_MS);
    this.#maxRetryDelayMs = wholeNumber('maxRetryDelayMs', options.maxRetryDelayMs, DEFAULT_MAX_RETRY_DELAY_MS);

    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    const tenantHeader = options.tenantHeader ?? DEFAULT_TENANT_HEADER;
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(tenantHeader)) {
      throw new TypeError(`MemorydClient: tenantHeader is not a valid header name: ${tenantHeader}`);
    }
    if (options.tenant !== undefined) {
      if (typeof options.tenant !== 'string' || !TENANT_RE.test(options.tenant)) {
        throw new TypeError('MemorydClient: tenant must be 1-128 characters of A-Z a-z 0-9 . _ -');
      }
      setHeader(headers, tenantHeader, options.tenant);
    }
    if (options.apiKey !== undefined) {
      if (typeof options.apiKey !== 'string' || options.apiKey === '' || /[\r\n]/.test(options.apiKey)) {
        throw new TypeError('MemorydClient: apiKey must be a non-empty string without line breaks');
      }
      setHeader(headers, 'Authorization', `Bearer ${options.apiKey}`);
    }
    setHeader(headers, 'Content-Type', 'application/json');
    setHeader(headers, 'Accept', 'application/json');
    this.#headers = headers;

    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== 'function') throw new TypeError('MemorydClient: no fetch available (Node.js >= 18 is required)');
    this.#fetch = f;
    this.#onRetry = options.onRetry;
  }

  /**
   * Sends one command to memoryd and returns its answer, retrying where that
   * is safe: any command after a 503 from memoryd or a 429 (it was not
   * applied; `Retry-After` is honoured up to `maxRetryDelayMs`) or a refused
   * connection (never sent); `view` also after a timeout, a lost connection
   * or a gateway's 502/504 (or a 503 that is not memoryd's). A write is never
   * sent again once it may have reached memoryd.
   *
   * Error results (is_error: true, any status) are returned, not thrown:
   * memoryd's, and those a proxy sends in the same shape (docker/nginx.conf's
   * 401, 413); after the last retry a 503's, 429's, 502's or 504's result is
   * returned the same way.
   *
   * @param command The command object, sent verbatim as the JSON body.
   * @param options An `AbortSignal` for the whole call.
   * @returns memoryd's `content`, `is_error` and HTTP status.
   * @throws MemorydError (a `ToolError`) when memoryd could not be reached or
   *   did not answer with a `tool_result`; its text says whether the command
   *   was applied.
   */
  async execute(command: MemoryCommand, options: ExecuteOptions = {}): Promise<MemorydResult> {
    const name = commandName(command);
    const body = JSON.stringify(command);
    const readOnly = name === 'view';
    const signal = options.signal;

    for (let attempt = 1; ; attempt++) {
      const outcome = await this.#attempt(body, signal);
      const step = decide(outcome, { command, name, readOnly, attempts: attempt, timeoutMs: this.#timeoutMs });
      if ('final' in step) return step.final;
      if ('fail' in step) throw step.fail;
      if (attempt > this.#retries || signal?.aborted) {
        if (step.last instanceof MemorydError) throw step.last;
        return step.last;
      }
      const backoff = Math.min(this.#maxRetryDelayMs, this.#retryDelayMs * 2 ** (attempt - 1));
      const delayMs =
        step.retryAfterMs !== undefined
          ? Math.min(step.retryAfterMs, this.#maxRetryDelayMs)
          : Math.round(backoff * (0.5 + Math.random() * 0.5));
      try {
        this.#onRetry?.({ command: name, attempt, reason: step.retry, status: step.status, delayMs });
      } catch {
        // A logging hook must not change the outcome of the command.
      }
      try {
        await sleep(delayMs, signal);
      } catch (error) {
        // Aborted while waiting: nothing more was sent since the last attempt.
        if (step.last instanceof MemorydError) throw step.last;
        throw abortedError(name, readOnly, attempt, error, command, false);
      }
    }
  }

  /** One HTTP attempt, with its own timeout. Never throws. */
  async #attempt(body: string, signal: AbortSignal | undefined): Promise<Attempt> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error('memoryd request timed out'));
    }, this.#timeoutMs);
    const onAbort = (): void => controller.abort(signal?.reason);
    if (signal) {
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
    try {
      const res = await this.#fetch(this.url, {
        method: 'POST',
        headers: this.#headers,
        body,
        signal: controller.signal,
        redirect: 'manual',
      });
      const text = await res.text();
      return {
        type: 'answer',
        status: res.status,
        statusText: res.statusText,
        contentType: res.headers.get('content-type') ?? '',
        text,
        retryAfterMs: parseRetryAfter(res.headers.get('retry-after')),
        result: parseToolResult(text, res.status),
      };
    } catch (error) {
      const code = errorCode(error);
      if (timedOut) return { type: 'failure', kind: 'timeout', code, error };
      if (signal?.aborted) return { type: 'failure', kind: 'aborted', code, error };
      return { type: 'failure', kind: isRefused(error) ? 'refused' : 'lost', code, error };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

interface Context {
  command: MemoryCommand;
  name: string;
  readOnly: boolean;
  attempts: number;
  timeoutMs: number;
}

/**
 * The retry policy: what to do with the outcome of one attempt. The status decides first,
 * whatever the body: a proxy may answer in memoryd's `tool_result` shape (docker/nginx.conf
 * does for 401, 413, 429, 502 and 504), so a `tool_result` body alone does not say that
 * memoryd handled the command.
 */
function decide(outcome: Attempt, ctx: Context): Step {
  const { name, readOnly, attempts } = ctx;
  if (outcome.type === 'answer') {
    const { status, result, retryAfterMs } = outcome;
    const what = `HTTP ${status}${outcome.statusText ? ' ' + outcome.statusText : ''}`;
    const shown = snippet(outcome.text);
    // One or more sentences saying what came back.
    const answered = result
      ? `Error: The memory service answered the ${name} command with ${what}, a gateway's error: "${fullStop(snippet(result.content))}"`
      : `Error: The memory service answered the ${name} command with ${what}, which is not a memoryd result` +
        ` (${outcome.contentType || 'no content type'}${shown ? `: ${shown}` : ', empty body'}).`;
    const details = { kind: 'unexpected_response', command: name, attempts, status } as const;
    // After the last attempt, for an answer that is not a tool_result (whose own text is returned instead).
    const tryAgain = (notApplied: boolean): MemorydError =>
      new MemorydError(
        `${answered.slice(0, -1)}${triedText(attempts)}${notApplied ? `; the ${name} command was not applied` : ''}. Try again later.`,
        { ...details, outcomeUnknown: false },
      );

    // Refused before the command was looked at (a rate limit): not applied, so safe to
    // send again, writes included.
    if (status === 429) return { retry: 'rate_limited', status, retryAfterMs, last: result ?? tryAgain(true) };
    // memoryd's own 503 says the command was not applied: safe to send again.
    if (status === 503 && result) return { retry: 'unavailable', status, retryAfterMs, last: result };
    // A gateway's failure: memoryd never answers 502 or 504. The request may have reached
    // memoryd before the gateway gave up on it: only a read is sent again.
    if (status === 502 || status === 504 || status === 503) {
      if (readOnly) return { retry: 'bad_gateway', status, retryAfterMs, last: result ?? tryAgain(false) };
      return { fail: new MemorydError(`${answered} ${unknownOutcome(ctx.command)}`, { ...details, outcomeUnknown: true }) };
    }
    if (result) return { final: result };
    if (!readOnly && (status >= 500 || status === 408)) {
      // The request may have reached memoryd before the proxy gave up on it.
      return { fail: new MemorydError(`${answered} ${unknownOutcome(ctx.command)}`, { ...details, outcomeUnknown: true }) };
    }
    return { fail: new MemorydError(answered, { ...details, outcomeUnknown: false }) };
  }

  const { kind, code, error } = outcome;
  const reason = (code && FRIENDLY_CODES[code]) ?? code ?? innermostMessage(error);
  const because = reason ? ` (${reason})` : '';
  switch (kind) {
    case 'refused':
      return {
        retry: 'connection_refused',
        last: new MemorydError(
          `Error: Could not connect to the memory service: connection refused${triedText(attempts)}; the ${name} command was not applied. Try again later.`,
          { kind: 'connection_refused', command: name, outcomeUnknown: false, attempts, cause: error },
        ),
      };
    case 'aborted':
      return { fail: abortedError(name, readOnly, attempts, error, ctx.command, true) };
    case 'timeout':
      if (readOnly) {
        return {
          retry: 'timeout',
          last: new MemorydError(
            `Error: The memory service did not answer the view command within ${ctx.timeoutMs} ms${triedText(attempts)}. Try again later.`,
            { kind: 'timeout', command: name, outcomeUnknown: false, attempts, cause: error },
          ),
        };
      }
      return {
        fail: new MemorydError(
          `Error: The memory service did not answer the ${name} command within ${ctx.timeoutMs} ms. ${unknownOutcome(ctx.command)}`,
          { kind: 'timeout', command: name, outcomeUnknown: true, attempts, cause: error },
        ),
      };
    case 'lost':
      if (readOnly) {
        return {
          retry: 'connection_lost',
          last: new MemorydError(
            `Error: The connection to the memory service failed${because} before it answered the view command${triedText(attempts)}. Try again later.`,
            { kind: 'connection_lost', command: name, outcomeUnknown: false, attempts, cause: error },
          ),
        };
      }
      return {
        fail: new MemorydError(
          `Error: The connection to the memory service failed${because} before it answered the ${name} command. ${unknownOutcome(ctx.command)}`,
          { kind: 'connection_lost', command: name, outcomeUnknown: true, attempts, cause: error },
        ),
      };
  }
}

function abortedError(
  name: string,
  readOnly: boolean,
  attempts: number,
  error: unknown,
  command: MemoryCommand,
  inFlight: boolean,
): MemorydError {
  const unknown = inFlight && !readOnly;
  return new MemorydError(
    unknown
      ? `Error: The ${name} command was cancelled while it was being sent to the memory service. ${unknownOutcome(command)}`
      : `Error: The ${name} command was cancelled before the memory service answered.`,
    { kind: 'aborted', command: name, outcomeUnknown: unknown, attempts, cause: error },
  );
}

/** The advice for a write whose outcome is unknown. */
function unknownOutcome(command: MemoryCommand): string {
  return `It is unknown whether the command was applied: view ${target(command)} to check before retrying.`;
}

function triedText(attempts: number): string {
  return attempts > 1 ? ` (tried ${attempts} times)` : '';
}

/** The path(s) the model should view to learn a write's outcome. */
function target(command: MemoryCommand): string {
  const c = command as unknown as Record<string, unknown>;
  if (typeof c['old_path'] === 'string' && typeof c['new_path'] === 'string') return `${c['old_path']} and ${c['new_path']}`;
  if (typeof c['path'] === 'string') return c['path'];
  return 'the affected path';
}

function commandName(command: unknown): string {
  if (command !== null && typeof command === 'object') {
    const c = (command as Record<string, unknown>)['command'];
    if (typeof c === 'string' && /^[a-z_]{1,32}$/.test(c)) return c;
  }
  return 'unknown';
}

/** memoryd's answer as a result, or undefined if the body is not a memoryd `tool_result`. */
function parseToolResult(text: string, status: number): MemorydResult | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  if (v['type'] !== 'tool_result' || typeof v['content'] !== 'string' || typeof v['is_error'] !== 'boolean') return undefined;
  return { content: v['content'], isError: v['is_error'], status };
}

/** `Retry-After` (delta-seconds or HTTP-date) in ms, or undefined. */
function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** `text` ending with a full stop (or another sentence end). */
function fullStop(text: string): string {
  return /[.!?…]$/.test(text) ? text : `${text}.`;
}

/** The start of an unexpected body, on one line. */
function snippet(text: string): string {
  const s = text.replace(/\s+/g, ' ').trim();
  return s.length > 200 ? s.slice(0, 200) + '…' : s;
}

/** Node's error code of a `fetch` failure (`ECONNREFUSED`, `ECONNRESET`, `UND_ERR_SOCKET`, …). */
function errorCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e !== null && typeof e === 'object' && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Readable names of common `fetch` failure codes. */
const FRIENDLY_CODES: Record<string, string> = {
  UND_ERR_SOCKET: 'connection closed by the server',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed by the server',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'DNS lookup failed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'connect timed out',
};

/** The message of the deepest `cause` of an error (e.g. `other side closed`). */
function innermostMessage(error: unknown): string | undefined {
  let message: string | undefined;
  for (let e: unknown = error, depth = 0; e !== null && typeof e === 'object' && depth < 5; depth++) {
    const m = (e as { message?: unknown }).message;
    if (typeof m === 'string' && m !== '') message = m;
    e = (e as { cause?: unknown }).cause;
  }
  return message;
}

/** Whether the connection was refused, so the request was never sent. */
function isRefused(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e !== null && typeof e === 'object' && depth < 5; depth++) {
    if ((e as { code?: unknown }).code === 'ECONNREFUSED') return true;
    // A host with several addresses fails with an AggregateError: refused only if every address refused.
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.length > 0) {
      return errors.every((x: unknown) => (x as { code?: unknown } | null)?.code === 'ECONNREFUSED');
    }
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function setHeader(headers: Record<string, string>, name: string, value: string): void {
  for (const k of Object.keys(headers)) if (k.toLowerCase() === name.toLowerCase()) delete headers[k];
  headers[name] = value;
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(`MemorydClient: ${name} must be a positive number`);
  }
  return value;
}

function wholeNumber(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new TypeError(`MemorydClient: ${name} must be a whole number >= 0`);
  }
  return value;
}
