/* migrate.c — copy a SQLite database's tenants into PostgreSQL (see
 * md_migrate.h). */
#include "md_migrate.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md_buf.h"
#include "md_store.h"
#include "md_store_sqlite.h"
#include "store_pg_internal.h"

/* Rows per INSERT, and bytes of content: whichever comes first. */
#define CHUNK_ROWS  1000
#define CHUNK_BYTES ((size_t)16 << 20)

/* The columns copied: path, depth, kind, size, mtime, content. */
#define COLS 6

static const char usage[] =
    "Usage: memoryd migrate --from SQLITE_PATH --to URI\n"
    "\n"
    "Copy every tenant of memoryd's SQLite database at SQLITE_PATH into the PostgreSQL\n"
    "database at URI (postgresql://... or postgres://...), whose schema memoryd creates or\n"
    "brings up to date. One transaction, checked before it commits: entries, file bytes and\n"
    "directory sizes per tenant equal on both sides. Tenants already in the target are\n"
    "refused (nothing is written). The SQLite file is only read, from one snapshot; stop the\n"
    "memoryd that writes it first if later writes must be copied too.\n";

struct copy {
    sqlite3 *src;
    PGconn *dst;
    struct md_buf arr[COLS];
    unsigned long tenants, entries;
    long long bytes;
};

/* Say what went wrong on stderr; returns -1. */
static int fail(const char *what, const char *detail)
{
    fprintf(stderr, "memoryd migrate: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    return -1;
}

/* Run SQL on the target; 0, or -1 with the error on stderr. */
static int pg_exec(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok)
        fail(sql, PQerrorMessage(c));
    PQclear(r);
    return ok ? 0 : -1;
}

/* Run a statement with binary parameters and results; the result, or NULL
 * with the error on stderr. */
static PGresult *pg_run(PGconn *c, const char *sql, const struct md_pg_params *p)
{
    PGresult *r = PQexecParams(c, sql, p->n, NULL, p->v, p->len, p->fmt, 1);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
        fail("PostgreSQL", PQerrorMessage(c));
        PQclear(r);
        return NULL;
    }
    return r;
}

/* Send the rows gathered in c->arr (n of them) for tenant `id`. */
static int flush_rows(struct copy *c, int64_t id, size_t n)
{
    if (n == 0)
        return 0;
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, id);
    for (int i = 0; i < COLS; i++) {
        md_pg_arr_count(&c->arr[i], n); /* begun for CHUNK_ROWS */
        md_pg_bytes(&p, c->arr[i].data, c->arr[i].len);
    }
    PGresult *r = pg_run(c->dst,
                         "INSERT INTO entries (tenant, path, depth, kind, size, mtime, content)"
                         " SELECT $1, u.path, u.depth, u.kind, u.size, u.mtime,"
                         " CASE WHEN u.kind = 0 THEN u.content END"
                         " FROM unnest($2::text[], $3::int4[], $4::int2[], $5::int8[], $6::int8[],"
                         " $7::bytea[]) AS u(path, depth, kind, size, mtime, content)",
                         &p);
    PQclear(r);
    return r ? 0 : -1;
}

static void arrays_begin(struct copy *c)
{
    static const Oid types[COLS] = {OID_TEXT, OID_INT4, OID_INT2, OID_INT8, OID_INT8, OID_BYTEA};
    for (int i = 0; i < COLS; i++)
        md_pg_arr_begin(&c->arr[i], types[i], CHUNK_ROWS);
}

