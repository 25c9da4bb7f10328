/*
 * txn.c — write transactions of the PostgreSQL engine (see internal.h):
 * BEGIN, a savepoint per command, COMMIT or ROLLBACK, on the writer's
 * connection or the pruner's; the parts of a write transaction made and
 * freed, reset at its ends, marked at each command's savepoint and
 * restored at its rollback, and sent before the COMMIT (the rows of
 * md_txn_load held, the versions and change-feed rows, the counters and
 * the NOTIFY, the directory sizes), in the round trip of the COMMIT.
 *
 * It sits above the parts' files (history.c, batch.c, load.c, sizes.c,
 * ids.c), which name none of its functions: the tenants' locks are
 * batch.c's, the pending directory sizes sizes.c's.
 *
 * Failures: an error from the server inside the transaction block aborts
 * it until the writer rolls back to the command's savepoint, which the
 * next flush sends first. A COMMIT whose answer never came is MD_EUNSURE.
 *
 * Owns: the parts of a write transaction (md_pg_txn_parts_new and
 * md_pg_txn_parts_free, which store.c hands conn.c for a writer's
 * connection; each part made and freed by its file, the pending sizes
 * here with md_dirsizes.h); the writer's and the pruner's mutexes are held
 * from their BEGIN to their end.
 */
#include "internal.h"
#include "store/md_dirsizes.h"
#include "store/md_tenant_cache.h"

static const struct pg_stmt_def stmts[] = {
    {P_BEGIN, "BEGIN", 0, {0}, 0},
    {P_COMMIT, "COMMIT", 0, {0}, 0},
    /* A reader's too: the end of a snapshot (tenants.c). */
    {P_ROLLBACK, "ROLLBACK", 0, {0}, 1},
    {P_SAVEPOINT, "SAVEPOINT cmd", 0, {0}, 0},
    {P_RELEASE, "RELEASE cmd", 0, {0}, 0},
    {P_ROLLBACK_TO, "ROLLBACK TO cmd", 0, {0}, 0},
};
const struct pg_stmt_defs md_pg_txn_stmts = MD_PG_STMT_DEFS(stmts);

/* ---- the parts of a write transaction ---- */

int md_pg_txn_parts_new(struct pg_txn *t)
{
    t->sizes = md_dirsizes_new();
    t->batch = md_pg_batch_new();
    t->history = md_pg_history_new(md_pg_store_of(t)->touched);
    return t->sizes && t->batch && t->history ? 0 : -1;
}

void md_pg_txn_parts_free(struct pg_txn *t)
{
    md_dirsizes_free(t->sizes);
    md_pg_batch_free(t->batch);
    md_pg_history_free(t->history);
    md_pg_load_free(t->load);
}

/* ---- begin and end ---- */

/* End the writer's (or the pruner's) transaction state, after its commit
 * or rollback, and let the next one begin. */
static void writer_done(struct pg_store *s, struct pg_txn *t, int failed)
{
    PQclear(t->pipe.res);
    t->pipe.res = NULL;
    md_pg_batch_reset(t);
    md_pg_gather_drop(&t->pipe);
    md_pg_load_reset(t);
    md_dirsizes_reset(t->sizes);
    md_pg_history_reset(t);
    if (failed && t->tenant_made_txn)
        md_tenant_cache_clear(t->conn->tenants);
    t->tenant_made_txn = t->tenant_made_cmd = 0;
    pthread_mutex_unlock(t->conn == s->pruner     ? &s->prune_mu
                         : t->conn == s->importer ? &s->import_mu
                                                  : &s->write_mu);
}

/* A write transaction on connection `c` (its mutex held): BEGIN queued. */
static enum md_err txn_start(struct pg_conn *c, struct md_txn **out)
{
    struct pg_txn *t = &c->txn;
    md_dirsizes_reset(t->sizes);
    md_pg_history_reset(t);
    md_pg_pipe_reset(&t->pipe);
    md_pg_batch_reset(t);
    md_pg_gather_drop(&t->pipe);
    enum md_err e = md_pg_send(t, P_BEGIN, NULL);
    if (!e)
        *out = &t->base;
    return e;
}

