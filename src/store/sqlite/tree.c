/*
 * tree.c — the entries of the SQLite engine (see md_store.h): the
 * operations on a tenant's tree: locate, view, get, list, scan (the
 * export) and versions_scan (every version's content, for memoryd scan),
 * put_file, remove_tree, move_tree; on the tenant ids and single
 * entries of entries.c.
 *
 * Every query is bound to a tenant id. A subtree is the entry itself and
 * everything below it: two statements, each one search of the (tenant,
 * path) key between the bounds of struct bounds. Directory sizes change
 * through sq_add_to_ancestors (pending until the commit, sizes.c); versions
 * are recorded first (history.c).
 *
 * Errors: MD_ENOENT (no such tenant or entry), otherwise as sq_conn_rc.
 */
#include "base/md_path.h"
#include "internal.h"

const char *const sq_tree_sql[S_COUNT] = {
    [S_LIST] = "SELECT path, kind, size FROM entries"
               " WHERE tenant = ?1 AND depth = ?2 AND path > ?3 AND path < ?4 ORDER BY path",
    [S_SET_CONTENT] = "UPDATE entries SET content = ?3, size = ?4, mtime = ?5, sha256 = ?6"
                      " WHERE tenant = ?1 AND path = ?2 AND kind = 0",
    /* A subtree is the entry itself and everything below it: two statements,
     * so that each is one search of the (tenant, path) key (an OR of both
     * makes SQLite scan the whole tenant). */
    [S_REMOVE_ONE] = "DELETE FROM entries WHERE tenant = :tenant AND path = :path",
    [S_REMOVE_BELOW] = "DELETE FROM entries WHERE tenant = :tenant AND path > :lo AND path < :hi",
    [S_MOVE_ONE] = "UPDATE entries SET path = :to || substr(path, :cut), depth = depth + :ddepth,"
                   " mtime = :mtime WHERE tenant = :tenant AND path = :path",
    [S_MOVE_BELOW] = "UPDATE entries SET path = :to || substr(path, :cut), depth = depth + :ddepth,"
                     " mtime = :mtime WHERE tenant = :tenant AND path > :lo AND path < :hi",
    [S_SCAN] = "SELECT path, kind, mtime, content FROM entries WHERE tenant = ?1 AND path > ?2"
               " ORDER BY path LIMIT ?3",
    [S_VERSIONS_SCAN] = "SELECT version, path, size, sha256, enc, content FROM versions"
                        " WHERE tenant = ?1 AND version > ?2 AND content IS NOT NULL"
                        " ORDER BY version LIMIT ?3",
};

/* ---- primitives ---- */

/* Direct children of `dir` in path order. */
static enum md_err list_children(struct sq_txn *t, int64_t tenant, const char *dir, size_t len,
                                 md_list_cb cb, void *ctx)
{
    struct bounds b;
    enum md_err e = sq_sizes_flush(t); /* the listing shows sizes */
    if (!e)
        e = sq_bounds_make(&b, dir, len);
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_LIST);
    sqlite3_bind_int64(st, 1, tenant);
    sqlite3_bind_int(st, 2, md_path_depth(dir, len) + 1);
    sq_bind_text(st, 3, b.lop, b.n);
    sq_bind_text(st, 4, b.hip, b.n);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *p = (const char *)sqlite3_column_text(st, 0);
        size_t plen = (size_t)sqlite3_column_bytes(st, 0);
        enum md_kind kind = sqlite3_column_int(st, 1) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
        if (cb(ctx, p, plen, kind, sqlite3_column_int64(st, 2))) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sq_done(st);
    sq_bounds_free(&b);
    return rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, "list");
}

static enum md_err set_content(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                               const char *content, size_t content_len, const unsigned char *sha256)
{
    sqlite3_stmt *st = sq_stmt(t, S_SET_CONTENT);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, path, len);
    sqlite3_bind_blob(st, 3, content_len ? content : "", (int)content_len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (int64_t)content_len);
    sqlite3_bind_int64(st, 5, sq_now_ms());
    sqlite3_bind_blob(st, 6, sha256, MD_SHA256_LEN, SQLITE_STATIC);
    enum md_err e = sq_run(t, st, "set content");
    if (!e && sqlite3_changes(t->c->db) != 1)
        e = MD_ENOENT;
    return e;
}

/* Run the "one" and "below" statements of a subtree operation on `path`;
 * `to` (NULL for a removal) is where the subtree moves. */
static enum md_err subtree(struct sq_txn *t, const enum stmt_id ids[2], int64_t tenant,
                           const char *path, size_t len, const char *to, size_t tlen,
                           const char *what)
{
    struct bounds b;
    /* Rows about to move or go must carry their true sizes first. */
    enum md_err e = sq_sizes_flush(t);
    if (!e)
        e = sq_bounds_make(&b, path, len);
    if (e)
        return e;
    for (int i = 0; i < 2 && !e; i++) {
        sqlite3_stmt *st = sq_stmt(t, ids[i]);
        sq_bind_named_int64(st, ":tenant", tenant);
        sq_bind_named_text(st, ":path", path, len);
        sq_bind_named_text(st, ":lo", b.lop, b.n);
        sq_bind_named_text(st, ":hi", b.hip, b.n);
        if (to) {
            sq_bind_named_text(st, ":to", to, tlen);
            sq_bind_named_int64(st, ":cut", sq_utf8_chars(path, len) + 1);
            sq_bind_named_int64(st, ":ddepth", md_path_depth(to, tlen) - md_path_depth(path, len));
            sq_bind_named_int64(st, ":mtime", sq_now_ms());
        }
        e = sq_run(t, st, what);
    }
    sq_bounds_free(&b);
    return e;
}

