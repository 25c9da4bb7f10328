/*
 * search.c — full-text search on PostgreSQL (md_txn_search; md_search.h),
 * and the word index catching up beside the writes (md_pg_indexer).
 *
 * The candidates come from the word index search_words of
 * 010_search_apart.sql (a tsquery of the terms' words) and the files at
 * the paths of the change feed after the index's cursor (the view
 * search_pending of 012_search_follows_feed.sql); when there are few
 * enough (PG_RANK_FILES, PG_RANK_BYTES) memoryd checks and ranks them
 * itself (md_search_score, as SQLite's search does), else PostgreSQL
 * ranks them with regular expressions (P_SEARCH). Terms with no word long
 * enough for the index scan the tenant's files instead (P_SEARCH_SCAN).
 * The writes write nothing for the index: a thread of the store's own
 * takes the feed after the cursors and writes the words, every
 * INDEX_EVERY_MS and as soon as this instance's writes pause, on a
 * connection of its own (memoryd_index_step).
 *
 * Owns no part of the transaction. MD_ENOENT when the store was opened
 * with search off; else errors as md_store.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/md_log.h"
#include "base/md_text.h"
#include "internal.h"
#include "store/md_search_terms.h"

/* A search candidate's occurrences in its text lx of each of the terms'
 * patterns $6 (built by word_pattern), as md_search_score counts them,
 * as `c` (each pattern once: PostgreSQL's regular expressions cost about
 * 28 us per KiB); then the candidates with every term, ranked by all
 * their occurrences, then path; page $7, $8. */
#define SEARCH_COUNTS "(SELECT array_agg(regexp_count(lx, p)) FROM unnest($6::text[]) p) AS c"
#define SEARCH_RANKED                                                                              \
    " WHERE 0 < ALL (c) ORDER BY (SELECT sum(x) FROM unnest(c) x) DESC, path LIMIT $7 OFFSET $8"

/* The candidates m (path, content) of tenant $1's files at $2 or below
 * ($3, $4): the files whose words in search_words match tsquery $5 (of
 * every tenant: materialized, so that whatever the generic plan's guess of
 * the tenant's size the index is used, then the tenant's kept), and every
 * file of the tenant at or below a path of search_pending (the feed after
 * the index's cursor: written since its words were taken, which may be old
 * or missing). Each is then checked on its text. */
#define SEARCH_CANDIDATES                                                                          \
    "WITH t AS MATERIALIZED (SELECT id FROM tenants WHERE name = $1),"                             \
    " w AS MATERIALIZED (SELECT tenant, path FROM search_words WHERE words @@ $5::tsquery),"       \
    " c AS (SELECT path FROM w WHERE tenant = (SELECT id FROM t)"                                  \
    " AND (path = $2 OR (path > $3 AND path < $4))"                                                \
    " UNION SELECT x.path FROM (SELECT DISTINCT path FROM search_pending"                          \
    " WHERE tenant = (SELECT id FROM t)) p, LATERAL (SELECT e.path FROM entries e"                 \
    " WHERE e.tenant = (SELECT id FROM t) AND e.path = p.path AND e.kind = 0 UNION ALL"            \
    " SELECT e.path FROM entries e WHERE e.tenant = (SELECT id FROM t)"                            \
    " AND e.path > p.path || '/' AND e.path < p.path || '0' AND e.kind = 0) x"                     \
    " WHERE x.path = $2 OR (x.path > $3 AND x.path < $4)),"                                        \
    " m AS (SELECT e.path, e.content FROM c JOIN entries e"                                        \
    " ON e.tenant = (SELECT id FROM t) AND e.path = c.path AND e.kind = 0)"

