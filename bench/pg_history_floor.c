/*
 * pg_history_floor.c — the storage floor of history on PostgreSQL: what
 * recording versions costs durable str_replace writes when PostgreSQL
 * alone is asked for memoryd's writer statements, from one client in C,
 * with memoryd's binary parameters and no HTTP, no JSON, no command
 * machinery at all (bench/history_floor.c is the same for SQLite).
 *
 * The database (URI) gets memoryd's schema from memoryd's own migrations
 * (md_pg_migrate), without the full-text index (md_pg_search_setting, as
 * `memoryd --search off`, which bench/history.mjs runs); each run makes a
 * tenant of its own, "floor-<mode>-<pid>",
 * with the directories /memories, /memories/bench, /memories/bench/sr and
 * FILES files /memories/bench/sr/f<i>.txt of 1 KiB (bench/lib.mjs's
 * kibWith("state=on"): 16 lines of 63 characters, the ninth the marker),
 * then ANALYZE. The connection is set up as memoryd's writer's
 * (md_pg_conn_setup in src/store/pg/conn.c: synchronous_commit on, generic
 * plans, pipeline mode, the statements prepared once). Then, for SECONDS,
 * batches of BATCH str_replace commands on distinct files (a shuffled
 * sweep over the files), each toggling "state=on" <-> "state=off" as
 * bench/lua's toggler does (1024 <-> 1025 bytes), as memoryd's writer
 * sends an optimistic batch of them, in its three round trips:
 *   1. BEGIN, the tenant's advisory lock (P_LOCK), P_PREFETCH of the
 *      three ancestors and the files, their contents wanted;
 *   2. mode on: P_VER_MANY, each file's old content from the prefetch;
 *      P_CHANGES_MANY (both modes: the change feed); P_SET_MANY;
 *   3. P_COUNTERS_SET, P_NOTIFY, P_SIZES (the three ancestors), COMMIT;
 * the new contents' SHA-256 computed here, as memoryd does. Mode on also
 * prunes as memoryd does on PostgreSQL (src/cmd/writer.c; md_pg_prune in
 * src/store/pg/prune.c): a thread of its own on a connection of its own,
 * every 100 ms, takes up to 33 of the paths edited since (a queue of 4096,
 * as md_hist's), and deletes the versions past 20 a path with
 * P_PRUNE_PATH, all in one round trip with its BEGIN and COMMIT. Mode
 * on-noprune leaves that out (versions only pile up: the easier bound).
 * The statements are memoryd's own, taken from its table
 * (md_pg_statement).
 *
 * Prints one JSON line:
 *   {"mode":"on","batch":30,"files":510,"commands":N,"seconds":S,
 *    "per_sec":R,"pruned":P}
 *
 *   pg_history_floor URI SECONDS BATCH FILES off|on|on-noprune
 */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/md_buf.h"
#include "base/md_sha256.h"
#include "store/pg/internal.h"

#define KEEP           20  /* --history-versions' default */
#define PRUNE_EVERY_MS 100 /* src/cmd/writer.c */
#define PRUNE_PATHS    33  /* md_pg_prune: budget / 8 + 1 of 256 */
#define QUEUE_MAX      4096

/* The statements replayed: memoryd's own (md_pg_statement), prepared as
 * "q<id>". */
static const enum pg_stmt REPLAYED[] = {P_BEGIN,    P_COMMIT,       P_LOCK,      P_PREFETCH,
                                        P_VER_MANY, P_CHANGES_MANY, P_SET_MANY,  P_COUNTERS_SET,
                                        P_NOTIFY,   P_SIZES,        P_PRUNE_PATH};

static const char *const ANCESTORS[3] = {"/memories", "/memories/bench", "/memories/bench/sr"};