/* Copy one tenant's entries; compare what the target then holds. */
static int copy_tenant(struct copy *c, int64_t src_id, const char *name, int64_t created)
{
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, name);
    md_pg_i64(&p, created);
    PGresult *r =
        pg_run(c->dst, "INSERT INTO tenants (name, created_at) VALUES ($1, $2) RETURNING id", &p);
    if (!r)
        return -1;
    int64_t id = md_pg_r_i64(r, 0, 0);
    PQclear(r);

    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->src,
                           "SELECT path, depth, kind, size, content, mtime FROM entries"
                           " WHERE tenant = ?1 ORDER BY path",
                           -1, &st, NULL) != SQLITE_OK)
        return fail("reading the SQLite database", sqlite3_errmsg(c->src));
    sqlite3_bind_int64(st, 1, src_id);
    long long n_src = 0, bytes_src = 0, size_src = 0;
    size_t n = 0, chunk = 0;
    int rc, err = 0;
    arrays_begin(c);
    while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const void *path = sqlite3_column_text(st, 0);
        size_t plen = (size_t)sqlite3_column_bytes(st, 0);
        int kind = sqlite3_column_int(st, 2);
        const void *content = sqlite3_column_blob(st, 4);
        size_t clen = (size_t)sqlite3_column_bytes(st, 4);
        int64_t size = sqlite3_column_int64(st, 3);
        n_src++;
        size_src += size;
        bytes_src += (long long)clen;
        err = md_pg_arr_elem(&c->arr[0], path, plen) ||
              md_pg_arr_i32(&c->arr[1], sqlite3_column_int(st, 1)) ||
              md_pg_arr_i16(&c->arr[2], (int16_t)kind) || md_pg_arr_i64(&c->arr[3], size) ||
              md_pg_arr_i64(&c->arr[4], sqlite3_column_int64(st, 5)) ||
              md_pg_arr_elem(&c->arr[5], content ? content : "", clen);
        n++;
        chunk += clen + plen;
        if (!err && (n == CHUNK_ROWS || chunk >= CHUNK_BYTES)) {
            err = flush_rows(c, id, n);
            arrays_begin(c);
            n = chunk = 0;
        }
    }
    if (!err && rc != SQLITE_DONE)
        err = fail("reading the SQLite database", sqlite3_errmsg(c->src));
    sqlite3_finalize(st);
    if (!err)
        err = flush_rows(c, id, n);
    if (err)
        return -1;

    /* What arrived: the same entries, bytes and sizes. */
    p.n = 0;
    md_pg_i64(&p, id);
    r = pg_run(c->dst,
               "SELECT count(*), coalesce(sum(octet_length(content)), 0)::int8,"
               " coalesce(sum(size), 0)::int8 FROM entries WHERE tenant = $1",
               &p);
    if (!r)
        return -1;
    long long n_dst = md_pg_r_i64(r, 0, 0), bytes_dst = md_pg_r_i64(r, 0, 1),
              size_dst = md_pg_r_i64(r, 0, 2);
    PQclear(r);
    if (n_dst != n_src || bytes_dst != bytes_src || size_dst != size_src) {
        char detail[256];
        snprintf(detail, sizeof detail,
                 "tenant %s: %lld entries, %lld bytes, sizes %lld in SQLite; %lld, %lld, %lld "
                 "copied",
                 name, n_src, bytes_src, size_src, n_dst, bytes_dst, size_dst);
        return fail("the copy does not match its source", detail);
    }
    c->tenants++;
    c->entries += (unsigned long)n_src;
    c->bytes += bytes_src;
    return 0;
}

/* Tenants of the source that the target already has: refused. */
static int check_free(struct copy *c)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->src, "SELECT name FROM tenants ORDER BY name", -1, &st, NULL) !=
        SQLITE_OK)
        return fail("reading the SQLite database", sqlite3_errmsg(c->src));
    int err = 0;
    unsigned long taken = 0;
    while (!err && sqlite3_step(st) == SQLITE_ROW) {
        struct md_pg_params p = {.n = 0};
        md_pg_text(&p, (const char *)sqlite3_column_text(st, 0));
        PGresult *r = pg_run(c->dst, "SELECT 1 FROM tenants WHERE name = $1", &p);
        if (!r) {
            err = 1;
        } else if (PQntuples(r) > 0 && taken++ < 5) {
            fprintf(stderr, "memoryd migrate: tenant %s already exists in the target\n",
                    (const char *)sqlite3_column_text(st, 0));
        }
        PQclear(r);
    }
    sqlite3_finalize(st);
    if (!err && taken)
        return fail("refusing to copy over existing tenants (nothing was written)", NULL);
    return err;
}

