-- memoryd schema, version 10: the word index written beside the writes (docs/architecture.md,
-- "History and search"). PostgreSQL. Until this version a GIN index of memoryd_words(content)
-- on entries was kept in the transaction of every write: each write paid for its words. Now:
--   search_words    each file's words (memoryd_words of 005_search.sql), by (tenant, path), with
--                   a GIN index search_words_gin (made by memoryd_search_on, with the
--                   triggers that note writes; dropped by memoryd_search_off);
--   search_pending  the files written since their words were taken: the triggers of
--                   memoryd_search_note note them in the write's own transaction (a row each,
--                   no words); memoryd_index_step takes up to n of them and writes their words,
--                   run by every instance on a connection of its own every 250 ms
--                   (src/store/pg/search.c). A search takes the index's candidates and every
--                   noted file of its tenant, and checks each on its text: it sees every
--                   committed write.
-- This migration replaces the old index with the new one where search was on (the default; a
-- new database has it from 005), at the end of this file. Where it was off, memoryd with
-- --search on builds it at start, as it builds an index that is missing.

CREATE TABLE search_words (
    tenant bigint   NOT NULL,
    path   text     COLLATE "C" NOT NULL,
    words  tsvector NOT NULL,
    PRIMARY KEY (tenant, path)
);

CREATE TABLE search_pending (
    tenant bigint NOT NULL,
    path   text   COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant, path)
);

-- A row trigger's note of a file whose words may have changed: its path (a rename's old and
-- new ones). A note already there is updated, not skipped, so that the writing transaction
-- holds its row until it ends: a step (memoryd_index_step) then cannot take it and read the
-- file before this write is committed; a note taken by a step while it runs makes the write
-- wait for that step, and noted again after it.
CREATE FUNCTION memoryd_search_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        INSERT INTO search_pending VALUES (OLD.tenant, OLD.path)
            ON CONFLICT (tenant, path) DO UPDATE SET tenant = excluded.tenant;
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.path <> OLD.path) THEN
        INSERT INTO search_pending VALUES (NEW.tenant, NEW.path)
            ON CONFLICT (tenant, path) DO UPDATE SET tenant = excluded.tenant;
    END IF;
    RETURN NULL;
END
$$;

-- A step: up to n notes taken (none that a write still holds), then each file's words written,
-- or its row removed where the path holds no file now. Two statements: the second's snapshot
-- is taken after the notes were, so it sees every write that noted them. The count taken.
CREATE FUNCTION memoryd_index_step(n integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    t bigint[];
    p text[];
BEGIN
    WITH d AS (DELETE FROM search_pending WHERE (tenant, path) IN
                   (SELECT tenant, path FROM search_pending LIMIT n FOR UPDATE SKIP LOCKED)
               RETURNING tenant, path)
    SELECT array_agg(tenant), array_agg(path) INTO t, p FROM d;
    IF t IS NULL THEN
        RETURN 0;
    END IF;
    DELETE FROM search_words w USING unnest(t, p) AS k(tenant, path)
        WHERE w.tenant = k.tenant AND w.path = k.path COLLATE "C" AND NOT EXISTS
            (SELECT 1 FROM entries e
             WHERE e.tenant = k.tenant AND e.path = k.path COLLATE "C" AND e.kind = 0);
    INSERT INTO search_words (tenant, path, words)
        SELECT e.tenant, e.path, memoryd_words(e.content)
        FROM unnest(t, p) AS k(tenant, path)
        JOIN entries e ON e.tenant = k.tenant AND e.path = k.path COLLATE "C" AND e.kind = 0
        ON CONFLICT (tenant, path) DO UPDATE SET words = excluded.words;
    RETURN cardinality(t);
END
$$;

-- Search turned on (memoryd --search on, where search_words_gin is missing): every file's words
-- taken, the GIN index made and the triggers that note the files written. memoryd calls it in a
-- transaction that holds the writes meanwhile. DELETE, not TRUNCATE: TRUNCATE's lock would hold
-- every connection that prepares a search statement meanwhile (a reader's, which then fails on
-- its lock_timeout).
CREATE FUNCTION memoryd_search_on() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF to_regclass('search_words_gin') IS NOT NULL THEN
        RETURN;
    END IF;
    DELETE FROM search_words;
    DELETE FROM search_pending;
    INSERT INTO search_words SELECT tenant, path, memoryd_words(content) FROM entries WHERE kind = 0;
    CREATE INDEX search_words_gin ON search_words USING gin (words) WITH (gin_pending_list_limit = 256);
    CREATE OR REPLACE TRIGGER entries_search_insert AFTER INSERT ON entries
        FOR EACH ROW WHEN (NEW.kind = 0) EXECUTE FUNCTION memoryd_search_note();
    CREATE OR REPLACE TRIGGER entries_search_update AFTER UPDATE OF content, path ON entries
        FOR EACH ROW WHEN (NEW.kind = 0) EXECUTE FUNCTION memoryd_search_note();
    CREATE OR REPLACE TRIGGER entries_search_delete AFTER DELETE ON entries
        FOR EACH ROW WHEN (OLD.kind = 0) EXECUTE FUNCTION memoryd_search_note();
END
$$;

-- Search turned off (memoryd --search off): the triggers, the index and the words gone.
CREATE FUNCTION memoryd_search_off() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DROP TRIGGER IF EXISTS entries_search_insert ON entries;
    DROP TRIGGER IF EXISTS entries_search_update ON entries;
    DROP TRIGGER IF EXISTS entries_search_delete ON entries;
    DROP INDEX IF EXISTS search_words_gin;
    TRUNCATE search_words, search_pending;
END
$$;

DO $$
BEGIN
    IF to_regclass('entries_search') IS NOT NULL THEN
        DROP INDEX entries_search;
        PERFORM memoryd_search_on();
    END IF;
END
$$;
