/*
 * tenants.c — tenant administration (the ADMIN rows of md_routes.def:
 * who may use them is auth.c's): GET /v1/tenants (every tenant with its
 * usage, cursor paged), GET /v1/tenants/{t} (usage and limits), PUT
 * /v1/tenants/{t}/limits (the tenant's overrides and expiry window, run
 * by the writer),
 * DELETE /v1/tenants/{t} (erasure, run by the writer alone in its
 * transaction), GET /v1/tenants/{t}/export (export.c), POST
 * /v1/tenants/{t}/import (run by the writer alone in its transaction) and
 * GET /v1/tenants/{t}/secrets (secrets already stored, md_scan.h).
 * md_quota.h for the limits themselves, md_txn_tenants and md_txn_erase for
 * the rest.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_duration.h"
#include "base/md_json.h"
#include "base/md_path.h"
#include "cmd/md_import.h"
#include "cmd/md_quota.h"
#include "cmd/md_scan.h"
#include "cmd/md_sensitive.h"
#include "internal.h"

#define PREFIX "/v1/tenants/"

/* GET /v1/tenants: tenants per page. */
#define LIST_LIMIT_DEFAULT 100
#define LIST_LIMIT_MAX     1000

/* The largest limit taken: 2^53, the largest integer every JSON reader
 * keeps exactly. */
#define LIMIT_MAX ((json_int_t)1 << 53)

/* The tenant named by the path (/v1/tenants/{t}...) into r->tenant: 0, or
 * -1 with the 400 answered. */
static int tenant_of_path(struct req *r, enum MHD_Result *ret)
{
    const char *name = r->url + strlen(PREFIX);
    const char *slash = strchr(name, '/');
    size_t n = slash ? (size_t)(slash - name) : strlen(name);
    if (!md_tenant_valid(name, n)) {
        *ret = md_reply_errorf(r, MD_R_TENANT_NAME);
        return -1;
    }
    memcpy(r->tenant, name, n);
    r->tenant[n] = '\0';
    return 0;
}

/* ---- PUT /v1/tenants/{t}/limits ---- */

/* One limit of the body: a non-negative integer, or null (-1). MD_OK, or
 * MD_EINVAL with the reason in `why`. */
static enum md_err limit_of(json_t *v, const char *name, int64_t *out, struct md_buf *why)
{
    if (!v)
        return md_buf_say(why, MD_R_LIMITS_MISSING, name);
    if (json_is_null(v)) {
        *out = -1;
        return MD_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > LIMIT_MAX)
        return md_buf_say(why, MD_R_LIMITS_VALUE, name);
    *out = (int64_t)json_integer_value(v);
    return MD_OK;
}

/* A key of `root` other than the limits: MD_EINVAL with the reason. */
static enum md_err unknown_field(json_t *root, struct md_buf *why)
{
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        (void)v;
        if (strcmp(key, "max_bytes") != 0 && strcmp(key, "max_files") != 0 &&
            strcmp(key, "sensitive") != 0 && strcmp(key, "expire_after") != 0)
            return md_buf_say(why, MD_R_LIMITS_UNKNOWN_FIELD, key);
    }
    return MD_OK;
}

/* The --sensitive override of the body: a mode's name, null (-1), or
 * absent (-2: left as it is). */
static enum md_err sensitive_of(json_t *v, int *out, struct md_buf *why)
{
    *out = !v ? -2 : -1;
    if (!v || json_is_null(v))
        return MD_OK;
    int mode = json_is_string(v) ? md_sensitive_mode_parse(json_string_value(v)) : -1;
    if (mode < 0)
        return md_buf_say(why, MD_R_LIMITS_SENSITIVE);
    *out = mode;
    return MD_OK;
}

/* "expire_after" (optional: absent, the tenant's window is left as it is):
 * a duration, "off" (0) or null (-1: none of its own). */
