/*
 * md_tenant_cache.h — tenant ids a database connection has looked up, by
 * name, for any backend.
 *
 * A tenant row is never changed or deleted by memoryd and a reader only
 * sees committed rows, so a reader may keep what it found. A writer may see
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
int64_t md_tenant_cache_get(const struct md_tenant_cache *c, const char *name);

/* Remember `name` -> `id` (a name over 128 bytes is not kept). */
void md_tenant_cache_put(struct md_tenant_cache *c, const char *name, int64_t id);

#endif
