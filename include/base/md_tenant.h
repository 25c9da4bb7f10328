/*
 * md_tenant.h — what a tenant's name may be: 1 to MD_TENANT_MAX bytes of
 * [A-Za-z0-9._-] (src/base/tenant.c). Every layer names tenants by this
 * string; how a request's tenant is decided is the HTTP front's
 * (http/md_tenant_resolve.h).
 */
#ifndef MD_TENANT_H
#define MD_TENANT_H

#include <stddef.h>

#define MD_TENANT_MAX 128

/* True when s[0..n) is a valid tenant name. */
int md_tenant_valid(const char *s, size_t n);

#endif
