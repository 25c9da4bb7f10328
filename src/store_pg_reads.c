/*
 * store_pg_reads.c — reads answered without a thread waiting for them (see
 * store_pg_internal.h): one thread multiplexes a few connections in
 * libpq's nonblocking pipeline mode, as pgbench's client does.
 *
 * The queries given while the thread was busy are sent together: spread
 * over the connections (each to the one with the fewest in flight), each
 * connection's share in one write and one Sync, so that a server process
 * reads several and answers them in one go. Results come back in order on
 * each connection (a FIFO of the queries sent), and each goes to its
 * query's callback on this thread.
 *
 * Failures: a query the server refuses gets its error; those behind it in
 * the same Sync come back "aborted" and are sent again. A connection that
 * breaks is closed and its queries sent again, each once, on the others or
 * on a new connection; reconnecting is tried at most every RECONNECT_MS
 * while the server cannot be reached, and meanwhile queries fail at once
 * with MD_EUNAVAIL, as a blocking read would.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "md_log.h"
#include "md_metrics.h"
#include "store_pg_internal.h"

#define MAX_CONNS    16
#define RECONNECT_MS 100
#define MAX_ABORTS   8 /* times a query is sent again after others' errors */

struct rconn {
    PGconn *pq;
    int fd;
    struct md_pg_query *head, *tail; /* sent, awaiting their results, in order */
    unsigned inflight;               /* queries in that list */
    unsigned syncs;                  /* Syncs sent whose answer is not read yet */
    PGresult *res;                   /* the head's result, before the NULL that ends it */
    int want_out;                    /* libpq holds data not sent yet: EPOLLOUT wanted */
    struct md_pg_query *batch;       /* this round's queries for it, not sent yet */
    struct md_pg_query **batch_tail;
};

