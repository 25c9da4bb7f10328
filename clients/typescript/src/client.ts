import { randomUUID } from 'node:crypto';
import type { BetaMemoryTool20250818Command } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import { MemorydError, type MemorydErrorDetails, type MemorydErrorKind } from './errors.js';

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

/** Name of the request header that carries a write's idempotency key. */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
/** Prefix of the idempotency keys the client makes (`mdc-` and a random UUID). */
export const IDEMPOTENCY_KEY_PREFIX = 'mdc-';

const TENANT_RE = /^[A-Za-z0-9._-]{1,128}$/;
/** memoryd's rule for an `Idempotency-Key`: 1–255 visible ASCII characters. */
const IDEMPOTENCY_KEY_RE = /^[\x21-\x7e]{1,255}$/;

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
  /**
   * Whether each write (`create`, `str_replace`, `insert`, `delete`, `rename`) gets an
   * idempotency key. Default `true`: every {@link MemorydClient.execute} call of a write
   * makes one key (`mdc-` and a random UUID) and sends it as the `Idempotency-Key` header
   * on each of its attempts, so memoryd applies the write at most once and answers a retry
   * with the first answer. The write is then also retried after a timeout, a lost connection
   * or a gateway's 502/504 (or a 503 that is not memoryd's), like a `view`.
   *
   * `false` sends no key (unless a call passes its own {@link ExecuteOptions.idempotencyKey})
   * and restores the stricter policy: a write that may have reached memoryd is never sent
   * again, its outcome is reported as unknown. Use it against a memoryd that does not
   * support `Idempotency-Key` (one that ignores the header would apply a retried write twice).
   */
  idempotencyKeys?: boolean | undefined;
}

/** Why an attempt is being retried. */
export type MemorydRetryReason =
  /** memoryd answered 503: overloaded or shutting down; the command was not applied. */
  | 'unavailable'
  /** 429 Too Many Requests (a rate limit, e.g. the proxy's): the command was not applied. */
  | 'rate_limited'
  /** The connection was refused: the request was never sent. */
  | 'connection_refused'
  /** No answer within `timeoutMs` (`view`, and a write sent with an idempotency key). */
  | 'timeout'
  /**
   * The connection failed after it was opened (`view`, and a write sent with an
   * idempotency key).
   */
  | 'connection_lost'
  /**
   * A gateway answered 502 or 504 (whatever the body: memoryd never sends these), or 503
   * without a memoryd result (`view`, and a write sent with an idempotency key).
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
  /**
   * The write's `Idempotency-Key`, sent again on the next attempt (present only for a
   * write sent with a key).
   */
  idempotencyKey?: string;
}

/** memoryd's answer to one command. */
export interface MemorydResult {
  /** The `tool_result` text, exactly as memoryd sent it. */
  content: string;
  /** memoryd's `is_error`. */
  isError: boolean;
  /** The HTTP status (200 on success; 400, 404, 409, 413, 422, 500, 503 … on errors). */
  status: number;
  /**
   * True when memoryd answered with the stored first answer of an earlier attempt with
   * the same idempotency key (response header `Idempotent-Replayed: true`): the write was
   * applied (or refused) once, by that attempt, and not again.
   */
  replayed: boolean;
}

