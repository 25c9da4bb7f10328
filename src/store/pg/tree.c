/*
 * tree.c — a tenant's tree of entries on PostgreSQL (see internal.h):
 * md_txn_locate, put_file, remove_tree, move_tree, get and list, and a
 * tenant made with its root by its first write (its id then cached,
 * ids.c).
 *
 * In an optimistic batch (batch.c) a locate is answered from the
 * prefetched rows when they tell, and writes are gathered into the
 * batch's bulk statements instead of being sent; otherwise a write is sent
 * with its locate's flush, one round trip. The versions a write replaces
 * are recorded first (history.c), the directory sizes it changes kept
 * pending (sizes.c).
 *
 * Owns no part of the transaction; the tenant id cache is the
 * connection's. Errors as md_store.h.
 */
#include <stdlib.h>
#include <string.h>

#include "base/md_path.h"
#include "internal.h"
#include "store/md_delta.h"
#include "store/md_tenant_cache.h"

static const struct pg_stmt_def stmts[] = {
    {P_TENANT_NEW,
     "INSERT INTO tenants (name, created_at) VALUES ($1, $2) RETURNING id",
     2,
     {OID_TEXT, OID_INT8},
     0},
    /* Several paths at once; the tenant's id (one row with no entry when it
     * has none of the paths; no row when the tenant has no data). */
    {P_LOCATE,
     "SELECT t.id, e.path, e.kind, e.size,"
     " CASE WHEN e.path = $3 THEN e.content END, e.sha256, t.last_version, t.last_seq"
     " FROM tenants t LEFT JOIN entries e ON e.tenant = t.id AND e.path = ANY ($2)"
     " WHERE t.name = $1",
     3,
     {OID_TEXT, OID_TEXTARRAY, OID_TEXT},
     1},
    /* Directories and a file in one statement; the tenant by name, since it
     * may have been created by the statement before. */
    {P_INSERT,
     "INSERT INTO entries (tenant, path, depth, kind, size, mtime, content, sha256)"
     " SELECT t.id, u.path, u.depth, u.kind,"
     " CASE WHEN u.kind = 0 THEN $7 ELSE 0 END, $5,"
     " CASE WHEN u.kind = 0 THEN $6 END, CASE WHEN u.kind = 0 THEN $8 END"
     " FROM tenants t, unnest($2::text[], $3::int4[], $4::int2[]) AS u(path, depth, kind)"
     " WHERE t.name = $1",
     8,
     {OID_TEXT, OID_TEXTARRAY, OID_INT4ARRAY, OID_INT2ARRAY, OID_INT8, OID_BYTEA, OID_INT8,
      OID_BYTEA},
     0},
    {P_SET_CONTENT,
     "UPDATE entries SET content = $3, size = $4, mtime = $5, sha256 = $6"
     " WHERE tenant = $1 AND path = $2 AND kind = 0",
     6,
     {OID_INT8, OID_TEXT, OID_BYTEA, OID_INT8, OID_INT8, OID_BYTEA},
     0},
    {P_REMOVE_ONE,
     "DELETE FROM entries WHERE tenant = $1 AND path = $2",
     2,
     {OID_INT8, OID_TEXT},
     0},
    {P_REMOVE_BELOW,
     "DELETE FROM entries WHERE tenant = $1 AND path > $2 AND path < $3",
     3,
     {OID_INT8, OID_TEXT, OID_TEXT},
     0},
    {P_MOVE_ONE,
     "UPDATE entries SET path = $3 || substr(path, $4), depth = depth + $5,"
     " mtime = $6 WHERE tenant = $1 AND path = $2",
     6,
     {OID_INT8, OID_TEXT, OID_TEXT, OID_INT4, OID_INT4, OID_INT8},
     0},
    {P_MOVE_BELOW,
     "UPDATE entries SET path = $4 || substr(path, $5), depth = depth + $6,"
     " mtime = $7 WHERE tenant = $1 AND path > $2 AND path < $3",
     7,
     {OID_INT8, OID_TEXT, OID_TEXT, OID_TEXT, OID_INT4, OID_INT4, OID_INT8},
     0},
    /* Also the first statement of a view of a path that looks like a
     * file's (views.c). */
    {P_GET,
     "SELECT kind, size, content, sha256 FROM entries"
     " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND path = $2",
     2,
     {OID_TEXT, OID_TEXT},
     1},
    {P_LIST,
     "SELECT path, kind, size FROM entries"
     " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND depth = $2"
     " AND path > $3 AND path < $4 ORDER BY path",
     4,
     {OID_TEXT, OID_INT4, OID_TEXT, OID_TEXT},
     1},
};
const struct pg_stmt_defs md_pg_tree_stmts = MD_PG_STMT_DEFS(stmts);

