/*
 * internal.h — what the files of the SQLite engine share (src/store/sqlite/).
 * Not a public interface: see md_store_sqlite.h.
 *
 * The files, bottom up: each calls only files above it in this list, so
 * that no two call each other in a circle (tests/tooling/layers.test.mjs);
 * store.c alone knows every job.
 *   stmt.c        handing out prepared statements, binding, running them;
 *                 result codes mapped to md_err and logged; subtree bounds
 *   conn.c        opening connections (settings, migrations; the
 *                 statements, SQL functions and hooks store.c hands it in
 *                 struct sq_conn_setup), the pool of readers, healing the
 *                 writer
 *   checkpoint.c  the checkpointer thread, the writer's WAL hook and
 *                 catch-up, the checkpoint after a redaction
 *   sizes.c       the directory sizes a write transaction keeps pending
 *   entries.c     tenant ids, single entries (read, insert)
 *   rows.c        the rows the jobs share: a version, a change-feed entry,
 *                 an API key
 *   deltas.c      versions kept as reverse deltas: a version's text
 *                 rebuilt, a version made whole, one path's versions
 *                 turned into deltas
 *   history.c     versions, the change feed, idempotency, pruning
 *   tree.c        a tenant's tree: locate, view, get, list, scan,
 *                 put_file, remove_tree, move_tree
 *   quota.c       quotas: usage, overrides, a tenant's number of files
 *   search.c      full-text search
 *   tenants.c     tenant administration (listing, erasure)
 *   txn.c         read and write transactions, savepoints; a commit writes
 *                 what sizes.c, history.c and search.c keep pending
 *   keys.c        API keys (md_store_key_*)
 *   dump.c        every row of the database for a copy (md_txn_dump), a
 *                 tenant's totals (md_txn_totals)
 *   backup.c      an online copy of the database into a file
 *                 (md_store_backup)
 *   imports.c     the marks of imports written in steps; forgetting the
 *                 history of an undone one
 *   convert.c     at open: versions kept whole turned into deltas (or,
 *                 without history, every delta made whole)
 *   expiry.c      expiry of unused files: tenants' windows, the last uses
 *                 written back, the files expired and expiring
 *   store.c       the md_store_ops table, open and close, what every
 *                 connection is opened with (struct sq_conn_setup), the
 *                 engine descriptor md_engine_sqlite, the hooks for tests
 *
 * Statements: one enum stmt_id for the engine, grouped by the file that
 * runs them; each file keeps the SQL of its own statements in a table of
 * its own (sq_<file>_sql, indexed by stmt_id, NULL for the others');
 * store.c hands conn.c the tables (struct sq_conn_setup), and
 * sq_stmt_sql() finds a statement's SQL in them. Every statement is
 * prepared once per connection. sq_stmt() hands one out (resetting a
 * borrowed row first) and counts it; sq_run() steps one that returns no
 * rows and resets it; sq_done() resets one read by hand. Errors are mapped
 * by sq_conn_rc(), which logs them and marks the connection broken when
 * the file itself is in trouble.
 */
#ifndef MD_STORE_SQLITE_INTERNAL_H
#define MD_STORE_SQLITE_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "base/md_buf.h"
#include "store/md_dirsizes.h"
#include "store/md_history.h"
#include "store/md_store_admin.h"
#include "store/md_tenant_cache.h"
#include "store/sqlite/md_store_sqlite.h"

