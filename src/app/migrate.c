/* migrate.c — copy a SQLite database's tenants into PostgreSQL (see
 * md_migrate.h). */
#include "app/md_migrate.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/md_engines.h"
#include "base/md_buf.h"
#include "store/pg/internal.h"
#include "store/sqlite/md_store_sqlite.h"

/* Rows per INSERT, and bytes of content: whichever comes first. */
#define CHUNK_ROWS  1000
#define CHUNK_BYTES ((size_t)16 << 20)

/* Columns of a copied table at most (besides the tenant). */
#define MAX_COLS 11

static const char usage[] =
    "Usage: memoryd migrate --from SQLITE_PATH --to URI\n"
    "\n"
    "Copy every tenant of memoryd's SQLite database at SQLITE_PATH into the PostgreSQL\n"
    "database at URI (postgresql://... or postgres://...), whose schema memoryd creates or\n"
    "brings up to date: files and directories, history (versions, the change feed and its\n"
    "sequence numbers), the idempotency keys kept for retries, each tenant's own quota\n"
    "limits and the API keys (their hashes). One transaction, checked\n"
    "before it commits: rows, file bytes and directory sizes per tenant equal on both sides.\n"
    "Tenants already in the target are refused (nothing is written). The SQLite file is only\n"
    "read, from one snapshot; stop the memoryd that writes it first if later writes must be\n"
    "copied too.\n";

struct copy {
    sqlite3 *src;
    PGconn *dst;
    struct md_buf arr[MAX_COLS];
    unsigned long tenants, entries;
    long long bytes;
};

/* A column copied as it is: its name, and its type on PostgreSQL (the
 * element type of the array it travels in). */
struct col {
    const char *name;
    Oid type;
};

enum {
    T_INT8 = OID_INT8,
    T_INT4 = OID_INT4,
    T_INT2 = OID_INT2,
    T_TEXT = OID_TEXT,
    T_BYTEA = OID_BYTEA,
    T_BOOL = OID_BOOL
};

