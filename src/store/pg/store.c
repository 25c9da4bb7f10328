/*
 * store.c — the PostgreSQL engine of md_store (see md_store_pg.h): its
 * operations table, open and close, and the operations of the store as a
 * whole (ping, db_size, stats, wire, watch, a txn's end); the engine's
 * descriptor md_engine_pg for the registry.
 *
 * The operations themselves are in the files of their jobs (internal.h
 * lists them); this file, on top of them, is the one that knows every
 * job, and hands the files below what they need of the others at open:
 * every file's statements (pg_store's stmts, which conn.c prepares and
 * pipe.c sends by id; md_pg_statement answers from them too) and the
 * functions that make and free a write transaction's parts (txn.c's, for
 * conn.c). A txn's end is a snapshot's (tenants.c), a fetched view's
 * (views.c) or a reader's (conn.c).
 *
 * Opening migrates the schema on a connection of its own, applies the
 * --search setting, opens the writer's connection and starts the reads
 * thread (views fetched asynchronously); readers and the pruner's
 * connection are opened when first needed.
 *
 * Owns: struct pg_store (made here, freed by pg_close). Errors as
 * md_store.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

/* Connections of the reads thread (views; see reads.c). */
#define READS_CONNS 2

static const struct pg_stmt_def stmts[] = {
    {P_PING, "SELECT 1", 0, {0}, 1},
    {P_DB_SIZE, "SELECT pg_database_size(current_database())", 0, {0}, 1},
};
const struct pg_stmt_defs md_pg_store_stmts = MD_PG_STMT_DEFS(stmts);

/* ---- the statements of every file ---- */

/* Each file writes its own statements; this one, which knows every job,
 * gathers their tables and hands them down at open (pg_store's stmts). */
static const struct pg_stmt_defs *const stmt_files[] = {
    &md_pg_ids_stmts,          &md_pg_sizes_stmts,   &md_pg_txn_stmts,   &md_pg_tree_stmts,
    &md_pg_views_stmts,        &md_pg_store_stmts,   &md_pg_batch_stmts, &md_pg_history_stmts,
    &md_pg_history_read_stmts, &md_pg_idem_stmts,    &md_pg_prune_stmts, &md_pg_tenants_stmts,
    &md_pg_search_stmts,       &md_pg_keys_stmts,    &md_pg_load_stmts,  &md_pg_expiry_stmts,
    &md_pg_deltas_stmts,       &md_pg_convert_stmts,
};

static const struct pg_stmt_def *stmt_find(enum pg_stmt id)
{
    for (size_t f = 0; f < sizeof stmt_files / sizeof stmt_files[0]; f++)
        for (size_t i = 0; i < stmt_files[f]->n; i++)
            if (stmt_files[f]->defs[i].id == id)
                return &stmt_files[f]->defs[i];
    return NULL;
}

const char *md_pg_statement(enum pg_stmt id, int *nparams, const Oid **types)
{
    const struct pg_stmt_def *d = stmt_find(id);
    *nparams = d ? d->nparams : 0;
    *types = d ? d->types : NULL;
    return d ? d->sql : NULL;
}

/* ---- the store as a whole ---- */

static enum md_err pg_ping(struct md_store *base)
{
    struct md_txn *t;
    enum md_err e = md_pg_read_begin(base, &t);
    if (e)
        return e;
    e = md_pg_exec((struct pg_txn *)t, P_PING, NULL);
    md_pg_read_end(t);
    return e;
}

static enum md_err pg_db_size(struct md_store *base, int64_t *bytes)
{
    struct md_txn *t;
    enum md_err e = md_pg_read_begin(base, &t);
    if (e)
        return e;
    struct pg_txn *pt = (struct pg_txn *)t;
    e = md_pg_exec(pt, P_DB_SIZE, NULL);
    if (!e && pt->pipe.res && PQntuples(pt->pipe.res) == 1)
        *bytes = md_pg_r_i64(pt->pipe.res, 0, 0);
    else if (!e)
        e = MD_EDB;
    md_pg_read_end(t);
    return e;
}

/* A command whose writes an optimistic batch holds back is charged the
 * round trip that will send them (md_pg_batch_flush). */
static void pg_stats(struct md_txn *base, struct md_txn_stats *st)
{
    const struct pg_txn *t = (const struct pg_txn *)base;
    *st = t->pipe.st;
    if (md_pg_deferring(t) && md_pg_pipe_unsent(&t->pipe) > 0)
        st->round_trips++;
}

static void pg_wire(struct md_store *base, struct md_txn_stats *st)
{
    const struct pg_store *s = (const struct pg_store *)base;
    *st = s->writer ? s->writer->txn.pipe.wire : (struct md_txn_stats){0, 0};
}

/* md_txn_flush: the rows of md_txn_load held, or an optimistic batch's
 * writes. */
