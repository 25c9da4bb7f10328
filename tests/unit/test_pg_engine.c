/*
 * test_pg_engine.c — the PostgreSQL engine's API keys and copying
 * operations against a real PostgreSQL: md_store_key_put, key_list,
 * key_revoke and key_find (a revoked key, an unknown hash, an id taken),
 * and md_txn_load, md_txn_flush and md_txn_totals (a tenant with
 * directories, files, versions, a change-feed entry, an idempotency answer
 * and an API key; more rows than one chunk; the same tenant loaded again
 * is MD_EEXIST; an unknown tenant's totals are zeros).
 *
 * The database is the one at the URI in MD_TEST_PG_URI (the engine
 * migrates it); without it the test is skipped (exit status 77). Names
 * are made unique per run, so a database may be used again; the tenants
 * loaded are erased at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/md_apikey.h"
#include "base/md_path.h"
#include "base/md_sha256.h"
#include "check.h"
#include "pg_db.h"
#include "store/md_store_admin.h"
#include "store/pg/md_store_pg.h"

/* Strings of run-time length. */
#define CHECK_SAME(got, want) CHECK_BUF((got), strlen(got), (want), strlen(want))

static struct md_store *S;
static char T[64], BIG[64]; /* the tenants loaded */

/* ---- API keys ---- */

struct keys_seen {
    struct md_key_info k[8];
    size_t n, of_run; /* all listed; those of this run (by id) */
    const char *ids[2];
};

static void key_seen(void *ctx, const struct md_key_info *k)
{
    struct keys_seen *ks = ctx;
    for (size_t i = 0; i < 2; i++) {
        if (strcmp(k->id, ks->ids[i]) == 0 && ks->of_run < 8)
            ks->k[ks->of_run++] = *k;
    }
    ks->n++;
}

static void new_key(struct md_key_info *k, unsigned char hash[MD_APIKEY_HASH_LEN],
                    const char *tenant, enum md_scope scope, const char *name, int64_t created)
{
    char secret[MD_APIKEY_LEN + 1];
    *k = (struct md_key_info){.scope = scope, .created = created};
    CHECK(md_apikey_new(secret, hash, k->id) == 0);
    snprintf(k->tenant, sizeof k->tenant, "%s", tenant);
    snprintf(k->name, sizeof k->name, "%s", name);
}

static void test_keys(void)
{
    char ta[64], tb[64];
    snprintf(ta, sizeof ta, "keys-a-%ld", (long)getpid());
    snprintf(tb, sizeof tb, "keys-b-%ld", (long)getpid());
    struct md_key_info a, b, again, found;
    unsigned char ha[MD_APIKEY_HASH_LEN], hb[MD_APIKEY_HASH_LEN], hx[MD_APIKEY_HASH_LEN];
    new_key(&a, ha, ta, MD_SCOPE_WRITE, "first", 1000);
    new_key(&b, hb, tb, MD_SCOPE_ADMIN, "", 1001);
    CHECK_EQ_INT(md_store_key_put(S, &a, ha), MD_OK);
    CHECK_EQ_INT(md_store_key_put(S, &b, hb), MD_OK);
    /* The same id again (with another hash): taken. */
    new_key(&again, hx, ta, MD_SCOPE_READ, "again", 1002);
    memcpy(again.id, a.id, sizeof again.id);
    CHECK_EQ_INT(md_store_key_put(S, &again, hx), MD_EEXIST);

    struct keys_seen all = {.ids = {a.id, b.id}}, of_a = {.ids = {a.id, b.id}};
    CHECK_EQ_INT(md_store_key_list(S, NULL, key_seen, &all), MD_OK);
    CHECK_EQ_INT(all.of_run, 2);
    CHECK(all.n >= 2);
    CHECK_EQ_INT(md_store_key_list(S, ta, key_seen, &of_a), MD_OK);
    CHECK_EQ_INT(of_a.n, 1);
    CHECK_EQ_INT(of_a.of_run, 1);
    CHECK_SAME(of_a.k[0].id, a.id);
    CHECK_STR(of_a.k[0].name, "first");
    CHECK_EQ_INT(of_a.k[0].scope, MD_SCOPE_WRITE);
    CHECK_EQ_INT(of_a.k[0].created, 1000);
    CHECK_EQ_INT(of_a.k[0].revoked, 0);

    CHECK_EQ_INT(md_store_key_find(S, hb, &found), MD_OK);
    CHECK_SAME(found.id, b.id);
    CHECK_SAME(found.tenant, tb);
    CHECK_EQ_INT(found.scope, MD_SCOPE_ADMIN);
    CHECK_STR(found.name, "");
    CHECK_EQ_INT(found.created, 1001);
    CHECK_EQ_INT(found.revoked, 0);
    CHECK_EQ_INT(md_store_key_find(S, hx, &found), MD_ENOENT); /* never stored */

    /* Revoked: found, with the first time it was revoked. */
    CHECK_EQ_INT(md_store_key_revoke(S, a.id, 2000), MD_OK);
    CHECK_EQ_INT(md_store_key_revoke(S, a.id, 3000), MD_OK);
    CHECK_EQ_INT(md_store_key_find(S, ha, &found), MD_OK);
    CHECK_SAME(found.id, a.id);
    CHECK_EQ_INT(found.revoked, 2000);
    CHECK_EQ_INT(md_store_key_revoke(S, "key_0000000000000000", 2000), MD_ENOENT);
}

