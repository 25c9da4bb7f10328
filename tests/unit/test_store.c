/*
 * test_store.c — proves the command layer on the real store engines:
 * md_cmd_parse + md_cmd_exec inside write transactions (their tenants
 * locked first, md_txn_batch_begin) with a savepoint per command, and read
 * transactions for view.
 *
 *   test_store            SQLite, in a fresh temporary directory
 *   test_store postgres   PostgreSQL, in a fresh database of the cluster
 *                         MD_TEST_PG names (tests/lib/pg.mjs; ctest's
 *                         pg/unit/test_store); exit 77 (skipped) without it
 *
 * The interface cases run on both, the same assertions on each: the exact
 * result text and error class of every edit operation; directory
 * bookkeeping (sizes = bytes of all files below, ancestors updated by
 * create/str_replace/insert/delete/rename, parents made by create and
 * rename, subtrees moved and deleted, empty directories kept); tenant
 * isolation; SQL LIKE metacharacters and quotes taken literally; multibyte
 * names in a moved directory; a failing (or rolled back) command inside a
 * savepoint undone alone while the others commit, sizes right across many
 * savepoints of one transaction; every read after a commit seeing it,
 * whichever reader serves it; durability across a reopen and the schema
 * version the database records; and the group-commit writer (md_writer.h)
 * with successes and failures in one batch, every job told at a stop, and
 * a full queue answered with MD_EBUSY.
 *
 * SQLite's own cases run on SQLite only: its query plans never scan a
 * tenant's rows; the file in WAL mode; readers' kept snapshots and the WAL
 * checkpoint; the WAL bounded under sustained writes; a newer
 * PRAGMA user_version refused; synchronous FULL/NORMAL on the connections
 * that write; and, through a VFS that fails xSync or xWrite, a commit
 * whose disk flush fails answered as "may or may not have been applied"
 * and a new tenant's rolled-back rows forgotten by the writer.
 */
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cmd/md_cmd.h"
#include "cmd/md_writer.h"
#include "pg_db.h"
#include "store/md_search_terms.h"
#include "store/pg/md_store_pg.h"
#include "store/sqlite/md_store_sqlite.h"

static int g_pg;           /* the engine under test: PostgreSQL (else SQLite) */
static char g_dir[64];     /* SQLite: the temporary directory */
static char g_db[1024];    /* SQLite: the database file; PostgreSQL: the database's URI */
static char g_pg_name[64]; /* PostgreSQL: the database's name */
static struct md_store *S;
static struct md_buf OUT;
static const struct md_limits LIM = {4u << 20, 1u << 20, 256u << 10, {4096, 255}, 0,   0,
                                     NULL,     NULL,     0,          0,           NULL};
static struct md_cmd_result RES; /* what the last command produced besides its text */

static struct md_store *open_store(void)
{
    struct md_store_config c = {.db = g_db,
                                .durability = MD_DURABILITY_FULL,
                                .busy_timeout_ms = 5000,
                                .history = {20, 30},
                                .search = MD_SEARCH_KEEP};
    struct md_store *s = NULL;
    char why[512] = "";
    const struct md_engine *engine = g_pg ? &md_engine_pg : &md_engine_sqlite;
    if (engine->open(&c, NULL, &s, why, sizeof why) != MD_OK) {
        fprintf(stderr, "cannot open %s: %s\n", g_db, why);
        exit(1);
    }
    return s;
}

/* A write transaction with `tenant` (and `other`, unless NULL) locked, as
 * the writer begins every batch: the interface's order on any engine. */
static struct md_txn *write_begin(const char *tenant, const char *other)
{
    const char *names[2] = {tenant, other};
    const struct md_batch batch = {names, other ? 2 : 1, NULL, 0, 0};
    struct md_txn *t = NULL;
    CHECK_EQ_INT(md_store_write_begin(S, &t), MD_OK);
    if (t)
        CHECK_EQ_INT(md_txn_batch_begin(t, &batch), MD_OK);
    return t;
}

/* ---- request bodies (built with jansson; the caller frees) ---- */

