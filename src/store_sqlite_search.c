/*
 * store_sqlite_search.c — full-text search on SQLite (md_store.h,
 * md_search.h): the FTS5 table entries_search of sql/sqlite/005_search.sql
 * (trigram tokenizer, contentless, rowid = entries.id), kept by triggers
 * in the transaction of every write; --search on|off.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md_buf.h"
#include "md_log.h"
#include "md_search.h"
#include "store_sqlite_internal.h"

/* The triggers as 005_search.sql made them (put back by --search on). */
static const char triggers_sql[] =
    "CREATE TRIGGER entries_search_insert AFTER INSERT ON entries WHEN NEW.kind = 0 BEGIN"
    " INSERT INTO entries_search (rowid, body) VALUES (NEW.id, NEW.content); END;"
    "CREATE TRIGGER entries_search_delete AFTER DELETE ON entries WHEN OLD.kind = 0 BEGIN"
    " INSERT INTO entries_search (entries_search, rowid, body)"
    " VALUES ('delete', OLD.id, OLD.content); END;"
    "CREATE TRIGGER entries_search_update AFTER UPDATE OF content ON entries"
    " WHEN OLD.kind = 0 BEGIN"
    " INSERT INTO entries_search (entries_search, rowid, body)"
    " VALUES ('delete', OLD.id, OLD.content);"
    " INSERT INTO entries_search (rowid, body) VALUES (NEW.id, NEW.content); END;";

/* memoryd_contains(content, terms): md_search_contains_all. */
static void sql_contains(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[1]) == SQLITE_NULL) {
        sqlite3_result_int(ctx, 1);
        return;
    }
    const char *text = sqlite3_value_blob(argv[0]);
    size_t n = (size_t)sqlite3_value_bytes(argv[0]);
    const char *list = (const char *)sqlite3_value_text(argv[1]);
    size_t list_len = (size_t)sqlite3_value_bytes(argv[1]);
    sqlite3_result_int(ctx,
                       md_search_contains_all(text ? text : "", n, list ? list : "", list_len));
}

int sq_search_functions(sqlite3 *db)
{
    return sqlite3_create_function(db, "memoryd_contains", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                   NULL, sql_contains, NULL, NULL);
}

static int exec_why(sqlite3 *db, const char *sql, char *why, size_t why_len)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        snprintf(why, why_len, "search index: %s", msg ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    return rc;
}

int sq_search_setting(sqlite3 *db, enum md_search_mode mode, int *now_off, char *why,
                      size_t why_len)
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
    int off = mode == MD_SEARCH_OFF;
    if (mode == MD_SEARCH_KEEP || on == !off)
        return SQLITE_OK;
    const char *sql =
        off ? "BEGIN IMMEDIATE; DROP TRIGGER entries_search_insert;"
              " DROP TRIGGER entries_search_delete; DROP TRIGGER entries_search_update;"
              " INSERT INTO entries_search (entries_search) VALUES ('delete-all'); COMMIT;"
            : "BEGIN IMMEDIATE; INSERT INTO entries_search (entries_search) VALUES ('delete-all');"
              " INSERT INTO entries_search (rowid, body) SELECT id, content FROM entries"
              " WHERE kind = 0;";
    rc = exec_why(db, sql, why, why_len);
    if (rc == SQLITE_OK && !off) {
        rc = exec_why(db, triggers_sql, why, why_len);
        if (rc == SQLITE_OK)
            rc = exec_why(db, "COMMIT", why, why_len);
    }
    if (rc != SQLITE_OK) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    *now_off = off;
    md_log_msg(MD_LOG_INFO,
               off ? "search index dropped (--search off)" : "search index rebuilt (--search on)",
               NULL);
    return SQLITE_OK;
}

/* The FTS5 query of the terms of at least MD_SEARCH_SHORT_TERM characters
 * (each a quoted string: a substring for the trigram tokenizer) into
 * `match`, the shorter ones into `shorts` ('\n' between). */
static enum md_err split_terms(const struct md_search_terms *q, struct md_buf *match,
                               struct md_buf *shorts)
{
    enum md_err e = MD_OK;
    for (size_t i = 0; i < q->n && !e; i++) {
        const char *s = q->terms[i];
        size_t n = q->lens[i];
        if (sq_utf8_chars(s, n) < MD_SEARCH_SHORT_TERM) {
            if (shorts->len)
                e = md_buf_putc(shorts, '\n');
            if (!e)
                e = md_buf_append(shorts, s, n);
            continue;
        }
        e = md_buf_puts(match, match->len ? " AND \"" : "\"");
        for (size_t k = 0; k < n && !e; k++)
            e = s[k] == '"' ? md_buf_puts(match, "\"\"") : md_buf_putc(match, s[k]);
        if (!e)
            e = md_buf_putc(match, '"');
    }
    return e;
}

enum md_err sq_search(struct md_txn *base, const char *tenant, const struct md_search_terms *q,
                      md_search_cb cb, void *ctx)
{
    struct sq_txn *t = (struct sq_txn *)base;
    struct sq_store *s = (struct sq_store *)base->store;
    if (s->search_off)
        return MD_ENOENT;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (e)
        return e == MD_ENOENT ? MD_OK : e; /* no data: no hits */
    struct md_buf match, shorts;
    md_buf_init(&match, 4096);
    md_buf_init(&shorts, 4096);
    struct bounds b;
    e = split_terms(q, &match, &shorts);
    if (!e)
        e = sq_bounds_make(&b, q->dir, q->dir_len);
    if (e) {
        md_buf_free(&match);
        md_buf_free(&shorts);
        return e;
    }
    sqlite3_stmt *st = sq_stmt(t, match.len ? S_SEARCH_FTS : S_SEARCH_SCAN);
    if (match.len)
        sq_bind_named_text(st, ":match", match.data, match.len);
    sq_bind_named_int64(st, ":tenant", id);
    sq_bind_named_text(st, ":path", q->dir, q->dir_len);
    sq_bind_named_text(st, ":lo", b.lop, b.n);
    sq_bind_named_text(st, ":hi", b.hip, b.n);
    if (shorts.len)
        sq_bind_named_text(st, ":short", shorts.data, shorts.len);
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
    md_buf_free(&shorts);
    return sq_conn_rc(t->c, rc == SQLITE_DONE ? SQLITE_OK : rc, "search");
}
