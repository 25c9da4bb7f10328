/*
 * store_sqlite.c — the SQLite backend of md_store (see md_store.h).
 *
 * One database file in WAL mode. A single writer connection (used by the
 * writer thread only), a pool of reader connections (one per concurrent
 * reader, opened on demand) and a checkpointer thread with its own
 * connection, so checkpoints (but for the last few frames of a busy one,
 * see ckpt_catchup) never run on the write path.
 * Every statement is prepared once per connection and reused; every query
 * is bound to a tenant id.
 *
 * Healing: an error that says the file itself is in trouble (read-only,
 * I/O error, cannot open, corrupt) marks the connection broken. A broken
 * reader is closed instead of going back to the pool; a broken writer is
 * reopened at the next write transaction, so memoryd recovers by itself
 * once the cause is gone (space freed, permissions restored).
 */
#include "store/sqlite/md_store_sqlite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/md_clock.h"
#include "base/md_log.h"
#include "base/md_metrics.h"
#include "base/md_path.h"
#include "base/md_sha256.h"
#include "internal.h"

/* Generated from sql/sqlite/ by CMake (cmake/embed_sql.cmake). */
extern const char *const md_sqlite_migrations[];
extern const int md_sqlite_migrations_count;

/* The subtree of :path (the entry itself, and below it), files only, as
 * one row source for window functions: two searches of the key, since an
 * OR of both makes SQLite scan the tenant. */
#define FILES_AT_OR_BELOW(cols)                                                                    \
    "(SELECT " cols " FROM entries WHERE tenant = :tenant AND path = :path AND kind = 0"           \
    " UNION ALL SELECT " cols " FROM entries WHERE tenant = :tenant AND path > :lo"                \
    " AND path < :hi AND kind = 0)"
#define VERSION_COLS                                                                               \
    "version, path, existed, redacted, sha256, size, time, command, actor, pruned_through"

static const char *const stmt_sql[S_COUNT] = {
    [S_BEGIN] = "BEGIN",
    [S_BEGIN_IMMEDIATE] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_SAVEPOINT] = "SAVEPOINT cmd",
    [S_RELEASE] = "RELEASE cmd",
    [S_ROLLBACK_TO] = "ROLLBACK TO cmd",
    [S_TENANT_GET] = "SELECT id FROM tenants WHERE name = ?1",
    [S_TENANT_INSERT] = "INSERT INTO tenants (name, created_at) VALUES (?1, ?2)",
    [S_GET] = "SELECT kind, size, sha256, content FROM entries WHERE tenant = ?1 AND path = ?2",
    [S_GET_META] = "SELECT kind, size, sha256 FROM entries WHERE tenant = ?1 AND path = ?2",
    [S_LIST] = "SELECT path, kind, size FROM entries"
               " WHERE tenant = ?1 AND depth = ?2 AND path > ?3 AND path < ?4 ORDER BY path",
    [S_INSERT] = "INSERT INTO entries (tenant, path, depth, kind, size, mtime, content, sha256)"
                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [S_SET_CONTENT] = "UPDATE entries SET content = ?3, size = ?4, mtime = ?5, sha256 = ?6"
                      " WHERE tenant = ?1 AND path = ?2 AND kind = 0",
    /* A subtree is the entry itself and everything below it: two statements,
     * so that each is one search of the (tenant, path) key (an OR of both
     * makes SQLite scan the whole tenant). */
    [S_REMOVE_ONE] = "DELETE FROM entries WHERE tenant = :tenant AND path = :path",
    [S_REMOVE_BELOW] = "DELETE FROM entries WHERE tenant = :tenant AND path > :lo AND path < :hi",
    [S_MOVE_ONE] = "UPDATE entries SET path = :to || substr(path, :cut), depth = depth + :ddepth,"
                   " mtime = :mtime WHERE tenant = :tenant AND path = :path",
    [S_MOVE_BELOW] = "UPDATE entries SET path = :to || substr(path, :cut), depth = depth + :ddepth,"
                     " mtime = :mtime WHERE tenant = :tenant AND path > :lo AND path < :hi",
    [S_ADD_SIZE] = "UPDATE entries SET size = size + ?3 WHERE tenant = ?1 AND path = ?2",
    /* ---- history, the change feed, idempotency ---- */
    [S_COUNTERS_GET] = "SELECT last_version, last_seq FROM tenants WHERE id = ?1",
    [S_COUNTERS_SET] = "UPDATE tenants SET last_version = ?2, last_seq = ?3 WHERE id = ?1",
    [S_VER_ONE] = "INSERT INTO versions (tenant, version, path, existed, sha256, size, time,"
                  " command, actor, content) SELECT tenant, ?3, path, 1, sha256, size, ?4, ?5, ?6,"
                  " content FROM entries WHERE tenant = ?1 AND path = ?2 AND kind = 0",
    [S_VER_ABSENT] = "INSERT INTO versions (tenant, version, path, existed, time, command, actor)"
                     " VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6)",
    [S_VER_SUBTREE] =
        "INSERT INTO versions (tenant, version, path, existed, sha256, size, time, command, actor,"
        " content) SELECT :tenant, :base + row_number() OVER (ORDER BY path), path, 1, sha256,"
        " size, :time, :command, :actor, content FROM " FILES_AT_OR_BELOW(
            "path, sha256, size, content"),
    [S_VER_SUBTREE_NEW] =
        "INSERT INTO versions (tenant, version, path, existed, time, command, actor)"
        " SELECT :tenant, :base + row_number() OVER (ORDER BY path), :to || substr(path, :cut), 0,"
        " :time, :command, :actor FROM " FILES_AT_OR_BELOW("path"),
    [S_CHANGE_INSERT] = "INSERT INTO changes (tenant, seq, version, versions, history_bytes, time,"
                        " command, paths, actor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [S_IDEM_GET] = "SELECT fingerprint, err, body, time FROM idempotency"
                   " WHERE tenant = ?1 AND key = ?2",
    [S_IDEM_PUT] = "INSERT OR REPLACE INTO idempotency (tenant, key, fingerprint, err, body, path,"
                   " time) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [S_IDEM_SCRUB] = "UPDATE idempotency SET body = CASE WHEN err = 0 THEN ?3 ELSE ?4 END"
                     " WHERE tenant = ?1 AND path = ?2",
    [S_HISTORY] =
        "SELECT " VERSION_COLS " FROM versions"
        " WHERE tenant = ?1 AND path = ?2 AND version < ?3 ORDER BY version DESC LIMIT ?4",
    [S_VERSION_GET] = "SELECT " VERSION_COLS ", content FROM versions"
                      " WHERE tenant = ?1 AND version = ?2",
    /* The earliest version >= :before of each path (SQLite takes the bare
     * columns from the row of min()). */
    [S_STATE_BEFORE] =
        "SELECT min(version), path, existed, redacted, sha256, size, time, command, actor,"
        " pruned_through, content FROM versions WHERE tenant = :tenant AND path = :path"
        " AND version >= :before GROUP BY path UNION ALL"
        " SELECT min(version), path, existed, redacted, sha256, size, time, command, actor,"
        " pruned_through, content FROM versions WHERE tenant = :tenant AND path > :lo"
        " AND path < :hi AND version >= :before GROUP BY path ORDER BY 2",
    /* The write that recorded a version (newest first: stops at it). */
    [S_SNAP_BEFORE] = "SELECT version, versions FROM changes WHERE tenant = ?1"
                      " AND version IS NOT NULL AND version <= ?2 ORDER BY seq DESC LIMIT 1",
    [S_CHANGES] = "SELECT seq, version, versions, history_bytes, time, command, paths, actor"
                  " FROM changes WHERE tenant = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
    [S_CHANGES_OLDEST] = "SELECT min(seq) FROM changes WHERE tenant = ?1",
    [S_LAST_SEQ] = "SELECT last_seq FROM tenants WHERE name = ?1",
    [S_USAGE] = "SELECT files, max_bytes, max_files FROM tenants WHERE id = ?1",
    [S_LIMITS_SET] = "UPDATE tenants SET max_bytes = ?2, max_files = ?3 WHERE id = ?1",
    [S_TENANTS_LIST] = "SELECT t.name, coalesce((SELECT size FROM entries e WHERE e.tenant = t.id"
                       " AND e.path = '/memories'), 0), t.files,"
                       " (SELECT count(*) FROM versions v WHERE v.tenant = t.id),"
                       " (SELECT time FROM changes c WHERE c.tenant = t.id AND c.seq = t.last_seq)"
                       " FROM tenants t WHERE t.name > ?1 ORDER BY t.name LIMIT ?2",
    [S_ERASE_ENTRIES] = "DELETE FROM entries WHERE tenant = ?1",
    [S_ERASE_VERSIONS] = "DELETE FROM versions WHERE tenant = ?1",
    [S_ERASE_CHANGES] = "DELETE FROM changes WHERE tenant = ?1",
    [S_ERASE_IDEM] = "DELETE FROM idempotency WHERE tenant = ?1",
    [S_ERASE_KEYS] = "DELETE FROM api_keys WHERE tenant = ?1",
    [S_ERASE_TENANT] = "DELETE FROM tenants WHERE id = ?1",
    [S_SCAN] = "SELECT path, kind, mtime, content FROM entries WHERE tenant = ?1 AND path > ?2"
               " ORDER BY path LIMIT ?3",
    /* Full-text search (store_sqlite_search.c): the index's candidates of
     * this tenant at or below :path, each checked and ranked on its text
     * once (memoryd_score: -1 when it does not match; LIMIT -1 keeps the
     * subquery whole so the score is not computed again), the page chosen
     * on (id, path, score), then its files' content read; or, when no
     * word of the terms is long enough for the index, the same on the
     * tenant's files there. */
    [S_SEARCH_FTS] = "SELECT e.path, e.content FROM (SELECT id, path, score FROM"
                     " (SELECT e.id, e.path, memoryd_score(e.content, :terms) AS score"
                     " FROM entries_search f CROSS JOIN entries e ON e.id = f.rowid"
                     " WHERE entries_search MATCH :match AND e.tenant = :tenant AND e.kind = 0"
                     " AND (e.path = :path OR (e.path > :lo AND e.path < :hi)) LIMIT -1)"
                     " WHERE score > 0 ORDER BY score DESC, path LIMIT :limit OFFSET :offset) page"
                     " CROSS JOIN entries e ON e.id = page.id ORDER BY page.score DESC, page.path",
    [S_SEARCH_SCAN] = "SELECT e.path, e.content FROM (SELECT id, path, score FROM"
                      " (SELECT id, path, memoryd_score(content, :terms) AS score FROM entries"
                      " WHERE tenant = :tenant AND kind = 0"
                      " AND (path = :path OR (path > :lo AND path < :hi)) LIMIT -1)"
                      " WHERE score > 0 ORDER BY score DESC, path LIMIT :limit OFFSET :offset) page"
                      " CROSS JOIN entries e ON e.id = page.id ORDER BY page.score DESC, page.path",
    [S_SEARCH_OPTIMIZE] = "INSERT INTO entries_search (entries_search) VALUES ('optimize')",
    [S_SEARCH_NOTED] = SQ_SEARCH_NOTED_SQL,
    [S_SEARCH_FLUSH_OUT] = SQ_SEARCH_FLUSH_OUT_SQL,
    [S_SEARCH_FLUSH_IN] = SQ_SEARCH_FLUSH_IN_SQL,
    [S_SEARCH_FLUSH_CLEAR] = SQ_SEARCH_FLUSH_CLEAR_SQL,
    [S_REDACT] = "UPDATE versions SET content = NULL, sha256 = NULL, redacted = 1"
                 " WHERE tenant = ?1 AND version = ?2",
    [S_PRUNE_COUNT_FIND] = "SELECT version FROM versions WHERE tenant = ?1 AND path = ?2"
                           " ORDER BY version DESC LIMIT 1 OFFSET ?3",
    [S_PRUNE_COUNT_DEL] = "DELETE FROM versions WHERE tenant = ?1 AND path = ?2 AND version <= ?3",
    [S_PRUNE_MARK] = "UPDATE versions SET pruned_through = max(pruned_through, ?3)"
                     " WHERE tenant = ?1 AND version = (SELECT min(version) FROM versions"
                     " WHERE tenant = ?1 AND path = ?2)",
    [S_PRUNE_SUBTREE_PATHS] = "SELECT path FROM versions WHERE tenant = ?1 AND path > ?2"
                              " AND path < ?3 GROUP BY path HAVING count(*) > ?4",
    [S_TENANT_NEXT] = "SELECT id FROM tenants WHERE id >= ?1 ORDER BY id LIMIT 1",
    [S_PRUNE_AGE_SCAN] = "SELECT version, time FROM versions WHERE tenant = ?1"
                         " ORDER BY version LIMIT ?2",
    [S_PRUNE_AGE_DEL] = "DELETE FROM versions WHERE tenant = ?1 AND version <= ?2",
    [S_PRUNE_CHANGES_SCAN] =
        "SELECT seq, time FROM changes WHERE tenant = ?1 ORDER BY seq LIMIT ?2",
    [S_PRUNE_CHANGES_DEL] = "DELETE FROM changes WHERE tenant = ?1 AND seq <= ?2",
    [S_PRUNE_IDEM] = "DELETE FROM idempotency WHERE rowid IN"
                     " (SELECT rowid FROM idempotency WHERE time < ?1 LIMIT ?2)",
};

