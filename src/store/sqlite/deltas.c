/*
 * deltas.c — versions kept as reverse deltas on SQLite (md_delta.h;
 * sql/sqlite/010_version_deltas.sql), with their statements: a version's
 * text rebuilt from its successors (sq_version_rebuild), a version made
 * whole again (before the version it leans on is redacted, or when memoryd
 * runs without history: sq_version_make_whole, sq_deltas_materialize), the
 * memoryd_delta() function the writer's INSERT ... SELECT calls, and one
 * path's versions turned into deltas (sq_deltas_convert_path, for the
 * conversion at open: convert.c).
 *
 * A delta version's successor is the content of its path just after its
 * write: the path's next version, or the file itself when there is none.
 * Nothing ever changes a path's file or its versions without recording a
 * version (a write with history on), deleting the oldest versions first
 * (retention), or making the older neighbour whole first (redaction); with
 * history off memoryd keeps no delta (sq_deltas_materialize at open), so
 * that successor always holds what the delta was made against.
 *
 * Rebuilt texts are checked against the version's SHA-256: a mismatch is
 * MD_EDB (logged), never wrong bytes.
 *
 * Errors: MD_EDB (a chain that does not rebuild), MD_ENOMEM, otherwise as
 * sq_conn_rc.
 */
#include <stdlib.h>
#include <string.h>

#include "base/md_log.h"
#include "base/md_sha256.h"
#include "internal.h"
#include "store/md_delta.h"

/* NOLINTBEGIN(bugprone-suspicious-missing-comma): statements over several lines */
const char *const sq_deltas_sql[S_COUNT] = {
    /* The versions of a path after `version`, oldest first: the deltas
     * that lead to it, up to the first one kept whole. */
    [S_VER_CHAIN] = "SELECT version, enc, existed, redacted, content FROM versions"
                    " WHERE tenant = ?1 AND path = ?2 AND version > ?3 ORDER BY version LIMIT ?4",
    [S_VER_FILE] = "SELECT content FROM entries WHERE tenant = ?1 AND path = ?2 AND kind = 0",
    [S_VER_WHOLE] = "UPDATE versions SET enc = 0, run = 0, content = ?3"
                    " WHERE tenant = ?1 AND version = ?2",
    /* The newest version of a path older than `version`. */
    [S_VER_OLDER] = "SELECT version, enc FROM versions WHERE tenant = ?1 AND path = ?2"
                    " AND version < ?3 ORDER BY version DESC LIMIT 1",
    [S_VER_RUN] = "UPDATE versions SET run = ?3 WHERE tenant = ?1 AND version = ?2",
    [S_VER_OF_PATH] = "SELECT version, existed, redacted, enc, content FROM versions"
                      " WHERE tenant = ?1 AND path = ?2 ORDER BY version DESC",
    [S_VER_SET] = "UPDATE versions SET enc = ?3, run = ?4, content = ?5"
                  " WHERE tenant = ?1 AND version = ?2",
    [S_VER_ANY_DELTA] = "SELECT tenant, version FROM versions WHERE enc = 1 LIMIT ?1",
};
/* NOLINTEND(bugprone-suspicious-missing-comma) */

/* memoryd_delta(old, successor): the delta that turns the successor back
 * into `old` (md_delta_make). */
static void sql_delta(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *old = sqlite3_value_blob(argv[0]), *succ = sqlite3_value_blob(argv[1]);
    size_t old_len = (size_t)sqlite3_value_bytes(argv[0]);
    size_t succ_len = (size_t)sqlite3_value_bytes(argv[1]);
    struct md_buf out;
    md_buf_init(&out, old_len + 32);
    if (md_delta_make(old ? old : "", old_len, succ ? succ : "", succ_len, &out) != MD_OK) {
        md_buf_free(&out);
        sqlite3_result_error_nomem(ctx);
        return;
    }
    sqlite3_result_blob(ctx, out.data ? out.data : "", (int)out.len, free);
}

