/*
 * internal.h — what the files of the PostgreSQL engine (src/store/pg/)
 * share. Not a public interface; a program of the project reaches into it
 * all the same: bench/pg_history_floor.c replays the writer's statements
 * (md_pg_statement) with the wire helpers, on a schema md_pg_migrate
 * made.
 *
 * The files, each with its job, its statements (their SQL is written where
 * they are used) and its part of a transaction (struct pg_txn), bottom up:
 * each calls only files listed before it (tests/tooling/layers.test.mjs
 * checks that no two call each other in a circle). What a lower file needs
 * of a higher one it is handed at open (pg_store's stmts, parts_new,
 * parts_free) or by the txn (a fetched view's `fetched`).
 *   wire.c     libpq helpers: connecting, error classes, binary values
 *   schema.c   migrations
 *   reads.c    views fetched without a thread waiting (md_pg_reads)
 *   watch.c    other instances' commits (LISTEN)
 *   attempt.c  an optimistic batch's state: deferring, the attempt
 *              abandoned, the prefetched rows (struct pg_batch)
 *   pipe.c     the pipeline: statements queued, sent, results read
 *              (struct pg_pipe)
 *   conn.c     connections: opened (session settings, statements
 *              prepared), healed, closed; the reader pool; md_pg_exec
 *   ids.c      the tenants' ids: cached per connection, looked up, made
 *   sizes.c    directory sizes: pending, written (the txn's `sizes`)
 *   history.c  recording versions and change-feed entries, the NOTIFY and
 *              the VACUUM after a commit (struct pg_history)
 *   deltas.c   versions as reverse deltas: a text rebuilt, one made whole
 *   batch.c    optimistic batches: the tenants' locks, the prefetch, the
 *              bulk statements, batch_begin, flush
 *   tree.c     entries: locate, put_file, remove_tree, move_tree, get,
 *              list; a tenant made
 *   views.c    view, and view_async (struct pg_vjob)
 *   history_read.c  reading history and the change feed; redaction
 *   idem.c     idempotency answers
 *   tenants.c  usage, limits, the tenants listing, erasure, the export's
 *              snapshot and scan
 *   words.c    a file's words for the word index (memoryd_words in C)
 *   search.c   full-text search; the word index catching up beside the
 *              writes (a thread and a connection of its own)
 *   prune.c    retention
 *   load.c     md_txn_load and md_txn_totals (struct pg_load)
 *   txn.c      write transactions: BEGIN, COMMIT, ROLLBACK, savepoints;
 *              the parts of a write transaction made, reset, sent, freed
 *   convert.c  versions stored anew at open: into deltas, or all whole
 *   keys.c     API keys
 *   expiry.c   expiry of unused files: tenants' windows, the last uses
 *              written back, the files expired and expiring
 *   store.c    the md_store_ops table, open, close, ping, db_size, stats,
 *              wire, watch, a txn's end; every file's statements gathered
 *              (handed down at open; md_pg_statement); the engine
 *              descriptor md_engine_pg
 *
 * Errors: functions return enum md_err as the store interface does
 * (md_store.h); a server's error has been logged by the pipe.
 */
#ifndef MD_STORE_PG_INTERNAL_H
#define MD_STORE_PG_INTERNAL_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/md_buf.h"
#include "base/md_err.h"
#include "store/md_store.h"
#include "store/md_store_admin.h"
#include "store/pg/md_store_pg.h"

/* The payload of an erasure's notification on memoryd_changes: this, then
 * the tenant's name (watch.c). */
#define MD_PG_ERASED     "erased:"
#define MD_PG_ERASED_LEN 7

/* Type OIDs (pg_type.dat). */
#define OID_INT2       21
#define OID_INT4       23
#define OID_INT8       20
#define OID_TEXT       25
#define OID_BYTEA      17
#define OID_TEXTARRAY  1009
#define OID_INT8ARRAY  1016
#define OID_INT4ARRAY  1007
#define OID_INT2ARRAY  1005
#define OID_BOOL       16
#define OID_BOOLARRAY  1000
#define OID_BYTEAARRAY 1001

/* ---- statements ---- */

/* memoryd's prepared statements, by the file that owns each (and writes
 * its SQL). Each is prepared on a connection as "m<id>": COMMIT is "m1"
 * (tests/postgres/faults.test.mjs watches for it). */