/* Checkpoints: when writes pause (no commit for CKPT_IDLE_MS), and during
 * sustained writes once the WAL holds CKPT_BUSY_PAGES frames. A checkpoint
 * flushes the database file; done often while commits flush the WAL, the
 * two flushes compete for the disk and every commit waits longer. */
#define CKPT_IDLE_MS    250
#define CKPT_BUSY_PAGES 8192
/* A busy checkpoint runs passes until fewer than this many frames were
 * committed during the last one (at most CKPT_MAX_PASSES): what is left
 * for the writer to copy is small. */
#define CKPT_CATCHUP_FRAMES 256
#define CKPT_MAX_PASSES     8

int64_t sq_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sq_log(sqlite3 *db, int rc, const char *what)
{
    struct md_logline l;
    md_log_begin(&l, MD_LOG_ERROR, "sqlite error");
    md_log_str(&l, "op", what);
    md_log_int(&l, "code", rc);
    md_log_str(&l, "error", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    md_log_end(&l);
    md_metrics_storage_error();
}

static enum md_err map_rc(sqlite3 *db, int rc, const char *what)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW:
        return MD_OK;
    case SQLITE_CONSTRAINT:
        if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE)
            return MD_EEXIST;
        break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        sq_log(db, rc, what);
        return MD_EBUSY;
    case SQLITE_NOMEM:
        return MD_ENOMEM;
    default:
        break;
    }
    sq_log(db, rc, what);
    return MD_EDB;
}

/* An error that says the database file itself is in trouble. */
static int rc_environmental(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_READONLY:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_PROTOCOL:
        return 1;
    default:
        return 0;
    }
}

/* map_rc for a statement on connection c; marks c broken when needed. */
enum md_err sq_conn_rc(struct sq_conn *c, int rc, const char *what)
{
    if (rc_environmental(rc))
        c->broken = 1;
    return map_rc(c->db, rc, what);
}

static void conn_close(struct sq_conn *c)
{
    if (!c)
        return;
    for (int i = 0; i < S_COUNT; i++)
        sqlite3_finalize(c->st[i]);
    sqlite3_close(c->db);
    md_tenant_cache_free(c->tenants);
    md_dirsizes_free(c->txn.sizes);
    md_hist_free(c->txn.hist);
    free(c);
}

static int exec_simple(sqlite3 *db, const char *sql, char *why, size_t why_len)
{
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK && why)
        snprintf(why, why_len, "%s: %s", sql, err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    return rc;
}

static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    (void)db;
    (void)name;
    struct sq_store *s = arg;
    pthread_mutex_lock(&s->ckpt_mu);
    s->wal_pages = pages;
    clock_gettime(CLOCK_MONOTONIC, &s->last_commit);
    if (pages >= CKPT_BUSY_PAGES)
        pthread_cond_signal(&s->ckpt_cv);
    pthread_mutex_unlock(&s->ckpt_mu);
    return SQLITE_OK;
}

/* The integer a PRAGMA query such as "PRAGMA user_version" answers; -1 on
 * error. */
static int pragma_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *v = NULL;
    int value = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &v, NULL) == SQLITE_OK && sqlite3_step(v) == SQLITE_ROW)
        value = sqlite3_column_int(v, 0);
    sqlite3_finalize(v);
    return value;
}

static int user_version(sqlite3 *db)
{
    return pragma_int(db, "PRAGMA user_version");
}

/* Bring the schema up to date: every sql/sqlite/ migration not yet applied, in
 * one transaction, each recorded in PRAGMA user_version. */
