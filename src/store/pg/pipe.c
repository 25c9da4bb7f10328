/*
 * pipe.c — the pipeline of a PostgreSQL connection (see internal.h).
 *
 * Every connection runs in libpq's pipeline mode with memoryd's statements
 * prepared once (conn.c), parameters and results in binary. An operation
 * queues its statements and sends them with whatever was queued before it
 * (BEGIN, the tenant locks, a savepoint, the release of the previous
 * command) in one round trip: a flush sends a Sync and reads every result
 * in order. So a view costs one round trip, and a write command two
 * (md_txn_locate, then the write); a batch adds one for its COMMIT.
 *
 * An optimistic batch (batch.c) gathers the rows of its inserts and file
 * updates into one bulk statement each: the pipe holds the rows gathered
 * and queues them before any other statement, or at the flush. A flush
 * that fails in an optimistic batch abandons its attempt (attempt.c).
 *
 * Statements go by id; their definitions (the number of a bulk
 * statement's parameters, the SQL a log line names) are read from the
 * store's table (pg_store's stmts). Below every file but attempt.c and
 * wire.c: it calls no other.
 *
 * Owns: struct pg_pipe (each txn's; init/free here). Failures: an error
 * from the server fails the operation and is logged here (but a unique
 * violation, MD_EEXIST, which the caller answers); a connection that
 * breaks is marked broken (conn.c reopens it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_log.h"
#include "base/md_metrics.h"
#include "internal.h"

/* A bulk statement is sent when its contents reach this many bytes. */
#define BULK_MAX_BYTES ((size_t)1 << 20)

/* Statement `id` as its file wrote it (the store's table). */
static const struct pg_stmt_def *def_of(const struct pg_txn *t, enum pg_stmt id)
{
    return md_pg_store_of(t)->stmts[id];
}

static void log_pg(const struct pg_txn *t, const PGresult *res, enum pg_stmt id)
{
    const struct pg_conn *c = t->conn;
    const struct pg_stmt_def *def = def_of(t, id);
    struct md_logline l;
    md_log_begin(&l, MD_LOG_ERROR, "postgres error");
    md_log_str(&l, "op", def ? def->sql : NULL);
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (state)
        md_log_str(&l, "sqlstate", state);
    const char *msg = res ? PQresultErrorMessage(res) : PQerrorMessage(c->pq);
    char text[512];
    snprintf(text, sizeof text, "%s", msg && *msg ? msg : "connection lost");
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
        text[--n] = '\0';
    md_log_str(&l, "error", text);
    md_log_end(&l);
    md_metrics_storage_error();
}

void md_pg_pipe_init(struct pg_pipe *p)
{
    *p = (struct pg_pipe){.counted_id = P_COUNT, .gather = {.id = P_COUNT}};
    for (size_t i = 0; i < sizeof p->arrays / sizeof p->arrays[0]; i++)
        md_buf_init(&p->arrays[i], (size_t)64 << 20);
    for (size_t i = 0; i < sizeof p->gather.cols / sizeof p->gather.cols[0]; i++)
        md_buf_init(&p->gather.cols[i], (size_t)64 << 20);
}

void md_pg_pipe_free(struct pg_pipe *p)
{
    PQclear(p->res);
    p->res = NULL;
    free(p->queued);
    p->queued = NULL;
    for (size_t i = 0; i < sizeof p->arrays / sizeof p->arrays[0]; i++)
        md_buf_free(&p->arrays[i]);
    for (size_t i = 0; i < sizeof p->gather.cols / sizeof p->gather.cols[0]; i++)
        md_buf_free(&p->gather.cols[i]);
}

void md_pg_pipe_reset(struct pg_pipe *p)
{
    p->nqueued = p->mark = 0;
}

void md_pg_gather_drop(struct pg_pipe *p)
{
    p->gather.rows = p->gather.bytes = 0;
    p->gather.id = P_COUNT;
}

void md_pg_pipe_mark(struct pg_pipe *p)
{
    p->mark = p->nqueued;
    p->gathered_since_mark = 0;
}

size_t md_pg_pipe_unsent(const struct pg_pipe *p)
{
    return (p->nqueued > p->mark ? p->nqueued - p->mark : 0) + (size_t)p->gathered_since_mark;
}

/* Queue statement `id` at once; `counted`: it counts as one of the txn's
 * statements (a bulk statement's share was counted by each command that
 * added rows). */
static enum md_err queue(struct pg_txn *t, enum pg_stmt id, const struct md_pg_params *p,
                         int counted)
{
    struct pg_conn *c = t->conn;
    struct pg_pipe *pp = &t->pipe;
    if (c->broken)
        return MD_EUNAVAIL;
    if (pp->nqueued == pp->capqueued) {
        size_t cap = pp->capqueued ? pp->capqueued * 2 : 64;
        enum pg_stmt *q = realloc(pp->queued, cap * sizeof *q);
        if (!q)
            return MD_ENOMEM;
        pp->queued = q;
        pp->capqueued = cap;
    }
    char name[8];
    snprintf(name, sizeof name, "m%d", (int)id);
    static const struct md_pg_params none = {{0}, {0}, {0}, {{0}}, 0};
    if (!p)
        p = &none;
    if (!PQsendQueryPrepared(c->pq, name, p->n, p->v, p->len, p->fmt, 1)) {
        log_pg(t, NULL, id);
        c->broken = 1;
        return MD_EUNAVAIL;
    }
    pp->queued[pp->nqueued++] = id;
    if (counted)
        pp->st.statements++;
    pp->wire.statements++;
    return MD_OK;
}

