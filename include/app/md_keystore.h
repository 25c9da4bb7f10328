/*
 * md_keystore.h — where API keys are kept (src/app/keystore.c): the api_keys
 * table of sql/{sqlite,postgres}/004_api_keys.sql, on either backend,
 * through a connection of its own (one SQLite connection or one libpq
 * connection, serialised by a mutex; every call may come from any thread).
 *
 * No cache: md_keystore_find reads the table on every call (one prepared
 * statement; on SQLite a fresh read transaction each time), so that a
 * revocation by another process (`memoryd keys revoke`) takes effect at the
 * next request on every instance.
 *
 * The database must already have its schema (md_store_open migrates it).
 * Ownership: the keystore is freed by md_keystore_close; records passed to
 * callbacks are borrowed for the call. Errors: MD_ENOENT (no such key),
 * MD_EUNAVAIL (the database cannot be reached), MD_EDB (anything else;
 * logged), MD_ENOMEM.
 */
#ifndef MD_KEYSTORE_H
#define MD_KEYSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "app/md_config.h"
#include "base/md_apikey.h"
#include "base/md_err.h"
#include "store/md_store.h"

struct md_keystore;

/* Open the key store of the database `db` (a SQLite path or a PostgreSQL
 * URI). On failure returns an error and writes a reason into `why`. */
enum md_err md_keystore_open(const char *db, struct md_keystore **out, char *why, size_t why_len);
void md_keystore_close(struct md_keystore *ks);

/* Store a new key (its hash and id; never the key). */
enum md_err md_keystore_create(struct md_keystore *ks, const struct md_key_info *k,
                               const unsigned char hash[MD_APIKEY_HASH_LEN]);

/* Every key (of `tenant` only, unless NULL), in order of tenant and id. */
enum md_err md_keystore_list(struct md_keystore *ks, const char *tenant, md_key_cb cb, void *ctx);

/* Revoke key `id` at `now` (a key revoked before keeps its first time).
 * MD_ENOENT when there is no such key. */
enum md_err md_keystore_revoke(struct md_keystore *ks, const char *id, int64_t now);

/* The key whose hash is `hash`, revoked or not (the stored hash is compared
 * with the presented one in constant time, sodium_memcmp). MD_ENOENT when
 * none. */
enum md_err md_keystore_find(struct md_keystore *ks, const unsigned char hash[MD_APIKEY_HASH_LEN],
                             struct md_key_info *out);

#endif
