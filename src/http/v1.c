/*
 * http_v1.c — the /v1 API: a tenant's history (GET /v1/history,
 * GET /v1/versions/{version}), restore and redaction (POST /v1/restore,
 * POST /v1/redact, run by the writer like the memory tool's writes), and
 * the change feed (GET /v1/changes, long-polling).
 *
 * JSON in and out; errors are {"error": "..."} with their status. The
 * tenant is decided as for POST /memory.
 *
 * Long-polling: a request of the change feed with nothing to return waits
 * (its connection suspended) as a `waiter` until a commit of its tenant
 * (the writer's commit hook, md_http_changes_committed) or its deadline
 * (the waiter thread), then asks again. A commit counter closes the gap
 * between asking and waiting: a commit in between wakes it at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/md_json.h"
#include "base/md_log.h"
#include "base/md_path.h"
#include "internal.h"

#define HISTORY_LIMIT_DEFAULT 50
#define HISTORY_LIMIT_MAX     1000
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

/* ---- JSON pieces ---- */

enum md_err md_http_put_time(struct md_buf *b, int64_t ms)
{
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    return md_buf_printf(b, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", tm.tm_year + 1900,
                         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                         (int)(ms % 1000));
}

static enum md_err put_str_or_null(struct md_buf *b, const char *s, size_t n)
{
    return s ? md_json_put_string(b, s, n) : md_buf_puts(b, "null");
}

static enum md_err put_version(struct md_buf *b, const struct md_version *v, int with_content)
{
    enum md_err e = md_buf_printf(b, "{\"version\":%lld,\"path\":", (long long)v->version);
    if (!e)
        e = md_json_put_string(b, v->path, v->path_len);
    if (!e)
        e = md_buf_puts(b, ",\"command\":");
    if (!e)
        e = md_json_put_string(b, v->command, strlen(v->command));
    if (!e)
        e = md_buf_puts(b, ",\"time\":");
    if (!e)
        e = md_http_put_time(b, v->time_ms);
    if (!e)
        e = md_buf_puts(b, ",\"actor\":");
    if (!e)
        e = put_str_or_null(b, v->actor, v->actor_len);
    if (!e)
        e = md_buf_printf(b, ",\"existed\":%s,\"size\":", v->existed ? "true" : "false");
    if (!e)
        e = v->size >= 0 ? md_buf_printf(b, "%lld", (long long)v->size) : md_buf_puts(b, "null");
    if (!e)
        e = md_buf_puts(b, ",\"sha256\":");
    if (!e && v->has_sha256) {
        char hex[MD_SHA256_HEX + 1];
        md_sha256_hex(v->sha256, hex);
        e = md_buf_printf(b, "\"%s\"", hex);
    } else if (!e) {
        e = md_buf_puts(b, "null");
    }
    if (!e)
        e = md_buf_printf(b, ",\"redacted\":%s", v->redacted ? "true" : "false");
    if (!e && with_content) {
        e = md_buf_puts(b, ",\"content\":");
        if (!e)
            e = put_str_or_null(b, v->content, v->content_len);
    }
    if (!e)
        e = md_buf_putc(b, '}');
    return e;
}

/* ---- query parameters ---- */

