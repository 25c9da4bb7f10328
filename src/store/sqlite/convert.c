/*
 * convert.c — at open, on SQLite's writer: the versions a database held
 * before deltas (sql/sqlite/010_version_deltas.sql left them whole) turned
 * into deltas, a batch of paths per transaction, with the place reached
 * saved in the same transaction (version_deltas) and the progress shown
 * (md_progress.h); or, when memoryd runs without history, every delta
 * stored whole (deltas.c). Then a database made before auto_vacuum was
 * switched on (conn.c) switched once, by a VACUUM.
 */
#include <stdlib.h>
#include <string.h>

#include "base/md_log.h"
#include "base/md_progress.h"
#include "internal.h"

/* NOLINTBEGIN(bugprone-suspicious-missing-comma): statements over several lines */
const char *const sq_convert_sql[S_COUNT] = {
    [S_VER_DELTAS_LEFT] = "SELECT tenant, path FROM version_deltas LIMIT 1",
    [S_VER_DELTAS_AT] = "UPDATE version_deltas SET tenant = ?1, path = ?2",
    [S_VER_DELTAS_DONE] = "DELETE FROM version_deltas",
    /* Paths with versions, one after another. */
    [S_VER_PATHS] = "SELECT tenant, path FROM versions WHERE (tenant, path) > (?1, ?2)"
                    " GROUP BY tenant, path ORDER BY tenant, path LIMIT ?3",
    [S_VER_COUNT] = "SELECT count(*) FROM versions",
};
/* NOLINTEND(bugprone-suspicious-missing-comma) */

/* Paths converted per transaction. */
#define CONVERT_PATHS 64

struct path_row {
    int64_t tenant;
    struct sq_blob path;
};

/* The next paths with versions after (tenant, path), at most CONVERT_PATHS:
 * *n of them in `batch` (their paths malloc'd). */
static enum md_err next_paths(struct sq_txn *t, int64_t tenant, const struct sq_blob *after,
                              struct path_row *batch, size_t *n)
{
    *n = 0;
    sqlite3_stmt *st = sq_stmt(t, S_VER_PATHS);
    sqlite3_bind_int64(st, 1, tenant);
    sqlite3_bind_text(st, 2, after->p ? after->p : "", (int)after->n, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 3, CONVERT_PATHS);
    enum md_err e = MD_OK;
    int rc;
    while (!e && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        batch[*n].tenant = sqlite3_column_int64(st, 0);
        e = sq_blob_copy(&batch[*n].path, sqlite3_column_text(st, 1),
                         (size_t)sqlite3_column_bytes(st, 1));
        if (!e)
            (*n)++;
    }
    sq_done(st);
    if (!e && rc != SQLITE_DONE && rc != SQLITE_ROW)
        e = sq_conn_rc(t->c, rc, "paths with versions");
    return e;
}

/* One batch of paths converted and the work list moved past them, in one
 * transaction; *n: the paths done (0: none was left). */
static enum md_err convert_batch(struct sq_store *s, int64_t *tenant, struct sq_blob *at,
                                 int64_t *converted, size_t *n)
{
    struct md_txn *tx = NULL;
    enum md_err e = sq_write_begin(&s->base, &tx);
    if (e)
        return e;
    struct sq_txn *t = (struct sq_txn *)tx;
    struct path_row batch[CONVERT_PATHS];
    e = next_paths(t, *tenant, at, batch, n);
    for (size_t i = 0; !e && i < *n; i++)
        e = sq_deltas_convert_path(t, batch[i].tenant, batch[i].path.p, batch[i].path.n, converted);
    sqlite3_stmt *st = NULL;
    if (!e && *n > 0) {
        st = sq_stmt(t, S_VER_DELTAS_AT);
        sqlite3_bind_int64(st, 1, batch[*n - 1].tenant);
        sq_bind_text(st, 2, batch[*n - 1].path.p, batch[*n - 1].path.n);
        e = sq_run(t, st, "conversion's place");
    } else if (!e) {
        e = sq_run(t, sq_stmt(t, S_VER_DELTAS_DONE), "conversion done");
    }
    if (e) {
        sq_rollback(tx);
    } else {
        e = sq_commit(tx);
    }
    if (!e && *n > 0) {
        *tenant = batch[*n - 1].tenant;
        free(at->p);
        *at = batch[*n - 1].path;
        batch[*n - 1].path = (struct sq_blob){0};
    }
    for (size_t i = 0; i < *n; i++)
        free(batch[i].path.p);
    return e;
}

/* The conversion's work list: *left 0 when there is none. */
/* Read outside a transaction, on the writer's connection: nothing is
 * locked, and a database memoryd may not write (a read-only file, whose
 * writer heals later) is only read. */
static enum md_err work_left(struct sq_store *s, int *left, int64_t *tenant, struct sq_blob *at,
                             int64_t *total)
{
    struct sq_txn *t = &s->writer->txn;
    enum md_err e = MD_OK;
    sqlite3_stmt *st = sq_stmt(t, S_VER_DELTAS_LEFT);
    int rc = sqlite3_step(st);
    *left = rc == SQLITE_ROW;
    if (*left) {
        *tenant = sqlite3_column_int64(st, 0);
        e = sq_blob_copy(at, sqlite3_column_text(st, 1), (size_t)sqlite3_column_bytes(st, 1));
    } else if (rc != SQLITE_DONE) {
        e = sq_conn_rc(t->c, rc, "versions to convert");
    }
    sq_done(st);
    st = sq_stmt(t, S_VER_COUNT);
    *total = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sq_done(st);
    return e;
}

