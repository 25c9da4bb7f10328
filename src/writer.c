/* writer.c — the writer thread with group commit (see md_writer.h). */
#include "md_writer.h"

#include <pthread.h>
#include <stdlib.h>

#include "md_log.h"

struct md_writer {
    struct md_store *store;
    const struct md_limits *lim;
    size_t max_batch, max_queue;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct md_job *head, *tail;
    size_t queued;
    int stopping;
    unsigned long long batches, jobs;
};

/* Replace a job's result with the generic storage-failure text. */
static void storage_failure(struct md_job *job, enum md_err err)
{
    job->err = err == MD_EBUSY ? MD_EBUSY : MD_EDB;
    md_buf_reset(job->out);
    md_buf_puts(job->out, md_cmd_storage_error_text(job->err));
}

static int is_storage_err(enum md_err e)
{
    return e == MD_EDB || e == MD_ENOMEM || e == MD_EBUSY;
}

static void run_batch(struct md_writer *w, struct md_job *batch)
{
    struct md_txn *t = NULL;
    enum md_err e = md_store_write_begin(w->store, &t);
    if (e) {
        for (struct md_job *j = batch; j; j = j->next)
            storage_failure(j, e);
        return;
    }
    enum md_err fatal = MD_OK; /* the transaction itself is lost */
    for (struct md_job *j = batch; j; j = j->next) {
        if (fatal) {
            storage_failure(j, fatal);
            continue;
        }
        e = md_txn_savepoint(t);
        if (e) {
            fatal = e;
            storage_failure(j, e);
            continue;
        }
        unsigned long before = md_txn_statements(t);
        j->err = md_cmd_exec(t, j->tenant, j->cmd, w->lim, j->out);
        j->statements = md_txn_statements(t) - before;
        e = md_txn_release(t, j->err != MD_OK);
        if (is_storage_err(j->err))
            storage_failure(j, j->err);
        if (e)
            fatal = e;
    }
    if (!fatal)
        fatal = md_txn_commit(t);
    else
        md_txn_rollback(t);
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
}

static void *writer_main(void *arg)
{
    struct md_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->head && !w->stopping)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->head)
            break; /* stopping and drained */
        struct md_job *batch = w->head, *last = batch;
        size_t n = 1;
        while (last->next && n < w->max_batch) {
            last = last->next;
            n++;
        }
        w->head = last->next;
        if (!w->head)
            w->tail = NULL;
        last->next = NULL;
        w->queued -= n;
        pthread_mutex_unlock(&w->mu);

        run_batch(w, batch);
        /* Counted before anyone hears of the results. */
        pthread_mutex_lock(&w->mu);
        w->batches++;
        w->jobs += n;
        pthread_mutex_unlock(&w->mu);
        for (struct md_job *j = batch, *next; j; j = next) {
            next = j->next;
            j->next = NULL;
            j->done(j);
        }
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
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
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
        return NULL;
    }
    return w;
}

enum md_err md_writer_submit(struct md_writer *w, struct md_job *job)
{
    pthread_mutex_lock(&w->mu);
    if (w->stopping || w->queued >= w->max_queue) {
        pthread_mutex_unlock(&w->mu);
        return MD_EBUSY;
    }
    job->next = NULL;
    if (w->tail)
        w->tail->next = job;
    else
        w->head = job;
    w->tail = job;
    w->queued++;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return MD_OK;
}

void md_writer_stop(struct md_writer *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}

void md_writer_stats(struct md_writer *w, unsigned long long *batches, unsigned long long *jobs)
{
    pthread_mutex_lock(&w->mu);
    *batches = w->batches;
    *jobs = w->jobs;
    pthread_mutex_unlock(&w->mu);
}