static char *dump(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static char *create_n(const char *path, const char *text, size_t n)
{
    return dump(
        json_pack("{s:s, s:s, s:s%}", "command", "create", "path", path, "file_text", text, n));
}

#define CREATE(path, text) create_n(path, text, strlen(text))
#define VIEW(path)         dump(json_pack("{s:s, s:s}", "command", "view", "path", path))
#define VIEW_R(path, a, b)                                                                         \
    dump(json_pack("{s:s, s:s, s:[I, I]}", "command", "view", "path", path, "view_range",          \
                   (json_int_t)(a), (json_int_t)(b)))
#define REPLACE(path, o, n)                                                                        \
    dump(json_pack("{s:s, s:s, s:s, s:s}", "command", "str_replace", "path", path, "old_str", o,   \
                   "new_str", n))
#define INSERT(path, line, text)                                                                   \
    dump(json_pack("{s:s, s:s, s:I, s:s}", "command", "insert", "path", path, "insert_line",       \
                   (json_int_t)(line), "insert_text", text))
#define DELETE(path) dump(json_pack("{s:s, s:s}", "command", "delete", "path", path))
#define RENAME(from, to)                                                                           \
    dump(json_pack("{s:s, s:s, s:s}", "command", "rename", "old_path", from, "new_path", to))
#define RAW(json) strdup(json)

/* ---- running commands ---- */

/* Run one command as its own transaction: a view in a read transaction, a
 * write in a write transaction inside a savepoint (rolled back on error).
 * Frees `json`; the result text is in OUT. */
static enum md_err run_lim(const char *tenant, char *json, const struct md_limits *lim)
{
    struct md_cmd cmd;
    md_buf_reset(&OUT);
    enum md_err e = md_cmd_parse(&cmd, json, strlen(json), lim, &OUT);
    free(json);
    if (e) {
        md_cmd_free(&cmd);
        return e;
    }
    struct md_txn *t = NULL;
    if (cmd.write) {
        t = write_begin(tenant, NULL);
        CHECK_EQ_INT(md_txn_savepoint(t), MD_OK);
        e = md_cmd_exec(t, tenant, &cmd, lim, &OUT, &RES);
        CHECK_EQ_INT(md_txn_release(t, e != MD_OK), MD_OK);
        CHECK_EQ_INT(md_txn_commit(t), MD_OK);
    } else {
        CHECK_EQ_INT(md_store_read_begin(S, &t), MD_OK);
        e = md_cmd_exec(t, tenant, &cmd, lim, &OUT, &RES);
        md_txn_end(t);
    }
    md_cmd_free(&cmd);
    return e;
}

static enum md_err run(const char *tenant, char *json)
{
    return run_lim(tenant, json, &LIM);
}

/* Run a command; check its class and its exact text (a literal). */
#define EXPECT(tenant, json, want_err, want)                                                       \
    do {                                                                                           \
        enum md_err e_ = run(tenant, json);                                                        \
        CHECK_EQ_INT(e_, want_err);                                                                \
        CHECK_MEM(OUT.data, OUT.len, want);                                                        \
    } while (0)

/* Size of an entry (-1: no such entry or tenant); kind in *kind. */
static int64_t entry(const char *tenant, const char *path, enum md_kind *kind)
{
    struct md_txn *t;
    if (md_store_read_begin(S, &t) != MD_OK)
        return -2;
    int64_t size = -1;
    struct md_entry e = {0};
    enum md_err err = md_txn_get(t, tenant, path, strlen(path), 0, &e);
    if (!err) {
        size = e.size;
        if (kind)
            *kind = e.kind;
    } else if (err != MD_ENOENT) {
        size = -2;
    }
    md_txn_end(t);
    return size;
}

static int64_t size_of(const char *tenant, const char *path)
{
    return entry(tenant, path, NULL);
}

static int is_dir(const char *tenant, const char *path)
{
    enum md_kind k = MD_KIND_FILE;
    return entry(tenant, path, &k) >= 0 && k == MD_KIND_DIR;
}

static int is_file(const char *tenant, const char *path)
{
    enum md_kind k = MD_KIND_DIR;
    return entry(tenant, path, &k) >= 0 && k == MD_KIND_FILE;
}

#define SIZE(tenant, path, want) CHECK_EQ_INT(size_of(tenant, path), want)
#define GONE(tenant, path)       CHECK_EQ_INT(size_of(tenant, path), -1)

#define LIST_HEAD(p)                                                                               \
    "Here're the files and directories up to 2 levels deep in " p                                  \
    ", excluding hidden items and node_modules:\n"
#define FILE_HEAD(p) "Here's the content of " p " with line numbers:\n"
#define SNIP                                                                                       \
    "The memory file has been edited. Here is the snippet showing the change (with line "          \
    "numbers):\n"

/* ---- scenarios ---- */

static void test_empty_tenant(void)
{
    const char *a = "alice";
    EXPECT(a, VIEW("/memories"), MD_OK, LIST_HEAD("/memories") "0B\t/memories");
    EXPECT(a, VIEW("/memories/"), MD_OK, LIST_HEAD("/memories/") "0B\t/memories/");
    EXPECT(a, VIEW("/memories/x"), MD_ENOENT,
           "The path /memories/x does not exist. Please provide a valid path.");
    EXPECT(a, REPLACE("/memories/x", "a", "b"), MD_ENOENT,
           "Error: The path /memories/x does not exist. Please provide a valid path.");
    EXPECT(a, INSERT("/memories/x", 0, "a"), MD_ENOENT,
           "Error: The path /memories/x does not exist");
    EXPECT(a, DELETE("/memories/x"), MD_ENOENT, "Error: The path /memories/x does not exist");
    EXPECT(a, RENAME("/memories/x", "/memories/y"), MD_ENOENT,
           "Error: The path /memories/x does not exist");
    EXPECT(a, RENAME("/memories/x", "/memories"), MD_EEXIST,
           "Error: The destination /memories already exists");
    EXPECT(a, DELETE("/memories"), MD_EINVAL,
           "Error: Cannot delete the /memories directory itself");
    /* None of that created the tenant. */
    GONE(a, "/memories");
}

static void test_create_and_edit(void)
{
    const char *a = "alice";
    EXPECT(a, CREATE("/memories/a/b/c.txt", "hello\n"), MD_OK,
           "File created successfully at: /memories/a/b/c.txt");
    CHECK(is_dir(a, "/memories"));
    CHECK(is_dir(a, "/memories/a"));
    CHECK(is_dir(a, "/memories/a/b"));
    CHECK(is_file(a, "/memories/a/b/c.txt"));
    SIZE(a, "/memories", 6);
    SIZE(a, "/memories/a", 6);
    SIZE(a, "/memories/a/b", 6);
    SIZE(a, "/memories/a/b/c.txt", 6);

    /* Never overwrites; the message names the path as sent. */
    EXPECT(a, CREATE("/memories/a/b/c.txt", "other"), MD_EEXIST,
           "Error: File /memories/a/b/c.txt already exists");
    EXPECT(a, CREATE("/memories//a//b/c.txt/", "other"), MD_EEXIST,
           "Error: File /memories//a//b/c.txt/ already exists");
    EXPECT(a, CREATE("/memories/a", "x"), MD_EEXIST, "Error: File /memories/a already exists");
    EXPECT(a, CREATE("/memories/", "x"), MD_EEXIST, "Error: File /memories/ already exists");
    /* Under a file. */
    EXPECT(a, CREATE("/memories/a/b/c.txt/d.txt", "x"), MD_ECONFLICT,
           "Error: Cannot create /memories/a/b/c.txt/d.txt: /memories/a/b/c.txt is a file, not a "
           "directory");
    EXPECT(a, CREATE("/memories/a/b/c.txt/x/y.txt", "x"), MD_ECONFLICT,
           "Error: Cannot create /memories/a/b/c.txt/x/y.txt: /memories/a/b/c.txt is a file, not a "
           "directory");
    GONE(a, "/memories/a/b/c.txt/x");
    /* Bad paths and fields are refused before anything runs. */
    EXPECT(a, CREATE("/memories/../x", "x"), MD_EINVAL,
           "Error: Path /memories/../x would escape /memories directory");
    EXPECT(a, CREATE("/memoriesX/a", "x"), MD_EINVAL,
           "Error: Path must start with /memories, got: /memoriesX/a");
    EXPECT(a, CREATE("/memories/a/./x", "x"), MD_EINVAL,
           "Error: Path /memories/a/./x contains a '.' segment, which is not allowed");
    EXPECT(a, RAW("{\"command\":\"create\",\"path\":\"/memories/n.txt\"}"), MD_EINVAL,
           "Error: Missing required parameter `file_text` for command `create`");
    EXPECT(a, RAW("{\"command\":\"create\",\"path\":\"/memories/n.txt\",\"file_text\":5}"),
           MD_EINVAL, "Error: Parameter `file_text` must be a string");
    EXPECT(a, RAW("{\"command\":\"copy\",\"path\":\"/memories/n.txt\"}"), MD_EINVAL,
           "Error: copy not implemented");
    SIZE(a, "/memories", 6);
    GONE(a, "/memories/n.txt");

    EXPECT(a, CREATE("/memories//a//z.txt", "zz"), MD_OK,
           "File created successfully at: /memories//a//z.txt");
    CHECK(is_file(a, "/memories/a/z.txt"));
    SIZE(a, "/memories", 8);
    SIZE(a, "/memories/a", 8);
    SIZE(a, "/memories/a/b", 6);

    /* str_replace. */
    EXPECT(a, REPLACE("/memories/a/b/c.txt", "hello", "hello world"), MD_OK,
           SNIP "     1\thello world\n     2\t");
    SIZE(a, "/memories/a/b/c.txt", 12);
    SIZE(a, "/memories/a/b", 12);
    SIZE(a, "/memories/a", 14);
    SIZE(a, "/memories", 14);
    EXPECT(a, REPLACE("/memories/nope.txt", "a", "b"), MD_ENOENT,
           "Error: The path /memories/nope.txt does not exist. Please provide a valid path.");
    EXPECT(a, REPLACE("/memories/a", "a", "b"), MD_ENOENT,
           "Error: The path /memories/a does not exist. Please provide a valid path.");
    EXPECT(a, REPLACE("/memories/a/b/c.txt", "zzz", "y"), MD_ECONFLICT,
           "No replacement was performed, old_str `zzz` did not appear verbatim in "
           "/memories/a/b/c.txt.");
    EXPECT(a, REPLACE("/memories/a/b/c.txt", "l", "L"), MD_ECONFLICT,
           "No replacement was performed. Multiple occurrences of old_str `l` in lines: 1, 1, 1. "
           "Please ensure it is unique");
    EXPECT(a, REPLACE("/memories/a/b/c.txt", "", "x"), MD_EINVAL,
           "Error: Parameter `old_str` must not be empty");
    EXPECT(a,
           RAW("{\"command\":\"str_replace\",\"path\":\"/memories/a/b/c.txt\",\"old_str\":"
               "\"hello\"}"),
           MD_EINVAL, "Error: Missing required parameter `new_str` for command `str_replace`");
    SIZE(a, "/memories", 14);
    /* A shrinking replacement, then back. */
    EXPECT(a, REPLACE("/memories/a/b/c.txt", "hello world", "hi"), MD_OK,
           SNIP "     1\thi\n     2\t");
    SIZE(a, "/memories/a/b", 3);
    SIZE(a, "/memories", 5);
    EXPECT(a, REPLACE("/memories/a/b/c.txt", "hi", "hello world"), MD_OK,
           SNIP "     1\thello world\n     2\t");
    SIZE(a, "/memories", 14);

    /* insert. */
    EXPECT(a, INSERT("/memories/a/b/c.txt", 1, "second\n"), MD_OK,
           "The file /memories/a/b/c.txt has been edited.");
    SIZE(a, "/memories/a/b/c.txt", 19);
    SIZE(a, "/memories/a/b", 19);
    SIZE(a, "/memories/a", 21);
    SIZE(a, "/memories", 21);
    EXPECT(a, INSERT("/memories/a/b/c.txt", 5, "x"), MD_ERANGE,
           "Error: Invalid `insert_line` parameter: 5. It should be within the range of lines of "
           "the file: [0, 3]");
    EXPECT(a, INSERT("/memories/a/b/c.txt", -1, "x"), MD_ERANGE,
           "Error: Invalid `insert_line` parameter: -1. It should be within the range of lines of "
           "the file: [0, 3]");
    EXPECT(a, INSERT("/memories/a", 0, "x"), MD_ENOENT,
           "Error: The path /memories/a does not exist");
    EXPECT(a, INSERT("/memories/missing.txt", 0, "x"), MD_ENOENT,
           "Error: The path /memories/missing.txt does not exist");
    EXPECT(a,
           RAW("{\"command\":\"insert\",\"path\":\"/memories/a/b/c.txt\",\"insert_line\":\"1\","
               "\"insert_text\":\"x\"}"),
           MD_EINVAL, "Error: Parameter `insert_line` must be an integer");
    EXPECT(a,
           RAW("{\"command\":\"insert\",\"path\":\"/memories/a/b/c.txt\",\"insert_line\":1.5,"
               "\"insert_text\":\"x\"}"),
           MD_EINVAL, "Error: Parameter `insert_line` must be an integer");
    SIZE(a, "/memories", 21);

    /* view of a file, whole and by range; the header names the path as sent. */
    EXPECT(a, VIEW("/memories/a/b/c.txt"), MD_OK,
           FILE_HEAD("/memories/a/b/c.txt") "     1\thello world\n     2\tsecond\n     3\t");
    EXPECT(a, VIEW_R("/memories/a/b/c.txt", 2, 2), MD_OK,
           FILE_HEAD("/memories/a/b/c.txt") "     2\tsecond");
    EXPECT(a, VIEW_R("/memories//a/b/c.txt", 2, -1), MD_OK,
           FILE_HEAD("/memories//a/b/c.txt") "     2\tsecond\n     3\t");

    /* NUL bytes survive storage. */
    run(a, create_n("/memories/nul.bin", "a\0b", 3));
    EXPECT(a, VIEW("/memories/nul.bin"), MD_OK, FILE_HEAD("/memories/nul.bin") "     1\ta\0b");
    SIZE(a, "/memories/nul.bin", 3);
    EXPECT(a, REPLACE("/memories/nul.bin", "b", "c"), MD_OK, SNIP "     1\ta\0c");
    EXPECT(a, DELETE("/memories/nul.bin"), MD_OK, "Successfully deleted /memories/nul.bin");
    SIZE(a, "/memories", 21);
}

static void test_listing_and_delete(void)
{
    const char *a = "alice";
    EXPECT(a, CREATE("/memories/a-b.txt", "abc"), MD_OK,
           "File created successfully at: /memories/a-b.txt");
    EXPECT(a, CREATE("/memories/.hidden/secret.txt", "12345"), MD_OK,
           "File created successfully at: /memories/.hidden/secret.txt");
    EXPECT(a, CREATE("/memories/node_modules/m.js", "1234567"), MD_OK,
           "File created successfully at: /memories/node_modules/m.js");
    EXPECT(a, CREATE("/memories/a/.dot", "1"), MD_OK,
           "File created successfully at: /memories/a/.dot");
    EXPECT(a, CREATE("/memories/a/b/deep/d.txt", "dddd"), MD_OK,
           "File created successfully at: /memories/a/b/deep/d.txt");
    /* Hidden files count in directory sizes. */
    SIZE(a, "/memories", 41);
    SIZE(a, "/memories/a", 26);
    SIZE(a, "/memories/a/b", 23);
    SIZE(a, "/memories/a/b/deep", 4);
    SIZE(a, "/memories/.hidden", 5);
    SIZE(a, "/memories/node_modules", 7);

    EXPECT(a, VIEW("/memories"), MD_OK,
           LIST_HEAD("/memories") "41B\t/memories\n"
                                  "26B\t/memories/a/\n"
                                  "23B\t/memories/a/b/\n"
                                  "2B\t/memories/a/z.txt\n"
                                  "3B\t/memories/a-b.txt");
    EXPECT(a, VIEW("/memories//"), MD_OK,
           LIST_HEAD("/memories//") "41B\t/memories//\n"
                                    "26B\t/memories/a/\n"
                                    "23B\t/memories/a/b/\n"
                                    "2B\t/memories/a/z.txt\n"
                                    "3B\t/memories/a-b.txt");
    EXPECT(a, VIEW("/memories/a"), MD_OK,
           LIST_HEAD("/memories/a") "26B\t/memories/a\n"
                                    "23B\t/memories/a/b/\n"
                                    "19B\t/memories/a/b/c.txt\n"
                                    "4B\t/memories/a/b/deep/\n"
                                    "2B\t/memories/a/z.txt");
    /* view_range is ignored for directories. */
    EXPECT(a, VIEW_R("/memories/a/b", 2, 3), MD_OK,
           LIST_HEAD("/memories/a/b") "23B\t/memories/a/b\n"
                                      "19B\t/memories/a/b/c.txt\n"
                                      "4B\t/memories/a/b/deep/\n"
                                      "4B\t/memories/a/b/deep/d.txt");
    /* Hidden entries stay readable by exact path. */
    EXPECT(a, VIEW("/memories/.hidden/secret.txt"), MD_OK,
           FILE_HEAD("/memories/.hidden/secret.txt") "     1\t12345");
    EXPECT(a, VIEW("/memories/node_modules"), MD_OK,
           LIST_HEAD("/memories/node_modules") "7B\t/memories/node_modules\n"
                                               "7B\t/memories/node_modules/m.js");

    /* delete: a file, then the last file of a directory (which stays). */
    EXPECT(a, DELETE("/memories/a/z.txt"), MD_OK, "Successfully deleted /memories/a/z.txt");
    GONE(a, "/memories/a/z.txt");
    SIZE(a, "/memories", 39);
    SIZE(a, "/memories/a", 24);
    EXPECT(a, DELETE("/memories/a/b/deep/d.txt"), MD_OK,
           "Successfully deleted /memories/a/b/deep/d.txt");
    CHECK(is_dir(a, "/memories/a/b/deep"));
    SIZE(a, "/memories/a/b/deep", 0);
    SIZE(a, "/memories/a/b", 19);
    SIZE(a, "/memories/a", 20);
    SIZE(a, "/memories", 35);
    /* A directory with its subtree. */
    EXPECT(a, DELETE("/memories/a/b/"), MD_OK, "Successfully deleted /memories/a/b/");
    GONE(a, "/memories/a/b");
    GONE(a, "/memories/a/b/c.txt");
    GONE(a, "/memories/a/b/deep");
    EXPECT(a, VIEW("/memories/a/b/c.txt"), MD_ENOENT,
           "The path /memories/a/b/c.txt does not exist. Please provide a valid path.");
    SIZE(a, "/memories/a", 1);
    SIZE(a, "/memories", 16);
    EXPECT(a, DELETE("/memories/a/b"), MD_ENOENT, "Error: The path /memories/a/b does not exist");
    EXPECT(a, DELETE("/memories"), MD_EINVAL,
           "Error: Cannot delete the /memories directory itself");
    EXPECT(a, DELETE("/memories//"), MD_EINVAL,
           "Error: Cannot delete the /memories directory itself");
    CHECK(is_dir(a, "/memories"));
    EXPECT(a, VIEW("/memories"), MD_OK,
           LIST_HEAD("/memories") "16B\t/memories\n"
                                  "1B\t/memories/a/\n"
                                  "3B\t/memories/a-b.txt");
}

static void test_rename(void)
{
    const char *a = "alice";
    /* A file, into parents that do not exist yet. */
    EXPECT(a, RENAME("/memories/a-b.txt", "/memories/new/dir/ab.txt"), MD_OK,
           "Successfully renamed /memories/a-b.txt to /memories/new/dir/ab.txt");
    GONE(a, "/memories/a-b.txt");
    CHECK(is_dir(a, "/memories/new"));
    CHECK(is_dir(a, "/memories/new/dir"));
    SIZE(a, "/memories/new/dir/ab.txt", 3);
    SIZE(a, "/memories/new/dir", 3);
    SIZE(a, "/memories/new", 3);
    SIZE(a, "/memories", 16);
    EXPECT(a, VIEW("/memories/new/dir/ab.txt"), MD_OK,
           FILE_HEAD("/memories/new/dir/ab.txt") "     1\tabc");

    /* A directory with a subtree, beside names sharing its prefix. */
    EXPECT(a, CREATE("/memories/src/x/1.txt", "one"), MD_OK,
           "File created successfully at: /memories/src/x/1.txt");
    EXPECT(a, CREATE("/memories/src/x/y/2.txt", "two!"), MD_OK,
           "File created successfully at: /memories/src/x/y/2.txt");
    EXPECT(a, CREATE("/memories/src/3.txt", "3"), MD_OK,
           "File created successfully at: /memories/src/3.txt");
    EXPECT(a, CREATE("/memories/src-b/4.txt", "four"), MD_OK,
           "File created successfully at: /memories/src-b/4.txt");
    EXPECT(a, CREATE("/memories/src.c", "c"), MD_OK,
           "File created successfully at: /memories/src.c");
    SIZE(a, "/memories/src", 8);
    SIZE(a, "/memories", 29);
    EXPECT(a, RENAME("/memories/src", "/memories/dst/moved"), MD_OK,
           "Successfully renamed /memories/src to /memories/dst/moved");
    GONE(a, "/memories/src");
    GONE(a, "/memories/src/x");
    GONE(a, "/memories/src/x/1.txt");
    GONE(a, "/memories/src/x/y/2.txt");
    GONE(a, "/memories/src/3.txt");
    EXPECT(a, VIEW("/memories/src/x/1.txt"), MD_ENOENT,
           "The path /memories/src/x/1.txt does not exist. Please provide a valid path.");
    SIZE(a, "/memories/src-b/4.txt", 4);
    SIZE(a, "/memories/src.c", 1);
    SIZE(a, "/memories/dst", 8);
    SIZE(a, "/memories/dst/moved", 8);
    SIZE(a, "/memories/dst/moved/x", 7);
    SIZE(a, "/memories/dst/moved/x/y", 4);
    SIZE(a, "/memories", 29);
    EXPECT(a, VIEW("/memories/dst/moved/x/y/2.txt"), MD_OK,
           FILE_HEAD("/memories/dst/moved/x/y/2.txt") "     1\ttwo!");
    EXPECT(a, VIEW("/memories/dst"), MD_OK,
           LIST_HEAD("/memories/dst") "8B\t/memories/dst\n"
                                      "8B\t/memories/dst/moved/\n"
                                      "1B\t/memories/dst/moved/3.txt\n"
                                      "7B\t/memories/dst/moved/x/");
    EXPECT(a, VIEW("/memories/dst/moved"), MD_OK,
           LIST_HEAD("/memories/dst/moved") "8B\t/memories/dst/moved\n"
                                            "1B\t/memories/dst/moved/3.txt\n"
                                            "7B\t/memories/dst/moved/x/\n"
                                            "3B\t/memories/dst/moved/x/1.txt\n"
                                            "4B\t/memories/dst/moved/x/y/");
    /* Edits at the new place keep the sizes right. */
    EXPECT(a, INSERT("/memories/dst/moved/x/1.txt", 1, "!"), MD_OK,
           "The file /memories/dst/moved/x/1.txt has been edited.");
    SIZE(a, "/memories/dst/moved/x", 9);
    SIZE(a, "/memories/dst", 10);
    SIZE(a, "/memories", 31);

    /* Errors. */
    EXPECT(a, RENAME("/memories/dst", "/memories/dst/moved/x/inner"), MD_ECONFLICT,
           "Error: Cannot rename /memories/dst to /memories/dst/moved/x/inner: a directory cannot "
           "be moved inside itself");
    EXPECT(a, RENAME("/memories/dst", "/memories/dst/new"), MD_ECONFLICT,
           "Error: Cannot rename /memories/dst to /memories/dst/new: a directory cannot be moved "
           "inside itself");
    EXPECT(a, RENAME("/memories/src.c", "/memories/src-b"), MD_EEXIST,
           "Error: The destination /memories/src-b already exists");
    EXPECT(a, RENAME("/memories/src.c", "/memories/new/dir/ab.txt"), MD_EEXIST,
           "Error: The destination /memories/new/dir/ab.txt already exists");
    EXPECT(a, RENAME("/memories/src.c", "/memories/src.c"), MD_EEXIST,
           "Error: The destination /memories/src.c already exists");
    EXPECT(a, RENAME("/memories/dst", "/memories/dst/"), MD_EEXIST,
           "Error: The destination /memories/dst/ already exists");
    EXPECT(a, RENAME("/memories/none", "/memories/other"), MD_ENOENT,
           "Error: The path /memories/none does not exist");
    EXPECT(a, RENAME("/memories", "/memories/r"), MD_EINVAL,
           "Error: Cannot rename the /memories directory itself");
    EXPECT(a, RENAME("/memories/src.c", "/memories"), MD_EEXIST,
           "Error: The destination /memories already exists");
    EXPECT(a, RENAME("/memories/src.c", "/memories/new/dir/ab.txt/c"), MD_ECONFLICT,
           "Error: Cannot rename /memories/src.c to /memories/new/dir/ab.txt/c: "
           "/memories/new/dir/ab.txt is a file, not a directory");
    EXPECT(a, RENAME("/memories/src.c", "/memories/../x"), MD_EINVAL,
           "Error: Path /memories/../x would escape /memories directory");
    SIZE(a, "/memories/src.c", 1);
    GONE(a, "/memories/r");
    GONE(a, "/memories/new/dir/ab.txt/c");
    SIZE(a, "/memories", 31);

    /* A directory to a sibling name that shares its prefix. */
    EXPECT(a, RENAME("/memories/src-b", "/memories/src"), MD_OK,
           "Successfully renamed /memories/src-b to /memories/src");
    SIZE(a, "/memories/src/4.txt", 4);
    GONE(a, "/memories/src-b");

    /* Delete a directory beside names sharing its prefix ("dst-2", and
     * "dst0": '0' follows '/' in byte order). */
    EXPECT(a, CREATE("/memories/dst-2/f.txt", "ff"), MD_OK,
           "File created successfully at: /memories/dst-2/f.txt");
    EXPECT(a, CREATE("/memories/dst0", "0"), MD_OK, "File created successfully at: /memories/dst0");
    SIZE(a, "/memories", 34);
    EXPECT(a, DELETE("/memories/dst"), MD_OK, "Successfully deleted /memories/dst");
    GONE(a, "/memories/dst");
    GONE(a, "/memories/dst/moved/x/y/2.txt");
    SIZE(a, "/memories/dst-2/f.txt", 2);
    SIZE(a, "/memories/dst0", 1);
    SIZE(a, "/memories", 24);
}

static void test_tenants(void)
{
    EXPECT("alice", CREATE("/memories/shared.txt", "alice"), MD_OK,
           "File created successfully at: /memories/shared.txt");
    EXPECT("bob", CREATE("/memories/shared.txt", "bob"), MD_OK,
           "File created successfully at: /memories/shared.txt");
    EXPECT("alice", VIEW("/memories/shared.txt"), MD_OK,
           FILE_HEAD("/memories/shared.txt") "     1\talice");
    EXPECT("bob", VIEW("/memories/shared.txt"), MD_OK,
           FILE_HEAD("/memories/shared.txt") "     1\tbob");
    EXPECT("bob", VIEW("/memories"), MD_OK,
           LIST_HEAD("/memories") "3B\t/memories\n"
                                  "3B\t/memories/shared.txt");
    EXPECT("bob", VIEW("/memories/src.c"), MD_ENOENT,
           "The path /memories/src.c does not exist. Please provide a valid path.");
    EXPECT("bob", DELETE("/memories/src.c"), MD_ENOENT,
           "Error: The path /memories/src.c does not exist");
    EXPECT("bob", RENAME("/memories/shared.txt", "/memories/mine.txt"), MD_OK,
           "Successfully renamed /memories/shared.txt to /memories/mine.txt");
    EXPECT("bob", DELETE("/memories/mine.txt"), MD_OK, "Successfully deleted /memories/mine.txt");
    SIZE("bob", "/memories", 0);
    SIZE("alice", "/memories/shared.txt", 5);
    SIZE("alice", "/memories", 29);
    EXPECT("carol", VIEW("/memories"), MD_OK, LIST_HEAD("/memories") "0B\t/memories");
    /* Tenant names are exact. */
    GONE("Alice", "/memories");
}

static void test_like_metacharacters(void)
{
    const char *m = "meta";
    EXPECT(m, CREATE("/memories/p%/f.txt", "1"), MD_OK,
           "File created successfully at: /memories/p%/f.txt");
    EXPECT(m, CREATE("/memories/pX/f.txt", "22"), MD_OK,
           "File created successfully at: /memories/pX/f.txt");
    EXPECT(m, CREATE("/memories/p_/g.txt", "333"), MD_OK,
           "File created successfully at: /memories/p_/g.txt");
    EXPECT(m, CREATE("/memories/pXY/h.txt", "4444"), MD_OK,
           "File created successfully at: /memories/pXY/h.txt");
    EXPECT(m, CREATE("/memories/it's \"q\".txt", "q"), MD_OK,
           "File created successfully at: /memories/it's \"q\".txt");
    EXPECT(m, CREATE("/memories/100%.txt", "100"), MD_OK,
           "File created successfully at: /memories/100%.txt");
    EXPECT(m, CREATE("/memories/a%20b", "s"), MD_OK,
           "File created successfully at: /memories/a%20b");
    EXPECT(m, VIEW("/memories"), MD_OK,
           LIST_HEAD("/memories") "15B\t/memories\n"
                                  "3B\t/memories/100%.txt\n"
                                  "1B\t/memories/a%20b\n"
                                  "1B\t/memories/it's \"q\".txt\n"
                                  "1B\t/memories/p%/\n"
                                  "1B\t/memories/p%/f.txt\n"
                                  "2B\t/memories/pX/\n"
                                  "2B\t/memories/pX/f.txt\n"
                                  "4B\t/memories/pXY/\n"
                                  "4B\t/memories/pXY/h.txt\n"
                                  "3B\t/memories/p_/\n"
                                  "3B\t/memories/p_/g.txt");
    EXPECT(m, VIEW("/memories/it's \"q\".txt"), MD_OK,
           FILE_HEAD("/memories/it's \"q\".txt") "     1\tq");
    EXPECT(m, VIEW("/memories/p_"), MD_OK,
           LIST_HEAD("/memories/p_") "3B\t/memories/p_\n"
                                     "3B\t/memories/p_/g.txt");
    /* "p%" and "p_" are names, not patterns. */
    EXPECT(m, DELETE("/memories/p%"), MD_OK, "Successfully deleted /memories/p%");
    GONE(m, "/memories/p%/f.txt");
    SIZE(m, "/memories/pX/f.txt", 2);
    SIZE(m, "/memories/pXY/h.txt", 4);
    SIZE(m, "/memories/p_/g.txt", 3);
    EXPECT(m, RENAME("/memories/p_", "/memories/q_"), MD_OK,
           "Successfully renamed /memories/p_ to /memories/q_");
    SIZE(m, "/memories/q_/g.txt", 3);
    SIZE(m, "/memories/pX/f.txt", 2);
    SIZE(m, "/memories/pXY/h.txt", 4);
    GONE(m, "/memories/qX");
    EXPECT(m, RENAME("/memories/pX", "/memories/p%"), MD_OK,
           "Successfully renamed /memories/pX to /memories/p%");
    SIZE(m, "/memories/p%/f.txt", 2);
    SIZE(m, "/memories/pXY/h.txt", 4);
    EXPECT(m, DELETE("/memories/it's \"q\".txt"), MD_OK,
           "Successfully deleted /memories/it's \"q\".txt");
    EXPECT(m, REPLACE("/memories/100%.txt", "100", "50%_'\""), MD_OK, SNIP "     1\t50%_'\"");
    SIZE(m, "/memories", 16);
}

static void test_multibyte(void)
{
    const char *u = "mb";
    EXPECT(u, CREATE("/memories/日本/ノート.md", "メモ\n"), MD_OK,
           "File created successfully at: /memories/日本/ノート.md");
    EXPECT(u, CREATE("/memories/日本/sub/é.txt", "é"), MD_OK,
           "File created successfully at: /memories/日本/sub/é.txt");
    EXPECT(u, CREATE("/memories/日本語/x.txt", "x"), MD_OK,
           "File created successfully at: /memories/日本語/x.txt");
    SIZE(u, "/memories/日本", 9);
    SIZE(u, "/memories", 10);
    EXPECT(u, RENAME("/memories/日本", "/memories/中文字/深い"), MD_OK,
           "Successfully renamed /memories/日本 to /memories/中文字/深い");
    GONE(u, "/memories/日本");
    GONE(u, "/memories/日本/ノート.md");
    GONE(u, "/memories/日本/sub/é.txt");
    SIZE(u, "/memories/日本語/x.txt", 1);
    SIZE(u, "/memories/中文字", 9);
    SIZE(u, "/memories/中文字/深い/sub", 2);
    EXPECT(u, VIEW("/memories/中文字/深い/ノート.md"), MD_OK,
           FILE_HEAD("/memories/中文字/深い/ノート.md") "     1\tメモ\n     2\t");
    EXPECT(u, VIEW("/memories/中文字/深い/sub/é.txt"), MD_OK,
           FILE_HEAD("/memories/中文字/深い/sub/é.txt") "     1\té");
    EXPECT(u, VIEW("/memories/中文字"), MD_OK,
           LIST_HEAD("/memories/中文字") "9B\t/memories/中文字\n"
                                         "9B\t/memories/中文字/深い/\n"
                                         "2B\t/memories/中文字/深い/sub/\n"
                                         "7B\t/memories/中文字/深い/ノート.md");
    /* Multibyte to ASCII and ASCII-prefixed to multibyte. */
    EXPECT(u, RENAME("/memories/中文字", "/memories/ascii"), MD_OK,
           "Successfully renamed /memories/中文字 to /memories/ascii");
    EXPECT(u, VIEW("/memories/ascii/深い/sub/é.txt"), MD_OK,
           FILE_HEAD("/memories/ascii/深い/sub/é.txt") "     1\té");
    EXPECT(u, RENAME("/memories/ascii/深い", "/memories/é"), MD_OK,
           "Successfully renamed /memories/ascii/深い to /memories/é");
    EXPECT(u, VIEW("/memories/é"), MD_OK,
           LIST_HEAD("/memories/é") "9B\t/memories/é\n"
                                    "2B\t/memories/é/sub/\n"
                                    "2B\t/memories/é/sub/é.txt\n"
                                    "7B\t/memories/é/ノート.md");
    SIZE(u, "/memories/ascii", 0);
    SIZE(u, "/memories", 10);
    EXPECT(u, DELETE("/memories/é"), MD_OK, "Successfully deleted /memories/é");
    GONE(u, "/memories/é/sub/é.txt");
    SIZE(u, "/memories/日本語/x.txt", 1);
    SIZE(u, "/memories", 1);
}

static void test_limits(void)
{
    const struct md_limits small = {1 << 20, 16, 1024, {4096, 255}, 0, 0, NULL, NULL, 0, 0, NULL};
    const char *l = "lim";
    CHECK_EQ_INT(run_lim(l, CREATE("/memories/ok.txt", "0123456789abcdef"), &small), MD_OK);
    CHECK_MEM(OUT.data, OUT.len, "File created successfully at: /memories/ok.txt");
    CHECK_EQ_INT(run_lim(l, CREATE("/memories/big.txt", "0123456789abcdefg"), &small), MD_ETOOBIG);
    CHECK_MEM(OUT.data, OUT.len,
              "Error: File /memories/big.txt would be 17 bytes, over the 16-byte file size limit");
    GONE(l, "/memories/big.txt");
    CHECK_EQ_INT(run_lim(l, REPLACE("/memories/ok.txt", "0", "00"), &small), MD_ETOOBIG);
    CHECK_MEM(OUT.data, OUT.len,
              "Error: File /memories/ok.txt would be 17 bytes, over the 16-byte file size limit");
    CHECK_EQ_INT(run_lim(l, INSERT("/memories/ok.txt", 0, "x\n"), &small), MD_ETOOBIG);
    CHECK_MEM(OUT.data, OUT.len,
              "Error: File /memories/ok.txt would be 18 bytes, over the 16-byte file size limit");
    CHECK_EQ_INT(run_lim(l, REPLACE("/memories/ok.txt", "0", ""), &small), MD_OK);
    SIZE(l, "/memories/ok.txt", 15);
    SIZE(l, "/memories", 15);
}

/* Several commands in one write transaction, one savepoint each. */
static enum md_err in_savepoint(struct md_txn *t, const char *tenant, char *json,
                                int force_rollback)
{
    struct md_cmd cmd;
    md_buf_reset(&OUT);
    enum md_err e = md_cmd_parse(&cmd, json, strlen(json), &LIM, &OUT);
    free(json);
    CHECK_EQ_INT(e, MD_OK);
    CHECK_EQ_INT(md_txn_savepoint(t), MD_OK);
    e = md_cmd_exec(t, tenant, &cmd, &LIM, &OUT, &RES);
    CHECK_EQ_INT(md_txn_release(t, e != MD_OK || force_rollback), MD_OK);
    md_cmd_free(&cmd);
    return e;
}

static void test_savepoints(void)
{
    const char *s = "sp";
    struct md_txn *t = write_begin(s, NULL);
    CHECK_EQ_INT(in_savepoint(t, s, CREATE("/memories/s1.txt", "one"), 0), MD_OK);
    CHECK_EQ_INT(in_savepoint(t, s, CREATE("/memories/s1.txt/x", "bad"), 0), MD_ECONFLICT);
    CHECK_MEM(OUT.data, OUT.len,
              "Error: Cannot create /memories/s1.txt/x: /memories/s1.txt is a file, not a "
              "directory");
    /* A command that succeeded, then rolled back alone: its file, its new
     * parent directory and the size updates all go. */
    CHECK_EQ_INT(in_savepoint(t, s, CREATE("/memories/dir/s2.txt", "two"), 1), MD_OK);
    CHECK_EQ_INT(in_savepoint(t, s, INSERT("/memories/s1.txt", 1, "more"), 0), MD_OK);
    CHECK_EQ_INT(in_savepoint(t, s, CREATE("/memories/s1.txt", "again"), 0), MD_EEXIST);
    CHECK_EQ_INT(in_savepoint(t, s, REPLACE("/memories/s1.txt", "one", "ONE"), 1), MD_OK);
    CHECK_EQ_INT(in_savepoint(t, s, DELETE("/memories/s1.txt"), 1), MD_OK);
    CHECK_EQ_INT(md_txn_commit(t), MD_OK);
    EXPECT(s, VIEW("/memories/s1.txt"), MD_OK,
           FILE_HEAD("/memories/s1.txt") "     1\tone\n     2\tmore");
    GONE(s, "/memories/dir");
    GONE(s, "/memories/dir/s2.txt");
    GONE(s, "/memories/s1.txt/x");
    SIZE(s, "/memories", 8);
    EXPECT(s, VIEW("/memories"), MD_OK,
           LIST_HEAD("/memories") "8B\t/memories\n"
                                  "8B\t/memories/s1.txt");

    /* Rolling back the whole transaction drops everything in it. */
    t = write_begin(s, NULL);
    CHECK_EQ_INT(in_savepoint(t, s, CREATE("/memories/gone.txt", "x"), 0), MD_OK);
    CHECK_EQ_INT(in_savepoint(t, s, DELETE("/memories/s1.txt"), 0), MD_OK);
    md_txn_rollback(t);
    GONE(s, "/memories/gone.txt");
    SIZE(s, "/memories/s1.txt", 8);
    SIZE(s, "/memories", 8);

    /* A new tenant whose only command is rolled back is not created. */
    t = write_begin("ghost", s);
    CHECK_EQ_INT(in_savepoint(t, "ghost", CREATE("/memories/g.txt", "g"), 1), MD_OK);
    CHECK_EQ_INT(in_savepoint(t, s, CREATE("/memories/kept.txt", "k"), 0), MD_OK);
    CHECK_EQ_INT(md_txn_commit(t), MD_OK);
    GONE("ghost", "/memories");
    EXPECT("ghost", VIEW("/memories"), MD_OK, LIST_HEAD("/memories") "0B\t/memories");
    SIZE(s, "/memories/kept.txt", 1);
    SIZE(s, "/memories", 9);
}

/* Directory sizes in a write transaction are kept pending and written once
 * per directory before the commit (md_dirsizes.h, both engines): the
 * commands of a batch must still see true sizes, a savepoint rolled back
 * after a flush of the pending sizes must neither lose the earlier
 * commands' sizes nor keep its own, and more directories than the pending
 * table holds (MD_DIRSIZES_SLOTS) must still add up. */
static void test_deferred_sizes(void)
{
    const char *s = "dz";
    struct md_txn *t = write_begin(s, NULL);
    CHECK_EQ_INT(in_savepoint(t, s, CREATE("/memories/d/a.txt", "12345"), 0), MD_OK);
    CHECK_EQ_INT(in_savepoint(t, s, CREATE("/memories/d/e/b.txt", "xyz"), 0), MD_OK);
    /* Deleting /memories/d/e reads its size (3, still pending), flushes the
     * pending sizes and removes it; rolled back, all of that is undone. */
    CHECK_EQ_INT(in_savepoint(t, s, DELETE("/memories/d/e"), 1), MD_OK);
    /* A rename moves the rows after a flush; then more pending changes. */
    CHECK_EQ_INT(in_savepoint(t, s, RENAME("/memories/d", "/memories/r"), 0), MD_OK);
    CHECK_EQ_INT(in_savepoint(t, s, CREATE("/memories/r/c.txt", "1"), 0), MD_OK);
    CHECK_EQ_INT(in_savepoint(t, s, INSERT("/memories/r/e/b.txt", 0, "0"), 0), MD_OK);
    /* A failing command after pending changes: they stay as they were. */
    CHECK_EQ_INT(in_savepoint(t, s, CREATE("/memories/r/c.txt", "dup"), 0), MD_EEXIST);
    /* A rename rolled back after its flush: the moved rows and the earlier
     * commands' sizes come back as they were. */
    CHECK_EQ_INT(in_savepoint(t, s, RENAME("/memories/r/e", "/memories/x"), 1), MD_OK);
    /* Deleting a directory whose size is partly pending (2 committed by the
     * flush above, then +2 pending): its ancestors lose exactly 2 + 2. */
    CHECK_EQ_INT(in_savepoint(t, s, CREATE("/memories/r/e/f/g.txt", "gg"), 0), MD_OK);
    CHECK_EQ_INT(in_savepoint(t, s, DELETE("/memories/r/e/f"), 0), MD_OK);
    CHECK_EQ_INT(md_txn_commit(t), MD_OK);
    SIZE(s, "/memories", 11);
    SIZE(s, "/memories/r", 11);
    SIZE(s, "/memories/r/e", 5);
    GONE(s, "/memories/d");
    GONE(s, "/memories/x");
    GONE(s, "/memories/r/e/f");
    EXPECT(s, VIEW("/memories"), MD_OK,
           LIST_HEAD("/memories") "11B\t/memories\n"
                                  "11B\t/memories/r/\n"
                                  "5B\t/memories/r/a.txt\n"
                                  "1B\t/memories/r/c.txt\n"
                                  "5B\t/memories/r/e/");

    /* 300 directories in one transaction (more than the pending table's
     * slots), one command in the middle rolled back. */
    t = write_begin(s, NULL);
    for (int i = 0; i < 300; i++) {
        char path[64];
        snprintf(path, sizeof path, "/memories/many/d%03d/f.txt", i);
        CHECK_EQ_INT(in_savepoint(t, s, CREATE(path, "abcd"), i == 150), MD_OK);
    }
    CHECK_EQ_INT(md_txn_commit(t), MD_OK);
    SIZE(s, "/memories", 11 + 299 * 4);
    SIZE(s, "/memories/many", 299 * 4);
    SIZE(s, "/memories/many/d000", 4);
    SIZE(s, "/memories/many/d299", 4);
    GONE(s, "/memories/many/d150");

    /* A commit that fails drops the pending sizes with the rest; the next
     * transaction starts clean. */
    t = write_begin(s, NULL);
    CHECK_EQ_INT(in_savepoint(t, s, CREATE("/memories/r/lost.txt", "lost"), 0), MD_OK);
    md_txn_rollback(t);
    t = write_begin(s, NULL);
    CHECK_EQ_INT(in_savepoint(t, s, CREATE("/memories/r/kept.txt", "k"), 0), MD_OK);
    CHECK_EQ_INT(md_txn_commit(t), MD_OK);
    SIZE(s, "/memories/r", 12);
    SIZE(s, "/memories", 12 + 299 * 4);
}

/* ---- the database file and its settings ---- */

/* The first column of the first row of `sql` on a read-only connection of
 * our own to the database at `path`, as text into `buf`; 0, or -1 when the
 * query fails. */
static int query_text(const char *path, const char *sql, char *buf, size_t n)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = -1;
    buf[0] = '\0';
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_text(st, 0)) {
        snprintf(buf, n, "%s", (const char *)sqlite3_column_text(st, 0));
        rc = 0;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

/* The same as an integer; -1 when the query fails. */
static long query_int(const char *path, const char *sql)
{
    char buf[32];
    return query_text(path, sql, buf, sizeof buf) == 0 ? strtol(buf, NULL, 10) : -1;
}

/* ---- PostgreSQL: a fresh database of the suite's cluster (pg_db.h) ---- */

/* g_db: a new database of the cluster. 0, 77 (skip) or 1. */
static int pg_setup(void)
{
    return pg_db_create("md_unit", g_pg_name, sizeof g_pg_name, g_db, sizeof g_db);
}

static void pg_drop(void)
{
    pg_db_drop(g_pg_name);
}

static void remove_db(const char *path)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        char p[192];
        snprintf(p, sizeof p, "%s%s", path, suffix[i]);
        unlink(p);
    }
}

