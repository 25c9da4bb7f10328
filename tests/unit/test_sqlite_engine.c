/*
 * test_sqlite_engine.c — what the SQLite engine (src/store/sqlite/) does
 * besides the commands, on real files in a fresh temporary directory:
 * API keys (src/store/sqlite/keys.c): put, list (all, by tenant), revoke
 * and find, an id or hash taken refused, and a revocation made through a
 * second store on the same file seen at once by the first store's
 * key_find (which keeps no snapshot from an earlier read); the dump
 * (dump.c) of a database with two tenants, every row in the documented
 * order with its content (tenants by name, then each one's entries by
 * path, versions, change-feed entries, idempotency answers by key; the API
 * keys by id), a dump stopped by its sink, and a database of another
 * schema version refused (and a statement its tables cannot answer
 * failing cleanly); totals of a tenant, in a read transaction and
 * in a write transaction that has not committed; a store opened read-only
 * (conn.c): writes refused with MD_EINVAL, reads, the dump and the backup
 * (backup.c) working, and a missing file, a directory, a file that is not
 * a SQLite database and a SQLite database that is not memoryd's refused
 * with memoryd backup's reasons, nothing created.
 */
#include <fcntl.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/md_buf.h"
#include "base/md_path.h"
#include "base/md_progress.h"
#include "base/md_sha256.h"
#include "check.h"
#include "store/md_store_admin.h"
#include "store/sqlite/md_store_sqlite.h"

static char g_dir[64];
static char g_db[128];

static const struct md_store_config CFG = {.durability = MD_DURABILITY_FULL,
                                           .busy_timeout_ms = 5000,
                                           .history = {20, 30},
                                           .search = MD_SEARCH_KEEP};

/* `path` in the test directory, into `out` (PATH_MAX). */
static const char *in_dir(char *out, const char *name)
{
    snprintf(out, 256, "%s/%s", g_dir, name);
    return out;
}

static enum md_err open_at(const char *db, int read_only, struct md_store **s, char *why,
                           size_t why_len)
{
    struct md_store_config c = CFG;
    c.db = db;
    c.read_only = read_only;
    *s = NULL;
    return md_engine_sqlite.open(&c, NULL, s, why, why_len);
}

static struct md_store *open_store(const char *db, int read_only)
{
    struct md_store *s = NULL;
    char why[512] = "";
    if (open_at(db, read_only, &s, why, sizeof why) != MD_OK) {
        fprintf(stderr, "cannot open %s: %s\n", db, why);
        exit(1);
    }
    return s;
}

/* ---- API keys ---- */

static struct md_key_info key_of(const char *id, const char *tenant, enum md_scope scope,
                                 const char *name, int64_t created)
{
    struct md_key_info k = {.scope = scope, .created = created};
    snprintf(k.id, sizeof k.id, "%s", id);
    snprintf(k.tenant, sizeof k.tenant, "%s", tenant);
    snprintf(k.name, sizeof k.name, "%s", name);
    return k;
}

static void hash_of(unsigned char hash[MD_APIKEY_HASH_LEN], unsigned char fill)
{
    memset(hash, fill, MD_APIKEY_HASH_LEN);
}

/* A listing, one line per key. */
static void key_line(void *ctx, const struct md_key_info *k)
{
    md_buf_printf(ctx, "%s %s %s %s %lld %lld\n", k->id, k->tenant, md_scope_name(k->scope),
                  k->name, (long long)k->created, (long long)k->revoked);
}

static void put_keys(struct md_store *s)
{
    unsigned char h[MD_APIKEY_HASH_LEN];
    struct md_key_info k = key_of("key_00000000000000a1", "alpha", MD_SCOPE_WRITE, "laptop", 100);
    hash_of(h, 0xa1);
    CHECK_EQ_INT(md_store_key_put(s, &k, h), MD_OK);
    k = key_of("key_0000000000000001", "zeta", MD_SCOPE_READ, "ci", 200);
    hash_of(h, 0x01);
    CHECK_EQ_INT(md_store_key_put(s, &k, h), MD_OK);
    k = key_of("key_00000000000000a3", "alpha", MD_SCOPE_ADMIN, "ops", 300);
    hash_of(h, 0xa3);
    CHECK_EQ_INT(md_store_key_put(s, &k, h), MD_OK);
    /* An id or a hash taken. */
    k = key_of("key_00000000000000a3", "beta", MD_SCOPE_READ, "again", 400);
    hash_of(h, 0x77);
    CHECK_EQ_INT(md_store_key_put(s, &k, h), MD_EEXIST);
    k = key_of("key_0000000000000077", "beta", MD_SCOPE_READ, "again", 400);
    hash_of(h, 0xa1);
    CHECK_EQ_INT(md_store_key_put(s, &k, h), MD_EEXIST);
}

