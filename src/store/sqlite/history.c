/*
 * history.c — versions, the change feed, idempotent retries and pruning
 * for the SQLite engine (see md_history.h, md_store.h), with their
 * statements.
 *
 * Versions are copied from the entries table by the database itself
 * (INSERT ... SELECT), numbered from the tenant's counter kept in memory
 * for the transaction (md_hist), so content never travels through memoryd
 * to be versioned. A file's version is kept as the delta that turns the
 * file's new content back into it (memoryd_delta(), deltas.c), unless it
 * would make a run of deltas too long; a subtree (deleted or moved: no new
 * content at the path) is versioned whole, in one statement (row_number()
 * over its files). Reading a version's content rebuilds it (deltas.c).
 *
 * Errors: MD_ENOENT (nothing kept), otherwise as sq_conn_rc.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_buf.h"
#include "base/md_path.h"
#include "internal.h"
#include "store/md_delta.h"

/* The subtree of :path (the entry itself, and below it), files only, as
 * one row source for window functions: two searches of the key, since an
 * OR of both makes SQLite scan the tenant. */
#define FILES_AT_OR_BELOW(cols)                                                                    \
    "(SELECT " cols " FROM entries WHERE tenant = :tenant AND path = :path AND kind = 0"           \
    " UNION ALL SELECT " cols " FROM entries WHERE tenant = :tenant AND path > :lo"                \
    " AND path < :hi AND kind = 0)"