/* The store's database is in WAL mode: as SQLite reports it to another
 * connection, and in the file header (read and write format versions 2). */
static void test_wal_mode(void)
{
    char mode[16] = "";
    CHECK_EQ_INT(query_text(g_db, "PRAGMA journal_mode", mode, sizeof mode), 0);
    CHECK_MEM(mode, strlen(mode), "wal");
    unsigned char header[20] = {0};
    FILE *f = fopen(g_db, "rb");
    CHECK(f != NULL);
    if (f) {
        CHECK_EQ_INT(fread(header, 1, sizeof header, f), sizeof header);
        fclose(f);
    }
    CHECK_BUF((const char *)header, 16, "SQLite format 3", 16); /* with its NUL */
    CHECK_EQ_INT(header[18], 2);
    CHECK_EQ_INT(header[19], 2);
}

/* Two readers at once (each left, on SQLite, with a kept transaction),
 * then commits: every read after a commit sees it, whichever reader
 * serves it (on PostgreSQL, whichever pooled connection). */
static void reads_see_commits(const char *tenant)
{
    EXPECT(tenant, CREATE("/memories/a.txt", "one"), MD_OK,
           "File created successfully at: /memories/a.txt");
    struct md_txn *r1, *r2;
    CHECK_EQ_INT(md_store_read_begin(S, &r1), MD_OK);
    CHECK_EQ_INT(md_store_read_begin(S, &r2), MD_OK);
    struct md_entry root;
    CHECK_EQ_INT(md_txn_get(r1, tenant, "/memories", 9, 0, &root), MD_OK);
    CHECK_EQ_INT(md_txn_get(r2, tenant, "/memories", 9, 0, &root), MD_OK);
    md_txn_end(r1);
    md_txn_end(r2);
    for (int i = 0; i < 3; i++) {
        EXPECT(tenant, REPLACE("/memories/a.txt", i ? "x" : "one", "x"), MD_OK,
               "The memory file has been edited. Here is the snippet showing the change (with "
               "line numbers):\n     1\tx");
        EXPECT(tenant, VIEW("/memories/a.txt"), MD_OK, FILE_HEAD("/memories/a.txt") "     1\tx");
        EXPECT(tenant, VIEW("/memories/a.txt"), MD_OK, FILE_HEAD("/memories/a.txt") "     1\tx");
    }
}

