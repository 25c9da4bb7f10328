/*
 * batch.c — optimistic batches of the PostgreSQL writer (md_txn_batch_begin
 * with `defer`, md_txn_flush; see md_store_pg.h).
 *
 * The writer reads the rows of a whole batch in the round trip of its
 * locks (P_PREFETCH: every path its commands name, and their ancestors),
 * answers the commands' locates from them (md_pg_pre_locate), gathers
 * their inserts and file updates into one bulk statement each
 * (md_pg_bulk_insert, md_pg_bulk_set: P_INSERT_MANY, P_SET_MANY, held by
 * the pipe), and sends every write in one round trip before the COMMIT's:
 * three round trips per batch instead of two per command, and no
 * savepoints. A queued write marks the prefetched rows it may change
 * stale; a locate that needs one of those goes to the database.
 *
 * Any failed statement, and anything the prefetched rows cannot answer
 * (md_pg_abandon_attempt), abandons the attempt: the writer then runs the
 * batch again the exact way (MD_EREDO), where a failing command fails
 * alone.
 *
 * Owns: struct pg_batch, the writer's part (made with its connection).
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
     " t.last_seq, t.files, t.max_bytes, t.max_files"
     " FROM unnest($1::text[], $2::text[], $3::int2[]) WITH ORDINALITY"
     " AS w(tenant, path, want, ord)"
     " JOIN tenants t ON t.name = w.tenant"
     " LEFT JOIN LATERAL (SELECT kind, size, content, sha256 FROM entries"
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
     " sha256 = u.sha256 FROM unnest($1::int8[], $2::text[], $3::bytea[],"
     " $4::int8[], $5::int8[], $6::bytea[])"
     " AS u(tenant, path, content, size, mtime, sha256)"
     " WHERE e.tenant = u.tenant AND e.path = u.path COLLATE \"C\" AND e.kind = 0",
     6,
     {OID_INT8ARRAY, OID_TEXTARRAY, OID_BYTEAARRAY, OID_INT8ARRAY, OID_INT8ARRAY, OID_BYTEAARRAY},
     0},
};
const struct pg_stmt_defs md_pg_batch_stmts = MD_PG_STMT_DEFS(stmts);

struct pg_batch {
    int deferring;              /* writes are queued, locates answered from `rows` */
    enum md_err abandoned;      /* a statement failed: run the batch the exact way */
    int cmd_wrote;              /* the running command queued a write */
    PGresult *pre;              /* the prefetched rows */
    struct pg_prefetched *rows; /* sorted by (tenant, path) */
    size_t n, cap;
};

struct pg_batch *md_pg_batch_new(void)
{
    return calloc(1, sizeof(struct pg_batch));
}

void md_pg_batch_free(struct pg_batch *b)
{
    if (!b)
        return;
    PQclear(b->pre);
    free(b->rows);
    free(b);
}

void md_pg_batch_reset(struct pg_txn *t)
{
    struct pg_batch *b = t->batch;
    PQclear(b->pre);
    b->pre = NULL;
    b->n = 0;
    b->deferring = 0;
    b->abandoned = MD_OK;
}

int md_pg_deferring(const struct pg_txn *t)
{
    return t->batch && t->batch->deferring;
}

enum md_err md_pg_abandon_attempt(struct pg_txn *t)
{
    if (!t->batch->abandoned)
        t->batch->abandoned = MD_EDB;
    return MD_OK;
}

void md_pg_batch_failed(struct pg_txn *t, enum md_err e)
{
    if (md_pg_deferring(t) && !t->batch->abandoned)
        t->batch->abandoned = e;
}

void md_pg_batch_command_begins(struct pg_txn *t)
{
    md_pg_pipe_mark(&t->pipe);
    t->batch->cmd_wrote = 0;
}

enum md_err md_pg_batch_command_ends(struct pg_txn *t, int rollback)
{
    struct pg_batch *b = t->batch;
    if (rollback && b->cmd_wrote && !b->abandoned)
        b->abandoned = MD_EDB;
    return b->abandoned ? MD_EREDO : MD_OK;
}

/* ---- the prefetched rows ---- */