static void test_keys(struct md_store *a)
{
    put_keys(a);
    struct md_buf out;
    md_buf_init(&out, 1 << 16);
    CHECK_EQ_INT(md_store_key_list(a, NULL, key_line, &out), MD_OK);
    CHECK_MEM(out.data, out.len,
              "key_00000000000000a1 alpha write laptop 100 0\n"
              "key_00000000000000a3 alpha admin ops 300 0\n"
              "key_0000000000000001 zeta read ci 200 0\n");
    out.len = 0;
    CHECK_EQ_INT(md_store_key_list(a, "alpha", key_line, &out), MD_OK);
    CHECK_MEM(out.data, out.len,
              "key_00000000000000a1 alpha write laptop 100 0\n"
              "key_00000000000000a3 alpha admin ops 300 0\n");
    out.len = 0;
    CHECK_EQ_INT(md_store_key_list(a, "nobody", key_line, &out), MD_OK);
    CHECK_EQ_INT(out.len, 0);

    unsigned char h[MD_APIKEY_HASH_LEN];
    struct md_key_info found;
    hash_of(h, 0xa3);
    CHECK_EQ_INT(md_store_key_find(a, h, &found), MD_OK);
    out.len = 0;
    key_line(&out, &found);
    CHECK_MEM(out.data, out.len, "key_00000000000000a3 alpha admin ops 300 0\n");
    hash_of(h, 0x55);
    CHECK_EQ_INT(md_store_key_find(a, h, &found), MD_ENOENT);

    /* A's readers keep the snapshot of this find; a revocation committed
     * by another store (another process) is seen by A's next find. */
    hash_of(h, 0xa1);
    CHECK_EQ_INT(md_store_key_find(a, h, &found), MD_OK);
    CHECK_EQ_INT(found.revoked, 0);
    struct md_store *b = open_store(g_db, 0);
    CHECK_EQ_INT(md_store_key_revoke(b, "key_00000000000000a1", 5000), MD_OK);
    CHECK_EQ_INT(md_store_key_find(a, h, &found), MD_OK);
    CHECK_EQ_INT(found.revoked, 5000);
    /* Revoked before: keeps its first time. No such key. */
    CHECK_EQ_INT(md_store_key_revoke(b, "key_00000000000000a1", 6000), MD_OK);
    CHECK_EQ_INT(md_store_key_find(a, h, &found), MD_OK);
    CHECK_EQ_INT(found.revoked, 5000);
    CHECK_EQ_INT(md_store_key_revoke(b, "key_00000000000000ff", 6000), MD_ENOENT);
    md_store_close(b);
    md_buf_free(&out);
}

/* ---- the data of two tenants ---- */

/* One write command in a transaction of its own: `text` into `path`
 * (old_size -1: a new file), recorded at `time_ms`, with an idempotent
 * answer under `idem_key` unless NULL. */
static enum md_err write_file(struct md_store *s, const char *tenant, const char *path,
                              const char *text, int64_t old_size, int64_t time_ms,
                              const char *idem_key)
{
    struct md_txn *t = NULL;
    enum md_err e = md_store_write_begin(s, &t);
    if (e)
        return e;
    const struct md_write_meta m = {
        old_size < 0 ? "create" : "str_replace", "tester", time_ms, {0, 0, 0, 0}};
    unsigned char sha[MD_SHA256_LEN];
    size_t len = strlen(path), n = strlen(text);
    struct md_change_rec rec;
    struct md_idem answer = {.err = 0, .body = "done", .body_len = 4};
    memset(answer.fingerprint, 0x5a, sizeof answer.fingerprint);
    e = md_sha256(text, n, sha);
    if (!e)
        e = md_txn_savepoint(t);
    if (!e)
        e = md_txn_cmd_begin(t, tenant, &m);
    if (!e)
        e = md_txn_put_file(t, tenant, path, len, text, n, sha, old_size, MD_ROOT_LEN);
    if (!e)
        e = md_txn_cmd_end(t, &path, &len, 1, &rec);
    if (!e && idem_key)
        e = md_txn_idem_put(t, tenant, idem_key, strlen(idem_key), &answer, path, len);
    if (!e)
        e = md_txn_release(t, 0);
    if (e) {
        md_txn_rollback(t);
        return e;
    }
    return md_txn_commit(t);
}

