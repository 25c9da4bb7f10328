/* apikey.c — making, reading and hashing API keys (md_apikey.h). */
#include "base/md_apikey.h"

#include <sodium.h>
#include <string.h>

#define RAW_LEN 32

int md_apikey_init(void)
{
    return sodium_init() < 0 ? -1 : 0;
}

static void hash_of(const char *key, size_t len, unsigned char hash[MD_APIKEY_HASH_LEN])
{
    crypto_generichash(hash, MD_APIKEY_HASH_LEN, (const unsigned char *)key, len, NULL, 0);
}

int md_apikey_new(char *key, unsigned char hash[MD_APIKEY_HASH_LEN], char *id)
{
    if (md_apikey_init() != 0)
        return -1;
    unsigned char raw[RAW_LEN];
    randombytes_buf(raw, sizeof raw);
    memcpy(key, MD_APIKEY_PREFIX, sizeof MD_APIKEY_PREFIX - 1); /* the rest follows */
    sodium_bin2base64(key + 4, MD_APIKEY_LEN + 1 - 4, raw, sizeof raw,
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof raw);
    hash_of(key, MD_APIKEY_LEN, hash);
    unsigned char idraw[8];
    randombytes_buf(idraw, sizeof idraw);
    memcpy(id, "key_", sizeof "key_" - 1); /* the hex digits follow */
    sodium_bin2hex(id + 4, MD_APIKEY_ID_LEN + 1 - 4, idraw, sizeof idraw);
    return 0;
}

int md_apikey_hash(const char *key, size_t len, unsigned char hash[MD_APIKEY_HASH_LEN])
{
    if (len != MD_APIKEY_LEN || memcmp(key, MD_APIKEY_PREFIX, 4) != 0)
        return -1;
    for (size_t i = 4; i < len; i++) {
        char c = key[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return -1;
    }
    if (md_apikey_init() != 0)
        return -1;
    hash_of(key, len, hash);
    return 0;
}

const char *md_scope_name(enum md_scope s)
{
    return s == MD_SCOPE_ADMIN ? "admin" : s == MD_SCOPE_WRITE ? "write" : "read";
}

int md_scope_parse(const char *s, enum md_scope *out)
{
    static const enum md_scope all[] = {MD_SCOPE_READ, MD_SCOPE_WRITE, MD_SCOPE_ADMIN};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(s, md_scope_name(all[i])) == 0) {
            *out = all[i];
            return 0;
        }
    return -1;
}

int md_apikey_id_valid(const char *id)
{
    if (strlen(id) != MD_APIKEY_ID_LEN || memcmp(id, "key_", 4) != 0)
        return 0;
    return strspn(id + 4, "0123456789abcdef") == MD_APIKEY_ID_LEN - 4;
}
