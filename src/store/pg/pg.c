/*
 * store_pg.c — the PostgreSQL backend of md_store (see md_store_pg.h).
 *
 * Every connection runs in libpq's pipeline mode with memoryd's statements
 * prepared once, parameters and results in binary. An operation queues its
 * statements and sends them with whatever was queued before it (BEGIN, the
 * tenant locks, a savepoint, the release of the previous command) in one
 * round trip: a flush sends a Sync and reads every result in order. So a
 * view costs one round trip, and a write command two (md_txn_locate, then
 * the write); a batch adds one for its COMMIT. Plans are generic
 * (plan_cache_mode): a custom plan per execution cost the writer's session
 * as much planning as running its statements.
 *
 * Optimistic batches (md_store_pg.h): the writer reads the rows of a whole
 * batch in the round trip of its locks, answers the commands' locates from
 * them (pre_*), gathers their inserts and file updates into one statement
 * each (bulk_*), and sends every write in one round trip before the
 * COMMIT's: three round trips per batch instead of two per command, and no
 * savepoints. Any failed statement gives the attempt up; the writer then
 * runs the batch the exact way described above.
 *
 * Directory sizes: a write transaction keeps the changes pending
 * (md_dirsizes.h) and writes them in one statement before the commit, or
 * before a subtree moves or goes; a size read in it adds what is pending.
 *
 * Failures: an error from the server fails the operation (and, inside a
 * transaction block, aborts it until the writer rolls back to the
 * command's savepoint, which the next flush sends first). A connection
 * that breaks is marked; a reader is reconnected and its operation run once
 * more, the writer is reconnected at the next transaction. A COMMIT whose
 * answer never came is MD_EUNSURE.
 */
#include "store/pg/md_store_pg.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/md_buf.h"
#include "base/md_log.h"
#include "base/md_metrics.h"
#include "base/md_path.h"
#include "base/md_text.h"
#include "cmd/md_search.h"
#include "http/md_tenant_resolve.h"
#include "internal.h"
#include "store/md_dirsizes.h"
#include "store/md_tenant_cache.h"

#define OID_BYTEA_ELEM 17
/* Connections of the reads thread (views; see store_pg_reads.c). */
#define READS_CONNS 2

/* The subtree of $3 (the entry itself, and what is between $4 and $5),
 * files only: two searches of the key. */
#define FILES_AT_OR_BELOW(cols)                                                                    \
    "(SELECT " cols " FROM entries WHERE tenant = $1 AND path = $3 AND kind = 0"                   \
    " UNION ALL SELECT " cols " FROM entries WHERE tenant = $1 AND path > $4 AND path < $5"        \
    " AND kind = 0)"
#define VERSION_COLS                                                                               \
    "version, path, existed, redacted, sha256, size, time, command, actor, pruned_through"
/* A search candidate's occurrences in its text lx of each of the terms'
 * patterns $6 (built by word_pattern), as md_search_score counts them,
 * as `c` (each pattern once: PostgreSQL's regular expressions cost about
 * 28 us per KiB); then the candidates with every term, ranked by all
 * their occurrences, then path; page $7, $8. */
#define SEARCH_COUNTS "(SELECT array_agg(regexp_count(lx, p)) FROM unnest($6::text[]) p) AS c"
#define SEARCH_RANKED                                                                              \
    " WHERE 0 < ALL (c) ORDER BY (SELECT sum(x) FROM unnest(c) x) DESC, path LIMIT $7 OFFSET $8"

static const struct {
    const char *sql;
    int n;
    Oid types[MD_PG_MAX_PARAMS];
} pst[P_COUNT] = {
    [P_BEGIN] = {"BEGIN", 0, {0}},
    [P_COMMIT] = {"COMMIT", 0, {0}},
    [P_ROLLBACK] = {"ROLLBACK", 0, {0}},
    [P_SAVEPOINT] = {"SAVEPOINT cmd", 0, {0}},
    [P_RELEASE] = {"RELEASE cmd", 0, {0}},
    [P_ROLLBACK_TO] = {"ROLLBACK TO cmd", 0, {0}},
    [P_LOCK] = {"SELECT pg_advisory_xact_lock($1)", 1, {OID_INT8}},
    [P_TENANT_NEW] = {"INSERT INTO tenants (name, created_at) VALUES ($1, $2) RETURNING id",
                      2,
                      {OID_TEXT, OID_INT8}},
    /* Several paths at once; the tenant's id (one row with no entry when it
     * has none of the paths; no row when the tenant has no data). */
    [P_LOCATE] = {"SELECT t.id, e.path, e.kind, e.size,"
                  " CASE WHEN e.path = $3 THEN e.content END, e.sha256, t.last_version, t.last_seq"
                  " FROM tenants t LEFT JOIN entries e ON e.tenant = t.id AND e.path = ANY ($2)"
                  " WHERE t.name = $1",
                  3,
                  {OID_TEXT, OID_TEXTARRAY, OID_TEXT}},
    /* Directories and a file in one statement; the tenant by name, since it
     * may have been created by the statement before. */
    [P_INSERT] =
        {"INSERT INTO entries (tenant, path, depth, kind, size, mtime, content, sha256)"
         " SELECT t.id, u.path, u.depth, u.kind,"
         " CASE WHEN u.kind = 0 THEN $7 ELSE 0 END, $5,"
         " CASE WHEN u.kind = 0 THEN $6 END, CASE WHEN u.kind = 0 THEN $8 END"
         " FROM tenants t, unnest($2::text[], $3::int4[], $4::int2[]) AS u(path, depth, kind)"
         " WHERE t.name = $1",
         8,
         {OID_TEXT, OID_TEXTARRAY, OID_INT4ARRAY, OID_INT2ARRAY, OID_INT8, OID_BYTEA, OID_INT8,
          OID_BYTEA}},
    [P_SET_CONTENT] = {"UPDATE entries SET content = $3, size = $4, mtime = $5, sha256 = $6"
                       " WHERE tenant = $1 AND path = $2 AND kind = 0",
                       6,
                       {OID_INT8, OID_TEXT, OID_BYTEA, OID_INT8, OID_INT8, OID_BYTEA}},
    [P_SIZES] = {"UPDATE entries e SET size = e.size + u.delta"
                 " FROM unnest($1::int8[], $2::text[], $3::int8[]) AS u(tenant, path, delta)"
                 " WHERE e.tenant = u.tenant AND e.path = u.path",
                 3,
                 {OID_INT8ARRAY, OID_TEXTARRAY, OID_INT8ARRAY}},
    [P_REMOVE_ONE] = {"DELETE FROM entries WHERE tenant = $1 AND path = $2",
                      2,
                      {OID_INT8, OID_TEXT}},
    [P_REMOVE_BELOW] = {"DELETE FROM entries WHERE tenant = $1 AND path > $2 AND path < $3",
                        3,
                        {OID_INT8, OID_TEXT, OID_TEXT}},
    [P_MOVE_ONE] = {"UPDATE entries SET path = $3 || substr(path, $4), depth = depth + $5,"
                    " mtime = $6 WHERE tenant = $1 AND path = $2",
                    6,
                    {OID_INT8, OID_TEXT, OID_TEXT, OID_INT4, OID_INT4, OID_INT8}},
    [P_MOVE_BELOW] = {"UPDATE entries SET path = $4 || substr(path, $5), depth = depth + $6,"
                      " mtime = $7 WHERE tenant = $1 AND path > $2 AND path < $3",
                      7,
                      {OID_INT8, OID_TEXT, OID_TEXT, OID_TEXT, OID_INT4, OID_INT4, OID_INT8}},
    /* A view in one statement: the entry (part 0), then the visible children
     * (part 1) and grandchildren (part 2) of a directory, each in path order
     * and at most $6; hidden names (.* and node_modules) are left out with
     * what is below them. $7 is the position (in characters) of the first
     * character after "dir/"; $8 is $3 + 1 (as a parameter of its own, the
     * generic plan reads the grandchildren from entries_children too, not
     * the whole subtree in path order). */
    [P_VIEW] = {"WITH t AS (SELECT id FROM tenants WHERE name = $1)"
                " SELECT 0 AS part, path, kind, size, content, sha256 FROM entries"
                " WHERE tenant = (SELECT id FROM t) AND path = $2"
                " UNION ALL (SELECT 1, path, kind, size, NULL, NULL FROM entries"
                " WHERE tenant = (SELECT id FROM t) AND depth = $3 AND path > $4 AND path < $5"
                " AND left(substr(path, $7), 1) <> '.' AND substr(path, $7) <> 'node_modules'"
                " ORDER BY path LIMIT $6)"
                " UNION ALL (SELECT 2, path, kind, size, NULL, NULL FROM entries"
                " WHERE tenant = (SELECT id FROM t) AND depth = $8 AND path > $4"
                " AND path < $5 AND left(substr(path, $7), 1) <> '.'"
                " AND split_part(substr(path, $7), '/', 1) <> 'node_modules'"
                " AND left(split_part(substr(path, $7), '/', 2), 1) <> '.'"
                " AND split_part(substr(path, $7), '/', 2) <> 'node_modules'"
                " ORDER BY path LIMIT $6)",
                8,
                {OID_TEXT, OID_TEXT, OID_INT4, OID_TEXT, OID_TEXT, OID_INT8, OID_INT4, OID_INT4}},
    [P_GET] = {"SELECT kind, size, content, sha256 FROM entries"
               " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND path = $2",
               2,
               {OID_TEXT, OID_TEXT}},
    [P_LIST] = {"SELECT path, kind, size FROM entries"
                " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND depth = $2"
                " AND path > $3 AND path < $4 ORDER BY path",
                4,
                {OID_TEXT, OID_INT4, OID_TEXT, OID_TEXT}},
    [P_PING] = {"SELECT 1", 0, {0}},
    [P_DB_SIZE] = {"SELECT pg_database_size(current_database())", 0, {0}},
    /* An optimistic batch's rows (md_txn_pg_prefetch): one row per wanted
     * (tenant, path) whose tenant exists, by its position in the arrays;
     * a file's content when wanted and at most $4 bytes (else `omitted`).
     * The lateral subquery (kept apart by OFFSET 0) makes each row one
     * lookup of the primary key in the generic plan, whatever the tenant's
     * size; a plain LEFT JOIN was planned as a scan of the tenant's rows. */
    [P_PREFETCH] = {"SELECT w.ord, t.id, e.kind, e.size,"
                    " CASE WHEN w.want = 1 AND e.kind = 0 AND e.size <= $4 THEN e.content END,"
                    " w.want = 1 AND e.kind = 0 AND e.size > $4, e.sha256, t.last_version,"
                    " t.last_seq, t.files, t.max_bytes, t.max_files"
                    " FROM unnest($1::text[], $2::text[], $3::int2[]) WITH ORDINALITY"
                    " AS w(tenant, path, want, ord)"
                    " JOIN tenants t ON t.name = w.tenant"
                    " LEFT JOIN LATERAL (SELECT kind, size, content, sha256 FROM entries"
                    " WHERE tenant = t.id AND path = w.path OFFSET 0) e ON true",
                    4,
                    {OID_TEXTARRAY, OID_TEXTARRAY, OID_INT2ARRAY, OID_INT8}},
    /* An optimistic batch's inserts and file updates, several commands' in
     * one statement (bulk_send). */
    [P_INSERT_MANY] = {"INSERT INTO entries (tenant, path, depth, kind, size, mtime, content,"
                       " sha256) SELECT * FROM unnest($1::int8[], $2::text[], $3::int4[],"
                       " $4::int2[], $5::int8[], $6::int8[], $7::bytea[], $8::bytea[])",
                       8,
                       {OID_INT8ARRAY, OID_TEXTARRAY, OID_INT4ARRAY, OID_INT2ARRAY, OID_INT8ARRAY,
                        OID_INT8ARRAY, OID_BYTEAARRAY, OID_BYTEAARRAY}},
    [P_SET_MANY] = {"UPDATE entries e SET content = u.content, size = u.size, mtime = u.mtime,"
                    " sha256 = u.sha256 FROM unnest($1::int8[], $2::text[], $3::bytea[],"
                    " $4::int8[], $5::int8[], $6::bytea[])"
                    " AS u(tenant, path, content, size, mtime, sha256)"
                    " WHERE e.tenant = u.tenant AND e.path = u.path COLLATE \"C\" AND e.kind = 0",
                    6,
                    {OID_INT8ARRAY, OID_TEXTARRAY, OID_BYTEAARRAY, OID_INT8ARRAY, OID_INT8ARRAY,
                     OID_BYTEAARRAY}},
    /* ---- history ---- */
    [P_COUNTERS] = {"SELECT last_version, last_seq FROM tenants WHERE id = $1", 1, {OID_INT8}},
    [P_TENANT_ID] = {"SELECT id FROM tenants WHERE name = $1", 1, {OID_TEXT}},
    [P_COUNTERS_SET] = {"UPDATE tenants t SET last_version = u.v, last_seq = u.s"
                        " FROM unnest($1::int8[], $2::int8[], $3::int8[]) AS u(id, v, s)"
                        " WHERE t.id = u.id",
                        3,
                        {OID_INT8ARRAY, OID_INT8ARRAY, OID_INT8ARRAY}},
    /* Versions whose content memoryd has (a file's absence; an optimistic
     * batch's overwrite of a prefetched file): several at once. */
    [P_VER_MANY] = {"INSERT INTO versions (tenant, version, path, existed, sha256, size, time,"
                    " command, actor, content) SELECT u.tenant, u.version, u.path, u.existed,"
                    " u.sha256, nullif(u.size, -1), u.time, u.command, u.actor, u.content"
                    " FROM unnest($1::int8[], $2::int8[], $3::text[], $4::bool[], $5::bytea[],"
                    " $6::int8[], $7::int8[], $8::text[], $9::text[], $10::bytea[])"
                    " AS u(tenant, version, path, existed, sha256, size, time, command, actor,"
                    " content)",
                    10,
                    {OID_INT8ARRAY, OID_INT8ARRAY, OID_TEXTARRAY, OID_BOOLARRAY, OID_BYTEAARRAY,
                     OID_INT8ARRAY, OID_INT8ARRAY, OID_TEXTARRAY, OID_TEXTARRAY, OID_BYTEAARRAY}},
    /* A file's version copied by the database, before it changes. */
    [P_VER_COPY] = {"INSERT INTO versions (tenant, version, path, existed, sha256, size, time,"
                    " command, actor, content) SELECT tenant, $3, path, true, sha256, size, $4,"
                    " $5, $6, content FROM entries WHERE tenant = $1 AND path = $2 AND kind = 0",
                    6,
                    {OID_INT8, OID_TEXT, OID_INT8, OID_INT8, OID_TEXT, OID_TEXT}},
    /* Every file of a subtree ($2: the number before the first version):
     * how many, and their bytes. */
    [P_VER_SUBTREE] =
        {"WITH ins AS (INSERT INTO versions (tenant, version, path, existed, sha256, size, time,"
         " command, actor, content) SELECT $1, $2 + row_number() OVER (ORDER BY path), path, true,"
         " sha256, size, $6, $7, $8, content FROM " FILES_AT_OR_BELOW(
             "path, sha256, size, content") " f RETURNING size)"
                                            " SELECT count(*), coalesce(sum(size), 0)::int8"
                                            " FROM ins",
         8,
         {OID_INT8, OID_INT8, OID_TEXT, OID_TEXT, OID_TEXT, OID_INT8, OID_TEXT, OID_TEXT}},
    /* ... of a subtree that moves to $9 ($10: the first character after
     * the old prefix): the old paths' contents, then the new paths'
     * absence. */
    [P_VER_SUBTREE_MOVE] =
        {"WITH f AS " FILES_AT_OR_BELOW(
             "path, sha256, size, content") ", ins AS (INSERT INTO versions (tenant, version,"
                                            " path, existed, sha256, size, time, command, actor,"
                                            " content) SELECT $1, $2 + row_number() OVER (ORDER"
                                            " BY g, p), p, g = 0, sha, sz, $6, $7, $8, c FROM"
                                            " (SELECT 0 AS g, path AS p, sha256 AS sha, size AS"
                                            " sz, content AS c FROM f UNION ALL SELECT 1,"
                                            " $9 || substr(path, $10), NULL, NULL, NULL FROM f) s"
                                            " RETURNING existed, size)"
                                            " SELECT count(*), coalesce(sum(size) FILTER (WHERE"
                                            " existed), 0)::int8 FROM ins",
         10,
         {OID_INT8, OID_INT8, OID_TEXT, OID_TEXT, OID_TEXT, OID_INT8, OID_TEXT, OID_TEXT, OID_TEXT,
          OID_INT4}},
    [P_CHANGES_MANY] = {"INSERT INTO changes (tenant, seq, version, versions, history_bytes, time,"
                        " command, paths, actor) SELECT u.tenant, u.seq, nullif(u.version, 0),"
                        " u.versions, u.bytes, u.time, u.command, u.paths, u.actor"
                        " FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::int8[], $5::int8[],"
                        " $6::int8[], $7::text[], $8::text[], $9::text[])"
                        " AS u(tenant, seq, version, versions, bytes, time, command, paths, actor)",
                        9,
                        {OID_INT8ARRAY, OID_INT8ARRAY, OID_INT8ARRAY, OID_INT8ARRAY, OID_INT8ARRAY,
                         OID_INT8ARRAY, OID_TEXTARRAY, OID_TEXTARRAY, OID_TEXTARRAY}},
    /* Delivered at the commit, to every instance's watcher (store_pg_watch.c). */
    [P_NOTIFY] = {"SELECT pg_notify('memoryd_changes', n) FROM unnest($1::text[]) AS n",
                  1,
                  {OID_TEXTARRAY}},
    [P_IDEM_GET] = {"SELECT fingerprint, err, body, time FROM idempotency"
                    " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND key = $2",
                    2,
                    {OID_TEXT, OID_TEXT}},
    [P_IDEM_PUT] = {"INSERT INTO idempotency (tenant, key, fingerprint, err, body, path, time)"
                    " VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (tenant, key) DO UPDATE"
                    " SET fingerprint = excluded.fingerprint, err = excluded.err,"
                    " body = excluded.body, path = excluded.path, time = excluded.time",
                    7,
                    {OID_INT8, OID_TEXT, OID_BYTEA, OID_INT4, OID_TEXT, OID_TEXT, OID_INT8}},
    [P_IDEM_SCRUB] = {"UPDATE idempotency SET body = CASE WHEN err = 0 THEN $3 ELSE $4 END"
                      " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND path = $2",
                      4,
                      {OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXT}},
    [P_HISTORY] = {"SELECT " VERSION_COLS " FROM versions"
                   " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND path = $2"
                   " AND version < $3 ORDER BY version DESC LIMIT $4",
                   4,
                   {OID_TEXT, OID_TEXT, OID_INT8, OID_INT8}},
    [P_VERSION_GET] = {"SELECT " VERSION_COLS ", content FROM versions"
                       " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND version = $2",
                       2,
                       {OID_TEXT, OID_INT8}},
    /* The write that recorded a version (newest first: stops at it). */
    [P_SNAP_BEFORE] = {"SELECT version, versions FROM changes"
                       " WHERE tenant = (SELECT id FROM tenants WHERE name = $1)"
                       " AND version IS NOT NULL AND version <= $2 ORDER BY seq DESC LIMIT 1",
                       2,
                       {OID_TEXT, OID_INT8}},
    /* The earliest version >= $5 of each path at or below $3. */
    [P_STATE_BEFORE] = {"SELECT DISTINCT ON (path) " VERSION_COLS ", content FROM versions"
                        " WHERE tenant = (SELECT id FROM tenants WHERE name = $1)"
                        " AND (path = $3 OR (path > $4 AND path < $5)) AND version >= $2"
                        " ORDER BY path, version",
                        5,
                        {OID_TEXT, OID_INT8, OID_TEXT, OID_TEXT, OID_TEXT}},
    [P_CHANGES] = {"SELECT seq, coalesce(version, 0), versions, history_bytes, time, command,"
                   " paths, actor FROM changes WHERE tenant = $1 AND seq > $2 ORDER BY seq"
                   " LIMIT $3",
                   3,
                   {OID_INT8, OID_INT8, OID_INT8}},
    [P_CHANGES_META] = {"SELECT t.id, coalesce((SELECT min(seq) FROM changes"
                        " WHERE tenant = t.id), 0), t.last_seq FROM tenants t WHERE t.name = $1",
                        1,
                        {OID_TEXT}},
    [P_REDACT] = {"UPDATE versions SET content = NULL, sha256 = NULL, redacted = true"
                  " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND version = $2",
                  2,
                  {OID_TEXT, OID_INT8}},
    /* Retention by count of one path, in one statement (so that a run's
     * paths go in one round trip): `cut` is the newest version to go (none
     * when the path has at most $3); the older ones are deleted, and the
     * oldest kept is marked with it. The two changes touch different rows
     * and see the same snapshot (hence the oldest kept is found above
     * `cut`). A row per version deleted. */
    [P_PRUNE_PATH] = {"WITH cut AS (SELECT version FROM versions WHERE tenant = $1 AND path = $2"
                      " ORDER BY version DESC LIMIT 1 OFFSET $3),"
                      " d AS (DELETE FROM versions WHERE tenant = $1 AND path = $2"
                      " AND version <= (SELECT version FROM cut) RETURNING 1),"
                      " m AS (UPDATE versions SET pruned_through = greatest(pruned_through,"
                      " (SELECT version FROM cut)) WHERE tenant = $1 AND version ="
                      " (SELECT min(version) FROM versions WHERE tenant = $1 AND path = $2"
                      " AND version > (SELECT version FROM cut)))"
                      " SELECT 1 FROM d",
                      3,
                      {OID_INT8, OID_TEXT, OID_INT8}},
    [P_PRUNE_SUBTREE_PATHS] = {"SELECT path FROM versions WHERE tenant = $1 AND path > $2"
                               " AND path < $3 GROUP BY path HAVING count(*) > $4 LIMIT 256",
                               4,
                               {OID_INT8, OID_TEXT, OID_TEXT, OID_INT8}},
    [P_TENANT_NEXT] = {"SELECT id FROM tenants WHERE id >= $1 ORDER BY id LIMIT 1", 1, {OID_INT8}},
    [P_PRUNE_AGE_SCAN] = {"SELECT version, time FROM versions WHERE tenant = $1"
                          " ORDER BY version LIMIT $2",
                          2,
                          {OID_INT8, OID_INT8}},
    [P_PRUNE_AGE_DEL] = {"DELETE FROM versions WHERE tenant = $1 AND version <= $2",
                         2,
                         {OID_INT8, OID_INT8}},
    [P_PRUNE_CHANGES_SCAN] = {"SELECT seq, time FROM changes WHERE tenant = $1"
                              " ORDER BY seq LIMIT $2",
                              2,
                              {OID_INT8, OID_INT8}},
    [P_PRUNE_CHANGES_DEL] = {"DELETE FROM changes WHERE tenant = $1 AND seq <= $2",
                             2,
                             {OID_INT8, OID_INT8}},
    [P_PRUNE_IDEM] = {"DELETE FROM idempotency WHERE ctid IN (SELECT ctid FROM idempotency"
                      " WHERE time < $1 LIMIT $2) RETURNING 1",
                      2,
                      {OID_INT8, OID_INT8}},
    /* ---- quotas ---- */
    [P_USAGE] = {"SELECT t.id, t.files, t.max_bytes, t.max_files, e.size FROM tenants t"
                 " LEFT JOIN entries e ON e.tenant = t.id AND e.path = '/memories'"
                 " WHERE t.name = $1",
                 1,
                 {OID_TEXT}},
    [P_LIMITS_SET] = {"UPDATE tenants SET max_bytes = $2, max_files = $3 WHERE id = $1",
                      3,
                      {OID_INT8, OID_INT8, OID_INT8}},
    /* ---- tenant administration ---- */
    [P_TENANTS_LIST] = {"SELECT t.name, coalesce(e.size, 0), t.files,"
                        " (SELECT count(*) FROM versions v WHERE v.tenant = t.id),"
                        " (SELECT c.time FROM changes c WHERE c.tenant = t.id"
                        " AND c.seq = t.last_seq)"
                        " FROM tenants t LEFT JOIN entries e ON e.tenant = t.id"
                        " AND e.path = '/memories'"
                        " WHERE t.name > $1 ORDER BY t.name LIMIT $2",
                        2,
                        {OID_TEXT, OID_INT8}},
    /* One statement: every row of the tenant, and how many of each. */
    [P_ERASE] = {"WITH t AS (SELECT id FROM tenants WHERE name = $1),"
                 " e AS (DELETE FROM entries WHERE tenant = (SELECT id FROM t) RETURNING 1),"
                 " v AS (DELETE FROM versions WHERE tenant = (SELECT id FROM t) RETURNING 1),"
                 " c AS (DELETE FROM changes WHERE tenant = (SELECT id FROM t) RETURNING 1),"
                 " i AS (DELETE FROM idempotency WHERE tenant = (SELECT id FROM t) RETURNING 1),"
                 " k AS (DELETE FROM api_keys WHERE tenant = $1 AND EXISTS (SELECT 1 FROM t)"
                 " RETURNING 1),"
                 " d AS (DELETE FROM tenants WHERE id = (SELECT id FROM t) RETURNING 1)"
                 " SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM e),"
                 " (SELECT count(*) FROM v), (SELECT count(*) FROM c), (SELECT count(*) FROM i),"
                 " (SELECT count(*) FROM k)",
                 1,
                 {OID_TEXT}},
    [P_SNAPSHOT] = {"BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", 0, {0}},
    /* A page of the export: paths and sizes first (LIMIT $3), the byte
     * budget ($4) applied to them, and only then the contents. */
    [P_SCAN] = {"SELECT e.path, e.kind, e.mtime, e.content, s.cnt FROM"
                " (SELECT path, row_number() OVER w AS n, sum(fsize) OVER w - fsize AS before,"
                " count(*) OVER () AS cnt FROM (SELECT path, CASE WHEN kind = 0 THEN size ELSE 0"
                " END AS fsize FROM entries WHERE tenant = (SELECT id FROM tenants WHERE name = $1)"
                " AND path > $2 ORDER BY path LIMIT $3) l"
                " WINDOW w AS (ORDER BY path ROWS UNBOUNDED PRECEDING)) s"
                " JOIN entries e ON e.tenant = (SELECT id FROM tenants WHERE name = $1)"
                " AND e.path = s.path WHERE s.n = 1 OR s.before < $4 ORDER BY s.path",
                4,
                {OID_TEXT, OID_TEXT, OID_INT8, OID_INT8}},
    /* Full-text search: the files of tenant $1 at $2 or below ($3, $4)
     * that match every regular expression of $6 (each term where a word
     * begins), ranked by their occurrences, then path.
     * P_SEARCH takes its candidates from the word index entries_search of
     * 005_search.sql: the files whose words match tsquery $5 (every
     * indexed word of the terms, the last of each term as a prefix; or
     * '#all'), of every tenant (materialized: whatever the generic plan's
     * guess of the tenant's size, the index is used), then keeps the
     * tenant's; P_SEARCH_SCAN, for terms with no word long enough for the
     * index, reads the tenant's files there whose text matches ILIKE
     * pattern $5 (the longest term). */
    [P_SEARCH] =
        {"WITH m AS MATERIALIZED (SELECT tenant, path, content"
         " FROM entries WHERE kind = 0 AND memoryd_words(content) @@ $5::tsquery)"
         " SELECT path, content FROM (SELECT path, content, " SEARCH_COUNTS
         " FROM (SELECT path, content, memoryd_text(content) AS lx"
         " FROM m WHERE tenant = (SELECT id FROM tenants WHERE name = $1)"
         " AND (path = $2 OR (path > $3 AND path < $4)) OFFSET 0) l OFFSET 0) k" SEARCH_RANKED,
         8,
         {OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXTARRAY, OID_INT8, OID_INT8}},
    /* The candidates of P_SEARCH (tsquery $5) as they are, for memoryd to
     * check and rank (md_search_score: its C costs a hundredth of the
     * regular expressions): at most $6 files, and none past $7 bytes of
     * content (the running sum), so that pg_search can tell that it has
     * them all or else ranks with P_SEARCH. */
    [P_SEARCH_CAND] =
        {"WITH m AS MATERIALIZED (SELECT tenant, path, content"
         " FROM entries WHERE kind = 0 AND memoryd_words(content) @@ $5::tsquery)"
         " SELECT path, content FROM (SELECT path, content,"
         " sum(octet_length(content)) OVER (ROWS UNBOUNDED PRECEDING)"
         " - octet_length(content) AS before"
         " FROM m WHERE tenant = (SELECT id FROM tenants WHERE name = $1)"
         " AND (path = $2 OR (path > $3 AND path < $4))) c WHERE before < $7 LIMIT $6",
         7,
         {OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXT, OID_INT8, OID_INT8}},
    [P_SEARCH_SCAN] =
        {"SELECT path, content FROM (SELECT path, content, " SEARCH_COUNTS
         " FROM (SELECT e.path, e.content, memoryd_text(e.content) AS lx"
         " FROM entries e"
         " WHERE e.tenant = (SELECT id FROM tenants WHERE name = $1) AND e.kind = 0"
         " AND (e.path = $2 OR (e.path > $3 AND e.path < $4))"
         " AND memoryd_text(e.content) ILIKE $5 OFFSET 0) l OFFSET 0) k" SEARCH_RANKED,
         8,
         {OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXTARRAY, OID_INT8, OID_INT8}},
};

