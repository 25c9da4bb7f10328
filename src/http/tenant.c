/* tenant.c — a request's tenant, decided once (see internal.h and
 * md_tenant_resolve.h), or the request refused in its route's envelope. */
#include "http/md_tenant_resolve.h"
#include "internal.h"

int md_http_unreadable(struct req *r)
{
    /* Where an import commits in steps (md_writer.h), what it wrote so far
     * is not shown: its tenant's reads wait for its end too. */
    return !(md_store_caps(r->h->store) & MD_STORE_CAP_IMPORT_APART) &&
           md_writer_importing(r->h->writer, r->tenant);
}

int md_http_tenant_readable(struct req *r, enum MHD_Result *ret)
{
    if (!md_http_unreadable(r))
        return 0;
    *ret = md_reply_refuse(r, MD_R_TENANT_IMPORTING, r->tenant);
    return -1;
}

int md_http_tenant(struct req *r, enum MHD_Result *ret)
{
    if (r->tenant[0])
        return 0;
    const struct header_seen *th = &r->headers.tenant;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    struct md_buf msg;
    md_buf_init(&msg, OUT_LIMIT);
    enum md_err e = md_tenant_resolve(r->h->cfg, ci ? ci->client_addr : NULL, th->count, th->value,
                                      th->len, r->tenant, &msg);
    if (e) {
        r->tenant[0] = '\0';
        *ret = md_reply_refuse(r, e, "%s", msg.data ? msg.data : "");
    }
    md_buf_free(&msg);
    return e ? -1 : 0;
}
