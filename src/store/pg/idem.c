/*
 * idem.c — the answers kept for idempotent retries on PostgreSQL
 * (md_txn_idem_get, md_txn_idem_put; md_history.h): one row per (tenant,
 * key), kept MD_IDEMPOTENCY_MS (prune.c deletes them after).
 *
 * In the writer's transaction only, never in an optimistic batch (the
 * writer runs keyed commands the exact way: MD_EDB there). Owns no part of
 * the transaction. Errors as md_store.h.
 */
#include <string.h>

#include "internal.h"

static const struct pg_stmt_def stmts[] = {
    {P_IDEM_GET,
     "SELECT fingerprint, err, body, time FROM idempotency"
     " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND key = $2",
     2,
     {OID_TEXT, OID_TEXT},
     0},
    {P_IDEM_PUT,
     "INSERT INTO idempotency (tenant, key, fingerprint, err, body, path, time)"
     " VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (tenant, key) DO UPDATE"
     " SET fingerprint = excluded.fingerprint, err = excluded.err,"
     " body = excluded.body, path = excluded.path, time = excluded.time",
     7,
     {OID_INT8, OID_TEXT, OID_BYTEA, OID_INT4, OID_TEXT, OID_TEXT, OID_INT8},
     0},
};
const struct pg_stmt_defs md_pg_idem_stmts = MD_PG_STMT_DEFS(stmts);

enum md_err md_pg_idem_get(struct md_txn *base, const char *tenant, const char *key, size_t key_len,
                           struct md_idem *out)
{
    struct pg_txn *t = (struct pg_txn *)base;
    if (md_pg_deferring(t))
        return MD_EDB; /* the writer runs keyed commands the exact way */
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_bytes(&p, key, key_len);
    enum md_err e = md_pg_send(t, P_IDEM_GET, &p);
    if (!e)
        e = md_pg_flush(t, P_IDEM_GET);
    if (e)
        return e;
    const PGresult *r = t->pipe.res;
    if (!r || PQntuples(r) != 1 || PQgetlength(r, 0, 0) != MD_SHA256_LEN ||
        md_pg_r_i64(r, 0, 3) < md_pg_now_ms() - MD_IDEMPOTENCY_MS)
        return MD_ENOENT;
    memcpy(out->fingerprint, PQgetvalue(r, 0, 0), MD_SHA256_LEN);
    out->err = md_pg_r_i32(r, 0, 1);
    out->body = PQgetvalue(r, 0, 2);
    out->body_len = (size_t)PQgetlength(r, 0, 2);
    return MD_OK;
}

enum md_err md_pg_idem_put(struct md_txn *base, const char *tenant, const char *key, size_t key_len,
                           const struct md_idem *answer, const char *path, size_t path_len)
{
    struct pg_txn *t = (struct pg_txn *)base;
    if (md_pg_deferring(t))
        return MD_EDB;
    int64_t id = 0;
    enum md_err e = md_pg_ensure_tenant(t, tenant, &id);
    if (e)
        return e;
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, id);
    md_pg_bytes(&p, key, key_len);
    md_pg_bytes(&p, answer->fingerprint, MD_SHA256_LEN);
    md_pg_i32(&p, answer->err);
    md_pg_bytes(&p, answer->body ? answer->body : "", answer->body_len);
    if (path)
        md_pg_bytes(&p, path, path_len);
    else
        md_pg_null(&p);
    md_pg_i64(&p, md_pg_now_ms());
    e = md_pg_send(t, P_IDEM_PUT, &p);
    return e ? e : md_pg_flush(t, P_COUNT);
}
