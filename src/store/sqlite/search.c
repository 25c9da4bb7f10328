/*
 * search.c — full-text search on SQLite (md_store.h, md_search_terms.h),
 * with its statements: the FTS5 table entries_search of
 * sql/sqlite/005_search.sql (a word index, contentless, rowid = entries.id,
 * a token per tenant): triggers note the files a write touches in
 * search_pending, in the write's own transaction, and sq_index_step writes
 * the notes into the index later, in steps of its own that the writer runs
 * between its batches (md_store_index_step): a file written many times
 * between two steps is indexed once, and the index grows by few, larger
 * segments. A search takes its candidates from the index and from the
 * notes, and checks each on its text (memoryd_score), so it sees every
 * committed write whether indexed yet or not, and never a word a file no
 * longer holds. --search on|off; memoryd_score(), the SQL function its
 * statements check and rank each candidate with (sq_search_score).
 *
 * Errors: MD_ENOENT (search is off), otherwise as sq_conn_rc; the setting
 * at start answers a SQLite result code with the reason in `why`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_buf.h"
#include "base/md_log.h"
#include "base/md_progress.h"
#include "base/md_text.h"
#include "internal.h"
#include "store/md_search_terms.h"

/* The notes of search_pending as index changes (the S_SEARCH_FLUSH_*
 * statements; sql/sqlite/005_search.sql): a file's first note since the
 * last step is kept, so each file noted with the content the index has of
 * it leaves the index with that content; each noted file that is one now
 * goes in with its content now; the notes are gone. The statements take
 * the notes up to an id (?1: a step's); the _SQL forms all of them. */
#define SEARCH_FLUSH_OUT_SQL                                                                       \
    "INSERT INTO entries_search (entries_search, rowid, body, tenant)"                             \
    " SELECT 'delete', id, old, char(57344) || tenant FROM search_pending WHERE old IS NOT NULL"
#define SEARCH_FLUSH_IN_SQL                                                                        \
    "INSERT INTO entries_search (rowid, body, tenant)"                                             \
    " SELECT id, content, char(57344) || tenant FROM entries"                                      \
    " WHERE id IN (SELECT id FROM search_pending) AND kind = 0"
#define SEARCH_FLUSH_CLEAR_SQL "DELETE FROM search_pending"
/* The files a step indexes: the notes' first ?1 ids. */
#define INDEX_STEP_FILES 4096
/* Whether there are notes at all: a transaction that noted nothing leaves
 * the index alone (and writes nothing for it). */
#define SEARCH_NOTED_SQL "SELECT EXISTS (SELECT 1 FROM search_pending)"

/* NOLINTBEGIN(bugprone-suspicious-missing-comma): statements over several lines */
const char *const sq_search_sql[S_COUNT] = {
    /* The index's candidates of this tenant at or below :path, each
     * checked and ranked on its text once (memoryd_score: -1 when it does
     * not match; LIMIT -1 keeps the subquery whole so the score is not
     * computed again), the page chosen on (id, path, score), then its
     * files' content read; or, when no word of the terms is long enough
     * for the index, the same on the tenant's files there. */
    [S_SEARCH_FTS] =
        "SELECT e.path, e.content FROM (SELECT id, path, score FROM"
        " (SELECT e.id, e.path, memoryd_score(e.content, :terms) AS score"
        " FROM (SELECT rowid AS id FROM entries_search WHERE entries_search MATCH :match"
        " UNION SELECT id FROM search_pending WHERE file_tenant = :tenant)"
        " candidates CROSS JOIN entries e ON e.id = candidates.id"
        " WHERE e.tenant = :tenant AND e.kind = 0"
        " AND (e.path = :path OR (e.path > :lo AND e.path < :hi)) LIMIT -1)"
        " WHERE score > 0 ORDER BY score DESC, path LIMIT :limit OFFSET :offset) page"
        " CROSS JOIN entries e ON e.id = page.id ORDER BY page.score DESC, page.path",
    [S_SEARCH_SCAN] = "SELECT e.path, e.content FROM (SELECT id, path, score FROM"
                      " (SELECT id, path, memoryd_score(content, :terms) AS score FROM entries"
                      " WHERE tenant = :tenant AND kind = 0"
                      " AND (path = :path OR (path > :lo AND path < :hi)) LIMIT -1)"
                      " WHERE score > 0 ORDER BY score DESC, path LIMIT :limit OFFSET :offset) page"
                      " CROSS JOIN entries e ON e.id = page.id ORDER BY page.score DESC, page.path",
    [S_SEARCH_OPTIMIZE] = "INSERT INTO entries_search (entries_search) VALUES ('optimize')",
    [S_SEARCH_NOTED] = SEARCH_NOTED_SQL,
    [S_SEARCH_FLUSH_OUT] = SEARCH_FLUSH_OUT_SQL " AND id <= ?1",
    [S_SEARCH_FLUSH_IN] =
        "INSERT INTO entries_search (rowid, body, tenant)"
        " SELECT id, content, char(57344) || tenant FROM entries"
        " WHERE id IN (SELECT id FROM search_pending WHERE id <= ?1) AND kind = 0",
    [S_SEARCH_FLUSH_CLEAR] = SEARCH_FLUSH_CLEAR_SQL " WHERE id <= ?1",
    /* The last id of a step (NULL: no notes) and whether notes are left
     * after it. */
    [S_SEARCH_STEP_UPTO] = "SELECT max(id), count(*) FROM"
                           " (SELECT id FROM search_pending ORDER BY id LIMIT ?1)",
};
/* NOLINTEND(bugprone-suspicious-missing-comma) */

