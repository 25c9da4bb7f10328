/*
 * defaults_bound.c — the bound of issue 26's point 4: what memoryd's
 * defaults (history and search) must cost durable writes at the least, by a
 * program that stores only what those features must keep, with SQLite on
 * the same disk and none of memoryd's schema or statements.
 *
 * A fresh database DIR/defaults_bound.db (WAL, synchronous=FULL, 4 KiB
 * pages, as memoryd) holds, in mode `bare`, what memoryd bare must keep:
 *   files (id, path UNIQUE, content)  the live text;
 *   feed (seq, file, time)             the change feed (kept either way);
 * and in mode `defaults` also what history and search must keep:
 *   history (file, seq, delta) WITHOUT ROWID  one row per write: the
 *       reverse splice of md_delta.h that turns the new text back into the
 *       old one (a create: NULL, "did not exist");
 *   words: a contentless FTS5 word index (detail=none), written beside the
 *       writes: every 250 ms a transaction of its own indexes the files
 *       written since (their old text, kept in memory, leaves the index;
 *       the new goes in), as memoryd's writer does.
 * Setup: 512 files of 1 KiB (bench/lib.mjs's kibWith('state=on')), indexed
 * in `defaults`. Then BATCH commands a transaction for SECONDS, of one
 * workload: `str_replace` (the 512 files in turn, `state=on` and
 * `state=off` swapped, as bench/lua/str_replace.lua does) or `create` (a
 * new 1 KiB file a command). Checkpoints run on a thread of their own
 * (passive, every 100 ms), as memoryd's do.
 *
 * Each (workload, mode) prints one JSON line:
 *   {"workload":"str_replace","mode":"defaults","batch":16,"commands":N,
 *    "seconds":S,"per_sec":R}
 *
 *   defaults_bound DIR SECONDS BATCH WORKLOAD MODE
 *
 * Exit: 0, or 1 on a SQLite error (printed), 2 on bad arguments.
 */
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/md_buf.h"
#include "bound.h"
#include "store/md_delta.h"

#define FILES         BOUND_FILES
#define TEXT_MAX      BOUND_TEXT_MAX
#define INDEX_EVERY_S 0.25

static void die(sqlite3 *db, const char *what)
{
    fprintf(stderr, "defaults_bound: %s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
}

static void exec(sqlite3 *db, const char *sql)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        die(db, sql);
}

static sqlite3_stmt *prep(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        die(db, sql);
    return st;
}

static void step_done(sqlite3 *db, sqlite3_stmt *st)
{
    if (sqlite3_step(st) != SQLITE_DONE)
        die(db, sqlite3_sql(st));
    sqlite3_reset(st);
}

/* What the word index has of a file written since the last index step. */
struct noted {
    int64_t id;
    int had_old; /* the index holds `old` for it */
    char old[TEXT_MAX];
    size_t old_len;
};

struct bound {
    sqlite3 *db;
    int defaults;
    sqlite3_stmt *put, *set, *feed, *hist, *word_in, *word_out;
    struct noted *notes;
    size_t nnotes, notes_cap;
    struct bound_texts t;
    int64_t seq;
    atomic_int stop;
};

static void note(struct bound *b, int64_t id, const char *old, size_t old_len)
{
    for (size_t i = 0; i < b->nnotes; i++)
        if (b->notes[i].id == id)
            return; /* the first note keeps what the index holds */
    if (b->nnotes == b->notes_cap) {
        b->notes_cap = b->notes_cap ? 2 * b->notes_cap : 1024;
        b->notes = realloc(b->notes, b->notes_cap * sizeof *b->notes);
        if (!b->notes)
            exit(1);
    }
    struct noted *n = &b->notes[b->nnotes++];
    n->id = id;
    n->had_old = old != NULL;
    n->old_len = old ? old_len : 0;
    if (old)
        memcpy(n->old, old, old_len);
}

/* The noted files out of the word index and back in with their text now,
 * in a transaction of its own. */
