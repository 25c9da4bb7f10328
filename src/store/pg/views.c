/*
 * views.c — md_txn_view and md_store_view_async on PostgreSQL (see
 * internal.h): the entry at a path and, for a directory, its two-level
 * listing, in one statement (P_VIEW); a path that looks like a file's is
 * read alone first (P_GET), and P_VIEW follows only when it is a directory
 * after all.
 *
 * Views fetched asynchronously: a view's statements go to the reads thread
 * (reads.c) instead of a pooled connection the HTTP thread waits on, in
 * the order md_pg_view would send them; the job's txn then answers
 * md_pg_view from those results (its `fetched`, which md_pg_exec asks),
 * without a connection.
 *
 * Owns: struct pg_vjob (a fetched view; made by md_pg_view_async, freed at
 * its txn's end). Errors as md_store.h.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_log.h"
#include "base/md_path.h"
#include "internal.h"

static const struct pg_stmt_def stmts[] = {
    /* A view in one statement: the entry (part 0), then the visible children
     * (part 1) and grandchildren (part 2) of a directory, each in path order
     * and at most $6; hidden names (.* and node_modules) are left out with
     * what is below them. $7 is the position (in characters) of the first
     * character after "dir/"; $8 is $3 + 1 (as a parameter of its own, the
     * generic plan reads the grandchildren from entries_children too, not
     * the whole subtree in path order). */
    {P_VIEW,
     "WITH t AS (SELECT id FROM tenants WHERE name = $1)"
     " SELECT 0 AS part, path, kind, size, content, sha256 FROM entries"
     " WHERE tenant = (SELECT id FROM t) AND path = $2"
     " UNION ALL (SELECT 1, path, kind, size, NULL, NULL FROM entries"
     " WHERE tenant = (SELECT id FROM t) AND depth = $3 AND path > $4 AND path < $5"
     " AND left(substr(path, $7), 1) <> '.' AND substr(path, $7) <> 'node_modules'"
     " ORDER BY path LIMIT $6)"
     " UNION ALL (SELECT 2, path, kind, size, NULL, NULL FROM entries"
     " WHERE tenant = (SELECT id FROM t) AND depth = $8 AND path > $4"
     " AND path < $5 AND left(substr(path, $7), 1) <> '.'"
     " AND split_part(substr(path, $7), '/', 1) <> 'node_modules'"
     " AND left(split_part(substr(path, $7), '/', 2), 1) <> '.'"
     " AND split_part(substr(path, $7), '/', 2) <> 'node_modules'"
     " ORDER BY path LIMIT $6)",
     8,
     {OID_TEXT, OID_TEXT, OID_INT4, OID_TEXT, OID_TEXT, OID_INT8, OID_INT4, OID_INT4},
     1},
};
const struct pg_stmt_defs md_pg_views_stmts = MD_PG_STMT_DEFS(stmts);

static int path_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

/* An entry of a listing. */
struct row {
    const char *path;
    size_t len;
    enum md_kind kind;
    int64_t size;
};

static int row_cmp(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    return path_cmp(x->path, x->len, y->path, y->len);
}