const char *const sq_history_sql[S_COUNT] = {
    [S_COUNTERS_GET] = "SELECT last_version, last_seq FROM tenants WHERE id = ?1",
    [S_COUNTERS_SET] = "UPDATE tenants SET last_version = ?2, last_seq = ?3 WHERE id = ?1",
    /* ?7: the file's new content, which the version leans on (a delta),
     * unless the path's newest version ends a run of MD_DELTA_RUN_MAX - 1
     * deltas (then kept whole, run 0). */
    /* ?9: the run of the path's newest version (S_VER_LAST_RUN; read
     * apart: an INSERT that reads its own table goes through a temporary
     * table, which cost a third of the writer's time in str_replace). */
    [S_VER_ONE] = "INSERT INTO versions (tenant, version, path, existed, sha256, size, time,"
                  " command, actor, enc, run, content) SELECT e.tenant, ?3, e.path, 1, e.sha256,"
                  " e.size, ?4, ?5, ?6, ?9 < ?8, CASE WHEN ?9 < ?8 THEN ?9 + 1 ELSE 0 END,"
                  " CASE WHEN ?9 < ?8 THEN memoryd_delta(e.content, ?7) ELSE e.content END"
                  " FROM entries e WHERE e.tenant = ?1 AND e.path = ?2 AND e.kind = 0",
    [S_VER_LAST_RUN] = "SELECT run FROM versions WHERE tenant = ?1 AND path = ?2"
                       " ORDER BY version DESC LIMIT 1",
    [S_VER_ABSENT] = "INSERT INTO versions (tenant, version, path, existed, time, command, actor)"
                     " VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6)",
    [S_VER_SUBTREE] =
        "INSERT INTO versions (tenant, version, path, existed, sha256, size, time, command, actor,"
        " content) SELECT :tenant, :base + row_number() OVER (ORDER BY path), path, 1, sha256,"
        " size, :time, :command, :actor, content FROM " FILES_AT_OR_BELOW(
            "path, sha256, size, content"),
    [S_VER_SUBTREE_NEW] =
        "INSERT INTO versions (tenant, version, path, existed, time, command, actor)"
        " SELECT :tenant, :base + row_number() OVER (ORDER BY path), :to || substr(path, :cut), 0,"
        " :time, :command, :actor FROM " FILES_AT_OR_BELOW("path"),
    [S_CHANGE_INSERT] = "INSERT INTO changes (tenant, seq, version, versions, history_bytes, time,"
                        " command, paths, actor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [S_IDEM_GET] = "SELECT fingerprint, err, body, time FROM idempotency"
                   " WHERE tenant = ?1 AND key = ?2",
    [S_IDEM_PUT] = "INSERT OR REPLACE INTO idempotency (tenant, key, fingerprint, err, body, path,"
                   " time) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [S_IDEM_SCRUB] = "UPDATE idempotency SET body = CASE WHEN err = 0 THEN ?3 ELSE ?4 END"
                     " WHERE tenant = ?1 AND path = ?2",
    [S_HISTORY] =
        "SELECT " SQ_VERSION_COLS " FROM versions"
        " WHERE tenant = ?1 AND path = ?2 AND version < ?3 ORDER BY version DESC LIMIT ?4",
    [S_VERSION_GET] = "SELECT " SQ_VERSION_COLS ", enc, content FROM versions"
                      " WHERE tenant = ?1 AND version = ?2",
    /* The earliest version >= :before of each path (SQLite takes the bare
     * columns from the row of min()). */
    [S_STATE_BEFORE] =
        "SELECT min(version), path, existed, redacted, sha256, size, time, command, actor,"
        " pruned_through, enc, content FROM versions WHERE tenant = :tenant AND path = :path"
        " AND version >= :before GROUP BY path UNION ALL"
        " SELECT min(version), path, existed, redacted, sha256, size, time, command, actor,"
        " pruned_through, enc, content FROM versions WHERE tenant = :tenant AND path > :lo"
        " AND path < :hi AND version >= :before GROUP BY path ORDER BY 2",
    /* The write that recorded a version (newest first: stops at it). */
    [S_SNAP_BEFORE] = "SELECT version, versions FROM changes WHERE tenant = ?1"
                      " AND version IS NOT NULL AND version <= ?2 ORDER BY seq DESC LIMIT 1",
    [S_CHANGES] = "SELECT " SQ_CHANGE_COLS
                  " FROM changes WHERE tenant = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
    [S_CHANGES_OLDEST] = "SELECT min(seq) FROM changes WHERE tenant = ?1",
    [S_LAST_SEQ] = "SELECT last_seq FROM tenants WHERE name = ?1",
    [S_REDACT] = "UPDATE versions SET content = NULL, sha256 = NULL, redacted = 1, enc = 0, run = 0"
                 " WHERE tenant = ?1 AND version = ?2",
    [S_PRUNE_COUNT_FIND] = "SELECT version FROM versions WHERE tenant = ?1 AND path = ?2"
                           " ORDER BY version DESC LIMIT 1 OFFSET ?3",
    [S_PRUNE_COUNT_DEL] = "DELETE FROM versions WHERE tenant = ?1 AND path = ?2 AND version <= ?3",
    [S_PRUNE_MARK] = "UPDATE versions SET pruned_through = max(pruned_through, ?3)"
                     " WHERE tenant = ?1 AND version = (SELECT min(version) FROM versions"
                     " WHERE tenant = ?1 AND path = ?2)",
    [S_PRUNE_SUBTREE_PATHS] = "SELECT path FROM versions WHERE tenant = ?1 AND path > ?2"
                              " AND path < ?3 GROUP BY path HAVING count(*) > ?4",
    [S_TENANT_NEXT] = "SELECT id FROM tenants WHERE id >= ?1 ORDER BY id LIMIT 1",
    [S_PRUNE_AGE_SCAN] = "SELECT version, time FROM versions WHERE tenant = ?1"
                         " ORDER BY version LIMIT ?2",
    [S_PRUNE_AGE_DEL] = "DELETE FROM versions WHERE tenant = ?1 AND version <= ?2",
    [S_PRUNE_CHANGES_SCAN] =
        "SELECT seq, time FROM changes WHERE tenant = ?1 ORDER BY seq LIMIT ?2",
    [S_PRUNE_CHANGES_DEL] = "DELETE FROM changes WHERE tenant = ?1 AND seq <= ?2",
    [S_PRUNE_IDEM] = "DELETE FROM idempotency WHERE rowid IN"
                     " (SELECT rowid FROM idempotency WHERE time < ?1 LIMIT ?2)",
};

