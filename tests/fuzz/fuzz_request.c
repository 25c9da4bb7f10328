/*
 * fuzz_request.c — libFuzzer target for whole POST /memory bodies:
 * md_cmd_parse, then md_cmd_exec on an in-process SQLite store
 * (md_engine_sqlite, durability normal, a database under /dev/shm), run
 * the way memoryd runs commands: a write in a write transaction inside a
 * savepoint (released, or rolled back on error) and committed; a view in a
 * read transaction.
 *
 * Input: one or more request bodies (up to 64) separated by "\n--\n"
 * (never inside a JSON text), run in order on an empty database, so one
 * input can create files and then edit, rename, view and delete them. A
 * body starting with '!' runs (without the '!') as a second tenant.
 *
 * Checks, for every body:
 *   - the result text, fed to md_json_tool_result (with the tool_use id
 *     when one was sent), gives JSON that jansson parses back to an object
 *     with exactly type / [tool_use_id] / content / is_error, the same
 *     content and id bytes and the right is_error; the text is valid UTF-8;
 *   - the store as seen through its API (a walk from /memories with
 *     md_txn_list / md_txn_get, before and after each command) is a
 *     consistent tree: children listed in byte order, every directory's
 *     size is the sum of the sizes of the files below it, every file's size
 *     is its content length; and after each commit a direct SQL count over
 *     the tenant's rows equals the walk (no unreachable rows);
 *   - an oracle written here on that tree predicts every command's outcome:
 *     the error class, the exact result text (listings, file views,
 *     snippets, all error messages) and the whole tree afterwards (paths,
 *     kinds, sizes, contents). A failed command changes nothing; no command
 *     changes the other tenant's tree.
 * Limits are small (max_file 4 KiB, max_view 1.5 KiB) so size and
 * truncation paths are reachable and runs stay fast. The database is
 * emptied before each input and recreated every RESET_EVERY inputs.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utf8proc.h>

#include "base/md_json.h"
#include "base/md_log.h"
#include "base/md_sha256.h"
#include "base/md_text.h"
#include "cmd/md_cmd.h"
#include "fuzz_common.h"
#include "store/sqlite/md_store_sqlite.h"

#define SEP         "\n--\n"
#define MAX_BODIES  64
#define RESET_EVERY 5000
#define MAX_DB      ((off_t)64 << 20)
#define OUT_LIMIT   ((size_t)16 << 20)
#define LIST_NOTE   160 /* room view_dir keeps for its note (src/cmd/view.c) */

static const struct md_limits LIM = {64u << 10, 4u << 10, 1536, {1024, 64}, 0,   0,
                                     NULL,      NULL,     0,    0,          NULL};
static const char *const TENANTS[2] = {"default", "t2"};

static char g_db[256];
static struct md_store *g_store;
static sqlite3 *g_check; /* a second connection for resets and SQL checks */
static unsigned long g_inputs;

/* ---- setup ---- */

static void db_remove_at(const char *db)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    char p[300];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s%s", db, suffix[i]);
        unlink(p);
    }
}

static void db_remove(void)
{
    db_remove_at(g_db);
}

/* A crashed run (abort) leaves its database behind: remove those of
 * processes that no longer exist. */
static void remove_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        static const char prefix[] = "memoryd-fuzz-"; /* then <pid>.db */
        if (strncmp(de->d_name, prefix, sizeof prefix - 1) != 0)
            continue;
        const char *num = de->d_name + sizeof prefix - 1;
        char *end;
        long pid = strtol(num, &end, 10);
        if (end > num && strcmp(end, ".db") == 0 && pid > 0 && kill((pid_t)pid, 0) == -1 &&
            errno == ESRCH) {
            char db[256];
            snprintf(db, sizeof db, "%s/%s", dir, de->d_name);
            db_remove_at(db);
        }
    }
    closedir(d);
}

static void db_close(void)
{
    if (g_check)
        sqlite3_close(g_check);
    g_check = NULL;
    md_store_close(g_store);
    g_store = NULL;
}

