-- memoryd schema, version 5: full-text search of the current files (README, "Search").
-- PostgreSQL: a word index, the same rule as SQLite's (sql/sqlite/005_search.sql): a GIN index
-- of each file's words, so that a search's candidates are the files that hold a word starting
-- with each word of its terms (a prefix tsquery, `'bill':*`); memoryd then checks and ranks
-- each candidate on its text by the rule of md_search_score (in memoryd; by regular expressions
-- in PostgreSQL when there are more than 500 candidates). The index is
-- on entries itself: PostgreSQL keeps it in the transaction of every write; a rename, being an
-- UPDATE of the rows, re-indexes them.
-- `memoryd --search off` drops the index; `--search on` (the default) builds it again at start.

-- Both functions below call no function of memoryd's own: PostgreSQL evaluates an index's
-- expression with an empty search_path at times (autovacuum's ANALYZE, a restore of pg_dump),
-- where memoryd's functions would not be found.

-- A file's content as text: UTF-8 (memoryd stores only valid UTF-8), each NUL byte (which a
-- text cannot hold) read as a space: most contents have none and are converted at once; the
-- others in one pass over their hex form (each byte as two digits and a space, so that 00
-- can only be a whole byte). A SQL function: inlined where memoryd's queries use it.
CREATE FUNCTION memoryd_text(b bytea) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT convert_from(CASE WHEN position('\x00'::bytea IN b) = 0 THEN b
        ELSE decode(replace(replace(regexp_replace(encode(b, 'hex'), '(..)', '\1 ', 'g'), '00 ', '20 '), ' ', ''), 'hex') END, 'UTF8')
$$;

-- A file's words, as the index keeps them: runs of ASCII letters and digits and characters
-- from U+00A0 on (every other character separates words: md_text_is_sep), ASCII letters in
-- lower case (COLLATE "C": only those, whatever the database's locale; other letters keep
-- their case, as memoryd matches them), each once. array_to_tsvector checks no limit (a
-- lexeme of more than 2047 bytes, or a tsvector of more than 1 MB, comes out corrupt), so:
-- in a file of at most 300,000 bytes whose words all have at most 400 bytes, the words as
-- they are; else each cut to its first 100 characters, and a file whose words would still
-- not fit is indexed as '#all' (no word can be that: '#' separates words), which every
-- search's query also asks for: it is always a candidate. A query's word of more than 100
-- characters is looked up by its first 100 as a prefix, which finds it either way.
CREATE FUNCTION memoryd_words(b bytea) RETURNS tsvector LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    a text[];
BEGIN
    IF position('\x00'::bytea IN b) > 0 THEN
        b := decode(replace(replace(regexp_replace(encode(b, 'hex'), '(..)', '\1 ', 'g'), '00 ', '20 '), ' ', ''), 'hex');
    END IF;
    a := regexp_split_to_array(lower(convert_from(b, 'UTF8') COLLATE "C"), '[^0-9a-z\u00a0-\U0010ffff]+');
    IF octet_length(b) <= 300000 AND coalesce((SELECT max(octet_length(w)) FROM unnest(a) w), 0) <= 400 THEN
        RETURN array_to_tsvector(array_remove(a, ''));
    END IF;
    RETURN (SELECT CASE WHEN sum(octet_length(w)) + 8 * count(*) >= 1000000 THEN '''#all'''::tsvector
                        ELSE coalesce(array_to_tsvector(array_agg(w)), ''::tsvector) END
            FROM (SELECT DISTINCT left(w, 100) AS w FROM unnest(a) w WHERE w <> '') s);
END
$$;

-- The index's pending list (GIN's fast update: new entries are appended there and merged into
-- the index in bulk) is kept to 256 kB instead of the server's 4 MB: every search reads the
-- whole list, which at 4 MB cost each search over a millisecond and the merges long pauses.
CREATE INDEX entries_search ON entries USING gin (memoryd_words(content))
    WITH (gin_pending_list_limit = 256) WHERE kind = 0;
