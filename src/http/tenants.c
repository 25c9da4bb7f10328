/*
 * http_tenants.c — tenant administration: GET /v1/tenants (every tenant
 * with its usage, cursor paged), GET /v1/tenants/{t} (usage and limits),
 * PUT /v1/tenants/{t}/limits (the tenant's overrides, run by the writer)
 * and DELETE /v1/tenants/{t} (erasure, run by the writer alone in its
 * transaction). With --auth keys, served to API keys of the admin scope
 * (http_auth.c); otherwise only to loopback clients that are not behind a
 * proxy (md_quota.h for
 * the limits themselves, md_txn_tenants and md_txn_erase for the rest).
 */
#include <jansson.h>
#include <microhttpd.h>
#include <string.h>

#include "app/md_config.h"
#include "base/md_json.h"
#include "base/md_netaddr.h"
#include "base/md_path.h"
#include "cmd/md_quota.h"
#include "internal.h"

#define PREFIX "/v1/tenants/"

/* GET /v1/tenants: tenants per page. */
#define LIST_LIMIT_DEFAULT 100
#define LIST_LIMIT_MAX     1000

/* The largest limit taken: 2^53, the largest integer every JSON reader
 * keeps exactly. */
#define LIMIT_MAX ((json_int_t)1 << 53)

static enum MHD_Result reply(struct req *r, enum md_err e, const char *text)
{
    return md_http_reply_error(r, e, text, strlen(text));
}

/* A client on this machine (127.0.0.0/8, ::1), not relaying for another
 * (a request that carries Forwarded or X-Forwarded-For). */
static int local_admin(struct req *r)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    int family;
    uint8_t a[16];
    if (!ci || md_sockaddr_key(ci->client_addr, &family, a) != 0)
        return 0;
    if (MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Forwarded") ||
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Forwarded-For"))
        return 0;
    if (family == AF_INET)
        return a[0] == 127;
    static const uint8_t loop6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return memcmp(a, loop6, 16) == 0;
}

/* One limit of the body: a non-negative integer, or null (-1). 0, or -1
 * with the reason in `why`. */
static int limit_of(json_t *v, const char *name, int64_t *out, char *why, size_t len)
{
    if (!v) {
        snprintf(why, len,
                 "Field `%s` is required (a non-negative integer, or null for the default)", name);
        return -1;
    }
    if (json_is_null(v)) {
        *out = -1;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > LIMIT_MAX) {
        snprintf(why, len,
                 "Field `%s` must be a non-negative integer (at most 2^53; 0: unlimited) or null "
                 "(the default)",
                 name);
        return -1;
    }
    *out = (int64_t)json_integer_value(v);
    return 0;
}

/* A key of `root` other than the two limits: -1 with the reason. */
static int unknown_field(json_t *root, char *why, size_t len)
{
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        (void)v;
        if (strcmp(key, "max_bytes") != 0 && strcmp(key, "max_files") != 0) {
            snprintf(why, len, "Unknown field `%.64s`: only max_bytes and max_files are taken",
                     key);
            return -1;
        }
    }
    return 0;
}

/* Parse {"max_bytes": N|null, "max_files": N|null} into r->cmd. */
static int parse_limits(struct req *r, char *why, size_t len)
{
    json_error_t jerr;
    json_t *root =
        json_loadb(r->body.data ? r->body.data : "", r->body.len, JSON_REJECT_DUPLICATES, &jerr);
    int bad = 0;
    if (!root || !json_is_object(root)) {
        snprintf(why, len,
                 "The body must be a JSON object: {\"max_bytes\": N|null, \"max_files\": N|null}");
        bad = -1;
    }
    if (!bad)
        bad = unknown_field(root, why, len);
    if (!bad)
        bad =
            limit_of(json_object_get(root, "max_bytes"), "max_bytes", &r->cmd.max_bytes, why, len);
    if (!bad)
        bad =
            limit_of(json_object_get(root, "max_files"), "max_files", &r->cmd.max_files, why, len);
    json_decref(root);
    return bad;
}

static enum MHD_Result get_tenant(struct req *r)
{
    struct md_txn *t;
    enum md_err e = md_store_read_begin(r->h->store, &t);
    struct md_usage u;
    if (!e) {
        e = md_txn_usage(t, r->tenant, &u);
        md_txn_end(t);
    }
    struct md_buf json;
    md_buf_init(&json, OUT_LIMIT);
    if (!e)
        e = md_quota_json(&json, r->tenant, &u, &r->h->cfg->limits);
    if (e) {
        md_buf_free(&json);
        return reply(r, e == MD_EBUSY || e == MD_EUNAVAIL ? e : MD_EDB,
                     md_cmd_storage_error_text(e == MD_EBUSY || e == MD_EUNAVAIL ? e : MD_EDB));
    }
    return md_http_reply_json(r, 200, &json);
}

