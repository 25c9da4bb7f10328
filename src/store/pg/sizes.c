/*
 * sizes.c — the directory sizes of a PostgreSQL write transaction (see
 * internal.h): a write changes the size of every ancestor of what it
 * writes; the changes are kept pending (md_dirsizes.h, the txn's `sizes`)
 * and written in one statement (P_SIZES) before the commit, before a
 * subtree moves or goes, or when the table of pending changes is full. A
 * size read in the transaction adds what is pending to it.
 *
 * In an optimistic batch the statement goes with the batch's writes, and
 * the prefetched directories take the pending changes in (attempt.c).
 *
 * Owns no part: the txn's `sizes` is made, marked, restored and reset by
 * txn.c. Errors as md_store.h.
 */
#include "base/md_path.h"
#include "internal.h"
#include "store/md_dirsizes.h"

static const struct pg_stmt_def stmts[] = {
    {P_SIZES,
     "UPDATE entries e SET size = e.size + u.delta"
     " FROM unnest($1::int8[], $2::text[], $3::int8[]) AS u(tenant, path, delta)"
     " WHERE e.tenant = u.tenant AND e.path = u.path",
     3,
     {OID_INT8ARRAY, OID_TEXTARRAY, OID_INT8ARRAY},
     0},
};
const struct pg_stmt_defs md_pg_sizes_stmts = MD_PG_STMT_DEFS(stmts);

int64_t md_pg_sizes_pending(const struct pg_txn *t, int64_t id, const char *path, size_t len)
{
    return t->sizes ? md_dirsizes_pending(t->sizes, id, path, len) : 0;
}

enum md_err md_pg_sizes_send(struct pg_txn *t)
{
    struct md_dirsizes *z = t->sizes;
    struct md_buf *arr = t->pipe.arrays;
    size_t n = md_dirsizes_count(z), live = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t tenant, delta;
        const char *path;
        size_t len;
        md_dirsizes_entry(z, i, &tenant, &path, &len, &delta);
        live += delta != 0;
    }
    if (live == 0)
        return MD_OK;
    enum md_err e = md_pg_arr_begin(&arr[0], OID_INT8, live);
    if (!e)
        e = md_pg_arr_begin(&arr[1], OID_TEXT, live);
    if (!e)
        e = md_pg_arr_begin(&arr[2], OID_INT8, live);
    for (size_t i = 0; i < n && !e; i++) {
        int64_t tenant, delta;
        const char *path;
        size_t len;
        md_dirsizes_entry(z, i, &tenant, &path, &len, &delta);
        if (delta == 0)
            continue;
        e = md_pg_arr_i64(&arr[0], tenant);
        if (!e)
            e = md_pg_arr_elem(&arr[1], path, len);
        if (!e)
            e = md_pg_arr_i64(&arr[2], delta);
    }
    if (e)
        return e;
    struct md_pg_params p = {.n = 0};
    for (int i = 0; i < 3; i++)
        md_pg_bytes(&p, arr[i].data, arr[i].len);
    e = md_pg_send(t, P_SIZES, &p);
    if (!e && md_pg_deferring(t))
        md_pg_pre_fold_sizes(t);
    if (!e)
        md_dirsizes_written(z);
    return e;
}

enum md_err md_pg_sizes_add(struct pg_txn *t, int64_t id, const char *path, size_t len,
                            int64_t delta)
{
    if (delta == 0 || len == MD_ROOT_LEN)
        return MD_OK;
    struct md_dirsizes *z = t->sizes;
    size_t plen = len;
    do {
        plen = md_path_parent_len(path, plen);
        if (md_dirsizes_add(z, id, path, plen, delta) != 0) {
            /* The pending table is full: write it, then keep this one. */
            enum md_err e = md_pg_sizes_send(t);
            if (!e && !md_pg_deferring(t)) /* optimistic: it goes with the batch's writes */
                e = md_pg_flush(t, P_COUNT);
            if (e)
                return e;
            md_dirsizes_reset(z);
            md_dirsizes_mark(z);
            if (md_dirsizes_add(z, id, path, plen, delta) != 0)
                return MD_ENOMEM;
        }
    } while (plen > MD_ROOT_LEN);
    return MD_OK;
}