static enum md_err pg_flush(struct md_txn *base)
{
    struct pg_txn *t = (struct pg_txn *)base;
    if (md_pg_load_held(t)) {
        enum md_err e = md_pg_load_send(t);
        return e ? e : md_pg_flush(t, P_COUNT);
    }
    return md_pg_batch_flush(base);
}

/* The end of a reader's txn, of a snapshot's (tenants.c) or of a fetched
 * view's (views.c). */
static void pg_txn_end(struct md_txn *base)
{
    struct pg_txn *t = (struct pg_txn *)base;
    if (t->fetched) {
        md_pg_vjob_end(t);
        return;
    }
    if (t->snapshot)
        md_pg_snapshot_end(t);
    md_pg_read_end(base);
}

static enum md_err pg_watch(struct md_store *base, md_watch_cb cb, void *ctx)
{
    struct pg_store *s = (struct pg_store *)base;
    md_pg_watch_stop(s->watch);
    s->watch = cb ? md_pg_watch_start(s->uri, cb, ctx) : NULL;
    return !cb || s->watch ? MD_OK : MD_ENOMEM;
}

static void pg_close(struct md_store *base)
{
    struct pg_store *s = (struct pg_store *)base;
    md_pg_indexer_stop(s->indexer);
    md_pg_reads_stop(s->reads);
    md_pg_watch_stop(s->watch);
    for (struct pg_conn *c = s->idle, *next; c; c = next) {
        next = c->next_idle;
        md_pg_conn_close(c);
    }
    md_pg_conn_close(s->writer);
    md_pg_conn_close(s->pruner);
    md_pg_conn_close(s->importer);
    md_touched_free(s->touched);
    pthread_mutex_destroy(&s->pool_mu);
    pthread_mutex_destroy(&s->write_mu);
    pthread_mutex_destroy(&s->prune_mu);
    pthread_mutex_destroy(&s->import_mu);
    free(s->uri);
    free(s);
}

/* ---- the engine ---- */

#define PG_CAPS                                                                                    \
    (MD_STORE_CAP_VIEW_ASYNC | MD_STORE_CAP_PRUNE_APART | MD_STORE_CAP_DEFER |                     \
     MD_STORE_CAP_ROUND_TRIPS | MD_STORE_CAP_LOAD | MD_STORE_CAP_IMPORT_APART)

static const struct md_store_ops pg_ops = {
    .version = MD_STORE_VERSION,
    .caps = PG_CAPS,
    .name = "postgres",
    .close = pg_close,
    .read_begin = md_pg_read_begin,
    .write_begin = md_pg_write_begin,
    .txn_end = pg_txn_end,
    .commit = md_pg_commit,
    .rollback = md_pg_rollback,
    .batch_begin = md_pg_batch_begin,
    .flush = pg_flush,
    .savepoint = md_pg_savepoint,
    .release = md_pg_release,
    .view = md_pg_view,
    .locate = md_pg_locate,
    .put_file = md_pg_put_file,
    .remove_tree = md_pg_remove_tree,
    .move_tree = md_pg_move_tree,
    .get = md_pg_get,
    .list = md_pg_list,
    .ping = pg_ping,
    .stats = pg_stats,
    .wire = pg_wire,
    .cmd_begin = md_pg_cmd_begin,
    .cmd_end = md_pg_cmd_end,
    .idem_get = md_pg_idem_get,
    .idem_put = md_pg_idem_put,
    .history = md_pg_history,
    .version_get = md_pg_version_get,
    .state_before = md_pg_state_before,
    .changes = md_pg_changes,
    .redact = md_pg_redact,
    .prune = md_pg_prune,
    .prune_begin = md_pg_prune_begin,
    .import_begin = md_pg_import_begin,
    .cmd_recorded = md_pg_cmd_recorded,
    .sensitive_get = md_pg_sensitive_get,
    .sensitive_set = md_pg_sensitive_set,
    .versions_scan = md_pg_versions_scan,
    .expiry_set = md_pg_expiry_set,
    .expiry_get = md_pg_expiry_get,
    .use_put = md_pg_use_put,
    .use_get = md_pg_use_get,
    .expired = md_pg_expired,
    .expiring = md_pg_expiring,
    .db_size = pg_db_size,
    .watch = pg_watch,
    .usage = md_pg_usage,
    .tenants = md_pg_tenants,
    .erase = md_pg_erase,
    .set_limits = md_pg_set_limits,
    .snapshot_begin = md_pg_snapshot_begin,
    .scan = md_pg_scan,
    .search = md_pg_search,
    .view_async = md_pg_view_async,
    .key_put = md_pg_key_put,
    .key_list = md_pg_key_list,
    .key_revoke = md_pg_key_revoke,
    .key_find = md_pg_key_find,
    .load = md_pg_load,
    .totals = md_pg_totals,
    .build = md_pg_build,
    .building = md_pg_building,
};

/* A connection of the reads thread: a reader's. */
static int reads_setup(PGconn *pq, void *ctx, char *why, size_t why_len)
{
    return md_pg_conn_setup(ctx, pq, 0, why, why_len);
}

