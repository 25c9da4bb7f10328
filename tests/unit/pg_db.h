/*
 * pg_db.h — a fresh database of the suite's PostgreSQL cluster for a C
 * test (test_store, test_pg_engine). MD_TEST_PG names the directory of a
 * cluster tests/lib/pg.mjs started (ctest's pg/unit/ tests set it); its
 * state.json gives the socket directory, port and user. The database is
 * made with CREATE DATABASE on the cluster's `postgres` database and
 * dropped at the end. Static functions: included by one test program each.
 */
#ifndef MD_TEST_PG_DB_H
#define MD_TEST_PG_DB_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* `s` percent-encoded for a URI's query value, into out[n]. */
static void uri_escape(char *out, size_t n, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s && o + 4 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            strchr("-._~", c)) {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
}

/* The URI of database `db` of the cluster MD_TEST_PG names, into out[n]:
 * 0, 77 when no cluster is given (the caller skips), 1 on error. */
static int pg_cluster_uri(const char *db, char *out, size_t n)
{
    const char *dir = getenv("MD_TEST_PG");
    if (!dir || !*dir) {
        fprintf(stderr,
                "SKIP: MD_TEST_PG is not set (ctest's pg/unit/ tests set it to the directory "
                "of the suite's PostgreSQL cluster)\n");
        return 77;
    }
    char file[512];
    snprintf(file, sizeof file, "%s/state.json", dir);
    json_error_t err;
    json_t *state = json_load_file(file, 0, &err);
    if (!state) {
        fprintf(stderr, "SKIP: MD_TEST_PG=%s, but no cluster runs there (%s: %s)\n", dir, file,
                err.text);
        return 77;
    }
    const char *host = json_string_value(json_object_get(state, "host"));
    const char *user = json_string_value(json_object_get(state, "user"));
    json_int_t port = json_integer_value(json_object_get(state, "port"));
    int rc = 1;
    if (host && user && port > 0) {
        char h[512];
        uri_escape(h, sizeof h, host);
        snprintf(out, n, "postgresql:///%s?host=%s&port=%lld&user=%s", db, h, (long long)port,
                 user);
        rc = 0;
    } else {
        fprintf(stderr, "%s: no host, port or user\n", file);
    }
    json_decref(state);
    return rc;
}

/* Run `sql` on the database at `uri`; the first column of its first row
 * as an integer, 0 when it returns no row, -1 on failure (reported). */
static long pg_exec(const char *uri, const char *sql)
{
    PGconn *conn = PQconnectdb(uri);
    long v = -1;
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "cannot connect to %s: %s", uri, PQerrorMessage(conn));
    } else {
        PGresult *r = PQexec(conn, sql);
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_TUPLES_OK && PQntuples(r) > 0)
            v = strtol(PQgetvalue(r, 0, 0), NULL, 10);
        else if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
            v = 0;
        else
            fprintf(stderr, "%s: %s", sql, PQerrorMessage(conn));
        PQclear(r);
    }
    PQfinish(conn);
    return v;
}

/* A new database of the cluster, named `prefix`_<pid>_<time> (into
 * name[nlen]), and its URI (into uri[ulen]): 0, 77 when no cluster is
 * given (the caller skips), 1 on error. */
static int pg_db_create(const char *prefix, char *name, size_t nlen, char *uri, size_t ulen)
{
    char admin[1024];
    int rc = pg_cluster_uri("postgres", admin, sizeof admin);
    if (rc)
        return rc;
    snprintf(name, nlen, "%s_%ld_%lld", prefix, (long)getpid(), (long long)time(NULL));
    char sql[192];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    if (pg_exec(admin, sql) < 0)
        return 1;
    return pg_cluster_uri(name, uri, ulen);
}

static void pg_db_drop(const char *name)
{
    char admin[1024], sql[192];
    if (pg_cluster_uri("postgres", admin, sizeof admin) != 0)
        return;
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
    pg_exec(admin, sql);
}

#endif
