/*
 * txn.c — transactions of the SQLite engine (see md_store.h, internal.h):
 * read transactions on the pool's readers (kept open from one request to
 * the next while nothing was committed: commit_gen), write transactions on
 * the writer (BEGIN IMMEDIATE, under write_mu from begin to commit or
 * rollback), a savepoint per command. Before its COMMIT, a write
 * transaction writes what the jobs keep pending until then: the directory
 * sizes (sizes.c), the tenants' counters (history.c), the notes of the
 * search index (search.c).
 *
 * Errors: md_err, the SQLite error logged (sq_conn_rc). A failed commit
 * rolls the transaction back; a failed flush of the commit is MD_EUNSURE;
 * a write transaction on a store opened read-only is MD_EINVAL.
 */
#include "internal.h"

const char *const sq_txn_sql[S_COUNT] = {
    [S_BEGIN] = "BEGIN",
    [S_BEGIN_IMMEDIATE] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_SAVEPOINT] = "SAVEPOINT cmd",
    [S_RELEASE] = "RELEASE cmd",
    [S_ROLLBACK_TO] = "ROLLBACK TO cmd",
};

/* ---- read transactions ---- */

enum md_err sq_read_begin_at(struct sq_store *s, int fresh, struct md_txn **out)
{
    struct sq_conn *c = sq_reader_take(s);
    if (!c)
        return MD_EDB;
    /* Acquire: pairs with the release of the bump after a commit. The
     * snapshot is taken at the first statement, after this load. */
    unsigned long gen = atomic_load_explicit(&s->commit_gen, memory_order_acquire);
    if (c->snap_gen == gen && !fresh && !sqlite3_get_autocommit(c->db)) {
        *out = &c->txn.base;
        return MD_OK;
    }
    sq_reader_end_snapshot(c);
    enum md_err e = sq_run(&c->txn, c->st[S_BEGIN], "begin");
    if (e) {
        sq_reader_release(s, c);
        return e;
    }
    c->snap_gen = gen;
    *out = &c->txn.base;
    return MD_OK;
}

enum md_err sq_read_begin(struct md_store *base, struct md_txn **out)
{
    return sq_read_begin_at((struct sq_store *)base, 0, out);
}

enum md_err sq_snapshot_begin(struct md_store *base, struct md_txn **out)
{
    return sq_read_begin_at((struct sq_store *)base, 1, out);
}

/* The read transaction stays open for the connection's next request (see
 * commit_gen); the checkpointer ends those of idle connections. A store
 * opened read-only has no checkpointer and commits nothing: it ends the
 * transaction now, so that it holds up no checkpoint of the memoryd that
 * serves the file. */
void sq_txn_end(struct md_txn *base)
{
    struct sq_txn *t = (struct sq_txn *)base;
    struct sq_store *s = (struct sq_store *)base->store;
    if (t->pending) { /* a finished statement would keep its snapshot past a COMMIT */
        sqlite3_reset(t->pending);
        t->pending = NULL;
    }
    if (sqlite3_get_autocommit(t->c->db))
        t->c->snap_gen = 0; /* an error ended it */
    else if (s->cfg.read_only)
        sq_reader_end_snapshot(t->c);
    sq_reader_release(s, t->c);
}

/* ---- write transactions ---- */

/* MD_EINVAL on a store opened read-only: it has no writer. */
enum md_err sq_write_begin(struct md_store *base, struct md_txn **out)
{
    struct sq_store *s = (struct sq_store *)base;
    if (s->cfg.read_only)
        return MD_EINVAL;
    pthread_mutex_lock(&s->write_mu);
    enum md_err e = sq_writer_heal(s);
    if (!e) {
        if (atomic_exchange_explicit(&s->ckpt_catchup, 0, memory_order_acq_rel))
            sq_ckpt_catch_up(s);
        struct sq_txn *t = &s->writer->txn;
        md_dirsizes_reset(t->sizes);
        md_hist_reset(t->hist);
        t->made_tenant_txn = t->made_tenant_cmd = t->index_now = 0;
        e = sq_run(t, t->c->st[S_BEGIN_IMMEDIATE], "begin immediate");
        if (!e) {
            *out = &t->base;
            return MD_OK;
        }
    }
    pthread_mutex_unlock(&s->write_mu);
    return e;
}

enum md_err sq_commit(struct md_txn *base)
{
    struct sq_txn *t = (struct sq_txn *)base;
    struct sq_store *s = (struct sq_store *)base->store;
    /* The pending directory sizes first; if they cannot be written, the
     * transaction is rolled back below, never committed. */
    enum md_err e = sq_sizes_flush(t);
    if (!e)
        e = sq_counters_flush(t);
    if (!e && t->index_now)
        e = sq_search_flush(t);
    t->index_now = 0;
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
        sq_scrub_wal(s);
    }
    pthread_mutex_unlock(&s->write_mu);
    return e;
}

void sq_rollback(struct md_txn *base)
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

enum md_err sq_savepoint(struct md_txn *base)
{
    struct sq_txn *t = (struct sq_txn *)base;
    md_dirsizes_mark(t->sizes);
    md_hist_mark(t->hist);
    t->made_tenant_cmd = 0;
    return sq_run(t, sq_stmt(t, S_SAVEPOINT), "savepoint");
}

enum md_err sq_release(struct md_txn *base, int rollback)
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

/* Nothing to lock (BEGIN IMMEDIATE holds the database's write lock) and
 * nothing deferred: SQLite runs every batch the exact way. */
enum md_err sq_batch_begin(struct md_txn *base, const struct md_batch *b)
{
    (void)base;
    (void)b;
    return MD_OK;
}

enum md_err sq_flush(struct md_txn *base)
{
    (void)base;
    return MD_OK;
}

void sq_stats(struct md_txn *base, struct md_txn_stats *st)
{
    st->statements = ((struct sq_txn *)base)->statements;
    st->round_trips = 0;
}

/* md_store_index_step: a step of the index in a write transaction of its
 * own; nothing committed when there were no notes. */
enum md_err sq_index_step(struct md_store *base, int *more)
{
    struct sq_store *s = (struct sq_store *)base;
    *more = 0;
    if (s->search_off || s->search_pending || s->cfg.read_only)
        return MD_OK;
    struct md_txn *t;
    enum md_err e = sq_write_begin(base, &t);
    if (e)
        return e;
    int noted = 0;
    e = sq_search_step((struct sq_txn *)t, &noted, more);
    if (e || !noted) {
        sq_rollback(t);
        *more = 0;
        return e;
    }
    return sq_commit(t);
}
