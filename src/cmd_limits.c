/* cmd_limits.c — PUT /v1/tenants/{t}/limits, run by the writer: set a
 * tenant's quota overrides and answer with its usage (md_quota.h). */
#include "cmd_internal.h"
#include "md_quota.h"

enum md_err cmd_limits(struct cmd_ctx *c)
{
    enum md_err e = md_txn_set_limits(c->t, c->tenant, c->cmd->max_bytes, c->cmd->max_files);
    struct md_usage u;
    if (!e)
        e = md_txn_usage(c->t, c->tenant, &u);
    if (!e)
        e = md_quota_json(c->out, c->tenant, &u, c->lim);
    return e;
}