/** Per-call options of {@link MemorydClient.execute}. */
export interface ExecuteOptions {
  /** Aborts the request (and any wait between attempts). */
  signal?: AbortSignal | undefined;
  /**
   * The `Idempotency-Key` of this write (1–255 visible ASCII characters), instead of a new
   * random one; sent even when {@link MemorydClientOptions.idempotencyKeys} is `false`.
   * Pass the {@link MemorydError.idempotencyKey} of a call that ended with an unknown
   * outcome, with the same command, to learn its outcome without applying it twice: within
   * 24 hours memoryd answers with the first answer if it was applied, or applies it now.
   * A key the same tenant used with another command in the last 24 hours gets memoryd's
   * 422 error result (returned, not retried). Ignored for `view`.
   */
  idempotencyKey?: string | undefined;
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

/**
 * What to do after an attempt: return a result, throw an error, or try again. `unknown`:
 * this attempt of a write may have been applied (sent, and no memoryd answer came back).
 */
type Step =
  | { final: MemorydResult }
  | { fail: MemorydError }
  | { retry: MemorydRetryReason; status?: number | undefined; retryAfterMs?: number | undefined; unknown: boolean };

/**
 * A small HTTP client for memoryd's `POST /memory`.
 *
 * @example
 * ```ts
 * const memoryd = new MemorydClient({ baseUrl: 'http://127.0.0.1:8080', tenant: 'team-a' });
 * const r = await memoryd.execute({ command: 'view', path: '/memories' });
 * // r.content: "Here're the files and directories up to 2 levels deep in /memories, …"
 * // r.isError: false, r.status: 200, r.replayed: false
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
  readonly #idempotencyKeys: boolean;

  /**
   * @param options Where memoryd is, who the tenant is, and the time limits.
   * @throws TypeError if an option is invalid (bad URL, tenant, header or number, or an
   *   `Idempotency-Key` among `headers`: keys are made per call).
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
    if (options.idempotencyKeys !== undefined && typeof options.idempotencyKeys !== 'boolean') {
      throw new TypeError('MemorydClient: idempotencyKeys must be true or false');
    }
    this.#idempotencyKeys = options.idempotencyKeys ?? true;

    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (Object.keys(headers).some((k) => k.toLowerCase() === IDEMPOTENCY_KEY_HEADER.toLowerCase())) {
      // One key for every write would make memoryd answer each new write with the first one's answer.
      throw new TypeError('MemorydClient: headers must not set Idempotency-Key (one key per write: see the idempotencyKey option of execute)');
    }
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
   * connection (never sent); `view`, and a write sent with an idempotency key
   * (the default), also after a timeout, a lost connection or a gateway's
   * 502/504 (or a 503 that is not memoryd's). A write gets one
   * `Idempotency-Key` per call, sent on each of its attempts: memoryd applies
   * it at most once and answers a retry with the first answer (`replayed`).
   * Without a key a write is never sent again once it may have reached memoryd.
   *
   * Error results (is_error: true, any status) are returned, not thrown:
   * memoryd's (its 422 for a key reused with another command included), and
   * those a proxy sends in the same shape (docker/nginx.conf's 401, 413);
   * after the last retry of a `view`, or of a write that was certainly not
   * applied, a 503's, 429's, 502's or 504's result is returned the same way.
   *
   * @param command The command object, sent verbatim as the JSON body.
   * @param options An `AbortSignal` for the whole call; the write's own idempotency key.
   * @returns memoryd's `content`, `is_error`, HTTP status and whether it was a replay.
   * @throws MemorydError (a `ToolError`) when memoryd could not be reached or
   *   did not answer with a `tool_result`; its text says whether the command
   *   was applied, and for a write sent with a key it carries the key.
   * @throws TypeError if `options.idempotencyKey` is not 1–255 visible ASCII characters.
   */
  async execute(command: MemoryCommand, options: ExecuteOptions = {}): Promise<MemorydResult> {
    const name = commandName(command);
    const body = JSON.stringify(command);
    const readOnly = name === 'view';
    const signal = options.signal;
    let key: string | undefined;
    if (!readOnly) {
      if (options.idempotencyKey !== undefined) {
        if (typeof options.idempotencyKey !== 'string' || !IDEMPOTENCY_KEY_RE.test(options.idempotencyKey)) {
          throw new TypeError('MemorydClient: idempotencyKey must be 1-255 visible ASCII characters');
        }
        key = options.idempotencyKey;
      } else if (this.#idempotencyKeys) {
        key = IDEMPOTENCY_KEY_PREFIX + randomUUID();
      }
    }
    const headers = key === undefined ? this.#headers : { ...this.#headers, [IDEMPOTENCY_KEY_HEADER]: key };
    // Whether an earlier attempt of this write may have been applied.
    let unsure = false;

    for (let attempt = 1; ; attempt++) {
      const outcome = await this.#attempt(body, headers, signal);
      const ctx: Context = {
        command,
        name,
        readOnly,
        key,
        attempts: attempt,
        timeoutMs: this.#timeoutMs,
        canRetry: attempt <= this.#retries && !signal?.aborted,
        unsure,
      };
      const step = decide(outcome, ctx);
      if ('final' in step) return step.final;
      if ('fail' in step) throw step.fail;
      unsure ||= step.unknown;
      const backoff = Math.min(this.#maxRetryDelayMs, this.#retryDelayMs * 2 ** (attempt - 1));
      const delayMs =
        step.retryAfterMs !== undefined
          ? Math.min(step.retryAfterMs, this.#maxRetryDelayMs)
          : Math.round(backoff * (0.5 + Math.random() * 0.5));
      try {
        this.#onRetry?.({
          command: name,
          attempt,
          reason: step.retry,
          status: step.status,
          delayMs,
          ...(key === undefined ? {} : { idempotencyKey: key }),
        });
      } catch {
        // A logging hook must not change the outcome of the command.
      }
      try {
        await sleep(delayMs, signal);
      } catch (error) {
        // Aborted while waiting: nothing more was sent since the last attempt, whose
        // outcome decides, as if it had been the last one.
        const last = decide(outcome, { ...ctx, canRetry: false, unsure });
        if ('fail' in last) throw last.fail;
        throw abortedError({ ...ctx, unsure }, error, false);
      }
    }
  }

