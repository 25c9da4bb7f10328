/*
 * defaults_bound_pg.c — the bound of issue 26's point 4 on PostgreSQL: what
 * memoryd's defaults (history and search) must cost durable writes at the
 * least, by a program that stores only what those features must keep, with
 * libpq and none of memoryd's schema or statements (bench/defaults_bound.c
 * is the same with SQLite).
 *
 * URI is an empty database of the caller's; its tables are dropped and made
 * again at the start. In mode `bare` they hold what memoryd bare must keep:
 *   files (id, path UNIQUE, content)  the live text;
 *   feed (seq, file, time)             the change feed (kept either way; read
 *                                      by seq, so seq is its primary key);
 * and in mode `defaults` also what history and search must keep:
 *   history (file, seq, delta)  one row per write: the reverse splice of
 *       md_delta.h that turns the new text back into the old one (a create:
 *       NULL, "did not exist");
 *   words (file, words tsvector), a GIN index on words: each file's words,
 *       written beside the writes: every second (memoryd's period) a thread
 *       of its own, on a connection of its own, indexes the files written
 *       since in a transaction of its own (its row replaced; GIN's pending
 *       list takes the new entries, VACUUM the old, as with memoryd's
 *       index); the time counted ends when it has taken the last writes.
 * Setup (not timed): 512 files of 1 KiB (bench/lib.mjs's kibWith('state=on')),
 * indexed in `defaults`, then ANALYZE. Then for SECONDS, BATCH commands a
 * transaction, of one workload: `str_replace` (the 512 files in turn,
 * `state=on` and `state=off` swapped, as bench/lua/str_replace.lua does) or
 * `create` (a new 1 KiB file a command). A batch is one round trip: pipeline
 * mode, a statement per 512 commands (so that no statement writes a file
 * twice), the arrays of its rows as binary parameters unnested by one
 * statement that writes every table (data-modifying WITHs), then a Sync;
 * the statements before a Sync are one implicit transaction, committed
 * there, durably (synchronous_commit on). The ids of files and the feed's
 * seq are the program's (one writer), as in the SQLite bound.
 *
 * Prints one JSON line, as bench/defaults_bound.c:
 *   {"workload":"str_replace","mode":"defaults","batch":16,"commands":N,
 *    "seconds":S,"per_sec":R}
 *
 *   defaults_bound_pg URI SECONDS BATCH WORKLOAD MODE
 *
 * Exit: 0, or 1 on a PostgreSQL error (printed), 2 on bad arguments.
 */
#include <endian.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/md_buf.h"
#include "bound.h"
#include "store/md_delta.h"
#include "store/pg/internal.h"

#define FILES         BOUND_FILES
#define TEXT_MAX      BOUND_TEXT_MAX
#define INDEX_EVERY_S 1.0
#define ROWS_MAX      FILES /* rows a statement: the str_replace files once each */
#define PARAMS_MAX    5
#define BUF_LIMIT     ((size_t)1 << 30)

/* One statement a chunk of a batch: $1 the files' ids, $2 their contents,
 * $3 the feed's seqs, $4 the time (ms), $5 a create's paths or a
 * str_replace's deltas. */
#define FEED_INSERT                                                                                \
    " INSERT INTO feed (seq, file, time) SELECT s, f, $4::bigint FROM unnest($3::bigint[],"        \
    " $1::bigint[]) AS u(s, f)"
#define CREATE_FILES                                                                               \
    "WITH f AS (INSERT INTO files (id, path, content) SELECT * FROM unnest($1::bigint[],"          \
    " $5::text[], $2::bytea[]))"
#define SET_FILES                                                                                  \
    "WITH f AS (UPDATE files SET content = u.c FROM unnest($1::bigint[], $2::bytea[]) AS u(id, c)" \
    " WHERE files.id = u.id)"