/* ---- load, flush, totals ---- */

static enum md_err load_entry(struct md_txn *t, const char *path, enum md_kind kind, int64_t size,
                              const char *content)
{
    struct md_dump_row r = {.kind = MD_DUMP_ENTRY};
    struct md_dump_entry *e = &r.u.entry;
    *e = (struct md_dump_entry){.path = path,
                                .len = strlen(path),
                                .depth = md_path_depth(path, strlen(path)),
                                .kind = kind,
                                .size = size,
                                .mtime = 5000,
                                .content = content,
                                .content_len = content ? strlen(content) : 0};
    if (content) {
        e->has_sha256 = 1;
        md_sha256(content, e->content_len, e->sha256);
    }
    return md_txn_load(t, &r);
}

static enum md_err load_tenant(struct md_txn *t, const char *name)
{
    struct md_dump_row r = {.kind = MD_DUMP_TENANT};
    r.u.tenant = (struct md_dump_tenant){name, 1234, 2, 1, -1, 10, -1, -1};
    return md_txn_load(t, &r);
}

/* A tenant of every kind of row, and an API key. */
static void load_small(struct md_txn *t, unsigned char key_hash[MD_APIKEY_HASH_LEN],
                       struct md_key_info *key)
{
    CHECK_EQ_INT(load_tenant(t, T), MD_OK);
    CHECK_EQ_INT(load_entry(t, MD_ROOT, MD_KIND_DIR, 5, NULL), MD_OK);
    CHECK_EQ_INT(load_entry(t, "/memories/b.txt", MD_KIND_FILE, 0, ""), MD_OK);
    CHECK_EQ_INT(load_entry(t, "/memories/d", MD_KIND_DIR, 5, NULL), MD_OK);
    CHECK_EQ_INT(load_entry(t, "/memories/d/a.txt", MD_KIND_FILE, 5, "hello"), MD_OK);
    struct md_dump_row r = {.kind = MD_DUMP_VERSION};
    r.u.version = (struct md_version){.version = 1,
                                      .path = "/memories/d/a.txt",
                                      .path_len = 17,
                                      .size = -1,
                                      .time_ms = 4000,
                                      .command = "create"};
    CHECK_EQ_INT(md_txn_load(t, &r), MD_OK);
    r.u.version = (struct md_version){.version = 2,
                                      .path = "/memories/d/a.txt",
                                      .path_len = 17,
                                      .existed = 1,
                                      .size = 4,
                                      .time_ms = 4500,
                                      .command = "str_replace",
                                      .actor = "ann",
                                      .actor_len = 3,
                                      .content = "hell",
                                      .content_len = 4};
    CHECK_EQ_INT(md_txn_load(t, &r), MD_OK);
    r = (struct md_dump_row){.kind = MD_DUMP_CHANGE};
    r.u.change = (struct md_change){.seq = 1,
                                    .version = 1,
                                    .versions = 2,
                                    .history_bytes = 4,
                                    .time_ms = 4500,
                                    .command = "create",
                                    .paths = "/memories/d/a.txt",
                                    .paths_len = 17};
    CHECK_EQ_INT(md_txn_load(t, &r), MD_OK);
    r = (struct md_dump_row){.kind = MD_DUMP_IDEM};
    r.u.idem = (struct md_dump_idem){.key = "retry-1",
                                     .key_len = 7,
                                     .answer = {.err = 0, .body = "ok", .body_len = 2},
                                     .path = "/memories/d/a.txt",
                                     .path_len = 17,
                                     .time = 4500};
    CHECK_EQ_INT(md_txn_load(t, &r), MD_OK);
    r = (struct md_dump_row){.kind = MD_DUMP_KEY};
    new_key(key, key_hash, T, MD_SCOPE_READ, "loaded", 1500);
    key->revoked = 1600;
    r.u.key.info = *key;
    memcpy(r.u.key.hash, key_hash, MD_APIKEY_HASH_LEN);
    CHECK_EQ_INT(md_txn_load(t, &r), MD_OK);
}

