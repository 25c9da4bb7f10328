/* writer.c — the writer thread with group commit (see md_writer.h). */
#include "cmd/md_writer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/md_clock.h"
#include "base/md_log.h"
#include "base/md_metrics.h"
#include "base/md_refusals.h"
#include "cmd/md_expiry.h"
#include "cmd/md_import.h"
#include "store/md_tenant_cache.h"

/* Retention runs between batches, at most this often, deleting at most
 * PRUNE_BUDGET rows each time: bounded work on the write path. An idle
 * writer runs it every PRUNE_IDLE_MS while work is left (a burst of writes
 * queues more paths than one run takes), then once a second. A store that
 * prunes apart (md_store_prunes_apart: PostgreSQL) has it run by a thread
 * of its own on the same schedule, beside the batches instead of between
 * them: the writer waits for none of it. */
#define PRUNE_EVERY_MS 100
#define PRUNE_IDLE_MS  10
#define PRUNE_BUDGET   256

/* Expiry (md_expiry.h) runs between batches too: the uses recorded in
 * memory written back every --expire-granularity or every second, whichever
 * is shorter, and a sweep of at most EXPIRE_BUDGET files every granularity
 * (at once again while it leaves work). */
#define EXPIRE_BUDGET    64
#define WRITEBACK_MAX_MS 1000

/* The search index catches up (md_store_index_step, on an engine that
 * indexes apart) between batches: under load at most every INDEX_EVERY_MS
 * (at once again while a step leaves files), and INDEX_IDLE_MS after the
 * writes pause. A search never waits for it (md_store.h). */
#define INDEX_EVERY_MS 250
#define INDEX_IDLE_MS  50

/* An import runs in steps of about this long (md_import.h), between the
 * writer's batches, where the store can (MD_STORE_CAP_IMPORT_APART, or
 * MD_STORE_CAP_IMPORT_MARK with history on); MEMORYD_IMPORT_STEP_US sets
 * it (tests). A step's commit costs beyond the work given it (the
 * flush): the work budget follows what the last steps took, whole. */
#define IMPORT_STEP_US     5000
#define IMPORT_MIN_WORK_US 200

/* How imports run. */
enum import_way {
    IMPORT_ALONE, /* in one transaction of the writer's, alone */
    IMPORT_APART, /* in steps, on a transaction of their own kept open */
    IMPORT_MARK,  /* in steps that each commit, undone on failure */
};

struct md_writer {
    struct md_store *store;
    const struct md_limits *lim;
    size_t max_batch, max_queue;
    pthread_t thread, notifier;
    pthread_mutex_t mu;
    pthread_cond_t cv, done_cv;
    struct md_job *head, *tail;           /* queued jobs */
    struct md_job *done_head, *done_tail; /* finished jobs, for the notifier */
    size_t queued;
    int stopping, writer_gone;
    unsigned long long batches, jobs, pruned;
    uint64_t exec_us, commit_us; /* time spent running commands / committing */
    uint64_t pruned_at;          /* when retention last ran (the pruning thread's) */
    int prune_more;              /* it left work for the next run (the pruning thread's) */
    md_writer_commit_cb on_commit;
    void *on_commit_ctx;
    int prune_apart; /* retention in the pruner thread (set before it starts) */
    pthread_t pruner;
    pthread_cond_t prune_cv;
    /* Imports in steps (import_way). The queue of imports taken from the
     * jobs (the first runs) and the tenants that have one queued, running
     * or left to undo (`busy`, their commands refused meanwhile) are under
     * `mu`; the running import's state is the writer thread's. */
    enum import_way import_way;
    uint64_t import_step_us;
    uint64_t import_work_us; /* the next step's work budget */
    struct md_job *imp_head, *imp_tail;
    char **busy;
    size_t nbusy, busy_cap;
    atomic_size_t nbusy_seen; /* nbusy, for md_writer_importing without the mutex */
    struct md_import *imp;    /* the first import's state, once begun */
    struct md_txn *imp_txn;   /* IMPORT_APART: its transaction */
    int imp_committed;        /* IMPORT_MARK: a step of it may be committed */
    size_t undo_left;         /* busy[0..undo_left): left halfway by a stopped memoryd */
    enum { RECOVER_NONE, RECOVER_ASKED, RECOVER_DONE } recover; /* md_writer_recover */
    enum md_err recover_err;
    pthread_cond_t recovered_cv;
    /* Expiry (the writer thread's): when uses were last written back and
     * files last swept (CLOCK_MONOTONIC, us; 0: never). */
    uint64_t written_at, swept_at;
    /* The search index (the writer thread's): whether the engine indexes
     * apart, whether something was committed since its last step (or the
     * step left files), and when that step ran (us). */
    int index_apart, index_due;
    int paused; /* md_writer_pause: no batch taken from the queue */
    uint64_t indexed_at;
};

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Replace a job's result with the storage-failure text. */
static void storage_failure(struct md_job *job, enum md_err err)
{
    job->err = md_storage_class(err);
    md_buf_reset(job->out);
    md_buf_puts(job->out, md_storage_text(job->err));
}

