/* expiry.c — expiry of unused files: the writer's write-back of uses and
 * its sweep (see md_expiry.h). */
#include "cmd/md_expiry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_duration.h"
#include "base/md_log.h"
#include "base/md_metrics.h"
#include "cmd/md_uses.h"

/* Uses written back per transaction at most. */
#define WRITEBACK_MAX 256

int64_t md_expiry_window(int64_t own, const struct md_limits *lim)
{
    return own >= 0 ? own : lim->expire_after_ms;
}

int64_t md_expiry_default_granularity(int64_t after_ms)
{
    int64_t g = after_ms / 100;
    if (!after_ms || g > 3600000)
        return 3600000;
    return g < 1000 ? 1000 : g;
}

enum md_err md_expiry_json_field(struct md_buf *out, int64_t ms, const char *off_text)
{
    if (ms < 0 || (ms == 0 && !off_text))
        return md_buf_puts(out, "\"expire_after\":null");
    if (ms == 0)
        return md_buf_printf(out, "\"expire_after\":\"%s\"", off_text);
    char d[32];
    md_duration_format(ms, d, sizeof d);
    return md_buf_printf(out, "\"expire_after\":\"%s\"", d);
}

/* Write back the uses `v` (n of them) in one transaction, their tenants
 * locked. */
static enum md_err write_uses(struct md_store *s, const struct md_use *v, size_t n)
{
    const char *tenants[WRITEBACK_MAX];
    for (size_t i = 0; i < n; i++)
        tenants[i] = v[i].tenant;
    struct md_txn *t = NULL;
    enum md_err e = md_store_write_begin(s, &t);
    if (e)
        return e;
    struct md_batch b = {tenants, n, NULL, 0, 0};
    e = md_txn_batch_begin(t, &b);
    for (size_t i = 0; i < n && !e; i++)
        e = md_txn_use_put(t, v[i].tenant, v[i].path, v[i].len, v[i].used_ms);
    if (e) {
        md_txn_rollback(t);
        return e;
    }
    return md_txn_commit(t);
}

enum md_err md_expiry_writeback(struct md_store *s, const struct md_limits *lim, size_t *written)
{
    *written = 0;
    if (!lim->uses)
        return MD_OK;
    struct md_use v[WRITEBACK_MAX];
    for (;;) {
        size_t n = md_uses_take(lim->uses, v, WRITEBACK_MAX);
        if (!n)
            return MD_OK;
        enum md_err e = write_uses(s, v, n);
        if (e && e != MD_EUNSURE)
            md_uses_untake(lim->uses, v, n); /* again at the next run */
        md_use_free(v, n);
        if (e)
            return e;
        *written += n;
        md_metrics_uses_written(n);
        if (n < WRITEBACK_MAX)
            return MD_OK;
    }
}

/* ---- the sweep ---- */

struct candidate {
    char *tenant;
    char *path;
    size_t len;
};

struct candidates {
    struct candidate *c;
    size_t n, cap;
    enum md_err err;
};

static int on_candidate(void *ctx, const char *tenant, const char *path, size_t len,
                        int64_t used_ms)
{
    (void)used_ms;
    struct candidates *cs = ctx;
    if (cs->n == cs->cap) {
        size_t cap = cs->cap ? cs->cap * 2 : 16;
        struct candidate *c = realloc(cs->c, cap * sizeof *c);
        if (!c) {
            cs->err = MD_ENOMEM;
            return 1;
        }
        cs->c = c;
        cs->cap = cap;
    }
    struct candidate *c = &cs->c[cs->n];
    c->tenant = strdup(tenant);
    c->path = strndup(path, len);
    c->len = len;
    if (!c->tenant || !c->path) {
        free(c->tenant);
        free(c->path);
        cs->err = MD_ENOMEM;
        return 1;
    }
    cs->n++;
    return 0;
}

static void candidates_free(struct candidates *cs)
{
    for (size_t i = 0; i < cs->n; i++) {
        free(cs->c[i].tenant);
        free(cs->c[i].path);
    }
    free(cs->c);
}

static int by_tenant(const void *a, const void *b)
{
    const struct candidate *x = a, *y = b;
    int c = strcmp(x->tenant, y->tenant);
    return c ? c : strcmp(x->path, y->path);
}

/* Whether the file `c` is still unused since before `cutoff` (read in the
 * deleting transaction, and in memory); its size into *size. */