static int migrate(sqlite3 *db, char *why, size_t why_len)
{
    int rc = exec_simple(db, "BEGIN IMMEDIATE", why, why_len);
    if (rc != SQLITE_OK)
        return rc;
    int version = user_version(db);
    if (version < 0 || version > md_sqlite_migrations_count) {
        if (version < 0)
            snprintf(why, why_len, "cannot read PRAGMA user_version: %s", sqlite3_errmsg(db));
        else
            snprintf(why, why_len,
                     "database schema version %d is newer than this memoryd (%d); refusing to "
                     "open it",
                     version, md_sqlite_migrations_count);
        exec_simple(db, "ROLLBACK", NULL, 0);
        return SQLITE_ERROR;
    }
    for (int i = version; i < md_sqlite_migrations_count; i++) {
        rc = exec_simple(db, md_sqlite_migrations[i], why, why_len);
        if (rc == SQLITE_OK) {
            char sql[64];
            snprintf(sql, sizeof sql, "PRAGMA user_version=%d", i + 1);
            rc = exec_simple(db, sql, why, why_len);
        }
        if (rc != SQLITE_OK) {
            exec_simple(db, "ROLLBACK", NULL, 0);
            return rc;
        }
        struct md_logline l;
        md_log_begin(&l, MD_LOG_INFO, "schema migrated");
        md_log_int(&l, "version", i + 1);
        md_log_end(&l);
    }
    return exec_simple(db, "COMMIT", why, why_len);
}

/* memoryd_sha256(blob): the SHA-256 of a content, for migrations. */
static void sql_sha256(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    unsigned char d[MD_SHA256_LEN];
    const void *p = sqlite3_value_blob(argv[0]);
    if (md_sha256(p, (size_t)sqlite3_value_bytes(argv[0]), d) != MD_OK) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    sqlite3_result_blob(ctx, d, MD_SHA256_LEN, SQLITE_TRANSIENT);
}

enum role {
    ROLE_READER,
    ROLE_WRITER,          /* must be able to write */
    ROLE_WRITER_READONLY, /* at start: a read-only but current database is accepted */
};

