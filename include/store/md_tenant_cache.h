/*
 * md_tenant_cache.h — tenant ids a database connection has looked up, by
 * name, for any engine.
 *
 * A tenant row is never changed by memoryd and a reader only sees
 * committed rows, so a reader may keep what it found, until a tenant is
 * erased (DELETE /v1/tenants/{t}): the writer then calls
 * md_tenant_cache_forget() after the commit, and every cache of the
 * process empties itself at its next md_tenant_cache_get() (an id looked
 * up before that call is not kept by md_tenant_cache_put()). Other
 * processes on the same database are not told (see docs/behaviour.md). A writer may see
 * a tenant that its open transaction created, which a rollback undoes (and
 * its id may be reused): it empties its cache on any rollback or failed
 * commit.
 *
 * Ownership: md_tenant_cache_new() allocates, md_tenant_cache_free() frees.
 * Not thread-safe (one per connection).
 */
#ifndef MD_TENANT_CACHE_H
#define MD_TENANT_CACHE_H

#include <stdint.h>

struct md_tenant_cache;

struct md_tenant_cache *md_tenant_cache_new(void);
void md_tenant_cache_free(struct md_tenant_cache *c);
void md_tenant_cache_clear(struct md_tenant_cache *c);

/* The id cached for `name`, or 0 (ids are positive). */
int64_t md_tenant_cache_get(struct md_tenant_cache *c, const char *name);

/* Forget `name` (a lookup found no such tenant). */
void md_tenant_cache_drop(struct md_tenant_cache *c, const char *name);

/* A tenant was erased (after its commit): every cache of the process
 * forgets everything (thread-safe). */
void md_tenant_cache_forget(void);

/* Remember `name` -> `id` (a name over 128 bytes is not kept). */
void md_tenant_cache_put(struct md_tenant_cache *c, const char *name, int64_t id);

#endif
