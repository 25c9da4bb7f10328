/*
 * deltas.c — versions kept as reverse deltas on PostgreSQL (md_delta.h;
 * sql/postgres/009_version_deltas.sql): a version's text rebuilt from its
 * successors for the readers (md_pg_version_text), and the version older
 * than one about to be redacted stored whole (md_pg_version_older_whole).
 * convert.c stores a database's versions anew at open.
 *
 * The writer keeps a version as a delta when its batch prefetched the old
 * text (history.c, version_of_prefetched), against the text it writes;
 * entries.vrun bounds the run (it is never below the true run). As on
 * SQLite (src/store/sqlite/deltas.c), a delta's successor is the text of
 * its path just after its write, which nothing changes without recording a
 * version, deleting the oldest versions first, or making the older
 * neighbour whole first (redaction).
 *
 * A reader's chain is read by one statement (the version, its successors
 * and the file), so that it sees one state of them; a rebuilt text is
 * checked against the version's SHA-256.
 *
 * Owns no part of the transaction but t->vtext's contents. Errors as
 * md_store.h; MD_EDB for a chain that does not rebuild (logged).
 */
#include <stdlib.h>
#include <string.h>

#include "base/md_log.h"
#include "internal.h"
#include "store/md_delta.h"

static const struct pg_stmt_def stmts[] = {
    /* Version $3 of a path and its successors, oldest first, then the
     * file (as a version numbered PG_FILE_ROW, whole). */
    {P_VER_CHAIN,
     "WITH t AS (SELECT id FROM tenants WHERE name = $1)"
     " SELECT version, enc, existed, redacted, content FROM (SELECT version, enc, existed,"
     " redacted, content FROM versions WHERE tenant = (SELECT id FROM t) AND path = $2"
     " AND version >= $3 ORDER BY version LIMIT $4) v"
     " UNION ALL SELECT " PG_FILE_ROW ", 0::int2, true, false, content FROM entries"
     " WHERE tenant = (SELECT id FROM t) AND path = $2 AND kind = 0 ORDER BY 1",
     4,
     {OID_TEXT, OID_TEXT, OID_INT8, OID_INT8},
     1},
    {P_VER_OLDER,
     "SELECT version, enc, sha256 FROM versions"
     " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND path = $2"
     " AND version < $3 ORDER BY version DESC LIMIT 1",
     3,
     {OID_TEXT, OID_TEXT, OID_INT8},
     0},
    {P_VER_WHOLE,
     "UPDATE versions SET enc = 0, content = $3"
     " WHERE tenant = (SELECT id FROM tenants WHERE name = $1) AND version = $2",
     3,
     {OID_TEXT, OID_INT8, OID_BYTEA},
     0},
};
const struct pg_stmt_defs md_pg_deltas_stmts = MD_PG_STMT_DEFS(stmts);

/* ---- readers ---- */

/* Links of rows [from, n) of a result (version, enc, existed, redacted,
 * content: P_VER_CHAIN's), into `links` (at most `max`); the count. */
static size_t chain_links(const PGresult *r, int from, struct md_delta_link *links, size_t max)
{
    size_t k = 0;
    for (int i = from; i < PQntuples(r) && k < max; i++) {
        int has_text = PQgetvalue(r, i, 2)[0] && !PQgetvalue(r, i, 3)[0] && !PQgetisnull(r, i, 4);
        links[k++] = (struct md_delta_link){PQgetvalue(r, i, 4), (size_t)PQgetlength(r, i, 4),
                                            md_pg_r_i16(r, i, 1) == 1, has_text};
    }
    return k;
}

/* The text of version `version` of (tenant, path) into t->vtext, checked
 * against `sha256` (NULL: not known). */
static enum md_err rebuild(struct pg_txn *t, const char *tenant, const char *path, size_t len,
                           int64_t version, const unsigned char *sha256)
{
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_bytes(&p, path, len);
    md_pg_i64(&p, version);
    md_pg_i64(&p, MD_DELTA_RUN_MAX + 2);
    enum md_err e = md_pg_exec(t, P_VER_CHAIN, &p);
    if (e)
        return e;
    const PGresult *r = t->pipe.res;
    if (!r || PQntuples(r) == 0 || md_pg_r_i64(r, 0, 0) != version)
        return MD_ENOENT; /* pruned meanwhile */
    struct md_delta_link links[MD_DELTA_RUN_MAX + 3];
    size_t n = chain_links(r, 0, links, sizeof links / sizeof links[0]);
    e = md_delta_rebuild(links, n, &t->vtext);
    if (e == MD_EDB)
        md_log_msg(MD_LOG_ERROR, "a version's text cannot be rebuilt from its successors", NULL);
    return e ? e : md_delta_check(sha256, t->vtext.data, t->vtext.len);
}

enum md_err md_pg_version_text(struct pg_txn *t, const char *tenant, struct md_version *v, int enc)
{
    if (enc != 1 || !v->content)
        return MD_OK;
    enum md_err e =
        rebuild(t, tenant, v->path, v->path_len, v->version, v->has_sha256 ? v->sha256 : NULL);
    if (!e) {
        v->content = t->vtext.data ? t->vtext.data : "";
        v->content_len = t->vtext.len;
    }
    return e;
}

enum md_err md_pg_version_older_whole(struct pg_txn *t, const char *tenant, const char *path,
                                      size_t len, int64_t version)
{
    struct md_pg_params p = {.n = 0};
    md_pg_text(&p, tenant);
    md_pg_bytes(&p, path, len);
    md_pg_i64(&p, version);
    enum md_err e = md_pg_exec(t, P_VER_OLDER, &p);
    const PGresult *r = t->pipe.res;
    if (e || !r || PQntuples(r) != 1 || md_pg_r_i16(r, 0, 1) != 1)
        return e;
    int64_t older = md_pg_r_i64(r, 0, 0);
    unsigned char sha[MD_SHA256_LEN];
    int has_sha = PQgetlength(r, 0, 2) == MD_SHA256_LEN;
    if (has_sha)
        memcpy(sha, PQgetvalue(r, 0, 2), MD_SHA256_LEN);
    e = rebuild(t, tenant, path, len, older, has_sha ? sha : NULL);
    if (e)
        return e;
    p = (struct md_pg_params){.n = 0};
    md_pg_text(&p, tenant);
    md_pg_i64(&p, older);
    md_pg_bytes(&p, t->vtext.data ? t->vtext.data : "", t->vtext.len);
    return md_pg_exec(t, P_VER_WHOLE, &p);
}