/* Rows the pruner reads per tenant and statement. */
#define PRUNE_SCAN 256

static struct sq_store *store_of(struct sq_txn *t)
{
    return (struct sq_store *)t->base.store;
}

static int history_on(struct sq_txn *t)
{
    return md_history_on(&store_of(t)->cfg.history);
}

/* ---- counters ---- */

static enum md_err counters_load(struct sq_txn *t, int64_t id)
{
    int64_t v, q;
    if (md_hist_loaded(t->hist, id, &v, &q))
        return MD_OK;
    sqlite3_stmt *st = sq_stmt(t, S_COUNTERS_GET);
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        v = sqlite3_column_int64(st, 0);
        q = sqlite3_column_int64(st, 1);
    }
    sq_done(st);
    if (rc != SQLITE_ROW)
        return rc == SQLITE_DONE ? MD_EDB : sq_conn_rc(t->c, rc, "counters");
    return md_hist_load(t->hist, id, v, q) ? MD_ENOMEM : MD_OK;
}

enum md_err sq_counters_flush(struct sq_txn *t)
{
    size_t n = md_hist_dirty_count(t->hist);
    for (size_t i = 0; i < n; i++) {
        int64_t id, v, q;
        md_hist_dirty_entry(t->hist, i, &id, &v, &q);
        if (!id)
            continue;
        sqlite3_stmt *st = sq_stmt(t, S_COUNTERS_SET);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, v);
        sqlite3_bind_int64(st, 3, q);
        enum md_err e = sq_run(t, st, "counters");
        if (e)
            return e;
    }
    return MD_OK;
}

/* ---- recording ---- */

enum md_err sq_cmd_begin(struct md_txn *base, const char *tenant, const struct md_write_meta *m)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    /* The tenant is made here if new (the savepoint undoes it if the command fails). */
    enum md_err e = sq_tenant_id(t, tenant, 1, &id);
    if (!e)
        e = counters_load(t, id);
    if (!e)
        md_hist_cmd_begin(t->hist, id, m);
    return e;
}

/* Bind time, command and actor of the current command at ?time/?command/
 * ?actor positions (numbered or named). */
static void bind_meta(sqlite3_stmt *st, const struct md_write_meta *m, int ti, int ci, int ai)
{
    sqlite3_bind_int64(st, ti, m->time_ms);
    sqlite3_bind_text(st, ci, m->command, -1, SQLITE_STATIC);
    if (m->actor)
        sqlite3_bind_text(st, ai, m->actor, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, ai);
}

/* Is the current command recording versions for tenant `id`? */
static int recording(struct sq_txn *t, int64_t id)
{
    return history_on(t) && md_hist_cmd_tenant(t->hist) == id;
}

