import { randomUUID } from 'node:crypto';
import type { BetaMemoryTool20250818Command } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import { MemorydError, type MemorydErrorDetails, type MemorydErrorKind } from './errors.js';
import type {
  ApiCallOptions,
  Change,
  ChangeFeed,
  ChangesOptions,
  FollowOptions,
  HistoryOptions,
  HistoryPage,
  ClearOptions,
  ClearResult,
  RestoreOptions,
  RestoreRequest,
  RestoreResult,
  SearchOptions,
  SearchPage,
  VersionDetail,
} from './v1.js';

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
   * Commands are posted to `{baseUrl}/memory`, the `/v1` calls go to `{baseUrl}/v1/…`.
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
  /**
   * Sent as `Authorization: Bearer <apiKey>` on every request: a key of `memoryd keys create`
   * for a memoryd run with `--auth keys` (the key decides the tenant: leave {@link tenant}
   * out, or name the key's own), or the key of an authenticating reverse proxy.
   */
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
  /** The command being sent (`view`, `create`, …), or the `/v1` call (`search`, `restore`, …). */
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
type Attempt = Answer | { type: 'failure'; kind: 'refused' | 'timeout' | 'lost' | 'aborted'; code: string | undefined; error: unknown };

/** An HTTP answer to one attempt. */
interface Answer {
  type: 'answer';
  status: number;
  statusText: string;
  contentType: string;
  text: string;
  retryAfterMs: number | undefined;
  /** `Idempotent-Replayed: true`: memoryd's stored first answer to the request's key. */
  replayed: boolean;
}

/**
 * What to do after an attempt: return a result, throw an error, or try again. `unknown`:
 * this attempt of a write may have been applied (sent, and no memoryd answer came back).
 */
type Step<T> =
  | { final: T }
  | { fail: MemorydError }
  | { retry: MemorydRetryReason; status?: number | undefined; retryAfterMs?: number | undefined; unknown: boolean };

/**
 * How a call reads an HTTP answer. `settle` is set when the answer is memoryd's own (a
 * `tool_result` on `POST /memory`; a result, or an `{"error": …}`, on `/v1`) and says what
 * it settles; `said` is memoryd's text in it, quoted when the answer ends the call in an error.
 */
interface Reading<T> {
  said: string | undefined;
  settle: ((ctx: Context) => Step<T>) | undefined;
}

/** One call: its request (the same on every attempt) and what the error texts call it. */
interface Call {
  /** `view`, `create`, … or `search`, `history`, `version`, `restore`, `changes`. */
  name: string;
  /** `command` (`POST /memory`) or `request` (`/v1`). */
  noun: 'command' | 'request';
  readOnly: boolean;
  /** The write's Idempotency-Key, if it is sent with one. */
  key: string | undefined;
  /** What to view to learn a write's outcome. */
  target: string;
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
  timeoutMs: number;
}

