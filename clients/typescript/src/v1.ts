/**
 * The types of memoryd's `/v1` API as `MemorydClient` sends and returns them: search,
 * history, versions, restore and the change feed. The answers are memoryd's JSON as it is
 * (snake_case keys, the schemas of the repository's openapi.yaml), plus `replayed` on a
 * restore.
 *
 * @module
 */
/** Options of every `/v1` call. */
export interface ApiCallOptions {
  /** Aborts the request (and any wait between attempts). */
  signal?: AbortSignal | undefined;
}

/** Options of `MemorydClient.search` and `MemorydClient.searchText`. */
export interface SearchOptions extends ApiCallOptions {
  /** Search only this file or the files below this directory. Default `/memories`. */
  path?: string | undefined;
  /** Files per page, 1 to 100. Default 10. */
  limit?: number | undefined;
  /** The `next_cursor` of the previous page of the same search (the same query and path). */
  cursor?: string | undefined;
}

/** A matching line of a {@link SearchHit}. */
export interface SearchLine {
  /** Its number, as `view` numbers lines. */
  line: number;
  /** The line, or 160 bytes of it around the match (`...` where cut). */
  text: string;
}

/** A file that matches a search. */
export interface SearchHit {
  /** The file's canonical path. */
  path: string;
  /** How many of its lines contain a term. */
  matching_lines: number;
  /** The first 3 matching lines. */
  lines: SearchLine[];
}

/** One page of a search (`GET /v1/search`). */
export interface SearchPage {
  /** The query as sent. */
  query: string;
  /** The canonical path searched. */
  path: string;
  /** Best first: the number of the terms' matches in the file, then the path. */
  hits: SearchHit[];
  /** The `cursor` of the next page, or `null` on the last page. */
  next_cursor: string | null;
}

/** Options of `MemorydClient.history`. */
export interface HistoryOptions extends ApiCallOptions {
  /** Versions per page, 1 to 1000. Default 50. */
  limit?: number | undefined;
  /** The `next_cursor` of the previous page: only versions below it are listed. */
  cursor?: string | number | undefined;
}

/** The write a version was recorded by. */
export type VersionCommand = 'create' | 'str_replace' | 'insert' | 'delete' | 'rename' | 'restore';

/**
 * A version: what the file at `path` was just before the write `command` changed it, at `time`.
 * `existed: false`: there was no file at the path then (`size` and `sha256` are `null`).
 */
export interface VersionEntry {
  /** The version number (per tenant). */
  version: number;
  path: string;
  command: VersionCommand;
  /** When (RFC 3339, UTC, milliseconds). */
  time: string;
  /** The write's `X-Memory-Actor`, or `null`. */
  actor: string | null;
  existed: boolean;
  size: number | null;
  sha256: string | null;
  /** The content and `sha256` were erased (`POST /v1/redact`). */
  redacted: boolean;
}

/** A version with the content the file had (`GET /v1/versions/{version}`). */
export interface VersionDetail extends VersionEntry {
  /** The file's content then; `null` when it did not exist or the version was redacted. */
  content: string | null;
}

/** One page of a path's versions, newest first (`GET /v1/history`). */
export interface HistoryPage {
  /** The canonical path. */
  path: string;
  versions: VersionEntry[];
  /** The `cursor` of the next page (a version number, as a string), or `null` on the last page. */
  next_cursor: string | null;
}

/**
 * What `MemorydClient.restore` puts back: `version`, that version of the file at `path`;
 * or `before`, every file at or below `path` as it stood just before that version.
 */
export type RestoreRequest =
  | { path: string; version: number; before?: undefined }
  | { path: string; before: number; version?: undefined };

