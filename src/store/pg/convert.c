/*
 * convert.c — a PostgreSQL database's versions stored anew when memoryd
 * opens it (md_pg_deltas_open): the paths whose versions were all kept
 * whole before deltas (versions_unconverted, as
 * sql/postgres/009_version_deltas.sql leaves them) turned into deltas, or,
 * when memoryd runs without history, every delta made whole (writes will
 * change files without recording what they were, so a delta's successor
 * would not stay). A path a transaction, under its tenant's lock (as a
 * write batch takes it: another instance may be writing meanwhile); the
 * progress shown (md_progress.h).
 *
 * Owns no part of the transaction. Errors as md_store.h; MD_EDB for a
 * chain that does not rebuild (logged).
 */
#include <stdlib.h>
#include <string.h>

#include "base/md_log.h"
#include "base/md_progress.h"
#include "internal.h"
#include "store/md_delta.h"

static const struct pg_stmt_def stmts[] = {
    /* A path of the versions kept whole before 009, taken (and forgotten
     * at the commit); with its tenant's name, for the tenant's lock. */
    {P_DELTA_NEXT_PATH,
     "DELETE FROM versions_unconverted u WHERE (tenant, path) = (SELECT tenant, path"
     " FROM versions_unconverted ORDER BY tenant, path LIMIT 1 FOR UPDATE SKIP LOCKED)"
     " RETURNING u.tenant, u.path, (SELECT name FROM tenants WHERE id = u.tenant)",
     0,
     {0},
     0},
    /* A path's versions, newest first, after its file (numbered PG_FILE_ROW). */
    {P_DELTA_PATH_ROWS,
     "SELECT version, enc, existed, redacted, sha256, content FROM versions"
     " WHERE tenant = $1 AND path = $2"
     " UNION ALL SELECT " PG_FILE_ROW ", 0::int2, true, false, sha256, content FROM entries"
     " WHERE tenant = $1 AND path = $2 AND kind = 0 ORDER BY 1 DESC",
     2,
     {OID_INT8, OID_TEXT},
     0},
    {P_DELTA_SET,
     "UPDATE versions SET enc = $3, content = $4 WHERE tenant = $1 AND version = $2",
     4,
     {OID_INT8, OID_INT8, OID_INT4, OID_BYTEA},
     0},
    {P_DELTA_VRUN,
     "UPDATE entries SET vrun = $3 WHERE tenant = $1 AND path = $2 AND kind = 0",
     3,
     {OID_INT8, OID_TEXT, OID_INT4},
     0},
    {P_DELTA_LEFT, "SELECT count(*) FROM versions_unconverted", 0, {0}, 0},
    /* Paths with deltas (memoryd without history makes them whole). */
    {P_DELTA_ANY,
     "SELECT DISTINCT v.tenant, v.path, t.name FROM versions v JOIN tenants t"
     " ON t.id = v.tenant WHERE v.enc = 1 LIMIT 64",
     0,
     {0},
     0},
};
const struct pg_stmt_defs md_pg_convert_stmts = MD_PG_STMT_DEFS(stmts);

/* One path's rows (P_DELTA_PATH_ROWS's result), their texts rebuilt. */
struct path_rows {
    struct pg_txn *t;
    int64_t tenant;
    const PGresult *r;
    int first;            /* the first version's row (1 when the file is row 0) */
    struct md_buf *texts; /* each version's text, by row - first */
    int64_t converted;    /* versions stored anew */
};

/* Each version's text, newest first, from the file's and the whole ones'
 * (a delta applied to the text after it). */
static enum md_err texts_rebuild(struct path_rows *pr, size_t n)
{
    const PGresult *r = pr->r;
    const char *succ = pr->first ? PQgetvalue(r, 0, 5) : NULL;
    size_t succ_len = pr->first ? (size_t)PQgetlength(r, 0, 5) : 0;
    enum md_err e = MD_OK;
    for (size_t i = 0; !e && i < n; i++) {
        int row = pr->first + (int)i;
        int has_text = PQgetvalue(r, row, 2)[0] && !PQgetvalue(r, row, 3)[0];
        const char *p = PQgetvalue(r, row, 5);
        size_t len = (size_t)PQgetlength(r, row, 5);
        if (has_text && md_pg_r_i16(r, row, 1) == 1) {
            e = succ ? md_delta_apply(succ, succ_len, p, len, &pr->texts[i]) : MD_EDB;
            if (!e)
                e = md_delta_check(PQgetlength(r, row, 4) == MD_SHA256_LEN
                                       ? (const unsigned char *)PQgetvalue(r, row, 4)
                                       : NULL,
                                   pr->texts[i].data, pr->texts[i].len);
        } else if (has_text) {
            e = md_buf_append(&pr->texts[i], p, len);
        }
        succ = has_text ? (pr->texts[i].data ? pr->texts[i].data : "") : NULL;
        succ_len = pr->texts[i].len;
    }
    return e;
}

static enum md_err store(struct path_rows *pr, size_t i, int enc, const char *p, size_t len)
{
    struct md_pg_params q = {.n = 0};
    md_pg_i64(&q, pr->tenant);
    md_pg_i64(&q, md_pg_r_i64(pr->r, pr->first + (int)i, 0));
    md_pg_i32(&q, enc);
    md_pg_bytes(&q, p, len);
    return md_pg_send(pr->t, P_DELTA_SET, &q);
}

/* md_delta_convert's rows stored where their form changes. */
static enum md_err put(void *ctx, size_t i, const char *delta, size_t len)
{
    struct path_rows *pr = ctx;
    int was_delta = md_pg_r_i16(pr->r, pr->first + (int)i, 1) == 1;
    if (delta && !was_delta) {
        pr->converted++;
        return store(pr, i, 1, delta, len);
    }
    if (!delta && was_delta) {
        pr->converted++;
        return store(pr, i, 0, pr->texts[i].data ? pr->texts[i].data : "", pr->texts[i].len);
    }
    return MD_OK;
}

