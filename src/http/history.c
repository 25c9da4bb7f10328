/*
 * history.c — a tenant's history in the /v1 API: GET /v1/history (the
 * versions of a path), GET /v1/versions/{version} (one, with its content),
 * POST /v1/restore and POST /v1/redact (run by the writer like the memory
 * tool's writes). JSON in and out; errors are {"error": ...} (reply.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_json.h"
#include "base/md_path.h"
#include "internal.h"

#define HISTORY_LIMIT_DEFAULT 50
#define HISTORY_LIMIT_MAX     1000

static enum md_err put_sha256_or_null(struct md_buf *b, const struct md_version *v)
{
    if (!v->has_sha256)
        return md_buf_puts(b, "null");
    char hex[MD_SHA256_HEX + 1];
    md_sha256_hex(v->sha256, hex);
    return md_buf_printf(b, "\"%s\"", hex);
}

static enum md_err put_version(struct md_buf *b, const struct md_version *v, int with_content)
{
    enum md_err e = md_buf_printf(b, "{\"version\":%lld,\"path\":", (long long)v->version);
    if (!e)
        e = md_json_put_string(b, v->path, v->path_len);
    if (!e)
        e = md_buf_puts(b, ",\"command\":");
    if (!e)
        e = md_json_put_string(b, v->command, strlen(v->command));
    if (!e)
        e = md_buf_puts(b, ",\"time\":");
    if (!e)
        e = md_json_put_time(b, v->time_ms);
    if (!e)
        e = md_buf_puts(b, ",\"actor\":");
    if (!e)
        e = md_json_put_string_or_null(b, v->actor, v->actor_len);
    if (!e)
        e = md_buf_printf(b, ",\"existed\":%s,\"size\":", v->existed ? "true" : "false");
    if (!e)
        e = v->size >= 0 ? md_buf_printf(b, "%lld", (long long)v->size) : md_buf_puts(b, "null");
    if (!e)
        e = md_buf_puts(b, ",\"sha256\":");
    if (!e)
        e = put_sha256_or_null(b, v);
    if (!e)
        e = md_buf_printf(b, ",\"redacted\":%s", v->redacted ? "true" : "false");
    if (!e && with_content) {
        e = md_buf_puts(b, ",\"content\":");
        if (!e)
            e = md_json_put_string_or_null(b, v->content, v->content_len);
    }
    if (!e)
        e = md_buf_putc(b, '}');
    return e;
}

/* ---- GET /v1/history ---- */

struct history_list {
    struct md_buf *json;
    size_t n, limit;
    int64_t last;
    int more;
    enum md_err err;
};

static int history_row(void *ctx, const struct md_version *v)
{
    struct history_list *h = ctx;
    if (h->n == h->limit) {
        h->more = 1;
        return 1;
    }
    if (h->n++ > 0)
        h->err = md_buf_putc(h->json, ',');
    if (!h->err)
        h->err = put_version(h->json, v, 0);
    h->last = v->version;
    return h->err != MD_OK;
}

/* The versions of `canon` below `cursor` into `json` (its head and list);
 * *missing: none, and the path does not exist now either. A directory
 * above the subtree of the request's key (`above`) is listed without
 * versions (a version of its path, a file there once, is outside the
 * subtree), and it exists when the subtree does. */
static enum md_err read_history(struct req *r, const char *canon, size_t len, int above,
                                int64_t cursor, struct history_list *hl, int *missing)
{
    struct md_txn *t = NULL;
    enum md_err e = md_store_read_begin(r->h->store, &t);
    if (!e)
        e = md_buf_puts(hl->json, "{\"path\":");
    if (!e)
        e = md_json_put_string(hl->json, canon, len);
    if (!e)
        e = md_buf_puts(hl->json, ",\"versions\":[");
    if (!e && !above)
        e = md_txn_history(t, r->tenant, canon, len, cursor, hl->limit + 1, history_row, hl);
    if (!e)
        e = hl->err;
    *missing = 0;
    if (!e && hl->n == 0 && cursor == 0 && !(above && len == MD_ROOT_LEN)) {
        /* No version: a path that exists now has an empty history; one
         * that never existed is not found. */
        struct md_locate l = {.path = above ? r->key_path : canon,
                              .len = above ? strlen(r->key_path) : len};
        int tenant_exists;
        e = md_txn_locate(t, r->tenant, &l, 1, &tenant_exists);
        *missing = !e && !l.found;
    }
    if (t)
        md_txn_end(t);
    return e;
}