static int is_storage_err(enum md_err e)
{
    return e == MD_EDB || e == MD_ENOMEM || e == MD_EBUSY || e == MD_EUNSURE || e == MD_EUNAVAIL;
}

/* With an Idempotency-Key: the stored first answer, if any. 1 when the
 * job is answered (replayed, or refused for another request), 0 when it
 * must run; a storage error goes to *err. */
static int idem_replay(struct md_txn *t, struct md_job *j, enum md_err *err)
{
    struct md_idem first;
    enum md_err e = md_txn_idem_get(t, j->tenant, j->idem_key, j->idem_key_len, &first);
    if (e == MD_ENOENT)
        return 0;
    if (e) {
        *err = e;
        return 1;
    }
    md_buf_reset(j->out);
    if (memcmp(first.fingerprint, j->fingerprint, MD_SHA256_LEN) != 0) {
        j->err = md_buf_say(j->out, MD_R_IDEMPOTENCY_KEY_REUSED);
        return 1;
    }
    j->err = (enum md_err)first.err;
    j->replayed = 1;
    if (md_buf_append(j->out, first.body, first.body_len))
        *err = MD_ENOMEM;
    return 1;
}

/* Store the job's answer for its Idempotency-Key. */
static enum md_err idem_store(struct md_txn *t, struct md_job *j)
{
    struct md_idem answer;
    memcpy(answer.fingerprint, j->fingerprint, MD_SHA256_LEN);
    answer.err = (int)j->err;
    answer.body = j->out->data ? j->out->data : "";
    answer.body_len = j->out->len;
    const struct md_patharg *p = &j->cmd->path;
    /* The path of a memory tool command, refused or not: its answer may
     * quote the file (a snippet, an old_str), and a redaction of the file's
     * versions scrubs it. The /v1 API's answers quote no content. */
    int quotes = j->cmd->kind < MD_CMD_TOOL_COUNT;
    return md_txn_idem_put(t, j->tenant, j->idem_key, j->idem_key_len, &answer,
                           quotes ? p->canon : NULL, p->canon_len);
}

/* Run one job in its own savepoint of the open transaction. Returns an
 * error that dooms the whole transaction (the savepoint could not be
 * made or ended). */
static enum md_err run_job(struct md_writer *w, struct md_txn *t, struct md_job *j)
{
    enum md_err e = md_txn_savepoint(t);
    if (e)
        return e;
    struct md_txn_stats before, after;
    md_txn_stats(t, &before);
    enum md_err storage = MD_OK;
    int answered_by_key = j->idem_key && idem_replay(t, j, &storage);
    if (!answered_by_key)
        j->err = md_cmd_exec(t, j->tenant, j->cmd, w->lim, j->out, &j->res);
    else if (storage)
        j->err = storage;
    if (!answered_by_key && j->idem_key && j->err == MD_OK && (e = idem_store(t, j)) != MD_OK)
        j->err = e;
    md_txn_stats(t, &after);
    j->cost.statements = after.statements - before.statements;
    j->cost.round_trips = after.round_trips - before.round_trips;
    e = md_txn_release(t, j->err != MD_OK && !j->replayed);
    /* A command refused (not a storage failure) is an answer too: kept for
     * its key in a savepoint of its own. */
    if (!e && !answered_by_key && j->idem_key && j->err != MD_OK && !is_storage_err(j->err)) {
        e = md_txn_savepoint(t);
        enum md_err put = e ? e : idem_store(t, j);
        if (!e)
            e = md_txn_release(t, put != MD_OK);
        if (put)
            j->err = put;
    }
    if (is_storage_err(j->err))
        storage_failure(j, j->err);
    return e;
}

/* What run_batch_once did. */
enum run {
    RUN_DONE, /* committed, or failed for good */
    RUN_LOST, /* the database could not be reached before the commit was
                 sent: nothing is applied; it may run again, on a new
                 connection */
    RUN_REDO, /* a deferring attempt was given up (MD_EREDO): nothing is
                 applied; it runs again without deferral */
};

/* What a batch names (struct md_batch): its tenants, each command's path
 * (with its content when the command edits the file) and a rename's
 * destination. MD_ENOMEM, or MD_OK with b's arrays to free
 * (batch_names_free). */
static enum md_err batch_names(struct md_job *batch, size_t n, int defer, struct md_batch *b)
{
    const char **tenants = malloc(n * sizeof *tenants);
    struct md_batch_path *paths = malloc(2 * n * sizeof *paths);
    if (!tenants || !paths) {
        free(tenants);
        free(paths);
        return MD_ENOMEM;
    }
    size_t nt = 0, np = 0;
    for (struct md_job *j = batch; j; j = j->next) {
        const struct md_cmd *c = j->cmd;
        int edit = c->kind == MD_CMD_STR_REPLACE || c->kind == MD_CMD_INSERT;
        tenants[nt++] = j->tenant;
        if (c->path.canon)
            paths[np++] = (struct md_batch_path){j->tenant, c->path.canon, c->path.canon_len, edit};
        if (c->kind == MD_CMD_RENAME && c->path2.canon)
            paths[np++] = (struct md_batch_path){j->tenant, c->path2.canon, c->path2.canon_len, 0};
    }
    *b = (struct md_batch){tenants, nt, paths, np, defer};
    return MD_OK;
}