  /** One HTTP attempt, with its own timeout. Never throws. */
  async #attempt(body: string, headers: Record<string, string>, signal: AbortSignal | undefined): Promise<Attempt> {
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
        headers,
        body,
        signal: controller.signal,
        redirect: 'manual',
      });
      const text = await res.text();
      const replayed = res.headers.get('idempotent-replayed')?.trim().toLowerCase() === 'true';
      return {
        type: 'answer',
        status: res.status,
        statusText: res.statusText,
        contentType: res.headers.get('content-type') ?? '',
        text,
        retryAfterMs: parseRetryAfter(res.headers.get('retry-after')),
        result: parseToolResult(text, res.status, replayed),
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
  /** The write's Idempotency-Key, if it is sent with one. */
  key: string | undefined;
  /** Attempts made so far, this one included. */
  attempts: number;
  timeoutMs: number;
  /** Whether another attempt may follow (retries left, not aborted). */
  canRetry: boolean;
  /** Whether an earlier attempt of this write may have been applied. */
  unsure: boolean;
}

/**
 * The retry policy: what to do with the outcome of one attempt. The status decides first,
 * whatever the body: a proxy may answer in memoryd's `tool_result` shape (docker/nginx.conf
 * does for 401, 413, 429, 502 and 504), so a `tool_result` body alone does not say that
 * memoryd handled the command.
 *
 * Three kinds of trouble: the command was certainly not applied (429, memoryd's 503, a
 * refused connection): retried, whatever the command; it may have been applied (a timeout,
 * a lost connection, a gateway's 502/503/504): retried for a `view` and for a write sent
 * with an idempotency key, else an unknown-outcome error at once; anything else is final.
 * When the retries run out on a write, an unknown outcome of any of its attempts decides.
 */