static void index_step(struct bound *b)
{
    if (!b->nnotes)
        return;
    exec(b->db, "BEGIN IMMEDIATE");
    for (size_t i = 0; i < b->nnotes; i++) {
        struct noted *n = &b->notes[i];
        if (n->had_old) {
            sqlite3_bind_int64(b->word_out, 1, n->id);
            sqlite3_bind_text(b->word_out, 2, n->old, (int)n->old_len, SQLITE_STATIC);
            step_done(b->db, b->word_out);
        }
        int made = n->id > FILES;
        sqlite3_bind_int64(b->word_in, 1, n->id);
        sqlite3_bind_text(b->word_in, 2, made ? b->t.created : b->t.text[n->id - 1],
                          (int)(made ? b->t.created_len : b->t.len[n->id - 1]), SQLITE_STATIC);
        step_done(b->db, b->word_in);
    }
    exec(b->db, "COMMIT");
    b->nnotes = 0;
}

static void *checkpointer(void *arg)
{
    struct bound *b = arg;
    sqlite3 *db = NULL;
    char *path = strdup(sqlite3_db_filename(b->db, "main"));
    if (sqlite3_open(path, &db) != SQLITE_OK)
        die(db, "open (checkpointer)");
    free(path);
    sqlite3_busy_timeout(db, 5000);
    exec(db, "PRAGMA synchronous=FULL");
    while (!atomic_load(&b->stop)) {
        usleep(100000);
        sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    }
    sqlite3_close(db);
    return NULL;
}

/* One write of the workload: the file's row, the feed's, and with the
 * defaults the history row and the note for the index. */
static void write_one(struct bound *b, int create, int64_t n, struct md_buf *delta)
{
    int64_t id;
    b->seq++;
    if (create) {
        char path[96];
        snprintf(path, sizeof path, "/memories/bench/new/t-%lld.txt", (long long)n);
        id = FILES + n + 1;
        sqlite3_bind_int64(b->put, 1, id);
        sqlite3_bind_text(b->put, 2, path, -1, SQLITE_TRANSIENT);
        sqlite3_bind_blob(b->put, 3, b->t.created, (int)b->t.created_len, SQLITE_STATIC);
        step_done(b->db, b->put);
        if (b->defaults) {
            sqlite3_bind_int64(b->hist, 1, id);
            sqlite3_bind_int64(b->hist, 2, b->seq);
            sqlite3_bind_null(b->hist, 3);
            step_done(b->db, b->hist);
            note(b, id, NULL, 0);
        }
    } else {
        char old[TEXT_MAX];
        size_t len;
        id = bound_str_replace(&b->t, n, old, &len);
        const char *t = b->t.text[id - 1];
        sqlite3_bind_blob(b->set, 1, t, (int)len, SQLITE_STATIC);
        sqlite3_bind_int64(b->set, 2, id);
        step_done(b->db, b->set);
        if (b->defaults) {
            md_buf_reset(delta);
            if (md_delta_make(old, len, t, len, delta) != MD_OK)
                exit(1);
            sqlite3_bind_int64(b->hist, 1, id);
            sqlite3_bind_int64(b->hist, 2, b->seq);
            sqlite3_bind_blob(b->hist, 3, delta->data, (int)delta->len, SQLITE_STATIC);
            step_done(b->db, b->hist);
            note(b, id, old, len);
        }
    }
    sqlite3_bind_int64(b->feed, 1, b->seq);
    sqlite3_bind_int64(b->feed, 2, id);
    sqlite3_bind_int64(b->feed, 3, (int64_t)(bound_now_s() * 1000));
    step_done(b->db, b->feed);
}

