/* tenant_resolve.c — deciding the tenant of a request (see md_tenant_resolve.h). */
#include "http/md_tenant_resolve.h"

#include <string.h>

enum md_err md_tenant_resolve(const struct md_config *cfg, const struct sockaddr *peer,
                              unsigned count, const char *value, size_t len,
                              char out[MD_TENANT_MAX + 1], struct md_buf *msg)
{
    enum md_err e;
    if (cfg->trusted_proxies.n > 0 && !md_cidr_list_match(&cfg->trusted_proxies, peer)) {
        char addr[46];
        md_sockaddr_text(peer, addr);
        e = md_buf_printf(msg,
                          "Error: Forbidden: %s is not a trusted proxy; send requests through "
                          "the proxy",
                          addr);
        return e ? e : MD_EFORBIDDEN;
    }
    if (count > 1) {
        e = md_buf_printf(msg, "Error: The %s header was sent more than once", cfg->tenant_header);
        return e ? e : MD_EINVAL;
    }
    if (count == 0) {
        if (cfg->require_tenant) {
            e = md_buf_printf(msg, "Error: Missing %s header: this server requires a tenant",
                              cfg->tenant_header);
            return e ? e : MD_EINVAL;
        }
        value = cfg->default_tenant;
        len = strlen(value);
    }
    if (!md_tenant_valid(value, len)) {
        e = md_buf_printf(msg,
                          "Error: Invalid %s header: a tenant id is 1 to %d characters of "
                          "A-Z, a-z, 0-9, '.', '_' and '-'",
                          cfg->tenant_header, MD_TENANT_MAX);
        return e ? e : MD_EINVAL;
    }
    memcpy(out, value, len);
    out[len] = '\0';
    return MD_OK;
}