enum stmt_id {
    /* txn.c: transactions and savepoints */
    S_BEGIN,
    S_BEGIN_IMMEDIATE,
    S_COMMIT,
    S_ROLLBACK,
    S_SAVEPOINT,
    S_RELEASE,
    S_ROLLBACK_TO,
    /* sizes.c: directory sizes */
    S_ADD_SIZE,
    /* entries.c: tenant ids, single entries */
    S_TENANT_GET,
    S_TENANT_INSERT,
    S_GET,
    S_GET_META,
    S_INSERT,
    /* tree.c: a tenant's tree */
    S_LIST,
    S_SET_CONTENT,
    S_REMOVE_ONE,
    S_REMOVE_BELOW,
    S_MOVE_ONE,
    S_MOVE_BELOW,
    S_SCAN,
    S_VERSIONS_SCAN,
    /* history.c: history, the change feed, idempotency, pruning */
    S_COUNTERS_GET,
    S_COUNTERS_SET,
    S_VER_ONE,
    S_VER_LAST_RUN,
    S_VER_ABSENT,
    S_VER_SUBTREE,
    S_VER_SUBTREE_NEW,
    S_CHANGE_INSERT,
    S_IDEM_GET,
    S_IDEM_PUT,
    S_IDEM_SCRUB,
    S_HISTORY,
    S_VERSION_GET,
    S_STATE_BEFORE,
    S_SNAP_BEFORE,
    S_CHANGES,
    S_CHANGES_OLDEST,
    S_LAST_SEQ,
    S_REDACT,
    S_PRUNE_COUNT_FIND,
    S_PRUNE_COUNT_DEL,
    S_PRUNE_MARK,
    S_PRUNE_SUBTREE_PATHS,
    S_TENANT_NEXT,
    S_PRUNE_AGE_SCAN,
    S_PRUNE_AGE_DEL,
    S_PRUNE_CHANGES_SCAN,
    S_PRUNE_CHANGES_DEL,
    S_PRUNE_IDEM,
    /* quota.c: usage, overrides */
    S_USAGE,
    S_LIMITS_SET,
    S_SENSITIVE_GET,
    S_SENSITIVE_SET,
    /* tenants.c: tenant administration */
    S_TENANTS_LIST,
    S_ERASE_ENTRIES,
    S_ERASE_VERSIONS,
    S_ERASE_CHANGES,
    S_ERASE_IDEM,
    S_ERASE_KEYS,
    S_ERASE_TENANT,
    /* search.c: full-text search */
    S_SEARCH_FTS,
    S_SEARCH_SCAN,
    S_SEARCH_OPTIMIZE,
    S_SEARCH_NOTED,
    S_SEARCH_FLUSH_OUT,
    S_SEARCH_FLUSH_IN,
    S_SEARCH_FLUSH_CLEAR,
    S_SEARCH_STEP_UPTO,
    /* keys.c: API keys */
    S_KEY_INSERT,
    S_KEY_LIST_ALL,
    S_KEY_LIST_TENANT,
    S_KEY_REVOKE,
    S_KEY_FIND,
    /* dump.c: the dump, totals */
    S_DUMP_TENANTS,
    S_DUMP_ENTRIES,
    S_DUMP_VERSIONS,
    S_DUMP_CHANGES,
    S_DUMP_IDEM,
    S_DUMP_KEYS,
    S_TOTALS,
    /* imports.c: marks of imports in steps */
    S_IMPORT_MARK,
    S_IMPORT_UNMARK,
    S_IMPORT_MARKS,
    S_IMPORT_MARK_GET,
    S_IMPORT_CUT_VERSIONS,
    S_IMPORT_CUT_CHANGES,
    /* expiry.c: expiry of unused files */
    S_EXPIRY_SET,
    S_EXPIRY_GET,
    S_USE_PUT,
    S_USE_GET,
    S_EXPIRED,
    S_EXPIRING,
    /* deltas.c: versions kept as reverse deltas */
    S_VER_CHAIN,
    S_VER_FILE,
    S_VER_WHOLE,
    S_VER_OLDER,
    S_VER_DELTAS_LEFT,
    S_VER_DELTAS_AT,
    S_VER_DELTAS_DONE,
    S_VER_RUN,
    S_VER_PATHS,
    S_VER_OF_PATH,
    S_VER_SET,
    S_VER_ANY_DELTA,
    S_VER_COUNT,
    S_COUNT
};