const struct sq_function sq_delta_function = {"memoryd_delta", 2, sql_delta};

enum md_err sq_blob_copy(struct sq_blob *b, const void *p, size_t n)
{
    b->p = malloc(n ? n : 1);
    if (!b->p)
        return MD_ENOMEM;
    if (n)
        memcpy(b->p, p, n);
    b->n = n;
    return MD_OK;
}

/* The text of version `version` of (tenant, path), whose stored delta is
 * `own`, into `out`. */
static enum md_err rebuild(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                           int64_t version, const void *own, size_t own_len, struct md_buf *out)
{
    struct sq_blob d[MD_DELTA_RUN_MAX + 1] = {{0}}, base = {0};
    size_t n = 0;
    enum md_err e = sq_blob_copy(&d[n++], own, own_len);
    int found = 0;
    sqlite3_stmt *st = sq_stmt(t, S_VER_CHAIN);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, path, len);
    sqlite3_bind_int64(st, 3, version);
    sqlite3_bind_int64(st, 4, MD_DELTA_RUN_MAX + 1);
    int rc = SQLITE_DONE;
    while (!e && !found && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const void *p = sqlite3_column_blob(st, 4);
        size_t pn = (size_t)sqlite3_column_bytes(st, 4);
        /* A delta leans on a version without content, or a run is longer
         * than any the writer makes: damaged. */
        int bad = !sqlite3_column_int(st, 2) || sqlite3_column_int(st, 3);
        int whole = sqlite3_column_int(st, 1) == 0;
        if (bad || (!whole && n == MD_DELTA_RUN_MAX + 1)) {
            e = MD_EDB;
        } else if (whole) {
            e = sq_blob_copy(&base, p, pn);
            found = 1;
        } else {
            e = sq_blob_copy(&d[n++], p, pn);
        }
    }
    sq_done(st);
    if (!e && rc != SQLITE_ROW && rc != SQLITE_DONE)
        e = sq_conn_rc(t->c, rc, "version chain");
    if (!e && !found) {
        /* The newest version leans on the file itself. */
        st = sq_stmt(t, S_VER_FILE);
        sqlite3_bind_int64(st, 1, tenant);
        sq_bind_text(st, 2, path, len);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
            e = sq_blob_copy(&base, sqlite3_column_blob(st, 0),
                             (size_t)sqlite3_column_bytes(st, 0));
        else
            e = rc == SQLITE_DONE ? MD_EDB : sq_conn_rc(t->c, rc, "version's file");
        sq_done(st);
    }
    struct md_delta_link links[MD_DELTA_RUN_MAX + 2];
    for (size_t i = 0; i < n; i++)
        links[i] = (struct md_delta_link){d[i].p, d[i].n, 1, 1};
    links[n] = (struct md_delta_link){base.p, base.n, 0, 1};
    if (!e)
        e = md_delta_rebuild(links, n + 1, out);
    for (size_t i = 0; i < n; i++)
        free(d[i].p);
    free(base.p);
    if (e == MD_EDB)
        md_log_msg(MD_LOG_ERROR, "a version's text cannot be rebuilt from its successors", path);
    return e;
}

enum md_err sq_version_rebuild(struct sq_txn *t, int64_t tenant, struct md_version *v)
{
    if (!v->content)
        return MD_OK;
    enum md_err e =
        rebuild(t, tenant, v->path, v->path_len, v->version, v->content, v->content_len, &t->vtext);
    if (!e)
        e = md_delta_check(v->has_sha256 ? v->sha256 : NULL, t->vtext.data, t->vtext.len);
    if (!e) {
        v->content = t->vtext.data ? t->vtext.data : "";
        v->content_len = t->vtext.len;
    }
    return e;
}

