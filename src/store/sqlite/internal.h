/*
 * store_sqlite_internal.h — what the files of the SQLite backend share:
 * store_sqlite.c (connections, transactions, the tree) and
 * store_sqlite_history.c (versions, the change feed, idempotency,
 * pruning). Not a public interface: see md_store_sqlite.h.
 *
 * Conventions: statements are prepared once per connection (stmt_sql in
 * store_sqlite.c, indexed by enum stmt_id); sq_stmt() hands one out
 * (resetting a borrowed row first) and counts it; sq_run() steps one that
 * returns no rows and resets it; sq_done() resets one read by hand. Errors
 * are mapped by sq_conn_rc(), which logs them and marks the connection
 * broken when the file itself is in trouble.
 */
#ifndef MD_STORE_SQLITE_INTERNAL_H
#define MD_STORE_SQLITE_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "store/md_dirsizes.h"
#include "store/md_history.h"
#include "store/md_tenant_cache.h"
#include "store/sqlite/md_store_sqlite.h"

enum stmt_id {
    S_BEGIN,
    S_BEGIN_IMMEDIATE,
    S_COMMIT,
    S_ROLLBACK,
    S_SAVEPOINT,
    S_RELEASE,
    S_ROLLBACK_TO,
    S_TENANT_GET,
    S_TENANT_INSERT,
    S_GET,
    S_GET_META,
    S_LIST,
    S_INSERT,
    S_SET_CONTENT,
    S_REMOVE_ONE,
    S_REMOVE_BELOW,
    S_MOVE_ONE,
    S_MOVE_BELOW,
    S_ADD_SIZE,
    /* history, the change feed, idempotency (store_sqlite_history.c) */
    S_COUNTERS_GET,
    S_COUNTERS_SET,
    S_VER_ONE,
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
    S_USAGE,
    S_LIMITS_SET,
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
    S_TENANTS_LIST,
    S_ERASE_ENTRIES,
    S_ERASE_VERSIONS,
    S_ERASE_CHANGES,
    S_ERASE_IDEM,
    S_ERASE_KEYS,
    S_ERASE_TENANT,
    S_SCAN,
    S_SEARCH_FTS,
    S_SEARCH_SCAN,
    S_SEARCH_OPTIMIZE,
    S_SEARCH_NOTED,
    S_SEARCH_FLUSH_OUT,
    S_SEARCH_FLUSH_IN,
    S_SEARCH_FLUSH_CLEAR,
    S_COUNT
};

struct sq_conn;

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

    pthread_mutex_t pool_mu;
    struct sq_conn *idle; /* reader connections not in use */
    struct sq_conn *all;  /* every reader connection, for close */

    struct sq_conn *writer;
    pthread_mutex_t write_mu;    /* one write transaction at a time; guards writer */
    unsigned long heal_failures; /* failed reopens of the writer in a row */

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
    int search_off; /* no full-text index (--search off), set when the writer opens */
};

/* Bounds of the subtree of `dir`: (dir + "/", dir + "0"). */
struct bounds {
    char lo[4100];
    char hi[4100];
    char *lo_heap, *hi_heap;
    const char *lop, *hip;
    size_t n;
};

int64_t sq_now_ms(void);
void sq_log(sqlite3 *db, int rc, const char *what);
enum md_err sq_conn_rc(struct sq_conn *c, int rc, const char *what);
sqlite3_stmt *sq_stmt(struct sq_txn *t, enum stmt_id id);
void sq_done(sqlite3_stmt *st);
void sq_bind_text(sqlite3_stmt *st, int i, const char *p, size_t n);
enum md_err sq_run(struct sq_txn *t, sqlite3_stmt *st, const char *what);
enum md_err sq_bounds_make(struct bounds *b, const char *dir, size_t len);
void sq_bounds_free(struct bounds *b);
/* A tenant's id by name. create=0: MD_ENOENT when the tenant has no data
 * yet; create=1: creates the tenant and its root entry when missing. */
enum md_err sq_tenant_id(struct sq_txn *t, const char *name, int create, int64_t *id);
void sq_bind_named_text(sqlite3_stmt *st, const char *name, const char *p, size_t n);
void sq_bind_named_int64(sqlite3_stmt *st, const char *name, int64_t v);
/* A column's integer, or `none` when it is NULL. */
int64_t sq_column_or(sqlite3_stmt *st, int col, int64_t none);
/* Characters (not bytes) of a UTF-8 string: SQLite's substr() counts them. */
int64_t sq_utf8_chars(const char *s, size_t n);
/* Write every pending directory size change (each once). */
enum md_err sq_sizes_flush(struct sq_txn *t);

/* store_sqlite_search.c: full-text search (md_store.h, md_search.h). */
/* The notes of search_pending as index changes (the S_SEARCH_FLUSH_*
 * statements; sql/sqlite/005_search.sql): a file's first note of the
 * transaction is kept, so each file noted with its content before the
 * transaction leaves the index with that content; each noted file that is
 * one at the end goes in with its content now; the notes are gone. */
#define SQ_SEARCH_FLUSH_OUT_SQL                                                                    \
    "INSERT INTO entries_search (entries_search, rowid, body, tenant)"                             \
    " SELECT 'delete', id, old, char(57344) || tenant FROM search_pending WHERE old IS NOT NULL"
#define SQ_SEARCH_FLUSH_IN_SQL                                                                     \
    "INSERT INTO entries_search (rowid, body, tenant)"                                             \
    " SELECT id, content, char(57344) || tenant FROM entries"                                      \
    " WHERE id IN (SELECT id FROM search_pending) AND kind = 0"
#define SQ_SEARCH_FLUSH_CLEAR_SQL "DELETE FROM search_pending"
/* Whether there are notes at all: a transaction that noted nothing leaves
 * the index alone (and writes nothing for it). */
#define SQ_SEARCH_NOTED_SQL "SELECT EXISTS (SELECT 1 FROM search_pending)"
/* Before COMMIT (sq_commit): the notes of search_pending into the index,
 * the notes emptied. Nothing when the index is off. */
enum md_err sq_search_flush(struct sq_txn *t);
/* Register memoryd_score() on a connection (before preparing statements). */
int sq_search_functions(sqlite3 *db);

/* After an erasure's deletes, in its transaction: rewrite the index into
 * one segment, so that no word of the erased files is left in older
 * segments (FTS5 records a delete as a new segment; SQLite 3.40 has no
 * secure-delete). Costs a rewrite of the whole index. */
enum md_err sq_search_purge(struct sq_txn *t);
/* On the writer, after migrating: --search on puts the index's triggers
 * back and refills the index when they are missing; --search off drops
 * them and empties it; KEEP changes nothing. *off: whether the index is
 * off now. SQLite result code; `why` on failure. */
int sq_search_setting(sqlite3 *db, enum md_search_mode mode, int *off, char *why, size_t why_len);
enum md_err sq_search(struct md_txn *base, const char *tenant, const struct md_search_terms *q,
                      md_search_cb cb, void *ctx);

/* store_sqlite_tenants.c: tenant administration (md_store.h). */
enum md_err sq_tenants(struct md_txn *base, const char *after, size_t limit, md_tenant_cb cb,
                       void *ctx);
enum md_err sq_erase(struct md_txn *base, const char *tenant, struct md_erased *out);

/* store_sqlite_history.c: the md_store_ops members of md_history.h, and
 * what the transaction code calls of it. */
enum md_err sq_cmd_begin(struct md_txn *base, const char *tenant, const struct md_write_meta *m);
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
                           int64_t old_size);
enum md_err sq_record_subtree(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                              int64_t size, const char *to, size_t tlen);

#endif
