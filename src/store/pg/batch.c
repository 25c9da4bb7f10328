/*
 * batch.c — optimistic batches of the PostgreSQL writer (md_txn_batch_begin
 * with `defer`, md_txn_flush; see md_store_pg.h).
 *
 * A batch begins with its tenants' advisory locks (P_LOCK, ascending keys;
 * every batch). With `defer`, the writer reads the rows of the whole batch
 * in the round trip of its locks (P_PREFETCH: every path its commands
 * name, and their ancestors), answers the commands' locates from them
 * (md_pg_pre_locate), gathers their inserts and file updates into one bulk
 * statement each (md_pg_bulk_insert, md_pg_bulk_set: P_INSERT_MANY,
 * P_SET_MANY, held by the pipe), and sends every write in one round trip
 * before the COMMIT's: three round trips per batch instead of two per
 * command, and no savepoints. A queued write marks the prefetched rows it
 * may change stale; a locate that needs one of those goes to the database.
 *
 * Any failed statement, and anything the prefetched rows cannot answer
 * (md_pg_abandon_attempt), abandons the attempt: the writer then runs the
 * batch again the exact way (MD_EREDO), where a failing command fails
 * alone.
 *
 * Owns no part: the batch's state and its rows (struct pg_batch) are
 * attempt.c's, which the files that write read too. Errors as md_store.h.
 */
#include <stdlib.h>
#include <string.h>

#include "base/md_path.h"
#include "internal.h"
#include "store/md_tenant_cache.h"

/* Files larger than this are not prefetched with their content: a batch of
 * edits to large files would hold them all in memory at once. */
#define PREFETCH_CONTENT_MAX ((int64_t)64 << 10)

static const struct pg_stmt_def stmts[] = {
    /* A tenant's lock, for the transaction (md_store_tenant_key). */
    {P_LOCK, "SELECT pg_advisory_xact_lock($1)", 1, {OID_INT8}, 0},
    /* An optimistic batch's rows: one row per wanted (tenant, path) whose
     * tenant exists, by its position in the arrays; a file's content when
     * wanted and at most $4 bytes (else `omitted`). The lateral subquery
     * (kept apart by OFFSET 0) makes each row one lookup of the primary key
     * in the generic plan, whatever the tenant's size; a plain LEFT JOIN
     * was planned as a scan of the tenant's rows. */
    {P_PREFETCH,
     "SELECT w.ord, t.id, e.kind, e.size,"
     " CASE WHEN w.want = 1 AND e.kind = 0 AND e.size <= $4 THEN e.content END,"
     " w.want = 1 AND e.kind = 0 AND e.size > $4, e.sha256, t.last_version,"
     " t.last_seq, t.files, t.max_bytes, t.max_files, e.vrun"
     " FROM unnest($1::text[], $2::text[], $3::int2[]) WITH ORDINALITY"
     " AS w(tenant, path, want, ord)"
     " JOIN tenants t ON t.name = w.tenant"
     " LEFT JOIN LATERAL (SELECT kind, size, content, sha256, vrun FROM entries"
     " WHERE tenant = t.id AND path = w.path OFFSET 0) e ON true",
     4,
     {OID_TEXTARRAY, OID_TEXTARRAY, OID_INT2ARRAY, OID_INT8},
     0},
    /* An optimistic batch's inserts and file updates, several commands' in
     * one statement (gathered by the pipe). */
    {P_INSERT_MANY,
     "INSERT INTO entries (tenant, path, depth, kind, size, mtime, content,"
     " sha256) SELECT * FROM unnest($1::int8[], $2::text[], $3::int4[],"
     " $4::int2[], $5::int8[], $6::int8[], $7::bytea[], $8::bytea[])",
     8,
     {OID_INT8ARRAY, OID_TEXTARRAY, OID_INT4ARRAY, OID_INT2ARRAY, OID_INT8ARRAY, OID_INT8ARRAY,
      OID_BYTEAARRAY, OID_BYTEAARRAY},
     0},
    {P_SET_MANY,
     "UPDATE entries e SET content = u.content, size = u.size, mtime = u.mtime,"
     " sha256 = u.sha256, vrun = u.vrun FROM unnest($1::int8[], $2::text[], $3::bytea[],"
     " $4::int8[], $5::int8[], $6::bytea[], $7::int2[])"
     " AS u(tenant, path, content, size, mtime, sha256, vrun)"
     " WHERE e.tenant = u.tenant AND e.path = u.path COLLATE \"C\" AND e.kind = 0",
     7,
     {OID_INT8ARRAY, OID_TEXTARRAY, OID_BYTEAARRAY, OID_INT8ARRAY, OID_INT8ARRAY, OID_BYTEAARRAY,
      OID_INT2ARRAY},
     0},
};
const struct pg_stmt_defs md_pg_batch_stmts = MD_PG_STMT_DEFS(stmts);