enum md_err sq_record_file(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                           int64_t old_size, const char *content, size_t content_len)
{
    if (!recording(t, tenant))
        return MD_OK;
    const struct md_write_meta *m = md_hist_cmd_meta(t->hist);
    int64_t v = md_hist_next_version(t->hist);
    int64_t run = 0;
    if (old_size >= 0) {
        sqlite3_stmt *last = sq_stmt(t, S_VER_LAST_RUN);
        sqlite3_bind_int64(last, 1, tenant);
        sq_bind_text(last, 2, path, len);
        int rc = sqlite3_step(last);
        if (rc == SQLITE_ROW)
            run = sqlite3_column_int64(last, 0);
        sq_done(last);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return sq_conn_rc(t->c, rc, "version");
    }
    sqlite3_stmt *st = sq_stmt(t, old_size >= 0 ? S_VER_ONE : S_VER_ABSENT);
    sqlite3_bind_int64(st, 1, tenant);
    if (old_size >= 0) {
        sq_bind_text(st, 2, path, len);
        sqlite3_bind_int64(st, 3, v);
        bind_meta(st, m, 4, 5, 6);
        sqlite3_bind_blob(st, 7, content ? content : "", (int)content_len, SQLITE_STATIC);
        sqlite3_bind_int(st, 8, MD_DELTA_RUN_MAX - 1);
        sqlite3_bind_int64(st, 9, run);
    } else {
        sqlite3_bind_int64(st, 2, v);
        sq_bind_text(st, 3, path, len);
        bind_meta(st, m, 4, 5, 6);
    }
    enum md_err e = sq_run(t, st, "version");
    if (e)
        return e;
    md_hist_take_versions(t->hist, sqlite3_changes(t->c->db), old_size >= 0 ? old_size : 0);
    md_hist_touch(t->hist, tenant, path, len, 0);
    return MD_OK;
}

enum md_err sq_record_subtree(struct sq_txn *t, int64_t tenant, const char *path, size_t len,
                              int64_t size, const char *to, size_t tlen)
{
    if (!recording(t, tenant))
        return MD_OK;
    const struct md_write_meta *m = md_hist_cmd_meta(t->hist);
    struct bounds b;
    enum md_err e = sq_bounds_make(&b, path, len);
    for (int pass = 0; !e && pass < (to ? 2 : 1); pass++) {
        sqlite3_stmt *st = sq_stmt(t, pass == 0 ? S_VER_SUBTREE : S_VER_SUBTREE_NEW);
        sq_bind_named_int64(st, ":tenant", tenant);
        sq_bind_named_text(st, ":path", path, len);
        sq_bind_named_text(st, ":lo", b.lop, b.n);
        sq_bind_named_text(st, ":hi", b.hip, b.n);
        sq_bind_named_int64(st, ":base", md_hist_next_version(t->hist) - 1);
        bind_meta(st, m, sqlite3_bind_parameter_index(st, ":time"),
                  sqlite3_bind_parameter_index(st, ":command"),
                  sqlite3_bind_parameter_index(st, ":actor"));
        if (pass == 1) {
            sq_bind_named_text(st, ":to", to, tlen);
            sq_bind_named_int64(st, ":cut", sq_utf8_chars(path, len) + 1);
        }
        e = sq_run(t, st, "versions of a subtree");
        if (!e)
            md_hist_take_versions(t->hist, sqlite3_changes(t->c->db), pass == 0 ? size : 0);
    }
    sq_bounds_free(&b);
    if (!e) {
        md_hist_touch(t->hist, tenant, path, len, 1);
        if (to)
            md_hist_touch(t->hist, tenant, to, tlen, 1);
    }
    return e;
}

void sq_cmd_recorded(struct md_txn *base, struct md_change_rec *rec)
{
    md_hist_cmd_recorded(((struct sq_txn *)base)->hist, rec);
}

enum md_err sq_cmd_end(struct md_txn *base, const char *const *paths, const size_t *lens, size_t n,
                       struct md_change_rec *rec)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = md_hist_cmd_tenant(t->hist);
    if (!id)
        return MD_EDB; /* no md_txn_cmd_begin */
    const struct md_write_meta *m = md_hist_cmd_meta(t->hist);
    md_hist_cmd_end(t->hist, rec);
    struct md_buf joined;
    md_buf_init(&joined, (size_t)64 << 20);
    enum md_err e = MD_OK;
    for (size_t i = 0; i < n && !e; i++) {
        if (i)
            e = md_buf_putc(&joined, '\n');
        if (!e)
            e = md_buf_append(&joined, paths[i], lens[i]);
    }
    if (!e) {
        sqlite3_stmt *st = sq_stmt(t, S_CHANGE_INSERT);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, rec->seq);
        if (rec->version)
            sqlite3_bind_int64(st, 3, rec->version);
        else
            sqlite3_bind_null(st, 3);
        sqlite3_bind_int64(st, 4, rec->versions);
        sqlite3_bind_int64(st, 5, rec->history_bytes);
        sq_bind_text(st, 8, joined.data ? joined.data : "", joined.len);
        bind_meta(st, m, 6, 7, 9);
        e = sq_run(t, st, "change");
    }
    md_buf_free(&joined);
    return e;
}

