/*
 * md_writer.h — the single writer thread and its group commit.
 *
 * Write commands are queued as jobs. The writer takes every queued job (up
 * to max_batch), opens one write transaction, runs each job inside its own
 * savepoint (a failing job rolls back alone), commits once — one flush for
 * the whole batch — and only then are the jobs' `done` callbacks called,
 * in order, from a second thread (the notifier), so that the writer can
 * start the next batch while the callers of the last one are told. A job
 * whose command succeeded but whose batch failed to commit is reported as a
 * storage error: nothing is acknowledged before it is durable.
 *
 * Ownership: the caller owns a job and everything it points to until
 * `done` has been called (from the notifier thread); the writer only fills
 * `err` and `out`.
 */
#ifndef MD_WRITER_H
#define MD_WRITER_H

#include <stddef.h>

#include "cmd/md_cmd.h"
#include "store/md_store.h"

struct md_job {
    struct md_job *next;      /* queue link, writer's */
    const struct md_cmd *cmd; /* borrowed */
    const char *tenant;       /* borrowed */
    struct md_buf *out;       /* result text (caller-initialised) */
    /* An Idempotency-Key (borrowed; NULL: none) and the request's
     * fingerprint: the first answer to (tenant, key) is stored with the
     * command's effect, and a retry with the same fingerprint gets it back
     * (`replayed`) without running again; another fingerprint gets
     * MD_EIDEMPOTENT. */
    const char *idem_key;
    size_t idem_key_len;
    unsigned char fingerprint[MD_SHA256_LEN];
    int replayed;
    enum md_err err;                  /* result class */
    struct md_cmd_result res;         /* what the command produced besides its text */
    struct md_txn_stats cost;         /* what the command cost in the store */
    void (*done)(struct md_job *job); /* called once, from the notifier */
};

/* Called by the notifier after each commit, before the jobs are told,
 * with the tenants that had a successful write in it (for the change
 * feed's waiters). */
typedef void (*md_writer_commit_cb)(void *ctx, const char *const *tenants, size_t n);

struct md_writer_stats {
    unsigned long long batches;   /* transactions */
    unsigned long long jobs;      /* commands */
    unsigned long long exec_us;   /* time running commands (with BEGIN) */
    unsigned long long commit_us; /* time committing (the flush) */
    unsigned long long pruned;    /* rows retention deleted (md_txn_prune) */
};

struct md_writer;

/* Start the writer thread. Returns NULL on failure. */
struct md_writer *md_writer_start(struct md_store *store, const struct md_limits *lim,
                                  size_t max_batch, size_t max_queue);

/* Set the commit hook (before any job is submitted). */
void md_writer_on_commit(struct md_writer *w, md_writer_commit_cb cb, void *ctx);

/* Say whether the store keeps history (--history-versions and -days not
 * 0), before any job is submitted: an import runs in steps between the
 * batches where the store can (md_import.h: a transaction of its own kept
 * open, or steps that each commit, undone from history on failure);
 * otherwise in one transaction of the writer's, alone. */
void md_writer_history(struct md_writer *w, int on);

/* Undo the imports a stopped memoryd left halfway (steps that each commit:
 * their marks), before anything is submitted; their tenants are busy
 * (md_writer_importing) until then. MD_OK, or a storage error. */
enum md_err md_writer_recover(struct md_writer *w);

/* Queue a job. MD_EBUSY when the queue is full or the writer is stopping,
 * MD_ECONFLICT when the job's tenant is being imported (or the job is an
 * import and another of the tenant's is queued or running): then `done`
 * will not be called. An import runs in steps between the batches (when
 * the store allows it, see md_writer_history), and its tenant takes no
 * other command until it is done. */
enum md_err md_writer_submit(struct md_writer *w, struct md_job *job);

/* Whether `tenant` has an import queued or running (or left to undo). */
int md_writer_importing(struct md_writer *w, const char *tenant);

/* Finish every queued job and call every `done`, then stop and free the
 * writer; its final stats go to `final` unless NULL. */
void md_writer_stop(struct md_writer *w, struct md_writer_stats *final);

/* While paused (`paused` 1, until called with 0) the writer takes no
 * command from the queue: they wait, up to the queue's limit, and the
 * batch it takes next holds them together. A batch already taken runs on;
 * md_writer_stop runs the queue whether paused or not. For tests that need
 * commands in one batch. */
void md_writer_pause(struct md_writer *w, int paused);

/* What the writer has done so far (for logs and tests). */
void md_writer_stats(struct md_writer *w, struct md_writer_stats *st);

#endif
