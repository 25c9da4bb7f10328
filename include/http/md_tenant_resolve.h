/*
 * md_tenant_resolve.h — the one place where a request's tenant is decided.
 *
 * Input: the client's address, how many times the tenant header occurred
 * and its (first) value.
 * Output: the tenant id in `out` (NUL-terminated, at most MD_TENANT_MAX
 * bytes); or MD_EFORBIDDEN when trusted proxies are configured and the
 * client is not one of them, MD_EINVAL for a missing or bad header, with
 * the client-facing text in `msg`.
 * A later authentication layer plugs in here: it decides the tenant from
 * credentials before this header rule applies.
 */
#ifndef MD_TENANT_RESOLVE_H
#define MD_TENANT_RESOLVE_H

#include <stddef.h>
#include <sys/socket.h>

#include "base/md_buf.h"
#include "base/md_tenant.h"
#include "http/md_http.h"

enum md_err md_tenant_resolve(const struct md_http_config *cfg, const struct sockaddr *peer,
                              unsigned count, const char *value, size_t len,
                              char out[MD_TENANT_MAX + 1], struct md_buf *msg);

#endif
