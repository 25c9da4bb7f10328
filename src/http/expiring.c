/*
 * expiring.c — GET /v1/expiring?within=DURATION[&limit=N][&cursor=C]: the
 * tenant's files that expiry (md_expiry.h) would delete within DURATION
 * if nobody used them, in path order, cursor paged (docs/behaviour.md,
 * "Expiry of unused files"). A file's last use is the database's, or the
 * one this instance holds in memory when later. A key that sees one
 * subtree (docs/behaviour.md 15.3) lists the files in it alone.
 */
#include <string.h>
#include <time.h>

#include "base/md_clock.h"
#include "base/md_duration.h"
#include "base/md_json.h"
#include "base/md_path.h"
#include "cmd/md_expiry.h"
#include "cmd/md_uses.h"
#include "internal.h"

#define EXPIRING_LIMIT_DEFAULT 100
#define EXPIRING_LIMIT_MAX     1000

struct expiring_list {
    struct md_buf *json;
    struct md_uses *uses;
    int64_t before, window;
    size_t n, limit;
    size_t seen, asked; /* rows read, and asked for, from the store */
    int more;
    struct md_buf cursor; /* the path of the last row read (listed or not) */
    const char *root;     /* the key's subtree; NULL: the whole tenant */
    size_t root_len;
    enum md_err err;
};

static int expiring_row(void *ctx, const char *tenant, const char *path, size_t len,
                        int64_t used_ms)
{
    struct expiring_list *x = ctx;
    if (x->n == x->limit) {
        x->more = 1;
        return 1;
    }
    x->seen++;
    md_buf_reset(&x->cursor);
    if ((x->err = md_buf_append(&x->cursor, path, len)) != MD_OK)
        return 1;
    if (md_path_within(path, len, x->root, x->root_len) != MD_IN_SUBTREE)
        return 0;
    int64_t mem = x->uses ? md_uses_last(x->uses, tenant, path, len) : 0;
    if (mem > used_ms)
        used_ms = mem;
    if (used_ms > x->before)
        return 0; /* used since, here */
    int64_t expires = used_ms + x->window;
    enum md_err e = md_buf_puts(x->json, x->n ? ",{\"path\":" : "{\"path\":");
    if (!e)
        e = md_json_put_string(x->json, path, len);
    if (!e)
        e = md_buf_printf(x->json, ",\"last_used\":%lld,\"expires_at\":%lld}", (long long)used_ms,
                          (long long)expires);
    x->n++;
    x->err = e;
    return e != MD_OK;
}

/* The page into `json`. */
static enum md_err list_expiring(struct req *r, int64_t within, const char *after,
                                 struct expiring_list *x)
{
    struct md_txn *t = NULL;
    enum md_err e = md_store_read_begin(r->h->store, &t);
    int64_t own = -1;
    if (!e)
        e = md_txn_expiry_get(t, r->tenant, &own);
    x->window = md_expiry_window(own, r->h->limits);
    x->before = md_wall_ms() + within - x->window;
    if (!e)
        e = md_buf_puts(x->json, "{");
    if (!e)
        e = md_expiry_json_field(x->json, x->window, NULL);
    if (!e)
        e = md_buf_puts(x->json, ",\"files\":[");
    /* Rows the memory's uses leave out are read past, a page's worth at
     * most again. */
    x->asked = 2 * x->limit + 1;
    if (!e && x->window > 0)
        e = md_txn_expiring(t, r->tenant, x->before, after, strlen(after), x->asked, expiring_row,
                            x);
    /* Every row asked for was read, some left out: more may follow them. */
    if (!e && x->seen == x->asked)
        x->more = 1;
    if (t)
        md_txn_end(t);
    if (!e)
        e = x->err;
    if (!e)
        e = md_buf_puts(x->json, "],\"next_cursor\":");
    if (!e)
        e = x->more ? md_json_put_string(x->json, x->cursor.data, x->cursor.len)
                    : md_buf_puts(x->json, "null");
    if (!e)
        e = md_buf_puts(x->json, "}");
    return e;
}

enum MHD_Result md_http_expiring(struct req *r)
{
    enum MHD_Result ret;
    if (md_http_tenant(r, &ret) != 0 || md_http_tenant_readable(r, &ret) != 0)
        return ret;
    int64_t limit, within;
    if (md_http_int_arg(r, "limit", 1, EXPIRING_LIMIT_MAX, EXPIRING_LIMIT_DEFAULT, &limit, &ret))
        return ret;
    const char *w = md_http_arg(r, "within");
    if (!w || md_duration_parse(w, strlen(w), &within) != 0)
        return md_reply_errorf(r, MD_R_PARAM_WITHIN);
    const char *after = md_http_arg(r, "cursor");
    if (after && (strncmp(after, MD_ROOT "/", MD_ROOT_LEN + 1) != 0 ||
                  strlen(after) > r->h->limits->path.max_path))
        return md_reply_errorf(r, MD_R_EXPIRING_CURSOR);
    struct md_buf json;
    md_buf_init(&json, OUT_LIMIT);
    struct expiring_list x = {.json = &json,
                              .uses = r->h->limits->uses,
                              .limit = (size_t)limit,
                              .root = md_http_key_root(r),
                              .root_len = strlen(r->key_path)};
    md_buf_init(&x.cursor, (size_t)64 << 10);
    enum md_err e = list_expiring(r, within, after ? after : "", &x);
    md_buf_free(&x.cursor);
    if (e) {
        md_buf_free(&json);
        return md_http_storage_error(r, e);
    }
    return md_reply_json(r, 200, &json);
}