/* One path's versions stored anew, in the open transaction, under its
 * tenant's lock: as deltas where md_delta_convert says (the file's vrun
 * set to the run of the newest), or all whole. */
static enum md_err path_rewrite(struct pg_txn *t, int64_t tenant, const char *name,
                                const char *path, size_t len, int all_whole, int64_t *converted)
{
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, md_store_tenant_key(name));
    enum md_err e = md_pg_send(t, P_LOCK, &p);
    p = (struct md_pg_params){.n = 0};
    md_pg_i64(&p, tenant);
    md_pg_bytes(&p, path, len);
    if (!e)
        e = md_pg_exec(t, P_DELTA_PATH_ROWS, &p);
    if (e)
        return e;
    PGresult *r = t->pipe.res;
    t->pipe.res = NULL; /* kept while the rows are stored */
    int rows = r ? PQntuples(r) : 0;
    struct path_rows pr = {t, tenant, r, rows > 0 && md_pg_r_i64(r, 0, 0) == INT64_MAX, NULL, 0};
    size_t n = (size_t)(rows - pr.first);
    struct md_delta_link *links = calloc(n + 1, sizeof *links);
    pr.texts = calloc(n + 1, sizeof *pr.texts);
    if (!links || !pr.texts)
        e = MD_ENOMEM;
    for (size_t i = 0; !e && i < n; i++)
        md_buf_init(&pr.texts[i], (size_t)1 << 31);
    if (!e)
        e = texts_rebuild(&pr, n);
    for (size_t i = 0; !e && i < n; i++) {
        int row = pr.first + (int)i;
        int has_text = PQgetvalue(r, row, 2)[0] && !PQgetvalue(r, row, 3)[0];
        links[i] = (struct md_delta_link){pr.texts[i].data ? pr.texts[i].data : "", pr.texts[i].len,
                                          0, has_text};
        if (all_whole)
            e = put(&pr, i, NULL, 0);
    }
    int head_run = 0;
    if (!e && !all_whole)
        e = md_delta_convert(links, n, pr.first ? PQgetvalue(r, 0, 5) : NULL,
                             pr.first ? (size_t)PQgetlength(r, 0, 5) : 0, put, &pr, &head_run);
    if (!e && pr.first) {
        p = (struct md_pg_params){.n = 0};
        md_pg_i64(&p, tenant);
        md_pg_bytes(&p, path, len);
        md_pg_i32(&p, all_whole ? 0 : head_run);
        e = md_pg_send(t, P_DELTA_VRUN, &p);
    }
    for (size_t i = 0; pr.texts && i < n; i++)
        md_buf_free(&pr.texts[i]);
    free(pr.texts);
    free(links);
    PQclear(r);
    *converted += pr.converted;
    return e;
}

/* The next paths to rewrite, in the open transaction (`next`:
 * P_DELTA_NEXT_PATH or P_DELTA_ANY), rewritten; *n: how many (0: none
 * was left). */
static enum md_err rewrite_next(struct pg_txn *t, enum pg_stmt next, int all_whole,
                                int64_t *converted, int *n)
{
    enum md_err e = md_pg_exec(t, next, NULL);
    if (e)
        return e;
    PGresult *r = t->pipe.res;
    t->pipe.res = NULL;
    *n = r ? PQntuples(r) : 0;
    for (int i = 0; !e && r && i < PQntuples(r); i++)
        e = path_rewrite(t, md_pg_r_i64(r, i, 0), PQgetvalue(r, i, 2), PQgetvalue(r, i, 1),
                         (size_t)PQgetlength(r, i, 1), all_whole, converted);
    PQclear(r);
    return e;
}

enum md_err md_pg_deltas_open(struct pg_store *s)
{
    if (s->cfg.keep_versions)
        return MD_OK; /* a tool: memoryd itself does it */
    int all_whole = !md_history_on(&s->cfg.history);
    enum pg_stmt next = all_whole ? P_DELTA_ANY : P_DELTA_NEXT_PATH;
    struct md_txn *tx;
    enum md_err e = md_pg_write_begin(&s->base, &tx);
    if (e)
        return e;
    struct pg_txn *t = (struct pg_txn *)tx;
    e = md_pg_exec(t, P_DELTA_LEFT, NULL);
    int64_t total = !e && t->pipe.res ? md_pg_r_i64(t->pipe.res, 0, 0) : 0;
    md_pg_rollback(tx);
    if (e || (!all_whole && total == 0))
        return e;
    struct md_progress prog;
    md_progress_begin(&prog, all_whole ? "versions made whole" : "version deltas", "paths",
                      all_whole ? 0 : total, 0);
    int64_t paths = 0, converted = 0;
    for (int n = 1; !e && n > 0;) {
        e = md_pg_write_begin(&s->base, &tx);
        if (e)
            break;
        e = rewrite_next((struct pg_txn *)tx, next, all_whole, &converted, &n);
        if (e)
            md_pg_rollback(tx);
        else
            e = md_pg_commit(tx);
        paths += e ? 0 : n;
        md_progress_update(&prog, paths);
    }
    md_progress_end(&prog);
    if (paths || e) {
        struct md_logline l;
        md_log_begin(&l, e ? MD_LOG_ERROR : MD_LOG_INFO,
                     e ? "versions not stored anew"
                       : (all_whole ? "versions kept whole (history is off)"
                                    : "versions turned into deltas"));
        md_log_int(&l, "paths", paths);
        md_log_int(&l, "versions", converted);
        md_log_end(&l);
    }
    return e;
}
