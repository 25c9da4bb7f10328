/*
 * keystore.c — the api_keys table on SQLite or PostgreSQL (md_keystore.h).
 * Every statement is prepared once on the keystore's own connection and
 * takes its values as bound parameters.
 */
#include "app/md_keystore.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/md_engines.h"
#include "base/md_log.h"

enum { K_INSERT, K_LIST_ALL, K_LIST_TENANT, K_REVOKE, K_FIND, K_COUNT };

#define KEY_COLS "id, tenant, scope, name, created_at, revoked_at"

/* SQLite: ?N; PostgreSQL: $N (the same statements otherwise). */
static const char *const sql_sqlite[K_COUNT] = {
    [K_INSERT] = "INSERT INTO api_keys (id, hash, tenant, scope, name, created_at)"
                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [K_LIST_ALL] = "SELECT " KEY_COLS " FROM api_keys ORDER BY tenant, id",
    [K_LIST_TENANT] = "SELECT " KEY_COLS " FROM api_keys WHERE tenant = ?1 ORDER BY id",
    [K_REVOKE] = "UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?2) WHERE id = ?1",
    [K_FIND] = "SELECT " KEY_COLS ", hash FROM api_keys WHERE hash = ?1",
};
static const char *const sql_pg[K_COUNT] = {
    [K_INSERT] = "INSERT INTO api_keys (id, hash, tenant, scope, name, created_at)"
                 " VALUES ($1, $2, $3, $4, $5, $6)",
    [K_LIST_ALL] = "SELECT " KEY_COLS " FROM api_keys ORDER BY tenant, id",
    [K_LIST_TENANT] = "SELECT " KEY_COLS " FROM api_keys WHERE tenant = $1 ORDER BY id",
    [K_REVOKE] = "UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1",
    [K_FIND] = "SELECT " KEY_COLS ", hash FROM api_keys WHERE hash = $1",
};
static const char *const pg_names[K_COUNT] = {"k_insert", "k_list_all", "k_list_tenant", "k_revoke",
                                              "k_find"};

struct md_keystore {
    pthread_mutex_t mu;
    int pg;
    sqlite3 *db;
    sqlite3_stmt *st[K_COUNT];
    PGconn *conn;
    char *uri;
};

static void log_db_error(const char *what, const char *detail)
{
    md_log_msg(MD_LOG_ERROR, what, detail);
}

static void copy_text(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

/* ---- PostgreSQL ---- */

static int pg_connect(struct md_keystore *ks, char *why, size_t why_len)
{
    if (ks->conn)
        PQfinish(ks->conn);
    ks->conn = PQconnectdb(ks->uri);
    if (PQstatus(ks->conn) != CONNECTION_OK) {
        snprintf(why, why_len, "%s", PQerrorMessage(ks->conn));
        return -1;
    }
    for (int i = 0; i < K_COUNT; i++) {
        PGresult *res = PQprepare(ks->conn, pg_names[i], sql_pg[i], 0, NULL);
        int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        if (!ok)
            snprintf(why, why_len, "prepare %s: %s", pg_names[i], PQerrorMessage(ks->conn));
        PQclear(res);
        if (!ok)
            return -1;
    }
    return 0;
}

/* Run a prepared statement; once more on a new connection when the old one
 * is gone (the statements only read or are idempotent). */
static PGresult *pg_run(struct md_keystore *ks, int k, int n, const char *const *vals,
                        const int *lens, const int *fmts)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        char why[256] = "";
        if ((!ks->conn || PQstatus(ks->conn) != CONNECTION_OK) && pg_connect(ks, why, sizeof why)) {
            log_db_error("key store: cannot connect", why);
            continue;
        }
        PGresult *res = PQexecPrepared(ks->conn, pg_names[k], n, vals, lens, fmts, 1);
        ExecStatusType s = PQresultStatus(res);
        if (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK)
            return res;
        log_db_error("key store: statement failed", PQerrorMessage(ks->conn));
        PQclear(res);
        if (PQstatus(ks->conn) == CONNECTION_OK)
            return NULL;
    }
    return NULL;
}

static int64_t pg_int(const PGresult *res, int row, int col)
{
    if (PQgetisnull(res, row, col))
        return 0;
    const unsigned char *p = (const unsigned char *)PQgetvalue(res, row, col);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return (int64_t)v;
}

