/*
 * imports.c — the marks of imports written in steps on SQLite (md_store.h,
 * MD_STORE_CAP_IMPORT_MARK; sql/sqlite/006_imports.sql), with their
 * statements: a mark made in an import's first step, dropped in its last,
 * listed at start, and the history an undone import recorded forgotten.
 *
 * Errors: MD_ENOENT (no mark for the tenant), otherwise as sq_conn_rc.
 */
#include <string.h>

#include "internal.h"

/* NOLINTBEGIN(bugprone-suspicious-missing-comma): statements over several lines */
const char *const sq_imports_sql[S_COUNT] = {
    [S_IMPORT_MARK] = "INSERT INTO imports (tenant, last_version, last_seq, started)"
                      " SELECT id, last_version, last_seq, ?2 FROM tenants WHERE id = ?1",
    [S_IMPORT_UNMARK] = "DELETE FROM imports WHERE tenant = ?1",
    [S_IMPORT_MARKS] = "SELECT t.name, i.last_version FROM imports i JOIN tenants t"
                       " ON t.id = i.tenant ORDER BY i.tenant",
    [S_IMPORT_MARK_GET] = "SELECT last_version, last_seq FROM imports WHERE tenant = ?1",
    [S_IMPORT_CUT_VERSIONS] = "DELETE FROM versions WHERE tenant = ?1 AND version > ?2",
    [S_IMPORT_CUT_CHANGES] = "DELETE FROM changes WHERE tenant = ?1 AND seq > ?2",
};
/* NOLINTEND(bugprone-suspicious-missing-comma) */

enum md_err sq_import_mark(struct md_txn *base, const char *tenant)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 1, &id);
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_IMPORT_MARK);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, sq_now_ms());
    return sq_run(t, st, "import mark");
}

/* Run a statement of one or two integers: the tenant's id, then `v`. */
static enum md_err run_on(struct sq_txn *t, enum stmt_id sid, int64_t id, int64_t v,
                          const char *what)
{
    sqlite3_stmt *st = sq_stmt(t, sid);
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_bind_parameter_count(st) > 1)
        sqlite3_bind_int64(st, 2, v);
    return sq_run(t, st, what);
}

enum md_err sq_import_unmark(struct md_txn *base, const char *tenant)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    return e ? e : run_on(t, S_IMPORT_UNMARK, id, 0, "import unmark");
}

enum md_err sq_import_marks(struct md_txn *base, md_import_mark_cb cb, void *ctx)
{
    struct sq_txn *t = (struct sq_txn *)base;
    sqlite3_stmt *st = sq_stmt(t, S_IMPORT_MARKS);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (cb(ctx, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1)))
            break;
    sq_done(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, "import marks");
}

enum md_err sq_import_forget(struct md_txn *base, const char *tenant)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_IMPORT_MARK_GET);
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    int64_t version = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    int64_t seq = rc == SQLITE_ROW ? sqlite3_column_int64(st, 1) : 0;
    sq_done(st);
    if (rc == SQLITE_DONE)
        return MD_ENOENT;
    if (rc != SQLITE_ROW)
        return sq_conn_rc(t->c, rc, "import mark");
    e = run_on(t, S_IMPORT_CUT_VERSIONS, id, version, "import undo: versions");
    if (!e)
        e = run_on(t, S_IMPORT_CUT_CHANGES, id, seq, "import undo: changes");
    if (!e) {
        st = sq_stmt(t, S_COUNTERS_SET);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, version);
        sqlite3_bind_int64(st, 3, seq);
        e = sq_run(t, st, "import undo: counters");
    }
    return e ? e : run_on(t, S_IMPORT_UNMARK, id, 0, "import unmark");
}