/* Whether the rows can answer a locate of `l`: every path prefetched and
 * not changed since (with its content when wanted), and its ancestors when
 * wanted. */
static int pre_can_locate(const struct pg_txn *t, const char *tenant, const struct md_locate *l,
                          size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct pg_prefetched *e = md_pg_prefetched(t, tenant, l[i].path, l[i].len);
        if (!e || e->stale ||
            (l[i].want_content && e->found && e->kind == MD_KIND_FILE && !e->has_content))
            return 0;
        for (size_t plen = l[i].len; l[i].want_parent && plen > MD_ROOT_LEN;) {
            plen = md_path_parent_len(l[i].path, plen);
            const struct pg_prefetched *a = md_pg_prefetched(t, tenant, l[i].path, plen);
            if (!a || a->stale)
                return 0;
        }
    }
    return 1;
}

/* One path of a locate from the rows of a tenant `id` that exists. */
static void pre_locate_one(struct pg_txn *t, const char *tenant, int64_t id, struct md_locate *q)
{
    const struct pg_prefetched *e = md_pg_prefetched(t, tenant, q->path, q->len);
    if (e->found) {
        enum md_kind kind = e->kind == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
        int64_t size = e->size;
        if (kind == MD_KIND_DIR)
            size += md_pg_sizes_pending(t, id, q->path, q->len);
        q->found = 1;
        q->e = (struct md_entry){.kind = kind, .size = size};
        if (e->sha256) {
            q->e.has_sha256 = 1;
            memcpy(q->e.sha256, e->sha256, MD_SHA256_LEN);
        }
        if (q->want_content && kind == MD_KIND_FILE) {
            q->e.content = e->content;
            q->e.content_len = e->content_len;
        }
    }
    /* The deepest ancestor there is (the root, at least). */
    for (size_t plen = q->len; q->want_parent && plen > MD_ROOT_LEN;) {
        plen = md_path_parent_len(q->path, plen);
        const struct pg_prefetched *a = md_pg_prefetched(t, tenant, q->path, plen);
        if (a->found) {
            q->anc_len = plen;
            q->anc_kind = a->kind == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
            break;
        }
    }
}

/* As md_pg_locate would answer from the database. */
int md_pg_pre_locate(struct pg_txn *t, const char *tenant, struct md_locate *l, size_t n,
                     int *tenant_exists)
{
    if (!md_pg_deferring(t) || n == 0 || !pre_can_locate(t, tenant, l, n))
        return 0;
    int64_t id = md_pg_prefetched(t, tenant, l[0].path, l[0].len)->id;
    *tenant_exists = id != 0;
    if (id)
        md_tenant_cache_put(t->conn->tenants, tenant, id);
    for (size_t i = 0; i < n; i++) {
        struct md_locate *q = &l[i];
        q->found = 0;
        q->anc_len = MD_ROOT_LEN;
        q->anc_kind = MD_KIND_DIR;
        q->e = (struct md_entry){.kind = MD_KIND_DIR};
        if (!id)
            q->found = q->len == MD_ROOT_LEN;
        else
            pre_locate_one(t, tenant, id, q);
    }
    /* Its statement and round trip: the prefetch's. */
    t->pipe.st.statements++;
    t->pipe.st.round_trips++;
    return 1;
}

/* From the prefetched root and what the batch's queued writes changed. */
int md_pg_pre_usage(struct pg_txn *t, const char *tenant, struct md_usage *u)
{
    const struct pg_prefetched *root = md_pg_prefetched(t, tenant, MD_ROOT, MD_ROOT_LEN);
    if (!root || root->stale || root->files_unknown || (root->id && !root->found))
        return 0;
    if (!root->id)
        return 1; /* no data (a tenant made since is stale) */
    u->bytes = root->size + md_pg_sizes_pending(t, root->id, MD_ROOT, MD_ROOT_LEN);
    u->files = root->files + root->files_delta;
    u->max_bytes = root->max_bytes;
    u->max_files = root->max_files;
    return 1;
}

/* ---- bulk statements ---- */

/* A row half added leaves the arrays unusable: the attempt is abandoned. */
static enum md_err bulk_check(struct pg_txn *t, enum md_err e)
{
    if (e) {
        md_pg_gather_drop(&t->pipe);
        md_pg_batch_failed(t, e);
    }
    return e;
}

