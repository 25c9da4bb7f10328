/* uses.c — files' last uses kept in memory (see md_uses.h). */
#include "cmd/md_uses.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* How many buckets the clock looks at for a file to drop, at most. */
#define EVICT_LOOK 64

struct use_entry {
    struct use_entry *next;
    uint64_t hash;
    int64_t used;   /* last use seen here */
    int64_t stored; /* the last use handed out to be written (0: none) */
    int dirty;      /* `used` is to be written back */
    size_t tlen, plen;
    char key[]; /* tenant, NUL, path, NUL */
};

struct md_uses {
    pthread_mutex_t mu;
    struct use_entry **buckets;
    size_t nbuckets, n, cap, dirty, hand;
    int64_t granularity;
    unsigned long long dropped;
};

static uint64_t hash_of(const char *tenant, size_t tlen, const char *path, size_t plen)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < tlen; i++)
        h = (h ^ (unsigned char)tenant[i]) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;
    for (size_t i = 0; i < plen; i++)
        h = (h ^ (unsigned char)path[i]) * 1099511628211ull;
    return h;
}

struct md_uses *md_uses_new(size_t cap, int64_t granularity_ms)
{
    struct md_uses *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    u->cap = cap ? cap : 1;
    u->nbuckets = 1;
    while (u->nbuckets < u->cap)
        u->nbuckets *= 2;
    u->buckets = calloc(u->nbuckets, sizeof(struct use_entry *));
    if (!u->buckets) {
        free(u);
        return NULL;
    }
    u->granularity = granularity_ms;
    pthread_mutex_init(&u->mu, NULL);
    return u;
}

void md_uses_free(struct md_uses *u)
{
    if (!u)
        return;
    for (size_t b = 0; b < u->nbuckets; b++)
        for (struct use_entry *e = u->buckets[b], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    free(u->buckets);
    pthread_mutex_destroy(&u->mu);
    free(u);
}

/* The entry of (tenant, path) and the link that points to it (mu held). */
static struct use_entry **find(struct md_uses *u, uint64_t h, const char *tenant, size_t tlen,
                               const char *path, size_t plen)
{
    struct use_entry **p = &u->buckets[h & (u->nbuckets - 1)];
    for (; *p; p = &(*p)->next) {
        const struct use_entry *e = *p;
        if (e->hash == h && e->tlen == tlen && e->plen == plen &&
            memcmp(e->key, tenant, tlen) == 0 && memcmp(e->key + tlen + 1, path, plen) == 0)
            return p;
    }
    return p;
}

/* Drop one file whose use is written (mu held): 0, or -1 when the clock
 * found none. */
static int evict(struct md_uses *u)
{
    for (size_t look = 0; look < EVICT_LOOK; look++) {
        size_t b = u->hand++ & (u->nbuckets - 1);
        for (struct use_entry **p = &u->buckets[b]; *p; p = &(*p)->next)
            if (!(*p)->dirty) {
                struct use_entry *e = *p;
                *p = e->next;
                free(e);
                u->n--;
                return 0;
            }
    }
    return -1;
}

/* Set e's last use to `when` (at least), dirty when it is to be written
 * (mu held). */
static void touch(struct md_uses *u, struct use_entry *e, int64_t when)
{
    if (when > e->used)
        e->used = when;
    if (!e->dirty && e->used - e->stored >= u->granularity) {
        e->dirty = 1;
        u->dirty++;
    }
}

/* The entry of (tenant, path), made when missing (mu held); NULL when
 * there is no room. */
static struct use_entry *entry_of(struct md_uses *u, const char *tenant, const char *path,
                                  size_t len)
{
    size_t tlen = strlen(tenant);
    uint64_t h = hash_of(tenant, tlen, path, len);
    struct use_entry *found = *find(u, h, tenant, tlen, path, len);
    if (found)
        return found;
    if (u->n >= u->cap && evict(u) != 0)
        return NULL;
    struct use_entry *e = malloc(sizeof *e + tlen + len + 2);
    if (!e)
        return NULL;
    *e = (struct use_entry){NULL, h, 0, 0, 0, tlen, len};
    memcpy(e->key, tenant, tlen + 1);
    memcpy(e->key + tlen + 1, path, len);
    e->key[tlen + 1 + len] = '\0';
    /* The chain's end found again: eviction may have changed it. */
    struct use_entry **p = find(u, h, tenant, tlen, path, len);
    *p = e;
    u->n++;
    return e;
}

void md_uses_record(struct md_uses *u, const char *tenant, const char *path, size_t len,
                    int64_t now_ms)
{
    pthread_mutex_lock(&u->mu);
    struct use_entry *e = entry_of(u, tenant, path, len);
    if (e)
        touch(u, e, now_ms);
    else
        u->dropped++;
    pthread_mutex_unlock(&u->mu);
}

int64_t md_uses_last(struct md_uses *u, const char *tenant, const char *path, size_t len)
{
    size_t tlen = strlen(tenant);
    uint64_t h = hash_of(tenant, tlen, path, len);
    pthread_mutex_lock(&u->mu);
    struct use_entry *e = *find(u, h, tenant, tlen, path, len);
    int64_t used = e ? e->used : 0;
    pthread_mutex_unlock(&u->mu);
    return used;
}

size_t md_uses_take(struct md_uses *u, struct md_use *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&u->mu);
    for (size_t b = 0; u->dirty && n < max && b < u->nbuckets; b++)
        for (struct use_entry *e = u->buckets[b]; e && n < max; e = e->next) {
            if (!e->dirty)
                continue;
            char *tenant = strdup(e->key), *path = strdup(e->key + e->tlen + 1);
            if (!tenant || !path) {
                free(tenant);
                free(path);
                goto out;
            }
            out[n++] = (struct md_use){tenant, path, e->plen, e->used};
            e->stored = e->used;
            e->dirty = 0;
            u->dirty--;
        }
out:
    pthread_mutex_unlock(&u->mu);
    return n;
}

void md_uses_untake(struct md_uses *u, const struct md_use *v, size_t n)
{
    pthread_mutex_lock(&u->mu);
    for (size_t i = 0; i < n; i++) {
        struct use_entry *e = entry_of(u, v[i].tenant, v[i].path, v[i].len);
        if (!e)
            continue;
        e->stored = 0;
        touch(u, e, v[i].used_ms);
    }
    pthread_mutex_unlock(&u->mu);
}

void md_use_free(struct md_use *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].tenant);
        free(v[i].path);
    }
}

unsigned long long md_uses_dropped(struct md_uses *u)
{
    pthread_mutex_lock(&u->mu);
    unsigned long long d = u->dropped;
    pthread_mutex_unlock(&u->mu);
    return d;
}