static void db_open(void)
{
    char why[512] = "";
    struct md_store_config cfg = {.db = g_db,
                                  .durability = MD_DURABILITY_NORMAL,
                                  .busy_timeout_ms = 2000,
                                  .history = {20, 30},
                                  .search = MD_SEARCH_KEEP};
    if (md_engine_sqlite.open(&cfg, NULL, &g_store, why, sizeof why) != MD_OK) {
        fprintf(stderr, "fuzz_request: cannot open %s: %s\n", g_db, why);
        abort();
    }
    FUZZ_CHECK(sqlite3_open_v2(g_db, &g_check, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    sqlite3_busy_timeout(g_check, 2000);
}

static void at_exit(void)
{
    db_close();
    db_remove();
}

/* NOLINTNEXTLINE(readability-non-const-parameter): libFuzzer's signature */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    md_log_set_level(MD_LOG_WARN);
    struct stat st;
    const char *dir = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(g_db, sizeof g_db, "%s/memoryd-fuzz-%ld.db", dir, (long)getpid());
    remove_stale(dir);
    db_remove();
    db_open();
    atexit(at_exit);
    return 0;
}

/* Empty the database (cheap), and now and then start a new file. */
static void db_reset(void)
{
    struct stat st;
    if (++g_inputs % RESET_EVERY == 0 || (stat(g_db, &st) == 0 && st.st_size > MAX_DB)) {
        db_close();
        db_remove();
        db_open();
        return;
    }
    FUZZ_CHECK(sqlite3_exec(g_check,
                            "DELETE FROM entries; DELETE FROM versions; DELETE FROM changes;"
                            " DELETE FROM idempotency; DELETE FROM tenants;",
                            NULL, NULL, NULL) == SQLITE_OK);
    md_store_sqlite_forget_tenants(g_store); /* memoryd never deletes a tenant itself */
}

/* ---- the tree of one tenant ---- */

struct ent {
    char *path;
    size_t plen;
    enum md_kind kind;
    int64_t size;
    char *content; /* files */
    size_t clen;
};

struct tree {
    int exists; /* the tenant has data */
    struct ent *e;
    size_t n, cap;
};

static char *dup_bytes(const char *p, size_t n)
{
    char *d = malloc(n + 1);
    FUZZ_CHECK(d != NULL);
    if (n)
        memcpy(d, p, n);
    d[n] = '\0';
    return d;
}

static void tree_add(struct tree *t, const char *path, size_t plen, enum md_kind kind, int64_t size,
                     const char *content, size_t clen)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->e = realloc(t->e, t->cap * sizeof *t->e);
        FUZZ_CHECK(t->e != NULL);
    }
    struct ent *e = &t->e[t->n++];
    e->path = dup_bytes(path, plen);
    e->plen = plen;
    e->kind = kind;
    e->size = size;
    e->content = kind == MD_KIND_FILE ? dup_bytes(content ? content : "", clen) : NULL;
    e->clen = kind == MD_KIND_FILE ? clen : 0;
}

static void ent_free(struct ent *e)
{
    free(e->path);
    free(e->content);
}

static void tree_free(struct tree *t)
{
    for (size_t i = 0; i < t->n; i++)
        ent_free(&t->e[i]);
    free(t->e);
    memset(t, 0, sizeof *t);
}

static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

static int ent_cmp(const void *a, const void *b)
{
    const struct ent *x = a, *y = b;
    return bytes_cmp(x->path, x->plen, y->path, y->plen);
}

static void tree_sort(struct tree *t)
{
    if (t->n > 1)
        qsort(t->e, t->n, sizeof *t->e, ent_cmp);
}

static struct ent *tree_find(const struct tree *t, const char *path, size_t plen)
{
    struct ent key = {(char *)path, plen, 0, 0, NULL, 0};
    return t->n ? bsearch(&key, t->e, t->n, sizeof *t->e, ent_cmp) : NULL;
}

static void tree_clone(struct tree *dst, const struct tree *src)
{
    memset(dst, 0, sizeof *dst);
    dst->exists = src->exists;
    for (size_t i = 0; i < src->n; i++) {
        const struct ent *e = &src->e[i];
        tree_add(dst, e->path, e->plen, e->kind, e->size, e->content, e->clen);
    }
}

/* p lies strictly below dir. */
static int below(const char *p, size_t plen, const char *dir, size_t dlen)
{
    return plen > dlen && memcmp(p, dir, dlen) == 0 && p[dlen] == '/';
}