static int key_cmp(const char *ta, const char *pa, size_t la, const char *tb, const char *pb,
                   size_t lb)
{
    int c = strcmp(ta, tb);
    if (!c)
        c = memcmp(pa, pb, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

static int prefetched_cmp(const void *a, const void *b)
{
    const struct pg_prefetched *x = a, *y = b;
    return key_cmp(x->tenant, x->path, x->len, y->tenant, y->path, y->len);
}

/* The first row at or after (tenant, path). */
static size_t pre_lower(const struct pg_batch *b, const char *tenant, const char *path, size_t len)
{
    size_t lo = 0, hi = b->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct pg_prefetched *m = &b->rows[mid];
        if (key_cmp(m->tenant, m->path, m->len, tenant, path, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct pg_prefetched *pre_find(struct pg_batch *b, const char *tenant, const char *path,
                                      size_t len)
{
    size_t i = pre_lower(b, tenant, path, len);
    if (i < b->n &&
        key_cmp(b->rows[i].tenant, b->rows[i].path, b->rows[i].len, tenant, path, len) == 0)
        return &b->rows[i];
    return NULL;
}

const struct pg_prefetched *md_pg_prefetched(const struct pg_txn *t, const char *tenant,
                                             const char *path, size_t len)
{
    return t->batch ? pre_find(t->batch, tenant, path, len) : NULL;
}

/* Sizes of ancestors are not changed by a write: they are pending
 * (md_dirsizes) until md_pg_sizes_send. */
void md_pg_pre_forget(struct pg_txn *t, const char *tenant, const char *path, size_t len, int below,
                      size_t keep)
{
    struct pg_batch *b = t->batch;
    b->cmd_wrote = 1;
    if (b->n == 0)
        return;
    for (size_t i = pre_lower(b, tenant, path, len); i < b->n; i++) {
        struct pg_prefetched *e = &b->rows[i];
        if (strcmp(e->tenant, tenant) != 0 || e->len < len || memcmp(e->path, path, len) != 0)
            break; /* past every path that begins with `path` */
        if (e->len == len || (below && e->path[len] == '/'))
            e->stale = 1;
    }
    for (size_t plen = len; plen > keep && plen > MD_ROOT_LEN;) {
        plen = md_path_parent_len(path, plen);
        struct pg_prefetched *e = plen > keep ? pre_find(b, tenant, path, plen) : NULL;
        if (e)
            e->stale = 1;
    }
}

/* A queued write adds (+1) or removes (-1, with everything below `path`)
 * files of `tenant`: its root's count follows; the removal of what is not
 * a prefetched file makes the count unknown. */
void md_pg_pre_files_add(struct pg_txn *t, const char *tenant, const char *path, size_t len,
                         int delta)
{
    struct pg_prefetched *root = pre_find(t->batch, tenant, MD_ROOT, MD_ROOT_LEN);
    if (!root)
        return;
    const struct pg_prefetched *e = delta < 0 ? pre_find(t->batch, tenant, path, len) : NULL;
    if (delta < 0 && (!e || !e->found || e->stale || e->kind != MD_KIND_FILE))
        root->files_unknown = 1;
    else
        root->files_delta += delta;
}

/* A tenant was created: whatever was read of it is not true any more. */
void md_pg_pre_forget_tenant(struct pg_txn *t, const char *tenant)
{
    struct pg_batch *b = t->batch;
    b->cmd_wrote = 1;
    for (size_t i = pre_lower(b, tenant, "", 0); i < b->n; i++) {
        if (strcmp(b->rows[i].tenant, tenant) != 0)
            break;
        b->rows[i].stale = 1;
    }
}

/* (The pending ones become 0.) */
void md_pg_pre_fold_sizes(struct pg_txn *t)
{
    struct pg_batch *b = t->batch;
    for (size_t i = 0; i < b->n; i++) {
        struct pg_prefetched *e = &b->rows[i];
        if (e->found && e->kind == MD_KIND_DIR && e->id)
            e->size += md_pg_sizes_pending(t, e->id, e->path, e->len);
    }
}

/* Whether the rows can answer a locate of `l`: every path prefetched and
 * not changed since (with its content when wanted), and its ancestors when
 * wanted. */
static int pre_can_locate(struct pg_batch *b, const char *tenant, const struct md_locate *l,
                          size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct pg_prefetched *e = pre_find(b, tenant, l[i].path, l[i].len);
        if (!e || e->stale ||
            (l[i].want_content && e->found && e->kind == MD_KIND_FILE && !e->has_content))
            return 0;
        for (size_t plen = l[i].len; l[i].want_parent && plen > MD_ROOT_LEN;) {
            plen = md_path_parent_len(l[i].path, plen);
            const struct pg_prefetched *a = pre_find(b, tenant, l[i].path, plen);
            if (!a || a->stale)
                return 0;
        }
    }
    return 1;
}

/* One path of a locate from the rows of a tenant `id` that exists. */
static void pre_locate_one(struct pg_txn *t, const char *tenant, int64_t id, struct md_locate *q)
{
    struct pg_batch *b = t->batch;
    const struct pg_prefetched *e = pre_find(b, tenant, q->path, q->len);
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
        const struct pg_prefetched *a = pre_find(b, tenant, q->path, plen);
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
    if (!md_pg_deferring(t) || n == 0 || !pre_can_locate(t->batch, tenant, l, n))
        return 0;
    int64_t id = pre_find(t->batch, tenant, l[0].path, l[0].len)->id;
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
    const struct pg_prefetched *root = pre_find(t->batch, tenant, MD_ROOT, MD_ROOT_LEN);
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
        if (!t->batch->abandoned)
            t->batch->abandoned = e;
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
                           const char *content, size_t content_len, const unsigned char *sha256)
{
    static const Oid types[] = {OID_INT8, OID_TEXT, OID_BYTEA, OID_INT8, OID_INT8, OID_BYTEA};
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
    g->rows++;
    g->bytes += content_len;
    t->pipe.st.statements++; /* the command's share of the bulk statement */
    t->pipe.gathered_since_mark = 1;
    return bulk_check(t, e);
}

/* ---- the prefetch ---- */

/* Room for `n` more rows. */
static enum md_err pre_reserve(struct pg_batch *b, size_t n)
{
    if (b->cap - b->n >= n)
        return MD_OK;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->n < n)
        cap *= 2;
    struct pg_prefetched *rows = realloc(b->rows, cap * sizeof *rows);
    if (!rows)
        return MD_ENOMEM;
    b->rows = rows;
    b->cap = cap;
    return MD_OK;
}

/* The rows to read: every path of `w` and every ancestor of each; sorted,
 * once each (wanted with its content when any command wants it). */
static enum md_err prefetch_keys(struct pg_batch *b, const struct md_batch_path *w, size_t n)
{
    b->n = 0;
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += 1 + (size_t)md_path_depth(w[i].path, w[i].len);
    enum md_err e = pre_reserve(b, count);
    if (e)
        return e;
    for (size_t i = 0; i < n; i++) {
        for (size_t plen = w[i].len;;) {
            b->rows[b->n++] = (struct pg_prefetched){.tenant = w[i].tenant,
                                                     .path = w[i].path,
                                                     .len = plen,
                                                     .want = plen == w[i].len && w[i].content};
            if (plen <= MD_ROOT_LEN)
                break;
            plen = md_path_parent_len(w[i].path, plen);
        }
    }
    qsort(b->rows, b->n, sizeof *b->rows, prefetched_cmp);
    size_t k = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (k > 0 && prefetched_cmp(&b->rows[k - 1], &b->rows[i]) == 0)
            b->rows[k - 1].want |= b->rows[i].want;
        else
            b->rows[k++] = b->rows[i];
    }
    b->n = k;
    return MD_OK;
}

/* Queue P_PREFETCH of the rows to read. */
static enum md_err prefetch_send(struct pg_txn *t)
{
    struct pg_batch *b = t->batch;
    struct md_buf *arr = t->pipe.arrays;
    enum md_err e = md_pg_arr_begin(&arr[0], OID_TEXT, b->n);
    if (!e)
        e = md_pg_arr_begin(&arr[1], OID_TEXT, b->n);
    if (!e)
        e = md_pg_arr_begin(&arr[2], OID_INT2, b->n);
    for (size_t i = 0; i < b->n && !e; i++) {
        e = md_pg_arr_elem(&arr[0], b->rows[i].tenant, strlen(b->rows[i].tenant));
        if (!e)
            e = md_pg_arr_elem(&arr[1], b->rows[i].path, b->rows[i].len);
        if (!e)
            e = md_pg_arr_i16(&arr[2], b->rows[i].want);
    }
    struct md_pg_params p = {.n = 0};
    for (int i = 0; i < 3; i++)
        md_pg_bytes(&p, arr[i].data, arr[i].len);
    md_pg_i64(&p, PREFETCH_CONTENT_MAX);
    return e ? e : md_pg_send(t, P_PREFETCH, &p);
}

/* What the result of P_PREFETCH says of each row (and of each tenant's
 * counters). */
static enum md_err prefetch_read(struct pg_txn *t)
{
    struct pg_batch *b = t->batch;
    const PGresult *r = b->pre;
    for (int row = 0; r && row < PQntuples(r); row++) {
        int64_t ord = md_pg_r_i64(r, row, 0);
        if (ord < 1 || (uint64_t)ord > b->n)
            continue;
        struct pg_prefetched *pe = &b->rows[ord - 1];
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
    struct pg_batch *b = t->batch;
    enum md_err e = prefetch_keys(b, w, n);
    if (e)
        return e;
    e = prefetch_send(t);
    if (!e)
        e = md_pg_flush(t, P_PREFETCH); /* with BEGIN and the tenant locks */
    if (e) {
        b->n = 0;
        return e;
    }
    b->pre = t->pipe.res;
    t->pipe.res = NULL;
    e = prefetch_read(t);
    if (e)
        return e;
    b->deferring = 1;
    b->abandoned = MD_OK;
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
    t->batch->deferring = 0;
    return e == MD_OK || e == MD_EUNAVAIL ? e : MD_EREDO;
}
