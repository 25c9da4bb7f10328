/*
 * dump.c — every row of a SQLite database for a copy (md_txn_dump, memoryd
 * migrate's source) and what a tenant holds (md_txn_totals, to check a
 * copy against its source), with their statements.
 *
 * The dump reads from the read transaction it is given (one snapshot):
 * every tenant by name, each followed by its entries (by path), versions
 * (by version), change-feed entries (by seq) and idempotency answers (by
 * key); then every API key (by id). Each row goes to the sink as it is
 * read, its strings borrowed from the statement's row.
 *
 * Errors: MD_EINVAL when the schema is not this memoryd's (the reason
 * logged) or when the sink stops the dump; otherwise as sq_conn_rc.
 */
#include <stdio.h>
#include <string.h>

#include "base/md_log.h"
#include "internal.h"

/* Generated from sql/sqlite/ by CMake (cmake/embed_sql.cmake). */
extern const int md_sqlite_migrations_count;

/* NOLINTBEGIN(bugprone-suspicious-missing-comma): statements over several lines */
const char *const sq_dump_sql[S_COUNT] = {
    [S_DUMP_TENANTS] = "SELECT id, name, created_at, last_version, last_seq, max_bytes, max_files,"
                       " sensitive, expire_ms FROM tenants ORDER BY name",
    [S_DUMP_ENTRIES] = "SELECT e.path, e.depth, e.kind, e.size, e.mtime, e.sha256, e.content,"
                       " coalesce(u.used, 0) FROM entries e"
                       " LEFT JOIN uses u ON u.tenant = e.tenant AND u.path = e.path"
                       " WHERE e.tenant = ?1 ORDER BY e.path",
    [S_DUMP_VERSIONS] = "SELECT " SQ_VERSION_COLS ", enc, content FROM versions WHERE tenant = ?1"
                        " ORDER BY version",
    [S_DUMP_CHANGES] = "SELECT " SQ_CHANGE_COLS " FROM changes WHERE tenant = ?1 ORDER BY seq",
    [S_DUMP_IDEM] = "SELECT key, fingerprint, err, body, path, time FROM idempotency"
                    " WHERE tenant = ?1 ORDER BY key",
    [S_DUMP_KEYS] = "SELECT " SQ_KEY_COLS ", hash FROM api_keys ORDER BY id",
    /* One pass over the tenant's entries, one count of each other table. */
    [S_TOTALS] = "SELECT count(*), coalesce(sum(length(CAST(content AS BLOB))), 0),"
                 " coalesce(sum(size), 0), (SELECT count(*) FROM versions WHERE tenant = ?1),"
                 " (SELECT count(*) FROM changes WHERE tenant = ?1),"
                 " (SELECT count(*) FROM idempotency WHERE tenant = ?1)"
                 " FROM entries WHERE tenant = ?1",
};
/* NOLINTEND(bugprone-suspicious-missing-comma) */

/* A blob column of SHA-256 size into `out`; whether it is one. */
static int sha256_of(sqlite3_stmt *st, int col, unsigned char out[MD_SHA256_LEN])
{
    if (sqlite3_column_bytes(st, col) != MD_SHA256_LEN)
        return 0;
    memcpy(out, sqlite3_column_blob(st, col), MD_SHA256_LEN);
    return 1;
}

static void tenant_of(sqlite3_stmt *st, struct md_dump_tenant *d)
{
    d->name = (const char *)sqlite3_column_text(st, 1);
    d->created = sqlite3_column_int64(st, 2);
    d->last_version = sqlite3_column_int64(st, 3);
    d->last_seq = sqlite3_column_int64(st, 4);
    d->max_bytes = sq_column_or(st, 5, -1);
    d->max_files = sq_column_or(st, 6, -1);
    d->sensitive = sq_column_or(st, 7, -1);
    d->expire_ms = sq_column_or(st, 8, -1);
    if (!d->name)
        d->name = "";
}

static void entry_of(sqlite3_stmt *st, struct md_dump_entry *d)
{
    d->path = (const char *)sqlite3_column_text(st, 0);
    d->len = (size_t)sqlite3_column_bytes(st, 0);
    d->depth = sqlite3_column_int(st, 1);
    d->kind = sqlite3_column_int(st, 2) == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE;
    d->size = sqlite3_column_int64(st, 3);
    d->mtime = sqlite3_column_int64(st, 4);
    d->used = sqlite3_column_int64(st, 7);
    d->has_sha256 = sha256_of(st, 5, d->sha256);
    d->content = NULL;
    d->content_len = 0;
    if (d->kind == MD_KIND_FILE) {
        d->content = sqlite3_column_blob(st, 6);
        d->content_len = (size_t)sqlite3_column_bytes(st, 6);
        if (!d->content)
            d->content = "";
    }
    if (!d->path)
        d->path = "";
}

static void idem_of(sqlite3_stmt *st, struct md_dump_idem *d)
{
    d->key = (const char *)sqlite3_column_text(st, 0);
    d->key_len = (size_t)sqlite3_column_bytes(st, 0);
    memset(d->answer.fingerprint, 0, MD_SHA256_LEN);
    sha256_of(st, 1, d->answer.fingerprint);
    d->answer.err = sqlite3_column_int(st, 2);
    d->answer.body = (const char *)sqlite3_column_text(st, 3);
    d->answer.body_len = (size_t)sqlite3_column_bytes(st, 3);
    d->path = (const char *)sqlite3_column_text(st, 4);
    d->path_len = d->path ? (size_t)sqlite3_column_bytes(st, 4) : 0;
    d->time = sqlite3_column_int64(st, 5);
    if (!d->key)
        d->key = "";
    if (!d->answer.body)
        d->answer.body = "";
}