static void write_tenants(struct md_store *s)
{
    CHECK_EQ_INT(write_file(s, "alpha", "/memories/a/x.txt", "one", -1, 1000, "k2"), MD_OK);
    CHECK_EQ_INT(write_file(s, "alpha", "/memories/z.txt", "zed", -1, 2000, "k1"), MD_OK);
    CHECK_EQ_INT(write_file(s, "alpha", "/memories/a/x.txt", "two", 3, 3000, NULL), MD_OK);
    CHECK_EQ_INT(write_file(s, "beta", "/memories/b.txt", "bee", -1, 4000, NULL), MD_OK);
    struct md_txn *t = NULL;
    CHECK_EQ_INT(md_store_write_begin(s, &t), MD_OK);
    CHECK_EQ_INT(md_txn_set_limits(t, "beta", 1000, -1), MD_OK);
    CHECK_EQ_INT(md_txn_commit(t), MD_OK);
}

/* ---- the dump ---- */

struct transcript {
    struct md_buf out;
    int stop_after; /* rows; 0: never stop */
    int rows;
};

static void entry_line(struct md_buf *o, const struct md_dump_entry *e)
{
    md_buf_printf(o, "E %.*s d%d %s %lld", (int)e->len, e->path, e->depth,
                  e->kind == MD_KIND_DIR ? "dir" : "file", (long long)e->size);
    if (e->content)
        md_buf_printf(o, " =%.*s", (int)e->content_len, e->content);
    unsigned char sha[MD_SHA256_LEN];
    if (e->has_sha256 && e->content && md_sha256(e->content, e->content_len, sha) == MD_OK)
        md_buf_puts(o, memcmp(sha, e->sha256, MD_SHA256_LEN) == 0 ? " sha" : " BAD-SHA");
    md_buf_putc(o, '\n');
}

static void version_line(struct md_buf *o, const struct md_version *v)
{
    md_buf_printf(o, "V %lld %.*s existed %d size %lld at %lld %s by %.*s", (long long)v->version,
                  (int)v->path_len, v->path, v->existed, (long long)v->size, (long long)v->time_ms,
                  v->command, (int)v->actor_len, v->actor ? v->actor : "");
    if (v->content)
        md_buf_printf(o, " =%.*s%s", (int)v->content_len, v->content, v->has_sha256 ? " sha" : "");
    md_buf_printf(o, " pruned %lld\n", (long long)v->pruned_through);
}

static int row_line(void *ctx, const struct md_dump_row *r)
{
    struct transcript *tr = ctx;
    struct md_buf *o = &tr->out;
    switch (r->kind) {
    case MD_DUMP_TENANT:
        md_buf_printf(o, "T %s v%lld s%lld limits %lld %lld\n", r->u.tenant.name,
                      (long long)r->u.tenant.last_version, (long long)r->u.tenant.last_seq,
                      (long long)r->u.tenant.max_bytes, (long long)r->u.tenant.max_files);
        break;
    case MD_DUMP_ENTRY:
        entry_line(o, &r->u.entry);
        break;
    case MD_DUMP_VERSION:
        version_line(o, &r->u.version);
        break;
    case MD_DUMP_CHANGE:
        md_buf_printf(o, "C %lld v%lld n%lld bytes %lld at %lld %s [%.*s] by %.*s\n",
                      (long long)r->u.change.seq, (long long)r->u.change.version,
                      (long long)r->u.change.versions, (long long)r->u.change.history_bytes,
                      (long long)r->u.change.time_ms, r->u.change.command,
                      (int)r->u.change.paths_len, r->u.change.paths, (int)r->u.change.actor_len,
                      r->u.change.actor ? r->u.change.actor : "");
        break;
    case MD_DUMP_IDEM:
        md_buf_printf(o, "I %.*s err %d %.*s fp %02x path %.*s\n", (int)r->u.idem.key_len,
                      r->u.idem.key, r->u.idem.answer.err, (int)r->u.idem.answer.body_len,
                      r->u.idem.answer.body, r->u.idem.answer.fingerprint[0],
                      (int)r->u.idem.path_len, r->u.idem.path ? r->u.idem.path : "");
        break;
    case MD_DUMP_KEY:
        md_buf_puts(o, "K ");
        key_line(o, &r->u.key.info);
        o->len--; /* its newline */
        md_buf_printf(o, " hash %02x\n", r->u.key.hash[0]);
        break;
    }
    return ++tr->rows == tr->stop_after;
}