/* Version `version` of (tenant, path), a delta (`own`), stored whole. */
static enum md_err store_whole(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                               int64_t version, const void *own, size_t own_len)
{
    enum md_err e = rebuild(t, tenant, path, len, version, own, own_len, &t->vtext);
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_VER_WHOLE);
    sqlite3_bind_int64(st, 1, tenant);
    sqlite3_bind_int64(st, 2, version);
    sqlite3_bind_blob(st, 3, t->vtext.data ? t->vtext.data : "", (int)t->vtext.len, SQLITE_STATIC);
    return sq_run(t, st, "version made whole");
}

/* Version `version` of `tenant`, a delta, stored whole: its own delta and
 * path read, then its chain (store_whole). */
static enum md_err make_whole(struct sq_txn *t, int64_t tenant, int64_t version)
{
    sqlite3_stmt *st = sq_stmt(t, S_VERSION_GET);
    sqlite3_bind_int64(st, 1, tenant);
    sqlite3_bind_int64(st, 2, version);
    int rc = sqlite3_step(st);
    struct sq_blob own = {0}, path = {0};
    enum md_err e = MD_OK;
    if (rc == SQLITE_ROW) {
        e = sq_blob_copy(&own, sqlite3_column_blob(st, SQ_VERSION_CONTENT_COL),
                         (size_t)sqlite3_column_bytes(st, SQ_VERSION_CONTENT_COL));
        if (!e)
            e = sq_blob_copy(&path, sqlite3_column_text(st, 1),
                             (size_t)sqlite3_column_bytes(st, 1));
    } else {
        e = rc == SQLITE_DONE ? MD_EDB : sq_conn_rc(t->c, rc, "version to make whole");
    }
    sq_done(st);
    if (!e)
        e = store_whole(t, tenant, path.p, path.n, version, own.p, own.n);
    free(own.p);
    free(path.p);
    return e;
}

enum md_err sq_version_older_whole(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                                   int64_t version)
{
    sqlite3_stmt *st = sq_stmt(t, S_VER_OLDER);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, path, len);
    sqlite3_bind_int64(st, 3, version);
    int rc = sqlite3_step(st);
    int64_t older =
        rc == SQLITE_ROW && sqlite3_column_int(st, 1) == 1 ? sqlite3_column_int64(st, 0) : 0;
    sq_done(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sq_conn_rc(t->c, rc, "older version");
    return older ? make_whole(t, tenant, older) : MD_OK;
}

/* ---- at open ---- */

/* Every delta made whole (memoryd runs without history: writes will
 * change files without recording what they were). */
enum md_err sq_deltas_materialize(struct sq_txn *t)
{
    enum md_err e = MD_OK;
    size_t done = 0;
    for (;;) {
        sqlite3_stmt *st = sq_stmt(t, S_VER_ANY_DELTA);
        sqlite3_bind_int64(st, 1, 1);
        int rc = sqlite3_step(st);
        int64_t tenant = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
        int64_t version = rc == SQLITE_ROW ? sqlite3_column_int64(st, 1) : 0;
        sq_done(st);
        if (rc != SQLITE_ROW) {
            e = rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, "deltas left");
            break;
        }
        if ((e = make_whole(t, tenant, version)) != MD_OK)
            break;
        done++;
    }
    if (done) {
        struct md_logline l;
        md_log_begin(&l, MD_LOG_INFO, "versions kept whole (history is off)");
        md_log_int(&l, "versions", (int64_t)done);
        md_log_end(&l);
    }
    return e;
}

/* md_delta_convert's rows stored: the version of rows[i] as a delta. */
struct conv_row {
    int64_t version;
    int existed, redacted, enc;
    struct sq_blob text;
};
struct put_ctx {
    struct sq_txn *t;
    int64_t tenant;
    const struct conv_row *rows;
    int64_t converted;
};

