/* dirsizes.c — pending directory size changes (see md_dirsizes.h). */
#include "store/md_dirsizes.h"

#include <stdlib.h>
#include <string.h>

struct size_delta {
    int64_t tenant;
    uint64_t hash;
    int64_t delta;
    size_t path_off, path_len; /* in paths */
};

struct md_dirsizes {
    struct size_delta d[MD_DIRSIZES_SLOTS];
    size_t n;
    char *paths; /* the paths of d[], one after another */
    size_t paths_len, paths_cap;
    /* At the last savepoint: how many entries there were, and their deltas. */
    size_t saved_n, saved_paths_len;
    int64_t saved_delta[MD_DIRSIZES_SLOTS];
};

struct md_dirsizes *md_dirsizes_new(void)
{
    return calloc(1, sizeof(struct md_dirsizes));
}

void md_dirsizes_free(struct md_dirsizes *z)
{
    if (!z)
        return;
    free(z->paths);
    free(z);
}

void md_dirsizes_reset(struct md_dirsizes *z)
{
    if (z)
        z->n = z->paths_len = z->saved_n = z->saved_paths_len = 0;
}

static uint64_t hash_of(int64_t tenant, const char *path, size_t len)
{
    uint64_t h = 14695981039346656037u ^ (uint64_t)tenant;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)path[i]) * 1099511628211u;
    return h;
}

static struct size_delta *find(const struct md_dirsizes *z, int64_t tenant, const char *path,
                               size_t len, uint64_t hash)
{
    for (size_t i = 0; i < z->n; i++) {
        const struct size_delta *d = &z->d[i];
        if (d->hash == hash && d->tenant == tenant && d->path_len == len &&
            memcmp(z->paths + d->path_off, path, len) == 0)
            return (struct size_delta *)d;
    }
    return NULL;
}

int md_dirsizes_add(struct md_dirsizes *z, int64_t tenant, const char *path, size_t len,
                    int64_t delta)
{
    uint64_t hash = hash_of(tenant, path, len);
    struct size_delta *d = find(z, tenant, path, len, hash);
    if (d) {
        d->delta += delta;
        return 0;
    }
    if (z->n == MD_DIRSIZES_SLOTS)
        return -1;
    if (z->paths_cap - z->paths_len < len) {
        size_t cap = z->paths_cap ? z->paths_cap : 4096;
        while (cap - z->paths_len < len)
            cap *= 2;
        char *p = realloc(z->paths, cap);
        if (!p)
            return -1;
        z->paths = p;
        z->paths_cap = cap;
    }
    memcpy(z->paths + z->paths_len, path, len);
    z->d[z->n++] = (struct size_delta){tenant, hash, delta, z->paths_len, len};
    z->paths_len += len;
    return 0;
}

int64_t md_dirsizes_pending(const struct md_dirsizes *z, int64_t tenant, const char *path,
                            size_t len)
{
    if (!z || z->n == 0)
        return 0;
    const struct size_delta *d = find(z, tenant, path, len, hash_of(tenant, path, len));
    return d ? d->delta : 0;
}

size_t md_dirsizes_count(const struct md_dirsizes *z)
{
    return z ? z->n : 0;
}

void md_dirsizes_entry(const struct md_dirsizes *z, size_t i, int64_t *tenant, const char **path,
                       size_t *len, int64_t *delta)
{
    const struct size_delta *d = &z->d[i];
    *tenant = d->tenant;
    *path = z->paths + d->path_off;
    *len = d->path_len;
    *delta = d->delta;
}

void md_dirsizes_written(struct md_dirsizes *z)
{
    for (size_t i = 0; z && i < z->n; i++)
        z->d[i].delta = 0;
}

void md_dirsizes_mark(struct md_dirsizes *z)
{
    if (!z)
        return;
    z->saved_n = z->n;
    z->saved_paths_len = z->paths_len;
    for (size_t i = 0; i < z->n; i++)
        z->saved_delta[i] = z->d[i].delta;
}

void md_dirsizes_restore(struct md_dirsizes *z)
{
    if (!z)
        return;
    z->n = z->saved_n;
    z->paths_len = z->saved_paths_len;
    for (size_t i = 0; i < z->n; i++)
        z->d[i].delta = z->saved_delta[i];
}
