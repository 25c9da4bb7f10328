/*
 * txn.c — write transactions of the PostgreSQL engine (see internal.h):
 * BEGIN, the tenants' advisory locks, a savepoint per command, COMMIT or
 * ROLLBACK, on the writer's connection or the pruner's.
 *
 * Directory sizes: a write transaction keeps the changes pending
 * (md_dirsizes.h) and writes them in one statement before the commit, or
 * before a subtree moves or goes; a size read in it adds what is pending.
 *
 * Failures: an error from the server inside the transaction block aborts
 * it until the writer rolls back to the command's savepoint, which the
 * next flush sends first. A COMMIT whose answer never came is MD_EUNSURE.
 *
 * Owns: struct pg_writing, a write transaction's part (pending sizes,
 * tenants made); the writer's and the pruner's mutexes are held from
 * their BEGIN to their end. Makes and frees the parts of a write
 * transaction (md_pg_txn_parts_new, md_pg_txn_parts_free: the functions
 * store.c hands conn.c for a writer's connection).
 */
#include <stdlib.h>

#include "base/md_path.h"
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
    {P_LOCK, "SELECT pg_advisory_xact_lock($1)", 1, {OID_INT8}, 0},
    {P_SIZES,
     "UPDATE entries e SET size = e.size + u.delta"
     " FROM unnest($1::int8[], $2::text[], $3::int8[]) AS u(tenant, path, delta)"
     " WHERE e.tenant = u.tenant AND e.path = u.path",
     3,
     {OID_INT8ARRAY, OID_TEXTARRAY, OID_INT8ARRAY},
     0},
};
const struct pg_stmt_defs md_pg_txn_stmts = MD_PG_STMT_DEFS(stmts);

struct pg_writing {
    struct md_dirsizes *sizes; /* directory size changes not written yet */
    /* A tenant was made in this transaction / since the savepoint: a
     * rollback must forget the ids cached since. */
    int tenant_made_txn, tenant_made_cmd;
};

static struct pg_writing *writing_new(void)
{
    struct pg_writing *w = calloc(1, sizeof *w);
    if (w && !(w->sizes = md_dirsizes_new())) {
        free(w);
        w = NULL;
    }
    return w;
}

static void writing_free(struct pg_writing *w)
{
    if (!w)
        return;
    md_dirsizes_free(w->sizes);
    free(w);
}

/* ---- the parts of a write transaction ---- */

int md_pg_txn_parts_new(struct pg_txn *t)
{
    t->writing = writing_new();
    t->batch = md_pg_batch_new();
    t->history = md_pg_history_new(md_pg_store_of(t)->touched);
    return t->writing && t->batch && t->history ? 0 : -1;
}

void md_pg_txn_parts_free(struct pg_txn *t)
{
    writing_free(t->writing);
    md_pg_batch_free(t->batch);
    md_pg_history_free(t->history);
    md_pg_load_free(t->load);
}

void md_pg_tenant_made(struct pg_txn *t)
{
    t->writing->tenant_made_txn = t->writing->tenant_made_cmd = 1;
}

int64_t md_pg_sizes_pending(const struct pg_txn *t, int64_t id, const char *path, size_t len)
{
    return t->writing ? md_dirsizes_pending(t->writing->sizes, id, path, len) : 0;
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
    md_dirsizes_reset(t->writing->sizes);
    md_pg_history_reset(t);
    if (failed && t->writing->tenant_made_txn)
        md_tenant_cache_clear(t->conn->tenants);
    t->writing->tenant_made_txn = t->writing->tenant_made_cmd = 0;
    pthread_mutex_unlock(t->conn == s->pruner ? &s->prune_mu : &s->write_mu);
}

/* A write transaction on connection `c` (its mutex held): BEGIN queued. */
static enum md_err txn_start(struct pg_conn *c, struct md_txn **out)
{
    struct pg_txn *t = &c->txn;
    md_dirsizes_reset(t->writing->sizes);
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

/* ---- tenant locks ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

enum md_err md_pg_lock_tenants(struct pg_txn *t, const char *const *names, size_t n)
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
        e = md_pg_send(t, P_LOCK, &p); /* run in order: ascending keys */
    }
    free(keys);
    return e;
}

