/*
 * entries.c — a tenant's id and its single entries on SQLite (see
 * internal.h), with their statements: the id of a tenant by name (cached
 * per connection, md_tenant_cache.h; made with its root entry when asked
 * to), an entry read by path (a directory's size with its pending change,
 * sizes.c), an entry inserted. The jobs above build on these: the tree
 * (tree.c), history, quotas, search, tenant administration, the totals.
 *
 * Errors: MD_ENOENT (no such tenant or entry), otherwise as sq_conn_rc.
 */
#include <string.h>

#include "base/md_path.h"
#include "internal.h"

/* NOLINTBEGIN(bugprone-suspicious-missing-comma): statements over several lines */
const char *const sq_entries_sql[S_COUNT] = {
    [S_TENANT_GET] = "SELECT id FROM tenants WHERE name = ?1",
    [S_TENANT_INSERT] = "INSERT INTO tenants (name, created_at) VALUES (?1, ?2)",
    [S_GET] = "SELECT kind, size, sha256, content FROM entries WHERE tenant = ?1 AND path = ?2",
    [S_GET_META] = "SELECT kind, size, sha256 FROM entries WHERE tenant = ?1 AND path = ?2",
    [S_INSERT] = "INSERT INTO entries (tenant, path, depth, kind, size, mtime, content, sha256)"
                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
};
/* NOLINTEND(bugprone-suspicious-missing-comma) */

enum md_err sq_tenant_id(struct sq_txn *t, const char *name, int create, int64_t *id)
{
    size_t len = strlen(name);
    if ((*id = md_tenant_cache_get(t->c->tenants, name)) != 0)
        return MD_OK;
    sqlite3_stmt *st = sq_stmt(t, S_TENANT_GET);
    sq_bind_text(st, 1, name, len);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        sq_done(st);
        md_tenant_cache_put(t->c->tenants, name, *id);
        return MD_OK;
    }
    sq_done(st);
    if (rc != SQLITE_DONE)
        return sq_conn_rc(t->c, rc, "tenant lookup");
    if (!create)
        return MD_ENOENT;
    t->made_tenant_txn = t->made_tenant_cmd = 1;
    st = sq_stmt(t, S_TENANT_INSERT);
    sq_bind_text(st, 1, name, strlen(name));
    sqlite3_bind_int64(st, 2, sq_now_ms() / 1000);
    enum md_err e = sq_run(t, st, "tenant insert");
    if (e)
        return e;
    *id = sqlite3_last_insert_rowid(t->c->db);
    st = sq_stmt(t, S_INSERT);
    sqlite3_bind_int64(st, 1, *id);
    sq_bind_text(st, 2, MD_ROOT, MD_ROOT_LEN);
    sqlite3_bind_int(st, 3, 0);
    sqlite3_bind_int(st, 4, MD_KIND_DIR);
    sqlite3_bind_int64(st, 5, 0);
    sqlite3_bind_int64(st, 6, sq_now_ms());
    sqlite3_bind_null(st, 7);
    return sq_run(t, st, "root insert");
}

enum md_err sq_get_entry(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                         int want_content, struct md_entry *e)
{
    sqlite3_stmt *st = sq_stmt(t, want_content ? S_GET : S_GET_META);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, path, len);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sq_done(st);
        return rc == SQLITE_DONE ? MD_ENOENT : sq_conn_rc(t->c, rc, "get");
    }
    e->kind = sqlite3_column_int(st, 0) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
    e->size = sqlite3_column_int64(st, 1);
    if (e->kind == MD_KIND_DIR)
        e->size += md_dirsizes_pending(t->sizes, tenant, path, len);
    e->has_sha256 = sqlite3_column_bytes(st, 2) == MD_SHA256_LEN;
    if (e->has_sha256)
        memcpy(e->sha256, sqlite3_column_blob(st, 2), MD_SHA256_LEN);
    e->content = NULL;
    e->content_len = 0;
    if (want_content) {
        e->content = sqlite3_column_blob(st, 3);
        e->content_len = (size_t)sqlite3_column_bytes(st, 3);
        if (!e->content)
            e->content = "";
        t->pending = st; /* the row stays borrowed until the next call */
    } else {
        sq_done(st);
    }
    return MD_OK;
}

/* Insert the entry at `path`: a file with its content and SHA-256, or a
 * directory (size 0). */
enum md_err sq_insert_entry(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                            enum md_kind kind, const char *content, size_t content_len,
                            const unsigned char *sha256)
{
    sqlite3_stmt *st = sq_stmt(t, S_INSERT);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, path, len);
    sqlite3_bind_int(st, 3, md_path_depth(path, len));
    sqlite3_bind_int(st, 4, kind);
    sqlite3_bind_int64(st, 5, kind == MD_KIND_FILE ? (int64_t)content_len : 0);
    sqlite3_bind_int64(st, 6, sq_now_ms());
    if (kind == MD_KIND_FILE) {
        sqlite3_bind_blob(st, 7, content_len ? content : "", (int)content_len, SQLITE_STATIC);
        sqlite3_bind_blob(st, 8, sha256, MD_SHA256_LEN, SQLITE_STATIC);
    } else {
        sqlite3_bind_null(st, 7);
        sqlite3_bind_null(st, 8);
    }
    return sq_run(t, st, "insert");
}