/* Open a connection with memoryd's settings and prepared statements. */
static int conn_open(struct sq_store *s, enum role role, struct sq_conn **out, char *why,
                     size_t why_len)
{
    struct sq_conn *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, why_len, "out of memory");
        return SQLITE_NOMEM;
    }
    int rc = sqlite3_open_v2(
        s->path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(why, why_len, "cannot open %s: %s", s->path,
                 c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_extended_result_codes(c->db, 1);
    sqlite3_busy_timeout(c->db, s->cfg.busy_timeout_ms);
    char sql[160];
    snprintf(sql, sizeof sql, "PRAGMA synchronous=%s; PRAGMA foreign_keys=OFF;",
             s->cfg.durability == MD_DURABILITY_FULL ? "FULL" : "NORMAL");
    rc = exec_simple(c->db, sql, why, why_len);
    if (rc != SQLITE_OK)
        goto fail;
    if (role != ROLE_READER && sqlite3_db_readonly(c->db, "main") == 1) {
        /* The file cannot be written (permissions). At start, a database
         * whose schema is current is served read-only: reads work, writes
         * fail with a storage error and the writer is reopened until the
         * file is writable again. */
        int version = user_version(c->db);
        if (role == ROLE_WRITER || version != md_sqlite_migrations_count) {
            snprintf(why, why_len, "%s is read-only%s", s->path,
                     role == ROLE_WRITER ? "" : " and its schema is not current");
            rc = SQLITE_READONLY;
            goto fail;
        }
        c->broken = 1;
        md_log_msg(MD_LOG_WARN, "the database is read-only: writes fail until it is writable",
                   s->path);
    } else if (role != ROLE_READER) {
        /* secure_delete: a deleted or overwritten content (a redacted
         * version, say) is zeroed in the file, whatever SQLite's build
         * default. memoryd_sha256(): for migrations. */
        rc = exec_simple(c->db,
                         "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;"
                         " PRAGMA journal_size_limit=67108864; PRAGMA secure_delete=ON;",
                         why, why_len);
        if (rc == SQLITE_OK)
            rc = sqlite3_create_function(c->db, "memoryd_sha256", 1,
                                         SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_sha256, NULL,
                                         NULL);
        if (rc == SQLITE_OK)
            rc = migrate(c->db, why, why_len); /* before preparing statements */
        if (rc == SQLITE_OK)
            rc = sq_search_setting(c->db, s->cfg.search, &s->search_off, why, why_len);
        if (rc != SQLITE_OK)
            goto fail;
        sqlite3_wal_hook(c->db, wal_hook, s);
    } else {
        rc = exec_simple(c->db, "PRAGMA query_only=1;", why, why_len);
        if (rc != SQLITE_OK)
            goto fail;
    }
    rc = sq_search_functions(c->db);
    if (rc != SQLITE_OK) {
        snprintf(why, why_len, "memoryd_score: %s", sqlite3_errmsg(c->db));
        goto fail;
    }
    for (int i = 0; i < S_COUNT; i++) {
        rc = sqlite3_prepare_v3(c->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &c->st[i], NULL);
        if (rc != SQLITE_OK) {
            snprintf(why, why_len, "prepare %s: %s", stmt_sql[i], sqlite3_errmsg(c->db));
            goto fail;
        }
    }
    c->txn.base.store = &s->base;
    c->txn.c = c;
    c->txn.write = role != ROLE_READER;
    c->tenants = md_tenant_cache_new();
    if (role != ROLE_READER) {
        c->txn.sizes = md_dirsizes_new();
        c->txn.hist = md_hist_new(NULL);
    }
    if (!c->tenants || (role != ROLE_READER && (!c->txn.sizes || !c->txn.hist))) {
        snprintf(why, why_len, "out of memory");
        rc = SQLITE_NOMEM;
        goto fail;
    }
    *out = c;
    return SQLITE_OK;
fail:
    conn_close(c);
    return rc == SQLITE_OK ? SQLITE_ERROR : rc;
}

/* ---- statement helpers ---- */

sqlite3_stmt *sq_stmt(struct sq_txn *t, enum stmt_id id)
{
    t->statements++;
    if (t->pending) {
        sqlite3_reset(t->pending);
        t->pending = NULL;
    }
    return t->c->st[id];
}

void sq_done(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

void sq_bind_text(sqlite3_stmt *st, int i, const char *p, size_t n)
{
    sqlite3_bind_text(st, i, p, (int)n, SQLITE_STATIC);
}

/* Run a statement that returns no rows. */
enum md_err sq_run(struct sq_txn *t, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    sq_done(st);
    return sq_conn_rc(t->c, rc, what);
}

enum md_err sq_bounds_make(struct bounds *b, const char *dir, size_t len)
{
    b->lo_heap = b->hi_heap = NULL;
    char *lo = b->lo, *hi = b->hi;
    if (len + 2 > sizeof b->lo) {
        lo = b->lo_heap = malloc(len + 2);
        hi = b->hi_heap = malloc(len + 2);
        if (!lo || !hi) {
            free(b->lo_heap);
            free(b->hi_heap);
            return MD_ENOMEM;
        }
    }
    memcpy(lo, dir, len);
    memcpy(hi, dir, len);
    lo[len] = '/';
    hi[len] = '0';
    b->lop = lo;
    b->hip = hi;
    b->n = len + 1;
    return MD_OK;
}

void sq_bounds_free(struct bounds *b)
{
    free(b->lo_heap);
    free(b->hi_heap);
}

/* ---- transactions ---- */

/* Give a reader back to the pool, or close it when it is broken. */
static void reader_release(struct sq_store *s, struct sq_conn *c)
{
    pthread_mutex_lock(&s->pool_mu);
    if (c->broken) {
        for (struct sq_conn **pp = &s->all; *pp; pp = &(*pp)->next_all) {
            if (*pp == c) {
                *pp = c->next_all;
                break;
            }
        }
    } else {
        c->next_idle = s->idle;
        s->idle = c;
    }
    pthread_mutex_unlock(&s->pool_mu);
    if (c->broken)
        conn_close(c);
}

/* End the read transaction a reader keeps open (the connection is not in
 * use by anyone else). */
static void reader_end_snapshot(struct sq_conn *c)
{
    if (!c->snap_gen)
        return;
    c->snap_gen = 0;
    if (sqlite3_get_autocommit(c->db))
        return; /* already ended (an error rolled it back) */
    sqlite3_stmt *st = c->st[S_COMMIT];
    if (sqlite3_step(st) != SQLITE_DONE)
        sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    sq_done(st);
}

/* A read transaction; `fresh`: a new one even if the kept one is current. */
static enum md_err read_begin(struct sq_store *s, int fresh, struct md_txn **out)
{
    pthread_mutex_lock(&s->pool_mu);
    struct sq_conn *c = s->idle;
    if (c)
        s->idle = c->next_idle;
    pthread_mutex_unlock(&s->pool_mu);
    if (!c) {
        char why[512];
        if (conn_open(s, ROLE_READER, &c, why, sizeof why) != SQLITE_OK) {
            md_log_msg(MD_LOG_ERROR, "cannot open reader connection", why);
            return MD_EDB;
        }
        pthread_mutex_lock(&s->pool_mu);
        c->next_all = s->all;
        s->all = c;
        pthread_mutex_unlock(&s->pool_mu);
    }
    /* Acquire: pairs with the release of the bump after a commit. The
     * snapshot is taken at the first statement, after this load. */
    unsigned long gen = atomic_load_explicit(&s->commit_gen, memory_order_acquire);
    if (c->snap_gen == gen && !fresh && !sqlite3_get_autocommit(c->db)) {
        *out = &c->txn.base;
        return MD_OK;
    }
    reader_end_snapshot(c);
    enum md_err e = sq_run(&c->txn, c->st[S_BEGIN], "begin");
    if (e) {
        reader_release(s, c);
        return e;
    }
    c->snap_gen = gen;
    *out = &c->txn.base;
    return MD_OK;
}

static enum md_err sq_read_begin(struct md_store *base, struct md_txn **out)
{
    return read_begin((struct sq_store *)base, 0, out);
}

/* The read transaction stays open for the connection's next request (see
 * commit_gen); the checkpointer ends those of idle connections. */
static void sq_txn_end(struct md_txn *base)
{
    struct sq_txn *t = (struct sq_txn *)base;
    struct sq_store *s = (struct sq_store *)base->store;
    if (t->pending) { /* a finished statement would keep its snapshot past a COMMIT */
        sqlite3_reset(t->pending);
        t->pending = NULL;
    }
    if (sqlite3_get_autocommit(t->c->db))
        t->c->snap_gen = 0; /* an error ended it */
    reader_release(s, t->c);
}

/* End the read transactions idle readers keep, so that a checkpoint can
 * copy every frame and the WAL can start over. */
static void readers_end_snapshots(struct sq_store *s)
{
    pthread_mutex_lock(&s->pool_mu);
    for (struct sq_conn *c = s->idle; c; c = c->next_idle)
        reader_end_snapshot(c);
    pthread_mutex_unlock(&s->pool_mu);
}

/* The writer's part of a busy checkpoint (see ckpt_catchup); write_mu is
 * held, so no frame is added meanwhile. With every frame copied, the next
 * write transaction starts the WAL over, unless a reader is using it right
 * then (SQLite then keeps appending; the next busy checkpoint asks again). */
static void ckpt_catch_up(struct sq_store *s)
{
    readers_end_snapshots(s);
    int rc = sqlite3_wal_checkpoint_v2(s->writer->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY) /* BUSY: the checkpointer is at it again */
        sq_log(s->writer->db, rc, "checkpoint catch-up");
}

/* Reopen a broken writer connection; write_mu is held.
 * Failures are logged the first time and then every 1000th time. */
static enum md_err writer_heal(struct sq_store *s)
{
    if (!s->writer->broken)
        return MD_OK;
    char why[512] = "";
    struct sq_conn *c = NULL;
    if (conn_open(s, ROLE_WRITER, &c, why, sizeof why) != SQLITE_OK) {
        if (s->heal_failures++ % 1000 == 0) {
            struct md_logline l;
            md_log_begin(&l, MD_LOG_ERROR, "cannot reopen the writer connection");
            md_log_str(&l, "detail", why);
            md_log_int(&l, "attempts", (int64_t)s->heal_failures);
            md_log_end(&l);
        }
        return MD_EDB;
    }
    conn_close(s->writer);
    s->writer = c;
    struct md_logline l;
    md_log_begin(&l, MD_LOG_WARN, "writer connection reopened");
    md_log_int(&l, "failed_attempts", (int64_t)s->heal_failures);
    md_log_end(&l);
    s->heal_failures = 0;
    return MD_OK;
}

/* ---- deferred directory sizes (md_dirsizes.h) ---- */

/* Write one directory size change now. */
static enum md_err size_update(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                               int64_t delta)
{
    sqlite3_stmt *st = sq_stmt(t, S_ADD_SIZE);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, path, len);
    sqlite3_bind_int64(st, 3, delta);
    return sq_run(t, st, "add size");
}

/* Write every pending change (each once) and mark them written. */
enum md_err sq_sizes_flush(struct sq_txn *t)
{
    size_t n = md_dirsizes_count(t->sizes);
    for (size_t i = 0; i < n; i++) {
        int64_t tenant, delta;
        const char *path;
        size_t len;
        md_dirsizes_entry(t->sizes, i, &tenant, &path, &len, &delta);
        if (delta == 0)
            continue;
        enum md_err e = size_update(t, tenant, path, len, delta);
        if (e)
            return e;
    }
    md_dirsizes_written(t->sizes);
    return MD_OK;
}

/* Add delta to directory `path`'s size: kept pending in a write
 * transaction, written at once otherwise (or when it cannot be kept). */
static enum md_err add_size(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                            int64_t delta)
{
    if (t->sizes && md_dirsizes_add(t->sizes, tenant, path, len, delta) == 0)
        return MD_OK;
    return size_update(t, tenant, path, len, delta);
}

/* Add `delta` to the size of every ancestor directory of `path` (root
 * included). */
static enum md_err add_to_ancestors(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                                    int64_t delta)
{
    if (delta == 0 || len == MD_ROOT_LEN)
        return MD_OK;
    size_t plen = len;
    do {
        plen = md_path_parent_len(path, plen);
        enum md_err e = add_size(t, tenant, path, plen, delta);
        if (e)
            return e;
    } while (plen > MD_ROOT_LEN);
    return MD_OK;
}

static enum md_err sq_write_begin(struct md_store *base, struct md_txn **out)
{
    struct sq_store *s = (struct sq_store *)base;
    pthread_mutex_lock(&s->write_mu);
    enum md_err e = writer_heal(s);
    if (!e) {
        if (atomic_exchange_explicit(&s->ckpt_catchup, 0, memory_order_acq_rel))
            ckpt_catch_up(s);
        struct sq_txn *t = &s->writer->txn;
        md_dirsizes_reset(t->sizes);
        md_hist_reset(t->hist);
        t->made_tenant_txn = t->made_tenant_cmd = 0;
        e = sq_run(t, t->c->st[S_BEGIN_IMMEDIATE], "begin immediate");
        if (!e) {
            *out = &t->base;
            return MD_OK;
        }
    }
    pthread_mutex_unlock(&s->write_mu);
    return e;
}

/* After a commit that redacted content (write_mu held): copy every frame
 * into the database file, where secure_delete has zeroed the old bytes,
 * and empty the WAL, which still holds the pages as they were. Readers'
 * kept snapshots are ended first; a reader in the middle of a request or
 * the checkpointer at work makes it try again, for up to about a second;
 * failing that, the next commit tries again. */
static void scrub_wal(struct sq_store *s)
{
    int rc = SQLITE_BUSY;
    for (int attempt = 0; attempt < 100 && (rc & 0xff) == SQLITE_BUSY; attempt++) {
        if (attempt) {
            struct timespec pause = {0, 10000000L}; /* 10 ms */
            nanosleep(&pause, NULL);
        }
        readers_end_snapshots(s);
        rc = sqlite3_wal_checkpoint_v2(s->writer->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    }
    if (rc == SQLITE_OK)
        s->scrub_wal = 0;
    else
        sq_log(s->writer->db, rc, "checkpoint after a redaction");
}

static enum md_err sq_commit(struct md_txn *base)
{
    struct sq_txn *t = (struct sq_txn *)base;
    struct sq_store *s = (struct sq_store *)base->store;
    /* The pending directory sizes first; if they cannot be written, the
     * transaction is rolled back below, never committed. */
    enum md_err e = sq_sizes_flush(t);
    if (!e)
        e = sq_counters_flush(t);
    if (!e)
        e = sq_search_flush(t);
    md_dirsizes_reset(t->sizes);
    md_hist_reset(t->hist);
    if (!e) {
        sqlite3_stmt *st = sq_stmt(t, S_COMMIT);
        int rc = sqlite3_step(st);
        sq_done(st);
        e = sq_conn_rc(t->c, rc, "commit");
        /* A failed flush comes after the transaction's pages went to the WAL
         * with its commit mark: recovery may still find it whole. */
        if (rc == SQLITE_IOERR_FSYNC || rc == SQLITE_IOERR_DIR_FSYNC)
            e = MD_EUNSURE;
    }
    /* Release: before anyone is told of the commit, readers must see that
     * their kept snapshot is out of date. */
    atomic_fetch_add_explicit(&s->commit_gen, 1, memory_order_release);
    if (e) {
        md_tenant_cache_clear(t->c->tenants);
        if (sqlite3_get_autocommit(t->c->db) == 0)
            sqlite3_exec(t->c->db, "ROLLBACK", NULL, NULL, NULL);
    } else if (s->scrub_wal) {
        scrub_wal(s);
    }
    pthread_mutex_unlock(&s->write_mu);
    return e;
}

static void sq_rollback(struct md_txn *base)
{
    struct sq_txn *t = (struct sq_txn *)base;
    struct sq_store *s = (struct sq_store *)base->store;
    if (t->made_tenant_txn)
        md_tenant_cache_clear(t->c->tenants);
    md_dirsizes_reset(t->sizes);
    md_hist_reset(t->hist);
    s->scrub_wal = 0; /* nothing was redacted after all */
    if (sqlite3_get_autocommit(t->c->db) == 0)
        sq_run(t, sq_stmt(t, S_ROLLBACK), "rollback");
    pthread_mutex_unlock(&s->write_mu);
}

static enum md_err sq_savepoint(struct md_txn *base)
{
    struct sq_txn *t = (struct sq_txn *)base;
    md_dirsizes_mark(t->sizes);
    md_hist_mark(t->hist);
    t->made_tenant_cmd = 0;
    return sq_run(t, sq_stmt(t, S_SAVEPOINT), "savepoint");
}

static enum md_err sq_release(struct md_txn *base, int rollback)
{
    struct sq_txn *t = (struct sq_txn *)base;
    enum md_err e = MD_OK;
    if (sqlite3_get_autocommit(t->c->db)) {
        md_tenant_cache_clear(t->c->tenants);
        md_dirsizes_reset(t->sizes);
        md_hist_reset(t->hist);
        return MD_EDB; /* the whole transaction was rolled back by SQLite */
    }
    if (rollback) {
        if (t->made_tenant_cmd)
            md_tenant_cache_clear(t->c->tenants);
        e = sq_run(t, sq_stmt(t, S_ROLLBACK_TO), "rollback to savepoint");
        md_dirsizes_restore(t->sizes); /* the pending changes as they were at the savepoint */
        md_hist_restore(t->hist);
    }
    if (!e)
        e = sq_run(t, sq_stmt(t, S_RELEASE), "release savepoint");
    return e;
}

/* ---- primitives ---- */

/* A tenant's id by name. create=0: MD_ENOENT when the tenant has no data
 * yet; create=1: creates the tenant and its root entry when missing. */
enum md_err sq_tenant_id(struct sq_txn *t, const char *name, int create, int64_t *id)
{
    size_t len = strlen(name);
    if ((*id = md_tenant_cache_get(t->c->tenants, name)) != 0)
        return MD_OK;
    sqlite3_stmt *st = sq_stmt(t, S_TENANT_GET);
    sq_bind_text(st, 1, name, len);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        sq_done(st);
        md_tenant_cache_put(t->c->tenants, name, *id);
        return MD_OK;
    }
    sq_done(st);
    if (rc != SQLITE_DONE)
        return sq_conn_rc(t->c, rc, "tenant lookup");
    if (!create)
        return MD_ENOENT;
    t->made_tenant_txn = t->made_tenant_cmd = 1;
    st = sq_stmt(t, S_TENANT_INSERT);
    sq_bind_text(st, 1, name, strlen(name));
    sqlite3_bind_int64(st, 2, sq_now_ms() / 1000);
    enum md_err e = sq_run(t, st, "tenant insert");
    if (e)
        return e;
    *id = sqlite3_last_insert_rowid(t->c->db);
    st = sq_stmt(t, S_INSERT);
    sqlite3_bind_int64(st, 1, *id);
    sq_bind_text(st, 2, MD_ROOT, MD_ROOT_LEN);
    sqlite3_bind_int(st, 3, 0);
    sqlite3_bind_int(st, 4, MD_KIND_DIR);
    sqlite3_bind_int64(st, 5, 0);
    sqlite3_bind_int64(st, 6, sq_now_ms());
    sqlite3_bind_null(st, 7);
    return sq_run(t, st, "root insert");
}

/* The entry at `path`; a directory's size with its pending change. */
static enum md_err get_entry(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                             int want_content, struct md_entry *e)
{
    sqlite3_stmt *st = sq_stmt(t, want_content ? S_GET : S_GET_META);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, path, len);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sq_done(st);
        return rc == SQLITE_DONE ? MD_ENOENT : sq_conn_rc(t->c, rc, "get");
    }
    e->kind = sqlite3_column_int(st, 0) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
    e->size = sqlite3_column_int64(st, 1);
    if (e->kind == MD_KIND_DIR)
        e->size += md_dirsizes_pending(t->sizes, tenant, path, len);
    e->has_sha256 = sqlite3_column_bytes(st, 2) == MD_SHA256_LEN;
    if (e->has_sha256)
        memcpy(e->sha256, sqlite3_column_blob(st, 2), MD_SHA256_LEN);
    e->content = NULL;
    e->content_len = 0;
    if (want_content) {
        e->content = sqlite3_column_blob(st, 3);
        e->content_len = (size_t)sqlite3_column_bytes(st, 3);
        if (!e->content)
            e->content = "";
        t->pending = st; /* the row stays borrowed until the next call */
    } else {
        sq_done(st);
    }
    return MD_OK;
}