static enum MHD_Result put_limits(struct req *r)
{
    char why[192];
    int bad = parse_limits(r, why, sizeof why);
    md_http_body_drop(r);
    if (bad)
        return reply(r, MD_EINVAL, why);
    r->cmd.kind = MD_CMD_LIMITS;
    r->cmd.name = md_cmd_kind_name(MD_CMD_LIMITS);
    r->cmd.write = 0;
    return md_http_submit(r);
}

/* ---- GET /v1/tenants ---- */

struct tenant_list {
    struct md_buf *json;
    size_t n, limit;
    int more;
    char last[MD_TENANT_MAX + 1];
    enum md_err err;
};

static int tenant_row(void *ctx, const struct md_tenant_info *ti)
{
    struct tenant_list *tl = ctx;
    if (tl->n == tl->limit) {
        tl->more = 1;
        return 1;
    }
    enum md_err e = md_buf_puts(tl->json, tl->n ? ",{\"tenant\":" : "{\"tenant\":");
    if (!e)
        e = md_json_put_string(tl->json, ti->name, strlen(ti->name));
    if (!e)
        e = md_buf_printf(tl->json,
                          ",\"bytes\":%lld,\"files\":%lld,\"versions\":%lld,\"last_write\":",
                          (long long)ti->bytes, (long long)ti->files, (long long)ti->versions);
    if (!e)
        e = ti->last_write < 0 ? md_buf_puts(tl->json, "null")
                               : md_http_put_time(tl->json, ti->last_write);
    if (!e)
        e = md_buf_puts(tl->json, "}");
    snprintf(tl->last, sizeof tl->last, "%s", ti->name);
    tl->n++;
    tl->err = e;
    return e != MD_OK;
}

static enum MHD_Result list_tenants(struct req *r)
{
    enum MHD_Result ret;
    int64_t limit;
    if (md_http_int_arg(r, "limit", 1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT, &limit, &ret))
        return ret;
    const char *after = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "cursor");
    if (after && !md_tenant_valid(after, strlen(after)))
        return reply(r, MD_EINVAL,
                     "Parameter `cursor` must be the next_cursor of a page (a tenant name: 1 to "
                     "128 of A-Z a-z 0-9 . _ -)");
    struct md_buf json;
    md_buf_init(&json, OUT_LIMIT);
    struct tenant_list tl = {&json, 0, (size_t)limit, 0, {0}, MD_OK};
    struct md_txn *t = NULL;
    enum md_err e = md_store_read_begin(r->h->store, &t);
    if (!e)
        e = md_buf_puts(&json, "{\"tenants\":[");
    if (!e)
        e = md_txn_tenants(t, after ? after : "", (size_t)limit + 1, tenant_row, &tl);
    if (t)
        md_txn_end(t);
    if (!e)
        e = tl.err;
    if (!e)
        e = md_buf_puts(&json, "],\"next_cursor\":");
    if (!e)
        e = tl.more ? md_json_put_string(&json, tl.last, strlen(tl.last))
                    : md_buf_puts(&json, "null");
    if (!e)
        e = md_buf_puts(&json, "}");
    if (e) {
        md_buf_free(&json);
        return reply(r, e == MD_EBUSY || e == MD_EUNAVAIL ? e : MD_EDB,
                     md_cmd_storage_error_text(e == MD_EBUSY || e == MD_EUNAVAIL ? e : MD_EDB));
    }
    return md_http_reply_json(r, 200, &json);
}

/* ---- DELETE /v1/tenants/{t} ---- */

static enum MHD_Result erase_tenant(struct req *r)
{
    md_http_body_drop(r);
    r->cmd.kind = MD_CMD_ERASE;
    r->cmd.name = md_cmd_kind_name(MD_CMD_ERASE);
    r->cmd.write = 0;
    return md_http_submit(r);
}

/* ---- POST /v1/tenants/{t}/import ---- */