/* ---- idempotency ---- */

enum md_err sq_idem_get(struct md_txn *base, const char *tenant, const char *key, size_t key_len,
                        struct md_idem *out)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_IDEM_GET);
    sqlite3_bind_int64(st, 1, id);
    sq_bind_text(st, 2, key, key_len);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW || sqlite3_column_bytes(st, 0) != MD_SHA256_LEN ||
        sqlite3_column_int64(st, 3) < sq_now_ms() - MD_IDEMPOTENCY_MS) {
        sq_done(st);
        return rc == SQLITE_ROW || rc == SQLITE_DONE ? MD_ENOENT : sq_conn_rc(t->c, rc, "idem");
    }
    memcpy(out->fingerprint, sqlite3_column_blob(st, 0), MD_SHA256_LEN);
    out->err = sqlite3_column_int(st, 1);
    out->body = (const char *)sqlite3_column_text(st, 2);
    out->body_len = (size_t)sqlite3_column_bytes(st, 2);
    if (!out->body)
        out->body = "";
    t->pending = st; /* the row stays borrowed until the next call */
    return MD_OK;
}

enum md_err sq_idem_put(struct md_txn *base, const char *tenant, const char *key, size_t key_len,
                        const struct md_idem *answer, const char *path, size_t path_len)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 1, &id);
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_IDEM_PUT);
    sqlite3_bind_int64(st, 1, id);
    sq_bind_text(st, 2, key, key_len);
    sqlite3_bind_blob(st, 3, answer->fingerprint, MD_SHA256_LEN, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, answer->err);
    sqlite3_bind_text(st, 5, answer->body ? answer->body : "", (int)answer->body_len,
                      SQLITE_STATIC);
    if (path)
        sq_bind_text(st, 6, path, path_len);
    else
        sqlite3_bind_null(st, 6);
    sqlite3_bind_int64(st, 7, sq_now_ms());
    return sq_run(t, st, "idem put");
}

/* ---- reading history ---- */

/* Run a query of versions of `tenant`, calling cb with each row (its
 * content rebuilt when it is a delta). */
static enum md_err each_version(struct sq_txn *t, int64_t tenant, sqlite3_stmt *st, int content_col,
                                md_version_cb cb, void *ctx, const char *what)
{
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct md_version v;
        enum md_err e =
            sq_version_of(st, &v, content_col) ? sq_version_rebuild(t, tenant, &v) : MD_OK;
        if (e) {
            sq_done(st);
            return e;
        }
        if (cb(ctx, &v)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sq_done(st);
    return rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, what);
}

enum md_err sq_history(struct md_txn *base, const char *tenant, const char *path, size_t len,
                       int64_t below, size_t limit, md_version_cb cb, void *ctx)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (e)
        return e == MD_ENOENT ? MD_OK : e;
    sqlite3_stmt *st = sq_stmt(t, S_HISTORY);
    sqlite3_bind_int64(st, 1, id);
    sq_bind_text(st, 2, path, len);
    sqlite3_bind_int64(st, 3, below > 0 ? below : INT64_MAX);
    sqlite3_bind_int64(st, 4, (int64_t)limit);
    return each_version(t, id, st, -1, cb, ctx, "history");
}