/** Options of `MemorydClient.restore`. */
export interface RestoreOptions extends ApiCallOptions {
  /**
   * The restore's `Idempotency-Key` (1–255 visible ASCII characters) instead of a new random
   * one, e.g. the `MemorydError.idempotencyKey` of a restore whose outcome is unknown.
   */
  idempotencyKey?: string | undefined;
  /**
   * Sent as `If-Match` (the restore of one `version` only): put the old content back only
   * over the file whose entity-tag this is (the `etag` of a `view`), else memoryd answers 412.
   */
  ifMatch?: string | undefined;
}

/** memoryd's answer to a restore (`POST /v1/restore`). */
export interface RestoreResult {
  /** The canonical path. */
  path: string;
  /** The version restored, when `version` was sent. */
  version?: number;
  /** The version restored before, when `before` was sent. */
  before?: number;
  /** Files written back. */
  restored: number;
  /** Files deleted (they did not exist then). */
  removed: number;
  /** Files already as they were then. */
  unchanged: number;
  /** This write's change-feed entry. */
  seq: number;
  /** The versions it recorded. */
  versions_recorded: number;
  /**
   * True when memoryd answered with the stored first answer of an earlier attempt with the
   * same `Idempotency-Key` (`Idempotent-Replayed: true`): the restore was done once, then.
   */
  replayed: boolean;
}

/** Options of `MemorydClient.clearAllMemory`. */
export interface ClearOptions extends ApiCallOptions {
  /** The clear's `Idempotency-Key` (1–255 visible ASCII characters) instead of a new random one. */
  idempotencyKey?: string | undefined;
}

/** memoryd's answer to `DELETE /v1/memories` (`MemorydClient.clearAllMemory`). */
export interface ClearResult {
  /** `/memories`. */
  path: string;
  /** The files there were. */
  removed: number;
  /**
   * `restore({ path: '/memories', before: restore_before })` undoes the clear; `null` when it
   * recorded no version (nothing was there, or history is off).
   */
  restore_before: number | null;
  /** This write's change-feed entry; `null` when nothing was there to clear (nothing recorded). */
  seq: number | null;
  /** The versions it recorded. */
  versions_recorded: number;
  /** True when memoryd answered with the stored first answer of an earlier attempt with the same `Idempotency-Key`. */
  replayed: boolean;
}

/** Options of `MemorydClient.changes`. */
export interface ChangesOptions extends ApiCallOptions {
  /** List the entries with a `seq` above this one: the `next_after` of the previous answer. Default 0. */
  after?: number | undefined;
  /** Entries per answer, 1 to 1000. Default 100. */
  limit?: number | undefined;
  /**
   * Seconds (0 to 60) memoryd waits for the tenant's next write when there is no entry to
   * give (a long poll). Default 0. The call's time limit is `timeoutMs` plus this.
   */
  wait?: number | undefined;
}

/** Options of `MemorydClient.follow`. */
export interface FollowOptions extends ApiCallOptions {
  /** Start after this `seq`. Default 0: from the oldest entry kept. */
  after?: number | undefined;
  /** Entries per request, 1 to 1000. Default 100. */
  limit?: number | undefined;
  /** The long poll of each request, in seconds (0 to 60). Default 30. */
  wait?: number | undefined;
}

/** One acknowledged write of the tenant (a change-feed entry). */
export interface Change {
  /** 1, 2, … per tenant in commit order, without gaps. */
  seq: number;
  /** The first version the write recorded (the others follow it), or `null` for none. */
  version: number | null;
  /** How many versions it recorded. */
  versions: number;
  /** The bytes of content those versions hold. */
  history_bytes: number;
  time: string;
  command: VersionCommand | 'redact';
  /** The canonical paths the request named (`rename`: `old_path`, then `new_path`). */
  paths: string[];
  /** The write's `X-Memory-Actor`, or `null`. */
  actor: string | null;
}

/** One answer of the change feed (`GET /v1/changes`). */
export interface ChangeFeed {
  /** The entries after `after`, oldest first (possibly none). */
  changes: Change[];
  /** The tenant's newest `seq` (0 for none): above `next_after`, there are more to read now. */
  last_seq: number;
  /** The `after` of the next request. */
  next_after: number;
}
