/*
 * test_apikey.c — API keys without a server: the form and hash of keys
 * (md_apikey.h), the per-address failure table (md_authfail.h: the limit,
 * the window's end, addresses kept apart, bounded memory under a flood of
 * addresses) and the keys of a store on a SQLite file (md_store_key_*: put,
 * find by hash, list, revoke). The HTTP behaviour is in
 * tests/integration/keys.test.mjs.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <unistd.h>

#include "app/md_engines.h"
#include "base/md_apikey.h"
#include "check.h"
#include "http/md_authfail.h"
#include "store/md_store_admin.h"

static void test_key_form(void)
{
    char key[MD_APIKEY_LEN + 1], key2[MD_APIKEY_LEN + 1];
    char id[MD_APIKEY_ID_LEN + 1], id2[MD_APIKEY_ID_LEN + 1];
    unsigned char hash[MD_APIKEY_HASH_LEN], hash2[MD_APIKEY_HASH_LEN], again[MD_APIKEY_HASH_LEN];
    CHECK_EQ_INT(md_apikey_new(key, hash, id), 0);
    CHECK_EQ_INT(md_apikey_new(key2, hash2, id2), 0);
    CHECK_EQ_INT((long long)strlen(key), MD_APIKEY_LEN);
    CHECK_MEM(key, 4, "mdk_");
    CHECK(strcmp(key, key2) != 0);
    CHECK(strcmp(id, id2) != 0);
    CHECK(md_apikey_id_valid(id));
    CHECK(!md_apikey_id_valid("key_0123"));
    CHECK(!md_apikey_id_valid("key_0123456789ABCDEF"));
    /* The hash of the presented key is the stored one; another key's is not. */
    CHECK_EQ_INT(md_apikey_hash(key, strlen(key), again), 0);
    CHECK(memcmp(again, hash, sizeof hash) == 0);
    CHECK(memcmp(hash2, hash, sizeof hash) != 0);
    /* Not a key's form: refused before any lookup. */
    CHECK_EQ_INT(md_apikey_hash("mdk_short", 9, again), -1);
    char bad[MD_APIKEY_LEN + 1];
    memcpy(bad, key, sizeof bad);
    bad[10] = '+'; /* not base64url */
    CHECK_EQ_INT(md_apikey_hash(bad, MD_APIKEY_LEN, again), -1);
    memcpy(bad, "xdk_", 4);
    CHECK_EQ_INT(md_apikey_hash(bad, MD_APIKEY_LEN, again), -1);
    enum md_scope s = MD_SCOPE_READ;
    CHECK_EQ_INT(md_scope_parse("admin", &s), 0);
    CHECK_EQ_INT(s, MD_SCOPE_ADMIN);
    CHECK_EQ_INT(md_scope_parse("root", &s), -1);
}

static struct sockaddr_in v4(const char *a)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, a, &sa.sin_addr);
    return sa;
}

static void test_authfail(void)
{
    struct md_authfail *t = md_authfail_new(3, 60);
    CHECK(t != NULL);
    struct sockaddr_in a = v4("192.0.2.1"), b = v4("192.0.2.2");
    const struct sockaddr *pa = (const struct sockaddr *)&a, *pb = (const struct sockaddr *)&b;
    CHECK_EQ_INT(md_authfail_blocked(t, pa, 1000), 0);
    md_authfail_note(t, pa, 1000);
    md_authfail_note(t, pa, 1010);
    CHECK_EQ_INT(md_authfail_blocked(t, pa, 1010), 0);
    md_authfail_note(t, pa, 1020);
    /* Three failures within 60 s of the first: blocked until 1060. */
    CHECK_EQ_INT(md_authfail_blocked(t, pa, 1020), 40);
    CHECK_EQ_INT(md_authfail_blocked(t, pa, 1059), 1);
    CHECK_EQ_INT(md_authfail_blocked(t, pa, 1060), 0);
    /* Another address is not affected. */
    CHECK_EQ_INT(md_authfail_blocked(t, pb, 1020), 0);
    /* After the window a new one starts from the next failure. */
    md_authfail_note(t, pa, 1060);
    CHECK_EQ_INT(md_authfail_blocked(t, pa, 1061), 0);
    /* A flood of other addresses (far more than the table holds) only makes
     * the table forget: no address is blocked by another's failures. */
    for (unsigned i = 0; i < 4 * MD_AUTHFAIL_SLOTS; i++) {
        struct sockaddr_in x = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x0a000000u + i)};
        md_authfail_note(t, (const struct sockaddr *)&x, 2000);
    }
    CHECK_EQ_INT(md_authfail_blocked(t, pb, 2000), 0);
    struct sockaddr_in x = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x0a000001u)};
    CHECK_EQ_INT(md_authfail_blocked(t, (const struct sockaddr *)&x, 2000), 0);
    md_authfail_free(t);
}