struct md_pg_reads {
    char *uri;
    md_pg_setup_fn setup;
    void *setup_ctx;
    unsigned nconns;
    struct rconn c[MAX_CONNS];
    int ep, efd;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    struct md_pg_query *pending, **pending_tail; /* given, not taken by the thread yet */
    int stop;
    int64_t retry_at_ms; /* no reconnecting before then */
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void log_conn(const char *msg, const char *why)
{
    md_log_msg(MD_LOG_ERROR, msg, why);
}

/* ---- the list of queries given ---- */

void md_pg_reads_submit(struct md_pg_reads *r, struct md_pg_query *q)
{
    q->next = NULL;
    pthread_mutex_lock(&r->mu);
    int wake = r->pending == NULL; /* else a wake-up is on its way */
    *r->pending_tail = q;
    r->pending_tail = &q->next;
    pthread_mutex_unlock(&r->mu);
    if (wake) {
        uint64_t one = 1;
        ssize_t n = write(r->efd, &one, sizeof one);
        (void)n; /* the counter cannot overflow: the thread reads it */
    }
}

static struct md_pg_query *take_pending(struct md_pg_reads *r, int *stop)
{
    pthread_mutex_lock(&r->mu);
    struct md_pg_query *q = r->pending;
    r->pending = NULL;
    r->pending_tail = &r->pending;
    *stop = r->stop;
    pthread_mutex_unlock(&r->mu);
    return q;
}

/* Give a query back to the list, to be sent in the next round. */
static void again(struct md_pg_reads *r, struct md_pg_query *q)
{
    md_pg_reads_submit(r, q);
}

static void finish(struct md_pg_query *q, PGresult *res, enum md_err e)
{
    q->done(q, res, e);
}

/* ---- connections ---- */

static void conn_drop(struct md_pg_reads *r, struct rconn *c)
{
    if (c->pq) {
        epoll_ctl(r->ep, EPOLL_CTL_DEL, c->fd, NULL);
        PQfinish(c->pq);
    }
    PQclear(c->res);
    c->pq = NULL;
    c->fd = -1;
    c->res = NULL;
    c->inflight = c->syncs = 0;
    c->want_out = 0;
    c->head = c->tail = NULL;
}

/* The connection broke: every query on it (sent or about to be) goes
 * again once; a query that already went again fails. */
static void conn_fail(struct md_pg_reads *r, struct rconn *c, const char *why)
{
    log_conn("lost a reader connection", why);
    md_metrics_storage_error();
    struct md_pg_query *sent = c->head, *unsent = c->batch;
    c->head = c->tail = NULL;
    c->batch = NULL;
    c->batch_tail = &c->batch;
    conn_drop(r, c);
    for (struct md_pg_query *q = sent, *next; q; q = next) {
        next = q->next;
        if (q->resent) {
            finish(q, NULL, MD_EUNAVAIL);
        } else {
            q->resent = 1;
            again(r, q);
        }
    }
    for (struct md_pg_query *q = unsent, *next; q; q = next) {
        next = q->next;
        again(r, q);
    }
}

static int conn_open(struct md_pg_reads *r, struct rconn *c)
{
    char why[512];
    PGconn *pq = md_pg_connect(r->uri, why, sizeof why);
    if (pq && r->setup(pq, r->setup_ctx, why, sizeof why) != 0) {
        PQfinish(pq);
        pq = NULL;
    }
    if (pq && PQsetnonblocking(pq, 1) != 0) {
        snprintf(why, sizeof why, "cannot make the connection nonblocking: %s", PQerrorMessage(pq));
        PQfinish(pq);
        pq = NULL;
    }
    if (!pq) {
        log_conn("cannot open a reader connection", why);
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    c->pq = pq;
    c->fd = PQsocket(pq);
    if (epoll_ctl(r->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        log_conn("cannot open a reader connection", strerror(errno));
        conn_drop(r, c);
        return -1;
    }
    return 0;
}

/* The connection for the next query: the open one with the fewest in
 * flight, or a closed one opened now when every open one is busy (or none
 * is open). NULL when none can be had. */
static struct rconn *pick(struct md_pg_reads *r)
{
    struct rconn *best = NULL, *closed = NULL;
    for (unsigned i = 0; i < r->nconns; i++) {
        struct rconn *c = &r->c[i];
        if (!c->pq) {
            if (!closed)
                closed = c;
            continue;
        }
        if (!best || c->inflight < best->inflight)
            best = c;
    }
    if (closed && (!best || best->inflight > 0)) {
        int64_t now = mono_ms();
        if (now >= r->retry_at_ms) {
            if (conn_open(r, closed) == 0)
                return closed;
            r->retry_at_ms = now + RECONNECT_MS;
        }
    }
    return best;
}

static void want_out(struct md_pg_reads *r, struct rconn *c, int on)
{
    if (c->want_out == on)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(r->ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = on;
}

static void conn_flush(struct md_pg_reads *r, struct rconn *c)
{
    int f = PQflush(c->pq);
    if (f < 0)
        conn_fail(r, c, PQerrorMessage(c->pq));
    else
        want_out(r, c, f == 1);
}

/* Send this round's queries of `c`, then one Sync. */
static void conn_send(struct md_pg_reads *r, struct rconn *c)
{
    struct md_pg_query *q = c->batch;
    c->batch = NULL;
    c->batch_tail = &c->batch;
    while (q) {
        struct md_pg_query *next = q->next;
        q->next = NULL;
        const struct md_pg_params *p = &q->p;
        if (!PQsendQueryPrepared(c->pq, q->stmt, p->n, p->v, p->len, p->fmt, 1)) {
            /* Give the rest back to the batch: conn_fail sends them again. */
            q->next = next;
            c->batch = q;
            conn_fail(r, c, PQerrorMessage(c->pq));
            return;
        }
        if (c->tail)
            c->tail->next = q;
        else
            c->head = q;
        c->tail = q;
        c->inflight++;
        q = next;
    }
    if (!PQpipelineSync(c->pq)) {
        conn_fail(r, c, PQerrorMessage(c->pq));
        return;
    }
    c->syncs++;
    conn_flush(r, c);
}

/* The head query's results are in (its NULL came): hand them over. */
static void head_done(struct md_pg_reads *r, struct rconn *c)
{
    struct md_pg_query *q = c->head;
    c->head = q->next;
    if (!c->head)
        c->tail = NULL;
    c->inflight--;
    q->next = NULL;
    PGresult *res = c->res;
    c->res = NULL;
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
        finish(q, res, MD_OK);
        return;
    }
    if (st == PGRES_PIPELINE_ABORTED && q->aborts < MAX_ABORTS) {
        /* Another query of its Sync failed: this one never ran. */
        PQclear(res);
        q->aborts++;
        again(r, q);
        return;
    }
    enum md_err e = md_pg_classify(c->pq, res);
    if (st != PGRES_PIPELINE_ABORTED) {
        struct md_logline l;
        md_log_begin(&l, MD_LOG_ERROR, "postgres error");
        md_log_str(&l, "op", q->stmt);
        const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        if (state)
            md_log_str(&l, "sqlstate", state);
        md_log_str(&l, "error", res ? PQresultErrorMessage(res) : "no result");
        md_log_end(&l);
        md_metrics_storage_error();
    }
    PQclear(res);
    finish(q, NULL, e == MD_OK ? MD_EDB : e);
}

/* Read what has come on `c` and hand over every result complete. */
static void conn_read(struct md_pg_reads *r, struct rconn *c)
{
    if (!PQconsumeInput(c->pq)) {
        conn_fail(r, c, PQerrorMessage(c->pq));
        return;
    }
    while (c->pq && (c->head || c->syncs) && !PQisBusy(c->pq)) {
        PGresult *res = PQgetResult(c->pq);
        if (!res) {
            if (!c->head || !c->res) {
                conn_fail(r, c, "the server's answers are out of order");
                return;
            }
            head_done(r, c);
            continue;
        }
        if (PQresultStatus(res) == PGRES_PIPELINE_SYNC) {
            PQclear(res);
            if (c->syncs == 0 || c->res) {
                conn_fail(r, c, "the server's answers are out of order");
                return;
            }
            c->syncs--;
            continue;
        }
        if (c->res || !c->head) { /* one result per statement */
            PQclear(res);
            conn_fail(r, c, "the server's answers are out of order");
            return;
        }
        c->res = res;
    }
    if (c->pq && c->want_out)
        conn_flush(r, c);
}

/* ---- the thread ---- */

/* Send the queries given since the last round. */
static void dispatch(struct md_pg_reads *r, struct md_pg_query *q)
{
    while (q) {
        struct md_pg_query *next = q->next;
        q->next = NULL;
        struct rconn *c = pick(r);
        if (!c) {
            finish(q, NULL, MD_EUNAVAIL);
        } else {
            *c->batch_tail = q;
            c->batch_tail = &q->next;
            c->inflight++; /* counted for pick(); conn_send counts it again */
        }
        q = next;
    }
    for (unsigned i = 0; i < r->nconns; i++) {
        struct rconn *c = &r->c[i];
        if (!c->batch)
            continue;
        for (struct md_pg_query *b = c->batch; b; b = b->next)
            c->inflight--;
        conn_send(r, c);
    }
}

static void *loop(void *arg)
{
    struct md_pg_reads *r = arg;
    struct epoll_event ev[MAX_CONNS + 1];
    for (;;) {
        int n = epoll_wait(r->ep, ev, MAX_CONNS + 1, -1);
        if (n < 0 && errno != EINTR) {
            log_conn("the reader thread cannot wait", strerror(errno));
            break;
        }
        for (int i = 0; i < n; i++) {
            if (ev[i].data.ptr == NULL) {
                uint64_t v;
                ssize_t got = read(r->efd, &v, sizeof v);
                (void)got;
                continue;
            }
            struct rconn *c = ev[i].data.ptr;
            if (c->pq)
                conn_read(r, c); /* also flushes what is left to send */
        }
        int stop;
        struct md_pg_query *q = take_pending(r, &stop);
        if (stop) {
            for (struct md_pg_query *next; q; q = next) {
                next = q->next;
                finish(q, NULL, MD_EUNAVAIL);
            }
            break;
        }
        dispatch(r, q);
    }
    return NULL;
}

struct md_pg_reads *md_pg_reads_start(const char *uri, unsigned nconns, md_pg_setup_fn setup,
                                      void *ctx)
{
    struct md_pg_reads *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->uri = strdup(uri);
    r->setup = setup;
    r->setup_ctx = ctx;
    r->nconns = nconns < 1 ? 1 : nconns > MAX_CONNS ? MAX_CONNS : nconns;
    r->pending_tail = &r->pending;
    r->ep = epoll_create1(EPOLL_CLOEXEC);
    r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    pthread_mutex_init(&r->mu, NULL);
    for (unsigned i = 0; i < MAX_CONNS; i++) {
        r->c[i].fd = -1;
        r->c[i].batch_tail = &r->c[i].batch;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (!r->uri || r->ep < 0 || r->efd < 0 || epoll_ctl(r->ep, EPOLL_CTL_ADD, r->efd, &ev) != 0 ||
        pthread_create(&r->th, NULL, loop, r) != 0) {
        md_pg_reads_stop(r);
        return NULL;
    }
    r->started = 1;
    return r;
}

void md_pg_reads_stop(struct md_pg_reads *r)
{
    if (!r)
        return;
    if (r->started) {
        pthread_mutex_lock(&r->mu);
        r->stop = 1;
        pthread_mutex_unlock(&r->mu);
        uint64_t one = 1;
        ssize_t n = write(r->efd, &one, sizeof one);
        (void)n;
        pthread_join(r->th, NULL);
    }
    /* What is still in flight fails: nothing answers it now. */
    for (unsigned i = 0; i < r->nconns; i++) {
        struct rconn *c = &r->c[i];
        struct md_pg_query *q = c->head;
        c->head = c->tail = NULL;
        conn_drop(r, c);
        for (struct md_pg_query *next; q; q = next) {
            next = q->next;
            finish(q, NULL, MD_EUNAVAIL);
        }
    }
    if (r->ep >= 0)
        close(r->ep);
    if (r->efd >= 0)
        close(r->efd);
    pthread_mutex_destroy(&r->mu);
    free(r->uri);
    free(r);
}
