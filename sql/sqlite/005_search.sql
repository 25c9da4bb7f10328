-- memoryd schema, version 5: full-text search of the current files (README, "Search").
-- SQLite. The entries table gets an explicit `id INTEGER PRIMARY KEY`: the full-text index
-- refers to a file by it, and an implicit rowid may be renumbered by a VACUUM. The table is
-- rebuilt as in 002 (same columns, same keys; `id` first), then the index is filled.
CREATE TABLE entries_v5 (
    id         INTEGER PRIMARY KEY,
    tenant     INTEGER NOT NULL REFERENCES tenants(id),
    path       TEXT    NOT NULL,
    depth      INTEGER NOT NULL,          -- segments below /memories (root = 0)
    kind       INTEGER NOT NULL CHECK (kind IN (0, 1)),  -- 0 file, 1 directory
    size       INTEGER NOT NULL,          -- file bytes; directory: bytes of files below
    mtime      INTEGER NOT NULL,          -- unix time, milliseconds
    sha256     BLOB,                      -- files only: SHA-256 of the content
    content    BLOB,                      -- files only; last so listings never read it
    UNIQUE (tenant, path)
);
INSERT INTO entries_v5 (tenant, path, depth, kind, size, mtime, sha256, content)
    SELECT tenant, path, depth, kind, size, mtime, sha256, content FROM entries ORDER BY tenant, path;
DROP TABLE entries;
ALTER TABLE entries_v5 RENAME TO entries;
CREATE INDEX entries_children ON entries (tenant, depth, path, kind, size);
CREATE TRIGGER entries_files_insert AFTER INSERT ON entries WHEN NEW.kind = 0
BEGIN
    UPDATE tenants SET files = files + 1 WHERE id = NEW.tenant;
END;
CREATE TRIGGER entries_files_delete AFTER DELETE ON entries WHEN OLD.kind = 0
BEGIN
    UPDATE tenants SET files = files - 1 WHERE id = OLD.tenant;
END;

-- The index: FTS5, a word index (README, "Search", says why words and not trigrams), contentless
-- (the text is in entries already), one row per file, its rowid the entry's id.
--   - The tokenizer: unicode61 without removing diacritics, every Unicode category but the
--     controls (Cc) in words, and every ASCII character but letters and digits a separator:
--     a word is a run of letters, digits and non-ASCII characters (md_text_is_sep in
--     src/text.c is the same rule). Letters are folded to lower case.
--   - `tenant`: one token per file, U+E000 followed by the tenant's id, ANDed into every
--     query, so that a search reads the postings of its tenant only.
--   - detail=none, columnsize=0: the index keeps which files hold a word, not where nor how
--     often (cheaper to write, smaller); memoryd checks and ranks each candidate on its text
--     (memoryd_score, md_search_score in src/search.c), phrases included.
-- A rename updates `path` only, so the index is not touched.
-- The index is written once per transaction, at its end: FTS5 writes its pending words out as a
-- new segment (and does its share of merging) at every SAVEPOINT, and memoryd's writer runs
-- each command of a batch in a savepoint of its own, so indexing in the triggers themselves
-- cost a segment per command (about 240 more pages written per batch of 30 creates: half the
-- create throughput). The triggers note each file a write touches in `search_pending`
-- instead, once per transaction (the first note: for a file that was there, its content as
-- the index has it; later writes of the same file add nothing); the writer turns the notes
-- into index changes just before COMMIT, in the same transaction, and empties the table
-- (sq_search_flush in src/store/sqlite/search.c). So the index is exact at every commit.
-- `memoryd --search off` drops the three triggers and empties the index; `--search on` (the
-- default) puts them back and refills it at start (src/store/sqlite/search.c).
CREATE VIRTUAL TABLE entries_search USING fts5(body, tenant, content = '', detail = none,
    columnsize = 0, tokenize = 'unicode61 remove_diacritics 0 categories ''L* N* M* P* S* Z* Co Cf Cs Cn'' separators '' !"#$%&''''()*+,-./:;<=>?@[\]^_`{|}~''');
CREATE TABLE search_pending (
    id     INTEGER PRIMARY KEY,   -- entries.id of a file this transaction wrote: its first note
    tenant INTEGER,               -- with old: the file's tenant
    old    BLOB                   -- NULL: a new file; else its content before the transaction
);
CREATE TRIGGER entries_search_insert AFTER INSERT ON entries WHEN NEW.kind = 0
BEGIN
    INSERT OR IGNORE INTO search_pending (id) VALUES (NEW.id);
END;
CREATE TRIGGER entries_search_delete AFTER DELETE ON entries WHEN OLD.kind = 0
BEGIN
    INSERT OR IGNORE INTO search_pending (id, tenant, old) VALUES (OLD.id, OLD.tenant, ifnull(OLD.content, x''));
END;
CREATE TRIGGER entries_search_update AFTER UPDATE OF content ON entries WHEN OLD.kind = 0
BEGIN
    INSERT OR IGNORE INTO search_pending (id, tenant, old) VALUES (OLD.id, OLD.tenant, ifnull(OLD.content, x''));
END;
INSERT INTO entries_search (rowid, body, tenant)
    SELECT id, content, char(57344) || tenant FROM entries WHERE kind = 0;
