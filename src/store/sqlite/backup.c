/*
 * backup.c — an online copy of a SQLite database into a file
 * (md_store_backup; memoryd backup, src/app/backup.c, publishes it).
 *
 * SQLite's online backup API (sqlite3_backup_*) run inside one read
 * transaction on a reader connection of the store: one snapshot, holding
 * every transaction committed before it began, and the copy never
 * restarts however much a serving memoryd writes meanwhile (in WAL mode a
 * reader does not block the writer). Pages are copied in steps with a
 * short pause between them (the disk is shared with the serving memoryd);
 * a busy source or copy may hold it up for BUSY_WAIT_MS in all. The
 * snapshot is let go as soon as the pages are copied; then the copy is
 * checked (PRAGMA integrity_check says ok, memoryd's tables are in it) and
 * closed. The caller made the file and removes it on failure.
 *
 * Errors: MD_EBUSY when *stop was set between two steps; MD_EDB for
 * anything else; the reason in `why` as memoryd backup prints it.
 */
#include <stdio.h>
#include <string.h>

#include "base/md_progress.h"
#include "internal.h"

/* Pages copied per sqlite3_backup_step, and the pause between steps. */
#define STEP_PAGES    256
#define STEP_PAUSE_NS 1000000L /* 1 ms */
/* How long a busy source or copy may hold the backup up, in all. */
#define BUSY_WAIT_MS 30000

/* The reason, "what: detail", into `why`; returns MD_EDB. */
static enum md_err fail(char *why, size_t why_len, const char *what, const char *detail)
{
    snprintf(why, why_len, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
    return MD_EDB;
}

static void pause_ns(long ns)
{
    struct timespec t = {0, ns};
    nanosleep(&t, NULL);
}

/* A reader in a read transaction of its own, its snapshot started (by
 * the check that the database is still memoryd's). */
static enum md_err source_begin(struct sq_store *s, struct sq_conn **out, char *why, size_t why_len)
{
    struct sq_conn *c = sq_reader_take(s);
    if (!c)
        return fail(why, why_len, s->path, "cannot open a connection (see the log)");
    sq_reader_end_snapshot(c); /* a kept one is older than this call */
    sqlite3_stmt *st = c->st[S_BEGIN];
    int rc = sqlite3_step(st);
    sq_done(st);
    enum md_err e = MD_OK;
    if (rc != SQLITE_DONE)
        e = fail(why, why_len, s->path, sqlite3_errmsg(c->db));
    else if (sq_check_memoryd_db(c->db, s->path, why, why_len) != SQLITE_OK)
        e = MD_EDB;
    if (e) {
        if (!sqlite3_get_autocommit(c->db))
            sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
        sq_reader_release(s, c);
        return e;
    }
    *out = c;
    return MD_OK;
}

/* The snapshot is no longer needed: let a serving memoryd's checkpoints
 * through. */
static void source_end(struct sq_store *s, struct sq_conn *c)
{
    if (!sqlite3_get_autocommit(c->db)) {
        sqlite3_stmt *st = c->st[S_COMMIT];
        if (sqlite3_step(st) != SQLITE_DONE)
            sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
        sq_done(st);
    }
    sq_reader_release(s, c);
}

/* Copy every page of `src` into `dst`, in steps; the source's read
 * transaction keeps the snapshot, so the backup never restarts. */
/* Tell `progress` (NULL: nobody) how many of the pages are copied. */
static void pages_copied(sqlite3_backup *bk, struct md_progress *progress)
{
    if (!progress)
        return;
    int total = sqlite3_backup_pagecount(bk);
    progress->total = total;
    md_progress_update(progress, total - sqlite3_backup_remaining(bk));
}

static enum md_err copy_pages(sqlite3 *dst, sqlite3 *src, const volatile int *stop,
                              struct md_progress *progress, struct md_backup_info *out, char *why,
                              size_t why_len)
{
    sqlite3_backup *bk = sqlite3_backup_init(dst, "main", src, "main");
    if (!bk)
        return fail(why, why_len, "cannot start the backup", sqlite3_errmsg(dst));
    int rc, busy_ms = 0;
    while ((rc = sqlite3_backup_step(bk, STEP_PAGES)) != SQLITE_DONE && !*stop) {
        int busy = rc == SQLITE_BUSY || rc == SQLITE_LOCKED;
        if ((!busy && rc != SQLITE_OK) || (busy && (busy_ms += 10) > BUSY_WAIT_MS))
            break;
        pages_copied(bk, progress);
        /* A short pause: the disk is shared with the serving memoryd. */
        pause_ns(busy ? 10 * STEP_PAUSE_NS : STEP_PAUSE_NS);
    }
    pages_copied(bk, progress);
    out->pages = sqlite3_backup_pagecount(bk);
    int frc = sqlite3_backup_finish(bk);
    if (*stop) {
        snprintf(why, why_len, "interrupted");
        return MD_EBUSY;
    }
    if (rc != SQLITE_DONE || frc != SQLITE_OK)
        return fail(why, why_len, "the copy failed",
                    sqlite3_errstr(rc != SQLITE_DONE && rc != SQLITE_OK ? rc : frc));
    return MD_OK;
}

/* One integer `sql` answers on `db` (left as it is when there is none). */
static void query_int64(sqlite3 *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
}

/* PRAGMA integrity_check on the copy, memoryd's tables in it; its tenants
 * and page size. */
static enum md_err check_copy(sqlite3 *dst, struct md_backup_info *out, char *why, size_t why_len)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(dst, "PRAGMA integrity_check", -1, &st, NULL);
    char first[512] = "";
    int rows = 0;
    while (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        if (rows++ == 0)
            snprintf(first, sizeof first, "%s", (const char *)sqlite3_column_text(st, 0));
    if (rc != SQLITE_OK)
        snprintf(first, sizeof first, "%s", sqlite3_errmsg(dst));
    sqlite3_finalize(st);
    if (rows != 1 || strcmp(first, "ok") != 0)
        return fail(why, why_len, "the copy failed PRAGMA integrity_check", first);
    if (sq_check_memoryd_db(dst, "the copy", why, why_len) != SQLITE_OK)
        return MD_EDB;
    query_int64(dst, "SELECT count(*) FROM tenants", &out->tenants);
    query_int64(dst, "PRAGMA page_size", &out->page_size);
    return MD_OK;
}

enum md_err sq_backup(struct md_store *base, const char *path, const volatile int *stop,
                      struct md_progress *progress, struct md_backup_info *out, char *why,
                      size_t why_len)
{
    struct sq_store *s = (struct sq_store *)base;
    *out = (struct md_backup_info){0, 0, 0};
    sqlite3 *dst = NULL;
    int rc = sqlite3_open_v2(path, &dst, SQLITE_OPEN_READWRITE, NULL);
    if (rc != SQLITE_OK) {
        fail(why, why_len, path, dst ? sqlite3_errmsg(dst) : sqlite3_errstr(rc));
        sqlite3_close(dst);
        return MD_EDB;
    }
    sqlite3_busy_timeout(dst, BUSY_WAIT_MS);
    struct sq_conn *src = NULL;
    enum md_err e = source_begin(s, &src, why, why_len);
    if (!e) {
        e = copy_pages(dst, src->db, stop, progress, out, why, why_len);
        source_end(s, src);
    }
    if (!e)
        e = check_copy(dst, out, why, why_len);
    rc = sqlite3_close(dst); /* checkpoints and removes the copy's -wal and -shm */
    if (!e && rc != SQLITE_OK)
        e = fail(why, why_len, "cannot close the copy", sqlite3_errstr(rc));
    return e;
}