/* (As insert_send of tree.c would.) */
enum md_err md_pg_bulk_insert(struct pg_txn *t, int64_t id, const char *path, size_t len,
                              size_t from, const char *content, size_t content_len,
                              const unsigned char *sha256)
{
    static const Oid types[] = {OID_INT8, OID_TEXT, OID_INT4,  OID_INT2,
                                OID_INT8, OID_INT8, OID_BYTEA, OID_BYTEA};
    struct pg_gather *g = &t->pipe.gather;
    struct md_buf *c = g->cols;
    enum md_err e = md_pg_gather_row(t, P_INSERT_MANY, types);
    int64_t mtime = md_pg_now_ms();
    for (size_t i = from + 1; !e && i <= len; i++) {
        int dir = i < len && path[i] == '/';
        if (!dir && i != len)
            continue;
        e = md_pg_arr_i64(&c[0], id);
        if (!e)
            e = md_pg_arr_elem(&c[1], path, i);
        if (!e)
            e = md_pg_arr_i32(&c[2], md_path_depth(path, i));
        if (!e)
            e = md_pg_arr_i16(&c[3], dir ? MD_KIND_DIR : MD_KIND_FILE);
        if (!e)
            e = md_pg_arr_i64(&c[4], dir ? 0 : (int64_t)content_len);
        if (!e)
            e = md_pg_arr_i64(&c[5], mtime);
        if (!e)
            e = dir ? md_pg_arr_null(&c[6]) : md_pg_arr_elem(&c[6], content, content_len);
        if (!e)
            e = dir ? md_pg_arr_null(&c[7]) : md_pg_arr_elem(&c[7], sha256, MD_SHA256_LEN);
        g->rows++;
    }
    g->bytes += content_len;
    t->pipe.st.statements++; /* the command's share of the bulk statement */
    t->pipe.gathered_since_mark = 1;
    return bulk_check(t, e);
}

enum md_err md_pg_bulk_set(struct pg_txn *t, int64_t id, const char *path, size_t len,
                           const char *content, size_t content_len, const unsigned char *sha256,
                           int vrun)
{
    static const Oid types[] = {OID_INT8, OID_TEXT,  OID_BYTEA, OID_INT8,
                                OID_INT8, OID_BYTEA, OID_INT2};
    struct pg_gather *g = &t->pipe.gather;
    struct md_buf *c = g->cols;
    enum md_err e = md_pg_gather_row(t, P_SET_MANY, types);
    if (!e)
        e = md_pg_arr_i64(&c[0], id);
    if (!e)
        e = md_pg_arr_elem(&c[1], path, len);
    if (!e)
        e = md_pg_arr_elem(&c[2], content, content_len);
    if (!e)
        e = md_pg_arr_i64(&c[3], (int64_t)content_len);
    if (!e)
        e = md_pg_arr_i64(&c[4], md_pg_now_ms());
    if (!e)
        e = md_pg_arr_elem(&c[5], sha256, MD_SHA256_LEN);
    if (!e)
        e = md_pg_arr_i16(&c[6], (int16_t)vrun);
    g->rows++;
    g->bytes += content_len;
    t->pipe.st.statements++; /* the command's share of the bulk statement */
    t->pipe.gathered_since_mark = 1;
    return bulk_check(t, e);
}

/* ---- the prefetch ---- */

/* Queue P_PREFETCH of the rows to read. */
static enum md_err prefetch_send(struct pg_txn *t)
{
    size_t n;
    const struct pg_prefetched *rows = md_pg_pre_rows(t, &n);
    struct md_buf *arr = t->pipe.arrays;
    enum md_err e = md_pg_arr_begin(&arr[0], OID_TEXT, n);
    if (!e)
        e = md_pg_arr_begin(&arr[1], OID_TEXT, n);
    if (!e)
        e = md_pg_arr_begin(&arr[2], OID_INT2, n);
    for (size_t i = 0; i < n && !e; i++) {
        e = md_pg_arr_elem(&arr[0], rows[i].tenant, strlen(rows[i].tenant));
        if (!e)
            e = md_pg_arr_elem(&arr[1], rows[i].path, rows[i].len);
        if (!e)
            e = md_pg_arr_i16(&arr[2], rows[i].want);
    }
    struct md_pg_params p = {.n = 0};
    for (int i = 0; i < 3; i++)
        md_pg_bytes(&p, arr[i].data, arr[i].len);
    md_pg_i64(&p, PREFETCH_CONTENT_MAX);
    return e ? e : md_pg_send(t, P_PREFETCH, &p);
}

/* What the result of P_PREFETCH says of each row (and of each tenant's
 * counters). */
