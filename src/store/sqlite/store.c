/*
 * store.c — the SQLite engine of md_store (see md_store.h,
 * md_store_sqlite.h): its md_store_ops table, opening and closing a store,
 * the engine descriptor md_engine_sqlite, and the hooks for tests.
 *
 * One database file in WAL mode: a single writer connection (the writer
 * thread's), a pool of reader connections (conn.c) and a checkpointer
 * thread with its own connection (checkpoint.c). Every statement is
 * prepared once per connection and reused; every query is bound to a
 * tenant id. The operations live in the files of their job (internal.h);
 * store.c, on top of them, is the only file that knows every job: it
 * hands conn.c what every connection is opened with (conn_setup: the
 * statement tables, the SQL functions, the search index's setting, the
 * WAL hook).
 * Opened read-only (cfg.read_only), a store has readers alone: no writer,
 * no checkpointer thread; write transactions fail with MD_EINVAL.
 *
 * Errors: opening answers MD_EDB (MD_ENOMEM) with the reason in `why`;
 * the operations answer md_err, SQLite's error logged.
 */
#include "store/sqlite/md_store_sqlite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

/* Generated from sql/sqlite/ by CMake (cmake/embed_sql.cmake). */
extern const int md_sqlite_migrations_count;

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
    enum md_err e = sq_read_begin_at((struct sq_store *)base, 1, &t); /* the database now */
    if (e)
        return e;
    int64_t id = 0;
    e = sq_tenant_id((struct sq_txn *)t, "", 0, &id);
    md_txn_end(t);
    if (e != MD_ENOENT)
        return e ? e : MD_EDB; /* no tenant has an empty name */
    /* A broken writer that cannot be reopened means writes fail. When
     * write_mu is busy (a write, or the checkpointer's step), the state
     * the last reopen attempt found answers: a write that failed for want
     * of a writer tried first, so readiness follows it however the lock is
     * timed. A store opened read-only has none: it answers when it can be
     * read. */
    struct sq_store *s = (struct sq_store *)base;
    if (s->cfg.read_only)
        return MD_OK;
    if (pthread_mutex_trylock(&s->write_mu) != 0)
        return atomic_load(&s->writer_down) ? MD_EDB : MD_OK;
    e = sq_writer_heal(s);
    pthread_mutex_unlock(&s->write_mu);
    return e;
}

/* An embedded engine: nothing goes over a wire. */
static void sq_wire(struct md_store *base, struct md_txn_stats *st)
{
    (void)base;
    *st = (struct md_txn_stats){0, 0};
}

/* One process writes the database: the writer's commit hook says it all. */
static enum md_err sq_watch(struct md_store *base, md_watch_cb cb, void *ctx)
{
    (void)base, (void)cb, (void)ctx;
    return MD_OK;
}

/* ---- open / close ---- */

static void sq_close(struct md_store *base)
{
    struct sq_store *s = (struct sq_store *)base;
    sq_ckpt_stop(s);
    for (struct sq_conn *c = s->all, *next; c; c = next) {
        next = c->next_all;
        sq_conn_close(c);
    }
    if (s->writer) {
        int rc =
            sqlite3_wal_checkpoint_v2(s->writer->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
        if (rc != SQLITE_OK)
            sq_log(s->writer->db, rc, "final checkpoint");
        sq_conn_close(s->writer);
    }
    pthread_mutex_destroy(&s->pool_mu);
    pthread_mutex_destroy(&s->write_mu);
    pthread_mutex_destroy(&s->ckpt_mu);
    pthread_cond_destroy(&s->ckpt_cv);
    free(s->path);
    free(s);
}

#define SQLITE_CAPS                                                                                \
    (MD_STORE_CAP_BACKUP | MD_STORE_CAP_DUMP | MD_STORE_CAP_IMPORT_MARK | MD_STORE_CAP_INDEX_APART)

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
    .index_step = sq_index_step,
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
    .key_put = sq_key_put,
    .key_list = sq_key_list,
    .key_revoke = sq_key_revoke,
    .key_find = sq_key_find,
    .dump = sq_dump,
    .totals = sq_totals,
    .backup = sq_backup,
    .build = sq_build,
    .building = sq_building,
    .import_mark = sq_import_mark,
    .import_unmark = sq_import_unmark,
    .import_marks = sq_import_marks,
    .import_forget = sq_import_forget,
    .cmd_recorded = sq_cmd_recorded,
    .sensitive_get = sq_sensitive_get,
    .sensitive_set = sq_sensitive_set,
    .versions_scan = sq_versions_scan,
    .expiry_set = sq_expiry_set,
    .expiry_get = sq_expiry_get,
    .use_put = sq_use_put,
    .use_get = sq_use_get,
    .expired = sq_expired,
    .expiring = sq_expiring,
};

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

