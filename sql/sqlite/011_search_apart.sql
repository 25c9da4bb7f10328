-- memoryd schema, version 11: the search index catches up beside the writer (docs/architecture.md,
-- "Search"). SQLite. The notes in search_pending are no longer turned into index changes at each
-- commit: they stay until a step of the writer's indexes them, and a search checks the noted
-- files of its tenant directly. `file_tenant` is the tenant of the file the noted id names now
-- (set by every note, and again when a new file takes the id of one deleted since the last
-- step), so that a search finds its tenant's notes by the index below; `tenant` stays the
-- tenant of `old`, the content the word index holds of the id. memoryd puts the triggers of this
-- version in place when it opens the database with search on (src/store/sqlite/search.c).
ALTER TABLE search_pending ADD COLUMN file_tenant INTEGER;
UPDATE search_pending SET file_tenant = coalesce((SELECT e.tenant FROM entries e WHERE e.id = search_pending.id), tenant);
CREATE INDEX search_pending_tenant ON search_pending (file_tenant);
