/*
 * tenants.c — what PostgreSQL knows of whole tenants: their usage and
 * quota overrides (md_txn_usage, set_limits; md_quota.h), their --sensitive
 * override (md_txn_sensitive_get, sensitive_set), the tenants listing
 * (md_txn_tenants), an erasure (md_txn_erase), and the export's snapshot
 * and pages (md_store_snapshot_begin, md_txn_scan; md_txn_versions_scan,
 * every version's content, for memoryd scan).
 *
 * An erasure NOTIFYs "erased:" and the name at its commit, so that other
 * instances forget their cached tenant ids (watch.c), and asks for the
 * VACUUM that removes the tenant's dead rows after it (history.c).
 *
 * Owns the `snapshot` flag of a reader's txn. Errors as md_store.h.
 */
#include <stdio.h>
#include <string.h>

#include "base/md_path.h"
#include "internal.h"
#include "store/md_tenant_cache.h"

static const struct pg_stmt_def stmts[] = {
    {P_USAGE,
     "SELECT t.id, t.files, t.max_bytes, t.max_files, e.size FROM tenants t"
     " LEFT JOIN entries e ON e.tenant = t.id AND e.path = '/memories'"
     " WHERE t.name = $1",
     1,
     {OID_TEXT},
     1},
    {P_LIMITS_SET,
     "UPDATE tenants SET max_bytes = $2, max_files = $3 WHERE id = $1",
     3,
     {OID_INT8, OID_INT8, OID_INT8},
     0},
    {P_SENSITIVE_GET, "SELECT sensitive::int8 FROM tenants WHERE name = $1", 1, {OID_TEXT}, 1},
    {P_SENSITIVE_SET,
     "UPDATE tenants SET sensitive = $2 WHERE id = $1",
     2,
     {OID_INT8, OID_INT8},
     0},
    {P_TENANTS_LIST,
     "SELECT t.name, coalesce(e.size, 0), t.files,"
     " (SELECT count(*) FROM versions v WHERE v.tenant = t.id),"
     " (SELECT c.time FROM changes c WHERE c.tenant = t.id"
     " AND c.seq = t.last_seq)"
     " FROM tenants t LEFT JOIN entries e ON e.tenant = t.id"
     " AND e.path = '/memories'"
     " WHERE t.name > $1 ORDER BY t.name LIMIT $2",
     2,
     {OID_TEXT, OID_INT8},
     1},
    /* One statement: every row of the tenant, and how many of each. */
    {P_ERASE,
     "WITH t AS (SELECT id FROM tenants WHERE name = $1),"
     " e AS (DELETE FROM entries WHERE tenant = (SELECT id FROM t) RETURNING 1),"
     " v AS (DELETE FROM versions WHERE tenant = (SELECT id FROM t) RETURNING 1),"
     " c AS (DELETE FROM changes WHERE tenant = (SELECT id FROM t) RETURNING 1),"
     " i AS (DELETE FROM idempotency WHERE tenant = (SELECT id FROM t) RETURNING 1),"
     " k AS (DELETE FROM api_keys WHERE tenant = $1 AND EXISTS (SELECT 1 FROM t)"
     " RETURNING 1),"
     " w AS (DELETE FROM search_words WHERE tenant = (SELECT id FROM t)),"
     " s AS (DELETE FROM search_cursor WHERE tenant = (SELECT id FROM t)),"
     " d AS (DELETE FROM tenants WHERE id = (SELECT id FROM t) RETURNING 1)"
     " SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM e),"
     " (SELECT count(*) FROM v), (SELECT count(*) FROM c), (SELECT count(*) FROM i),"
     " (SELECT count(*) FROM k)",
     1,
     {OID_TEXT},
     0},
    {P_SNAPSHOT, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", 0, {0}, 1},
    /* A page of the export: paths and sizes first (LIMIT $3), the byte
     * budget ($4) applied to them, and only then the contents. */
    {P_SCAN,
     "SELECT e.path, e.kind, e.mtime, e.content, s.cnt FROM"
     " (SELECT path, row_number() OVER w AS n, sum(fsize) OVER w - fsize AS before,"
     " count(*) OVER () AS cnt FROM (SELECT path, CASE WHEN kind = 0 THEN size ELSE 0"
     " END AS fsize FROM entries WHERE tenant = (SELECT id FROM tenants WHERE name = $1)"
     " AND path > $2 ORDER BY path LIMIT $3) l"
     " WINDOW w AS (ORDER BY path ROWS UNBOUNDED PRECEDING)) s"
     " JOIN entries e ON e.tenant = (SELECT id FROM tenants WHERE name = $1)"
     " AND e.path = s.path WHERE s.n = 1 OR s.before < $4 ORDER BY s.path",
     4,
     {OID_TEXT, OID_TEXT, OID_INT8, OID_INT8},
     1},
    /* A page of versions that hold content, as P_SCAN's: the byte budget
     * applied to the sizes before the contents are read. */
    {P_VERSIONS_SCAN,
     "SELECT v.version, v.path, v.size, v.content, s.cnt, v.enc, v.sha256 FROM"
     " (SELECT version, row_number() OVER w AS n, sum(size) OVER w - size AS before,"
     " count(*) OVER () AS cnt FROM (SELECT version, size FROM versions"
     " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND version > $2"
     " AND content IS NOT NULL ORDER BY version LIMIT $3) l"
     " WINDOW w AS (ORDER BY version ROWS UNBOUNDED PRECEDING)) s"
     " JOIN versions v ON v.tenant = (SELECT id FROM tenants WHERE name = $1)"
     " AND v.version = s.version WHERE s.n = 1 OR s.before < $4 ORDER BY s.version",
     4,
     {OID_TEXT, OID_INT8, OID_INT8, OID_INT8},
     1},
};
const struct pg_stmt_defs md_pg_tenants_stmts = MD_PG_STMT_DEFS(stmts);

/* ---- quotas ---- */

enum md_err md_pg_usage(struct md_txn *base, const char *tenant, struct md_usage *u)
{
    struct pg_txn *t = (struct pg_txn *)base;
    *u = (struct md_usage){0, 0, -1, -1};
    /* An optimistic batch's writes are not sent yet: from the prefetch,
     * or else the batch runs the exact way. */
    if (t->write && md_pg_deferring(t))
        return md_pg_pre_usage(t, tenant, u) ? MD_OK : md_pg_abandon_attempt(t);
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    enum md_err e = md_pg_exec(t, P_USAGE, &p);
    const PGresult *r = t->pipe.res;
    if (e || PQntuples(r) != 1)
        return e; /* no row: a tenant without data */
    int64_t id = md_pg_r_i64(r, 0, 0);
    u->files = md_pg_r_i64(r, 0, 1);
    u->max_bytes = md_pg_r_i64_or(r, 0, 2, -1);
    u->max_files = md_pg_r_i64_or(r, 0, 3, -1);
    u->bytes = md_pg_r_i64_or(r, 0, 4, 0);
    if (t->write)
        u->bytes += md_pg_sizes_pending(t, id, MD_ROOT, MD_ROOT_LEN);
    return MD_OK;
}

enum md_err md_pg_set_limits(struct md_txn *base, const char *tenant, int64_t max_bytes,
                             int64_t max_files)
{
    struct pg_txn *t = (struct pg_txn *)base;
    int64_t id = 0;
    /* Looked up again (a rare write): another instance may have erased
     * the tenant since this one cached its id. */
    md_tenant_cache_drop(t->conn->tenants, tenant);
    enum md_err e = md_pg_ensure_tenant(t, tenant, &id);
    if (e)
        return e;
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, id);
    md_pg_i64_or_null(&p, max_bytes);
    md_pg_i64_or_null(&p, max_files);
    return md_pg_exec(t, P_LIMITS_SET, &p);
}

