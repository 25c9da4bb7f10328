/*
 * history_read.c — reading history and the change feed on PostgreSQL
 * (md_txn_history, version_get, state_before, changes), and redaction
 * (md_txn_redact: a version's content erased, the idempotency answers of
 * its path scrubbed, the VACUUM asked for after the commit).
 *
 * The reads run on a reader (or in the writer's transaction): one
 * statement each, but state_before and changes, which take two. Results
 * are borrowed as md_history.h says: a callback's until it returns, else
 * until the next call on the txn.
 *
 * Owns no part of the transaction. Errors as md_store.h.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define VERSION_COLS                                                                               \
    "version, path, existed, redacted, sha256, size, time, command, actor, pruned_through, enc"
/* The column of `content` after VERSION_COLS, and of `enc` in them. */
#define CONTENT_COL 11
#define ENC_COL     10

static const struct pg_stmt_def stmts[] = {
    {P_HISTORY,
     "SELECT " VERSION_COLS " FROM versions"
     " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND path = $2"
     " AND version < $3 ORDER BY version DESC LIMIT $4",
     4,
     {OID_TEXT, OID_TEXT, OID_INT8, OID_INT8},
     1},
    {P_VERSION_GET,
     "SELECT " VERSION_COLS ", content FROM versions"
     " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND version = $2",
     2,
     {OID_TEXT, OID_INT8},
     1},
    /* The write that recorded a version (newest first: stops at it). */
    {P_SNAP_BEFORE,
     "SELECT version, versions FROM changes"
     " WHERE tenant = (SELECT id FROM tenants WHERE name = $1)"
     " AND version IS NOT NULL AND version <= $2 ORDER BY seq DESC LIMIT 1",
     2,
     {OID_TEXT, OID_INT8},
     1},
    /* The earliest version >= $5 of each path at or below $3. */
    {P_STATE_BEFORE,
     "SELECT DISTINCT ON (path) " VERSION_COLS ", content FROM versions"
     " WHERE tenant = (SELECT id FROM tenants WHERE name = $1)"
     " AND (path = $3 OR (path > $4 AND path < $5)) AND version >= $2"
     " ORDER BY path, version",
     5,
     {OID_TEXT, OID_INT8, OID_TEXT, OID_TEXT, OID_TEXT},
     1},
    {P_CHANGES,
     "SELECT seq, coalesce(version, 0), versions, history_bytes, time, command,"
     " paths, actor FROM changes WHERE tenant = $1 AND seq > $2 ORDER BY seq"
     " LIMIT $3",
     3,
     {OID_INT8, OID_INT8, OID_INT8},
     1},
    {P_CHANGES_META,
     "SELECT t.id, coalesce((SELECT min(seq) FROM changes"
     " WHERE tenant = t.id), 0), t.last_seq FROM tenants t WHERE t.name = $1",
     1,
     {OID_TEXT},
     1},
    {P_REDACT,
     "UPDATE versions SET content = NULL, sha256 = NULL, redacted = true, enc = 0"
     " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND version = $2",
     2,
     {OID_TEXT, OID_INT8},
     0},
    {P_IDEM_SCRUB,
     "UPDATE idempotency SET body = CASE WHEN err = 0 THEN $3 ELSE $4 END"
     " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND path = $2",
     4,
     {OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXT},
     0},
};
const struct pg_stmt_defs md_pg_history_read_stmts = MD_PG_STMT_DEFS(stmts);

/* A version from the columns VERSION_COLS (0..9); content from column
 * `content_col` (-1: none). */