/* The SQL of each file's statements (the others' NULL). */
extern const char *const sq_txn_sql[S_COUNT];
extern const char *const sq_sizes_sql[S_COUNT];
extern const char *const sq_entries_sql[S_COUNT];
extern const char *const sq_tree_sql[S_COUNT];
extern const char *const sq_history_sql[S_COUNT];
extern const char *const sq_quota_sql[S_COUNT];
extern const char *const sq_tenants_sql[S_COUNT];
extern const char *const sq_search_sql[S_COUNT];
extern const char *const sq_keys_sql[S_COUNT];
extern const char *const sq_dump_sql[S_COUNT];
extern const char *const sq_imports_sql[S_COUNT];
extern const char *const sq_expiry_sql[S_COUNT];
extern const char *const sq_deltas_sql[S_COUNT];
extern const char *const sq_convert_sql[S_COUNT];

/* Columns of a row read back: a version (sq_version_of, content after
 * them), a change-feed entry (sq_change_of), an API key (sq_key_of, its
 * hash after them). */
#define SQ_VERSION_COLS                                                                            \
    "version, path, existed, redacted, sha256, size, time, command, actor, pruned_through"
/* A version's content after SQ_VERSION_COLS and its `enc`. */
#define SQ_VERSION_CONTENT_COL 11
#define SQ_CHANGE_COLS         "seq, version, versions, history_bytes, time, command, paths, actor"
#define SQ_KEY_COLS            "id, tenant, scope, name, created_at, revoked_at, path"

struct sq_conn;
struct sq_store;

/* A SQL function registered on every connection before its statements are
 * prepared (UTF-8, deterministic). */
struct sq_function {
    const char *name;
    int args;
    void (*fn)(sqlite3_context *ctx, int argc, sqlite3_value **argv);
};

/* What every connection of a store is opened with (conn.c), handed down by
 * store.c, the only file that knows every job: conn.c prepares, registers
 * and calls what it is given and knows no job itself. */
struct sq_conn_setup {
    /* The statement tables of the files (sq_<file>_sql): each statement's
     * SQL is found in the first that has it (sq_stmt_sql). */
    const char *const *const *sql;
    size_t sql_count;
    /* Registered on every connection before its statements are prepared. */
    const struct sq_function *const *functions;
    size_t function_count;
    /* The jobs' settings of the database (the search index's): on the
     * writer after its migrations (`writer`: the store's configuration
     * applied), on a read-only store's first reader (read as the database
     * has them). SQLite result code; `why` on failure. */
    int (*settings)(struct sq_store *s, sqlite3 *db, int writer, char *why, size_t why_len);
    /* The writer's WAL hook (its argument: the store). */
    int (*wal_hook)(void *arg, sqlite3 *db, const char *name, int pages);
};

/* Directory size changes the writer's open transaction has not written
 * yet (md_dirsizes.h): written once per directory, before the commit or
 * before any statement that could see or move the rows (list, remove_tree,
 * move_tree). get() adds a directory's pending change to the size it reads,
 * so commands always see true sizes. */

struct sq_txn {
    struct md_txn base;
    struct sq_conn *c;
    sqlite3_stmt *pending; /* a stepped statement whose row is still borrowed */
    int write;
    unsigned long statements;  /* run on this connection so far */
    struct md_dirsizes *sizes; /* the writer's; NULL for readers */
    struct md_hist *hist;      /* the writer's; NULL for readers */
    /* A tenant was made in this transaction / since the savepoint: a
     * rollback must forget the ids cached since (an id may be reused). */
    int made_tenant_txn, made_tenant_cmd;
    /* A redaction: the index's notes, which may hold the redacted text,
     * are indexed and deleted before COMMIT (sq_search_flush). */
    int index_now;
    struct md_buf vtext; /* a version's text rebuilt from deltas (deltas.c) */
};

/* Tenant ids a connection has looked up: md_tenant_cache.h. */

struct sq_conn {
    sqlite3 *db;
    int broken; /* an environmental error was seen: reopen before reuse */
    /* Readers: the commit generation (sq_store.commit_gen) of the read
     * transaction this connection keeps open between requests; 0: none. */
    unsigned long snap_gen;
    struct md_tenant_cache *tenants;
    sqlite3_stmt *st[S_COUNT];
    struct sq_txn txn;
    struct sq_conn *next_idle;
    struct sq_conn *next_all;
};