enum pg_stmt {
    /* txn.c */
    P_BEGIN,
    P_COMMIT,
    P_ROLLBACK,
    P_SAVEPOINT,
    P_RELEASE,
    P_ROLLBACK_TO,
    P_LOCK,  /* batch.c */
    P_SIZES, /* sizes.c */
    /* tree.c */
    P_TENANT_NEW,
    P_TENANT_ID, /* ids.c */
    P_LOCATE,
    P_INSERT,
    P_SET_CONTENT,
    P_REMOVE_ONE,
    P_REMOVE_BELOW,
    P_MOVE_ONE,
    P_MOVE_BELOW,
    P_GET,
    P_LIST,
    /* views.c */
    P_VIEW,
    /* store.c */
    P_PING,
    P_DB_SIZE,
    /* batch.c */
    P_PREFETCH,
    P_INSERT_MANY,
    P_SET_MANY,
    /* history.c */
    P_COUNTERS,
    P_COUNTERS_SET,
    P_VER_MANY,
    P_VER_COPY,
    P_VER_SUBTREE,
    P_VER_SUBTREE_MOVE,
    P_CHANGES_MANY,
    P_NOTIFY,
    /* history_read.c */
    P_HISTORY,
    P_VERSION_GET,
    P_SNAP_BEFORE,
    P_STATE_BEFORE,
    P_CHANGES,
    P_CHANGES_META,
    P_REDACT,
    P_IDEM_SCRUB,
    /* deltas.c */
    P_VER_CHAIN,
    P_VER_OLDER,
    P_VER_WHOLE,
    /* convert.c */
    P_DELTA_NEXT_PATH,
    P_DELTA_PATH_ROWS,
    P_DELTA_SET,
    P_DELTA_VRUN,
    P_DELTA_LEFT,
    P_DELTA_ANY,
    /* idem.c */
    P_IDEM_GET,
    P_IDEM_PUT,
    /* prune.c */
    P_PRUNE_PATH,
    P_PRUNE_SUBTREE_PATHS,
    P_TENANT_NEXT,
    P_PRUNE_AGE_SCAN,
    P_PRUNE_AGE_DEL,
    P_PRUNE_CHANGES_SCAN,
    P_PRUNE_CHANGES_DEL,
    P_PRUNE_IDEM,
    /* tenants.c */
    P_USAGE,
    P_LIMITS_SET,
    P_SENSITIVE_GET,
    P_SENSITIVE_SET,
    P_TENANTS_LIST,
    P_ERASE,
    P_SNAPSHOT,
    P_SCAN,
    P_VERSIONS_SCAN,
    /* search.c */
    P_SEARCH,
    P_SEARCH_CAND,
    P_SEARCH_SCAN,
    /* keys.c */
    P_KEY_PUT,
    P_KEY_LIST_ALL,
    P_KEY_LIST_TENANT,
    P_KEY_REVOKE,
    P_KEY_FIND,
    /* load.c */
    P_LOAD_TENANT,
    P_LOAD_ENTRIES,
    P_LOAD_VERSIONS,
    P_LOAD_CHANGES,
    P_LOAD_IDEM,
    P_LOAD_KEYS,
    P_TOTALS,
    /* expiry.c */
    P_EXPIRY_SET,
    P_EXPIRY_GET,
    P_USE_PUT,
    P_USE_GET,
    P_EXPIRED,
    P_EXPIRING,
    P_COUNT
};

#define MD_PG_MAX_PARAMS 12

/* A statement as its file writes it. */
struct pg_stmt_def {
    enum pg_stmt id;
    const char *sql;
    int nparams;
    Oid types[MD_PG_MAX_PARAMS];
    /* Prepared on reader connections too: it only reads (a reader then
     * connects while a write lock is held on the tables, where preparing
     * an INSERT would wait for it). */
    int reader;
};
/* A file's statements. */
struct pg_stmt_defs {
    const struct pg_stmt_def *defs;
    size_t n;
};
#define MD_PG_STMT_DEFS(table)                                                                     \
    {                                                                                              \
        (table), sizeof(table) / sizeof((table)[0])                                                \
    }
extern const struct pg_stmt_defs md_pg_ids_stmts, md_pg_sizes_stmts, md_pg_txn_stmts,
    md_pg_tree_stmts, md_pg_views_stmts, md_pg_store_stmts, md_pg_batch_stmts, md_pg_history_stmts,
    md_pg_history_read_stmts, md_pg_idem_stmts, md_pg_prune_stmts, md_pg_tenants_stmts,
    md_pg_search_stmts, md_pg_keys_stmts, md_pg_load_stmts, md_pg_expiry_stmts, md_pg_deltas_stmts,
    md_pg_convert_stmts;

/* Statement `id`: its SQL, and the number and types of its parameters
 * (store.c, which gathers every file's table; NULL when no file defines
 * it). For programs that replay memoryd's statements as memoryd sends them
 * (bench/pg_history_floor.c); the strings are static. The engine's own
 * files read the statements from the store (pg_store's stmts). */
const char *md_pg_statement(enum pg_stmt id, int *nparams, const Oid **types);

/* ---- wire.c ---- */

/* Open a libpq connection to `uri` with memoryd's defaults (a 5 s connect
 * timeout, application_name memoryd; the URI may override both). NULL
 * with a reason in `why` when it fails. */
PGconn *md_pg_connect(const char *uri, char *why, size_t why_len);

/* The error class of a failed result (NULL: the connection's state). */
enum md_err md_pg_classify(PGconn *conn, const PGresult *res);

/* The parameters of one statement, all in binary form. Values are borrowed
 * (libpq copies them when the statement is sent); numbers live in `num`. */
struct md_pg_params {
    const char *v[MD_PG_MAX_PARAMS];
    int len[MD_PG_MAX_PARAMS];
    int fmt[MD_PG_MAX_PARAMS];
    char num[MD_PG_MAX_PARAMS][8];
    int n;
};
void md_pg_bytes(struct md_pg_params *p, const void *data, size_t len); /* text or bytea */
void md_pg_text(struct md_pg_params *p, const char *s);
void md_pg_i64(struct md_pg_params *p, int64_t v);
void md_pg_i32(struct md_pg_params *p, int32_t v);
void md_pg_null(struct md_pg_params *p);                   /* SQL NULL */
void md_pg_i64_or_null(struct md_pg_params *p, int64_t v); /* v < 0: NULL */

/* A one-dimensional array parameter in binary form, built in `b`: the
 * header for `n` elements of type `elem`, then each element. */
