/*
 * history.c — what the PostgreSQL writer records of its writes
 * (md_history.h): versions, change-feed entries, the tenants' counters,
 * the NOTIFY of the tenants written, and the VACUUM after a commit that
 * redacted or erased.
 *
 * Versions and change-feed rows are numbered by memoryd from the tenant's
 * counters (md_hist), loaded with the locate or the prefetch that every
 * write command begins with and written back once before the commit. A
 * version is written from memory when memoryd has the old content (a
 * file's absence; an optimistic batch's prefetched file), else copied by
 * the database before the row changes (INSERT ... SELECT). A directory's
 * files are versioned in one statement that says how many it wrote; an
 * optimistic batch cannot wait for that answer, so a directory delete or
 * rename abandons the attempt (the batch runs again the exact way). The
 * rows an optimistic batch writes from memory go in two bulk statements
 * with its writes (P_VER_MANY, P_CHANGES_MANY); an exact batch sends them
 * at once, inside the command's savepoint.
 *
 * Owns: struct pg_history, a write transaction's part (made with the
 * writer's and the pruner's connections, txn.c's md_pg_txn_parts_new).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_log.h"
#include "internal.h"
#include "store/md_delta.h"

/* The subtree of $3 (the entry itself, and what is between $4 and $5),
 * files only: two searches of the key. */
#define FILES_AT_OR_BELOW(cols)                                                                    \
    "(SELECT " cols " FROM entries WHERE tenant = $1 AND path = $3 AND kind = 0"                   \
    " UNION ALL SELECT " cols " FROM entries WHERE tenant = $1 AND path > $4 AND path < $5"        \
    " AND kind = 0)"