static const char DUMP[] =
    "T alpha v3 s3 limits -1 -1\n"
    "E /memories d0 dir 6\n"
    "E /memories/a d1 dir 3\n"
    "E /memories/a/x.txt d2 file 3 =two sha\n"
    "E /memories/z.txt d1 file 3 =zed sha\n"
    "V 1 /memories/a/x.txt existed 0 size -1 at 1000 create by tester pruned 0\n"
    "V 2 /memories/z.txt existed 0 size -1 at 2000 create by tester pruned 0\n"
    "V 3 /memories/a/x.txt existed 1 size 3 at 3000 str_replace by tester =one sha pruned 0\n"
    "C 1 v1 n1 bytes 0 at 1000 create [/memories/a/x.txt] by tester\n"
    "C 2 v2 n1 bytes 0 at 2000 create [/memories/z.txt] by tester\n"
    "C 3 v3 n1 bytes 3 at 3000 str_replace [/memories/a/x.txt] by tester\n"
    "I k1 err 0 done fp 5a path /memories/z.txt\n"
    "I k2 err 0 done fp 5a path /memories/a/x.txt\n"
    "T beta v1 s1 limits 1000 -1\n"
    "E /memories d0 dir 3\n"
    "E /memories/b.txt d1 file 3 =bee sha\n"
    "V 1 /memories/b.txt existed 0 size -1 at 4000 create by tester pruned 0\n"
    "C 1 v1 n1 bytes 0 at 4000 create [/memories/b.txt] by tester\n"
    "K key_0000000000000001 zeta read ci 200 0 hash 01\n"
    "K key_00000000000000a1 alpha write laptop 100 5000 hash a1\n"
    "K key_00000000000000a3 alpha admin ops 300 0 hash a3\n";

/* The dump of `s` from a snapshot, into `tr`. */
static enum md_err dump_of(struct md_store *s, struct transcript *tr)
{
    static const struct md_dump_sink sink = {row_line};
    struct md_txn *t = NULL;
    enum md_err e = md_store_snapshot_begin(s, &t);
    if (e)
        return e;
    e = md_txn_dump(t, &sink, tr);
    md_txn_end(t);
    return e;
}

static void test_dump(struct md_store *s)
{
    CHECK((md_store_caps(s) & MD_STORE_CAP_DUMP) != 0);
    struct transcript tr = {.stop_after = 0};
    md_buf_init(&tr.out, 1 << 20);
    CHECK_EQ_INT(dump_of(s, &tr), MD_OK);
    CHECK_MEM(tr.out.data, tr.out.len, DUMP);
    /* The sink stops it: MD_EINVAL, nothing after. */
    tr.out.len = 0;
    tr.rows = 0;
    tr.stop_after = 3;
    CHECK_EQ_INT(dump_of(s, &tr), MD_EINVAL);
    CHECK_EQ_INT(tr.rows, 3);
    md_buf_free(&tr.out);
}

/* ---- totals ---- */

static void check_totals(struct md_txn *t, const char *tenant, const int64_t want[6])
{
    struct md_totals got;
    memset(&got, 0x7f, sizeof got);
    CHECK_EQ_INT(md_txn_totals(t, tenant, &got), MD_OK);
    CHECK_EQ_INT(got.entries, want[0]);
    CHECK_EQ_INT(got.content_bytes, want[1]);
    CHECK_EQ_INT(got.sizes, want[2]);
    CHECK_EQ_INT(got.versions, want[3]);
    CHECK_EQ_INT(got.changes, want[4]);
    CHECK_EQ_INT(got.idempotency, want[5]);
}

