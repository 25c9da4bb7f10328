/*
 * floor.c — the storage floor for memoryd's benchmark: how fast durable
 * SQLite writes can go on this disk, in-process, with memoryd's schema and
 * settings (WAL, synchronous=FULL, the same statements prepared once), and
 * no HTTP at all, and without the full-text search index.
 *
 * A "write" is what memoryd's `create` of a new 1 KiB file runs for the
 * benchmark's creates (/memories/bench/<dir>/<file>, in an existing
 * directory, the tenant's id known): check the parent is a directory,
 * insert the file row (which fails if the path is taken); then, once per
 * transaction, add the new files' size to their three ancestors (memoryd's
 * writer writes each directory's size once per batch). Measured two ways:
 *   per-write  one transaction and one flush per write (what a server
 *              without group commit can do at best);
 *   batched    100 writes per transaction (what group commit can reach).
 * Each runs for SECONDS and prints one JSON line, with the CPU time (user
 * and system, checkpoints included) it took per write:
 *   {"mode":"per-write","writes":N,"seconds":S,"per_sec":R,"cpu_us_per_write":C}
 *
 *   floor DIR [SECONDS]
 *
 * The database is DIR/floor.db (removed first); use the directory memoryd's
 * database lives in, so both measure the same disk.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "store/sqlite/md_store_sqlite.h"

enum { Q_PARENT, Q_INSERT, Q_SIZE, Q_BEGIN, Q_COMMIT, Q_COUNT };

static const char *const SQL[Q_COUNT] = {
    [Q_PARENT] = "SELECT kind, size FROM entries WHERE tenant = ?1 AND path = ?2",
    /* NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one statement over two lines */
    [Q_INSERT] = "INSERT INTO entries (tenant, path, depth, kind, size, mtime, content, sha256)"
                 " VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6, ?7)",
    [Q_SIZE] = "UPDATE entries SET size = size + ?3 WHERE tenant = ?1 AND path = ?2",
    [Q_BEGIN] = "BEGIN IMMEDIATE",
    [Q_COMMIT] = "COMMIT",
};

static sqlite3 *db;
static sqlite3_stmt *st[Q_COUNT];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void check(int rc, const char *what)
{
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "floor: %s: %s\n", what, sqlite3_errmsg(db));
        exit(1);
    }
}

static int step(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    check(rc, sqlite3_sql(s));
    sqlite3_reset(s);
    return rc;
}

/* The content of every file: 1 KiB, like the benchmark's creates. */
static char CONTENT[1024 + 1];

#define DIR "/memories/bench/floor"

/* One create of DIR/f<n>.txt, as memoryd runs it. */
static void write_one(long n)
{
    char path[64];
    int len = snprintf(path, sizeof path, DIR "/f%ld.txt", n);
    sqlite3_bind_int64(st[Q_PARENT], 1, 1);
    sqlite3_bind_text(st[Q_PARENT], 2, DIR, -1, SQLITE_STATIC);
    if (step(st[Q_PARENT]) != SQLITE_ROW) {
        fprintf(stderr, "floor: no directory " DIR "\n");
        exit(1);
    }
    sqlite3_bind_int64(st[Q_INSERT], 1, 1);
    sqlite3_bind_text(st[Q_INSERT], 2, path, len, SQLITE_STATIC);
    sqlite3_bind_int(st[Q_INSERT], 3, 3);
    sqlite3_bind_int64(st[Q_INSERT], 4, (sqlite3_int64)sizeof CONTENT - 1);
    sqlite3_bind_int64(st[Q_INSERT], 5, (sqlite3_int64)time(NULL) * 1000);
    sqlite3_bind_blob(st[Q_INSERT], 6, CONTENT, (int)sizeof CONTENT - 1, SQLITE_STATIC);
    /* The content's SHA-256, stored as memoryd stores it (the hashing is
     * memoryd's CPU, not the storage's: a constant here). */
    static const unsigned char sha[32] = {1};
    sqlite3_bind_blob(st[Q_INSERT], 7, sha, (int)sizeof sha, SQLITE_STATIC);
    step(st[Q_INSERT]);
}

