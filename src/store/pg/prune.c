/*
 * prune.c — retention on PostgreSQL (md_txn_prune), in the pruner's
 * transactions on a connection of its own (md_pg_prune_begin, txn.c):
 * versions past --history-versions per path (the paths the writer touched,
 * queued in md_hist's touched queue), versions older than --history-days
 * and change-feed entries past their age, tenant by tenant (where the
 * last run stopped: pg_store's prune_next_tenant, the pruner's), then
 * idempotency answers older than a day; at most `budget` rows a call.
 *
 * Owns no part of the transaction (the pruner thread owns the store's
 * prune_next_tenant). Errors as md_store.h.
 */
#include "internal.h"

static const struct pg_stmt_def stmts[] = {
    /* Retention by count of one path, in one statement (so that a run's
     * paths go in one round trip): `cut` is the newest version to go (none
     * when the path has at most $3); the older ones are deleted, and the
     * oldest kept is marked with it. The two changes touch different rows
     * and see the same snapshot (hence the oldest kept is found above
     * `cut`). A row per version deleted. */
    {P_PRUNE_PATH,
     "WITH cut AS (SELECT version FROM versions WHERE tenant = $1 AND path = $2"
     " ORDER BY version DESC LIMIT 1 OFFSET $3),"
     " d AS (DELETE FROM versions WHERE tenant = $1 AND path = $2"
     " AND version <= (SELECT version FROM cut) RETURNING 1),"
     " m AS (UPDATE versions SET pruned_through = greatest(pruned_through,"
     " (SELECT version FROM cut)) WHERE tenant = $1 AND version ="
     " (SELECT min(version) FROM versions WHERE tenant = $1 AND path = $2"
     " AND version > (SELECT version FROM cut)))"
     " SELECT 1 FROM d",
     3,
     {OID_INT8, OID_TEXT, OID_INT8},
     0},
    {P_PRUNE_SUBTREE_PATHS,
     "SELECT path FROM versions WHERE tenant = $1 AND path > $2"
     " AND path < $3 GROUP BY path HAVING count(*) > $4 LIMIT 256",
     4,
     {OID_INT8, OID_TEXT, OID_TEXT, OID_INT8},
     0},
    {P_TENANT_NEXT, "SELECT id FROM tenants WHERE id >= $1 ORDER BY id LIMIT 1", 1, {OID_INT8}, 0},
    {P_PRUNE_AGE_SCAN,
     "SELECT version, time FROM versions WHERE tenant = $1"
     " ORDER BY version LIMIT $2",
     2,
     {OID_INT8, OID_INT8},
     0},
    {P_PRUNE_AGE_DEL,
     "DELETE FROM versions WHERE tenant = $1 AND version <= $2",
     2,
     {OID_INT8, OID_INT8},
     0},
    {P_PRUNE_CHANGES_SCAN,
     "SELECT seq, time FROM changes WHERE tenant = $1"
     " ORDER BY seq LIMIT $2",
     2,
     {OID_INT8, OID_INT8},
     0},
    {P_PRUNE_CHANGES_DEL,
     "DELETE FROM changes WHERE tenant = $1 AND seq <= $2",
     2,
     {OID_INT8, OID_INT8},
     0},
    {P_PRUNE_IDEM,
     "DELETE FROM idempotency WHERE ctid IN (SELECT ctid FROM idempotency"
     " WHERE time < $1 LIMIT $2) RETURNING 1",
     2,
     {OID_INT8, OID_INT8},
     0},
};
const struct pg_stmt_defs md_pg_prune_stmts = MD_PG_STMT_DEFS(stmts);

struct pg_pruner {
    struct pg_txn *t;
    unsigned keep;
    struct md_pruned deleted;
    enum md_err err;
};

/* Queue the pruning of one path by count (its rows are counted at the
 * next flush: t->pipe.counted). */
static void prune_path(struct pg_pruner *pr, int64_t tenant, const char *path, size_t len)
{
    if (pr->err)
        return;
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, tenant);
    md_pg_bytes(&p, path, len);
    md_pg_i64(&p, pr->keep);
    pr->err = md_pg_send(pr->t, P_PRUNE_PATH, &p);
}

static void prune_touched(void *ctx, int64_t tenant, const char *path, size_t len, int subtree)
{
    struct pg_pruner *pr = ctx;
    struct pg_txn *t = pr->t;
    struct md_buf *arr = t->pipe.arrays;
    if (pr->err)
        return;
    if (!subtree) {
        prune_path(pr, tenant, path, len);
        return;
    }
    if ((pr->err = md_pg_subtree_bounds(&arr[0], &arr[1], path, len)) != MD_OK)
        return;
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, tenant);
    md_pg_bytes(&p, arr[0].data, arr[0].len);
    md_pg_bytes(&p, arr[1].data, arr[1].len);
    md_pg_i64(&p, pr->keep);
    if ((pr->err = md_pg_exec(t, P_PRUNE_SUBTREE_PATHS, &p)) != MD_OK)
        return;
    PGresult *r = t->pipe.res;
    t->pipe.res = NULL;
    for (int i = 0; r && i < PQntuples(r) && !pr->err; i++)
        prune_path(pr, tenant, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0));
    PQclear(r);
}

