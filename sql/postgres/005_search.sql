-- memoryd schema, version 5: full-text search of the current files (README, "Search").
-- PostgreSQL: pg_trgm (a trusted extension of PostgreSQL's contrib, installed with the
-- server package) and a GIN trigram index on the files' text, so that
--   memoryd_text(content) ILIKE '%term%'
-- (substring match, case-insensitive, the same as SQLite's trigram tokenizer) is answered
-- from the index. The index is on entries itself: it is kept by PostgreSQL in the
-- transaction of every write; a rename, being an UPDATE of the rows, re-indexes them.
-- `memoryd --search off` drops the index; `--search on` (the default) builds it again at start.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- A file's content as text: UTF-8 (memoryd stores only valid UTF-8), each NUL byte (which a
-- text cannot hold) read as a space.
CREATE FUNCTION memoryd_text(b bytea) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    p integer := position('\x00'::bytea IN b);
BEGIN
    WHILE p > 0 LOOP
        b := overlay(b PLACING '\x20'::bytea FROM p FOR 1);
        p := position('\x00'::bytea IN b);
    END LOOP;
    RETURN convert_from(b, 'UTF8');
END
$$;

CREATE INDEX entries_search ON entries USING gin (memoryd_text(content) gin_trgm_ops) WHERE kind = 0;