enum md_err md_pg_sensitive_get(struct md_txn *base, const char *tenant, int *mode)
{
    struct pg_txn *t = (struct pg_txn *)base;
    *mode = -1;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    enum md_err e = md_pg_exec(t, P_SENSITIVE_GET, &p);
    const PGresult *r = t->pipe.res;
    if (!e && PQntuples(r) == 1)
        *mode = (int)md_pg_r_i64_or(r, 0, 0, -1);
    return e;
}

enum md_err md_pg_sensitive_set(struct md_txn *base, const char *tenant, int mode)
{
    struct pg_txn *t = (struct pg_txn *)base;
    int64_t id = 0;
    md_tenant_cache_drop(t->conn->tenants, tenant); /* as md_pg_set_limits */
    enum md_err e = md_pg_ensure_tenant(t, tenant, &id);
    if (e)
        return e;
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, id);
    md_pg_i64_or_null(&p, mode);
    return md_pg_exec(t, P_SENSITIVE_SET, &p);
}

/* ---- tenant administration ---- */

enum md_err md_pg_tenants(struct md_txn *base, const char *after, size_t limit, md_tenant_cb cb,
                          void *ctx)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, after);
    md_pg_i64(&p, (int64_t)limit);
    enum md_err e = md_pg_exec(t, P_TENANTS_LIST, &p);
    if (e)
        return e;
    PGresult *r = t->pipe.res;
    t->pipe.res = NULL; /* kept while cb runs: cb must not call the txn */
    for (int i = 0; r && i < PQntuples(r); i++) {
        struct md_tenant_info ti = {
            .name = PQgetvalue(r, i, 0),
            .bytes = md_pg_r_i64(r, i, 1),
            .files = md_pg_r_i64(r, i, 2),
            .versions = md_pg_r_i64(r, i, 3),
            .last_write = md_pg_r_i64_or(r, i, 4, -1),
        };
        if (cb(ctx, &ti))
            break;
    }
    PQclear(r);
    return MD_OK;
}