/* Delete a tenant's oldest rows (scan_id: number, time) older than
 * `cutoff`, through del_id. */
static enum md_err prune_old(struct pg_txn *t, int64_t tenant, enum pg_stmt scan_id,
                             enum pg_stmt del_id, int64_t cutoff, size_t *deleted)
{
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, tenant);
    md_pg_i64(&p, 256);
    enum md_err e = md_pg_exec(t, scan_id, &p);
    if (e)
        return e;
    const PGresult *r = t->pipe.res;
    int64_t through = 0;
    for (int i = 0; r && i < PQntuples(r) && md_pg_r_i64(r, i, 1) < cutoff; i++) {
        through = md_pg_r_i64(r, i, 0);
        (*deleted)++;
    }
    if (!through)
        return MD_OK;
    p = (struct md_pg_params){.n = 0};
    md_pg_i64(&p, tenant);
    md_pg_i64(&p, through);
    e = md_pg_send(t, del_id, &p);
    return e ? e : md_pg_flush(t, P_COUNT);
}

/* Pruning by age, tenant by tenant from where the last run stopped, while
 * the budget lasts (the paths' rows queued meanwhile count: t->pipe.counted
 * once flushed). */
static enum md_err prune_by_age(struct pg_txn *t, struct pg_pruner *pr, int64_t now_ms,
                                size_t budget)
{
    struct pg_store *s = md_pg_store_of(t);
    const struct md_retention *r = &s->cfg.history;
    int on = md_history_on(r);
    int64_t versions_cutoff = on ? now_ms - (int64_t)r->days * 24 * 3600 * 1000 : now_ms;
    int64_t changes_cutoff = now_ms - md_history_changes_ms(r);
    enum md_err e = MD_OK;
    for (int i = 0; !e && i < 8 && md_pruned_total(&pr->deleted) + t->pipe.counted < budget; i++) {
        struct md_pg_params p = {.n = 0};
        md_pg_i64(&p, s->prune_next_tenant);
        e = md_pg_exec(t, P_TENANT_NEXT, &p);
        if (e)
            break;
        if (!t->pipe.res || PQntuples(t->pipe.res) != 1) {
            s->prune_next_tenant = 0;
            break;
        }
        int64_t tenant = md_pg_r_i64(t->pipe.res, 0, 0);
        s->prune_next_tenant = tenant + 1;
        e = prune_old(t, tenant, P_PRUNE_AGE_SCAN, P_PRUNE_AGE_DEL, versions_cutoff,
                      &pr->deleted.versions);
        if (!e)
            e = prune_old(t, tenant, P_PRUNE_CHANGES_SCAN, P_PRUNE_CHANGES_DEL, changes_cutoff,
                          &pr->deleted.changes);
    }
    return e;
}

enum md_err md_pg_prune(struct md_txn *base, int64_t now_ms, size_t budget,
                        struct md_pruned *deleted)
{
    struct pg_txn *t = (struct pg_txn *)base;
    const struct md_retention *r = &md_pg_store_of(t)->cfg.history;
    struct pg_pruner pr = {t, md_history_on(r) ? r->versions : 0, {0}, MD_OK};
    struct md_hist *hist = md_pg_history_hist(t);
    /* The paths' statements go with the next flush, their rows counted. */
    t->pipe.counted_id = P_PRUNE_PATH;
    t->pipe.counted = 0;
    md_hist_take_touched(hist, budget / 8 + 1, prune_touched, &pr);
    enum md_err e = pr.err;
    if (!e)
        e = prune_by_age(t, &pr, now_ms, budget);
    if (!e && t->pipe.nqueued)
        e = md_pg_flush(t, P_COUNT);
    pr.deleted.versions += t->pipe.counted;
    t->pipe.counted_id = P_COUNT;
    size_t total = md_pruned_total(&pr.deleted);
    if (!e && total < budget) {
        struct md_pg_params p = {.n = 0};
        md_pg_i64(&p, now_ms - MD_IDEMPOTENCY_MS);
        md_pg_i64(&p, (int64_t)(budget - total));
        e = md_pg_exec(t, P_PRUNE_IDEM, &p);
        if (!e && t->pipe.res)
            pr.deleted.idempotency += (size_t)PQntuples(t->pipe.res);
    }
    *deleted = pr.deleted;
    deleted->more = md_hist_prune_more(hist, deleted, budget);
    return e;
}
