/*
 * tenants.c — tenant administration on SQLite (md_store.h), with its
 * statements: the listing of GET /v1/tenants and the erasure of
 * DELETE /v1/tenants/{t} (every row of the tenant, its words out of the
 * search index, search.c).
 *
 * Errors: MD_ENOENT (no such tenant), otherwise as sq_conn_rc.
 */
#include <string.h>

#include "internal.h"
#include "store/md_tenant_cache.h"

const char *const sq_tenants_sql[S_COUNT] = {
    [S_TENANTS_LIST] = "SELECT t.name, coalesce((SELECT size FROM entries e WHERE e.tenant = t.id"
                       " AND e.path = '/memories'), 0), t.files,"
                       " (SELECT count(*) FROM versions v WHERE v.tenant = t.id),"
                       " (SELECT time FROM changes c WHERE c.tenant = t.id AND c.seq = t.last_seq)"
                       " FROM tenants t WHERE t.name > ?1 ORDER BY t.name LIMIT ?2",
    [S_ERASE_ENTRIES] = "DELETE FROM entries WHERE tenant = ?1",
    [S_ERASE_VERSIONS] = "DELETE FROM versions WHERE tenant = ?1",
    [S_ERASE_CHANGES] = "DELETE FROM changes WHERE tenant = ?1",
    [S_ERASE_IDEM] = "DELETE FROM idempotency WHERE tenant = ?1",
    [S_ERASE_KEYS] = "DELETE FROM api_keys WHERE tenant = ?1",
    [S_ERASE_TENANT] = "DELETE FROM tenants WHERE id = ?1",
};

enum md_err sq_tenants(struct md_txn *base, const char *after, size_t limit, md_tenant_cb cb,
                       void *ctx)
{
    struct sq_txn *t = (struct sq_txn *)base;
    sqlite3_stmt *st = sq_stmt(t, S_TENANTS_LIST);
    sq_bind_text(st, 1, after, strlen(after));
    sqlite3_bind_int64(st, 2, (sqlite3_int64)limit);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct md_tenant_info ti = {
            .name = (const char *)sqlite3_column_text(st, 0),
            .bytes = sqlite3_column_int64(st, 1),
            .files = sqlite3_column_int64(st, 2),
            .versions = sqlite3_column_int64(st, 3),
            .last_write = sq_column_or(st, 4, -1),
        };
        if (cb(ctx, &ti))
            break;
    }
    sq_done(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, "tenant list");
}

/* Run one DELETE of the erasure on the tenant's id; *n: rows deleted. */
static enum md_err erase_rows(struct sq_txn *t, enum stmt_id id, int64_t tenant, int64_t *n,
                              const char *what)
{
    sqlite3_stmt *st = sq_stmt(t, id);
    sqlite3_bind_int64(st, 1, tenant);
    enum md_err e = sq_run(t, st, what);
    if (!e && n)
        *n = sqlite3_changes64(t->c->db);
    return e;
}

enum md_err sq_erase(struct md_txn *base, const char *tenant, struct md_erased *out)
{
    struct sq_txn *t = (struct sq_txn *)base;
    *out = (struct md_erased){0, 0, 0, 0, 0};
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (!e)
        e = erase_rows(t, S_ERASE_ENTRIES, id, &out->entries, "erase entries");
    if (!e)
        e = sq_search_purge(t);
    if (!e)
        e = erase_rows(t, S_ERASE_VERSIONS, id, &out->versions, "erase versions");
    if (!e)
        e = erase_rows(t, S_ERASE_CHANGES, id, &out->changes, "erase changes");
    if (!e)
        e = erase_rows(t, S_ERASE_IDEM, id, &out->idempotency, "erase idempotency keys");
    /* Its API keys (api_keys.tenant is the tenant's name), in this
     * transaction. */
    if (!e) {
        sqlite3_stmt *st = sq_stmt(t, S_ERASE_KEYS);
        sq_bind_text(st, 1, tenant, strlen(tenant));
        e = sq_run(t, st, "erase API keys");
        if (!e)
            out->api_keys = sqlite3_changes64(t->c->db);
    }
    if (!e)
        e = erase_rows(t, S_ERASE_TENANT, id, NULL, "erase tenant");
    /* Its id is gone: not to be used again by this transaction. */
    md_tenant_cache_clear(t->c->tenants);
    if (!e) /* secure_delete zeroed the pages; after the commit, the WAL too */
        ((struct sq_store *)base->store)->scrub_wal = 1;
    return e;
}