enum md_err sq_version_get(struct md_txn *base, const char *tenant, int64_t version,
                           int want_content, struct md_version *v)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_VERSION_GET);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, version);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sq_done(st);
        return rc == SQLITE_DONE ? MD_ENOENT : sq_conn_rc(t->c, rc, "version");
    }
    /* Rebuilt before the row is marked pending: the statements the rebuild
     * runs would reset it (sq_stmt), and its strings are borrowed. */
    if (sq_version_of(st, v, want_content ? SQ_VERSION_CONTENT_COL : -1)) {
        e = sq_version_rebuild(t, id, v);
        if (e) {
            sq_done(st);
            return e;
        }
    }
    t->pending = st; /* the row stays borrowed until the next call */
    return MD_OK;
}

enum md_err sq_state_before(struct md_txn *base, const char *tenant, const char *dir, size_t len,
                            int64_t *before, md_version_cb cb, void *ctx)
{
    struct sq_txn *t = (struct sq_txn *)base;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (e)
        return e == MD_ENOENT ? MD_OK : e;
    sqlite3_stmt *snap = sq_stmt(t, S_SNAP_BEFORE);
    sqlite3_bind_int64(snap, 1, id);
    sqlite3_bind_int64(snap, 2, *before);
    int rc = sqlite3_step(snap);
    if (rc == SQLITE_ROW && sqlite3_column_int64(snap, 0) + sqlite3_column_int64(snap, 1) > *before)
        *before = sqlite3_column_int64(snap, 0);
    sq_done(snap);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sq_conn_rc(t->c, rc, "state before: the write");
    struct bounds b;
    e = sq_bounds_make(&b, dir, len);
    if (e)
        return e;
    sqlite3_stmt *st = sq_stmt(t, S_STATE_BEFORE);
    sq_bind_named_int64(st, ":tenant", id);
    sq_bind_named_text(st, ":path", dir, len);
    sq_bind_named_text(st, ":lo", b.lop, b.n);
    sq_bind_named_text(st, ":hi", b.hip, b.n);
    sq_bind_named_int64(st, ":before", *before);
    e = each_version(t, id, st, SQ_VERSION_CONTENT_COL, cb, ctx, "state before");
    sq_bounds_free(&b);
    return e;
}

/* One integer a statement with bound parameters answers (0 for NULL or no
 * row). */
static enum md_err one_int(struct sq_txn *t, sqlite3_stmt *st, int64_t *out, const char *what)
{
    int rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sq_done(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, what);
}

enum md_err sq_changes(struct md_txn *base, const char *tenant, int64_t after, size_t limit,
                       md_change_cb cb, void *ctx, int64_t *oldest, int64_t *last_seq)
{
    struct sq_txn *t = (struct sq_txn *)base;
    *oldest = *last_seq = 0;
    int64_t id = 0;
    enum md_err e = sq_tenant_id(t, tenant, 0, &id);
    if (e)
        return e == MD_ENOENT ? MD_OK : e;
    sqlite3_stmt *st = sq_stmt(t, S_LAST_SEQ);
    sq_bind_text(st, 1, tenant, strlen(tenant));
    e = one_int(t, st, last_seq, "last seq");
    if (!e) {
        st = sq_stmt(t, S_CHANGES_OLDEST);
        sqlite3_bind_int64(st, 1, id);
        e = one_int(t, st, oldest, "oldest change");
    }
    if (e)
        return e;
    st = sq_stmt(t, S_CHANGES);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, after);
    sqlite3_bind_int64(st, 3, (int64_t)limit);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct md_change c;
        sq_change_of(st, &c);
        if (cb(ctx, &c)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sq_done(st);
    return rc == SQLITE_DONE ? MD_OK : sq_conn_rc(t->c, rc, "changes");
}

/* ---- redaction ---- */