enum md_err md_pg_arr_begin(struct md_buf *b, Oid elem, size_t n);
enum md_err md_pg_arr_elem(struct md_buf *b, const void *data, size_t len);
/* Change the element count of an array begun with n > 0 (to n > 0). */
void md_pg_arr_count(struct md_buf *b, size_t n);
enum md_err md_pg_arr_i64(struct md_buf *b, int64_t v);
enum md_err md_pg_arr_i32(struct md_buf *b, int32_t v);
enum md_err md_pg_arr_i16(struct md_buf *b, int16_t v);
enum md_err md_pg_arr_null(struct md_buf *b);                        /* a NULL element */
enum md_err md_pg_arr_text_or_null(struct md_buf *b, const char *s); /* NULL when s is */

/* Bounds of the subtree of `dir`, for path > lo AND path < hi: (dir + "/",
 * dir + "0"). */
enum md_err md_pg_subtree_bounds(struct md_buf *lo, struct md_buf *hi, const char *dir, size_t len);
/* Characters (not bytes) of a UTF-8 string: substr() counts them. */
int32_t md_pg_utf8_chars(const char *s, size_t n);

/* Columns of a binary result. */
int64_t md_pg_r_i64(const PGresult *r, int row, int col);
int32_t md_pg_r_i32(const PGresult *r, int row, int col);
int md_pg_r_i16(const PGresult *r, int row, int col);
int64_t md_pg_r_i64_or(const PGresult *r, int row, int col, int64_t null_value);
/* A SHA-256 column into e->sha256 (e->has_sha256: whether it holds one). */
void md_pg_r_sha256(const PGresult *r, int row, int col, struct md_entry *e);

/* Unix time in milliseconds. */
static inline int64_t md_pg_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- schema.c ---- */

/* Apply the migrations of sql/postgres/ not yet applied, under a session
 * advisory lock; refuse a database whose schema is newer. 0, or -1 with a
 * reason in `why`. `conn` is in normal (not pipeline) mode. */
int md_pg_migrate(PGconn *conn, char *why, size_t why_len);

/* After md_pg_migrate: --search off drops the word index search_words_gin,
 * the words and the index's cursors in the feed (012_search_follows_feed.sql);
 * --search on makes them when the index is missing (a lock on entries
 * meanwhile: other instances' writes wait); KEEP changes
 * nothing. *off: whether the index is off now. When the index must be
 * built and `pending` is not NULL, *pending is set instead and the build
 * left to md_pg_build. 0, or -1 with the error in `why`. */
int md_pg_search_setting(PGconn *conn, enum md_search_mode mode, _Atomic int *off,
                         _Atomic int *pending, char *why, size_t why_len);
/* md_store_build, md_store_building (schema.c). */
enum md_err md_pg_build(struct md_store *base, char *why, size_t why_len);
int md_pg_building(struct md_store *base);

/* ---- reads.c ---- */

/* Reads answered without a thread waiting for them: a thread of its own
 * keeps up to `nconns` connections (opened as load needs them, each set up
 * by `setup` and then made nonblocking) and sends each query it is given
 * on the one with the fewest in flight, the queries given meanwhile
 * together (one write and one Sync per connection). Each query's result
 * goes to its callback, on that thread, in the order the connection
 * answers. A query whose connection breaks before its answer is sent once
 * more; a query the server refuses fails alone. */
struct md_pg_reads;

/* Make a new connection ready for the queries (session settings, the
 * statements prepared, pipeline mode): 0, or -1 with a reason in `why`. */
typedef int (*md_pg_setup_fn)(PGconn *pq, void *ctx, char *why, size_t why_len);

struct md_pg_query {
    const char *stmt;      /* a statement `setup` prepared (static) */
    struct md_pg_params p; /* its parameters (p.v may point into p.num: the query must not move) */
    /* Called once, on the thread: the result (the callback's, PQclear it;
     * NULL on error) and MD_OK, MD_EUNAVAIL (the database cannot be
     * reached) or the class of the server's error (logged). */
    void (*done)(struct md_pg_query *q, PGresult *res, enum md_err e);
    /* the thread's */
    struct md_pg_query *next;
    int resent, aborts;
};

/* NULL when the thread cannot be started. */
struct md_pg_reads *md_pg_reads_start(const char *uri, unsigned nconns, md_pg_setup_fn setup,
                                      void *ctx);
/* Give the thread a query (from any thread, also from a callback). The
 * query is the caller's again once its callback is called. */
void md_pg_reads_submit(struct md_pg_reads *r, struct md_pg_query *q);
/* Stop the thread: the queries not answered fail with MD_EUNAVAIL. No
 * query may be submitted after. */
void md_pg_reads_stop(struct md_pg_reads *r);

/* ---- watch.c ---- */

/* Called from the watcher's thread with the name of a tenant whose change
 * some instance committed, or with NULL when notifications may have been
 * missed (the connection was lost). */
typedef void (*md_pg_watch_cb)(void *ctx, const char *tenant);
struct md_pg_watch;
/* LISTEN on memoryd_changes from a thread and connection of its own.
 * NULL when the thread cannot be started. */
struct md_pg_watch *md_pg_watch_start(const char *uri, md_pg_watch_cb cb, void *ctx);
void md_pg_watch_stop(struct md_pg_watch *w);

/* ---- the store, its connections and their transactions ---- */