static enum md_err prefetch_read(struct pg_txn *t, const PGresult *r)
{
    size_t n;
    struct pg_prefetched *rows = md_pg_pre_rows(t, &n);
    for (int row = 0; r && row < PQntuples(r); row++) {
        int64_t ord = md_pg_r_i64(r, row, 0);
        if (ord < 1 || (uint64_t)ord > n)
            continue;
        struct pg_prefetched *pe = &rows[ord - 1];
        pe->id = md_pg_r_i64(r, row, 1);
        if (md_pg_history_counters(t, pe->id, md_pg_r_i64(r, row, 7), md_pg_r_i64(r, row, 8)))
            return MD_ENOMEM;
        pe->files = md_pg_r_i64(r, row, 9);
        pe->max_bytes = md_pg_r_i64_or(r, row, 10, -1);
        pe->max_files = md_pg_r_i64_or(r, row, 11, -1);
        if (PQgetisnull(r, row, 2))
            continue;
        pe->found = 1;
        pe->kind = md_pg_r_i16(r, row, 2) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
        pe->size = md_pg_r_i64(r, row, 3);
        pe->vrun = md_pg_r_i16(r, row, 12);
        if (PQgetlength(r, row, 6) == MD_SHA256_LEN)
            pe->sha256 = (const unsigned char *)PQgetvalue(r, row, 6);
        int omitted = !PQgetisnull(r, row, 5) && PQgetvalue(r, row, 5)[0];
        if (pe->want && pe->kind == MD_KIND_FILE && !omitted) {
            pe->has_content = 1;
            pe->content = PQgetisnull(r, row, 4) ? "" : PQgetvalue(r, row, 4);
            pe->content_len = PQgetisnull(r, row, 4) ? 0 : (size_t)PQgetlength(r, row, 4);
        }
    }
    return MD_OK;
}

/* Read the rows of every path of `w` and of each one's ancestors, in the
 * round trip that takes the tenant locks; then the batch is optimistic. */
static enum md_err prefetch(struct pg_txn *t, const struct md_batch_path *w, size_t n)
{
    enum md_err e = md_pg_pre_keys(t, w, n);
    if (e)
        return e;
    e = prefetch_send(t);
    if (!e)
        e = md_pg_flush(t, P_PREFETCH); /* with BEGIN and the tenant locks */
    if (e) {
        md_pg_batch_reset(t); /* no rows: nothing was prefetched */
        return e;
    }
    const PGresult *r = t->pipe.res;
    md_pg_pre_hold(t, t->pipe.res); /* the rows point into it */
    t->pipe.res = NULL;
    e = prefetch_read(t, r);
    if (e)
        return e;
    md_pg_batch_defer(t, 1);
    md_pg_pipe_mark(&t->pipe);
    return MD_OK;
}

/* ---- tenant locks ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Queue the advisory locks of `n` tenants, in ascending key order: the
 * instances writing the same tenants take turns and never deadlock. */
static enum md_err lock_tenants(struct pg_txn *t, const char *const *names, size_t n)
{
    int64_t *keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys)
        return MD_ENOMEM;
    for (size_t i = 0; i < n; i++)
        keys[i] = md_store_tenant_key(names[i]);
    qsort(keys, n, sizeof *keys, cmp_i64);
    enum md_err e = MD_OK;
    for (size_t i = 0; i < n && !e; i++) {
        if (i > 0 && keys[i] == keys[i - 1])
            continue;
        struct md_pg_params p = {.n = 0};
        md_pg_i64(&p, keys[i]);
        e = md_pg_send(t, P_LOCK, &p); /* run in order: ascending keys */
    }
    free(keys);
    return e;
}

/* ---- the batch ---- */

/* The batch's tenants locked (queued: they go with the first round trip);
 * with b->defer, its rows read at once and the batch optimistic (a failure
 * of the read abandons it: MD_EREDO, but for a lost connection). */
enum md_err md_pg_batch_begin(struct md_txn *base, const struct md_batch *b)
{
    struct pg_txn *t = (struct pg_txn *)base;
    enum md_err e = lock_tenants(t, b->tenants, b->ntenants);
    if (e || !b->defer)
        return e;
    e = prefetch(t, b->paths, b->npaths);
    return e == MD_OK || e == MD_EUNAVAIL ? e : MD_EREDO;
}

/* Send the queued writes of an optimistic batch (one round trip) and end
 * the optimistic mode; a failure abandons the attempt (MD_EREDO), but for
 * a lost connection. */
enum md_err md_pg_batch_flush(struct md_txn *base)
{
    struct pg_txn *t = (struct pg_txn *)base;
    if (!md_pg_deferring(t))
        return MD_OK;
    enum md_err e = md_pg_history_send(t); /* the versions first: before the writes go */
    if (!e)
        e = t->pipe.nqueued || t->pipe.gather.rows ? md_pg_flush(t, P_COUNT) : MD_OK;
    md_pg_batch_defer(t, 0);
    return e == MD_OK || e == MD_EUNAVAIL ? e : MD_EREDO;
}