static void test_reads_see_commits(void)
{
    reads_see_commits("reads");
}

/* SQLite: readers keep their read transaction between requests while
 * nothing is committed; a commit makes the next read start a new one (it
 * sees the write), and when writes pause the checkpointer ends the
 * transactions of idle readers, so that the checkpoint copies every frame
 * of the WAL. */
static void test_kept_snapshots(void)
{
    reads_see_commits("snap");
    EXPECT("snap", CREATE("/memories/b.txt", "two"), MD_OK,
           "File created successfully at: /memories/b.txt");
    /* Writes pause: within a second the checkpointer has run, and a
     * checkpoint from another connection finds nothing left to copy. */
    int log = -1, copied = -2, rc = SQLITE_BUSY;
    for (int i = 0; i < 40 && (rc == SQLITE_BUSY || log != copied); i++) {
        usleep(50000);
        sqlite3 *db = NULL;
        CHECK_EQ_INT(sqlite3_open_v2(g_db, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        /* (a first read opens the WAL: a checkpoint before it reports -1) */
        CHECK_EQ_INT(sqlite3_exec(db, "SELECT count(*) FROM tenants", NULL, NULL, NULL), SQLITE_OK);
        /* SQLITE_BUSY: the checkpointer is running one right now; ask again. */
        rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &copied);
        CHECK(rc == SQLITE_OK || rc == SQLITE_BUSY);
        sqlite3_close(db);
    }
    CHECK_EQ_INT(rc, SQLITE_OK);
    CHECK(log > 0);
    CHECK_EQ_INT(copied, log);
}

/* Under sustained writes, with no pause for an idle checkpoint, the WAL still
 * starts over: each busy checkpoint ends with the writer copying the last
 * frames, so it stays near CKPT_BUSY_PAGES (32 MiB) instead of growing by
 * every write (about 2.4 MiB per edit of a 1 MB file: the new pages and,
 * SQLite being built with SECURE_DELETE, the old ones zeroed). */
static void test_wal_bounded(void)
{
    enum { BYTES = 1000000, EDITS = 120 };
    char *text = malloc(BYTES + 1);
    CHECK(text != NULL);
    if (!text)
        return;
    static const char line[] = "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0\n";
    for (size_t i = 0; i < BYTES; i++)
        text[i] = line[i % 64];
    memcpy(text + BYTES / 2, "state=on\n", 9);
    text[BYTES] = '\0';
    EXPECT("wal", CREATE("/memories/big.txt", text), MD_OK,
           "File created successfully at: /memories/big.txt");
    free(text);
    char wal[sizeof g_db + 8];
    snprintf(wal, sizeof wal, "%s-wal", g_db);
    off_t max = 0;
    for (int i = 0; i < EDITS; i++) {
        CHECK_EQ_INT(run("wal", i % 2 ? REPLACE("/memories/big.txt", "state=off", "state=on")
                                      : REPLACE("/memories/big.txt", "state=on", "state=off")),
                     MD_OK);
        struct stat st;
        CHECK_EQ_INT(stat(wal, &st), 0);
        if (st.st_size > max)
            max = st.st_size;
    }
    /* About 280 MiB went through the WAL; unbounded it ends that big. */
    CHECK(max > 0 && max <= ((off_t)96 << 20));
    if (max > ((off_t)96 << 20))
        fprintf(stderr, "the WAL reached %lld bytes\n", (long long)max);
    SIZE("wal", "/memories/big.txt", BYTES);
}

/* A database whose PRAGMA user_version is newer than this code's schema is
 * refused with the reason, and nothing is migrated into it. */
static void test_newer_schema_refused(void)
{
    char path[160];
    snprintf(path, sizeof path, "%s/newer.db", g_dir);
    int newer = md_store_sqlite_schema_version() + 1;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version=%d", newer);
    sqlite3 *db = NULL;
    CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_EQ_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    struct md_store_config c = {.db = path,
                                .durability = MD_DURABILITY_FULL,
                                .busy_timeout_ms = 5000,
                                .history = {20, 30},
                                .search = MD_SEARCH_KEEP};
    struct md_store *s = NULL;
    char why[512] = "";
    CHECK_EQ_INT(md_engine_sqlite.open(&c, NULL, &s, why, sizeof why), MD_EDB);
    CHECK(s == NULL);
    char want[160];
    snprintf(want, sizeof want,
             "database schema version %d is newer than this memoryd (%d); refusing to open it",
             newer, newer - 1);
    CHECK_BUF(why, strlen(why), want, strlen(want));
    CHECK_EQ_INT(query_int(path, "PRAGMA user_version"), newer);
    CHECK_EQ_INT(query_int(path, "SELECT count(*) FROM sqlite_schema"), 0);
    md_store_close(s);
    remove_db(path);
}

/* --durability full / normal: synchronous FULL (2) / NORMAL (1) on both
 * connections that write the file, the writer's and the checkpointer's. */
static void test_durability(void)
{
    static const struct {
        enum md_durability durability;
        int synchronous;
    } cases[] = {{MD_DURABILITY_FULL, 2}, {MD_DURABILITY_NORMAL, 1}};
    char path[160];
    snprintf(path, sizeof path, "%s/durability.db", g_dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct md_store_config c = {.db = path,
                                    .durability = cases[i].durability,
                                    .busy_timeout_ms = 5000,
                                    .history = {20, 30},
                                    .search = MD_SEARCH_KEEP};
        struct md_store *s = NULL;
        char why[512] = "";
        CHECK_EQ_INT(md_engine_sqlite.open(&c, NULL, &s, why, sizeof why), MD_OK);
        int got[2] = {-1, -1};
        CHECK_EQ_INT(md_store_sqlite_synchronous(s, got), 0);
        CHECK_EQ_INT(got[0], cases[i].synchronous);
        CHECK_EQ_INT(got[1], cases[i].synchronous);
        md_store_close(s);
        remove_db(path);
    }
}

static void test_reopen(void)
{
    md_store_close(S);
    S = open_store();
    EXPECT("alice", VIEW("/memories/new/dir/ab.txt"), MD_OK,
           FILE_HEAD("/memories/new/dir/ab.txt") "     1\tabc");
    SIZE("alice", "/memories", 29);
    SIZE("sp", "/memories", 9);
    EXPECT("sp", VIEW("/memories/s1.txt"), MD_OK,
           FILE_HEAD("/memories/s1.txt") "     1\tone\n     2\tmore");

    /* The database records the schema version this code expects. */
    if (g_pg) {
        CHECK(md_store_pg_schema_version() >= 1);
        CHECK_EQ_INT(pg_exec(g_db, "SELECT max(version) FROM memoryd_schema"),
                     md_store_pg_schema_version());
    } else {
        CHECK(md_store_sqlite_schema_version() >= 1);
        CHECK_EQ_INT(query_int(g_db, "PRAGMA user_version"), md_store_sqlite_schema_version());
    }
}

/* ---- the writer ---- */

struct wjob {
    struct md_job job; /* first: a struct md_job * is a struct wjob * */
    struct md_cmd cmd;
    struct md_buf out;
    int calls;
};

static pthread_mutex_t w_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t w_cv = PTHREAD_COND_INITIALIZER;
static int w_done;

static void on_done(struct md_job *job)
{
    pthread_mutex_lock(&w_mu);
    ((struct wjob *)job)->calls++;
    w_done++;
    pthread_cond_broadcast(&w_cv);
    pthread_mutex_unlock(&w_mu);
}

/* Wait until `n` jobs are done (at most 60 s, so a bug cannot hang ctest). */
static int wait_done(int n)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&w_mu);
    while (w_done < n)
        if (pthread_cond_timedwait(&w_cv, &w_mu, &until) != 0)
            break;
    int done = w_done;
    pthread_mutex_unlock(&w_mu);
    return done;
}