/* pipe.c: a bulk statement's rows gathered (an optimistic batch's inserts
 * or file updates, batch.c), one array parameter per column. */
struct pg_gather {
    enum pg_stmt id; /* P_COUNT: none */
    size_t rows, bytes;
    struct md_buf cols[8];
};
/* pipe.c: the statements of a connection's pipeline whose results are not
 * read yet, the last result wanted, and what went over the connection. */
struct pg_pipe {
    enum pg_stmt *queued; /* statements sent whose results are not read yet */
    size_t nqueued, capqueued;
    PGresult *res; /* the last wanted result; borrowed out until the next flush */
    /* What the txn's operations cost (a locate answered from a prefetch
     * counts its statement and round trip), and what went over the
     * connection. */
    struct md_txn_stats st, wire;
    /* Rows answered by every statement `counted_id` read by a flush, added
     * up in `counted` (P_COUNT: none). */
    enum pg_stmt counted_id;
    size_t counted;
    /* The rows of a bulk statement gathered and not queued yet: it is
     * queued before any other statement, or at the flush. */
    struct pg_gather gather;
    /* Where the running command began (md_pg_pipe_mark): statements queued
     * and rows gathered since, not sent yet. */
    size_t mark;
    int gathered_since_mark;
    /* Array parameters of the statement being built, any file's: valid
     * until it is queued. */
    struct md_buf arrays[3];
};

struct pg_batch;
struct pg_history;
struct pg_load;

/* A transaction on a connection (each connection has one), or a view's
 * answers fetched asynchronously (views.c: no connection). Its parts are
 * each used by the file that owns it, made and freed through that file by
 * txn.c (md_pg_txn_parts_new, _free; load.c makes its part at its first
 * row); a reader has only the pipe. */
struct pg_txn {
    struct md_txn base;
    struct pg_conn *conn;      /* NULL: a view's fetched results (`fetched`) */
    int write;                 /* the writer's or the pruner's */
    int snapshot;              /* a reader in a transaction (tenants.c: md_store_snapshot_begin) */
    struct pg_pipe pipe;       /* pipe.c */
    struct md_dirsizes *sizes; /* sizes.c: directory size changes pending (write txns) */
    /* ids.c: a tenant was made in this transaction / since the savepoint
     * (a rollback forgets the ids cached since, txn.c). */
    int tenant_made_txn, tenant_made_cmd;
    struct pg_batch *batch;     /* attempt.c: an optimistic batch's state (the writer's) */
    struct pg_history *history; /* history.c: versions, change feed (write txns) */
    struct pg_load *load;       /* load.c: rows of md_txn_load held (made at the first) */
    /* views.c: a view's txn answers its statements from the results its
     * job fetched (NULL: none, the txn has a connection). */
    enum md_err (*fetched)(struct pg_txn *t, enum pg_stmt id);
    struct md_buf vtext; /* deltas.c: the last version text rebuilt */
};

struct pg_conn {
    PGconn *pq;
    int broken;
    struct md_tenant_cache *tenants;
    struct pg_txn txn;
    struct pg_conn *next_idle;
};

struct pg_store {
    struct md_store base;
    /* Every statement by id, each file's table handed down by store.c at
     * open (the files below it name no other file's statements). */
    const struct pg_stmt_def *stmts[P_COUNT];
    /* The parts of a write transaction (sizes, batch, history, load),
     * made with a writer's connection and freed with any (txn.c's, handed
     * down by store.c at open: conn.c knows no job). parts_new: 0, or -1
     * when out of memory (the parts made are freed by parts_free). */
    int (*parts_new)(struct pg_txn *t);
    void (*parts_free)(struct pg_txn *t);
    struct md_store_config cfg;
    struct md_pg_config own; /* PostgreSQL's own settings */
    char *uri;
    pthread_mutex_t pool_mu;
    struct pg_conn *idle; /* reader connections not in use */
    unsigned nidle;
    struct pg_conn *writer;
    pthread_mutex_t write_mu; /* one write transaction at a time; guards writer */
    unsigned long heal_failures;
    /* Retention's own connection (md_pg_prune_begin), beside the writer's;
     * the paths to prune, queued by the writer, taken by the pruner. */
    struct pg_conn *pruner;
    pthread_mutex_t prune_mu; /* guards pruner */
    unsigned long prune_heal_failures;
    /* An import's own connection (md_pg_import_begin), beside the writer's:
     * opened at the first import, kept. */
    struct pg_conn *importer;
    pthread_mutex_t import_mu; /* guards importer */
    unsigned long import_heal_failures;
    struct md_touched *touched;
    struct md_pg_watch *watch;     /* LISTENs for other instances' commits */
    int64_t prune_next_tenant;     /* the pruner's: where pruning by age goes on */
    _Atomic int search_off;        /* no full-text index (--search off), set at open */
    _Atomic int search_pending;    /* left to md_pg_build (defer_build); search off till then */
    struct md_pg_reads *reads;     /* views fetched asynchronously (reads.c) */
    struct md_pg_indexer *indexer; /* the word index catching up (search.c) */
};

static inline struct pg_store *md_pg_store_of(const struct pg_txn *t)
{
    return (struct pg_store *)t->base.store;
}

/* ---- attempt.c ---- */