static void test_totals(struct md_store *s, struct md_store *writable)
{
    static const int64_t alpha[6] = {4, 6, 15, 3, 3, 2}, beta[6] = {2, 3, 6, 1, 1, 0},
                         none[6] = {0, 0, 0, 0, 0, 0}, alpha_more[6] = {5, 10, 23, 3, 3, 2};
    struct md_txn *t = NULL;
    CHECK_EQ_INT(md_store_read_begin(s, &t), MD_OK);
    check_totals(t, "alpha", alpha);
    check_totals(t, "beta", beta);
    check_totals(t, "nobody", none);
    md_txn_end(t);
    /* In a write transaction: its own writes, directory sizes not yet
     * written included. */
    unsigned char sha[MD_SHA256_LEN];
    CHECK_EQ_INT(md_sha256("abcd", 4, sha), MD_OK);
    CHECK_EQ_INT(md_store_write_begin(writable, &t), MD_OK);
    CHECK_EQ_INT(
        md_txn_put_file(t, "alpha", "/memories/new.txt", 17, "abcd", 4, sha, -1, MD_ROOT_LEN),
        MD_OK);
    check_totals(t, "alpha", alpha_more);
    md_txn_rollback(t);
    CHECK_EQ_INT(md_store_read_begin(s, &t), MD_OK);
    check_totals(t, "alpha", alpha);
    md_txn_end(t);
}

/* ---- a store opened read-only ---- */

static void test_read_only_writes(struct md_store *ro)
{
    struct md_txn *t = NULL;
    CHECK_EQ_INT(md_store_write_begin(ro, &t), MD_EINVAL);
    unsigned char h[MD_APIKEY_HASH_LEN];
    hash_of(h, 0x42);
    struct md_key_info k = key_of("key_0000000000000042", "alpha", MD_SCOPE_READ, "no", 1);
    CHECK_EQ_INT(md_store_key_put(ro, &k, h), MD_EINVAL);
    CHECK_EQ_INT(md_store_key_revoke(ro, "key_00000000000000a3", 7000), MD_EINVAL);
    /* Reads work. */
    struct md_key_info found;
    hash_of(h, 0xa3);
    CHECK_EQ_INT(md_store_key_find(ro, h, &found), MD_OK);
    CHECK_EQ_INT(found.revoked, 0);
    CHECK_EQ_INT(md_store_read_begin(ro, &t), MD_OK);
    struct md_entry e;
    CHECK_EQ_INT(md_txn_get(t, "alpha", "/memories/z.txt", 15, 1, &e), MD_OK);
    CHECK_MEM(e.content, e.content_len, "zed");
    md_txn_end(t);
    CHECK_EQ_INT(md_store_ping(ro), MD_OK);
}

/* Opening `db` read-only fails with `want` as the reason, and creates
 * nothing. */
static void refused(const char *db, const char *want)
{
    struct stat before, after;
    int existed = stat(db, &before) == 0;
    struct md_store *s = NULL;
    char why[512] = "";
    CHECK_EQ_INT(open_at(db, 1, &s, why, sizeof why), MD_EDB);
    CHECK(s == NULL);
    CHECK_BUF(why, strlen(why), want, strlen(want));
    CHECK_EQ_INT(stat(db, &after) == 0, existed);
    if (existed)
        CHECK_EQ_INT(after.st_size, before.st_size);
    char side[300];
    snprintf(side, sizeof side, "%s-wal", db);
    CHECK(access(side, F_OK) != 0);
}