const char *md_pg_statement(enum pst id, int *nparams, const Oid **types)
{
    *nparams = pst[id].n;
    *types = pst[id].types;
    return pst[id].sql;
}

/* A bulk statement is sent when its contents reach this many bytes. */
#define BULK_MAX_BYTES ((size_t)1 << 20)

/* Files larger than this are not prefetched with their content: a batch of
 * edits to large files would hold them all in memory at once. */
#define PREFETCH_CONTENT_MAX ((int64_t)64 << 10)

/* A prefetched (tenant, path) of an optimistic batch. */
struct pre_ent {
    const char *tenant, *path; /* borrowed from the batch's commands */
    size_t len;
    int64_t id; /* the tenant's; 0: the tenant has no data */
    int64_t size;
    const char *content; /* in the prefetch result, when has_content */
    size_t content_len;
    const unsigned char *sha256; /* in the prefetch result; NULL when none */
    int kind;
    unsigned char want, found, has_content, stale;
    /* The tenant's file count and overrides (md_txn_usage), on every row;
     * on its root's row, the files the batch's queued writes add or remove
     * (unknown: a directory removed). */
    int64_t files, max_bytes, max_files, files_delta;
    unsigned char files_unknown;
};

struct pgc;

struct pg_txn {
    struct md_txn base;
    struct pgc *c;
    int write;
    int snapshot; /* a reader in a transaction (md_store_snapshot_begin) */
    /* What the operations cost (a locate answered from a prefetch counts
     * its statement and round trip), and what went over the connection. */
    struct md_txn_stats st, wire;
    enum pst *q; /* statements sent whose results are not read yet */
    size_t nq, capq;
    PGresult *res; /* the last wanted result; borrowed out */
    /* Rows answered by every statement `counted_id` read by a flush, added
     * up in `counted` (P_COUNT: none; the pruner's). */
    enum pst counted_id;
    size_t counted;
    struct md_dirsizes *sizes; /* the writer's; NULL for readers */
    struct md_buf arr[3];      /* array parameters */
    /* Optimistic batches (md_txn_pg_prefetch; the writer only). */
    int opt;               /* writes are queued, locates answered from `pre` */
    enum md_err abandoned; /* a statement failed: run the batch the exact way */
    size_t cmd_base;       /* t->nq when the running command began (opt) */
    int cmd_wrote;         /* the running command queued a write (opt) */
    int cmd_bulk;          /* ... rows of a bulk statement not sent yet (opt) */
    PGresult *pre;         /* the prefetched rows */
    struct pre_ent *pe;    /* sorted by (tenant, path) */
    size_t npe, cappe;
    /* The rows of a bulk insert or update not queued yet (opt). */
    enum pst bulk; /* P_INSERT_MANY, P_SET_MANY, or P_COUNT: none */
    size_t bulk_rows, bulk_bytes;
    struct md_buf bk[8]; /* its array parameters */
    /* History (the writer's): counters and the current command (md_hist),
     * the versions and change-feed rows of an optimistic batch not queued
     * yet (sent before its writes go), the tenants to NOTIFY at the
     * commit, and a redaction (VACUUM_REDACTED) or an erasure
     * (VACUUM_ERASED) to VACUUM after it. */
    struct md_hist *hist;
    struct md_buf vk[10], ck[9];
    size_t vk_rows, ck_rows;
    char **notify;
    size_t nnotify, capnotify;
    int vacuum;
    const char *cmd_tenant; /* the running command's (borrowed) */
    /* A tenant was made in this transaction / since the savepoint: a
     * rollback must forget the ids cached since. */
    int made_tenant_txn, made_tenant_cmd;
    /* A view fetched asynchronously (pg_view_async): the txn answers from
     * its results, and has no connection. */
    struct pg_vjob *answer;
};

struct pgc {
    PGconn *pq;
    int broken;
    struct md_tenant_cache *tenants;
    struct pg_txn txn;
    struct pgc *next_idle;
};

struct pg_store {
    struct md_store base;
    struct md_store_config cfg;
    struct md_pg_config own; /* PostgreSQL's own settings */
    char *uri;
    pthread_mutex_t pool_mu;
    struct pgc *idle; /* reader connections not in use */
    unsigned nidle;
    struct pgc *writer;
    pthread_mutex_t write_mu; /* one write transaction at a time; guards writer */
    unsigned long heal_failures;
    /* Retention's own connection (pg_prune_begin), beside the writer's;
     * the paths to prune, queued by the writer, taken by the pruner. */
    struct pgc *pruner;
    pthread_mutex_t prune_mu; /* guards pruner */
    unsigned long prune_heal_failures;
    struct md_touched *touched;
    struct md_pg_watch *watch; /* LISTENs for other instances' commits */
    int64_t prune_next_tenant; /* the pruner's: where pruning by age goes on */
    int search_off;            /* no full-text index (--search off), set at open */
    struct md_pg_reads *reads; /* views fetched asynchronously (store_pg_reads.c) */
};

/* History (the section "history" below). */
static void sha_of(const PGresult *r, int row, int col, struct md_entry *e);
static void notify_clear(struct pg_txn *t);
static void hist_reset(struct pg_txn *t);
static enum md_err record_file(struct pg_txn *t, int64_t id, const char *tenant, const char *path,
                               size_t len, int64_t old_size);
static enum md_err record_subtree(struct pg_txn *t, int64_t id, const char *tenant,
                                  const char *path, size_t len, int64_t size, const char *to,
                                  size_t tlen, int *counted);
static enum md_err subtree_counted(struct pg_txn *t, int64_t size);
static enum md_err hist_send(struct pg_txn *t);
static enum md_err tenant_lookup(struct pg_txn *t, const char *tenant, int64_t *id);
static enum md_err hist_commit_send(struct pg_txn *t);
enum { VACUUM_REDACTED = 1, VACUUM_ERASED = 2 };
static void vacuum_versions(struct pg_store *s, int what);
static enum md_err pg_search(struct md_txn *base, const char *tenant,
                             const struct md_search_terms *q, md_search_cb cb, void *ctx);
struct pg_vjob;
static enum md_err answered(struct pg_txn *t, enum pst id);
static void vjob_free(struct pg_vjob *j);

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- connections ---- */

static void log_pg(struct pgc *c, const PGresult *res, const char *what)
{
    struct md_logline l;
    md_log_begin(&l, MD_LOG_ERROR, "postgres error");
    md_log_str(&l, "op", what);
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (state)
        md_log_str(&l, "sqlstate", state);
    const char *msg = res ? PQresultErrorMessage(res) : PQerrorMessage(c->pq);
    char text[512];
    snprintf(text, sizeof text, "%s", msg && *msg ? msg : "connection lost");
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
        text[--n] = '\0';
    md_log_str(&l, "error", text);
    md_log_end(&l);
    md_metrics_storage_error();
}

static void conn_close(struct pgc *c)
{
    if (!c)
        return;
    PQclear(c->txn.res);
    PQclear(c->txn.pre);
    free(c->txn.pe);
    free(c->txn.q);
    for (size_t i = 0; i < sizeof c->txn.arr / sizeof c->txn.arr[0]; i++)
        md_buf_free(&c->txn.arr[i]);
    for (size_t i = 0; i < sizeof c->txn.bk / sizeof c->txn.bk[0]; i++)
        md_buf_free(&c->txn.bk[i]);
    for (size_t i = 0; i < sizeof c->txn.vk / sizeof c->txn.vk[0]; i++)
        md_buf_free(&c->txn.vk[i]);
    for (size_t i = 0; i < sizeof c->txn.ck / sizeof c->txn.ck[0]; i++)
        md_buf_free(&c->txn.ck[i]);
    notify_clear(&c->txn);
    free(c->txn.notify);
    md_hist_free(c->txn.hist);
    md_dirsizes_free(c->txn.sizes);
    md_tenant_cache_free(c->tenants);
    if (c->pq)
        PQfinish(c->pq);
    free(c);
}

/* The statements a reader connection prepares: only those that read, so
 * that a reader can connect while a write lock is held on the tables
 * (preparing an INSERT would wait for it). */
static int is_read_statement(int id)
{
    return id == P_LOCATE || id == P_VIEW || id == P_GET || id == P_LIST || id == P_PING ||
           id == P_DB_SIZE || id == P_HISTORY || id == P_VERSION_GET || id == P_SNAP_BEFORE ||
           id == P_STATE_BEFORE || id == P_CHANGES || id == P_CHANGES_META || id == P_USAGE ||
           id == P_TENANTS_LIST || id == P_SEARCH || id == P_SEARCH_SCAN || id == P_SEARCH_CAND ||
           id == P_SNAPSHOT || id == P_SCAN || id == P_ROLLBACK;
}

/* Session settings, then the statements prepared (a writer's all, a
 * reader's those that read), then pipeline mode. */
static int conn_setup(struct pg_store *s, PGconn *pq, int write, char *why, size_t why_len)
{
    const char *enc = PQparameterStatus(pq, "server_encoding");
    if (!enc || (strcmp(enc, "UTF8") != 0 && strcmp(enc, "SQL_ASCII") != 0)) {
        snprintf(why, why_len,
                 "the database's encoding is %s: memoryd needs UTF8 (or SQL_ASCII); create it "
                 "with ENCODING 'UTF8'",
                 enc ? enc : "unknown");
        return -1;
    }
    char sql[384];
    snprintf(sql, sizeof sql,
             "SET synchronous_commit = %s; SET lock_timeout = %d;"
             " SET max_parallel_workers_per_gather = 0; SET plan_cache_mode = force_generic_plan;"
             " SET default_transaction_isolation = 'read committed'",
             s->cfg.durability == MD_DURABILITY_FULL ? "on" : "off", s->cfg.busy_timeout_ms);
    PGresult *r = PQexec(pq, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok || !PQenterPipelineMode(pq)) {
        snprintf(why, why_len, "cannot set up the session: %s", PQerrorMessage(pq));
        return -1;
    }
    int prepared = 0;
    for (int i = 0; i < P_COUNT; i++) {
        if (!write && !is_read_statement(i))
            continue;
        char name[8];
        snprintf(name, sizeof name, "m%d", i);
        prepared++;
        if (!PQsendPrepare(pq, name, pst[i].sql, pst[i].n, pst[i].types)) {
            snprintf(why, why_len, "cannot prepare statements: %s", PQerrorMessage(pq));
            return -1;
        }
    }
    if (!PQpipelineSync(pq)) {
        snprintf(why, why_len, "cannot prepare statements: %s", PQerrorMessage(pq));
        return -1;
    }
    int bad = -1;
    for (int i = 0; i < prepared; i++) {
        r = PQgetResult(pq);
        if (PQresultStatus(r) != PGRES_COMMAND_OK && bad < 0) {
            bad = i;
            snprintf(why, why_len, "cannot prepare statements: %s",
                     r ? PQresultErrorMessage(r) : PQerrorMessage(pq));
        }
        PQclear(r);
        if (r)
            PQclear(PQgetResult(pq)); /* the NULL that ends it */
    }
    r = PQgetResult(pq);
    ok = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
    PQclear(r);
    if (!ok && bad < 0)
        snprintf(why, why_len, "cannot prepare statements: %s", PQerrorMessage(pq));
    return ok && bad < 0 ? 0 : -1;
}

