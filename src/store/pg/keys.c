/*
 * keys.c — API keys on PostgreSQL (md_store_key_put, key_list, key_revoke,
 * key_find; the table api_keys of 004_api_keys.sql): a key's record and
 * the hash of the key, never the key.
 *
 * key_put and key_revoke run in a write transaction of their own on the
 * writer's connection, as md_store.h says, for a program that runs no
 * writer thread (`memoryd keys`; the writer thread reads its connection's
 * counters unlocked, md_store_wire, and a broken connection is replaced
 * here): BEGIN and the statement in one round trip, COMMIT in another,
 * and all of it once more on a new connection when the first is found
 * broken before the COMMIT (nothing was done then). key_list and key_find run on
 * a pooled reader, from any thread; key_find reads the table at each call
 * (no cache: a revocation counts at the next request) and compares the
 * hash it finds with the one asked for in constant time.
 *
 * Owns no part of a transaction. Errors as md_store.h: MD_EEXIST, an id
 * (or hash) taken; MD_ENOENT, no such key.
 */
#include <sodium.h>
#include <stdio.h>

#include "internal.h"

#define KEY_COLS "id, tenant, scope, name, created_at, revoked_at, path"

static const struct pg_stmt_def stmts[] = {
    {P_KEY_PUT,
     "INSERT INTO api_keys (id, hash, tenant, scope, name, created_at, path)"
     " VALUES ($1, $2, $3, $4, $5, $6, $7)",
     7,
     {OID_TEXT, OID_BYTEA, OID_TEXT, OID_TEXT, OID_TEXT, OID_INT8, OID_TEXT},
     0},
    {P_KEY_LIST_ALL, "SELECT " KEY_COLS " FROM api_keys ORDER BY tenant, id", 0, {0}, 1},
    {P_KEY_LIST_TENANT,
     "SELECT " KEY_COLS " FROM api_keys WHERE tenant = $1 ORDER BY id",
     1,
     {OID_TEXT},
     1},
    /* A key revoked before keeps its first time; a row when there is the
     * key. */
    {P_KEY_REVOKE,
     "UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1 RETURNING 1",
     2,
     {OID_TEXT, OID_INT8},
     0},
    {P_KEY_FIND, "SELECT " KEY_COLS ", hash FROM api_keys WHERE hash = $1", 1, {OID_BYTEA}, 1},
};
const struct pg_stmt_defs md_pg_keys_stmts = MD_PG_STMT_DEFS(stmts);

/* Row `row` of KEY_COLS (0..6). */
static void key_of(const PGresult *r, int row, struct md_key_info *k)
{
    snprintf(k->id, sizeof k->id, "%s", PQgetvalue(r, row, 0));
    snprintf(k->tenant, sizeof k->tenant, "%s", PQgetvalue(r, row, 1));
    if (md_scope_parse(PQgetvalue(r, row, 2), &k->scope) != 0)
        k->scope = MD_SCOPE_READ;
    snprintf(k->name, sizeof k->name, "%s", PQgetvalue(r, row, 3));
    k->created = md_pg_r_i64_or(r, row, 4, 0);
    k->revoked = md_pg_r_i64_or(r, row, 5, 0);
    snprintf(k->path, sizeof k->path, "%s", PQgetvalue(r, row, 6)); /* NULL: "" */
}

/* Statement `id` in a write transaction of its own (see above); *rows:
 * the rows it answered. */
static enum md_err write_one(struct md_store *base, enum pg_stmt id, const struct md_pg_params *p,
                             int *rows)
{
    for (int attempt = 0;; attempt++) {
        struct md_txn *txn;
        enum md_err e = md_pg_write_begin(base, &txn);
        if (e)
            return e;
        struct pg_txn *t = (struct pg_txn *)txn;
        e = md_pg_send(t, id, p);
        if (!e)
            e = md_pg_flush(t, id);
        if (!e) {
            *rows = t->pipe.res ? PQntuples(t->pipe.res) : 0;
            return md_pg_commit(txn);
        }
        md_pg_rollback(txn);
        if (e != MD_EUNAVAIL || attempt > 0)
            return e;
    }
}

enum md_err md_pg_key_put(struct md_store *base, const struct md_key_info *k,
                          const unsigned char *hash)
{
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, k->id);
    md_pg_bytes(&p, hash, MD_APIKEY_HASH_LEN);
    md_pg_text(&p, k->tenant);
    md_pg_text(&p, md_scope_name(k->scope));
    md_pg_text(&p, k->name);
    md_pg_i64(&p, k->created);
    if (k->path[0])
        md_pg_text(&p, k->path);
    else
        md_pg_null(&p);
    int rows = 0;
    return write_one(base, P_KEY_PUT, &p, &rows);
}

enum md_err md_pg_key_revoke(struct md_store *base, const char *id, int64_t now)
{
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, id);
    md_pg_i64(&p, now);
    int rows = 0;
    enum md_err e = write_one(base, P_KEY_REVOKE, &p, &rows);
    return e ? e : rows == 0 ? MD_ENOENT : MD_OK;
}

enum md_err md_pg_key_list(struct md_store *base, const char *tenant, md_key_cb cb, void *ctx)
{
    struct md_txn *txn;
    enum md_err e = md_pg_read_begin(base, &txn);
    if (e)
        return e;
    struct pg_txn *t = (struct pg_txn *)txn;
    struct md_pg_params p = {.n = 0};
    if (tenant)
        md_pg_text(&p, tenant);
    e = md_pg_exec(t, tenant ? P_KEY_LIST_TENANT : P_KEY_LIST_ALL, &p);
    const PGresult *r = t->pipe.res;
    for (int i = 0; !e && r && i < PQntuples(r); i++) {
        struct md_key_info k = {.created = 0};
        key_of(r, i, &k);
        cb(ctx, &k);
    }
    md_pg_read_end(txn);
    return e;
}

enum md_err md_pg_key_find(struct md_store *base, const unsigned char *hash,
                           struct md_key_info *out)
{
    struct md_txn *txn;
    enum md_err e = md_pg_read_begin(base, &txn);
    if (e)
        return e;
    struct pg_txn *t = (struct pg_txn *)txn;
    struct md_pg_params p = {.n = 0};
    md_pg_bytes(&p, hash, MD_APIKEY_HASH_LEN);
    e = md_pg_exec(t, P_KEY_FIND, &p);
    const PGresult *r = t->pipe.res;
    if (!e) {
        /* The index found it; the comparison that decides takes the same
         * time whatever the bytes (sodium_memcmp needs no sodium_init). */
        if (r && PQntuples(r) == 1 && PQgetlength(r, 0, 7) == MD_APIKEY_HASH_LEN &&
            sodium_memcmp(PQgetvalue(r, 0, 7), hash, MD_APIKEY_HASH_LEN) == 0)
            key_of(r, 0, out);
        else
            e = MD_ENOENT;
    }
    md_pg_read_end(txn);
    return e;
}