/* ---- tenants ---- */

/* Queue the making of `tenant`'s row (its id comes back as the result of
 * P_TENANT_NEW). */
static enum md_err tenant_new_send(struct pg_txn *t, const char *tenant)
{
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_i64(&p, md_pg_now_ms() / 1000);
    enum md_err e = md_pg_send(t, P_TENANT_NEW, &p);
    md_pg_tenant_made(t);
    return e;
}

/* Queue an insert of the directories strictly between the ancestor of
 * length `from` and `path` (with the root first when `with_root`), and of
 * the file `path` itself when `file`. */
static enum md_err insert_send(struct pg_txn *t, const char *tenant, const char *path, size_t len,
                               size_t from, int with_root, int file, const char *content,
                               size_t content_len, const unsigned char *sha256)
{
    struct md_buf *arr = t->pipe.arrays;
    size_t count = (size_t)with_root + (size_t)file;
    for (size_t i = from + 1; i < len; i++)
        count += path[i] == '/';
    if (count == 0)
        return MD_OK;
    enum md_err e = md_pg_arr_begin(&arr[0], OID_TEXT, count);
    if (!e)
        e = md_pg_arr_begin(&arr[1], OID_INT4, count);
    if (!e)
        e = md_pg_arr_begin(&arr[2], OID_INT2, count);
    for (size_t i = with_root ? MD_ROOT_LEN : from + 1; !e && i <= len; i++) {
        /* (the root alone: `path` is the root) */
        int dir = (with_root && i == MD_ROOT_LEN) || (i < len && path[i] == '/' && i > from);
        if (!dir && !(file && i == len))
            continue;
        e = md_pg_arr_elem(&arr[0], path, i);
        if (!e)
            e = md_pg_arr_i32(&arr[1], md_path_depth(path, i));
        if (!e)
            e = md_pg_arr_i16(&arr[2], dir ? MD_KIND_DIR : MD_KIND_FILE);
    }
    if (e)
        return e;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    for (int i = 0; i < 3; i++)
        md_pg_bytes(&p, arr[i].data, arr[i].len);
    md_pg_i64(&p, md_pg_now_ms());
    md_pg_bytes(&p, content, content_len);
    md_pg_i64(&p, (int64_t)content_len);
    md_pg_bytes(&p, sha256, sha256 ? MD_SHA256_LEN : 0);
    return md_pg_send(t, P_INSERT, &p);
}

/* The id of the tenant whose row the last flush made (P_TENANT_NEW's
 * result), cached. */
static enum md_err tenant_made(struct pg_txn *t, const char *tenant, int64_t *id)
{
    if (!t->pipe.res || PQntuples(t->pipe.res) != 1)
        return MD_EDB;
    *id = md_pg_r_i64(t->pipe.res, 0, 0);
    md_tenant_cache_put(t->conn->tenants, tenant, *id);
    return MD_OK;
}

enum md_err md_pg_ensure_tenant(struct pg_txn *t, const char *tenant, int64_t *id)
{
    enum md_err e = md_pg_tenant_lookup(t, tenant, id);
    if (e || *id)
        return e;
    e = tenant_new_send(t, tenant);
    if (!e)
        e = insert_send(t, tenant, MD_ROOT, MD_ROOT_LEN, MD_ROOT_LEN, 1, 0, NULL, 0, NULL);
    if (!e)
        e = md_pg_flush(t, P_TENANT_NEW);
    if (!e)
        e = tenant_made(t, tenant, id);
    return e ? e : md_pg_history_counters(t, *id, 0, 0); /* they start at 0 */
}

/* ---- locate ---- */

/* P_LOCATE's parameters: every path asked for, and every ancestor of those
 * that want one (in t->pipe.arrays[0]); the path whose content is wanted. */