enum md_err sq_redact(struct md_txn *base, const char *tenant, int64_t version)
{
    struct sq_txn *t = (struct sq_txn *)base;
    struct md_version v = {0};
    enum md_err e = sq_version_get(base, tenant, version, 0, &v);
    if (e)
        return e;
    char *path = strndup(v.path ? v.path : "", v.path_len);
    size_t path_len = v.path_len;
    int64_t id = 0;
    if (!path)
        return MD_ENOMEM;
    e = sq_tenant_id(t, tenant, 0, &id);
    /* The version just before it may lean on its text: kept whole first. */
    if (!e)
        e = sq_version_older_whole(t, id, path, path_len, version);
    if (!e) {
        sqlite3_stmt *st = sq_stmt(t, S_REDACT);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, version);
        e = sq_run(t, st, "redact");
    }
    if (!e) {
        sqlite3_stmt *st = sq_stmt(t, S_IDEM_SCRUB);
        sqlite3_bind_int64(st, 1, id);
        sq_bind_text(st, 2, path, path_len);
        sqlite3_bind_text(st, 3, MD_HISTORY_SCRUBBED_APPLIED, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, MD_HISTORY_SCRUBBED_REFUSED, -1, SQLITE_STATIC);
        e = sq_run(t, st, "scrub idempotent answers");
    }
    /* The index's notes may hold the redacted text as a file's content
     * the index has not caught up with (search_pending.old): indexed
     * before COMMIT, their rows deleted (zeroed: secure_delete). */
    t->index_now = 1;
    free(path);
    if (!e)
        store_of(t)->scrub_wal = 1; /* after the commit: out of the WAL too */
    return e;
}

/* ---- pruning ---- */

struct pruner {
    struct sq_txn *t;
    unsigned keep; /* versions per file */
    struct md_pruned deleted;
    enum md_err err;
};

/* Keep the newest `keep` versions of (tenant, path); mark the oldest kept
 * with the newest pruned. */
static void prune_path(struct pruner *p, int64_t tenant, const char *path, size_t len)
{
    struct sq_txn *t = p->t;
    if (p->err)
        return;
    sqlite3_stmt *st = sq_stmt(t, S_PRUNE_COUNT_FIND);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, path, len);
    sqlite3_bind_int64(st, 3, p->keep);
    int64_t through = 0;
    p->err = one_int(t, st, &through, "prune: find");
    if (p->err || through == 0)
        return;
    st = sq_stmt(t, S_PRUNE_COUNT_DEL);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, path, len);
    sqlite3_bind_int64(st, 3, through);
    p->err = sq_run(t, st, "prune: delete");
    if (p->err)
        return;
    p->deleted.versions += (size_t)sqlite3_changes(t->c->db);
    st = sq_stmt(t, S_PRUNE_MARK);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, path, len);
    sqlite3_bind_int64(st, 3, through);
    p->err = sq_run(t, st, "prune: mark");
}

static void prune_touched(void *ctx, int64_t tenant, const char *path, size_t len, int subtree)
{
    struct pruner *p = ctx;
    if (p->err)
        return;
    if (!subtree) {
        prune_path(p, tenant, path, len);
        return;
    }
    /* Every path below with too many versions: collected first (the
     * statement cannot stay open while others run). */
    struct bounds b;
    if ((p->err = sq_bounds_make(&b, path, len)) != MD_OK)
        return;
    sqlite3_stmt *st = sq_stmt(p->t, S_PRUNE_SUBTREE_PATHS);
    sqlite3_bind_int64(st, 1, tenant);
    sq_bind_text(st, 2, b.lop, b.n);
    sq_bind_text(st, 3, b.hip, b.n);
    sqlite3_bind_int64(st, 4, p->keep);
    struct md_buf list;
    md_buf_init(&list, (size_t)64 << 20);
    int rc;
    size_t count = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && count < PRUNE_SCAN) {
        const char *q = (const char *)sqlite3_column_text(st, 0);
        if (md_buf_append(&list, q, (size_t)sqlite3_column_bytes(st, 0) + 1) != MD_OK)
            break; /* with its NUL: one after another */
        count++;
    }
    sq_done(st);
    sq_bounds_free(&b);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        p->err = sq_conn_rc(p->t->c, rc, "prune: paths");
    for (size_t off = 0; !p->err && off < list.len;) {
        const char *q = list.data + off;
        size_t qn = strlen(q);
        prune_path(p, tenant, q, qn);
        off += qn + 1;
    }
    md_buf_free(&list);
}

