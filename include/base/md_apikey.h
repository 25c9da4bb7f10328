/*
 * md_apikey.h — memoryd's own API keys, the secret part (src/base/apikey.c):
 * making a key, reading one from a request, and its hash.
 *
 * A key is "mdk_" followed by the base64url form (no padding, 43
 * characters) of 32 bytes from libsodium's randombytes_buf (the OS's
 * CSPRNG). Only BLAKE2b-256 of the whole key string (crypto_generichash)
 * is stored: a key has 256 bits of entropy, so a fast hash cannot be
 * searched backwards and no password hashing is needed. Each key also has
 * an id ("key_" and 16 hex digits, random, not derived from the key) that
 * names it in listings, revocation and the request log.
 *
 * Nothing here allocates; every output is a caller buffer. Functions
 * return 0 on success and -1 on failure as stated.
 */
#ifndef MD_APIKEY_H
#define MD_APIKEY_H

#include <stddef.h>

#define MD_APIKEY_PREFIX   "mdk_"
#define MD_APIKEY_LEN      47 /* "mdk_" + 43 base64url characters */
#define MD_APIKEY_HASH_LEN 32
#define MD_APIKEY_ID_LEN   20 /* "key_" + 16 hex digits */

enum md_scope { MD_SCOPE_READ = 0, MD_SCOPE_WRITE = 1, MD_SCOPE_ADMIN = 2 };

/* libsodium's sodium_init(); 0, or -1 when it cannot start. Safe to call
 * more than once and from several threads. */
int md_apikey_init(void);

/* A new key (into key, MD_APIKEY_LEN + 1 bytes), its hash and a new id
 * (MD_APIKEY_ID_LEN + 1 bytes). 0, or -1 when libsodium cannot start. */
int md_apikey_new(char *key, unsigned char hash[MD_APIKEY_HASH_LEN], char *id);

/* The hash of a presented key of `len` bytes: 0, or -1 when it does not
 * have a key's form (then it can never match a stored key). */
int md_apikey_hash(const char *key, size_t len, unsigned char hash[MD_APIKEY_HASH_LEN]);

/* "read", "write", "admin"; md_scope_parse: 0, or -1 for another word. */
const char *md_scope_name(enum md_scope s);
int md_scope_parse(const char *s, enum md_scope *out);

/* True for an id's form ("key_" and 16 lowercase hex digits). */
int md_apikey_id_valid(const char *id);

#endif