static void batch_names_free(struct md_batch *b)
{
    free((void *)b->tenants);
    free((void *)b->paths);
}

/* Log a batch (debug): its commands, times and, on an engine with round
 * trips, those and the statements of the whole transaction, its COMMIT
 * (or ROLLBACK) included. */
static void log_batch(const struct md_writer *w, size_t n, uint64_t exec_us, uint64_t commit_us,
                      const struct md_txn_stats *start, const struct md_txn_stats *end, int defer)
{
    struct md_logline l;
    md_log_begin(&l, MD_LOG_DEBUG, "write batch");
    md_log_int(&l, "commands", (int64_t)n);
    md_log_int(&l, "exec_us", (int64_t)exec_us);
    md_log_int(&l, "commit_us", (int64_t)commit_us);
    if (md_store_caps(w->store) & MD_STORE_CAP_ROUND_TRIPS) {
        md_log_int(&l, "round_trips", (int64_t)(end->round_trips - start->round_trips));
        /* (BEGIN was queued before `start`) */
        md_log_int(&l, "statements", (int64_t)(end->statements - start->statements + 1));
    }
    if (defer)
        md_log_str(&l, "mode", defer > 0 ? "optimistic" : "optimistic, given up");
    md_log_end(&l);
}

/* Run the batch's jobs, each in its savepoint, on the open transaction `t`;
 * *defer goes to -1 when a deferring attempt is given up (MD_EREDO).
 * Returns the error that dooms the transaction (MD_OK when none); *lost:
 * the database went away while the commands ran. */
static enum md_err run_jobs(struct md_writer *w, struct md_txn *t, struct md_job *batch,
                            enum md_err fatal, int *defer, int *lost)
{
    for (struct md_job *j = batch; *defer >= 0 && j; j = j->next) {
        if (fatal) {
            storage_failure(j, fatal);
            continue;
        }
        enum md_err e = run_job(w, t, j);
        *lost |= j->err == MD_EUNAVAIL;
        if (e == MD_EREDO) {
            *defer = -1;
            break;
        }
        if (e) {
            fatal = e;
            if (!is_storage_err(j->err))
                storage_failure(j, e);
        }
    }
    return fatal;
}

/* Run a batch in one transaction; *exec_us and *commit_us get the time
 * spent running its commands and committing. `defer`: the engine may defer
 * the batch's writes (MD_STORE_CAP_DEFER): its rows read at once and its
 * writes sent at once, given up (-1) at the first failed statement. */
static enum run run_batch_once(struct md_writer *w, struct md_job *batch, size_t n, int defer,
                               uint64_t *exec_us, uint64_t *commit_us)
{
    struct md_txn *t = NULL;
    uint64_t t0 = now_us();
    enum md_err e = md_store_write_begin(w->store, &t);
    if (e) {
        for (struct md_job *j = batch; j; j = j->next)
            storage_failure(j, e);
        *exec_us = now_us() - t0;
        *commit_us = 0;
        return e == MD_EUNAVAIL ? RUN_LOST : RUN_DONE;
    }
    struct md_txn_stats start, end;
    md_store_wire(w->store, &start);
    /* Every tenant of the batch, locked before any command runs. */
    struct md_batch names;
    enum md_err fatal = batch_names(batch, n, defer, &names);
    if (!fatal) {
        fatal = md_txn_batch_begin(t, &names);
        batch_names_free(&names);
        if (fatal == MD_EREDO) {
            defer = -1; /* given up before it began */
            fatal = MD_OK;
        }
    }
    int lost = 0; /* the database went away while the commands ran */
    fatal = run_jobs(w, t, batch, fatal, &defer, &lost);
    if (defer > 0 && !fatal && !lost) {
        e = md_txn_flush(t);
        if (e == MD_EREDO)
            defer = -1;
        else
            fatal = e;
    }
    lost |= fatal == MD_EUNAVAIL;
    uint64_t t1 = now_us();
    if (defer < 0 || fatal)
        md_txn_rollback(t);
    else
        fatal = md_txn_commit(t);
    uint64_t t2 = now_us();
    md_store_wire(w->store, &end);
    *exec_us = t1 - t0;
    *commit_us = t2 - t1;
    if (md_log_enabled(MD_LOG_DEBUG))
        log_batch(w, n, t1 - t0, t2 - t1, &start, &end, defer);
    if (defer < 0)
        return RUN_REDO; /* the jobs' results are set again by the exact run */
    if (fatal) {
        /* Nothing of this batch is stored: successes become failures. */
        for (struct md_job *j = batch; j; j = j->next)
            if (j->err == MD_OK)
                storage_failure(j, fatal);
        struct md_logline l;
        md_log_begin(&l, MD_LOG_ERROR, "write batch failed");
        md_log_str(&l, "error", md_strerror(fatal));
        md_log_end(&l);
    }
    return lost ? RUN_LOST : RUN_DONE;
}

