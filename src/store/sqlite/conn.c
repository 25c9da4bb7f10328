/*
 * conn.c — the SQLite engine's connections (see internal.h): opening one
 * with memoryd's settings, the writer's migrations (sql/sqlite/, recorded
 * in PRAGMA user_version), the pool of reader connections, and healing.
 *
 * conn.c knows no job of the engine: what a connection is opened with
 * comes from store.c as data (struct sq_conn_setup, s->setup): the tables
 * of statements, each prepared once per connection; the SQL functions
 * registered first; the jobs' settings of the database (the search index,
 * after the writer's migrations); the writer's WAL hook.
 *
 * A single writer connection (used by the writer thread only) and a pool
 * of reader connections, one per concurrent reader, opened on demand. A
 * store opened read-only (cfg.read_only) has readers only, opened with
 * SQLITE_OPEN_READONLY: nothing is created, migrated or written, and a
 * file that is missing, not a SQLite database or without memoryd's schema
 * is refused (sq_open_read_only, sq_check_memoryd_db).
 *
 * Healing: an error that says the file itself is in trouble (read-only,
 * I/O error, cannot open, corrupt) marks the connection broken. A broken
 * reader is closed instead of going back to the pool; a broken writer is
 * reopened at the next write transaction, so memoryd recovers by itself
 * once the cause is gone (space freed, permissions restored).
 *
 * Errors: opening answers a SQLite result code with the reason in `why`;
 * the pool logs what it cannot open.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/md_log.h"
#include "base/md_sha256.h"
#include "internal.h"

/* Generated from sql/sqlite/ by CMake (cmake/embed_sql.cmake). */
extern const char *const md_sqlite_migrations[];
extern const int md_sqlite_migrations_count;

const char *sq_stmt_sql(const struct sq_conn_setup *setup, enum stmt_id id)
{
    for (size_t i = 0; i < setup->sql_count; i++)
        if (setup->sql[i][id])
            return setup->sql[i][id];
    return NULL;
}

int sq_functions_register(sqlite3 *db, const struct sq_conn_setup *setup, char *why, size_t why_len)
{
    for (size_t i = 0; i < setup->function_count; i++) {
        const struct sq_function *f = setup->functions[i];
        int rc = sqlite3_create_function(db, f->name, f->args, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                         NULL, f->fn, NULL, NULL);
        if (rc != SQLITE_OK) {
            snprintf(why, why_len, "%s: %s", f->name, sqlite3_errmsg(db));
            return rc;
        }
    }
    return SQLITE_OK;
}

void sq_conn_close(struct sq_conn *c)
{
    if (!c)
        return;
    for (int i = 0; i < S_COUNT; i++)
        sqlite3_finalize(c->st[i]);
    sqlite3_close(c->db);
    md_tenant_cache_free(c->tenants);
    md_dirsizes_free(c->txn.sizes);
    md_buf_free(&c->txn.vtext);
    md_hist_free(c->txn.hist);
    free(c);
}

int sq_exec(sqlite3 *db, const char *sql, char *why, size_t why_len)
{
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK && why)
        snprintf(why, why_len, "%s: %s", sql, err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    return rc;
}

int sq_pragma_int(sqlite3 *db, const char *sql)
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
    return sq_pragma_int(db, "PRAGMA user_version");
}

/* Bring the schema up to date: every sql/sqlite/ migration not yet applied, in
 * one transaction, each recorded in PRAGMA user_version. */
static int migrate(sqlite3 *db, char *why, size_t why_len)
{
    int rc = sq_exec(db, "BEGIN IMMEDIATE", why, why_len);
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
        sq_exec(db, "ROLLBACK", NULL, 0);
        return SQLITE_ERROR;
    }
    for (int i = version; i < md_sqlite_migrations_count; i++) {
        rc = sq_exec(db, md_sqlite_migrations[i], why, why_len);
        if (rc == SQLITE_OK) {
            char sql[64];
            snprintf(sql, sizeof sql, "PRAGMA user_version=%d", i + 1);
            rc = sq_exec(db, sql, why, why_len);
        }
        if (rc != SQLITE_OK) {
            sq_exec(db, "ROLLBACK", NULL, 0);
            return rc;
        }
        struct md_logline l;
        md_log_begin(&l, MD_LOG_INFO, "schema migrated");
        md_log_int(&l, "version", i + 1);
        md_log_end(&l);
    }
    return sq_exec(db, "COMMIT", why, why_len);
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

/* The writer's settings, its migrations, then the setup's settings of
 * the database and its WAL hook; or, for a file that cannot be written,
 * what is left of a writer (see below). */
