-- memoryd schema, version 1: PostgreSQL.
-- Applied by memoryd at start, inside one transaction, under a session advisory lock (so that
-- instances starting together migrate once); memoryd_schema records how many files of
-- sql/postgres/ have been applied. The same model as sql/sqlite/001_schema.sql.
--
-- Paths and names are compared byte for byte (COLLATE "C"), whatever the database's locale:
-- the listing order and the subtree ranges (path > 'dir/' AND path < 'dir0') depend on it.
-- No foreign key from entries to tenants: checking one takes a share lock on the tenant's
-- row for every insert; memoryd writes a tenant's row before any of its entries and never
-- deletes one.

-- One row per tenant that has ever written. Entries refer to it by id.
CREATE TABLE tenants (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text COLLATE "C" NOT NULL UNIQUE,  -- 1..128 of [A-Za-z0-9._-]
    created_at bigint NOT NULL                    -- unix time, seconds
);

-- Files and directories. `path` is canonical ("/memories/a/b.txt"); the tenant's root
-- "/memories" is a row too, created with the tenant.
CREATE TABLE entries (
    tenant  bigint   NOT NULL,
    path    text     COLLATE "C" NOT NULL,
    depth   integer  NOT NULL,                          -- segments below /memories (root = 0)
    kind    smallint NOT NULL CHECK (kind IN (0, 1)),   -- 0 file, 1 directory
    size    bigint   NOT NULL,                          -- file bytes; directory: bytes of files below
    mtime   bigint   NOT NULL,                          -- unix time, milliseconds
    content bytea,                                      -- files only
    PRIMARY KEY (tenant, path)
);
-- Contents are stored as they are, out of line when large, never compressed: an edit of a
-- 1 MiB file rewrites it, and compressing it each time costs more than it saves.
ALTER TABLE entries ALTER COLUMN content SET STORAGE EXTERNAL;

-- Children of a directory in path order, without touching the rows:
--   WHERE tenant = $1 AND depth = $2 AND path > 'dir/' AND path < 'dir0'
CREATE INDEX entries_children ON entries (tenant, depth, path) INCLUDE (kind, size);