static enum md_err locate_params(struct pg_txn *t, struct md_pg_params *p, const char *tenant,
                                 const struct md_locate *l, size_t n)
{
    struct md_buf *paths = &t->pipe.arrays[0];
    size_t count = 0;
    const char *content_path = "";
    size_t content_len = 0;
    for (size_t i = 0; i < n; i++) {
        count++;
        if (l[i].want_parent)
            count += (size_t)md_path_depth(l[i].path, l[i].len);
        if (l[i].want_content) {
            content_path = l[i].path;
            content_len = l[i].len;
        }
    }
    enum md_err e = md_pg_arr_begin(paths, OID_TEXT, count);
    for (size_t i = 0; i < n && !e; i++) {
        e = md_pg_arr_elem(paths, l[i].path, l[i].len);
        for (size_t plen = l[i].len; !e && l[i].want_parent && plen > MD_ROOT_LEN;) {
            plen = md_path_parent_len(l[i].path, plen);
            e = md_pg_arr_elem(paths, l[i].path, plen);
        }
    }
    p->n = 0;
    md_pg_text(p, tenant);
    md_pg_bytes(p, paths->data, paths->len);
    md_pg_bytes(p, content_path, content_len);
    return e;
}

/* What the rows of P_LOCATE say of one path: the entry, or the deepest
 * proper ancestor found. */
static void locate_one(const struct pg_txn *t, const PGresult *r, int64_t id, struct md_locate *q)
{
    size_t best = 0; /* the longest proper ancestor found */
    for (int k = 0; k < PQntuples(r); k++) {
        if (PQgetisnull(r, k, 1))
            continue;
        const char *rp = PQgetvalue(r, k, 1);
        size_t rl = (size_t)PQgetlength(r, k, 1);
        enum md_kind kind = md_pg_r_i16(r, k, 2) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
        int64_t size = md_pg_r_i64(r, k, 3);
        if (kind == MD_KIND_DIR)
            size += md_pg_sizes_pending(t, id, rp, rl);
        if (rl == q->len && memcmp(rp, q->path, rl) == 0) {
            q->found = 1;
            q->e = (struct md_entry){.kind = kind, .size = size};
            md_pg_r_sha256(r, k, 5, &q->e);
            if (q->want_content && kind == MD_KIND_FILE) {
                q->e.content = PQgetisnull(r, k, 4) ? "" : PQgetvalue(r, k, 4);
                q->e.content_len = PQgetisnull(r, k, 4) ? 0 : (size_t)PQgetlength(r, k, 4);
            }
        } else if (q->want_parent && rl < q->len && rl > best && q->path[rl] == '/' &&
                   memcmp(rp, q->path, rl) == 0) {
            best = rl;
            q->anc_len = rl;
            q->anc_kind = kind;
        }
    }
}

/* The tenant's id: cached, or read from the P_LOCATE rows. */
enum md_err md_pg_locate(struct md_txn *base, const char *tenant, struct md_locate *l, size_t n,
                         int *tenant_exists)
{
    struct pg_txn *t = (struct pg_txn *)base;
    if (md_pg_pre_locate(t, tenant, l, n, tenant_exists))
        return MD_OK;
    struct md_pg_params p;
    enum md_err e = locate_params(t, &p, tenant, l, n);
    if (!e)
        e = md_pg_exec(t, P_LOCATE, &p);
    if (e)
        return e;
    const PGresult *r = t->pipe.res;
    int rows = PQntuples(r);
    *tenant_exists = rows > 0;
    int64_t id = rows > 0 ? md_pg_r_i64(r, 0, 0) : 0;
    if (id)
        md_tenant_cache_put(t->conn->tenants, tenant, id);
    else /* erased by another instance since it was cached, maybe */
        md_tenant_cache_drop(t->conn->tenants, tenant);
    if (id && md_pg_history_counters(t, id, md_pg_r_i64(r, 0, 6), md_pg_r_i64(r, 0, 7)))
        return MD_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct md_locate *q = &l[i];
        q->found = 0;
        q->anc_len = MD_ROOT_LEN;
        q->anc_kind = MD_KIND_DIR;
        q->e = (struct md_entry){.kind = MD_KIND_DIR};
        if (!*tenant_exists)
            q->found = q->len == MD_ROOT_LEN;
        else
            locate_one(t, r, id, q);
    }
    return MD_OK;
}

/* ---- writes ---- */

/* A new file of a tenant without data yet: the tenant and its root made in
 * the round trip of the insert (its id comes back in it). */