enum md_err md_pg_erase(struct md_txn *base, const char *tenant, struct md_erased *out)
{
    struct pg_txn *t = (struct pg_txn *)base;
    *out = (struct md_erased){0, 0, 0, 0, 0};
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    /* The tenant's API keys (api_keys.tenant is its name) are deleted by
     * this statement too, when the tenant has a row. */
    enum md_err e = md_pg_exec(t, P_ERASE, &p);
    /* Its id is gone: not to be used again by this transaction. */
    md_tenant_cache_clear(t->conn->tenants);
    if (e)
        return e;
    const PGresult *r = t->pipe.res;
    if (!r || PQntuples(r) != 1)
        return MD_EDB;
    if (md_pg_r_i64(r, 0, 0) == 0)
        return MD_ENOENT;
    out->entries = md_pg_r_i64(r, 0, 1);
    out->versions = md_pg_r_i64(r, 0, 2);
    out->changes = md_pg_r_i64(r, 0, 3);
    out->idempotency = md_pg_r_i64(r, 0, 4);
    out->api_keys = md_pg_r_i64(r, 0, 5);
    md_pg_vacuum_after_commit(t, MD_PG_VACUUM_ERASED);
    /* Other instances forget their cached tenant ids when they hear of it
     * (watch.c); ':' is in no tenant name. */
    char said[MD_PG_ERASED_LEN + MD_TENANT_MAX + 1];
    snprintf(said, sizeof said, "%s%s", MD_PG_ERASED, tenant);
    return md_pg_notify_at_commit(t, said);
}

/* ---- the export ---- */

enum md_err md_pg_snapshot_begin(struct md_store *base, struct md_txn **out)
{
    enum md_err e = md_pg_read_begin(base, out);
    if (e)
        return e;
    struct pg_txn *t = (struct pg_txn *)*out;
    e = md_pg_exec(t, P_SNAPSHOT, NULL);
    if (e) {
        md_pg_read_end(*out);
        *out = NULL;
        return e;
    }
    t->snapshot = 1;
    return MD_OK;
}