static struct pgc *conn_open(struct pg_store *s, int write, char *why, size_t why_len)
{
    struct pgc *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    c->tenants = md_tenant_cache_new();
    c->txn.base.store = &s->base;
    c->txn.c = c;
    c->txn.write = write;
    for (size_t i = 0; i < sizeof c->txn.arr / sizeof c->txn.arr[0]; i++)
        md_buf_init(&c->txn.arr[i], (size_t)64 << 20);
    for (size_t i = 0; i < sizeof c->txn.bk / sizeof c->txn.bk[0]; i++)
        md_buf_init(&c->txn.bk[i], (size_t)64 << 20);
    for (size_t i = 0; i < sizeof c->txn.vk / sizeof c->txn.vk[0]; i++)
        md_buf_init(&c->txn.vk[i], (size_t)256 << 20);
    for (size_t i = 0; i < sizeof c->txn.ck / sizeof c->txn.ck[0]; i++)
        md_buf_init(&c->txn.ck[i], (size_t)64 << 20);
    c->txn.bulk = P_COUNT;
    c->txn.counted_id = P_COUNT;
    if (write) {
        c->txn.sizes = md_dirsizes_new();
        c->txn.hist = md_hist_new(s->touched);
    }
    if (!c->tenants || (write && (!c->txn.sizes || !c->txn.hist))) {
        snprintf(why, why_len, "out of memory");
        conn_close(c);
        return NULL;
    }
    c->pq = md_pg_connect(s->uri, why, why_len);
    if (!c->pq || conn_setup(s, c->pq, write, why, why_len) != 0) {
        conn_close(c);
        return NULL;
    }
    return c;
}

/* ---- the pipeline ---- */

/* Queue statement `id` at once (see q_send). */
static enum md_err q_send_now(struct pg_txn *t, enum pst id, const struct md_pg_params *p)
{
    struct pgc *c = t->c;
    if (c->broken)
        return MD_EUNAVAIL;
    if (t->nq == t->capq) {
        size_t cap = t->capq ? t->capq * 2 : 64;
        enum pst *q = realloc(t->q, cap * sizeof *q);
        if (!q)
            return MD_ENOMEM;
        t->q = q;
        t->capq = cap;
    }
    char name[8];
    snprintf(name, sizeof name, "m%d", (int)id);
    static const struct md_pg_params none = {{0}, {0}, {0}, {{0}}, 0};
    if (!p)
        p = &none;
    if (!PQsendQueryPrepared(c->pq, name, p->n, p->v, p->len, p->fmt, 1)) {
        log_pg(c, NULL, pst[id].sql);
        c->broken = 1;
        return MD_EUNAVAIL;
    }
    t->q[t->nq++] = id;
    /* A bulk statement's share was counted by each command that added rows. */
    if (id != P_INSERT_MANY && id != P_SET_MANY)
        t->st.statements++;
    t->wire.statements++;
    return MD_OK;
}

/* ---- bulk statements (optimistic batches) ---- */

/* Queue the bulk statement gathered so far. */
static enum md_err bulk_send(struct pg_txn *t)
{
    if (t->bulk_rows == 0)
        return MD_OK;
    enum pst id = t->bulk;
    struct md_pg_params p = {.n = 0};
    for (int i = 0; i < pst[id].n; i++) {
        md_pg_arr_count(&t->bk[i], t->bulk_rows);
        md_pg_bytes(&p, t->bk[i].data, t->bk[i].len);
    }
    t->bulk_rows = t->bulk_bytes = 0;
    t->bulk = P_COUNT;
    return q_send_now(t, id, &p);
}

/* Queue statement `id`; its result is read by the next flush. Statements
 * run in the order they are queued: a bulk statement being gathered goes
 * first. */
static enum md_err q_send(struct pg_txn *t, enum pst id, const struct md_pg_params *p)
{
    enum md_err e = bulk_send(t);
    return e ? e : q_send_now(t, id, p);
}

/* Ready to add a row to bulk statement `id` (sending another first). */
static enum md_err bulk_row(struct pg_txn *t, enum pst id)
{
    if (t->bulk_rows && (t->bulk != id || t->bulk_bytes >= BULK_MAX_BYTES)) {
        enum md_err e = bulk_send(t);
        if (e)
            return e;
    }
    if (t->bulk_rows == 0) {
        static const Oid insert[] = {OID_INT8, OID_TEXT, OID_INT4,       OID_INT2,
                                     OID_INT8, OID_INT8, OID_BYTEA_ELEM, OID_BYTEA_ELEM};
        static const Oid set[] = {OID_INT8, OID_TEXT, OID_BYTEA_ELEM,
                                  OID_INT8, OID_INT8, OID_BYTEA_ELEM};
        const Oid *types = id == P_INSERT_MANY ? insert : set;
        for (int i = 0; i < pst[id].n; i++) {
            enum md_err e = md_pg_arr_begin(&t->bk[i], types[i], 1); /* counted when sent */
            if (e)
                return e;
        }
        t->bulk = id;
    }
    return MD_OK;
}

/* A row half added leaves the arrays unusable: the attempt is given up. */
static enum md_err bulk_check(struct pg_txn *t, enum md_err e)
{
    if (e) {
        t->bulk_rows = t->bulk_bytes = 0;
        t->bulk = P_COUNT;
        if (!t->abandoned)
            t->abandoned = e;
    }
    return e;
}

/* A NULL element of a binary array. */
static enum md_err arr_null(struct md_buf *b)
{
    static const unsigned char minus1[4] = {0xff, 0xff, 0xff, 0xff};
    return md_buf_append(b, minus1, 4);
}

/* Add to the bulk insert the directories strictly between the ancestor of
 * length `from` and `path`, and the file `path` (as insert_send would). */
static enum md_err bulk_insert(struct pg_txn *t, int64_t id, const char *path, size_t len,
                               size_t from, const char *content, size_t content_len,
                               const unsigned char *sha256)
{
    enum md_err e = bulk_row(t, P_INSERT_MANY);
    int64_t mtime = now_ms();
    for (size_t i = from + 1; !e && i <= len; i++) {
        int dir = i < len && path[i] == '/';
        if (!dir && i != len)
            continue;
        e = md_pg_arr_i64(&t->bk[0], id);
        if (!e)
            e = md_pg_arr_elem(&t->bk[1], path, i);
        if (!e)
            e = md_pg_arr_i32(&t->bk[2], md_path_depth(path, i));
        if (!e)
            e = md_pg_arr_i16(&t->bk[3], dir ? MD_KIND_DIR : MD_KIND_FILE);
        if (!e)
            e = md_pg_arr_i64(&t->bk[4], dir ? 0 : (int64_t)content_len);
        if (!e)
            e = md_pg_arr_i64(&t->bk[5], mtime);
        if (!e)
            e = dir ? arr_null(&t->bk[6]) : md_pg_arr_elem(&t->bk[6], content, content_len);
        if (!e)
            e = dir ? arr_null(&t->bk[7]) : md_pg_arr_elem(&t->bk[7], sha256, MD_SHA256_LEN);
        t->bulk_rows++;
    }
    t->bulk_bytes += content_len;
    t->st.statements++; /* the command's share of the bulk statement */
    t->cmd_bulk = 1;
    return bulk_check(t, e);
}

/* Add a file's new content to the bulk update. */
static enum md_err bulk_set(struct pg_txn *t, int64_t id, const char *path, size_t len,
                            const char *content, size_t content_len, const unsigned char *sha256)
{
    enum md_err e = bulk_row(t, P_SET_MANY);
    if (!e)
        e = md_pg_arr_i64(&t->bk[0], id);
    if (!e)
        e = md_pg_arr_elem(&t->bk[1], path, len);
    if (!e)
        e = md_pg_arr_elem(&t->bk[2], content, content_len);
    if (!e)
        e = md_pg_arr_i64(&t->bk[3], (int64_t)content_len);
    if (!e)
        e = md_pg_arr_i64(&t->bk[4], now_ms());
    if (!e)
        e = md_pg_arr_elem(&t->bk[5], sha256, MD_SHA256_LEN);
    t->bulk_rows++;
    t->bulk_bytes += content_len;
    t->st.statements++; /* the command's share of the bulk statement */
    t->cmd_bulk = 1;
    return bulk_check(t, e);
}

/*
 * Send a Sync and read the result of every queued statement, in order (one
 * round trip). The rows of the first queued statement `want` (P_COUNT:
 * none) are kept in t->res. Returns the first error; *failed (unless NULL)
 * gets the statement that failed, P_COUNT when none did or the connection
 * went before any answered.
 */
static enum md_err q_flush_at(struct pg_txn *t, enum pst want, enum pst *failed)
{
    struct pgc *c = t->c;
    PQclear(t->res);
    t->res = NULL;
    if (failed)
        *failed = P_COUNT;
    if (t->bulk_rows) {
        enum md_err e = bulk_send(t);
        if (e)
            return e;
    }
    if (t->nq == 0)
        return MD_OK;
    size_t n = t->nq;
    t->nq = t->cmd_base = 0;
    t->cmd_bulk = 0;
    t->st.round_trips++;
    t->wire.round_trips++;
    if (c->broken || !PQpipelineSync(c->pq)) {
        c->broken = 1;
        return MD_EUNAVAIL;
    }
    enum md_err err = MD_OK;
    for (size_t i = 0; i < n; i++) {
        PGresult *r = PQgetResult(c->pq);
        if (!r) { /* the connection broke */
            if (!err)
                log_pg(c, NULL, pst[t->q[i]].sql);
            c->broken = 1;
            return err ? err : MD_EUNAVAIL;
        }
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_FATAL_ERROR && !err) {
            err = md_pg_classify(c->pq, r);
            if (err != MD_EEXIST)
                log_pg(c, r, pst[t->q[i]].sql);
            /* The server's own error (not libpq's for a lost connection). */
            if (failed && PQresultErrorField(r, PG_DIAG_SQLSTATE) &&
                PQstatus(c->pq) == CONNECTION_OK)
                *failed = t->q[i];
        } else if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_FATAL_ERROR &&
                   st != PGRES_PIPELINE_ABORTED && !err) {
            log_pg(c, r, pst[t->q[i]].sql);
            err = MD_EDB;
        }
        if (!err && t->q[i] == P_COMMIT && strcmp(PQcmdStatus(r), "COMMIT") != 0)
            err = MD_EDB; /* the transaction had failed: COMMIT rolled it back */
        if (t->q[i] == t->counted_id && st == PGRES_TUPLES_OK)
            t->counted += (size_t)PQntuples(r);
        if (t->q[i] == want && !t->res && st == PGRES_TUPLES_OK)
            t->res = r;
        else
            PQclear(r);
        PQclear(PQgetResult(c->pq)); /* the NULL that ends each statement */
    }
    PGresult *sync = PQgetResult(c->pq);
    if (PQresultStatus(sync) != PGRES_PIPELINE_SYNC) {
        c->broken = 1;
        err = err ? err : MD_EUNAVAIL;
    }
    PQclear(sync);
    if (err) {
        PQclear(t->res);
        t->res = NULL;
    }
    return err;
}

static enum md_err q_flush(struct pg_txn *t, enum pst want)
{
    enum md_err e = q_flush_at(t, want, NULL);
    /* In an optimistic batch, the statement that failed may be another
     * command's queued write: the batch runs again the exact way. */
    if (e && t->opt && e != MD_EUNAVAIL && !t->abandoned)
        t->abandoned = e;
    return e;
}

/* ---- optimistic batches: the prefetched rows ---- */

