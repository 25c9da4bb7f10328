/*
 * md_store_admin.h — what the operator's programs ask of a store, beside
 * the commands' operations of md_store.h: API keys (memoryd keys, and the
 * HTTP front's --auth keys), a dump of a whole database and its load into
 * another (memoryd migrate), an online copy (memoryd backup).
 *
 * The operations are members of struct md_store_ops (md_store.h); the
 * wrappers below call them. Dump, load and backup are optional: an engine
 * that has them says so in its capability bits (MD_STORE_CAP_DUMP, _LOAD,
 * _BACKUP); every engine has the key operations.
 *
 * Ownership and errors as in md_store.h: rows handed to a callback are
 * borrowed until it returns; out-structures are the caller's.
 */
#ifndef MD_STORE_ADMIN_H
#define MD_STORE_ADMIN_H

#include <stdint.h>

#include "base/md_apikey.h"
#include "store/md_store.h"

/* ---- API keys (memoryd keys; --auth keys) ---- */

/* The longest subtree path a key may be given (memoryd keys create --path). */
#define MD_KEY_PATH_MAX 1024

/* One API key as stored: never the key, only its hash (md_apikey.h). */
struct md_key_info {
    char id[MD_APIKEY_ID_LEN + 1];
    char tenant[MD_TENANT_MAX + 1];
    enum md_scope scope;
    char name[129];
    int64_t created; /* unix seconds */
    int64_t revoked; /* unix seconds; 0: valid */
    /* The subtree the key sees (canonical, below /memories; docs/behaviour.md
     * 15.3); "": the whole tenant. */
    char path[MD_KEY_PATH_MAX + 1];
};
#define MD_KEY_NAME_MAX 128
typedef void (*md_key_cb)(void *ctx, const struct md_key_info *k);

/* Store a new key: its record and its hash (MD_APIKEY_HASH_LEN bytes). In a
 * transaction of its own, on the engine's writer connection: for a program
 * that runs no writer thread (memoryd keys). MD_EEXIST: that id is taken. */
static inline enum md_err md_store_key_put(struct md_store *s, const struct md_key_info *k,
                                           const unsigned char *hash)
{
    return s->ops->key_put(s, k, hash);
}
/* Every key (of `tenant` only, unless NULL), in order of tenant and id. */
static inline enum md_err md_store_key_list(struct md_store *s, const char *tenant, md_key_cb cb,
                                            void *ctx)
{
    return s->ops->key_list(s, tenant, cb, ctx);
}
/* Revoke key `id` at `now` (a key revoked before keeps its first time); as
 * md_store_key_put. MD_ENOENT when there is no such key. */
static inline enum md_err md_store_key_revoke(struct md_store *s, const char *id, int64_t now)
{
    return s->ops->key_revoke(s, id, now);
}
/* The key whose hash is `hash`, revoked or not, compared in constant time;
 * from any thread. It sees every key committed before the call, by any
 * process (no cache, no snapshot kept from an earlier read): a revocation
 * counts at the next request. MD_ENOENT when none. */
static inline enum md_err md_store_key_find(struct md_store *s, const unsigned char *hash,
                                            struct md_key_info *out)
{
    return s->ops->key_find(s, hash, out);
}

/* ---- copying a database (memoryd migrate) ---- */