/* The triggers as 005_search.sql made them (put back by --search on): they
 * note the files a write touches in search_pending; sq_search_flush turns
 * the notes into index changes before COMMIT. */
#define TENANT_TOKEN "char(57344) || "
#define NOTE_OLD                                                                                   \
    " INSERT OR IGNORE INTO search_pending (file_tenant, id, tenant, old)"                         \
    " VALUES (OLD.tenant, OLD.id, OLD.tenant, ifnull(OLD.content, x'')); END;"
static const char triggers_sql[] =
    "CREATE TRIGGER entries_search_insert AFTER INSERT ON entries WHEN NEW.kind = 0 BEGIN"
    " INSERT OR IGNORE INTO search_pending (file_tenant, id) VALUES (NEW.tenant, NEW.id); END;"
    "CREATE TRIGGER entries_search_delete AFTER DELETE ON entries WHEN OLD.kind = 0 BEGIN" NOTE_OLD
    "CREATE TRIGGER entries_search_update AFTER UPDATE OF content ON entries"
    " WHEN OLD.kind = 0 BEGIN" NOTE_OLD;

/* memoryd_score(content, terms): md_search_score. */
static void sql_score(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *text = sqlite3_value_blob(argv[0]);
    size_t n = (size_t)sqlite3_value_bytes(argv[0]);
    const char *list = (const char *)sqlite3_value_text(argv[1]);
    size_t list_len = (size_t)sqlite3_value_bytes(argv[1]);
    sqlite3_result_int64(ctx, md_search_score(text ? text : "", n, list ? list : "", list_len));
}

const struct sq_function sq_search_score = {"memoryd_score", 2, sql_score};

static int exec_why(sqlite3 *db, const char *sql, char *why, size_t why_len)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        snprintf(why, why_len, "search index: %s", msg ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    return rc;
}

/* The index made from the current files, with its triggers, in one
 * transaction on `db`. */
/* The files' rows into the index, BUILD_CHUNK ids at a time, counted in
 * `progress` (NULL: not counted), inside the caller's transaction. */
