-- memoryd schema, version 12: the search index merged when writes pause (docs/architecture.md,
-- "History and search"). SQLite. Indexed in steps beside the writer, the index gathers small
-- segments, and every file written again leaves its old words in an older segment until FTS5
-- merges the two; its automerge waits for 4 segments of a level. memoryd's checkpointer runs
-- FTS5's 'merge' command when writes pause (src/store/sqlite/checkpoint.c); with usermerge 2 a
-- merge takes two segments of a level, so that what a pause merges is a few small segments and
-- not the whole index again. A setting of the index (its entries_search_config row): the
-- writes' own merging (automerge) stays as it was.
INSERT INTO entries_search (entries_search, rank) VALUES ('usermerge', 2);