/* The size of `files` new files added to the three ancestors, once per
 * transaction as memoryd's writer does for a batch. */
static void add_sizes(int files)
{
    const char *dirs[3] = {DIR, "/memories/bench", "/memories"};
    for (int i = 0; i < 3; i++) {
        sqlite3_bind_int64(st[Q_SIZE], 1, 1);
        sqlite3_bind_text(st[Q_SIZE], 2, dirs[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(st[Q_SIZE], 3,
                           (sqlite3_int64)files * ((sqlite3_int64)sizeof CONTENT - 1));
        step(st[Q_SIZE]);
    }
}

static long next_file;

/* CPU time (user + system) this process has used, in seconds. */
static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void measure(const char *mode, int per_txn, double seconds)
{
    long writes = 0;
    double c0 = cpu_seconds();
    double t0 = now(), t = t0;
    while (t - t0 < seconds) {
        step(st[Q_BEGIN]);
        for (int i = 0; i < per_txn; i++)
            write_one(next_file++);
        add_sizes(per_txn);
        step(st[Q_COMMIT]);
        writes += per_txn;
        t = now();
    }
    double cpu = cpu_seconds() - c0;
    printf("{\"mode\":\"%s\",\"per_txn\":%d,\"writes\":%ld,\"seconds\":%.3f,\"per_sec\":%.0f,"
           "\"cpu_us_per_write\":%.2f}\n",
           mode, per_txn, writes, t - t0, (double)writes / (t - t0), cpu * 1e6 / (double)writes);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: floor DIR [SECONDS]\n");
        return 2;
    }
    double seconds = argc > 2 ? strtod(argv[2], NULL) : 5.0;
    for (size_t i = 0; i < sizeof CONTENT - 1; i++)
        CONTENT[i] = (char)((i + 1) % 64 == 0 ? '\n' : 'a' + i % 26);
    char path[4096];
    snprintf(path, sizeof path, "%s/floor.db", argv[1]);
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }

    /* memoryd's own code creates the schema, so it is exactly memoryd's. */
    /* Without the search index (--search off: its triggers dropped): the
     * floor of memoryd's own statements; bench/search.mjs prices the index. */
    struct md_store_config cfg = {.db = path,
                                  .durability = MD_DURABILITY_FULL,
                                  .busy_timeout_ms = 5000,
                                  .search = MD_SEARCH_OFF};
    struct md_store *store = NULL;
    char why[512];
    if (md_engine_sqlite.open(&cfg, NULL, &store, why, sizeof why) != MD_OK) {
        fprintf(stderr, "floor: %s\n", why);
        return 1;
    }
    md_store_close(store);

    check(sqlite3_open(path, &db), "open");
    check(sqlite3_exec(db,
                       "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                       " INSERT INTO tenants (id, name, created_at) VALUES (1, 'bench', 0);"
                       " INSERT INTO entries (tenant, path, depth, kind, size, mtime, sha256, "
                       "content) VALUES (1, '/memories', 0, 1, 0, 0, NULL, NULL);"
                       " INSERT INTO entries (tenant, path, depth, kind, size, mtime, sha256, "
                       "content) VALUES (1, '/memories/bench', 1, 1, 0, 0, NULL, NULL);"
                       " INSERT INTO entries (tenant, path, depth, kind, size, mtime, sha256, "
                       "content) VALUES (1, '" DIR "', 2, 1, 0, 0, NULL, NULL);",
                       NULL, NULL, NULL),
          "setup");
    for (int i = 0; i < Q_COUNT; i++)
        check(sqlite3_prepare_v3(db, SQL[i], -1, SQLITE_PREPARE_PERSISTENT, &st[i], NULL), SQL[i]);

    measure("per-write", 1, seconds);
    measure("batched", 100, seconds);

    for (int i = 0; i < Q_COUNT; i++)
        sqlite3_finalize(st[i]);
    sqlite3_close(db);
    for (int i = 0; i < 3; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
    return 0;
}