#define BUILD_CHUNK 4096
static int index_files(sqlite3 *db, struct md_progress *progress, char *why, size_t why_len)
{
    sqlite3_stmt *count = NULL, *put = NULL;
    int rc = sqlite3_prepare_v2(
        db, "SELECT count(*), coalesce(max(id), 0) FROM entries WHERE kind = 0", -1, &count, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db,
                                "INSERT INTO entries_search (rowid, body, tenant)"
                                " SELECT id, content, " TENANT_TOKEN "tenant FROM entries"
                                " WHERE kind = 0 AND id > ?1 AND id <= ?2",
                                -1, &put, NULL);
    int64_t max = 0, done = 0;
    if (rc == SQLITE_OK && (rc = sqlite3_step(count)) == SQLITE_ROW) {
        if (progress)
            progress->total = sqlite3_column_int64(count, 0);
        max = sqlite3_column_int64(count, 1);
        rc = SQLITE_OK;
    }
    for (int64_t lo = 0; rc == SQLITE_OK && lo < max; lo += BUILD_CHUNK) {
        sqlite3_bind_int64(put, 1, lo);
        sqlite3_bind_int64(put, 2, lo + BUILD_CHUNK);
        rc = sqlite3_step(put) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
        sqlite3_reset(put);
        done += sqlite3_changes(db);
        if (progress)
            md_progress_update(progress, done);
    }
    if (rc != SQLITE_OK)
        snprintf(why, why_len, "search index: %s", sqlite3_errmsg(db));
    sqlite3_finalize(count);
    sqlite3_finalize(put);
    return rc;
}

