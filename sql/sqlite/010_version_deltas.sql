-- memoryd schema, version 10: versions kept as reverse deltas (docs/architecture.md,
-- "History"; include/store/md_delta.h). SQLite. A version's `content` is the text the file had
-- just before the write that recorded it, stored whole (`enc` 0), or (`enc` 1) as the delta
-- that turns its successor back into it: the successor is the content of the same path just
-- after that write, which the path's next version holds, or the file itself when the path has
-- no newer version. `run` is how many deltas in a row end at this version (0 for one kept
-- whole), so that a version is kept whole when it would make a run longer than
-- MD_DELTA_RUN_MAX. The table is rebuilt so that both columns come before the content (SQLite
-- reads a row's columns in order). Every version copied here is whole; memoryd turns them into
-- deltas when it opens the database next, a path at a time, and says how far it got
-- (`version_deltas` holds the last path done, (-1, '') before the first: removed at the end).
CREATE TABLE versions_v2 (
    tenant         INTEGER NOT NULL,
    version        INTEGER NOT NULL,
    path           TEXT    NOT NULL,
    existed        INTEGER NOT NULL,
    sha256         BLOB,
    size           INTEGER,
    time           INTEGER NOT NULL,
    command        TEXT    NOT NULL,
    actor          TEXT,
    redacted       INTEGER NOT NULL DEFAULT 0,
    pruned_through INTEGER NOT NULL DEFAULT 0,
    enc            INTEGER NOT NULL DEFAULT 0 CHECK (enc IN (0, 1)),
    run            INTEGER NOT NULL DEFAULT 0,
    content        BLOB,
    PRIMARY KEY (tenant, version)
);
INSERT INTO versions_v2 (tenant, version, path, existed, sha256, size, time, command, actor,
                         redacted, pruned_through, content)
    SELECT tenant, version, path, existed, sha256, size, time, command, actor, redacted,
           pruned_through, content
    FROM versions ORDER BY tenant, version;
DROP TABLE versions;
ALTER TABLE versions_v2 RENAME TO versions;
CREATE INDEX versions_path ON versions (tenant, path, version);

-- The conversion's place: one row while versions are left to turn into deltas.
CREATE TABLE version_deltas (tenant INTEGER NOT NULL, path TEXT NOT NULL);
INSERT INTO version_deltas (tenant, path) SELECT -1, ''
    WHERE EXISTS (SELECT 1 FROM versions WHERE content IS NOT NULL);