/* An erasure or an import runs alone in its transaction. */
static int is_erase(const struct md_job *j)
{
    return j->cmd->kind == MD_CMD_ERASE;
}
static int alone(const struct md_job *j)
{
    return is_erase(j) || j->cmd->kind == MD_CMD_IMPORT;
}

/* A batch whose answers depend on what is read while it runs: an
 * Idempotency-Key's first answer, a restore, a redaction or new limits.
 * Run the exact way. */
static int needs_exact(const struct md_job *batch)
{
    for (const struct md_job *j = batch; j; j = j->next)
        if (j->idem_key || j->cmd->kind == MD_CMD_RESTORE || j->cmd->kind == MD_CMD_REDACT ||
            j->cmd->kind == MD_CMD_LIMITS || alone(j))
            return 1;
    return 0;
}

/* A batch defers its writes where the engine can (MD_STORE_CAP_DEFER),
 * and runs the exact way after a given-up attempt; a batch that met an
 * unreachable database before its commit (a connection the server dropped
 * while idle, say) runs once more on a new connection. */
static void run_batch(struct md_writer *w, struct md_job *batch, size_t n, uint64_t *exec_us,
                      uint64_t *commit_us)
{
    int defer = (md_store_caps(w->store) & MD_STORE_CAP_DEFER) && !needs_exact(batch);
    int retried = 0;
    *exec_us = *commit_us = 0;
    for (;;) {
        uint64_t exec, commit;
        enum run r = run_batch_once(w, batch, n, defer, &exec, &commit);
        *exec_us += exec;
        *commit_us += commit;
        if (r == RUN_DONE || (r == RUN_LOST && retried++))
            return;
        if (r == RUN_REDO)
            defer = 0;
        else
            md_log_msg(MD_LOG_WARN, "write batch run again: the database was unreachable", NULL);
        for (struct md_job *j = batch; j; j = j->next) {
            j->err = MD_OK;
            j->replayed = 0;
            j->cost = (struct md_txn_stats){0, 0};
            md_buf_reset(j->out);
        }
    }
}

/* Retention (md_txn_prune) in a transaction of its own, when due (always
 * when `now_please`). */
static void maybe_prune(struct md_writer *w, int now_please)
{
    uint64_t now = now_us();
    if (!now_please && now - w->pruned_at < (uint64_t)PRUNE_EVERY_MS * 1000)
        return;
    w->pruned_at = now;
    w->prune_more = 0;
    struct md_txn *t = NULL;
    enum md_err b =
        w->prune_apart ? md_store_prune_begin(w->store, &t) : md_store_write_begin(w->store, &t);
    if (b != MD_OK)
        return; /* the next batch will tell */
    struct md_pruned pruned = {0};
    enum md_err e = md_txn_prune(t, md_wall_ms(), PRUNE_BUDGET, &pruned);
    size_t deleted = md_pruned_total(&pruned);
    w->prune_more = !e && pruned.more;
    if (e) {
        md_txn_rollback(t);
        md_log_msg(MD_LOG_WARN, "retention: pruning failed", md_strerror(e));
        return;
    }
    if (deleted == 0) {
        md_txn_rollback(t); /* nothing to make durable */
        return;
    }
    if (md_txn_commit(t) != MD_OK) {
        w->prune_more = 0;
        return;
    }
    md_metrics_pruned(pruned.versions, pruned.changes, pruned.idempotency);
    pthread_mutex_lock(&w->mu);
    w->pruned += deleted;
    pthread_mutex_unlock(&w->mu);
}

/* ---- the search index ---- */

/* A step of the search index when due (the writer's thread); `idle`: the
 * writes paused. */
static void maybe_index(struct md_writer *w, int idle)
{
    if (!w->index_due)
        return;
    uint64_t now = now_us();
    if (!idle && now - w->indexed_at < (uint64_t)INDEX_EVERY_MS * 1000)
        return;
    int more = 0;
    enum md_err e = md_store_index_step(w->store, &more);
    w->indexed_at = more ? 0 : now;
    w->index_due = more;
    if (e)
        md_log_msg(MD_LOG_WARN, "search index: a step failed; its files stay noted for the next",
                   md_strerror(e));
}

/* ---- expiry ---- */

/* How often expiry's write-back runs, ms (0: never: no uses recorded). */
static long expire_tick_ms(const struct md_writer *w)
{
    if (!w->lim->uses)
        return 0;
    int64_t g = w->lim->expire_granularity_ms;
    return g < WRITEBACK_MAX_MS ? (long)(g > 0 ? g : 1) : WRITEBACK_MAX_MS;
}

/* Told of a tenant whose files expired: the change feed's waiters. */
static void expired_told(void *ctx, const char *tenant)
{
    struct md_writer *w = ctx;
    if (w->on_commit)
        w->on_commit(w->on_commit_ctx, &tenant, 1);
}