static int key_cmp(const char *ta, const char *pa, size_t la, const char *tb, const char *pb,
                   size_t lb)
{
    int c = strcmp(ta, tb);
    if (!c)
        c = memcmp(pa, pb, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

static int pre_ent_cmp(const void *a, const void *b)
{
    const struct pre_ent *x = a, *y = b;
    return key_cmp(x->tenant, x->path, x->len, y->tenant, y->path, y->len);
}

/* The first entry at or after (tenant, path). */
static size_t pre_lower(const struct pg_txn *t, const char *tenant, const char *path, size_t len)
{
    size_t lo = 0, hi = t->npe;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct pre_ent *m = &t->pe[mid];
        if (key_cmp(m->tenant, m->path, m->len, tenant, path, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct pre_ent *pre_find(struct pg_txn *t, const char *tenant, const char *path, size_t len)
{
    size_t i = pre_lower(t, tenant, path, len);
    if (i < t->npe && key_cmp(t->pe[i].tenant, t->pe[i].path, t->pe[i].len, tenant, path, len) == 0)
        return &t->pe[i];
    return NULL;
}

/* A write to `path` is queued: forget what it may change. The entry
 * itself; with `below`, everything under it; and its ancestors longer than
 * `keep` (directories the write creates). Sizes of ancestors are not
 * changed by a write: they are pending (md_dirsizes) until sizes_send. */
static void pre_forget(struct pg_txn *t, const char *tenant, const char *path, size_t len,
                       int below, size_t keep)
{
    t->cmd_wrote = 1;
    if (t->npe == 0)
        return;
    for (size_t i = pre_lower(t, tenant, path, len); i < t->npe; i++) {
        struct pre_ent *e = &t->pe[i];
        if (strcmp(e->tenant, tenant) != 0 || e->len < len || memcmp(e->path, path, len) != 0)
            break; /* past every path that begins with `path` */
        if (e->len == len || (below && e->path[len] == '/'))
            e->stale = 1;
    }
    for (size_t plen = len; plen > keep && plen > MD_ROOT_LEN;) {
        plen = md_path_parent_len(path, plen);
        struct pre_ent *e = plen > keep ? pre_find(t, tenant, path, plen) : NULL;
        if (e)
            e->stale = 1;
    }
}

/* A queued write adds (+1) or removes (-1, with everything below `path`)
 * files of `tenant`: its root's count follows; the removal of what is not
 * a prefetched file makes the count unknown. */
static void pre_files_add(struct pg_txn *t, const char *tenant, const char *path, size_t len,
                          int delta)
{
    struct pre_ent *root = pre_find(t, tenant, MD_ROOT, MD_ROOT_LEN);
    if (!root)
        return;
    const struct pre_ent *e = delta < 0 ? pre_find(t, tenant, path, len) : NULL;
    if (delta < 0 && (!e || !e->found || e->stale || e->kind != MD_KIND_FILE))
        root->files_unknown = 1;
    else
        root->files_delta += delta;
}

/* A tenant was created: whatever was read of it is not true any more. */
static void pre_forget_tenant(struct pg_txn *t, const char *tenant)
{
    t->cmd_wrote = 1;
    for (size_t i = pre_lower(t, tenant, "", 0); i < t->npe; i++) {
        if (strcmp(t->pe[i].tenant, tenant) != 0)
            break;
        t->pe[i].stale = 1;
    }
}

/* The pending size changes are being written: the prefetched sizes of
 * those directories take them in (the pending ones become 0). */
static void pre_fold_sizes(struct pg_txn *t)
{
    for (size_t i = 0; i < t->npe; i++) {
        struct pre_ent *e = &t->pe[i];
        if (e->found && e->kind == MD_KIND_DIR && e->id)
            e->size += md_dirsizes_pending(t->sizes, e->id, e->path, e->len);
    }
}

/* Answer a locate from the prefetched rows, as pg_locate would from the
 * database; 0 when they cannot (a path not prefetched, changed since, or
 * its content not fetched). */
static int pre_locate(struct pg_txn *t, const char *tenant, struct md_locate *l, size_t n,
                      int *tenant_exists)
{
    if (!t->opt || n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const struct pre_ent *e = pre_find(t, tenant, l[i].path, l[i].len);
        if (!e || e->stale ||
            (l[i].want_content && e->found && e->kind == MD_KIND_FILE && !e->has_content))
            return 0;
        for (size_t plen = l[i].len; l[i].want_parent && plen > MD_ROOT_LEN;) {
            plen = md_path_parent_len(l[i].path, plen);
            const struct pre_ent *a = pre_find(t, tenant, l[i].path, plen);
            if (!a || a->stale)
                return 0;
        }
    }
    int64_t id = pre_find(t, tenant, l[0].path, l[0].len)->id;
    *tenant_exists = id != 0;
    if (id)
        md_tenant_cache_put(t->c->tenants, tenant, id);
    for (size_t i = 0; i < n; i++) {
        struct md_locate *q = &l[i];
        q->found = 0;
        q->anc_len = MD_ROOT_LEN;
        q->anc_kind = MD_KIND_DIR;
        q->e = (struct md_entry){.kind = MD_KIND_DIR};
        if (!id) {
            q->found = q->len == MD_ROOT_LEN;
            continue;
        }
        const struct pre_ent *e = pre_find(t, tenant, q->path, q->len);
        if (e->found) {
            enum md_kind kind = e->kind == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
            int64_t size = e->size;
            if (kind == MD_KIND_DIR)
                size += md_dirsizes_pending(t->sizes, id, q->path, q->len);
            q->found = 1;
            q->e = (struct md_entry){.kind = kind, .size = size};
            if (e->sha256) {
                q->e.has_sha256 = 1;
                memcpy(q->e.sha256, e->sha256, MD_SHA256_LEN);
            }
            if (q->want_content && kind == MD_KIND_FILE) {
                q->e.content = e->content;
                q->e.content_len = e->content_len;
            }
        }
        /* The deepest ancestor there is (the root, at least). */
        for (size_t plen = q->len; q->want_parent && plen > MD_ROOT_LEN;) {
            plen = md_path_parent_len(q->path, plen);
            const struct pre_ent *a = pre_find(t, tenant, q->path, plen);
            if (a->found) {
                q->anc_len = plen;
                q->anc_kind = a->kind == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
                break;
            }
        }
    }
    /* Its statement and round trip: the prefetch's. */
    t->st.statements++;
    t->st.round_trips++;
    return 1;
}

/* ---- readers ---- */

static void reader_release(struct pg_store *s, struct pgc *c)
{
    PQclear(c->txn.res);
    c->txn.res = NULL;
    c->txn.nq = 0;
    pthread_mutex_lock(&s->pool_mu);
    int keep = !c->broken && s->nidle < s->own.readers;
    if (keep) {
        c->next_idle = s->idle;
        s->idle = c;
        s->nidle++;
    }
    pthread_mutex_unlock(&s->pool_mu);
    if (!keep)
        conn_close(c);
}

static enum md_err pg_read_begin(struct md_store *base, struct md_txn **out)
{
    struct pg_store *s = (struct pg_store *)base;
    pthread_mutex_lock(&s->pool_mu);
    struct pgc *c = s->idle;
    if (c) {
        s->idle = c->next_idle;
        s->nidle--;
    }
    pthread_mutex_unlock(&s->pool_mu);
    if (!c) {
        char why[512];
        c = conn_open(s, 0, why, sizeof why);
        if (!c) {
            md_log_msg(MD_LOG_ERROR, "cannot open a reader connection", why);
            return MD_EUNAVAIL;
        }
    }
    c->txn.st = (struct md_txn_stats){0, 0};
    *out = &c->txn.base;
    return MD_OK;
}

static void pg_txn_end(struct md_txn *base)
{
    struct pg_txn *t = (struct pg_txn *)base;
    if (t->answer) {
        vjob_free(t->answer);
        return;
    }
    if (t->snapshot) {
        t->snapshot = 0;
        if (q_send(t, P_ROLLBACK, NULL) != MD_OK || q_flush(t, P_ROLLBACK) != MD_OK)
            t->c->broken = 1; /* not back to the pool in a transaction */
        PQclear(t->res);
        t->res = NULL;
    }
    reader_release((struct pg_store *)base->store, t->c);
}

/* Run the one statement a read operation needs; a pooled connection found
 * broken (the server restarted since it was last used, say) is replaced
 * and the statement sent again, once. */
static enum md_err read_exec(struct pg_txn *t, enum pst id, const struct md_pg_params *p)
{
    if (t->answer)
        return answered(t, id);
    for (int attempt = 0;; attempt++) {
        enum md_err e = q_send(t, id, p);
        if (!e)
            e = q_flush(t, id);
        if (e != MD_EUNAVAIL || attempt > 0 || t->write)
            return e;
        struct pg_store *s = (struct pg_store *)t->base.store;
        char why[512];
        struct pgc *fresh = conn_open(s, 0, why, sizeof why);
        if (!fresh)
            return MD_EUNAVAIL;
        /* Swap the connections: the txn stays where its caller holds it. */
        PGconn *old = t->c->pq;
        t->c->pq = fresh->pq;
        t->c->broken = 0;
        fresh->pq = old;
        conn_close(fresh);
    }
}

/* ---- writer ---- */

/* Reopen a broken write connection (*slot: the writer's or the pruner's,
 * its mutex held). Failures are logged the first time and then every
 * 1000th time. */
static enum md_err conn_heal(struct pg_store *s, struct pgc **slot, unsigned long *failures,
                             const char *what)
{
    if (*slot && !(*slot)->broken)
        return MD_OK;
    char why[512] = "", msg[64];
    struct pgc *c = conn_open(s, 1, why, sizeof why);
    if (!c) {
        if ((*failures)++ % 1000 == 0) {
            struct md_logline l;
            snprintf(msg, sizeof msg, "cannot reopen the %s connection", what);
            md_log_begin(&l, MD_LOG_ERROR, msg);
            md_log_str(&l, "detail", why);
            md_log_int(&l, "attempts", (int64_t)*failures);
            md_log_end(&l);
        }
        return MD_EUNAVAIL;
    }
    if (*slot) {
        struct md_logline l;
        snprintf(msg, sizeof msg, "%s connection reopened", what);
        md_log_begin(&l, MD_LOG_WARN, msg);
        md_log_int(&l, "failed_attempts", (int64_t)*failures);
        md_log_end(&l);
    }
    conn_close(*slot);
    *slot = c;
    *failures = 0;
    return MD_OK;
}

/* End the writer's transaction state (after commit or rollback). */
static void writer_done(struct pg_store *s, struct pg_txn *t, int failed)
{
    PQclear(t->res);
    t->res = NULL;
    PQclear(t->pre);
    t->pre = NULL;
    t->npe = 0;
    t->opt = 0;
    t->bulk_rows = t->bulk_bytes = 0;
    t->bulk = P_COUNT;
    md_dirsizes_reset(t->sizes);
    hist_reset(t);
    if (failed && t->made_tenant_txn)
        md_tenant_cache_clear(t->c->tenants);
    t->made_tenant_txn = t->made_tenant_cmd = 0;
    pthread_mutex_unlock(t->c == s->pruner ? &s->prune_mu : &s->write_mu);
}

/* A write transaction on connection `c` (its mutex held): BEGIN queued. */
static enum md_err txn_start(struct pgc *c, struct md_txn **out)
{
    struct pg_txn *t = &c->txn;
    md_dirsizes_reset(t->sizes);
    hist_reset(t);
    t->nq = t->cmd_base = 0;
    t->opt = 0;
    t->abandoned = MD_OK;
    t->bulk_rows = t->bulk_bytes = 0;
    t->bulk = P_COUNT;
    enum md_err e = q_send(t, P_BEGIN, NULL);
    if (!e)
        *out = &t->base;
    return e;
}

static enum md_err pg_write_begin(struct md_store *base, struct md_txn **out)
{
    struct pg_store *s = (struct pg_store *)base;
    pthread_mutex_lock(&s->write_mu);
    enum md_err e = conn_heal(s, &s->writer, &s->heal_failures, "writer");
    if (!e)
        e = txn_start(s->writer, out);
    if (e)
        pthread_mutex_unlock(&s->write_mu);
    return e;
}

/* Retention's transactions, on a connection of their own (opened at the
 * first), beside the writer's: pruning holds no tenant's lock and touches
 * only rows the writer no longer reads (old versions, old change-feed
 * entries, expired keys), as another instance's pruner does. */
static enum md_err pg_prune_begin(struct md_store *base, struct md_txn **out)
{
    struct pg_store *s = (struct pg_store *)base;
    pthread_mutex_lock(&s->prune_mu);
    enum md_err e = conn_heal(s, &s->pruner, &s->prune_heal_failures, "pruner");
    if (!e)
        e = txn_start(s->pruner, out);
    if (e)
        pthread_mutex_unlock(&s->prune_mu);
    return e;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static enum md_err lock_tenants(struct pg_txn *t, const char *const *names, size_t n)
{
    int64_t *keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys)
        return MD_ENOMEM;
    for (size_t i = 0; i < n; i++)
        keys[i] = md_store_tenant_key(names[i]);
    qsort(keys, n, sizeof *keys, cmp_i64);
    enum md_err e = MD_OK;
    for (size_t i = 0; i < n && !e; i++) {
        if (i > 0 && keys[i] == keys[i - 1])
            continue;
        struct md_pg_params p = {.n = 0};
        md_pg_i64(&p, keys[i]);
        e = q_send(t, P_LOCK, &p); /* run in order: ascending keys */
    }
    free(keys);
    return e;
}

/* In an optimistic batch, no savepoint is sent: a command that fails
 * before it writes has nothing to undo, and one that fails after gives the
 * attempt up (the batch runs again the exact way, with savepoints). */
static enum md_err pg_savepoint(struct md_txn *base)
{
    struct pg_txn *t = (struct pg_txn *)base;
    md_dirsizes_mark(t->sizes);
    md_hist_mark(t->hist);
    t->made_tenant_cmd = 0;
    if (t->opt) {
        t->cmd_base = t->nq;
        t->cmd_wrote = t->cmd_bulk = 0;
        return MD_OK;
    }
    return q_send(t, P_SAVEPOINT, NULL);
}

static enum md_err pg_release(struct md_txn *base, int rollback)
{
    struct pg_txn *t = (struct pg_txn *)base;
    enum md_err e = MD_OK;
    if (rollback) {
        if (t->made_tenant_cmd)
            md_tenant_cache_clear(t->c->tenants);
        md_dirsizes_restore(t->sizes);
        md_hist_restore(t->hist);
        if (t->opt) {
            if (t->cmd_wrote && !t->abandoned)
                t->abandoned = MD_EDB;
            return t->abandoned ? MD_EREDO : MD_OK;
        }
        e = q_send(t, P_ROLLBACK_TO, NULL);
    }
    if (t->opt)
        return t->abandoned ? MD_EREDO : MD_OK;
    return e ? e : q_send(t, P_RELEASE, NULL);
}

/* Queue one statement writing every pending directory size change. */
static enum md_err sizes_send(struct pg_txn *t)
{
    size_t n = md_dirsizes_count(t->sizes), live = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t tenant, delta;
        const char *path;
        size_t len;
        md_dirsizes_entry(t->sizes, i, &tenant, &path, &len, &delta);
        live += delta != 0;
    }
    if (live == 0)
        return MD_OK;
    enum md_err e = md_pg_arr_begin(&t->arr[0], OID_INT8, live);
    if (!e)
        e = md_pg_arr_begin(&t->arr[1], OID_TEXT, live);
    if (!e)
        e = md_pg_arr_begin(&t->arr[2], OID_INT8, live);
    for (size_t i = 0; i < n && !e; i++) {
        int64_t tenant, delta;
        const char *path;
        size_t len;
        md_dirsizes_entry(t->sizes, i, &tenant, &path, &len, &delta);
        if (delta == 0)
            continue;
        e = md_pg_arr_i64(&t->arr[0], tenant);
        if (!e)
            e = md_pg_arr_elem(&t->arr[1], path, len);
        if (!e)
            e = md_pg_arr_i64(&t->arr[2], delta);
    }
    if (e)
        return e;
    struct md_pg_params p = {.n = 0};
    for (int i = 0; i < 3; i++)
        md_pg_bytes(&p, t->arr[i].data, t->arr[i].len);
    e = q_send(t, P_SIZES, &p);
    if (!e && t->opt)
        pre_fold_sizes(t);
    if (!e)
        md_dirsizes_written(t->sizes);
    return e;
}

static enum md_err pg_commit(struct md_txn *base)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct pg_store *s = (struct pg_store *)base->store;
    enum md_err e = hist_send(t);
    if (!e)
        e = hist_commit_send(t);
    if (!e)
        e = sizes_send(t);
    if (!e)
        e = q_send(t, P_COMMIT, NULL);
    enum pst failed = P_COUNT;
    if (!e)
        e = q_flush_at(t, P_COUNT, &failed);
    /* The connection went before any statement failed: the COMMIT may have
     * been carried out, or not. */
    if (e == MD_EUNAVAIL && failed == P_COUNT)
        e = MD_EUNSURE;
    if (e && !t->c->broken) {
        q_send(t, P_ROLLBACK, NULL); /* after a failed COMMIT: harmless */
        q_flush(t, P_COUNT);
    }
    int vacuum = e ? 0 : t->vacuum;
    writer_done(s, t, e != MD_OK);
    if (vacuum)
        vacuum_versions(s, vacuum);
    return e;
}

static void pg_rollback(struct md_txn *base)
{
    struct pg_txn *t = (struct pg_txn *)base;
    if (!t->c->broken && q_send(t, P_ROLLBACK, NULL) == MD_OK)
        q_flush(t, P_COUNT);
    t->nq = 0;
    writer_done((struct pg_store *)base->store, t, 1);
}

/* ---- reads shared by readers and the writer ---- */

/* Bounds of the subtree of `dir`: (dir + "/", dir + "0"). */
static enum md_err bounds(struct md_buf *lo, struct md_buf *hi, const char *dir, size_t len)
{
    md_buf_reset(lo);
    md_buf_reset(hi);
    enum md_err e = md_buf_append(lo, dir, len);
    if (!e)
        e = md_buf_putc(lo, '/');
    if (!e)
        e = md_buf_append(hi, dir, len);
    if (!e)
        e = md_buf_putc(hi, '0');
    return e;
}

/* Characters (not bytes) of a UTF-8 string: substr() counts them. */
static int32_t utf8_chars(const char *s, size_t n)
{
    int32_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

static int path_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

struct row {
    const char *path;
    size_t len;
    enum md_kind kind;
    int64_t size;
};

static int row_cmp(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    return path_cmp(x->path, x->len, y->path, y->len);
}

/* The first of `n` sorted rows at or after `key` (binary search). */
static size_t lower_bound(const struct row *r, size_t n, const char *key, size_t klen)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (path_cmp(r[mid].path, r[mid].len, key, klen) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A path whose last segment has a dot after its first character
 * ("notes.md"): most likely a file. */
static int looks_like_file(const char *path, size_t len)
{
    size_t i = len;
    while (i > 0 && path[i - 1] != '/')
        i--;
    return i + 1 < len && memchr(path + i + 1, '.', len - i - 1) != NULL;
}

/* P_GET's parameters: the entry at `path`. */
static void get_params(struct md_pg_params *p, const char *tenant, const char *path, size_t len)
{
    p->n = 0;
    md_pg_text(p, tenant);
    md_pg_bytes(p, path, len);
}

/* P_VIEW's parameters: the entry at `path` and the listing below it, at
 * most `limit` children and grandchildren; bounds[0..1] hold the range. */
static enum md_err view_params(struct md_pg_params *p, struct md_buf bounds_buf[2],
                               const char *tenant, const char *path, size_t len, int64_t limit)
{
    enum md_err err = bounds(&bounds_buf[0], &bounds_buf[1], path, len);
    if (err)
        return err;
    p->n = 0;
    md_pg_text(p, tenant);
    md_pg_bytes(p, path, len);
    md_pg_i32(p, md_path_depth(path, len) + 1);
    md_pg_bytes(p, bounds_buf[0].data, bounds_buf[0].len);
    md_pg_bytes(p, bounds_buf[1].data, bounds_buf[1].len);
    md_pg_i64(p, limit);
    md_pg_i32(p, utf8_chars(path, len) + 2);
    md_pg_i32(p, md_path_depth(path, len) + 2);
    return MD_OK;
}

static enum md_err pg_view(struct md_txn *base, const char *tenant, const char *path, size_t len,
                           struct md_entry *e, size_t max_entries, md_list_cb cb, void *ctx,
                           int *complete)
{
    struct pg_txn *t = (struct pg_txn *)base;
    *complete = 1;
    enum md_err err;
    if (looks_like_file(path, len)) {
        /* The entry alone (P_GET): a statement of one index scan, where
         * P_VIEW starts and runs three; when it is a directory after all,
         * P_VIEW follows (a second round trip). */
        struct md_pg_params g;
        get_params(&g, tenant, path, len);
        err = read_exec(t, P_GET, &g);
        if (err)
            return err;
        if (PQntuples(t->res) != 1)
            return MD_ENOENT; /* not the root: it has no dot */
        if (md_pg_r_i16(t->res, 0, 0) != MD_KIND_DIR) {
            int null = PQgetisnull(t->res, 0, 2);
            *e = (struct md_entry){.kind = MD_KIND_FILE,
                                   .size = md_pg_r_i64(t->res, 0, 1),
                                   .content = null ? "" : PQgetvalue(t->res, 0, 2),
                                   .content_len = null ? 0 : (size_t)PQgetlength(t->res, 0, 2)};
            sha_of(t->res, 0, 3, e);
            return MD_OK;
        }
    }
    int64_t limit = max_entries ? (int64_t)max_entries : 1;
    struct md_pg_params p;
    err = view_params(&p, t->arr, tenant, path, len, limit);
    if (!err)
        err = read_exec(t, P_VIEW, &p);
    if (err)
        return err;
    const PGresult *r = t->res;
    int rows = PQntuples(r);
    int found = 0;
    size_t n1 = 0, n2 = 0;
    for (int i = 0; i < rows; i++) {
        int part = md_pg_r_i32(r, i, 0);
        if (part == 0) {
            found = 1;
            e->kind = md_pg_r_i16(r, i, 2) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
            e->size = md_pg_r_i64(r, i, 3);
            e->content = PQgetisnull(r, i, 4) ? "" : PQgetvalue(r, i, 4);
            e->content_len = PQgetisnull(r, i, 4) ? 0 : (size_t)PQgetlength(r, i, 4);
            sha_of(r, i, 5, e);
        } else if (part == 1) {
            n1++;
        } else {
            n2++;
        }
    }
    if (!found) {
        if (len != MD_ROOT_LEN)
            return MD_ENOENT;
        *e = (struct md_entry){.kind = MD_KIND_DIR}; /* a tenant without data */
        return MD_OK;
    }
    if (e->kind != MD_KIND_DIR)
        return MD_OK;
    struct row *lv = malloc((n1 + n2 + 1) * sizeof *lv);
    if (!lv)
        return MD_ENOMEM;
    struct row *l1 = lv, *l2 = lv + n1;
    size_t i1 = 0, i2 = 0;
    for (int i = 0; i < rows; i++) {
        int part = md_pg_r_i32(r, i, 0);
        if (part == 0)
            continue;
        struct row w = {PQgetvalue(r, i, 1), (size_t)PQgetlength(r, i, 1),
                        md_pg_r_i16(r, i, 2) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE,
                        md_pg_r_i64(r, i, 3)};
        if (part == 1)
            l1[i1++] = w;
        else
            l2[i2++] = w;
    }
    qsort(l1, n1, sizeof *l1, row_cmp);
    qsort(l2, n2, sizeof *l2, row_cmp);
    /* When a part was cut at its limit, what lies after its last row is
     * unknown: the listing stops there. */
    int cut1 = (int64_t)n1 >= limit, cut2 = (int64_t)n2 >= limit;
    int stop = 0;
    for (size_t i = 0; i < n1 && !stop; i++) {
        const struct row *k = &l1[i];
        if (cb(ctx, k->path, k->len, k->kind, k->size)) {
            stop = 1;
            break;
        }
        if (k->kind != MD_KIND_DIR)
            continue;
        char *key = malloc(k->len + 1);
        if (!key) {
            err = MD_ENOMEM;
            break;
        }
        memcpy(key, k->path, k->len);
        key[k->len] = '/';
        size_t j = lower_bound(l2, n2, key, k->len + 1);
        for (; j < n2 && l2[j].len > k->len && memcmp(l2[j].path, key, k->len + 1) == 0; j++) {
            if (cb(ctx, l2[j].path, l2[j].len, l2[j].kind, l2[j].size)) {
                stop = 1;
                break;
            }
        }
        /* Children past the last grandchild fetched may be missing. */
        key[k->len] = '0';
        if (!stop && cut2 && path_cmp(l2[n2 - 1].path, l2[n2 - 1].len, key, k->len + 1) < 0)
            stop = 1;
        free(key);
    }
    if (stop || cut1)
        *complete = 0;
    free(lv);
    return err;
}

/* ---- views fetched asynchronously (md_store_view_async) ----
 *
 * A view's statements go to the reads thread (store_pg_reads.c) instead of
 * a pooled connection the HTTP thread waits on: P_GET for a path that looks
 * like a file's, then P_VIEW if it was a directory after all, or P_VIEW at
 * once; what pg_view would send, in the same order. The job's txn then
 * answers pg_view from those results (answered()), without a connection.
 */
struct pg_vjob {
    struct pg_txn t; /* t.answer is this job */
    struct md_view_job *job;
    struct md_pg_query q;
    enum pst sent; /* the statement of q */
    char name[8];  /* its prepared name */
    PGresult *get, *view;
};

static void vjob_free(struct pg_vjob *j)
{
    PQclear(j->get);
    PQclear(j->view);
    for (size_t i = 0; i < sizeof j->t.arr / sizeof j->t.arr[0]; i++)
        md_buf_free(&j->t.arr[i]);
    free(j);
}

/* pg_view's statement `id`, answered from the job's results. */
static enum md_err answered(struct pg_txn *t, enum pst id)
{
    struct pg_vjob *j = t->answer;
    PGresult *r = id == P_GET ? j->get : id == P_VIEW ? j->view : NULL;
    if (!r) {
        md_log_msg(MD_LOG_ERROR, "internal error", "a view asked for a statement not fetched");
        return MD_EDB;
    }
    t->res = r; /* borrowed: the job's until vjob_free */
    t->st.statements++;
    t->st.round_trips++;
    return MD_OK;
}

static void vjob_send(struct pg_store *s, struct pg_vjob *j, enum pst id)
{
    j->sent = id;
    snprintf(j->name, sizeof j->name, "m%d", (int)id);
    j->q.stmt = j->name;
    j->q.resent = j->q.aborts = 0;
    md_pg_reads_submit(s->reads, &j->q);
}

static void vjob_done(struct md_pg_query *q, PGresult *res, enum md_err e)
{
    struct pg_vjob *j = (struct pg_vjob *)((char *)q - offsetof(struct pg_vjob, q));
    struct pg_store *s = (struct pg_store *)j->t.base.store;
    struct md_view_job *job = j->job;
    if (!e && j->sent == P_GET) {
        j->get = res;
        /* A directory after all: its listing too (pg_view's second round
         * trip). */
        if (PQntuples(res) == 1 && md_pg_r_i16(res, 0, 0) == MD_KIND_DIR) {
            int64_t limit = job->max_entries ? (int64_t)job->max_entries : 1;
            e = view_params(&j->q.p, j->t.arr, job->tenant, job->path, job->len, limit);
            if (!e) {
                vjob_send(s, j, P_VIEW);
                return;
            }
        }
    } else if (!e) {
        j->view = res;
    }
    if (e) {
        vjob_free(j);
        job->done(job, NULL, e);
        return;
    }
    job->done(job, &j->t.base, MD_OK);
}

static enum md_err pg_view_async(struct md_store *base, struct md_view_job *job)
{
    struct pg_store *s = (struct pg_store *)base;
    struct pg_vjob *j = calloc(1, sizeof *j);
    if (!j)
        return MD_ENOMEM;
    j->t.base.store = base;
    j->t.answer = j;
    for (size_t i = 0; i < sizeof j->t.arr / sizeof j->t.arr[0]; i++)
        md_buf_init(&j->t.arr[i], (size_t)64 << 20);
    j->job = job;
    j->q.done = vjob_done;
    enum md_err e = MD_OK;
    enum pst id = P_GET;
    if (looks_like_file(job->path, job->len)) {
        get_params(&j->q.p, job->tenant, job->path, job->len);
    } else {
        int64_t limit = job->max_entries ? (int64_t)job->max_entries : 1;
        e = view_params(&j->q.p, j->t.arr, job->tenant, job->path, job->len, limit);
        id = P_VIEW;
    }
    if (e) {
        vjob_free(j);
        return e;
    }
    vjob_send(s, j, id);
    return MD_OK;
}

/* The tenant's id: cached, or read from the P_LOCATE rows of t->res. */
static enum md_err pg_locate(struct md_txn *base, const char *tenant, struct md_locate *l, size_t n,
                             int *tenant_exists)
{
    struct pg_txn *t = (struct pg_txn *)base;
    if (pre_locate(t, tenant, l, n, tenant_exists))
        return MD_OK;
    /* Every path asked for, and every ancestor of those that want one. */
    size_t count = 0;
    const char *content_path = "";
    size_t content_len = 0;
    for (size_t i = 0; i < n; i++) {
        count++;
        if (l[i].want_parent)
            count += (size_t)md_path_depth(l[i].path, l[i].len);
        if (l[i].want_content) {
            content_path = l[i].path;
            content_len = l[i].len;
        }
    }
    enum md_err e = md_pg_arr_begin(&t->arr[0], OID_TEXT, count);
    for (size_t i = 0; i < n && !e; i++) {
        e = md_pg_arr_elem(&t->arr[0], l[i].path, l[i].len);
        for (size_t plen = l[i].len; !e && l[i].want_parent && plen > MD_ROOT_LEN;) {
            plen = md_path_parent_len(l[i].path, plen);
            e = md_pg_arr_elem(&t->arr[0], l[i].path, plen);
        }
    }
    if (e)
        return e;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_bytes(&p, t->arr[0].data, t->arr[0].len);
    md_pg_bytes(&p, content_path, content_len);
    if (t->write) {
        e = q_send(t, P_LOCATE, &p);
        if (!e)
            e = q_flush(t, P_LOCATE);
    } else {
        e = read_exec(t, P_LOCATE, &p);
    }
    if (e)
        return e;
    const PGresult *r = t->res;
    int rows = PQntuples(r);
    *tenant_exists = rows > 0;
    int64_t id = rows > 0 ? md_pg_r_i64(r, 0, 0) : 0;
    if (id)
        md_tenant_cache_put(t->c->tenants, tenant, id);
    else /* erased by another instance since it was cached, maybe */
        md_tenant_cache_drop(t->c->tenants, tenant);
    if (id && t->hist && md_hist_load(t->hist, id, md_pg_r_i64(r, 0, 6), md_pg_r_i64(r, 0, 7)))
        return MD_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct md_locate *q = &l[i];
        q->found = 0;
        q->anc_len = MD_ROOT_LEN;
        q->anc_kind = MD_KIND_DIR;
        q->e = (struct md_entry){.kind = MD_KIND_DIR};
        if (!*tenant_exists) {
            q->found = q->len == MD_ROOT_LEN;
            continue;
        }
        size_t best = 0; /* the longest proper ancestor found */
        for (int k = 0; k < rows; k++) {
            if (PQgetisnull(r, k, 1))
                continue;
            const char *rp = PQgetvalue(r, k, 1);
            size_t rl = (size_t)PQgetlength(r, k, 1);
            enum md_kind kind = md_pg_r_i16(r, k, 2) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
            int64_t size = md_pg_r_i64(r, k, 3);
            if (kind == MD_KIND_DIR)
                size += md_dirsizes_pending(t->sizes, id, rp, rl);
            if (rl == q->len && memcmp(rp, q->path, rl) == 0) {
                q->found = 1;
                q->e = (struct md_entry){.kind = kind, .size = size};
                sha_of(r, k, 5, &q->e);
                if (q->want_content && kind == MD_KIND_FILE) {
                    q->e.content = PQgetisnull(r, k, 4) ? "" : PQgetvalue(r, k, 4);
                    q->e.content_len = PQgetisnull(r, k, 4) ? 0 : (size_t)PQgetlength(r, k, 4);
                }
            } else if (q->want_parent && rl < q->len && rl > best && q->path[rl] == '/' &&
                       memcmp(rp, q->path, rl) == 0) {
                best = rl;
                q->anc_len = rl;
                q->anc_kind = kind;
            }
        }
    }
    return MD_OK;
}

/* The tenant's id in the writer (known after md_txn_locate), 0 if none. */
static int64_t known_tenant(struct pg_txn *t, const char *tenant)
{
    return md_tenant_cache_get(t->c->tenants, tenant);
}

/* Add `delta` to the size of every ancestor of `path`, pending. */
static enum md_err sizes_add(struct pg_txn *t, int64_t id, const char *path, size_t len,
                             int64_t delta)
{
    if (delta == 0 || len == MD_ROOT_LEN)
        return MD_OK;
    size_t plen = len;
    do {
        plen = md_path_parent_len(path, plen);
        if (md_dirsizes_add(t->sizes, id, path, plen, delta) != 0) {
            /* The pending table is full: write it, then keep this one. */
            enum md_err e = sizes_send(t);
            if (!e && !t->opt) /* optimistic: it goes with the batch's writes */
                e = q_flush(t, P_COUNT);
            if (e)
                return e;
            md_dirsizes_reset(t->sizes);
            md_dirsizes_mark(t->sizes);
            if (md_dirsizes_add(t->sizes, id, path, plen, delta) != 0)
                return MD_ENOMEM;
        }
    } while (plen > MD_ROOT_LEN);
    return MD_OK;
}

/* Queue an insert of the directories strictly between the ancestor of
 * length `from` and `path` (with the root first when `with_root`), and of
 * the file `path` itself when `file`. */
static enum md_err insert_send(struct pg_txn *t, const char *tenant, const char *path, size_t len,
                               size_t from, int with_root, int file, const char *content,
                               size_t content_len, const unsigned char *sha256)
{
    size_t count = (size_t)with_root + (size_t)file;
    for (size_t i = from + 1; i < len; i++)
        count += path[i] == '/';
    if (count == 0)
        return MD_OK;
    enum md_err e = md_pg_arr_begin(&t->arr[0], OID_TEXT, count);
    if (!e)
        e = md_pg_arr_begin(&t->arr[1], OID_INT4, count);
    if (!e)
        e = md_pg_arr_begin(&t->arr[2], OID_INT2, count);
    for (size_t i = with_root ? MD_ROOT_LEN : from + 1; !e && i <= len; i++) {
        /* (the root alone: `path` is the root) */
        int dir = (with_root && i == MD_ROOT_LEN) || (i < len && path[i] == '/' && i > from);
        if (!dir && !(file && i == len))
            continue;
        e = md_pg_arr_elem(&t->arr[0], path, i);
        if (!e)
            e = md_pg_arr_i32(&t->arr[1], md_path_depth(path, i));
        if (!e)
            e = md_pg_arr_i16(&t->arr[2], dir ? MD_KIND_DIR : MD_KIND_FILE);
    }
    if (e)
        return e;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    for (int i = 0; i < 3; i++)
        md_pg_bytes(&p, t->arr[i].data, t->arr[i].len);
    md_pg_i64(&p, now_ms());
    md_pg_bytes(&p, content, content_len);
    md_pg_i64(&p, (int64_t)content_len);
    md_pg_bytes(&p, sha256, sha256 ? MD_SHA256_LEN : 0);
    return q_send(t, P_INSERT, &p);
}

static enum md_err pg_put_file(struct md_txn *base, const char *tenant, const char *path,
                               size_t len, const char *content, size_t content_len,
                               const unsigned char sha256[MD_SHA256_LEN], int64_t old_size,
                               size_t parents_from)
{
    struct pg_txn *t = (struct pg_txn *)base;
    int64_t id = known_tenant(t, tenant);
    enum md_err e = id ? record_file(t, id, tenant, path, len, old_size) : MD_OK;
    if (e)
        return e;
    if (t->opt && id != 0) {
        /* Optimistic: a row of the batch's bulk insert or update. */
        e = old_size >= 0
                ? bulk_set(t, id, path, len, content, content_len, sha256)
                : bulk_insert(t, id, path, len, parents_from, content, content_len, sha256);
        if (!e && old_size < 0)
            pre_files_add(t, tenant, path, len, 1);
        if (!e)
            pre_forget(t, tenant, path, len, 0, old_size >= 0 ? len : parents_from);
    } else if (old_size >= 0) {
        struct md_pg_params p = {.n = 0};
        md_pg_i64(&p, id);
        md_pg_bytes(&p, path, len);
        md_pg_bytes(&p, content, content_len);
        md_pg_i64(&p, (int64_t)content_len);
        md_pg_i64(&p, now_ms());
        md_pg_bytes(&p, sha256, MD_SHA256_LEN);
        e = q_send(t, P_SET_CONTENT, &p);
        if (!e)
            e = q_flush(t, P_COUNT);
    } else {
        /* A tenant's first write makes the tenant and its root; its id comes
         * back in the same round trip. */
        int new_tenant = id == 0;
        if (new_tenant) {
            struct md_pg_params p = {.n = 0};
            md_pg_text(&p, tenant);
            md_pg_i64(&p, now_ms() / 1000);
            e = q_send(t, P_TENANT_NEW, &p);
            t->made_tenant_txn = t->made_tenant_cmd = 1;
        }
        if (!e)
            e = insert_send(t, tenant, path, len, parents_from, new_tenant, 1, content, content_len,
                            sha256);
        if (!e)
            e = q_flush(t, new_tenant ? P_TENANT_NEW : P_COUNT);
        if (!e && new_tenant) {
            if (!t->res || PQntuples(t->res) != 1)
                return MD_EDB;
            id = md_pg_r_i64(t->res, 0, 0);
            md_tenant_cache_put(t->c->tenants, tenant, id);
            if (t->opt)
                pre_forget_tenant(t, tenant);
            /* Its counters start at 0; the file did not exist. */
            if (md_hist_load(t->hist, id, 0, 0) != 0)
                return MD_ENOMEM;
            e = record_file(t, id, tenant, path, len, old_size);
        }
    }
    if (!e)
        e = sizes_add(t, id, path, len, (int64_t)content_len - (old_size < 0 ? 0 : old_size));
    return e;
}

/* Queue the two statements of a subtree operation on `path`: remove, or
 * move to `to` when it is not NULL. */
static enum md_err subtree_send(struct pg_txn *t, int64_t id, const char *path, size_t len,
                                const char *to, size_t tlen)
{
    /* Rows about to move or go must carry their true sizes first. */
    enum md_err e = sizes_send(t);
    if (!e)
        e = bounds(&t->arr[0], &t->arr[1], path, len);
    if (e)
        return e;
    int32_t cut = utf8_chars(path, len) + 1;
    int32_t ddepth = to ? md_path_depth(to, tlen) - md_path_depth(path, len) : 0;
    int64_t mtime = now_ms();
    struct md_pg_params one = {.n = 0}, below = {.n = 0};
    md_pg_i64(&one, id);
    md_pg_bytes(&one, path, len);
    md_pg_i64(&below, id);
    md_pg_bytes(&below, t->arr[0].data, t->arr[0].len);
    md_pg_bytes(&below, t->arr[1].data, t->arr[1].len);
    if (to) {
        for (struct md_pg_params *p = &one; p; p = p == &one ? &below : NULL) {
            md_pg_bytes(p, to, tlen);
            md_pg_i32(p, cut);
            md_pg_i32(p, ddepth);
            md_pg_i64(p, mtime);
        }
    }
    e = q_send(t, to ? P_MOVE_ONE : P_REMOVE_ONE, &one);
    return e ? e : q_send(t, to ? P_MOVE_BELOW : P_REMOVE_BELOW, &below);
}

static enum md_err pg_remove_tree(struct md_txn *base, const char *tenant, const char *path,
                                  size_t len, int64_t size)
{
    struct pg_txn *t = (struct pg_txn *)base;
    int64_t id = known_tenant(t, tenant);
    int counted = 0;
    enum md_err e =
        id ? record_subtree(t, id, tenant, path, len, size, NULL, 0, &counted) : MD_ENOENT;
    if (!e && t->opt)
        pre_files_add(t, tenant, path, len, -1);
    if (!e)
        e = subtree_send(t, id, path, len, NULL, 0);
    if (!e && t->opt)
        pre_forget(t, tenant, path, len, 1, len);
    else if (!e)
        e = q_flush(t, counted ? P_VER_SUBTREE : P_COUNT);
    if (!e && counted)
        e = subtree_counted(t, size);
    if (!e)
        e = sizes_add(t, id, path, len, -size);
    return e;
}

static enum md_err pg_move_tree(struct md_txn *base, const char *tenant, const char *from,
                                size_t flen, const char *to, size_t tlen, int64_t size,
                                size_t parents_from)
{
    struct pg_txn *t = (struct pg_txn *)base;
    int64_t id = known_tenant(t, tenant);
    int counted = 0;
    enum md_err e =
        id ? record_subtree(t, id, tenant, from, flen, size, to, tlen, &counted) : MD_ENOENT;
    if (!e)
        e = insert_send(t, tenant, to, tlen, parents_from, 0, 0, NULL, 0, NULL);
    if (!e)
        e = subtree_send(t, id, from, flen, to, tlen);
    if (!e && t->opt) {
        pre_forget(t, tenant, from, flen, 1, flen);
        pre_forget(t, tenant, to, tlen, 1, parents_from);
    } else if (!e) {
        e = q_flush(t, counted ? P_VER_SUBTREE_MOVE : P_COUNT);
    }
    if (!e && counted)
        e = subtree_counted(t, size);
    if (!e)
        e = sizes_add(t, id, from, flen, -size);
    if (!e)
        e = sizes_add(t, id, to, tlen, size);
    return e;
}

/* ---- for tools and tests ---- */

static enum md_err pg_get(struct md_txn *base, const char *tenant, const char *path, size_t len,
                          int want_content, struct md_entry *e)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_bytes(&p, path, len);
    enum md_err err = t->write ? q_send(t, P_GET, &p) : read_exec(t, P_GET, &p);
    if (!err && t->write)
        err = q_flush(t, P_GET);
    if (err)
        return err;
    if (PQntuples(t->res) != 1)
        return MD_ENOENT;
    e->kind = md_pg_r_i16(t->res, 0, 0) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
    e->size = md_pg_r_i64(t->res, 0, 1);
    int64_t id = t->write ? known_tenant(t, tenant) : 0;
    if (e->kind == MD_KIND_DIR && id)
        e->size += md_dirsizes_pending(t->sizes, id, path, len);
    int null = PQgetisnull(t->res, 0, 2);
    e->content =
        want_content && e->kind == MD_KIND_FILE ? (null ? "" : PQgetvalue(t->res, 0, 2)) : NULL;
    e->content_len = e->content && !null ? (size_t)PQgetlength(t->res, 0, 2) : 0;
    sha_of(t->res, 0, 3, e);
    return MD_OK;
}

static enum md_err pg_list(struct md_txn *base, const char *tenant, const char *dir, size_t len,
                           md_list_cb cb, void *ctx)
{
    struct pg_txn *t = (struct pg_txn *)base;
    enum md_err e = t->write ? sizes_send(t) : MD_OK; /* the listing shows sizes */
    if (!e)
        e = bounds(&t->arr[0], &t->arr[1], dir, len);
    if (e)
        return e;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_i32(&p, md_path_depth(dir, len) + 1);
    md_pg_bytes(&p, t->arr[0].data, t->arr[0].len);
    md_pg_bytes(&p, t->arr[1].data, t->arr[1].len);
    e = t->write ? q_send(t, P_LIST, &p) : read_exec(t, P_LIST, &p);
    if (!e && t->write)
        e = q_flush(t, P_LIST);
    if (e)
        return e;
    /* The result is kept in t->res while cb runs: cb must not call the txn. */
    PGresult *r = t->res;
    t->res = NULL;
    for (int i = 0; i < PQntuples(r); i++) {
        enum md_kind kind = md_pg_r_i16(r, i, 1) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
        if (cb(ctx, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0), kind, md_pg_r_i64(r, i, 2)))
            break;
    }
    PQclear(r);
    return MD_OK;
}

static enum md_err pg_ping(struct md_store *base)
{
    struct md_txn *t;
    enum md_err e = pg_read_begin(base, &t);
    if (e)
        return e;
    e = read_exec((struct pg_txn *)t, P_PING, NULL);
    pg_txn_end(t);
    return e;
}

static enum md_err pg_db_size(struct md_store *base, int64_t *bytes)
{
    struct md_txn *t;
    enum md_err e = pg_read_begin(base, &t);
    if (e)
        return e;
    struct pg_txn *pt = (struct pg_txn *)t;
    e = read_exec(pt, P_DB_SIZE, NULL);
    if (!e && pt->res && PQntuples(pt->res) == 1)
        *bytes = md_pg_r_i64(pt->res, 0, 0);
    else if (!e)
        e = MD_EDB;
    pg_txn_end(t);
    return e;
}

/* Statements queued by the running command of an optimistic batch and
 * not sent yet: they go in the batch's write round trip (pg_flush). */
static size_t deferred(const struct pg_txn *t)
{
    if (!t->opt)
        return 0;
    return (t->nq > t->cmd_base ? t->nq - t->cmd_base : 0) + (size_t)t->cmd_bulk;
}

/* A command whose writes an optimistic batch holds back is charged the
 * round trip that will send them (pg_flush). */
static void pg_stats(struct md_txn *base, struct md_txn_stats *st)
{
    const struct pg_txn *t = (const struct pg_txn *)base;
    *st = t->st;
    if (deferred(t) > 0)
        st->round_trips++;
}

/* ---- open / close ---- */

static void pg_close(struct md_store *base)
{
    struct pg_store *s = (struct pg_store *)base;
    md_pg_reads_stop(s->reads);
    md_pg_watch_stop(s->watch);
    for (struct pgc *c = s->idle, *next; c; c = next) {
        next = c->next_idle;
        conn_close(c);
    }
    conn_close(s->writer);
    conn_close(s->pruner);
    md_touched_free(s->touched);
    pthread_mutex_destroy(&s->pool_mu);
    pthread_mutex_destroy(&s->write_mu);
    pthread_mutex_destroy(&s->prune_mu);
    free(s->uri);
    free(s);
}

/* ---- history (md_history.h) ----
 *
 * Versions and change-feed rows are numbered by memoryd from the tenant's
 * counters (md_hist), loaded with the locate or the prefetch that every
 * write command begins with and written back once before the commit. A
 * version is written from memory when memoryd has the old content (a
 * file's absence; an optimistic batch's prefetched file), else copied by
 * the database before the row changes (INSERT ... SELECT). A directory's
 * files are versioned in one statement that says how many it wrote; an
 * optimistic batch cannot wait for that answer, so a directory delete or
 * rename gives the attempt up (the batch runs again the exact way). The
 * rows an optimistic batch writes from memory go in two bulk statements
 * with its writes (vk, ck); an exact batch sends them at once, inside the
 * command's savepoint. */

static struct pg_store *store_of(const struct pg_txn *t)
{
    return (struct pg_store *)t->base.store;
}

static int history_on(const struct pg_txn *t)
{
    return md_history_on(&store_of(t)->cfg.history);
}

static void sha_of(const PGresult *r, int row, int col, struct md_entry *e)
{
    e->has_sha256 = !PQgetisnull(r, row, col) && PQgetlength(r, row, col) == MD_SHA256_LEN;
    if (e->has_sha256)
        memcpy(e->sha256, PQgetvalue(r, row, col), MD_SHA256_LEN);
}

static void notify_clear(struct pg_txn *t)
{
    for (size_t i = 0; i < t->nnotify; i++)
        free(t->notify[i]);
    t->nnotify = 0;
}

/* Remember to NOTIFY `tenant`'s change at the commit (once). */
static enum md_err notify_add(struct pg_txn *t, const char *tenant)
{
    for (size_t i = 0; i < t->nnotify; i++)
        if (strcmp(t->notify[i], tenant) == 0)
            return MD_OK;
    if (t->nnotify == t->capnotify) {
        size_t cap = t->capnotify ? t->capnotify * 2 : 16;
        char **n = realloc(t->notify, cap * sizeof *n);
        if (!n)
            return MD_ENOMEM;
        t->notify = n;
        t->capnotify = cap;
    }
    if (!(t->notify[t->nnotify] = strdup(tenant)))
        return MD_ENOMEM;
    t->nnotify++;
    return MD_OK;
}

static void hist_reset(struct pg_txn *t)
{
    if (!t->hist)
        return; /* a reader */
    md_hist_reset(t->hist);
    t->vk_rows = t->ck_rows = 0;
    notify_clear(t);
    t->vacuum = 0;
}

/* An optimistic attempt that cannot go on: the batch runs again the exact way. */
static enum md_err give_up(struct pg_txn *t)
{
    if (!t->abandoned)
        t->abandoned = MD_EDB;
    return MD_OK;
}

/* Tenant id's counters, loaded in this transaction (the locate and the
 * prefetch load them; else one round trip). */
static enum md_err counters_ready(struct pg_txn *t, int64_t id)
{
    int64_t v, q;
    if (md_hist_loaded(t->hist, id, &v, &q))
        return MD_OK;
    if (t->opt)
        return MD_EDB; /* the prefetch read every tenant of the batch */
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, id);
    enum md_err e = q_send(t, P_COUNTERS, &p);
    if (!e)
        e = q_flush(t, P_COUNTERS);
    if (!e && (!t->res || PQntuples(t->res) != 1))
        e = MD_EDB;
    if (!e && md_hist_load(t->hist, id, md_pg_r_i64(t->res, 0, 0), md_pg_r_i64(t->res, 0, 1)))
        e = MD_ENOMEM;
    return e;
}

/* Is the running command recording versions for tenant `id`? (A command
 * begun before its tenant existed learns its id here.) */
static int recording(struct pg_txn *t, int64_t id)
{
    if (!t->hist || !history_on(t) || !md_hist_cmd_meta(t->hist)->command)
        return 0;
    if (md_hist_cmd_tenant(t->hist) == 0)
        md_hist_cmd_set_tenant(t->hist, id);
    return md_hist_cmd_tenant(t->hist) == id;
}

/* Queue the rows gathered in `arrs` (n arrays, `rows` rows) as statement `id`. */
static enum md_err arrays_send(struct pg_txn *t, enum pst id, struct md_buf *arrs, size_t n,
                               size_t *rows)
{
    if (*rows == 0)
        return MD_OK;
    struct md_pg_params p = {.n = 0};
    for (size_t i = 0; i < n; i++) {
        md_pg_arr_count(&arrs[i], *rows);
        md_pg_bytes(&p, arrs[i].data, arrs[i].len);
    }
    *rows = 0;
    return q_send_now(t, id, &p);
}

/* Begin `n` arrays of the given element types for a first row. */
static enum md_err arrays_begin(struct md_buf *arrs, const Oid *types, size_t n)
{
    enum md_err e = MD_OK;
    for (size_t i = 0; i < n && !e; i++)
        e = md_pg_arr_begin(&arrs[i], types[i], 1); /* counted when sent */
    return e;
}

static enum md_err arr_text_or_null(struct md_buf *b, const char *s)
{
    return s ? md_pg_arr_elem(b, s, strlen(s)) : arr_null(b);
}

static enum md_err hist_send(struct pg_txn *t)
{
    if (!t->hist)
        return MD_OK;
    enum md_err e = arrays_send(t, P_VER_MANY, t->vk, 10, &t->vk_rows);
    return e ? e : arrays_send(t, P_CHANGES_MANY, t->ck, 9, &t->ck_rows);
}

/* A version from memory: `existed` 0 for an absence (no sha256, size -1,
 * no content). Sent at once in an exact batch. */
static enum md_err ver_mem(struct pg_txn *t, int64_t id, int64_t v, const char *path, size_t len,
                           int existed, const unsigned char *sha256, int64_t size,
                           const char *content, size_t content_len)
{
    static const Oid types[10] = {OID_INT8, OID_INT8, OID_TEXT, OID_BOOL, OID_BYTEA,
                                  OID_INT8, OID_INT8, OID_TEXT, OID_TEXT, OID_BYTEA};
    const struct md_write_meta *m = md_hist_cmd_meta(t->hist);
    enum md_err e = t->vk_rows ? MD_OK : arrays_begin(t->vk, types, 10);
    unsigned char b = existed ? 1 : 0;
    if (!e)
        e = md_pg_arr_i64(&t->vk[0], id);
    if (!e)
        e = md_pg_arr_i64(&t->vk[1], v);
    if (!e)
        e = md_pg_arr_elem(&t->vk[2], path, len);
    if (!e)
        e = md_pg_arr_elem(&t->vk[3], &b, 1);
    if (!e)
        e = sha256 ? md_pg_arr_elem(&t->vk[4], sha256, MD_SHA256_LEN) : arr_null(&t->vk[4]);
    if (!e)
        e = md_pg_arr_i64(&t->vk[5], size);
    if (!e)
        e = md_pg_arr_i64(&t->vk[6], m->time_ms);
    if (!e)
        e = arr_text_or_null(&t->vk[7], m->command);
    if (!e)
        e = arr_text_or_null(&t->vk[8], m->actor);
    if (!e)
        e = existed ? md_pg_arr_elem(&t->vk[9], content, content_len) : arr_null(&t->vk[9]);
    if (e) {
        t->vk_rows = 0;
        return t->opt ? give_up(t) : e;
    }
    t->vk_rows++;
    return t->opt ? MD_OK : arrays_send(t, P_VER_MANY, t->vk, 10, &t->vk_rows);
}

/* A file's version copied by the database before the file changes (queued
 * ahead of that change). */
static enum md_err ver_copy(struct pg_txn *t, int64_t id, int64_t v, const char *path, size_t len)
{
    const struct md_write_meta *m = md_hist_cmd_meta(t->hist);
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, id);
    md_pg_bytes(&p, path, len);
    md_pg_i64(&p, v);
    md_pg_i64(&p, m->time_ms);
    md_pg_text(&p, m->command);
    if (m->actor)
        md_pg_text(&p, m->actor);
    else
        md_pg_null(&p);
    return q_send(t, P_VER_COPY, &p);
}