/* The jobs' settings of the database: the search index's (search.c), on
 * the writer after its migrations with --search applied, on a read-only
 * store's first reader as the database has it (MD_SEARCH_KEEP only
 * reads). */
static int db_settings(struct sq_store *s, sqlite3 *db, int writer, char *why, size_t why_len)
{
    return sq_search_setting(db, writer ? s->cfg.search : MD_SEARCH_KEEP, &s->search_off,
                             writer && s->cfg.defer_build ? &s->search_pending : NULL, why,
                             why_len);
}

/* The statements of every file, in the order of enum stmt_id's groups. */
static const char *const *const sql_tables[] = {
    sq_txn_sql,     sq_sizes_sql,   sq_entries_sql, sq_tree_sql,    sq_history_sql,
    sq_quota_sql,   sq_tenants_sql, sq_search_sql,  sq_keys_sql,    sq_dump_sql,
    sq_imports_sql, sq_expiry_sql,  sq_deltas_sql,  sq_convert_sql,
};
static const struct sq_function *const sql_functions[] = {&sq_search_score, &sq_delta_function};

/* What every connection is opened with (conn.c). */
static const struct sq_conn_setup conn_setup = {
    .sql = sql_tables,
    .sql_count = sizeof sql_tables / sizeof sql_tables[0],
    .functions = sql_functions,
    .function_count = sizeof sql_functions / sizeof sql_functions[0],
    .settings = db_settings,
    .wal_hook = sq_wal_hook,
};

/* The writer (the file created and migrated when needed) and the
 * checkpointer; read-only, the first reader alone (conn.c). */
static int open_connections(struct sq_store *s, char *why, size_t why_len)
{
    if (s->cfg.read_only)
        return sq_open_read_only(s, why, why_len);
    int rc = sq_conn_open(s, SQ_ROLE_WRITER_READONLY, &s->writer, why, why_len);
    if (rc != SQLITE_OK)
        return rc;
    atomic_store(&s->writer_down, s->writer->broken); /* a read-only file */
    return sq_ckpt_start(s, why, why_len);
}

static enum md_err sq_open(const struct md_store_config *cfg, const void *own,
                           struct md_store **out, char *why, size_t why_len)
{
    const struct md_sqlite_config *sc = own;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, sqlite_setup);
    struct sq_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, why_len, "out of memory");
        return MD_ENOMEM;
    }
    s->base.ops = &sqlite_ops;
    s->setup = &conn_setup;
    s->wal_limit = sc && sc->wal_size_limit > 0 ? sc->wal_size_limit : MD_SQLITE_WAL_LIMIT;
    atomic_init(&s->commit_gen, 1);
    s->cfg = *cfg;
    s->path = strdup(cfg->db);
    s->cfg.db = s->path;
    pthread_mutex_init(&s->pool_mu, NULL);
    pthread_mutex_init(&s->write_mu, NULL);
    pthread_mutex_init(&s->ckpt_mu, NULL);
    pthread_cond_init(&s->ckpt_cv, NULL);
    if (!s->path || open_connections(s, why, why_len) != SQLITE_OK) {
        sq_close(&s->base);
        return MD_EDB;
    }
    if (sq_deltas_open(s) != MD_OK) {
        snprintf(why, why_len, "cannot turn the versions into deltas (see the log)");
        sq_close(&s->base);
        return MD_EDB;
    }
    *out = &s->base;
    return MD_OK;
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

int md_store_sqlite_schema_version(void)
{
    return md_sqlite_migrations_count;
}

const struct md_engine md_engine_sqlite = {
    .name = "sqlite",
    .caps = SQLITE_CAPS,
    .claims = sq_claims,
    .open = sq_open,
    .redact = sq_redact_path,
    .schema_version = md_store_sqlite_schema_version,
};

/* ---- hooks for tests (md_store_sqlite.h) ---- */

/* Statements whose plan is not checked, by design: reads a tenant's
 * idempotency keys of the last day: only when a version is redacted,
 * which is rare (an index would cost every keyed write). The others read a
 * tenant's first rows in key order and stop (LIMIT, or min() of the key's
 * next column). Tenant administration reads or deletes all of a tenant's
 * rows by design: the listing counts its versions on the primary key
 * (tenant, ...), the erasure deletes every row (md_store.h). A search with
 * no word long enough for the index reads the tenant's files below the
 * path (md_txn_search). A listing of API keys reads them all, or all of
 * a tenant's (memoryd keys list). The dump and the totals read every row
 * of the database, or of a tenant, by design (md_txn_dump,
 * md_txn_totals). The marks of imports are read whole, once at start (a
 * row per import running when memoryd stopped). Expiry's sweep reads the
 * files of the tenants whose expiry is on, once per granularity, and GET
 * /v1/expiring a tenant's files, by design (md_txn_expired,
 * md_txn_expiring); a use written back selects its one constant row (the
 * file's existence a lookup of the key), and so does a file's version (the
 * path's newest version's run, a lookup of the key, S_VER_ONE). The
 * conversion of versions into
 * deltas walks every path with versions once, at open, and its one-row
 * work list (deltas.c). */
