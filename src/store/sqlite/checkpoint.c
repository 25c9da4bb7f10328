/*
 * checkpoint.c — WAL checkpoints of the SQLite engine (see internal.h).
 *
 * A checkpointer thread with a connection of its own copies the WAL into
 * the database file, so checkpoints never run on the write path, but for
 * the last few frames of a busy one (ckpt_catchup: the writer copies them
 * before its next transaction, so that the WAL can start over). After a
 * commit that redacted or erased content, the writer itself empties the
 * WAL (sq_scrub_wal). The writer's WAL hook tells the thread how full the
 * WAL is (store.c hands it to conn.c, which sets it on the writer). When
 * writes pause, the thread also merges the search index's segments and
 * gives free pages back to the file system.
 *
 * Errors: a failed checkpoint is logged and tried again later; starting
 * the thread answers a SQLite result code with the reason in `why`.
 */
#include <stdio.h>
#include <sys/stat.h>

#include "base/md_clock.h"
#include "internal.h"

/* Checkpoints: when writes pause (no commit for CKPT_IDLE_MS), and during
 * sustained writes once the WAL holds CKPT_BUSY_PAGES frames. A checkpoint
 * flushes the database file; done often while commits flush the WAL, the
 * two flushes compete for the disk and every commit waits longer. */
#define CKPT_IDLE_MS    250
#define CKPT_BUSY_PAGES 8192
/* A busy checkpoint runs passes until fewer than this many frames were
 * committed during the last one (at most CKPT_MAX_PASSES): what is left
 * for the writer to copy is small. */
#define CKPT_CATCHUP_FRAMES 256
#define CKPT_MAX_PASSES     8

int sq_wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    (void)db;
    (void)name;
    struct sq_store *s = arg;
    pthread_mutex_lock(&s->ckpt_mu);
    s->wal_pages = pages;
    clock_gettime(CLOCK_MONOTONIC, &s->last_commit);
    if (pages >= CKPT_BUSY_PAGES)
        pthread_cond_signal(&s->ckpt_cv);
    pthread_mutex_unlock(&s->ckpt_mu);
    return SQLITE_OK;
}

/* The writer's part of a busy checkpoint (see ckpt_catchup); write_mu is
 * held, so no frame is added meanwhile. With every frame copied, the next
 * write transaction starts the WAL over, unless a reader is using it right
 * then (SQLite then keeps appending; the next busy checkpoint asks again). */
void sq_ckpt_catch_up(struct sq_store *s)
{
    sq_readers_end_snapshots(s);
    int rc = sqlite3_wal_checkpoint_v2(s->writer->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY) /* BUSY: the checkpointer is at it again */
        sq_log(s->writer->db, rc, "checkpoint catch-up");
}

/* After a commit that redacted content (write_mu held): copy every frame
 * into the database file, where secure_delete has zeroed the old bytes,
 * and empty the WAL, which still holds the pages as they were. Readers'
 * kept snapshots are ended first; a reader in the middle of a request or
 * the checkpointer at work makes it try again, for up to about a second;
 * failing that, the next commit tries again. */
void sq_scrub_wal(struct sq_store *s)
{
    int rc = SQLITE_BUSY;
    for (int attempt = 0; attempt < 100 && (rc & 0xff) == SQLITE_BUSY; attempt++) {
        if (attempt) {
            struct timespec pause = {0, 10000000L}; /* 10 ms */
            nanosleep(&pause, NULL);
        }
        sq_readers_end_snapshots(s);
        rc = sqlite3_wal_checkpoint_v2(s->writer->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    }
    if (rc == SQLITE_OK)
        s->scrub_wal = 0;
    else
        sq_log(s->writer->db, rc, "checkpoint after a redaction");
}

/* The -wal file's size in bytes (0 when it cannot be read). */
static int64_t wal_file_size(const struct sq_store *s)
{
    char path[4096];
    struct stat st;
    if ((size_t)snprintf(path, sizeof path, "%s-wal", s->path) >= sizeof path ||
        stat(path, &st) != 0)
        return 0;
    return (int64_t)st.st_size;
}

/* Free pages given back to the file system when writes pause, at most
 * FREE_PAGES_STEP at a time (a database made with auto_vacuum=INCREMENTAL;
 * conn.c). Kept for the next writes: one page in FREE_PAGES_SHARE of the
 * file, at least FREE_PAGES_MIN and at most FREE_PAGES_KEPT (1 MiB), so
 * that a small database is not a quarter free pages (a step of the search
 * index frees its notes' old text, a page or more a file) and a large one
 * does not move pages back and forth at every pause; nor a tiny one for a
 * few pages. */
#define FREE_PAGES_STEP  4096
#define FREE_PAGES_KEPT  256
#define FREE_PAGES_SHARE 64
#define FREE_PAGES_MIN   16

/* Writes paused: free pages beyond those kept given back (without waiting
 * for a lock: a write that comes first wins, and the next pause tries
 * again). 1 when pages were given back (their move is in the WAL). */
static int give_back(struct sq_store *s)
{
    int free_pages = sq_pragma_int(s->ckpt_db, "PRAGMA freelist_count");
    int kept = sq_pragma_int(s->ckpt_db, "PRAGMA page_count") / FREE_PAGES_SHARE;
    if (kept > FREE_PAGES_KEPT || kept < 0)
        kept = FREE_PAGES_KEPT;
    else if (kept < FREE_PAGES_MIN)
        kept = FREE_PAGES_MIN;
    if (free_pages <= kept)
        return 0;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA incremental_vacuum(%d)",
             free_pages - kept < FREE_PAGES_STEP ? free_pages - kept : FREE_PAGES_STEP);
    sqlite3_busy_timeout(s->ckpt_db, 0);
    int rc = sqlite3_exec(s->ckpt_db, sql, NULL, NULL, NULL);
    sqlite3_busy_timeout(s->ckpt_db, s->cfg.busy_timeout_ms);
    if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
        sq_log(s->ckpt_db, rc, "incremental vacuum");
    return rc == SQLITE_OK;
}