static enum md_err record_file(struct pg_txn *t, int64_t id, const char *tenant, const char *path,
                               size_t len, int64_t old_size)
{
    if (!recording(t, id))
        return MD_OK;
    enum md_err e = counters_ready(t, id);
    if (e)
        return t->opt ? give_up(t) : e;
    int64_t v = md_hist_next_version(t->hist);
    if (old_size < 0) {
        e = ver_mem(t, id, v, path, len, 0, NULL, -1, NULL, 0);
    } else {
        const struct pre_ent *pe = t->opt ? pre_find(t, tenant, path, len) : NULL;
        if (pe && pe->found && pe->has_content && !pe->stale)
            e = ver_mem(t, id, v, path, len, 1, pe->sha256, pe->size, pe->content, pe->content_len);
        else
            e = ver_copy(t, id, v, path, len);
    }
    if (!e) {
        md_hist_take_versions(t->hist, 1, old_size >= 0 ? old_size : 0);
        md_hist_touch(t->hist, id, path, len, 0);
    }
    return e;
}

static enum md_err record_subtree(struct pg_txn *t, int64_t id, const char *tenant,
                                  const char *path, size_t len, int64_t size, const char *to,
                                  size_t tlen, int *counted)
{
    *counted = 0;
    if (!recording(t, id))
        return MD_OK;
    enum md_err e = counters_ready(t, id);
    if (e)
        return t->opt ? give_up(t) : e;
    int64_t v = md_hist_next_version(t->hist);
    if (t->opt) {
        /* A file: its number is known now. A directory: give up. */
        const struct pre_ent *pe = pre_find(t, tenant, path, len);
        if (!pe || !pe->found || pe->stale || pe->kind != MD_KIND_FILE)
            return give_up(t);
        e = ver_copy(t, id, v, path, len);
        if (!e && to)
            e = ver_mem(t, id, v + 1, to, tlen, 0, NULL, -1, NULL, 0);
        if (!e)
            md_hist_take_versions(t->hist, to ? 2 : 1, size);
    } else {
        const struct md_write_meta *m = md_hist_cmd_meta(t->hist);
        e = bounds(&t->arr[0], &t->arr[1], path, len);
        if (e)
            return e;
        struct md_pg_params p = {.n = 0};
        md_pg_i64(&p, id);
        md_pg_i64(&p, v - 1);
        md_pg_bytes(&p, path, len);
        md_pg_bytes(&p, t->arr[0].data, t->arr[0].len);
        md_pg_bytes(&p, t->arr[1].data, t->arr[1].len);
        md_pg_i64(&p, m->time_ms);
        md_pg_text(&p, m->command);
        if (m->actor)
            md_pg_text(&p, m->actor);
        else
            md_pg_null(&p);
        if (to) {
            md_pg_bytes(&p, to, tlen);
            md_pg_i32(&p, utf8_chars(path, len) + 1);
        }
        e = q_send(t, to ? P_VER_SUBTREE_MOVE : P_VER_SUBTREE, &p);
        *counted = !e; /* the caller's flush brings the count (subtree_counted) */
    }
    if (!e) {
        md_hist_touch(t->hist, id, path, len, 1);
        if (to)
            md_hist_touch(t->hist, id, to, tlen, 1);
    }
    return e;
}