enum md_err md_pg_send_now(struct pg_txn *t, enum pg_stmt id, const struct md_pg_params *p)
{
    return queue(t, id, p, 1);
}

/* Queue the bulk statement gathered so far. */
static enum md_err gather_send(struct pg_txn *t)
{
    struct pg_gather *g = &t->pipe.gather;
    if (g->rows == 0)
        return MD_OK;
    enum pg_stmt id = g->id;
    const struct pg_stmt_def *def = def_of(t, id);
    struct md_pg_params p = {.n = 0};
    for (int i = 0; i < def->nparams; i++) {
        md_pg_arr_count(&g->cols[i], g->rows);
        md_pg_bytes(&p, g->cols[i].data, g->cols[i].len);
    }
    md_pg_gather_drop(&t->pipe);
    return queue(t, id, &p, 0);
}

enum md_err md_pg_send(struct pg_txn *t, enum pg_stmt id, const struct md_pg_params *p)
{
    enum md_err e = gather_send(t);
    return e ? e : queue(t, id, p, 1);
}

enum md_err md_pg_gather_row(struct pg_txn *t, enum pg_stmt id, const Oid *types)
{
    struct pg_gather *g = &t->pipe.gather;
    if (g->rows && (g->id != id || g->bytes >= BULK_MAX_BYTES)) {
        enum md_err e = gather_send(t);
        if (e)
            return e;
    }
    if (g->rows == 0) {
        const struct pg_stmt_def *def = def_of(t, id);
        for (int i = 0; i < def->nparams; i++) {
            enum md_err e = md_pg_arr_begin(&g->cols[i], types[i], 1); /* counted when sent */
            if (e)
                return e;
        }
        g->id = id;
    }
    return MD_OK;
}

/* The result of queued statement number `i`, read: errors classified (the
 * first kept in *err) and logged, rows counted or kept. 0, or -1 when the
 * connection broke. */
static int read_one(struct pg_txn *t, size_t i, enum pg_stmt want, enum pg_stmt *failed,
                    enum md_err *err)
{
    struct pg_conn *c = t->conn;
    struct pg_pipe *pp = &t->pipe;
    enum pg_stmt id = pp->queued[i];
    PGresult *r = PQgetResult(c->pq);
    if (!r) { /* the connection broke */
        if (!*err)
            log_pg(t, NULL, id);
        c->broken = 1;
        return -1;
    }
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_FATAL_ERROR && !*err) {
        *err = md_pg_classify(c->pq, r);
        if (*err != MD_EEXIST)
            log_pg(t, r, id);
        /* The server's own error (not libpq's for a lost connection). */
        if (failed && PQresultErrorField(r, PG_DIAG_SQLSTATE) && PQstatus(c->pq) == CONNECTION_OK)
            *failed = id;
    } else if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_FATAL_ERROR &&
               st != PGRES_PIPELINE_ABORTED && !*err) {
        log_pg(t, r, id);
        *err = MD_EDB;
    }
    if (!*err && id == P_COMMIT && strcmp(PQcmdStatus(r), "COMMIT") != 0)
        *err = MD_EDB; /* the transaction had failed: COMMIT rolled it back */
    if (id == pp->counted_id && st == PGRES_TUPLES_OK)
        pp->counted += (size_t)PQntuples(r);
    if (id == want && !pp->res && st == PGRES_TUPLES_OK)
        pp->res = r;
    else
        PQclear(r);
    PQclear(PQgetResult(c->pq)); /* the NULL that ends each statement */
    return 0;
}

enum md_err md_pg_flush_at(struct pg_txn *t, enum pg_stmt want, enum pg_stmt *failed)
{
    struct pg_conn *c = t->conn;
    struct pg_pipe *pp = &t->pipe;
    PQclear(pp->res);
    pp->res = NULL;
    if (failed)
        *failed = P_COUNT;
    if (pp->gather.rows) {
        enum md_err e = gather_send(t);
        if (e)
            return e;
    }
    if (pp->nqueued == 0)
        return MD_OK;
    size_t n = pp->nqueued;
    pp->nqueued = pp->mark = 0;
    pp->gathered_since_mark = 0;
    pp->st.round_trips++;
    pp->wire.round_trips++;
    if (c->broken || !PQpipelineSync(c->pq)) {
        c->broken = 1;
        return MD_EUNAVAIL;
    }
    enum md_err err = MD_OK;
    for (size_t i = 0; i < n; i++)
        if (read_one(t, i, want, failed, &err) != 0)
            return err ? err : MD_EUNAVAIL;
    PGresult *sync = PQgetResult(c->pq);
    if (PQresultStatus(sync) != PGRES_PIPELINE_SYNC) {
        c->broken = 1;
        err = err ? err : MD_EUNAVAIL;
    }
    PQclear(sync);
    if (err) {
        PQclear(pp->res);
        pp->res = NULL;
    }
    return err;
}

enum md_err md_pg_flush(struct pg_txn *t, enum pg_stmt want)
{
    enum md_err e = md_pg_flush_at(t, want, NULL);
    if (e && e != MD_EUNAVAIL)
        md_pg_batch_failed(t, e);
    return e;
}
