-- memoryd schema, version 11: the search index catches up beside the writer (docs/architecture.md,
-- "History and search"). SQLite. The notes in search_pending are no longer turned into index
-- changes at each commit: they stay until a step of the writer's indexes them, and a search
-- checks the noted files of its tenant directly. A note is now keyed by `file_tenant`, the tenant
-- of the file the noted id names (a search finds its tenant's notes by the key), then the id: a
-- new file that takes the id of one deleted since the last step gets a note of its own tenant
-- beside the deleted file's, whose `tenant` and `old` are what the word index holds of the id.
-- WITHOUT ROWID: one b-tree for the notes, so that a commit writes one page for them. memoryd
-- puts the triggers of this version in place when it opens the database with search on
-- (src/store/sqlite/search.c); until then nothing writes (legacy_alter_table: the rename leaves
-- the old triggers' text alone).
PRAGMA legacy_alter_table = ON;
CREATE TABLE search_pending_v11 (
    file_tenant INTEGER NOT NULL,
    id          INTEGER NOT NULL,
    tenant      INTEGER,
    old         BLOB,
    PRIMARY KEY (file_tenant, id)
) WITHOUT ROWID;
INSERT INTO search_pending_v11 (file_tenant, id, tenant, old)
    SELECT coalesce((SELECT e.tenant FROM entries e WHERE e.id = p.id), p.tenant, 0), p.id, p.tenant, p.old
    FROM search_pending p;
DROP TABLE search_pending;
ALTER TABLE search_pending_v11 RENAME TO search_pending;
PRAGMA legacy_alter_table = OFF;
