/* store.c — what every engine shares: the two-level listing over a
 * one-directory list, hidden names, tenant keys (see md_store.h). */
#include "store/md_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/md_buf.h"

int md_store_hidden_name(const char *name, size_t len)
{
    return (len > 0 && name[0] == '.') || (len == 12 && memcmp(name, "node_modules", 12) == 0);
}

static int hidden_path(const char *path, size_t len)
{
    size_t i = len;
    while (i > 0 && path[i - 1] != '/')
        i--;
    return md_store_hidden_name(path + i, len - i);
}

int64_t md_store_tenant_key(const char *name)
{
    uint64_t h = 14695981039346656037u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211u;
    return (int64_t)h;
}

/* ---- the two-level listing ---- */

struct child {
    size_t off, len; /* of the path in `paths` */
    enum md_kind kind;
    int64_t size;
};

struct two_levels {
    md_list_cb cb;
    void *ctx;
    size_t max_entries, max_bytes;
    int cut;             /* level 1 did not fit: entries were left out */
    int stopped;         /* cb asked to stop */
    struct md_buf paths; /* level-1 children: path bytes */
    struct child *kids;
    size_t nkids, capkids;
};

/* Level 1: remembered, since listing a subdirectory needs the store again. */
static int on_child(void *ctx, const char *path, size_t len, enum md_kind kind, int64_t size)
{
    struct two_levels *l = ctx;
    if (hidden_path(path, len))
        return 0;
    if (l->nkids >= l->max_entries || l->paths.len + len > l->max_bytes) {
        l->cut = 1;
        return 1;
    }
    if (l->nkids == l->capkids) {
        size_t cap = l->capkids ? l->capkids * 2 : 32;
        struct child *k = realloc(l->kids, cap * sizeof *k);
        if (!k) {
            l->cut = 1;
            return 1;
        }
        l->kids = k;
        l->capkids = cap;
    }
    if (md_buf_append(&l->paths, path, len)) {
        l->cut = 1;
        return 1;
    }
    l->kids[l->nkids++] = (struct child){l->paths.len - len, len, kind, size};
    return 0;
}

/* Level 2: passed on at once. */
static int on_grandchild(void *ctx, const char *path, size_t len, enum md_kind kind, int64_t size)
{
    struct two_levels *l = ctx;
    if (hidden_path(path, len))
        return 0;
    if (l->cb(l->ctx, path, len, kind, size)) {
        l->stopped = 1;
        return 1;
    }
    return 0;
}

enum md_err md_store_list_two_levels(struct md_txn *t, const char *tenant, const char *dir,
                                     size_t len, size_t max_entries, md_list_cb cb, void *ctx,
                                     int *complete)
{
    struct two_levels l = {cb, ctx, max_entries ? max_entries : 1, 0, 0, 0, {0}, NULL, 0, 0};
    l.max_bytes = l.max_entries > SIZE_MAX / 32 ? SIZE_MAX : l.max_entries * 32;
    md_buf_init(&l.paths, l.max_bytes);
    enum md_err e = md_txn_list(t, tenant, dir, len, on_child, &l);
    for (size_t i = 0; !e && !l.stopped && i < l.nkids; i++) {
        const struct child *k = &l.kids[i];
        const char *kp = l.paths.data + k->off;
        if (cb(ctx, kp, k->len, k->kind, k->size)) {
            l.stopped = 1;
            break;
        }
        if (k->kind == MD_KIND_DIR)
            e = md_txn_list(t, tenant, kp, k->len, on_grandchild, &l);
    }
    *complete = !l.cut && !l.stopped;
    md_buf_free(&l.paths);
    free(l.kids);
    return e;
}
