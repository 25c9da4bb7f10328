-- memoryd schema, version 5: full-text search of the current files (README, "Search").
-- PostgreSQL: a word index, the same rule as SQLite's (sql/sqlite/005_search.sql): a GIN index
-- of each file's words, so that a search's candidates are the files that hold a word starting
-- with each word of its terms (a prefix tsquery, `'bill':*`); memoryd then checks and ranks
-- each candidate on its text (regular expressions, the rule of md_search_score). The index is
-- on entries itself: PostgreSQL keeps it in the transaction of every write; a rename, being an
-- UPDATE of the rows, re-indexes them.
-- `memoryd --search off` drops the index; `--search on` (the default) builds it again at start.

-- A file's content as text: UTF-8 (memoryd stores only valid UTF-8), each NUL byte (which a
-- text cannot hold) read as a space. A SQL function, inlined where it is used: most contents
-- have no NUL and are converted at once; the others go through memoryd_text_nul.
CREATE FUNCTION memoryd_text_nul(b bytea) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
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
CREATE FUNCTION memoryd_text(b bytea) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN position('\x00'::bytea IN b) = 0 THEN convert_from(b, 'UTF8') ELSE memoryd_text_nul(b) END
$$;

-- A file's words, as the index keeps them: runs of ASCII letters and digits and characters
-- from U+00A0 on (every other character separates words: md_text_is_sep), ASCII letters in
-- lower case (COLLATE "C": only those, whatever the database's locale; other letters keep
-- their case, as memoryd matches them), each cut to its first 100 characters (a lexeme has a
-- limit; a longer query word is looked up by its first 100 as a prefix), each once. A file
-- whose words would not fit in a tsvector (1 MB) is indexed as '#all' (no word can be that:
-- '#' separates words), which every search's query also asks for: it is always a candidate.
CREATE FUNCTION memoryd_words(b bytea) RETURNS tsvector LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN sum(octet_length(w)) + 8 * count(*) >= 1000000 THEN '''#all'''::tsvector
                ELSE coalesce(array_to_tsvector(array_agg(w)), ''::tsvector) END
    FROM (SELECT DISTINCT left(w, 100) AS w
          FROM regexp_split_to_table(lower(memoryd_text(b) COLLATE "C"), '[^0-9a-z\u00a0-\U0010ffff]+') w
          WHERE w <> '') s
$$;

-- The index's pending list (GIN's fast update: new entries are appended there and merged into
-- the index in bulk) is kept to 256 kB instead of the server's 4 MB: every search reads the
-- whole list, which at 4 MB cost each search over a millisecond and the merges long pauses.
CREATE INDEX entries_search ON entries USING gin (memoryd_words(content))
    WITH (gin_pending_list_limit = 256) WHERE kind = 0;