static void wjob_init(struct wjob *j, const char *tenant, char *json)
{
    memset(j, 0, sizeof *j);
    md_buf_init(&j->out, 1 << 20);
    CHECK_EQ_INT(md_cmd_parse(&j->cmd, json, strlen(json), &LIM, &j->out), MD_OK);
    free(json);
    j->job.cmd = &j->cmd;
    j->job.tenant = tenant;
    j->job.out = &j->out;
    j->job.err = MD_EDB; /* the writer must set it */
    j->job.done = on_done;
}

static void wjob_free(struct wjob *j)
{
    md_cmd_free(&j->cmd);
    md_buf_free(&j->out);
}

#define JOB_RESULT(j, want_err, want)                                                              \
    do {                                                                                           \
        CHECK_EQ_INT((j)->calls, 1);                                                               \
        CHECK_EQ_INT((j)->job.err, want_err);                                                      \
        CHECK_MEM((j)->out.data, (j)->out.len, want);                                              \
    } while (0)

static void test_writer(void)
{
    enum { N = 9 };
    static struct wjob jobs[N];
    wjob_init(&jobs[0], "w", CREATE("/memories/w/1.txt", "one"));
    wjob_init(&jobs[1], "w", CREATE("/memories/w/2.txt", "two"));
    wjob_init(&jobs[2], "w", CREATE("/memories/w/1.txt", "dup"));
    wjob_init(&jobs[3], "w", REPLACE("/memories/w/2.txt", "zzz", "x"));
    wjob_init(&jobs[4], "w", INSERT("/memories/w/1.txt", 1, "uno"));
    wjob_init(&jobs[5], "w", CREATE("/memories/w/1.txt/x", "x"));
    wjob_init(&jobs[6], "w", RENAME("/memories/w/2.txt", "/memories/w2/2.txt"));
    wjob_init(&jobs[7], "w", DELETE("/memories/nope"));
    wjob_init(&jobs[8], "w-other", CREATE("/memories/w/1.txt", "other"));

    w_done = 0;
    struct md_writer *w = md_writer_start(S, &LIM, 64, 100);
    CHECK(w != NULL);
    if (!w)
        return;
    for (int i = 0; i < N; i++)
        CHECK_EQ_INT(md_writer_submit(w, &jobs[i].job), MD_OK);
    CHECK_EQ_INT(wait_done(N), N);

    JOB_RESULT(&jobs[0], MD_OK, "File created successfully at: /memories/w/1.txt");
    JOB_RESULT(&jobs[1], MD_OK, "File created successfully at: /memories/w/2.txt");
    JOB_RESULT(&jobs[2], MD_EEXIST, "Error: File /memories/w/1.txt already exists");
    JOB_RESULT(&jobs[3], MD_ECONFLICT,
               "No replacement was performed, old_str `zzz` did not appear verbatim in "
               "/memories/w/2.txt.");
    JOB_RESULT(&jobs[4], MD_OK, "The file /memories/w/1.txt has been edited.");
    JOB_RESULT(&jobs[5], MD_ECONFLICT,
               "Error: Cannot create /memories/w/1.txt/x: /memories/w/1.txt is a file, not a "
               "directory");
    JOB_RESULT(&jobs[6], MD_OK, "Successfully renamed /memories/w/2.txt to /memories/w2/2.txt");
    JOB_RESULT(&jobs[7], MD_ENOENT, "Error: The path /memories/nope does not exist");
    JOB_RESULT(&jobs[8], MD_OK, "File created successfully at: /memories/w/1.txt");

    struct md_writer_stats st;
    md_writer_stats(w, &st);
    CHECK_EQ_INT(st.jobs, N);
    CHECK(st.batches >= 1 && st.batches <= N);
    md_writer_stop(w, &st);
    CHECK_EQ_INT(st.jobs, N);
    for (int i = 0; i < N; i++)
        wjob_free(&jobs[i]);

    /* After a reopen only the successes are there. */
    md_store_close(S);
    S = open_store();
    EXPECT("w", VIEW("/memories/w/1.txt"), MD_OK,
           FILE_HEAD("/memories/w/1.txt") "     1\tone\n     2\tuno");
    GONE("w", "/memories/w/2.txt");
    GONE("w", "/memories/w/1.txt/x");
    EXPECT("w", VIEW("/memories/w2/2.txt"), MD_OK, FILE_HEAD("/memories/w2/2.txt") "     1\ttwo");
    SIZE("w", "/memories/w", 7);
    SIZE("w", "/memories/w2", 3);
    SIZE("w", "/memories", 10);
    EXPECT("w-other", VIEW("/memories/w/1.txt"), MD_OK,
           FILE_HEAD("/memories/w/1.txt") "     1\tother");
    SIZE("w-other", "/memories", 5);
}