static void pg_row(const PGresult *res, int row, struct md_key_info *k)
{
    copy_text(k->id, sizeof k->id, PQgetvalue(res, row, 0));
    copy_text(k->tenant, sizeof k->tenant, PQgetvalue(res, row, 1));
    if (md_scope_parse(PQgetvalue(res, row, 2), &k->scope) != 0)
        k->scope = MD_SCOPE_READ;
    copy_text(k->name, sizeof k->name, PQgetvalue(res, row, 3));
    k->created = pg_int(res, row, 4);
    k->revoked = pg_int(res, row, 5);
}

static void be64(unsigned char out[8], int64_t v)
{
    for (int i = 7; i >= 0; i--) {
        out[i] = (unsigned char)((uint64_t)v & 0xff);
        v = (int64_t)((uint64_t)v >> 8);
    }
}

/* ---- SQLite ---- */

static void sq_row(sqlite3_stmt *st, struct md_key_info *k)
{
    copy_text(k->id, sizeof k->id, (const char *)sqlite3_column_text(st, 0));
    copy_text(k->tenant, sizeof k->tenant, (const char *)sqlite3_column_text(st, 1));
    if (md_scope_parse((const char *)sqlite3_column_text(st, 2), &k->scope) != 0)
        k->scope = MD_SCOPE_READ;
    copy_text(k->name, sizeof k->name, (const char *)sqlite3_column_text(st, 3));
    k->created = sqlite3_column_int64(st, 4);
    k->revoked = sqlite3_column_type(st, 5) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 5);
}

static enum md_err sq_fail(struct md_keystore *ks, sqlite3_stmt *st, const char *what)
{
    log_db_error(what, sqlite3_errmsg(ks->db));
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return MD_EDB;
}

static void sq_done(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

/* ---- the interface ---- */

enum md_err md_keystore_open(const char *db, struct md_keystore **out, char *why, size_t why_len)
{
    *out = NULL;
    if (md_apikey_init() != 0) {
        snprintf(why, why_len, "libsodium cannot start");
        return MD_EDB;
    }
    struct md_keystore *ks = calloc(1, sizeof *ks);
    if (!ks)
        return MD_ENOMEM;
    pthread_mutex_init(&ks->mu, NULL);
    ks->pg = md_engine_for(db) == &md_engine_pg;
    if (ks->pg) {
        ks->uri = strdup(db);
        if (!ks->uri || pg_connect(ks, why, why_len)) {
            enum md_err e = ks->uri ? MD_EUNAVAIL : MD_ENOMEM;
            md_keystore_close(ks);
            return e;
        }
    } else {
        if (sqlite3_open_v2(db, &ks->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
            SQLITE_OK) {
            snprintf(why, why_len, "%s", ks->db ? sqlite3_errmsg(ks->db) : "out of memory");
            md_keystore_close(ks);
            return MD_EDB;
        }
        sqlite3_busy_timeout(ks->db, 5000);
        for (int i = 0; i < K_COUNT; i++)
            if (sqlite3_prepare_v3(ks->db, sql_sqlite[i], -1, SQLITE_PREPARE_PERSISTENT, &ks->st[i],
                                   NULL) != SQLITE_OK) {
                snprintf(why, why_len, "prepare %s: %s", sql_sqlite[i], sqlite3_errmsg(ks->db));
                md_keystore_close(ks);
                return MD_EDB;
            }
    }
    *out = ks;
    return MD_OK;
}

void md_keystore_close(struct md_keystore *ks)
{
    if (!ks)
        return;
    for (int i = 0; i < K_COUNT; i++)
        sqlite3_finalize(ks->st[i]);
    sqlite3_close(ks->db);
    if (ks->conn)
        PQfinish(ks->conn);
    free(ks->uri);
    pthread_mutex_destroy(&ks->mu);
    free(ks);
}

enum md_err md_keystore_create(struct md_keystore *ks, const struct md_key_info *k,
                               const unsigned char hash[MD_APIKEY_HASH_LEN])
{
    enum md_err e = MD_OK;
    pthread_mutex_lock(&ks->mu);
    if (ks->pg) {
        unsigned char created[8];
        be64(created, k->created);
        const char *vals[6] = {k->id,   (const char *)hash,   k->tenant, md_scope_name(k->scope),
                               k->name, (const char *)created};
        const int lens[6] = {0, MD_APIKEY_HASH_LEN, 0, 0, 0, 8};
        const int fmts[6] = {0, 1, 0, 0, 0, 1};
        PGresult *res = pg_run(ks, K_INSERT, 6, vals, lens, fmts);
        e = res ? MD_OK : MD_EDB;
        PQclear(res);
    } else {
        sqlite3_stmt *st = ks->st[K_INSERT];
        sqlite3_bind_text(st, 1, k->id, -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 2, hash, MD_APIKEY_HASH_LEN, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, k->tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, md_scope_name(k->scope), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, k->name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 6, k->created);
        if (sqlite3_step(st) != SQLITE_DONE)
            e = sq_fail(ks, st, "key store: insert");
        else
            sq_done(st);
    }
    pthread_mutex_unlock(&ks->mu);
    return e;
}

enum md_err md_keystore_list(struct md_keystore *ks, const char *tenant, md_key_cb cb, void *ctx)
{
    enum md_err e = MD_OK;
    struct md_key_info k;
    int which = tenant ? K_LIST_TENANT : K_LIST_ALL;
    pthread_mutex_lock(&ks->mu);
    if (ks->pg) {
        const char *vals[1] = {tenant};
        PGresult *res = pg_run(ks, which, tenant ? 1 : 0, vals, NULL, NULL);
        if (!res)
            e = MD_EDB;
        for (int i = 0; res && i < PQntuples(res); i++) {
            pg_row(res, i, &k);
            cb(ctx, &k);
        }
        PQclear(res);
    } else {
        sqlite3_stmt *st = ks->st[which];
        if (tenant)
            sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            sq_row(st, &k);
            cb(ctx, &k);
        }
        if (rc != SQLITE_DONE)
            e = sq_fail(ks, st, "key store: list");
        else
            sq_done(st);
    }
    pthread_mutex_unlock(&ks->mu);
    return e;
}

enum md_err md_keystore_revoke(struct md_keystore *ks, const char *id, int64_t now)
{
    enum md_err e = MD_OK;
    pthread_mutex_lock(&ks->mu);
    if (ks->pg) {
        unsigned char t[8];
        be64(t, now);
        const char *vals[2] = {id, (const char *)t};
        const int lens[2] = {0, 8};
        const int fmts[2] = {0, 1};
        PGresult *res = pg_run(ks, K_REVOKE, 2, vals, lens, fmts);
        e = !res ? MD_EDB : strcmp(PQcmdTuples(res), "0") == 0 ? MD_ENOENT : MD_OK;
        PQclear(res);
    } else {
        sqlite3_stmt *st = ks->st[K_REVOKE];
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, now);
        if (sqlite3_step(st) != SQLITE_DONE) {
            e = sq_fail(ks, st, "key store: revoke");
        } else {
            e = sqlite3_changes(ks->db) == 0 ? MD_ENOENT : MD_OK;
            sq_done(st);
        }
    }
    pthread_mutex_unlock(&ks->mu);
    return e;
}