static int writer_setup(struct sq_store *s, struct sq_conn *c, enum sq_role role, char *why,
                        size_t why_len)
{
    if (sqlite3_db_readonly(c->db, "main") == 1) {
        /* The file cannot be written (permissions). At start, a database
         * whose schema is current is served read-only: reads work, writes
         * fail with a storage error and the writer is reopened until the
         * file is writable again. */
        int version = user_version(c->db);
        if (role == SQ_ROLE_WRITER || version != md_sqlite_migrations_count) {
            snprintf(why, why_len, "%s is read-only%s", s->path,
                     role == SQ_ROLE_WRITER ? "" : " and its schema is not current");
            return SQLITE_READONLY;
        }
        c->broken = 1;
        md_log_msg(MD_LOG_WARN, "the database is read-only: writes fail until it is writable",
                   s->path);
        return SQLITE_OK;
    }
    /* secure_delete: a deleted or overwritten content (a redacted
     * version, say) is zeroed in the file, whatever SQLite's build
     * default. auto_vacuum: a database memoryd creates can give its free
     * pages back (the checkpointer's incremental_vacuum when writes
     * pause); once a table exists it takes a VACUUM to turn it on, which
     * a database made before gets once at open (convert.c).
     * memoryd_sha256(): for migrations. */
    char pragmas[192];
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;"
             " PRAGMA journal_size_limit=%lld; PRAGMA secure_delete=ON;",
             (long long)(s->wal_limit > MD_SQLITE_WAL_BUSY_LIMIT ? s->wal_limit
                                                                 : MD_SQLITE_WAL_BUSY_LIMIT));
    int rc = sq_exec(c->db, pragmas, why, why_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(c->db, "memoryd_sha256", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                     NULL, sql_sha256, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = migrate(c->db, why, why_len); /* before preparing statements */
    if (rc == SQLITE_OK)
        rc = s->setup->settings(s, c->db, 1, why, why_len);
    if (rc == SQLITE_OK)
        sqlite3_wal_hook(c->db, s->setup->wal_hook, s);
    return rc;
}

/* The setup's SQL functions, and every statement of its tables prepared
 * once for the connection's life. A store opened read-only may be given a
 * database of another schema version (memoryd backup copies it as it is;
 * md_txn_dump refuses it): a statement its tables cannot answer is left
 * unprepared (NULL: run, it fails with SQLITE_MISUSE, logged, MD_EDB). */
static int conn_prepare(struct sq_store *s, struct sq_conn *c, char *why, size_t why_len)
{
    int rc = sq_functions_register(c->db, s->setup, why, why_len);
    if (rc != SQLITE_OK)
        return rc;
    int other_schema = s->cfg.read_only && user_version(c->db) != md_sqlite_migrations_count;
    for (int i = 0; i < S_COUNT; i++) {
        const char *sql = sq_stmt_sql(s->setup, (enum stmt_id)i);
        rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &c->st[i], NULL);
        if (rc != SQLITE_OK && other_schema)
            continue;
        if (rc != SQLITE_OK) {
            snprintf(why, why_len, "prepare %s: %s", sql, sqlite3_errmsg(c->db));
            return rc;
        }
    }
    return SQLITE_OK;
}

/* The connection's own transaction and caches (a writer's: its pending
 * directory sizes and history bookkeeping too). */
static int conn_state(struct sq_store *s, struct sq_conn *c, enum sq_role role, char *why,
                      size_t why_len)
{
    c->txn.base.store = &s->base;
    c->txn.c = c;
    c->txn.write = role != SQ_ROLE_READER;
    md_buf_init(&c->txn.vtext, (size_t)1 << 31);
    c->tenants = md_tenant_cache_new();
    if (role != SQ_ROLE_READER) {
        c->txn.sizes = md_dirsizes_new();
        c->txn.hist = md_hist_new(NULL);
    }
    if (!c->tenants || (role != SQ_ROLE_READER && (!c->txn.sizes || !c->txn.hist))) {
        snprintf(why, why_len, "out of memory");
        return SQLITE_NOMEM;
    }
    return SQLITE_OK;
}