/* ---- savepoints ---- */

/* In an optimistic batch, no savepoint is sent: a command that fails
 * before it writes has nothing to undo, and one that fails after abandons
 * the attempt (the batch runs again the exact way, with savepoints). */
enum md_err md_pg_savepoint(struct md_txn *base)
{
    struct pg_txn *t = (struct pg_txn *)base;
    md_dirsizes_mark(t->writing->sizes);
    md_pg_history_mark(t);
    t->writing->tenant_made_cmd = 0;
    if (md_pg_deferring(t)) {
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
        if (t->writing->tenant_made_cmd)
            md_tenant_cache_clear(t->conn->tenants);
        md_dirsizes_restore(t->writing->sizes);
        md_pg_history_restore(t);
        if (md_pg_deferring(t))
            return md_pg_batch_command_ends(t, 1);
        e = md_pg_send(t, P_ROLLBACK_TO, NULL);
    }
    if (md_pg_deferring(t))
        return md_pg_batch_command_ends(t, 0);
    return e ? e : md_pg_send(t, P_RELEASE, NULL);
}

/* ---- directory sizes ---- */

enum md_err md_pg_sizes_send(struct pg_txn *t)
{
    struct md_dirsizes *z = t->writing->sizes;
    struct md_buf *arr = t->pipe.arrays;
    size_t n = md_dirsizes_count(z), live = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t tenant, delta;
        const char *path;
        size_t len;
        md_dirsizes_entry(z, i, &tenant, &path, &len, &delta);
        live += delta != 0;
    }
    if (live == 0)
        return MD_OK;
    enum md_err e = md_pg_arr_begin(&arr[0], OID_INT8, live);
    if (!e)
        e = md_pg_arr_begin(&arr[1], OID_TEXT, live);
    if (!e)
        e = md_pg_arr_begin(&arr[2], OID_INT8, live);
    for (size_t i = 0; i < n && !e; i++) {
        int64_t tenant, delta;
        const char *path;
        size_t len;
        md_dirsizes_entry(z, i, &tenant, &path, &len, &delta);
        if (delta == 0)
            continue;
        e = md_pg_arr_i64(&arr[0], tenant);
        if (!e)
            e = md_pg_arr_elem(&arr[1], path, len);
        if (!e)
            e = md_pg_arr_i64(&arr[2], delta);
    }
    if (e)
        return e;
    struct md_pg_params p = {.n = 0};
    for (int i = 0; i < 3; i++)
        md_pg_bytes(&p, arr[i].data, arr[i].len);
    e = md_pg_send(t, P_SIZES, &p);
    if (!e && md_pg_deferring(t))
        md_pg_pre_fold_sizes(t);
    if (!e)
        md_dirsizes_written(z);
    return e;
}

enum md_err md_pg_sizes_add(struct pg_txn *t, int64_t id, const char *path, size_t len,
                            int64_t delta)
{
    if (delta == 0 || len == MD_ROOT_LEN)
        return MD_OK;
    struct md_dirsizes *z = t->writing->sizes;
    size_t plen = len;
    do {
        plen = md_path_parent_len(path, plen);
        if (md_dirsizes_add(z, id, path, plen, delta) != 0) {
            /* The pending table is full: write it, then keep this one. */
            enum md_err e = md_pg_sizes_send(t);
            if (!e && !md_pg_deferring(t)) /* optimistic: it goes with the batch's writes */
                e = md_pg_flush(t, P_COUNT);
            if (e)
                return e;
            md_dirsizes_reset(z);
            md_dirsizes_mark(z);
            if (md_dirsizes_add(z, id, path, plen, delta) != 0)
                return MD_ENOMEM;
        }
    } while (plen > MD_ROOT_LEN);
    return MD_OK;
}
