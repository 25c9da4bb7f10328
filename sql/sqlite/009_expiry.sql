-- memoryd schema: expiry of unused files (--expire-after; docs/behaviour.md, "Expiry of unused
-- files").
-- SQLite. A file's last use is the later of its last change (entries.mtime) and the last use
-- written back here by memoryd (views, kept in memory and written at most once per file per
-- --expire-granularity). A table of its own rather than a column of entries: SQLite rewrites a
-- whole row on update, its content too. The triggers drop a file's row when the file is
-- deleted or moved (a rename changes the file: its mtime is its use), so that no use outlives
-- its file. `expire_ms` is the tenant's own window (PUT /v1/tenants/{t}/limits "expire_after"):
-- NULL, --expire-after applies; 0, off; else milliseconds.

CREATE TABLE uses (
    tenant INTEGER NOT NULL,
    path   TEXT    NOT NULL,
    used   INTEGER NOT NULL,   -- unix time, milliseconds
    PRIMARY KEY (tenant, path)
) WITHOUT ROWID;

ALTER TABLE tenants ADD COLUMN expire_ms INTEGER;

CREATE TRIGGER entries_uses_delete AFTER DELETE ON entries WHEN OLD.kind = 0
BEGIN
    DELETE FROM uses WHERE tenant = OLD.tenant AND path = OLD.path;
END;

CREATE TRIGGER entries_uses_move AFTER UPDATE OF path ON entries WHEN OLD.kind = 0
BEGIN
    DELETE FROM uses WHERE tenant = OLD.tenant AND path = OLD.path;
END;
