/*
 * reads.c — reads answered without a thread waiting for them (see
 * internal.h): one thread multiplexes a few connections in
 * libpq's nonblocking pipeline mode, as pgbench's client does.
 *
 * Each connection has at most one group of queries in flight: its queries
 * sent in one write, then one Sync. Queries given while every connection
 * is busy are held, and go as the next group of the first connection that
 * answers; so the busier the server, the larger the groups, and a server
 * process reads a whole group and answers it in one go. An idle server
 * gets each query at once. Results come back in order on each connection
 * (a FIFO of the queries sent), and each goes to its query's callback on
 * this thread. A query given while every connection has a group in
 * flight does not wake the thread: the first answer will.
 *
 * Failures: a query the server refuses gets its error; those behind it in
 * the same group come back "aborted" and are sent again. A connection that
 * breaks is closed and its queries sent again, each once, on the others or
 * on a new connection; reconnecting is tried at most every RECONNECT_MS
 * while the server cannot be reached, and meanwhile queries fail at once
 * with MD_EUNAVAIL, as a blocking read would.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/md_log.h"
#include "base/md_metrics.h"
#include "internal.h"

#define MAX_CONNS    16
#define RECONNECT_MS 100
#define MAX_ABORTS   8 /* times a query is sent again after others' errors */

struct rconn {
    PGconn *pq;
    int fd;
    struct md_pg_query *head, *tail; /* sent, awaiting their results, in order */
    int synced;                      /* a group is in flight: its Sync not answered */
    PGresult *res;                   /* the head's result, before the NULL that ends it */
    int want_out;                    /* libpq holds data not sent yet: EPOLLOUT wanted */
};

/* A list of queries, in order. */
struct qlist {
    struct md_pg_query *head, **tail;
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
    struct qlist pending; /* given, not taken by the thread yet (mu) */
    int stop;             /* (mu) */
    atomic_int in_flight; /* groups in flight: their answers will wake the thread */
    struct qlist held;    /* the thread's: taken, waiting for a connection */
    int64_t retry_at_ms;  /* no reconnecting before then */
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void ql_init(struct qlist *l)
{
    l->head = NULL;
    l->tail = &l->head;
}

static void ql_push(struct qlist *l, struct md_pg_query *q)
{
    q->next = NULL;
    *l->tail = q;
    l->tail = &q->next;
}

/* Append list `b` to `a`; `b` is left empty. */
static void ql_join(struct qlist *a, struct qlist *b)
{
    if (!b->head)
        return;
    *a->tail = b->head;
    a->tail = b->tail;
    ql_init(b);
}

static struct md_pg_query *ql_pop(struct qlist *l)
{
    struct md_pg_query *q = l->head;
    if (q) {
        l->head = q->next;
        if (!l->head)
            l->tail = &l->head;
        q->next = NULL;
    }
    return q;
}

static void wake(struct md_pg_reads *r)
{
    uint64_t one = 1;
    ssize_t n = write(r->efd, &one, sizeof one);
    (void)n; /* the counter cannot overflow: the thread reads it */
}

void md_pg_reads_submit(struct md_pg_reads *r, struct md_pg_query *q)
{
    pthread_mutex_lock(&r->mu);
    int first = r->pending.head == NULL; /* else a wake-up is on its way */
    ql_push(&r->pending, q);
    pthread_mutex_unlock(&r->mu);
    /* While every connection has a group in flight, the first answer wakes
     * the thread, which then takes what is pending (in_flight is lowered
     * before that); else a connection is free (or can be opened) now. */
    if (first && atomic_load(&r->in_flight) < (int)r->nconns)
        wake(r);
}

static void finish(struct md_pg_query *q, PGresult *res, enum md_err e)
{
    q->done(q, res, e);
}

/* ---- connections ---- */

static void set_synced(struct md_pg_reads *r, struct rconn *c, int on)
{
    if (c->synced != on)
        atomic_fetch_add(&r->in_flight, on ? 1 : -1);
    c->synced = on;
}

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
    set_synced(r, c, 0);
    c->want_out = 0;
    c->head = c->tail = NULL;
}

/* The connection broke: every query sent on it goes again once (held for
 * the next group); a query that already went again fails. */