static const struct pg_stmt_def stmts[] = {
    {P_COUNTERS, "SELECT last_version, last_seq FROM tenants WHERE id = $1", 1, {OID_INT8}, 0},
    {P_COUNTERS_SET,
     "UPDATE tenants t SET last_version = u.v, last_seq = u.s"
     " FROM unnest($1::int8[], $2::int8[], $3::int8[]) AS u(id, v, s)"
     " WHERE t.id = u.id",
     3,
     {OID_INT8ARRAY, OID_INT8ARRAY, OID_INT8ARRAY},
     0},
    /* Versions whose content memoryd has (a file's absence; an optimistic
     * batch's overwrite of a prefetched file): several at once. */
    {P_VER_MANY,
     "INSERT INTO versions (tenant, version, path, existed, sha256, size, time,"
     " command, actor, content, enc) SELECT u.tenant, u.version, u.path, u.existed,"
     " u.sha256, nullif(u.size, -1), u.time, u.command, u.actor, u.content, u.enc"
     " FROM unnest($1::int8[], $2::int8[], $3::text[], $4::bool[], $5::bytea[],"
     " $6::int8[], $7::int8[], $8::text[], $9::text[], $10::bytea[], $11::int2[])"
     " AS u(tenant, version, path, existed, sha256, size, time, command, actor,"
     " content, enc)",
     11,
     {OID_INT8ARRAY, OID_INT8ARRAY, OID_TEXTARRAY, OID_BOOLARRAY, OID_BYTEAARRAY, OID_INT8ARRAY,
      OID_INT8ARRAY, OID_TEXTARRAY, OID_TEXTARRAY, OID_BYTEAARRAY, OID_INT2ARRAY},
     0},
    /* A file's version copied by the database, before it changes. */
    {P_VER_COPY,
     "INSERT INTO versions (tenant, version, path, existed, sha256, size, time,"
     " command, actor, content) SELECT tenant, $3, path, true, sha256, size, $4,"
     " $5, $6, content FROM entries WHERE tenant = $1 AND path = $2 AND kind = 0",
     6,
     {OID_INT8, OID_TEXT, OID_INT8, OID_INT8, OID_TEXT, OID_TEXT},
     0},
    /* Every file of a subtree ($2: the number before the first version):
     * how many, and their bytes. */
    {P_VER_SUBTREE,
     "WITH ins AS (INSERT INTO versions (tenant, version, path, existed, sha256, size, time,"
     " command, actor, content) SELECT $1, $2 + row_number() OVER (ORDER BY path), path, true,"
     " sha256, size, $6, $7, $8, content FROM " FILES_AT_OR_BELOW(
         "path, sha256, size, content") " f RETURNING size)"
                                        " SELECT count(*), coalesce(sum(size), 0)::int8"
                                        " FROM ins",
     8,
     {OID_INT8, OID_INT8, OID_TEXT, OID_TEXT, OID_TEXT, OID_INT8, OID_TEXT, OID_TEXT},
     0},
    /* ... of a subtree that moves to $9 ($10: the first character after
     * the old prefix): the old paths' contents, then the new paths'
     * absence. */
    {P_VER_SUBTREE_MOVE,
     "WITH f AS " FILES_AT_OR_BELOW(
         "path, sha256, size, content") ", ins AS (INSERT INTO versions (tenant, version,"
                                        " path, existed, sha256, size, time, command, actor,"
                                        " content) SELECT $1, $2 + row_number() OVER (ORDER"
                                        " BY g, p), p, g = 0, sha, sz, $6, $7, $8, c FROM"
                                        " (SELECT 0 AS g, path AS p, sha256 AS sha, size AS"
                                        " sz, content AS c FROM f UNION ALL SELECT 1,"
                                        " $9 || substr(path, $10), NULL, NULL, NULL FROM f) s"
                                        " RETURNING existed, size)"
                                        " SELECT count(*), coalesce(sum(size) FILTER (WHERE"
                                        " existed), 0)::int8 FROM ins",
     10,
     {OID_INT8, OID_INT8, OID_TEXT, OID_TEXT, OID_TEXT, OID_INT8, OID_TEXT, OID_TEXT, OID_TEXT,
      OID_INT4},
     0},
    {P_CHANGES_MANY,
     "INSERT INTO changes (tenant, seq, version, versions, history_bytes, time,"
     " command, paths, actor) SELECT u.tenant, u.seq, nullif(u.version, 0),"
     " u.versions, u.bytes, u.time, u.command, u.paths, u.actor"
     " FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::int8[], $5::int8[],"
     " $6::int8[], $7::text[], $8::text[], $9::text[])"
     " AS u(tenant, seq, version, versions, bytes, time, command, paths, actor)",
     9,
     {OID_INT8ARRAY, OID_INT8ARRAY, OID_INT8ARRAY, OID_INT8ARRAY, OID_INT8ARRAY, OID_INT8ARRAY,
      OID_TEXTARRAY, OID_TEXTARRAY, OID_TEXTARRAY},
     0},
    /* Delivered at the commit, to every instance's watcher (watch.c). */
    {P_NOTIFY,
     "SELECT pg_notify('memoryd_changes', n) FROM unnest($1::text[]) AS n",
     1,
     {OID_TEXTARRAY},
     0},
};
const struct pg_stmt_defs md_pg_history_stmts = MD_PG_STMT_DEFS(stmts);

/* The rows of P_VER_MANY gathered, one array parameter per column. */
struct pg_version_rows {
    struct md_buf tenant, version, path, existed, sha256, size, time, command, actor, content, enc;
    size_t rows;
};
#define VERSION_COLS 11

/* The rows of P_CHANGES_MANY gathered. */
struct pg_change_rows {
    struct md_buf tenant, seq, version, versions, history_bytes, time, command, paths, actor;
    size_t rows;
};
#define CHANGE_COLS 9

struct pg_history {
    struct md_hist *hist; /* counters, the running command, the touched paths */
    /* The rows of an optimistic batch not queued yet (sent before its
     * writes go); an exact batch sends each at once. */
    struct pg_version_rows versions;
    struct pg_change_rows changes;
    struct md_buf delta; /* a version's delta being made */
    char **notify;       /* the tenants to NOTIFY at the commit */
    size_t nnotify, capnotify;
    int vacuum;             /* MD_PG_VACUUM_*: after the commit */
    const char *cmd_tenant; /* the running command's (borrowed) */
};