static void version_of(const PGresult *r, int row, struct md_version *v, int content_col)
{
    v->version = md_pg_r_i64(r, row, 0);
    v->path = PQgetvalue(r, row, 1);
    v->path_len = (size_t)PQgetlength(r, row, 1);
    v->existed = PQgetvalue(r, row, 2)[0] != 0;
    v->redacted = PQgetvalue(r, row, 3)[0] != 0;
    v->has_sha256 = PQgetlength(r, row, 4) == MD_SHA256_LEN;
    if (v->has_sha256)
        memcpy(v->sha256, PQgetvalue(r, row, 4), MD_SHA256_LEN);
    v->size = PQgetisnull(r, row, 5) ? -1 : md_pg_r_i64(r, row, 5);
    v->time_ms = md_pg_r_i64(r, row, 6);
    v->command = PQgetvalue(r, row, 7);
    v->actor = PQgetisnull(r, row, 8) ? NULL : PQgetvalue(r, row, 8);
    v->actor_len = v->actor ? (size_t)PQgetlength(r, row, 8) : 0;
    v->pruned_through = md_pg_r_i64(r, row, 9);
    v->content = NULL;
    v->content_len = 0;
    if (content_col >= 0 && v->existed && !v->redacted && !PQgetisnull(r, row, content_col)) {
        v->content = PQgetvalue(r, row, content_col);
        v->content_len = (size_t)PQgetlength(r, row, content_col);
    } else if (content_col >= 0 && v->existed && !v->redacted) {
        v->content = "";
    }
}

/* Each row of the last result given to cb, its text rebuilt first when it
 * is a delta (`tenant`: a name; NULL when no content is read). */
static enum md_err each_version(struct pg_txn *t, const char *tenant, md_version_cb cb, void *ctx)
{
    PGresult *r = t->pipe.res;
    t->pipe.res = NULL; /* kept while cb runs: cb must not call the txn */
    enum md_err e = MD_OK;
    for (int i = 0; !e && r && i < PQntuples(r); i++) {
        struct md_version v;
        version_of(r, i, &v, tenant ? CONTENT_COL : -1);
        if (tenant)
            e = md_pg_version_text(t, tenant, &v, md_pg_r_i16(r, i, ENC_COL));
        if (!e && cb(ctx, &v))
            break;
    }
    PQclear(r);
    return e;
}

enum md_err md_pg_history(struct md_txn *base, const char *tenant, const char *path, size_t len,
                          int64_t below, size_t limit, md_version_cb cb, void *ctx)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_bytes(&p, path, len);
    md_pg_i64(&p, below > 0 ? below : INT64_MAX);
    md_pg_i64(&p, (int64_t)limit);
    enum md_err e = md_pg_exec(t, P_HISTORY, &p);
    return e ? e : each_version(t, NULL, cb, ctx);
}

enum md_err md_pg_version_get(struct md_txn *base, const char *tenant, int64_t version,
                              int want_content, struct md_version *v)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_i64(&p, version);
    enum md_err e = md_pg_exec(t, P_VERSION_GET, &p);
    if (e)
        return e;
    if (!t->pipe.res || PQntuples(t->pipe.res) != 1)
        return MD_ENOENT;
    PGresult *r = t->pipe.res;
    version_of(r, 0, v, want_content ? CONTENT_COL : -1);
    if (!want_content || md_pg_r_i16(r, 0, ENC_COL) != 1)
        return MD_OK;   /* borrowed from t->pipe.res until the next call */
    t->pipe.res = NULL; /* v points into it */
    e = md_pg_version_text(t, tenant, v, 1);
    PQclear(t->pipe.res);
    t->pipe.res = r; /* borrowed until the next call, as the text (t->vtext) */
    return e;
}

