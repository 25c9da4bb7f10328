/*
 * load.c — a dump's rows written into PostgreSQL as they are (md_txn_load,
 * for memoryd migrate), and what a tenant holds (md_txn_totals, to check
 * the copy).
 *
 * In a write transaction: a tenant's row is inserted at once (one round
 * trip, its id back; MD_EEXIST, and nothing written, when the name is
 * taken), with whatever rows were held before it. The rows of its tables
 * (entries, versions, change-feed entries, idempotency answers) and then
 * the API keys are held, one table at a time, in array parameters (one
 * array per column) and sent as one INSERT ... SELECT FROM unnest(...) per
 * CHUNK_ROWS rows or CHUNK_BYTES bytes (a full chunk goes in a round trip
 * of its own), or when a row of another table comes; md_txn_flush sends
 * what is held (store.c), and so do md_txn_commit and md_txn_totals.
 *
 * Owns: struct pg_load, a writer's part, made at its first row (t->load),
 * freed with the connection. Errors as md_store.h; a row of a tenant that
 * was refused is MD_EEXIST too, a tenant's row before any tenant MD_EINVAL.
 */
#include <stdlib.h>

#include "internal.h"

/* Rows per INSERT, and bytes of them: whichever comes first. */
#define CHUNK_ROWS  1000
#define CHUNK_BYTES ((size_t)16 << 20)

/* Columns of a loaded table at most (besides the tenant). */
#define LOAD_COLS 11

static const struct pg_stmt_def stmts[] = {
    {P_LOAD_TENANT,
     "INSERT INTO tenants (name, created_at, last_version, last_seq, max_bytes, max_files,"
     " sensitive, expire_ms)"
     " VALUES ($1, $2, $3, $4, $5, $6, $7::int2, $8) ON CONFLICT (name) DO NOTHING RETURNING id",
     8,
     {OID_TEXT, OID_INT8, OID_INT8, OID_INT8, OID_INT8, OID_INT8, OID_INT8, OID_INT8},
     0},
    {P_LOAD_ENTRIES,
     "INSERT INTO entries (tenant, path, depth, kind, size, mtime, sha256, content, used)"
     " SELECT $1, * FROM unnest($2::text[], $3::int4[], $4::int2[], $5::int8[], $6::int8[],"
     " $7::bytea[], $8::bytea[], $9::int8[])",
     9,
     {OID_INT8, OID_TEXTARRAY, OID_INT4ARRAY, OID_INT2ARRAY, OID_INT8ARRAY, OID_INT8ARRAY,
      OID_BYTEAARRAY, OID_BYTEAARRAY, OID_INT8ARRAY},
     0},
    {P_LOAD_VERSIONS,
     "INSERT INTO versions (tenant, version, path, existed, sha256, size, time, command, actor,"
     " redacted, pruned_through, content) SELECT $1, * FROM unnest($2::int8[], $3::text[],"
     " $4::bool[], $5::bytea[], $6::int8[], $7::int8[], $8::text[], $9::text[], $10::bool[],"
     " $11::int8[], $12::bytea[])",
     12,
     {OID_INT8, OID_INT8ARRAY, OID_TEXTARRAY, OID_BOOLARRAY, OID_BYTEAARRAY, OID_INT8ARRAY,
      OID_INT8ARRAY, OID_TEXTARRAY, OID_TEXTARRAY, OID_BOOLARRAY, OID_INT8ARRAY, OID_BYTEAARRAY},
     0},
    {P_LOAD_CHANGES,
     "INSERT INTO changes (tenant, seq, version, versions, history_bytes, time, command, paths,"
     " actor) SELECT $1, * FROM unnest($2::int8[], $3::int8[], $4::int8[], $5::int8[],"
     " $6::int8[], $7::text[], $8::text[], $9::text[])",
     9,
     {OID_INT8, OID_INT8ARRAY, OID_INT8ARRAY, OID_INT8ARRAY, OID_INT8ARRAY, OID_INT8ARRAY,
      OID_TEXTARRAY, OID_TEXTARRAY, OID_TEXTARRAY},
     0},
    {P_LOAD_IDEM,
     "INSERT INTO idempotency (tenant, key, fingerprint, err, body, path, time)"
     " SELECT $1, * FROM unnest($2::text[], $3::bytea[], $4::int4[], $5::text[], $6::text[],"
     " $7::int8[])",
     7,
     {OID_INT8, OID_TEXTARRAY, OID_BYTEAARRAY, OID_INT4ARRAY, OID_TEXTARRAY, OID_TEXTARRAY,
      OID_INT8ARRAY},
     0},
    {P_LOAD_KEYS,
     "INSERT INTO api_keys (id, hash, tenant, scope, name, created_at, revoked_at, path)"
     " SELECT * FROM unnest($1::text[], $2::bytea[], $3::text[], $4::text[], $5::text[],"
     " $6::int8[], $7::int8[], $8::text[])",
     8,
     {OID_TEXTARRAY, OID_BYTEAARRAY, OID_TEXTARRAY, OID_TEXTARRAY, OID_TEXTARRAY, OID_INT8ARRAY,
      OID_INT8ARRAY, OID_TEXTARRAY},
     0},
    /* memoryd migrate's check: rows, file bytes and sizes, history rows
     * (zeros for a tenant that does not exist). */
    {P_TOTALS,
     "WITH t AS (SELECT id FROM tenants WHERE name = $1)"
     " SELECT (SELECT count(*) FROM entries WHERE tenant = (SELECT id FROM t)),"
     " (SELECT coalesce(sum(octet_length(content)), 0)::int8 FROM entries"
     " WHERE tenant = (SELECT id FROM t)),"
     " (SELECT coalesce(sum(size), 0)::int8 FROM entries WHERE tenant = (SELECT id FROM t)),"
     " (SELECT count(*) FROM versions WHERE tenant = (SELECT id FROM t)),"
     " (SELECT count(*) FROM changes WHERE tenant = (SELECT id FROM t)),"
     " (SELECT count(*) FROM idempotency WHERE tenant = (SELECT id FROM t))",
     1,
     {OID_TEXT},
     1},
};
const struct pg_stmt_defs md_pg_load_stmts = MD_PG_STMT_DEFS(stmts);