/* The tables of a tenant, in the order they are copied. */
static const struct table {
    const char *name;
    const char *order;
    struct col cols[MAX_COLS];
} tables[] = {
    {"entries",
     "path",
     {{"path", T_TEXT},
      {"depth", T_INT4},
      {"kind", T_INT2},
      {"size", T_INT8},
      {"mtime", T_INT8},
      {"sha256", T_BYTEA},
      {"content", T_BYTEA}}},
    {"versions",
     "version",
     {{"version", T_INT8},
      {"path", T_TEXT},
      {"existed", T_BOOL},
      {"sha256", T_BYTEA},
      {"size", T_INT8},
      {"time", T_INT8},
      {"command", T_TEXT},
      {"actor", T_TEXT},
      {"redacted", T_BOOL},
      {"pruned_through", T_INT8},
      {"content", T_BYTEA}}},
    {"changes",
     "seq",
     {{"seq", T_INT8},
      {"version", T_INT8},
      {"versions", T_INT8},
      {"history_bytes", T_INT8},
      {"time", T_INT8},
      {"command", T_TEXT},
      {"paths", T_TEXT},
      {"actor", T_TEXT}}},
    {"idempotency",
     "key",
     {{"key", T_TEXT},
      {"fingerprint", T_BYTEA},
      {"err", T_INT4},
      {"body", T_TEXT},
      {"path", T_TEXT},
      {"time", T_INT8}}},
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

static size_t ncols(const struct table *tb)
{
    size_t n = 0;
    while (n < MAX_COLS && tb->cols[n].name)
        n++;
    return n;
}

static const char *array_type(Oid t)
{
    switch (t) {
    case T_INT8:
        return "int8[]";
    case T_INT4:
        return "int4[]";
    case T_INT2:
        return "int2[]";
    case T_BOOL:
        return "bool[]";
    case T_BYTEA:
        return "bytea[]";
    default:
        return "text[]";
    }
}

/* Send the rows gathered in c->arr (n of them) into table `tb` for tenant `id`. */
static int flush_rows(struct copy *c, const struct table *tb, int64_t id, size_t n)
{
    if (n == 0)
        return 0;
    size_t k = ncols(tb);
    char sql[2048], names[512] = "", args[1024] = "";
    size_t nl = 0, al = 0;
    for (size_t i = 0; i < k; i++) {
        nl += (size_t)snprintf(names + nl, sizeof names - nl, "%s%s", i ? ", " : "",
                               tb->cols[i].name);
        al += (size_t)snprintf(args + al, sizeof args - al, "%s$%zu::%s", i ? ", " : "", i + 2,
                               array_type(tb->cols[i].type));
    }
    snprintf(sql, sizeof sql, "INSERT INTO %s (tenant, %s) SELECT $1, * FROM unnest(%s)", tb->name,
             names, args);
    struct md_pg_params p = {.n = 0};
    md_pg_i64(&p, id);
    for (size_t i = 0; i < k; i++) {
        md_pg_arr_count(&c->arr[i], n); /* begun for CHUNK_ROWS */
        md_pg_bytes(&p, c->arr[i].data, c->arr[i].len);
    }
    PGresult *r = pg_run(c->dst, sql, &p);
    PQclear(r);
    return r ? 0 : -1;
}

static int arrays_begin(struct copy *c, const struct table *tb)
{
    for (size_t i = 0; i < ncols(tb); i++)
        if (md_pg_arr_begin(&c->arr[i], tb->cols[i].type, CHUNK_ROWS) != MD_OK)
            return -1;
    return 0;
}

/* Add column `i` of the current row of `st` to its array. */
static int add_value(struct copy *c, sqlite3_stmt *st, const struct table *tb, int i)
{
    struct md_buf *b = &c->arr[i];
    if (sqlite3_column_type(st, i) == SQLITE_NULL) {
        static const unsigned char minus1[4] = {0xff, 0xff, 0xff, 0xff};
        return md_buf_append(b, minus1, 4) != MD_OK;
    }
    switch (tb->cols[i].type) {
    case T_INT8:
        return md_pg_arr_i64(b, sqlite3_column_int64(st, i)) != MD_OK;
    case T_INT4:
        return md_pg_arr_i32(b, sqlite3_column_int(st, i)) != MD_OK;
    case T_INT2:
        return md_pg_arr_i16(b, (int16_t)sqlite3_column_int(st, i)) != MD_OK;
    case T_BOOL: {
        unsigned char v = sqlite3_column_int(st, i) != 0;
        return md_pg_arr_elem(b, &v, 1) != MD_OK;
    }
    default: {
        const void *p = sqlite3_column_blob(st, i);
        return md_pg_arr_elem(b, p ? p : "", (size_t)sqlite3_column_bytes(st, i)) != MD_OK;
    }
    }
}

/* Copy one table's rows of a tenant; *rows: how many. */
static int copy_table(struct copy *c, const struct table *tb, int64_t src_id, int64_t id,
                      long long *rows)
{
    size_t k = ncols(tb);
    char sql[1024], names[512] = "";
    size_t nl = 0;
    for (size_t i = 0; i < k; i++)
        nl += (size_t)snprintf(names + nl, sizeof names - nl, "%s%s", i ? ", " : "",
                               tb->cols[i].name);
    snprintf(sql, sizeof sql, "SELECT %s FROM %s WHERE tenant = ?1 ORDER BY %s", names, tb->name,
             tb->order);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->src, sql, -1, &st, NULL) != SQLITE_OK)
        return fail("reading the SQLite database", sqlite3_errmsg(c->src));
    sqlite3_bind_int64(st, 1, src_id);
    size_t n = 0, chunk = 0;
    int rc, err = arrays_begin(c, tb);
    *rows = 0;
    while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (size_t i = 0; i < k && !err; i++) {
            err = add_value(c, st, tb, (int)i);
            chunk += (size_t)sqlite3_column_bytes(st, (int)i);
        }
        n++;
        (*rows)++;
        if (!err && (n == CHUNK_ROWS || chunk >= CHUNK_BYTES)) {
            err = flush_rows(c, tb, id, n) || arrays_begin(c, tb);
            n = chunk = 0;
        }
    }
    if (!err && rc != SQLITE_DONE)
        err = fail("reading the SQLite database", sqlite3_errmsg(c->src));
    sqlite3_finalize(st);
    if (!err)
        err = flush_rows(c, tb, id, n);
    return err ? -1 : 0;
}