/* The first of `n` sorted rows at or after `key` (binary search). */
static size_t lower_bound(const struct row *r, size_t n, const char *key, size_t klen)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (path_cmp(r[mid].path, r[mid].len, key, klen) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A path whose last segment has a dot after its first character
 * ("notes.md"): most likely a file. */
static int looks_like_file(const char *path, size_t len)
{
    size_t i = len;
    while (i > 0 && path[i - 1] != '/')
        i--;
    return i + 1 < len && memchr(path + i + 1, '.', len - i - 1) != NULL;
}

/* P_GET's parameters: the entry at `path`. */
static void get_params(struct md_pg_params *p, const char *tenant, const char *path, size_t len)
{
    p->n = 0;
    md_pg_text(p, tenant);
    md_pg_bytes(p, path, len);
}

/* P_VIEW's parameters: the entry at `path` and the listing below it, at
 * most `limit` children and grandchildren; bounds[0..1] hold the range. */
static enum md_err view_params(struct md_pg_params *p, struct md_buf bounds[2], const char *tenant,
                               const char *path, size_t len, int64_t limit)
{
    enum md_err err = md_pg_subtree_bounds(&bounds[0], &bounds[1], path, len);
    if (err)
        return err;
    p->n = 0;
    md_pg_text(p, tenant);
    md_pg_bytes(p, path, len);
    md_pg_i32(p, md_path_depth(path, len) + 1);
    md_pg_bytes(p, bounds[0].data, bounds[0].len);
    md_pg_bytes(p, bounds[1].data, bounds[1].len);
    md_pg_i64(p, limit);
    md_pg_i32(p, md_pg_utf8_chars(path, len) + 2);
    md_pg_i32(p, md_path_depth(path, len) + 2);
    return MD_OK;
}

/* ---- md_txn_view ---- */

/* The entry alone (P_GET): a statement of one index scan, where P_VIEW
 * starts and runs three. *done: it was a file (in *e), or nothing; else a
 * directory after all, and P_VIEW follows (a second round trip). */
static enum md_err view_file(struct pg_txn *t, const char *tenant, const char *path, size_t len,
                             struct md_entry *e, int *done)
{
    struct md_pg_params g;
    get_params(&g, tenant, path, len);
    enum md_err err = md_pg_exec(t, P_GET, &g);
    *done = 1;
    if (err)
        return err;
    const PGresult *r = t->pipe.res;
    if (PQntuples(r) != 1)
        return MD_ENOENT; /* not the root: it has no dot */
    if (md_pg_r_i16(r, 0, 0) == MD_KIND_DIR) {
        *done = 0;
        return MD_OK;
    }
    int null = PQgetisnull(r, 0, 2);
    *e = (struct md_entry){.kind = MD_KIND_FILE,
                           .size = md_pg_r_i64(r, 0, 1),
                           .content = null ? "" : PQgetvalue(r, 0, 2),
                           .content_len = null ? 0 : (size_t)PQgetlength(r, 0, 2)};
    md_pg_r_sha256(r, 0, 3, e);
    return MD_OK;
}

/* The directory's listing from the rows of P_VIEW: its children (n1 of
 * part 1), each followed by its own (of the n2 of part 2). */
static enum md_err view_listing(const PGresult *r, size_t n1, size_t n2, int64_t limit,
                                md_list_cb cb, void *ctx, int *complete)
{
    struct row *lv = malloc((n1 + n2 + 1) * sizeof *lv);
    if (!lv)
        return MD_ENOMEM;
    struct row *l1 = lv, *l2 = lv + n1;
    size_t i1 = 0, i2 = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        int part = md_pg_r_i32(r, i, 0);
        if (part == 0)
            continue;
        struct row w = {PQgetvalue(r, i, 1), (size_t)PQgetlength(r, i, 1),
                        md_pg_r_i16(r, i, 2) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE,
                        md_pg_r_i64(r, i, 3)};
        if (part == 1)
            l1[i1++] = w;
        else
            l2[i2++] = w;
    }
    qsort(l1, n1, sizeof *l1, row_cmp);
    qsort(l2, n2, sizeof *l2, row_cmp);
    /* When a part was cut at its limit, what lies after its last row is
     * unknown: the listing stops there. */
    int cut1 = (int64_t)n1 >= limit, cut2 = (int64_t)n2 >= limit;
    int stop = 0;
    enum md_err err = MD_OK;
    for (size_t i = 0; i < n1 && !stop; i++) {
        const struct row *k = &l1[i];
        if (cb(ctx, k->path, k->len, k->kind, k->size)) {
            stop = 1;
            break;
        }
        if (k->kind != MD_KIND_DIR)
            continue;
        char *key = malloc(k->len + 1);
        if (!key) {
            err = MD_ENOMEM;
            break;
        }
        memcpy(key, k->path, k->len);
        key[k->len] = '/';
        size_t j = lower_bound(l2, n2, key, k->len + 1);
        for (; j < n2 && l2[j].len > k->len && memcmp(l2[j].path, key, k->len + 1) == 0; j++) {
            if (cb(ctx, l2[j].path, l2[j].len, l2[j].kind, l2[j].size)) {
                stop = 1;
                break;
            }
        }
        /* Children past the last grandchild fetched may be missing. */
        key[k->len] = '0';
        if (!stop && cut2 && path_cmp(l2[n2 - 1].path, l2[n2 - 1].len, key, k->len + 1) < 0)
            stop = 1;
        free(key);
    }
    if (stop || cut1)
        *complete = 0;
    free(lv);
    return err;
}

enum md_err md_pg_view(struct md_txn *base, const char *tenant, const char *path, size_t len,
                       struct md_entry *e, size_t max_entries, md_list_cb cb, void *ctx,
                       int *complete)
{
    struct pg_txn *t = (struct pg_txn *)base;
    *complete = 1;
    enum md_err err;
    if (looks_like_file(path, len)) {
        int done = 0;
        err = view_file(t, tenant, path, len, e, &done);
        if (err || done)
            return err;
    }
    int64_t limit = max_entries ? (int64_t)max_entries : 1;
    struct md_pg_params p;
    err = view_params(&p, t->pipe.arrays, tenant, path, len, limit);
    if (!err)
        err = md_pg_exec(t, P_VIEW, &p);
    if (err)
        return err;
    const PGresult *r = t->pipe.res;
    int found = 0;
    size_t n1 = 0, n2 = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        int part = md_pg_r_i32(r, i, 0);
        if (part == 0) {
            found = 1;
            e->kind = md_pg_r_i16(r, i, 2) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
            e->size = md_pg_r_i64(r, i, 3);
            e->content = PQgetisnull(r, i, 4) ? "" : PQgetvalue(r, i, 4);
            e->content_len = PQgetisnull(r, i, 4) ? 0 : (size_t)PQgetlength(r, i, 4);
            md_pg_r_sha256(r, i, 5, e);
        } else if (part == 1) {
            n1++;
        } else {
            n2++;
        }
    }
    if (!found) {
        if (len != MD_ROOT_LEN)
            return MD_ENOENT;
        *e = (struct md_entry){.kind = MD_KIND_DIR}; /* a tenant without data */
        return MD_OK;
    }
    if (e->kind != MD_KIND_DIR)
        return MD_OK;
    return view_listing(r, n1, n2, limit, cb, ctx, complete);
}

