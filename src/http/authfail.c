/* authfail.c — failed authentications per client address (md_authfail.h). */
#include "http/md_authfail.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_netaddr.h"

#define WAYS 4

struct slot {
    int family; /* 0: free */
    uint8_t addr[16];
    int64_t start; /* first failure of the window, seconds */
    unsigned failures;
};

struct md_authfail {
    pthread_mutex_t mu;
    unsigned max, window;
    struct slot slots[MD_AUTHFAIL_SLOTS];
};

struct md_authfail *md_authfail_new(unsigned max, unsigned window)
{
    struct md_authfail *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    pthread_mutex_init(&t->mu, NULL);
    t->max = max;
    t->window = window;
    return t;
}

void md_authfail_free(struct md_authfail *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* The first slot of the address's set (FNV-1a of its bytes). */
static size_t set_of(int family, const uint8_t a[16])
{
    uint32_t h = 2166136261u ^ (uint32_t)family;
    for (int i = 0; i < 16; i++)
        h = (h ^ a[i]) * 16777619u;
    return (size_t)(h % (MD_AUTHFAIL_SLOTS / WAYS)) * WAYS;
}

/* The address's live slot, or NULL. Called with the mutex held. */
static struct slot *find(struct md_authfail *t, int family, const uint8_t a[16], int64_t now)
{
    struct slot *s = &t->slots[set_of(family, a)];
    for (int i = 0; i < WAYS; i++)
        if (s[i].family == family && memcmp(s[i].addr, a, 16) == 0 &&
            now < s[i].start + (int64_t)t->window)
            return &s[i];
    return NULL;
}

unsigned md_authfail_blocked(struct md_authfail *t, const struct sockaddr *addr, int64_t now)
{
    int family;
    uint8_t a[16] = {0}; /* IPv4 fills 4 bytes */
    if (!addr || md_sockaddr_key(addr, &family, a) != 0)
        return 0;
    unsigned wait = 0;
    pthread_mutex_lock(&t->mu);
    const struct slot *s = find(t, family, a, now);
    if (s && s->failures >= t->max)
        wait = (unsigned)(s->start + (int64_t)t->window - now);
    pthread_mutex_unlock(&t->mu);
    return wait;
}

void md_authfail_note(struct md_authfail *t, const struct sockaddr *addr, int64_t now)
{
    int family;
    uint8_t a[16] = {0}; /* IPv4 fills 4 bytes */
    if (!addr || md_sockaddr_key(addr, &family, a) != 0)
        return;
    pthread_mutex_lock(&t->mu);
    struct slot *s = find(t, family, a, now);
    if (!s) {
        /* A free or expired slot of the set, else the one whose window
         * ends first. */
        struct slot *set = &t->slots[set_of(family, a)];
        s = &set[0];
        for (int i = 0; i < WAYS; i++) {
            if (!set[i].family || now >= set[i].start + (int64_t)t->window) {
                s = &set[i];
                break;
            }
            if (set[i].start < s->start)
                s = &set[i];
        }
        s->family = family;
        memcpy(s->addr, a, 16);
        s->start = now;
        s->failures = 0;
    }
    s->failures++;
    pthread_mutex_unlock(&t->mu);
}