static enum md_err subtree_counted(struct pg_txn *t, int64_t size)
{
    (void)size;
    if (!t->res || PQntuples(t->res) != 1)
        return MD_EDB;
    md_hist_take_versions(t->hist, md_pg_r_i64(t->res, 0, 0), md_pg_r_i64(t->res, 0, 1));
    return MD_OK;
}

/* Before the commit: the changed counters and the NOTIFY of the tenants
 * written. */
static enum md_err hist_commit_send(struct pg_txn *t)
{
    if (!t->hist)
        return MD_OK;
    size_t n = md_hist_dirty_count(t->hist), live = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t id, v, q;
        md_hist_dirty_entry(t->hist, i, &id, &v, &q);
        live += id != 0;
    }
    enum md_err e = MD_OK;
    if (live) {
        e = md_pg_arr_begin(&t->arr[0], OID_INT8, live);
        if (!e)
            e = md_pg_arr_begin(&t->arr[1], OID_INT8, live);
        if (!e)
            e = md_pg_arr_begin(&t->arr[2], OID_INT8, live);
        for (size_t i = 0; i < n && !e; i++) {
            int64_t id, v, q;
            md_hist_dirty_entry(t->hist, i, &id, &v, &q);
            if (!id)
                continue;
            e = md_pg_arr_i64(&t->arr[0], id);
            if (!e)
                e = md_pg_arr_i64(&t->arr[1], v);
            if (!e)
                e = md_pg_arr_i64(&t->arr[2], q);
        }
        struct md_pg_params p = {.n = 0};
        for (int i = 0; i < 3; i++)
            md_pg_bytes(&p, t->arr[i].data, t->arr[i].len);
        if (!e)
            e = q_send(t, P_COUNTERS_SET, &p);
    }
    if (!e && t->nnotify) {
        e = md_pg_arr_begin(&t->arr[0], OID_TEXT, t->nnotify);
        for (size_t i = 0; i < t->nnotify && !e; i++)
            e = md_pg_arr_elem(&t->arr[0], t->notify[i], strlen(t->notify[i]));
        struct md_pg_params p = {.n = 0};
        md_pg_bytes(&p, t->arr[0].data, t->arr[0].len);
        if (!e)
            e = q_send(t, P_NOTIFY, &p);
    }
    return e;
}

/* The VACUUM of vacuum_versions, on a connection of its own (VACUUM
 * cannot run in a transaction). */
static void vacuum_now(struct pg_store *s, int what)
{
    char why[512];
    PGconn *c = md_pg_connect(s->uri, why, sizeof why);
    if (!c) {
        md_log_msg(MD_LOG_ERROR, "VACUUM after a redaction: cannot connect", why);
        return;
    }
    /* The dead row versions that may hold it: the version's own, the
     * answers kept for keys that were scrubbed, and the file's rows of
     * before the edit that replaced it. */
    PGresult *r =
        PQexec(c, what == VACUUM_ERASED
                      ? "VACUUM versions, idempotency, entries, changes, tenants, api_keys"
                      : "VACUUM versions, idempotency, entries");
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        md_log_msg(MD_LOG_ERROR, "VACUUM after a redaction failed", PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
}

/* After a commit that redacted: VACUUM the versions table (and its TOAST
 * table), so that the dead row versions holding the content are removed,
 * on a connection of its own (VACUUM cannot run in a transaction). After
 * an erasure, every table that held the tenant's rows. With the pruner's
 * mutex held: a retention transaction open meanwhile (its xid older than
 * the redaction's) would keep VACUUM from removing those row versions. */
static void vacuum_versions(struct pg_store *s, int what)
{
    pthread_mutex_lock(&s->prune_mu);
    vacuum_now(s, what);
    pthread_mutex_unlock(&s->prune_mu);
}

static enum md_err pg_cmd_begin(struct md_txn *base, const char *tenant,
                                const struct md_write_meta *m)
{
    struct pg_txn *t = (struct pg_txn *)base;
    t->cmd_tenant = tenant;
    md_hist_cmd_begin(t->hist, known_tenant(t, tenant), m);
    return MD_OK;
}

static enum md_err pg_cmd_end(struct md_txn *base, const char *const *paths, const size_t *lens,
                              size_t n, struct md_change_rec *rec)
{
    struct pg_txn *t = (struct pg_txn *)base;
    const char *tenant = t->cmd_tenant;
    int64_t id = 0;
    enum md_err e = !tenant ? MD_EDB : t->opt ? MD_OK : tenant_lookup(t, tenant, &id);
    if (t->opt && tenant)
        id = known_tenant(t, tenant);
    if (!e && !id)
        e = MD_EDB; /* a write that succeeded has its tenant */
    if (!e)
        e = counters_ready(t, id);
    if (e)
        return t->opt ? give_up(t) : e;
    if (md_hist_cmd_tenant(t->hist) != id)
        md_hist_cmd_set_tenant(t->hist, id);
    const struct md_write_meta *m = md_hist_cmd_meta(t->hist);
    md_hist_cmd_end(t->hist, rec);
    static const Oid types[9] = {OID_INT8, OID_INT8, OID_INT8, OID_INT8, OID_INT8,
                                 OID_INT8, OID_TEXT, OID_TEXT, OID_TEXT};
    e = t->ck_rows ? MD_OK : arrays_begin(t->ck, types, 9);
    if (!e)
        e = md_pg_arr_i64(&t->ck[0], id);
    if (!e)
        e = md_pg_arr_i64(&t->ck[1], rec->seq);
    if (!e)
        e = md_pg_arr_i64(&t->ck[2], rec->version);
    if (!e)
        e = md_pg_arr_i64(&t->ck[3], rec->versions);
    if (!e)
        e = md_pg_arr_i64(&t->ck[4], rec->history_bytes);
    if (!e)
        e = md_pg_arr_i64(&t->ck[5], m->time_ms);
    if (!e)
        e = arr_text_or_null(&t->ck[6], m->command);
    if (!e) {
        /* The paths, one per line, as one element. */
        size_t total = 0;
        for (size_t i = 0; i < n; i++)
            total += lens[i] + 1;
        char *joined = malloc(total ? total : 1);
        size_t off = 0;
        for (size_t i = 0; joined && i < n; i++) {
            if (i)
                joined[off++] = '\n';
            memcpy(joined + off, paths[i], lens[i]);
            off += lens[i];
        }
        e = joined ? md_pg_arr_elem(&t->ck[7], joined, off) : MD_ENOMEM;
        free(joined);
    }
    if (!e)
        e = arr_text_or_null(&t->ck[8], m->actor);
    if (!e)
        e = notify_add(t, tenant);
    if (e) {
        t->ck_rows = 0;
        return t->opt ? give_up(t) : e;
    }
    t->ck_rows++;
    return t->opt ? MD_OK : arrays_send(t, P_CHANGES_MANY, t->ck, 9, &t->ck_rows);
}

/* The tenant's id: cached, or asked (the cache is emptied by any
 * rollback); 0 when it has no data. */
static enum md_err tenant_lookup(struct pg_txn *t, const char *tenant, int64_t *id)
{
    *id = known_tenant(t, tenant);
    if (*id)
        return MD_OK;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    enum md_err e = q_send(t, P_TENANT_ID, &p);
    if (!e)
        e = q_flush(t, P_TENANT_ID);
    if (!e && t->res && PQntuples(t->res) == 1) {
        *id = md_pg_r_i64(t->res, 0, 0);
        md_tenant_cache_put(t->c->tenants, tenant, *id);
    }
    return e;
}

/* Make the tenant (and its root) when it has none yet; its id. */
static enum md_err ensure_tenant(struct pg_txn *t, const char *tenant, int64_t *id)
{
    enum md_err e = tenant_lookup(t, tenant, id);
    if (e || *id)
        return e;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_i64(&p, now_ms() / 1000);
    e = q_send(t, P_TENANT_NEW, &p);
    t->made_tenant_txn = t->made_tenant_cmd = 1;
    if (!e)
        e = insert_send(t, tenant, MD_ROOT, MD_ROOT_LEN, MD_ROOT_LEN, 1, 0, NULL, 0, NULL);
    if (!e)
        e = q_flush(t, P_TENANT_NEW);
    if (!e && (!t->res || PQntuples(t->res) != 1))
        e = MD_EDB;
    if (e)
        return e;
    *id = md_pg_r_i64(t->res, 0, 0);
    md_tenant_cache_put(t->c->tenants, tenant, *id);
    return md_hist_load(t->hist, *id, 0, 0) ? MD_ENOMEM : MD_OK;
}

static enum md_err pg_idem_get(struct md_txn *base, const char *tenant, const char *key,
                               size_t key_len, struct md_idem *out)
{
    struct pg_txn *t = (struct pg_txn *)base;
    if (t->opt)
        return MD_EDB; /* the writer runs keyed commands the exact way */
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_bytes(&p, key, key_len);
    enum md_err e = q_send(t, P_IDEM_GET, &p);
    if (!e)
        e = q_flush(t, P_IDEM_GET);
    if (e)
        return e;
    const PGresult *r = t->res;
    if (!r || PQntuples(r) != 1 || PQgetlength(r, 0, 0) != MD_SHA256_LEN ||
        md_pg_r_i64(r, 0, 3) < now_ms() - MD_IDEMPOTENCY_MS)
        return MD_ENOENT;
    memcpy(out->fingerprint, PQgetvalue(r, 0, 0), MD_SHA256_LEN);
    out->err = md_pg_r_i32(r, 0, 1);
    out->body = PQgetvalue(r, 0, 2);
    out->body_len = (size_t)PQgetlength(r, 0, 2);
    return MD_OK;
}

static enum md_err pg_idem_put(struct md_txn *base, const char *tenant, const char *key,
                               size_t key_len, const struct md_idem *answer, const char *path,
                               size_t path_len)
{
    struct pg_txn *t = (struct pg_txn *)base;
    if (t->opt)
        return MD_EDB;
    int64_t id = 0;
    enum md_err e = ensure_tenant(t, tenant, &id);
    if (e)
        return e;
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, id);
    md_pg_bytes(&p, key, key_len);
    md_pg_bytes(&p, answer->fingerprint, MD_SHA256_LEN);
    md_pg_i32(&p, answer->err);
    md_pg_bytes(&p, answer->body ? answer->body : "", answer->body_len);
    if (path)
        md_pg_bytes(&p, path, path_len);
    else
        md_pg_null(&p);
    md_pg_i64(&p, now_ms());
    e = q_send(t, P_IDEM_PUT, &p);
    return e ? e : q_flush(t, P_COUNT);
}

/* A version from the columns VERSION_COLS (0..9); content from column
 * `content_col` (-1: none). */
static void version_of(const PGresult *r, int row, struct md_version *v, int content_col)
{
    v->version = md_pg_r_i64(r, row, 0);
    v->path = PQgetvalue(r, row, 1);
    v->path_len = (size_t)PQgetlength(r, row, 1);
    v->existed = PQgetvalue(r, row, 2)[0] != 0;
    v->redacted = PQgetvalue(r, row, 3)[0] != 0;
    v->has_sha256 = PQgetlength(r, row, 4) == MD_SHA256_LEN;
    if (v->has_sha256)
        memcpy(v->sha256, PQgetvalue(r, row, 4), MD_SHA256_LEN);
    v->size = PQgetisnull(r, row, 5) ? -1 : md_pg_r_i64(r, row, 5);
    v->time_ms = md_pg_r_i64(r, row, 6);
    v->command = PQgetvalue(r, row, 7);
    v->actor = PQgetisnull(r, row, 8) ? NULL : PQgetvalue(r, row, 8);
    v->actor_len = v->actor ? (size_t)PQgetlength(r, row, 8) : 0;
    v->pruned_through = md_pg_r_i64(r, row, 9);
    v->content = NULL;
    v->content_len = 0;
    if (content_col >= 0 && v->existed && !v->redacted && !PQgetisnull(r, row, content_col)) {
        v->content = PQgetvalue(r, row, content_col);
        v->content_len = (size_t)PQgetlength(r, row, content_col);
    } else if (content_col >= 0 && v->existed && !v->redacted) {
        v->content = "";
    }
}