static enum md_err expire_of(json_t *v, struct md_cmd *cmd, struct md_buf *why)
{
    cmd->expire_given = v != NULL;
    cmd->expire_ms = -1;
    if (!v || json_is_null(v))
        return MD_OK;
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    size_t n = s ? json_string_length(v) : 0;
    if (s && n == 3 && memcmp(s, "off", 3) == 0) {
        cmd->expire_ms = 0;
        return MD_OK;
    }
    if (!s || md_duration_parse(s, n, &cmd->expire_ms) != 0)
        return md_buf_say(why, MD_R_LIMITS_EXPIRE);
    return MD_OK;
}

/* Parse {"max_bytes": N|null, "max_files": N|null[, "sensitive": M|null][, "expire_after":
 * D|"off"|null]} into r->cmd. */
static enum md_err parse_limits(struct req *r, struct md_buf *why)
{
    json_error_t jerr;
    json_t *root =
        json_loadb(r->body.data ? r->body.data : "", r->body.len, JSON_REJECT_DUPLICATES, &jerr);
    enum md_err e;
    if (!root || !json_is_object(root))
        e = md_buf_say(why, MD_R_LIMITS_BODY);
    else
        e = unknown_field(root, why);
    if (!e)
        e = limit_of(json_object_get(root, "max_bytes"), "max_bytes", &r->cmd.max_bytes, why);
    if (!e)
        e = limit_of(json_object_get(root, "max_files"), "max_files", &r->cmd.max_files, why);
    if (!e)
        e = sensitive_of(json_object_get(root, "sensitive"), &r->cmd.sensitive, why);
    if (!e)
        e = expire_of(json_object_get(root, "expire_after"), &r->cmd, why);
    json_decref(root);
    return e;
}

/* A command of the writer's own (no body to parse): `kind`. */
static void own_command(struct req *r, enum md_cmd_kind kind, int write)
{
    r->cmd.kind = kind;
    r->cmd.name = md_cmd_kind_name(kind);
    r->cmd.write = write;
}

enum MHD_Result md_http_tenant_limits(struct req *r)
{
    enum MHD_Result ret;
    if (tenant_of_path(r, &ret) != 0)
        return ret;
    struct md_buf why;
    md_buf_init(&why, 256);
    enum md_err e = parse_limits(r, &why);
    md_http_body_drop(r);
    if (e) {
        ret = md_reply_error(r, e, why.data ? why.data : "", why.len);
        md_buf_free(&why);
        return ret;
    }
    md_buf_free(&why);
    own_command(r, MD_CMD_LIMITS, 0);
    return md_http_submit(r);
}

/* ---- GET /v1/tenants/{t} ---- */

enum MHD_Result md_http_tenant_get(struct req *r)
{
    enum MHD_Result ret;
    if (tenant_of_path(r, &ret) != 0 || md_http_tenant_readable(r, &ret) != 0)
        return ret;
    struct md_txn *t;
    enum md_err e = md_store_read_begin(r->h->store, &t);
    struct md_usage u;
    int sensitive = -1;
    int64_t own = -1;
    if (!e) {
        e = md_txn_usage(t, r->tenant, &u);
        if (!e)
            e = md_txn_sensitive_get(t, r->tenant, &sensitive);
        if (!e)
            e = md_txn_expiry_get(t, r->tenant, &own);
        md_txn_end(t);
    }
    struct md_buf json;
    md_buf_init(&json, OUT_LIMIT);
    if (!e)
        e = md_quota_json(&json, r->tenant, &u, sensitive, r->h->limits, own);
    if (e) {
        md_buf_free(&json);
        return md_http_storage_error(r, e);
    }
    return md_reply_json(r, 200, &json);
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
                               : md_json_put_time(tl->json, ti->last_write);
    if (!e)
        e = md_buf_puts(tl->json, "}");
    snprintf(tl->last, sizeof tl->last, "%s", ti->name);
    tl->n++;
    tl->err = e;
    return e != MD_OK;
}

