/*
 * md_store_pg.h — the PostgreSQL backend of md_store (src/store_pg*.c):
 * any number of memoryd processes serving the same tenants from one
 * database, which PostgreSQL itself keeps durable and replicated.
 *
 * Connections (libpq): one writer, used by the writer thread only, running
 * a batch of commands as one transaction with a savepoint per command, its
 * statements sent in pipelines so that a command costs a fixed number of
 * round trips; and a pool of reader connections (cfg->readers at most kept
 * open), one per concurrent read. A connection that breaks is dropped and
 * opened again on the next use: while the database cannot be reached,
 * operations fail with MD_EUNAVAIL.
 *
 * Tenants: each write transaction takes a transaction-level advisory lock
 * per tenant it writes (pg_advisory_xact_lock, keyed by
 * md_store_tenant_key), in ascending key order before anything else, so
 * that processes writing the same tenant take turns and never deadlock.
 *
 * Schema: the migrations of sql/postgres/ are applied at start under a
 * session advisory lock (processes starting together migrate once); a
 * database whose schema is newer than this memoryd is refused.
 */
#ifndef MD_STORE_PG_H
#define MD_STORE_PG_H

#include <stddef.h>

#include "md_store.h"

/* Connect to cfg->db (a libpq connection URI), migrate, and open the store.
 * cfg->durability FULL keeps synchronous_commit on; NORMAL turns it off for
 * memoryd's sessions (a write acknowledged may be lost if the database
 * server crashes, not if memoryd does). On failure returns MD_EUNAVAIL (the
 * database cannot be reached) or MD_EDB, with a reason in `why`. */
enum md_err md_store_pg_open(const struct md_store_config *cfg, struct md_store **out, char *why,
                             size_t why_len);

/* Schema version the code expects (number of migrations in sql/postgres/). */
int md_store_pg_schema_version(void);

#endif