static void die(const char *what, PGconn *c)
{
    fprintf(stderr, "pg_history_floor: %s: %s\n", what, c ? PQerrorMessage(c) : "");
    exit(1);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A connection set up as memoryd's writer's; statements prepared. */
static PGconn *open_conn(const char *uri)
{
    char why[512];
    PGconn *c = md_pg_connect(uri, why, sizeof why);
    if (!c) {
        fprintf(stderr, "pg_history_floor: %s\n", why);
        exit(1);
    }
    PGresult *r = PQexec(c, "SET synchronous_commit = on; SET lock_timeout = 5000;"
                            " SET max_parallel_workers_per_gather = 0;"
                            " SET plan_cache_mode = force_generic_plan;"
                            " SET default_transaction_isolation = 'read committed'");
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        die("session settings", c);
    PQclear(r);
    for (size_t i = 0; i < sizeof REPLAYED / sizeof REPLAYED[0]; i++) {
        int n;
        const Oid *types;
        const char *sql = md_pg_statement(REPLAYED[i], &n, &types);
        char name[8];
        snprintf(name, sizeof name, "q%d", (int)REPLAYED[i]);
        r = PQprepare(c, name, sql, n, types);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            die(sql, c);
        PQclear(r);
    }
    if (!PQenterPipelineMode(c))
        die("pipeline mode", c);
    return c;
}

/* ---- one round trip ---- */

static const char *sql_of(enum pg_stmt id)
{
    int n;
    const Oid *types;
    return md_pg_statement(id, &n, &types);
}

struct trip {
    PGconn *c;
    enum pg_stmt ids[64];
    int n;
};

static void send_q(struct trip *t, enum pg_stmt id, const struct md_pg_params *p)
{
    char name[8];
    snprintf(name, sizeof name, "q%d", id);
    static const struct md_pg_params none = {{0}, {0}, {0}, {{0}}, 0};
    if (!p)
        p = &none;
    if (!PQsendQueryPrepared(t->c, name, p->n, p->v, p->len, p->fmt, 1))
        die(sql_of(id), t->c);
    t->ids[t->n++] = id;
}

/* Sync and read every result; the rows of statement `keep` go to *kept
 * (the caller clears them); returns the rows of statement `count` (P_COUNT:
 * none for either). */
static long trip_end(struct trip *t, enum pg_stmt keep, PGresult **kept, enum pg_stmt count)
{
    if (!PQpipelineSync(t->c))
        die("sync", t->c);
    long rows = 0;
    for (int i = 0; i < t->n; i++) {
        PGresult *r = PQgetResult(t->c);
        ExecStatusType st = PQresultStatus(r);
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
            fprintf(stderr, "pg_history_floor: %s: %s\n", sql_of(t->ids[i]),
                    r ? PQresultErrorMessage(r) : PQerrorMessage(t->c));
            exit(1);
        }
        if (t->ids[i] == count)
            rows += PQntuples(r);
        if (t->ids[i] == keep && kept)
            *kept = r;
        else
            PQclear(r);
        PQclear(PQgetResult(t->c)); /* the NULL that ends it */
    }
    PGresult *sync = PQgetResult(t->c);
    if (PQresultStatus(sync) != PGRES_PIPELINE_SYNC)
        die("sync", t->c);
    PQclear(sync);
    t->n = 0;
    return rows;
}

/* ---- the paths to prune: a queue of indexes, as md_hist's ---- */

static pthread_mutex_t qmu = PTHREAD_MUTEX_INITIALIZER;
static int queue[QUEUE_MAX];
static size_t qhead, qcount;
static atomic_int stop;
static atomic_long pruned;

static void touch(int file)
{
    pthread_mutex_lock(&qmu);
    if (qcount < QUEUE_MAX)
        queue[(qhead + qcount++) % QUEUE_MAX] = file;
    pthread_mutex_unlock(&qmu);
}

struct pruner_arg {
    const char *uri;
    int64_t tenant;
};

