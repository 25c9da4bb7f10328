-- memoryd schema, version 9: versions kept as reverse deltas (include/store/md_delta.h;
-- docs/architecture.md, "History"). PostgreSQL.
-- `enc`: 0, the version's text whole in `content`; 1, `content` is the delta that turns the
-- text just after it (the path's next version's, or the file's) back into it.
-- entries.`vrun`: how many deltas in a row end at the file's newest version, or more (never
-- fewer): a write keeps its version as a delta while that stays under MD_DELTA_RUN_MAX. The
-- files of before this version count as many, so that their next version is kept whole.
-- `versions_unconverted`: the paths whose versions were all kept whole before this version;
-- memoryd turns them into deltas when it opens the database (src/store/pg/deltas.c), a batch
-- of paths a transaction, showing its progress, and forgets each path done.
ALTER TABLE versions ADD COLUMN enc smallint NOT NULL DEFAULT 0;
ALTER TABLE entries ADD COLUMN vrun smallint NOT NULL DEFAULT 31;
ALTER TABLE entries ALTER COLUMN vrun SET DEFAULT 0;
CREATE TABLE versions_unconverted (
    tenant bigint NOT NULL,
    path   text   COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant, path)
);
INSERT INTO versions_unconverted SELECT DISTINCT tenant, path FROM versions WHERE existed AND NOT redacted;