/* The columns of the rows, in the order of the statement's parameters. */
static void version_cols(struct pg_version_rows *v, struct md_buf *cols[VERSION_COLS])
{
    struct md_buf *c[VERSION_COLS] = {&v->tenant, &v->version, &v->path, &v->existed,
                                      &v->sha256, &v->size,    &v->time, &v->command,
                                      &v->actor,  &v->content, &v->enc};
    memcpy(cols, c, sizeof c);
}

static void change_cols(struct pg_change_rows *ch, struct md_buf *cols[CHANGE_COLS])
{
    struct md_buf *c[CHANGE_COLS] = {&ch->tenant,   &ch->seq,           &ch->version,
                                     &ch->versions, &ch->history_bytes, &ch->time,
                                     &ch->command,  &ch->paths,         &ch->actor};
    memcpy(cols, c, sizeof c);
}

struct pg_history *md_pg_history_new(struct md_touched *shared)
{
    struct pg_history *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->hist = md_hist_new(shared);
    if (!h->hist) {
        free(h);
        return NULL;
    }
    struct md_buf *vc[VERSION_COLS], *cc[CHANGE_COLS];
    version_cols(&h->versions, vc);
    change_cols(&h->changes, cc);
    for (size_t i = 0; i < VERSION_COLS; i++)
        md_buf_init(vc[i], (size_t)256 << 20);
    for (size_t i = 0; i < CHANGE_COLS; i++)
        md_buf_init(cc[i], (size_t)64 << 20);
    md_buf_init(&h->delta, (size_t)1 << 31);
    return h;
}

static void notify_clear(struct pg_history *h)
{
    for (size_t i = 0; i < h->nnotify; i++)
        free(h->notify[i]);
    h->nnotify = 0;
}

void md_pg_history_free(struct pg_history *h)
{
    if (!h)
        return;
    struct md_buf *vc[VERSION_COLS], *cc[CHANGE_COLS];
    version_cols(&h->versions, vc);
    change_cols(&h->changes, cc);
    for (size_t i = 0; i < VERSION_COLS; i++)
        md_buf_free(vc[i]);
    for (size_t i = 0; i < CHANGE_COLS; i++)
        md_buf_free(cc[i]);
    md_buf_free(&h->delta);
    notify_clear(h);
    free(h->notify);
    md_hist_free(h->hist);
    free(h);
}

void md_pg_history_reset(struct pg_txn *t)
{
    struct pg_history *h = t->history;
    if (!h)
        return; /* a reader */
    md_hist_reset(h->hist);
    h->versions.rows = h->changes.rows = 0;
    notify_clear(h);
    h->vacuum = 0;
}

void md_pg_history_mark(struct pg_txn *t)
{
    md_hist_mark(t->history->hist);
}

void md_pg_history_restore(struct pg_txn *t)
{
    md_hist_restore(t->history->hist);
}

enum md_err md_pg_history_counters(struct pg_txn *t, int64_t id, int64_t last_version,
                                   int64_t last_seq)
{
    if (!t->history)
        return MD_OK;
    return md_hist_load(t->history->hist, id, last_version, last_seq) ? MD_ENOMEM : MD_OK;
}

struct md_hist *md_pg_history_hist(struct pg_txn *t)
{
    return t->history->hist;
}

static int history_on(const struct pg_txn *t)
{
    return md_history_on(&md_pg_store_of(t)->cfg.history);
}

enum md_err md_pg_notify_at_commit(struct pg_txn *t, const char *payload)
{
    struct pg_history *h = t->history;
    for (size_t i = 0; i < h->nnotify; i++)
        if (strcmp(h->notify[i], payload) == 0)
            return MD_OK;
    if (h->nnotify == h->capnotify) {
        size_t cap = h->capnotify ? h->capnotify * 2 : 16;
        char **n = realloc(h->notify, cap * sizeof *n);
        if (!n)
            return MD_ENOMEM;
        h->notify = n;
        h->capnotify = cap;
    }
    if (!(h->notify[h->nnotify] = strdup(payload)))
        return MD_ENOMEM;
    h->nnotify++;
    return MD_OK;
}