static void *pruner_main(void *arg)
{
    const struct pruner_arg *a = arg;
    struct trip t = {open_conn(a->uri), {0}, 0};
    while (!atomic_load(&stop)) {
        usleep(PRUNE_EVERY_MS * 1000);
        int take[PRUNE_PATHS];
        size_t n = 0;
        pthread_mutex_lock(&qmu);
        while (n < PRUNE_PATHS && qcount > 0) {
            take[n++] = queue[qhead];
            qhead = (qhead + 1) % QUEUE_MAX;
            qcount--;
        }
        pthread_mutex_unlock(&qmu);
        if (n == 0)
            continue;
        send_q(&t, P_BEGIN, NULL);
        char path[64];
        for (size_t i = 0; i < n; i++) {
            struct md_pg_params p = {.n = 0};
            snprintf(path, sizeof path, "/memories/bench/sr/f%d.txt", take[i]);
            md_pg_i64(&p, a->tenant);
            md_pg_text(&p, path);
            md_pg_i64(&p, KEEP);
            send_q(&t, P_PRUNE_PATH, &p);
        }
        send_q(&t, P_COMMIT, NULL);
        atomic_fetch_add(&pruned, trip_end(&t, P_COUNT, NULL, P_PRUNE_PATH));
    }
    PQfinish(t.c);
    return NULL;
}

/* ---- setup ---- */

static char kib_on[1024];

static void kib_text(void)
{
    char *o = kib_on;
    for (int l = 0; l < 16; l++) {
        char line[64];
        static const char letters[] = "abcdefghi", dot = '.';
        if (l == 8)
            snprintf(line, sizeof line, "%-63s", "state=on");
        else
            for (int i = 0; i < 63; i++)
                line[i] = letters[i % 9];
        for (int i = 0; i < 63; i++)
            if (l == 8 && line[i] == ' ')
                line[i] = dot;
        memcpy(o, line, 63);
        o += 63;
        *o++ = '\n';
    }
}

static int64_t seed(PGconn *c, const char *tenant, int files)
{
    char hex[2 * sizeof kib_on + 1];
    for (size_t i = 0; i < sizeof kib_on; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)kib_on[i]);
    size_t cap = 4096 + sizeof hex;
    char *sql = malloc(cap);
    if (!sql)
        die("out of memory", NULL);
    snprintf(sql, cap,
             "INSERT INTO tenants (name, created_at) VALUES ('%s', 0);"
             " INSERT INTO entries (tenant, path, depth, kind, size, mtime)"
             " SELECT id, p, d, 1, %d * 1024, 0 FROM tenants, (VALUES ('/memories', 0),"
             " ('/memories/bench', 1), ('/memories/bench/sr', 2)) v(p, d) WHERE name = '%s';"
             " INSERT INTO entries (tenant, path, depth, kind, size, mtime, content, sha256)"
             " SELECT t.id, '/memories/bench/sr/f' || i || '.txt', 3, 0, 1024, 0,"
             " '\\x%s'::bytea, sha256('\\x%s'::bytea)"
             " FROM tenants t, generate_series(0, %d) i WHERE t.name = '%s';"
             " ANALYZE",
             tenant, files, tenant, hex, hex, files - 1, tenant);
    PGresult *r = PQexec(c, sql);
    free(sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        die("seed", c);
    PQclear(r);
    char q[256];
    snprintf(q, sizeof q, "SELECT id FROM tenants WHERE name = '%s'", tenant);
    r = PQexec(c, q);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        die("seed", c);
    int64_t id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return id;
}

/* ---- the batches ---- */

/* `old` with "state=on" <-> "state=off" into `out`; its length. */
static size_t toggle(const char *old, size_t len, char *out)
{
    const char *on = memmem(old, len, "state=on", 8);
    const char *off = memmem(old, len, "state=off", 9);
    const char *at = off ? off : on;
    if (!at)
        die("a file without its marker", NULL);
    size_t pre = (size_t)(at - old), was = off ? 9 : 8;
    memcpy(out, old, pre);
    memcpy(out + pre, off ? "state=on" : "state=off", off ? 8 : 9);
    size_t now = off ? 8 : 9;
    memcpy(out + pre + now, at + was, len - pre - was);
    return len - was + now;
}

