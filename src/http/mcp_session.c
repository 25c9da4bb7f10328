/*
 * mcp_session.c — the MCP endpoint's session table (md_mcp_session.h): a
 * fixed array of `max` slots, searched linearly under one mutex (a lookup
 * compares ids only; at the default of 1000 slots that is a few
 * microseconds). Ids are compared in constant time.
 */
#include "http/md_mcp_session.h"

#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_tenant.h"

struct slot {
    int used;
    char id[MD_MCP_SID_LEN + 1];
    char tenant[MD_TENANT_MAX + 1];
    int64_t last; /* last request, seconds */
};

struct md_mcp_sessions {
    pthread_mutex_t mu;
    size_t max, open;
    struct slot *slots;
};

struct md_mcp_sessions *md_mcp_sessions_new(size_t max)
{
    if (max == 0 || sodium_init() < 0)
        return NULL;
    struct md_mcp_sessions *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->slots = calloc(max, sizeof *s->slots);
    if (!s->slots) {
        free(s);
        return NULL;
    }
    s->max = max;
    pthread_mutex_init(&s->mu, NULL);
    return s;
}

void md_mcp_sessions_free(struct md_mcp_sessions *s)
{
    if (!s)
        return;
    pthread_mutex_destroy(&s->mu);
    free(s->slots);
    free(s);
}

enum md_err md_mcp_session_open(struct md_mcp_sessions *s, const char *tenant, int64_t now,
                                char id[MD_MCP_SID_LEN + 1])
{
    unsigned char raw[MD_MCP_SID_LEN / 2];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(id, MD_MCP_SID_LEN + 1, raw, sizeof raw);
    pthread_mutex_lock(&s->mu);
    struct slot *free_slot = NULL, *oldest = NULL;
    for (size_t i = 0; i < s->max && !free_slot; i++) {
        struct slot *sl = &s->slots[i];
        if (!sl->used)
            free_slot = sl;
        else if (!oldest || sl->last < oldest->last)
            oldest = sl;
    }
    if (!free_slot && oldest && now - oldest->last >= MD_MCP_SESSION_IDLE) {
        free_slot = oldest; /* reclaimed */
        s->open--;
    }
    if (!free_slot) {
        pthread_mutex_unlock(&s->mu);
        return MD_EBUSY;
    }
    free_slot->used = 1;
    memcpy(free_slot->id, id, MD_MCP_SID_LEN + 1);
    snprintf(free_slot->tenant, sizeof free_slot->tenant, "%s", tenant);
    free_slot->last = now;
    s->open++;
    pthread_mutex_unlock(&s->mu);
    return MD_OK;
}

/* The slot of id[0..len) of `tenant`, or NULL; under the mutex. */
static struct slot *find(struct md_mcp_sessions *s, const char *id, size_t len, const char *tenant)
{
    if (len != MD_MCP_SID_LEN)
        return NULL;
    for (size_t i = 0; i < s->max; i++) {
        struct slot *sl = &s->slots[i];
        if (sl->used && sodium_memcmp(sl->id, id, MD_MCP_SID_LEN) == 0)
            return strcmp(sl->tenant, tenant) == 0 ? sl : NULL;
    }
    return NULL;
}

enum md_err md_mcp_session_touch(struct md_mcp_sessions *s, const char *id, size_t len,
                                 const char *tenant, int64_t now)
{
    pthread_mutex_lock(&s->mu);
    struct slot *sl = find(s, id, len, tenant);
    if (sl)
        sl->last = now;
    pthread_mutex_unlock(&s->mu);
    return sl ? MD_OK : MD_ENOENT;
}

enum md_err md_mcp_session_close(struct md_mcp_sessions *s, const char *id, size_t len,
                                 const char *tenant)
{
    pthread_mutex_lock(&s->mu);
    struct slot *sl = find(s, id, len, tenant);
    if (sl) {
        memset(sl, 0, sizeof *sl);
        s->open--;
    }
    pthread_mutex_unlock(&s->mu);
    return sl ? MD_OK : MD_ENOENT;
}

size_t md_mcp_session_count(struct md_mcp_sessions *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->open;
    pthread_mutex_unlock(&s->mu);
    return n;
}
