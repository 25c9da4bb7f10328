/* tenant_resolve.c — deciding the tenant of a request (see md_tenant_resolve.h). */
#include "http/md_tenant_resolve.h"

#include <string.h>

#include "base/md_refusals.h"

enum md_err md_tenant_resolve(const struct md_http_config *cfg, const struct sockaddr *peer,
                              unsigned count, const char *value, size_t len,
                              char out[MD_TENANT_MAX + 1], struct md_buf *msg)
{
    if (cfg->trusted_proxies.n > 0 && !md_cidr_list_match(&cfg->trusted_proxies, peer)) {
        char addr[46];
        md_sockaddr_text(peer, addr);
        return md_buf_say(msg, MD_R_NOT_TRUSTED_PROXY, addr);
    }
    if (count > 1)
        return md_buf_say(msg, MD_R_TENANT_HEADER_TWICE, cfg->tenant_header);
    if (count == 0) {
        if (cfg->require_tenant)
            return md_buf_say(msg, MD_R_TENANT_HEADER_MISSING, cfg->tenant_header);
        value = cfg->default_tenant;
        len = strlen(value);
    }
    if (!md_tenant_valid(value, len))
        return md_buf_say(msg, MD_R_TENANT_HEADER_INVALID, cfg->tenant_header, MD_TENANT_MAX);
    memcpy(out, value, len);
    out[len] = '\0';
    return MD_OK;
}
