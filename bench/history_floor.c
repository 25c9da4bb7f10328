/*
 * history_floor.c — the storage floor of history: what recording versions
 * costs durable SQLite writes on this disk, in-process, with memoryd's
 * schema and settings and no HTTP at all (floor.c measures creates alone).
 *
 * Every run starts from a fresh database DIR/history_floor.db, created and
 * migrated by memoryd's own md_engine_sqlite.open (all of sql/sqlite/), then
 * written through one connection with the writer's settings of sq_conn_open
 * and writer_setup in src/store/sqlite/conn.c (synchronous=FULL,
 * foreign_keys=OFF, WAL, wal_autocheckpoint=0, journal_size_limit,
 * secure_delete=ON) and memoryd's statements, copied verbatim and prepared
 * once. Checkpoints are memoryd's too: a thread of their own on its own
 * connection, passive, once the WAL holds 8192 frames, the writer copying
 * the last few before its next transaction (ckpt_main and sq_ckpt_catch_up
 * in src/store/sqlite/checkpoint.c).
 *
 * Setup: tenant 1 ("bench") with the directories /memories,
 * /memories/bench, /memories/bench/sr and /memories/bench/new, and 512 files
 * /memories/bench/sr/f<i>.txt of 1 KiB (16 lines of 63 letters and a
 * newline, bench/lua/common.lua's kib_text) with their SHA-256; then a
 * checkpoint. Then BATCH commands a transaction (BEGIN IMMEDIATE ... COMMIT)
 * for SECONDS, of one workload:
 *   str_replace  a random one of the 512 files gets a new content: read as
 *                memoryd reads it to edit it (S_GET), one byte changed, the
 *                new SHA-256 computed, written with S_SET_CONTENT (same
 *                size: no directory size changes);
 *   create       a new 1 KiB file in /memories/bench/new: the parent
 *                checked (S_GET_META), the SHA-256 computed, the row
 *                inserted (S_INSERT); once per transaction the new bytes
 *                added to the three ancestors (S_ADD_SIZE), as memoryd's
 *                writer writes each directory's size once per batch;
 * and one history mode:
 *   off          the above only;
 *   feed         what memoryd writes with history off: the change feed
 *                (its cmd_end runs for every write): one S_CHANGE_INSERT
 *                row per command, and the tenant's counters read once per
 *                transaction (S_COUNTERS_GET) and written back before the
 *                commit (S_COUNTERS_SET);
 *   on           feed, plus a version per command before the entry is
 *                written: S_VER_ONE (the old content copied by INSERT ...
 *                SELECT FROM entries) for a str_replace, S_VER_ABSENT for a
 *                create; the change row says versions=1 and history_bytes
 *                = the old size (0 for a create);
 *   on-noindex   on, with the versions_path index dropped first: the bound
 *                of any layout that must still write the old content once.
 * Left out, in every mode: the savepoint memoryd's writer runs each command
 * in (SAVEPOINT/RELEASE), a create's lookup of its own path, and pruning,
 * which memoryd runs in the background (the writer's retention pass every
 * 100 ms; versions beyond 20 a file by default): here versions only pile
 * up, so a long run of `on` costs less than memoryd's steady state, which
 * also deletes about one old version per new one.
 *
 * Each (workload, mode) prints one JSON line, with the CPU time (user and
 * system of the whole process, the checkpoints and the hashing included)
 * and the WAL bytes (frames of page size + 24) it took per command:
 *   {"workload":"str_replace","mode":"on","batch":32,"commands":N,"seconds":S,
 *    "per_sec":R,"cpu_us_per_command":C,"wal_bytes_per_command":W}
 *
 *   history_floor DIR [SECONDS [BATCH]] [--only WORKLOAD:MODE]
 *
 * SECONDS defaults to 5, BATCH to 32. Use the directory memoryd's database
 * lives in, so both measure the same disk.
 */
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "base/md_sha256.h"
#include "store/sqlite/md_store_sqlite.h"

enum workload { W_STR_REPLACE, W_CREATE, W_COUNT };
enum mode { M_OFF, M_FEED, M_ON, M_ON_NOINDEX, M_COUNT };
static const char *const WORKLOAD[W_COUNT] = {"str_replace", "create"};
static const char *const MODE[M_COUNT] = {"off", "feed", "on", "on-noindex"};