/* A prefetched (tenant, path) of an optimistic batch. */
struct pg_prefetched {
    const char *tenant, *path; /* borrowed from the batch's commands */
    size_t len;
    int64_t id; /* the tenant's; 0: the tenant has no data */
    int64_t size;
    const char *content; /* in the prefetch result, when has_content */
    size_t content_len;
    const unsigned char *sha256; /* in the prefetch result; NULL when none */
    int kind;
    int vrun; /* entries.vrun */
    unsigned char want, found, has_content, stale;
    /* The tenant's file count and overrides (md_txn_usage), on every row;
     * on its root's row, the files the batch's queued writes add or remove
     * (unknown: a directory removed). */
    int64_t files, max_bytes, max_files, files_delta;
    unsigned char files_unknown;
};

struct pg_batch *md_pg_batch_new(void);
void md_pg_batch_free(struct pg_batch *b);
/* Forget the batch (a new transaction, or its end). */
void md_pg_batch_reset(struct pg_txn *t);
/* Whether the txn is in an optimistic batch: its writes queued, its
 * locates answered from the prefetched rows. */
int md_pg_deferring(const struct pg_txn *t);
/* The batch defers its writes from now on, its attempt not abandoned
 * (`on`), or no more (its writes sent). */
void md_pg_batch_defer(struct pg_txn *t, int on);
/* An optimistic attempt that cannot go on: the batch will run again the
 * exact way (md_txn_release, md_txn_flush: MD_EREDO). MD_OK. */
enum md_err md_pg_abandon_attempt(struct pg_txn *t);
/* A statement failed with `e` (a flush, not MD_EUNAVAIL; a bulk row): in
 * an optimistic batch, the statement that failed may be another command's
 * queued write, so the attempt is abandoned. */
void md_pg_batch_failed(struct pg_txn *t, enum md_err e);
/* At a command's savepoint, in an optimistic batch. */
void md_pg_batch_command_begins(struct pg_txn *t);
/* At its release (rolled back or not): MD_EREDO when the attempt is
 * abandoned (a command that wrote was rolled back abandons it). */
enum md_err md_pg_batch_command_ends(struct pg_txn *t, int rollback);
/* The rows to prefetch for the paths of a batch: every path of `w` and
 * every ancestor of each, sorted, once each (wanted with its content when
 * any command wants it). MD_OK or MD_ENOMEM. */
enum md_err md_pg_pre_keys(struct pg_txn *t, const struct md_batch_path *w, size_t n);
/* The rows, in order (*n of them): for the prefetch to send, and to fill
 * in from its result. */
struct pg_prefetched *md_pg_pre_rows(struct pg_txn *t, size_t *n);
/* The prefetch's result, which the rows point into: held until the
 * batch's reset. */
void md_pg_pre_hold(struct pg_txn *t, PGresult *res);
/* The prefetched row of (tenant, path), NULL when none. */
const struct pg_prefetched *md_pg_prefetched(const struct pg_txn *t, const char *tenant,
                                             const char *path, size_t len);
/* Queued writes in an optimistic batch: forget the prefetched rows they may
 * change (md_pg_pre_forget: the entry, with `below` everything under it,
 * its ancestors longer than `keep`), count the files they add or remove. */
void md_pg_pre_forget(struct pg_txn *t, const char *tenant, const char *path, size_t len, int below,
                      size_t keep);
void md_pg_pre_forget_tenant(struct pg_txn *t, const char *tenant);
void md_pg_pre_files_add(struct pg_txn *t, const char *tenant, const char *path, size_t len,
                         int delta);
/* The pending size changes (the txn's `sizes`) are being written: the
 * prefetched sizes take them in. */
void md_pg_pre_fold_sizes(struct pg_txn *t);

/* ---- pipe.c ---- */

void md_pg_pipe_init(struct pg_pipe *p);
void md_pg_pipe_free(struct pg_pipe *p);
/* Forget what was queued and not read (a new transaction). */
void md_pg_pipe_reset(struct pg_pipe *p);
/* Queue statement `id`; its result is read by the next flush. Statements
 * run in the order they are queued: the bulk statement gathered goes
 * first. */
enum md_err md_pg_send(struct pg_txn *t, enum pg_stmt id, const struct md_pg_params *p);
/* ... at once, ahead of the bulk statement gathered. */
enum md_err md_pg_send_now(struct pg_txn *t, enum pg_stmt id, const struct md_pg_params *p);
/* Send a Sync and read the result of every queued statement, in order (one
 * round trip). The rows of the first queued statement `want` (P_COUNT:
 * none) are kept in t->pipe.res. Returns the first error; *failed (unless
 * NULL) gets the statement that failed, P_COUNT when none did or the
 * connection went before any answered. */
enum md_err md_pg_flush_at(struct pg_txn *t, enum pg_stmt want, enum pg_stmt *failed);
/* md_pg_flush_at; a failure gives an optimistic batch up. */
enum md_err md_pg_flush(struct pg_txn *t, enum pg_stmt want);
/* Ready to add a row to bulk statement `id` whose columns have element
 * types `types` (sending the one gathered first when it is another or
 * full). */
enum md_err md_pg_gather_row(struct pg_txn *t, enum pg_stmt id, const Oid *types);
/* Forget the rows gathered. */
void md_pg_gather_drop(struct pg_pipe *p);
/* The running command begins: what it queues from now on is its own. */
void md_pg_pipe_mark(struct pg_pipe *p);
/* Statements queued and rows gathered since the mark, not sent yet. */
size_t md_pg_pipe_unsent(const struct pg_pipe *p);

/* ---- conn.c ---- */