static void check_totals(struct md_txn *t, const char *tenant, const struct md_totals *want)
{
    struct md_totals got;
    memset(&got, 0xff, sizeof got);
    CHECK_EQ_INT(md_txn_totals(t, tenant, &got), MD_OK);
    CHECK_EQ_INT(got.entries, want->entries);
    CHECK_EQ_INT(got.content_bytes, want->content_bytes);
    CHECK_EQ_INT(got.sizes, want->sizes);
    CHECK_EQ_INT(got.versions, want->versions);
    CHECK_EQ_INT(got.changes, want->changes);
    CHECK_EQ_INT(got.idempotency, want->idempotency);
}

/* What was loaded, as the store's reads see it after the commit. */
static void check_small_read(void)
{
    struct md_txn *t;
    CHECK_EQ_INT(md_store_read_begin(S, &t), MD_OK);
    struct md_entry e;
    CHECK_EQ_INT(md_txn_get(t, T, "/memories/d/a.txt", 17, 1, &e), MD_OK);
    CHECK_MEM(e.content, e.content_len, "hello");
    CHECK(e.has_sha256);
    struct md_usage u;
    CHECK_EQ_INT(md_txn_usage(t, T, &u), MD_OK);
    CHECK_EQ_INT(u.bytes, 5);
    CHECK_EQ_INT(u.files, 2); /* counted by the triggers of 003_quotas.sql */
    CHECK_EQ_INT(u.max_bytes, -1);
    CHECK_EQ_INT(u.max_files, 10);
    struct md_version v;
    CHECK_EQ_INT(md_txn_version_get(t, T, 2, 1, &v), MD_OK);
    CHECK_MEM(v.content, v.content_len, "hell");
    CHECK_MEM(v.actor, v.actor_len, "ann");
    CHECK_EQ_INT(md_txn_version_get(t, T, 1, 1, &v), MD_OK);
    CHECK(!v.existed);
    CHECK_EQ_INT(v.size, -1);
    struct md_totals want = {4, 5, 15, 2, 1, 1};
    check_totals(t, T, &want);
    struct md_totals zero = {0, 0, 0, 0, 0, 0};
    check_totals(t, "no-such-tenant-anywhere", &zero);
    md_txn_end(t);
}

/* More rows than a chunk holds (1000): sent in several. */
static void load_big(struct md_txn *t)
{
    CHECK_EQ_INT(load_tenant(t, BIG), MD_OK);
    enum md_err e = load_entry(t, MD_ROOT, MD_KIND_DIR, 2100, NULL);
    for (int i = 0; i < 2100 && !e; i++) {
        char path[64];
        snprintf(path, sizeof path, "/memories/f%04d.txt", i);
        e = load_entry(t, path, MD_KIND_FILE, 1, "x");
    }
    CHECK_EQ_INT(e, MD_OK);
}