/* Tenant id's counters, loaded in this transaction (the locate and the
 * prefetch load them; else one round trip). */
static enum md_err counters_ready(struct pg_txn *t, int64_t id)
{
    int64_t v, q;
    if (md_hist_loaded(t->history->hist, id, &v, &q))
        return MD_OK;
    if (md_pg_deferring(t))
        return MD_EDB; /* the prefetch read every tenant of the batch */
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, id);
    enum md_err e = md_pg_send(t, P_COUNTERS, &p);
    if (!e)
        e = md_pg_flush(t, P_COUNTERS);
    const PGresult *r = t->pipe.res;
    if (!e && (!r || PQntuples(r) != 1))
        e = MD_EDB;
    if (!e && md_pg_history_counters(t, id, md_pg_r_i64(r, 0, 0), md_pg_r_i64(r, 0, 1)))
        e = MD_ENOMEM;
    return e;
}

/* Is the running command recording versions for tenant `id`? (A command
 * begun before its tenant existed learns its id here.) */
static int recording(struct pg_txn *t, int64_t id)
{
    struct md_hist *hist = t->history ? t->history->hist : NULL;
    if (!hist || !history_on(t) || !md_hist_cmd_meta(hist)->command)
        return 0;
    if (md_hist_cmd_tenant(hist) == 0)
        md_hist_cmd_set_tenant(hist, id);
    return md_hist_cmd_tenant(hist) == id;
}

/* Begin `n` arrays of the given element types for a first row. */
static enum md_err arrays_begin(struct md_buf **cols, const Oid *types, size_t n)
{
    enum md_err e = MD_OK;
    for (size_t i = 0; i < n && !e; i++)
        e = md_pg_arr_begin(cols[i], types[i], 1); /* counted when sent */
    return e;
}

/* Queue the rows gathered in `cols` as statement `id`. */
static enum md_err rows_send(struct pg_txn *t, enum pg_stmt id, struct md_buf **cols, size_t n,
                             size_t *rows)
{
    if (*rows == 0)
        return MD_OK;
    struct md_pg_params p = {.n = 0};
    for (size_t i = 0; i < n; i++) {
        md_pg_arr_count(cols[i], *rows);
        md_pg_bytes(&p, cols[i]->data, cols[i]->len);
    }
    *rows = 0;
    return md_pg_send_now(t, id, &p);
}

static enum md_err versions_send(struct pg_txn *t)
{
    struct md_buf *cols[VERSION_COLS];
    version_cols(&t->history->versions, cols);
    return rows_send(t, P_VER_MANY, cols, VERSION_COLS, &t->history->versions.rows);
}

static enum md_err changes_send(struct pg_txn *t)
{
    struct md_buf *cols[CHANGE_COLS];
    change_cols(&t->history->changes, cols);
    return rows_send(t, P_CHANGES_MANY, cols, CHANGE_COLS, &t->history->changes.rows);
}

enum md_err md_pg_history_send(struct pg_txn *t)
{
    if (!t->history)
        return MD_OK;
    enum md_err e = versions_send(t);
    return e ? e : changes_send(t);
}

/* A version from memory: `existed` 0 for an absence (no sha256, size -1,
 * no content); `enc` 1 when `content` is a delta. Sent at once in an exact
 * batch. */
