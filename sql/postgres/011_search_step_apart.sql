-- memoryd schema, version 11: the word index's step no longer holds the writers (docs/
-- architecture.md, "History and search"). PostgreSQL. Until this version a step
-- (memoryd_index_step of 010_search_apart.sql) took its notes first, and held them locked
-- while it read the files and wrote their words: a write that noted one of those files again
-- waited for the whole step (tens of milliseconds under load).
-- Now a note counts the writes that made it (`noted`). A step reads up to n notes without
-- locking them, writes the files' words, and only then removes the notes that no write has
-- noted again meanwhile (the same count): one that was noted again stays for the next step,
-- and so does one whose writer has not committed yet (skipped, not waited for: that writer may
-- wait for a note the step removes, until the step commits).
-- The files are read in a statement after the notes were, so every write that made a note
-- read has committed and is seen. One step at a time in a database (an advisory lock, tried:
-- another instance's step skips its turn).

ALTER TABLE search_pending ADD COLUMN noted bigint NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION memoryd_search_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        INSERT INTO search_pending VALUES (OLD.tenant, OLD.path)
            ON CONFLICT (tenant, path) DO UPDATE SET noted = search_pending.noted + 1;
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.path <> OLD.path) THEN
        INSERT INTO search_pending VALUES (NEW.tenant, NEW.path)
            ON CONFLICT (tenant, path) DO UPDATE SET noted = search_pending.noted + 1;
    END IF;
    RETURN NULL;
END
$$;

-- A step: up to n notes read, the least noted first (a file written again and again waits
-- behind the others, which are then not left behind it), each file's words written (or its
-- row removed where the path holds no file now), then the notes removed that are as they were
-- read. The count of notes removed (0 when another step holds the lock: ('memd', 1), apart
-- from the tenants' one-key locks): memoryd steps again at once while a step removes at least
-- half of n, so a backlog is taken as fast as it comes, and files written again and again are
-- taken once a period.
CREATE OR REPLACE FUNCTION memoryd_index_step(n integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    t bigint[];
    p text[];
    c bigint[];
    removed integer;
BEGIN
    IF NOT pg_try_advisory_xact_lock(1835363684, 1) THEN
        RETURN 0;
    END IF;
    SELECT array_agg(s.tenant), array_agg(s.path), array_agg(s.noted) INTO t, p, c
        FROM (SELECT tenant, path, noted FROM search_pending ORDER BY noted LIMIT n) s;
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
    -- The rows to remove locked first, once (an array of their row addresses), then removed by
    -- address: as a sub-select of IN, locking rows, PostgreSQL ran it again for every note of the
    -- table (minutes for a backlog of thousands).
    DELETE FROM search_pending WHERE ctid = ANY (ARRAY(
        SELECT s.ctid FROM unnest(t, p, c) AS k(tenant, path, noted)
        JOIN search_pending s ON s.tenant = k.tenant AND s.path = k.path COLLATE "C" AND s.noted = k.noted
        FOR UPDATE OF s SKIP LOCKED));
    GET DIAGNOSTICS removed = ROW_COUNT;
    RETURN removed;
END
$$;
