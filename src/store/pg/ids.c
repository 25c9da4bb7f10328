/*
 * ids.c — the tenants' ids on PostgreSQL (see internal.h): each
 * connection caches the ids it has seen (md_tenant_cache.h, the
 * connection's `tenants`); a tenant's id is looked up (P_TENANT_ID) when
 * not cached. A tenant made in a write transaction (tree.c) is marked
 * here, so that a rollback forgets the ids cached since (txn.c).
 *
 * Owns the txn's tenant_made flags: set here; txn.c clears the command's
 * at each savepoint and both at the transaction's end, and forgets the ids
 * cached since at a rollback. Errors as md_store.h.
 */
#include "internal.h"
#include "store/md_tenant_cache.h"

static const struct pg_stmt_def stmts[] = {
    {P_TENANT_ID, "SELECT id FROM tenants WHERE name = $1", 1, {OID_TEXT}, 0},
};
const struct pg_stmt_defs md_pg_ids_stmts = MD_PG_STMT_DEFS(stmts);

int64_t md_pg_known_tenant(struct pg_txn *t, const char *tenant)
{
    return md_tenant_cache_get(t->conn->tenants, tenant);
}

/* (The cache is emptied by any rollback.) */
enum md_err md_pg_tenant_lookup(struct pg_txn *t, const char *tenant, int64_t *id)
{
    *id = md_pg_known_tenant(t, tenant);
    if (*id)
        return MD_OK;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    enum md_err e = md_pg_send(t, P_TENANT_ID, &p);
    if (!e)
        e = md_pg_flush(t, P_TENANT_ID);
    if (!e && t->pipe.res && PQntuples(t->pipe.res) == 1) {
        *id = md_pg_r_i64(t->pipe.res, 0, 0);
        md_tenant_cache_put(t->conn->tenants, tenant, *id);
    }
    return e;
}

void md_pg_tenant_made(struct pg_txn *t)
{
    t->tenant_made_txn = t->tenant_made_cmd = 1;
}