static void arrays(struct md_buf *a, const Oid *types, int n, size_t rows)
{
    for (int i = 0; i < n; i++)
        if (md_pg_arr_begin(&a[i], types[i], rows))
            die("out of memory", NULL);
}

/* A whole number argument (-1 when it is not one). */
static int number(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    return *s && !*end && v >= 0 && v <= 1000000 ? (int)v : -1;
}

/* The sweeps' order: xorshift64*, seeded from the clock (not for secrets). */
static uint64_t next_random(void)
{
    static uint64_t x;
    if (!x)
        x = now_ms() | 1u;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    return x * 0x2545F4914F6CDD1DULL;
}

/* A NULL element of a binary array (the actor: none). */
static enum md_err arr_null(struct md_buf *b)
{
    static const unsigned char minus1[4] = {0xff, 0xff, 0xff, 0xff};
    return md_buf_append(b, minus1, 4);
}

static void params_of(struct md_pg_params *p, struct md_buf *a, int n)
{
    p->n = 0;
    for (int i = 0; i < n; i++)
        md_pg_bytes(p, a[i].data, a[i].len);
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: pg_history_floor URI SECONDS BATCH FILES off|on|on-noprune\n");
        return 2;
    }
    const char *uri = argv[1], *mode = argv[5];
    int seconds = number(argv[2]), batch = number(argv[3]), files = number(argv[4]);
    int history = strcmp(mode, "off") != 0, prune = strcmp(mode, "on") == 0;
    if (seconds < 1 || batch < 1 || batch > 120 || files < batch ||
        (history && !prune && strcmp(mode, "on-noprune") != 0))
        die("bad arguments", NULL);
    kib_text();
    char why[512];
    PGconn *m = md_pg_connect(uri, why, sizeof why);
    _Atomic int off;
    if (!m || md_pg_migrate(m, why, sizeof why) != 0 ||
        md_pg_search_setting(m, MD_SEARCH_OFF, &off, NULL, why, sizeof why) != 0) {
        fprintf(stderr, "pg_history_floor: %s\n", why);
        return 1;
    }
    char tenant[64];
    snprintf(tenant, sizeof tenant, "floor-%s-%d", mode, (int)getpid());
    int64_t id = seed(m, tenant, files);
    PQfinish(m);

    struct trip t = {open_conn(uri), {0}, 0};
    pthread_t pruner;
    struct pruner_arg pa = {uri, id};
    if (prune && pthread_create(&pruner, NULL, pruner_main, &pa) != 0)
        die("pruner thread", NULL);

    int *order = malloc((size_t)files * sizeof *order);
    char(*paths)[64] = malloc((size_t)batch * sizeof *paths);
    char *fresh = malloc((size_t)batch * 1100);
    /* Array parameters: a (the prefetch, the versions, the sizes), c9 (the
     * change rows, the notification), s6 (the new contents with the run of
     * deltas, the counters). The versions are kept whole (enc 0), as memoryd
     * keeps a version it has no delta of. */
    struct md_buf a[11], c9[9], s6[7];
    for (int i = 0; i < 11; i++)
        md_buf_init(&a[i], (size_t)64 << 20);
    for (int i = 0; i < 9; i++)
        md_buf_init(&c9[i], (size_t)64 << 20);
    for (int i = 0; i < 7; i++)
        md_buf_init(&s6[i], (size_t)64 << 20);
    if (!order || !paths || !fresh)
        die("out of memory", NULL);
    for (int i = 0; i < files; i++)
        order[i] = i;
    int pos = files;
    long commands = 0;
    uint64_t t0 = now_ms(), end = t0 + (uint64_t)seconds * 1000u;
    while (now_ms() < end) {
        if (pos + batch > files) { /* a new sweep, shuffled */
            for (int i = files - 1; i > 0; i--) {
                int j = (int)(next_random() % (uint64_t)(i + 1)), x = order[i];
                order[i] = order[j];
                order[j] = x;
            }
            pos = 0;
        }
        int *f = order + pos;
        pos += batch;
        /* 1: BEGIN, the lock, the prefetch. */
        struct md_pg_params p = {.n = 0};
        send_q(&t, P_BEGIN, NULL);
        md_pg_i64(&p, id);
        send_q(&t, P_LOCK, &p);
        static const Oid pre_types[3] = {OID_TEXT, OID_TEXT, OID_INT2};
        arrays(a, pre_types, 3, (size_t)batch + 3);
        for (int i = 0; i < batch + 3; i++) {
            if (i >= 3)
                snprintf(paths[i - 3], sizeof paths[0], "/memories/bench/sr/f%d.txt", f[i - 3]);
            const char *path = i < 3 ? ANCESTORS[i] : paths[i - 3];
            if (md_pg_arr_elem(&a[0], tenant, strlen(tenant)) ||
                md_pg_arr_elem(&a[1], path, strlen(path)) ||
                md_pg_arr_i16(&a[2], (int16_t)(i >= 3)))
                die("out of memory", NULL);
        }
        params_of(&p, a, 3);
        md_pg_i64(&p, 65536);
        send_q(&t, P_PREFETCH, &p);
        PGresult *pre = NULL;
        trip_end(&t, P_PREFETCH, &pre, P_COUNT);
        if (!pre || PQntuples(pre) != batch + 3)
            die("the prefetch", NULL);
        int64_t last_version = md_pg_r_i64(pre, 0, 7), last_seq = md_pg_r_i64(pre, 0, 8);
        /* 2: versions, change rows, the new contents. */
        int64_t when = (int64_t)now_ms(), delta = 0;
        static const Oid ver_types[11] = {OID_INT8,  OID_INT8,  OID_TEXT, OID_BOOL,
                                          OID_BYTEA, OID_INT8,  OID_INT8, OID_TEXT,
                                          OID_TEXT,  OID_BYTEA, OID_INT2};
        static const Oid ch_types[9] = {OID_INT8, OID_INT8, OID_INT8, OID_INT8, OID_INT8,
                                        OID_INT8, OID_TEXT, OID_TEXT, OID_TEXT};
        static const Oid set_types[7] = {OID_INT8, OID_TEXT,  OID_BYTEA, OID_INT8,
                                         OID_INT8, OID_BYTEA, OID_INT2};
        if (history)
            arrays(a, ver_types, 11, (size_t)batch);
        arrays(c9, ch_types, 9, (size_t)batch);
        arrays(s6, set_types, 7, (size_t)batch);
        unsigned e = 0;
        for (int i = 0; i < batch; i++) {
            int row = i + 3; /* ord is the position: rows come in order */
            const char *old = PQgetvalue(pre, row, 4);
            size_t old_len = (size_t)PQgetlength(pre, row, 4);
            char *nw = fresh + (size_t)i * 1100;
            size_t nlen = toggle(old, old_len, nw);
            unsigned char sha[MD_SHA256_LEN];
            if (md_sha256(nw, nlen, sha))
                die("sha256", NULL);
            delta += (int64_t)nlen - (int64_t)old_len;
            const char *path = paths[i];
            size_t plen = strlen(path);
            int64_t v = history ? last_version + 1 + i : 0;
            unsigned char yes = 1;
            if (history)
                e |= md_pg_arr_i64(&a[0], id) | md_pg_arr_i64(&a[1], v) |
                     md_pg_arr_elem(&a[2], path, plen) | md_pg_arr_elem(&a[3], &yes, 1) |
                     md_pg_arr_elem(&a[4], PQgetvalue(pre, row, 6), MD_SHA256_LEN) |
                     md_pg_arr_i64(&a[5], (int64_t)old_len) | md_pg_arr_i64(&a[6], when) |
                     md_pg_arr_elem(&a[7], "str_replace", 11) | arr_null(&a[8]) |
                     md_pg_arr_elem(&a[9], old, old_len) | md_pg_arr_i16(&a[10], 0);
            e |= md_pg_arr_i64(&c9[0], id) | md_pg_arr_i64(&c9[1], last_seq + 1 + i) |
                 md_pg_arr_i64(&c9[2], v) | md_pg_arr_i64(&c9[3], history) |
                 md_pg_arr_i64(&c9[4], history ? (int64_t)old_len : 0) |
                 md_pg_arr_i64(&c9[5], when) | md_pg_arr_elem(&c9[6], "str_replace", 11) |
                 md_pg_arr_elem(&c9[7], path, plen) | arr_null(&c9[8]);
            e |= md_pg_arr_i64(&s6[0], id) | md_pg_arr_elem(&s6[1], path, plen) |
                 md_pg_arr_elem(&s6[2], nw, nlen) | md_pg_arr_i64(&s6[3], (int64_t)nlen) |
                 md_pg_arr_i64(&s6[4], when) | md_pg_arr_elem(&s6[5], sha, MD_SHA256_LEN) |
                 md_pg_arr_i16(&s6[6], 0);
        }
        if (e)
            die("out of memory", NULL);
        if (history) {
            params_of(&p, a, 11);
            send_q(&t, P_VER_MANY, &p);
        }
        params_of(&p, c9, 9);
        send_q(&t, P_CHANGES_MANY, &p);
        params_of(&p, s6, 7);
        send_q(&t, P_SET_MANY, &p);
        trip_end(&t, P_COUNT, NULL, P_COUNT);
        PQclear(pre);
        /* 3: counters, the notification, the sizes, COMMIT. */
        static const Oid cnt_types[3] = {OID_INT8, OID_INT8, OID_INT8};
        arrays(s6, cnt_types, 3, 1);
        e = md_pg_arr_i64(&s6[0], id) |
            md_pg_arr_i64(&s6[1], history ? last_version + batch : last_version) |
            md_pg_arr_i64(&s6[2], last_seq + batch);
        params_of(&p, s6, 3);
        send_q(&t, P_COUNTERS_SET, &p);
        static const Oid n_types[1] = {OID_TEXT};
        arrays(c9, n_types, 1, 1);
        e |= md_pg_arr_elem(&c9[0], tenant, strlen(tenant));
        params_of(&p, c9, 1);
        send_q(&t, P_NOTIFY, &p);
        static const Oid sz_types[3] = {OID_INT8, OID_TEXT, OID_INT8};
        arrays(a, sz_types, 3, 3);
        for (int i = 0; i < 3; i++)
            e |= md_pg_arr_i64(&a[0], id) |
                 md_pg_arr_elem(&a[1], ANCESTORS[i], strlen(ANCESTORS[i])) |
                 md_pg_arr_i64(&a[2], delta);
        if (e)
            die("out of memory", NULL);
        params_of(&p, a, 3);
        send_q(&t, P_SIZES, &p);
        send_q(&t, P_COMMIT, NULL);
        trip_end(&t, P_COUNT, NULL, P_COUNT);
        commands += batch;
        if (prune)
            for (int i = 0; i < batch; i++)
                touch(f[i]);
    }
    double secs = (double)(now_ms() - t0) / 1000.0;
    atomic_store(&stop, 1);
    if (prune)
        pthread_join(pruner, NULL);
    printf("{\"mode\":\"%s\",\"batch\":%d,\"files\":%d,\"commands\":%ld,\"seconds\":%.3f,"
           "\"per_sec\":%.1f,\"pruned\":%ld}\n",
           mode, batch, files, commands, secs, (double)commands / secs, atomic_load(&pruned));
    PQfinish(t.c);
    for (int i = 0; i < 11; i++)
        md_buf_free(&a[i]);
    for (int i = 0; i < 9; i++)
        md_buf_free(&c9[i]);
    for (int i = 0; i < 7; i++)
        md_buf_free(&s6[i]);
    free(order);
    free(paths);
    free(fresh);
    return 0;
}