/* A tenant's row as a dump carries it: before its rows. */
struct md_dump_tenant {
    const char *name;
    int64_t created;      /* as stored (created_at) */
    int64_t last_version; /* its counters (md_history.h) */
    int64_t last_seq;
    int64_t max_bytes, max_files; /* its overrides; -1: none */
    int64_t sensitive;            /* its --sensitive override (md_txn_sensitive_get); -1: none */
    int64_t expire_ms;            /* its expiry window (md_txn_expiry_get); -1: none */
};
/* An entry as stored. */
struct md_dump_entry {
    const char *path;
    size_t len;
    int depth;
    enum md_kind kind;
    int64_t size, mtime;
    int64_t used; /* a file's last use written back (md_txn_use_put); 0: none */
    int has_sha256;
    unsigned char sha256[MD_SHA256_LEN];
    const char *content; /* files; NULL for directories */
    size_t content_len;
};
/* A stored answer of an Idempotency-Key. */
struct md_dump_idem {
    const char *key;
    size_t key_len;
    struct md_idem answer;
    const char *path; /* NULL: none */
    size_t path_len;
    int64_t time;
};
/* An API key as stored, with its hash. */
struct md_dump_key {
    struct md_key_info info;
    unsigned char hash[MD_APIKEY_HASH_LEN];
};
/* One row of a dump: a tenant, or a row of the tenant given last; the keys
 * come after every tenant. Strings are borrowed until the call returns. */
enum md_dump_kind {
    MD_DUMP_TENANT,
    MD_DUMP_ENTRY,
    MD_DUMP_VERSION,
    MD_DUMP_CHANGE,
    MD_DUMP_IDEM,
    MD_DUMP_KEY,
};
struct md_dump_row {
    enum md_dump_kind kind;
    union {
        struct md_dump_tenant tenant;
        struct md_dump_entry entry;
        struct md_version version; /* with its content, redacted and pruned_through */
        struct md_change change;
        struct md_dump_idem idem;
        struct md_dump_key key;
    } u;
};
/* Where a dump goes: `row` for each row, in order: every tenant (by name)
 * followed by its entries (by path), versions (by version), change-feed
 * entries (by seq) and idempotency answers (by key); then every API key
 * (by id). A nonzero return stops the dump (md_txn_dump answers MD_EINVAL). */
struct md_dump_sink {
    int (*row)(void *ctx, const struct md_dump_row *row);
};
/* What a tenant holds, to check a copy against its source. */
struct md_totals {
    int64_t entries, content_bytes, sizes; /* rows, bytes of file content, sum of every size */
    int64_t versions, changes, idempotency;
};

/* On a read transaction (of a store opened read-only, say): every row of
 * the database, to `sink` (MD_STORE_CAP_DUMP). MD_EINVAL with the reason
 * logged when the database's schema is not this memoryd's. */
static inline enum md_err md_txn_dump(struct md_txn *t, const struct md_dump_sink *sink, void *ctx)
{
    return t->store->ops->dump(t, sink, ctx);
}
/* In a write transaction: one row of a dump, written as it is (counters,
 * sizes, sequence numbers and all). The engine may hold rows back and send
 * many at once: md_txn_flush sends them (MD_STORE_CAP_LOAD). A tenant that
 * exists already is MD_EEXIST. */
static inline enum md_err md_txn_load(struct md_txn *t, const struct md_dump_row *row)
{
    return t->store->ops->load(t, row);
}
/* What `tenant` holds now, in this transaction; zeros for a tenant that
 * does not exist. */
static inline enum md_err md_txn_totals(struct md_txn *t, const char *tenant, struct md_totals *out)
{
    return t->store->ops->totals(t, tenant, out);
}

/* ---- an online copy (memoryd backup) ---- */

struct md_backup_info {
    int64_t pages, page_size, tenants;
};
/* Copy the whole database, as one snapshot, into the file at `path` (made
 * by the caller, empty), then check the copy (its integrity, memoryd's
 * schema in it) and close it; the caller syncs and publishes it. The
 * database is only read; a serving memoryd goes on writing meanwhile
 * (MD_STORE_CAP_BACKUP; a store opened read-only will do). The copy stops
 * between two steps once *stop is nonzero (a signal handler's flag):
 * MD_EBUSY. `progress` (begun by the caller; NULL: none) is given the
 * total and the pages copied as they are. On failure an error and the
 * reason in `why`. */
static inline enum md_err md_store_backup(struct md_store *s, const char *path,
                                          const volatile int *stop, struct md_progress *progress,
                                          struct md_backup_info *out, char *why, size_t why_len)
{
    return s->ops->backup(s, path, stop, progress, out, why, why_len);
}

#endif
