-- memoryd schema, version 13: the word index's step reads only what it takes of the change feed
-- (docs/architecture.md, "History and search"). PostgreSQL.
-- memoryd_index_take of 012_search_follows_feed.sql took its feed rows as one ordering of every
-- row after every tenant's cursor by (seq, tenant), which no index gives: each step read and
-- sorted the whole backlog to keep n rows (25,177 read for 4,096 taken under a str_replace
-- load), so a step grew with how far the index was behind. Now each tenant's rows after its
-- cursor are read in seq order from the feed's key, at most n of them, and the first n of those
-- in (seq, tenant) order are taken, as before: a step reads at most n rows a tenant behind.
-- The rest of the function is unchanged.
CREATE OR REPLACE FUNCTION memoryd_index_take(n integer)
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
    f AS (SELECT c.tenant, c.seq, c.paths FROM b,
          LATERAL (SELECT c.tenant, c.seq, c.paths FROM changes c WHERE c.tenant = b.tenant AND c.seq > b.cur
                   ORDER BY c.seq LIMIT n) c
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