static const char *const WRITE_SQL[2][2] = {
    /* [create][defaults] */
    {SET_FILES FEED_INSERT,
     SET_FILES ", h AS (INSERT INTO history (file, seq, delta) SELECT * FROM"
               " unnest($1::bigint[], $3::bigint[], $5::bytea[]))" FEED_INSERT},
    {CREATE_FILES FEED_INSERT,
     CREATE_FILES ", h AS (INSERT INTO history (file, seq) SELECT * FROM unnest($1::bigint[],"
                  " $3::bigint[]))" FEED_INSERT},
};

/* The word index's step: a file's words arrive as one tsvector literal (its
 * words, lower-cased, deduplicated, joined by spaces: alphanumerics need no
 * quoting), the files' literals as one text[], cast by the statement. Of the
 * two ways (this, or a text[] of words a file with array_to_tsvector) it is
 * the cheaper for a step of many files: array_to_tsvector alone is cheaper
 * than tsvector_in (on PostgreSQL 15 here, about 1 µs a file of 4 words
 * against 5), but one statement cannot take a text[] a file as such: it
 * must regroup one flat array (array_agg ... GROUP BY file, measured at
 * about 28 µs a file), slice a 2-D one (each slice walks the array from its
 * start: quadratic) or be sent once a file (a statement's execution a
 * file). Unnesting the literals costs about 12 µs a file, whatever their
 * number. */
static const char INDEX_SQL[] =
    "INSERT INTO words (file, words) SELECT f, w::tsvector FROM unnest($1::bigint[], $2::text[])"
    " AS u(f, w) ON CONFLICT (file) DO UPDATE SET words = excluded.words";

struct bound {
    PGconn *c;
    const struct bound_args *a;
    struct bound_texts t;
    int64_t seq;
    /* The files written since the word index's last step (the writer adds,
     * the indexer takes), each once. */
    pthread_mutex_t mu;
    int64_t *pending;
    size_t npending, pending_cap;
    unsigned char is_pending[FILES]; /* of the 512: already in `pending` */
    atomic_int stop;
};

static void die(const char *what, PGconn *c)
{
    fprintf(stderr, "defaults_bound_pg: %s: %s\n", what, c ? PQerrorMessage(c) : "out of memory");
    exit(1);
}

static void oom(enum md_err e)
{
    if (e != MD_OK)
        die("a parameter", NULL);
}

/* realloc, or the program ends. */
static void *grow(void *p, size_t size)
{
    void *q = realloc(p, size);
    if (!q)
        die("realloc", NULL);
    return q;
}

static void exec_ok(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        die(sql, c);
    PQclear(r);
}

/* A connection to `uri`, durable commits, generic plans, `sql` prepared as
 * "s". */
static PGconn *open_conn(const char *uri, const char *sql)
{
    PGconn *c = PQconnectdb(uri);
    if (PQstatus(c) != CONNECTION_OK)
        die("connect", c);
    exec_ok(c, "SET synchronous_commit = on; SET plan_cache_mode = force_generic_plan;"
               " SET client_min_messages = warning");
    if (sql) {
        PGresult *r = PQprepare(c, "s", sql, 0, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            die(sql, c);
        PQclear(r);
    }
    return c;
}

/* Statement "s" sent on `c` with the binary parameters `par` (n of them). */
static void send_s(PGconn *c, const struct md_buf *par, int n)
{
    const char *v[PARAMS_MAX];
    int len[PARAMS_MAX], fmt[PARAMS_MAX];
    for (int i = 0; i < n; i++) {
        v[i] = par[i].data;
        len[i] = (int)par[i].len;
        fmt[i] = 1;
    }
    if (!PQsendQueryPrepared(c, "s", n, v, len, fmt, 0))
        die("send", c);
}

/* Statement "s"'s result read (and the NULL after it); the program ends
 * unless it succeeded. */
static void result_ok(PGconn *c)
{
    PGresult *r = PQgetResult(c);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        fprintf(stderr, "defaults_bound_pg: statement: %s",
                r ? PQresultErrorMessage(r) : PQerrorMessage(c));
        exit(1);
    }
    PQclear(r);
    PQclear(PQgetResult(c));
}

/* Statement "s" on `c` with the binary parameters `par` (n of them), not
 * pipelined: its own transaction. */