/**
 * A small HTTP client for memoryd: the memory tool's commands (`POST /memory`) and the
 * `/v1` API (search, history, versions, restore, the change feed).
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
  /** memoryd's address as given, without a trailing `/`, query or fragment. */
  readonly baseUrl: string;
  /** The URL commands are posted to (`{baseUrl}/memory`). */
  readonly url: string;
  /** Sent with every request: tenant, authorization, `Accept`, the caller's own. */
  readonly #headers: Record<string, string>;
  /** The same, with `Content-Type: application/json`. */
  readonly #jsonHeaders: Record<string, string>;
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
    this.baseUrl = base.href.replace(/\/+$/, '');
    this.url = this.baseUrl + '/memory';

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
    setHeader(headers, 'Accept', 'application/json');
    this.#headers = headers;
    this.#jsonHeaders = { ...headers };
    setHeader(this.#jsonHeaders, 'Content-Type', 'application/json');

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
    const readOnly = name === 'view';
    const key = readOnly ? undefined : this.#keyFor(options.idempotencyKey);
    const call: Call = {
      name,
      noun: 'command',
      readOnly,
      key,
      target: target(command),
      method: 'POST',
      url: this.url,
      headers: withKey(this.#jsonHeaders, key),
      body: JSON.stringify(command),
      timeoutMs: this.#timeoutMs,
    };
    return this.#call(call, readToolResult, options.signal);
  }

  /**
   * Full-text search of the tenant's files (`GET /v1/search`): the files whose content
   * contains every term of `query` where a word begins (a term in double quotes may hold
   * spaces: a phrase), best first, each with its first 3 matching lines. Retried as a `view`.
   *
   * @param query 1 to 8 terms separated by spaces (at most 256 bytes).
   * @param options `path` (a directory or file to search in), `limit` (1–100), `cursor`.
   * @returns memoryd's page of hits; `next_cursor` pages on.
   * @throws MemorydError (a `ToolError`): kind `rejected` with memoryd's text for its error
   *   answers (e.g. 400 for a bad query, 404 under `--search off`), or a transport failure.
   */
  async search(query: string, options: SearchOptions = {}): Promise<SearchPage> {
    return this.#get('search', '/v1/search', searchParams(query, options, 'json'), options.signal, (a) =>
      jsonWith<SearchPage>(a, 'hits', 'next_cursor'),
    );
  }

  /**
   * The same search as {@link search}, answered as text for a model (`format=text`): what the
   * `memory_search` tool (and memoryd's MCP tool of that name) returns, e.g.
   * `Files in /memories that match ship (best first, 1 to 1):\n/memories/notes.txt\n     4\t- Next steps: ship v1\n`.
   *
   * @throws MemorydError as {@link search}.
   */
  async searchText(query: string, options: SearchOptions = {}): Promise<string> {
    return this.#get('search', '/v1/search', searchParams(query, options, 'text'), options.signal, (a) =>
      /^text\/plain\b/i.test(a.contentType) ? a.text : undefined,
    );
  }

  /**
   * The versions of one path, newest first (`GET /v1/history`): what the file was just
   * before each write that changed it. Content is not listed: see {@link version}.
   *
   * @param path The path, as for the memory tool (`/memories/…`).
   * @param options `limit` (1–1000, default 50) and `cursor` (the previous page's `next_cursor`).
   * @throws MemorydError (a `ToolError`): kind `rejected` with memoryd's text, e.g. 404 for a
   *   path that has no history and does not exist; or a transport failure.
   */
  async history(path: string, options: HistoryOptions = {}): Promise<HistoryPage> {
    const params = new URLSearchParams({ path: String(path) });
    if (options.limit !== undefined) params.set('limit', String(options.limit));
    if (options.cursor !== undefined) params.set('cursor', String(options.cursor));
    return this.#get('history', '/v1/history', params, options.signal, (a) => jsonWith<HistoryPage>(a, 'versions', 'next_cursor'));
  }

  /**
   * One version with its content (`GET /v1/versions/{version}`).
   *
   * @param version A version number of this tenant, as {@link history} lists it.
   * @throws TypeError if `version` is not a positive integer.
   * @throws MemorydError (a `ToolError`): kind `rejected`, status 404, when the version is not kept.
   */
  async version(version: number, options: ApiCallOptions = {}): Promise<VersionDetail> {
    if (!Number.isSafeInteger(version) || version < 1) throw new TypeError('MemorydClient: version must be a positive integer');
    return this.#get('version', `/v1/versions/${version}`, undefined, options.signal, (a) => jsonWith<VersionDetail>(a, 'version', 'content'));
  }

  /**
   * Puts files back as they were (`POST /v1/restore`): `{ path, version }` writes that version
   * of the file back; `{ path, before }` puts every file at or below `path` back as it stood
   * just before that version (and deletes those that did not exist then). A write, atomic,
   * recorded in the history and the change feed; like {@link execute}'s writes it carries an
   * `Idempotency-Key` (unless `idempotencyKeys: false`) and is retried under the same policy.
   *
   * @throws MemorydError (a `ToolError`): kind `rejected` with memoryd's text for its error
   *   answers (400, 404, 409, 412, 413, 507, …: nothing changed); or a transport failure, with
   *   `outcomeUnknown` and the `idempotencyKey` when the restore may have been applied.
   * @throws TypeError if `options.idempotencyKey` or `options.ifMatch` is invalid.
   */
  async restore(request: RestoreRequest, options: RestoreOptions = {}): Promise<RestoreResult> {
    if (request === null || typeof request !== 'object') throw new TypeError('MemorydClient: restore needs { path, version } or { path, before }');
    const key = this.#keyFor(options.idempotencyKey);
    let headers = withKey(this.#jsonHeaders, key);
    if (options.ifMatch !== undefined) {
      if (typeof options.ifMatch !== 'string' || !/^[\x20-\x7e]+$/.test(options.ifMatch)) {
        throw new TypeError('MemorydClient: ifMatch must be an entity-tag of visible ASCII characters');
      }
      headers = { ...headers, 'If-Match': options.ifMatch };
    }
    const call: Call = {
      name: 'restore',
      noun: 'request',
      readOnly: false,
      key,
      target: typeof request.path === 'string' ? request.path : 'the affected path',
      method: 'POST',
      url: this.baseUrl + '/v1/restore',
      headers,
      body: JSON.stringify(request),
      timeoutMs: this.#timeoutMs,
    };
    return this.#call(
      call,
      readV1((a) => {
        const r = jsonWith<Omit<RestoreResult, 'replayed'>>(a, 'restored', 'seq');
        return r && { ...r, replayed: a.replayed };
      }),
      options.signal,
    );
  }

  /**
   * Deletes every file and directory below `/memories` (`DELETE /v1/memories`): the Python
   * SDK's `clear_all_memory`, as one write recorded in the history and the change feed (one
   * entry), which `restore({ path: '/memories', before: result.restore_before })` undoes. It
   * needs a key that may write; it carries an `Idempotency-Key` and is retried as the other
   * writes are.
   *
   * @throws MemorydError (a `ToolError`): kind `rejected` with memoryd's text (403 for a
   *   read-only key, 503 while the tenant is being imported); or a transport failure, with
   *   `outcomeUnknown` and the `idempotencyKey` when the clear may have been applied.
   */
  async clearAllMemory(options: ClearOptions = {}): Promise<ClearResult> {
    const key = this.#keyFor(options.idempotencyKey);
    const headers = withKey(this.#jsonHeaders, key);
    const call: Call = {
      name: 'clear',
      noun: 'request',
      readOnly: false,
      key,
      target: '/memories',
      method: 'DELETE',
      url: this.baseUrl + '/v1/memories',
      headers,
      body: undefined,
      timeoutMs: this.#timeoutMs,
    };
    return this.#call(
      call,
      readV1((a) => {
        const r = jsonWith<Omit<ClearResult, 'replayed'>>(a, 'removed', 'seq');
        return r && { ...r, replayed: a.replayed };
      }),
      options.signal,
    );
  }

  /**
   * The change feed (`GET /v1/changes`): the tenant's acknowledged writes after `after`,
   * oldest first. With `wait` (seconds), an answer that would be empty waits for the next
   * write (a long poll).
   *
   * @throws MemorydError (a `ToolError`): kind `rejected`, status 410, when entries after
   *   `after` are no longer kept (read the tree again, then follow from the `after` the text
   *   names); 400 for a value out of range; or a transport failure.
   */
  async changes(options: ChangesOptions = {}): Promise<ChangeFeed> {
    const params = new URLSearchParams({ after: String(options.after ?? 0) });
    if (options.limit !== undefined) params.set('limit', String(options.limit));
    const wait = options.wait ?? 0;
    if (options.wait !== undefined) params.set('wait', String(wait));
    const waitMs = typeof wait === 'number' && wait > 0 ? Math.min(wait, 60) * 1000 : 0;
    return this.#get('changes', '/v1/changes', params, options.signal, (a) => jsonWith<ChangeFeed>(a, 'changes', 'next_after'), waitMs);
  }

  /**
   * Follows the change feed: yields each entry after `after`, in order, as it comes, long
   * polling (`wait`, default 30 s) when there is none. It ends when `signal` aborts; it throws
   * what {@link changes} throws (a 410 when it starts after entries no longer kept).
   *
   * @example
   * ```ts
   * for await (const change of memoryd.follow({ after: 0, signal })) console.log(change.seq, change.command, change.paths);
   * ```
   */
  async *follow(options: FollowOptions = {}): AsyncGenerator<Change, void, undefined> {
    let after = options.after ?? 0;
    const { signal } = options;
    while (!signal?.aborted) {
      let page: ChangeFeed;
      try {
        page = await this.changes({ after, limit: options.limit, wait: options.wait ?? 30, signal });
      } catch (error) {
        if (signal?.aborted && error instanceof MemorydError && error.kind === 'aborted') return;
        throw error;
      }
      for (const change of page.changes) yield change;
      after = page.next_after;
    }
  }

  /** A write's Idempotency-Key: the caller's (checked), a new one, or none (`idempotencyKeys: false`). */
  #keyFor(given: string | undefined): string | undefined {
    if (given !== undefined) {
      if (typeof given !== 'string' || !IDEMPOTENCY_KEY_RE.test(given)) {
        throw new TypeError('MemorydClient: idempotencyKey must be 1-255 visible ASCII characters');
      }
      return given;
    }
    return this.#idempotencyKeys ? IDEMPOTENCY_KEY_PREFIX + randomUUID() : undefined;
  }

  /** A `/v1` GET: read-only, retried as a `view`; `extraMs` added to its time limit (a long poll). */
  #get<T>(
    name: string,
    path: string,
    params: URLSearchParams | undefined,
    signal: AbortSignal | undefined,
    parse: (a: Answer) => T | undefined,
    extraMs = 0,
  ): Promise<T> {
    const query = params ? `?${params}` : '';
    const call: Call = {
      name,
      noun: 'request',
      readOnly: true,
      key: undefined,
      target: 'the affected path',
      method: 'GET',
      url: this.baseUrl + path + query,
      headers: this.#headers,
      body: undefined,
      timeoutMs: this.#timeoutMs + extraMs,
    };
    return this.#call(call, readV1(parse), signal);
  }

  /** Makes the attempts of one call under the retry policy ({@link decide}). */
  async #call<T>(call: Call, read: (a: Answer) => Reading<T>, signal: AbortSignal | undefined): Promise<T> {
    // Whether an earlier attempt of this write may have been applied.
    let unsure = false;
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.#attempt(call, signal);
      const ctx: Context = {
        name: call.name,
        label: `${call.name} ${call.noun}`,
        noun: call.noun,
        readOnly: call.readOnly,
        key: call.key,
        target: call.target,
        attempts: attempt,
        timeoutMs: call.timeoutMs,
        canRetry: attempt <= this.#retries && !signal?.aborted,
        unsure,
      };
      const reading: Reading<T> = outcome.type === 'answer' ? read(outcome) : { said: undefined, settle: undefined };
      const step = decide(outcome, ctx, reading);
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
          command: call.name,
          attempt,
          reason: step.retry,
          status: step.status,
          delayMs,
          ...(call.key === undefined ? {} : { idempotencyKey: call.key }),
        });
      } catch {
        // A logging hook must not change the outcome of the command.
      }
      try {
        await sleep(delayMs, signal);
      } catch (error) {
        // Aborted while waiting: nothing more was sent since the last attempt, whose
        // outcome decides, as if it had been the last one.
        const last = decide(outcome, { ...ctx, canRetry: false, unsure }, reading);
        if ('fail' in last) throw last.fail;
        throw abortedError({ ...ctx, unsure }, error, false);
      }
    }
  }

  /** One HTTP attempt, with its own timeout. Never throws. */
  async #attempt(call: Call, signal: AbortSignal | undefined): Promise<Attempt> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error('memoryd request timed out'));
    }, call.timeoutMs);
    const onAbort = (): void => controller.abort(signal?.reason);
    if (signal) {
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
    try {
      const res = await this.#fetch(call.url, {
        method: call.method,
        headers: call.headers,
        ...(call.body === undefined ? {} : { body: call.body }),
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
        replayed: res.headers.get('idempotent-replayed')?.trim().toLowerCase() === 'true',
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
  name: string;
  /** What the texts call the call: `create command`, `search request`, … */
  label: string;
  noun: 'command' | 'request';
  readOnly: boolean;
  /** The write's Idempotency-Key, if it is sent with one. */
  key: string | undefined;
  /** The path(s) to view to learn a write's outcome. */
  target: string;
  /** Attempts made so far, this one included. */
  attempts: number;
  timeoutMs: number;
  /** Whether another attempt may follow (retries left, not aborted). */
  canRetry: boolean;
  /** Whether an earlier attempt of this write may have been applied. */
  unsure: boolean;
}

/** The fields of a {@link MemorydError} of the call `ctx` describes. */
function detailsOf(ctx: Context, kind: MemorydErrorKind, outcomeUnknown: boolean, status?: number, cause?: unknown): MemorydErrorDetails {
  return {
    kind,
    command: ctx.name,
    outcomeUnknown,
    attempts: ctx.attempts,
    ...(status === undefined ? {} : { status }),
    ...(cause === undefined ? {} : { cause }),
    ...(ctx.key === undefined ? {} : { idempotencyKey: ctx.key }),
  };
}

/**
 * The retry policy: what to do with the outcome of one attempt. The status decides first,
 * whatever the body: a proxy may answer in memoryd's `tool_result` shape (docker/nginx.conf
 * does for 401, 413, 429, 502 and 504), so a `tool_result` body alone does not say that
 * memoryd handled the command.
 *
 * Three kinds of trouble: the command was certainly not applied (429, memoryd's 503, a
 * refused connection): retried, whatever the command; it may have been applied (a timeout,
 * a lost connection, a gateway's 502/503/504): retried for a read and for a write sent
 * with an idempotency key, else an unknown-outcome error at once; anything else is final.
 * When the retries run out on a write, an unknown outcome of any of its attempts decides.
 * The same policy serves `POST /memory` and `/v1`: `reading` says whether an answer is
 * memoryd's own and what it settles.
 */
function decide<T>(outcome: Attempt, ctx: Context, reading: Reading<T>): Step<T> {
  const { label, readOnly, attempts, canRetry } = ctx;
  // May a command whose attempt may have been applied be sent again?
  const resendable = readOnly || ctx.key !== undefined;
  // The error of a write that may have been applied: `what` happened (a sentence without
  // its full stop); `now` says whether this attempt (or only an earlier one) may have been.
  const unknownError = (what: string, now: boolean, kind: MemorydErrorKind, status?: number, cause?: unknown): MemorydError =>
    new MemorydError(
      `Error: ${endSentence(`${what}${triedText(attempts)}${now ? '' : ', after an earlier attempt that may have reached it'}`)} ${unknownOutcome(ctx)}`,
      detailsOf(ctx, kind, true, status, cause),
    );

  if (outcome.type === 'answer') {
    const { status, retryAfterMs } = outcome;
    const { said, settle } = reading;
    const httpStatus = `HTTP ${status}${outcome.statusText ? ' ' + outcome.statusText : ''}`;
    const shown = snippet(outcome.text);
    // What came back, as a sentence without its full stop.
    // (A 502's or 504's tool_result is a gateway's; a 503's or 429's says it was not applied.)
    const answered =
      said !== undefined
        ? `The memory service answered the ${label} with ${httpStatus}` +
          `${status === 502 || status === 504 ? ", a gateway's error" : ''}: "${fullStop(snippet(said))}"`
        : `The memory service answered the ${label} with ${httpStatus}, which is not a memoryd result` +
          ` (${outcome.contentType || 'no content type'}${shown ? `: ${shown}` : ', empty body'})`;
    // An answer that is not memoryd's and ends the call (after the last attempt, or at once).
    const notResult = (notApplied: boolean, tryAgain: boolean): MemorydError =>
      new MemorydError(
        `Error: ${answered}${triedText(attempts)}${notApplied ? `; the ${label} was not applied` : ''}.${tryAgain ? ' Try again later.' : ''}`,
        detailsOf(ctx, 'unexpected_response', false, status),
      );
    // After the last attempt of a write whose earlier attempt may have been applied.
    const earlier = (): Step<T> => ({ fail: unknownError(answered, false, 'unexpected_response', status) });

    // Refused before the command was looked at (a rate limit), or memoryd's own 503 ("the
    // command was not applied"): safe to send again, writes included.
    if (status === 429 || (status === 503 && settle)) {
      const reason = status === 429 ? 'rate_limited' : 'unavailable';
      if (canRetry) return { retry: reason, status, retryAfterMs, unknown: false };
      if (ctx.unsure && !readOnly) return earlier();
      return settle ? settle(ctx) : { fail: notResult(true, true) };
    }
    // A gateway's failure: memoryd never answers 502 or 504. The request may have reached
    // memoryd before the gateway gave up on it: sent again only if that is harmless.
    if (status === 502 || status === 504 || status === 503) {
      if (!resendable) return { fail: unknownError(answered, true, 'unexpected_response', status) };
      if (canRetry) return { retry: 'bad_gateway', status, retryAfterMs, unknown: !readOnly };
      if (!readOnly) return { fail: unknownError(answered, true, 'unexpected_response', status) };
      return settle ? settle(ctx) : { fail: notResult(false, true) };
    }
    // memoryd's answer (a replay of the first one included), or a proxy's in its shape.
    if (settle) return settle(ctx);
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
          `Error: Could not connect to the memory service: connection refused${triedText(attempts)}; the ${label} was not applied. Try again later.`,
          detailsOf(ctx, 'connection_refused', false, undefined, error),
        ),
      };
    case 'aborted':
      return { fail: abortedError(ctx, error, true) };
    case 'timeout':
    case 'lost': {
      const what =
        kind === 'timeout'
          ? `The memory service did not answer the ${label} within ${ctx.timeoutMs} ms`
          : `The connection to the memory service failed${because} before it answered the ${label}`;
      const errorKind = kind === 'timeout' ? 'timeout' : 'connection_lost';
      if (resendable && canRetry) return { retry: errorKind, unknown: !readOnly };
      if (!readOnly) return { fail: unknownError(what, true, errorKind, undefined, error) };
      return { fail: new MemorydError(`Error: ${what}${triedText(attempts)}. Try again later.`, detailsOf(ctx, errorKind, false, undefined, error)) };
    }
  }
}