/* One number a statement of the source answers for tenant `id`. */
static long long src_int(struct copy *c, const char *sql, int64_t id)
{
    sqlite3_stmt *st = NULL;
    long long v = -1;
    if (sqlite3_prepare_v2(c->src, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

/* Copy one tenant: its row (with its counters) and every table of it;
 * then compare what the target holds. */
static int copy_tenant(struct copy *c, int64_t src_id, const char *name, int64_t created,
                       int64_t last_version, int64_t last_seq)
{
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, name);
    md_pg_i64(&p, created);
    md_pg_i64(&p, last_version);
    md_pg_i64(&p, last_seq);
    PGresult *r = pg_run(c->dst,
                         "INSERT INTO tenants (name, created_at, last_version, last_seq)"
                         " VALUES ($1, $2, $3, $4) RETURNING id",
                         &p);
    if (!r)
        return -1;
    int64_t id = md_pg_r_i64(r, 0, 0);
    PQclear(r);
    long long copied[sizeof tables / sizeof tables[0]];
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        if (copy_table(c, &tables[i], src_id, id, &copied[i]))
            return -1;

    /* What arrived: the same rows, bytes and sizes. */
    long long bytes_src = src_int(
        c, "SELECT coalesce(sum(length(CAST(content AS BLOB))), 0) FROM entries WHERE tenant = ?1",
        src_id);
    long long size_src =
        src_int(c, "SELECT coalesce(sum(size), 0) FROM entries WHERE tenant = ?1", src_id);
    p.n = 0;
    md_pg_i64(&p, id);
    r = pg_run(c->dst,
               "SELECT (SELECT count(*) FROM entries WHERE tenant = $1),"
               " (SELECT coalesce(sum(octet_length(content)), 0)::int8 FROM entries"
               " WHERE tenant = $1), (SELECT coalesce(sum(size), 0)::int8 FROM entries"
               " WHERE tenant = $1), (SELECT count(*) FROM versions WHERE tenant = $1),"
               " (SELECT count(*) FROM changes WHERE tenant = $1),"
               " (SELECT count(*) FROM idempotency WHERE tenant = $1)",
               &p);
    if (!r)
        return -1;
    long long dst[6];
    for (int i = 0; i < 6; i++)
        dst[i] = md_pg_r_i64(r, 0, i);
    PQclear(r);
    if (dst[0] != copied[0] || dst[1] != bytes_src || dst[2] != size_src || dst[3] != copied[1] ||
        dst[4] != copied[2] || dst[5] != copied[3]) {
        char detail[512];
        snprintf(detail, sizeof detail,
                 "tenant %s: %lld entries, %lld bytes, sizes %lld, %lld versions, %lld changes, "
                 "%lld keys in SQLite; %lld, %lld, %lld, %lld, %lld, %lld copied",
                 name, copied[0], bytes_src, size_src, copied[1], copied[2], copied[3], dst[0],
                 dst[1], dst[2], dst[3], dst[4], dst[5]);
        return fail("the copy does not match its source", detail);
    }
    c->tenants++;
    c->entries += (unsigned long)copied[0];
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

/* A tenant's own quota limits (columns 5 and 6 of `st`; NULL: none). */
static int copy_limits(struct copy *c, const char *name, sqlite3_stmt *st)
{
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, name);
    for (int col = 5; col <= 6; col++) {
        if (sqlite3_column_type(st, col) == SQLITE_NULL)
            md_pg_null(&p);
        else
            md_pg_i64(&p, sqlite3_column_int64(st, col));
    }
    PGresult *r =
        pg_run(c->dst, "UPDATE tenants SET max_bytes = $2, max_files = $3 WHERE name = $1", &p);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

/* Every API key (api_keys, by tenant name: a key's tenant may have no
 * data), its hash, scope, name and times as they are. */
static int copy_keys(struct copy *c)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->src,
                           "SELECT id, hash, tenant, scope, name, created_at, revoked_at"
                           " FROM api_keys ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return fail("reading the SQLite database", sqlite3_errmsg(c->src));
    int err = 0;
    while (!err && sqlite3_step(st) == SQLITE_ROW) {
        struct md_pg_params p = {.n = 0};
        md_pg_text(&p, (const char *)sqlite3_column_text(st, 0));
        md_pg_bytes(&p, sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1));
        for (int col = 2; col <= 4; col++)
            md_pg_text(&p, (const char *)sqlite3_column_text(st, col));
        md_pg_i64(&p, sqlite3_column_int64(st, 5));
        if (sqlite3_column_type(st, 6) == SQLITE_NULL)
            md_pg_null(&p);
        else
            md_pg_i64(&p, sqlite3_column_int64(st, 6));
        PGresult *r = pg_run(c->dst,
                             "INSERT INTO api_keys (id, hash, tenant, scope, name, created_at,"
                             " revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                             &p);
        err = r ? 0 : -1;
        PQclear(r);
    }
    sqlite3_finalize(st);
    return err;
}

static int copy_all(struct copy *c)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->src,
                           "SELECT id, name, created_at, last_version, last_seq, max_bytes,"
                           " max_files FROM tenants ORDER BY name",
                           -1, &st, NULL) != SQLITE_OK)
        return fail("reading the SQLite database", sqlite3_errmsg(c->src));
    int err = 0;
    while (!err && sqlite3_step(st) == SQLITE_ROW) {
        char name[160];
        snprintf(name, sizeof name, "%s", (const char *)sqlite3_column_text(st, 1));
        err = copy_tenant(c, sqlite3_column_int64(st, 0), name, sqlite3_column_int64(st, 2),
                          sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4));
        if (!err)
            err = copy_limits(c, name, st);
    }
    sqlite3_finalize(st);
    return err ? err : copy_keys(c);
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
    if (md_engine_for(to) != &md_engine_pg || md_engine_for(from) == &md_engine_pg) {
        fprintf(stderr,
                "memoryd migrate: --from is a SQLite file and --to a PostgreSQL URI "
                "(postgresql://... or postgres://...)\n\n%s",
                usage);
        return 2;
    }
    struct copy c = {0};
    for (int i = 0; i < MAX_COLS; i++)
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
    for (int i = 0; i < MAX_COLS; i++)
        md_buf_free(&c.arr[i]);
    return status;
}
