/* tenant_cache.c — tenant ids by name, per connection (see md_tenant_cache.h). */
#include "md_tenant_cache.h"

#include <stdlib.h>
#include <string.h>

#define SLOTS    64  /* power of two */
#define NAME_MAX 128 /* longer names are not cached */

struct slot {
    int64_t id; /* 0: empty */
    char name[NAME_MAX + 1];
};

struct md_tenant_cache {
    struct slot s[SLOTS];
};

struct md_tenant_cache *md_tenant_cache_new(void)
{
    return calloc(1, sizeof(struct md_tenant_cache));
}

void md_tenant_cache_free(struct md_tenant_cache *c)
{
    free(c);
}

void md_tenant_cache_clear(struct md_tenant_cache *c)
{
    if (c)
        memset(c->s, 0, sizeof c->s);
}

/* The slot of a name (FNV-1a), or NULL when it is too long to keep. */
static struct slot *slot_of(const struct md_tenant_cache *c, const char *name)
{
    size_t len = strlen(name);
    if (len > NAME_MAX)
        return NULL;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)name[i]) * 16777619u;
    return (struct slot *)&c->s[h & (SLOTS - 1)];
}

int64_t md_tenant_cache_get(const struct md_tenant_cache *c, const char *name)
{
    const struct slot *s = slot_of(c, name);
    return s && s->id && strcmp(s->name, name) == 0 ? s->id : 0;
}

void md_tenant_cache_put(struct md_tenant_cache *c, const char *name, int64_t id)
{
    struct slot *s = slot_of(c, name);
    if (!s)
        return;
    memcpy(s->name, name, strlen(name) + 1); /* slot_of() checked the length */
    s->id = id;
}