enum MHD_Result md_http_history(struct req *r)
{
    enum MHD_Result ret;
    if (md_http_tenant(r, &ret) != 0 || md_http_tenant_readable(r, &ret) != 0)
        return ret;
    const char *raw = md_http_arg(r, "path");
    if (!raw)
        return md_reply_errorf(r, MD_R_PARAM_PATH);
    int64_t limit, cursor;
    if (md_http_int_arg(r, "limit", 1, HISTORY_LIMIT_MAX, HISTORY_LIMIT_DEFAULT, &limit, &ret) ||
        md_http_int_arg(r, "cursor", 1, INT64_MAX, 0, &cursor, &ret))
        return ret;
    size_t rawn = strlen(raw), len = 0;
    char *canon = malloc(rawn + 1);
    if (!canon)
        return MHD_NO;
    struct md_buf json;
    md_buf_init(&json, OUT_LIMIT);
    const struct md_path_limits *pl = &r->h->limits->path;
    enum md_path_status ps = md_path_canon(raw, rawn, pl, canon, &len);
    if (ps != MD_PATH_OK) {
        md_path_errmsg(&json, ps, raw, rawn, pl);
        ret = md_reply_error(r, MD_EINVAL, json.data ? json.data : "", json.len);
        goto out;
    }
    struct history_list hl = {&json, 0, (size_t)limit, 0, 0, MD_OK};
    int missing = 1;
    enum md_err e = MD_OK;
    /* A key that sees one subtree: a path outside it has no history
     * (docs/behaviour.md 15.3). */
    enum md_within in = md_path_within(canon, len, md_http_key_root(r), strlen(r->key_path));
    if (in != MD_OUTSIDE_SUBTREE)
        e = read_history(r, canon, len, in == MD_ABOVE_SUBTREE, cursor, &hl, &missing);
    if (e) {
        ret = md_http_storage_error(r, e);
    } else if (missing) {
        ret = md_reply_errorf(r, MD_R_NO_HISTORY, (int)rawn, raw);
    } else {
        e = md_buf_puts(&json, "],\"next_cursor\":");
        if (!e)
            e = hl.more ? md_buf_printf(&json, "\"%lld\"}", (long long)hl.last)
                        : md_buf_puts(&json, "null}");
        ret = e ? MHD_NO : md_reply_json(r, 200, &json);
    }
out:
    md_buf_free(&json);
    free(canon);
    return ret;
}

/* ---- GET /v1/versions/{version} ---- */

enum MHD_Result md_http_version(struct req *r)
{
    enum MHD_Result ret;
    if (md_http_tenant(r, &ret) != 0 || md_http_tenant_readable(r, &ret) != 0)
        return ret;
    const char *num = r->url + strlen("/v1/versions/");
    char *end = NULL;
    errno = 0;
    long long v = (*num >= '1' && *num <= '9') ? strtoll(num, &end, 10) : 0;
    if (v <= 0 || errno || !end || *end)
        return md_reply_errorf(r, MD_R_VERSION_NUMBER);
    struct md_txn *t = NULL;
    enum md_err e = md_store_read_begin(r->h->store, &t);
    struct md_version ver;
    if (!e)
        e = md_txn_version_get(t, r->tenant, v, 1, &ver);
    /* A key that sees one subtree: a version of a path outside it is as
     * one not kept. */
    if (!e && md_path_within(ver.path, ver.path_len, md_http_key_root(r), strlen(r->key_path)) !=
                  MD_IN_SUBTREE)
        e = MD_ENOENT;
    struct md_buf json;
    md_buf_init(&json, OUT_LIMIT);
    if (e == MD_ENOENT) {
        ret = md_reply_errorf(r, MD_R_VERSION_NOT_KEPT, v);
    } else if (!e) {
        e = put_version(&json, &ver, 1);
        ret = e ? MHD_NO : md_reply_json(r, 200, &json);
    } else {
        ret = md_http_storage_error(r, e);
    }
    if (t)
        md_txn_end(t);
    md_buf_free(&json);
    return ret;
}

/* ---- POST /v1/restore, POST /v1/redact ---- */

/* Parse the body as the command `kind` takes it and hand it to the
 * writer; its JSON answer comes when the connection is resumed. */
static enum MHD_Result write_op(struct req *r, enum md_cmd_kind kind)
{
    enum MHD_Result ret;
    if (md_http_tenant(r, &ret) != 0)
        return ret;
    struct md_buf msg;
    md_buf_init(&msg, OUT_LIMIT);
    const char *body = r->body.data ? r->body.data : "";
    enum md_err e = md_cmd_parse_op(&r->cmd, kind, body, r->body.len, r->h->limits, &msg);
    if (!e)
        e = md_http_write_headers(r, body, r->body.len, &msg);
    md_http_body_drop(r);
    ret = e ? md_reply_error(r, e, msg.data ? msg.data : "", msg.len) : md_http_submit(r);
    md_buf_free(&msg);
    return ret;
}

enum MHD_Result md_http_restore(struct req *r)
{
    return write_op(r, MD_CMD_RESTORE);
}

enum MHD_Result md_http_redact(struct req *r)
{
    return write_op(r, MD_CMD_REDACT);
}

/* ---- DELETE /v1/memories ---- */

enum MHD_Result md_http_clear(struct req *r)
{
    enum MHD_Result ret;
    if (md_http_tenant(r, &ret) != 0)
        return ret;
    md_http_body_drop(r);
    r->cmd.kind = MD_CMD_CLEAR;
    r->cmd.name = md_cmd_kind_name(MD_CMD_CLEAR);
    r->cmd.write = 1;
    /* A key that sees one subtree clears the subtree. */
    const char *dir = r->key_path[0] ? r->key_path : MD_ROOT;
    if (!(r->cmd.path.canon = strdup(dir)))
        return MHD_NO;
    r->cmd.path.canon_len = strlen(dir);
    r->cmd.path.raw = (struct md_str){r->cmd.path.canon, r->cmd.path.canon_len};
    struct md_buf msg;
    md_buf_init(&msg, OUT_LIMIT);
    enum md_err e = md_http_write_headers(r, "", 0, &msg);
    ret = e ? md_reply_error(r, e, msg.data ? msg.data : "", msg.len) : md_http_submit(r);
    md_buf_free(&msg);
    return ret;
}