static const struct pg_stmt_def stmts[] = {
    /* The files of tenant $1 at $2 or below ($3, $4) that match every
     * regular expression of $6 (each term where a word begins), ranked by
     * their occurrences, then path. P_SEARCH takes its candidates from
     * SEARCH_CANDIDATES (tsquery $5: every indexed word of the terms, the
     * last of each term as a prefix; or '#all'); P_SEARCH_SCAN, for terms with no word
     * long enough for the index, reads the tenant's files there whose text
     * matches ILIKE pattern $5 (the longest term). */
    {P_SEARCH,
     SEARCH_CANDIDATES " SELECT path, content FROM (SELECT path, content, " SEARCH_COUNTS
                       " FROM (SELECT path, content, memoryd_text(content) AS lx"
                       " FROM m OFFSET 0) l OFFSET 0) k" SEARCH_RANKED,
     8,
     {OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXTARRAY, OID_INT8, OID_INT8},
     1},
    /* The candidates of P_SEARCH (tsquery $5) as they are, for memoryd to
     * check and rank (md_search_score: its C costs a hundredth of the
     * regular expressions): at most $6 files, and none past $7 bytes of
     * content (the running sum), so that md_pg_search can tell that it has
     * them all or else ranks with P_SEARCH. */
    {P_SEARCH_CAND,
     SEARCH_CANDIDATES " SELECT path, content FROM (SELECT path, content,"
                       " sum(octet_length(content)) OVER (ROWS UNBOUNDED PRECEDING)"
                       " - octet_length(content) AS before FROM m) c WHERE before < $7 LIMIT $6",
     7,
     {OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXT, OID_INT8, OID_INT8},
     1},
    {P_SEARCH_SCAN,
     "SELECT path, content FROM (SELECT path, content, " SEARCH_COUNTS
     " FROM (SELECT e.path, e.content, memoryd_text(e.content) AS lx"
     " FROM entries e"
     " WHERE e.tenant = (SELECT id FROM tenants WHERE name = $1) AND e.kind = 0"
     " AND (e.path = $2 OR (e.path > $3 AND e.path < $4))"
     " AND memoryd_text(e.content) ILIKE $5 OFFSET 0) l OFFSET 0) k" SEARCH_RANKED,
     8,
     {OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXT, OID_TEXTARRAY, OID_INT8, OID_INT8},
     1},
};
const struct pg_stmt_defs md_pg_search_stmts = MD_PG_STMT_DEFS(stmts);

/* `s` as an ILIKE pattern matching any text that contains it. */
static enum md_err like_pattern(struct md_buf *b, const char *s, size_t n)
{
    md_buf_reset(b);
    enum md_err e = md_buf_putc(b, '%');
    for (size_t i = 0; i < n && !e; i++) {
        if (s[i] == '%' || s[i] == '_' || s[i] == '\\')
            e = md_buf_putc(b, '\\');
        if (!e)
            e = md_buf_putc(b, s[i]);
    }
    if (!e)
        e = md_buf_putc(b, '%');
    return e;
}

/* `s` as a regular expression matching it where a word begins (md_text.h,
 * md_text_find_word_ci): after the start or a separator unless `s` starts
 * with one, each ASCII letter as [xX] (ASCII letters without case, other
 * characters exactly: `~*` would fold non-ASCII letters too), every other
 * ASCII character escaped. */
static enum md_err word_pattern(struct md_buf *b, const char *s, size_t n)
{
    md_buf_reset(b);
    enum md_err e =
        md_text_is_sep(s, n) ? MD_OK : md_buf_puts(b, "(^|[^0-9A-Za-z\\u00a0-\\U0010ffff])");
    for (size_t i = 0; i < n && !e; i++) {
        unsigned char c = (unsigned char)s[i];
        unsigned char low = c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
        if (low >= 'a' && low <= 'z')
            e = md_buf_printf(b, "[%c%c]", low, low - 'a' + 'A');
        else if (c < 0x80 && md_text_is_sep(s + i, 1))
            e = md_buf_printf(b, "\\%c", c);
        else
            e = md_buf_putc(b, s[i]);
    }
    return e;
}

/* The tsquery of the terms for P_SEARCH into `b` (empty when no word of
 * the terms has MD_SEARCH_SHORT_TERM characters: the caller scans
 * instead): each such word (md_search_next_word) as memoryd_words keeps
 * it (ASCII letters in lower case, its first MD_PG_WORD_CHARS
 * characters), the last of each term as a prefix, the others whole (a
 * cut word as a prefix too), all ANDed; or '#all', a file too large for
 * its words. A word holds no quote nor backslash: they separate words. */