static int copy_all(struct copy *c)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->src, "SELECT id, name, created_at FROM tenants ORDER BY name", -1,
                           &st, NULL) != SQLITE_OK)
        return fail("reading the SQLite database", sqlite3_errmsg(c->src));
    int err = 0;
    while (!err && sqlite3_step(st) == SQLITE_ROW) {
        char name[160];
        snprintf(name, sizeof name, "%s", (const char *)sqlite3_column_text(st, 1));
        err = copy_tenant(c, sqlite3_column_int64(st, 0), name, sqlite3_column_int64(st, 2));
    }
    sqlite3_finalize(st);
    return err;
}

int md_migrate_main(int argc, char **argv)
{
    const char *from = NULL, *to = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = strncmp(a, "--from", 6) == 0 ? &from
                           : strncmp(a, "--to", 4) == 0 ? &to
                                                        : NULL;
        size_t flen = dst == &from ? 6 : 4;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        if (dst && a[flen] == '=') {
            *dst = a + flen + 1;
        } else if (dst && a[flen] == '\0' && i + 1 < argc) {
            *dst = argv[++i];
        } else {
            fprintf(stderr, "memoryd migrate: unknown or incomplete argument: %s\n\n%s", a, usage);
            return 2;
        }
    }
    if (!from || !to || !*from || !*to) {
        fprintf(stderr, "memoryd migrate: both --from and --to are needed\n\n%s", usage);
        return 2;
    }
    if (!md_store_is_pg_uri(to) || md_store_is_pg_uri(from)) {
        fprintf(stderr,
                "memoryd migrate: --from is a SQLite file and --to a PostgreSQL URI "
                "(postgresql://... or postgres://...)\n\n%s",
                usage);
        return 2;
    }
    struct copy c = {0};
    for (int i = 0; i < COLS; i++)
        md_buf_init(&c.arr[i], (size_t)1 << 30);
    int status = 1;
    char why[512] = "";
    if (sqlite3_open_v2(from, &c.src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fail(from, c.src ? sqlite3_errmsg(c.src) : "cannot open");
        goto out;
    }
    sqlite3_stmt *v = NULL;
    int version = -1;
    if (sqlite3_prepare_v2(c.src, "PRAGMA user_version", -1, &v, NULL) == SQLITE_OK &&
        sqlite3_step(v) == SQLITE_ROW)
        version = sqlite3_column_int(v, 0);
    sqlite3_finalize(v);
    if (version != md_store_sqlite_schema_version()) {
        snprintf(why, sizeof why,
                 "its schema version is %d, this memoryd's is %d (run memoryd on it once to "
                 "bring it up to date)",
                 version, md_store_sqlite_schema_version());
        fail(from, version < 0 ? "not a SQLite database of memoryd" : why);
        goto out;
    }
    c.dst = md_pg_connect(to, why, sizeof why);
    if (!c.dst) {
        fail(why, NULL);
        goto out;
    }
    if (md_pg_migrate(c.dst, why, sizeof why) != 0) {
        fail(why, NULL);
        goto out;
    }
    /* One snapshot of the source, one transaction on the target. */
    if (sqlite3_exec(c.src, "BEGIN", NULL, NULL, NULL) != SQLITE_OK || pg_exec(c.dst, "BEGIN"))
        goto out;
    if (check_free(&c) || copy_all(&c)) {
        pg_exec(c.dst, "ROLLBACK");
        goto out;
    }
    if (pg_exec(c.dst, "COMMIT"))
        goto out;
    char shown[512];
    printf("memoryd migrate: copied %lu tenants, %lu entries, %lld bytes of files from %s to %s\n",
           c.tenants, c.entries, c.bytes, from, md_store_redact(to, shown, sizeof shown));
    status = 0;
out:
    if (c.dst)
        PQfinish(c.dst);
    sqlite3_close(c.src);
    for (int i = 0; i < COLS; i++)
        md_buf_free(&c.arr[i]);
    return status;
}
