/*
 * md_store_pg.h — the PostgreSQL backend of md_store (src/store_pg*.c):
 * any number of memoryd processes serving the same tenants from one
 * database, which PostgreSQL itself keeps durable and replicated.
 *
 * Connections (libpq): one writer, used by the writer thread only, running
 * a batch of commands as one transaction with a savepoint per command, its
 * statements sent in pipelines so that a command costs a fixed number of
 * round trips; a pool of reader connections (cfg->readers at most kept
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
 */
#ifndef MD_STORE_PG_H
#define MD_STORE_PG_H

#include <stddef.h>

#include "store/md_store.h"

/* Connect to cfg->db (a libpq connection URI), migrate, and open the store.
 * cfg->durability FULL keeps synchronous_commit on; NORMAL turns it off for
 * memoryd's sessions (a write acknowledged may be lost if the database
 * server crashes, not if memoryd does). On failure returns MD_EUNAVAIL (the
 * database cannot be reached) or MD_EDB, with a reason in `why`. */
enum md_err md_store_pg_open(const struct md_store_config *cfg, struct md_store **out, char *why,
                             size_t why_len);

/* Schema version the code expects (number of migrations in sql/postgres/). */
int md_store_pg_schema_version(void);

/*
 * Optimistic batches (the writer thread; PostgreSQL only).
 *
 * A batch run the exact way costs two round trips per command (its
 * locate, then its write) and a savepoint each. Run optimistically, right
 * after md_txn_lock_tenants():
 *   1. md_txn_pg_prefetch() reads, in the round trip that takes the tenant
 *      locks, every path the batch's commands name and every ancestor of
 *      those; md_txn_locate() answers from these rows while nothing written
 *      since could have changed them (the store forgets what each write
 *      touches, and asks the database otherwise);
 *   2. writes are queued, not sent; no savepoints are sent;
 *   3. md_txn_pg_flush() sends the queued writes in one round trip, then
 *      md_txn_commit() the directory sizes and COMMIT in another, as ever.
 * Any statement that fails abandons the attempt (md_txn_pg_abandoned()):
 * the writer rolls back and runs the batch again the exact way, where a
 * failing command fails alone, as before. A connection lost on the way
 * (MD_EUNAVAIL) is not an abandonment: nothing is committed, and the
 * writer runs the batch again on a new connection, as it does anyway.
 */
struct md_pg_want {
    const char *tenant;
    const char *path; /* canonical */
    size_t len;
    int content; /* the command reads the file's content */
};

/* True when `s` is a PostgreSQL store. */
int md_store_is_pg(const struct md_store *s);

/* Start an optimistic batch on write transaction `txn`: read the rows of
 * `w` and their ancestors (one round trip, with BEGIN and the locks).
 * MD_OK, MD_EUNAVAIL (the connection went), or another error: the attempt
 * is abandoned. */
enum md_err md_txn_pg_prefetch(struct md_txn *txn, const struct md_pg_want *w, size_t n);

/* Statements queued by the running command and not sent yet (they go in
 * the batch's write round trip, md_txn_pg_flush). */
size_t md_txn_pg_deferred(struct md_txn *txn);

/* Nonzero when the optimistic attempt must be given up: roll back and run
 * the batch the exact way. */
int md_txn_pg_abandoned(struct md_txn *txn);

/* Statements and round trips that went over the writer's connection so far
 * (md_txn_stats counts, for each command, the prefetch it used). For the
 * writer thread, between its transactions or in one. */
void md_store_pg_wire(struct md_store *store, struct md_txn_stats *st);

/* Send the queued writes of an optimistic batch (one round trip) and end
 * the optimistic mode; md_txn_commit() follows. MD_OK, MD_EUNAVAIL, or
 * another error (the attempt is abandoned). */
enum md_err md_txn_pg_flush(struct md_txn *txn);

#endif
