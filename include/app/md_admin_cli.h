/*
 * md_admin_cli.h — memoryd admin tenants list|show|limits|erase|export|import
 * (src/app/admin_cli.c): tenant administration from a shell, through a
 * running memoryd's /v1/tenants endpoints (over HTTP with libcurl), not on
 * the database directly: the server that owns the database keeps per-tenant
 * state in memory (its quota counters, the tenants it knows, the writer's
 * order), which an erasure or an import behind its back would leave stale;
 * through the server they are applied by its writer, in order, on every
 * engine, and announced to the other instances of a PostgreSQL database.
 *
 * The server is --url (or MEMORYD_ADMIN_URL; default http://127.0.0.1:8080).
 * With --auth keys it needs an admin key: MEMORYD_ADMIN_KEY or --key-file
 * (never an argument, which other users see in ps); without, memoryd serves
 * /v1/tenants to clients on its own machine only, so run it there (in the
 * container: `docker compose exec memoryd memoryd admin ...`).
 *
 * Output on stdout (list: tab-separated rows; the others: the server's JSON
 * answer); errors as "memoryd admin: ..." lines on stderr. Nothing is
 * allocated for the caller.
 */
#ifndef MD_ADMIN_CLI_H
#define MD_ADMIN_CLI_H

/* argv[0] is "admin". Returns the exit status: 0 done, 1 failed (the
 * reason on stderr: the server's refusal or why it could not be reached),
 * 2 usage error (the usage on stderr). */
int md_admin_main(int argc, char **argv);

#endif