/** `POST /memory`'s answer: a `tool_result` (error results included) is memoryd's, and final. */
function readToolResult(a: Answer): Reading<MemorydResult> {
  const result = parseToolResult(a.text, a.status, a.replayed);
  return result ? { said: result.content, settle: () => ({ final: result }) } : { said: undefined, settle: undefined };
}

/**
 * A `/v1` answer: a 2xx that `parse` recognises is the result; memoryd's `{"error": …}` (any
 * status from 400 on) ends the call in a `rejected` MemorydError with its text.
 */
function readV1<T>(parse: (a: Answer) => T | undefined): (a: Answer) => Reading<T> {
  return (a) => {
    if (a.status >= 200 && a.status < 300) {
      const value = parse(a);
      return { said: undefined, settle: value === undefined ? undefined : () => ({ final: value }) };
    }
    const error = a.status >= 400 ? jsonWith<{ error: string }>(a, 'error')?.error : undefined;
    if (typeof error !== 'string') return { said: undefined, settle: undefined };
    return { said: error, settle: (ctx) => ({ fail: new MemorydError(`Error: ${error}`, detailsOf(ctx, 'rejected', false, a.status)) }) };
  };
}

/** The answer's body as a JSON object with each of `keys`, or undefined. */
function jsonWith<T>(a: Answer, ...keys: string[]): T | undefined {
  let value: unknown;
  try {
    value = JSON.parse(a.text);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  return keys.every((k) => k in value) ? (value as T) : undefined;
}

/** `GET /v1/search`'s parameters. */
function searchParams(query: string, options: SearchOptions, format: 'json' | 'text'): URLSearchParams {
  const params = new URLSearchParams();
  if (query !== undefined) params.set('q', String(query));
  if (options.path !== undefined) params.set('path', String(options.path));
  if (options.limit !== undefined) params.set('limit', String(options.limit));
  if (options.cursor !== undefined) params.set('cursor', String(options.cursor));
  if (format === 'text') params.set('format', 'text');
  return params;
}

/** `headers` with the write's Idempotency-Key, if it has one. */
function withKey(headers: Record<string, string>, key: string | undefined): Record<string, string> {
  return key === undefined ? headers : { ...headers, [IDEMPOTENCY_KEY_HEADER]: key };
}

/**
 * The caller's signal fired: while an attempt was in flight (`inFlight`), or between two.
 * A write's outcome is unknown if that attempt, or an earlier one, may have been applied.
 */
function abortedError(ctx: Context, error: unknown, inFlight: boolean): MemorydError {
  const { label, readOnly } = ctx;
  const unknown = !readOnly && (inFlight || ctx.unsure);
  return new MemorydError(
    unknown
      ? `Error: The ${label} was cancelled while it was being sent to the memory service. ${unknownOutcome(ctx)}`
      : `Error: The ${label} was cancelled before the memory service answered.`,
    detailsOf(ctx, 'aborted', unknown, undefined, error),
  );
}

/** `text` with a full stop, unless it already ends a sentence (`…shortly."` included). */
function endSentence(text: string): string {
  return /[.!?…]"?$/.test(text) ? text : `${text}.`;
}

/** The advice for a write whose outcome is unknown. */
function unknownOutcome(ctx: Context): string {
  return `It is unknown whether the ${ctx.noun} was applied: view ${ctx.target} to check before retrying.`;
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