static int build_index(sqlite3 *db, struct md_progress *progress, char *why, size_t why_len)
{
    int rc = exec_why(db,
                      "BEGIN IMMEDIATE; INSERT INTO entries_search (entries_search) VALUES "
                      "('delete-all'); " SEARCH_FLUSH_CLEAR_SQL ";",
                      why, why_len);
    if (rc == SQLITE_OK)
        rc = index_files(db, progress, why, why_len);
    if (rc == SQLITE_OK)
        rc = exec_why(db, triggers_sql, why, why_len);
    if (rc == SQLITE_OK)
        rc = exec_why(db, "COMMIT", why, why_len);
    if (rc != SQLITE_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* The triggers of a database made before version 11 (their notes without
 * file_tenant, which the notes' key needs) replaced by triggers_sql, in
 * one transaction. */
static int triggers_upgrade(sqlite3 *db, char *why, size_t why_len)
{
    sqlite3_stmt *st = NULL;
    int rc =
        sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"
                           " AND name = 'entries_search_insert' AND sql LIKE '%(file_tenant, id)%'",
                           -1, &st, NULL);
    int current = rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (rc != SQLITE_OK) {
        snprintf(why, why_len, "search index: %s", sqlite3_errmsg(db));
        return rc;
    }
    if (current)
        return SQLITE_OK;
    char sql[sizeof triggers_sql + 256];
    snprintf(sql, sizeof sql,
             "BEGIN IMMEDIATE; DROP TRIGGER entries_search_insert;"
             " DROP TRIGGER entries_search_delete; DROP TRIGGER entries_search_update; %s COMMIT;",
             triggers_sql);
    rc = exec_why(db, sql, why, why_len);
    if (rc != SQLITE_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int sq_search_setting(sqlite3 *db, enum md_search_mode mode, _Atomic int *now_off,
                      _Atomic int *pending, char *why, size_t why_len)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"
                                " AND name = 'entries_search_insert'",
                                -1, &st, NULL);
    if (rc != SQLITE_OK) {
        snprintf(why, why_len, "search index: %s", sqlite3_errmsg(db));
        return rc;
    }
    int on = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
    sqlite3_finalize(st);
    *now_off = !on;
    if (on && (rc = triggers_upgrade(db, why, why_len)) != SQLITE_OK)
        return rc;
    int off = mode == MD_SEARCH_OFF;
    if (mode == MD_SEARCH_KEEP)
        return SQLITE_OK;
    if (on && !off) { /* notes a writer other than memoryd's may have left */
        rc = sqlite3_prepare_v2(db, SEARCH_NOTED_SQL, -1, &st, NULL);
        int noted = rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        if (!noted) /* nothing to do: nothing written at start (a full disk must not stop it) */
            return SQLITE_OK;
        rc = exec_why(db,
                      "BEGIN IMMEDIATE; " SEARCH_FLUSH_OUT_SQL "; " SEARCH_FLUSH_IN_SQL
                      "; " SEARCH_FLUSH_CLEAR_SQL "; COMMIT;",
                      why, why_len);
        if (rc != SQLITE_OK)
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    if (on == !off)
        return SQLITE_OK;
    if (!off && pending) { /* built while memoryd serves (sq_build) */
        *pending = 1;
        return SQLITE_OK;
    }
    if (off) {
        rc = exec_why(db,
                      "BEGIN IMMEDIATE; DROP TRIGGER entries_search_insert;"
                      " DROP TRIGGER entries_search_delete; DROP TRIGGER entries_search_update;"
                      " INSERT INTO entries_search (entries_search) VALUES ('delete-all');"
                      " " SEARCH_FLUSH_CLEAR_SQL "; COMMIT;",
                      why, why_len);
        if (rc != SQLITE_OK)
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    } else {
        rc = build_index(db, NULL, why, why_len);
    }
    if (rc != SQLITE_OK)
        return rc;
    *now_off = off;
    md_log_msg(MD_LOG_INFO,
               off ? "search index dropped (--search off)" : "search index rebuilt (--search on)",
               NULL);
    return SQLITE_OK;
}

/* The FTS5 query of the terms into `match` (empty when no word of the
 * terms has MD_SEARCH_SHORT_TERM characters: the caller scans instead):
 * each word of a term (a run of characters that are not separators,
 * md_text_is_sep) of that length, the last of each term as a prefix
 * ("bill"*), the others whole, ANDed with the tenant's token when
 * `tenant` > 0 (TOKEN_MAX_FILES). The terms
 * themselves into `list` ('\n' between) for memoryd_score, which checks
 * each candidate. */
static enum md_err build_query(const struct md_search_terms *q, int64_t tenant,
                               struct md_buf *match, struct md_buf *list)
{
    enum md_err e = MD_OK;
    for (size_t i = 0; i < q->n && !e; i++) {
        const char *s = q->terms[i];
        size_t n = q->lens[i];
        e = i ? md_buf_putc(list, '\n') : MD_OK;
        if (!e)
            e = md_buf_append(list, s, n);
        size_t at = 0, w, len;
        while (!e && md_search_next_word(s, n, &at, &w, &len)) {
            if (sq_utf8_chars(s + w, len) < MD_SEARCH_SHORT_TERM)
                continue;
            e = md_buf_puts(match, match->len ? " AND \"" : "\"");
            if (!e)
                e = md_buf_append(match, s + w, len); /* no '"': a separator */
            if (!e)
                e = md_buf_puts(match, w + len >= n ? "\"*" : "\"");
        }
    }
    if (!e && match->len && tenant > 0)
        e = md_buf_printf(match, " AND \"\xee\x80\x80%lld\"", (long long)tenant);
    return e;
}

/* A tenant of this many files or more is searched without its token: FTS5
 * reads a token's postings whole to AND them (about 13 ns a file: 1.3 ms
 * for 100,000), which costs such a tenant more than it saves; a smaller
 * tenant's search costs at most that much more than its own matches. */
#define TOKEN_MAX_FILES 10000

enum md_err sq_build(struct md_store *base, char *why, size_t why_len)
{
    struct sq_store *s = (struct sq_store *)base;
    if (!s->search_pending)
        return MD_OK;
    /* A connection of its own; the writer's and the readers' statements
     * see the new triggers when they next run (SQLite prepares them again). */
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(s->path, &db, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK) {
        /* Another writer (memoryd's own writer, between two batches) may
         * hold the lock: wait for it as long as it takes. */
        sqlite3_busy_timeout(db, 1000);
        /* Progress in files indexed: a log line every few seconds. */
        struct md_progress progress;
        md_progress_begin(&progress, "search index", "files", 0, 0);
        do
            rc = build_index(db, &progress, why, why_len);
        while (rc == SQLITE_BUSY);
        md_progress_end(&progress);
    } else {
        snprintf(why, why_len, "search index: %s", sqlite3_errstr(rc));
    }
    sqlite3_close(db);
    s->search_pending = 0;
    if (rc != SQLITE_OK)
        return MD_EDB; /* search stays off */
    s->search_off = 0;
    md_log_msg(MD_LOG_INFO, "search index rebuilt (--search on)", NULL);
    return MD_OK;
}

int sq_building(struct md_store *base)
{
    return ((struct sq_store *)base)->search_pending;
}

enum md_err sq_search(struct md_txn *base, const char *tenant, const struct md_search_terms *q,
                      md_search_cb cb, void *ctx)
{
    struct sq_txn *t = (struct sq_txn *)base;
    struct sq_store *s = (struct sq_store *)base->store;
    if (s->search_pending)
        return MD_EBUSY;
    if (s->search_off)
        return MD_ENOENT;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (e)
        return e == MD_ENOENT ? MD_OK : e; /* no data: no hits */
    int64_t files = 0;
    e = sq_tenant_files(t, id, &files, "search");
    if (e)
        return e;
    struct md_buf match, list;
    md_buf_init(&match, 4096);
    md_buf_init(&list, 4096);
    struct bounds b;
    e = build_query(q, files < TOKEN_MAX_FILES ? id : 0, &match, &list);
    if (!e)
        e = sq_bounds_make(&b, q->dir, q->dir_len);
    if (e) {
        md_buf_free(&match);
        md_buf_free(&list);
        return e;
    }
    sqlite3_stmt *st = sq_stmt(t, match.len ? S_SEARCH_FTS : S_SEARCH_SCAN);
    if (match.len)
        sq_bind_named_text(st, ":match", match.data, match.len);
    sq_bind_named_int64(st, ":tenant", id);
    sq_bind_named_text(st, ":path", q->dir, q->dir_len);
    sq_bind_named_text(st, ":lo", b.lop, b.n);
    sq_bind_named_text(st, ":hi", b.hip, b.n);
    sq_bind_named_text(st, ":terms", list.data, list.len);
    sq_bind_named_int64(st, ":limit", (int64_t)q->limit);
    sq_bind_named_int64(st, ":offset", (int64_t)q->offset);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *content = sqlite3_column_blob(st, 1);
        size_t clen = (size_t)sqlite3_column_bytes(st, 1);
        if (cb(ctx, (const char *)sqlite3_column_text(st, 0), (size_t)sqlite3_column_bytes(st, 0),
               content ? content : "", clen)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sq_done(st);
    sq_bounds_free(&b);
    md_buf_free(&match);
    md_buf_free(&list);
    return sq_conn_rc(t->c, rc == SQLITE_DONE ? SQLITE_OK : rc, "search");
}

/* The notes up to id `upto` into the index, in transaction t. */
static enum md_err flush_upto(struct sq_txn *t, int64_t upto)
{
    static const int stmts[] = {S_SEARCH_FLUSH_OUT, S_SEARCH_FLUSH_IN, S_SEARCH_FLUSH_CLEAR};
    enum md_err e = MD_OK;
    for (size_t i = 0; !e && i < sizeof stmts / sizeof stmts[0]; i++) {
        sqlite3_stmt *st = sq_stmt(t, stmts[i]);
        sqlite3_bind_int64(st, 1, upto);
        e = sq_run(t, st, "search index");
    }
    return e;
}

enum md_err sq_search_flush(struct sq_txn *t)
{
    if (((struct sq_store *)t->base.store)->search_off)
        return MD_OK;
    sqlite3_stmt *st = sq_stmt(t, S_SEARCH_NOTED);
    int rc = sqlite3_step(st);
    int noted = rc == SQLITE_ROW && sqlite3_column_int(st, 0);
    sq_done(st);
    if (rc != SQLITE_ROW)
        return sq_conn_rc(t->c, rc, "search index");
    return noted ? flush_upto(t, INT64_MAX) : MD_OK;
}

enum md_err sq_search_step(struct sq_txn *t, int *noted, int *more)
{
    sqlite3_stmt *st = sq_stmt(t, S_SEARCH_STEP_UPTO);
    sqlite3_bind_int64(st, 1, INDEX_STEP_FILES);
    int rc = sqlite3_step(st);
    *noted = rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL;
    int64_t upto = *noted ? sqlite3_column_int64(st, 0) : 0;
    *more = rc == SQLITE_ROW && sqlite3_column_int64(st, 1) >= INDEX_STEP_FILES;
    sq_done(st);
    if (rc != SQLITE_ROW)
        return sq_conn_rc(t->c, rc, "search index");
    return *noted ? flush_upto(t, upto) : MD_OK;
}

enum md_err sq_search_purge(struct sq_txn *t)
{
    if (((struct sq_store *)t->base.store)->search_off)
        return MD_OK;
    enum md_err e = sq_search_flush(t); /* the erased files leave the index first */
    if (!e)
        e = sq_run(t, sq_stmt(t, S_SEARCH_OPTIMIZE), "search index optimize");
    return e;
}