static enum md_err put_new_file(struct pg_txn *t, const char *tenant, const char *path, size_t len,
                                const char *content, size_t content_len,
                                const unsigned char *sha256, size_t parents_from, int64_t *id)
{
    int new_tenant = *id == 0;
    enum md_err e = new_tenant ? tenant_new_send(t, tenant) : MD_OK;
    if (!e)
        e = insert_send(t, tenant, path, len, parents_from, new_tenant, 1, content, content_len,
                        sha256);
    if (!e)
        e = md_pg_flush(t, new_tenant ? P_TENANT_NEW : P_COUNT);
    if (e || !new_tenant)
        return e;
    e = tenant_made(t, tenant, id);
    if (e)
        return e;
    if (md_pg_deferring(t))
        md_pg_pre_forget_tenant(t, tenant);
    /* Its counters start at 0; the file did not exist. */
    e = md_pg_history_counters(t, *id, 0, 0);
    int vrun;
    return e ? e : md_pg_record_file(t, *id, tenant, path, len, -1, content, content_len, &vrun);
}

enum md_err md_pg_put_file(struct md_txn *base, const char *tenant, const char *path, size_t len,
                           const char *content, size_t content_len,
                           const unsigned char sha256[MD_SHA256_LEN], int64_t old_size,
                           size_t parents_from)
{
    struct pg_txn *t = (struct pg_txn *)base;
    int64_t id = md_pg_known_tenant(t, tenant);
    int vrun = MD_DELTA_RUN_MAX;
    enum md_err e =
        id ? md_pg_record_file(t, id, tenant, path, len, old_size, content, content_len, &vrun)
           : MD_OK;
    if (e)
        return e;
    if (md_pg_deferring(t) && id != 0) {
        /* Optimistic: a row of the batch's bulk insert or update. */
        e = old_size >= 0
                ? md_pg_bulk_set(t, id, path, len, content, content_len, sha256, vrun)
                : md_pg_bulk_insert(t, id, path, len, parents_from, content, content_len, sha256);
        if (!e && old_size < 0)
            md_pg_pre_files_add(t, tenant, path, len, 1);
        if (!e)
            md_pg_pre_forget(t, tenant, path, len, 0, old_size >= 0 ? len : parents_from);
    } else if (old_size >= 0) {
        struct md_pg_params p = {.n = 0};
        md_pg_i64(&p, id);
        md_pg_bytes(&p, path, len);
        md_pg_bytes(&p, content, content_len);
        md_pg_i64(&p, (int64_t)content_len);
        md_pg_i64(&p, md_pg_now_ms());
        md_pg_bytes(&p, sha256, MD_SHA256_LEN);
        e = md_pg_send(t, P_SET_CONTENT, &p);
        if (!e)
            e = md_pg_flush(t, P_COUNT);
    } else {
        e = put_new_file(t, tenant, path, len, content, content_len, sha256, parents_from, &id);
    }
    if (!e)
        e = md_pg_sizes_add(t, id, path, len, (int64_t)content_len - (old_size < 0 ? 0 : old_size));
    return e;
}

/* Queue the two statements of a subtree operation on `path`: remove, or
 * move to `to` when it is not NULL. */
static enum md_err subtree_send(struct pg_txn *t, int64_t id, const char *path, size_t len,
                                const char *to, size_t tlen)
{
    struct md_buf *arr = t->pipe.arrays;
    /* Rows about to move or go must carry their true sizes first. */
    enum md_err e = md_pg_sizes_send(t);
    if (!e)
        e = md_pg_subtree_bounds(&arr[0], &arr[1], path, len);
    if (e)
        return e;
    int32_t cut = md_pg_utf8_chars(path, len) + 1;
    int32_t ddepth = to ? md_path_depth(to, tlen) - md_path_depth(path, len) : 0;
    int64_t mtime = md_pg_now_ms();
    struct md_pg_params one = {.n = 0}, below = {.n = 0};
    md_pg_i64(&one, id);
    md_pg_bytes(&one, path, len);
    md_pg_i64(&below, id);
    md_pg_bytes(&below, arr[0].data, arr[0].len);
    md_pg_bytes(&below, arr[1].data, arr[1].len);
    if (to) {
        for (struct md_pg_params *p = &one; p; p = p == &one ? &below : NULL) {
            md_pg_bytes(p, to, tlen);
            md_pg_i32(p, cut);
            md_pg_i32(p, ddepth);
            md_pg_i64(p, mtime);
        }
    }
    e = md_pg_send(t, to ? P_MOVE_ONE : P_REMOVE_ONE, &one);
    return e ? e : md_pg_send(t, to ? P_MOVE_BELOW : P_REMOVE_BELOW, &below);
}