int main(int argc, char **argv)
{
    struct bound_args a;
    if (bound_args(argc, argv, "defaults_bound", "DIR", &a) != 0)
        return 2;
    int create = a.create;
    long batch = a.batch;
    double seconds = a.seconds;
    static struct bound b;
    b.defaults = a.defaults;
    char path[4096];
    snprintf(path, sizeof path, "%s/defaults_bound.db", a.where);
    for (const char *sfx = ""; sfx; sfx = *sfx ? (sfx[1] == 'w' ? "-shm" : NULL) : "-wal") {
        char p[4200];
        snprintf(p, sizeof p, "%s%s", path, sfx);
        unlink(p);
    }
    if (sqlite3_open(path, &b.db) != SQLITE_OK)
        die(b.db, "open");
    sqlite3_busy_timeout(b.db, 5000);
    exec(b.db, "PRAGMA page_size=4096; PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
               " PRAGMA wal_autocheckpoint=0;"
               " CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE,"
               " content BLOB NOT NULL);"
               " CREATE TABLE feed (seq INTEGER PRIMARY KEY, file INTEGER NOT NULL,"
               " time INTEGER NOT NULL);");
    if (b.defaults)
        exec(b.db, "CREATE TABLE history (file INTEGER NOT NULL, seq INTEGER NOT NULL,"
                   " delta BLOB, PRIMARY KEY (file, seq)) WITHOUT ROWID;"
                   " CREATE VIRTUAL TABLE words USING fts5(body, content='', detail=none,"
                   " columnsize=0);");
    bound_texts_init(&b.t);
    b.put = prep(b.db, "INSERT INTO files (id, path, content) VALUES (?1, ?2, ?3)");
    b.set = prep(b.db, "UPDATE files SET content = ?1 WHERE id = ?2");
    b.feed = prep(b.db, "INSERT INTO feed (seq, file, time) VALUES (?1, ?2, ?3)");
    if (b.defaults) {
        b.hist = prep(b.db, "INSERT INTO history (file, seq, delta) VALUES (?1, ?2, ?3)");
        b.word_in = prep(b.db, "INSERT INTO words (rowid, body) VALUES (?1, ?2)");
        b.word_out = prep(b.db, "INSERT INTO words (words, rowid, body) VALUES ('delete', ?1, ?2)");
    }
    /* Setup: the 512 files, indexed. */
    exec(b.db, "BEGIN");
    for (int64_t id = 1; id <= FILES; id++) {
        char p[64];
        snprintf(p, sizeof p, "/memories/bench/sr/f%lld.txt", (long long)id - 1);
        sqlite3_bind_int64(b.put, 1, id);
        sqlite3_bind_text(b.put, 2, p, -1, SQLITE_TRANSIENT);
        sqlite3_bind_blob(b.put, 3, b.t.text[id - 1], (int)b.t.len[id - 1], SQLITE_STATIC);
        step_done(b.db, b.put);
        if (b.defaults) {
            sqlite3_bind_int64(b.word_in, 1, id);
            sqlite3_bind_text(b.word_in, 2, b.t.text[id - 1], (int)b.t.len[id - 1], SQLITE_STATIC);
            step_done(b.db, b.word_in);
        }
    }
    exec(b.db, "COMMIT");
    sqlite3_wal_checkpoint_v2(b.db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);

    pthread_t ckpt;
    if (pthread_create(&ckpt, NULL, checkpointer, &b) != 0)
        return 1;
    struct md_buf delta;
    md_buf_init(&delta, 1 << 16);
    int64_t n = 0;
    double t0 = bound_now_s(), indexed = t0, t;
    while ((t = bound_now_s()) - t0 < seconds) {
        exec(b.db, "BEGIN IMMEDIATE");
        for (long i = 0; i < batch; i++)
            write_one(&b, create, n++, &delta);
        exec(b.db, "COMMIT");
        if (b.defaults && t - indexed >= INDEX_EVERY_S) {
            index_step(&b);
            indexed = t;
        }
    }
    double took = bound_now_s() - t0;
    atomic_store(&b.stop, 1);
    pthread_join(ckpt, NULL);
    bound_report(&a, n, took);
    md_buf_free(&delta);
    sqlite3_stmt *all[] = {b.put, b.set, b.feed, b.hist, b.word_in, b.word_out};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sqlite3_finalize(all[i]);
    sqlite3_close(b.db);
    free(b.notes);
    return 0;
}