static const unsigned char plan_exempt[S_COUNT] = {
    [S_SEARCH_SCAN] = 1,      [S_SEARCH_OPTIMIZE] = 1,
    [S_SEARCH_NOTED] = 1,     [S_SEARCH_FLUSH_OUT] = 1,
    [S_SEARCH_FLUSH_IN] = 1,  [S_SEARCH_FLUSH_CLEAR] = 1,
    [S_IDEM_SCRUB] = 1,       [S_CHANGES_OLDEST] = 1,
    [S_PRUNE_AGE_SCAN] = 1,   [S_PRUNE_CHANGES_SCAN] = 1,
    [S_SNAP_BEFORE] = 1,      [S_TENANTS_LIST] = 1,
    [S_ERASE_ENTRIES] = 1,    [S_ERASE_VERSIONS] = 1,
    [S_ERASE_CHANGES] = 1,    [S_ERASE_IDEM] = 1,
    [S_ERASE_KEYS] = 1,       [S_ERASE_TENANT] = 1,
    [S_KEY_LIST_ALL] = 1,     [S_KEY_LIST_TENANT] = 1,
    [S_DUMP_TENANTS] = 1,     [S_DUMP_ENTRIES] = 1,
    [S_DUMP_VERSIONS] = 1,    [S_DUMP_CHANGES] = 1,
    [S_DUMP_IDEM] = 1,        [S_DUMP_KEYS] = 1,
    [S_TOTALS] = 1,           [S_IMPORT_MARKS] = 1,
    [S_EXPIRED] = 1,          [S_EXPIRING] = 1,
    [S_USE_PUT] = 1,          [S_VER_PATHS] = 1,
    [S_VER_ONE] = 1,          [S_VER_ANY_DELTA] = 1,
    [S_VER_COUNT] = 1,        [S_VER_DELTAS_LEFT] = 1,
    [S_VER_DELTAS_AT] = 1,    [S_VER_DELTAS_DONE] = 1,
    [S_SEARCH_STEP_UPTO] = 1, /* the index's step: every tenant's first notes */
};

/* Whether a line of EXPLAIN QUERY PLAN finds its rows by a search that
 * uses more than the tenant (a scan of a subquery's rows, found so, is
 * fine: an unnamed one, or `page`, search's page of hits, or `candidates`,
 * its candidates; so is the full-text index's, a MATCH). */
static int plan_line_ok(const char *d)
{
    return !d || !((strncmp(d, "SCAN", 4) == 0 && strncmp(d, "SCAN (subquery", 14) != 0 &&
                    strcmp(d, "SCAN page") != 0 && strcmp(d, "SCAN candidates") != 0 &&
                    strstr(d, "VIRTUAL TABLE INDEX") == NULL) ||
                   strstr(d, "(tenant=?)") != NULL);
}

/* 0 when the plan of `sql` is fine, 1 when not, -1 on error; `why`. */
static int check_plan(sqlite3 *db, const char *sql, char *why, size_t why_len)
{
    char explain[2048];
    snprintf(explain, sizeof explain, "EXPLAIN QUERY PLAN %s", sql);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, explain, -1, &st, NULL) != SQLITE_OK) {
        snprintf(why, why_len, "%s: %s", sql, sqlite3_errmsg(db));
        return -1;
    }
    int bad = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *d = (const char *)sqlite3_column_text(st, 3);
        if (!plan_line_ok(d)) {
            snprintf(why, why_len, "%s: %s", sql, d);
            bad = 1;
            break;
        }
    }
    sqlite3_finalize(st);
    return bad;
}

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
    if (sq_functions_register(db, &conn_setup, why, why_len) != SQLITE_OK) {
        sqlite3_close(db);
        return -1;
    }
    for (int i = 0; i < S_COUNT && !bad; i++)
        if (!plan_exempt[i])
            bad = check_plan(db, sq_stmt_sql(&conn_setup, (enum stmt_id)i), why, why_len);
    sqlite3_close(db);
    return bad;
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
    out[0] = s->writer ? sq_pragma_int(s->writer->db, "PRAGMA synchronous") : -1;
    pthread_mutex_unlock(&s->write_mu);
    out[1] = sq_pragma_int(s->ckpt_db, "PRAGMA synchronous");
    return out[0] < 0 || out[1] < 0 ? -1 : 0;
}