static enum md_err version_row(struct pg_txn *t, int64_t id, int64_t v, const char *path,
                               size_t len, int existed, const unsigned char *sha256, int64_t size,
                               const char *content, size_t content_len, int enc)
{
    static const Oid types[VERSION_COLS] = {OID_INT8,  OID_INT8,  OID_TEXT, OID_BOOL,
                                            OID_BYTEA, OID_INT8,  OID_INT8, OID_TEXT,
                                            OID_TEXT,  OID_BYTEA, OID_INT2};
    struct pg_version_rows *vr = &t->history->versions;
    const struct md_write_meta *m = md_hist_cmd_meta(t->history->hist);
    struct md_buf *cols[VERSION_COLS];
    version_cols(vr, cols);
    enum md_err e = vr->rows ? MD_OK : arrays_begin(cols, types, VERSION_COLS);
    unsigned char b = existed ? 1 : 0;
    if (!e)
        e = md_pg_arr_i64(&vr->tenant, id);
    if (!e)
        e = md_pg_arr_i64(&vr->version, v);
    if (!e)
        e = md_pg_arr_elem(&vr->path, path, len);
    if (!e)
        e = md_pg_arr_elem(&vr->existed, &b, 1);
    if (!e)
        e = sha256 ? md_pg_arr_elem(&vr->sha256, sha256, MD_SHA256_LEN)
                   : md_pg_arr_null(&vr->sha256);
    if (!e)
        e = md_pg_arr_i64(&vr->size, size);
    if (!e)
        e = md_pg_arr_i64(&vr->time, m->time_ms);
    if (!e)
        e = md_pg_arr_text_or_null(&vr->command, m->command);
    if (!e)
        e = md_pg_arr_text_or_null(&vr->actor, m->actor);
    if (!e)
        e = existed ? md_pg_arr_elem(&vr->content, content, content_len)
                    : md_pg_arr_null(&vr->content);
    if (!e)
        e = md_pg_arr_i16(&vr->enc, (int16_t)enc);
    int deferring = md_pg_deferring(t);
    if (e) {
        vr->rows = 0;
        return deferring ? md_pg_abandon_attempt(t) : e;
    }
    vr->rows++;
    return deferring ? MD_OK : versions_send(t);
}

/* A file's version copied by the database before the file changes (queued
 * ahead of that change). */
static enum md_err version_copy(struct pg_txn *t, int64_t id, int64_t v, const char *path,
                                size_t len)
{
    const struct md_write_meta *m = md_hist_cmd_meta(t->history->hist);
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, id);
    md_pg_bytes(&p, path, len);
    md_pg_i64(&p, v);
    md_pg_i64(&p, m->time_ms);
    md_pg_text(&p, m->command);
    if (m->actor)
        md_pg_text(&p, m->actor);
    else
        md_pg_null(&p);
    return md_pg_send(t, P_VER_COPY, &p);
}

/* The version of a prefetched file about to become `text`: a delta
 * against `text` while the file's run of deltas (entries.vrun) allows one,
 * else whole; *vrun: the file's run after it. */
static enum md_err version_of_prefetched(struct pg_txn *t, int64_t id, int64_t v, const char *path,
                                         size_t len, const struct pg_prefetched *pe,
                                         const char *text, size_t text_len, int *vrun)
{
    struct md_buf *d = &t->history->delta;
    md_buf_reset(d);
    if (pe->vrun >= MD_DELTA_RUN_MAX - 1 ||
        md_delta_make(pe->content, pe->content_len, text ? text : "", text_len, d) != MD_OK) {
        *vrun = 0;
        return version_row(t, id, v, path, len, 1, pe->sha256, pe->size, pe->content,
                           pe->content_len, 0);
    }
    *vrun = pe->vrun + 1;
    return version_row(t, id, v, path, len, 1, pe->sha256, pe->size, d->data ? d->data : "", d->len,
                       1);
}