static void exec_params(PGconn *c, const struct md_buf *par, int n)
{
    send_s(c, par, n);
    result_ok(c);
}

/* The words of `text` (runs of ASCII letters and digits, lower-cased),
 * sorted and each once, joined by spaces, appended to `out`: a tsvector
 * literal that needs no quoting. */
static int word_cmp(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static void words_of(const char *text, size_t len, struct md_buf *out)
{
    static const char LOWER[] = "abcdefghijklmnopqrstuvwxyz";
    char low[TEXT_MAX + 1];
    char *word[TEXT_MAX / 2 + 1];
    size_t n = 0;
    for (size_t i = 0; i < len && i < TEXT_MAX; i++) {
        char ch = text[i];
        int upper = ch >= 'A' && ch <= 'Z';
        int alnum = upper || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        if (!alnum)
            low[i] = '\0';
        else if (upper)
            low[i] = LOWER[ch - 'A'];
        else
            low[i] = ch;
        if (alnum && (i == 0 || !low[i - 1]))
            word[n++] = &low[i];
    }
    low[len < TEXT_MAX ? len : TEXT_MAX] = '\0';
    if (n > 1)
        qsort(word, n, sizeof word[0], word_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i && strcmp(word[i], word[i - 1]) == 0)
            continue;
        if (out->len)
            oom(md_buf_putc(out, ' '));
        oom(md_buf_puts(out, word[i]));
    }
}

/* The files noted pending (with the texts they have now) into the word
 * index, in one statement of its own. */
static void index_files(PGconn *c, const int64_t *ids, size_t n, char (*texts)[TEXT_MAX],
                        const size_t *lens, struct md_buf *par, struct md_buf *words)
{
    oom(md_pg_arr_begin(&par[0], OID_INT8, n));
    oom(md_pg_arr_begin(&par[1], OID_TEXT, n));
    for (size_t i = 0; i < n; i++) {
        md_buf_reset(words);
        words_of(texts[i], lens[i], words);
        oom(md_pg_arr_i64(&par[0], ids[i]));
        oom(md_pg_arr_elem(&par[1], words->data ? words->data : "", words->len));
    }
    exec_params(c, par, 2);
}

/* The word index's writer: every INDEX_EVERY_S, the files written since,
 * their texts taken under the lock, indexed on a connection of its own;
 * once more when the writes stop (the run ends when the index has caught
 * up, as bench/defaults.mjs's runs of memoryd do). */
static void *indexer(void *arg)
{
    struct bound *b = arg;
    PGconn *c = open_conn(b->a->where, INDEX_SQL);
    struct md_buf par[2], words;
    for (int i = 0; i < 2; i++)
        md_buf_init(&par[i], BUF_LIMIT);
    md_buf_init(&words, BUF_LIMIT);
    int64_t *ids = NULL;
    size_t cap = 0;
    char(*texts)[TEXT_MAX] = NULL;
    size_t *lens = NULL;
    double last = bound_now_s();
    for (int stopping = 0; !stopping;) {
        stopping = atomic_load(&b->stop);
        if (!stopping) {
            usleep(10000);
            if (bound_now_s() - last < INDEX_EVERY_S)
                continue;
        }
        last = bound_now_s();
        pthread_mutex_lock(&b->mu);
        size_t n = b->npending;
        if (n > cap) {
            cap = n;
            ids = grow(ids, cap * sizeof *ids);
            texts = grow(texts, cap * sizeof *texts);
            lens = grow(lens, cap * sizeof *lens);
        }
        for (size_t i = 0; i < n; i++) {
            int64_t id = ids[i] = b->pending[i];
            int made = id > FILES;
            lens[i] = made ? b->t.created_len : b->t.len[id - 1];
            memcpy(texts[i], made ? b->t.created : b->t.text[id - 1], lens[i]);
            if (!made)
                b->is_pending[id - 1] = 0;
        }
        b->npending = 0;
        pthread_mutex_unlock(&b->mu);
        if (n)
            index_files(c, ids, n, texts, lens, par, &words);
    }
    free(ids);
    free(texts);
    free(lens);
    for (int i = 0; i < 2; i++)
        md_buf_free(&par[i]);
    md_buf_free(&words);
    PQfinish(c);
    return NULL;
}