static enum md_err still_unused(struct md_txn *t, const struct md_limits *lim,
                                const struct candidate *c, int64_t cutoff, int *unused,
                                int64_t *size)
{
    int64_t used = 0;
    *unused = 0;
    enum md_err e = md_txn_use_get(t, c->tenant, c->path, c->len, &used, size);
    if (e == MD_ENOENT)
        return MD_OK; /* gone already (another instance, or a delete) */
    if (e)
        return e;
    int64_t mem = lim->uses ? md_uses_last(lim->uses, c->tenant, c->path, c->len) : 0;
    *unused = used < cutoff && mem < cutoff;
    return MD_OK;
}

/* Delete what of c[0..n) (one tenant's) is still unused, in one
 * transaction with the tenant locked: one change-feed entry `expired`.
 * *deleted: how many. */
static enum md_err expire_tenant(struct md_store *s, const struct md_limits *lim, int64_t now_ms,
                                 const struct candidate *c, size_t n, size_t *deleted)
{
    *deleted = 0;
    const char *tenant = c[0].tenant;
    const char **paths = malloc(n * sizeof *paths);
    size_t *lens = malloc(n * sizeof *lens);
    struct md_batch_path *bp = malloc(n * sizeof *bp);
    struct md_txn *t = NULL;
    enum md_err e = paths && lens && bp ? md_store_write_begin(s, &t) : MD_ENOMEM;
    if (!e) {
        for (size_t i = 0; i < n; i++)
            bp[i] = (struct md_batch_path){tenant, c[i].path, c[i].len, 0};
        struct md_batch b = {&tenant, 1, bp, n, 0};
        e = md_txn_batch_begin(t, &b);
    }
    int64_t own = -1;
    if (!e)
        e = md_txn_savepoint(t);
    if (!e)
        e = md_txn_expiry_get(t, tenant, &own);
    int64_t window = md_expiry_window(own, lim);
    struct md_write_meta m = {"expired", NULL, now_ms, {0, 0, 0, 0}};
    if (!e && window > 0)
        e = md_txn_cmd_begin(t, tenant, &m);
    size_t k = 0;
    for (size_t i = 0; i < n && !e && window > 0; i++) {
        int unused;
        int64_t size = 0;
        e = still_unused(t, lim, &c[i], now_ms - window, &unused, &size);
        if (!e && unused)
            e = md_txn_remove_tree(t, tenant, c[i].path, c[i].len, size);
        if (!e && unused) {
            paths[k] = c[i].path;
            lens[k++] = c[i].len;
        }
    }
    struct md_change_rec rec;
    if (!e && k)
        e = md_txn_cmd_end(t, paths, lens, k, &rec);
    if (!e && k)
        e = md_txn_release(t, 0);
    if (t && (e || !k))
        md_txn_rollback(t);
    else if (t)
        e = md_txn_commit(t);
    if (!e)
        *deleted = k;
    free(paths);
    free(lens);
    free(bp);
    return e;
}

static void log_expired(const char *tenant, size_t n)
{
    struct md_logline l;
    md_log_begin(&l, MD_LOG_INFO, "expired");
    md_log_str(&l, "tenant", tenant);
    md_log_int(&l, "files", (int64_t)n);
    md_log_end(&l);
}

enum md_err md_expiry_sweep(struct md_store *s, const struct md_limits *lim, int64_t now_ms,
                            size_t budget, md_expiry_told_cb told, void *ctx, size_t *expired,
                            int *more)
{
    *expired = 0;
    *more = 0;
    struct candidates cs = {0};
    struct md_txn *t = NULL;
    enum md_err e = md_store_read_begin(s, &t);
    if (!e) {
        e = md_txn_expired(t, now_ms, lim->expire_after_ms, budget, on_candidate, &cs);
        md_txn_end(t);
    }
    if (!e)
        e = cs.err;
    *more = !e && cs.n >= budget;
    if (!e && cs.n)
        qsort(cs.c, cs.n, sizeof cs.c[0], by_tenant);
    for (size_t i = 0, j; !e && i < cs.n; i = j) {
        for (j = i + 1; j < cs.n && strcmp(cs.c[j].tenant, cs.c[i].tenant) == 0; j++)
            ;
        size_t n = 0;
        e = expire_tenant(s, lim, now_ms, &cs.c[i], j - i, &n);
        if (e || !n)
            continue;
        *expired += n;
        md_metrics_expired(n);
        log_expired(cs.c[i].tenant, n);
        if (told)
            told(ctx, cs.c[i].tenant);
    }
    candidates_free(&cs);
    return e;
}
