/*
 * keys.c — API keys on SQLite (md_store.h: md_store_key_*), with their
 * statements: the api_keys table of sql/sqlite/004_api_keys.sql, which
 * holds a key's hash, never the key.
 *
 * key_put and key_revoke run in a write transaction of their own on the
 * writer connection (for memoryd keys, which runs no writer thread).
 * key_list and key_find, from any thread, each start a fresh read
 * transaction on a reader: a reader's kept snapshot (txn.c) is renewed
 * only after this process commits, and would miss a key revoked by
 * another process (`memoryd keys revoke`); a fresh one sees every key
 * committed before the call. The stored hash is compared with the one
 * presented in constant time.
 *
 * Errors: MD_ENOENT (no such key), MD_EEXIST (its id or hash is taken),
 * MD_EINVAL (a write on a store opened read-only), otherwise as
 * sq_conn_rc.
 */
#include <sodium.h>

#include "internal.h"

/* NOLINTBEGIN(bugprone-suspicious-missing-comma): statements over several lines */
const char *const sq_keys_sql[S_COUNT] = {
    [S_KEY_INSERT] = "INSERT INTO api_keys (id, hash, tenant, scope, name, created_at, path)"
                     " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [S_KEY_LIST_ALL] = "SELECT " SQ_KEY_COLS " FROM api_keys ORDER BY tenant, id",
    [S_KEY_LIST_TENANT] = "SELECT " SQ_KEY_COLS " FROM api_keys WHERE tenant = ?1 ORDER BY id",
    [S_KEY_REVOKE] = "UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?2) WHERE id = ?1",
    [S_KEY_FIND] = "SELECT " SQ_KEY_COLS ", hash FROM api_keys WHERE hash = ?1",
};
/* NOLINTEND(bugprone-suspicious-missing-comma) */

/* End a key's write transaction: committed when `e` is MD_OK, else rolled
 * back; the result. */
static enum md_err write_end(struct md_txn *t, enum md_err e)
{
    if (e) {
        sq_rollback(t);
        return e;
    }
    return sq_commit(t);
}

enum md_err sq_key_put(struct md_store *base, const struct md_key_info *k,
                       const unsigned char *hash)
{
    struct md_txn *tx = NULL;
    enum md_err e = sq_write_begin(base, &tx);
    if (e)
        return e;
    struct sq_txn *t = (struct sq_txn *)tx;
    sqlite3_stmt *st = sq_stmt(t, S_KEY_INSERT);
    sqlite3_bind_text(st, 1, k->id, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 2, hash, MD_APIKEY_HASH_LEN, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, k->tenant, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, md_scope_name(k->scope), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, k->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, k->created);
    if (k->path[0])
        sqlite3_bind_text(st, 7, k->path, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 7);
    return write_end(tx, sq_run(t, st, "key put"));
}

enum md_err sq_key_revoke(struct md_store *base, const char *id, int64_t now)
{
    struct md_txn *tx = NULL;
    enum md_err e = sq_write_begin(base, &tx);
    if (e)
        return e;
    struct sq_txn *t = (struct sq_txn *)tx;
    sqlite3_stmt *st = sq_stmt(t, S_KEY_REVOKE);
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now);
    e = sq_run(t, st, "key revoke");
    if (!e && sqlite3_changes(t->c->db) == 0)
        e = MD_ENOENT;
    return write_end(tx, e);
}

enum md_err sq_key_list(struct md_store *base, const char *tenant, md_key_cb cb, void *ctx)
{
    struct md_txn *tx = NULL;
    enum md_err e = sq_read_begin_at((struct sq_store *)base, 1, &tx);
    if (e)
        return e;
    struct sq_txn *t = (struct sq_txn *)tx;
    sqlite3_stmt *st = sq_stmt(t, tenant ? S_KEY_LIST_TENANT : S_KEY_LIST_ALL);
    if (tenant)
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct md_key_info k;
        sq_key_of(st, &k);
        cb(ctx, &k);
    }
    sq_done(st);
    e = rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, "key list");
    sq_txn_end(tx);
    return e;
}

enum md_err sq_key_find(struct md_store *base, const unsigned char *hash, struct md_key_info *out)
{
    struct md_txn *tx = NULL;
    enum md_err e = sq_read_begin_at((struct sq_store *)base, 1, &tx);
    if (e)
        return e;
    struct sq_txn *t = (struct sq_txn *)tx;
    sqlite3_stmt *st = sq_stmt(t, S_KEY_FIND);
    sqlite3_bind_blob(st, 1, hash, MD_APIKEY_HASH_LEN, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    e = MD_ENOENT;
    if (rc == SQLITE_ROW) {
        const void *stored = sqlite3_column_blob(st, 7);
        if (stored && sqlite3_column_bytes(st, 7) == MD_APIKEY_HASH_LEN &&
            sodium_memcmp(stored, hash, MD_APIKEY_HASH_LEN) == 0) {
            sq_key_of(st, out);
            e = MD_OK;
        }
    } else if (rc != SQLITE_DONE) {
        e = sq_conn_rc(t->c, rc, "key find");
    }
    sq_done(st);
    sq_txn_end(tx);
    return e;
}
