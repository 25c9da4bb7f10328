/* scan.c — secrets already stored, found in a tenant's files and versions
 * (see md_scan.h). */
#include "cmd/md_scan.h"

#include <stdlib.h>
#include <string.h>

#include "base/md_json.h"

struct page {
    const struct md_sensitive *s;
    struct md_scan_pos *pos;
    struct md_scan_counts *n;
    md_scan_found_cb cb;
    void *ctx;
    size_t items;
    int64_t bytes;
    int stop;
    enum md_err err;
};

/* Every finding of one text. */
static int search_text(struct page *pg, const char *path, size_t path_len, int64_t version,
                       const char *text, size_t len)
{
    struct md_sensitive_hit hit;
    size_t at = 0;
    int rc = 0;
    pg->items++;
    pg->bytes += (int64_t)len;
    while (!pg->stop && (rc = md_sensitive_find_at(pg->s, text, len, at, &hit)) == 1) {
        struct md_scan_finding f = {path, path_len, version, hit.kind, hit.line};
        pg->n->findings++;
        if (pg->cb(pg->ctx, &f))
            pg->stop = 1;
        at = hit.off + (hit.len ? hit.len : 1);
    }
    if (!pg->stop && rc < 0) {
        pg->err = MD_ENOMEM;
        pg->stop = 1;
    }
    return pg->stop;
}

static int file_row(void *ctx, const struct md_scan_entry *e)
{
    struct page *pg = ctx;
    struct md_scan_pos *pos = pg->pos;
    char *p = realloc(pos->path, e->len + 1);
    if (!p) {
        pg->err = MD_ENOMEM;
        return 1;
    }
    memcpy(p, e->path, e->len);
    p[e->len] = '\0';
    pos->path = p;
    pos->path_len = e->len;
    if (e->kind != MD_KIND_FILE)
        return 0;
    pg->n->files++;
    return search_text(pg, e->path, e->len, 0, e->content, e->content_len);
}

static int version_row(void *ctx, const struct md_version *v)
{
    struct page *pg = ctx;
    pg->pos->version = v->version;
    pg->n->versions++;
    return search_text(pg, v->path, v->path_len, v->version, v->content, v->content_len);
}

enum md_err md_scan_page(struct md_txn *t, const struct md_sensitive *s, const char *tenant,
                         size_t max_items, struct md_scan_pos *pos, struct md_scan_counts *n,
                         md_scan_found_cb cb, void *ctx)
{
    struct page pg = {s, pos, n, cb, ctx, 0, 0, 0, MD_OK};
    enum md_err e = MD_OK;
    int more = 0;
    if (pos->phase == MD_SCAN_FILES) {
        e = md_txn_scan(t, tenant, pos->path ? pos->path : "", pos->path_len, max_items,
                        MD_SCAN_PAGE_BYTES, file_row, &pg, &more);
        if (!e)
            e = pg.err;
        if (e || pg.stop)
            return e;
        if (!more)
            pos->phase = MD_SCAN_VERSIONS;
    }
    /* The page's budget left for versions. */
    if (pos->phase == MD_SCAN_VERSIONS && pg.items < max_items && pg.bytes < MD_SCAN_PAGE_BYTES) {
        e = md_txn_versions_scan(t, tenant, pos->version, max_items - pg.items,
                                 MD_SCAN_PAGE_BYTES - pg.bytes, version_row, &pg, &more);
        if (!e)
            e = pg.err;
        if (!e && !pg.stop && !more)
            pos->phase = MD_SCAN_DONE;
    }
    return e;
}

void md_scan_pos_free(struct md_scan_pos *pos)
{
    free(pos->path);
    pos->path = NULL;
}

enum md_err md_scan_finding_json(struct md_buf *out, const char *tenant,
                                 const struct md_scan_finding *f)
{
    enum md_err e = md_buf_puts(out, "{");
    if (!e && tenant) {
        e = md_buf_puts(out, "\"tenant\":");
        if (!e)
            e = md_json_put_string(out, tenant, strlen(tenant));
        if (!e)
            e = md_buf_puts(out, ",");
    }
    if (!e)
        e = md_buf_puts(out, "\"path\":");
    if (!e)
        e = md_json_put_string(out, f->path, f->path_len);
    if (!e)
        e = f->version ? md_buf_printf(out, ",\"version\":%lld", (long long)f->version)
                       : md_buf_puts(out, ",\"version\":null");
    if (!e)
        e = md_buf_puts(out, ",\"kind\":");
    if (!e)
        e = md_json_put_string(out, f->kind, strlen(f->kind));
    if (!e)
        e = md_buf_printf(out, ",\"line\":%zu}", f->line);
    return e;
}
