-- memoryd schema, version 1.
-- SQLite. Applied by memoryd at start inside one transaction; PRAGMA user_version
-- records how many files of sql/sqlite/ have been applied.

-- One row per tenant that has ever written. Entries refer to it by id.
CREATE TABLE tenants (
    id         INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL UNIQUE,   -- 1..128 of [A-Za-z0-9._-]
    created_at INTEGER NOT NULL           -- unix time, seconds
);

-- Files and directories. `path` is canonical ("/memories/a/b.txt"); the
-- tenant's root "/memories" is a row too, created with the tenant.
CREATE TABLE entries (
    tenant     INTEGER NOT NULL REFERENCES tenants(id),
    path       TEXT    NOT NULL,
    depth      INTEGER NOT NULL,          -- segments below /memories (root = 0)
    kind       INTEGER NOT NULL CHECK (kind IN (0, 1)),  -- 0 file, 1 directory
    size       INTEGER NOT NULL,          -- file bytes; directory: bytes of files below
    mtime      INTEGER NOT NULL,          -- unix time, milliseconds
    content    BLOB,                      -- files only; last so listings never read it
    PRIMARY KEY (tenant, path)
);

-- Children of a directory in path order, without touching the rows:
--   WHERE tenant = ? AND depth = ? AND path > 'dir/' AND path < 'dir0'
CREATE INDEX entries_children ON entries (tenant, depth, path, kind, size);