static void key_of(sqlite3_stmt *st, struct md_dump_key *d)
{
    sq_key_of(st, &d->info);
    memset(d->hash, 0, sizeof d->hash);
    if (sqlite3_column_bytes(st, 7) == MD_APIKEY_HASH_LEN)
        memcpy(d->hash, sqlite3_column_blob(st, 7), MD_APIKEY_HASH_LEN);
}

/* The row of `kind` in the current row of `st`; 1 when it is a version
 * whose content is a delta (to rebuild). */
static int row_of(sqlite3_stmt *st, struct md_dump_row *row)
{
    switch (row->kind) {
    case MD_DUMP_TENANT:
        tenant_of(st, &row->u.tenant);
        break;
    case MD_DUMP_ENTRY:
        entry_of(st, &row->u.entry);
        break;
    case MD_DUMP_VERSION:
        return sq_version_of(st, &row->u.version, SQ_VERSION_CONTENT_COL);
    case MD_DUMP_CHANGE:
        sq_change_of(st, &row->u.change);
        break;
    case MD_DUMP_IDEM:
        idem_of(st, &row->u.idem);
        break;
    case MD_DUMP_KEY:
        key_of(st, &row->u.key);
        break;
    }
    return 0;
}

struct dumper {
    struct sq_txn *t;
    const struct md_dump_sink *sink;
    void *ctx;
};

/* Every row statement `id` answers for tenant `tenant` (0: unbound), to
 * the sink as rows of `kind`. */
static enum md_err dump_rows(struct dumper *d, enum stmt_id id, int64_t tenant,
                             enum md_dump_kind kind)
{
    sqlite3_stmt *st = sq_stmt(d->t, id);
    if (tenant)
        sqlite3_bind_int64(st, 1, tenant);
    enum md_err e = MD_OK;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct md_dump_row row = {.kind = kind};
        if (row_of(st, &row) && (e = sq_version_rebuild(d->t, tenant, &row.u.version)) != MD_OK)
            break;
        if (d->sink->row(d->ctx, &row)) {
            e = MD_EINVAL;
            break;
        }
    }
    if (!e && rc != SQLITE_DONE)
        e = sq_conn_rc(d->t->c, rc, "dump");
    sq_done(st);
    return e;
}

/* The tenant in the current row of `st`, then its rows of every table. */
static enum md_err dump_tenant(struct dumper *d, sqlite3_stmt *st)
{
    static const struct {
        enum stmt_id id;
        enum md_dump_kind kind;
    } tables[] = {
        {S_DUMP_ENTRIES, MD_DUMP_ENTRY},
        {S_DUMP_VERSIONS, MD_DUMP_VERSION},
        {S_DUMP_CHANGES, MD_DUMP_CHANGE},
        {S_DUMP_IDEM, MD_DUMP_IDEM},
    };
    struct md_dump_row row = {.kind = MD_DUMP_TENANT};
    row_of(st, &row);
    if (d->sink->row(d->ctx, &row))
        return MD_EINVAL;
    int64_t id = sqlite3_column_int64(st, 0);
    enum md_err e = MD_OK;
    for (size_t i = 0; i < sizeof tables / sizeof tables[0] && !e; i++)
        e = dump_rows(d, tables[i].id, id, tables[i].kind);
    return e;
}

/* MD_OK when the database's schema is this memoryd's; else the reason
 * (as memoryd migrate words it) logged and MD_EINVAL. */
static enum md_err check_version(struct sq_txn *t)
{
    int version = sq_pragma_int(t->c->db, "PRAGMA user_version");
    if (version == md_sqlite_migrations_count)
        return MD_OK;
    char why[256];
    snprintf(why, sizeof why,
             "its schema version is %d, this memoryd's is %d (run memoryd on it once to "
             "bring it up to date)",
             version, md_sqlite_migrations_count);
    md_log_msg(MD_LOG_ERROR, "cannot dump the database",
               version < 0 ? "not a SQLite database of memoryd" : why);
    return MD_EINVAL;
}

enum md_err sq_dump(struct md_txn *base, const struct md_dump_sink *sink, void *ctx)
{
    struct dumper d = {(struct sq_txn *)base, sink, ctx};
    enum md_err e = check_version(d.t);
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(d.t, S_DUMP_TENANTS);
    int rc = SQLITE_DONE;
    while (!e && (rc = sqlite3_step(st)) == SQLITE_ROW)
        e = dump_tenant(&d, st); /* its name stays valid: `st` is not stepped meanwhile */
    if (!e && rc != SQLITE_DONE)
        e = sq_conn_rc(d.t->c, rc, "dump");
    sq_done(st);
    if (!e)
        e = dump_rows(&d, S_DUMP_KEYS, 0, MD_DUMP_KEY);
    return e;
}

enum md_err sq_totals(struct md_txn *base, const char *tenant, struct md_totals *out)
{
    struct sq_txn *t = (struct sq_txn *)base;
    *out = (struct md_totals){0, 0, 0, 0, 0, 0};
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (e == MD_ENOENT)
        return MD_OK; /* no such tenant: nothing */
    if (!e)
        e = sq_sizes_flush(t); /* the directories' true sizes */
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_TOTALS);
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        out->entries = sqlite3_column_int64(st, 0);
        out->content_bytes = sqlite3_column_int64(st, 1);
        out->sizes = sqlite3_column_int64(st, 2);
        out->versions = sqlite3_column_int64(st, 3);
        out->changes = sqlite3_column_int64(st, 4);
        out->idempotency = sqlite3_column_int64(st, 5);
    }
    e = rc == SQLITE_ROW ? MD_OK : sq_conn_rc(t->c, rc, "totals");
    sq_done(st);
    return e;
}