struct sq_store {
    struct md_store base;
    struct md_store_config cfg;
    char *path;
    const struct sq_conn_setup *setup; /* store.c's */

    pthread_mutex_t pool_mu;
    struct sq_conn *idle; /* reader connections not in use */
    struct sq_conn *all;  /* every reader connection, for close */

    struct sq_conn *writer;
    pthread_mutex_t write_mu;    /* one write transaction at a time; guards writer */
    unsigned long heal_failures; /* failed reopens of the writer in a row */
    /* The writer's state as its last heal found it (1: broken and not
     * reopened), for a readiness check that finds write_mu busy. */
    _Atomic int writer_down;

    /* Checkpointer. */
    pthread_t ckpt_thread;
    int ckpt_started;
    pthread_mutex_t ckpt_mu;
    pthread_cond_t ckpt_cv;
    int ckpt_stop;
    int wal_pages; /* frames in the WAL after the last commit */
    /* Set by the checkpointer when a busy checkpoint has copied nearly all
     * of the WAL: the writer copies the few frames committed since, before
     * its next transaction, which then starts the WAL over (SQLite restarts
     * it only when every frame is in the database; under sustained writes
     * that never happens by itself, and the WAL would grow without end). */
    atomic_int ckpt_catchup;
    /* Bumped after every commit (and when told that the database changed
     * behind the store's back): a reader keeps its read transaction from
     * one request to the next while this has not changed, so a view costs
     * no WAL lock round trip; a changed value makes it start a new one,
     * which then sees every commit acknowledged before. */
    atomic_ulong commit_gen;
    struct timespec last_commit; /* CLOCK_MONOTONIC */
    sqlite3 *ckpt_db;
    /* The writer's (write_mu): the next tenant id to prune by age; a
     * redaction committed whose bytes must leave the WAL (a TRUNCATE
     * checkpoint after the commit). */
    int64_t prune_next_tenant;
    int scrub_wal;
    /* The -wal file's size after a checkpoint, at most (md_sqlite_config). */
    int64_t wal_limit;
    /* No full-text index (--search off), set when the writer opens (a
     * read-only store: as the database has it); with cfg.defer_build, the
     * index --search on wants is left to sq_build (search_pending) and
     * search_off stays set until it is built. Read by every thread. */
    _Atomic int search_off;
    _Atomic int search_pending;
};

/* Bounds of the subtree of `dir`: (dir + "/", dir + "0"). */
struct bounds {
    char lo[4100];
    char hi[4100];
    char *lo_heap, *hi_heap;
    const char *lop, *hip;
    size_t n;
};

/* ---- stmt.c: statements, errors ---- */

int64_t sq_now_ms(void);
void sq_log(sqlite3 *db, int rc, const char *what);
enum md_err sq_conn_rc(struct sq_conn *c, int rc, const char *what);
sqlite3_stmt *sq_stmt(struct sq_txn *t, enum stmt_id id);
void sq_done(sqlite3_stmt *st);
void sq_bind_text(sqlite3_stmt *st, int i, const char *p, size_t n);
enum md_err sq_run(struct sq_txn *t, sqlite3_stmt *st, const char *what);
enum md_err sq_bounds_make(struct bounds *b, const char *dir, size_t len);
void sq_bounds_free(struct bounds *b);
void sq_bind_named_text(sqlite3_stmt *st, const char *name, const char *p, size_t n);
void sq_bind_named_int64(sqlite3_stmt *st, const char *name, int64_t v);
/* A column's integer, or `none` when it is NULL. */
int64_t sq_column_or(sqlite3_stmt *st, int col, int64_t none);
/* Characters (not bytes) of a UTF-8 string: SQLite's substr() counts them. */
int64_t sq_utf8_chars(const char *s, size_t n);

/* ---- conn.c: connections ---- */

enum sq_role {
    SQ_ROLE_READER,
    SQ_ROLE_WRITER,          /* must be able to write */
    SQ_ROLE_WRITER_READONLY, /* at start: a read-only but current database is accepted */
};
/* The SQL of statement `id`, from the table of the file that owns it. */
const char *sq_stmt_sql(const struct sq_conn_setup *setup, enum stmt_id id);
/* Register the setup's SQL functions on `db`. SQLite result code; `why`
 * ("name: error") on failure. */
