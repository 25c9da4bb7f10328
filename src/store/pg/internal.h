/*
 * store_pg_internal.h — what the files of the PostgreSQL backend share
 * (store_pg.c: store, connections, operations; store_pg_migrate.c: schema).
 * Not a public interface.
 */
#ifndef MD_STORE_PG_INTERNAL_H
#define MD_STORE_PG_INTERNAL_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "base/md_buf.h"
#include "base/md_err.h"
#include "store/md_store.h"

/* Type OIDs (pg_type.dat). */
/* The payload of an erasure's notification on memoryd_changes: this, then
 * the tenant's name (store_pg_watch.c). */
#define MD_PG_ERASED     "erased:"
#define MD_PG_ERASED_LEN 7

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

/* ---- src/store/pg/pg.c ---- */

/* memoryd's prepared statements (the table in store_pg.c). */
enum pst {
    P_BEGIN,
    P_COMMIT,
    P_ROLLBACK,
    P_SAVEPOINT,
    P_RELEASE,
    P_ROLLBACK_TO,
    P_LOCK,
    P_TENANT_NEW,
    P_LOCATE,
    P_INSERT,
    P_SET_CONTENT,
    P_SIZES,
    P_REMOVE_ONE,
    P_REMOVE_BELOW,
    P_MOVE_ONE,
    P_MOVE_BELOW,
    P_VIEW,
    P_GET,
    P_LIST,
    P_PING,
    P_DB_SIZE,
    P_PREFETCH,
    P_INSERT_MANY,
    P_SET_MANY,
    /* history, the change feed, idempotency (see "history" below) */
    P_COUNTERS,
    P_TENANT_ID,
    P_COUNTERS_SET,
    P_VER_MANY,
    P_VER_COPY,
    P_VER_SUBTREE,
    P_VER_SUBTREE_MOVE,
    P_CHANGES_MANY,
    P_NOTIFY,
    P_IDEM_GET,
    P_IDEM_PUT,
    P_IDEM_SCRUB,
    P_HISTORY,
    P_VERSION_GET,
    P_SNAP_BEFORE,
    P_STATE_BEFORE,
    P_CHANGES,
    P_CHANGES_META,
    P_REDACT,
    P_PRUNE_PATH,
    P_PRUNE_SUBTREE_PATHS,
    P_TENANT_NEXT,
    P_PRUNE_AGE_SCAN,
    P_PRUNE_AGE_DEL,
    P_PRUNE_CHANGES_SCAN,
    P_PRUNE_CHANGES_DEL,
    P_PRUNE_IDEM,
    P_USAGE,
    P_LIMITS_SET,
    P_TENANTS_LIST,
    P_ERASE,
    P_SNAPSHOT,
    P_SCAN,
    P_SEARCH,
    P_SEARCH_SCAN,
    P_SEARCH_CAND,
    P_COUNT
};

/* Statement `id`: its SQL, and the number and types of its parameters.
 * For programs that replay memoryd's statements as memoryd sends them
 * (bench/pg_history_floor.c); the strings are static. */
const char *md_pg_statement(enum pst id, int *nparams, const Oid **types);

/* ---- src/store/pg/wire.c ---- */

/* Open a libpq connection to `uri` with memoryd's defaults (a 5 s connect
 * timeout, application_name memoryd; the URI may override both). NULL
 * with a reason in `why` when it fails. */
PGconn *md_pg_connect(const char *uri, char *why, size_t why_len);

/* The error class of a failed result (NULL: the connection's state). */
enum md_err md_pg_classify(PGconn *conn, const PGresult *res);

/* The parameters of one statement, all in binary form. Values are borrowed
 * (libpq copies them when the statement is sent); numbers live in `num`. */
#define MD_PG_MAX_PARAMS 12
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
void md_pg_null(struct md_pg_params *p); /* SQL NULL */

/* A one-dimensional array parameter in binary form, built in `b`: the
 * header for `n` elements of type `elem`, then each element. */
enum md_err md_pg_arr_begin(struct md_buf *b, Oid elem, size_t n);
enum md_err md_pg_arr_elem(struct md_buf *b, const void *data, size_t len);
/* Change the element count of an array begun with n > 0 (to n > 0). */
void md_pg_arr_count(struct md_buf *b, size_t n);
enum md_err md_pg_arr_i64(struct md_buf *b, int64_t v);
enum md_err md_pg_arr_i32(struct md_buf *b, int32_t v);
enum md_err md_pg_arr_i16(struct md_buf *b, int16_t v);

/* Columns of a binary result. */
int64_t md_pg_r_i64(const PGresult *r, int row, int col);
int32_t md_pg_r_i32(const PGresult *r, int row, int col);
int md_pg_r_i16(const PGresult *r, int row, int col);

/* ---- src/store/pg/reads.c ---- */

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

/* ---- src/store/pg/watch.c ---- */

/* Called from the watcher's thread with the name of a tenant whose change
 * some instance committed, or with NULL when notifications may have been
 * missed (the connection was lost). */
typedef void (*md_pg_watch_cb)(void *ctx, const char *tenant);
struct md_pg_watch;
/* LISTEN on memoryd_changes from a thread and connection of its own.
 * NULL when the thread cannot be started. */
struct md_pg_watch *md_pg_watch_start(const char *uri, md_pg_watch_cb cb, void *ctx);
void md_pg_watch_stop(struct md_pg_watch *w);

/* ---- src/store/pg/schema.c ---- */

/* Apply the migrations of sql/postgres/ not yet applied, under a session
 * advisory lock; refuse a database whose schema is newer. 0, or -1 with a
 * reason in `why`. `conn` is in normal (not pipeline) mode. */
int md_pg_migrate(PGconn *conn, char *why, size_t why_len);

/* After md_pg_migrate: --search off drops the trigram index entries_search
 * (005_search.sql); --search on builds it when it is missing (a SHARE lock
 * on entries meanwhile: other instances' writes wait); KEEP changes
 * nothing. *off: whether the index is off now. 0, or -1 with the error in
 * `why`. */
int md_pg_search_setting(PGconn *conn, enum md_search_mode mode, int *off, char *why,
                         size_t why_len);

#endif