enum md_err md_pg_record_file(struct pg_txn *t, int64_t id, const char *tenant, const char *path,
                              size_t len, int64_t old_size, const char *text, size_t text_len,
                              int *vrun)
{
    *vrun = MD_DELTA_RUN_MAX; /* what no write makes a delta on */
    if (!recording(t, id))
        return MD_OK;
    struct md_hist *hist = t->history->hist;
    enum md_err e = counters_ready(t, id);
    if (e)
        return md_pg_deferring(t) ? md_pg_abandon_attempt(t) : e;
    int64_t v = md_hist_next_version(hist);
    if (old_size < 0) {
        e = version_row(t, id, v, path, len, 0, NULL, -1, NULL, 0, 0);
    } else {
        const struct pg_prefetched *pe =
            md_pg_deferring(t) ? md_pg_prefetched(t, tenant, path, len) : NULL;
        if (pe && pe->found && pe->has_content && !pe->stale)
            e = version_of_prefetched(t, id, v, path, len, pe, text, text_len, vrun);
        else
            e = version_copy(t, id, v, path, len);
    }
    if (!e) {
        md_hist_take_versions(hist, 1, old_size >= 0 ? old_size : 0);
        md_hist_touch(hist, id, path, len, 0);
    }
    return e;
}

/* The versions of the files of a subtree, copied by the database in one
 * statement (P_VER_SUBTREE, or P_VER_SUBTREE_MOVE to `to`), numbered after
 * `v` - 1. */
static enum md_err subtree_versions_send(struct pg_txn *t, int64_t id, int64_t v, const char *path,
                                         size_t len, const char *to, size_t tlen)
{
    struct md_buf *arr = t->pipe.arrays;
    const struct md_write_meta *m = md_hist_cmd_meta(t->history->hist);
    enum md_err e = md_pg_subtree_bounds(&arr[0], &arr[1], path, len);
    if (e)
        return e;
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, id);
    md_pg_i64(&p, v - 1);
    md_pg_bytes(&p, path, len);
    md_pg_bytes(&p, arr[0].data, arr[0].len);
    md_pg_bytes(&p, arr[1].data, arr[1].len);
    md_pg_i64(&p, m->time_ms);
    md_pg_text(&p, m->command);
    if (m->actor)
        md_pg_text(&p, m->actor);
    else
        md_pg_null(&p);
    if (to) {
        md_pg_bytes(&p, to, tlen);
        md_pg_i32(&p, md_pg_utf8_chars(path, len) + 1);
    }
    return md_pg_send(t, to ? P_VER_SUBTREE_MOVE : P_VER_SUBTREE, &p);
}

enum md_err md_pg_record_subtree(struct pg_txn *t, int64_t id, const char *tenant, const char *path,
                                 size_t len, int64_t size, const char *to, size_t tlen,
                                 int *counted)
{
    *counted = 0;
    if (!recording(t, id))
        return MD_OK;
    struct md_hist *hist = t->history->hist;
    enum md_err e = counters_ready(t, id);
    if (e)
        return md_pg_deferring(t) ? md_pg_abandon_attempt(t) : e;
    int64_t v = md_hist_next_version(hist);
    if (md_pg_deferring(t)) {
        /* A file: its number is known now. A directory: abandon. */
        const struct pg_prefetched *pe = md_pg_prefetched(t, tenant, path, len);
        if (!pe || !pe->found || pe->stale || pe->kind != MD_KIND_FILE)
            return md_pg_abandon_attempt(t);
        e = version_copy(t, id, v, path, len);
        if (!e && to)
            e = version_row(t, id, v + 1, to, tlen, 0, NULL, -1, NULL, 0, 0);
        if (!e)
            md_hist_take_versions(hist, to ? 2 : 1, size);
    } else {
        e = subtree_versions_send(t, id, v, path, len, to, tlen);
        *counted = !e; /* the caller's flush brings the count (md_pg_subtree_counted) */
    }
    if (!e) {
        md_hist_touch(hist, id, path, len, 1);
        if (to)
            md_hist_touch(hist, id, to, tlen, 1);
    }
    return e;
}

enum md_err md_pg_subtree_counted(struct pg_txn *t)
{
    const PGresult *r = t->pipe.res;
    if (!r || PQntuples(r) != 1)
        return MD_EDB;
    md_hist_take_versions(t->history->hist, md_pg_r_i64(r, 0, 0), md_pg_r_i64(r, 0, 1));
    return MD_OK;
}