void md_pg_snapshot_end(struct pg_txn *t)
{
    t->snapshot = 0;
    if (md_pg_send(t, P_ROLLBACK, NULL) != MD_OK || md_pg_flush(t, P_ROLLBACK) != MD_OK)
        t->conn->broken = 1; /* not back to the pool in a transaction */
    PQclear(t->pipe.res);
    t->pipe.res = NULL;
}

/* On the snapshot's connection (never another: the pages must agree). */
enum md_err md_pg_scan(struct md_txn *base, const char *tenant, const char *after, size_t after_len,
                       size_t max_rows, int64_t max_bytes, md_scan_cb cb, void *ctx, int *more)
{
    struct pg_txn *t = (struct pg_txn *)base;
    *more = 0;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_bytes(&p, after, after_len);
    md_pg_i64(&p, (int64_t)max_rows + 1);
    md_pg_i64(&p, max_bytes);
    enum md_err e = md_pg_send(t, P_SCAN, &p);
    if (!e)
        e = md_pg_flush(t, P_SCAN);
    if (e)
        return e;
    PGresult *r = t->pipe.res;
    t->pipe.res = NULL;
    int n = PQntuples(r);
    /* More: a row over max_rows, or rows the byte budget left out. */
    *more = n > (int)max_rows || (n > 0 && md_pg_r_i64(r, 0, 4) > n);
    for (int i = 0; i < n && i < (int)max_rows; i++) {
        struct md_scan_entry en = {
            .path = PQgetvalue(r, i, 0),
            .len = (size_t)PQgetlength(r, i, 0),
            .kind = md_pg_r_i16(r, i, 1) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE,
            .mtime_ms = md_pg_r_i64(r, i, 2),
        };
        if (en.kind == MD_KIND_FILE) {
            int null = PQgetisnull(r, i, 3);
            en.content = null ? "" : PQgetvalue(r, i, 3);
            en.content_len = null ? 0 : (size_t)PQgetlength(r, i, 3);
        }
        if (cb(ctx, &en))
            break;
    }
    PQclear(r);
    return MD_OK;
}

/* On the snapshot's connection, as md_pg_scan. */
enum md_err md_pg_versions_scan(struct md_txn *base, const char *tenant, int64_t after,
                                size_t max_rows, int64_t max_bytes, md_version_cb cb, void *ctx,
                                int *more)
{
    struct pg_txn *t = (struct pg_txn *)base;
    *more = 0;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_i64(&p, after);
    md_pg_i64(&p, (int64_t)max_rows + 1);
    md_pg_i64(&p, max_bytes);
    enum md_err e = md_pg_send(t, P_VERSIONS_SCAN, &p);
    if (!e)
        e = md_pg_flush(t, P_VERSIONS_SCAN);
    if (e)
        return e;
    PGresult *r = t->pipe.res;
    t->pipe.res = NULL;
    int n = PQntuples(r);
    *more = n > (int)max_rows || (n > 0 && md_pg_r_i64(r, 0, 4) > n);
    for (int i = 0; i < n && i < (int)max_rows; i++) {
        struct md_version v = {
            .version = md_pg_r_i64(r, i, 0),
            .path = PQgetvalue(r, i, 1),
            .path_len = (size_t)PQgetlength(r, i, 1),
            .existed = 1,
            .size = md_pg_r_i64(r, i, 2),
            .content = PQgetvalue(r, i, 3),
            .content_len = (size_t)PQgetlength(r, i, 3),
            .has_sha256 = PQgetlength(r, i, 6) == MD_SHA256_LEN,
        };
        if (v.has_sha256)
            memcpy(v.sha256, PQgetvalue(r, i, 6), MD_SHA256_LEN);
        e = md_pg_version_text(t, tenant, &v, md_pg_r_i16(r, i, 5));
        if (e || cb(ctx, &v))
            break;
    }
    PQclear(r);
    return e;
}