/* A connection set up (a writer's: every statement prepared; a reader's:
 * those that read); NULL with a reason in `why`. */
struct pg_conn *md_pg_conn_open(struct pg_store *s, int write, char *why, size_t why_len);
void md_pg_conn_close(struct pg_conn *c);
/* Session settings and statements on a new connection (`write`: the
 * writer's statements too), then pipeline mode: 0, or -1 with `why`. */
int md_pg_conn_setup(struct pg_store *s, PGconn *pq, int write, char *why, size_t why_len);
/* Reopen a broken write connection (*slot: the writer's or the pruner's,
 * its mutex held); failures are logged the first time and then every
 * 1000th. */
enum md_err md_pg_conn_heal(struct pg_store *s, struct pg_conn **slot, unsigned long *failures,
                            const char *what);
/* A pooled reader's txn (a connection opened when none is idle). */
enum md_err md_pg_read_begin(struct md_store *base, struct md_txn **out);
/* Its end: the connection back to the pool (or closed). */
void md_pg_read_end(struct md_txn *base);
/* The one statement an operation needs, its rows in t->pipe.res: on a
 * reader, a pooled connection found broken is replaced and the statement
 * sent again, once; in a write transaction, queued after what is queued;
 * a view's fetched txn answers from its results (t->fetched). */
enum md_err md_pg_exec(struct pg_txn *t, enum pg_stmt id, const struct md_pg_params *p);

/* ---- ids.c ---- */

/* The tenant's id known to this connection (cached), 0 if none. */
int64_t md_pg_known_tenant(struct pg_txn *t, const char *tenant);
/* The tenant's id: cached, or asked; 0 when it has no data. */
enum md_err md_pg_tenant_lookup(struct pg_txn *t, const char *tenant, int64_t *id);
/* A tenant was made in this transaction: a rollback forgets the ids cached
 * since. */
void md_pg_tenant_made(struct pg_txn *t);

/* ---- sizes.c ---- */

/* Queue one statement writing every pending directory size change. */
enum md_err md_pg_sizes_send(struct pg_txn *t);
/* Add `delta` to the size of every ancestor of `path`, pending. */
enum md_err md_pg_sizes_add(struct pg_txn *t, int64_t id, const char *path, size_t len,
                            int64_t delta);
/* The pending size change of a directory (0 for a reader). */
int64_t md_pg_sizes_pending(const struct pg_txn *t, int64_t id, const char *path, size_t len);

/* ---- history.c ---- */

/* What a commit VACUUMs after it (md_pg_vacuum_after_commit). */
enum { MD_PG_VACUUM_REDACTED = 1, MD_PG_VACUUM_ERASED = 2 };

struct pg_history *md_pg_history_new(struct md_touched *shared);
void md_pg_history_free(struct pg_history *h);
/* Forget the transaction's counters, rows and notifications. */
void md_pg_history_reset(struct pg_txn *t);
void md_pg_history_mark(struct pg_txn *t);
void md_pg_history_restore(struct pg_txn *t);
/* The counters of tenant `id` as read in this transaction (no-op for a
 * reader): MD_OK or MD_ENOMEM. */
enum md_err md_pg_history_counters(struct pg_txn *t, int64_t id, int64_t last_version,
                                   int64_t last_seq);
/* The md_hist bookkeeping of a write txn (the pruner's touched paths). */
struct md_hist *md_pg_history_hist(struct pg_txn *t);
/* Record the version(s) a write is about to replace (before it is queued):
 * a file (old_size -1: it did not exist) about to hold `text` (kept as a
 * delta against it when the batch prefetched the file; *vrun: the file's
 * entries.vrun after the write, for md_pg_bulk_set), or a subtree (moving
 * to `to` unless NULL; *counted: the caller's flush brings the count, for
 * md_pg_subtree_counted). */
enum md_err md_pg_record_file(struct pg_txn *t, int64_t id, const char *tenant, const char *path,
                              size_t len, int64_t old_size, const char *text, size_t text_len,
                              int *vrun);
enum md_err md_pg_record_subtree(struct pg_txn *t, int64_t id, const char *tenant, const char *path,
                                 size_t len, int64_t size, const char *to, size_t tlen,
                                 int *counted);
enum md_err md_pg_subtree_counted(struct pg_txn *t);
/* Queue the versions and change-feed rows gathered (before the writes). */
enum md_err md_pg_history_send(struct pg_txn *t);
/* Before the commit: the changed counters and the NOTIFY of the tenants
 * written. */
enum md_err md_pg_history_commit_send(struct pg_txn *t);
/* Remember to NOTIFY `payload` at the commit (once). */
enum md_err md_pg_notify_at_commit(struct pg_txn *t, const char *payload);
/* VACUUM after the commit (MD_PG_VACUUM_*: the most asked for). */
void md_pg_vacuum_after_commit(struct pg_txn *t, int what);
/* What the transaction asked to VACUUM (0: nothing). */
int md_pg_vacuum_asked(const struct pg_txn *t);
/* The VACUUM, on a connection of its own, under the pruner's mutex. */
void md_pg_vacuum(struct pg_store *s, int what);
enum md_err md_pg_cmd_begin(struct md_txn *base, const char *tenant, const struct md_write_meta *m);
void md_pg_cmd_recorded(struct md_txn *base, struct md_change_rec *rec);
enum md_err md_pg_cmd_end(struct md_txn *base, const char *const *paths, const size_t *lens,
                          size_t n, struct md_change_rec *rec);