enum {
    Q_BEGIN,
    Q_COMMIT,
    Q_GET,
    Q_GET_META,
    Q_INSERT,
    Q_SET_CONTENT,
    Q_ADD_SIZE,
    Q_COUNTERS_GET,
    Q_COUNTERS_SET,
    Q_VER_ONE,
    Q_VER_ABSENT,
    Q_CHANGE_INSERT,
    Q_COUNT
};

/* memoryd's statements (the tables of src/store/sqlite/txn.c, sizes.c,
 * entries.c, tree.c and history.c), verbatim. */
/* NOLINTBEGIN(bugprone-suspicious-missing-comma): statements over several lines */
static const char *const SQL[Q_COUNT] = {
    [Q_BEGIN] = "BEGIN IMMEDIATE",
    [Q_COMMIT] = "COMMIT",
    [Q_GET] = "SELECT kind, size, sha256, content FROM entries WHERE tenant = ?1 AND path = ?2",
    [Q_GET_META] = "SELECT kind, size, sha256 FROM entries WHERE tenant = ?1 AND path = ?2",
    [Q_INSERT] = "INSERT INTO entries (tenant, path, depth, kind, size, mtime, content, sha256)"
                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [Q_SET_CONTENT] = "UPDATE entries SET content = ?3, size = ?4, mtime = ?5, sha256 = ?6"
                      " WHERE tenant = ?1 AND path = ?2 AND kind = 0",
    [Q_ADD_SIZE] = "UPDATE entries SET size = size + ?3 WHERE tenant = ?1 AND path = ?2",
    [Q_COUNTERS_GET] = "SELECT last_version, last_seq FROM tenants WHERE id = ?1",
    [Q_COUNTERS_SET] = "UPDATE tenants SET last_version = ?2, last_seq = ?3 WHERE id = ?1",
    [Q_VER_ONE] = "INSERT INTO versions (tenant, version, path, existed, sha256, size, time,"
                  " command, actor, content) SELECT tenant, ?3, path, 1, sha256, size, ?4, ?5, ?6,"
                  " content FROM entries WHERE tenant = ?1 AND path = ?2 AND kind = 0",
    [Q_VER_ABSENT] = "INSERT INTO versions (tenant, version, path, existed, time, command, actor)"
                     " VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6)",
    [Q_CHANGE_INSERT] = "INSERT INTO changes (tenant, seq, version, versions, history_bytes, time,"
                        " command, paths, actor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
};
/* NOLINTEND(bugprone-suspicious-missing-comma) */

/* The writer connection's settings (sq_conn_open and writer_setup in
 * src/store/sqlite/conn.c, with durability full), verbatim. */
#define WRITER_SETTINGS                                                                            \
    "PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF;"                                            \
    " PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;"                                       \
    " PRAGMA journal_size_limit=67108864; PRAGMA secure_delete=ON;"
#define BUSY_TIMEOUT_MS 5000

/* memoryd's checkpoint thresholds (src/store/sqlite/checkpoint.c). */
#define CKPT_BUSY_PAGES     8192
#define CKPT_CATCHUP_FRAMES 256
#define CKPT_MAX_PASSES     8

#define FILES 512
#define KIB   1024
#define SR    "/memories/bench/sr"
#define NEW   "/memories/bench/new"

static sqlite3 *db;
static sqlite3_stmt *st[Q_COUNT];

/* The checkpointer: its connection, and what the writer's WAL hook tells it. */
static sqlite3 *ckpt_db;
static pthread_t ckpt_thread;
static pthread_mutex_t ckpt_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ckpt_cv = PTHREAD_COND_INITIALIZER;
static int ckpt_stop, wal_pages;
static atomic_int ckpt_catchup;
/* Frames the writer appended to the WAL (its thread only). */
static long long wal_frames;
static int wal_last;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* CPU time (user + system) this process has used, in seconds. */
static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void check(sqlite3 *d, int rc, const char *what)
{
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "history_floor: %s: %s\n", what,
                d ? sqlite3_errmsg(d) : sqlite3_errstr(rc));
        exit(1);
    }
}

static int step(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    check(db, rc, sqlite3_sql(s));
    sqlite3_reset(s);
    return rc;
}

static void sha256(const void *p, size_t n, unsigned char out[MD_SHA256_LEN])
{
    if (md_sha256(p, n, out) != MD_OK) {
        fprintf(stderr, "history_floor: sha256 failed\n");
        exit(1);
    }
}