int sq_functions_register(sqlite3 *db, const struct sq_conn_setup *setup, char *why,
                          size_t why_len);
/* Open a connection with memoryd's settings and prepared statements (a
 * writer also migrates the schema and sets the search index up). SQLite
 * result code; `why` on failure. */
int sq_conn_open(struct sq_store *s, enum sq_role role, struct sq_conn **out, char *why,
                 size_t why_len);
void sq_conn_close(struct sq_conn *c);
/* sqlite3_exec, with the statement and the error in `why` (may be NULL). */
int sq_exec(sqlite3 *db, const char *sql, char *why, size_t why_len);
/* The integer a PRAGMA query such as "PRAGMA user_version" answers; -1 on
 * error. */
int sq_pragma_int(sqlite3 *db, const char *sql);
/* A reader connection from the pool, or a new one; NULL (logged) when it
 * cannot be opened. */
struct sq_conn *sq_reader_take(struct sq_store *s);
/* Give a reader back to the pool, or close it when it is broken. */
void sq_reader_release(struct sq_store *s, struct sq_conn *c);
/* End the read transaction a reader keeps open (the connection is not in
 * use by anyone else). */
void sq_reader_end_snapshot(struct sq_conn *c);
/* End the read transactions idle readers keep, so that a checkpoint can
 * copy every frame and the WAL can start over. */
void sq_readers_end_snapshots(struct sq_store *s);
/* Reopen a broken writer connection; write_mu is held. */
enum md_err sq_writer_heal(struct sq_store *s);
/* A store opened read-only (cfg.read_only): the file is checked (a file,
 * a SQLite database with memoryd's schema in it) and its first reader
 * opened into the pool. SQLite result code (or SQLITE_ERROR); `why` says
 * what is wrong with the file as memoryd backup words it. */
int sq_open_read_only(struct sq_store *s, char *why, size_t why_len);
/* Whether `db` holds memoryd's schema (its tables tenants and entries, a
 * schema version of 1 or more): SQLITE_OK, or an error with the reason in
 * `why` (`name` names the database in it). */
int sq_check_memoryd_db(sqlite3 *db, const char *name, char *why, size_t why_len);

/* ---- checkpoint.c: the checkpointer ---- */

/* The writer's WAL hook: frames in the WAL, the time of the commit. */
int sq_wal_hook(void *arg, sqlite3 *db, const char *name, int pages);
/* Open the checkpointer's connection and start its thread. SQLite result
 * code (or SQLITE_ERROR); `why` on failure. */
int sq_ckpt_start(struct sq_store *s, char *why, size_t why_len);
/* Stop the thread (when started) and close its connection. */
void sq_ckpt_stop(struct sq_store *s);
/* The writer's part of a busy checkpoint (write_mu held). */
void sq_ckpt_catch_up(struct sq_store *s);
/* After a commit that redacted or erased content (write_mu held): every
 * frame into the database file, the WAL emptied. */
void sq_scrub_wal(struct sq_store *s);

/* ---- sizes.c: directory sizes ---- */

/* Write every pending directory size change (each once). */
enum md_err sq_sizes_flush(struct sq_txn *t);
/* Add `delta` to the size of every ancestor directory of `path` (root
 * included): kept pending in a write transaction. */
enum md_err sq_add_to_ancestors(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                                int64_t delta);

/* ---- entries.c: tenant ids, single entries ---- */

/* A tenant's id by name. create=0: MD_ENOENT when the tenant has no data
 * yet; create=1: creates the tenant and its root entry when missing. */
enum md_err sq_tenant_id(struct sq_txn *t, const char *name, int create, int64_t *id);
/* The entry at `path`; a directory's size with its pending change. With
 * content, its row stays borrowed until the next statement. */
enum md_err sq_get_entry(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                         int want_content, struct md_entry *e);
/* Insert the entry at `path`: a file with its content (content_len bytes)
 * and SHA-256, or a directory (size 0; content and sha256 unused). */