/* A SQLite database made with `sql`, at `db`. */
static void make_db(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    CHECK_EQ_INT(sqlite3_open(db, &h), SQLITE_OK);
    CHECK_EQ_INT(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
}

static void test_read_only_refusals(void)
{
    char p[256], want[600];
    in_dir(p, "missing.db");
    snprintf(want, sizeof want, "%s: No such file or directory", p);
    refused(p, want);
    snprintf(want, sizeof want, "%s: is not a file", g_dir);
    refused(g_dir, want);
    in_dir(p, "junk.db");
    FILE *f = fopen(p, "w");
    for (int i = 0; f && i < 100; i++)
        fputs("this is not a database, but it is long enough to be read as one. ", f);
    if (f)
        fclose(f);
    snprintf(want, sizeof want, "%s is not a SQLite database: file is not a database", p);
    refused(p, want);
    in_dir(p, "other.db");
    make_db(p, "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('x');");
    snprintf(want, sizeof want, "%s is not a memoryd database (no memoryd schema in it)", p);
    refused(p, want);
}

/* A memoryd database of an older schema: opened read-only (memoryd backup
 * copies it), but not dumped. */
static void test_other_schema(void)
{
    char p[256];
    in_dir(p, "old.db");
    make_db(p, "CREATE TABLE tenants (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
               " created_at INTEGER NOT NULL);"
               " CREATE TABLE entries (tenant INTEGER NOT NULL, path TEXT NOT NULL,"
               " depth INTEGER NOT NULL, kind INTEGER NOT NULL, size INTEGER NOT NULL,"
               " mtime INTEGER NOT NULL, content BLOB, PRIMARY KEY (tenant, path));"
               " PRAGMA user_version = 1;");
    struct md_store *s = open_store(p, 1);
    struct transcript tr = {.stop_after = 0};
    md_buf_init(&tr.out, 1 << 16);
    CHECK_EQ_INT(dump_of(s, &tr), MD_EINVAL);
    CHECK_EQ_INT(tr.rows, 0);
    md_buf_free(&tr.out);
    /* A statement its tables cannot answer (no api_keys) fails cleanly. */
    unsigned char h[MD_APIKEY_HASH_LEN];
    struct md_key_info found;
    hash_of(h, 0xa1);
    CHECK_EQ_INT(md_store_key_find(s, h, &found), MD_EDB);
    md_store_close(s);
}

/* ---- the backup ---- */

static void test_backup(struct md_store *ro)
{
    CHECK((md_store_caps(ro) & MD_STORE_CAP_BACKUP) != 0);
    char p[256], why[512] = "";
    in_dir(p, "copy.db");
    int fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0600);
    CHECK(fd >= 0);
    close(fd);
    volatile int stop = 1;
    struct md_backup_info info;
    CHECK_EQ_INT(md_store_backup(ro, p, &stop, NULL, &info, why, sizeof why), MD_EBUSY);
    stop = 0;
    /* The progress it reports: every page of the copy, of as many. */
    struct md_progress progress;
    md_progress_begin(&progress, "backup", "pages", 0, 0);
    CHECK_EQ_INT(md_store_backup(ro, p, &stop, &progress, &info, why, sizeof why), MD_OK);
    CHECK(progress.total > 0);
    CHECK_EQ_INT(progress.done, progress.total);
    CHECK_EQ_INT(info.tenants, 2);
    CHECK_EQ_INT(info.page_size, 4096);
    struct stat st;
    CHECK_EQ_INT(stat(p, &st), 0);
    CHECK(info.pages > 0);
    CHECK_EQ_INT(st.st_size, info.pages * info.page_size);
    /* The copy holds the same rows. */
    struct md_store *copy = open_store(p, 1);
    struct transcript tr = {.stop_after = 0};
    md_buf_init(&tr.out, 1 << 20);
    CHECK_EQ_INT(dump_of(copy, &tr), MD_OK);
    CHECK_MEM(tr.out.data, tr.out.len, DUMP);
    md_buf_free(&tr.out);
    md_store_close(copy);
}

static void cleanup(void)
{
    static const char *const names[] = {"memoryd.db", "junk.db", "other.db", "old.db", "copy.db"};
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        for (size_t j = 0; j < sizeof suffix / sizeof suffix[0]; j++) {
            char p[300];
            snprintf(p, sizeof p, "%s/%s%s", g_dir, names[i], suffix[j]);
            unlink(p);
        }
    }
    rmdir(g_dir);
}

int main(void)
{
    strcpy(g_dir, "/tmp/md-test-sqlite-engine-XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(g_db, sizeof g_db, "%s/memoryd.db", g_dir);
    struct md_store *a = open_store(g_db, 0);
    test_keys(a);
    write_tenants(a);
    struct md_store *ro = open_store(g_db, 1);
    test_dump(ro);
    test_dump(a);
    test_totals(ro, a);
    test_read_only_writes(ro);
    test_backup(ro);
    md_store_close(ro);
    md_store_close(a);
    test_read_only_refusals();
    test_other_schema();
    cleanup();
    return check_report();
}