/* Make the directories between the existing ancestor of length `from` and
 * the parent of `path`, top down. */
static enum md_err make_parents(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                                size_t from)
{
    size_t parent = md_path_parent_len(path, len);
    for (size_t i = from + 1; i <= parent; i++) {
        if (i == parent || path[i] == '/') {
            enum md_err e = sq_insert_entry(t, tenant, path, i, MD_KIND_DIR, NULL, 0, NULL);
            if (e)
                return e;
        }
    }
    return MD_OK;
}

/* ---- reads ---- */

enum md_err sq_get(struct md_txn *base, const char *tenant, const char *path, size_t len,
                   int want_content, struct md_entry *e)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err err = sq_tenant_id(t, tenant, 0, &id);
    return err ? err : sq_get_entry(t, id, path, len, want_content, e);
}

enum md_err sq_list(struct md_txn *base, const char *tenant, const char *dir, size_t len,
                    md_list_cb cb, void *ctx)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err err = sq_tenant_id(t, tenant, 0, &id);
    if (err == MD_ENOENT)
        return MD_OK; /* a tenant without data: nothing anywhere */
    return err ? err : list_children(t, id, dir, len, cb, ctx);
}

/* Rows are stepped one at a time: a row's content is read only when it is
 * given (and the row after the last is only looked at). */
enum md_err sq_scan(struct md_txn *base, const char *tenant, const char *after, size_t after_len,
                    size_t max_rows, int64_t max_bytes, md_scan_cb cb, void *ctx, int *more)
{
    struct sq_txn *t = (struct sq_txn *)base;
    *more = 0;
    int64_t id = 0;
    enum md_err err = sq_tenant_id(t, tenant, 0, &id);
    if (err == MD_ENOENT)
        return MD_OK; /* a tenant without data: nothing anywhere */
    if (err)
        return err;
    sqlite3_stmt *st = sq_stmt(t, S_SCAN);
    sqlite3_bind_int64(st, 1, id);
    sq_bind_text(st, 2, after, after_len);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)max_rows + 1);
    size_t rows = 0;
    int64_t bytes = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (rows == max_rows || bytes >= max_bytes) {
            *more = 1;
            rc = SQLITE_DONE;
            break;
        }
        struct md_scan_entry e = {
            .path = (const char *)sqlite3_column_text(st, 0),
            .len = (size_t)sqlite3_column_bytes(st, 0),
            .kind = sqlite3_column_int(st, 1) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE,
            .mtime_ms = sqlite3_column_int64(st, 2),
        };
        if (e.kind == MD_KIND_FILE) {
            e.content = sqlite3_column_blob(st, 3);
            e.content_len = (size_t)sqlite3_column_bytes(st, 3);
            if (!e.content)
                e.content = "";
        }
        rows++;
        bytes += (int64_t)e.content_len;
        if (cb(ctx, &e)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sq_done(st);
    return rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, "scan");
}

enum md_err sq_view(struct md_txn *base, const char *tenant, const char *path, size_t len,
                    struct md_entry *e, size_t max_entries, md_list_cb cb, void *ctx, int *complete)
{
    struct sq_txn *t = (struct sq_txn *)base;
    *complete = 1;
    int64_t id = 0;
    enum md_err err = sq_tenant_id(t, tenant, 0, &id);
    if (err == MD_ENOENT && len == MD_ROOT_LEN) {
        *e = (struct md_entry){.kind = MD_KIND_DIR}; /* a tenant without data */
        return MD_OK;
    }
    if (!err)
        err = sq_get_entry(t, id, path, len, 1, e);
    if (!err && e->kind == MD_KIND_DIR)
        err = md_store_list_two_levels(base, tenant, path, len, max_entries, cb, ctx, complete);
    return err;
}

/* One path of sq_locate on tenant `id`, which exists. */
static enum md_err locate_one(struct sq_txn *t, int64_t id, struct md_locate *q)
{
    /* The deepest existing ancestor, walking up from the parent. */
    for (size_t plen = q->len; q->want_parent && plen > MD_ROOT_LEN;) {
        plen = md_path_parent_len(q->path, plen);
        struct md_entry a = {.kind = MD_KIND_FILE};
        enum md_err err = sq_get_entry(t, id, q->path, plen, 0, &a);
        if (err == MD_OK) {
            q->anc_len = plen;
            q->anc_kind = a.kind;
            break;
        }
        if (err != MD_ENOENT)
            return err;
    }
    enum md_err err = sq_get_entry(t, id, q->path, q->len, q->want_content, &q->e);
    if (err && err != MD_ENOENT)
        return err;
    q->found = err == MD_OK;
    return MD_OK;
}