static enum md_err put_delta(void *ctx, size_t i, const char *delta, size_t len)
{
    struct put_ctx *pc = ctx;
    if (!delta)
        return MD_OK; /* whole, as it is */
    sqlite3_stmt *st = sq_stmt(pc->t, S_VER_SET);
    sqlite3_bind_int64(st, 1, pc->tenant);
    sqlite3_bind_int64(st, 2, pc->rows[i].version);
    sqlite3_bind_int(st, 3, 1);
    sqlite3_bind_int(st, 4, 1);
    sqlite3_bind_blob(st, 5, delta, (int)len, SQLITE_STATIC);
    pc->converted++;
    return sq_run(pc->t, st, "version to delta");
}

/* One path's versions (newest first, whole as the migration copied them)
 * turned into deltas against their successors, each kept whole where the
 * successor has no text (the path had no file after its write, or the next
 * version is redacted) or where it would make a run too long. */
enum md_err sq_deltas_convert_path(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                                   int64_t *converted)
{
    struct sq_blob succ = {0};
    int have_succ = 0;
    sqlite3_stmt *st = sq_stmt(t, S_VER_FILE);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, path, len);
    int rc = sqlite3_step(st);
    enum md_err e = MD_OK;
    if (rc == SQLITE_ROW) {
        e = sq_blob_copy(&succ, sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0));
        have_succ = !e;
    }
    sq_done(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sq_conn_rc(t->c, rc, "version's file");
    /* Read every row first: the updates below must not run under the
     * statement that reads them. */
    struct conv_row *rows = NULL;
    size_t n = 0, cap = 0;
    st = sq_stmt(t, S_VER_OF_PATH);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, path, len);
    while (!e && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            struct conv_row *r = realloc(rows, cap * sizeof *r);
            if (!r) {
                e = MD_ENOMEM;
                break;
            }
            rows = r;
        }
        struct conv_row *r = &rows[n++];
        *r = (struct conv_row){sqlite3_column_int64(st, 0),
                               sqlite3_column_int(st, 1),
                               sqlite3_column_int(st, 2),
                               sqlite3_column_int(st, 3),
                               {0}};
        if (r->existed && !r->redacted)
            e = sq_blob_copy(&r->text, sqlite3_column_blob(st, 4),
                             (size_t)sqlite3_column_bytes(st, 4));
    }
    sq_done(st);
    if (!e && rc != SQLITE_DONE && rc != SQLITE_ROW)
        e = sq_conn_rc(t->c, rc, "versions of a path");
    /* A path converted before (by a conversion cut off between its
     * transactions, whose place was not saved) is left as it is. */
    size_t nrows = n;
    for (size_t i = 0; !e && i < nrows; i++)
        if (rows[i].enc)
            n = 0;
    /* Newest first: each delta leans on the text just before it in this
     * order (md_delta_convert). */
    struct md_delta_link *links = n ? calloc(n, sizeof *links) : NULL;
    if (!e && n && !links)
        e = MD_ENOMEM;
    for (size_t i = 0; !e && i < n; i++)
        links[i] = (struct md_delta_link){rows[i].text.p, rows[i].text.n, 0,
                                          rows[i].existed && !rows[i].redacted};
    struct put_ctx pc = {t, tenant, rows, 0};
    int head_run = 0;
    if (!e)
        e = md_delta_convert(links, n, have_succ ? (succ.p ? succ.p : "") : NULL, succ.n, put_delta,
                             &pc, &head_run);
    free(links);
    *converted += pc.converted;
    /* The newest version's run: what the next write counts on. */
    if (!e && n && head_run > 1) {
        st = sq_stmt(t, S_VER_RUN);
        sqlite3_bind_int64(st, 1, tenant);
        sqlite3_bind_int64(st, 2, rows[0].version);
        sqlite3_bind_int(st, 3, head_run);
        e = sq_run(t, st, "version's run");
    }
    free(succ.p);
    for (size_t i = 0; i < nrows; i++)
        free(rows[i].text.p);
    free(rows);
    return e;
}
