/*
 * attempt.c — the state of an optimistic batch of the PostgreSQL writer
 * (struct pg_batch; batch.c runs the batch): whether the transaction
 * defers its writes, whether the attempt is abandoned, and the rows
 * prefetched for it (P_PREFETCH), with what the queued writes change of
 * them.
 *
 * Read by every file that writes or answers from the prefetch (tree.c,
 * history.c, tenants.c, idem.c, sizes.c, txn.c) and by the pipe, which
 * abandons the attempt when a flush fails (md_pg_batch_failed): it calls
 * no other file of the engine. An attempt abandoned runs again the exact
 * way (MD_EREDO at the command's end, md_pg_batch_command_ends, or at
 * md_txn_flush).
 *
 * Rows: one per (tenant, path) the batch's commands name and per ancestor
 * of each, sorted, once each; a queued write marks stale the rows it may
 * change (an entry, what is below it, its ancestors down to those it
 * keeps), and the root's row counts the files the queued writes add or
 * remove. The rows point into the prefetch's result, held until the
 * batch's reset.
 *
 * Owns: struct pg_batch, the writer's part (made with its connection by
 * txn.c, reset at each transaction's beginning and end).
 */
#include <stdlib.h>
#include <string.h>

#include "base/md_path.h"
#include "internal.h"
#include "store/md_dirsizes.h"

struct pg_batch {
    int deferring;              /* writes are queued, locates answered from `rows` */
    enum md_err abandoned;      /* a statement failed: run the batch the exact way */
    int cmd_wrote;              /* the running command queued a write */
    PGresult *pre;              /* the prefetched rows */
    struct pg_prefetched *rows; /* sorted by (tenant, path) */
    size_t n, cap;
};

struct pg_batch *md_pg_batch_new(void)
{
    return calloc(1, sizeof(struct pg_batch));
}

void md_pg_batch_free(struct pg_batch *b)
{
    if (!b)
        return;
    PQclear(b->pre);
    free(b->rows);
    free(b);
}

void md_pg_batch_reset(struct pg_txn *t)
{
    struct pg_batch *b = t->batch;
    PQclear(b->pre);
    b->pre = NULL;
    b->n = 0;
    b->deferring = 0;
    b->abandoned = MD_OK;
}

int md_pg_deferring(const struct pg_txn *t)
{
    return t->batch && t->batch->deferring;
}

enum md_err md_pg_abandon_attempt(struct pg_txn *t)
{
    if (!t->batch->abandoned)
        t->batch->abandoned = MD_EDB;
    return MD_OK;
}

void md_pg_batch_failed(struct pg_txn *t, enum md_err e)
{
    if (md_pg_deferring(t) && !t->batch->abandoned)
        t->batch->abandoned = e;
}

void md_pg_batch_defer(struct pg_txn *t, int on)
{
    t->batch->deferring = on;
    if (on)
        t->batch->abandoned = MD_OK;
}

void md_pg_batch_command_begins(struct pg_txn *t)
{
    t->batch->cmd_wrote = 0;
}

enum md_err md_pg_batch_command_ends(struct pg_txn *t, int rollback)
{
    struct pg_batch *b = t->batch;
    if (rollback && b->cmd_wrote && !b->abandoned)
        b->abandoned = MD_EDB;
    return b->abandoned ? MD_EREDO : MD_OK;
}

/* ---- the prefetched rows ---- */