/* The search index's segments merged when writes pause: FTS5's 'merge'
 * command, each step writing about SEARCH_MERGE_PAGES of the index's pages
 * in a transaction of its own, at most SEARCH_MERGE_STEPS steps a pause.
 * Indexed in steps beside the writer (search.c), the index holds many
 * small segments and, for every file written again, its old words beside
 * the new until FTS5 merges them (1.4 to 3.9 times its merged size at the
 * end of bench/storage.mjs). usermerge is 2 (sql/sqlite/012_search_merge.sql):
 * two segments of a level are merged, so that a large index is merged
 * again in steps of its own size, not rewritten at every pause. Without
 * waiting for a lock, as give_back. 1 when the index was merged (its
 * pages are in the WAL, its old ones free). */
#define SEARCH_MERGE_PAGES 256
#define SEARCH_MERGE_STEPS 16

static int merge_index(struct sq_store *s)
{
    if (s->search_off || s->search_pending)
        return 0;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->ckpt_db,
                                "INSERT INTO entries_search (entries_search, rank)"
                                " VALUES ('merge', ?1)",
                                -1, &st, NULL);
    if (rc != SQLITE_OK) {
        sq_log(s->ckpt_db, rc, "search index merge");
        return 0;
    }
    sqlite3_bind_int(st, 1, SEARCH_MERGE_PAGES);
    sqlite3_busy_timeout(s->ckpt_db, 0);
    int merged = 0;
    rc = SQLITE_DONE;
    for (int step = 0; step < SEARCH_MERGE_STEPS; step++) {
        /* A step only while memoryd's writer neither writes nor waits to
         * (write_mu free, held for the step: a write that comes waits for
         * one step at most, then the merge stops); the pause between steps
         * lets a writer woken by the unlock take write_mu first. */
        if (step) {
            struct timespec pause = {0, 1000000L}; /* 1 ms */
            nanosleep(&pause, NULL);
        }
        if (pthread_mutex_trylock(&s->write_mu) != 0)
            break;
        /* Fewer than two rows changed: nothing was left to merge (FTS5). */
        int before = sqlite3_total_changes(s->ckpt_db);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
        int done = rc != SQLITE_DONE || sqlite3_total_changes(s->ckpt_db) - before < 2;
        pthread_mutex_unlock(&s->write_mu);
        if (done)
            break;
        merged = 1;
    }
    sqlite3_busy_timeout(s->ckpt_db, s->cfg.busy_timeout_ms);
    if (rc != SQLITE_DONE && (rc & 0xff) != SQLITE_BUSY)
        sq_log(s->ckpt_db, rc, "search index merge");
    sqlite3_finalize(st);
    return merged;
}

/* Writes paused: what the checkpointer's own connection wrote (the index
 * merged) copied into the database file, without a busy wait; a reader in
 * the middle of a request leaves the rest to the next checkpoint. */