/* Add delta to every directory above path (root included). */
static void tree_add_above(struct tree *t, const char *path, size_t plen, int64_t delta)
{
    for (size_t i = plen; i > 9; i--) {
        if (path[i - 1] != '/')
            continue;
        struct ent *e = tree_find(t, path, i - 1);
        FUZZ_CHECK(e && e->kind == MD_KIND_DIR);
        e->size += delta;
    }
}

/* Length of the canonical path of the first file among path's proper
 * ancestors, or 0. */
static size_t file_above(const struct tree *t, const char *path, size_t plen)
{
    for (size_t i = 10; i < plen; i++) {
        if (path[i] != '/')
            continue;
        const struct ent *e = tree_find(t, path, i);
        if (e && e->kind == MD_KIND_FILE)
            return i;
        if (!e)
            return 0; /* nothing exists further down */
    }
    return 0;
}

/* Make the missing directories above path (sizes 0), keeping the order. */
static void tree_make_parents(struct tree *t, const char *path, size_t plen)
{
    for (size_t i = 10; i < plen; i++)
        if (path[i] == '/' && !tree_find(t, path, i)) {
            tree_add(t, path, i, MD_KIND_DIR, 0, NULL, 0);
            tree_sort(t);
        }
}

/* Remove path and everything below it. */
static void tree_remove(struct tree *t, const char *path, size_t plen)
{
    size_t k = 0;
    char *p = dup_bytes(path, plen); /* path may point into t */
    for (size_t i = 0; i < t->n; i++) {
        struct ent *e = &t->e[i];
        if ((e->plen == plen && memcmp(e->path, p, plen) == 0) || below(e->path, e->plen, p, plen))
            ent_free(e);
        else
            t->e[k++] = *e;
    }
    t->n = k;
    free(p);
}

static void tree_show(const char *label, const struct tree *t)
{
    fprintf(stderr, "  %s: exists=%d, %zu entries\n", label, t->exists, t->n);
    for (size_t i = 0; i < t->n && i < 200; i++) {
        const struct ent *e = &t->e[i];
        fprintf(stderr, "    %s %" PRId64 " ", e->kind == MD_KIND_DIR ? "dir " : "file", e->size);
        fuzz_show("path", e->path, e->plen);
    }
}

static int tree_equal(const struct tree *a, const struct tree *b)
{
    if (a->exists != b->exists || a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        const struct ent *x = &a->e[i], *y = &b->e[i];
        if (x->plen != y->plen || memcmp(x->path, y->path, x->plen) != 0 || x->kind != y->kind ||
            x->size != y->size || x->clen != y->clen ||
            (x->clen && memcmp(x->content, y->content, x->clen) != 0))
            return 0;
    }
    return 1;
}