/* Queue P_COUNTERS_SET of the counters the transaction changed. */
static enum md_err counters_send(struct pg_txn *t)
{
    struct md_hist *hist = t->history->hist;
    struct md_buf *arr = t->pipe.arrays;
    size_t n = md_hist_dirty_count(hist), live = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t id, v, q;
        md_hist_dirty_entry(hist, i, &id, &v, &q);
        live += id != 0;
    }
    if (!live)
        return MD_OK;
    enum md_err e = md_pg_arr_begin(&arr[0], OID_INT8, live);
    if (!e)
        e = md_pg_arr_begin(&arr[1], OID_INT8, live);
    if (!e)
        e = md_pg_arr_begin(&arr[2], OID_INT8, live);
    for (size_t i = 0; i < n && !e; i++) {
        int64_t id, v, q;
        md_hist_dirty_entry(hist, i, &id, &v, &q);
        if (!id)
            continue;
        e = md_pg_arr_i64(&arr[0], id);
        if (!e)
            e = md_pg_arr_i64(&arr[1], v);
        if (!e)
            e = md_pg_arr_i64(&arr[2], q);
    }
    struct md_pg_params p = {.n = 0};
    for (int i = 0; i < 3; i++)
        md_pg_bytes(&p, arr[i].data, arr[i].len);
    return e ? e : md_pg_send(t, P_COUNTERS_SET, &p);
}

enum md_err md_pg_history_commit_send(struct pg_txn *t)
{
    struct pg_history *h = t->history;
    if (!h)
        return MD_OK;
    enum md_err e = counters_send(t);
    if (!e && h->nnotify) {
        struct md_buf *arr = t->pipe.arrays;
        e = md_pg_arr_begin(&arr[0], OID_TEXT, h->nnotify);
        for (size_t i = 0; i < h->nnotify && !e; i++)
            e = md_pg_arr_elem(&arr[0], h->notify[i], strlen(h->notify[i]));
        struct md_pg_params p = {.n = 0};
        md_pg_bytes(&p, arr[0].data, arr[0].len);
        if (!e)
            e = md_pg_send(t, P_NOTIFY, &p);
    }
    return e;
}

/* ---- VACUUM after a commit ---- */

void md_pg_vacuum_after_commit(struct pg_txn *t, int what)
{
    struct pg_history *h = t->history;
    h->vacuum = h->vacuum > what ? h->vacuum : what;
}

int md_pg_vacuum_asked(const struct pg_txn *t)
{
    return t->history ? t->history->vacuum : 0;
}

/* The VACUUM of md_pg_vacuum, on a connection of its own (VACUUM cannot
 * run in a transaction). */
