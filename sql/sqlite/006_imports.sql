-- Imports written in steps (src/cmd/import.c; docs/tenants.md, "Export and import"): a large
-- import commits a step at a time, between the writer's other transactions, so that other
-- tenants' writes go on. While it runs, a row here says where its tenant's history stood when
-- it began; the last step deletes the row in its own transaction. A failed import, or one that a
-- stopped memoryd left halfway (found at the next start), is undone: the tenant's files are put
-- back as they were before the import's first version, then the versions and change-feed entries
-- recorded since are deleted and the tenant's counters set back (src/store/sqlite/imports.c).
CREATE TABLE imports (
    tenant       INTEGER PRIMARY KEY REFERENCES tenants(id),
    last_version INTEGER NOT NULL,
    last_seq     INTEGER NOT NULL,
    started      INTEGER NOT NULL   -- unix time, milliseconds
);
