/*
 * md_migrate.h — `memoryd migrate --from SQLITE_PATH --to URI`: copy every
 * tenant of a SQLite database into a PostgreSQL one (src/app/migrate.c).
 *
 * The copy is one PostgreSQL transaction, read from one snapshot of the
 * SQLite file; it is checked (entries, file bytes and sizes per tenant
 * equal on both sides) before it commits. A tenant that already exists in
 * the target is refused, before anything is written; so is a source whose
 * schema is not this memoryd's. The source is never changed.
 */
#ifndef MD_MIGRATE_H
#define MD_MIGRATE_H

/* argv[0] is "migrate". Returns the exit status: 0 done, 1 failed (the
 * reason on stderr, nothing written), 2 usage error. */
int md_migrate_main(int argc, char **argv);

#endif
