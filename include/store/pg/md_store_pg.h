/*
 * md_store_pg.h — the PostgreSQL engine of md_store (src/store/pg/):
 * any number of memoryd processes serving the same tenants from one
 * database, which PostgreSQL itself keeps durable and replicated.
 *
 * Connections (libpq): one writer, used by the writer thread only, running
 * a batch of commands as one transaction with a savepoint per command, its
 * statements sent in pipelines so that a command costs a fixed number of
 * round trips; a pool of reader connections (md_pg_config readers at most kept
 * open), one per concurrent read; and the connections of the views' thread
 * (md_store_view_async: two, in nonblocking pipeline mode, see
 * src/store/pg/reads.c). A connection that breaks is dropped and opened
 * again on the next use: while the database cannot be reached, operations
 * fail with MD_EUNAVAIL.
 *
 * Tenants: each write transaction takes a transaction-level advisory lock
 * per tenant it writes (pg_advisory_xact_lock, keyed by
 * md_store_tenant_key), in ascending key order before anything else, so
 * that processes writing the same tenant take turns and never deadlock.
 *
 * Schema: the migrations of sql/postgres/ are applied at start under a
 * session advisory lock (processes starting together migrate once); a
 * database whose schema is newer than this memoryd is refused.
 *
 * API keys (md_store_key_*): put and revoke in a write transaction of their
 * own on the writer's connection, list and find on a pooled reader (find
 * reads the table at every call). A dump loaded (md_txn_load, for memoryd
 * migrate): each tenant's row at once, its other rows and the keys in
 * chunks of array parameters (src/store/pg/load.c).
 */
#ifndef MD_STORE_PG_H
#define MD_STORE_PG_H

#include <stddef.h>

#include "store/md_store.h"

/* PostgreSQL's own settings (the `own` of md_engine_pg.open). */
struct md_pg_config {
    unsigned readers; /* read connections kept open (a pool); 0: 1 */
};

/* The engine (app/md_engines.h): a `db` that is a PostgreSQL connection URI
 * ("postgresql://..." or "postgres://..."), connected to, migrated and
 * opened; cfg->durability FULL keeps synchronous_commit on, NORMAL turns it
 * off for memoryd's sessions (a write acknowledged may be lost if the
 * database server crashes, not if memoryd does). open fails with
 * MD_EUNAVAIL (the database cannot be reached) or MD_EDB. Its batches
 * defer their writes (MD_STORE_CAP_DEFER): md_txn_batch_begin reads, in the
 * round trip that takes the tenant locks, every path the batch's commands
 * name and every ancestor of those; md_txn_locate answers from these rows
 * while nothing written since could have changed them; writes are queued,
 * no savepoints are sent; md_txn_flush sends the writes in one round trip,
 * md_txn_commit the directory sizes and COMMIT in another. Any statement
 * that fails gives the attempt up (MD_EREDO): the writer runs the batch
 * again the exact way, two round trips per command, where a failing
 * command fails alone. */
extern const struct md_engine md_engine_pg;

/* Schema version the code expects (number of migrations in sql/postgres/). */
int md_store_pg_schema_version(void);

#endif