/* The schema migrated and the --search setting applied, on a connection
 * of their own. */
static enum md_err migrate(struct pg_store *s, enum md_search_mode search, char *why,
                           size_t why_len)
{
    PGconn *m = md_pg_connect(s->uri, why, why_len);
    if (!m)
        return MD_EUNAVAIL;
    enum md_err e = md_pg_migrate(m, why, why_len) == 0 ? MD_OK : MD_EDB;
    if (!e && md_pg_search_setting(m, search, &s->search_off,
                                   s->cfg.defer_build ? &s->search_pending : NULL, why, why_len))
        e = MD_EDB;
    PQfinish(m);
    return e;
}

static enum md_err pg_open(const struct md_store_config *cfg, const void *own,
                           struct md_store **out, char *why, size_t why_len)
{
    if (cfg->read_only) {
        snprintf(why, why_len, "a PostgreSQL store is not opened read-only");
        return MD_EINVAL;
    }
    struct pg_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, why_len, "out of memory");
        return MD_ENOMEM;
    }
    s->base.ops = &pg_ops;
    for (int i = 0; i < P_COUNT; i++)
        s->stmts[i] = stmt_find((enum pg_stmt)i);
    s->parts_new = md_pg_txn_parts_new;
    s->parts_free = md_pg_txn_parts_free;
    s->cfg = *cfg;
    s->uri = strdup(cfg->db);
    s->cfg.db = s->uri;
    if (own)
        s->own = *(const struct md_pg_config *)own;
    if (s->own.readers == 0)
        s->own.readers = 1;
    pthread_mutex_init(&s->pool_mu, NULL);
    pthread_mutex_init(&s->write_mu, NULL);
    pthread_mutex_init(&s->prune_mu, NULL);
    pthread_mutex_init(&s->import_mu, NULL);
    s->touched = md_touched_new();
    enum md_err e = MD_EUNAVAIL;
    if (!s->touched) {
        snprintf(why, why_len, "out of memory");
        e = MD_ENOMEM;
    } else if (s->uri) {
        e = migrate(s, cfg->search, why, why_len);
    }
    if (!e) {
        s->writer = md_pg_conn_open(s, 1, why, why_len);
        e = s->writer ? MD_OK : MD_EUNAVAIL;
    }
    if (!e && (e = md_pg_deltas_open(s)) != MD_OK)
        snprintf(why, why_len, "cannot store the versions anew (the log says why)");
    if (!e) {
        s->reads = md_pg_reads_start(s->uri, READS_CONNS, reads_setup, s);
        if (!s->reads) {
            snprintf(why, why_len, "cannot start the reads thread");
            e = MD_ENOMEM;
        }
    }
    if (!e && (!s->search_off || s->search_pending) && !(s->indexer = md_pg_indexer_start(s))) {
        snprintf(why, why_len, "cannot start the search index's thread");
        e = MD_ENOMEM;
    }
    if (e) {
        pg_close(&s->base);
        return e;
    }
    *out = &s->base;
    return MD_OK;
}

/* A PostgreSQL connection URI: "postgresql://..." or "postgres://...". */
static int pg_claims(const char *db)
{
    return db && (strncmp(db, "postgresql://", 13) == 0 || strncmp(db, "postgres://", 11) == 0);
}

/* A URI's password (user:PASSWORD@, or password=... among its parameters)
 * replaced by "***". */
static const char *pg_redact_uri(const char *db, char *buf, size_t len)
{
    snprintf(buf, len, "%s", db);
    if (!pg_claims(db))
        return buf;
    struct md_buf out;
    md_buf_init(&out, len > 0 ? len - 1 : 0);
    const char *p = strstr(db, "://") + 3;
    md_buf_append(&out, db, (size_t)(p - db));
    /* user:password@host */
    const char *end = p + strcspn(p, "/?#");
    const char *at = memchr(p, '@', (size_t)(end - p));
    const char *colon = at ? memchr(p, ':', (size_t)(at - p)) : NULL;
    if (colon) {
        md_buf_append(&out, p, (size_t)(colon - p) + 1);
        md_buf_puts(&out, "***");
        p = at;
    }
    /* ...?password=secret&... */
    while (*p) {
        const char *q = p;
        if ((*q == '?' || *q == '&') && strncasecmp(q + 1, "password=", 9) == 0) {
            md_buf_append(&out, q, 10);
            md_buf_puts(&out, "***");
            p = q + 10 + strcspn(q + 10, "&#");
            continue;
        }
        md_buf_putc(&out, *p++);
    }
    if (out.data)
        snprintf(buf, len, "%.*s", (int)out.len, out.data);
    md_buf_free(&out);
    return buf;
}

const struct md_engine md_engine_pg = {
    .name = "postgres",
    .caps = PG_CAPS,
    .claims = pg_claims,
    .open = pg_open,
    .redact = pg_redact_uri,
    .schema_version = md_store_pg_schema_version,
};