/* One statement of a reader or (in the writer's transaction) the writer;
 * its rows in t->res. */
static enum md_err exec_one(struct pg_txn *t, enum pst id, const struct md_pg_params *p)
{
    if (!t->write)
        return read_exec(t, id, p);
    enum md_err e = q_send(t, id, p);
    return e ? e : q_flush(t, id);
}

static enum md_err each_version(struct pg_txn *t, int content_col, md_version_cb cb, void *ctx)
{
    PGresult *r = t->res;
    t->res = NULL; /* kept while cb runs: cb must not call the txn */
    for (int i = 0; r && i < PQntuples(r); i++) {
        struct md_version v;
        version_of(r, i, &v, content_col);
        if (cb(ctx, &v))
            break;
    }
    PQclear(r);
    return MD_OK;
}

static enum md_err pg_history(struct md_txn *base, const char *tenant, const char *path, size_t len,
                              int64_t below, size_t limit, md_version_cb cb, void *ctx)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_bytes(&p, path, len);
    md_pg_i64(&p, below > 0 ? below : INT64_MAX);
    md_pg_i64(&p, (int64_t)limit);
    enum md_err e = exec_one(t, P_HISTORY, &p);
    return e ? e : each_version(t, -1, cb, ctx);
}

static enum md_err pg_version_get(struct md_txn *base, const char *tenant, int64_t version,
                                  int want_content, struct md_version *v)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_i64(&p, version);
    enum md_err e = exec_one(t, P_VERSION_GET, &p);
    if (e)
        return e;
    if (!t->res || PQntuples(t->res) != 1)
        return MD_ENOENT;
    version_of(t->res, 0, v, want_content ? 10 : -1);
    return MD_OK; /* borrowed from t->res until the next call */
}

static enum md_err pg_state_before(struct md_txn *base, const char *tenant, const char *dir,
                                   size_t len, int64_t *before, md_version_cb cb, void *ctx)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_i64(&p, *before);
    enum md_err e = exec_one(t, P_SNAP_BEFORE, &p);
    if (e)
        return e;
    if (t->res && PQntuples(t->res) == 1 &&
        md_pg_r_i64(t->res, 0, 0) + md_pg_r_i64(t->res, 0, 1) > *before)
        *before = md_pg_r_i64(t->res, 0, 0);
    e = bounds(&t->arr[0], &t->arr[1], dir, len);
    if (e)
        return e;
    p = (struct md_pg_params){.n = 0};
    md_pg_text(&p, tenant);
    md_pg_i64(&p, *before);
    md_pg_bytes(&p, dir, len);
    md_pg_bytes(&p, t->arr[0].data, t->arr[0].len);
    md_pg_bytes(&p, t->arr[1].data, t->arr[1].len);
    e = exec_one(t, P_STATE_BEFORE, &p);
    return e ? e : each_version(t, 10, cb, ctx);
}

static enum md_err pg_changes(struct md_txn *base, const char *tenant, int64_t after, size_t limit,
                              md_change_cb cb, void *ctx, int64_t *oldest, int64_t *last_seq)
{
    struct pg_txn *t = (struct pg_txn *)base;
    *oldest = *last_seq = 0;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    enum md_err e = exec_one(t, P_CHANGES_META, &p);
    if (e || !t->res || PQntuples(t->res) != 1)
        return e; /* no tenant: nothing ever */
    int64_t id = md_pg_r_i64(t->res, 0, 0);
    *oldest = md_pg_r_i64(t->res, 0, 1);
    *last_seq = md_pg_r_i64(t->res, 0, 2);
    p = (struct md_pg_params){.n = 0};
    md_pg_i64(&p, id);
    md_pg_i64(&p, after);
    md_pg_i64(&p, (int64_t)limit);
    e = exec_one(t, P_CHANGES, &p);
    if (e)
        return e;
    PGresult *r = t->res;
    t->res = NULL;
    for (int i = 0; r && i < PQntuples(r); i++) {
        struct md_change c = {
            .seq = md_pg_r_i64(r, i, 0),
            .version = md_pg_r_i64(r, i, 1),
            .versions = md_pg_r_i64(r, i, 2),
            .history_bytes = md_pg_r_i64(r, i, 3),
            .time_ms = md_pg_r_i64(r, i, 4),
            .command = PQgetvalue(r, i, 5),
            .paths = PQgetvalue(r, i, 6),
            .paths_len = (size_t)PQgetlength(r, i, 6),
            .actor = PQgetisnull(r, i, 7) ? NULL : PQgetvalue(r, i, 7),
            .actor_len = PQgetisnull(r, i, 7) ? 0 : (size_t)PQgetlength(r, i, 7),
        };
        if (cb(ctx, &c))
            break;
    }
    PQclear(r);
    return MD_OK;
}

static enum md_err pg_redact(struct md_txn *base, const char *tenant, int64_t version)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct md_version v;
    enum md_err e = pg_version_get(base, tenant, version, 0, &v);
    if (e)
        return e;
    char *path = strndup(v.path, v.path_len);
    if (!path)
        return MD_ENOMEM;
    size_t path_len = v.path_len;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_i64(&p, version);
    e = q_send(t, P_REDACT, &p);
    if (!e) {
        p = (struct md_pg_params){.n = 0};
        md_pg_text(&p, tenant);
        md_pg_bytes(&p, path, path_len);
        md_pg_text(&p, MD_HISTORY_SCRUBBED_APPLIED);
        md_pg_text(&p, MD_HISTORY_SCRUBBED_REFUSED);
        e = q_send(t, P_IDEM_SCRUB, &p);
    }
    if (!e)
        e = q_flush(t, P_COUNT);
    free(path);
    if (!e)
        t->vacuum = t->vacuum > VACUUM_REDACTED ? t->vacuum : VACUUM_REDACTED;
    return e;
}

/* ---- pruning ---- */

struct pg_pruner {
    struct pg_txn *t;
    unsigned keep;
    struct md_pruned deleted;
    enum md_err err;
};

/* One statement with its rows in t->res (the prune transaction's). */
static enum md_err prune_exec(struct pg_txn *t, enum pst id, const struct md_pg_params *p)
{
    enum md_err e = q_send(t, id, p);
    return e ? e : q_flush(t, id);
}

/* Queue the pruning of one path by count (its rows are counted at the
 * next flush: t->counted). */
static void pg_prune_path(struct pg_pruner *pr, int64_t tenant, const char *path, size_t len)
{
    if (pr->err)
        return;
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, tenant);
    md_pg_bytes(&p, path, len);
    md_pg_i64(&p, pr->keep);
    pr->err = q_send(pr->t, P_PRUNE_PATH, &p);
}

static void pg_prune_touched(void *ctx, int64_t tenant, const char *path, size_t len, int subtree)
{
    struct pg_pruner *pr = ctx;
    struct pg_txn *t = pr->t;
    if (pr->err)
        return;
    if (!subtree) {
        pg_prune_path(pr, tenant, path, len);
        return;
    }
    if ((pr->err = bounds(&t->arr[0], &t->arr[1], path, len)) != MD_OK)
        return;
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, tenant);
    md_pg_bytes(&p, t->arr[0].data, t->arr[0].len);
    md_pg_bytes(&p, t->arr[1].data, t->arr[1].len);
    md_pg_i64(&p, pr->keep);
    if ((pr->err = prune_exec(t, P_PRUNE_SUBTREE_PATHS, &p)) != MD_OK)
        return;
    PGresult *r = t->res;
    t->res = NULL;
    for (int i = 0; r && i < PQntuples(r) && !pr->err; i++)
        pg_prune_path(pr, tenant, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0));
    PQclear(r);
}

/* Delete a tenant's oldest rows (scan_id: number, time) older than
 * `cutoff`, through del_id. */
static enum md_err pg_prune_old(struct pg_txn *t, int64_t tenant, enum pst scan_id, enum pst del_id,
                                int64_t cutoff, size_t *deleted)
{
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, tenant);
    md_pg_i64(&p, 256);
    enum md_err e = prune_exec(t, scan_id, &p);
    if (e)
        return e;
    int64_t through = 0;
    for (int i = 0; t->res && i < PQntuples(t->res) && md_pg_r_i64(t->res, i, 1) < cutoff; i++) {
        through = md_pg_r_i64(t->res, i, 0);
        (*deleted)++;
    }
    if (!through)
        return MD_OK;
    p = (struct md_pg_params){.n = 0};
    md_pg_i64(&p, tenant);
    md_pg_i64(&p, through);
    e = q_send(t, del_id, &p);
    return e ? e : q_flush(t, P_COUNT);
}

static enum md_err pg_prune(struct md_txn *base, int64_t now_ms, size_t budget,
                            struct md_pruned *deleted)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct pg_store *s = store_of(t);
    const struct md_retention *r = &s->cfg.history;
    struct pg_pruner pr = {t, history_on(t) ? r->versions : 0, {0}, MD_OK};
    /* The paths' statements go with the next flush, their rows counted. */
    t->counted_id = P_PRUNE_PATH;
    t->counted = 0;
    md_hist_take_touched(t->hist, budget / 8 + 1, pg_prune_touched, &pr);
    enum md_err e = pr.err;
    int64_t versions_cutoff = history_on(t) ? now_ms - (int64_t)r->days * 24 * 3600 * 1000 : now_ms;
    int64_t changes_cutoff = now_ms - md_history_changes_ms(r);
    for (int i = 0; !e && i < 8 && md_pruned_total(&pr.deleted) + t->counted < budget; i++) {
        struct md_pg_params p = {.n = 0};
        md_pg_i64(&p, s->prune_next_tenant);
        e = prune_exec(t, P_TENANT_NEXT, &p);
        if (e)
            break;
        if (!t->res || PQntuples(t->res) != 1) {
            s->prune_next_tenant = 0;
            break;
        }
        int64_t tenant = md_pg_r_i64(t->res, 0, 0);
        s->prune_next_tenant = tenant + 1;
        e = pg_prune_old(t, tenant, P_PRUNE_AGE_SCAN, P_PRUNE_AGE_DEL, versions_cutoff,
                         &pr.deleted.versions);
        if (!e)
            e = pg_prune_old(t, tenant, P_PRUNE_CHANGES_SCAN, P_PRUNE_CHANGES_DEL, changes_cutoff,
                             &pr.deleted.changes);
    }
    if (!e && t->nq)
        e = q_flush(t, P_COUNT);
    pr.deleted.versions += t->counted;
    t->counted_id = P_COUNT;
    size_t total = md_pruned_total(&pr.deleted);
    if (!e && total < budget) {
        struct md_pg_params p = {.n = 0};
        md_pg_i64(&p, now_ms - MD_IDEMPOTENCY_MS);
        md_pg_i64(&p, (int64_t)(budget - total));
        e = prune_exec(t, P_PRUNE_IDEM, &p);
        if (!e && t->res)
            pr.deleted.idempotency += (size_t)PQntuples(t->res);
    }
    *deleted = pr.deleted;
    deleted->more = md_hist_prune_more(t->hist, deleted, budget);
    return e;
}

static enum md_err pg_watch(struct md_store *base, md_watch_cb cb, void *ctx)
{
    struct pg_store *s = (struct pg_store *)base;
    md_pg_watch_stop(s->watch);
    s->watch = cb ? md_pg_watch_start(s->uri, cb, ctx) : NULL;
    return !cb || s->watch ? MD_OK : MD_ENOMEM;
}

/* ---- quotas ---- */

static int64_t r_i64_or(const PGresult *r, int row, int col, int64_t none)
{
    return PQgetisnull(r, row, col) ? none : md_pg_r_i64(r, row, col);
}

/* An optimistic batch's usage of `tenant`, from the prefetched root and
 * what the batch's queued writes changed; 0 when it cannot tell. */
static int pre_usage(struct pg_txn *t, const char *tenant, struct md_usage *u)
{
    const struct pre_ent *root = pre_find(t, tenant, MD_ROOT, MD_ROOT_LEN);
    if (!root || root->stale || root->files_unknown || (root->id && !root->found))
        return 0;
    if (!root->id)
        return 1; /* no data (a tenant made since is stale) */
    u->bytes = root->size + md_dirsizes_pending(t->sizes, root->id, MD_ROOT, MD_ROOT_LEN);
    u->files = root->files + root->files_delta;
    u->max_bytes = root->max_bytes;
    u->max_files = root->max_files;
    return 1;
}

static enum md_err pg_usage(struct md_txn *base, const char *tenant, struct md_usage *u)
{
    struct pg_txn *t = (struct pg_txn *)base;
    *u = (struct md_usage){0, 0, -1, -1};
    /* An optimistic batch's writes are not sent yet: from the prefetch,
     * or else the batch runs the exact way. */
    if (t->write && t->opt)
        return pre_usage(t, tenant, u) ? MD_OK : give_up(t);
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    enum md_err e = exec_one(t, P_USAGE, &p);
    if (e || PQntuples(t->res) != 1)
        return e; /* no row: a tenant without data */
    int64_t id = md_pg_r_i64(t->res, 0, 0);
    u->files = md_pg_r_i64(t->res, 0, 1);
    u->max_bytes = r_i64_or(t->res, 0, 2, -1);
    u->max_files = r_i64_or(t->res, 0, 3, -1);
    u->bytes = r_i64_or(t->res, 0, 4, 0);
    if (t->write)
        u->bytes += md_dirsizes_pending(t->sizes, id, MD_ROOT, MD_ROOT_LEN);
    return MD_OK;
}

static void param_or_null(struct md_pg_params *p, int64_t v)
{
    if (v < 0)
        md_pg_null(p);
    else
        md_pg_i64(p, v);
}

static enum md_err pg_set_limits(struct md_txn *base, const char *tenant, int64_t max_bytes,
                                 int64_t max_files)
{
    struct pg_txn *t = (struct pg_txn *)base;
    int64_t id = 0;
    /* Looked up again (a rare write): another instance may have erased
     * the tenant since this one cached its id. */
    md_tenant_cache_drop(t->c->tenants, tenant);
    enum md_err e = ensure_tenant(t, tenant, &id);
    if (e)
        return e;
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, id);
    param_or_null(&p, max_bytes);
    param_or_null(&p, max_files);
    return exec_one(t, P_LIMITS_SET, &p);
}

/* ---- tenant administration ---- */

static enum md_err pg_tenants(struct md_txn *base, const char *after, size_t limit, md_tenant_cb cb,
                              void *ctx)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, after);
    md_pg_i64(&p, (int64_t)limit);
    enum md_err e = exec_one(t, P_TENANTS_LIST, &p);
    if (e)
        return e;
    PGresult *r = t->res;
    t->res = NULL; /* kept while cb runs: cb must not call the txn */
    for (int i = 0; r && i < PQntuples(r); i++) {
        struct md_tenant_info ti = {
            .name = PQgetvalue(r, i, 0),
            .bytes = md_pg_r_i64(r, i, 1),
            .files = md_pg_r_i64(r, i, 2),
            .versions = md_pg_r_i64(r, i, 3),
            .last_write = r_i64_or(r, i, 4, -1),
        };
        if (cb(ctx, &ti))
            break;
    }
    PQclear(r);
    return MD_OK;
}

static enum md_err pg_snapshot_begin(struct md_store *base, struct md_txn **out)
{
    enum md_err e = pg_read_begin(base, out);
    if (e)
        return e;
    struct pg_txn *t = (struct pg_txn *)*out;
    e = read_exec(t, P_SNAPSHOT, NULL);
    if (e) {
        pg_txn_end(*out);
        *out = NULL;
        return e;
    }
    t->snapshot = 1;
    return MD_OK;
}

static enum md_err pg_scan(struct md_txn *base, const char *tenant, const char *after,
                           size_t after_len, size_t max_rows, int64_t max_bytes, md_scan_cb cb,
                           void *ctx, int *more)
{
    struct pg_txn *t = (struct pg_txn *)base;
    *more = 0;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_bytes(&p, after, after_len);
    md_pg_i64(&p, (int64_t)max_rows + 1);
    md_pg_i64(&p, max_bytes);
    enum md_err e = q_send(t, P_SCAN, &p);
    if (!e)
        e = q_flush(t, P_SCAN);
    if (e)
        return e;
    PGresult *r = t->res;
    t->res = NULL;
    int n = PQntuples(r);
    /* More: a row over max_rows, or rows the byte budget left out. */
    *more = n > (int)max_rows || (n > 0 && md_pg_r_i64(r, 0, 4) > n);
    for (int i = 0; i < n && i < (int)max_rows; i++) {
        struct md_scan_entry en = {
            .path = PQgetvalue(r, i, 0),
            .len = (size_t)PQgetlength(r, i, 0),
            .kind = md_pg_r_i16(r, i, 1) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE,
            .mtime_ms = md_pg_r_i64(r, i, 2),
        };
        if (en.kind == MD_KIND_FILE) {
            int null = PQgetisnull(r, i, 3);
            en.content = null ? "" : PQgetvalue(r, i, 3);
            en.content_len = null ? 0 : (size_t)PQgetlength(r, i, 3);
        }
        if (cb(ctx, &en))
            break;
    }
    PQclear(r);
    return MD_OK;
}

static enum md_err pg_erase(struct md_txn *base, const char *tenant, struct md_erased *out)
{
    struct pg_txn *t = (struct pg_txn *)base;
    *out = (struct md_erased){0, 0, 0, 0, 0};
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    /* The tenant's API keys (api_keys.tenant is its name) are deleted by
     * this statement too, when the tenant has a row. */
    enum md_err e = exec_one(t, P_ERASE, &p);
    /* Its id is gone: not to be used again by this transaction. */
    md_tenant_cache_clear(t->c->tenants);
    if (e)
        return e;
    if (!t->res || PQntuples(t->res) != 1)
        return MD_EDB;
    if (md_pg_r_i64(t->res, 0, 0) == 0)
        return MD_ENOENT;
    out->entries = md_pg_r_i64(t->res, 0, 1);
    out->versions = md_pg_r_i64(t->res, 0, 2);
    out->changes = md_pg_r_i64(t->res, 0, 3);
    out->idempotency = md_pg_r_i64(t->res, 0, 4);
    out->api_keys = md_pg_r_i64(t->res, 0, 5);
    t->vacuum = VACUUM_ERASED; /* after the commit (vacuum_versions) */
    /* Other instances forget their cached tenant ids when they hear of it
     * (store_pg_watch.c); ':' is in no tenant name. */
    char said[MD_PG_ERASED_LEN + MD_TENANT_MAX + 1];
    snprintf(said, sizeof said, "%s%s", MD_PG_ERASED, tenant);
    return notify_add(t, said);
}

/* ---- full-text search (md_search.h) ---- */

/* `s` as an ILIKE pattern matching any text that contains it. */
static enum md_err like_pattern(struct md_buf *b, const char *s, size_t n)
{
    md_buf_reset(b);
    enum md_err e = md_buf_putc(b, '%');
    for (size_t i = 0; i < n && !e; i++) {
        if (s[i] == '%' || s[i] == '_' || s[i] == '\\')
            e = md_buf_putc(b, '\\');
        if (!e)
            e = md_buf_putc(b, s[i]);
    }
    if (!e)
        e = md_buf_putc(b, '%');
    return e;
}

/* `s` as a regular expression matching it where a word begins (md_text.h,
 * md_text_find_word_ci): after the start or a separator unless `s` starts
 * with one, each ASCII letter as [xX] (ASCII letters without case, other
 * characters exactly: `~*` would fold non-ASCII letters too), every other
 * ASCII character escaped. */
static enum md_err word_pattern(struct md_buf *b, const char *s, size_t n)
{
    md_buf_reset(b);
    enum md_err e =
        md_text_is_sep(s, n) ? MD_OK : md_buf_puts(b, "(^|[^0-9A-Za-z\\u00a0-\\U0010ffff])");
    for (size_t i = 0; i < n && !e; i++) {
        unsigned char c = (unsigned char)s[i];
        unsigned char low = c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
        if (low >= 'a' && low <= 'z')
            e = md_buf_printf(b, "[%c%c]", low, low - 'a' + 'A');
        else if (c < 0x80 && md_text_is_sep(s + i, 1))
            e = md_buf_printf(b, "\\%c", c);
        else
            e = md_buf_putc(b, s[i]);
    }
    return e;
}

