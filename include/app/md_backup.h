/*
 * md_backup.h — `memoryd backup --db PATH --to FILE [--force]`: an online
 * copy of memoryd's SQLite database, taken while memoryd serves and writes
 * it (src/app/backup.c).
 *
 * The database is reached only through the store: opened read-only
 * (md_store_open, cfg.read_only), copied by md_store_backup, an engine's
 * (MD_STORE_CAP_BACKUP; a `db` whose engine has none, a PostgreSQL URI, is
 * a usage error). On SQLite that is the online backup API (sqlite3_backup_*)
 * run inside one read transaction on the source: one snapshot, holding
 * every transaction committed before it began, and it never restarts
 * however much the serving memoryd writes meanwhile (in WAL mode a reader
 * does not block the writer). It is written to a temporary file beside FILE
 * (FILE.tmp-XXXXXX, made here), checked by the engine (PRAGMA
 * integrity_check says ok, memoryd's tables are there), then fsync'd here,
 * and only then moved to FILE (link(2) without --force, so that a FILE
 * created meanwhile is not replaced; rename(2) with it) and the directory
 * fsync'd. On any failure the temporary file is removed and FILE is not
 * created or changed. The source is never changed. SIGINT, SIGTERM and
 * SIGHUP stop the copy between two steps.
 *
 * Nothing is allocated for the caller; all output goes to stdout (the
 * summary) and stderr (errors, "memoryd backup: ..." lines).
 */
#ifndef MD_BACKUP_H
#define MD_BACKUP_H

/* argv[0] is "backup". Returns the exit status: 0 done, 1 failed (the
 * reason on stderr, FILE not created), 2 usage error (the usage on stderr;
 * a PostgreSQL URI as --db is one). */
int md_backup_main(int argc, char **argv);

#endif