/* Direct children of `dir` in path order. */
static enum md_err list_children(struct sq_txn *t, int64_t tenant, const char *dir, size_t len,
                                 md_list_cb cb, void *ctx)
{
    struct bounds b;
    enum md_err e = sq_sizes_flush(t); /* the listing shows sizes */
    if (!e)
        e = sq_bounds_make(&b, dir, len);
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_LIST);
    sqlite3_bind_int64(st, 1, tenant);
    sqlite3_bind_int(st, 2, md_path_depth(dir, len) + 1);
    sq_bind_text(st, 3, b.lop, b.n);
    sq_bind_text(st, 4, b.hip, b.n);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *p = (const char *)sqlite3_column_text(st, 0);
        size_t plen = (size_t)sqlite3_column_bytes(st, 0);
        enum md_kind kind = sqlite3_column_int(st, 1) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
        if (cb(ctx, p, plen, kind, sqlite3_column_int64(st, 2))) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sq_done(st);
    sq_bounds_free(&b);
    return rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, "list");
}

static enum md_err insert_entry(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                                enum md_kind kind, const char *content, size_t content_len,
                                const unsigned char *sha256)
{
    sqlite3_stmt *st = sq_stmt(t, S_INSERT);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, path, len);
    sqlite3_bind_int(st, 3, md_path_depth(path, len));
    sqlite3_bind_int(st, 4, kind);
    sqlite3_bind_int64(st, 5, kind == MD_KIND_FILE ? (int64_t)content_len : 0);
    sqlite3_bind_int64(st, 6, sq_now_ms());
    if (kind == MD_KIND_FILE) {
        sqlite3_bind_blob(st, 7, content_len ? content : "", (int)content_len, SQLITE_STATIC);
        sqlite3_bind_blob(st, 8, sha256, MD_SHA256_LEN, SQLITE_STATIC);
    } else {
        sqlite3_bind_null(st, 7);
        sqlite3_bind_null(st, 8);
    }
    return sq_run(t, st, "insert");
}

static enum md_err set_content(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                               const char *content, size_t content_len, const unsigned char *sha256)
{
    sqlite3_stmt *st = sq_stmt(t, S_SET_CONTENT);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, path, len);
    sqlite3_bind_blob(st, 3, content_len ? content : "", (int)content_len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (int64_t)content_len);
    sqlite3_bind_int64(st, 5, sq_now_ms());
    sqlite3_bind_blob(st, 6, sha256, MD_SHA256_LEN, SQLITE_STATIC);
    enum md_err e = sq_run(t, st, "set content");
    if (!e && sqlite3_changes(t->c->db) != 1)
        e = MD_ENOENT;
    return e;
}

/* Bind a named parameter when the statement has it. */
void sq_bind_named_text(sqlite3_stmt *st, const char *name, const char *p, size_t n)
{
    int i = sqlite3_bind_parameter_index(st, name);
    if (i)
        sq_bind_text(st, i, p, n);
}