enum md_err sq_locate(struct md_txn *base, const char *tenant, struct md_locate *l, size_t n,
                      int *tenant_exists)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err err = sq_tenant_id(t, tenant, 0, &id);
    if (err && err != MD_ENOENT)
        return err;
    *tenant_exists = err == MD_OK;
    /* The content last: a borrowed row stays valid until the next statement. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            struct md_locate *q = &l[i];
            if ((q->want_content != 0) != (pass == 1))
                continue;
            q->found = 0;
            q->anc_len = MD_ROOT_LEN;
            q->anc_kind = MD_KIND_DIR;
            if (!*tenant_exists) {
                q->found = q->len == MD_ROOT_LEN;
                q->e = (struct md_entry){.kind = MD_KIND_DIR};
                continue;
            }
            err = locate_one(t, id, q);
            if (err)
                return err;
        }
    }
    return MD_OK;
}

/* ---- writes ---- */

enum md_err sq_put_file(struct md_txn *base, const char *tenant, const char *path, size_t len,
                        const char *content, size_t content_len,
                        const unsigned char sha256[MD_SHA256_LEN], int64_t old_size,
                        size_t parents_from)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, old_size < 0, &id);
    if (!e)
        e = sq_record_file(t, id, path, len, old_size, content, content_len);
    if (!e && old_size < 0)
        e = make_parents(t, id, path, len, parents_from);
    if (!e && old_size < 0)
        e = sq_insert_entry(t, id, path, len, MD_KIND_FILE, content, content_len, sha256);
    else if (!e)
        e = set_content(t, id, path, len, content ? content : "", content_len, sha256);
    if (!e)
        e = sq_add_to_ancestors(t, id, path, len,
                                (int64_t)content_len - (old_size < 0 ? 0 : old_size));
    return e;
}

enum md_err sq_remove_tree(struct md_txn *base, const char *tenant, const char *path, size_t len,
                           int64_t size)
{
    static const enum stmt_id ids[2] = {S_REMOVE_ONE, S_REMOVE_BELOW};
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (!e)
        e = sq_record_subtree(t, id, path, len, size, NULL, 0);
    if (!e)
        e = subtree(t, ids, id, path, len, NULL, 0, "remove tree");
    if (!e)
        e = sq_add_to_ancestors(t, id, path, len, -size);
    return e;
}

enum md_err sq_move_tree(struct md_txn *base, const char *tenant, const char *from, size_t flen,
                         const char *to, size_t tlen, int64_t size, size_t parents_from)
{
    static const enum stmt_id ids[2] = {S_MOVE_ONE, S_MOVE_BELOW};
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (!e)
        e = sq_record_subtree(t, id, from, flen, size, to, tlen);
    if (!e)
        e = make_parents(t, id, to, tlen, parents_from);
    if (!e)
        e = subtree(t, ids, id, from, flen, to, tlen, "move tree");
    if (!e)
        e = sq_add_to_ancestors(t, id, from, flen, -size);
    if (!e)
        e = sq_add_to_ancestors(t, id, to, tlen, size);
    return e;
}

/* As sq_scan: stepped one row at a time, the row after the last only
 * looked at. */
enum md_err sq_versions_scan(struct md_txn *base, const char *tenant, int64_t after,
                             size_t max_rows, int64_t max_bytes, md_version_cb cb, void *ctx,
                             int *more)
{
    struct sq_txn *t = (struct sq_txn *)base;
    *more = 0;
    int64_t id = 0;
    enum md_err err = sq_tenant_id(t, tenant, 0, &id);
    if (err == MD_ENOENT)
        return MD_OK;
    if (err)
        return err;
    sqlite3_stmt *st = sq_stmt(t, S_VERSIONS_SCAN);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, after);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)max_rows + 1);
    size_t rows = 0;
    int64_t bytes = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (rows == max_rows || bytes >= max_bytes) {
            *more = 1;
            rc = SQLITE_DONE;
            break;
        }
        struct md_version v = {
            .version = sqlite3_column_int64(st, 0),
            .path = (const char *)sqlite3_column_text(st, 1),
            .path_len = (size_t)sqlite3_column_bytes(st, 1),
            .existed = 1,
            .size = sqlite3_column_int64(st, 2),
            .has_sha256 = sqlite3_column_bytes(st, 3) == MD_SHA256_LEN,
            .content = sqlite3_column_blob(st, 5),
            .content_len = (size_t)sqlite3_column_bytes(st, 5),
        };
        if (v.has_sha256)
            memcpy(v.sha256, sqlite3_column_blob(st, 3), MD_SHA256_LEN);
        if (!v.content)
            v.content = "";
        if (sqlite3_column_int(st, 4) == 1 && (err = sq_version_rebuild(t, id, &v)) != MD_OK)
            break;
        rows++;
        bytes += (int64_t)v.content_len;
        if (cb(ctx, &v)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sq_done(st);
    if (err)
        return err; /* a delta that did not rebuild */
    return rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, "versions scan");
}