static const char *arg(struct req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* An optional integer parameter in [lo, hi] (default `def`): 0, or -1
 * with the error answered. */
int md_http_int_arg(struct req *r, const char *name, int64_t lo, int64_t hi, int64_t def,
                    int64_t *out, enum MHD_Result *ret)
{
    const char *v = arg(r, name);
    *out = def;
    if (!v)
        return 0;
    char *end = NULL;
    errno = 0;
    long long n = (*v >= '0' && *v <= '9') ? strtoll(v, &end, 10) : -1;
    if (n < lo || n > hi || errno || !end || *end) {
        char text[160];
        snprintf(text, sizeof text, "Parameter `%s` must be an integer from %lld to %lld", name,
                 (long long)lo, (long long)hi);
        *ret = md_http_reply_error(r, MD_EINVAL, text, strlen(text));
        return -1;
    }
    *out = n;
    return 0;
}

/* ---- GET /v1/history ---- */

struct history_list {
    struct md_buf *json;
    size_t n, limit;
    int64_t last;
    int more;
    enum md_err err;
};

static int history_row(void *ctx, const struct md_version *v)
{
    struct history_list *h = ctx;
    if (h->n == h->limit) {
        h->more = 1;
        return 1;
    }
    if (h->n++ > 0)
        h->err = md_buf_putc(h->json, ',');
    if (!h->err)
        h->err = put_version(h->json, v, 0);
    h->last = v->version;
    return h->err != MD_OK;
}

static enum MHD_Result storage_error(struct req *r, enum md_err e)
{
    if (e != MD_EBUSY && e != MD_EUNAVAIL)
        e = MD_EDB;
    const char *text = md_cmd_storage_error_text(e);
    return md_http_reply_error(r, e, text, strlen(text));
}

static enum MHD_Result history(struct req *r)
{
    const struct md_config *cfg = r->h->cfg;
    enum MHD_Result ret;
    const char *raw = arg(r, "path");
    if (!raw)
        return md_http_reply_error(r, MD_EINVAL, "Parameter `path` is required",
                                   strlen("Parameter `path` is required"));
    int64_t limit, cursor;
    if (md_http_int_arg(r, "limit", 1, HISTORY_LIMIT_MAX, HISTORY_LIMIT_DEFAULT, &limit, &ret) ||
        md_http_int_arg(r, "cursor", 1, INT64_MAX, 0, &cursor, &ret))
        return ret;
    size_t rawn = strlen(raw), len = 0;
    char *canon = malloc(rawn + 1);
    if (!canon)
        return MHD_NO;
    struct md_buf json;
    md_buf_init(&json, OUT_LIMIT);
    enum md_path_status ps = md_path_canon(raw, rawn, &cfg->limits.path, canon, &len);
    if (ps != MD_PATH_OK) {
        md_path_errmsg(&json, ps, raw, rawn, &cfg->limits.path);
        ret = md_http_reply_error(r, MD_EINVAL, json.data ? json.data : "", json.len);
        md_buf_free(&json);
        free(canon);
        return ret;
    }
    struct md_txn *t = NULL;
    enum md_err e = md_store_read_begin(r->h->store, &t);
    struct history_list hl = {&json, 0, (size_t)limit, 0, 0, MD_OK};
    if (!e)
        e = md_buf_puts(&json, "{\"path\":");
    if (!e)
        e = md_json_put_string(&json, canon, len);
    if (!e)
        e = md_buf_puts(&json, ",\"versions\":[");
    if (!e)
        e = md_txn_history(t, r->tenant, canon, len, cursor, (size_t)limit + 1, history_row, &hl);
    if (!e)
        e = hl.err;
    int missing = 0;
    if (!e && hl.n == 0 && cursor == 0) {
        /* No version: a path that exists now has an empty history; one
         * that never existed is not found. */
        struct md_locate l = {.path = canon, .len = len};
        int tenant_exists;
        e = md_txn_locate(t, r->tenant, &l, 1, &tenant_exists);
        missing = !e && !l.found;
    }
    if (t)
        md_txn_end(t);
    if (!e && missing) {
        md_buf_reset(&json);
        md_buf_puts(&json, "The path ");
        md_buf_append(&json, raw, rawn);
        md_buf_puts(&json, " has no history and does not exist");
        ret = md_http_reply_error(r, MD_ENOENT, json.data, json.len);
    } else if (!e) {
        e = md_buf_puts(&json, "],\"next_cursor\":");
        if (!e)
            e = hl.more ? md_buf_printf(&json, "\"%lld\"}", (long long)hl.last)
                        : md_buf_puts(&json, "null}");
        ret = e ? MHD_NO : md_http_reply_json(r, 200, &json);
    } else {
        ret = storage_error(r, e);
    }
    md_buf_free(&json);
    free(canon);
    return ret;
}

/* ---- GET /v1/versions/{version} ---- */

static enum MHD_Result version(struct req *r)
{
    const char *num = r->url + strlen("/v1/versions/");
    char *end = NULL;
    errno = 0;
    long long v = (*num >= '1' && *num <= '9') ? strtoll(num, &end, 10) : 0;
    if (v <= 0 || errno || !end || *end) {
        static const char text[] = "The version in /v1/versions/{version} must be a positive "
                                   "integer";
        return md_http_reply_error(r, MD_EINVAL, text, sizeof text - 1);
    }
    struct md_txn *t = NULL;
    enum md_err e = md_store_read_begin(r->h->store, &t);
    struct md_version ver;
    if (!e)
        e = md_txn_version_get(t, r->tenant, v, 1, &ver);
    struct md_buf json;
    md_buf_init(&json, OUT_LIMIT);
    enum MHD_Result ret;
    if (e == MD_ENOENT) {
        md_buf_printf(&json,
                      "Version %lld is not kept (there is no such version of this tenant, or "
                      "retention has pruned it)",
                      v);
        ret = md_http_reply_error(r, MD_ENOENT, json.data, json.len);
    } else if (!e) {
        e = put_version(&json, &ver, 1);
        ret = e ? MHD_NO : md_http_reply_json(r, 200, &json);
    } else {
        ret = storage_error(r, e);
    }
    if (t)
        md_txn_end(t);
    md_buf_free(&json);
    return ret;
}

/* ---- POST /v1/restore, POST /v1/redact ---- */

static enum MHD_Result write_op(struct req *r, enum md_cmd_kind kind)
{
    struct md_buf msg;
    md_buf_init(&msg, OUT_LIMIT);
    const char *body = r->body.data ? r->body.data : "";
    enum md_err e = md_cmd_parse_op(&r->cmd, kind, body, r->body.len, &r->h->cfg->limits, &msg);
    if (!e)
        e = md_http_write_headers(r, body, r->body.len, &msg);
    md_http_body_drop(r);
    if (e) {
        enum MHD_Result ret = md_http_reply_error(r, e, msg.data ? msg.data : "", msg.len);
        md_buf_free(&msg);
        return ret;
    }
    md_buf_free(&msg);
    return md_http_submit(r);
}

/* The writer's answer: the JSON the command wrote, or its error. */
static enum MHD_Result write_done(struct req *r)
{
    if (r->err != MD_OK)
        return md_http_reply_error(r, r->err, r->out.data ? r->out.data : "", r->out.len);
    const char *extra[] = {"Idempotent-Replayed", "true", NULL};
    size_t len;
    char *body = md_buf_take(&r->out, &len);
    if (!body)
        return MHD_NO;
    return md_http_queue(r, 200, "application/json", body, len, -1, r->job.replayed ? extra : NULL);
}

/* ---- GET /v1/changes ---- */

struct change_list {
    struct md_buf *json;
    size_t n;
    int64_t last;
    enum md_err err;
};

static int change_row(void *ctx, const struct md_change *c)
{
    struct change_list *cl = ctx;
    struct md_buf *b = cl->json;
    enum md_err e = cl->n++ ? md_buf_putc(b, ',') : MD_OK;
    if (!e)
        e = md_buf_printf(b, "{\"seq\":%lld,\"version\":", (long long)c->seq);
    if (!e)
        e = c->version ? md_buf_printf(b, "%lld", (long long)c->version) : md_buf_puts(b, "null");
    if (!e)
        e = md_buf_printf(b, ",\"versions\":%lld,\"history_bytes\":%lld,\"time\":",
                          (long long)c->versions, (long long)c->history_bytes);
    if (!e)
        e = md_http_put_time(b, c->time_ms);
    if (!e)
        e = md_buf_puts(b, ",\"command\":");
    if (!e)
        e = md_json_put_string(b, c->command, strlen(c->command));
    if (!e)
        e = md_buf_puts(b, ",\"paths\":[");
    for (size_t i = 0; !e && i < c->paths_len;) {
        const char *nl = memchr(c->paths + i, '\n', c->paths_len - i);
        size_t end = nl ? (size_t)(nl - c->paths) : c->paths_len;
        if (i)
            e = md_buf_putc(b, ',');
        if (!e)
            e = md_json_put_string(b, c->paths + i, end - i);
        i = end + 1;
    }
    if (!e)
        e = md_buf_puts(b, "],\"actor\":");
    if (!e)
        e = put_str_or_null(b, c->actor, c->actor_len);
    if (!e)
        e = md_buf_putc(b, '}');
    cl->last = c->seq;
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

static enum MHD_Result changes(struct req *r)
{
    enum MHD_Result ret;
    int64_t after, limit, wait;
    int first = r->wait_until_us == 0;
    if (first &&
        (md_http_int_arg(r, "after", 0, INT64_MAX, 0, &after, &ret) ||
         md_http_int_arg(r, "limit", 1, CHANGES_LIMIT_MAX, CHANGES_LIMIT_DEFAULT, &limit, &ret) ||
         md_http_int_arg(r, "wait", 0, CHANGES_WAIT_MAX, 0, &wait, &ret)))
        return ret;
    if (first) {
        r->wait_after = after;
        r->wait_until_us = md_http_now_us() + (uint64_t)wait * 1000000u;
    } else {
        md_http_int_arg(r, "limit", 1, CHANGES_LIMIT_MAX, CHANGES_LIMIT_DEFAULT, &limit, &ret);
    }
    after = r->wait_after;
    unsigned long long seen = atomic_load(&g_commits);
    struct md_buf json;
    md_buf_init(&json, OUT_LIMIT);
    struct change_list cl = {&json, 0, after, MD_OK};
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
        return storage_error(r, e);
    }
    if (after < last_seq && (oldest == 0 || after + 1 < oldest)) {
        md_buf_reset(&json);
        md_buf_printf(&json,
                      "Changes after %lld are no longer kept (the oldest kept is %lld): read the "
                      "tree again, then follow the feed from after=%lld",
                      (long long)after, (long long)(oldest ? oldest : last_seq + 1),
                      (long long)((oldest ? oldest : last_seq + 1) - 1));
        ret = md_http_reply_error(r, MD_EGONE, json.data, json.len);
        md_buf_free(&json);
        return ret;
    }
    if (cl.n == 0 && md_http_now_us() < r->wait_until_us && !atomic_load(&r->h->stopping) &&
        wait_for_change(r, seen) == 0) {
        md_buf_free(&json);
        return MHD_YES;
    }
    e = md_buf_printf(&json, "],\"last_seq\":%lld,\"next_after\":%lld}", (long long)last_seq,
                      (long long)cl.last);
    ret = e ? MHD_NO : md_http_reply_json(r, 200, &json);
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
        uint64_t now = md_http_now_us(), next = now + 1000000u;
        resume_where(h, expired, &now);
        for (struct waiter *w = h->waiters; w; w = w->next)
            if (w->r->wait_until_us < next)
                next = w->r->wait_until_us;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        uint64_t ns = (uint64_t)until.tv_nsec + (next - now) * 1000u;
        until.tv_sec += (time_t)(ns / 1000000000u);
        until.tv_nsec = (long)(ns % 1000000000u);
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

/* ---- dispatch ---- */

enum MHD_Result md_http_v1(struct req *r)
{
    int state = atomic_load(&r->state);
    if (state == ST_READY && (r->route == R_RESTORE || r->route == R_REDACT))
        return write_done(r);
    enum MHD_Result ret;
    if (state != ST_READY && r->late) {
        static const char text[] = "memoryd is shutting down; retry shortly";
        return md_http_reply_error(r, MD_EBUSY, text, sizeof text - 1);
    }
    if (md_http_tenant(r, &ret) != 0)
        return ret;
    switch (r->route) {
    case R_HISTORY:
        return history(r);
    case R_VERSIONS:
        return version(r);
    case R_RESTORE:
        return write_op(r, MD_CMD_RESTORE);
    case R_REDACT:
        return write_op(r, MD_CMD_REDACT);
    case R_CHANGES:
        return changes(r);
    case R_SEARCH:
        return md_http_search(r);
    default:
        return MHD_NO;
    }
}
