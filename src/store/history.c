/* history.c — a write transaction's history bookkeeping (see md_history.h). */
#include "store/md_history.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define TOUCHED_MAX 4096

struct tenant_counters {
    int64_t id;
    int64_t last_version, last_seq;
    int dirty;
};

struct touched {
    int64_t tenant;
    char *path;
    size_t len;
    int subtree;
};

/* Paths to prune by count: a ring, shared by a store's write connections. */
struct md_touched {
    pthread_mutex_t mu;
    struct touched ring[TOUCHED_MAX];
    size_t head, count;
};

struct md_hist {
    struct tenant_counters *t;
    size_t n, cap;
    /* At the savepoint: how many tenants were loaded and their values. */
    struct tenant_counters *mark;
    size_t mark_n, mark_cap;
    /* The current command. */
    int64_t cmd_tenant;
    struct md_write_meta meta;
    char *actor; /* meta.actor, copied */
    int64_t first_version, versions, bytes;
    struct md_touched *q; /* the queue of paths to prune */
    int owns_q;
};

int64_t md_history_changes_ms(const struct md_retention *r)
{
    unsigned days = r->days ? r->days : 1;
    return (int64_t)days * 24 * 3600 * 1000;
}

struct md_touched *md_touched_new(void)
{
    struct md_touched *q = calloc(1, sizeof *q);
    if (q)
        pthread_mutex_init(&q->mu, NULL);
    return q;
}

void md_touched_free(struct md_touched *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->count; i++)
        free(q->ring[(q->head + i) % TOUCHED_MAX].path);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

struct md_hist *md_hist_new(struct md_touched *shared)
{
    struct md_hist *h = calloc(1, sizeof(struct md_hist));
    if (!h)
        return NULL;
    h->q = shared ? shared : md_touched_new();
    h->owns_q = !shared;
    if (!h->q) {
        free(h);
        return NULL;
    }
    return h;
}

void md_hist_free(struct md_hist *h)
{
    if (!h)
        return;
    if (h->owns_q)
        md_touched_free(h->q);
    free(h->t);
    free(h->mark);
    free(h->actor);
    free(h);
}

static void cmd_clear(struct md_hist *h)
{
    h->cmd_tenant = 0;
    free(h->actor);
    h->actor = NULL;
    h->meta = (struct md_write_meta){NULL, NULL, 0, {0, 0, 0, 0}};
    h->first_version = h->versions = h->bytes = 0;
}

void md_hist_reset(struct md_hist *h)
{
    h->n = 0;
    h->mark_n = 0;
    cmd_clear(h);
}

static struct tenant_counters *find(const struct md_hist *h, int64_t id)
{
    for (size_t i = 0; i < h->n; i++)
        if (h->t[i].id == id)
            return &h->t[i];
    return NULL;
}

int md_hist_loaded(const struct md_hist *h, int64_t id, int64_t *last_version, int64_t *last_seq)
{
    const struct tenant_counters *c = find(h, id);
    if (!c)
        return 0;
    *last_version = c->last_version;
    *last_seq = c->last_seq;
    return 1;
}

int md_hist_load(struct md_hist *h, int64_t id, int64_t last_version, int64_t last_seq)
{
    struct tenant_counters *c = find(h, id);
    if (c)
        return 0;
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 16;
        struct tenant_counters *t = realloc(h->t, cap * sizeof *t);
        if (!t)
            return -1;
        h->t = t;
        h->cap = cap;
    }
    h->t[h->n++] = (struct tenant_counters){id, last_version, last_seq, 0};
    return 0;
}

void md_hist_cmd_begin(struct md_hist *h, int64_t tenant, const struct md_write_meta *m)
{
    cmd_clear(h);
    h->cmd_tenant = tenant;
    h->meta = *m;
    if (m->actor) {
        h->actor = strdup(m->actor);
        h->meta.actor = h->actor; /* NULL when out of memory: recorded without */
    }
}

void md_hist_cmd_set_tenant(struct md_hist *h, int64_t tenant)
{
    h->cmd_tenant = tenant;
}

int64_t md_hist_cmd_tenant(const struct md_hist *h)
{
    return h->cmd_tenant;
}

const struct md_write_meta *md_hist_cmd_meta(const struct md_hist *h)
{
    return &h->meta;
}

int64_t md_hist_next_version(const struct md_hist *h)
{
    const struct tenant_counters *c = find(h, h->cmd_tenant);
    return c ? c->last_version + 1 : 0;
}