/* md_writer_stop() returns only after every queued job is committed and
 * its `done` has run, in the order the jobs were submitted, although the
 * callbacks run on the notifier thread while later batches are written. */
enum { STOP_JOBS = 200 };
static struct wjob stop_jobs[STOP_JOBS];
static int w_order[STOP_JOBS], w_order_n;

static void on_done_ordered(struct md_job *job)
{
    /* A slow caller: the notifier falls behind the writer. */
    nanosleep(&(struct timespec){0, 300000L}, NULL);
    pthread_mutex_lock(&w_mu);
    w_order[w_order_n++] = (int)((struct wjob *)job - stop_jobs);
    pthread_mutex_unlock(&w_mu);
    on_done(job);
}

static void test_writer_stop_tells_every_job(void)
{
    enum { N = STOP_JOBS };
    struct wjob *jobs = stop_jobs;
    w_done = 0;
    w_order_n = 0;
    struct md_writer *w = md_writer_start(S, &LIM, 8, N);
    CHECK(w != NULL);
    if (!w)
        return;
    for (int i = 0; i < N; i++) {
        char path[64];
        snprintf(path, sizeof path, "/memories/stop/f%03d.txt", i);
        wjob_init(&jobs[i], "stop", CREATE(path, "x"));
        jobs[i].job.done = on_done_ordered;
        CHECK_EQ_INT(md_writer_submit(w, &jobs[i].job), MD_OK);
    }
    struct md_writer_stats st;
    md_writer_stop(w, &st); /* no waiting first */
    CHECK_EQ_INT(w_done, N);
    CHECK_EQ_INT(st.jobs, N);
    CHECK(st.batches >= N / 8);
    for (int i = 0; i < N; i++) {
        char want[80];
        snprintf(want, sizeof want, "File created successfully at: /memories/stop/f%03d.txt", i);
        CHECK_EQ_INT(jobs[i].calls, 1);
        CHECK_EQ_INT(jobs[i].job.err, MD_OK);
        CHECK_BUF(jobs[i].out.data, jobs[i].out.len, want, strlen(want));
        CHECK_EQ_INT(w_order[i], i);
        wjob_free(&jobs[i]);
    }
    SIZE("stop", "/memories/stop", N);
}