/* ---- checkpoints, as memoryd's checkpointer runs them ---- */

/* The WAL restarts only after a checkpoint that began at CKPT_BUSY_PAGES or
 * more, so a count lower than the last one means it has restarted. */
static int wal_hook(void *arg, sqlite3 *d, const char *name, int pages)
{
    (void)arg;
    (void)d;
    (void)name;
    wal_frames += pages >= wal_last ? pages - wal_last : pages;
    wal_last = pages;
    pthread_mutex_lock(&ckpt_mu);
    wal_pages = pages;
    if (pages >= CKPT_BUSY_PAGES)
        pthread_cond_signal(&ckpt_cv);
    pthread_mutex_unlock(&ckpt_mu);
    return SQLITE_OK;
}

static void *ckpt_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&ckpt_mu);
    while (!ckpt_stop) {
        if (wal_pages < CKPT_BUSY_PAGES || atomic_load(&ckpt_catchup)) {
            pthread_cond_wait(&ckpt_cv, &ckpt_mu);
            continue;
        }
        wal_pages = 0;
        pthread_mutex_unlock(&ckpt_mu);
        int log = 0, done = 0, before = 0, rc;
        for (int pass = 0;; pass++) {
            rc = sqlite3_wal_checkpoint_v2(ckpt_db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
            if (rc != SQLITE_OK || log - before < CKPT_CATCHUP_FRAMES ||
                pass + 1 >= CKPT_MAX_PASSES)
                break;
            before = log;
        }
        if (rc != SQLITE_OK && rc != SQLITE_BUSY)
            check(ckpt_db, rc, "checkpoint");
        if (rc == SQLITE_OK && done == log)
            atomic_store(&ckpt_catchup, 1);
        pthread_mutex_lock(&ckpt_mu);
    }
    pthread_mutex_unlock(&ckpt_mu);
    return NULL;
}

/* Before a write transaction: the writer's part of a busy checkpoint. */
static void begin(void)
{
    if (atomic_exchange(&ckpt_catchup, 0)) {
        int rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        if (rc != SQLITE_BUSY)
            check(db, rc, "checkpoint catch-up");
    }
    step(st[Q_BEGIN]);
}

/* ---- the commands ---- */

/* 1 KiB of text: 16 lines of 63 letters and a newline. */
static char KIB_TEXT[KIB];
static unsigned char KIB_SHA[MD_SHA256_LEN];

static uint64_t rng_state;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* The tenant's counters in the open transaction (memoryd's md_hist). */
struct counters {
    int64_t last_version, last_seq;
};

static void counters_get(struct counters *c)
{
    sqlite3_stmt *s = st[Q_COUNTERS_GET];
    sqlite3_bind_int64(s, 1, 1);
    int rc = sqlite3_step(s);
    check(db, rc, sqlite3_sql(s));
    if (rc != SQLITE_ROW) {
        fprintf(stderr, "history_floor: no tenant\n");
        exit(1);
    }
    c->last_version = sqlite3_column_int64(s, 0);
    c->last_seq = sqlite3_column_int64(s, 1);
    sqlite3_reset(s);
}

static void counters_set(const struct counters *c)
{
    sqlite3_stmt *s = st[Q_COUNTERS_SET];
    sqlite3_bind_int64(s, 1, 1);
    sqlite3_bind_int64(s, 2, c->last_version);
    sqlite3_bind_int64(s, 3, c->last_seq);
    step(s);
}

/* One change-feed row (sq_cmd_end); version 0: none recorded. */
static void change(struct counters *c, const char *command, const char *path, int len,
                   int64_t version, int64_t history_bytes, int64_t time_ms)
{
    sqlite3_stmt *s = st[Q_CHANGE_INSERT];
    sqlite3_bind_int64(s, 1, 1);
    sqlite3_bind_int64(s, 2, ++c->last_seq);
    if (version)
        sqlite3_bind_int64(s, 3, version);
    else
        sqlite3_bind_null(s, 3);
    sqlite3_bind_int64(s, 4, version ? 1 : 0);
    sqlite3_bind_int64(s, 5, history_bytes);
    sqlite3_bind_int64(s, 6, time_ms);
    sqlite3_bind_text(s, 7, command, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 8, path, len, SQLITE_STATIC);
    sqlite3_bind_null(s, 9);
    step(s);
}