enum md_err sq_insert_entry(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                            enum md_kind kind, const char *content, size_t content_len,
                            const unsigned char *sha256);

/* ---- rows.c: the rows the jobs share ---- */

/* The version in the columns SQ_VERSION_COLS (0..9) of `st`; its content
 * from column `content_col` (-1: none), its encoding (`enc`) in the column
 * before. Strings borrowed from the row. Returns 1 when the content read is
 * a delta, to be rebuilt (sq_version_rebuild) before it is given out. */
int sq_version_of(sqlite3_stmt *st, struct md_version *v, int content_col);
/* The change-feed entry in the columns SQ_CHANGE_COLS of `st` (borrowed). */
void sq_change_of(sqlite3_stmt *st, struct md_change *c);
/* The key in the columns SQ_KEY_COLS (0..6) of `st`. */
void sq_key_of(sqlite3_stmt *st, struct md_key_info *k);

/* ---- deltas.c: versions kept as reverse deltas (md_delta.h) ---- */

extern const struct sq_function sq_delta_function;
/* A blob copied out of a row (the row moves on): `p` malloc'd, the
 * caller's to free. */
struct sq_blob {
    char *p;
    size_t n;
};
enum md_err sq_blob_copy(struct sq_blob *b, const void *p, size_t n);
/* v's content, read as a delta, rebuilt into the txn's buffer (valid until
 * its next rebuild) and checked against its hash. */
enum md_err sq_version_rebuild(struct sq_txn *t, int64_t tenant, struct md_version *v);
/* The newest version of (tenant, path) older than `version`, if a delta,
 * stored whole (before `version` is redacted). */
enum md_err sq_version_older_whole(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                                   int64_t version);
/* Every delta stored whole (memoryd runs without history). */
enum md_err sq_deltas_materialize(struct sq_txn *t);
/* The versions of (tenant, path), all whole, turned into deltas against
 * their successors; *converted counts them. */
enum md_err sq_deltas_convert_path(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                                   int64_t *converted);

/* ---- history.c: the md_store_ops members of md_history.h, and what tree.c
 * and txn.c call of it ---- */

enum md_err sq_cmd_begin(struct md_txn *base, const char *tenant, const struct md_write_meta *m);
void sq_cmd_recorded(struct md_txn *base, struct md_change_rec *rec);
enum md_err sq_cmd_end(struct md_txn *base, const char *const *paths, const size_t *lens, size_t n,
                       struct md_change_rec *rec);
enum md_err sq_idem_get(struct md_txn *base, const char *tenant, const char *key, size_t key_len,
                        struct md_idem *out);
enum md_err sq_idem_put(struct md_txn *base, const char *tenant, const char *key, size_t key_len,
                        const struct md_idem *answer, const char *path, size_t path_len);
enum md_err sq_history(struct md_txn *base, const char *tenant, const char *path, size_t len,
                       int64_t below, size_t limit, md_version_cb cb, void *ctx);
enum md_err sq_version_get(struct md_txn *base, const char *tenant, int64_t version,
                           int want_content, struct md_version *v);
enum md_err sq_state_before(struct md_txn *base, const char *tenant, const char *dir, size_t len,
                            int64_t *before, md_version_cb cb, void *ctx);
enum md_err sq_changes(struct md_txn *base, const char *tenant, int64_t after, size_t limit,
                       md_change_cb cb, void *ctx, int64_t *oldest, int64_t *last_seq);
enum md_err sq_redact(struct md_txn *base, const char *tenant, int64_t version);
enum md_err sq_prune(struct md_txn *base, int64_t now_ms, size_t budget, struct md_pruned *deleted);
/* Before a commit: write the changed tenant counters. */
enum md_err sq_counters_flush(struct sq_txn *t);
/* Versions of what put_file / remove_tree / move_tree are about to change
 * (nothing when history is off or no command is current): the file at
 * `path` (old_size >= 0) or its absence (old_size < 0); every file at or
 * below `path`, and for a move the absence of each at `to`. */
enum md_err sq_record_file(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                           int64_t old_size, const char *content, size_t content_len);
enum md_err sq_record_subtree(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                              int64_t size, const char *to, size_t tlen);