enum md_err md_pg_write_begin(struct md_store *base, struct md_txn **out)
{
    struct pg_store *s = (struct pg_store *)base;
    pthread_mutex_lock(&s->write_mu);
    enum md_err e = md_pg_conn_heal(s, &s->writer, &s->heal_failures, "writer");
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
enum md_err md_pg_prune_begin(struct md_store *base, struct md_txn **out)
{
    struct pg_store *s = (struct pg_store *)base;
    pthread_mutex_lock(&s->prune_mu);
    enum md_err e = md_pg_conn_heal(s, &s->pruner, &s->prune_heal_failures, "pruner");
    if (!e)
        e = txn_start(s->pruner, out);
    if (e)
        pthread_mutex_unlock(&s->prune_mu);
    return e;
}

/* An import's transaction, on a connection of its own (opened at the
 * first), beside the writer's: the import locks its tenant (batch_begin)
 * and writes only that tenant's rows, so the writer's transactions go on
 * while it stays open; the writer takes no command of that tenant
 * meanwhile (src/cmd/writer.c). */
enum md_err md_pg_import_begin(struct md_store *base, struct md_txn **out)
{
    struct pg_store *s = (struct pg_store *)base;
    pthread_mutex_lock(&s->import_mu);
    enum md_err e = md_pg_conn_heal(s, &s->importer, &s->import_heal_failures, "import");
    if (!e)
        e = txn_start(s->importer, out);
    if (e)
        pthread_mutex_unlock(&s->import_mu);
    return e;
}

enum md_err md_pg_commit(struct md_txn *base)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct pg_store *s = (struct pg_store *)base->store;
    enum md_err e = md_pg_load_send(t);
    if (!e)
        e = md_pg_history_send(t);
    if (!e)
        e = md_pg_history_commit_send(t);
    if (!e)
        e = md_pg_sizes_send(t);
    if (!e)
        e = md_pg_send(t, P_COMMIT, NULL);
    enum pg_stmt failed = P_COUNT;
    if (!e)
        e = md_pg_flush_at(t, P_COUNT, &failed);
    /* The connection went before any statement failed: the COMMIT may have
     * been carried out, or not. */
    if (e == MD_EUNAVAIL && failed == P_COUNT)
        e = MD_EUNSURE;
    if (e && !t->conn->broken) {
        md_pg_send(t, P_ROLLBACK, NULL); /* after a failed COMMIT: harmless */
        md_pg_flush(t, P_COUNT);
    }
    int vacuum = e ? 0 : md_pg_vacuum_asked(t);
    if (!e)
        md_pg_indexer_wrote(s->indexer);
    writer_done(s, t, e != MD_OK);
    if (vacuum)
        md_pg_vacuum(s, vacuum);
    return e;
}

void md_pg_rollback(struct md_txn *base)
{
    struct pg_txn *t = (struct pg_txn *)base;
    if (!t->conn->broken && md_pg_send(t, P_ROLLBACK, NULL) == MD_OK)
        md_pg_flush(t, P_COUNT);
    t->pipe.nqueued = 0;
    writer_done((struct pg_store *)base->store, t, 1);
}

/* ---- savepoints ---- */

/* In an optimistic batch, no savepoint is sent: a command that fails
 * before it writes has nothing to undo, and one that fails after abandons
 * the attempt (the batch runs again the exact way, with savepoints). */
enum md_err md_pg_savepoint(struct md_txn *base)
{
    struct pg_txn *t = (struct pg_txn *)base;
    md_dirsizes_mark(t->sizes);
    md_pg_history_mark(t);
    t->tenant_made_cmd = 0;
    if (md_pg_deferring(t)) {
        md_pg_pipe_mark(&t->pipe); /* what the command queues from now on is its own */
        md_pg_batch_command_begins(t);
        return MD_OK;
    }
    return md_pg_send(t, P_SAVEPOINT, NULL);
}

enum md_err md_pg_release(struct md_txn *base, int rollback)
{
    struct pg_txn *t = (struct pg_txn *)base;
    enum md_err e = MD_OK;
    if (rollback) {
        if (t->tenant_made_cmd)
            md_tenant_cache_clear(t->conn->tenants);
        md_dirsizes_restore(t->sizes);
        md_pg_history_restore(t);
        if (md_pg_deferring(t))
            return md_pg_batch_command_ends(t, 1);
        e = md_pg_send(t, P_ROLLBACK_TO, NULL);
    }
    if (md_pg_deferring(t))
        return md_pg_batch_command_ends(t, 0);
    return e ? e : md_pg_send(t, P_RELEASE, NULL);
}