/* How each kind of row is held: its statement, and its columns' element
 * types (the tenant's id, $1 of the tenant's tables, is not a column). */
static const struct load_table {
    enum pg_stmt id;
    int of_tenant; /* its statement's $1 is the tenant's id */
    size_t ncols;
    Oid types[LOAD_COLS];
} tables[] = {
    [MD_DUMP_ENTRY] = {P_LOAD_ENTRIES,
                       1,
                       8,
                       {OID_TEXT, OID_INT4, OID_INT2, OID_INT8, OID_INT8, OID_BYTEA, OID_BYTEA,
                        OID_INT8}},
    [MD_DUMP_VERSION] = {P_LOAD_VERSIONS,
                         1,
                         11,
                         {OID_INT8, OID_TEXT, OID_BOOL, OID_BYTEA, OID_INT8, OID_INT8, OID_TEXT,
                          OID_TEXT, OID_BOOL, OID_INT8, OID_BYTEA}},
    [MD_DUMP_CHANGE] = {P_LOAD_CHANGES,
                        1,
                        8,
                        {OID_INT8, OID_INT8, OID_INT8, OID_INT8, OID_INT8, OID_TEXT, OID_TEXT,
                         OID_TEXT}},
    [MD_DUMP_IDEM] = {P_LOAD_IDEM,
                      1,
                      6,
                      {OID_TEXT, OID_BYTEA, OID_INT4, OID_TEXT, OID_TEXT, OID_INT8}},
    [MD_DUMP_KEY] = {P_LOAD_KEYS,
                     0,
                     8,
                     {OID_TEXT, OID_BYTEA, OID_TEXT, OID_TEXT, OID_TEXT, OID_INT8, OID_INT8,
                      OID_TEXT}},
};

struct pg_load {
    /* The tenant whose rows come: its id; 0 before the first tenant, or
     * when it was refused (refused: 1). */
    int64_t tenant;
    int refused;
    enum md_dump_kind kind; /* of the rows held */
    size_t rows;
    struct md_buf cols[LOAD_COLS];
};

void md_pg_load_free(struct pg_load *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < LOAD_COLS; i++)
        md_buf_free(&l->cols[i]);
    free(l);
}

void md_pg_load_reset(struct pg_txn *t)
{
    if (t->load) {
        t->load->rows = 0;
        t->load->tenant = 0;
        t->load->refused = 0;
    }
}

int md_pg_load_held(const struct pg_txn *t)
{
    return t->load && t->load->rows > 0;
}

