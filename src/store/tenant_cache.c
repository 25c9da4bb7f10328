/* tenant_cache.c — tenant ids by name, per connection (see md_tenant_cache.h). */
#include "store/md_tenant_cache.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS    64  /* power of two */
#define NAME_MAX 128 /* longer names are not cached */

struct slot {
    int64_t id; /* 0: empty */
    char name[NAME_MAX + 1];
};

struct md_tenant_cache {
    unsigned long epoch; /* the erasure epoch its ids were looked up in */
    struct slot s[SLOTS];
};

/* Bumped after every committed tenant erasure (md_tenant_cache_forget). */
static atomic_ulong erasures;

void md_tenant_cache_forget(void)
{
    atomic_fetch_add_explicit(&erasures, 1, memory_order_acq_rel);
}

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

int64_t md_tenant_cache_get(struct md_tenant_cache *c, const char *name)
{
    unsigned long now = atomic_load_explicit(&erasures, memory_order_acquire);
    if (c->epoch != now) {
        md_tenant_cache_clear(c);
        c->epoch = now;
        return 0;
    }
    const struct slot *s = slot_of(c, name);
    return s && s->id && strcmp(s->name, name) == 0 ? s->id : 0;
}

void md_tenant_cache_put(struct md_tenant_cache *c, const char *name, int64_t id)
{
    struct slot *s = slot_of(c, name);
    /* Looked up before an erasure that has committed since: maybe gone. */
    if (!s || c->epoch != atomic_load_explicit(&erasures, memory_order_acquire))
        return;
    memcpy(s->name, name, strlen(name) + 1); /* slot_of() checked the length */
    s->id = id;
}

void md_tenant_cache_drop(struct md_tenant_cache *c, const char *name)
{
    struct slot *s = slot_of(c, name);
    if (s && strcmp(s->name, name) == 0)
        s->id = 0;
}