/* Expiry's write-back, then its sweep, when due (the writer's thread). */
static void maybe_expire(struct md_writer *w)
{
    long tick = expire_tick_ms(w);
    uint64_t now = now_us();
    if (!tick || (w->written_at && now - w->written_at < (uint64_t)tick * 1000))
        return;
    w->written_at = now;
    size_t written;
    enum md_err e = md_expiry_writeback(w->store, w->lim, &written);
    if (e) {
        md_log_msg(MD_LOG_WARN, "expiry: writing use times back failed", md_strerror(e));
        return; /* the sweep waits for them */
    }
    if (w->swept_at && now - w->swept_at < (uint64_t)w->lim->expire_granularity_ms * 1000)
        return;
    size_t expired;
    int more;
    e = md_expiry_sweep(w->store, w->lim, md_wall_ms(), EXPIRE_BUDGET, expired_told, w, &expired,
                        &more);
    if (e)
        md_log_msg(MD_LOG_WARN, "expiry: sweep failed", md_strerror(e));
    /* Work left: the next run sweeps again. */
    w->swept_at = more && !e ? 0 : now;
    if (!w->swept_at)
        w->written_at = 0;
}

/* ---- imports in steps ---- */

/* Is `tenant` busy with an import (w->mu held)? Its index, or -1. */
static long busy_find(const struct md_writer *w, const char *tenant)
{
    for (size_t i = 0; i < w->nbusy; i++)
        if (strcmp(w->busy[i], tenant) == 0)
            return (long)i;
    return -1;
}

/* Add `tenant` to the busy ones (w->mu held). */
static enum md_err busy_add(struct md_writer *w, const char *tenant)
{
    if (w->nbusy == w->busy_cap) {
        size_t cap = w->busy_cap ? w->busy_cap * 2 : 8;
        char **b = realloc(w->busy, cap * sizeof *b);
        if (!b)
            return MD_ENOMEM;
        w->busy = b;
        w->busy_cap = cap;
    }
    if (!(w->busy[w->nbusy] = strdup(tenant)))
        return MD_ENOMEM;
    w->nbusy++;
    atomic_store(&w->nbusy_seen, w->nbusy);
    return MD_OK;
}

static void busy_drop(struct md_writer *w, const char *tenant)
{
    pthread_mutex_lock(&w->mu);
    long i = busy_find(w, tenant);
    if (i >= 0) {
        free(w->busy[i]);
        w->busy[i] = w->busy[--w->nbusy];
        atomic_store(&w->nbusy_seen, w->nbusy);
    }
    pthread_mutex_unlock(&w->mu);
}

/* The committed steps of an import into `tenant` undone (md_import_undo);
 * the tenant stays busy when that fails (its commands refused until a
 * start undoes it). */
static void undo_import(struct md_writer *w, const char *tenant, const char *why)
{
    enum md_err e = md_import_undo(w->store, tenant, w->lim);
    struct md_logline l;
    md_log_begin(&l, e ? MD_LOG_ERROR : MD_LOG_WARN,
                 e ? "import undo failed: the tenant stays refused until memoryd starts again"
                   : "import undone");
    md_log_str(&l, "tenant", tenant);
    md_log_str(&l, "why", why);
    if (e)
        md_log_str(&l, "error", md_strerror(e));
    md_log_end(&l);
    if (!e)
        busy_drop(w, tenant);
}

/* The first import is finished (w->imp_head): its job to the notifier. */
static void import_finish(struct md_writer *w, struct md_job *j, enum md_err e)
{
    if (e && is_storage_err(e))
        storage_failure(j, e);
    else
        j->err = e;
    md_import_close(w->imp);
    w->imp = NULL;
    w->imp_txn = NULL;
    /* A failed import that committed steps is undone first (undo_import
     * drops the tenant when it is). */
    if (!e || w->import_way == IMPORT_APART || !w->imp_committed)
        busy_drop(w, j->tenant);
    w->imp_committed = 0;
    pthread_mutex_lock(&w->mu);
    w->imp_head = j->next;
    if (!w->imp_head)
        w->imp_tail = NULL;
    j->next = NULL;
    w->jobs++;
    if (w->done_tail)
        w->done_tail->next = j;
    else
        w->done_head = j;
    w->done_tail = j;
    pthread_cond_signal(&w->done_cv);
    pthread_mutex_unlock(&w->mu);
}