void sq_bind_named_int64(sqlite3_stmt *st, const char *name, int64_t v)
{
    int i = sqlite3_bind_parameter_index(st, name);
    if (i)
        sqlite3_bind_int64(st, i, v);
}

/* Characters (not bytes) of a UTF-8 string: SQLite's substr() counts them. */
int64_t sq_utf8_chars(const char *s, size_t n)
{
    int64_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* Run the "one" and "below" statements of a subtree operation on `path`;
 * `to` (NULL for a removal) is where the subtree moves. */
static enum md_err subtree(struct sq_txn *t, const enum stmt_id ids[2], int64_t tenant,
                           const char *path, size_t len, const char *to, size_t tlen,
                           const char *what)
{
    struct bounds b;
    /* Rows about to move or go must carry their true sizes first. */
    enum md_err e = sq_sizes_flush(t);
    if (!e)
        e = sq_bounds_make(&b, path, len);
    if (e)
        return e;
    for (int i = 0; i < 2 && !e; i++) {
        sqlite3_stmt *st = sq_stmt(t, ids[i]);
        sq_bind_named_int64(st, ":tenant", tenant);
        sq_bind_named_text(st, ":path", path, len);
        sq_bind_named_text(st, ":lo", b.lop, b.n);
        sq_bind_named_text(st, ":hi", b.hip, b.n);
        if (to) {
            sq_bind_named_text(st, ":to", to, tlen);
            sq_bind_named_int64(st, ":cut", sq_utf8_chars(path, len) + 1);
            sq_bind_named_int64(st, ":ddepth", md_path_depth(to, tlen) - md_path_depth(path, len));
            sq_bind_named_int64(st, ":mtime", sq_now_ms());
        }
        e = sq_run(t, st, what);
    }
    sq_bounds_free(&b);
    return e;
}

/* ---- the operations of md_store.h ---- */

/* Nothing to lock (BEGIN IMMEDIATE holds the database's write lock) and
 * nothing deferred: SQLite runs every batch the exact way. */
static enum md_err sq_batch_begin(struct md_txn *base, const struct md_batch *b)
{
    (void)base;
    (void)b;
    return MD_OK;
}

static enum md_err sq_flush(struct md_txn *base)
{
    (void)base;
    return MD_OK;
}

static enum md_err sq_get(struct md_txn *base, const char *tenant, const char *path, size_t len,
                          int want_content, struct md_entry *e)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err err = sq_tenant_id(t, tenant, 0, &id);
    return err ? err : get_entry(t, id, path, len, want_content, e);
}

static enum md_err sq_list(struct md_txn *base, const char *tenant, const char *dir, size_t len,
                           md_list_cb cb, void *ctx)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err err = sq_tenant_id(t, tenant, 0, &id);
    if (err == MD_ENOENT)
        return MD_OK; /* a tenant without data: nothing anywhere */
    return err ? err : list_children(t, id, dir, len, cb, ctx);
}

/* Rows are stepped one at a time: a row's content is read only when it is
 * given (and the row after the last is only looked at). */
static enum md_err sq_scan(struct md_txn *base, const char *tenant, const char *after,
                           size_t after_len, size_t max_rows, int64_t max_bytes, md_scan_cb cb,
                           void *ctx, int *more)
{
    struct sq_txn *t = (struct sq_txn *)base;
    *more = 0;
    int64_t id = 0;
    enum md_err err = sq_tenant_id(t, tenant, 0, &id);
    if (err == MD_ENOENT)
        return MD_OK; /* a tenant without data: nothing anywhere */
    if (err)
        return err;
    sqlite3_stmt *st = sq_stmt(t, S_SCAN);
    sqlite3_bind_int64(st, 1, id);
    sq_bind_text(st, 2, after, after_len);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)max_rows + 1);
    size_t rows = 0;
    int64_t bytes = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (rows == max_rows || bytes >= max_bytes) {
            *more = 1;
            rc = SQLITE_DONE;
            break;
        }
        struct md_scan_entry e = {
            .path = (const char *)sqlite3_column_text(st, 0),
            .len = (size_t)sqlite3_column_bytes(st, 0),
            .kind = sqlite3_column_int(st, 1) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE,
            .mtime_ms = sqlite3_column_int64(st, 2),
        };
        if (e.kind == MD_KIND_FILE) {
            e.content = sqlite3_column_blob(st, 3);
            e.content_len = (size_t)sqlite3_column_bytes(st, 3);
            if (!e.content)
                e.content = "";
        }
        rows++;
        bytes += (int64_t)e.content_len;
        if (cb(ctx, &e)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sq_done(st);
    return rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, "scan");
}

static enum md_err sq_snapshot_begin(struct md_store *base, struct md_txn **out)
{
    return read_begin((struct sq_store *)base, 1, out);
}

static enum md_err sq_view(struct md_txn *base, const char *tenant, const char *path, size_t len,
                           struct md_entry *e, size_t max_entries, md_list_cb cb, void *ctx,
                           int *complete)
{
    struct sq_txn *t = (struct sq_txn *)base;
    *complete = 1;
    int64_t id = 0;
    enum md_err err = sq_tenant_id(t, tenant, 0, &id);
    if (err == MD_ENOENT && len == MD_ROOT_LEN) {
        *e = (struct md_entry){.kind = MD_KIND_DIR}; /* a tenant without data */
        return MD_OK;
    }
    if (!err)
        err = get_entry(t, id, path, len, 1, e);
    if (!err && e->kind == MD_KIND_DIR)
        err = md_store_list_two_levels(base, tenant, path, len, max_entries, cb, ctx, complete);
    return err;
}

static enum md_err sq_locate(struct md_txn *base, const char *tenant, struct md_locate *l, size_t n,
                             int *tenant_exists)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err err = sq_tenant_id(t, tenant, 0, &id);
    if (err && err != MD_ENOENT)
        return err;
    *tenant_exists = err == MD_OK;
    /* The content last: a borrowed row stays valid until the next statement. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            struct md_locate *q = &l[i];
            if ((q->want_content != 0) != (pass == 1))
                continue;
            q->found = 0;
            q->anc_len = MD_ROOT_LEN;
            q->anc_kind = MD_KIND_DIR;
            if (!*tenant_exists) {
                q->found = q->len == MD_ROOT_LEN;
                q->e = (struct md_entry){.kind = MD_KIND_DIR};
                continue;
            }
            /* The deepest existing ancestor, walking up from the parent. */
            for (size_t plen = q->len; q->want_parent && plen > MD_ROOT_LEN;) {
                plen = md_path_parent_len(q->path, plen);
                struct md_entry a = {.kind = MD_KIND_FILE};
                err = get_entry(t, id, q->path, plen, 0, &a);
                if (err == MD_OK) {
                    q->anc_len = plen;
                    q->anc_kind = a.kind;
                    break;
                }
                if (err != MD_ENOENT)
                    return err;
            }
            err = get_entry(t, id, q->path, q->len, q->want_content, &q->e);
            if (err && err != MD_ENOENT)
                return err;
            q->found = err == MD_OK;
        }
    }
    return MD_OK;
}

/* Make the directories between the existing ancestor of length `from` and
 * the parent of `path`, top down. */
static enum md_err make_parents(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                                size_t from)
{
    size_t parent = md_path_parent_len(path, len);
    for (size_t i = from + 1; i <= parent; i++) {
        if (i == parent || path[i] == '/') {
            enum md_err e = insert_entry(t, tenant, path, i, MD_KIND_DIR, NULL, 0, NULL);
            if (e)
                return e;
        }
    }
    return MD_OK;
}

static enum md_err sq_put_file(struct md_txn *base, const char *tenant, const char *path,
                               size_t len, const char *content, size_t content_len,
                               const unsigned char sha256[MD_SHA256_LEN], int64_t old_size,
                               size_t parents_from)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, old_size < 0, &id);
    if (!e)
        e = sq_record_file(t, id, path, len, old_size);
    if (!e && old_size < 0)
        e = make_parents(t, id, path, len, parents_from);
    if (!e && old_size < 0)
        e = insert_entry(t, id, path, len, MD_KIND_FILE, content, content_len, sha256);
    else if (!e)
        e = set_content(t, id, path, len, content ? content : "", content_len, sha256);
    if (!e)
        e = add_to_ancestors(t, id, path, len,
                             (int64_t)content_len - (old_size < 0 ? 0 : old_size));
    return e;
}