enum md_err md_pg_load_send(struct pg_txn *t)
{
    struct pg_load *l = t->load;
    if (!l || l->rows == 0)
        return MD_OK;
    const struct load_table *tb = &tables[l->kind];
    struct md_pg_params p = {.n = 0};
    if (tb->of_tenant)
        md_pg_i64(&p, l->tenant);
    for (size_t i = 0; i < tb->ncols; i++) {
        md_pg_arr_count(&l->cols[i], l->rows);
        md_pg_bytes(&p, l->cols[i].data, l->cols[i].len);
    }
    l->rows = 0;
    return md_pg_send(t, tb->id, &p);
}

/* ---- a row's columns ---- */

/* The columns of the row being added, in order; the first error kept. */
struct row_add {
    struct md_buf *col;
    enum md_err e;
};

static void add_bytes(struct row_add *r, const void *data, size_t len)
{
    if (!r->e)
        r->e = data ? md_pg_arr_elem(r->col, data, len) : md_pg_arr_null(r->col);
    r->col++;
}

static void add_text(struct row_add *r, const char *s)
{
    if (!r->e)
        r->e = md_pg_arr_text_or_null(r->col, s);
    r->col++;
}

static void add_i64(struct row_add *r, int64_t v)
{
    if (!r->e)
        r->e = md_pg_arr_i64(r->col, v);
    r->col++;
}

/* v, or NULL when it is `none`. */
static void add_i64_or_null(struct row_add *r, int64_t v, int64_t none)
{
    if (!r->e)
        r->e = v == none ? md_pg_arr_null(r->col) : md_pg_arr_i64(r->col, v);
    r->col++;
}

static void add_bool(struct row_add *r, int v)
{
    unsigned char b = v ? 1 : 0;
    add_bytes(r, &b, 1);
}

static void entry_row(struct row_add *r, const struct md_dump_entry *e)
{
    add_bytes(r, e->path, e->len);
    if (!r->e)
        r->e = md_pg_arr_i32(r->col, e->depth);
    r->col++;
    if (!r->e)
        r->e = md_pg_arr_i16(r->col, e->kind == MD_KIND_DIR ? MD_KIND_DIR : MD_KIND_FILE);
    r->col++;
    add_i64(r, e->size);
    add_i64(r, e->mtime);
    add_bytes(r, e->has_sha256 ? e->sha256 : NULL, MD_SHA256_LEN);
    add_bytes(r, e->content, e->content_len);
    add_i64(r, e->used);
}

static void version_row(struct row_add *r, const struct md_version *v)
{
    add_i64(r, v->version);
    add_bytes(r, v->path, v->path_len);
    add_bool(r, v->existed);
    add_bytes(r, v->has_sha256 ? v->sha256 : NULL, MD_SHA256_LEN);
    add_i64_or_null(r, v->size, -1);
    add_i64(r, v->time_ms);
    add_text(r, v->command);
    add_bytes(r, v->actor, v->actor_len);
    add_bool(r, v->redacted);
    add_i64(r, v->pruned_through);
    add_bytes(r, v->content, v->content_len);
}

static void change_row(struct row_add *r, const struct md_change *c)
{
    add_i64(r, c->seq);
    add_i64_or_null(r, c->version, 0);
    add_i64(r, c->versions);
    add_i64(r, c->history_bytes);
    add_i64(r, c->time_ms);
    add_text(r, c->command);
    add_bytes(r, c->paths, c->paths_len);
    add_bytes(r, c->actor, c->actor_len);
}

static void idem_row(struct row_add *r, const struct md_dump_idem *i)
{
    add_bytes(r, i->key, i->key_len);
    add_bytes(r, i->answer.fingerprint, MD_SHA256_LEN);
    if (!r->e)
        r->e = md_pg_arr_i32(r->col, i->answer.err);
    r->col++;
    add_bytes(r, i->answer.body ? i->answer.body : "", i->answer.body_len);
    add_bytes(r, i->path, i->path_len);
    add_i64(r, i->time);
}

static void key_row(struct row_add *r, const struct md_dump_key *k)
{
    add_text(r, k->info.id);
    add_bytes(r, k->hash, MD_APIKEY_HASH_LEN);
    add_text(r, k->info.tenant);
    add_text(r, md_scope_name(k->info.scope));
    add_text(r, k->info.name);
    add_i64(r, k->info.created);
    add_i64_or_null(r, k->info.revoked, 0);
    add_text(r, k->info.path[0] ? k->info.path : NULL);
}

/* ---- md_txn_load ---- */

