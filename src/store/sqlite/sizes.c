/*
 * sizes.c — the directory sizes of the SQLite engine (see internal.h,
 * md_dirsizes.h), with their statement: a change to the sizes of a path's
 * ancestors is kept pending in a write transaction (t->sizes, the
 * writer's) and written once per directory, before the commit or before
 * any statement that could see or move the rows (sq_sizes_flush); outside
 * one it is written at once.
 *
 * Errors: md_err, the SQLite error logged (sq_conn_rc).
 */
#include "base/md_path.h"
#include "internal.h"

const char *const sq_sizes_sql[S_COUNT] = {
    [S_ADD_SIZE] = "UPDATE entries SET size = size + ?3 WHERE tenant = ?1 AND path = ?2",
};

/* Write one directory size change now. */
static enum md_err size_update(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                               int64_t delta)
{
    sqlite3_stmt *st = sq_stmt(t, S_ADD_SIZE);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, path, len);
    sqlite3_bind_int64(st, 3, delta);
    return sq_run(t, st, "add size");
}

/* Write every pending change (each once) and mark them written. */
enum md_err sq_sizes_flush(struct sq_txn *t)
{
    size_t n = md_dirsizes_count(t->sizes);
    for (size_t i = 0; i < n; i++) {
        int64_t tenant, delta;
        const char *path;
        size_t len;
        md_dirsizes_entry(t->sizes, i, &tenant, &path, &len, &delta);
        if (delta == 0)
            continue;
        enum md_err e = size_update(t, tenant, path, len, delta);
        if (e)
            return e;
    }
    md_dirsizes_written(t->sizes);
    return MD_OK;
}

/* Add delta to directory `path`'s size: kept pending in a write
 * transaction, written at once otherwise (or when it cannot be kept). */
static enum md_err add_size(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                            int64_t delta)
{
    if (t->sizes && md_dirsizes_add(t->sizes, tenant, path, len, delta) == 0)
        return MD_OK;
    return size_update(t, tenant, path, len, delta);
}

enum md_err sq_add_to_ancestors(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                                int64_t delta)
{
    if (delta == 0 || len == MD_ROOT_LEN)
        return MD_OK;
    size_t plen = len;
    do {
        plen = md_path_parent_len(path, plen);
        enum md_err e = add_size(t, tenant, path, plen, delta);
        if (e)
            return e;
    } while (plen > MD_ROOT_LEN);
    return MD_OK;
}
