/* backup.c — an online copy of memoryd's SQLite database (see md_backup.h). */
#include "app/md_backup.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app/md_engines.h"

/* Pages copied per sqlite3_backup_step, and the pause between steps. */
#define STEP_PAGES    256
#define STEP_PAUSE_NS 1000000L /* 1 ms */
/* How long a busy source or copy may hold the backup up, in all. */
#define BUSY_WAIT_MS 30000

static const char usage[] =
    "Usage: memoryd backup --db PATH --to FILE [--force]\n"
    "\n"
    "Copy memoryd's SQLite database at PATH (default: $MEMORYD_DB) into FILE while memoryd\n"
    "serves and writes it, with SQLite's online backup API. The copy is one snapshot: it\n"
    "holds every write acknowledged before the backup began, and later ones are not in it.\n"
    "It is written beside FILE as FILE.tmp-XXXXXX (mode 0600), checked with PRAGMA\n"
    "integrity_check, synced to disk and only then renamed to FILE: a failed backup leaves\n"
    "no FILE. The source is only read. To restore, stop memoryd and put FILE in place of the\n"
    "database (or start memoryd with --db FILE).\n"
    "\n"
    "  --db PATH   the SQLite database memoryd serves (a PostgreSQL URI is refused: back\n"
    "              PostgreSQL up with pg_dump or base backups, see the README's Backup)\n"
    "  --to FILE   the copy; refused if FILE exists\n"
    "  --force     replace FILE if it exists\n"
    "\n"
    "Exit status: 0 done (a summary on stdout); 1 failed (the reason on stderr, FILE not\n"
    "created or changed): a missing source, a file that is not memoryd's database, FILE\n"
    "exists, FILE's directory missing or not writable, a copy that fails its check;\n"
    "2 usage error (unknown or missing arguments, --db a PostgreSQL URI).\n";

struct backup {
    const char *db, *to;
    int force;
    char tmp[4096], dir[4096];
    sqlite3 *src, *dst;
    long long pages, page_size, tenants;
};

/* Set by SIGINT, SIGTERM or SIGHUP: the backup stops between two steps
 * and removes its temporary file. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* Say what went wrong on stderr; returns -1. */