/* A tenant's row, with the rows held before it: its id, or MD_EEXIST. */
static enum md_err load_tenant(struct pg_txn *t, struct pg_load *l, const struct md_dump_tenant *d)
{
    enum md_err e = md_pg_load_send(t);
    if (e)
        return e;
    l->tenant = 0;
    l->refused = 0;
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, d->name);
    md_pg_i64(&p, d->created);
    md_pg_i64(&p, d->last_version);
    md_pg_i64(&p, d->last_seq);
    md_pg_i64_or_null(&p, d->max_bytes);
    md_pg_i64_or_null(&p, d->max_files);
    md_pg_i64_or_null(&p, d->sensitive);
    md_pg_i64_or_null(&p, d->expire_ms);
    e = md_pg_send(t, P_LOAD_TENANT, &p);
    if (!e)
        e = md_pg_flush(t, P_LOAD_TENANT);
    if (e)
        return e;
    if (!t->pipe.res || PQntuples(t->pipe.res) != 1) {
        l->refused = 1;
        return MD_EEXIST;
    }
    l->tenant = md_pg_r_i64(t->pipe.res, 0, 0);
    return MD_OK;
}

/* A row of a table held; the chunk sent (a round trip) once full. */
static enum md_err load_row(struct pg_txn *t, struct pg_load *l, const struct md_dump_row *row)
{
    const struct load_table *tb = &tables[row->kind];
    if (tb->of_tenant && !l->tenant)
        return l->refused ? MD_EEXIST : MD_EINVAL;
    enum md_err e = l->rows && l->kind != row->kind ? md_pg_load_send(t) : MD_OK;
    for (size_t i = 0; !e && l->rows == 0 && i < tb->ncols; i++)
        e = md_pg_arr_begin(&l->cols[i], tb->types[i], 1); /* counted when sent */
    if (e)
        return e;
    l->kind = row->kind;
    struct row_add r = {l->cols, MD_OK};
    switch (row->kind) {
    case MD_DUMP_ENTRY:
        entry_row(&r, &row->u.entry);
        break;
    case MD_DUMP_VERSION:
        version_row(&r, &row->u.version);
        break;
    case MD_DUMP_CHANGE:
        change_row(&r, &row->u.change);
        break;
    case MD_DUMP_IDEM:
        idem_row(&r, &row->u.idem);
        break;
    default:
        key_row(&r, &row->u.key);
        break;
    }
    if (r.e) {
        l->rows = 0; /* a row half added leaves the arrays unusable */
        return r.e;
    }
    l->rows++;
    size_t bytes = 0;
    for (size_t i = 0; i < tb->ncols; i++)
        bytes += l->cols[i].len;
    if (l->rows < CHUNK_ROWS && bytes < CHUNK_BYTES)
        return MD_OK;
    e = md_pg_load_send(t);
    return e ? e : md_pg_flush(t, P_COUNT);
}

enum md_err md_pg_load(struct md_txn *base, const struct md_dump_row *row)
{
    struct pg_txn *t = (struct pg_txn *)base;
    if (!t->write || (unsigned)row->kind > MD_DUMP_KEY)
        return MD_EINVAL;
    if (!t->load) {
        t->load = calloc(1, sizeof *t->load);
        if (!t->load)
            return MD_ENOMEM;
        for (size_t i = 0; i < LOAD_COLS; i++)
            md_buf_init(&t->load->cols[i], (size_t)1 << 30);
    }
    if (row->kind == MD_DUMP_TENANT)
        return load_tenant(t, t->load, &row->u.tenant);
    return load_row(t, t->load, row);
}

/* ---- md_txn_totals ---- */

enum md_err md_pg_totals(struct md_txn *base, const char *tenant, struct md_totals *out)
{
    struct pg_txn *t = (struct pg_txn *)base;
    *out = (struct md_totals){0, 0, 0, 0, 0, 0};
    enum md_err e = t->write ? md_pg_load_send(t) : MD_OK;
    if (!e && t->write)
        e = md_pg_sizes_send(t); /* the sizes as this transaction has them */
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    if (!e)
        e = md_pg_exec(t, P_TOTALS, &p);
    if (e)
        return e;
    const PGresult *r = t->pipe.res;
    if (!r || PQntuples(r) != 1)
        return MD_EDB;
    out->entries = md_pg_r_i64(r, 0, 0);
    out->content_bytes = md_pg_r_i64(r, 0, 1);
    out->sizes = md_pg_r_i64(r, 0, 2);
    out->versions = md_pg_r_i64(r, 0, 3);
    out->changes = md_pg_r_i64(r, 0, 4);
    out->idempotency = md_pg_r_i64(r, 0, 5);
    return MD_OK;
}
