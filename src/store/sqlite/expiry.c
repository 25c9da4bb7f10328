/*
 * expiry.c — what the SQLite engine keeps for the expiry of unused files
 * (md_store.h, "expiry of unused files"), with its statements: a tenant's
 * window (tenants.expire_ms), the last uses written back (the table
 * `uses`, 009_expiry.sql: a file's last use is the later of its mtime and
 * its row there), the files expired across tenants and a tenant's files
 * expiring, read from them.
 *
 * Errors: MD_ENOENT (no such file), otherwise as sq_conn_rc.
 */
#include <string.h>

#include "internal.h"

/* A file's last use, of entries e and uses u. */
#define USED "max(e.mtime, coalesce(u.used, 0))"
#define USES "LEFT JOIN uses u ON u.tenant = e.tenant AND u.path = e.path"

/* NOLINTBEGIN(bugprone-suspicious-missing-comma): statements over several lines */
const char *const sq_expiry_sql[S_COUNT] = {
    [S_EXPIRY_SET] = "UPDATE tenants SET expire_ms = ?2 WHERE id = ?1",
    [S_EXPIRY_GET] = "SELECT expire_ms FROM tenants WHERE name = ?1",
    [S_USE_PUT] = "INSERT INTO uses (tenant, path, used) SELECT ?1, ?2, ?3 WHERE EXISTS"
                  " (SELECT 1 FROM entries WHERE tenant = ?1 AND path = ?2 AND kind = 0)"
                  " ON CONFLICT (tenant, path) DO UPDATE SET used = max(used, excluded.used)",
    [S_USE_GET] = "SELECT " USED ", e.size FROM entries e " USES
                  " WHERE e.tenant = ?1 AND e.path = ?2 AND e.kind = 0",
    /* Tenants first: one whose expiry is off costs no look at its files. */
    [S_EXPIRED] = "SELECT t.name, e.path, " USED " FROM tenants t JOIN entries e"
                  " ON e.tenant = t.id " USES " WHERE coalesce(t.expire_ms, ?2) > 0"
                  " AND e.kind = 0 AND " USED " < ?1 - coalesce(t.expire_ms, ?2) LIMIT ?3",
    [S_EXPIRING] = "SELECT e.path, " USED " FROM entries e " USES
                   " WHERE e.tenant = ?1 AND e.path > ?3 AND e.kind = 0 AND " USED " <= ?2"
                   " ORDER BY e.path LIMIT ?4",
};
/* NOLINTEND(bugprone-suspicious-missing-comma) */

enum md_err sq_expiry_set(struct md_txn *base, const char *tenant, int64_t expire_ms)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 1, &id);
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_EXPIRY_SET);
    sqlite3_bind_int64(st, 1, id);
    if (expire_ms < 0)
        sqlite3_bind_null(st, 2);
    else
        sqlite3_bind_int64(st, 2, expire_ms);
    return sq_run(t, st, "set expiry");
}

enum md_err sq_expiry_get(struct md_txn *base, const char *tenant, int64_t *expire_ms)
{
    struct sq_txn *t = (struct sq_txn *)base;
    sqlite3_stmt *st = sq_stmt(t, S_EXPIRY_GET);
    sq_bind_text(st, 1, tenant, strlen(tenant));
    int rc = sqlite3_step(st);
    *expire_ms = rc == SQLITE_ROW ? sq_column_or(st, 0, -1) : -1;
    sq_done(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, "expiry");
}

enum md_err sq_use_put(struct md_txn *base, const char *tenant, const char *path, size_t len,
                       int64_t used_ms)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (e)
        return e == MD_ENOENT ? MD_OK : e;
    sqlite3_stmt *st = sq_stmt(t, S_USE_PUT);
    sqlite3_bind_int64(st, 1, id);
    sq_bind_text(st, 2, path, len);
    sqlite3_bind_int64(st, 3, used_ms);
    return sq_run(t, st, "use put");
}

enum md_err sq_use_get(struct md_txn *base, const char *tenant, const char *path, size_t len,
                       int64_t *used_ms, int64_t *size)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_USE_GET);
    sqlite3_bind_int64(st, 1, id);
    sq_bind_text(st, 2, path, len);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *used_ms = sqlite3_column_int64(st, 0);
        *size = sqlite3_column_int64(st, 1);
    }
    sq_done(st);
    return rc == SQLITE_ROW    ? MD_OK
           : rc == SQLITE_DONE ? MD_ENOENT
                               : sq_conn_rc(t->c, rc, "use get");
}

enum md_err sq_expired(struct md_txn *base, int64_t now_ms, int64_t default_ms, size_t limit,
                       md_use_cb cb, void *ctx)
{
    struct sq_txn *t = (struct sq_txn *)base;
    sqlite3_stmt *st = sq_stmt(t, S_EXPIRED);
    sqlite3_bind_int64(st, 1, now_ms);
    sqlite3_bind_int64(st, 2, default_ms);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)limit);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (cb(ctx, (const char *)sqlite3_column_text(st, 0),
               (const char *)sqlite3_column_text(st, 1), (size_t)sqlite3_column_bytes(st, 1),
               sqlite3_column_int64(st, 2)))
            break;
    sq_done(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, "expired");
}

enum md_err sq_expiring(struct md_txn *base, const char *tenant, int64_t before_ms,
                        const char *after, size_t after_len, size_t limit, md_use_cb cb, void *ctx)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (e)
        return e == MD_ENOENT ? MD_OK : e;
    sqlite3_stmt *st = sq_stmt(t, S_EXPIRING);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, before_ms);
    sq_bind_text(st, 3, after, after_len);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)limit);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (cb(ctx, tenant, (const char *)sqlite3_column_text(st, 0),
               (size_t)sqlite3_column_bytes(st, 0), sqlite3_column_int64(st, 1)))
            break;
    sq_done(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, "expiring");
}
