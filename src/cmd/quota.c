/* quota.c — per-tenant quotas (see md_quota.h). */
#include "cmd/md_quota.h"

#include <stdio.h>
#include <string.h>

#include "base/md_json.h"
#include "base/md_refusals.h"
#include "cmd/md_expiry.h"
#include "cmd/md_sensitive.h"

int64_t md_quota_max_bytes(const struct md_usage *u, const struct md_limits *lim)
{
    return u->max_bytes >= 0 ? u->max_bytes : (int64_t)lim->tenant_max_bytes;
}

int64_t md_quota_max_files(const struct md_usage *u, const struct md_limits *lim)
{
    return u->max_files >= 0 ? u->max_files : (int64_t)lim->tenant_max_files;
}

void md_quota_size(int64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"KiB", "MiB", "GiB"};
    if (bytes < 1024) {
        snprintf(buf, len, "%lld byte%s", (long long)bytes, bytes == 1 ? "" : "s");
        return;
    }
    int u = 0;
    int64_t unit = 1024;
    while (u < 2 && bytes >= unit * 1024) {
        unit *= 1024;
        u++;
    }
    int64_t whole = bytes / unit;
    if (bytes % unit == 0) {
        snprintf(buf, len, "%lld %s", (long long)whole, units[u]);
        return;
    }
    /* One decimal, rounded down: the remainder's tenths. */
    int64_t tenth = (bytes % unit) * 10 / unit;
    snprintf(buf, len, "%lld.%lld %s", (long long)whole, (long long)tenth, units[u]);
}

enum md_err md_quota_check(struct md_txn *t, const char *tenant, const struct md_limits *lim,
                           int64_t add_bytes, int64_t add_files, struct md_buf *out)
{
    if (add_bytes <= 0 && add_files <= 0)
        return MD_OK;
    struct md_usage u;
    enum md_err e = md_txn_usage(t, tenant, &u);
    if (e)
        return e;
    int64_t max_files = md_quota_max_files(&u, lim), max_bytes = md_quota_max_bytes(&u, lim);
    if (add_files > 0 && max_files > 0 && u.files + add_files > max_files) {
        md_buf_reset(out);
        return md_buf_say(out, MD_R_QUOTA_FILES, (long long)u.files, (long long)max_files);
    }
    if (add_bytes > 0 && max_bytes > 0 && u.bytes + add_bytes > max_bytes) {
        char used[32], limit[32];
        md_quota_size(u.bytes, used, sizeof used);
        md_quota_size(max_bytes, limit, sizeof limit);
        md_buf_reset(out);
        return md_buf_say(out, MD_R_QUOTA_BYTES, used, limit);
    }
    return MD_OK;
}

static enum md_err put_override(struct md_buf *out, const char *name, int64_t v)
{
    return v < 0 ? md_buf_printf(out, "\"%s\":null", name)
                 : md_buf_printf(out, "\"%s\":%lld", name, (long long)v);
}

enum md_err md_quota_json(struct md_buf *out, const char *tenant, const struct md_usage *u,
                          int sensitive, const struct md_limits *lim, int64_t expire_own)
{
    const char *own = md_sensitive_mode_name(sensitive);
    const char *in_force = own ? own : md_sensitive_mode_name(md_sensitive_mode(lim->sensitive));
    enum md_err e = md_buf_puts(out, "{\"tenant\":");
    if (!e)
        e = md_json_put_string(out, tenant, strlen(tenant));
    if (!e)
        e = md_buf_printf(out,
                          ",\"bytes\":%lld,\"files\":%lld,\"limits\":{\"max_bytes\":%lld,"
                          "\"max_files\":%lld,\"sensitive\":\"%s\",",
                          (long long)u->bytes, (long long)u->files,
                          (long long)md_quota_max_bytes(u, lim),
                          (long long)md_quota_max_files(u, lim), in_force);
    if (!e)
        e = md_expiry_json_field(out, md_expiry_window(expire_own, lim), NULL);
    if (!e)
        e = md_buf_puts(out, "},\"overrides\":{");
    if (!e)
        e = put_override(out, "max_bytes", u->max_bytes);
    if (!e)
        e = md_buf_puts(out, ",");
    if (!e)
        e = put_override(out, "max_files", u->max_files);
    if (!e)
        e = own ? md_buf_printf(out, ",\"sensitive\":\"%s\",", own)
                : md_buf_puts(out, ",\"sensitive\":null,");
    if (!e)
        e = md_expiry_json_field(out, expire_own, "off");
    if (!e)
        e = md_buf_puts(out, "}}");
    return e;
}