enum md_err md_pg_state_before(struct md_txn *base, const char *tenant, const char *dir, size_t len,
                               int64_t *before, md_version_cb cb, void *ctx)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct md_buf *arr = t->pipe.arrays;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_i64(&p, *before);
    enum md_err e = md_pg_exec(t, P_SNAP_BEFORE, &p);
    if (e)
        return e;
    const PGresult *r = t->pipe.res;
    if (r && PQntuples(r) == 1 && md_pg_r_i64(r, 0, 0) + md_pg_r_i64(r, 0, 1) > *before)
        *before = md_pg_r_i64(r, 0, 0);
    e = md_pg_subtree_bounds(&arr[0], &arr[1], dir, len);
    if (e)
        return e;
    p = (struct md_pg_params){.n = 0};
    md_pg_text(&p, tenant);
    md_pg_i64(&p, *before);
    md_pg_bytes(&p, dir, len);
    md_pg_bytes(&p, arr[0].data, arr[0].len);
    md_pg_bytes(&p, arr[1].data, arr[1].len);
    e = md_pg_exec(t, P_STATE_BEFORE, &p);
    return e ? e : each_version(t, tenant, cb, ctx);
}

enum md_err md_pg_changes(struct md_txn *base, const char *tenant, int64_t after, size_t limit,
                          md_change_cb cb, void *ctx, int64_t *oldest, int64_t *last_seq)
{
    struct pg_txn *t = (struct pg_txn *)base;
    *oldest = *last_seq = 0;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    enum md_err e = md_pg_exec(t, P_CHANGES_META, &p);
    if (e || !t->pipe.res || PQntuples(t->pipe.res) != 1)
        return e; /* no tenant: nothing ever */
    int64_t id = md_pg_r_i64(t->pipe.res, 0, 0);
    *oldest = md_pg_r_i64(t->pipe.res, 0, 1);
    *last_seq = md_pg_r_i64(t->pipe.res, 0, 2);
    p = (struct md_pg_params){.n = 0};
    md_pg_i64(&p, id);
    md_pg_i64(&p, after);
    md_pg_i64(&p, (int64_t)limit);
    e = md_pg_exec(t, P_CHANGES, &p);
    if (e)
        return e;
    PGresult *r = t->pipe.res;
    t->pipe.res = NULL; /* kept while cb runs: cb must not call the txn */
    for (int i = 0; r && i < PQntuples(r); i++) {
        struct md_change c = {
            .seq = md_pg_r_i64(r, i, 0),
            .version = md_pg_r_i64(r, i, 1),
            .versions = md_pg_r_i64(r, i, 2),
            .history_bytes = md_pg_r_i64(r, i, 3),
            .time_ms = md_pg_r_i64(r, i, 4),
            .command = PQgetvalue(r, i, 5),
            .paths = PQgetvalue(r, i, 6),
            .paths_len = (size_t)PQgetlength(r, i, 6),
            .actor = PQgetisnull(r, i, 7) ? NULL : PQgetvalue(r, i, 7),
            .actor_len = PQgetisnull(r, i, 7) ? 0 : (size_t)PQgetlength(r, i, 7),
        };
        if (cb(ctx, &c))
            break;
    }
    PQclear(r);
    return MD_OK;
}

enum md_err md_pg_redact(struct md_txn *base, const char *tenant, int64_t version)
{
    struct pg_txn *t = (struct pg_txn *)base;
    struct md_version v;
    enum md_err e = md_pg_version_get(base, tenant, version, 0, &v);
    if (e)
        return e;
    char *path = strndup(v.path, v.path_len);
    if (!path)
        return MD_ENOMEM;
    size_t path_len = v.path_len;
    /* The version older than it may lean on its text. */
    e = md_pg_version_older_whole(t, tenant, path, path_len, version);
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_i64(&p, version);
    if (!e)
        e = md_pg_send(t, P_REDACT, &p);
    if (!e) {
        p = (struct md_pg_params){.n = 0};
        md_pg_text(&p, tenant);
        md_pg_bytes(&p, path, path_len);
        md_pg_text(&p, MD_HISTORY_SCRUBBED_APPLIED);
        md_pg_text(&p, MD_HISTORY_SCRUBBED_REFUSED);
        e = md_pg_send(t, P_IDEM_SCRUB, &p);
    }
    if (!e)
        e = md_pg_flush(t, P_COUNT);
    free(path);
    if (!e)
        md_pg_vacuum_after_commit(t, MD_PG_VACUUM_REDACTED);
    return e;
}
