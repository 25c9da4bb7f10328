/* backup.c — memoryd backup: an online copy of memoryd's SQLite database,
 * taken through the store (md_store_backup) and published here (see
 * md_backup.h). */
#include "app/md_backup.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/md_engines.h"
#include "base/md_progress.h"
#include "store/md_store_admin.h"

/* How long a busy source may hold the backup up (the store's busy
 * timeout; the engine waits as long for its steps). */
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
    "              PostgreSQL up with pg_dump or base backups, see docs/operations.md)\n"
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
    struct md_store *src; /* opened read-only */
    struct md_backup_info info;
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

/* Open the source through the store, read-only: the engine refuses a
 * missing file, one that is not a SQLite database and one without
 * memoryd's schema, with the reason. */
static int open_source(struct backup *b)
{
    struct md_store_config cfg = {.db = b->db,
                                  .durability = MD_DURABILITY_FULL,
                                  .busy_timeout_ms = BUSY_WAIT_MS,
                                  .search = MD_SEARCH_KEEP,
                                  .read_only = 1};
    char why[4400] = "";
    if (md_store_open(&cfg, NULL, &b->src, why, sizeof why) != MD_OK)
        return fail(why, NULL);
    return 0;
}

/* Create the temporary copy beside the target (empty, mode 0600). */
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
    return 0;
}

/* Copy the database into the temporary file, as one snapshot, and check
 * the copy (md_store_backup); stopped between two steps by a signal. */
static int copy_database(struct backup *b)
{
    char why[4400] = "";
    /* Progress in pages: a bar on a terminal, else a log line every few
     * seconds (md_progress.h). */
    struct md_progress progress;
    md_progress_begin(&progress, "backup", "pages", 0, 1);
    enum md_err e =
        md_store_backup(b->src, b->tmp, &interrupted, &progress, &b->info, why, sizeof why);
    md_progress_end(&progress);
    if (e == MD_EBUSY)
        return fail("interrupted (nothing was written)", NULL);
    return e ? fail(why, NULL) : 0;
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
    if (!(md_engine_for(b->db)->caps & MD_STORE_CAP_BACKUP)) {
        fprintf(stderr, "memoryd backup: --db is a PostgreSQL URI; memoryd backup copies SQLite "
                        "databases only: back PostgreSQL up with pg_dump (or base backups and "
                        "WAL archiving), see docs/operations.md, Backup and restore\n");
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
    if (check_target(&b) || open_copy(&b) || open_source(&b) || copy_database(&b) || publish(&b))
        goto out;
    printf("memoryd backup: copied %s to %s: %lld pages of %lld bytes, %lld tenants, "
           "integrity_check ok\n",
           b.db, b.to, (long long)b.info.pages, (long long)b.info.page_size,
           (long long)b.info.tenants);
    status = 0;
out:
    discard(&b);
    md_store_close(b.src);
    return status;
}