enum MHD_Result md_http_tenants_list(struct req *r)
{
    enum MHD_Result ret;
    int64_t limit;
    if (md_http_int_arg(r, "limit", 1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT, &limit, &ret))
        return ret;
    const char *after = md_http_arg(r, "cursor");
    if (after && !md_tenant_valid(after, strlen(after)))
        return md_reply_errorf(r, MD_R_TENANT_CURSOR);
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
        return md_http_storage_error(r, e);
    }
    return md_reply_json(r, 200, &json);
}

/* ---- DELETE /v1/tenants/{t} ---- */

enum MHD_Result md_http_tenant_erase(struct req *r)
{
    enum MHD_Result ret;
    if (tenant_of_path(r, &ret) != 0)
        return ret;
    md_http_body_drop(r);
    own_command(r, MD_CMD_ERASE, 0);
    return md_http_submit(r);
}

/* ---- GET /v1/tenants/{t}/export ---- */

enum MHD_Result md_http_tenant_export(struct req *r)
{
    enum MHD_Result ret;
    if (tenant_of_path(r, &ret) != 0 || md_http_tenant_readable(r, &ret) != 0)
        return ret;
    return md_http_export(r);
}

/* ---- POST /v1/tenants/{t}/import ---- */

enum MHD_Result md_http_tenant_import(struct req *r)
{
    enum MHD_Result ret;
    if (tenant_of_path(r, &ret) != 0)
        return ret;
    const char *mode = md_http_arg(r, "mode");
    static const char *const modes[] = {"new", "replace", "merge"};
    int m = mode ? -1 : MD_IMPORT_NEW;
    for (int i = 0; mode && i < 3; i++)
        if (strcmp(mode, modes[i]) == 0)
            m = i;
    if (m < 0)
        return md_reply_errorf(r, MD_R_IMPORT_MODE);
    if (r->spool_fd < 0)
        return md_reply_errorf(r, MD_R_IMPORT_EMPTY);
    own_command(r, MD_CMD_IMPORT, 1);
    r->cmd.import_fd = r->spool_fd;
    r->cmd.import_mode = m;
    r->cmd.path.canon = strdup(MD_ROOT);
    if (!r->cmd.path.canon)
        return MHD_NO;
    r->cmd.path.canon_len = MD_ROOT_LEN;
    r->cmd.path.raw = (struct md_str){MD_ROOT, MD_ROOT_LEN};
    /* X-Memory-Actor is recorded with the versions; no preconditions. */
    if (md_http_write_headers(r, NULL, 0, &r->out) != MD_OK)
        return md_reply_error(r, MD_EINVAL, r->out.data, r->out.len);
    if (r->job.idem_key || md_precond_given(&r->cmd.pre))
        return md_reply_errorf(r, MD_R_IMPORT_HEADERS);
    /* The archive checked here, on this thread: the writer gets only an
     * archive it can write (md_import.h). */
    enum md_err e = md_import_check(r->h->store, r->tenant, &r->cmd, r->h->limits, &r->out);
    if (e == MD_EDB || e == MD_ENOMEM || e == MD_EBUSY || e == MD_EUNAVAIL) {
        r->err = md_storage_class(e);
        md_buf_reset(&r->out);
        md_buf_puts(&r->out, md_storage_text(r->err));
    } else {
        r->err = e;
    }
    return e ? md_reply_result(r) : md_http_submit(r);
}

/* ---- GET /v1/tenants/{t}/secrets ---- */

/* Files and versions per page. */
#define SECRETS_LIMIT_DEFAULT 1000
#define SECRETS_LIMIT_MAX     10000

/* The cursor: "f:" and the last path scanned (canonical), or "v:" and the
 * last version scanned; into *pos. 0, or -1 when it is not one. */