/* Whether any version is a delta (read as work_left). */
static int any_delta(struct sq_store *s)
{
    struct sq_txn *t = &s->writer->txn;
    sqlite3_stmt *st = sq_stmt(t, S_VER_ANY_DELTA);
    sqlite3_bind_int64(st, 1, 1);
    int rc = sqlite3_step(st);
    sq_done(st);
    return rc == SQLITE_ROW;
}

/* History off: every delta stored whole, and no conversion left. */
static enum md_err all_whole(struct sq_store *s)
{
    struct md_txn *tx = NULL;
    enum md_err e = sq_write_begin(&s->base, &tx);
    if (e)
        return e;
    struct sq_txn *t = (struct sq_txn *)tx;
    e = sq_deltas_materialize(t);
    if (!e)
        e = sq_run(t, sq_stmt(t, S_VER_DELTAS_DONE), "conversion done");
    if (e)
        sq_rollback(tx);
    else
        e = sq_commit(tx);
    return e;
}

/* The versions' conversion at open (sq_deltas_open). */
static enum md_err deltas_open(struct sq_store *s)
{
    if (s->cfg.read_only || s->cfg.keep_versions || s->writer->broken)
        return MD_OK; /* a file memoryd cannot write: done at a later open */
    int left = 0;
    int64_t tenant = 0, total = 0, converted = 0, paths = 0;
    struct sq_blob at = {0};
    enum md_err e = work_left(s, &left, &tenant, &at, &total);
    if (!e && !md_history_on(&s->cfg.history)) {
        free(at.p);
        return left || any_delta(s) ? all_whole(s) : MD_OK;
    }
    if (e || !left) {
        free(at.p);
        return e;
    }
    struct md_progress prog;
    md_progress_begin(&prog, "version deltas", "versions", total, 0);
    for (size_t n = 1; !e && n > 0;) {
        e = convert_batch(s, &tenant, &at, &converted, &n);
        paths += (int64_t)n;
        md_progress_update(&prog, converted);
    }
    md_progress_end(&prog);
    free(at.p);
    struct md_logline l;
    md_log_begin(&l, e ? MD_LOG_ERROR : MD_LOG_INFO,
                 e ? "versions not turned into deltas" : "versions turned into deltas");
    md_log_int(&l, "paths", paths);
    md_log_int(&l, "versions", converted);
    md_log_end(&l);
    return e;
}

/* The progress handler's period during the VACUUM, in virtual machine
 * instructions. */
#define VACUUM_PROGRESS_OPS 10000

static int vacuum_progress(void *arg)
{
    struct md_progress *prog = arg;
    md_progress_update(prog, prog->done);
    return 0;
}

/* A database made before memoryd created them with auto_vacuum=INCREMENTAL
 * (auto_vacuum NONE: conn.c) never gives a free page back: switched once,
 * at open, after the conversion, by a VACUUM (the file rewritten, in the
 * WAL first, which the checkpointer copies back and cuts when writes
 * pause). VACUUM is one statement: the progress, in the file's pages,
 * moves at its end, and the lines while it runs say that it still does.
 * Failing (it needs the file's size free twice over), memoryd goes on with
 * the database as it was and the next open tries again. */
static void auto_vacuum_open(struct sq_store *s)
{
    sqlite3 *db = s->writer->db;
    if (sq_pragma_int(db, "PRAGMA auto_vacuum") != 0)
        return;
    int pages = sq_pragma_int(db, "PRAGMA page_count");
    pthread_mutex_lock(&s->write_mu);
    struct md_progress prog;
    md_progress_begin(&prog, "vacuum", "pages", pages, 0);
    sqlite3_progress_handler(db, VACUUM_PROGRESS_OPS, vacuum_progress, &prog);
    char why[256];
    int rc = sq_exec(db, "PRAGMA auto_vacuum=INCREMENTAL; VACUUM", why, sizeof why);
    sqlite3_progress_handler(db, 0, NULL, NULL);
    if (rc == SQLITE_OK)
        md_progress_update(&prog, pages);
    md_progress_end(&prog);
    pthread_mutex_unlock(&s->write_mu);
    int now = sq_pragma_int(db, "PRAGMA auto_vacuum");
    struct md_logline l;
    md_log_begin(&l, rc == SQLITE_OK ? MD_LOG_INFO : MD_LOG_WARN,
                 rc == SQLITE_OK ? "database switched to auto_vacuum=INCREMENTAL: free pages are "
                                   "given back when writes pause"
                                 : "database not switched to auto_vacuum=INCREMENTAL: free pages "
                                   "are reused but not given back");
    md_log_int(&l, "pages", pages);
    md_log_int(&l, "pages_after", sq_pragma_int(db, "PRAGMA page_count"));
    md_log_int(&l, "auto_vacuum", now);
    if (rc != SQLITE_OK)
        md_log_str(&l, "error", why);
    md_log_end(&l);
}

enum md_err sq_deltas_open(struct sq_store *s)
{
    enum md_err e = deltas_open(s);
    if (!e && !s->cfg.read_only && !s->cfg.keep_versions && !s->writer->broken)
        auto_vacuum_open(s);
    return e;
}