static void conn_fail(struct md_pg_reads *r, struct rconn *c, const char *why)
{
    md_log_msg(MD_LOG_ERROR, "lost a reader connection", why);
    md_metrics_storage_error();
    struct md_pg_query *q = c->head;
    c->head = c->tail = NULL;
    conn_drop(r, c);
    struct qlist again;
    ql_init(&again);
    for (struct md_pg_query *next; q; q = next) {
        next = q->next;
        if (q->resent) {
            finish(q, NULL, MD_EUNAVAIL);
        } else {
            q->resent = 1;
            ql_push(&again, q);
        }
    }
    /* Before what is held: they were sent first. */
    ql_join(&again, &r->held);
    if (again.head)
        r->held = again; /* (`again` is not used after: its tail is a node's) */
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
        md_log_msg(MD_LOG_ERROR, "cannot open a reader connection", why);
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    c->pq = pq;
    c->fd = PQsocket(pq);
    if (epoll_ctl(r->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        md_log_msg(MD_LOG_ERROR, "cannot open a reader connection", strerror(errno));
        conn_drop(r, c);
        return -1;
    }
    return 0;
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

/* Send the first `n` held queries on idle connection `c` as a group. */
static void conn_send(struct md_pg_reads *r, struct rconn *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct md_pg_query *q = ql_pop(&r->held);
        const struct md_pg_params *p = &q->p;
        /* In the FIFO first: conn_fail gives it back with the others. */
        if (c->tail)
            c->tail->next = q;
        else
            c->head = q;
        c->tail = q;
        if (!PQsendQueryPrepared(c->pq, q->stmt, p->n, p->v, p->len, p->fmt, 1)) {
            conn_fail(r, c, PQerrorMessage(c->pq));
            return;
        }
    }
    if (!PQpipelineSync(c->pq)) {
        conn_fail(r, c, PQerrorMessage(c->pq));
        return;
    }
    set_synced(r, c, 1);
    conn_flush(r, c);
}

/* The head query's results are in (its NULL came): hand them over. */
static void head_done(struct md_pg_reads *r, struct rconn *c)
{
    struct md_pg_query *q = c->head;
    c->head = q->next;
    if (!c->head)
        c->tail = NULL;
    q->next = NULL;
    PGresult *res = c->res;
    c->res = NULL;
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
        finish(q, res, MD_OK);
        return;
    }
    if (st == PGRES_PIPELINE_ABORTED && q->aborts < MAX_ABORTS) {
        /* Another query of its group failed: this one never ran. */
        PQclear(res);
        q->aborts++;
        ql_push(&r->held, q);
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
    while (c->pq && c->synced && !PQisBusy(c->pq)) {
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
            if (c->head || c->res) {
                conn_fail(r, c, "the server's answers are out of order");
                return;
            }
            set_synced(r, c, 0); /* idle: ready for the next group */
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

/* Send what is held: split over the idle connections, opening one when
 * none is idle and fewer than nconns are open; fail it all when the
 * database cannot be reached. */
static void dispatch(struct md_pg_reads *r)
{
    while (r->held.head) {
        struct rconn *idle[MAX_CONNS];
        unsigned nidle = 0, nopen = 0;
        struct rconn *closed = NULL;
        for (unsigned i = 0; i < r->nconns; i++) {
            struct rconn *c = &r->c[i];
            if (c->pq) {
                nopen++;
                if (!c->synced)
                    idle[nidle++] = c;
            } else if (!closed) {
                closed = c;
            }
        }
        if (nidle == 0 && closed) {
            int64_t now = mono_ms();
            if (now >= r->retry_at_ms) {
                if (conn_open(r, closed) == 0) {
                    idle[nidle++] = closed;
                    nopen++;
                } else {
                    r->retry_at_ms = now + RECONNECT_MS;
                }
            }
        }
        if (nidle == 0) {
            if (nopen > 0)
                return; /* the groups in flight will answer first */
            for (struct md_pg_query *q; (q = ql_pop(&r->held));)
                finish(q, NULL, MD_EUNAVAIL);
            return;
        }
        size_t n = 0;
        for (struct md_pg_query *q = r->held.head; q; q = q->next)
            n++;
        for (unsigned i = 0; i < nidle && r->held.head; i++) {
            size_t share = (n + nidle - i - 1) / (nidle - i);
            conn_send(r, idle[i], share);
            n -= share;
        }
    }
}

static void *loop(void *arg)
{
    struct md_pg_reads *r = arg;
    struct epoll_event ev[MAX_CONNS + 1];
    for (;;) {
        int n = epoll_wait(r->ep, ev, MAX_CONNS + 1, -1);
        if (n < 0 && errno != EINTR) {
            md_log_msg(MD_LOG_ERROR, "the reader thread cannot wait", strerror(errno));
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
        pthread_mutex_lock(&r->mu);
        int stop = r->stop;
        ql_join(&r->held, &r->pending);
        pthread_mutex_unlock(&r->mu);
        if (stop)
            break;
        dispatch(r);
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
    ql_init(&r->pending);
    ql_init(&r->held);
    atomic_init(&r->in_flight, 0);
    r->ep = epoll_create1(EPOLL_CLOEXEC);
    r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    pthread_mutex_init(&r->mu, NULL);
    for (unsigned i = 0; i < MAX_CONNS; i++)
        r->c[i].fd = -1;
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
        wake(r);
        pthread_join(r->th, NULL);
    }
    /* What is still in flight or held fails: nothing answers it now. */
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
    ql_join(&r->held, &r->pending);
    for (struct md_pg_query *q; (q = ql_pop(&r->held));)
        finish(q, NULL, MD_EUNAVAIL);
    if (r->ep >= 0)
        close(r->ep);
    if (r->efd >= 0)
        close(r->efd);
    pthread_mutex_destroy(&r->mu);
    free(r->uri);
    free(r);
}
