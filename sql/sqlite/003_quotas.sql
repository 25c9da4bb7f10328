-- memoryd schema, version 3: quotas.
-- SQLite. A tenant's usage is its root's size (bytes of file content, kept by memoryd) and
-- `files`, the number of its files, kept by the triggers below in the same transaction as
-- the insert or delete of a file (a rename updates rows in place: no change). `max_bytes` and
-- `max_files` are the tenant's own limits (PUT /v1/tenants/{t}/limits); NULL: the defaults
-- of --tenant-max-bytes and --tenant-max-files apply; 0: unlimited.

ALTER TABLE tenants ADD COLUMN files INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tenants ADD COLUMN max_bytes INTEGER;
ALTER TABLE tenants ADD COLUMN max_files INTEGER;

UPDATE tenants SET files = (SELECT count(*) FROM entries e WHERE e.tenant = tenants.id AND e.kind = 0);

CREATE TRIGGER entries_files_insert AFTER INSERT ON entries WHEN NEW.kind = 0
BEGIN
    UPDATE tenants SET files = files + 1 WHERE id = NEW.tenant;
END;

CREATE TRIGGER entries_files_delete AFTER DELETE ON entries WHEN OLD.kind = 0
BEGIN
    UPDATE tenants SET files = files - 1 WHERE id = OLD.tenant;
END;
