/*
 * quota.c — what the SQLite engine keeps of a tenant's quota (md_quota.h),
 * with its statements: its usage (the bytes of its root directory, its
 * files), its overrides of the limits (NULL: none), and its number of
 * files, which search.c reads too; its --sensitive override (NULL:
 * none).
 *
 * Errors: as sq_conn_rc; a tenant without data has no usage and no
 * overrides (MD_OK).
 */
#include "base/md_path.h"
#include "internal.h"

const char *const sq_quota_sql[S_COUNT] = {
    [S_USAGE] = "SELECT files, max_bytes, max_files FROM tenants WHERE id = ?1",
    [S_LIMITS_SET] = "UPDATE tenants SET max_bytes = ?2, max_files = ?3 WHERE id = ?1",
    [S_SENSITIVE_GET] = "SELECT sensitive FROM tenants WHERE id = ?1",
    [S_SENSITIVE_SET] = "UPDATE tenants SET sensitive = ?2 WHERE id = ?1",
};

enum md_err sq_usage(struct md_txn *base, const char *tenant, struct md_usage *u)
{
    struct sq_txn *t = (struct sq_txn *)base;
    *u = (struct md_usage){0, 0, -1, -1};
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (e == MD_ENOENT)
        return MD_OK; /* no data: nothing stored, no overrides */
    struct md_entry root = {.kind = MD_KIND_DIR};
    if (!e)
        e = sq_get_entry(t, id, MD_ROOT, MD_ROOT_LEN, 0, &root);
    if (e)
        return e;
    u->bytes = root.size;
    sqlite3_stmt *st = sq_stmt(t, S_USAGE);
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        u->files = sqlite3_column_int64(st, 0);
        u->max_bytes = sq_column_or(st, 1, -1);
        u->max_files = sq_column_or(st, 2, -1);
    }
    sq_done(st);
    return rc == SQLITE_ROW ? MD_OK : rc == SQLITE_DONE ? MD_EDB : sq_conn_rc(t->c, rc, "usage");
}

enum md_err sq_tenant_files(struct sq_txn *t, int64_t id, int64_t *files, const char *what)
{
    sqlite3_stmt *st = sq_stmt(t, S_USAGE);
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    *files = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sq_done(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, what);
}

static void bind_or_null(sqlite3_stmt *st, int i, int64_t v)
{
    if (v < 0)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, v);
}

enum md_err sq_set_limits(struct md_txn *base, const char *tenant, int64_t max_bytes,
                          int64_t max_files)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 1, &id);
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_LIMITS_SET);
    sqlite3_bind_int64(st, 1, id);
    bind_or_null(st, 2, max_bytes);
    bind_or_null(st, 3, max_files);
    return sq_run(t, st, "set limits");
}

enum md_err sq_sensitive_get(struct md_txn *base, const char *tenant, int *mode)
{
    struct sq_txn *t = (struct sq_txn *)base;
    *mode = -1;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (e == MD_ENOENT)
        return MD_OK; /* no data: no override */
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_SENSITIVE_GET);
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *mode = (int)sq_column_or(st, 0, -1);
    sq_done(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, "sensitive");
}

enum md_err sq_sensitive_set(struct md_txn *base, const char *tenant, int mode)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 1, &id);
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_SENSITIVE_SET);
    sqlite3_bind_int64(st, 1, id);
    bind_or_null(st, 2, mode);
    return sq_run(t, st, "set sensitive");
}