/* ---- tree.c: a tenant's tree ---- */

enum md_err sq_view(struct md_txn *base, const char *tenant, const char *path, size_t len,
                    struct md_entry *e, size_t max_entries, md_list_cb cb, void *ctx,
                    int *complete);
enum md_err sq_locate(struct md_txn *base, const char *tenant, struct md_locate *l, size_t n,
                      int *tenant_exists);
enum md_err sq_put_file(struct md_txn *base, const char *tenant, const char *path, size_t len,
                        const char *content, size_t content_len,
                        const unsigned char sha256[MD_SHA256_LEN], int64_t old_size,
                        size_t parents_from);
enum md_err sq_remove_tree(struct md_txn *base, const char *tenant, const char *path, size_t len,
                           int64_t size);
enum md_err sq_move_tree(struct md_txn *base, const char *tenant, const char *from, size_t flen,
                         const char *to, size_t tlen, int64_t size, size_t parents_from);
enum md_err sq_get(struct md_txn *base, const char *tenant, const char *path, size_t len,
                   int want_content, struct md_entry *e);
enum md_err sq_list(struct md_txn *base, const char *tenant, const char *dir, size_t len,
                    md_list_cb cb, void *ctx);
enum md_err sq_scan(struct md_txn *base, const char *tenant, const char *after, size_t after_len,
                    size_t max_rows, int64_t max_bytes, md_scan_cb cb, void *ctx, int *more);
enum md_err sq_versions_scan(struct md_txn *base, const char *tenant, int64_t after,
                             size_t max_rows, int64_t max_bytes, md_version_cb cb, void *ctx,
                             int *more);

/* ---- quota.c: quotas (md_quota.h) ---- */

enum md_err sq_usage(struct md_txn *base, const char *tenant, struct md_usage *u);
enum md_err sq_set_limits(struct md_txn *base, const char *tenant, int64_t max_bytes,
                          int64_t max_files);
enum md_err sq_sensitive_get(struct md_txn *base, const char *tenant, int *mode);
enum md_err sq_sensitive_set(struct md_txn *base, const char *tenant, int mode);
/* The number of files of tenant `id` (0 when it has no row); `what` names
 * the operation in the log of an error. */
enum md_err sq_tenant_files(struct sq_txn *t, int64_t id, int64_t *files, const char *what);

/* ---- search.c: full-text search (md_store.h, md_search_terms.h) ---- */

/* Every note of search_pending into the index, in t, the notes emptied
 * (an erasure's, a redaction's: no old content left in the notes).
 * Nothing when the index is off. */
enum md_err sq_search_flush(struct sq_txn *t);
/* The notes' first ids (a step's) into the index, in t: *noted 0 when
 * there were none, *more when notes are left after them. */
enum md_err sq_search_step(struct sq_txn *t, int *noted, int *more);
/* memoryd_score(content, terms), for the statements of search. */
extern const struct sq_function sq_search_score;
/* After an erasure's deletes, in its transaction: rewrite the index into
 * one segment, so that no word of the erased files is left in older
 * segments (FTS5 records a delete as a new segment; SQLite 3.40 has no
 * secure-delete). Costs a rewrite of the whole index. */
enum md_err sq_search_purge(struct sq_txn *t);
/* On the writer, after migrating: --search on puts the index's triggers
 * back and refills the index when they are missing; --search off drops
 * them and empties it; KEEP changes nothing. *off: whether the index is
 * off now. SQLite result code; `why` on failure. */
/* The --search setting applied on the writer's connection `db` (MD_SEARCH_KEEP
 * only reads it): *off set; when the index must be built and `pending` is
 * not NULL, *pending is set instead and the build left to sq_search_build. */
int sq_search_setting(sqlite3 *db, enum md_search_mode mode, _Atomic int *off, _Atomic int *pending,
                      char *why, size_t why_len);
/* md_store_build, md_store_building (search.c). */
enum md_err sq_build(struct md_store *base, char *why, size_t why_len);
int sq_building(struct md_store *base);
enum md_err sq_search(struct md_txn *base, const char *tenant, const struct md_search_terms *q,
                      md_search_cb cb, void *ctx);

