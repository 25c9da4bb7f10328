/*
 * changes.c — GET /v1/changes: a tenant's change feed, long-polling.
 *
 * A request with nothing to return waits (its connection suspended) as a
 * `waiter` until a commit of its tenant (the writer's commit hook,
 * md_http_changes_committed, or another instance's, heard by the store's
 * watcher) or its deadline (the waiter thread), then asks again (routes.c
 * runs its handler once more). A commit counter closes the gap between
 * asking and waiting: a commit in between wakes it at once.
 *
 * A key that sees one subtree (docs/behaviour.md 15.3) reads the entries
 * that name a path in it or above it. A path outside it is left out (a
 * rename's is given as null, so that its two paths keep their places), and
 * an entry that names a path not in it (it touched other subtrees too)
 * gives null for its versions and their bytes.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/md_clock.h"
#include "base/md_json.h"
#include "internal.h"

#define CHANGES_LIMIT_DEFAULT 100
#define CHANGES_LIMIT_MAX     1000
#define CHANGES_WAIT_MAX      60

struct waiter {
    struct req *r;
    struct waiter *next;
};

/* Commits seen by the hook (any tenant): a waiter that registers after
 * one it did not see asks again at once. */
static atomic_ullong g_commits;

/* ---- the feed ---- */

struct change_list {
    struct md_buf *json;
    size_t n;       /* entries given */
    size_t scanned; /* entries read, given or not */
    int64_t last;
    enum md_err err;
    const char *root; /* the key's subtree; NULL: the whole tenant */
    size_t root_len;
};

/* Where the entry's paths lie from the subtree: *seen, one in it or above
 * it; *above, one not in it. */
static void change_where(const struct change_list *cl, const struct md_change *c, int *seen,
                         int *above)
{
    *seen = !cl->root;
    *above = 0;
    for (size_t i = 0; i < c->paths_len;) {
        const char *nl = memchr(c->paths + i, '\n', c->paths_len - i);
        size_t end = nl ? (size_t)(nl - c->paths) : c->paths_len;
        enum md_within w = md_path_within(c->paths + i, end - i, cl->root, cl->root_len);
        *seen |= w != MD_OUTSIDE_SUBTREE;
        *above |= w != MD_IN_SUBTREE;
        i = end + 1;
    }
}

static int change_row(void *ctx, const struct md_change *c)
{
    struct change_list *cl = ctx;
    struct md_buf *b = cl->json;
    cl->scanned++;
    cl->last = c->seq;
    int seen, above;
    change_where(cl, c, &seen, &above);
    if (!seen)
        return 0;
    enum md_err e = cl->n++ ? md_buf_putc(b, ',') : MD_OK;
    if (!e)
        e = md_buf_printf(b, "{\"seq\":%lld,\"version\":", (long long)c->seq);
    if (!e)
        e = c->version && !above ? md_buf_printf(b, "%lld", (long long)c->version)
                                 : md_buf_puts(b, "null");
    if (!e)
        e = above ? md_buf_puts(b, ",\"versions\":null,\"history_bytes\":null,\"time\":")
                  : md_buf_printf(b, ",\"versions\":%lld,\"history_bytes\":%lld,\"time\":",
                                  (long long)c->versions, (long long)c->history_bytes);
    if (!e)
        e = md_json_put_time(b, c->time_ms);
    if (!e)
        e = md_buf_puts(b, ",\"command\":");
    if (!e)
        e = md_json_put_string(b, c->command, strlen(c->command));
    if (!e)
        e = md_buf_puts(b, ",\"paths\":[");
    int positional = strcmp(c->command, "rename") == 0;
    size_t given = 0;
    for (size_t i = 0; !e && i < c->paths_len;) {
        const char *nl = memchr(c->paths + i, '\n', c->paths_len - i);
        size_t end = nl ? (size_t)(nl - c->paths) : c->paths_len;
        int out =
            md_path_within(c->paths + i, end - i, cl->root, cl->root_len) == MD_OUTSIDE_SUBTREE;
        if ((!out || positional) && given++)
            e = md_buf_putc(b, ',');
        if (!e && out && positional)
            e = md_buf_puts(b, "null");
        else if (!e && !out)
            e = md_json_put_string(b, c->paths + i, end - i);
        i = end + 1;
    }
    if (!e)
        e = md_buf_puts(b, "],\"actor\":");
    if (!e)
        e = md_json_put_string_or_null(b, c->actor, c->actor_len);
    if (!e)
        e = md_buf_putc(b, '}');
    cl->err = e;
    return e != MD_OK;
}