static enum md_err sq_remove_tree(struct md_txn *base, const char *tenant, const char *path,
                                  size_t len, int64_t size)
{
    static const enum stmt_id ids[2] = {S_REMOVE_ONE, S_REMOVE_BELOW};
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (!e)
        e = sq_record_subtree(t, id, path, len, size, NULL, 0);
    if (!e)
        e = subtree(t, ids, id, path, len, NULL, 0, "remove tree");
    if (!e)
        e = add_to_ancestors(t, id, path, len, -size);
    return e;
}

static enum md_err sq_move_tree(struct md_txn *base, const char *tenant, const char *from,
                                size_t flen, const char *to, size_t tlen, int64_t size,
                                size_t parents_from)
{
    static const enum stmt_id ids[2] = {S_MOVE_ONE, S_MOVE_BELOW};
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (!e)
        e = sq_record_subtree(t, id, from, flen, size, to, tlen);
    if (!e)
        e = make_parents(t, id, to, tlen, parents_from);
    if (!e)
        e = subtree(t, ids, id, from, flen, to, tlen, "move tree");
    if (!e)
        e = add_to_ancestors(t, id, from, flen, -size);
    if (!e)
        e = add_to_ancestors(t, id, to, tlen, size);
    return e;
}

/* ---- quotas ---- */

int64_t sq_column_or(sqlite3_stmt *st, int col, int64_t none)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? none : sqlite3_column_int64(st, col);
}

static enum md_err sq_usage(struct md_txn *base, const char *tenant, struct md_usage *u)
{
    struct sq_txn *t = (struct sq_txn *)base;
    *u = (struct md_usage){0, 0, -1, -1};
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (e == MD_ENOENT)
        return MD_OK; /* no data: nothing stored, no overrides */
    struct md_entry root = {.kind = MD_KIND_DIR};
    if (!e)
        e = get_entry(t, id, MD_ROOT, MD_ROOT_LEN, 0, &root);
    if (e)
        return e;
    u->bytes = root.size;
    sqlite3_stmt *st = sq_stmt(t, S_USAGE);
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        u->files = sqlite3_column_int64(st, 0);
        u->max_bytes = sq_column_or(st, 1, -1);
        u->max_files = sq_column_or(st, 2, -1);
    }
    sq_done(st);
    return rc == SQLITE_ROW ? MD_OK : rc == SQLITE_DONE ? MD_EDB : sq_conn_rc(t->c, rc, "usage");
}

static void bind_or_null(sqlite3_stmt *st, int i, int64_t v)
{
    if (v < 0)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, v);
}

static enum md_err sq_set_limits(struct md_txn *base, const char *tenant, int64_t max_bytes,
                                 int64_t max_files)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 1, &id);
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_LIMITS_SET);
    sqlite3_bind_int64(st, 1, id);
    bind_or_null(st, 2, max_bytes);
    bind_or_null(st, 3, max_files);
    return sq_run(t, st, "set limits");
}

static void sq_stats(struct md_txn *base, struct md_txn_stats *st)
{
    st->statements = ((struct sq_txn *)base)->statements;
    st->round_trips = 0;
}

/* An embedded engine: nothing goes over a wire. */
static void sq_wire(struct md_store *base, struct md_txn_stats *st)
{
    (void)base;
    *st = (struct md_txn_stats){0, 0};
}

/* The database file and its WAL (a file that is not there counts 0). */
static enum md_err sq_db_size(struct md_store *base, int64_t *bytes)
{
    const char *path = ((struct sq_store *)base)->path;
    char wal[4096];
    if (snprintf(wal, sizeof wal, "%s-wal", path) >= (int)sizeof wal)
        return MD_EINVAL;
    struct stat st;
    if (stat(path, &st) != 0)
        return MD_EDB;
    *bytes = (int64_t)st.st_size;
    if (stat(wal, &st) == 0)
        *bytes += (int64_t)st.st_size;
    return MD_OK;
}

static enum md_err sq_ping(struct md_store *base)
{
    struct md_txn *t;
    enum md_err e = read_begin((struct sq_store *)base, 1, &t); /* the database now */
    if (e)
        return e;
    int64_t id = 0;
    e = sq_tenant_id((struct sq_txn *)t, "", 0, &id);
    md_txn_end(t);
    if (e != MD_ENOENT)
        return e ? e : MD_EDB; /* no tenant has an empty name */
    /* A broken writer that cannot be reopened means writes fail. When the
     * writer is busy it is working, so it is fine. */
    struct sq_store *s = (struct sq_store *)base;
    e = MD_OK;
    if (pthread_mutex_trylock(&s->write_mu) == 0) {
        e = writer_heal(s);
        pthread_mutex_unlock(&s->write_mu);
    }
    return e;
}

/* ---- checkpointer ---- */

static void *ckpt_main(void *arg)
{
    struct sq_store *s = arg;
    pthread_mutex_lock(&s->ckpt_mu);
    while (!s->ckpt_stop) {
        /* While the writer has a catch-up to do, a pass of ours would only
         * make it find the checkpoint lock taken: wait for it (or for idle). */
        int handed_over = atomic_load_explicit(&s->ckpt_catchup, memory_order_acquire);
        if (s->wal_pages < CKPT_BUSY_PAGES || handed_over) {
            struct timespec until = md_deadline_ms((long)CKPT_IDLE_MS / 2);
            pthread_cond_timedwait(&s->ckpt_cv, &s->ckpt_mu, &until);
        }
        if (s->ckpt_stop || s->wal_pages == 0)
            continue;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long idle_ms = (long)(now.tv_sec - s->last_commit.tv_sec) * 1000 +
                       (now.tv_nsec - s->last_commit.tv_nsec) / 1000000;
        handed_over = atomic_load_explicit(&s->ckpt_catchup, memory_order_acquire);
        if ((s->wal_pages < CKPT_BUSY_PAGES || handed_over) && idle_ms < CKPT_IDLE_MS)
            continue;
        int busy = s->wal_pages >= CKPT_BUSY_PAGES;
        s->wal_pages = 0;
        pthread_mutex_unlock(&s->ckpt_mu);
        readers_end_snapshots(s);
        int log = 0, done_frames = 0, before = 0, rc;
        for (int pass = 0;; pass++) {
            rc = sqlite3_wal_checkpoint_v2(s->ckpt_db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log,
                                           &done_frames);
            /* log: the WAL's frames when this pass began; those beyond
             * `before` were committed while the previous pass ran. */
            if (rc != SQLITE_OK || !busy || log - before < CKPT_CATCHUP_FRAMES ||
                pass + 1 >= CKPT_MAX_PASSES)
                break;
            before = log;
        }
        if (rc != SQLITE_OK && rc != SQLITE_BUSY)
            sq_log(s->ckpt_db, rc, "checkpoint");
        /* Idle: the next write starts the WAL over by itself (nothing was
         * committed since). Busy: the writer copies what came since. */
        if (rc == SQLITE_OK && busy && done_frames == log)
            atomic_store_explicit(&s->ckpt_catchup, 1, memory_order_release);
        pthread_mutex_lock(&s->ckpt_mu);
    }
    pthread_mutex_unlock(&s->ckpt_mu);
    return NULL;
}

/* ---- open / close ---- */