function decide(outcome: Attempt, ctx: Context): Step {
  const { name, readOnly, attempts, canRetry } = ctx;
  // May a command whose attempt may have been applied be sent again?
  const resendable = readOnly || ctx.key !== undefined;
  const details = (kind: MemorydErrorKind, outcomeUnknown: boolean, status?: number, cause?: unknown): MemorydErrorDetails => ({
    kind,
    command: name,
    outcomeUnknown,
    attempts,
    ...(status === undefined ? {} : { status }),
    ...(cause === undefined ? {} : { cause }),
    ...(ctx.key === undefined ? {} : { idempotencyKey: ctx.key }),
  });
  // The error of a write that may have been applied: `what` happened (a sentence without
  // its full stop); `now` says whether this attempt (or only an earlier one) may have been.
  const unknownError = (what: string, now: boolean, kind: MemorydErrorKind, status?: number, cause?: unknown): MemorydError =>
    new MemorydError(
      `Error: ${endSentence(`${what}${triedText(attempts)}${now ? '' : ', after an earlier attempt that may have reached it'}`)} ${unknownOutcome(ctx.command)}`,
      details(kind, true, status, cause),
    );

  if (outcome.type === 'answer') {
    const { status, result, retryAfterMs } = outcome;
    const httpStatus = `HTTP ${status}${outcome.statusText ? ' ' + outcome.statusText : ''}`;
    const shown = snippet(outcome.text);
    // What came back, as a sentence without its full stop.
    // (A 502's or 504's tool_result is a gateway's; a 503's or 429's says it was not applied.)
    const answered = result
      ? `The memory service answered the ${name} command with ${httpStatus}` +
        `${status === 502 || status === 504 ? ", a gateway's error" : ''}: "${fullStop(snippet(result.content))}"`
      : `The memory service answered the ${name} command with ${httpStatus}, which is not a memoryd result` +
        ` (${outcome.contentType || 'no content type'}${shown ? `: ${shown}` : ', empty body'})`;
    // An answer that is not a tool_result and ends the call (after the last attempt, or at once).
    const notResult = (notApplied: boolean, tryAgain: boolean): MemorydError =>
      new MemorydError(
        `Error: ${answered}${triedText(attempts)}${notApplied ? `; the ${name} command was not applied` : ''}.${tryAgain ? ' Try again later.' : ''}`,
        details('unexpected_response', false, status),
      );
    // After the last attempt of a write whose earlier attempt may have been applied.
    const earlier = (): Step => ({ fail: unknownError(answered, false, 'unexpected_response', status) });

    // Refused before the command was looked at (a rate limit), or memoryd's own 503 ("the
    // command was not applied"): safe to send again, writes included.
    if (status === 429 || (status === 503 && result)) {
      const reason = status === 429 ? 'rate_limited' : 'unavailable';
      if (canRetry) return { retry: reason, status, retryAfterMs, unknown: false };
      if (ctx.unsure && !readOnly) return earlier();
      return result ? { final: result } : { fail: notResult(true, true) };
    }
    // A gateway's failure: memoryd never answers 502 or 504. The request may have reached
    // memoryd before the gateway gave up on it: sent again only if that is harmless.
    if (status === 502 || status === 504 || status === 503) {
      if (!resendable) return { fail: unknownError(answered, true, 'unexpected_response', status) };
      if (canRetry) return { retry: 'bad_gateway', status, retryAfterMs, unknown: !readOnly };
      if (!readOnly) return { fail: unknownError(answered, true, 'unexpected_response', status) };
      return result ? { final: result } : { fail: notResult(false, true) };
    }
    // memoryd's answer (a replay of the first one included), or a proxy's in its shape.
    if (result) return { final: result };
    if (!readOnly && (status >= 500 || status === 408)) {
      // The request may have reached memoryd before the proxy gave up on it.
      return { fail: unknownError(answered, true, 'unexpected_response', status) };
    }
    if (ctx.unsure && !readOnly) return earlier();
    return { fail: notResult(false, false) };
  }

  const { kind, code, error } = outcome;
  const reason = (code && FRIENDLY_CODES[code]) ?? code ?? innermostMessage(error);
  const because = reason ? ` (${reason})` : '';
  switch (kind) {
    case 'refused':
      if (canRetry) return { retry: 'connection_refused', unknown: false };
      if (ctx.unsure && !readOnly) {
        return { fail: unknownError('Could not connect to the memory service: connection refused', false, 'connection_refused', undefined, error) };
      }
      return {
        fail: new MemorydError(
          `Error: Could not connect to the memory service: connection refused${triedText(attempts)}; the ${name} command was not applied. Try again later.`,
          details('connection_refused', false, undefined, error),
        ),
      };
    case 'aborted':
      return { fail: abortedError(ctx, error, true) };
    case 'timeout':
    case 'lost': {
      const what =
        kind === 'timeout'
          ? `The memory service did not answer the ${name} command within ${ctx.timeoutMs} ms`
          : `The connection to the memory service failed${because} before it answered the ${name} command`;
      const errorKind = kind === 'timeout' ? 'timeout' : 'connection_lost';
      if (resendable && canRetry) return { retry: errorKind, unknown: !readOnly };
      if (!readOnly) return { fail: unknownError(what, true, errorKind, undefined, error) };
      return { fail: new MemorydError(`Error: ${what}${triedText(attempts)}. Try again later.`, details(errorKind, false, undefined, error)) };
    }
  }
}

/**
 * The caller's signal fired: while an attempt was in flight (`inFlight`), or between two.
 * A write's outcome is unknown if that attempt, or an earlier one, may have been applied.
 */
function abortedError(ctx: Context, error: unknown, inFlight: boolean): MemorydError {
  const { name, readOnly, attempts } = ctx;
  const unknown = !readOnly && (inFlight || ctx.unsure);
  return new MemorydError(
    unknown
      ? `Error: The ${name} command was cancelled while it was being sent to the memory service. ${unknownOutcome(ctx.command)}`
      : `Error: The ${name} command was cancelled before the memory service answered.`,
    {
      kind: 'aborted',
      command: name,
      outcomeUnknown: unknown,
      attempts,
      cause: error,
      ...(ctx.key === undefined ? {} : { idempotencyKey: ctx.key }),
    },
  );
}

/** `text` with a full stop, unless it already ends a sentence (`…shortly."` included). */
function endSentence(text: string): string {
  return /[.!?…]"?$/.test(text) ? text : `${text}.`;
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
function parseToolResult(text: string, status: number, replayed: boolean): MemorydResult | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  if (v['type'] !== 'tool_result' || typeof v['content'] !== 'string' || typeof v['is_error'] !== 'boolean') return undefined;
  return { content: v['content'], isError: v['is_error'], status, replayed };
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