/* A full queue is refused with MD_EBUSY (and that job's `done` never runs). */
static void test_writer_full_queue(void)
{
    static struct wjob a, b, c;
    wjob_init(&a, "q", CREATE("/memories/a.txt", "a"));
    wjob_init(&b, "q", CREATE("/memories/b.txt", "bb"));
    wjob_init(&c, "q", CREATE("/memories/c.txt", "ccc"));
    w_done = 0;
    struct md_writer *w = md_writer_start(S, &LIM, 64, 1);
    CHECK(w != NULL);
    if (!w)
        return;
    /* Hold the write lock: the writer takes job a and then waits for it. */
    struct md_txn *t;
    CHECK_EQ_INT(md_store_write_begin(S, &t), MD_OK);
    CHECK_EQ_INT(md_writer_submit(w, &a.job), MD_OK);
    /* b is accepted once the writer has taken a off the queue. */
    enum md_err e = MD_EBUSY;
    for (int i = 0; i < 60000 && e == MD_EBUSY; i++) {
        e = md_writer_submit(w, &b.job);
        if (e == MD_EBUSY)
            usleep(1000);
    }
    CHECK_EQ_INT(e, MD_OK);
    /* Now the queue (size 1) holds b while the writer waits: c is refused. */
    CHECK_EQ_INT(md_writer_submit(w, &c.job), MD_EBUSY);
    md_txn_rollback(t);
    CHECK_EQ_INT(wait_done(2), 2);
    JOB_RESULT(&a, MD_OK, "File created successfully at: /memories/a.txt");
    JOB_RESULT(&b, MD_OK, "File created successfully at: /memories/b.txt");
    md_writer_stop(w, NULL);
    CHECK_EQ_INT(c.calls, 0);
    SIZE("q", "/memories", 3);
    GONE("q", "/memories/c.txt");
    wjob_free(&a);
    wjob_free(&b);
    wjob_free(&c);
}

/* ---- a VFS whose flushes can be made to fail ----
 * It wraps the default VFS and forwards everything, but xSync fails with
 * SQLITE_IOERR_FSYNC while g_fail_sync is set (a disk that stopped taking
 * flushes). */
static sqlite3_vfs *g_real_vfs;
static sqlite3_vfs g_shim_vfs;
static int g_fail_sync;
static int g_fail_write; /* xWrite fails with SQLITE_FULL (a full disk) */

struct shim_file {
    sqlite3_file base;
    sqlite3_file *real; /* right after this struct */
};
#define REAL(f) (((struct shim_file *)(void *)(f))->real)

