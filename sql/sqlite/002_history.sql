-- memoryd schema, version 2: content hashes, history, the change feed, idempotent retries.
-- SQLite. memoryd_sha256() is a function memoryd registers on the connection that migrates.

-- The SHA-256 of every file's content (32 bytes; NULL for directories): a view answers with
-- it as its ETag without hashing, and a version copies it. The table is rebuilt so that the
-- hash comes before the content: SQLite reads a row's columns in order, and a column after a
-- large content would make every lookup of a file's metadata read its overflow pages.
CREATE TABLE entries_v2 (
    tenant     INTEGER NOT NULL REFERENCES tenants(id),
    path       TEXT    NOT NULL,
    depth      INTEGER NOT NULL,          -- segments below /memories (root = 0)
    kind       INTEGER NOT NULL CHECK (kind IN (0, 1)),  -- 0 file, 1 directory
    size       INTEGER NOT NULL,          -- file bytes; directory: bytes of files below
    mtime      INTEGER NOT NULL,          -- unix time, milliseconds
    sha256     BLOB,                      -- files only: SHA-256 of the content
    content    BLOB,                      -- files only; last so listings never read it
    PRIMARY KEY (tenant, path)
);
INSERT INTO entries_v2 (tenant, path, depth, kind, size, mtime, sha256, content)
    SELECT tenant, path, depth, kind, size, mtime,
           CASE WHEN kind = 0 THEN memoryd_sha256(content) END, content
    FROM entries ORDER BY tenant, path;
DROP TABLE entries;
ALTER TABLE entries_v2 RENAME TO entries;
CREATE INDEX entries_children ON entries (tenant, depth, path, kind, size);

-- Per-tenant counters: the last version and the last change-feed sequence number given out.
-- Written by the writer, under the tenant's lock, once per transaction.
ALTER TABLE tenants ADD COLUMN last_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tenants ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;

-- Versions: what a file was just before a write changed it. `existed` 0 records that the
-- path had no file then (the write created it): no content, hash or size. A redacted
-- version keeps its metadata and loses its content for good. `pruned_through`, on the
-- oldest version of a path still kept, is the newest version of that path pruned before it
-- (0: none): a restore to a point before it cannot know that path's state.
CREATE TABLE versions (
    tenant         INTEGER NOT NULL,
    version        INTEGER NOT NULL,          -- per tenant, increasing
    path           TEXT    NOT NULL,
    existed        INTEGER NOT NULL,
    sha256         BLOB,
    size           INTEGER,
    time           INTEGER NOT NULL,          -- unix time, milliseconds
    command        TEXT    NOT NULL,          -- create, str_replace, insert, delete, rename, restore
    actor          TEXT,                      -- the X-Memory-Actor header
    redacted       INTEGER NOT NULL DEFAULT 0,
    pruned_through INTEGER NOT NULL DEFAULT 0,
    content        BLOB,                      -- last, so that listings never read it
    PRIMARY KEY (tenant, version)
);
-- A path's versions, newest first: GET /v1/history, restore, pruning by count.
CREATE INDEX versions_path ON versions (tenant, path, version);

-- The change feed: one row per acknowledged write command, in commit order per tenant.
CREATE TABLE changes (
    tenant        INTEGER NOT NULL,
    seq           INTEGER NOT NULL,
    version       INTEGER,                    -- the first version the write recorded
    versions      INTEGER NOT NULL,           -- how many it recorded
    history_bytes INTEGER NOT NULL,           -- bytes of content they hold
    time          INTEGER NOT NULL,           -- unix time, milliseconds
    command       TEXT    NOT NULL,
    paths         TEXT    NOT NULL,           -- the paths it names, one per line
    actor         TEXT,
    PRIMARY KEY (tenant, seq)
) WITHOUT ROWID;

-- Idempotent retries: the first answer to a write sent with an Idempotency-Key, kept 24 h.
CREATE TABLE idempotency (
    tenant      INTEGER NOT NULL,
    key         TEXT    NOT NULL,
    fingerprint BLOB    NOT NULL,             -- SHA-256 of the request (route, body, preconditions)
    err         INTEGER NOT NULL,             -- memoryd's result class
    body        TEXT    NOT NULL,             -- the result text
    path        TEXT,                         -- the file it wrote, if one (redaction scrubs it)
    time        INTEGER NOT NULL,             -- unix time, milliseconds
    PRIMARY KEY (tenant, key)
);
CREATE INDEX idempotency_time ON idempotency (time);