enum md_err md_pg_remove_tree(struct md_txn *base, const char *tenant, const char *path, size_t len,
                              int64_t size)
{
    struct pg_txn *t = (struct pg_txn *)base;
    int64_t id = md_pg_known_tenant(t, tenant);
    int counted = 0;
    enum md_err e =
        id ? md_pg_record_subtree(t, id, tenant, path, len, size, NULL, 0, &counted) : MD_ENOENT;
    int deferring = md_pg_deferring(t);
    if (!e && deferring)
        md_pg_pre_files_add(t, tenant, path, len, -1);
    if (!e)
        e = subtree_send(t, id, path, len, NULL, 0);
    if (!e && deferring)
        md_pg_pre_forget(t, tenant, path, len, 1, len);
    else if (!e)
        e = md_pg_flush(t, counted ? P_VER_SUBTREE : P_COUNT);
    if (!e && counted)
        e = md_pg_subtree_counted(t);
    if (!e)
        e = md_pg_sizes_add(t, id, path, len, -size);
    return e;
}

enum md_err md_pg_move_tree(struct md_txn *base, const char *tenant, const char *from, size_t flen,
                            const char *to, size_t tlen, int64_t size, size_t parents_from)
{
    struct pg_txn *t = (struct pg_txn *)base;
    int64_t id = md_pg_known_tenant(t, tenant);
    int counted = 0;
    enum md_err e =
        id ? md_pg_record_subtree(t, id, tenant, from, flen, size, to, tlen, &counted) : MD_ENOENT;
    if (!e)
        e = insert_send(t, tenant, to, tlen, parents_from, 0, 0, NULL, 0, NULL);
    if (!e)
        e = subtree_send(t, id, from, flen, to, tlen);
    if (!e && md_pg_deferring(t)) {
        md_pg_pre_forget(t, tenant, from, flen, 1, flen);
        md_pg_pre_forget(t, tenant, to, tlen, 1, parents_from);
    } else if (!e) {
        e = md_pg_flush(t, counted ? P_VER_SUBTREE_MOVE : P_COUNT);
    }
    if (!e && counted)
        e = md_pg_subtree_counted(t);
    if (!e)
        e = md_pg_sizes_add(t, id, from, flen, -size);
    if (!e)
        e = md_pg_sizes_add(t, id, to, tlen, size);
    return e;
}

/* ---- for tools and tests ---- */

enum md_err md_pg_get(struct md_txn *base, const char *tenant, const char *path, size_t len,
                      int want_content, struct md_entry *e)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_bytes(&p, path, len);
    enum md_err err = md_pg_exec(t, P_GET, &p);
    if (err)
        return err;
    const PGresult *r = t->pipe.res;
    if (PQntuples(r) != 1)
        return MD_ENOENT;
    e->kind = md_pg_r_i16(r, 0, 0) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
    e->size = md_pg_r_i64(r, 0, 1);
    int64_t id = t->write ? md_pg_known_tenant(t, tenant) : 0;
    if (e->kind == MD_KIND_DIR && id)
        e->size += md_pg_sizes_pending(t, id, path, len);
    int null = PQgetisnull(r, 0, 2);
    e->content = want_content && e->kind == MD_KIND_FILE ? (null ? "" : PQgetvalue(r, 0, 2)) : NULL;
    e->content_len = e->content && !null ? (size_t)PQgetlength(r, 0, 2) : 0;
    md_pg_r_sha256(r, 0, 3, e);
    return MD_OK;
}

enum md_err md_pg_list(struct md_txn *base, const char *tenant, const char *dir, size_t len,
                       md_list_cb cb, void *ctx)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct md_buf *arr = t->pipe.arrays;
    enum md_err e = t->write ? md_pg_sizes_send(t) : MD_OK; /* the listing shows sizes */
    if (!e)
        e = md_pg_subtree_bounds(&arr[0], &arr[1], dir, len);
    if (e)
        return e;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_i32(&p, md_path_depth(dir, len) + 1);
    md_pg_bytes(&p, arr[0].data, arr[0].len);
    md_pg_bytes(&p, arr[1].data, arr[1].len);
    e = md_pg_exec(t, P_LIST, &p);
    if (e)
        return e;
    /* The result is kept while cb runs: cb must not call the txn. */
    PGresult *r = t->pipe.res;
    t->pipe.res = NULL;
    for (int i = 0; i < PQntuples(r); i++) {
        enum md_kind kind = md_pg_r_i16(r, i, 1) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
        if (cb(ctx, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0), kind, md_pg_r_i64(r, i, 2)))
            break;
    }
    PQclear(r);
    return MD_OK;
}