enum md_err md_keystore_find(struct md_keystore *ks, const unsigned char hash[MD_APIKEY_HASH_LEN],
                             struct md_key_info *out)
{
    enum md_err e = MD_ENOENT;
    pthread_mutex_lock(&ks->mu);
    if (ks->pg) {
        const char *vals[1] = {(const char *)hash};
        const int lens[1] = {MD_APIKEY_HASH_LEN};
        const int fmts[1] = {1};
        PGresult *res = pg_run(ks, K_FIND, 1, vals, lens, fmts);
        if (!res)
            e = MD_EUNAVAIL;
        else if (PQntuples(res) == 1 && PQgetlength(res, 0, 6) == MD_APIKEY_HASH_LEN &&
                 sodium_memcmp(PQgetvalue(res, 0, 6), hash, MD_APIKEY_HASH_LEN) == 0) {
            pg_row(res, 0, out);
            e = MD_OK;
        }
        PQclear(res);
    } else {
        sqlite3_stmt *st = ks->st[K_FIND];
        sqlite3_bind_blob(st, 1, hash, MD_APIKEY_HASH_LEN, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            const void *stored = sqlite3_column_blob(st, 6);
            if (stored && sqlite3_column_bytes(st, 6) == MD_APIKEY_HASH_LEN &&
                sodium_memcmp(stored, hash, MD_APIKEY_HASH_LEN) == 0) {
                sq_row(st, out);
                e = MD_OK;
            }
            sq_done(st);
        } else if (rc != SQLITE_DONE) {
            e = sq_fail(ks, st, "key store: find");
        } else {
            sq_done(st);
        }
    }
    pthread_mutex_unlock(&ks->mu);
    return e;
}
