-- memoryd schema, version 12: the word index follows the change feed (docs/architecture.md,
-- "History and search"). PostgreSQL. Until this version row triggers noted every file a write
-- touched in search_pending, in the write's own transaction (a plpgsql call and a row
-- written, then removed, a write: its CPU and its WAL). The feed (`changes`) already names
-- every path a write touches, one row a write, in the write's transaction; now the index
-- keeps, for each tenant, the feed's seq it has taken the words of (`search_cursor`), and the
-- writes note nothing.
--   search_cursor   (tenant, seq): the files of the paths of the tenant's feed up to `seq`
--                   have their words in search_words as of a time after that write committed.
--                   A tenant without a row: 0 (a tenant made after search was turned on,
--                   whose feed begins at seq 1).
--   search_pending  now a view: the paths of the feed after each tenant's cursor (a
--                   directory's path stands for every file below it; '/memories', every file
--                   of the tenant, where retention pruned the feed past the cursor). A
--                   search checks those files on their text, beside the index's candidates:
--                   it sees every committed write.
-- A tenant's feed seqs commit in order: they are taken under the tenant's advisory lock,
-- held until the write commits (src/store/pg/batch.c). So the feed rows a step sees after a
-- cursor are a run without holes, and the next one it does not see has not committed.
-- A step (memoryd_index_take, then the words written, in one transaction) takes them, up to
-- n, in seq order (a prefix of each tenant's run), reads their files as they are in a later
-- statement (after those writes committed), and moves the cursors; memoryd computes the words
-- (src/store/pg/words.c, by memoryd_words' rule). It writes nothing a writer writes: no
-- writer ever waits for it.
DROP TRIGGER IF EXISTS entries_search_insert ON entries;
DROP TRIGGER IF EXISTS entries_search_update ON entries;
DROP TRIGGER IF EXISTS entries_search_delete ON entries;
DROP FUNCTION memoryd_search_note();
CREATE TABLE search_cursor (
    tenant bigint PRIMARY KEY,
    seq    bigint NOT NULL
);
-- The files noted and not indexed yet, where search is on: indexed now, then every tenant's
-- cursor at its last write.
DO $$
BEGIN
    IF to_regclass('search_words_gin') IS NOT NULL THEN
        DELETE FROM search_words w USING search_pending k
            WHERE w.tenant = k.tenant AND w.path = k.path AND NOT EXISTS
                (SELECT 1 FROM entries e WHERE e.tenant = k.tenant AND e.path = k.path AND e.kind = 0);
        INSERT INTO search_words (tenant, path, words)
            SELECT e.tenant, e.path, memoryd_words(e.content)
            FROM search_pending k JOIN entries e ON e.tenant = k.tenant AND e.path = k.path AND e.kind = 0
            ON CONFLICT (tenant, path) DO UPDATE SET words = excluded.words;
        INSERT INTO search_cursor SELECT id, last_seq FROM tenants;
    END IF;
END
$$;
DROP TABLE search_pending;
CREATE VIEW search_pending AS
    SELECT t.id AS tenant, p.path
    FROM tenants t LEFT JOIN search_cursor k ON k.tenant = t.id,
    LATERAL (SELECT string_to_table(c.paths, E'\n') AS path FROM changes c
             WHERE c.tenant = t.id AND c.seq > coalesce(k.seq, 0)
             UNION ALL
             SELECT '/memories' WHERE NOT EXISTS (SELECT 1 FROM changes c
                 WHERE c.tenant = t.id AND c.seq = coalesce(k.seq, 0) + 1)) p
    WHERE t.last_seq > coalesce(k.seq, 0);
-- A step's taking: the feed rows after the cursors, up to n, in seq order, and where
-- retention pruned a tenant's feed past its cursor every file of the tenant; the words of
-- the files no longer at those paths or below them removed, the cursors moved, and the files
-- there now returned (tenant, path, size), for the caller to read in a later statement (so,
-- after the writes it took committed) and write their words in the same transaction
-- (memoryd: in batches of a few MiB, computing the words itself, md_pg_words;
-- memoryd_index_step below: all at once with memoryd_words). Each row carries `taken`, the
-- count of feed rows taken; one row without a file when no file is left to index; none when
-- nothing was taken, or another step holds the lock (('memd', 1), apart from the tenants'
-- one-key locks). memoryd steps again at once while a step takes at least half of n, so a
-- backlog is taken as fast as it comes.
DROP FUNCTION memoryd_index_step(integer);
CREATE FUNCTION memoryd_index_take(n integer)
    RETURNS TABLE (taken integer, tenant bigint, path text, size bigint) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    bt bigint[];   -- the tenants behind, their cursors, their last seq
    bc bigint[];
    bl bigint[];
    ct bigint[];   -- the cursors moved: tenant, seq
    cs bigint[];
    pt bigint[];   -- the paths to index: tenant, path
    pp text[];
    k integer;
BEGIN
    IF NOT pg_try_advisory_xact_lock(1835363684, 1) THEN
        RETURN;
    END IF;
    SELECT array_agg(t.id), array_agg(coalesce(s.seq, 0)), array_agg(t.last_seq) INTO bt, bc, bl
        FROM tenants t LEFT JOIN search_cursor s ON s.tenant = t.id
        WHERE t.last_seq > coalesce(s.seq, 0);
    IF bt IS NULL THEN
        RETURN;
    END IF;
    WITH b AS (SELECT * FROM unnest(bt, bc, bl) AS b(tenant, cur, last)),
    -- pruned past the cursor: every file, the cursor at the last write read
    gap AS (SELECT tenant, last FROM b WHERE NOT EXISTS
                (SELECT 1 FROM changes c WHERE c.tenant = b.tenant AND c.seq = b.cur + 1)),
    f AS (SELECT c.tenant, c.seq, c.paths FROM b JOIN changes c ON c.tenant = b.tenant AND c.seq > b.cur
          WHERE b.tenant NOT IN (SELECT tenant FROM gap) ORDER BY c.seq, c.tenant LIMIT n),
    moved AS (SELECT tenant, max(seq) AS seq FROM f GROUP BY tenant
              UNION ALL SELECT tenant, last FROM gap),
    p AS (SELECT DISTINCT tenant, string_to_table(paths, E'\n') AS path FROM f
          UNION SELECT tenant, '/memories' FROM gap)
    SELECT (SELECT count(*) FROM f) + (SELECT count(*) FROM gap),
           (SELECT array_agg(tenant) FROM moved), (SELECT array_agg(seq) FROM moved),
           (SELECT array_agg(tenant) FROM p), (SELECT array_agg(path) FROM p)
        INTO k, ct, cs, pt, pp;
    -- The rows at a path or below it, each an index range of its own (as one join condition
    -- with OR, PostgreSQL scanned the whole table); u.path in the paths' collation, "C".
    DELETE FROM search_words WHERE ctid = ANY (ARRAY(
        SELECT x.ctid FROM (SELECT tenant, path COLLATE "C" AS path FROM unnest(pt, pp) AS u(tenant, path)) u,
        LATERAL (SELECT s.ctid, s.path FROM search_words s WHERE s.tenant = u.tenant AND s.path = u.path
                 UNION ALL
                 SELECT s.ctid, s.path FROM search_words s
                 WHERE s.tenant = u.tenant AND s.path > u.path || '/' AND s.path < u.path || '0') x
        WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.tenant = u.tenant AND e.path = x.path AND e.kind = 0)));
    INSERT INTO search_cursor (tenant, seq) SELECT * FROM unnest(ct, cs)
        ON CONFLICT (tenant) DO UPDATE SET seq = greatest(search_cursor.seq, excluded.seq);
    RETURN QUERY
        SELECT DISTINCT ON (u.tenant, x.path) k, u.tenant, x.path::text, x.size
        FROM (SELECT tenant, path COLLATE "C" AS path FROM unnest(pt, pp) AS u(tenant, path)) u,
        LATERAL (SELECT e.path, octet_length(e.content)::bigint AS size FROM entries e
                 WHERE e.tenant = u.tenant AND e.path = u.path AND e.kind = 0
                 UNION ALL
                 SELECT e.path, octet_length(e.content)::bigint FROM entries e
                 WHERE e.tenant = u.tenant AND e.path > u.path || '/' AND e.path < u.path || '0' AND e.kind = 0) x
        ORDER BY u.tenant, x.path;
    IF NOT FOUND THEN
        RETURN QUERY SELECT k, NULL::bigint, NULL::text, NULL::bigint;
    END IF;
END
$$;
-- A whole step in SQL, the words by memoryd_words (what memoryd does with md_pg_words and a
-- statement of its own; for psql and the tests): the count of feed rows taken.
CREATE FUNCTION memoryd_index_step(n integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    t bigint[];
    p text[];
    k integer;
BEGIN
    SELECT max(taken), array_agg(tenant) FILTER (WHERE path IS NOT NULL),
           array_agg(path) FILTER (WHERE path IS NOT NULL)
        INTO k, t, p FROM memoryd_index_take(n);
    INSERT INTO search_words (tenant, path, words)
        SELECT e.tenant, e.path, memoryd_words(e.content)
        FROM unnest(t, p) AS u(tenant, path)
        JOIN entries e ON e.tenant = u.tenant AND e.path = u.path COLLATE "C" AND e.kind = 0
        ON CONFLICT (tenant, path) DO UPDATE SET words = excluded.words;
    RETURN coalesce(k, 0);
END
$$;
-- Search turned on (memoryd --search on, where search_words_gin is missing): every file's words
-- taken, the GIN index made, every tenant's cursor at its last write. memoryd calls it in a
-- transaction that holds the writes meanwhile. DELETE, not TRUNCATE: TRUNCATE's lock would hold
-- every connection that prepares a search statement meanwhile (a reader's, which then fails on
-- its lock_timeout).
CREATE OR REPLACE FUNCTION memoryd_search_on() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF to_regclass('search_words_gin') IS NOT NULL THEN
        RETURN;
    END IF;
    DELETE FROM search_words;
    DELETE FROM search_cursor;
    INSERT INTO search_words SELECT tenant, path, memoryd_words(content) FROM entries WHERE kind = 0;
    INSERT INTO search_cursor SELECT id, last_seq FROM tenants;
    CREATE INDEX search_words_gin ON search_words USING gin (words) WITH (gin_pending_list_limit = 256);
END
$$;
-- Search turned off (memoryd --search off): the index, the words and the cursors gone.
CREATE OR REPLACE FUNCTION memoryd_search_off() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DROP INDEX IF EXISTS search_words_gin;
    TRUNCATE search_words, search_cursor;
END
$$;