/* One step of the first import (the writer's thread, w->mu not held). */
static void import_step(struct md_writer *w)
{
    pthread_mutex_lock(&w->mu);
    struct md_job *j = w->imp_head;
    pthread_mutex_unlock(&w->mu);
    int apart = w->import_way == IMPORT_APART, done = 0;
    enum md_err e = MD_OK;
    uint64_t t0 = md_now_us();
    if (!w->imp) {
        w->import_work_us = w->import_step_us;
        md_buf_reset(j->out);
        memset(&j->res, 0, sizeof j->res);
        e = md_import_open(j->cmd, j->tenant, w->lim,
                           apart ? MD_IMPORT_HIST_ONCE : MD_IMPORT_HIST_EACH, &w->imp);
        if (!e && apart)
            e = md_import_begin(w->store, j->tenant, 1, &w->imp_txn);
    }
    struct md_txn *t = w->imp_txn;
    if (!e && !apart) {
        e = md_import_begin(w->store, j->tenant, 0, &t);
        /* The mark, in the first step's transaction (again if that failed). */
        if (!e && !md_import_begun(w->imp))
            e = md_txn_import_mark(t, j->tenant);
        if (e && t) {
            md_txn_rollback(t);
            t = NULL;
        }
    }
    if (!e)
        e = md_import_step(w->imp, t, j->out, &j->res, w->import_work_us, &done);
    if (t && (e || (apart && !done))) {
        if (e)
            md_txn_rollback(t);
    } else if (t) {
        if (!apart && done)
            e = md_txn_import_unmark(t, j->tenant);
        if (e)
            md_txn_rollback(t);
        else
            e = md_txn_commit(t);
        w->imp_committed |= !e || e == MD_EUNSURE;
    }
    if (!e && !done) {
        /* The next step's budget: this one's, scaled to what it took whole. */
        uint64_t took = md_now_us() - t0, work = w->import_work_us, step = w->import_step_us;
        work = took > step ? work * step / took : work + work / 4 + 1;
        if (work < IMPORT_MIN_WORK_US)
            work = IMPORT_MIN_WORK_US; /* at least this much, */
        if (work > step)
            work = step; /* and at most a step */
        w->import_work_us = work;
        return;
    }
    /* Steps committed are undone (a refusal in the first step left none). */
    if (e && !apart && w->imp_committed)
        undo_import(w, j->tenant, is_storage_err(e) ? md_strerror(e) : "refused");
    import_finish(w, j, e);
}

static int on_mark(void *ctx, const char *tenant, int64_t version)
{
    (void)version;
    struct md_writer *w = ctx;
    return busy_add(w, tenant) != MD_OK;
}

/* The marks of imports a stopped memoryd left halfway, read on the
 * writer's connection: their tenants busy, to undo (w->mu held). */
static void read_marks(struct md_writer *w)
{
    struct md_txn *t;
    pthread_mutex_unlock(&w->mu);
    enum md_err e = md_store_write_begin(w->store, &t);
    pthread_mutex_lock(&w->mu);
    if (!e) {
        e = md_txn_import_marks(t, on_mark, w);
        md_txn_rollback(t);
    }
    w->undo_left = w->nbusy;
    w->recover_err = e;
    w->recover = RECOVER_DONE;
    pthread_cond_broadcast(&w->recovered_cv);
}