static void str_replace_one(enum mode m, struct counters *c)
{
    char path[64];
    int len = snprintf(path, sizeof path, SR "/f%d.txt", (int)(rng() % FILES));
    int64_t t = wall_ms();

    /* Read it as memoryd does to edit it, and change one letter. */
    char content[KIB];
    sqlite3_stmt *s = st[Q_GET];
    sqlite3_bind_int64(s, 1, 1);
    sqlite3_bind_text(s, 2, path, len, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    check(db, rc, sqlite3_sql(s));
    if (rc != SQLITE_ROW || sqlite3_column_int(s, 0) != 0 || sqlite3_column_bytes(s, 3) != KIB) {
        fprintf(stderr, "history_floor: %s is not a 1 KiB file\n", path);
        exit(1);
    }
    int64_t old_size = sqlite3_column_int64(s, 1);
    memcpy(content, sqlite3_column_blob(s, 3), KIB);
    sqlite3_reset(s);
    size_t at = (size_t)(rng() % KIB);
    if (content[at] == '\n')
        at--;
    /* One letter changed to the next (z to a): the size stays. */
    static const char next[] = "bcdefghijklmnopqrstuvwxyza";
    if (content[at] >= 'a' && content[at] <= 'z')
        content[at] = next[content[at] - 'a'];
    unsigned char sha[MD_SHA256_LEN];
    sha256(content, KIB, sha);

    int64_t version = 0;
    if (m >= M_ON) {
        version = ++c->last_version;
        s = st[Q_VER_ONE];
        sqlite3_bind_int64(s, 1, 1);
        sqlite3_bind_text(s, 2, path, len, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, version);
        sqlite3_bind_int64(s, 4, t);
        sqlite3_bind_text(s, 5, "str_replace", -1, SQLITE_STATIC);
        sqlite3_bind_null(s, 6);
        step(s);
        if (sqlite3_changes(db) != 1) {
            fprintf(stderr, "history_floor: no version of %s\n", path);
            exit(1);
        }
    }
    s = st[Q_SET_CONTENT];
    sqlite3_bind_int64(s, 1, 1);
    sqlite3_bind_text(s, 2, path, len, SQLITE_STATIC);
    sqlite3_bind_blob(s, 3, content, KIB, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, KIB);
    sqlite3_bind_int64(s, 5, wall_ms());
    sqlite3_bind_blob(s, 6, sha, MD_SHA256_LEN, SQLITE_STATIC);
    step(s);
    if (m >= M_FEED)
        change(c, "str_replace", path, len, version, version ? old_size : 0, t);
}

static void create_one(enum mode m, struct counters *c, long n)
{
    char path[64];
    int len = snprintf(path, sizeof path, NEW "/f%ld.txt", n);
    int64_t t = wall_ms();
    sqlite3_stmt *s = st[Q_GET_META];
    sqlite3_bind_int64(s, 1, 1);
    sqlite3_bind_text(s, 2, NEW, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    check(db, rc, sqlite3_sql(s));
    if (rc != SQLITE_ROW || sqlite3_column_int(s, 0) != 1) {
        fprintf(stderr, "history_floor: no directory " NEW "\n");
        exit(1);
    }
    sqlite3_reset(s);
    unsigned char sha[MD_SHA256_LEN];
    sha256(KIB_TEXT, KIB, sha); /* memoryd hashes every create's content */

    int64_t version = 0;
    if (m >= M_ON) {
        version = ++c->last_version;
        s = st[Q_VER_ABSENT];
        sqlite3_bind_int64(s, 1, 1);
        sqlite3_bind_int64(s, 2, version);
        sqlite3_bind_text(s, 3, path, len, SQLITE_STATIC);
        sqlite3_bind_int64(s, 4, t);
        sqlite3_bind_text(s, 5, "create", -1, SQLITE_STATIC);
        sqlite3_bind_null(s, 6);
        step(s);
    }
    s = st[Q_INSERT];
    sqlite3_bind_int64(s, 1, 1);
    sqlite3_bind_text(s, 2, path, len, SQLITE_STATIC);
    sqlite3_bind_int(s, 3, 3);
    sqlite3_bind_int(s, 4, 0);
    sqlite3_bind_int64(s, 5, KIB);
    sqlite3_bind_int64(s, 6, wall_ms());
    sqlite3_bind_blob(s, 7, KIB_TEXT, KIB, SQLITE_STATIC);
    sqlite3_bind_blob(s, 8, sha, MD_SHA256_LEN, SQLITE_STATIC);
    step(s);
    if (m >= M_FEED)
        change(c, "create", path, len, version, 0, t);
}

/* The size of `files` new files added to the three ancestors, once per
 * transaction as memoryd's writer does for a batch. */
static void add_sizes(int files)
{
    const char *dirs[3] = {NEW, "/memories/bench", "/memories"};
    for (int i = 0; i < 3; i++) {
        sqlite3_bind_int64(st[Q_ADD_SIZE], 1, 1);
        sqlite3_bind_text(st[Q_ADD_SIZE], 2, dirs[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(st[Q_ADD_SIZE], 3, (sqlite3_int64)files * KIB);
        step(st[Q_ADD_SIZE]);
    }
}

/* ---- a run ---- */

static void insert_entry(const char *path, int depth, int kind, int64_t size)
{
    sqlite3_stmt *s = st[Q_INSERT];
    sqlite3_bind_int64(s, 1, 1);
    sqlite3_bind_text(s, 2, path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 3, depth);
    sqlite3_bind_int(s, 4, kind);
    sqlite3_bind_int64(s, 5, size);
    sqlite3_bind_int64(s, 6, wall_ms());
    if (kind == 0) {
        sqlite3_bind_blob(s, 7, KIB_TEXT, KIB, SQLITE_STATIC);
        sqlite3_bind_blob(s, 8, KIB_SHA, MD_SHA256_LEN, SQLITE_STATIC);
    } else {
        sqlite3_bind_null(s, 7);
        sqlite3_bind_null(s, 8);
    }
    step(s);
}

static void setup(void)
{
    step(st[Q_BEGIN]);
    check(db,
          sqlite3_exec(db, "INSERT INTO tenants (id, name, created_at) VALUES (1, 'bench', 0)",
                       NULL, NULL, NULL),
          "tenant");
    insert_entry("/memories", 0, 1, (int64_t)FILES * KIB);
    insert_entry("/memories/bench", 1, 1, (int64_t)FILES * KIB);
    insert_entry(SR, 2, 1, (int64_t)FILES * KIB);
    insert_entry(NEW, 2, 1, 0);
    for (int i = 0; i < FILES; i++) {
        char path[64];
        snprintf(path, sizeof path, SR "/f%d.txt", i);
        insert_entry(path, 3, 0, KIB);
    }
    step(st[Q_COMMIT]);
    check(db, sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL),
          "checkpoint after setup");
}

static void remove_db(const char *path)
{
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
}

static void run(const char *path, enum workload w, enum mode m, int batch, double seconds)
{
    remove_db(path);
    /* memoryd's own code creates the schema, so it is exactly memoryd's. */
    /* Without the search index, as bench/history.mjs runs memoryd (--search
     * off): bench/search.mjs prices the index. */
    struct md_store_config cfg = {.db = path,
                                  .durability = MD_DURABILITY_FULL,
                                  .busy_timeout_ms = BUSY_TIMEOUT_MS,
                                  .search = MD_SEARCH_OFF};
    struct md_store *store = NULL;
    char why[512];
    if (md_engine_sqlite.open(&cfg, NULL, &store, why, sizeof why) != MD_OK) {
        fprintf(stderr, "history_floor: %s\n", why);
        exit(1);
    }
    md_store_close(store);

    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    check(db, sqlite3_open_v2(path, &db, flags, NULL), "open");
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
    check(db, sqlite3_exec(db, WRITER_SETTINGS, NULL, NULL, NULL), WRITER_SETTINGS);
    if (m == M_ON_NOINDEX)
        check(db, sqlite3_exec(db, "DROP INDEX versions_path", NULL, NULL, NULL), "drop index");
    for (int i = 0; i < Q_COUNT; i++)
        check(db, sqlite3_prepare_v3(db, SQL[i], -1, SQLITE_PREPARE_PERSISTENT, &st[i], NULL),
              SQL[i]);
    int page_size = 0;
    sqlite3_stmt *ps = NULL;
    check(db, sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &ps, NULL), "page_size");
    if (sqlite3_step(ps) == SQLITE_ROW)
        page_size = sqlite3_column_int(ps, 0);
    sqlite3_finalize(ps);
    setup();

    check(ckpt_db,
          sqlite3_open_v2(path, &ckpt_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL),
          "open");
    sqlite3_busy_timeout(ckpt_db, BUSY_TIMEOUT_MS);
    check(ckpt_db, sqlite3_exec(ckpt_db, "PRAGMA synchronous=FULL", NULL, NULL, NULL), "pragma");
    ckpt_stop = 0;
    wal_pages = 0;
    atomic_store(&ckpt_catchup, 0);
    sqlite3_wal_hook(db, wal_hook, NULL);
    if (pthread_create(&ckpt_thread, NULL, ckpt_main, NULL) != 0) {
        fprintf(stderr, "history_floor: cannot start the checkpoint thread\n");
        exit(1);
    }

    rng_state = 0x9E3779B97F4A7C15ULL;
    wal_frames = 0;
    wal_last = 0;
    long commands = 0, next_file = 0;
    double c0 = cpu_seconds();
    double t0 = now(), t = t0;
    while (t - t0 < seconds) {
        struct counters c = {0, 0};
        begin();
        for (int i = 0; i < batch; i++) {
            /* The counters are read by the transaction's first command. */
            if (i == 0 && m >= M_FEED)
                counters_get(&c);
            if (w == W_STR_REPLACE)
                str_replace_one(m, &c);
            else
                create_one(m, &c, next_file++);
        }
        if (w == W_CREATE)
            add_sizes(batch);
        if (m >= M_FEED)
            counters_set(&c);
        step(st[Q_COMMIT]);
        commands += batch;
        t = now();
    }
    double cpu = cpu_seconds() - c0;
    printf("{\"workload\":\"%s\",\"mode\":\"%s\",\"batch\":%d,\"commands\":%ld,\"seconds\":%.3f,"
           "\"per_sec\":%.0f,\"cpu_us_per_command\":%.2f,\"wal_bytes_per_command\":%.0f}\n",
           WORKLOAD[w], MODE[m], batch, commands, t - t0, (double)commands / (t - t0),
           cpu * 1e6 / (double)commands, (double)wal_frames * (page_size + 24) / (double)commands);
    fflush(stdout);

    pthread_mutex_lock(&ckpt_mu);
    ckpt_stop = 1;
    pthread_cond_signal(&ckpt_cv);
    pthread_mutex_unlock(&ckpt_mu);
    pthread_join(ckpt_thread, NULL);
    sqlite3_close(ckpt_db);
    ckpt_db = NULL;
    for (int i = 0; i < Q_COUNT; i++)
        sqlite3_finalize(st[i]);
    sqlite3_close(db);
    db = NULL;
    remove_db(path);
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *only = NULL;
    double seconds = 5.0;
    int batch = 32, positional = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (positional == 0)
            dir = argv[i];
        else if (positional == 1)
            seconds = strtod(argv[i], NULL);
        else if (positional == 2)
            batch = (int)strtol(argv[i], NULL, 10);
        if (argv[i] != only)
            positional++;
    }
    if (!dir || positional > 3 || seconds <= 0 || batch < 1) {
        fprintf(stderr, "usage: history_floor DIR [SECONDS [BATCH]] [--only WORKLOAD:MODE]\n"
                        "  WORKLOAD: str_replace, create; MODE: off, feed, on, on-noindex\n");
        return 2;
    }
    for (size_t i = 0; i < KIB; i++)
        KIB_TEXT[i] = (char)(i % 64 == 63 ? '\n' : 'a' + i % 64 % 9);
    sha256(KIB_TEXT, KIB, KIB_SHA);
    char path[4096];
    snprintf(path, sizeof path, "%s/history_floor.db", dir);

    int ran = 0;
    for (int w = 0; w < W_COUNT; w++) {
        for (int m = 0; m < M_COUNT; m++) {
            char name[64];
            snprintf(name, sizeof name, "%s:%s", WORKLOAD[w], MODE[m]);
            if (only && strcmp(only, name) != 0)
                continue;
            run(path, (enum workload)w, (enum mode)m, batch, seconds);
            ran++;
        }
    }
    if (!ran) {
        fprintf(stderr, "history_floor: no run named %s\n", only);
        return 2;
    }
    return 0;
}