static int key_cmp(const char *ta, const char *pa, size_t la, const char *tb, const char *pb,
                   size_t lb)
{
    int c = strcmp(ta, tb);
    if (!c)
        c = memcmp(pa, pb, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

static int prefetched_cmp(const void *a, const void *b)
{
    const struct pg_prefetched *x = a, *y = b;
    return key_cmp(x->tenant, x->path, x->len, y->tenant, y->path, y->len);
}

/* The first row at or after (tenant, path). */
static size_t pre_lower(const struct pg_batch *b, const char *tenant, const char *path, size_t len)
{
    size_t lo = 0, hi = b->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct pg_prefetched *m = &b->rows[mid];
        if (key_cmp(m->tenant, m->path, m->len, tenant, path, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct pg_prefetched *pre_find(struct pg_batch *b, const char *tenant, const char *path,
                                      size_t len)
{
    size_t i = pre_lower(b, tenant, path, len);
    if (i < b->n &&
        key_cmp(b->rows[i].tenant, b->rows[i].path, b->rows[i].len, tenant, path, len) == 0)
        return &b->rows[i];
    return NULL;
}

const struct pg_prefetched *md_pg_prefetched(const struct pg_txn *t, const char *tenant,
                                             const char *path, size_t len)
{
    return t->batch ? pre_find(t->batch, tenant, path, len) : NULL;
}

/* Sizes of ancestors are not changed by a write: they are pending
 * (md_dirsizes) until md_pg_sizes_send. */
void md_pg_pre_forget(struct pg_txn *t, const char *tenant, const char *path, size_t len, int below,
                      size_t keep)
{
    struct pg_batch *b = t->batch;
    b->cmd_wrote = 1;
    if (b->n == 0)
        return;
    for (size_t i = pre_lower(b, tenant, path, len); i < b->n; i++) {
        struct pg_prefetched *e = &b->rows[i];
        if (strcmp(e->tenant, tenant) != 0 || e->len < len || memcmp(e->path, path, len) != 0)
            break; /* past every path that begins with `path` */
        if (e->len == len || (below && e->path[len] == '/'))
            e->stale = 1;
    }
    for (size_t plen = len; plen > keep && plen > MD_ROOT_LEN;) {
        plen = md_path_parent_len(path, plen);
        struct pg_prefetched *e = plen > keep ? pre_find(b, tenant, path, plen) : NULL;
        if (e)
            e->stale = 1;
    }
}

/* A queued write adds (+1) or removes (-1, with everything below `path`)
 * files of `tenant`: its root's count follows; the removal of what is not
 * a prefetched file makes the count unknown. */
void md_pg_pre_files_add(struct pg_txn *t, const char *tenant, const char *path, size_t len,
                         int delta)
{
    struct pg_prefetched *root = pre_find(t->batch, tenant, MD_ROOT, MD_ROOT_LEN);
    if (!root)
        return;
    const struct pg_prefetched *e = delta < 0 ? pre_find(t->batch, tenant, path, len) : NULL;
    if (delta < 0 && (!e || !e->found || e->stale || e->kind != MD_KIND_FILE))
        root->files_unknown = 1;
    else
        root->files_delta += delta;
}

/* A tenant was created: whatever was read of it is not true any more. */
void md_pg_pre_forget_tenant(struct pg_txn *t, const char *tenant)
{
    struct pg_batch *b = t->batch;
    b->cmd_wrote = 1;
    for (size_t i = pre_lower(b, tenant, "", 0); i < b->n; i++) {
        if (strcmp(b->rows[i].tenant, tenant) != 0)
            break;
        b->rows[i].stale = 1;
    }
}

/* (The pending ones become 0.) */
void md_pg_pre_fold_sizes(struct pg_txn *t)
{
    struct pg_batch *b = t->batch;
    for (size_t i = 0; i < b->n; i++) {
        struct pg_prefetched *e = &b->rows[i];
        if (e->found && e->kind == MD_KIND_DIR && e->id)
            e->size += md_dirsizes_pending(t->sizes, e->id, e->path, e->len);
    }
}

/* ---- the rows to prefetch ---- */

/* Room for `n` more rows. */
static enum md_err pre_reserve(struct pg_batch *b, size_t n)
{
    if (b->cap - b->n >= n)
        return MD_OK;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->n < n)
        cap *= 2;
    struct pg_prefetched *rows = realloc(b->rows, cap * sizeof *rows);
    if (!rows)
        return MD_ENOMEM;
    b->rows = rows;
    b->cap = cap;
    return MD_OK;
}

/* The rows to read: every path of `w` and every ancestor of each; sorted,
 * once each (wanted with its content when any command wants it). */
enum md_err md_pg_pre_keys(struct pg_txn *t, const struct md_batch_path *w, size_t n)
{
    struct pg_batch *b = t->batch;
    b->n = 0;
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += 1 + (size_t)md_path_depth(w[i].path, w[i].len);
    enum md_err e = pre_reserve(b, count);
    if (e)
        return e;
    for (size_t i = 0; i < n; i++) {
        for (size_t plen = w[i].len;;) {
            b->rows[b->n++] = (struct pg_prefetched){.tenant = w[i].tenant,
                                                     .path = w[i].path,
                                                     .len = plen,
                                                     .want = plen == w[i].len && w[i].content};
            if (plen <= MD_ROOT_LEN)
                break;
            plen = md_path_parent_len(w[i].path, plen);
        }
    }
    qsort(b->rows, b->n, sizeof *b->rows, prefetched_cmp);
    size_t k = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (k > 0 && prefetched_cmp(&b->rows[k - 1], &b->rows[i]) == 0)
            b->rows[k - 1].want |= b->rows[i].want;
        else
            b->rows[k++] = b->rows[i];
    }
    b->n = k;
    return MD_OK;
}

struct pg_prefetched *md_pg_pre_rows(struct pg_txn *t, size_t *n)
{
    *n = t->batch->n;
    return t->batch->rows;
}

void md_pg_pre_hold(struct pg_txn *t, PGresult *res)
{
    PQclear(t->batch->pre);
    t->batch->pre = res;
}