/* The tsquery of the terms for P_SEARCH into `b` (empty when no word of
 * the terms has MD_SEARCH_SHORT_TERM characters: the caller scans
 * instead): each such word (md_search_next_word) as memoryd_words keeps
 * it (ASCII letters in lower case, its first MD_PG_WORD_CHARS
 * characters), the last of each term as a prefix, the others whole (a
 * cut word as a prefix too), all ANDed; or '#all', a file too large for
 * its words. A word holds no quote nor backslash: they separate words. */
#define MD_PG_WORD_CHARS 100
static enum md_err ts_query(struct md_buf *b, const struct md_search_terms *q)
{
    md_buf_reset(b);
    enum md_err e = MD_OK;
    for (size_t i = 0; i < q->n && !e; i++) {
        const char *s = q->terms[i];
        size_t n = q->lens[i], at = 0, w, len;
        while (!e && md_search_next_word(s, n, &at, &w, &len)) {
            size_t chars = 0, k = 0;
            for (; k < len && chars <= MD_PG_WORD_CHARS; k++)
                chars += ((unsigned char)s[w + k] & 0xC0) != 0x80;
            if (chars < MD_SEARCH_SHORT_TERM)
                continue;
            int cut = chars > MD_PG_WORD_CHARS;
            if (cut)
                len = k - 1; /* the first byte of character 101 was counted */
            e = md_buf_puts(b, b->len ? " & '" : "(('");
            for (size_t j = 0; j < len && !e; j++) {
                unsigned char c = (unsigned char)s[w + j];
                e = md_buf_putc(b, (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
            }
            if (!e)
                e = md_buf_puts(b, (w + len >= n || cut) ? "':*" : "'");
        }
    }
    if (!e && b->len)
        e = md_buf_puts(b, ") | '#all')");
    return e;
}

/* Search candidates ranked in memoryd: at most this many files and bytes
 * of content; a search with more is ranked by PostgreSQL (P_SEARCH). */
#define PG_RANK_FILES 500
#define PG_RANK_BYTES ((int64_t)8 << 20)

struct pg_hit {
    int64_t score;
    const char *path, *content;
    size_t path_len, len;
};

/* Most occurrences first, then path (bytes: paths collate "C"). */
static int hit_order(const void *a, const void *b)
{
    const struct pg_hit *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    size_t n = x->path_len < y->path_len ? x->path_len : y->path_len;
    int c = memcmp(x->path, y->path, n);
    return c ? c : (x->path_len > y->path_len) - (x->path_len < y->path_len);
}

/* The page of q among the candidates of r (every one of them), checked
 * and ranked by md_search_score as SQLite's search does; 1 when r did not
 * hold them all (nothing done), else 0 or an error. */
static int rank_here(PGresult *r, const struct md_search_terms *q, md_search_cb cb, void *ctx,
                     enum md_err *e)
{
    int rows = PQntuples(r);
    int64_t bytes = 0;
    for (int i = 0; i < rows; i++)
        bytes += PQgetlength(r, i, 1);
    if (rows > PG_RANK_FILES || bytes >= PG_RANK_BYTES)
        return 1;
    struct md_buf list;
    md_buf_init(&list, MD_SEARCH_Q_MAX + MD_SEARCH_TERMS_MAX);
    *e = MD_OK;
    for (size_t i = 0; i < q->n && !*e; i++) {
        *e = i ? md_buf_putc(&list, '\n') : MD_OK;
        if (!*e)
            *e = md_buf_append(&list, q->terms[i], q->lens[i]);
    }
    struct pg_hit *hits = *e ? NULL : calloc((size_t)rows + 1, sizeof *hits);
    if (!*e && !hits)
        *e = MD_ENOMEM;
    size_t n = 0;
    for (int i = 0; !*e && i < rows; i++) {
        struct pg_hit h = {.path = PQgetvalue(r, i, 0),
                           .path_len = (size_t)PQgetlength(r, i, 0),
                           .content = PQgetvalue(r, i, 1),
                           .len = (size_t)PQgetlength(r, i, 1)};
        h.score = md_search_score(h.content, h.len, list.data ? list.data : "", list.len);
        if (h.score >= 0)
            hits[n++] = h;
    }
    if (!*e) {
        qsort(hits, n, sizeof *hits, hit_order);
        for (size_t i = q->offset; i < n && i < q->offset + q->limit; i++)
            if (cb(ctx, hits[i].path, hits[i].path_len, hits[i].content, hits[i].len))
                break;
    }
    free(hits);
    md_buf_free(&list);
    return 0;
}

static enum md_err pg_search(struct md_txn *base, const char *tenant,
                             const struct md_search_terms *q, md_search_cb cb, void *ctx)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct pg_store *s = (struct pg_store *)base->store;
    if (s->search_off)
        return MD_ENOENT;
    size_t longest = 0;
    for (size_t i = 1; i < q->n; i++)
        if (q->lens[i] > q->lens[longest])
            longest = i;
    struct md_buf lo, hi, first, pat, all;
    md_buf_init(&lo, q->dir_len + 2);
    md_buf_init(&hi, q->dir_len + 2);
    md_buf_init(&first, 2 * MD_SEARCH_Q_MAX + 4);
    md_buf_init(&pat, 4 * MD_SEARCH_Q_MAX + 64); /* word_pattern: [xX] per letter */
    md_buf_init(&all, (size_t)4 * MD_SEARCH_Q_MAX * MD_SEARCH_TERMS_MAX);
    enum md_err e = md_buf_append(&lo, q->dir, q->dir_len);
    if (!e)
        e = md_buf_putc(&lo, '/');
    if (!e)
        e = md_buf_append(&hi, q->dir, q->dir_len);
    if (!e)
        e = md_buf_putc(&hi, '0');
    if (!e)
        e = ts_query(&first, q);
    int indexed = first.len > 0;
    if (!e && !indexed)
        e = like_pattern(&first, q->terms[longest], q->lens[longest]);
    if (!e)
        e = md_pg_arr_begin(&all, OID_TEXT, q->n);
    for (size_t i = 0; i < q->n && !e; i++) {
        e = word_pattern(&pat, q->terms[i], q->lens[i]);
        if (!e)
            e = md_pg_arr_elem(&all, pat.data, pat.len);
    }
    int done = 0;
    if (!e && indexed) { /* the candidates ranked here, if there are not too many */
        struct md_pg_params p = {.n = 0};
        md_pg_text(&p, tenant);
        md_pg_bytes(&p, q->dir, q->dir_len);
        md_pg_bytes(&p, lo.data, lo.len);
        md_pg_bytes(&p, hi.data, hi.len);
        md_pg_bytes(&p, first.data, first.len);
        md_pg_i64(&p, PG_RANK_FILES + 1);
        md_pg_i64(&p, PG_RANK_BYTES);
        e = exec_one(t, P_SEARCH_CAND, &p);
        if (!e) {
            PGresult *r = t->res;
            t->res = NULL; /* kept while cb runs: cb must not call the txn */
            done = !rank_here(r, q, cb, ctx, &e);
            PQclear(r);
        }
    }
    if (!e && !done) {
        struct md_pg_params p = {.n = 0};
        md_pg_text(&p, tenant);
        md_pg_bytes(&p, q->dir, q->dir_len);
        md_pg_bytes(&p, lo.data, lo.len);
        md_pg_bytes(&p, hi.data, hi.len);
        md_pg_bytes(&p, first.data, first.len);
        md_pg_bytes(&p, all.data, all.len);
        md_pg_i64(&p, (int64_t)q->limit);
        md_pg_i64(&p, (int64_t)q->offset);
        e = exec_one(t, indexed ? P_SEARCH : P_SEARCH_SCAN, &p);
    }
    if (!e) {
        PGresult *r = t->res;
        t->res = NULL; /* kept while cb runs: cb must not call the txn */
        for (int i = 0; r && i < PQntuples(r); i++)
            if (cb(ctx, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0), PQgetvalue(r, i, 1),
                   (size_t)PQgetlength(r, i, 1)))
                break;
        PQclear(r);
    }
    md_buf_free(&lo);
    md_buf_free(&hi);
    md_buf_free(&first);
    md_buf_free(&pat);
    md_buf_free(&all);
    return e;
}

/* ---- optimistic batches (md_txn_batch_begin with `defer`, md_txn_flush) ---- */

/* Room for `n` more prefetch entries. */
static enum md_err pre_reserve(struct pg_txn *t, size_t n)
{
    if (t->cappe - t->npe >= n)
        return MD_OK;
    size_t cap = t->cappe ? t->cappe : 256;
    while (cap - t->npe < n)
        cap *= 2;
    struct pre_ent *pe = realloc(t->pe, cap * sizeof *pe);
    if (!pe)
        return MD_ENOMEM;
    t->pe = pe;
    t->cappe = cap;
    return MD_OK;
}

/* Read the rows of every path of `w` and of each one's ancestors, in the
 * round trip that takes the tenant locks; then the batch is optimistic. */
static enum md_err prefetch(struct pg_txn *t, const struct md_batch_path *w, size_t n)
{
    t->npe = 0;
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += 1 + (size_t)md_path_depth(w[i].path, w[i].len);
    enum md_err e = pre_reserve(t, count);
    if (e)
        return e;
    /* Every path, and every ancestor of each; sorted, once each. */
    for (size_t i = 0; i < n; i++) {
        for (size_t plen = w[i].len;;) {
            t->pe[t->npe++] = (struct pre_ent){.tenant = w[i].tenant,
                                               .path = w[i].path,
                                               .len = plen,
                                               .want = plen == w[i].len && w[i].content};
            if (plen <= MD_ROOT_LEN)
                break;
            plen = md_path_parent_len(w[i].path, plen);
        }
    }
    qsort(t->pe, t->npe, sizeof *t->pe, pre_ent_cmp);
    size_t k = 0;
    for (size_t i = 0; i < t->npe; i++) {
        if (k > 0 && pre_ent_cmp(&t->pe[k - 1], &t->pe[i]) == 0)
            t->pe[k - 1].want |= t->pe[i].want;
        else
            t->pe[k++] = t->pe[i];
    }
    t->npe = k;
    e = md_pg_arr_begin(&t->arr[0], OID_TEXT, k);
    if (!e)
        e = md_pg_arr_begin(&t->arr[1], OID_TEXT, k);
    if (!e)
        e = md_pg_arr_begin(&t->arr[2], OID_INT2, k);
    for (size_t i = 0; i < k && !e; i++) {
        e = md_pg_arr_elem(&t->arr[0], t->pe[i].tenant, strlen(t->pe[i].tenant));
        if (!e)
            e = md_pg_arr_elem(&t->arr[1], t->pe[i].path, t->pe[i].len);
        if (!e)
            e = md_pg_arr_i16(&t->arr[2], t->pe[i].want);
    }
    struct md_pg_params p = {.n = 0};
    for (int i = 0; i < 3; i++)
        md_pg_bytes(&p, t->arr[i].data, t->arr[i].len);
    md_pg_i64(&p, PREFETCH_CONTENT_MAX);
    if (!e)
        e = q_send(t, P_PREFETCH, &p);
    if (!e)
        e = q_flush(t, P_PREFETCH); /* with BEGIN and the tenant locks */
    if (e) {
        t->npe = 0;
        return e;
    }
    t->pre = t->res;
    t->res = NULL;
    const PGresult *r = t->pre;
    for (int row = 0; r && row < PQntuples(r); row++) {
        int64_t ord = md_pg_r_i64(r, row, 0);
        if (ord < 1 || (uint64_t)ord > k)
            continue;
        struct pre_ent *pe = &t->pe[ord - 1];
        pe->id = md_pg_r_i64(r, row, 1);
        if (md_hist_load(t->hist, pe->id, md_pg_r_i64(r, row, 7), md_pg_r_i64(r, row, 8)) != 0)
            return MD_ENOMEM;
        pe->files = md_pg_r_i64(r, row, 9);
        pe->max_bytes = r_i64_or(r, row, 10, -1);
        pe->max_files = r_i64_or(r, row, 11, -1);
        if (PQgetisnull(r, row, 2))
            continue;
        pe->found = 1;
        pe->kind = md_pg_r_i16(r, row, 2) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
        pe->size = md_pg_r_i64(r, row, 3);
        if (PQgetlength(r, row, 6) == MD_SHA256_LEN)
            pe->sha256 = (const unsigned char *)PQgetvalue(r, row, 6);
        int omitted = !PQgetisnull(r, row, 5) && PQgetvalue(r, row, 5)[0];
        if (pe->want && pe->kind == MD_KIND_FILE && !omitted) {
            pe->has_content = 1;
            pe->content = PQgetisnull(r, row, 4) ? "" : PQgetvalue(r, row, 4);
            pe->content_len = PQgetisnull(r, row, 4) ? 0 : (size_t)PQgetlength(r, row, 4);
        }
    }
    t->opt = 1;
    t->abandoned = MD_OK;
    t->cmd_base = t->nq;
    return MD_OK;
}

/* The batch's tenants locked (queued: they go with the first round trip);
 * with b->defer, its rows read at once and the batch optimistic (a failure
 * of the read gives it up: MD_EREDO, but for a lost connection). */
static enum md_err pg_batch_begin(struct md_txn *base, const struct md_batch *b)
{
    struct pg_txn *t = (struct pg_txn *)base;
    enum md_err e = lock_tenants(t, b->tenants, b->ntenants);
    if (e || !b->defer)
        return e;
    e = prefetch(t, b->paths, b->npaths);
    return e == MD_OK || e == MD_EUNAVAIL ? e : MD_EREDO;
}

/* Send the queued writes of an optimistic batch (one round trip) and end
 * the optimistic mode; a failure gives the attempt up (MD_EREDO), but for
 * a lost connection. */
static enum md_err pg_flush(struct md_txn *base)
{
    struct pg_txn *t = (struct pg_txn *)base;
    if (!t->opt)
        return MD_OK;
    enum md_err e = hist_send(t); /* the versions first: before the writes go */
    if (!e)
        e = t->nq || t->bulk_rows ? q_flush(t, P_COUNT) : MD_OK;
    t->opt = 0;
    return e == MD_OK || e == MD_EUNAVAIL ? e : MD_EREDO;
}

static void pg_wire(struct md_store *base, struct md_txn_stats *st)
{
    const struct pg_store *s = (const struct pg_store *)base;
    *st = s->writer ? s->writer->txn.wire : (struct md_txn_stats){0, 0};
}

/* ---- the engine ---- */

#define PG_CAPS                                                                                    \
    (MD_STORE_CAP_VIEW_ASYNC | MD_STORE_CAP_PRUNE_APART | MD_STORE_CAP_DEFER |                     \
     MD_STORE_CAP_ROUND_TRIPS | MD_STORE_CAP_LOAD)

static const struct md_store_ops pg_ops = {
    .version = MD_STORE_VERSION,
    .caps = PG_CAPS,
    .name = "postgres",
    .close = pg_close,
    .read_begin = pg_read_begin,
    .write_begin = pg_write_begin,
    .txn_end = pg_txn_end,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .batch_begin = pg_batch_begin,
    .flush = pg_flush,
    .savepoint = pg_savepoint,
    .release = pg_release,
    .view = pg_view,
    .locate = pg_locate,
    .put_file = pg_put_file,
    .remove_tree = pg_remove_tree,
    .move_tree = pg_move_tree,
    .get = pg_get,
    .list = pg_list,
    .ping = pg_ping,
    .stats = pg_stats,
    .wire = pg_wire,
    .cmd_begin = pg_cmd_begin,
    .cmd_end = pg_cmd_end,
    .idem_get = pg_idem_get,
    .idem_put = pg_idem_put,
    .history = pg_history,
    .version_get = pg_version_get,
    .state_before = pg_state_before,
    .changes = pg_changes,
    .redact = pg_redact,
    .prune = pg_prune,
    .prune_begin = pg_prune_begin,
    .db_size = pg_db_size,
    .watch = pg_watch,
    .usage = pg_usage,
    .tenants = pg_tenants,
    .erase = pg_erase,
    .set_limits = pg_set_limits,
    .snapshot_begin = pg_snapshot_begin,
    .scan = pg_scan,
    .search = pg_search,
    .view_async = pg_view_async,
};

/* A connection of the reads thread: a reader's. */
static int reads_setup(PGconn *pq, void *ctx, char *why, size_t why_len)
{
    return conn_setup(ctx, pq, 0, why, why_len);
}

static enum md_err pg_open(const struct md_store_config *cfg, const void *own,
                           struct md_store **out, char *why, size_t why_len)
{
    if (cfg->read_only) {
        snprintf(why, why_len, "a PostgreSQL store is not opened read-only");
        return MD_EINVAL;
    }
    struct pg_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, why_len, "out of memory");
        return MD_ENOMEM;
    }
    s->base.ops = &pg_ops;
    s->cfg = *cfg;
    s->uri = strdup(cfg->db);
    s->cfg.db = s->uri;
    if (own)
        s->own = *(const struct md_pg_config *)own;
    if (s->own.readers == 0)
        s->own.readers = 1;
    pthread_mutex_init(&s->pool_mu, NULL);
    pthread_mutex_init(&s->write_mu, NULL);
    pthread_mutex_init(&s->prune_mu, NULL);
    s->touched = md_touched_new();
    enum md_err e = MD_EUNAVAIL;
    if (!s->touched) {
        snprintf(why, why_len, "out of memory");
        e = MD_ENOMEM;
    }
    PGconn *m = s->uri && s->touched ? md_pg_connect(s->uri, why, why_len) : NULL;
    if (m) {
        e = md_pg_migrate(m, why, why_len) == 0 ? MD_OK : MD_EDB;
        if (!e && md_pg_search_setting(m, cfg->search, &s->search_off, why, why_len))
            e = MD_EDB;
        PQfinish(m);
    }
    if (!e) {
        s->writer = conn_open(s, 1, why, why_len);
        e = s->writer ? MD_OK : MD_EUNAVAIL;
    }
    if (!e) {
        s->reads = md_pg_reads_start(s->uri, READS_CONNS, reads_setup, s);
        if (!s->reads) {
            snprintf(why, why_len, "cannot start the reads thread");
            e = MD_ENOMEM;
        }
    }
    if (e) {
        pg_close(&s->base);
        return e;
    }
    *out = &s->base;
    return MD_OK;
}

/* A PostgreSQL connection URI: "postgresql://..." or "postgres://...". */
static int pg_claims(const char *db)
{
    return db && (strncmp(db, "postgresql://", 13) == 0 || strncmp(db, "postgres://", 11) == 0);
}

/* A URI's password (user:PASSWORD@, or password=... among its parameters)
 * replaced by "***". */
static const char *pg_redact_uri(const char *db, char *buf, size_t len)
{
    snprintf(buf, len, "%s", db);
    if (!pg_claims(db))
        return buf;
    struct md_buf out;
    md_buf_init(&out, len > 0 ? len - 1 : 0);
    const char *p = strstr(db, "://") + 3;
    md_buf_append(&out, db, (size_t)(p - db));
    /* user:password@host */
    const char *end = p + strcspn(p, "/?#");
    const char *at = memchr(p, '@', (size_t)(end - p));
    const char *colon = at ? memchr(p, ':', (size_t)(at - p)) : NULL;
    if (colon) {
        md_buf_append(&out, p, (size_t)(colon - p) + 1);
        md_buf_puts(&out, "***");
        p = at;
    }
    /* ...?password=secret&... */
    while (*p) {
        const char *q = p;
        if ((*q == '?' || *q == '&') && strncasecmp(q + 1, "password=", 9) == 0) {
            md_buf_append(&out, q, 10);
            md_buf_puts(&out, "***");
            p = q + 10 + strcspn(q + 10, "&#");
            continue;
        }
        md_buf_putc(&out, *p++);
    }
    if (out.data)
        snprintf(buf, len, "%.*s", (int)out.len, out.data);
    md_buf_free(&out);
    return buf;
}

const struct md_engine md_engine_pg = {
    .name = "postgres",
    .caps = PG_CAPS,
    .claims = pg_claims,
    .open = pg_open,
    .redact = pg_redact_uri,
    .schema_version = md_store_pg_schema_version,
};