/* ---- batch.c ---- */

enum md_err md_pg_batch_begin(struct md_txn *base, const struct md_batch *b);
enum md_err md_pg_batch_flush(struct md_txn *base);
/* Answer a locate from the prefetched rows; 0 when they cannot. */
int md_pg_pre_locate(struct pg_txn *t, const char *tenant, struct md_locate *l, size_t n,
                     int *tenant_exists);
/* An optimistic batch's usage of `tenant`; 0 when it cannot tell. */
int md_pg_pre_usage(struct pg_txn *t, const char *tenant, struct md_usage *u);
/* Rows of the batch's bulk insert (directories between the ancestor of
 * length `from` and `path`, then the file) and bulk update. */
enum md_err md_pg_bulk_insert(struct pg_txn *t, int64_t id, const char *path, size_t len,
                              size_t from, const char *content, size_t content_len,
                              const unsigned char *sha256);
enum md_err md_pg_bulk_set(struct pg_txn *t, int64_t id, const char *path, size_t len,
                           const char *content, size_t content_len, const unsigned char *sha256,
                           int vrun);

/* ---- tree.c ---- */

/* Make the tenant (and its root) when it has none yet; its id. */
enum md_err md_pg_ensure_tenant(struct pg_txn *t, const char *tenant, int64_t *id);
enum md_err md_pg_locate(struct md_txn *base, const char *tenant, struct md_locate *l, size_t n,
                         int *tenant_exists);
enum md_err md_pg_put_file(struct md_txn *base, const char *tenant, const char *path, size_t len,
                           const char *content, size_t content_len,
                           const unsigned char sha256[MD_SHA256_LEN], int64_t old_size,
                           size_t parents_from);
enum md_err md_pg_remove_tree(struct md_txn *base, const char *tenant, const char *path, size_t len,
                              int64_t size);
enum md_err md_pg_move_tree(struct md_txn *base, const char *tenant, const char *from, size_t flen,
                            const char *to, size_t tlen, int64_t size, size_t parents_from);
enum md_err md_pg_get(struct md_txn *base, const char *tenant, const char *path, size_t len,
                      int want_content, struct md_entry *e);
enum md_err md_pg_list(struct md_txn *base, const char *tenant, const char *dir, size_t len,
                       md_list_cb cb, void *ctx);

/* ---- views.c ---- */

enum md_err md_pg_view(struct md_txn *base, const char *tenant, const char *path, size_t len,
                       struct md_entry *e, size_t max_entries, md_list_cb cb, void *ctx,
                       int *complete);
enum md_err md_pg_view_async(struct md_store *base, struct md_view_job *job);
/* The end of a fetched view's txn (t->fetched): the job freed. */
void md_pg_vjob_end(struct pg_txn *t);

/* ---- history_read.c ---- */

enum md_err md_pg_history(struct md_txn *base, const char *tenant, const char *path, size_t len,
                          int64_t below, size_t limit, md_version_cb cb, void *ctx);
enum md_err md_pg_version_get(struct md_txn *base, const char *tenant, int64_t version,
                              int want_content, struct md_version *v);
enum md_err md_pg_state_before(struct md_txn *base, const char *tenant, const char *dir, size_t len,
                               int64_t *before, md_version_cb cb, void *ctx);
enum md_err md_pg_changes(struct md_txn *base, const char *tenant, int64_t after, size_t limit,
                          md_change_cb cb, void *ctx, int64_t *oldest, int64_t *last_seq);
enum md_err md_pg_redact(struct md_txn *base, const char *tenant, int64_t version);

/* ---- deltas.c ---- */

/* A path's file, read beside its versions (deltas.c, convert.c), as the
 * version after every version: its number. */
#define PG_FILE_ROW "9223372036854775807"

/* Version v of `tenant` (a name), read with its `enc`: when a delta, its
 * text rebuilt from the version and its successors as one statement reads
 * them (into t->vtext, until the next call; v->content then points there).
 * The caller keeps the result v's other fields point into (t->pipe.res is
 * replaced). MD_ENOENT: the version went meanwhile; MD_EDB: a chain that
 * does not rebuild, or a text whose SHA-256 differs (logged). */
enum md_err md_pg_version_text(struct pg_txn *t, const char *tenant, struct md_version *v, int enc);
/* Before version `version` of (tenant, path) is redacted: the version just
 * older than it, if a delta (leaning on it), stored whole. */
enum md_err md_pg_version_older_whole(struct pg_txn *t, const char *tenant, const char *path,
                                      size_t len, int64_t version);
/* ---- convert.c ---- */

/* At open, in the writer's transactions: the paths of versions_unconverted
 * (sql/postgres/009_version_deltas.sql) turned into deltas, the progress
 * shown; with history off, every delta made whole instead (writes will
 * change files without recording what they were). */
enum md_err md_pg_deltas_open(struct pg_store *s);

/* ---- idem.c ---- */

enum md_err md_pg_idem_get(struct md_txn *base, const char *tenant, const char *key, size_t key_len,
                           struct md_idem *out);
enum md_err md_pg_idem_put(struct md_txn *base, const char *tenant, const char *key, size_t key_len,
                           const struct md_idem *answer, const char *path, size_t path_len);

/* ---- tenants.c ---- */