#define MD_PG_WORD_CHARS 100
static enum md_err ts_query(struct md_buf *b, const struct md_search_terms *q)
{
    md_buf_reset(b);
    enum md_err e = MD_OK;
    for (size_t i = 0; i < q->n && !e; i++) {
        const char *s = q->terms[i];
        size_t n = q->lens[i], at = 0, w, len;
        while (!e && md_search_next_word(s, n, &at, &w, &len)) {
            size_t chars = 0, k = 0;
            for (; k < len && chars <= MD_PG_WORD_CHARS; k++)
                chars += ((unsigned char)s[w + k] & 0xC0) != 0x80;
            if (chars < MD_SEARCH_SHORT_TERM)
                continue;
            int cut = chars > MD_PG_WORD_CHARS;
            if (cut)
                len = k - 1; /* the first byte of character 101 was counted */
            e = md_buf_puts(b, b->len ? " & '" : "(('");
            for (size_t j = 0; j < len && !e; j++) {
                unsigned char c = (unsigned char)s[w + j];
                e = md_buf_putc(b, (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
            }
            if (!e)
                e = md_buf_puts(b, (w + len >= n || cut) ? "':*" : "'");
        }
    }
    if (!e && b->len)
        e = md_buf_puts(b, ") | '#all')");
    return e;
}

/* Search candidates ranked in memoryd: at most this many files and bytes
 * of content; a search with more is ranked by PostgreSQL (P_SEARCH). */
#define PG_RANK_FILES 500
#define PG_RANK_BYTES ((int64_t)8 << 20)

struct pg_hit {
    int64_t score;
    const char *path, *content;
    size_t path_len, len;
};

/* Most occurrences first, then path (bytes: paths collate "C"). */
static int hit_order(const void *a, const void *b)
{
    const struct pg_hit *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    size_t n = x->path_len < y->path_len ? x->path_len : y->path_len;
    int c = memcmp(x->path, y->path, n);
    return c ? c : (x->path_len > y->path_len) - (x->path_len < y->path_len);
}

/* The page of q among the candidates of r (every one of them), checked
 * and ranked by md_search_score as SQLite's search does; 1 when r did not
 * hold them all (nothing done), else 0 or an error. */
static int rank_here(PGresult *r, const struct md_search_terms *q, md_search_cb cb, void *ctx,
                     enum md_err *e)
{
    int rows = PQntuples(r);
    int64_t bytes = 0;
    for (int i = 0; i < rows; i++)
        bytes += PQgetlength(r, i, 1);
    if (rows > PG_RANK_FILES || bytes >= PG_RANK_BYTES)
        return 1;
    struct md_buf list;
    md_buf_init(&list, MD_SEARCH_Q_MAX + MD_SEARCH_TERMS_MAX);
    *e = MD_OK;
    for (size_t i = 0; i < q->n && !*e; i++) {
        *e = i ? md_buf_putc(&list, '\n') : MD_OK;
        if (!*e)
            *e = md_buf_append(&list, q->terms[i], q->lens[i]);
    }
    struct pg_hit *hits = *e ? NULL : calloc((size_t)rows + 1, sizeof *hits);
    if (!*e && !hits)
        *e = MD_ENOMEM;
    size_t n = 0;
    for (int i = 0; !*e && i < rows; i++) {
        struct pg_hit h = {.path = PQgetvalue(r, i, 0),
                           .path_len = (size_t)PQgetlength(r, i, 0),
                           .content = PQgetvalue(r, i, 1),
                           .len = (size_t)PQgetlength(r, i, 1)};
        h.score = md_search_score(h.content, h.len, list.data ? list.data : "", list.len);
        if (h.score >= 0)
            hits[n++] = h;
    }
    if (!*e) {
        qsort(hits, n, sizeof *hits, hit_order);
        for (size_t i = q->offset; i < n && i < q->offset + q->limit; i++)
            if (cb(ctx, hits[i].path, hits[i].path_len, hits[i].content, hits[i].len))
                break;
    }
    free(hits);
    md_buf_free(&list);
    return 0;
}

/* What a search sends: the subtree's bounds, the tsquery (indexed) or the
 * ILIKE pattern of the longest term, and every term's word pattern. */
struct search_args {
    struct md_buf lo, hi, first, pat, all;
    int indexed; /* `first` is a tsquery */
};

static enum md_err search_args(struct search_args *a, const struct md_search_terms *q)
{
    size_t longest = 0;
    for (size_t i = 1; i < q->n; i++)
        if (q->lens[i] > q->lens[longest])
            longest = i;
    md_buf_init(&a->lo, q->dir_len + 2);
    md_buf_init(&a->hi, q->dir_len + 2);
    md_buf_init(&a->first, 2 * MD_SEARCH_Q_MAX + 4);
    md_buf_init(&a->pat, 4 * MD_SEARCH_Q_MAX + 64); /* word_pattern: [xX] per letter */
    md_buf_init(&a->all, (size_t)4 * MD_SEARCH_Q_MAX * MD_SEARCH_TERMS_MAX);
    enum md_err e = md_pg_subtree_bounds(&a->lo, &a->hi, q->dir, q->dir_len);
    if (!e)
        e = ts_query(&a->first, q);
    a->indexed = a->first.len > 0;
    if (!e && !a->indexed)
        e = like_pattern(&a->first, q->terms[longest], q->lens[longest]);
    if (!e)
        e = md_pg_arr_begin(&a->all, OID_TEXT, q->n);
    for (size_t i = 0; i < q->n && !e; i++) {
        e = word_pattern(&a->pat, q->terms[i], q->lens[i]);
        if (!e)
            e = md_pg_arr_elem(&a->all, a->pat.data, a->pat.len);
    }
    return e;
}

static void search_args_free(struct search_args *a)
{
    md_buf_free(&a->lo);
    md_buf_free(&a->hi);
    md_buf_free(&a->first);
    md_buf_free(&a->pat);
    md_buf_free(&a->all);
}

/* The parameters $1..$5 of every search statement. */
static void common_params(struct md_pg_params *p, const char *tenant,
                          const struct md_search_terms *q, const struct search_args *a)
{
    p->n = 0;
    md_pg_text(p, tenant);
    md_pg_bytes(p, q->dir, q->dir_len);
    md_pg_bytes(p, a->lo.data, a->lo.len);
    md_pg_bytes(p, a->hi.data, a->hi.len);
    md_pg_bytes(p, a->first.data, a->first.len);
}

enum md_err md_pg_search(struct md_txn *base, const char *tenant, const struct md_search_terms *q,
                         md_search_cb cb, void *ctx)
{
    struct pg_txn *t = (struct pg_txn *)base;
    if (md_pg_store_of(t)->search_pending)
        return MD_EBUSY;
    if (md_pg_store_of(t)->search_off)
        return MD_ENOENT;
    struct search_args a;
    enum md_err e = search_args(&a, q);
    int done = 0;
    struct md_pg_params p;
    if (!e && a.indexed) { /* the candidates ranked here, if there are not too many */
        common_params(&p, tenant, q, &a);
        md_pg_i64(&p, PG_RANK_FILES + 1);
        md_pg_i64(&p, PG_RANK_BYTES);
        e = md_pg_exec(t, P_SEARCH_CAND, &p);
        if (!e) {
            PGresult *r = t->pipe.res;
            t->pipe.res = NULL; /* kept while cb runs: cb must not call the txn */
            done = !rank_here(r, q, cb, ctx, &e);
            PQclear(r);
        }
    }
    if (!e && !done) {
        common_params(&p, tenant, q, &a);
        md_pg_bytes(&p, a.all.data, a.all.len);
        md_pg_i64(&p, (int64_t)q->limit);
        md_pg_i64(&p, (int64_t)q->offset);
        e = md_pg_exec(t, a.indexed ? P_SEARCH : P_SEARCH_SCAN, &p);
    }
    if (!e && !done) {
        PGresult *r = t->pipe.res;
        t->pipe.res = NULL; /* kept while cb runs: cb must not call the txn */
        for (int i = 0; r && i < PQntuples(r); i++)
            if (cb(ctx, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0), PQgetvalue(r, i, 1),
                   (size_t)PQgetlength(r, i, 1)))
                break;
        PQclear(r);
    }
    search_args_free(&a);
    return e;
}

/* ---- the index catching up ---- */

/* How often the index catches up, and how many writes of the feed a step
 * takes: a few MiB of text to read at most for files of ordinary sizes
 * (a file written many times in those is indexed once: with 256 a step,
 * the step's own cost held a workload of edits of 512 files tens of
 * seconds behind). A step again at once while one takes at least half as
 * many (a backlog); md_pg_indexer_stop cancels a step under way. */
#define INDEX_EVERY_MS    1000
#define INDEX_STEP_WRITES 4096
/* A pause of the writes that ends the wait for the next tick: a twentieth
 * of the period (50 ms), so that what a burst wrote is indexed a step
 * after it, not up to a period later (a search then checks fewer files on
 * their text). */
#define INDEX_QUIET_PART 20
/* The files a step names, read INDEX_FETCH at a time, and indexed in
 * batches of INDEX_BATCH_FILES files or INDEX_BATCH_BYTES of text (a
 * batch ends with the file that reaches it). A step's buffers hold a
 * batch, and one file's words: INDEX_BUF_LIMIT at most. */
#define INDEX_FETCH       "1024" /* rows, as FETCH takes them */
#define INDEX_BATCH_FILES 1024
#define INDEX_BATCH_BYTES ((size_t)4 << 20)
#define INDEX_BUF_LIMIT   ((size_t)1 << 30)

struct md_pg_indexer {
    struct pg_store *s;
    long every_ms; /* INDEX_EVERY_MS, or MEMORYD_INDEX_EVERY_MS (tests) */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic int stop;
    _Atomic int wrote; /* a write committed since the thread last looked */
    PGconn *conn;      /* the thread's; NULL until connected, or after a failure */
    PGcancel *cancel;  /* conn's, under mu: md_pg_indexer_stop cancels a step */
    int failing;       /* the last step failed (logged once till one succeeds) */
};

/* The thread's connection replaced (the old one closed), with its cancel
 * handle. */
static void set_conn(struct md_pg_indexer *ix, PGconn *conn)
{
    PGcancel *cancel = conn ? PQgetCancel(conn) : NULL;
    pthread_mutex_lock(&ix->mu);
    PGcancel *old = ix->cancel;
    ix->cancel = cancel;
    pthread_mutex_unlock(&ix->mu);
    PQfreeCancel(old);
    PQfinish(ix->conn);
    ix->conn = conn;
}

/* A step's failure logged once until a step succeeds; the connection
 * dropped (made again at the next tick). */
static void index_failed(struct md_pg_indexer *ix, const char *why)
{
    if (!ix->failing)
        md_log_msg(MD_LOG_WARN, "search index: a step failed; its writes stay for the next", why);
    ix->failing = 1;
    set_conn(ix, NULL);
}

/* A statement of the step on the thread's connection: 0 when it gave
 * `want` (its result in *out when out is not NULL, else cleared), else -1
 * (the step failed, logged; the connection dropped, so its transaction
 * with it). Sent under ix->mu, where md_pg_indexer_stop sets `stop` and
 * cancels: a statement either is never sent once stopping, or runs when
 * the cancel comes (a step after an import reads the whole tenant in
 * many statements, with words computed between them). */
static int step_exec(struct md_pg_indexer *ix, const char *sql, const struct md_pg_params *p,
                     int binary, ExecStatusType want, PGresult **out)
{
    pthread_mutex_lock(&ix->mu);
    int stopping = ix->stop;
    int sent = !stopping && PQsendQueryParams(ix->conn, sql, p ? p->n : 0, NULL, p ? p->v : NULL,
                                              p ? p->len : NULL, p ? p->fmt : NULL, binary);
    pthread_mutex_unlock(&ix->mu);
    PGresult *r = NULL;
    for (PGresult *next; sent && (next = PQgetResult(ix->conn));) {
        PQclear(r);
        r = next;
    }
    if (stopping) {
        set_conn(ix, NULL);
        return -1;
    }
    if (PQresultStatus(r) != want) {
        PQclear(r);
        if (!ix->stop) /* else cancelled */
            index_failed(ix, PQerrorMessage(ix->conn));
        else
            set_conn(ix, NULL);
        return -1;
    }
    if (out)
        *out = r;
    else
        PQclear(r);
    return 0;
}

/* A big-endian integer of a binary result. */
static int64_t be_int(const char *v, int len)
{
    int64_t x = 0;
    for (int i = 0; i < len; i++)
        x = (int64_t)((uint64_t)x << 8 | (unsigned char)v[i]);
    return x;
}

/* A step's buffers: the files of a batch (tenants `bt`, paths `bp`: array
 * parameters of `files` elements), then the arrays of their words (`t`,
 * `p`, `w`), and one file's words. */
struct step_bufs {
    struct md_buf bt, bp, t, p, w, words;
    size_t files, bytes; /* of the batch */
    size_t indexed;      /* files the step named */
};

/* The files of the batch read (a statement after the feed was taken: the
 * writes taken have committed), their words computed and written; the
 * batch emptied. 0, or -1 (failed, logged). */
static int index_batch(struct md_pg_indexer *ix, struct step_bufs *b)
{
    if (!b->files)
        return 0;
    md_pg_arr_count(&b->bt, b->files);
    md_pg_arr_count(&b->bp, b->files);
    struct md_pg_params q = {.n = 0};
    md_pg_bytes(&q, b->bt.data, b->bt.len);
    md_pg_bytes(&q, b->bp.data, b->bp.len);
    PGresult *r = NULL;
    if (step_exec(ix,
                  "SELECT e.tenant, e.path, e.content FROM unnest($1::bigint[], $2::text[])"
                  " AS u(tenant, path) JOIN entries e ON e.tenant = u.tenant"
                  " AND e.path = u.path COLLATE \"C\" AND e.kind = 0",
                  &q, 1, PGRES_TUPLES_OK, &r))
        return -1;
    b->files = b->bytes = 0;
    int n = PQntuples(r);
    enum md_err e = MD_OK;
    if (n) {
        e = md_pg_arr_begin(&b->t, OID_INT8, (size_t)n);
        if (!e)
            e = md_pg_arr_begin(&b->p, OID_TEXT, (size_t)n);
        if (!e)
            e = md_pg_arr_begin(&b->w, OID_TEXT, (size_t)n);
    }
    for (int i = 0; !e && i < n; i++) {
        e = md_pg_words(PQgetvalue(r, i, 2), (size_t)PQgetlength(r, i, 2), &b->words);
        if (!e)
            e = md_pg_arr_i64(&b->t, be_int(PQgetvalue(r, i, 0), PQgetlength(r, i, 0)));
        if (!e)
            e = md_pg_arr_elem(&b->p, PQgetvalue(r, i, 1), (size_t)PQgetlength(r, i, 1));
        if (!e)
            e = md_pg_arr_elem(&b->w, b->words.data ? b->words.data : "", b->words.len);
    }
    PQclear(r);
    if (e) {
        index_failed(ix, md_strerror(e));
        return -1;
    }
    struct md_pg_params w = {.n = 0};
    md_pg_bytes(&w, b->t.data, b->t.len);
    md_pg_bytes(&w, b->p.data, b->p.len);
    md_pg_bytes(&w, b->w.data, b->w.len);
    return n ? step_exec(ix,
                         "INSERT INTO search_words (tenant, path, words)"
                         " SELECT t, p, array_to_tsvector(string_to_array(w, ' '))"
                         " FROM unnest($1::bigint[], $2::text[], $3::text[]) AS u(t, p, w)"
                         " ON CONFLICT (tenant, path) DO UPDATE SET words = excluded.words",
                         &w, 0, PGRES_COMMAND_OK, NULL)
             : 0;
}

/* One step, in a transaction: memoryd_index_take takes the feed after the
 * cursors and names the files to index, read through a cursor
 * INDEX_FETCH at a time; their words are computed here (md_pg_words: a
 * plpgsql call a file cost more than the rest of the step) and written a
 * batch at a time (INDEX_BATCH_FILES, INDEX_BATCH_BYTES of text), so that
 * what memoryd holds stays bounded whatever the step takes (a tenant
 * imported: every file). The count of feed rows taken, or -1 (failed,
 * logged). */
static long index_step(struct md_pg_indexer *ix, struct step_bufs *b)
{
    struct md_pg_params p = {.n = 0};
    md_pg_i32(&p, INDEX_STEP_WRITES);
    if (step_exec(ix, "BEGIN", NULL, 0, PGRES_COMMAND_OK, NULL) ||
        step_exec(ix,
                  "DECLARE memoryd_index NO SCROLL CURSOR FOR"
                  " SELECT taken, tenant, path, size FROM memoryd_index_take($1)",
                  &p, 0, PGRES_COMMAND_OK, NULL))
        return -1;
    long taken = 0;
    b->files = b->bytes = b->indexed = 0;
    for (int rows = 1; rows > 0;) {
        PGresult *r = NULL;
        if (step_exec(ix, "FETCH " INDEX_FETCH " FROM memoryd_index", NULL, 1, PGRES_TUPLES_OK, &r))
            return -1;
        rows = PQntuples(r);
        enum md_err e = MD_OK;
        int failed = 0;
        for (int i = 0; !e && !failed && i < rows; i++) {
            taken = (long)be_int(PQgetvalue(r, i, 0), PQgetlength(r, i, 0));
            if (PQgetisnull(r, i, 1))
                continue;
            if (!b->files) {
                e = md_pg_arr_begin(&b->bt, OID_INT8, 1);
                if (!e)
                    e = md_pg_arr_begin(&b->bp, OID_TEXT, 1);
            }
            if (!e)
                e = md_pg_arr_i64(&b->bt, be_int(PQgetvalue(r, i, 1), PQgetlength(r, i, 1)));
            if (!e)
                e = md_pg_arr_elem(&b->bp, PQgetvalue(r, i, 2), (size_t)PQgetlength(r, i, 2));
            b->files++;
            b->indexed++;
            b->bytes += (size_t)be_int(PQgetvalue(r, i, 3), PQgetlength(r, i, 3));
            if (!e && (b->files >= INDEX_BATCH_FILES || b->bytes >= INDEX_BATCH_BYTES))
                failed = index_batch(ix, b);
        }
        PQclear(r);
        if (e)
            index_failed(ix, md_strerror(e));
        if (e || failed)
            return -1;
    }
    if (index_batch(ix, b) || step_exec(ix, "COMMIT", NULL, 0, PGRES_COMMAND_OK, NULL))
        return -1;
    return taken;
}

/* Steps until one takes fewer than half of INDEX_STEP_WRITES writes.
 * Commits are not waited for (synchronous_commit off): a step lost in a
 * crash leaves the cursors it moved in the same transaction where they
 * were, for the next. */
static void index_steps(struct md_pg_indexer *ix)
{
    if (ix->s->search_off || ix->s->search_pending)
        return;
    if (!ix->conn) {
        char why[256];
        PGconn *conn = md_pg_connect(ix->s->uri, why, sizeof why);
        if (!conn) {
            index_failed(ix, why);
            return;
        }
        set_conn(ix, conn);
        /* jit off, as on memoryd's other connections (conn.c): the estimate
         * of the feed's paths (string_to_table: a thousand rows a write) put
         * a step over jit_above_cost, and its compiling took 500 ms of a
         * step of 16. */
        if (step_exec(ix, "SET synchronous_commit = off", NULL, 0, PGRES_COMMAND_OK, NULL) ||
            step_exec(ix, "SET jit = off", NULL, 0, PGRES_COMMAND_OK, NULL))
            return;
    }
    struct step_bufs b;
    struct md_buf *all[] = {&b.bt, &b.bp, &b.t, &b.p, &b.w, &b.words};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        md_buf_init(all[i], INDEX_BUF_LIMIT);
    for (long taken = INDEX_STEP_WRITES; taken >= INDEX_STEP_WRITES / 2 && !ix->stop;) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        taken = index_step(ix, &b);
        if (taken < 0)
            break;
        ix->failing = 0;
        if (taken && md_log_enabled(MD_LOG_DEBUG)) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            struct md_logline l;
            md_log_begin(&l, MD_LOG_DEBUG, "search index step");
            md_log_int(&l, "writes", taken);
            md_log_int(&l, "files", (int64_t)b.indexed);
            md_log_int(&l, "us",
                       (t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000);
            md_log_end(&l);
        }
    }
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        md_buf_free(all[i]);
}