/* File `id` written: pending for the word index (the caller holds the
 * lock). */
static void note(struct bound *b, int64_t id)
{
    if (id <= FILES) {
        if (b->is_pending[id - 1])
            return;
        b->is_pending[id - 1] = 1;
    }
    if (b->npending == b->pending_cap) {
        b->pending_cap = b->pending_cap ? 2 * b->pending_cap : 1024;
        b->pending = grow(b->pending, b->pending_cap * sizeof *b->pending);
    }
    b->pending[b->npending++] = id;
}

/* The rows of `rows` commands from the n-th into the parameters of the
 * write statement: the texts changed and, with the defaults, the deltas
 * made and the files noted for the index (under the lock, which the
 * indexer takes to read the texts). Returns the parameters' count. */
static int chunk_rows(struct bound *b, int64_t n, size_t rows, struct md_buf *par,
                      struct md_buf *delta)
{
    int create = b->a->create, defaults = b->a->defaults;
    oom(md_pg_arr_begin(&par[0], OID_INT8, rows));
    oom(md_pg_arr_begin(&par[1], OID_BYTEA, rows));
    oom(md_pg_arr_begin(&par[2], OID_INT8, rows));
    md_buf_reset(&par[3]);
    int64_t ms = (int64_t)(bound_now_s() * 1000);
    uint64_t be = htobe64((uint64_t)ms);
    oom(md_buf_append(&par[3], &be, sizeof be));
    oom(md_pg_arr_begin(&par[4], create ? OID_TEXT : OID_BYTEA, rows));
    pthread_mutex_lock(&b->mu);
    for (size_t i = 0; i < rows; i++, n++) {
        int64_t id;
        if (create) {
            char path[96];
            int plen = snprintf(path, sizeof path, "/memories/bench/new/t-%lld.txt", (long long)n);
            id = FILES + n + 1;
            oom(md_pg_arr_elem(&par[1], b->t.created, b->t.created_len));
            oom(md_pg_arr_elem(&par[4], path, (size_t)plen));
        } else {
            char old[TEXT_MAX];
            size_t len;
            id = bound_str_replace(&b->t, n, old, &len);
            const char *t = b->t.text[id - 1];
            oom(md_pg_arr_elem(&par[1], t, len));
            if (defaults) {
                md_buf_reset(delta);
                oom(md_delta_make(old, len, t, len, delta));
                oom(md_pg_arr_elem(&par[4], delta->data, delta->len));
            }
        }
        oom(md_pg_arr_i64(&par[0], id));
        oom(md_pg_arr_i64(&par[2], ++b->seq));
        if (defaults)
            note(b, id);
    }
    pthread_mutex_unlock(&b->mu);
    return create || defaults ? 5 : 4;
}

/* One batch of `batch` commands from the n-th: a statement a chunk of at
 * most ROWS_MAX, pipelined, then the Sync that commits them (one implicit
 * transaction) and the results read: one round trip. */
static void write_batch(struct bound *b, int64_t n, long batch, struct md_buf *par,
                        struct md_buf *delta)
{
    int sent = 0;
    for (long done = 0; done < batch; sent++) {
        size_t rows = (size_t)(batch - done < ROWS_MAX ? batch - done : ROWS_MAX);
        send_s(b->c, par, chunk_rows(b, n + done, rows, par, delta));
        done += (long)rows;
    }
    if (!PQpipelineSync(b->c))
        die("sync", b->c);
    for (int i = 0; i < sent; i++)
        result_ok(b->c);
    PGresult *sync = PQgetResult(b->c);
    if (PQresultStatus(sync) != PGRES_PIPELINE_SYNC)
        die("sync", b->c);
    PQclear(sync);
}

/* Setup: the tables made again, the 512 files, indexed with the defaults;
 * ANALYZE. */