static void *writer_main(void *arg)
{
    struct md_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (w->recover == RECOVER_ASKED) {
            read_marks(w);
            continue;
        }
        if (w->undo_left) {
            /* An import a stopped memoryd left halfway (md_writer_recover). */
            char *tenant = strdup(w->busy[--w->undo_left]);
            pthread_mutex_unlock(&w->mu);
            if (tenant)
                undo_import(w, tenant, "memoryd stopped during the import");
            free(tenant);
            pthread_mutex_lock(&w->mu);
            continue;
        }
        while ((!w->head || w->paused) && !w->imp_head && !w->undo_left &&
               w->recover != RECOVER_ASKED && !w->stopping && w->prune_apart &&
               !expire_tick_ms(w) && !w->index_due)
            pthread_cond_wait(&w->cv, &w->mu);
        while ((!w->head || w->paused) && !w->imp_head && !w->undo_left &&
               w->recover != RECOVER_ASKED && !w->stopping) {
            /* Idle: retention still runs, once a second, or after
             * PRUNE_IDLE_MS of quiet while it has work left. Not at once:
             * under load the queue is empty for a moment after every
             * commit (the callers are being told), and a retention run
             * there would hold up the next batch. */
            long wait = w->prune_more && !w->prune_apart ? PRUNE_IDLE_MS : 1000;
            if (w->index_due && wait > INDEX_IDLE_MS)
                wait = INDEX_IDLE_MS;
            long tick = expire_tick_ms(w);
            struct timespec until = md_deadline_ms(tick && tick < wait ? tick : wait);
            if (pthread_cond_timedwait(&w->cv, &w->mu, &until) != 0 && !w->head && !w->imp_head &&
                !w->stopping) {
                pthread_mutex_unlock(&w->mu);
                if (!w->prune_apart)
                    maybe_prune(w, 1);
                maybe_expire(w);
                maybe_index(w, 1);
                pthread_mutex_lock(&w->mu);
            }
        }
        if (w->undo_left || w->recover == RECOVER_ASKED)
            continue;
        if (!w->head && !w->imp_head)
            break; /* stopping and drained */
        if (w->paused && !w->stopping && !w->imp_head)
            continue;
        if (!w->head || (w->paused && !w->stopping)) {
            pthread_mutex_unlock(&w->mu);
            import_step(w);
            w->index_due = w->index_apart;
            maybe_index(w, 0);
            pthread_mutex_lock(&w->mu);
            continue;
        }
        if (w->import_way != IMPORT_ALONE && w->head->cmd->kind == MD_CMD_IMPORT) {
            /* To the imports' queue: it runs in steps, between batches. */
            struct md_job *j = w->head;
            w->head = j->next;
            if (!w->head)
                w->tail = NULL;
            j->next = NULL;
            w->queued--;
            if (w->imp_tail)
                w->imp_tail->next = j;
            else
                w->imp_head = j;
            w->imp_tail = j;
            continue;
        }
        struct md_job *batch = w->head, *last = batch;
        size_t n = 1;
        /* An erasure runs alone: nothing else in its transaction uses the
         * tenant's id it deletes; an import too: its commit is its own. */
        while (last->next && n < w->max_batch && !alone(batch) && !alone(last->next)) {
            last = last->next;
            n++;
        }
        w->head = last->next;
        if (!w->head)
            w->tail = NULL;
        last->next = NULL;
        w->queued -= n;
        md_metrics_queue_depth(w->queued);
        pthread_mutex_unlock(&w->mu);

        uint64_t exec_us, commit_us;
        run_batch(w, batch, n, &exec_us, &commit_us);
        /* Committed or not: every tenant cache of the process forgets
         * (md_tenant_cache.h), before anyone hears of it. */
        if (is_erase(batch))
            md_tenant_cache_forget();
        md_metrics_batch(n, commit_us);
        /* Counted before anyone hears of the results. */
        pthread_mutex_lock(&w->mu);
        w->batches++;
        w->jobs += n;
        w->exec_us += exec_us;
        w->commit_us += commit_us;
        /* The notifier tells the batch's callers while the next batch runs. */
        if (w->done_tail)
            w->done_tail->next = batch;
        else
            w->done_head = batch;
        w->done_tail = last;
        pthread_cond_signal(&w->done_cv);
        int importing = w->imp_head != NULL;
        w->index_due = w->index_apart;
        if (!importing) {
            pthread_mutex_unlock(&w->mu);
            if (!w->prune_apart)
                maybe_prune(w, 0);
            maybe_expire(w);
            maybe_index(w, 0);
            pthread_mutex_lock(&w->mu);
        }
        if (importing) {
            /* A step of the import after every batch: both go on. */
            pthread_mutex_unlock(&w->mu);
            import_step(w);
            maybe_index(w, 0);
            pthread_mutex_lock(&w->mu);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Retention beside the writer (prune_apart): every PRUNE_EVERY_MS while
 * work is left and batches go on, every PRUNE_IDLE_MS when none went since
 * the last run, once a second when nothing is left. */
static void *pruner_main(void *arg)
{
    struct md_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    unsigned long long seen = w->batches;
    while (!w->stopping) {
        int busy = w->batches != seen;
        seen = w->batches;
        struct timespec until = md_deadline_ms(!w->prune_more ? 1000
                                               : busy         ? PRUNE_EVERY_MS
                                                              : PRUNE_IDLE_MS);
        while (!w->stopping && pthread_cond_timedwait(&w->prune_cv, &w->mu, &until) == 0)
            ;
        if (w->stopping)
            break;
        pthread_mutex_unlock(&w->mu);
        maybe_prune(w, 1);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Tell the commit hook which tenants had a write in `list`. */
static void tell_commit(struct md_writer *w, struct md_job *list)
{
    if (!w->on_commit)
        return;
    const char *tenants[64];
    size_t n = 0;
    for (struct md_job *j = list; j; j = j->next) {
        if (j->err != MD_OK || j->replayed)
            continue;
        size_t k = 0;
        while (k < n && strcmp(tenants[k], j->tenant) != 0)
            k++;
        if (k < n)
            continue;
        if (n == sizeof tenants / sizeof tenants[0]) {
            w->on_commit(w->on_commit_ctx, tenants, n);
            n = 0;
        }
        tenants[n++] = j->tenant;
    }
    if (n)
        w->on_commit(w->on_commit_ctx, tenants, n);
}

static void *notifier_main(void *arg)
{
    struct md_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->done_head && !w->writer_gone)
            pthread_cond_wait(&w->done_cv, &w->mu);
        struct md_job *list = w->done_head;
        if (!list)
            break; /* the writer has stopped and everything is told */
        w->done_head = w->done_tail = NULL;
        pthread_mutex_unlock(&w->mu);
        tell_commit(w, list);
        for (struct md_job *j = list, *next; j; j = next) {
            next = j->next;
            j->next = NULL;
            j->done(j);
        }
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Tell the notifier that no batch will follow, and wait until it has told
 * every finished job. */
static void notifier_finish(struct md_writer *w)
{
    pthread_mutex_lock(&w->mu);
    w->writer_gone = 1;
    pthread_cond_signal(&w->done_cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->notifier, NULL);
}

static void writer_free(struct md_writer *w)
{
    for (size_t i = 0; i < w->nbusy; i++)
        free(w->busy[i]);
    free(w->busy);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    pthread_cond_destroy(&w->done_cv);
    pthread_cond_destroy(&w->prune_cv);
    pthread_cond_destroy(&w->recovered_cv);
    free(w);
}

/* Stop the pruner thread, if any (w->stopping is set). */
static void pruner_finish(struct md_writer *w)
{
    if (!w->prune_apart)
        return;
    pthread_mutex_lock(&w->mu);
    pthread_cond_signal(&w->prune_cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->pruner, NULL);
}

struct md_writer *md_writer_start(struct md_store *store, const struct md_limits *lim,
                                  size_t max_batch, size_t max_queue)
{
    struct md_writer *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->store = store;
    w->lim = lim;
    w->max_batch = max_batch ? max_batch : 1;
    w->max_queue = max_queue ? max_queue : 1;
    const char *step = getenv("MEMORYD_IMPORT_STEP_US");
    w->import_step_us = step && *step ? strtoull(step, NULL, 10) : IMPORT_STEP_US;
    if (!w->import_step_us)
        w->import_step_us = 1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    pthread_cond_init(&w->done_cv, NULL);
    pthread_cond_init(&w->prune_cv, NULL);
    pthread_cond_init(&w->recovered_cv, NULL);
    if (pthread_create(&w->notifier, NULL, notifier_main, w) != 0) {
        writer_free(w);
        return NULL;
    }
    /* Set before the thread reads it; without its thread, retention runs
     * in the writer's. */
    w->prune_apart = md_store_prunes_apart(store);
    w->index_apart = (md_store_caps(store) & MD_STORE_CAP_INDEX_APART) != 0;
    if (w->prune_apart && pthread_create(&w->pruner, NULL, pruner_main, w) != 0)
        w->prune_apart = 0;
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        pthread_mutex_lock(&w->mu);
        w->stopping = 1;
        pthread_mutex_unlock(&w->mu);
        pruner_finish(w);
        notifier_finish(w);
        writer_free(w);
        return NULL;
    }
    return w;
}

void md_writer_on_commit(struct md_writer *w, md_writer_commit_cb cb, void *ctx)
{
    w->on_commit = cb;
    w->on_commit_ctx = ctx;
}

enum md_err md_writer_submit(struct md_writer *w, struct md_job *job)
{
    pthread_mutex_lock(&w->mu);
    if (w->stopping || w->queued >= w->max_queue) {
        pthread_mutex_unlock(&w->mu);
        return MD_EBUSY;
    }
    /* A tenant being imported takes no other command meanwhile; an import
     * makes its tenant busy from now. */
    if (busy_find(w, job->tenant) >= 0 ||
        (job->cmd->kind == MD_CMD_IMPORT && w->import_way != IMPORT_ALONE &&
         busy_add(w, job->tenant) != MD_OK)) {
        pthread_mutex_unlock(&w->mu);
        return MD_ECONFLICT;
    }
    job->next = NULL;
    if (w->tail)
        w->tail->next = job;
    else
        w->head = job;
    w->tail = job;
    w->queued++;
    md_metrics_queue_depth(w->queued);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return MD_OK;
}

int md_writer_importing(struct md_writer *w, const char *tenant)
{
    /* Every read asks: none busy (nearly always) is answered without the
     * writer's mutex. */
    if (atomic_load(&w->nbusy_seen) == 0)
        return 0;
    pthread_mutex_lock(&w->mu);
    int busy = busy_find(w, tenant) >= 0;
    pthread_mutex_unlock(&w->mu);
    return busy;
}

void md_writer_history(struct md_writer *w, int on)
{
    /* Before any job: the writer thread reads it when an import comes. */
    pthread_mutex_lock(&w->mu);
    unsigned caps = md_store_caps(w->store);
    w->import_way = (caps & MD_STORE_CAP_IMPORT_APART)        ? IMPORT_APART
                    : (caps & MD_STORE_CAP_IMPORT_MARK) && on ? IMPORT_MARK
                                                              : IMPORT_ALONE;
    pthread_mutex_unlock(&w->mu);
}

enum md_err md_writer_recover(struct md_writer *w)
{
    if (!(md_store_caps(w->store) & MD_STORE_CAP_IMPORT_MARK))
        return MD_OK;
    pthread_mutex_lock(&w->mu);
    w->recover = RECOVER_ASKED;
    pthread_cond_signal(&w->cv);
    while (w->recover == RECOVER_ASKED)
        pthread_cond_wait(&w->recovered_cv, &w->mu);
    enum md_err e = w->recover_err;
    pthread_mutex_unlock(&w->mu);
    return e;
}

void md_writer_stop(struct md_writer *w, struct md_writer_stats *final)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pruner_finish(w);
    notifier_finish(w);
    if (final)
        md_writer_stats(w, final);
    writer_free(w);
}

void md_writer_pause(struct md_writer *w, int paused)
{
    pthread_mutex_lock(&w->mu);
    w->paused = paused;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void md_writer_stats(struct md_writer *w, struct md_writer_stats *st)
{
    pthread_mutex_lock(&w->mu);
    st->batches = w->batches;
    st->jobs = w->jobs;
    st->exec_us = w->exec_us;
    st->commit_us = w->commit_us;
    st->pruned = w->pruned;
    pthread_mutex_unlock(&w->mu);
}