struct listed {
    int n;
    struct md_key_info last;
};

static void on_key(void *ctx, const struct md_key_info *k)
{
    struct listed *l = ctx;
    l->n++;
    l->last = *k;
}

static void test_keystore(void)
{
    char dir[] = "/tmp/memoryd-apikey-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/k.db", dir);
    char why[256] = "";
    struct md_store_config scfg = {.db = path,
                                   .durability = MD_DURABILITY_FULL,
                                   .busy_timeout_ms = 1000,
                                   .search = MD_SEARCH_KEEP};
    struct md_store *store = NULL;
    CHECK_EQ_INT(md_store_open(&scfg, NULL, &store, why, sizeof why), MD_OK);
    if (!store)
        return;
    struct md_key_info k = {.scope = MD_SCOPE_WRITE, .created = 1700000000};
    snprintf(k.tenant, sizeof k.tenant, "alice");
    snprintf(k.name, sizeof k.name, "laptop");
    char key[MD_APIKEY_LEN + 1];
    unsigned char hash[MD_APIKEY_HASH_LEN];
    CHECK_EQ_INT(md_apikey_new(key, hash, k.id), 0);
    CHECK_EQ_INT(md_store_key_put(store, &k, hash), MD_OK);
    struct md_key_info f;
    CHECK_EQ_INT(md_store_key_find(store, hash, &f), MD_OK);
    CHECK(strcmp(f.id, k.id) == 0 && strcmp(f.tenant, "alice") == 0 &&
          strcmp(f.name, "laptop") == 0);
    CHECK_EQ_INT(f.scope, MD_SCOPE_WRITE);
    CHECK_EQ_INT(f.created, 1700000000);
    CHECK_EQ_INT(f.revoked, 0);
    unsigned char other[MD_APIKEY_HASH_LEN];
    memcpy(other, hash, sizeof other);
    other[0] ^= 1;
    CHECK_EQ_INT(md_store_key_find(store, other, &f), MD_ENOENT);
    struct listed l = {0};
    CHECK_EQ_INT(md_store_key_list(store, "alice", on_key, &l), MD_OK);
    CHECK_EQ_INT(l.n, 1);
    l.n = 0;
    CHECK_EQ_INT(md_store_key_list(store, "bob", on_key, &l), MD_OK);
    CHECK_EQ_INT(l.n, 0);
    /* Revoking keeps the first time; an unknown id is MD_ENOENT. */
    CHECK_EQ_INT(md_store_key_revoke(store, k.id, 1700000100), MD_OK);
    CHECK_EQ_INT(md_store_key_revoke(store, k.id, 1700000200), MD_OK);
    CHECK_EQ_INT(md_store_key_revoke(store, "key_0000000000000000", 1700000300), MD_ENOENT);
    CHECK_EQ_INT(md_store_key_find(store, hash, &f), MD_OK);
    CHECK_EQ_INT(f.revoked, 1700000100);
    md_store_close(store);
    unlink(path);
    char side[160];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    rmdir(dir);
}

int main(void)
{
    test_key_form();
    test_authfail();
    test_keystore();
    return check_report();
}