/* ---- tenants.c: tenant administration ---- */

enum md_err sq_tenants(struct md_txn *base, const char *after, size_t limit, md_tenant_cb cb,
                       void *ctx);
enum md_err sq_erase(struct md_txn *base, const char *tenant, struct md_erased *out);

/* ---- txn.c: transactions ---- */

/* A read transaction; `fresh`: a new one even if the kept one is current. */
enum md_err sq_read_begin_at(struct sq_store *s, int fresh, struct md_txn **out);
enum md_err sq_read_begin(struct md_store *base, struct md_txn **out);
enum md_err sq_snapshot_begin(struct md_store *base, struct md_txn **out);
void sq_txn_end(struct md_txn *base);
enum md_err sq_write_begin(struct md_store *base, struct md_txn **out);
enum md_err sq_commit(struct md_txn *base);
void sq_rollback(struct md_txn *base);
/* md_store_index_step: a step of the search index (sq_search_step) in a
 * write transaction of its own. */
enum md_err sq_index_step(struct md_store *base, int *more);
enum md_err sq_savepoint(struct md_txn *base);
enum md_err sq_release(struct md_txn *base, int rollback);
enum md_err sq_batch_begin(struct md_txn *base, const struct md_batch *b);
enum md_err sq_flush(struct md_txn *base);
void sq_stats(struct md_txn *base, struct md_txn_stats *st);

/* ---- keys.c: API keys ---- */

enum md_err sq_key_put(struct md_store *base, const struct md_key_info *k,
                       const unsigned char *hash);
enum md_err sq_key_list(struct md_store *base, const char *tenant, md_key_cb cb, void *ctx);
enum md_err sq_key_revoke(struct md_store *base, const char *id, int64_t now);
enum md_err sq_key_find(struct md_store *base, const unsigned char *hash, struct md_key_info *out);

/* ---- dump.c: the dump, totals ---- */

enum md_err sq_dump(struct md_txn *base, const struct md_dump_sink *sink, void *ctx);
enum md_err sq_totals(struct md_txn *base, const char *tenant, struct md_totals *out);

/* ---- backup.c: an online copy ---- */

enum md_err sq_backup(struct md_store *base, const char *path, const volatile int *stop,
                      struct md_progress *progress, struct md_backup_info *out, char *why,
                      size_t why_len);

/* ---- imports.c: marks of imports in steps ---- */

enum md_err sq_import_mark(struct md_txn *base, const char *tenant);
enum md_err sq_import_unmark(struct md_txn *base, const char *tenant);
enum md_err sq_import_marks(struct md_txn *base, md_import_mark_cb cb, void *ctx);
enum md_err sq_import_forget(struct md_txn *base, const char *tenant);

/* ---- convert.c: versions turned into deltas at open ---- */

/* At open, on the writer: versions the migration left whole turned into
 * deltas (with history on), or every delta stored whole (history off);
 * then a database with auto_vacuum NONE switched to INCREMENTAL (VACUUM). */
enum md_err sq_deltas_open(struct sq_store *s);

/* ---- expiry.c: expiry of unused files (md_store.h) ---- */

enum md_err sq_expiry_set(struct md_txn *base, const char *tenant, int64_t expire_ms);
enum md_err sq_expiry_get(struct md_txn *base, const char *tenant, int64_t *expire_ms);
enum md_err sq_use_put(struct md_txn *base, const char *tenant, const char *path, size_t len,
                       int64_t used_ms);
enum md_err sq_use_get(struct md_txn *base, const char *tenant, const char *path, size_t len,
                       int64_t *used_ms, int64_t *size);
enum md_err sq_expired(struct md_txn *base, int64_t now_ms, int64_t default_ms, size_t limit,
                       md_use_cb cb, void *ctx);
enum md_err sq_expiring(struct md_txn *base, const char *tenant, int64_t before_ms,
                        const char *after, size_t after_len, size_t limit, md_use_cb cb, void *ctx);

#endif