static int shim_close(sqlite3_file *f)
{
    return REAL(f)->pMethods ? REAL(f)->pMethods->xClose(REAL(f)) : SQLITE_OK;
}
static int shim_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
    return REAL(f)->pMethods->xRead(REAL(f), p, n, off);
}
static int shim_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
    if (__atomic_load_n(&g_fail_write, __ATOMIC_SEQ_CST))
        return SQLITE_FULL;
    return REAL(f)->pMethods->xWrite(REAL(f), p, n, off);
}
static int shim_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return REAL(f)->pMethods->xTruncate(REAL(f), size);
}
static int shim_sync(sqlite3_file *f, int flags)
{
    if (__atomic_load_n(&g_fail_sync, __ATOMIC_SEQ_CST))
        return SQLITE_IOERR_FSYNC;
    return REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int shim_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return REAL(f)->pMethods->xFileSize(REAL(f), size);
}
static int shim_lock(sqlite3_file *f, int level)
{
    return REAL(f)->pMethods->xLock(REAL(f), level);
}
static int shim_unlock(sqlite3_file *f, int level)
{
    return REAL(f)->pMethods->xUnlock(REAL(f), level);
}
static int shim_check_reserved(sqlite3_file *f, int *out)
{
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int shim_file_control(sqlite3_file *f, int op, void *arg)
{
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int shim_sector_size(sqlite3_file *f)
{
    return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int shim_device(sqlite3_file *f)
{
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int shim_shm_map(sqlite3_file *f, int pg, int pgsz, int extend, void volatile **pp)
{
    return REAL(f)->pMethods->xShmMap(REAL(f), pg, pgsz, extend, pp);
}
static int shim_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
    return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}
static void shim_shm_barrier(sqlite3_file *f)
{
    REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int shim_shm_unmap(sqlite3_file *f, int del)
{
    return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}
static int shim_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
    return REAL(f)->pMethods->xFetch(REAL(f), off, n, pp);
}
static int shim_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    return REAL(f)->pMethods->xUnfetch(REAL(f), off, p);
}

static const sqlite3_io_methods g_shim_io = {
    3,
    shim_close,
    shim_read,
    shim_write,
    shim_truncate,
    shim_sync,
    shim_file_size,
    shim_lock,
    shim_unlock,
    shim_check_reserved,
    shim_file_control,
    shim_sector_size,
    shim_device,
    shim_shm_map,
    shim_shm_lock,
    shim_shm_barrier,
    shim_shm_unmap,
    shim_fetch,
    shim_unfetch,
};

static int shim_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
    (void)vfs;
    struct shim_file *sf = (struct shim_file *)(void *)f;
    sf->real = (sqlite3_file *)(void *)(sf + 1);
    sf->real->pMethods = NULL;
    int rc = g_real_vfs->xOpen(g_real_vfs, name, sf->real, flags, out);
    /* SQLite calls xClose only when pMethods is set: set it either way,
     * shim_close skips a real file that never opened. */
    f->pMethods = &g_shim_io;
    return rc;
}

/* Forwarders of the VFS's own methods. */
static int shim_delete(sqlite3_vfs *v, const char *n, int dirsync)
{
    (void)v;
    return g_real_vfs->xDelete(g_real_vfs, n, dirsync);
}
static int shim_access(sqlite3_vfs *v, const char *n, int flags, int *out)
{
    (void)v;
    return g_real_vfs->xAccess(g_real_vfs, n, flags, out);
}
static int shim_full_pathname(sqlite3_vfs *v, const char *n, int len, char *out)
{
    (void)v;
    return g_real_vfs->xFullPathname(g_real_vfs, n, len, out);
}

static void shim_register(void)
{
    g_real_vfs = sqlite3_vfs_find(NULL);
    g_shim_vfs = *g_real_vfs; /* randomness, sleep, time, syscalls: the real ones */
    g_shim_vfs.zName = "md-test-flaky-sync";
    g_shim_vfs.szOsFile = (int)sizeof(struct shim_file) + g_real_vfs->szOsFile;
    g_shim_vfs.pNext = NULL;
    g_shim_vfs.pAppData = NULL;
    g_shim_vfs.xOpen = shim_open;
    g_shim_vfs.xDelete = shim_delete;
    g_shim_vfs.xAccess = shim_access;
    g_shim_vfs.xFullPathname = shim_full_pathname;
    g_shim_vfs.xDlOpen = NULL;
    g_shim_vfs.xDlError = NULL;
    g_shim_vfs.xDlSym = NULL;
    g_shim_vfs.xDlClose = NULL;
    sqlite3_vfs_register(&g_shim_vfs, 1); /* the default from now on */
}

/* A commit whose flush fails: the batch's successes are reported as
 * "may or may not have been applied" (MD_EUNSURE, 500), a command that
 * failed on its own keeps its own answer, and the store goes on once the
 * disk takes flushes again. */
static void test_writer_flush_fails(void)
{
    md_store_close(S);
    shim_register();
    S = open_store();
    static struct wjob a, b, c, d;
    wjob_init(&a, "f", CREATE("/memories/kept.txt", "kept"));
    w_done = 0;
    struct md_writer *w = md_writer_start(S, &LIM, 64, 100);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK_EQ_INT(md_writer_submit(w, &a.job), MD_OK);
    CHECK_EQ_INT(wait_done(1), 1);
    JOB_RESULT(&a, MD_OK, "File created successfully at: /memories/kept.txt");

    /* The disk stops taking flushes; b and c go in one batch (the writer
     * is held until both are queued). */
    wjob_init(&b, "f", CREATE("/memories/unsure.txt", "u"));
    wjob_init(&c, "f", CREATE("/memories/kept.txt", "dup"));
    /* The search index caught up first: no step of it is left to meet the
     * failing flushes. */
    int more = 1;
    CHECK_EQ_INT(md_store_index_step(S, &more), MD_OK);
    CHECK_EQ_INT(more, 0);
    w_done = 0;
    md_writer_pause(w, 1);
    __atomic_store_n(&g_fail_sync, 1, __ATOMIC_SEQ_CST);
    CHECK_EQ_INT(md_writer_submit(w, &b.job), MD_OK);
    CHECK_EQ_INT(md_writer_submit(w, &c.job), MD_OK);
    md_writer_pause(w, 0);
    CHECK_EQ_INT(wait_done(2), 2);
    JOB_RESULT(&b, MD_EUNSURE,
               "Error: The memory store could not confirm that the command was saved (a disk "
               "flush failed, or the connection to the database was lost while committing): it "
               "may or may not have been applied. View the path before trying again.");
    JOB_RESULT(&c, MD_EEXIST, "Error: File /memories/kept.txt already exists");
    CHECK_EQ_INT(md_err_http_status(MD_EUNSURE), 500);

    /* Flushes work again: the next write goes through. */
    __atomic_store_n(&g_fail_sync, 0, __ATOMIC_SEQ_CST);
    wjob_init(&d, "f", CREATE("/memories/after.txt", "after"));
    w_done = 0;
    CHECK_EQ_INT(md_writer_submit(w, &d.job), MD_OK);
    CHECK_EQ_INT(wait_done(1), 1);
    JOB_RESULT(&d, MD_OK, "File created successfully at: /memories/after.txt");
    md_writer_stop(w, NULL);
    wjob_free(&a);
    wjob_free(&b);
    wjob_free(&c);
    wjob_free(&d);

    /* After a reopen: what was acknowledged is there, and the store is whole. */
    md_store_close(S);
    S = open_store();
    EXPECT("f", VIEW("/memories/kept.txt"), MD_OK, FILE_HEAD("/memories/kept.txt") "     1\tkept");
    EXPECT("f", VIEW("/memories/after.txt"), MD_OK,
           FILE_HEAD("/memories/after.txt") "     1\tafter");
    sqlite3 *db = NULL;
    CHECK_EQ_INT(sqlite3_open_v2(g_db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    CHECK_EQ_INT(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    CHECK_EQ_INT(sqlite3_step(st), SQLITE_ROW);
    CHECK_MEM((const char *)sqlite3_column_text(st, 0), (size_t)sqlite3_column_bytes(st, 0), "ok");
    sqlite3_finalize(st);
    sqlite3_close(db);
    md_store_close(S);
    sqlite3_vfs_unregister(&g_shim_vfs);
    S = open_store();
}

/* A new tenant's first creates whose COMMIT fails (a full disk: the
 * writer's connection stays open) are rolled back with the tenant row, and
 * the next new tenant may get the same id: the writer must not remember the
 * first tenant's id (looked up by the batch's second create), or its next
 * file would land in the second tenant's tree. */
static void test_writer_forgets_rolled_back_tenants(void)
{
    md_store_close(S);
    shim_register();
    S = open_store();
    static struct wjob a, a2, b, c;
    struct md_writer *w = md_writer_start(S, &LIM, 64, 100);
    CHECK(w != NULL);
    if (!w)
        return;
    wjob_init(&a, "new-1", CREATE("/memories/one.txt", "first"));
    wjob_init(&a2, "new-1", CREATE("/memories/one-b.txt", "first b"));
    /* Both in one batch: the writer is held until both are queued. */
    w_done = 0;
    md_writer_pause(w, 1);
    __atomic_store_n(&g_fail_write, 1, __ATOMIC_SEQ_CST);
    CHECK_EQ_INT(md_writer_submit(w, &a.job), MD_OK);
    CHECK_EQ_INT(md_writer_submit(w, &a2.job), MD_OK);
    md_writer_pause(w, 0);
    CHECK_EQ_INT(wait_done(2), 2);
    JOB_RESULT(&a, MD_EDB,
               "Error: The memory store failed; the command was not applied. Try again later.");
    JOB_RESULT(&a2, MD_EDB,
               "Error: The memory store failed; the command was not applied. Try again later.");
    __atomic_store_n(&g_fail_write, 0, __ATOMIC_SEQ_CST);

    wjob_init(&b, "new-2", CREATE("/memories/two.txt", "second"));
    w_done = 0;
    CHECK_EQ_INT(md_writer_submit(w, &b.job), MD_OK);
    CHECK_EQ_INT(wait_done(1), 1);
    JOB_RESULT(&b, MD_OK, "File created successfully at: /memories/two.txt");
    wjob_init(&c, "new-1", CREATE("/memories/one.txt", "again"));
    w_done = 0;
    CHECK_EQ_INT(md_writer_submit(w, &c.job), MD_OK);
    CHECK_EQ_INT(wait_done(1), 1);
    JOB_RESULT(&c, MD_OK, "File created successfully at: /memories/one.txt");
    md_writer_stop(w, NULL);
    wjob_free(&a);
    wjob_free(&a2);
    wjob_free(&b);
    wjob_free(&c);

    /* Each tenant holds exactly its own file. */
    EXPECT("new-2", VIEW("/memories"), MD_OK,
           "Here're the files and directories up to 2 levels deep in /memories, excluding "
           "hidden items and node_modules:\n6B\t/memories\n6B\t/memories/two.txt");
    EXPECT("new-1", VIEW("/memories"), MD_OK,
           "Here're the files and directories up to 2 levels deep in /memories, excluding "
           "hidden items and node_modules:\n5B\t/memories\n5B\t/memories/one.txt");
    md_store_close(S);
    sqlite3_vfs_unregister(&g_shim_vfs);
    S = open_store();
}

static void cleanup(void)
{
    if (g_pg) {
        pg_drop();
        return;
    }
    remove_db(g_db);
    rmdir(g_dir);
}

/* ---- search beside the writer ---- */

static int append_path(void *ctx, const char *path, size_t len, const char *content, size_t n)
{
    (void)content;
    (void)n;
    char *out = ctx;
    size_t at = strlen(out);
    if (at + len + 2 < 1024) {
        memcpy(out + at, path, len);
        out[at + len] = '\n';
        out[at + len + 1] = '\0';
    }
    return 0;
}

/* The paths of tenant's files that hold `term`, one per line. */
static const char *search_paths(const char *tenant, const char *term)
{
    static char out[1024];
    out[0] = '\0';
    const char *terms[1] = {term};
    size_t lens[1] = {strlen(term)};
    struct md_search_terms q = {terms, lens, 1, "/memories", 9, 0, 100};
    struct md_txn *t;
    CHECK_EQ_INT(md_store_read_begin(S, &t), MD_OK);
    CHECK_EQ_INT(md_txn_search(t, tenant, &q, append_path, out), MD_OK);
    md_txn_end(t);
    return out;
}

/* A search sees every committed write whether the index has caught up
 * with it or not (md_store_index_step; SQLite indexes apart, PostgreSQL's
 * index follows each write): new files, a word an edit took out, a delete,
 * and the id of one tenant's deleted file taken by another tenant's new
 * file (SQLite gives a new row the highest id plus one). Checked before
 * the index's step and after it. */
static void test_search_apart(void)
{
    int more = 0;
    EXPECT("sa", CREATE("/memories/s/a.txt", "walnut almond\n"), MD_OK,
           "File created successfully at: /memories/s/a.txt");
    EXPECT("sa", CREATE("/memories/s/b.txt", "almond\n"), MD_OK,
           "File created successfully at: /memories/s/b.txt");
    EXPECT("sb", CREATE("/memories/fig.txt", "fig\n"), MD_OK,
           "File created successfully at: /memories/fig.txt");
    for (int step = 0; step < 2; step++) {
        CHECK_STR(search_paths("sa", "walnut"), "/memories/s/a.txt\n");
        CHECK_STR(search_paths("sa", "almond"), "/memories/s/a.txt\n/memories/s/b.txt\n");
        CHECK_STR(search_paths("sb", "almond"), "");
        CHECK_EQ_INT(md_store_index_step(S, &more), MD_OK);
        CHECK_EQ_INT(more, 0);
    }
    EXPECT("sa", REPLACE("/memories/s/a.txt", "walnut", "pecan"), MD_OK,
           SNIP "     1\tpecan almond\n     2\t");
    EXPECT("sa", DELETE("/memories/s/b.txt"), MD_OK, "Successfully deleted /memories/s/b.txt");
    EXPECT("sa", CREATE("/memories/s/last.txt", "hazel\n"), MD_OK,
           "File created successfully at: /memories/s/last.txt");
    CHECK_EQ_INT(md_store_index_step(S, &more), MD_OK);
    /* The newest file (the highest id) deleted; another tenant's new file
     * may take its id before the index's next step. */
    EXPECT("sa", DELETE("/memories/s/last.txt"), MD_OK,
           "Successfully deleted /memories/s/last.txt");
    EXPECT("sb", CREATE("/memories/t.txt", "cashew hazel\n"), MD_OK,
           "File created successfully at: /memories/t.txt");
    for (int step = 0; step < 2; step++) {
        CHECK_STR(search_paths("sa", "walnut"), "");
        CHECK_STR(search_paths("sa", "pecan"), "/memories/s/a.txt\n");
        CHECK_STR(search_paths("sa", "almond"), "/memories/s/a.txt\n");
        CHECK_STR(search_paths("sa", "hazel"), "");
        CHECK_STR(search_paths("sb", "cashew"), "/memories/t.txt\n");
        CHECK_STR(search_paths("sb", "hazel"), "/memories/t.txt\n");
        CHECK_EQ_INT(md_store_index_step(S, &more), MD_OK);
        CHECK_EQ_INT(more, 0);
    }
}

/* ---- SQLite only ---- */

/* Every statement finds its rows through the (tenant, path) key or the
 * children index: deleting or renaming a subtree, listing a directory and
 * reading a file never scan a tenant's other rows. */
static void test_query_plans(void)
{
    char why[1200];
    int r = md_store_sqlite_check_plans(g_db, why, sizeof why);
    if (r)
        fprintf(stderr, "query plan: %s\n", why);
    CHECK_EQ_INT(r, 0);
}

/* SQLite's own cases, on a new database file (the query plans before
 * anything is written). */
static void sqlite_cases(void)
{
    test_query_plans();
    test_wal_mode();
    test_kept_snapshots();
    test_wal_bounded();
    test_newer_schema_refused();
    test_durability();
}

/* What md_store.h promises, the same on every engine. */
static void interface_cases(void)
{
    test_empty_tenant();
    test_create_and_edit();
    test_listing_and_delete();
    test_rename();
    test_tenants();
    test_like_metacharacters();
    test_multibyte();
    test_limits();
    test_savepoints();
    test_deferred_sizes();
    test_reads_see_commits();
    test_reopen();
    test_writer();
    test_writer_stop_tells_every_job();
    test_writer_full_queue();
    test_search_apart();
}

/* SQLite's faults, made by a VFS of the test's. */
static void sqlite_fault_cases(void)
{
    test_writer_flush_fails();
    test_writer_forgets_rolled_back_tenants();
}

/* A fresh SQLite database file: 0, or 1. */
static int sqlite_setup(void)
{
    strcpy(g_dir, "/tmp/md-test-store-XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(g_db, sizeof g_db, "%s/memoryd.db", g_dir);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && strcmp(argv[1], "postgres") != 0)) {
        fprintf(stderr, "usage: test_store [postgres]\n");
        return 2;
    }
    g_pg = argc == 2;
    int rc = g_pg ? pg_setup() : sqlite_setup();
    if (rc)
        return rc;
    fprintf(stderr, "test_store: %s (%s)\n", g_pg ? "PostgreSQL" : "SQLite",
            g_pg ? g_pg_name : g_db);
    md_buf_init(&OUT, 1 << 20);
    S = open_store();

    if (!g_pg)
        sqlite_cases();
    interface_cases();
    if (!g_pg)
        sqlite_fault_cases();

    md_store_close(S);
    md_buf_free(&OUT);
    cleanup();
    return check_report();
}