int sq_conn_open(struct sq_store *s, enum sq_role role, struct sq_conn **out, char *why,
                 size_t why_len)
{
    struct sq_conn *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, why_len, "out of memory");
        return SQLITE_NOMEM;
    }
    int ro = s->cfg.read_only;
    int flags = ro ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    int rc = sqlite3_open_v2(s->path, &c->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(why, why_len, ro ? "%s: %s" : "cannot open %s: %s", s->path,
                 c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_extended_result_codes(c->db, 1);
    sqlite3_busy_timeout(c->db, s->cfg.busy_timeout_ms);
    if (ro) { /* before any statement that reads the file */
        rc = sq_check_memoryd_db(c->db, s->path, why, why_len);
        if (rc != SQLITE_OK)
            goto fail;
    }
    char sql[160];
    snprintf(sql, sizeof sql, "PRAGMA synchronous=%s; PRAGMA foreign_keys=OFF;",
             s->cfg.durability == MD_DURABILITY_FULL ? "FULL" : "NORMAL");
    rc = sq_exec(c->db, sql, why, why_len);
    if (rc == SQLITE_OK && role != SQ_ROLE_READER)
        rc = writer_setup(s, c, role, why, why_len);
    else if (rc == SQLITE_OK)
        rc = sq_exec(c->db, "PRAGMA query_only=1;", why, why_len);
    if (rc == SQLITE_OK)
        rc = conn_prepare(s, c, why, why_len);
    if (rc == SQLITE_OK)
        rc = conn_state(s, c, role, why, why_len);
    if (rc != SQLITE_OK)
        goto fail;
    *out = c;
    return SQLITE_OK;
fail:
    sq_conn_close(c);
    return rc == SQLITE_OK ? SQLITE_ERROR : rc;
}

/* ---- a store opened read-only ---- */

int sq_check_memoryd_db(sqlite3 *db, const char *name, char *why, size_t why_len)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT (SELECT count(*) FROM sqlite_schema WHERE type = 'table'"
                                " AND name IN ('tenants', 'entries')),"
                                " (SELECT user_version FROM pragma_user_version)",
                                -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    int tables = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    int version = rc == SQLITE_ROW ? sqlite3_column_int(st, 1) : -1;
    if (rc != SQLITE_ROW)
        snprintf(why, why_len, "%s is not a SQLite database: %s", name, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
        return rc == SQLITE_OK || rc == SQLITE_DONE ? SQLITE_ERROR : rc;
    if (tables != 2 || version < 1) {
        snprintf(why, why_len, "%s is not a memoryd database (no memoryd schema in it)", name);
        return SQLITE_ERROR;
    }
    return SQLITE_OK;
}

int sq_open_read_only(struct sq_store *s, char *why, size_t why_len)
{
    struct stat st;
    if (stat(s->path, &st) != 0) {
        snprintf(why, why_len, "%s: %s", s->path, strerror(errno));
        return SQLITE_CANTOPEN;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, why_len, "%s: is not a file", s->path);
        return SQLITE_CANTOPEN;
    }
    struct sq_conn *c = NULL;
    int rc = sq_conn_open(s, SQ_ROLE_READER, &c, why, why_len);
    if (rc != SQLITE_OK)
        return rc;
    /* The settings as the database has them (read only). */
    rc = s->setup->settings(s, c->db, 0, why, why_len);
    if (rc != SQLITE_OK) {
        sq_conn_close(c);
        return rc;
    }
    c->next_all = s->all;
    s->all = c;
    c->next_idle = s->idle;
    s->idle = c;
    return SQLITE_OK;
}

/* ---- the pool of readers ---- */

struct sq_conn *sq_reader_take(struct sq_store *s)
{
    pthread_mutex_lock(&s->pool_mu);
    struct sq_conn *c = s->idle;
    if (c)
        s->idle = c->next_idle;
    pthread_mutex_unlock(&s->pool_mu);
    if (c)
        return c;
    char why[512];
    if (sq_conn_open(s, SQ_ROLE_READER, &c, why, sizeof why) != SQLITE_OK) {
        md_log_msg(MD_LOG_ERROR, "cannot open reader connection", why);
        return NULL;
    }
    pthread_mutex_lock(&s->pool_mu);
    c->next_all = s->all;
    s->all = c;
    pthread_mutex_unlock(&s->pool_mu);
    return c;
}

void sq_reader_release(struct sq_store *s, struct sq_conn *c)
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
        sq_conn_close(c);
}

void sq_reader_end_snapshot(struct sq_conn *c)
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

void sq_readers_end_snapshots(struct sq_store *s)
{
    pthread_mutex_lock(&s->pool_mu);
    for (struct sq_conn *c = s->idle; c; c = c->next_idle)
        sq_reader_end_snapshot(c);
    pthread_mutex_unlock(&s->pool_mu);
}

/* ---- healing ---- */

/* Failures are logged the first time and then every 1000th time. */
enum md_err sq_writer_heal(struct sq_store *s)
{
    if (!s->writer->broken) {
        atomic_store(&s->writer_down, 0);
        return MD_OK;
    }
    char why[512] = "";
    struct sq_conn *c = NULL;
    if (sq_conn_open(s, SQ_ROLE_WRITER, &c, why, sizeof why) != SQLITE_OK) {
        atomic_store(&s->writer_down, 1);
        if (s->heal_failures++ % 1000 == 0) {
            struct md_logline l;
            md_log_begin(&l, MD_LOG_ERROR, "cannot reopen the writer connection");
            md_log_str(&l, "detail", why);
            md_log_int(&l, "attempts", (int64_t)s->heal_failures);
            md_log_end(&l);
        }
        return MD_EDB;
    }
    sq_conn_close(s->writer);
    s->writer = c;
    struct md_logline l;
    md_log_begin(&l, MD_LOG_WARN, "writer connection reopened");
    md_log_int(&l, "failed_attempts", (int64_t)s->heal_failures);
    md_log_end(&l);
    s->heal_failures = 0;
    atomic_store(&s->writer_down, 0);
    return MD_OK;
}
