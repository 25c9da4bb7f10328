/* limits.c — the writer's part of tenant administration:
 * PUT /v1/tenants/{t}/limits (set a tenant's quota overrides and its
 * --sensitive override, md_sensitive_modes.h, and its expiry window,
 * md_expiry.h, and answer with its usage, md_quota.h) and DELETE
 * /v1/tenants/{t} (erase the tenant, md_txn_erase). */
#include <string.h>

#include "base/md_json.h"
#include "base/md_refusals.h"
#include "cmd/md_quota.h"
#include "internal.h"

enum md_err cmd_limits(struct cmd_ctx *c)
{
    enum md_err e = md_txn_set_limits(c->t, c->tenant, c->cmd->max_bytes, c->cmd->max_files);
    int sensitive = c->cmd->sensitive;
    if (!e && sensitive != -2)
        e = md_txn_sensitive_set(c->t, c->tenant, sensitive);
    else if (!e)
        e = md_txn_sensitive_get(c->t, c->tenant, &sensitive);
    if (!e && c->cmd->expire_given)
        e = md_txn_expiry_set(c->t, c->tenant, c->cmd->expire_ms);
    struct md_usage u;
    int64_t own = -1;
    if (!e)
        e = md_txn_usage(c->t, c->tenant, &u);
    if (!e)
        e = md_txn_expiry_get(c->t, c->tenant, &own);
    if (!e)
        e = md_quota_json(c->out, c->tenant, &u, sensitive, c->lim, own);
    return e;
}

/* Answer: {"tenant":T,"erased":{"entries":N,"versions":N,"changes":N,
 * "idempotency_keys":N,"api_keys":N}}; MD_ENOENT with a text for a tenant without a
 * row. */
enum md_err cmd_erase(struct cmd_ctx *c)
{
    struct md_erased n;
    enum md_err e = md_txn_erase(c->t, c->tenant, &n);
    if (e == MD_ENOENT) {
        md_buf_reset(c->out);
        return md_buf_say(c->out, MD_R_NO_SUCH_TENANT, c->tenant);
    }
    if (!e)
        e = md_buf_puts(c->out, "{\"tenant\":");
    if (!e)
        e = md_json_put_string(c->out, c->tenant, strlen(c->tenant));
    if (!e)
        e = md_buf_printf(c->out,
                          ",\"erased\":{\"entries\":%lld,\"versions\":%lld,\"changes\":%lld,"
                          "\"idempotency_keys\":%lld,\"api_keys\":%lld}}",
                          (long long)n.entries, (long long)n.versions, (long long)n.changes,
                          (long long)n.idempotency, (long long)n.api_keys);
    return e;
}