/* Register r as a waiter; 0, or -1 when it must ask again at once. */
static int wait_for_change(struct req *r, unsigned long long seen)
{
    struct md_http *h = r->h;
    struct waiter *w = malloc(sizeof *w);
    if (!w)
        return -1;
    w->r = r;
    atomic_store(&r->state, ST_WAITING);
    MHD_suspend_connection(r->conn);
    pthread_mutex_lock(&h->wait_mu);
    if (h->wait_stop || atomic_load(&g_commits) != seen) {
        pthread_mutex_unlock(&h->wait_mu);
        free(w);
        atomic_store(&r->state, ST_READY);
        MHD_resume_connection(r->conn);
        return 0;
    }
    w->next = h->waiters;
    h->waiters = w;
    pthread_cond_signal(&h->wait_cv);
    pthread_mutex_unlock(&h->wait_mu);
    return 0;
}

enum MHD_Result md_http_changes(struct req *r)
{
    enum MHD_Result ret;
    if (md_http_tenant(r, &ret) != 0 || md_http_tenant_readable(r, &ret) != 0)
        return ret;
    int64_t after, limit, wait;
    int first = r->wait_until_us == 0;
    if (first &&
        (md_http_int_arg(r, "after", 0, INT64_MAX, 0, &after, &ret) ||
         md_http_int_arg(r, "limit", 1, CHANGES_LIMIT_MAX, CHANGES_LIMIT_DEFAULT, &limit, &ret) ||
         md_http_int_arg(r, "wait", 0, CHANGES_WAIT_MAX, 0, &wait, &ret)))
        return ret;
    if (first) {
        r->wait_after = after;
        r->wait_until_us = md_now_us() + (uint64_t)wait * 1000000u;
    } else {
        md_http_int_arg(r, "limit", 1, CHANGES_LIMIT_MAX, CHANGES_LIMIT_DEFAULT, &limit, &ret);
    }
    after = r->wait_after;
    unsigned long long seen = atomic_load(&g_commits);
    struct md_buf json;
    md_buf_init(&json, OUT_LIMIT);
    struct change_list cl = {&json, 0, 0, after, MD_OK, md_http_key_root(r), strlen(r->key_path)};
    int64_t oldest = 0, last_seq = 0;
    struct md_txn *t = NULL;
    enum md_err e = md_store_read_begin(r->h->store, &t);
    if (!e)
        e = md_buf_puts(&json, "{\"changes\":[");
    if (!e)
        e = md_txn_changes(t, r->tenant, after, (size_t)limit, change_row, &cl, &oldest, &last_seq);
    if (t)
        md_txn_end(t);
    if (!e)
        e = cl.err;
    if (e) {
        md_buf_free(&json);
        return md_http_storage_error(r, e);
    }
    if (after < last_seq && (oldest == 0 || after + 1 < oldest)) {
        md_buf_free(&json);
        long long kept = (long long)(oldest ? oldest : last_seq + 1);
        return md_reply_errorf(r, MD_R_CHANGES_GONE, (long long)after, kept, kept - 1);
    }
    if (cl.scanned == 0 && md_now_us() < r->wait_until_us && !atomic_load(&r->h->stopping) &&
        wait_for_change(r, seen) == 0) {
        md_buf_free(&json);
        return MHD_YES;
    }
    e = md_buf_printf(&json, "],\"last_seq\":%lld,\"next_after\":%lld}", (long long)last_seq,
                      (long long)cl.last);
    ret = e ? MHD_NO : md_reply_json(r, 200, &json);
    md_buf_free(&json);
    return ret;
}