static int secrets_cursor(struct req *r, const char *c, struct md_scan_pos *pos)
{
    if (strncmp(c, "v:", 2) == 0) {
        char *end;
        long long v = strtoll(c + 2, &end, 10);
        if (c[2] < '0' || c[2] > '9' || *end || v < 0 || v > LIMIT_MAX)
            return -1;
        pos->phase = MD_SCAN_VERSIONS;
        pos->version = v;
        return 0;
    }
    if (strncmp(c, "f:", 2) != 0)
        return -1;
    size_t len = strlen(c + 2), clen = 0;
    char *canon = malloc(len + MD_ROOT_LEN + 2);
    if (!canon || md_path_canon(c + 2, len, &r->h->limits->path, canon, &clen) != MD_PATH_OK ||
        clen != len || memcmp(canon, c + 2, len) != 0) {
        free(canon);
        return -1;
    }
    pos->path = canon;
    pos->path_len = clen;
    return 0;
}

struct secrets_out {
    struct md_buf *json;
    size_t n;
    enum md_err err;
};

static int secret_found(void *ctx, const struct md_scan_finding *f)
{
    struct secrets_out *so = ctx;
    so->err = md_buf_puts(so->json, so->n++ ? "," : "");
    if (!so->err)
        so->err = md_scan_finding_json(so->json, NULL, f);
    return so->err != MD_OK;
}

enum MHD_Result md_http_tenant_secrets(struct req *r)
{
    enum MHD_Result ret;
    int64_t limit;
    if (tenant_of_path(r, &ret) != 0 || md_http_tenant_readable(r, &ret) != 0 ||
        md_http_int_arg(r, "limit", 1, SECRETS_LIMIT_MAX, SECRETS_LIMIT_DEFAULT, &limit, &ret))
        return ret;
    struct md_scan_pos pos = {0};
    const char *cursor = md_http_arg(r, "cursor");
    if (cursor && secrets_cursor(r, cursor, &pos) != 0)
        return md_reply_errorf(r, MD_R_SECRETS_CURSOR);
    struct md_buf json;
    md_buf_init(&json, OUT_LIMIT);
    struct secrets_out so = {&json, 0, MD_OK};
    struct md_scan_counts n = {0, 0, 0};
    enum md_err e = md_buf_puts(&json, "{\"tenant\":");
    if (!e)
        e = md_json_put_string(&json, r->tenant, strlen(r->tenant));
    if (!e)
        e = md_buf_puts(&json, ",\"findings\":[");
    struct md_txn *t = NULL;
    if (!e)
        e = md_store_snapshot_begin(r->h->store, &t);
    if (!e)
        e = md_scan_page(t, r->h->limits->sensitive, r->tenant, (size_t)limit, &pos, &n,
                         secret_found, &so);
    if (t)
        md_txn_end(t);
    if (!e)
        e = so.err;
    if (!e)
        e = md_buf_printf(&json,
                          "],\"files_scanned\":%lld,\"versions_scanned\":%lld,\"next_cursor\":",
                          (long long)n.files, (long long)n.versions);
    if (!e && pos.phase == MD_SCAN_FILES) {
        struct md_buf c;
        md_buf_init(&c, pos.path_len + 3);
        e = md_buf_puts(&c, "f:");
        if (!e)
            e = md_buf_append(&c, pos.path, pos.path_len);
        if (!e)
            e = md_json_put_string(&json, c.data, c.len);
        md_buf_free(&c);
    } else if (!e) {
        e = pos.phase == MD_SCAN_VERSIONS
                ? md_buf_printf(&json, "\"v:%lld\"", (long long)pos.version)
                : md_buf_puts(&json, "null");
    }
    if (!e)
        e = md_buf_puts(&json, "}");
    md_scan_pos_free(&pos);
    if (e) {
        md_buf_free(&json);
        return md_http_storage_error(r, e);
    }
    return md_reply_json(r, 200, &json);
}
