/*
 * stmt.c — the statement helpers of the SQLite engine (see internal.h):
 * handing out a connection's prepared statements, binding and running
 * them, SQLite result codes mapped to md_err (logged, and a connection
 * marked broken when the file itself is in trouble), the bounds of a
 * subtree's paths.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_log.h"
#include "base/md_metrics.h"
#include "internal.h"

int64_t sq_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sq_log(sqlite3 *db, int rc, const char *what)
{
    struct md_logline l;
    md_log_begin(&l, MD_LOG_ERROR, "sqlite error");
    md_log_str(&l, "op", what);
    md_log_int(&l, "code", rc);
    md_log_str(&l, "error", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    md_log_end(&l);
    md_metrics_storage_error();
}

static enum md_err map_rc(sqlite3 *db, int rc, const char *what)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW:
        return MD_OK;
    case SQLITE_CONSTRAINT:
        if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE)
            return MD_EEXIST;
        break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        sq_log(db, rc, what);
        return MD_EBUSY;
    case SQLITE_NOMEM:
        return MD_ENOMEM;
    default:
        break;
    }
    sq_log(db, rc, what);
    return MD_EDB;
}

/* An error that says the database file itself is in trouble. */
static int rc_environmental(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_READONLY:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_PROTOCOL:
        return 1;
    default:
        return 0;
    }
}

/* map_rc for a statement on connection c; marks c broken when needed. */
enum md_err sq_conn_rc(struct sq_conn *c, int rc, const char *what)
{
    if (rc_environmental(rc))
        c->broken = 1;
    return map_rc(c->db, rc, what);
}

sqlite3_stmt *sq_stmt(struct sq_txn *t, enum stmt_id id)
{
    t->statements++;
    if (t->pending) {
        sqlite3_reset(t->pending);
        t->pending = NULL;
    }
    return t->c->st[id];
}

/* `st` may be NULL: a statement a read-only store of another schema
 * version could not prepare (conn.c), whose step failed with
 * SQLITE_MISUSE. */
void sq_done(sqlite3_stmt *st)
{
    if (!st)
        return;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

void sq_bind_text(sqlite3_stmt *st, int i, const char *p, size_t n)
{
    sqlite3_bind_text(st, i, p, (int)n, SQLITE_STATIC);
}

/* Run a statement that returns no rows. */
enum md_err sq_run(struct sq_txn *t, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    sq_done(st);
    return sq_conn_rc(t->c, rc, what);
}

/* Bind a named parameter when the statement has it. */
void sq_bind_named_text(sqlite3_stmt *st, const char *name, const char *p, size_t n)
{
    int i = sqlite3_bind_parameter_index(st, name);
    if (i)
        sq_bind_text(st, i, p, n);
}

void sq_bind_named_int64(sqlite3_stmt *st, const char *name, int64_t v)
{
    int i = sqlite3_bind_parameter_index(st, name);
    if (i)
        sqlite3_bind_int64(st, i, v);
}

int64_t sq_column_or(sqlite3_stmt *st, int col, int64_t none)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? none : sqlite3_column_int64(st, col);
}

/* Characters (not bytes) of a UTF-8 string: SQLite's substr() counts them. */
int64_t sq_utf8_chars(const char *s, size_t n)
{
    int64_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

enum md_err sq_bounds_make(struct bounds *b, const char *dir, size_t len)
{
    b->lo_heap = b->hi_heap = NULL;
    char *lo = b->lo, *hi = b->hi;
    if (len + 2 > sizeof b->lo) {
        lo = b->lo_heap = malloc(len + 2);
        hi = b->hi_heap = malloc(len + 2);
        if (!lo || !hi) {
            free(b->lo_heap);
            free(b->hi_heap);
            return MD_ENOMEM;
        }
    }
    memcpy(lo, dir, len);
    memcpy(hi, dir, len);
    lo[len] = '/';
    hi[len] = '0';
    b->lop = lo;
    b->hip = hi;
    b->n = len + 1;
    return MD_OK;
}

void sq_bounds_free(struct bounds *b)
{
    free(b->lo_heap);
    free(b->hi_heap);
}
