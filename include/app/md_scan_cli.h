/*
 * md_scan_cli.h — `memoryd scan` (src/app/scan_cli.c): the secrets already
 * stored in the database of --db (or MEMORYD_DB), SQLite or PostgreSQL, in
 * every tenant's files and kept versions (or one tenant's, --tenant), found
 * with the detectors of --sensitive (md_scan.h), whatever mode the server
 * runs in. A SQLite file is opened read-only; a PostgreSQL database is
 * opened as memoryd opens it (migrated when needed) and only read. Each
 * tenant is read from one snapshot.
 *
 * Output on stdout: a JSON line per finding
 * {"tenant":T,"path":P,"version":N|null,"kind":K,"line":N}, then a summary
 * line {"tenants":N,"files_scanned":N,"versions_scanned":N,"findings":N};
 * never a secret or any content. Errors as "memoryd scan: ..." lines on
 * stderr. Nothing is allocated for the caller.
 */
#ifndef MD_SCAN_CLI_H
#define MD_SCAN_CLI_H

/* argv[0] is "scan". Returns the exit status: 0 nothing found, 1 findings,
 * 2 an error (usage, a database that cannot be opened or read, patterns
 * that do not compile; the reason on stderr). */
int md_scan_main(int argc, char **argv);

#endif
