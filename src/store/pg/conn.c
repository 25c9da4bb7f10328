/*
 * conn.c — the PostgreSQL engine's connections (see internal.h): opened
 * with memoryd's session settings and statements prepared, in pipeline
 * mode; the pool of reader connections; a broken connection healed; the
 * one statement an operation needs (md_pg_exec).
 *
 * Plans are generic (plan_cache_mode): a custom plan per execution cost
 * the writer's session as much planning as running its statements. Every
 * statement (the store's table, pg_store's stmts) is prepared once per
 * connection as "m<id>" (enum pg_stmt): a writer's all of them, a reader's
 * those that only read.
 *
 * A connection that breaks is marked (pipe.c); a reader is reconnected and
 * its statement sent once more (md_pg_exec), the writer and the pruner are
 * reconnected at their next transaction (md_pg_conn_heal).
 *
 * Knows no job: it runs statements by id, and a write transaction's parts
 * are made and freed by the functions the store hands it at open
 * (pg_store's parts_new and parts_free, txn.c's).
 *
 * Owns: struct pg_conn and the transaction each holds (its pipe made and
 * freed here).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_log.h"
#include "internal.h"
#include "store/md_tenant_cache.h"

/* ---- opening ---- */

/* Queue the preparation of the connection's statements: *prepared, how
 * many. 0, or -1 with the reason in `why`. */
static int prepare_all(const struct pg_store *s, PGconn *pq, int write, int *prepared, char *why,
                       size_t why_len)
{
    *prepared = 0;
    for (int i = 0; i < P_COUNT; i++) {
        const struct pg_stmt_def *d = s->stmts[i];
        if (!d) {
            snprintf(why, why_len, "statement %d has no SQL", i);
            return -1;
        }
        if (!write && !d->reader)
            continue;
        char name[8];
        snprintf(name, sizeof name, "m%d", i);
        (*prepared)++;
        if (!PQsendPrepare(pq, name, d->sql, d->nparams, d->types)) {
            snprintf(why, why_len, "cannot prepare statements: %s", PQerrorMessage(pq));
            return -1;
        }
    }
    if (!PQpipelineSync(pq)) {
        snprintf(why, why_len, "cannot prepare statements: %s", PQerrorMessage(pq));
        return -1;
    }
    return 0;
}

/* Read the answers of prepare_all: 0, or -1 with the first error. */
static int prepared_ok(PGconn *pq, int prepared, char *why, size_t why_len)
{
    int bad = -1;
    for (int i = 0; i < prepared; i++) {
        PGresult *r = PQgetResult(pq);
        if (PQresultStatus(r) != PGRES_COMMAND_OK && bad < 0) {
            bad = i;
            snprintf(why, why_len, "cannot prepare statements: %s",
                     r ? PQresultErrorMessage(r) : PQerrorMessage(pq));
        }
        PQclear(r);
        if (r)
            PQclear(PQgetResult(pq)); /* the NULL that ends it */
    }
    PGresult *r = PQgetResult(pq);
    int ok = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
    PQclear(r);
    if (!ok && bad < 0)
        snprintf(why, why_len, "cannot prepare statements: %s", PQerrorMessage(pq));
    return ok && bad < 0 ? 0 : -1;
}

int md_pg_conn_setup(struct pg_store *s, PGconn *pq, int write, char *why, size_t why_len)
{
    const char *enc = PQparameterStatus(pq, "server_encoding");
    if (!enc || (strcmp(enc, "UTF8") != 0 && strcmp(enc, "SQL_ASCII") != 0)) {
        snprintf(why, why_len,
                 "the database's encoding is %s: memoryd needs UTF8 (or SQL_ASCII); create it "
                 "with ENCODING 'UTF8'",
                 enc ? enc : "unknown");
        return -1;
    }
    /* jit off: memoryd's statements are short, and the planner's estimate
     * of the change feed's paths (string_to_table: a thousand rows a
     * write) put a search over jit_above_cost, whose compiling took half a
     * second. */
    char sql[384];
    snprintf(sql, sizeof sql,
             "SET synchronous_commit = %s; SET lock_timeout = %d;"
             " SET max_parallel_workers_per_gather = 0; SET plan_cache_mode = force_generic_plan;"
             " SET default_transaction_isolation = 'read committed'; SET jit = off",
             s->cfg.durability == MD_DURABILITY_FULL ? "on" : "off", s->cfg.busy_timeout_ms);
    PGresult *r = PQexec(pq, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok || !PQenterPipelineMode(pq)) {
        snprintf(why, why_len, "cannot set up the session: %s", PQerrorMessage(pq));
        return -1;
    }
    int prepared = 0;
    if (prepare_all(s, pq, write, &prepared, why, why_len) != 0)
        return -1;
    return prepared_ok(pq, prepared, why, why_len);
}

void md_pg_conn_close(struct pg_conn *c)
{
    if (!c)
        return;
    md_pg_pipe_free(&c->txn.pipe);
    md_buf_free(&c->txn.vtext);
    md_pg_store_of(&c->txn)->parts_free(&c->txn);
    md_tenant_cache_free(c->tenants);
    if (c->pq)
        PQfinish(c->pq);
    free(c);
}

