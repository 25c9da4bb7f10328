/* schema.c — the PostgreSQL schema: migrations of sql/postgres/ applied at
 * start, once, whichever instance comes first, and the --search setting
 * (see internal.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_log.h"
#include "base/md_progress.h"
#include "internal.h"
#include "store/pg/md_store_pg.h"

/* Generated from sql/postgres/ by CMake (cmake/embed_sql.cmake). */
extern const char *const md_postgres_migrations[];
extern const int md_postgres_migrations_count;

/* The key of the session advisory lock held while migrating ("memoryd"). */
#define MIGRATE_LOCK "7283012759385612297"

int md_store_pg_schema_version(void)
{
    return md_postgres_migrations_count;
}

/* Run `sql` (one or more statements); 0, or -1 with the error in `why`. */
static int exec(PGconn *conn, const char *sql, char *why, size_t why_len)
{
    PGresult *r = PQexec(conn, sql);
    ExecStatusType st = PQresultStatus(r);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok)
        snprintf(why, why_len, "%s", PQerrorMessage(conn));
    PQclear(r);
    return ok ? 0 : -1;
}

/* The schema version recorded in the database (0: none yet); -1 on error. */
static int recorded_version(PGconn *conn, char *why, size_t why_len)
{
    PGresult *r = PQexec(conn, "SELECT coalesce(max(version), 0) FROM memoryd_schema");
    int v = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        v = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
    else
        snprintf(why, why_len, "cannot read the schema version: %s", PQerrorMessage(conn));
    PQclear(r);
    return v;
}

int md_pg_migrate(PGconn *conn, char *why, size_t why_len)
{
    if (exec(conn, "SELECT pg_advisory_lock(" MIGRATE_LOCK ")", why, why_len))
        return -1;
    int rc = exec(conn,
                  "CREATE TABLE IF NOT EXISTS memoryd_schema (version integer PRIMARY KEY, "
                  "applied_at timestamptz NOT NULL DEFAULT now())",
                  why, why_len);
    int version = rc ? -1 : recorded_version(conn, why, why_len);
    if (version > md_postgres_migrations_count) {
        snprintf(why, why_len,
                 "database schema version %d is newer than this memoryd (%d); refusing to open "
                 "it",
                 version, md_postgres_migrations_count);
        version = -1;
    }
    for (int i = version; i >= 0 && i < md_postgres_migrations_count; i++) {
        char record[96];
        snprintf(record, sizeof record, "INSERT INTO memoryd_schema (version) VALUES (%d)", i + 1);
        if (exec(conn, "BEGIN", why, why_len) ||
            exec(conn, md_postgres_migrations[i], why, why_len) ||
            exec(conn, record, why, why_len) || exec(conn, "COMMIT", why, why_len)) {
            char keep[512];
            snprintf(keep, sizeof keep, "%s", why);
            exec(conn, "ROLLBACK", why, why_len);
            snprintf(why, why_len, "schema migration %d failed: %s", i + 1, keep);
            version = -1;
            break;
        }
        struct md_logline l;
        md_log_begin(&l, MD_LOG_INFO, "schema migrated");
        md_log_str(&l, "engine", "postgres");
        md_log_int(&l, "version", i + 1);
        md_log_end(&l);
    }
    char ignore[256];
    exec(conn, "SELECT pg_advisory_unlock(" MIGRATE_LOCK ")", ignore, sizeof ignore);
    return version < 0 ? -1 : 0;
}

/* --search on where the word index is missing, and --search off
 * (memoryd_search_on, memoryd_search_off of 012_search_follows_feed.sql), with
 * the writes held meanwhile (a lock that is its own conflict: an instance
 * that starts with it waits, then finds the index made). */
#define SEARCH_ON_SQL                                                                              \
    "BEGIN; LOCK TABLE entries IN SHARE ROW EXCLUSIVE MODE; SELECT memoryd_search_on(); COMMIT"
#define SEARCH_OFF_SQL                                                                             \
    "BEGIN; LOCK TABLE entries IN SHARE ROW EXCLUSIVE MODE; SELECT memoryd_search_off(); COMMIT"

