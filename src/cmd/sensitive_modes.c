/* sensitive_modes.c — the --sensitive mode in force for a tenant, its
 * override cached (see md_sensitive_modes.h). */
#include "cmd/md_sensitive_modes.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_clock.h"
#include "base/md_tenant.h"
#include "cmd/md_sensitive.h"

struct slot {
    char name[MD_TENANT_MAX + 1]; /* "": empty */
    int mode;                     /* the override; -1: none */
    uint64_t expires_us;
};

struct md_sensitive_modes {
    pthread_mutex_t mu;
    uint64_t generation; /* counts forgets: a read that raced one is not kept */
    struct slot slots[MD_SENSITIVE_MODES_SLOTS];
};

struct md_sensitive_modes *md_sensitive_modes_new(void)
{
    struct md_sensitive_modes *m = calloc(1, sizeof *m);
    if (m)
        pthread_mutex_init(&m->mu, NULL);
    return m;
}

void md_sensitive_modes_free(struct md_sensitive_modes *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static struct slot *slot_of(struct md_sensitive_modes *m, const char *tenant)
{
    return &m->slots[(uint64_t)md_store_tenant_key(tenant) % MD_SENSITIVE_MODES_SLOTS];
}

/* The cached override: 1 (into *mode), or 0 with the generation to keep a
 * read under. */
static int cached(struct md_sensitive_modes *m, const char *tenant, int *mode, uint64_t *gen)
{
    struct slot *sl = slot_of(m, tenant);
    uint64_t now = md_now_us();
    pthread_mutex_lock(&m->mu);
    int hit = now < sl->expires_us && strcmp(sl->name, tenant) == 0;
    if (hit)
        *mode = sl->mode;
    *gen = m->generation;
    pthread_mutex_unlock(&m->mu);
    return hit;
}

static void keep(struct md_sensitive_modes *m, const char *tenant, int mode, uint64_t gen)
{
    struct slot *sl = slot_of(m, tenant);
    uint64_t expires = md_now_us() + (uint64_t)MD_SENSITIVE_MODES_TTL_MS * 1000u;
    pthread_mutex_lock(&m->mu);
    if (m->generation == gen && strlen(tenant) < sizeof sl->name) {
        memcpy(sl->name, tenant, strlen(tenant) + 1);
        sl->mode = mode;
        sl->expires_us = expires;
    }
    pthread_mutex_unlock(&m->mu);
}

void md_sensitive_modes_forget(struct md_sensitive_modes *m, const char *tenant)
{
    if (!m)
        return;
    struct slot *sl = slot_of(m, tenant);
    pthread_mutex_lock(&m->mu);
    m->generation++;
    if (strcmp(sl->name, tenant) == 0)
        sl->name[0] = '\0';
    pthread_mutex_unlock(&m->mu);
}

enum md_err md_sensitive_mode_of(const struct md_limits *lim, struct md_store *store,
                                 const char *tenant, int *mode)
{
    int dflt = md_sensitive_mode(lim->sensitive), own = -1;
    *mode = dflt;
    struct md_sensitive_modes *m = lim->modes;
    if (!m || !lim->sensitive)
        return MD_OK;
    uint64_t gen;
    if (!cached(m, tenant, &own, &gen)) {
        struct md_txn *t = NULL;
        enum md_err e = md_store_read_begin(store, &t);
        if (!e) {
            e = md_txn_sensitive_get(t, tenant, &own);
            md_txn_end(t);
        }
        if (e)
            return e;
        keep(m, tenant, own, gen);
    }
    if (md_sensitive_mode_name(own))
        *mode = own;
    return MD_OK;
}