#define CHECK_TREE(got, want)                                                                      \
    do {                                                                                           \
        if (!tree_equal(got, want)) {                                                              \
            fprintf(stderr, "%s:%d: tree %s differs from %s\n", __FILE__, __LINE__, #got, #want);  \
            tree_show("got ", got);                                                                \
            tree_show("want", want);                                                               \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* ---- reading the tree through the store API ---- */

struct kids {
    struct tree t; /* paths, kinds and sizes as listed */
    const char *dir;
    size_t dlen;
};

static int on_kid(void *ctx, const char *path, size_t len, enum md_kind kind, int64_t size)
{
    struct kids *k = ctx;
    /* A direct child, in byte order. */
    FUZZ_CHECK(below(path, len, k->dir, k->dlen));
    FUZZ_CHECK(len > k->dlen + 1 && memchr(path + k->dlen + 1, '/', len - k->dlen - 1) == NULL);
    if (k->t.n > 0) {
        const struct ent *prev = &k->t.e[k->t.n - 1];
        FUZZ_CHECK(bytes_cmp(prev->path, prev->plen, path, len) < 0);
    }
    tree_add(&k->t, path, len, kind, size, NULL, 0);
    return 0;
}

/* Walk a tenant's tree from /memories; checks it is consistent. */
static void walk(struct md_txn *txn, const char *tenant, struct tree *t)
{
    memset(t, 0, sizeof *t);
    struct md_entry ent;
    enum md_err e = md_txn_get(txn, tenant, MD_ROOT, MD_ROOT_LEN, 0, &ent);
    if (e == MD_ENOENT)
        return;
    FUZZ_CHECK(e == MD_OK);
    t->exists = 1;
    FUZZ_CHECK(ent.kind == MD_KIND_DIR);
    tree_add(t, MD_ROOT, MD_ROOT_LEN, MD_KIND_DIR, ent.size, NULL, 0);
    for (size_t d = 0; d < t->n; d++) {
        if (t->e[d].kind != MD_KIND_DIR)
            continue;
        struct kids k = {{0}, dup_bytes(t->e[d].path, t->e[d].plen), t->e[d].plen};
        FUZZ_CHECK(md_txn_list(txn, tenant, k.dir, k.dlen, on_kid, &k) == MD_OK);
        for (size_t i = 0; i < k.t.n; i++) {
            const struct ent *c = &k.t.e[i];
            struct md_entry got;
            FUZZ_CHECK(md_txn_get(txn, tenant, c->path, c->plen, 1, &got) == MD_OK);
            FUZZ_CHECK(got.kind == c->kind && got.size == c->size);
            if (c->kind == MD_KIND_FILE)
                FUZZ_CHECK((int64_t)got.content_len == got.size);
            tree_add(t, c->path, c->plen, c->kind, c->size, got.content, got.content_len);
        }
        free((char *)k.dir);
        tree_free(&k.t);
    }
    tree_sort(t);
    /* Every directory's size is the sum of the files below it. */
    int64_t *sum = calloc(t->n ? t->n : 1, sizeof *sum); /* calloc(0) may give NULL */
    FUZZ_CHECK(sum != NULL);
    for (size_t i = 0; i < t->n; i++) {
        const struct ent *f = &t->e[i];
        if (f->kind != MD_KIND_FILE)
            continue;
        for (size_t j = f->plen; j > 9; j--) {
            if (f->path[j - 1] != '/')
                continue;
            const struct ent *up = tree_find(t, f->path, j - 1);
            FUZZ_CHECK(up && up->kind == MD_KIND_DIR);
            sum[up - t->e] += f->size;
        }
    }
    for (size_t i = 0; i < t->n; i++) {
        if (t->e[i].kind == MD_KIND_DIR && t->e[i].size != sum[i]) {
            fprintf(stderr, "directory size %" PRId64 " is not the sum of its files %" PRId64 "\n",
                    t->e[i].size, sum[i]);
            tree_show("tree", t);
            abort();
        }
    }
    free(sum);
}

/* Rows of a tenant in the database (committed state). */
static int64_t sql_count(const char *tenant)
{
    sqlite3_stmt *st = NULL;
    FUZZ_CHECK(sqlite3_prepare_v2(g_check,
                                  "SELECT count(*) FROM entries WHERE tenant ="
                                  " (SELECT id FROM tenants WHERE name = ?1)",
                                  -1, &st, NULL) == SQLITE_OK);
    sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    FUZZ_CHECK(sqlite3_step(st) == SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* ---- the oracle ---- */

static int hidden(const char *path, size_t len)
{
    size_t i = len;
    while (i > 0 && path[i - 1] != '/')
        i--;
    return (len > i && path[i] == '.') ||
           (len - i == 12 && memcmp(path + i, "node_modules", 12) == 0);
}

static void put_raw(struct fstr *s, const struct md_patharg *p)
{
    fstr_add(s, p->raw.p, p->raw.n);
}

static void say(struct fstr *s, const char *a, const struct md_patharg *p, const char *b)
{
    fstr_puts(s, a);
    put_raw(s, p);
    fstr_puts(s, b);
}

/* A "does not exist" text: with the note on paths not in Unicode NFC
 * (decided by utf8proc itself, not by memoryd's wrapper of it). */
static void say_missing(struct fstr *s, const char *a, const struct md_patharg *p, const char *b)
{
    say(s, a, p, b);
    utf8proc_uint8_t *nfc = utf8proc_NFC((const utf8proc_uint8_t *)p->raw.p);
    if (nfc && strcmp((const char *)nfc, p->raw.p) != 0)
        fstr_puts(s, " (Note: this path is not in Unicode Normalization Form C (NFC); memoryd "
                     "compares paths byte for byte, so a name that looks the same but is encoded "
                     "differently is a different path.)");
    free(nfc);
}

static void too_big(struct fstr *s, const struct md_patharg *p, size_t size)
{
    char tmp[128];
    say(s, "Error: File ", p, "");
    snprintf(tmp, sizeof tmp, " would be %zu bytes, over the %zu-byte file size limit", size,
             LIM.max_file);
    fstr_puts(s, tmp);
}

/* A direct, visible child of dir. */
static int listed_child(const struct ent *c, const char *dir, size_t dlen)
{
    return below(c->path, c->plen, dir, dlen) &&
           !memchr(c->path + dlen + 1, '/', c->plen - dlen - 1) && !hidden(c->path, c->plen);
}

struct listing {
    struct fstr *s;
    size_t budget, entries;
    int cut;
};

/* Append "\n{size}\t{path}[/]" unless it would pass the budget. */
static void list_entry(struct listing *l, const struct ent *e)
{
    char sz[24];
    size_t szn = md_size_format((uint64_t)e->size, sz);
    if (l->cut || l->s->n + 1 + szn + 1 + e->plen + (e->kind == MD_KIND_DIR) > l->budget) {
        l->cut = 1;
        return;
    }
    fstr_add(l->s, "\n", 1);
    fstr_add(l->s, sz, szn);
    fstr_add(l->s, "\t", 1);
    fstr_add(l->s, e->path, e->plen);
    if (e->kind == MD_KIND_DIR)
        fstr_add(l->s, "/", 1);
    l->entries++;
}

/* The expected directory listing: per directory in byte order of the
 * names (the tree is sorted by path, and siblings share their prefix),
 * each directory followed by its own visible children; the longest prefix
 * of those entries that fits, then a note when something was left out. */
static void model_listing(const struct tree *t, const struct md_patharg *p, int64_t size,
                          struct fstr *s)
{
    say(s, "Here're the files and directories up to 2 levels deep in ", p,
        ", excluding hidden items and node_modules:");
    char sz[24];
    fstr_add(s, "\n", 1);
    fstr_add(s, sz, md_size_format((uint64_t)size, sz));
    fstr_add(s, "\t", 1);
    put_raw(s, p); /* the first line as sent; the entries canonical */
    struct listing l = {s, LIM.max_view > LIST_NOTE ? LIM.max_view - LIST_NOTE : 0, 0, 0};
    for (size_t i = 0; i < t->n && !l.cut; i++) {
        const struct ent *c = &t->e[i];
        if (!listed_child(c, p->canon, p->canon_len))
            continue;
        list_entry(&l, c);
        for (size_t j = 0; c->kind == MD_KIND_DIR && j < t->n && !l.cut; j++)
            if (listed_child(&t->e[j], c->path, c->plen))
                list_entry(&l, &t->e[j]);
    }
    if (l.cut) {
        char tmp[200];
        snprintf(tmp, sizeof tmp,
                 "\n[Listing truncated at the %zu-byte view limit after %zu entries. View a "
                 "subdirectory to see the rest.]",
                 LIM.max_view, l.entries);
        fstr_puts(s, tmp);
    }
}

/*
 * Predict a command on tree `t` (the state before): returns the error class,
 * the result text in `text` and the tree afterwards in `after` (a copy of
 * `t` for errors and views).
 */
static enum md_err model(const struct tree *t, const struct md_cmd *cmd, struct fstr *text,
                         struct tree *after)
{
    /* A tenant without data has just its root. */
    struct tree cur;
    tree_clone(&cur, t);
    if (!cur.exists) {
        cur.exists = 1;
        tree_add(&cur, MD_ROOT, MD_ROOT_LEN, MD_KIND_DIR, 0, NULL, 0);
    }
    const struct md_patharg *p = &cmd->path, *q = &cmd->path2;
    const int root = p->canon_len == MD_ROOT_LEN;
    struct ent *e = tree_find(&cur, p->canon, p->canon_len);
    enum md_err err = MD_OK;
    size_t fa;
    struct md_buf res, msg;
    md_buf_init(&res, (size_t)1 << 30);
    md_buf_init(&msg, (size_t)1 << 30);

    switch (cmd->kind) {
    case MD_CMD_VIEW:
        if (!e) {
            err = MD_ENOENT;
            say_missing(text, "The path ", p, " does not exist. Please provide a valid path.");
        } else if (e->kind == MD_KIND_DIR) {
            model_listing(&cur, p, e->size, text);
        } else {
            err = md_view_file(&msg, p->raw.p, p->raw.n, e->content, e->clen, &cmd->range,
                               LIM.max_view);
            FUZZ_CHECK(err == MD_OK || err == MD_ETOOBIG);
            fstr_add(text, msg.data, msg.len);
        }
        break;
    case MD_CMD_CREATE:
        /* cmd_create checks the root, then the size, then existence. */
        if (!root && cmd->file_text.n > LIM.max_file) {
            err = MD_ETOOBIG;
            too_big(text, p, cmd->file_text.n);
        } else if (root || e) {
            err = MD_EEXIST;
            say(text, "Error: File ", p, " already exists");
        } else if ((fa = file_above(&cur, p->canon, p->canon_len)) != 0) {
            err = MD_ECONFLICT;
            say(text, "Error: Cannot create ", p, ": ");
            fstr_add(text, p->canon, fa);
            fstr_puts(text, " is a file, not a directory");
        } else {
            say(text, "File created successfully at: ", p, "");
            tree_make_parents(&cur, p->canon, p->canon_len);
            tree_add(&cur, p->canon, p->canon_len, MD_KIND_FILE, (int64_t)cmd->file_text.n,
                     cmd->file_text.p, cmd->file_text.n);
            tree_sort(&cur);
            tree_add_above(&cur, p->canon, p->canon_len, (int64_t)cmd->file_text.n);
        }
        break;
    case MD_CMD_STR_REPLACE:
    case MD_CMD_INSERT:
        if (!e || e->kind != MD_KIND_FILE) {
            err = MD_ENOENT;
            say_missing(text, "Error: The path ", p,
                        cmd->kind == MD_CMD_INSERT
                            ? " does not exist"
                            : " does not exist. Please provide a valid path.");
            break;
        }
        if (cmd->kind == MD_CMD_STR_REPLACE)
            err = md_str_replace(e->content, e->clen, cmd->old_str.p, cmd->old_str.n,
                                 cmd->new_str.p, cmd->new_str.n, p->raw.p, p->raw.n, &res, &msg);
        else
            err = md_insert(e->content, e->clen, cmd->insert_line, cmd->insert_text.p,
                            cmd->insert_text.n, &res, &msg);
        if (err) {
            FUZZ_CHECK(err == MD_ECONFLICT || err == MD_ERANGE);
            fstr_add(text, msg.data, msg.len);
        } else if (res.len > LIM.max_file) {
            err = MD_ETOOBIG;
            too_big(text, p, res.len);
        } else {
            if (cmd->kind == MD_CMD_STR_REPLACE)
                fstr_add(text, msg.data, msg.len);
            else
                say(text, "The file ", p, " has been edited.");
            int64_t delta = (int64_t)res.len - e->size;
            free(e->content);
            e->content = dup_bytes(res.data ? res.data : "", res.len);
            e->clen = res.len;
            e->size = (int64_t)res.len;
            tree_add_above(&cur, p->canon, p->canon_len, delta);
        }
        break;
    case MD_CMD_DELETE:
        if (root) {
            err = MD_EINVAL;
            fstr_puts(text, "Error: Cannot delete the /memories directory itself");
        } else if (!e) {
            err = MD_ENOENT;
            say_missing(text, "Error: The path ", p, " does not exist");
        } else {
            say(text, "Successfully deleted ", p, "");
            int64_t size = e->size;
            tree_remove(&cur, p->canon, p->canon_len);
            tree_add_above(&cur, p->canon, p->canon_len, -size);
        }
        break;
    case MD_CMD_RENAME: {
        struct ent *dst = tree_find(&cur, q->canon, q->canon_len);
        if (root) {
            err = MD_EINVAL;
            fstr_puts(text, "Error: Cannot rename the /memories directory itself");
        } else if (dst) {
            err = MD_EEXIST;
            say(text, "Error: The destination ", q, " already exists");
        } else if (!e) {
            err = MD_ENOENT;
            say_missing(text, "Error: The path ", p, " does not exist");
        } else if (e->kind == MD_KIND_DIR &&
                   below(q->canon, q->canon_len, p->canon, p->canon_len)) {
            err = MD_ECONFLICT;
            say(text, "Error: Cannot rename ", p, " to ");
            put_raw(text, q);
            fstr_puts(text, ": a directory cannot be moved inside itself");
        } else if ((fa = file_above(&cur, q->canon, q->canon_len)) != 0) {
            err = MD_ECONFLICT;
            say(text, "Error: Cannot rename ", p, " to ");
            put_raw(text, q);
            fstr_puts(text, ": ");
            fstr_add(text, q->canon, fa);
            fstr_puts(text, " is a file, not a directory");
        } else {
            say(text, "Successfully renamed ", p, " to ");
            put_raw(text, q);
            int64_t size = e->size;
            /* Take the subtree out, make the destination's parents, put
             * it back under its new name. */
            struct tree moved = {0};
            for (size_t i = 0; i < cur.n; i++) {
                const struct ent *m = &cur.e[i];
                if ((m->plen == p->canon_len && memcmp(m->path, p->canon, m->plen) == 0) ||
                    below(m->path, m->plen, p->canon, p->canon_len)) {
                    struct fstr np = {0};
                    fstr_add(&np, q->canon, q->canon_len);
                    fstr_add(&np, m->path + p->canon_len, m->plen - p->canon_len);
                    tree_add(&moved, np.p, np.n, m->kind, m->size, m->content, m->clen);
                    fstr_free(&np);
                }
            }
            tree_remove(&cur, p->canon, p->canon_len);
            tree_add_above(&cur, p->canon, p->canon_len, -size);
            tree_make_parents(&cur, q->canon, q->canon_len);
            for (size_t i = 0; i < moved.n; i++) {
                const struct ent *m = &moved.e[i];
                tree_add(&cur, m->path, m->plen, m->kind, m->size, m->content, m->clen);
            }
            tree_sort(&cur);
            tree_add_above(&cur, q->canon, q->canon_len, size);
            tree_free(&moved);
        }
        break;
    }
    default:
        abort();
    }
    md_buf_free(&res);
    md_buf_free(&msg);
    if (err == MD_OK && cmd->write) {
        *after = cur;
    } else {
        tree_free(&cur);
        tree_clone(after, t);
    }
    return err;
}

/* ---- running a body ---- */

static void check_json(const struct md_cmd *cmd, const char *text, size_t len, int is_error)
{
    struct md_buf j;
    md_buf_init(&j, OUT_LIMIT);
    const struct md_str *id = &cmd->tool_use_id;
    FUZZ_CHECK(md_json_tool_result(&j, id->p, id->n, text, len, is_error) == MD_OK);
    json_error_t jerr;
    json_t *root = json_loadb(j.data, j.len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!root) {
        fprintf(stderr, "tool_result is not JSON: %s\n", jerr.text);
        fuzz_show("json", j.data, j.len);
        abort();
    }
    FUZZ_CHECK(json_is_object(root) && json_object_size(root) == (id->p ? 4u : 3u));
    json_t *type = json_object_get(root, "type"), *content = json_object_get(root, "content");
    json_t *iserr = json_object_get(root, "is_error"), *tid = json_object_get(root, "tool_use_id");
    FUZZ_CHECK(json_is_string(type) && strcmp(json_string_value(type), "tool_result") == 0);
    FUZZ_CHECK(json_is_boolean(iserr) && json_is_true(iserr) == !!is_error);
    FUZZ_CHECK(json_is_string(content));
    if (fuzz_utf8_valid(text, len))
        FUZZ_CHECK_BYTES(json_string_value(content), json_string_length(content), text, len);
    if (id->p) {
        FUZZ_CHECK(json_is_string(tid));
        FUZZ_CHECK_BYTES(json_string_value(tid), json_string_length(tid), id->p, id->n);
    }
    json_decref(root);
    md_buf_free(&j);
}

/* The ETag: after a view of a file, or a create, str_replace or insert,
 * the SHA-256 of the file as the oracle's tree has it afterwards; none
 * otherwise. */
static void check_etag(const struct md_cmd *cmd, enum md_err e, const struct md_cmd_result *res,
                       const struct tree *after)
{
    const struct ent *f =
        cmd->path.canon ? tree_find(after, cmd->path.canon, cmd->path.canon_len) : NULL;
    int tagged = e == MD_OK && f && f->kind == MD_KIND_FILE &&
                 (cmd->kind == MD_CMD_VIEW || cmd->kind == MD_CMD_CREATE ||
                  cmd->kind == MD_CMD_STR_REPLACE || cmd->kind == MD_CMD_INSERT);
    FUZZ_CHECK(res->has_etag == tagged);
    if (!tagged)
        return;
    unsigned char d[MD_SHA256_LEN];
    FUZZ_CHECK(md_sha256(f->content, f->clen, d) == MD_OK);
    FUZZ_CHECK(memcmp(d, res->etag, MD_SHA256_LEN) == 0);
}

static void run_body(const char *body, size_t len)
{
    int who = 0;
    if (len > 0 && body[0] == '!') {
        who = 1;
        body++;
        len--;
    }
    const char *tenant = TENANTS[who], *other = TENANTS[1 - who];
    struct md_cmd cmd;
    struct md_buf out;
    struct md_cmd_result res;
    md_buf_init(&out, OUT_LIMIT);
    enum md_err e = md_cmd_parse(&cmd, body, len, &LIM, &out);
    if (e) {
        FUZZ_CHECK(e == MD_EINVAL);
        FUZZ_CHECK(fuzz_utf8_valid(out.data ? out.data : "", out.len));
        check_json(&cmd, out.data ? out.data : "", out.len, 1);
        goto done;
    }
    struct tree before, other_before, after, other_after, want;
    struct fstr want_text = {0};
    struct md_txn *t = NULL;
    if (!cmd.write) {
        FUZZ_CHECK(md_store_read_begin(g_store, &t) == MD_OK);
        walk(t, tenant, &before);
        e = md_cmd_exec(t, tenant, &cmd, &LIM, &out, &res);
        md_txn_end(t);
    } else {
        FUZZ_CHECK(md_store_write_begin(g_store, &t) == MD_OK);
        walk(t, tenant, &before);
        walk(t, other, &other_before);
        FUZZ_CHECK(md_txn_savepoint(t) == MD_OK);
        e = md_cmd_exec(t, tenant, &cmd, &LIM, &out, &res);
        FUZZ_CHECK(md_txn_release(t, e != MD_OK) == MD_OK);
    }
    if (e == MD_EDB || e == MD_EBUSY || e == MD_ENOMEM) {
        fprintf(stderr, "storage error %d for a %s\n", e, cmd.name);
        fuzz_show("body", body, len);
        abort();
    }
    enum md_err want_err = model(&before, &cmd, &want_text, &want);
    if (e != want_err) {
        fprintf(stderr, "%s gave error class %d, the oracle says %d\n", cmd.name, e, want_err);
        fuzz_show("body", body, len);
        fuzz_show("text", out.data ? out.data : "", out.len);
        tree_show("before", &before);
        abort();
    }
    FUZZ_CHECK_BYTES(out.data ? out.data : "", out.len, want_text.p, want_text.n);
    FUZZ_CHECK(fuzz_utf8_valid(out.data ? out.data : "", out.len));
    check_etag(&cmd, e, &res, &want);
    check_json(&cmd, out.data ? out.data : "", out.len, e != MD_OK);
    if (cmd.write) {
        walk(t, tenant, &after);
        walk(t, other, &other_after);
        FUZZ_CHECK(md_txn_commit(t) == MD_OK);
        CHECK_TREE(&after, &want);
        CHECK_TREE(&other_after, &other_before);
        FUZZ_CHECK(sql_count(tenant) == (int64_t)after.n);
        tree_free(&after);
        tree_free(&other_after);
        tree_free(&other_before);
    }
    tree_free(&before);
    tree_free(&want);
    fstr_free(&want_text);
done:
    md_cmd_free(&cmd);
    md_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_store)
        LLVMFuzzerInitialize(NULL, NULL);
    db_reset();
    const char *p = (const char *)data, *end = p + size;
    for (int n = 0; n < MAX_BODIES; n++) {
        const char *s = memmem(p, (size_t)(end - p), SEP, sizeof SEP - 1);
        const char *stop = s ? s : end;
        run_body(p, (size_t)(stop - p));
        if (!s)
            break;
        p = s + sizeof SEP - 1;
    }
    return 0;
}
