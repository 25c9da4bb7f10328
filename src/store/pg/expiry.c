/*
 * expiry.c — what PostgreSQL keeps for the expiry of unused files
 * (md_store.h, "expiry of unused files"), with its statements: a tenant's
 * window (tenants.expire_ms), the last uses written back (entries.used,
 * 008_expiry.sql: a file's last use is the later of its mtime and that),
 * the files expired across tenants and a tenant's files expiring.
 *
 * Errors: MD_ENOENT (no such file), otherwise as md_pg_exec.
 */
#include "internal.h"
#include "store/md_tenant_cache.h"

/* A file's last use, of entries e. */
#define USED "GREATEST(e.mtime, e.used)"

static const struct pg_stmt_def stmts[] = {
    {P_EXPIRY_SET, "UPDATE tenants SET expire_ms = $2 WHERE id = $1", 2, {OID_INT8, OID_INT8}, 0},
    {P_EXPIRY_GET, "SELECT expire_ms FROM tenants WHERE name = $1", 1, {OID_TEXT}, 1},
    {P_USE_PUT,
     "UPDATE entries SET used = $3 WHERE tenant = $1 AND path = $2 AND kind = 0 AND used < $3",
     3,
     {OID_INT8, OID_TEXT, OID_INT8},
     0},
    {P_USE_GET,
     "SELECT " USED ", e.size FROM entries e WHERE e.tenant = $1 AND e.path = $2 AND e.kind = 0",
     2,
     {OID_INT8, OID_TEXT},
     0},
    /* Tenants first: one whose expiry is off costs no look at its files. */
    {P_EXPIRED,
     "SELECT t.name, e.path, " USED " FROM tenants t JOIN entries e ON e.tenant = t.id"
     " WHERE coalesce(t.expire_ms, $2) > 0 AND e.kind = 0"
     " AND " USED " < $1 - coalesce(t.expire_ms, $2) LIMIT $3",
     3,
     {OID_INT8, OID_INT8, OID_INT8},
     1},
    {P_EXPIRING,
     "SELECT e.path, " USED " FROM entries e WHERE e.tenant ="
     " (SELECT id FROM tenants WHERE name = $1) AND e.path > $3"
     " AND e.kind = 0 AND " USED " <= $2 ORDER BY e.path LIMIT $4",
     4,
     {OID_TEXT, OID_INT8, OID_TEXT, OID_INT8},
     1},
};
const struct pg_stmt_defs md_pg_expiry_stmts = MD_PG_STMT_DEFS(stmts);

enum md_err md_pg_expiry_set(struct md_txn *base, const char *tenant, int64_t expire_ms)
{
    struct pg_txn *t = (struct pg_txn *)base;
    int64_t id = 0;
    /* Looked up again (a rare write), as set_limits does. */
    md_tenant_cache_drop(t->conn->tenants, tenant);
    enum md_err e = md_pg_ensure_tenant(t, tenant, &id);
    if (e)
        return e;
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, id);
    md_pg_i64_or_null(&p, expire_ms);
    return md_pg_exec(t, P_EXPIRY_SET, &p);
}

enum md_err md_pg_expiry_get(struct md_txn *base, const char *tenant, int64_t *expire_ms)
{
    struct pg_txn *t = (struct pg_txn *)base;
    *expire_ms = -1;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    enum md_err e = md_pg_exec(t, P_EXPIRY_GET, &p);
    if (!e && PQntuples(t->pipe.res) == 1)
        *expire_ms = md_pg_r_i64_or(t->pipe.res, 0, 0, -1);
    return e;
}

enum md_err md_pg_use_put(struct md_txn *base, const char *tenant, const char *path, size_t len,
                          int64_t used_ms)
{
    struct pg_txn *t = (struct pg_txn *)base;
    int64_t id = 0;
    enum md_err e = md_pg_tenant_lookup(t, tenant, &id);
    if (e || !id)
        return e;
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, id);
    md_pg_bytes(&p, path, len);
    md_pg_i64(&p, used_ms);
    return md_pg_exec(t, P_USE_PUT, &p);
}

enum md_err md_pg_use_get(struct md_txn *base, const char *tenant, const char *path, size_t len,
                          int64_t *used_ms, int64_t *size)
{
    struct pg_txn *t = (struct pg_txn *)base;
    int64_t id = 0;
    enum md_err e = md_pg_tenant_lookup(t, tenant, &id);
    if (e)
        return e;
    if (!id)
        return MD_ENOENT;
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, id);
    md_pg_bytes(&p, path, len);
    e = md_pg_exec(t, P_USE_GET, &p);
    if (e)
        return e;
    if (PQntuples(t->pipe.res) != 1)
        return MD_ENOENT;
    *used_ms = md_pg_r_i64(t->pipe.res, 0, 0);
    *size = md_pg_r_i64(t->pipe.res, 0, 1);
    return MD_OK;
}

enum md_err md_pg_expired(struct md_txn *base, int64_t now_ms, int64_t default_ms, size_t limit,
                          md_use_cb cb, void *ctx)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, now_ms);
    md_pg_i64(&p, default_ms);
    md_pg_i64(&p, (int64_t)limit);
    enum md_err e = md_pg_exec(t, P_EXPIRED, &p);
    if (e)
        return e;
    PGresult *r = t->pipe.res;
    t->pipe.res = NULL; /* kept while cb runs: cb must not call the txn */
    for (int i = 0; r && i < PQntuples(r); i++)
        if (cb(ctx, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), (size_t)PQgetlength(r, i, 1),
               md_pg_r_i64(r, i, 2)))
            break;
    PQclear(r);
    return MD_OK;
}

enum md_err md_pg_expiring(struct md_txn *base, const char *tenant, int64_t before_ms,
                           const char *after, size_t after_len, size_t limit, md_use_cb cb,
                           void *ctx)
{
    struct pg_txn *t = (struct pg_txn *)base;
    /* On a reader: the tenant by name (ids are looked up by the writer's
     * statements). */
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_i64(&p, before_ms);
    md_pg_bytes(&p, after, after_len);
    md_pg_i64(&p, (int64_t)limit);
    enum md_err e = md_pg_exec(t, P_EXPIRING, &p);
    if (e)
        return e;
    PGresult *r = t->pipe.res;
    t->pipe.res = NULL;
    for (int i = 0; r && i < PQntuples(r); i++)
        if (cb(ctx, tenant, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0),
               md_pg_r_i64(r, i, 1)))
            break;
    PQclear(r);
    return MD_OK;
}