void md_hist_take_versions(struct md_hist *h, int64_t n, int64_t bytes)
{
    struct tenant_counters *c = find(h, h->cmd_tenant);
    if (!c || n <= 0)
        return;
    int64_t first = c->last_version + 1;
    c->last_version += n;
    c->dirty = 1;
    if (!h->first_version)
        h->first_version = first;
    h->versions += n;
    h->bytes += bytes;
}

void md_hist_cmd_recorded(const struct md_hist *h, struct md_change_rec *rec)
{
    *rec = (struct md_change_rec){0, h->first_version, h->versions, h->bytes};
}

void md_hist_cmd_end(struct md_hist *h, struct md_change_rec *rec)
{
    struct tenant_counters *c = find(h, h->cmd_tenant);
    const struct md_change_rec *e = &h->meta.earlier;
    *rec = (struct md_change_rec){0, e->version ? e->version : h->first_version,
                                  e->versions + h->versions, e->history_bytes + h->bytes};
    if (c) {
        rec->seq = ++c->last_seq;
        c->dirty = 1;
    }
}

size_t md_hist_dirty_count(const struct md_hist *h)
{
    return h->n;
}

void md_hist_dirty_entry(const struct md_hist *h, size_t i, int64_t *id, int64_t *last_version,
                         int64_t *last_seq)
{
    /* Every loaded tenant is listed; one not changed keeps its values, so
     * writing it back is harmless, but callers skip it. */
    const struct tenant_counters *c = &h->t[i];
    *id = c->dirty ? c->id : 0;
    *last_version = c->last_version;
    *last_seq = c->last_seq;
}

void md_hist_mark(struct md_hist *h)
{
    cmd_clear(h);
    if (h->mark_cap < h->n) {
        struct tenant_counters *m = realloc(h->mark, h->n * sizeof *m);
        if (!m) {
            h->mark_n = (size_t)-1; /* restore() forgets everything */
            return;
        }
        h->mark = m;
        h->mark_cap = h->n;
    }
    if (h->n)
        memcpy(h->mark, h->t, h->n * sizeof *h->t);
    h->mark_n = h->n;
}

void md_hist_restore(struct md_hist *h)
{
    cmd_clear(h);
    if (h->mark_n == (size_t)-1) {
        h->n = 0; /* reloaded from the database, where the rollback undid them */
        return;
    }
    /* Tenants loaded since the mark are forgotten: their rows are as the
     * database has them after the rollback, and are read again. */
    h->n = h->mark_n;
    if (h->n)
        memcpy(h->t, h->mark, h->n * sizeof *h->t);
}

void md_hist_touch(struct md_hist *h, int64_t tenant, const char *path, size_t len, int subtree)
{
    struct md_touched *q = h->q;
    char *copy = malloc(len + 1); /* the ring owns it until md_hist_take_touched */
    if (!copy)
        return;
    memcpy(copy, path, len);
    copy[len] = '\0';
    pthread_mutex_lock(&q->mu);
    if (q->count == TOUCHED_MAX) {
        pthread_mutex_unlock(&q->mu);
        free(copy);
        return;
    }
    q->ring[(q->head + q->count) % TOUCHED_MAX] = (struct touched){tenant, copy, len, subtree};
    q->count++;
    pthread_mutex_unlock(&q->mu);
}

int md_hist_prune_more(const struct md_hist *h, const struct md_pruned *deleted, size_t budget)
{
    pthread_mutex_lock(&h->q->mu);
    int queued = h->q->count > 0;
    pthread_mutex_unlock(&h->q->mu);
    return queued || md_pruned_total(deleted) >= budget;
}

size_t md_hist_take_touched(struct md_hist *h, size_t max, md_hist_touched_cb cb, void *ctx)
{
    /* Taken out under the lock, told without it (a callback may wait on
     * the database while writers queue more). */
    struct md_touched *q = h->q;
    struct touched taken[64];
    size_t total = 0;
    while (total < max) {
        size_t n = 0;
        pthread_mutex_lock(&q->mu);
        while (n < sizeof taken / sizeof taken[0] && total + n < max && q->count > 0) {
            taken[n++] = q->ring[q->head];
            q->ring[q->head].path = NULL;
            q->head = (q->head + 1) % TOUCHED_MAX;
            q->count--;
        }
        pthread_mutex_unlock(&q->mu);
        if (n == 0)
            break;
        for (size_t i = 0; i < n; i++) {
            cb(ctx, taken[i].tenant, taken[i].path, taken[i].len, taken[i].subtree);
            free(taken[i].path);
        }
        total += n;
    }
    return total;
}