/* ---- waiters ---- */

static int any(struct req *r, void *ctx)
{
    (void)r;
    (void)ctx;
    return 1;
}

/* Resume every waiter for which `pick` says so (wait_mu held). */
static void resume_where(struct md_http *h, int (*pick)(struct req *r, void *ctx), void *ctx)
{
    for (struct waiter **pp = &h->waiters; *pp;) {
        struct waiter *w = *pp;
        if (!pick(w->r, ctx)) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        atomic_store(&w->r->state, ST_READY);
        MHD_resume_connection(w->r->conn);
        free(w);
    }
}

struct tenants {
    const char *const *names;
    size_t n;
};

static int of_tenants(struct req *r, void *ctx)
{
    const struct tenants *t = ctx;
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(r->tenant, t->names[i]) == 0)
            return 1;
    return 0;
}

void md_http_changes_committed(void *ctx, const char *const *tenants, size_t n)
{
    struct md_http *h = ctx;
    struct tenants t = {tenants, n};
    pthread_mutex_lock(&h->wait_mu);
    atomic_fetch_add(&g_commits, 1);
    resume_where(h, of_tenants, &t);
    pthread_mutex_unlock(&h->wait_mu);
}

void md_http_changes_heard(void *ctx, const char *tenant)
{
    struct md_http *h = ctx;
    if (!tenant) {
        pthread_mutex_lock(&h->wait_mu);
        atomic_fetch_add(&g_commits, 1);
        resume_where(h, any, NULL);
        pthread_mutex_unlock(&h->wait_mu);
        return;
    }
    md_http_changes_committed(ctx, &tenant, 1);
}

static int expired(struct req *r, void *ctx)
{
    return r->wait_until_us <= *(const uint64_t *)ctx;
}

static void *waiter_main(void *arg)
{
    struct md_http *h = arg;
    pthread_mutex_lock(&h->wait_mu);
    while (!h->wait_stop) {
        uint64_t now = md_now_us(), next = now + 1000000u;
        resume_where(h, expired, &now);
        for (struct waiter *w = h->waiters; w; w = w->next)
            if (w->r->wait_until_us < next)
                next = w->r->wait_until_us;
        struct timespec until = md_deadline_us((long long)(next - now));
        pthread_cond_timedwait(&h->wait_cv, &h->wait_mu, &until);
    }
    resume_where(h, any, NULL);
    pthread_mutex_unlock(&h->wait_mu);
    return NULL;
}

int md_http_waiters_start(struct md_http *h)
{
    pthread_mutex_init(&h->wait_mu, NULL);
    pthread_cond_init(&h->wait_cv, NULL);
    if (pthread_create(&h->wait_thread, NULL, waiter_main, h) != 0)
        return -1;
    h->wait_started = 1;
    return 0;
}

void md_http_waiters_wake_all(struct md_http *h)
{
    if (!h->wait_started)
        return;
    pthread_mutex_lock(&h->wait_mu);
    resume_where(h, any, NULL);
    pthread_mutex_unlock(&h->wait_mu);
}

void md_http_waiters_stop(struct md_http *h)
{
    if (!h->wait_started)
        return;
    pthread_mutex_lock(&h->wait_mu);
    h->wait_stop = 1;
    pthread_cond_signal(&h->wait_cv);
    pthread_mutex_unlock(&h->wait_mu);
    pthread_join(h->wait_thread, NULL);
    pthread_mutex_destroy(&h->wait_mu);
    pthread_cond_destroy(&h->wait_cv);
    h->wait_started = 0;
}