/* ---- views fetched asynchronously (md_store_view_async) ---- */

struct pg_vjob {
    struct pg_txn t; /* its `fetched` answers from this job's results */
    struct md_view_job *job;
    struct md_pg_query q;
    enum pg_stmt sent; /* the statement of q */
    char name[8];      /* its prepared name */
    PGresult *get, *view;
};

static void vjob_free(struct pg_vjob *j)
{
    PQclear(j->get);
    PQclear(j->view);
    j->t.pipe.res = NULL; /* borrowed from get or view */
    md_pg_pipe_free(&j->t.pipe);
    free(j);
}

/* The job whose txn is `t`. */
static struct pg_vjob *vjob_of(struct pg_txn *t)
{
    return (struct pg_vjob *)((char *)t - offsetof(struct pg_vjob, t));
}

void md_pg_vjob_end(struct pg_txn *t)
{
    vjob_free(vjob_of(t));
}

/* Statement `id` of md_pg_view answered from the results the view's job
 * fetched, into t->pipe.res (the txn's `fetched`). */
static enum md_err use_fetched(struct pg_txn *t, enum pg_stmt id)
{
    struct pg_vjob *j = vjob_of(t);
    PGresult *r = id == P_GET ? j->get : id == P_VIEW ? j->view : NULL;
    if (!r) {
        md_log_msg(MD_LOG_ERROR, "internal error", "a view asked for a statement not fetched");
        return MD_EDB;
    }
    t->pipe.res = r; /* borrowed: the job's until vjob_free */
    t->pipe.st.statements++;
    t->pipe.st.round_trips++;
    return MD_OK;
}

static void vjob_send(struct pg_store *s, struct pg_vjob *j, enum pg_stmt id)
{
    j->sent = id;
    snprintf(j->name, sizeof j->name, "m%d", (int)id);
    j->q.stmt = j->name;
    j->q.resent = j->q.aborts = 0;
    md_pg_reads_submit(s->reads, &j->q);
}

static void vjob_done(struct md_pg_query *q, PGresult *res, enum md_err e)
{
    struct pg_vjob *j = (struct pg_vjob *)((char *)q - offsetof(struct pg_vjob, q));
    struct pg_store *s = md_pg_store_of(&j->t);
    struct md_view_job *job = j->job;
    if (!e && j->sent == P_GET) {
        j->get = res;
        /* A directory after all: its listing too (md_pg_view's second
         * round trip). */
        if (PQntuples(res) == 1 && md_pg_r_i16(res, 0, 0) == MD_KIND_DIR) {
            int64_t limit = job->max_entries ? (int64_t)job->max_entries : 1;
            e = view_params(&j->q.p, j->t.pipe.arrays, job->tenant, job->path, job->len, limit);
            if (!e) {
                vjob_send(s, j, P_VIEW);
                return;
            }
        }
    } else if (!e) {
        j->view = res;
    }
    if (e) {
        vjob_free(j);
        job->done(job, NULL, e);
        return;
    }
    job->done(job, &j->t.base, MD_OK);
}

enum md_err md_pg_view_async(struct md_store *base, struct md_view_job *job)
{
    struct pg_store *s = (struct pg_store *)base;
    struct pg_vjob *j = calloc(1, sizeof *j);
    if (!j)
        return MD_ENOMEM;
    j->t.base.store = base;
    j->t.fetched = use_fetched;
    md_pg_pipe_init(&j->t.pipe);
    j->job = job;
    j->q.done = vjob_done;
    enum md_err e = MD_OK;
    enum pg_stmt id = P_GET;
    if (looks_like_file(job->path, job->len)) {
        get_params(&j->q.p, job->tenant, job->path, job->len);
    } else {
        int64_t limit = job->max_entries ? (int64_t)job->max_entries : 1;
        e = view_params(&j->q.p, j->t.pipe.arrays, job->tenant, job->path, job->len, limit);
        id = P_VIEW;
    }
    if (e) {
        vjob_free(j);
        return e;
    }
    vjob_send(s, j, id);
    return MD_OK;
}