enum md_err md_pg_usage(struct md_txn *base, const char *tenant, struct md_usage *u);
enum md_err md_pg_set_limits(struct md_txn *base, const char *tenant, int64_t max_bytes,
                             int64_t max_files);
enum md_err md_pg_tenants(struct md_txn *base, const char *after, size_t limit, md_tenant_cb cb,
                          void *ctx);
enum md_err md_pg_erase(struct md_txn *base, const char *tenant, struct md_erased *out);
enum md_err md_pg_snapshot_begin(struct md_store *base, struct md_txn **out);
/* The end of a snapshot's transaction, before its reader goes back to the
 * pool. */
void md_pg_snapshot_end(struct pg_txn *t);
enum md_err md_pg_scan(struct md_txn *base, const char *tenant, const char *after, size_t after_len,
                       size_t max_rows, int64_t max_bytes, md_scan_cb cb, void *ctx, int *more);
enum md_err md_pg_versions_scan(struct md_txn *base, const char *tenant, int64_t after,
                                size_t max_rows, int64_t max_bytes, md_version_cb cb, void *ctx,
                                int *more);
enum md_err md_pg_sensitive_get(struct md_txn *base, const char *tenant, int *mode);
enum md_err md_pg_sensitive_set(struct md_txn *base, const char *tenant, int mode);

/* ---- words.c ---- */

/* The words of text[0..n) as memoryd_words (005_search.sql) takes them,
 * each once, in byte order, joined by single spaces, into `out` (reset
 * first; the caller's): a word holds no space, so string_to_array(out,
 * ' ') and array_to_tsvector give memoryd_words(text). MD_OK, or
 * MD_ENOMEM. */
enum md_err md_pg_words(const char *text, size_t n, struct md_buf *out);

/* ---- search.c ---- */

enum md_err md_pg_search(struct md_txn *base, const char *tenant, const struct md_search_terms *q,
                         md_search_cb cb, void *ctx);
/* The thread that writes the words of the files the change feed names
 * after the index's cursors (search_pending) every second, and once this
 * instance's writes pause (50 ms after the last), while search is on;
 * NULL when it could not start (out of memory: search stays exact, the
 * feed after the cursors only grows). Stopped and freed by
 * md_pg_indexer_stop (NULL: nothing). */
struct md_pg_indexer *md_pg_indexer_start(struct pg_store *s);
void md_pg_indexer_stop(struct md_pg_indexer *ix);
/* A write transaction committed (the writer, after its COMMIT): the thread
 * steps once the writes pause. NULL: nothing. */
void md_pg_indexer_wrote(struct md_pg_indexer *ix);

/* ---- prune.c ---- */

enum md_err md_pg_prune(struct md_txn *base, int64_t now_ms, size_t budget,
                        struct md_pruned *deleted);

/* ---- load.c ---- */

void md_pg_load_free(struct pg_load *l);
/* Forget the rows held (a rollback). */
void md_pg_load_reset(struct pg_txn *t);
/* Queue the rows held (they go with the next flush). */
enum md_err md_pg_load_send(struct pg_txn *t);
/* Whether rows are held. */
int md_pg_load_held(const struct pg_txn *t);
enum md_err md_pg_load(struct md_txn *base, const struct md_dump_row *row);
enum md_err md_pg_totals(struct md_txn *base, const char *tenant, struct md_totals *out);

/* ---- txn.c ---- */

/* The parts of a write transaction: made (0, or -1 when out of memory)
 * and freed (pg_store's parts_new and parts_free). */
int md_pg_txn_parts_new(struct pg_txn *t);
void md_pg_txn_parts_free(struct pg_txn *t);
enum md_err md_pg_write_begin(struct md_store *base, struct md_txn **out);
enum md_err md_pg_prune_begin(struct md_store *base, struct md_txn **out);
enum md_err md_pg_import_begin(struct md_store *base, struct md_txn **out);
enum md_err md_pg_commit(struct md_txn *base);
void md_pg_rollback(struct md_txn *base);
enum md_err md_pg_savepoint(struct md_txn *base);
enum md_err md_pg_release(struct md_txn *base, int rollback);

/* ---- keys.c ---- */

enum md_err md_pg_key_put(struct md_store *base, const struct md_key_info *k,
                          const unsigned char *hash);
enum md_err md_pg_key_list(struct md_store *base, const char *tenant, md_key_cb cb, void *ctx);
enum md_err md_pg_key_revoke(struct md_store *base, const char *id, int64_t now);
enum md_err md_pg_key_find(struct md_store *base, const unsigned char *hash,
                           struct md_key_info *out);

/* ---- expiry.c ---- */

enum md_err md_pg_expiry_set(struct md_txn *base, const char *tenant, int64_t expire_ms);
enum md_err md_pg_expiry_get(struct md_txn *base, const char *tenant, int64_t *expire_ms);
enum md_err md_pg_use_put(struct md_txn *base, const char *tenant, const char *path, size_t len,
                          int64_t used_ms);
enum md_err md_pg_use_get(struct md_txn *base, const char *tenant, const char *path, size_t len,
                          int64_t *used_ms, int64_t *size);
enum md_err md_pg_expired(struct md_txn *base, int64_t now_ms, int64_t default_ms, size_t limit,
                          md_use_cb cb, void *ctx);
enum md_err md_pg_expiring(struct md_txn *base, const char *tenant, int64_t before_ms,
                           const char *after, size_t after_len, size_t limit, md_use_cb cb,
                           void *ctx);

#endif