/* `ms` from now, as pthread_cond_timedwait takes it. */
static struct timespec after_ms(long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000 + (t.tv_nsec + ms % 1000 * 1000000L) / 1000000000L;
    t.tv_nsec = (t.tv_nsec + ms % 1000 * 1000000L) % 1000000000L;
    return t;
}

static int earlier(struct timespec a, struct timespec b)
{
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

/* Steps at every tick, and when the writes have paused for a quiet spell
 * (INDEX_QUIET_PART of the period) after a write: each write that finds
 * `wrote` clear sets it and wakes the thread, which clears it and waits
 * the spell out; a write within the spell sets it again, and the wait
 * starts over (never past the tick). */
static void *indexer_main(void *arg)
{
    struct md_pg_indexer *ix = arg;
    long quiet_ms = ix->every_ms / INDEX_QUIET_PART;
    pthread_mutex_lock(&ix->mu);
    struct timespec tick = after_ms(ix->every_ms);
    while (!ix->stop) {
        struct timespec until = tick;
        int spell = 0;
        if (atomic_exchange(&ix->wrote, 0)) {
            struct timespec q = after_ms(quiet_ms);
            if ((spell = earlier(q, tick)))
                until = q;
        }
        int timed_out = pthread_cond_timedwait(&ix->cv, &ix->mu, &until) == ETIMEDOUT;
        if (ix->stop)
            break;
        if (!timed_out || (spell && atomic_load(&ix->wrote)))
            continue; /* woken by a write, or the writes went on: look again */
        pthread_mutex_unlock(&ix->mu);
        index_steps(ix);
        pthread_mutex_lock(&ix->mu);
        tick = after_ms(ix->every_ms);
    }
    pthread_mutex_unlock(&ix->mu);
    set_conn(ix, NULL);
    return NULL;
}

void md_pg_indexer_wrote(struct md_pg_indexer *ix)
{
    if (!ix || atomic_exchange(&ix->wrote, 1))
        return;
    pthread_mutex_lock(&ix->mu);
    pthread_cond_signal(&ix->cv);
    pthread_mutex_unlock(&ix->mu);
}

struct md_pg_indexer *md_pg_indexer_start(struct pg_store *s)
{
    struct md_pg_indexer *ix = calloc(1, sizeof *ix);
    if (!ix)
        return NULL;
    ix->s = s;
    /* Tests: a long period keeps what is written unindexed. */
    const char *every = getenv("MEMORYD_INDEX_EVERY_MS");
    ix->every_ms = every && *every ? strtol(every, NULL, 10) : INDEX_EVERY_MS;
    if (ix->every_ms <= 0)
        ix->every_ms = INDEX_EVERY_MS;
    pthread_mutex_init(&ix->mu, NULL);
    pthread_cond_init(&ix->cv, NULL);
    if (pthread_create(&ix->thread, NULL, indexer_main, ix) != 0) {
        pthread_cond_destroy(&ix->cv);
        pthread_mutex_destroy(&ix->mu);
        free(ix);
        return NULL;
    }
    return ix;
}

void md_pg_indexer_stop(struct md_pg_indexer *ix)
{
    if (!ix)
        return;
    pthread_mutex_lock(&ix->mu);
    ix->stop = 1;
    pthread_cond_signal(&ix->cv);
    if (ix->cancel) { /* a step under way: its writes stay for the next start */
        char ignore[256];
        PQcancel(ix->cancel, ignore, sizeof ignore);
    }
    pthread_mutex_unlock(&ix->mu);
    pthread_join(ix->thread, NULL);
    pthread_cond_destroy(&ix->cv);
    pthread_mutex_destroy(&ix->mu);
    free(ix);
}