int md_pg_search_setting(PGconn *conn, enum md_search_mode mode, _Atomic int *now_off,
                         _Atomic int *pending, char *why, size_t why_len)
{
    PGresult *r = PQexec(conn, "SELECT to_regclass('search_words_gin') IS NOT NULL");
    int on = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
             strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    *now_off = !on;
    int off = mode == MD_SEARCH_OFF;
    if (mode == MD_SEARCH_KEEP || on == !off)
        return 0;
    if (!off && pending) { /* built while memoryd serves (md_pg_build) */
        *pending = 1;
        return 0;
    }
    if (exec(conn, off ? SEARCH_OFF_SQL : SEARCH_ON_SQL, why, why_len))
        return -1;
    *now_off = off;
    md_log_msg(MD_LOG_INFO,
               off ? "search index dropped (--search off)" : "search index built (--search on)",
               NULL);
    return 0;
}

/* How often a build's progress is read (pg_stat_progress_create_index). */
#define BUILD_POLL_MS 100

/* How far the CREATE INDEX of `builder` has come, read on `watch` into
 * `p`: the table's blocks scanned ("building index": blocks_done of
 * blocks_total). Nothing while it waits for its lock; a reading of every
 * block done before the scan was seen under way is the view's state
 * before the scan, not taken (*scanning: it was seen). */
static void build_progress(PGconn *watch, PGconn *builder, struct md_progress *p, int *scanning)
{
    char pid[16];
    snprintf(pid, sizeof pid, "%d", PQbackendPID(builder));
    const char *params[1] = {pid};
    PGresult *r = PQexecParams(watch,
                               "SELECT blocks_done, blocks_total FROM pg_stat_progress_create_index"
                               " WHERE pid = $1 AND phase LIKE 'building index%'",
                               1, NULL, params, NULL, NULL, 0);
    int64_t done = p->done;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
        int64_t d = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        int64_t total = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
        if (total > 0)
            p->total = total;
        *scanning |= d < total;
        if (*scanning && d > done)
            done = d;
    }
    md_progress_update(p, done);
    PQclear(r);
}

/* The index built on `conn`, its progress logged every few seconds
 * (md_progress.h) from a second connection; without one, built all the
 * same. 0, or -1 with the reason in `why`. */
static int build_index(const char *uri, PGconn *conn, char *why, size_t why_len)
{
    char ignore[256];
    PGconn *watch = md_pg_connect(uri, ignore, sizeof ignore);
    if (!watch)
        return exec(conn, SEARCH_ON_SQL, why, why_len);
    struct md_progress p;
    md_progress_begin(&p, "search index", "blocks", 0, 0);
    /* Its statements' results read as each comes, the progress between. */
    int rc = PQsendQuery(conn, SEARCH_ON_SQL) ? 0 : -1, scanning = 0, done = 0;
    while (!rc && !done) {
        build_progress(watch, conn, &p, &scanning);
        struct pollfd pfd = {PQsocket(conn), POLLIN, 0};
        if ((poll(&pfd, 1, BUILD_POLL_MS) < 0 && errno != EINTR) || !PQconsumeInput(conn))
            rc = -1;
        while (!rc && !done && !PQisBusy(conn)) {
            PGresult *r = PQgetResult(conn);
            done = r == NULL;
            if (r && PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
                rc = -1;
            PQclear(r);
        }
    }
    PGresult *r;
    while ((r = PQgetResult(conn)) != NULL) /* after a failure: the rest */
        PQclear(r);
    if (rc)
        snprintf(why, why_len, "%s", PQerrorMessage(conn));
    else
        md_progress_update(&p, p.total);
    md_progress_end(&p);
    PQfinish(watch);
    return rc;
}

enum md_err md_pg_build(struct md_store *base, char *why, size_t why_len)
{
    struct pg_store *s = (struct pg_store *)base;
    if (!s->search_pending)
        return MD_OK;
    /* A connection of its own: CREATE INDEX waits for the writes under way
     * (a SHARE lock on entries) and holds the next ones until it is done. */
    PGconn *conn = md_pg_connect(s->uri, why, why_len);
    int rc = conn ? build_index(s->uri, conn, why, why_len) : -1;
    PQfinish(conn);
    s->search_pending = 0;
    if (rc)
        return MD_EDB; /* search stays off */
    s->search_off = 0;
    md_log_msg(MD_LOG_INFO, "search index built (--search on)", NULL);
    return MD_OK;
}

int md_pg_building(struct md_store *base)
{
    return ((struct pg_store *)base)->search_pending;
}