static void setup(struct bound *b, struct md_buf *par)
{
    exec_ok(b->c, "DROP TABLE IF EXISTS files, feed, history, words;"
                  " CREATE TABLE files (id bigserial PRIMARY KEY, path text NOT NULL UNIQUE,"
                  " content bytea NOT NULL);"
                  " CREATE TABLE feed (seq bigserial PRIMARY KEY, file bigint NOT NULL,"
                  " time bigint NOT NULL)");
    if (b->a->defaults)
        exec_ok(b->c, "CREATE TABLE history (file bigint NOT NULL, seq bigint NOT NULL,"
                      " delta bytea, PRIMARY KEY (file, seq));"
                      " CREATE TABLE words (file bigint PRIMARY KEY, words tsvector NOT NULL);"
                      " CREATE INDEX words_words ON words USING gin (words)");
    PGresult *r = PQprepare(b->c, "s",
                            "INSERT INTO files (id, path, content) SELECT * FROM"
                            " unnest($1::bigint[], $2::text[], $3::bytea[])",
                            0, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        die("prepare", b->c);
    PQclear(r);
    oom(md_pg_arr_begin(&par[0], OID_INT8, FILES));
    oom(md_pg_arr_begin(&par[1], OID_TEXT, FILES));
    oom(md_pg_arr_begin(&par[2], OID_BYTEA, FILES));
    int64_t ids[FILES];
    for (int64_t id = 1; id <= FILES; id++) {
        char p[64];
        int plen = snprintf(p, sizeof p, "/memories/bench/sr/f%lld.txt", (long long)id - 1);
        ids[id - 1] = id;
        oom(md_pg_arr_i64(&par[0], id));
        oom(md_pg_arr_elem(&par[1], p, (size_t)plen));
        oom(md_pg_arr_elem(&par[2], b->t.text[id - 1], b->t.len[id - 1]));
    }
    exec_params(b->c, par, 3);
    exec_ok(b->c, "DEALLOCATE s");
    if (b->a->defaults) {
        PGconn *ic = open_conn(b->a->where, INDEX_SQL);
        struct md_buf words;
        md_buf_init(&words, BUF_LIMIT);
        index_files(ic, ids, FILES, b->t.text, b->t.len, par, &words);
        md_buf_free(&words);
        PQfinish(ic);
    }
    exec_ok(b->c, "ANALYZE");
}

int main(int argc, char **argv)
{
    struct bound_args a;
    if (bound_args(argc, argv, "defaults_bound_pg", "URI", &a) != 0)
        return 2;
    static struct bound b;
    b.a = &a;
    pthread_mutex_init(&b.mu, NULL);
    bound_texts_init(&b.t);
    struct md_buf par[PARAMS_MAX], delta;
    for (int i = 0; i < PARAMS_MAX; i++)
        md_buf_init(&par[i], BUF_LIMIT);
    md_buf_init(&delta, 1 << 16);
    b.c = open_conn(a.where, NULL);
    setup(&b, par);
    PGresult *r = PQprepare(b.c, "s", WRITE_SQL[a.create][a.defaults], 0, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        die(WRITE_SQL[a.create][a.defaults], b.c);
    PQclear(r);
    if (!PQenterPipelineMode(b.c))
        die("pipeline mode", b.c);

    pthread_t ix;
    if (a.defaults && pthread_create(&ix, NULL, indexer, &b) != 0)
        return 1;
    int64_t n = 0;
    double t0 = bound_now_s();
    while (bound_now_s() - t0 < a.seconds) {
        write_batch(&b, n, a.batch, par, &delta);
        n += a.batch;
    }
    atomic_store(&b.stop, 1);
    if (a.defaults)
        pthread_join(ix, NULL);
    bound_report(&a, n, bound_now_s() - t0);
    for (int i = 0; i < PARAMS_MAX; i++)
        md_buf_free(&par[i]);
    md_buf_free(&delta);
    PQfinish(b.c);
    free(b.pending);
    pthread_mutex_destroy(&b.mu);
    return 0;
}