static void vacuum_now(struct pg_store *s, int what)
{
    char why[512];
    PGconn *c = md_pg_connect(s->uri, why, sizeof why);
    if (!c) {
        md_log_msg(MD_LOG_ERROR, "VACUUM after a redaction: cannot connect", why);
        return;
    }
    /* The dead row versions that may hold it: the version's own, the
     * answers kept for keys that were scrubbed, and the file's rows of
     * before the edit that replaced it. */
    PGresult *r =
        PQexec(c, what == MD_PG_VACUUM_ERASED
                      ? "VACUUM versions, idempotency, entries, changes, tenants, api_keys"
                      : "VACUUM versions, idempotency, entries");
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        md_log_msg(MD_LOG_ERROR, "VACUUM after a redaction failed", PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
}

/* After a commit that redacted: VACUUM the versions table (and its TOAST
 * table), so that the dead row versions holding the content are removed,
 * on a connection of its own (VACUUM cannot run in a transaction). After
 * an erasure, every table that held the tenant's rows. With the pruner's
 * mutex held: a retention transaction open meanwhile (its xid older than
 * the redaction's) would keep VACUUM from removing those row versions. */
void md_pg_vacuum(struct pg_store *s, int what)
{
    pthread_mutex_lock(&s->prune_mu);
    vacuum_now(s, what);
    pthread_mutex_unlock(&s->prune_mu);
}

/* ---- a write command's beginning and end ---- */

enum md_err md_pg_cmd_begin(struct md_txn *base, const char *tenant, const struct md_write_meta *m)
{
    struct pg_txn *t = (struct pg_txn *)base;
    t->history->cmd_tenant = tenant;
    md_hist_cmd_begin(t->history->hist, md_pg_known_tenant(t, tenant), m);
    return MD_OK;
}

/* The paths, one per line, as one element of `b`. */
static enum md_err paths_elem(struct md_buf *b, const char *const *paths, const size_t *lens,
                              size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += lens[i] + 1;
    char *joined = malloc(total ? total : 1);
    size_t off = 0;
    for (size_t i = 0; joined && i < n; i++) {
        if (i)
            joined[off++] = '\n';
        memcpy(joined + off, paths[i], lens[i]);
        off += lens[i];
    }
    enum md_err e = joined ? md_pg_arr_elem(b, joined, off) : MD_ENOMEM;
    free(joined);
    return e;
}

/* The command's change-feed row, gathered. */
static enum md_err change_row(struct pg_txn *t, int64_t id, const struct md_change_rec *rec,
                              const char *const *paths, const size_t *lens, size_t n)
{
    static const Oid types[CHANGE_COLS] = {OID_INT8, OID_INT8, OID_INT8, OID_INT8, OID_INT8,
                                           OID_INT8, OID_TEXT, OID_TEXT, OID_TEXT};
    struct pg_change_rows *cr = &t->history->changes;
    const struct md_write_meta *m = md_hist_cmd_meta(t->history->hist);
    struct md_buf *cols[CHANGE_COLS];
    change_cols(cr, cols);
    enum md_err e = cr->rows ? MD_OK : arrays_begin(cols, types, CHANGE_COLS);
    if (!e)
        e = md_pg_arr_i64(&cr->tenant, id);
    if (!e)
        e = md_pg_arr_i64(&cr->seq, rec->seq);
    if (!e)
        e = md_pg_arr_i64(&cr->version, rec->version);
    if (!e)
        e = md_pg_arr_i64(&cr->versions, rec->versions);
    if (!e)
        e = md_pg_arr_i64(&cr->history_bytes, rec->history_bytes);
    if (!e)
        e = md_pg_arr_i64(&cr->time, m->time_ms);
    if (!e)
        e = md_pg_arr_text_or_null(&cr->command, m->command);
    if (!e)
        e = paths_elem(&cr->paths, paths, lens, n);
    if (!e)
        e = md_pg_arr_text_or_null(&cr->actor, m->actor);
    return e;
}

void md_pg_cmd_recorded(struct md_txn *base, struct md_change_rec *rec)
{
    md_hist_cmd_recorded(((struct pg_txn *)base)->history->hist, rec);
}

enum md_err md_pg_cmd_end(struct md_txn *base, const char *const *paths, const size_t *lens,
                          size_t n, struct md_change_rec *rec)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct pg_history *h = t->history;
    const char *tenant = h->cmd_tenant;
    int deferring = md_pg_deferring(t);
    int64_t id = 0;
    enum md_err e = !tenant ? MD_EDB : deferring ? MD_OK : md_pg_tenant_lookup(t, tenant, &id);
    if (deferring && tenant)
        id = md_pg_known_tenant(t, tenant);
    if (!e && !id)
        e = MD_EDB; /* a write that succeeded has its tenant */
    if (!e)
        e = counters_ready(t, id);
    if (e)
        return deferring ? md_pg_abandon_attempt(t) : e;
    if (md_hist_cmd_tenant(h->hist) != id)
        md_hist_cmd_set_tenant(h->hist, id);
    md_hist_cmd_end(h->hist, rec);
    e = change_row(t, id, rec, paths, lens, n);
    if (!e)
        e = md_pg_notify_at_commit(t, tenant);
    if (e) {
        h->changes.rows = 0;
        return deferring ? md_pg_abandon_attempt(t) : e;
    }
    h->changes.rows++;
    return deferring ? MD_OK : changes_send(t);
}