/* Delete a tenant's oldest rows of `scan_id` (ordered by their number,
 * column 0, with their time in column 1) older than `cutoff`, at most
 * PRUNE_SCAN, through `del_id`. */
static enum md_err prune_old(struct sq_txn *t, int64_t tenant, enum stmt_id scan_id,
                             enum stmt_id del_id, int64_t cutoff, size_t *deleted)
{
    sqlite3_stmt *st = sq_stmt(t, scan_id);
    sqlite3_bind_int64(st, 1, tenant);
    sqlite3_bind_int64(st, 2, PRUNE_SCAN);
    int64_t through = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && sqlite3_column_int64(st, 1) < cutoff)
        through = sqlite3_column_int64(st, 0);
    sq_done(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sq_conn_rc(t->c, rc, "prune: scan");
    if (through == 0)
        return MD_OK;
    st = sq_stmt(t, del_id);
    sqlite3_bind_int64(st, 1, tenant);
    sqlite3_bind_int64(st, 2, through);
    enum md_err e = sq_run(t, st, "prune: delete old");
    if (!e)
        *deleted += (size_t)sqlite3_changes(t->c->db);
    return e;
}

enum md_err sq_prune(struct md_txn *base, int64_t now_ms, size_t budget, struct md_pruned *deleted)
{
    struct sq_txn *t = (struct sq_txn *)base;
    struct sq_store *s = store_of(t);
    const struct md_retention *r = &s->cfg.history;
    struct pruner p = {t, history_on(t) ? r->versions : 0, {0}, MD_OK};
    /* By count: the paths written since the last time, as many as the
     * budget's rows (one indexed lookup each when nothing is to go). */
    md_hist_take_touched(t->hist, budget, prune_touched, &p);
    enum md_err e = p.err;
    /* By age, a few tenants each time, round the tenants. */
    int64_t versions_cutoff = history_on(t) ? now_ms - (int64_t)r->days * 24 * 3600 * 1000 : now_ms;
    int64_t changes_cutoff = now_ms - md_history_changes_ms(r);
    for (int i = 0; !e && i < 16 && md_pruned_total(&p.deleted) < budget; i++) {
        sqlite3_stmt *st = sq_stmt(t, S_TENANT_NEXT);
        sqlite3_bind_int64(st, 1, s->prune_next_tenant);
        int64_t tenant = 0;
        e = one_int(t, st, &tenant, "prune: next tenant");
        if (e)
            break;
        if (tenant == 0) {
            s->prune_next_tenant = 0; /* round again from the first, next time */
            break;
        }
        s->prune_next_tenant = tenant + 1;
        e = prune_old(t, tenant, S_PRUNE_AGE_SCAN, S_PRUNE_AGE_DEL, versions_cutoff,
                      &p.deleted.versions);
        if (!e)
            e = prune_old(t, tenant, S_PRUNE_CHANGES_SCAN, S_PRUNE_CHANGES_DEL, changes_cutoff,
                          &p.deleted.changes);
    }
    size_t total = md_pruned_total(&p.deleted);
    if (!e && total < budget) {
        sqlite3_stmt *st = sq_stmt(t, S_PRUNE_IDEM);
        sqlite3_bind_int64(st, 1, now_ms - MD_IDEMPOTENCY_MS);
        sqlite3_bind_int64(st, 2, (int64_t)(budget - total));
        e = sq_run(t, st, "prune: idempotency");
        if (!e)
            p.deleted.idempotency += (size_t)sqlite3_changes(t->c->db);
    }
    *deleted = p.deleted;
    deleted->more = md_hist_prune_more(t->hist, deleted, budget);
    return e;
}