static enum MHD_Result import_tenant(struct req *r)
{
    const char *mode = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "mode");
    static const char *const modes[] = {"new", "replace", "merge"};
    int m = mode ? -1 : MD_IMPORT_NEW;
    for (int i = 0; mode && i < 3; i++)
        if (strcmp(mode, modes[i]) == 0)
            m = i;
    if (m < 0)
        return reply(r, MD_EINVAL,
                     "Parameter `mode` must be new (the default: into a tenant without entries), "
                     "replace or merge");
    if (r->spool_fd < 0)
        return reply(r, MD_EINVAL,
                     "Nothing was imported: the body is empty (send the tar, as GET "
                     "/v1/tenants/{tenant}/export writes it)");
    r->cmd.kind = MD_CMD_IMPORT;
    r->cmd.name = md_cmd_kind_name(MD_CMD_IMPORT);
    r->cmd.write = 1;
    r->cmd.import_fd = r->spool_fd;
    r->cmd.import_mode = m;
    r->cmd.path.canon = strdup(MD_ROOT);
    if (!r->cmd.path.canon)
        return MHD_NO;
    r->cmd.path.canon_len = MD_ROOT_LEN;
    r->cmd.path.raw = (struct md_str){MD_ROOT, MD_ROOT_LEN};
    /* X-Memory-Actor is recorded with the versions; no preconditions. */
    if (md_http_write_headers(r, NULL, 0, &r->out) != MD_OK)
        return md_http_reply_error(r, MD_EINVAL, r->out.data, r->out.len);
    if (r->job.idem_key || r->cmd.pre.if_none_match || r->cmd.pre.if_match_any ||
        r->cmd.pre.n_match)
        return reply(r, MD_EINVAL,
                     "An import takes no Idempotency-Key, If-Match or If-None-Match (it is all or "
                     "nothing; mode new refuses a tenant that already has entries)");
    return md_http_submit(r);
}

/* The writer's answer: the tenant's document, or an error. */
static enum MHD_Result limits_done(struct req *r)
{
    if (r->err != MD_OK)
        return md_http_reply_error(r, r->err, r->out.data ? r->out.data : "", r->out.len);
    return md_http_reply_json(r, 200, &r->out);
}

enum MHD_Result md_http_tenants(struct req *r)
{
    if (atomic_load(&r->state) == ST_READY)
        return limits_done(r);
    if (r->late)
        return reply(r, MD_EBUSY, "memoryd is shutting down; retry shortly");
    if (!r->h->keys && !local_admin(r))
        return reply(r, MD_EFORBIDDEN,
                     "Tenant administration (/v1/tenants) is only served to clients on this "
                     "machine (127.0.0.1 or ::1) that do not come through a proxy (Forwarded, "
                     "X-Forwarded-For)");
    if (strcmp(r->url, "/v1/tenants") == 0)
        return list_tenants(r);
    const char *name = r->url + strlen(PREFIX);
    const char *slash = strchr(name, '/');
    size_t n = slash ? (size_t)(slash - name) : strlen(name);
    /* What below the tenant: nothing, /limits, /export or /import. */
    enum { SUB_NONE, SUB_LIMITS, SUB_EXPORT, SUB_IMPORT } sub = SUB_NONE;
    if (slash) {
        if (strcmp(slash, "/limits") == 0)
            sub = SUB_LIMITS;
        else if (strcmp(slash, "/export") == 0)
            sub = SUB_EXPORT;
        else if (strcmp(slash, "/import") == 0)
            sub = SUB_IMPORT;
        else
            return reply(r, MD_ENOENT,
                         "Not found: use /v1/tenants/{tenant}, /v1/tenants/{tenant}/limits, "
                         "/v1/tenants/{tenant}/export or /v1/tenants/{tenant}/import");
    }
    if (!md_tenant_valid(name, n))
        return reply(r, MD_EINVAL,
                     "The tenant in /v1/tenants/{tenant} must be 1 to 128 of A-Z a-z 0-9 . _ -");
    memcpy(r->tenant, name, n);
    r->tenant[n] = '\0';
    static const char *const allow[] = {"GET, DELETE", MHD_HTTP_METHOD_PUT, "GET",
                                        MHD_HTTP_METHOD_POST};
    static const char *const wanted[] = {NULL, MHD_HTTP_METHOD_PUT, MHD_HTTP_METHOD_GET,
                                         MHD_HTTP_METHOD_POST};
    int get = strcmp(r->method, MHD_HTTP_METHOD_GET) == 0;
    int del = strcmp(r->method, MHD_HTTP_METHOD_DELETE) == 0;
    if (sub == SUB_NONE ? !(get || del) : strcmp(r->method, wanted[sub]) != 0) {
        const char *extra[] = {"Allow", allow[sub], NULL};
        static const char body[] = "{\"error\":\"method not allowed\"}";
        return md_http_queue(r, 405, "application/json", strdup(body), sizeof body - 1, -1, extra);
    }
    switch (sub) {
    case SUB_LIMITS:
        return put_limits(r);
    case SUB_EXPORT:
        return md_http_export(r);
    case SUB_IMPORT:
        return import_tenant(r);
    default:
        return del ? erase_tenant(r) : get_tenant(r);
    }
}