static void copy_back(struct sq_store *s)
{
    int rc = sqlite3_wal_checkpoint_v2(s->ckpt_db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
        sq_log(s->ckpt_db, rc, "checkpoint after the index merged");
}

/* Writes paused with every frame copied: the WAL emptied and its file cut
 * to nothing (journal_size_limit is for busy times). Only tried while nothing is committed
 * meanwhile (no busy wait that would hold up the next write); a reader in the middle of a request
 * makes it wait for the next pause. */
static void cut_back(struct sq_store *s)
{
    sqlite3_busy_timeout(s->ckpt_db, 0);
    int rc = sqlite3_wal_checkpoint_v2(s->ckpt_db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_busy_timeout(s->ckpt_db, s->cfg.busy_timeout_ms);
    if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
        sq_log(s->ckpt_db, rc, "checkpoint that cuts the WAL back");
}

static void *ckpt_main(void *arg)
{
    struct sq_store *s = arg;
    pthread_mutex_lock(&s->ckpt_mu);
    while (!s->ckpt_stop) {
        /* While the writer has a catch-up to do, a pass of ours would only
         * make it find the checkpoint lock taken: wait for it (or for idle). */
        int handed_over = atomic_load_explicit(&s->ckpt_catchup, memory_order_acquire);
        if (s->wal_pages < CKPT_BUSY_PAGES || handed_over) {
            struct timespec until = md_deadline_ms((long)CKPT_IDLE_MS / 2);
            pthread_cond_timedwait(&s->ckpt_cv, &s->ckpt_mu, &until);
        }
        if (s->ckpt_stop || s->wal_pages == 0)
            continue;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long idle_ms = (long)(now.tv_sec - s->last_commit.tv_sec) * 1000 +
                       (now.tv_nsec - s->last_commit.tv_nsec) / 1000000;
        handed_over = atomic_load_explicit(&s->ckpt_catchup, memory_order_acquire);
        if ((s->wal_pages < CKPT_BUSY_PAGES || handed_over) && idle_ms < CKPT_IDLE_MS)
            continue;
        int busy = s->wal_pages >= CKPT_BUSY_PAGES;
        s->wal_pages = 0;
        pthread_mutex_unlock(&s->ckpt_mu);
        sq_readers_end_snapshots(s);
        int log = 0, done_frames = 0, before = 0, rc;
        for (int pass = 0;; pass++) {
            rc = sqlite3_wal_checkpoint_v2(s->ckpt_db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log,
                                           &done_frames);
            /* log: the WAL's frames when this pass began; those beyond
             * `before` were committed while the previous pass ran. */
            if (rc != SQLITE_OK || !busy || log - before < CKPT_CATCHUP_FRAMES ||
                pass + 1 >= CKPT_MAX_PASSES)
                break;
            before = log;
        }
        if (rc != SQLITE_OK && rc != SQLITE_BUSY)
            sq_log(s->ckpt_db, rc, "checkpoint");
        /* Idle: the next write starts the WAL over by itself (nothing was
         * committed since), and the file is cut back to the limit now if
         * it grew past it (--wal-size-limit). Busy: the writer copies what
         * came since. */
        if (rc == SQLITE_OK && busy && done_frames == log)
            atomic_store_explicit(&s->ckpt_catchup, 1, memory_order_release);
        if (rc == SQLITE_OK && !busy && done_frames == log) {
            /* The index merged (what it wrote copied into the database
             * file; the -wal file keeps its size up to the limit, as after
             * any pause), then free pages given back, the merge's among
             * them: the pages moved are copied by the checkpoint that cuts
             * the -wal file back. */
            if (merge_index(s))
                copy_back(s);
            if (give_back(s) || wal_file_size(s) > s->wal_limit)
                cut_back(s);
        }
        pthread_mutex_lock(&s->ckpt_mu);
    }
    pthread_mutex_unlock(&s->ckpt_mu);
    return NULL;
}

int sq_ckpt_start(struct sq_store *s, char *why, size_t why_len)
{
    int rc =
        sqlite3_open_v2(s->path, &s->ckpt_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(why, why_len, "cannot open %s: %s", s->path, sqlite3_errstr(rc));
        return rc;
    }
    sqlite3_busy_timeout(s->ckpt_db, s->cfg.busy_timeout_ms);
    rc = sq_exec(s->ckpt_db,
                 s->cfg.durability == MD_DURABILITY_FULL ? "PRAGMA synchronous=FULL"
                                                         : "PRAGMA synchronous=NORMAL",
                 why, why_len);
    if (rc != SQLITE_OK)
        return rc;
    if (pthread_create(&s->ckpt_thread, NULL, ckpt_main, s) != 0) {
        snprintf(why, why_len, "cannot start the checkpoint thread");
        return SQLITE_ERROR;
    }
    s->ckpt_started = 1;
    return SQLITE_OK;
}

void sq_ckpt_stop(struct sq_store *s)
{
    if (s->ckpt_started) {
        pthread_mutex_lock(&s->ckpt_mu);
        s->ckpt_stop = 1;
        pthread_cond_signal(&s->ckpt_cv);
        pthread_mutex_unlock(&s->ckpt_mu);
        pthread_join(s->ckpt_thread, NULL);
        s->ckpt_started = 0;
    }
    sqlite3_close(s->ckpt_db);
    s->ckpt_db = NULL;
}
