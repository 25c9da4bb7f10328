/* connlimit.c — open connections per client address (see md_connlimit.h). */
#include "http/md_connlimit.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_netaddr.h"

#define BUCKETS 1024 /* power of two */

struct entry {
    struct entry *next;
    int family;
    uint8_t addr[16];
    unsigned count;
};

struct md_connlimit {
    pthread_mutex_t mu;
    unsigned per_ip;
    unsigned hard; /* twice per_ip */
    struct entry *bucket[BUCKETS];
};

struct md_connlimit *md_connlimit_new(unsigned per_ip)
{
    struct md_connlimit *cl = calloc(1, sizeof *cl);
    if (!cl)
        return NULL;
    pthread_mutex_init(&cl->mu, NULL);
    cl->per_ip = per_ip ? per_ip : 1;
    cl->hard = cl->per_ip > UINT_MAX / 2 ? UINT_MAX : cl->per_ip * 2;
    return cl;
}

void md_connlimit_free(struct md_connlimit *cl)
{
    if (!cl)
        return;
    for (size_t i = 0; i < BUCKETS; i++) {
        for (struct entry *e = cl->bucket[i], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    }
    pthread_mutex_destroy(&cl->mu);
    free(cl);
}

/* FNV-1a over the address bytes. */
static size_t slot(int family, const uint8_t *addr)
{
    size_t n = family == AF_INET ? 4 : 16;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ addr[i]) * 16777619u;
    return h & (BUCKETS - 1);
}

/* The entry of an address, with the link that points to it; mutex held. */
static struct entry **find(struct md_connlimit *cl, int family, const uint8_t *addr)
{
    size_t n = family == AF_INET ? 4 : 16;
    struct entry **link = &cl->bucket[slot(family, addr)];
    while (*link && ((*link)->family != family || memcmp((*link)->addr, addr, n) != 0))
        link = &(*link)->next;
    return link;
}

unsigned md_connlimit_count(struct md_connlimit *cl, const struct sockaddr *sa)
{
    int family;
    uint8_t addr[16];
    if (md_sockaddr_key(sa, &family, addr))
        return 0;
    pthread_mutex_lock(&cl->mu);
    struct entry *e = *find(cl, family, addr);
    unsigned n = e ? e->count : 0;
    pthread_mutex_unlock(&cl->mu);
    return n;
}

int md_connlimit_allowed(struct md_connlimit *cl, const struct sockaddr *sa)
{
    return md_connlimit_count(cl, sa) < cl->hard;
}

enum md_err md_connlimit_add(struct md_connlimit *cl, const struct sockaddr *sa, int delta,
                             unsigned *open)
{
    if (open)
        *open = 0;
    int family;
    uint8_t addr[16];
    if (md_sockaddr_key(sa, &family, addr))
        return MD_OK; /* not an IP client: not counted */
    enum md_err err = MD_OK;
    pthread_mutex_lock(&cl->mu);
    struct entry **link = find(cl, family, addr);
    struct entry *e = *link;
    if (delta > 0) {
        if (!e) {
            e = calloc(1, sizeof *e);
            if (!e) {
                err = MD_ENOMEM;
                goto out;
            }
            e->family = family;
            memcpy(e->addr, addr, sizeof e->addr);
            *link = e;
        }
        e->count++;
        if (open)
            *open = e->count;
    } else if (e && e->count > 0 && --e->count == 0) {
        *link = e->next;
        free(e);
    }
out:
    pthread_mutex_unlock(&cl->mu);
    return err;
}
