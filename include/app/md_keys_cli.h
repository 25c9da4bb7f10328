/*
 * md_keys_cli.h — `memoryd keys create|list|revoke` (src/app/keys_cli.c): API
 * keys made, listed and revoked in the database of --db (or MEMORYD_DB),
 * SQLite or PostgreSQL, migrating it first when needed.
 *
 * create prints the new key once, alone on its line, then its id; the key
 * is never stored (only its hash) and cannot be shown again. list never
 * shows a key or a hash. Nothing is allocated for the caller; output on
 * stdout, errors as "memoryd keys: ..." lines on stderr.
 */
#ifndef MD_KEYS_CLI_H
#define MD_KEYS_CLI_H

/* argv[0] is "keys". Returns the exit status: 0 done, 1 failed (the reason
 * on stderr, nothing changed), 2 usage error (the usage on stderr). */
int md_keys_main(int argc, char **argv);

#endif