static void test_load(void)
{
    snprintf(T, sizeof T, "loaded-%ld", (long)getpid());
    snprintf(BIG, sizeof BIG, "loaded-big-%ld", (long)getpid());
    struct md_txn *t;
    struct md_dump_row orphan = {.kind = MD_DUMP_ENTRY};
    orphan.u.entry =
        (struct md_dump_entry){.path = MD_ROOT, .len = MD_ROOT_LEN, .kind = MD_KIND_DIR};
    CHECK_EQ_INT(md_store_write_begin(S, &t), MD_OK);
    CHECK_EQ_INT(md_txn_load(t, &orphan), MD_EINVAL); /* before any tenant */
    unsigned char key_hash[MD_APIKEY_HASH_LEN];
    struct md_key_info key;
    load_small(t, key_hash, &key);
    CHECK_EQ_INT(md_txn_flush(t), MD_OK);
    struct md_totals want = {4, 5, 15, 2, 1, 1};
    check_totals(t, T, &want);
    load_big(t);
    struct md_totals big = {2101, 2100, 4200, 0, 0, 0};
    check_totals(t, BIG, &big);
    CHECK_EQ_INT(md_txn_commit(t), MD_OK);
    check_small_read();
    struct md_key_info found;
    CHECK_EQ_INT(md_store_key_find(S, key_hash, &found), MD_OK);
    CHECK_STR(found.name, "loaded");
    CHECK_EQ_INT(found.revoked, 1600);

    /* The same tenant again: refused, its rows too; nothing written. */
    CHECK_EQ_INT(md_store_write_begin(S, &t), MD_OK);
    CHECK_EQ_INT(load_tenant(t, T), MD_EEXIST);
    CHECK_EQ_INT(load_entry(t, "/memories/new.txt", MD_KIND_FILE, 1, "n"), MD_EEXIST);
    CHECK_EQ_INT(md_txn_flush(t), MD_OK);
    md_txn_rollback(t);
    CHECK_EQ_INT(md_store_read_begin(S, &t), MD_OK);
    check_totals(t, T, &want);
    md_txn_end(t);
}

/* The tenants loaded erased (their key with them). */
static void erase_loaded(void)
{
    const char *names[2] = {T, BIG};
    for (int i = 0; i < 2; i++) {
        struct md_txn *t;
        struct md_erased gone;
        CHECK_EQ_INT(md_store_write_begin(S, &t), MD_OK);
        CHECK_EQ_INT(md_txn_erase(t, names[i], &gone), MD_OK);
        CHECK_EQ_INT(md_txn_commit(t), MD_OK);
        CHECK_EQ_INT(gone.entries, i == 0 ? 4 : 2101);
        CHECK_EQ_INT(gone.api_keys, i == 0 ? 1 : 0);
    }
}

int main(void)
{
    /* The database at MD_TEST_PG_URI, or a fresh one of the cluster
     * MD_TEST_PG names (pg_db.h); skipped (77) without either. */
    static char name[64], made[1024];
    const char *uri = getenv("MD_TEST_PG_URI");
    if (!uri || !*uri) {
        int rc = pg_db_create("md_pgeng", name, sizeof name, made, sizeof made);
        if (rc)
            return rc;
        uri = made;
    }
    struct md_store_config cfg = {.db = uri,
                                  .durability = MD_DURABILITY_FULL,
                                  .busy_timeout_ms = 5000,
                                  .history = {20, 30},
                                  .search = MD_SEARCH_KEEP};
    char why[512] = "";
    if (md_apikey_init() != 0 || md_engine_pg.open(&cfg, NULL, &S, why, sizeof why) != MD_OK) {
        fprintf(stderr, "test_pg_engine: cannot open %s: %s\n", uri, why);
        return 1;
    }
    test_keys();
    test_load();
    erase_loaded();
    md_store_close(S);
    if (name[0])
        pg_db_drop(name);
    return check_report();
}