static void sq_close(struct md_store *base)
{
    struct sq_store *s = (struct sq_store *)base;
    if (s->ckpt_started) {
        pthread_mutex_lock(&s->ckpt_mu);
        s->ckpt_stop = 1;
        pthread_cond_signal(&s->ckpt_cv);
        pthread_mutex_unlock(&s->ckpt_mu);
        pthread_join(s->ckpt_thread, NULL);
    }
    sqlite3_close(s->ckpt_db);
    for (struct sq_conn *c = s->all, *next; c; c = next) {
        next = c->next_all;
        conn_close(c);
    }
    if (s->writer) {
        int rc =
            sqlite3_wal_checkpoint_v2(s->writer->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
        if (rc != SQLITE_OK)
            sq_log(s->writer->db, rc, "final checkpoint");
        conn_close(s->writer);
    }
    pthread_mutex_destroy(&s->pool_mu);
    pthread_mutex_destroy(&s->write_mu);
    pthread_mutex_destroy(&s->ckpt_mu);
    pthread_cond_destroy(&s->ckpt_cv);
    free(s->path);
    free(s);
}

/* One process writes the database: the writer's commit hook says it all. */
static enum md_err sq_watch(struct md_store *base, md_watch_cb cb, void *ctx)
{
    (void)base, (void)cb, (void)ctx;
    return MD_OK;
}

#define SQLITE_CAPS 0u

static const struct md_store_ops sqlite_ops = {
    .version = MD_STORE_VERSION,
    .caps = SQLITE_CAPS,
    .name = "sqlite",
    .close = sq_close,
    .read_begin = sq_read_begin,
    .write_begin = sq_write_begin,
    .txn_end = sq_txn_end,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .savepoint = sq_savepoint,
    .release = sq_release,
    .batch_begin = sq_batch_begin,
    .flush = sq_flush,
    .view = sq_view,
    .locate = sq_locate,
    .put_file = sq_put_file,
    .remove_tree = sq_remove_tree,
    .move_tree = sq_move_tree,
    .get = sq_get,
    .list = sq_list,
    .ping = sq_ping,
    .stats = sq_stats,
    .wire = sq_wire,
    .cmd_begin = sq_cmd_begin,
    .cmd_end = sq_cmd_end,
    .idem_get = sq_idem_get,
    .idem_put = sq_idem_put,
    .history = sq_history,
    .version_get = sq_version_get,
    .state_before = sq_state_before,
    .changes = sq_changes,
    .redact = sq_redact,
    .prune = sq_prune,
    .db_size = sq_db_size,
    .watch = sq_watch,
    .usage = sq_usage,
    .tenants = sq_tenants,
    .erase = sq_erase,
    .set_limits = sq_set_limits,
    .snapshot_begin = sq_snapshot_begin,
    .scan = sq_scan,
    .search = sq_search,
};

int md_store_sqlite_check_plans(const char *path, char *why, size_t why_len)
{
    sqlite3 *db = NULL;
    int bad = 0;
    why[0] = '\0';
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(why, why_len, "cannot open %s", path);
        sqlite3_close(db);
        return -1;
    }
    if (sq_search_functions(db) != SQLITE_OK) {
        snprintf(why, why_len, "memoryd_score: %s", sqlite3_errmsg(db));
        sqlite3_close(db);
        return -1;
    }
    for (int i = 0; i < S_COUNT && !bad; i++) {
        /* Reads a tenant's idempotency keys of the last day: only when a
         * version is redacted, which is rare (an index would cost every
         * keyed write). The others read a tenant's first rows in key order
         * and stop (LIMIT, or min() of the key's next column). Tenant
         * administration reads or deletes all of a tenant's rows by design:
         * the listing counts its versions on the primary key (tenant, ...),
         * the erasure deletes every row (md_store.h). A search with no word
         * long enough for the index reads the tenant's files below the
         * path (md_txn_search). */
        if (i == S_SEARCH_SCAN || i == S_SEARCH_OPTIMIZE || i == S_SEARCH_NOTED ||
            i == S_SEARCH_FLUSH_OUT || i == S_SEARCH_FLUSH_IN || i == S_SEARCH_FLUSH_CLEAR ||
            i == S_IDEM_SCRUB || i == S_CHANGES_OLDEST || i == S_PRUNE_AGE_SCAN ||
            i == S_PRUNE_CHANGES_SCAN || i == S_SNAP_BEFORE || i == S_TENANTS_LIST ||
            i == S_ERASE_ENTRIES || i == S_ERASE_VERSIONS || i == S_ERASE_CHANGES ||
            i == S_ERASE_IDEM || i == S_ERASE_KEYS || i == S_ERASE_TENANT)
            continue;
        char sql[2048];
        snprintf(sql, sizeof sql, "EXPLAIN QUERY PLAN %s", stmt_sql[i]);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
            snprintf(why, why_len, "%s: %s", stmt_sql[i], sqlite3_errmsg(db));
            bad = -1;
            break;
        }
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *d = (const char *)sqlite3_column_text(st, 3);
            /* Every row is found by a search that uses more than the tenant
             * (a scan of a subquery's rows, found so, is fine: an unnamed
             * one, or `page`, search's page of hits; so is the full-text
             * index's, a MATCH). */
            if (d && ((strncmp(d, "SCAN", 4) == 0 && strncmp(d, "SCAN (subquery", 14) != 0 &&
                       strcmp(d, "SCAN page") != 0 && strstr(d, "VIRTUAL TABLE INDEX") == NULL) ||
                      strstr(d, "(tenant=?)") != NULL)) {
                snprintf(why, why_len, "%s: %s", stmt_sql[i], d);
                bad = 1;
                break;
            }
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return bad;
}

int md_store_sqlite_schema_version(void)
{
    return md_sqlite_migrations_count;
}

void md_store_sqlite_forget_tenants(struct md_store *base)
{
    if (!base || base->ops != &sqlite_ops)
        return;
    struct sq_store *s = (struct sq_store *)base;
    pthread_mutex_lock(&s->pool_mu);
    for (struct sq_conn *c = s->all; c; c = c->next_all)
        md_tenant_cache_clear(c->tenants);
    pthread_mutex_unlock(&s->pool_mu);
    atomic_fetch_add_explicit(&s->commit_gen, 1, memory_order_release);
    pthread_mutex_lock(&s->write_mu);
    if (s->writer)
        md_tenant_cache_clear(s->writer->tenants);
    pthread_mutex_unlock(&s->write_mu);
}

int md_store_sqlite_synchronous(struct md_store *base, int out[2])
{
    if (!base || base->ops != &sqlite_ops)
        return -1;
    struct sq_store *s = (struct sq_store *)base;
    pthread_mutex_lock(&s->write_mu);
    out[0] = s->writer ? pragma_int(s->writer->db, "PRAGMA synchronous") : -1;
    pthread_mutex_unlock(&s->write_mu);
    out[1] = pragma_int(s->ckpt_db, "PRAGMA synchronous");
    return out[0] < 0 || out[1] < 0 ? -1 : 0;
}

/* Process-wide SQLite settings, before its first use: no memory statistics
 * (their global mutex is taken on every allocation, by every thread).
 * Savepoint journals keep SQLite's default spill threshold (64 KiB): a
 * journal that spills is copied to its temporary file in one write of up
 * to that size, and Debian's SQLite 3.40.1 keeps only the low 17 bits of
 * that write's length, so a threshold of 256 KiB or more made a batch of
 * large edits fail with SQLITE_FULL ("database or disk is full") on a disk
 * with room to spare (tests/integration/concurrency.test.mjs: growing
 * edits in one batch). */
static void sqlite_setup(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

static enum md_err sq_open(const struct md_store_config *cfg, const void *own,
                           struct md_store **out, char *why, size_t why_len)
{
    (void)own; /* SQLite has no settings of its own */
    if (cfg->read_only) {
        snprintf(why, why_len, "read-only stores are not implemented yet");
        return MD_EINVAL;
    }
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, sqlite_setup);
    struct sq_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, why_len, "out of memory");
        return MD_ENOMEM;
    }
    s->base.ops = &sqlite_ops;
    atomic_init(&s->commit_gen, 1);
    s->cfg = *cfg;
    s->path = strdup(cfg->db);
    s->cfg.db = s->path;
    pthread_mutex_init(&s->pool_mu, NULL);
    pthread_mutex_init(&s->write_mu, NULL);
    pthread_mutex_init(&s->ckpt_mu, NULL);
    pthread_cond_init(&s->ckpt_cv, NULL);
    if (!s->path || conn_open(s, ROLE_WRITER_READONLY, &s->writer, why, why_len) != SQLITE_OK)
        goto fail;
    int rc =
        sqlite3_open_v2(s->path, &s->ckpt_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(why, why_len, "cannot open %s: %s", s->path, sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_busy_timeout(s->ckpt_db, s->cfg.busy_timeout_ms);
    if (exec_simple(s->ckpt_db,
                    s->cfg.durability == MD_DURABILITY_FULL ? "PRAGMA synchronous=FULL"
                                                            : "PRAGMA synchronous=NORMAL",
                    why, why_len) != SQLITE_OK)
        goto fail;
    if (pthread_create(&s->ckpt_thread, NULL, ckpt_main, s) != 0) {
        snprintf(why, why_len, "cannot start the checkpoint thread");
        goto fail;
    }
    s->ckpt_started = 1;
    *out = &s->base;
    return MD_OK;
fail:
    sq_close(&s->base);
    return MD_EDB;
}

/* Any `db` no other engine claims: a file path. */
static int sq_claims(const char *db)
{
    (void)db;
    return 1;
}

static const char *sq_redact_path(const char *db, char *buf, size_t len)
{
    snprintf(buf, len, "%s", db);
    return buf;
}

const struct md_engine md_engine_sqlite = {
    .name = "sqlite",
    .caps = SQLITE_CAPS,
    .claims = sq_claims,
    .open = sq_open,
    .redact = sq_redact_path,
    .schema_version = md_store_sqlite_schema_version,
};