struct pg_conn *md_pg_conn_open(struct pg_store *s, int write, char *why, size_t why_len)
{
    struct pg_conn *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    c->tenants = md_tenant_cache_new();
    c->txn.base.store = &s->base;
    c->txn.conn = c;
    c->txn.write = write;
    md_pg_pipe_init(&c->txn.pipe);
    md_buf_init(&c->txn.vtext, (size_t)1 << 31);
    if (!c->tenants || (write && s->parts_new(&c->txn) != 0)) {
        snprintf(why, why_len, "out of memory");
        md_pg_conn_close(c);
        return NULL;
    }
    c->pq = md_pg_connect(s->uri, why, why_len);
    if (!c->pq || md_pg_conn_setup(s, c->pq, write, why, why_len) != 0) {
        md_pg_conn_close(c);
        return NULL;
    }
    return c;
}

/* ---- readers ---- */

enum md_err md_pg_read_begin(struct md_store *base, struct md_txn **out)
{
    struct pg_store *s = (struct pg_store *)base;
    pthread_mutex_lock(&s->pool_mu);
    struct pg_conn *c = s->idle;
    if (c) {
        s->idle = c->next_idle;
        s->nidle--;
    }
    pthread_mutex_unlock(&s->pool_mu);
    if (!c) {
        char why[512];
        c = md_pg_conn_open(s, 0, why, sizeof why);
        if (!c) {
            md_log_msg(MD_LOG_ERROR, "cannot open a reader connection", why);
            return MD_EUNAVAIL;
        }
    }
    c->txn.pipe.st = (struct md_txn_stats){0, 0};
    *out = &c->txn.base;
    return MD_OK;
}

void md_pg_read_end(struct md_txn *base)
{
    struct pg_store *s = (struct pg_store *)base->store;
    struct pg_conn *c = ((struct pg_txn *)base)->conn;
    PQclear(c->txn.pipe.res);
    c->txn.pipe.res = NULL;
    c->txn.pipe.nqueued = 0;
    pthread_mutex_lock(&s->pool_mu);
    int keep = !c->broken && s->nidle < s->own.readers;
    if (keep) {
        c->next_idle = s->idle;
        s->idle = c;
        s->nidle++;
    }
    pthread_mutex_unlock(&s->pool_mu);
    if (!keep)
        md_pg_conn_close(c);
}

/* A reader's broken connection replaced by a new one (the txn stays where
 * its caller holds it): MD_OK or MD_EUNAVAIL. */
static enum md_err reopen(struct pg_txn *t)
{
    char why[512];
    struct pg_conn *fresh = md_pg_conn_open(md_pg_store_of(t), 0, why, sizeof why);
    if (!fresh)
        return MD_EUNAVAIL;
    /* Swap the connections: the txn stays where its caller holds it. */
    PGconn *old = t->conn->pq;
    t->conn->pq = fresh->pq;
    t->conn->broken = 0;
    fresh->pq = old;
    md_pg_conn_close(fresh);
    return MD_OK;
}

/* A reader's statement; its connection replaced once when found broken. */
static enum md_err read_exec(struct pg_txn *t, enum pg_stmt id, const struct md_pg_params *p)
{
    if (t->fetched)
        return t->fetched(t, id);
    for (int attempt = 0;; attempt++) {
        enum md_err e = md_pg_send(t, id, p);
        if (!e)
            e = md_pg_flush(t, id);
        if (e != MD_EUNAVAIL || attempt > 0 || t->write)
            return e;
        if (reopen(t) != MD_OK)
            return MD_EUNAVAIL;
    }
}

enum md_err md_pg_exec(struct pg_txn *t, enum pg_stmt id, const struct md_pg_params *p)
{
    if (!t->write)
        return read_exec(t, id, p);
    enum md_err e = md_pg_send(t, id, p);
    return e ? e : md_pg_flush(t, id);
}

/* ---- the writer and the pruner ---- */

enum md_err md_pg_conn_heal(struct pg_store *s, struct pg_conn **slot, unsigned long *failures,
                            const char *what)
{
    if (*slot && !(*slot)->broken)
        return MD_OK;
    char why[512] = "", msg[64];
    struct pg_conn *c = md_pg_conn_open(s, 1, why, sizeof why);
    if (!c) {
        if ((*failures)++ % 1000 == 0) {
            struct md_logline l;
            snprintf(msg, sizeof msg, "cannot reopen the %s connection", what);
            md_log_begin(&l, MD_LOG_ERROR, msg);
            md_log_str(&l, "detail", why);
            md_log_int(&l, "attempts", (int64_t)*failures);
            md_log_end(&l);
        }
        return MD_EUNAVAIL;
    }
    if (*slot) {
        struct md_logline l;
        snprintf(msg, sizeof msg, "%s connection reopened", what);
        md_log_begin(&l, MD_LOG_WARN, msg);
        md_log_int(&l, "failed_attempts", (int64_t)*failures);
        md_log_end(&l);
    }
    md_pg_conn_close(*slot);
    *slot = c;
    *failures = 0;
    return MD_OK;
}