static int fail(const char *what, const char *detail)
{
    fprintf(stderr, "memoryd backup: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    return -1;
}

static void pause_ns(long ns)
{
    struct timespec t = {0, ns};
    nanosleep(&t, NULL);
}

/* Does `db` hold memoryd's schema? 0 yes; -1 with the reason on stderr.
 * `name` names the database in the message. */
static int check_memoryd_db(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT (SELECT count(*) FROM sqlite_schema WHERE type = 'table'"
                                " AND name IN ('tenants', 'entries')),"
                                " (SELECT user_version FROM pragma_user_version)",
                                -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    int tables = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    int version = rc == SQLITE_ROW ? sqlite3_column_int(st, 1) : -1;
    char why[512];
    snprintf(why, sizeof why, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) {
        char what[4200];
        snprintf(what, sizeof what, "%s is not a SQLite database", name);
        return fail(what, why);
    }
    if (tables != 2 || version < 1) {
        char what[4200];
        snprintf(what, sizeof what, "%s is not a memoryd database (no memoryd schema in it)", name);
        return fail(what, NULL);
    }
    return 0;
}

/* The target: refused if it exists (unless --force) or is the source;
 * its directory named in b->dir. */
static int check_target(struct backup *b)
{
    struct stat st_to, st_db;
    char copy[sizeof b->dir];
    snprintf(copy, sizeof copy, "%s", b->to);
    snprintf(b->dir, sizeof b->dir, "%s", dirname(copy));
    if (lstat(b->to, &st_to) != 0)
        return errno == ENOENT ? 0 : fail(b->to, strerror(errno));
    if (S_ISDIR(st_to.st_mode))
        return fail(b->to, "is a directory (give the name of the copy)");
    if (stat(b->db, &st_db) == 0 && st_db.st_dev == st_to.st_dev && st_db.st_ino == st_to.st_ino)
        return fail(b->to, "is the database itself");
    if (!b->force)
        return fail(b->to, "exists (nothing was written; --force replaces it)");
    return 0;
}

/* Open the source read-only and take one read transaction on it: the
 * snapshot every page is copied from. */
static int open_source(struct backup *b)
{
    struct stat st;
    if (stat(b->db, &st) != 0)
        return fail(b->db, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return fail(b->db, "is not a file");
    int rc = sqlite3_open_v2(b->db, &b->src, SQLITE_OPEN_READONLY, NULL);
    if (rc != SQLITE_OK)
        return fail(b->db, b->src ? sqlite3_errmsg(b->src) : sqlite3_errstr(rc));
    sqlite3_busy_timeout(b->src, BUSY_WAIT_MS);
    if (sqlite3_exec(b->src, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return fail(b->db, sqlite3_errmsg(b->src));
    /* The first read starts the transaction's snapshot. */
    return check_memoryd_db(b->src, b->db);
}

/* Create the temporary copy beside the target and open it. */
static int open_copy(struct backup *b)
{
    int n = snprintf(b->tmp, sizeof b->tmp, "%s.tmp-XXXXXX", b->to);
    if (n < 0 || (size_t)n >= sizeof b->tmp)
        return fail(b->to, "name too long");
    int fd = mkstemp(b->tmp);
    if (fd < 0) {
        b->tmp[0] = '\0';
        char what[4200];
        snprintf(what, sizeof what, "cannot create the copy in %s", b->dir);
        return fail(what, strerror(errno));
    }
    close(fd);
    int rc = sqlite3_open_v2(b->tmp, &b->dst, SQLITE_OPEN_READWRITE, NULL);
    if (rc != SQLITE_OK)
        return fail(b->tmp, b->dst ? sqlite3_errmsg(b->dst) : sqlite3_errstr(rc));
    sqlite3_busy_timeout(b->dst, BUSY_WAIT_MS);
    return 0;
}

/* Copy every page, in steps; the source's read transaction keeps the
 * snapshot, so the backup never restarts. */
static int copy_pages(struct backup *b)
{
    sqlite3_backup *bk = sqlite3_backup_init(b->dst, "main", b->src, "main");
    if (!bk)
        return fail("cannot start the backup", sqlite3_errmsg(b->dst));
    int rc, busy_ms = 0;
    while ((rc = sqlite3_backup_step(bk, STEP_PAGES)) != SQLITE_DONE && !interrupted) {
        int busy = rc == SQLITE_BUSY || rc == SQLITE_LOCKED;
        if ((!busy && rc != SQLITE_OK) || (busy && (busy_ms += 10) > BUSY_WAIT_MS))
            break;
        /* A short pause: the disk is shared with the serving memoryd. */
        pause_ns(busy ? 10 * STEP_PAUSE_NS : STEP_PAUSE_NS);
    }
    b->pages = sqlite3_backup_pagecount(bk);
    int frc = sqlite3_backup_finish(bk);
    if (interrupted)
        return fail("interrupted (nothing was written)", NULL);
    if (rc != SQLITE_DONE || frc != SQLITE_OK)
        return fail("the copy failed",
                    sqlite3_errstr(rc != SQLITE_DONE && rc != SQLITE_OK ? rc : frc));
    /* The snapshot is no longer needed: let memoryd's checkpoints through. */
    sqlite3_exec(b->src, "COMMIT", NULL, NULL, NULL);
    return 0;
}

/* PRAGMA integrity_check on the copy, memoryd's tables in it; then close it. */
static int check_copy(struct backup *b)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(b->dst, "PRAGMA integrity_check", -1, &st, NULL);
    char first[512] = "";
    int rows = 0;
    while (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        if (rows++ == 0)
            snprintf(first, sizeof first, "%s", (const char *)sqlite3_column_text(st, 0));
    if (rc != SQLITE_OK)
        snprintf(first, sizeof first, "%s", sqlite3_errmsg(b->dst));
    sqlite3_finalize(st);
    if (rows != 1 || strcmp(first, "ok") != 0)
        return fail("the copy failed PRAGMA integrity_check", first);
    if (check_memoryd_db(b->dst, "the copy"))
        return -1;
    st = NULL;
    if (sqlite3_prepare_v2(b->dst, "SELECT count(*) FROM tenants", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        b->tenants = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(b->dst, "PRAGMA page_size", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        b->page_size = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    rc = sqlite3_close(b->dst); /* checkpoints and removes the copy's -wal and -shm */
    b->dst = NULL;
    return rc == SQLITE_OK ? 0 : fail("cannot close the copy", sqlite3_errstr(rc));
}

static int fsync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return fail(path, strerror(errno));
    int rc = fsync(fd);
    int err = errno;
    close(fd);
    return rc == 0 ? 0 : fail(path, strerror(err));
}

/* Sync the copy, move it to the target, sync the directory. */
static int publish(struct backup *b)
{
    if (interrupted)
        return fail("interrupted (nothing was written)", NULL);
    if (fsync_path(b->tmp, O_RDONLY))
        return -1;
    if (b->force) {
        if (rename(b->tmp, b->to) != 0)
            return fail(b->to, strerror(errno));
    } else {
        /* link(2) fails if the target appeared meanwhile: never replace it. */
        if (link(b->tmp, b->to) != 0)
            return fail(b->to, errno == EEXIST ? "exists (nothing was written; --force "
                                                 "replaces it)"
                                               : strerror(errno));
        unlink(b->tmp);
    }
    b->tmp[0] = '\0';
    return fsync_path(b->dir, O_RDONLY | O_DIRECTORY);
}

/* Remove the temporary copy and anything SQLite made beside it. */
static void discard(struct backup *b)
{
    if (b->dst)
        sqlite3_close(b->dst);
    b->dst = NULL;
    if (!b->tmp[0])
        return;
    static const char *const suffix[] = {"", "-journal", "-wal", "-shm"};
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s%s", b->tmp, suffix[i]);
        unlink(p);
    }
}

/* Parse argv into b; 0, 1 after --help, or 2 on a usage error. */
static int parse_args(struct backup *b, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = strncmp(a, "--db", 4) == 0   ? &b->db
                           : strncmp(a, "--to", 4) == 0 ? &b->to
                                                        : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return 1;
        }
        if (strcmp(a, "--force") == 0) {
            b->force = 1;
        } else if (dst && a[4] == '=') {
            *dst = a + 5;
        } else if (dst && a[4] == '\0' && i + 1 < argc) {
            *dst = argv[++i];
        } else {
            fprintf(stderr, "memoryd backup: unknown or incomplete argument: %s\n\n%s", a, usage);
            return 2;
        }
    }
    if (!b->db)
        b->db = getenv("MEMORYD_DB");
    if (!b->db || !*b->db || !b->to || !*b->to) {
        fprintf(stderr, "memoryd backup: both --db (or MEMORYD_DB) and --to are needed\n\n%s",
                usage);
        return 2;
    }
    if (md_engine_for(b->db) == &md_engine_pg) {
        fprintf(stderr, "memoryd backup: --db is a PostgreSQL URI; memoryd backup copies SQLite "
                        "databases only: back PostgreSQL up with pg_dump (or base backups and "
                        "WAL archiving), see the README's section Backup\n");
        return 2;
    }
    return 0;
}

int md_backup_main(int argc, char **argv)
{
    struct backup b = {0};
    int parsed = parse_args(&b, argc, argv);
    if (parsed)
        return parsed == 1 ? 0 : 2;
    int status = 1;
    catch_signals();
    /* The copy's file before the source: a target that cannot be written is
     * refused before the source is opened. */
    if (check_target(&b) || open_copy(&b) || open_source(&b) || copy_pages(&b) || check_copy(&b) ||
        publish(&b))
        goto out;
    printf("memoryd backup: copied %s to %s: %lld pages of %lld bytes, %lld tenants, "
           "integrity_check ok\n",
           b.db, b.to, b.pages, b.page_size, b.tenants);
    status = 0;
out:
    discard(&b);
    sqlite3_close(b.src);
    return status;
}
